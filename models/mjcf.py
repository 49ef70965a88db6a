"""MJCF loading through MuJoCo's own compiler.

MuJoCo parses and compiles the file (defaults classes, includes, angle units, inertias from
geoms, ``fromto``, mesh processing); this module reads the compiled `mujoco.MjModel`:

- the body tree (``body_parentid``, ``body_pos``, ``body_quat`` (w, x, y, z)); a body without
  joints is merged into its parent (kept as a frame) or, under the world, is static;
- joints ``free``, ``ball``, ``hinge``, ``slide`` (``jnt_pos`` anchor, ``jnt_axis``, ``qpos0``
  as the reference ``ref``, ``jnt_range`` where ``jnt_limited``), a body with several joints
  becoming a chain of bodies (massless but the last); ``dof_armature``, ``dof_damping``,
  ``dof_frictionloss`` (joint friction rows), ``jnt_stiffness`` with ``qpos_spring`` (springs);
- inertias (``body_mass``, ``body_inertia`` principal in ``body_iquat`` at ``body_ipos``);
- geoms plane (static only), sphere, capsule, box, cylinder, mesh (the compiled vertices,
  written once to an OBJ cache; MuJoCo collides with their convex hull, so do we) with the
  sliding friction ``geom_friction[:, 0]``, ``contype``/``conaffinity`` as group/mask and the
  colour; geoms with contype = conaffinity = 0 are visual only;
- equality constraints ``connect`` and ``weld`` (between bodies or sites; active ones) as
  loop closures: point (3 rows) and weld (6 rows; a weld with torquescale 0 is a point).

q and v: every MuJoCo joint keeps its place (qposadr, dofadr), so for hinge and slide joints
q = qpos and v = qvel. Quaternions are (x, y, z, w) here and (w, x, y, z) in MuJoCo; a free
joint's linear velocity is in the body frame here (Pinocchio's convention) and in the world
frame in MuJoCo. `MJCFMap` (``model.mjcf``) converts both ways.

Refused with `MJCFError` (``unsupported="warn"`` loads without them, with a warning):
ellipsoid, height-field, SDF and flex geoms, planes on moving bodies, tendons, actuators,
joint/tendon/flex equalities, ball-joint limits, springs on ball or free joints, gravity
compensation, mocap bodies, fluid forces (density, viscosity, wind), explicit contact
pairs and exclusions. Not read (they do not exist in this simulator's model of contact):
solref/solimp softness, margins and gaps, condim, torsional and rolling friction, MuJoCo's
integrator and solver options; MuJoCo combines friction by max, this simulator by √(μ1μ2).
"""
from __future__ import annotations

import copy
import hashlib
import os
import tempfile
import warnings

import numpy as np

from .joints import FREE, PRISMATIC, REVOLUTE, SPHERICAL
from .loaded import JointSpring, Loaded, axis_angle, combine_inertias, finish_model
from .model import Frame, Geometry, ModelBuilder, ModelError
from .spatial import matrix_to_quat_xyzw, quat_wxyz_to_matrix


class MJCFError(ValueError):
    """An MJCF file that cannot be loaded: MuJoCo's compiler refuses it, or it uses features
    this simulator does not model."""


def import_mujoco():
    """The `mujoco` module, or an ImportError saying how to install it."""
    try:
        import mujoco
    except ImportError as e:      # pragma: no cover - depends on the environment
        raise ImportError("loading MJCF needs MuJoCo's compiler, the optional 'mjcf' extra: "
                          "pip install \"simstep[mjcf]\" (or pip install mujoco)") from e
    return mujoco


_JNT_FREE, _JNT_BALL, _JNT_SLIDE, _JNT_HINGE = 0, 1, 2, 3
_GEOM = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh",
         8: "sdf"}
_EQ = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex", 5: "flexvert", 6: "flexstrain", 7: "distance"}
_OBJ_BODY, _OBJ_SITE = 1, 6
_DSBL_GRAVITY, _DSBL_EQUALITY, _DSBL_SPRING, _DSBL_DAMPER, _DSBL_FRICTIONLOSS, _DSBL_LIMIT, _DSBL_CONTACT = \
    128, 2, 32, 64, 4, 8, 16


class MJCFMap:
    """Conversion between MuJoCo's (qpos, qvel) and this model's (q, v) for one loaded MJCF
    model (its own coordinates, not a world's: slice a world's q with ``world.objects[name]``
    offsets first).

    Per joint the indices coincide (same sizes, same order); free and ball quaternions are
    reordered (w, x, y, z) ↔ (x, y, z, w), a free joint's linear velocity is rotated between
    the world frame (MuJoCo) and the body frame (here), and a free body's pose is moved by the
    placement the model was loaded at (identity for `load_mjcf`)."""

    def __init__(self, nq, nv, free, ball, placement=(np.zeros(3), np.eye(3))):
        self.nq, self.nv = int(nq), int(nv)
        self.free = [(int(a), int(b)) for a, b in free]     # (qposadr, dofadr)
        self.ball = [(int(a), int(b)) for a, b in ball]
        self.p0 = np.asarray(placement[0], float)
        self.R0 = np.asarray(placement[1], float)

    def qpos_to_q(self, qpos):
        qpos = np.asarray(qpos, float)
        if qpos.shape != (self.nq,):
            raise ValueError(f"qpos must have shape ({self.nq},), got {qpos.shape}")
        q = qpos.copy()
        for a, _ in self.free:
            R = self.R0 @ quat_wxyz_to_matrix(qpos[a + 3:a + 7])
            q[a:a + 3] = self.R0 @ qpos[a:a + 3] + self.p0
            q[a + 3:a + 7] = _rot_to_xyzw_signed(R, qpos[a + 3])
        for a, _ in self.ball:
            w, x, y, z = qpos[a:a + 4] / np.linalg.norm(qpos[a:a + 4])
            q[a:a + 4] = (x, y, z, w)
        return q

    def q_to_qpos(self, q):
        q = np.asarray(q, float)
        if q.shape != (self.nq,):
            raise ValueError(f"q must have shape ({self.nq},), got {q.shape}")
        qpos = q.copy()
        for a, _ in self.free:
            x, y, z, w = q[a + 3:a + 7] / np.linalg.norm(q[a + 3:a + 7])
            R = self.R0.T @ quat_wxyz_to_matrix((w, x, y, z))
            qpos[a:a + 3] = self.R0.T @ (q[a:a + 3] - self.p0)
            qpos[a + 3:a + 7] = _rot_to_wxyz_signed(R, w)
        for a, _ in self.ball:
            x, y, z, w = q[a:a + 4]
            qpos[a:a + 4] = (w, x, y, z)
        return qpos

    def qvel_to_v(self, qpos, qvel):
        """v from MuJoCo's qvel at MuJoCo's qpos (the free joints' orientations)."""
        qpos, v = np.asarray(qpos, float), np.asarray(qvel, float).copy()
        if v.shape != (self.nv,):
            raise ValueError(f"qvel must have shape ({self.nv},), got {v.shape}")
        for a, d in self.free:
            R = quat_wxyz_to_matrix(qpos[a + 3:a + 7])
            v[d:d + 3] = R.T @ v[d:d + 3]
        return v

    def v_to_qvel(self, q, v):
        """MuJoCo's qvel from v at this model's q."""
        q, qvel = np.asarray(q, float), np.asarray(v, float).copy()
        if qvel.shape != (self.nv,):
            raise ValueError(f"v must have shape ({self.nv},), got {qvel.shape}")
        for a, d in self.free:
            x, y, z, w = q[a + 3:a + 7]
            R = self.R0.T @ quat_wxyz_to_matrix((w, x, y, z))      # MuJoCo's body orientation
            qvel[d:d + 3] = R @ qvel[d:d + 3]
        return qvel

    def velocity_map(self, qpos):
        """T (nv, nv) with v = T qvel at qpos (identity but the free joints' linear blocks)."""
        T = np.eye(self.nv)
        for a, d in self.free:
            T[d:d + 3, d:d + 3] = quat_wxyz_to_matrix(np.asarray(qpos, float)[a + 3:a + 7]).T
        return T


def _rot_to_xyzw_signed(R, w_hint):
    q = matrix_to_quat_xyzw(R)
    return -q if (w_hint < 0) != (q[3] < 0) and abs(q[3]) > 0 else q


def _rot_to_wxyz_signed(R, w_hint):
    x, y, z, w = _rot_to_xyzw_signed(R, w_hint)
    return np.array([w, x, y, z])


def _name(mujoco, m, objtype, i, default):
    n = mujoco.mj_id2name(m, objtype, int(i))
    return n if n else default


def _compile(path):
    mujoco = import_mujoco()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise MJCFError(f"MJCF file not found: {path}")
    try:
        m = mujoco.MjModel.from_xml_path(path)
    except Exception as e:          # MuJoCo raises ValueError with the compiler's message
        raise MJCFError(f"{path}: MuJoCo's compiler refused the file: {e}") from None
    return mujoco, m


def _mesh_file(m, mesh_id, cache_dir):
    """An OBJ file of compiled mesh `mesh_id` (vertices in the mesh frame MuJoCo compiled)."""
    va, vn = int(m.mesh_vertadr[mesh_id]), int(m.mesh_vertnum[mesh_id])
    fa, fn = int(m.mesh_faceadr[mesh_id]), int(m.mesh_facenum[mesh_id])
    V = np.asarray(m.mesh_vert[va:va + vn], float)
    F = np.asarray(m.mesh_face[fa:fa + fn], np.int64)
    h = hashlib.sha1(V.tobytes() + F.tobytes()).hexdigest()[:20]
    os.makedirs(cache_dir, exist_ok=True)
    out = os.path.join(cache_dir, f"mjcf_mesh_{h}.obj")
    if not os.path.isfile(out):
        tmp = out + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.writelines(f"v {x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in V)
            f.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in F)
        os.replace(tmp, out)
    return out


def default_mesh_cache():
    return os.path.join(tempfile.gettempdir(), "simstep_mjcf_meshes")


def _unsupported_features(m, path):
    """Dynamics-changing features of the compiled model this loader cannot represent."""
    out = []
    mujoco = import_mujoco()
    for g in range(m.ngeom):
        t = int(m.geom_type[g])
        kind = _GEOM.get(t, str(t))
        if kind in ("hfield", "ellipsoid", "sdf"):
            collides = m.geom_contype[g] or m.geom_conaffinity[g]
            if collides:
                out.append(f"{kind} geom '{_name(mujoco, m, mujoco.mjtObj.mjOBJ_GEOM, g, f'geom{g}')}'")
    if m.ntendon:
        out.append(f"{m.ntendon} tendon(s)")
    if m.nu:
        out.append(f"{m.nu} actuator(s) (control the joints with Simulator.set_targets or an actuation instead)")
    if getattr(m, "nflex", 0):
        out.append(f"{m.nflex} flex object(s)")
    if m.npair:
        out.append(f"{m.npair} explicit contact pair(s)")
    if m.nexclude:
        out.append(f"{m.nexclude} contact exclusion(s)")
    if m.nmocap:
        out.append(f"{m.nmocap} mocap body(ies)")
    if np.any(m.body_gravcomp != 0):
        out.append("gravity compensation (body gravcomp)")
    if m.opt.density > 0 or m.opt.viscosity > 0 or np.any(m.opt.wind != 0):
        out.append("fluid forces (option density/viscosity/wind)")
    for e in range(m.neq):
        t = _EQ.get(int(m.eq_type[e]), str(int(m.eq_type[e])))
        if t not in ("connect", "weld") and m.eq_active0[e]:
            out.append(f"{t} equality '{_name(mujoco, m, mujoco.mjtObj.mjOBJ_EQUALITY, e, f'equality{e}')}'")
    for j in range(m.njnt):
        jt = int(m.jnt_type[j])
        jn = _name(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, j, f"joint{j}")
        if jt == _JNT_BALL and m.jnt_limited[j] and not (m.opt.disableflags & _DSBL_LIMIT):
            out.append(f"limit of ball joint '{jn}'")
        if jt in (_JNT_BALL, _JNT_FREE) and m.jnt_stiffness[j] != 0 and not (m.opt.disableflags & _DSBL_SPRING):
            out.append(f"spring of {'ball' if jt == _JNT_BALL else 'free'} joint '{jn}'")
    return out


def _append_mjcf(path, b, prefix="", placement=None, load_geometry=True, unsupported="error", mesh_cache=None,
                 compiled=None):
    """Append the compiled model of `path` to ModelBuilder `b` (names prefixed); returns `Loaded`
    (``info``: the `MJCFMap` as "map", MuJoCo's timestep, gravity and the compiled MjModel)."""
    if unsupported not in ("error", "warn"):
        raise ValueError(f"unsupported must be 'error' or 'warn', got {unsupported!r}")
    mujoco, m = compiled or _compile(path)
    bad = _unsupported_features(m, path)
    if bad:
        msg = f"{path}: not supported by this simulator: " + "; ".join(bad)
        if unsupported == "error":
            raise MJCFError(msg + " (pass unsupported='warn' to load the model without them)")
        warnings.warn(msg + ": loaded without them", stacklevel=3)
    p0, R0 = (np.zeros(3), np.eye(3)) if placement is None else \
        (np.asarray(placement[0], float), np.asarray(placement[1], float))
    flags = int(m.opt.disableflags)
    mesh_cache = mesh_cache or default_mesh_cache()
    OBJ = mujoco.mjtObj
    first = len(b.bodies)

    def nm(objtype, i, default):
        return _name(mujoco, m, objtype, i, default)

    body_names = [nm(OBJ.mjOBJ_BODY, i, f"body{i}") for i in range(m.nbody)]
    # attach[i] = (our body index or -1, R, p): MuJoCo body i's frame in our body's frame
    attach = {0: (-1, R0, p0)}
    inertia = {}            # our body -> list of (m, c, I)
    springs, geoms_c, geoms_v = [], [], []
    free, ball = [], []
    q0 = np.asarray(m.qpos0, float).copy()
    lim_on = not (flags & _DSBL_LIMIT)
    for i in range(1, m.nbody):
        par = int(m.body_parentid[i])
        pb, Rpa, ppa = attach[par]
        Rb = quat_wxyz_to_matrix(m.body_quat[i])
        Rc, pc = Rpa @ Rb, Rpa @ m.body_pos[i] + ppa        # MuJoCo frame of body i at qpos0 in pb's frame
        name = body_names[i]
        nj, ja = int(m.body_jntnum[i]), int(m.body_jntadr[i])
        cur = (pb, Rc, pc)
        for k in range(nj):
            j = ja + k
            jt = int(m.jnt_type[j])
            jn = nm(OBJ.mjOBJ_JOINT, j, f"{name}_joint{k}")
            iq, iv = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
            anchor = np.asarray(m.jnt_pos[j], float)
            axis = np.asarray(m.jnt_axis[j], float)
            ib, Rc, pc = cur
            kw = {}
            if jt == _JNT_FREE:
                if ib != -1:
                    raise MJCFError(f"{path}: free joint '{jn}' of body '{name}' is not at the top level")
                jtype, Rj, pj, ax = FREE, np.eye(3), np.zeros(3), np.zeros(3)
                q0[iq:iq + 3] = pc
                q0[iq + 3:iq + 7] = _rot_to_xyzw_signed(Rc, 1.0)
                free.append((iq, iv))
                after = (np.eye(3), np.zeros(3))
            elif jt == _JNT_BALL:
                jtype, Rj, pj, ax = SPHERICAL, Rc, Rc @ anchor + pc, np.zeros(3)
                w, x, y, z = m.qpos0[iq:iq + 4]
                q0[iq:iq + 4] = (x, y, z, w)
                ball.append((iq, iv))
                after = (np.eye(3), -anchor)
            else:
                ref = float(m.qpos0[iq])
                if jt == _JNT_HINGE:
                    jtype, Rj, pj = REVOLUTE, Rc @ axis_angle(axis, -ref), Rc @ anchor + pc
                else:
                    jtype, Rj, pj = PRISMATIC, Rc, Rc @ (anchor - axis * ref) + pc
                ax = axis
                if lim_on and m.jnt_limited[j]:
                    kw.update(lower=float(m.jnt_range[j, 0]), upper=float(m.jnt_range[j, 1]))
                if m.jnt_stiffness[j] != 0 and not (flags & _DSBL_SPRING):
                    springs.append(JointSpring(prefix + jn, float(m.jnt_stiffness[j]), float(m.qpos_spring[iq])))
                if getattr(m, "jnt_actfrclimited", None) is not None and m.jnt_actfrclimited[j]:
                    kw.update(effort=float(max(abs(m.jnt_actfrcrange[j, 0]), abs(m.jnt_actfrcrange[j, 1]))))
                after = (np.eye(3), -anchor)
            nv = {FREE: 6, SPHERICAL: 3}.get(jtype, 1)
            sl = slice(iv, iv + nv)
            kw.update(armature=np.asarray(m.dof_armature[sl], float),
                      damping=np.zeros(nv) if flags & _DSBL_DAMPER else np.asarray(m.dof_damping[sl], float),
                      friction=np.zeros(nv) if flags & _DSBL_FRICTIONLOSS else
                      np.asarray(m.dof_frictionloss[sl], float))
            last = k == nj - 1
            ident = np.allclose(after[1], 0.0)
            bname = name if (last and ident) else f"{name}:{jn}"
            try:
                idx = b.add_body(prefix + bname, ib, jtype, prefix + jn, Rj, pj, ax if jtype in (REVOLUTE, PRISMATIC)
                                 else (0.0, 0.0, 1.0), mass=0.0, inertia=np.zeros((3, 3)), allow_massless=True, **kw)
            except ModelError as e:
                raise MJCFError(f"{path}: {e}") from None
            cur = (idx, after[0], after[1])
            if last and not ident:
                b.frames[prefix + name] = Frame(prefix + name, idx, after[0], after[1])
        ib, Rc, pc = cur
        attach[i] = cur
        if nj == 0:         # merged into its parent body, or static (body -1, world placement)
            b.frames[prefix + name] = Frame(prefix + name, ib, Rc, pc)
        # inertia of body i (principal axes body_iquat at body_ipos) in our body's frame
        if m.body_mass[i] > 0 and ib >= 0:
            Ri = Rc @ quat_wxyz_to_matrix(m.body_iquat[i])
            inertia.setdefault(ib, []).append((float(m.body_mass[i]), Rc @ m.body_ipos[i] + pc,
                                               Ri @ np.diag(m.body_inertia[i]) @ Ri.T))
    # masses of the bodies (merged ones combined)
    for ib, parts in inertia.items():
        mass, c, I = combine_inertias(parts)
        body = b.bodies[ib]
        body["mass"], body["com"], body["inertia"] = mass, c, I
    # geometry
    if load_geometry:
        for g in range(m.ngeom):
            kind = _GEOM.get(int(m.geom_type[g]))
            bi = int(m.geom_bodyid[g])
            ib, Rc, pc = attach[bi]
            gname = prefix + nm(OBJ.mjOBJ_GEOM, g, f"{body_names[bi]}_geom{g}")
            if kind not in ("plane", "sphere", "capsule", "box", "cylinder", "mesh"):
                continue        # refused above unless unsupported="warn" (or visual only)
            if kind == "plane" and ib >= 0:
                if unsupported == "error":
                    raise MJCFError(f"{path}: plane geom '{gname}' is on a moving body; planes are static here")
                warnings.warn(f"{path}: plane geom '{gname}' on a moving body: not loaded", stacklevel=3)
                continue
            s = np.asarray(m.geom_size[g], float)
            size = {"plane": np.zeros(0), "sphere": s[:1], "capsule": np.array([s[0], 2 * s[1]]),
                    "cylinder": np.array([s[0], 2 * s[1]]), "box": s[:3].copy(), "mesh": np.zeros(0)}[kind]
            mesh = None
            if kind == "mesh":
                mesh = _mesh_file(m, int(m.geom_dataid[g]), mesh_cache)
            Rg = Rc @ quat_wxyz_to_matrix(m.geom_quat[g])
            pg = Rc @ m.geom_pos[g] + pc
            mat = int(m.geom_matid[g])
            rgba = m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[g]
            geo = Geometry(name=gname, body=ib, kind=kind, size=size, rotation=Rg, translation=pg, mesh=mesh,
                           convex=kind == "mesh", color=tuple(float(x) for x in rgba),
                           friction=float(m.geom_friction[g, 0]),
                           group=int(m.geom_contype[g]) & 0xFFFFFFFF, mask=int(m.geom_conaffinity[g]) & 0xFFFFFFFF)
            geoms_v.append(geo)
            if (m.geom_contype[g] or m.geom_conaffinity[g]) and not (flags & _DSBL_CONTACT):
                geoms_c.append(copy.copy(geo))
    b.collision_geometries.extend(geoms_c)
    b.visual_geometries.extend(geoms_v)
    # equality constraints -> loop closures
    closures = []
    if not (flags & _DSBL_EQUALITY):
        from solvers.constraints import LoopClosure
        for e in range(m.neq):
            t = _EQ.get(int(m.eq_type[e]))
            if t not in ("connect", "weld") or not m.eq_active0[e]:
                continue
            o1, o2, ot = int(m.eq_obj1id[e]), int(m.eq_obj2id[e]), int(m.eq_objtype[e])
            data = np.asarray(m.eq_data[e], float)
            if ot == _OBJ_SITE:
                b1, b2 = int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
                r1, r2 = np.asarray(m.site_pos[o1], float), np.asarray(m.site_pos[o2], float)
                Q1, Q2 = quat_wxyz_to_matrix(m.site_quat[o1]), quat_wxyz_to_matrix(m.site_quat[o2])
            elif ot == _OBJ_BODY:
                b1, b2 = o1, o2
                if t == "connect":
                    r1, r2, Q1, Q2 = data[0:3], data[3:6], np.eye(3), np.eye(3)
                else:   # body1 at data[3:6] on body2 at data[0:3]; orientation R2 = R1 relpose
                    r1, r2, Q1, Q2 = data[3:6], data[0:3], quat_wxyz_to_matrix(data[6:10]), np.eye(3)
            else:
                raise MJCFError(f"{path}: equality {e}: object type {ot} is not a body or a site")
            kind = "point" if t == "connect" or (t == "weld" and data[10] == 0) else "weld"
            ends = []
            for bi, r, Q in ((b1, r1, Q1), (b2, r2, Q2)):
                ib, Rc, pc = attach[bi]
                ends.append(("world" if ib < 0 else b.bodies[ib]["name"], (Rc @ r + pc, Rc @ Q)))
            closures.append(LoopClosure(ends[0][0], ends[0][1], ends[1][0], ends[1][1], kind=kind))
    gravity = np.zeros(3) if flags & _DSBL_GRAVITY else np.asarray(m.opt.gravity, float).copy()
    info = dict(map=MJCFMap(m.nq, m.nv, free, ball, (p0, R0)), timestep=float(m.opt.timestep), gravity=gravity,
                mjmodel=m, body_names=body_names)
    return Loaded(first_body=first, closures=closures, springs=springs, q0=q0, info=info)


def load_mjcf(path, prefix="", placement=None, load_geometry=True, unsupported="error", mesh_cache=None):
    """Load an MJCF file through MuJoCo's compiler (module docstring) → ``(model, closures)``.

    The model's gravity is the file's; ``model.q0`` is MuJoCo's qpos0 in this model's
    coordinates, ``model.mjcf`` the `MJCFMap` converting (qpos, qvel) ↔ (q, v),
    ``model.springs`` the joint springs (`JointSpring`: apply them as joint torques, see
    `simstep.JointSprings`), ``model.timestep`` MuJoCo's. closures: `LoopClosure`s of the
    active connect/weld equalities (pass them to `simstep.Simulator(constraints=...)`, or load
    with `simstep.WorldBuilder.add_mjcf`, which does it). placement: (position, rotation) of
    MuJoCo's world frame. unsupported: "error" (default) or "warn" (load without the
    features this simulator does not model). mesh_cache: folder for the compiled meshes'
    OBJ files (default: the system's temporary folder)."""
    compiled = _compile(path)
    m = compiled[1]
    gravity = np.zeros(3) if int(m.opt.disableflags) & _DSBL_GRAVITY else np.asarray(m.opt.gravity, float)
    b = ModelBuilder(gravity)
    loaded = _append_mjcf(path, b, prefix, placement, load_geometry, unsupported, mesh_cache, compiled)
    # geometry attached to the world stays on body -1 (static)
    model = b.build()
    finish_model(model, loaded, path)
    model.mjcf = loaded.info["map"]
    model.timestep = loaded.info["timestep"]
    return model, list(loaded.closures)

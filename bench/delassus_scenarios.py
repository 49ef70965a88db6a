"""Contact scenarios of paper 000 Table I and Fig. 2, and their Pinocchio 4.1 counterparts.

Each scenario returns (model, q, constraints). Contact sets are built geometrically where it is
easy (boxes: corners of the overlap squares; feet: the robots' foot collision spheres) and as
plausible lying poses for the fallen robots (a handful of links touching the ground, 1–4
points each); the Delassus cost depends on which links are coupled, not on exact points.

`pin_problem(model, q, constraints)` rebuilds the model in Pinocchio (free, revolute,
prismatic and planar joints) and the constraints as `PointContactConstraintModel`s /
`JointFrictionConstraintModel`s with the same rows (same frames, same order).
"""
from __future__ import annotations

import numpy as np

import models
from models import FREE, PLANAR, REVOLUTE, ModelBuilder
from simstep import WorldBuilder
from solvers import ContactSet, JointFriction

H = 0.1  # box half extent


def _corners(cx, cy, hx, hy, z):
    return [(cx + sx * hx, cy + sy * hy, z) for sx in (-1, 1) for sy in (-1, 1)]


def box_stack(n=30):
    """n boxes stacked vertically: 4 corner contacts with the ground and between neighbours."""
    wb = WorldBuilder()
    wb.add_ground()
    for k in range(n):
        wb.add_box(f"box{k}", (H, H, H), mass=1.0, position=(0, 0, H + 2 * H * k))
    w = wb.build()
    b1, b2, pos = [], [], []
    for k in range(n):
        for p in _corners(0, 0, H, H, 2 * H * k):
            b1.append(k); b2.append(k - 1 if k else -1); pos.append(p)
    k = len(b1)
    return w.model, w.q0, [ContactSet(np.array(b1), np.array(b2), np.array(pos), np.tile(np.eye(3), (k, 1, 1)), 0.5)]


def pyramid_layout(layers=4, x0=0.0, y0=0.0):
    """Box centres of a square pyramid (layers×layers, ..., 1) and its contacts (body1 on body2)."""
    centres, lay = [], []
    for l in range(layers):
        s = layers - l
        for i in range(s):
            for j in range(s):
                centres.append((x0 + (i - (s - 1) / 2) * 2 * H, y0 + (j - (s - 1) / 2) * 2 * H, H + 2 * H * l))
                lay.append(l)
    centres, lay = np.array(centres), np.array(lay)
    b1, b2, pos = [], [], []
    for a in range(len(centres)):
        if lay[a] == 0:
            for p in _corners(centres[a, 0], centres[a, 1], H, H, 0.0):
                b1.append(a); b2.append(-1); pos.append(p)
            continue
        for b in np.flatnonzero(lay == lay[a] - 1):
            dx, dy = centres[a, :2] - centres[b, :2]
            if abs(dx) < 2 * H - 1e-9 and abs(dy) < 2 * H - 1e-9:
                ox, oy = (centres[a, 0] + centres[b, 0]) / 2, (centres[a, 1] + centres[b, 1]) / 2
                hx, hy = H - abs(dx) / 2, H - abs(dy) / 2
                for p in _corners(ox, oy, hx, hy, centres[a, 2] - H):
                    b1.append(a); b2.append(b); pos.append(p)
    return centres, np.array(b1), np.array(b2), np.array(pos)


def box_pyramid(layers=4, robots=()):
    """The paper's pyramid (4×4 + 3×3 + 2×2 + 1 = 30 boxes, 288 contacts, nv = 180);
    robots: names of G1 robots standing on the top box / next to the pyramid."""
    centres, b1, b2, pos = pyramid_layout(layers)
    wb = WorldBuilder()
    wb.add_ground()
    for a, c in enumerate(centres):
        wb.add_box(f"box{a}", (H, H, H), mass=1.0, position=c)
    first = len(centres)
    feet = []
    for r, name in enumerate(robots):
        path, dirs = models.robot_path("g1")
        if r == 0:   # on the top box
            base = (centres[-1, 0] - 0.03, centres[-1, 1], centres[-1, 2] + H)
        else:
            base = (0.0, (-1) ** r * (1.0 + 0.5 * r), 0.0)
        wb.add_urdf(name, path, floating_base=True, position=base, package_dirs=dirs)
        feet.append((name, base, r == 0))
    w = wb.build()
    model, q = w.model, w.q0.copy()
    if not robots:
        k = len(b1)
        return model, q, [ContactSet(b1, b2, pos, np.tile(np.eye(3), (k, 1, 1)), 0.5)]
    data = models.Data(model)
    # lift each robot so its foot spheres touch its support
    for name, base, on_box in feet:
        iq = model.joint_q_index(f"{name}/root_joint")
        data.compute(q)
        pts = _foot_points(model, data, name)
        q[iq + 2] += base[2] - pts[:, 2].min()
    data.compute(q)
    B1, B2, P = [b1], [b2], [pos]
    for name, base, on_box in feet:
        pts = _foot_points(model, data, name)
        bodies = _foot_bodies(model, name)
        B1.append(bodies); B2.append(np.full(len(bodies), len(centres) - 1 if on_box else -1)); P.append(pts)
    b1, b2, pos = np.concatenate(B1), np.concatenate(B2), np.concatenate(P)
    k = len(b1)
    return model, q, [ContactSet(b1, b2, pos, np.tile(np.eye(3), (k, 1, 1)), 0.5)]


def _foot_bodies(model, prefix):
    out = []
    for side in ("left", "right"):
        out += [model.body_index(f"{prefix}/{side}_ankle_roll_link")] * 4
    return np.array(out)


def _foot_points(model, data, prefix):
    """World positions of the 8 foot collision spheres of a G1 (4 per sole), lowest point."""
    local = np.array([(-0.05, 0.025, -0.035), (-0.05, -0.025, -0.035), (0.12, 0.03, -0.035), (0.12, -0.03, -0.035)])
    pts = []
    for side in ("left", "right"):
        b = model.body_index(f"{prefix}/{side}_ankle_roll_link")
        pts += list(local @ data.oR[b].T + data.op[b])
    return np.array(pts)


def robot(name, pose="standing", joint_friction=False):
    """Go2 or G1 standing (feet contacts) or fallen (lying on its back: several links on the ground)."""
    path, dirs = models.robot_path(name)
    model = models.load_urdf(path, floating_base=True, package_dirs=dirs)
    q = model.neutral()
    data = models.Data(model)
    if pose == "standing":
        if name == "go2":
            feet = [(f"{l}_calf", np.array([0, 0, -0.213])) for l in ("FL", "FR", "RL", "RR")]
        else:
            loc = [(-0.05, 0.025, -0.035), (-0.05, -0.025, -0.035), (0.12, 0.03, -0.035), (0.12, -0.03, -0.035)]
            feet = [(f"{s}_ankle_roll_link", np.array(p)) for s in ("left", "right") for p in loc]
        data.compute(q)
        pts = np.array([data.oR[model.body_index(b)] @ p + data.op[model.body_index(b)] for b, p in feet])
        q[2] -= pts[:, 2].min()
        data.compute(q)
        bodies = np.array([model.body_index(b) for b, _ in feet])
        pts = np.array([data.oR[i] @ p + data.op[i] for i, (_, p) in zip(bodies, feet)])
    else:
        # lying on the back: base rotated -90° about y; links near the ground touch it
        q[3:7] = (0.0, -np.sqrt(0.5), 0.0, np.sqrt(0.5))
        q[2] = 0.2
        data.compute(q)
        if name == "go2":
            touch = {"base": 4, "FL_thigh": 1, "FR_thigh": 1, "RL_thigh": 1, "RR_thigh": 1, "FL_calf": 1}
        else:
            touch = {"pelvis": 3, "torso_link": 4, "left_hip_pitch_link": 1, "right_hip_pitch_link": 1,
                     "left_knee_link": 2, "right_knee_link": 2, "left_ankle_roll_link": 2,
                     "right_ankle_roll_link": 2, "left_elbow_link": 1, "right_elbow_link": 1,
                     "left_wrist_yaw_link": 2, "right_wrist_yaw_link": 2}
        bodies, pts = [], []
        rng = np.random.default_rng(1)
        for b, k in touch.items():
            i = model.body_index(b)
            for _ in range(k):
                p = data.op[i] + np.r_[rng.uniform(-0.04, 0.04, 2), 0.0]
                p[2] = 0.0
                bodies.append(i); pts.append(p)
        bodies, pts = np.array(bodies), np.array(pts)
    k = len(bodies)
    cons = [ContactSet(bodies, np.full(k, -1), pts, np.tile(np.eye(3), (k, 1, 1)), 0.8)]
    if joint_friction:
        cons += [JointFriction(j, 1.0) for j in model.joint_names if model.jtype[model.joint_body(j)] != FREE]
    return model, q, cons


def with_joint_friction(model, cons):
    return cons + [JointFriction(j, 1.0) for j in model.joint_names if model.jtype[model.joint_body(j)] != FREE]


def swimmer(nlinks, link_length=0.3):
    """Planar swimmer (paper 000 Fig. 2): planar floating base + (nlinks-1) revolute joints about z,
    links along x lying on the ground, 2 point contacts per link (its two ends)."""
    mb = ModelBuilder()
    L = link_length
    I = np.diag([1e-4, L * L / 12, L * L / 12])
    prev = mb.add_body("link0", -1, PLANAR, mass=1.0, com=(L / 2, 0, 0), inertia=I)
    for k in range(1, nlinks):
        prev = mb.add_body(f"link{k}", prev, REVOLUTE, translation=(L, 0, 0), axis=(0, 0, 1), mass=1.0,
                           com=(L / 2, 0, 0), inertia=I)
    model = mb.build()
    rng = np.random.default_rng(nlinks)
    q = model.neutral()
    q[4:] = rng.uniform(-0.3, 0.3, nlinks - 1)
    data = models.Data(model).compute(q)
    bodies, pts = [], []
    for i in range(nlinks):
        for s in (0.0, L):
            bodies.append(i); pts.append(data.oR[i] @ np.array([s, 0, 0]) + data.op[i])
    k = len(bodies)
    return model, q, [ContactSet(np.array(bodies), np.full(k, -1), np.array(pts), np.tile(np.eye(3), (k, 1, 1)), 0.5)]


# ----------------------------------------------------------------------------- Pinocchio
def pin_model(model):
    """The same kinematic tree in Pinocchio (joint i+1 = our body i; same q and v layout)."""
    import pinocchio as pin
    from models.model import JF_AXIS, JF_COM, JF_INERTIA, JF_MASS, JF_P, JF_R
    pm = pin.Model()
    for i in range(model.nbodies):
        f = model.jfloat[i]
        X = pin.SE3(f[JF_R:JF_R + 9].reshape(3, 3), f[JF_P:JF_P + 3].copy())
        jt = model.jtype[i]
        if jt == FREE:
            jm = pin.JointModelFreeFlyer()
        elif jt == REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(f[JF_AXIS:JF_AXIS + 3].copy())
        elif jt == PLANAR:
            jm = pin.JointModelPlanar()
        elif jt == models.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(f[JF_AXIS:JF_AXIS + 3].copy())
        else:
            raise NotImplementedError(f"joint type {jt}")
        j = pm.addJoint(int(model.parent[i]) + 1, jm, X, model.body_names[i])
        pm.appendBodyToJoint(j, pin.Inertia(f[JF_MASS], f[JF_COM:JF_COM + 3].copy(),
                                            f[JF_INERTIA:JF_INERTIA + 9].reshape(3, 3).copy()), pin.SE3.Identity())
    pm.armature = model.armature.copy()
    return pm


def pin_problem(model, q, cons, pm=None):
    """(pm, pd, cms, cds): Pinocchio model/data and constraint models with our rows' order and
    frames. A contact (body1, body2, p, R) becomes PointContactConstraintModel(j1 = body2 + 1,
    placement (R, p) in j1, j2 = body1 + 1, placement at p in j2): its Jacobian
    J_{j2}(p) − J_{j1}(p) in the axes of R is our Rᵀ (v₁(p) − v₂(p))."""
    import pinocchio as pin
    from solvers import as_constraint_set
    pm = pin_model(model) if pm is None else pm
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q)
    cs = as_constraint_set(model, cons)
    cms = pin.StdVec_ConstraintModel()
    seen_joint = set()
    for c in range(len(cs)):
        kind = cs.cb_kind[c]
        if kind == 0:
            b1, b2 = cs.cb_body[c]
            p, R = cs.cb_f[c, :3], cs.cb_f[c, 3:12].reshape(3, 3)
            j1, j2 = int(b2) + 1, int(b1) + 1

            def place(j):
                if j == 0:
                    return pin.SE3(R, p)
                oM = pd.oMi[j]
                return pin.SE3(oM.rotation.T @ R, oM.rotation.T @ (p - oM.translation))
            cms.append(pin.ConstraintModel(pin.PointContactConstraintModel(pm, j1, place(j1), j2, place(j2))))
        elif kind == 4:
            dofs = cs.dof[cs.cb_row[c]:cs.cb_row[c] + cs.cb_nrows[c]]
            seen_joint.add(int(np.searchsorted(model.idx_v, dofs[0], side="right") - 1) + 1)
        else:
            raise NotImplementedError("pin_problem: contacts and joint friction only")
    if seen_joint:
        cms.append(pin.ConstraintModel(pin.JointFrictionConstraintModel(pm, sorted(seen_joint))))
    cds = pin.StdVec_ConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    return pm, pd, cms, cds


def pin_compute(pm, pd, cms, cds, q, mu):
    """What Pinocchio needs before its Cholesky: joint Jacobians, CRBA, each constraint's calc."""
    import pinocchio as pin
    pin.computeJointJacobians(pm, pd, q)
    pin.crba(pm, pd, q)
    for cm, cd in zip(cms, cds):
        cm.calc(pm, pd, cd)

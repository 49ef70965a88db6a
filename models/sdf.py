"""SDFormat loading into a `Model` (the spanning tree) and loop closures (the other joints).

Read: one ``<model>`` (directly under ``<sdf>`` or in a ``<world>``; ``model_name`` picks one
of several), its ``<pose>`` and ``<static>``; links with ``<pose>``, ``<inertial>`` (SDF's
defaults when absent: 1 kg, unit inertia), ``<collision>`` and ``<visual>`` (box, sphere,
cylinder, capsule, plane (static links only), mesh through ``model://``, ``package://``,
``file://``, absolute or relative URIs, with ``<scale>``), surface friction (ODE/bullet
``mu``) and restitution (``bounce``), material colours; ``<frame>`` elements and the
``relative_to`` / ``expressed_in`` attributes (SDF 1.7+), the ``frame`` attribute and
``use_parent_model_frame`` of SDF 1.5/1.6, ``degrees`` and ``rotation_format="quat_xyzw"``
(1.9); joints revolute, continuous, prismatic, fixed, ball, universal and revolute2 (as two
revolutes through a massless link), with ``<limit>`` (lower, upper, effort, velocity) and
``<dynamics>`` (damping, friction, spring_stiffness, spring_reference), and joints to
``world``; gearbox joints as reflected rotor inertia (``gearbox="armature"``, below).

Closed loops. Links are nodes and joints edges of a graph; the tree is a maximum spanning
tree rooted at the canonical link (the model's ``canonical_link``, else its first link;
at ``world`` when the model is fixed by joints to it). It keeps, in this order of
preference, joints that cannot be loop closures (prismatic, universal, revolute2), fixed
joints (merged, no dofs), revolute joints with springs, other revolute joints, and ball
joints last, so loops are cut preferably at ball joints (a point closure, 3 rows, exact)
then at revolute joints (two point closures on the axis, ``hinge_length`` apart: 6 rows of
rank 5, as the maximal-coordinate pendulum) then at fixed joints (a weld, 6 rows); ties
keep the joint that comes first in the file. ``loop_joints`` names the joints to cut
instead. A loop whose revolute axes are parallel (and prismatic axes perpendicular to them)
to within 1e-3 rad is made exactly planar: files round angles (1.5708 for π/2), and the
1e-7 rad left makes a planar loop leave its plane by ~1e-8 m per radian, along a direction
its closure rows barely see (Cassie's foot loop, moved to a standing posture, then closes
only to 2e-8 m); noted in ``model.sdf["notes"]``. Tree joints whose SDF parent is farther from the root are reversed (same angle,
negated axis). The closures anchor at the cut joint's frame on both links; at the file's
configuration (all joints at zero) every loop is closed exactly.

Each moving body is named after its link; when the joint frame is not at the link frame
(a joint ``<pose>``), the body is named ``"<link>:<joint>"`` and the link is a frame of it, so
`Model.body_placement_offset` (and a simulator's ``body_pose``) still gives the link frame.

Refused with `SDFError`: malformed XML, a missing element or link, a missing mesh, joint
types screw, gearbox with ``gearbox="error"`` and unknown types, springs on a cut joint,
``<include>``, nested models, kinematic links and links without gravity. Cut joints cannot
keep their limits, damping or friction: a warning names them. Not read: plugins (a warning),
sensors, ``<self_collide>`` (links of one robot collide unless they touch at the initial
configuration, the simulator's default exclusion), surface contact parameters other than
friction and restitution.

Gearboxes (Cassie's ``cassie.sdf``): Gazebo's gearbox joint couples the rotation of a
rotor link (the joint's parent, hinged on the reference body) to the output link (its
child, hinged on the same reference body) as θ_rotor = θ_output / ratio; such a rate
coupling is no constraint this simulator has. ``gearbox="armature"`` (the default, with a
warning unless passed explicitly) welds the rotor to the reference body and adds its
reflected inertia I_axis / ratio² to the output joint's armature, the usual actuator model;
it leaves out the rotor's gyroscopic and cross terms (relative size about the ratio, 2–6 %
on Cassie). ``gearbox="error"`` refuses the file.
"""
from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .joints import FIXED, FREE, PRISMATIC, REVOLUTE, SPHERICAL
from .loaded import JointSpring, Loaded, combine_inertias, finish_model, orthonormalize
from .model import Frame, Geometry, ModelBuilder, ModelError
from .spatial import matrix_to_quat_xyzw
from .urdf import default_package_dirs, rpy_to_rot


class SDFError(ValueError):
    """An SDF file that cannot be loaded: malformed XML, missing elements, links or meshes,
    unsupported joint types or features."""


_INF = 1e15          # SDF writes unlimited joints as ±1e16
_CUTTABLE = ("ball", "revolute", "continuous", "fixed")
_TREE_ONLY = ("prismatic", "universal", "revolute2")
_KNOWN = _CUTTABLE + _TREE_ONLY + ("gearbox", "screw")


# ----------------------------------------------------------------------------- parsing helpers
class _Ctx:
    def __init__(self, path):
        self.path = path

    def err(self, msg):
        return SDFError(f"{self.path}: {msg}")


def _numbers(ctx, text, n, what):
    try:
        vals = [float(x) for x in (text or "").split()]
    except ValueError:
        raise ctx.err(f"{what}: cannot read numbers from {text!r}") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise ctx.err(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _float(ctx, el, tag, what, default=None):
    c = el.find(tag) if el is not None else None
    if c is None or c.text is None or not c.text.strip():
        if default is None:
            raise ctx.err(f"{what}: missing <{tag}>")
        return float(default)
    return float(_numbers(ctx, c.text, 1, f"{what} <{tag}>")[0])


def _bool(text):
    return (text or "").strip().lower() in ("1", "true")


def _pose_element(ctx, el, what):
    """(R, p, relative_to or None) of the <pose> child of el (identity if absent)."""
    pe = el.find("pose") if el is not None else None
    if pe is None:
        return np.eye(3), np.zeros(3), None
    rel = pe.get("relative_to") or pe.get("frame") or None
    text = pe.text or "0 0 0 0 0 0"
    fmt = pe.get("rotation_format", "euler_rpy")
    vals = [float(x) for x in text.split()] if text.strip() else [0.0] * 6
    if fmt == "quat_xyzw":
        if len(vals) != 7:
            raise ctx.err(f"{what} <pose>: quat_xyzw needs 7 numbers, got {text!r}")
        x, y, z, w = vals[3:]
        n = np.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x / n, y / n, z / n, w / n
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    else:
        v = _numbers(ctx, text, 6, f"{what} <pose>")
        vals = list(v)
        rpy = v[3:]
        if _bool(pe.get("degrees")):
            rpy = np.deg2rad(rpy)
        R = rpy_to_rot(*rpy)
    return R, np.array(vals[:3], float), rel


def _compose(A, B):
    """(R, p) of A ∘ B."""
    return A[0] @ B[0], A[0] @ B[1] + A[1]


def _inv(A):
    return A[0].T, -A[0].T @ A[1]


# ----------------------------------------------------------------------------- the model
class _Joint:
    def __init__(self, el, name, jtype, parent, child, order):
        self.el, self.name, self.type, self.parent, self.child, self.order = el, name, jtype, parent, child, order
        self.cut = False


def _find_model(ctx, root, model_name):
    if root.tag != "sdf":
        raise ctx.err(f"root element is <{root.tag}>, expected <sdf>")
    found = list(root.findall("model"))
    for w in root.findall("world"):
        found += list(w.findall("model"))
        if w.find("include") is not None:
            raise ctx.err("<include> is not supported: write the included model into the file")
    if root.find("include") is not None:
        raise ctx.err("<include> is not supported: write the included model into the file")
    if not found:
        raise ctx.err("no <model> element")
    if model_name is not None:
        sel = [m for m in found if m.get("name") == model_name]
        if not sel:
            raise ctx.err(f"no model named '{model_name}'; models: {[m.get('name') for m in found]}")
        return sel[0]
    if len(found) > 1:
        raise ctx.err(f"{len(found)} models {[m.get('name') for m in found]}: pass model_name=")
    return found[0]


def _resolve_uri(ctx, uri, sdf_dir, package_dirs):
    """Absolute path of a mesh URI: model://, package://, file://, absolute or relative."""
    uri = (uri or "").strip()
    if not uri:
        raise ctx.err("mesh without <uri>")
    tried = []
    if uri.startswith(("model://", "package://")):
        rel = uri.split("://", 1)[1].lstrip("/")
        pkg, _, rest = rel.partition("/")
        # model:// is resolved against the model path (package_dirs) and the folders above the file
        roots = list(package_dirs)
        d = sdf_dir
        for _ in range(6):
            roots.append(d)
            d = os.path.dirname(d)
        for r in roots:
            for cand in (os.path.join(r, rel), os.path.join(r, rest) if os.path.basename(os.path.normpath(r)) == pkg
                         else None):
                if cand:
                    tried.append(cand)
                    if os.path.isfile(cand):
                        return os.path.abspath(cand)
        raise ctx.err(f"mesh {uri!r} not found in package_dirs {list(package_dirs)} nor above {sdf_dir}")
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    full = uri if os.path.isabs(uri) else os.path.join(sdf_dir, uri)
    if not os.path.isfile(full):
        raise ctx.err(f"mesh {uri!r} not found (looked at {full})")
    return os.path.abspath(full)


def _color(ctx, el):
    mat = el.find("material")
    if mat is None:
        return None
    for tag in ("diffuse", "ambient"):
        c = mat.find(tag)
        if c is not None and c.text and c.text.strip():
            v = [float(x) for x in c.text.split()]
            if len(v) in (3, 4):
                return tuple(v + [1.0] * (4 - len(v)))
    return None


def _surface(ctx, el, what):
    """(friction or None, restitution or None) of a <collision>'s <surface>."""
    s = el.find("surface")
    if s is None:
        return None, None
    mu = None
    fr = s.find("friction")
    if fr is not None:
        for eng in ("ode", "bullet"):
            e = fr.find(eng)
            for tag in ("mu", "friction"):
                if e is not None and e.find(tag) is not None:
                    mu = _float(ctx, e, tag, what)
                    break
            if mu is not None:
                break
    e = None
    b = s.find("bounce")
    if b is not None and b.find("restitution_coefficient") is not None:
        e = _float(ctx, b, "restitution_coefficient", what)
    return mu, e


def _geometries(ctx, link, kind, X_BL, body, sdf_dir, package_dirs, prefix, frame_of, static_ok):
    """Geometry records of a link's <collision> or <visual> elements; X_BL = link frame in body."""
    out = []
    lname = link.get("name")
    for k, el in enumerate(link.findall(kind)):
        what = f"link '{lname}' {kind} '{el.get('name', k)}'"
        X_LG = frame_of(el, what, lname)
        g = el.find("geometry")
        if g is None or len(g) == 0:
            raise ctx.err(f"{what}: no <geometry>")
        shape = g[0]
        mesh, scale, size = None, np.ones(3), np.zeros(0)
        Xextra = (np.eye(3), np.zeros(3))
        if shape.tag == "box":
            size = _numbers(ctx, shape.findtext("size"), 3, what + " box size") / 2.0
            gkind = "box"
        elif shape.tag == "sphere":
            size = np.array([_float(ctx, shape, "radius", what)])
            gkind = "sphere"
        elif shape.tag in ("cylinder", "capsule"):
            size = np.array([_float(ctx, shape, "radius", what), _float(ctx, shape, "length", what)])
            gkind = shape.tag
        elif shape.tag == "plane":
            if not static_ok:
                raise ctx.err(f"{what}: a plane on a moving link is not supported (planes are static)")
            nrm = _numbers(ctx, shape.findtext("normal") or "0 0 1", 3, what + " plane normal")
            z = nrm / np.linalg.norm(nrm)
            x = np.cross([0.0, 1.0, 0.0] if abs(z[1]) < 0.9 else [1.0, 0.0, 0.0], z)
            x /= np.linalg.norm(x)
            Xextra = (np.column_stack((x, np.cross(z, x), z)), np.zeros(3))
            gkind = "plane"
        elif shape.tag == "mesh":
            mesh = _resolve_uri(ctx, shape.findtext("uri"), sdf_dir, package_dirs)
            if shape.find("scale") is not None:
                scale = _numbers(ctx, shape.findtext("scale"), 3, what + " mesh scale")
            if shape.find("submesh") is not None:
                raise ctx.err(f"{what}: <submesh> is not supported")
            gkind = "mesh"
        else:
            raise ctx.err(f"{what}: unsupported geometry <{shape.tag}>")
        if gkind in ("box", "sphere", "cylinder", "capsule") and np.any(size <= 0):
            raise ctx.err(f"{what}: sizes must be positive, got {size}")
        R, p = _compose(_compose(X_BL, X_LG), Xextra)
        mu, e = _surface(ctx, el, what) if kind == "collision" else (None, None)
        name = prefix + lname + "/" + (el.get("name") or f"{kind}_{k}")
        geo = Geometry(name=name, body=body, kind=gkind, size=size, rotation=R, translation=p, mesh=mesh,
                       scale=scale, color=_color(ctx, el) or (0.7, 0.7, 0.7, 1.0))
        out.append((geo, mu, e))
    return out


def _inertial(ctx, link, frame_of):
    """(mass, com, inertia about com) in the link frame; SDF's defaults when absent."""
    lname = link.get("name")
    el = link.find("inertial")
    if el is None:
        return 1.0, np.zeros(3), np.eye(3)
    what = f"link '{lname}' inertial"
    mass = _float(ctx, el, "mass", what, 1.0)
    if mass < 0:
        raise ctx.err(f"{what}: negative mass {mass}")
    R, p = frame_of(el, what, lname)
    ie = el.find("inertia")
    g = {k: _float(ctx, ie, k, what, 1.0 if k in ("ixx", "iyy", "izz") else 0.0) if ie is not None else
         (1.0 if k in ("ixx", "iyy", "izz") else 0.0) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
    ev = np.linalg.eigvalsh(I)
    if ev.min() < -1e-12 * max(1.0, abs(ev).max()):
        raise ctx.err(f"{what}: inertia is not positive semi-definite (eigenvalues {ev})")
    return mass, p, R @ I @ R.T


def _append_sdf(path, b, prefix="", floating_base=True, package_dirs=None, placement=None, load_geometry=True,
                model_name=None, loop_joints=None, gearbox=None, hinge_length=0.1, planar_tolerance=1e-3):
    """Append the SDF model of `path` to ModelBuilder `b`; returns `Loaded` (module docstring)."""
    path = os.fspath(path)
    ctx = _Ctx(path)
    if not os.path.isfile(path):
        raise SDFError(f"SDF file not found: {path}")
    if gearbox not in (None, "armature", "error"):
        raise ValueError(f"gearbox must be 'armature' or 'error', got {gearbox!r}")
    if not (np.isfinite(hinge_length) and hinge_length > 0):
        raise ValueError(f"hinge_length must be a positive length, got {hinge_length!r}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ctx.err(f"malformed XML: {e}") from None
    mdl = _find_model(ctx, root, model_name)
    if mdl.find("include") is not None:
        raise ctx.err("<include> is not supported: write the included model into the file")
    if mdl.find("model") is not None:
        raise ctx.err("nested <model> elements are not supported")
    sdf_dir = os.path.dirname(os.path.abspath(path))
    package_dirs = list(package_dirs) if package_dirs is not None else default_package_dirs()
    notes = []
    if mdl.find("plugin") is not None:
        notes.append(f"plugins {[p.get('name') for p in mdl.findall('plugin')]} are not run")

    # ---------------------------------------------------------------- links, joints, frames
    links, order = {}, []
    for ln in mdl.findall("link"):
        n = ln.get("name")
        if not n:
            raise ctx.err("a <link> has no name")
        if n in links or n == "world":
            raise ctx.err(f"duplicate or reserved link name '{n}'")
        if _bool(ln.findtext("kinematic")):
            raise ctx.err(f"link '{n}' is kinematic: not supported")
        if ln.find("gravity") is not None and not _bool(ln.findtext("gravity")):
            raise ctx.err(f"link '{n}' has <gravity>false</gravity>: not supported")
        links[n] = ln
        order.append(n)
    if not links:
        raise ctx.err("the model has no <link>")
    joints = []
    for k, j in enumerate(mdl.findall("joint")):
        jn, jt = j.get("name"), j.get("type")
        if not jn:
            raise ctx.err("a <joint> has no name")
        if any(x.name == jn for x in joints):
            raise ctx.err(f"duplicate joint name '{jn}'")
        par, ch = (j.findtext("parent") or "").strip(), (j.findtext("child") or "").strip()
        for role, ln in (("parent", par), ("child", ch)):
            if not ln:
                raise ctx.err(f"joint '{jn}' has no <{role}>")
            if ln not in links and not (ln == "world" and role == "parent"):
                raise ctx.err(f"joint '{jn}': {role} link '{ln}' does not exist")
        if jt not in _KNOWN:
            raise ctx.err(f"joint '{jn}': unsupported type '{jt}' (supported: "
                          f"{', '.join(_CUTTABLE + _TREE_ONLY)}, and gearbox as armature)")
        if jt == "screw":
            raise ctx.err(f"joint '{jn}': screw joints are not supported")
        if par == ch:
            raise ctx.err(f"joint '{jn}' joins link '{par}' to itself")
        joints.append(_Joint(j, jn, jt, par, ch, k))
    frames = {}
    for f in mdl.findall("frame"):
        frames[f.get("name")] = f

    # poses in the model frame (SDF 1.7 semantics; 1.5/1.6 poses are the same with frame="")
    cache = {"__model__": (np.eye(3), np.zeros(3))}
    joint_el = {j.name: j for j in joints}

    def X_M(name, stack=()):
        """Pose of the named frame (link, joint, frame, __model__) in the model frame."""
        if name in cache:
            return cache[name]
        if name in stack:
            raise ctx.err(f"cyclic pose references through {list(stack) + [name]}")
        if name == "world":
            raise ctx.err("poses relative to 'world' inside a model are not supported")
        if name in links:
            R, p, rel = _pose_element(ctx, links[name], f"link '{name}'")
            base = rel or "__model__"
        elif name in joint_el:
            R, p, rel = _pose_element(ctx, joint_el[name].el, f"joint '{name}'")
            base = rel or joint_el[name].child
        elif name in frames:
            R, p, rel = _pose_element(ctx, frames[name], f"frame '{name}'")
            base = rel or frames[name].get("attached_to") or "__model__"
        else:
            raise ctx.err(f"unknown frame '{name}'")
        X = _compose(X_M(base, stack + (name,)), (R, p))
        cache[name] = X
        return X

    def frame_of(el, what, lname):
        """Pose of a sub-element of link `lname` (inertial, collision, visual) in the link frame."""
        R, p, rel = _pose_element(ctx, el, what)
        if rel and rel != lname:
            return _compose(_compose(_inv(X_M(lname)), X_M(rel)), (R, p))
        return R, p

    def axis_of(j, tag):
        if tag == "axis" and getattr(j, "axis_override", None) is not None:
            return j.axis_override
        ax = j.el.find(tag)
        if ax is None:
            if j.type in ("revolute", "continuous", "prismatic", "universal", "revolute2") and tag == "axis":
                raise ctx.err(f"joint '{j.name}' ({j.type}) has no <axis>")
            return None
        xyz = ax.find("xyz")
        a = _numbers(ctx, xyz.text if xyz is not None else "0 0 1", 3, f"joint '{j.name}' {tag} xyz")
        if np.linalg.norm(a) < 1e-12:
            raise ctx.err(f"joint '{j.name}': zero {tag}")
        a = a / np.linalg.norm(a)
        R_J = X_M(j.name)[0]
        expressed = xyz.get("expressed_in") if xyz is not None else None
        if _bool(ax.findtext("use_parent_model_frame")) or expressed == "__model__":
            return R_J.T @ a
        if expressed:
            return R_J.T @ X_M(expressed)[0] @ a
        return a

    # ---------------------------------------------------------------- gearboxes
    for j in [j for j in joints if j.type == "gearbox"]:
        if gearbox == "error":
            raise ctx.err(f"joint '{j.name}' is a gearbox (couples two joints' rates; no such constraint here); "
                          f"pass gearbox='armature' to model it as reflected rotor inertia")
        ref = (j.el.findtext("gearbox_reference_body") or "").strip()
        ratio = _float(ctx, j.el, "gearbox_ratio", f"gearbox '{j.name}'")
        if ratio == 0:
            raise ctx.err(f"gearbox '{j.name}': ratio 0")
        rotor_j = [x for x in joints if x.type in ("revolute", "continuous") and {x.parent, x.child} == {ref, j.parent}]
        out_j = [x for x in joints if x.type in ("revolute", "continuous") and {x.parent, x.child} == {ref, j.child}]
        if len(rotor_j) != 1 or len(out_j) != 1:
            raise ctx.err(f"gearbox '{j.name}': expected its parent '{j.parent}' and child '{j.child}' hinged to "
                          f"the reference body '{ref}' by one revolute joint each")
        rj, oj = rotor_j[0], out_j[0]
        # rotor inertia about its hinge axis (a line through the hinge origin)
        m, c, I = _inertial(ctx, links[j.parent], frame_of)
        X_LJ = _compose(_inv(X_M(j.parent)), X_M(rj.name))      # rotor hinge frame in the rotor link
        a = X_LJ[0] @ axis_of(rj, "axis")
        d = c - X_LJ[1]
        I_axis = float(a @ (I + m * (d @ d * np.eye(3) - np.outer(d, d))) @ a)
        oj.extra_armature = getattr(oj, "extra_armature", 0.0) + I_axis / ratio ** 2
        rj.type = "fixed"           # the rotor turns with its reference body
        j.type = "removed"
        notes.append(f"gearbox '{j.name}' → armature {I_axis / ratio ** 2:.4g} on '{oj.name}'")
    if gearbox is None and any(j.type == "removed" for j in joints):
        warnings.warn(f"{path}: gearbox joints modelled as reflected rotor inertia (armature) on their output "
                      f"joints, without the rotor's gyroscopic coupling; pass gearbox='armature' to accept this "
                      f"silently or gearbox='error' to refuse", stacklevel=3)
    joints = [j for j in joints if j.type != "removed"]

    # ---------------------------------------------------------------- spanning tree
    world_joints = [j for j in joints if j.parent == "world"]
    static = _bool(mdl.findtext("static"))
    if world_joints and floating_base and not static:
        notes.append(f"joints to the world {[j.name for j in world_joints]} dropped (floating_base=True)")
        warnings.warn(f"{path}: joints {[j.name for j in world_joints]} attach the model to the world; "
                      f"floating_base=True replaces them by a free joint (pass floating_base=False to keep them)",
                      stacklevel=3)
        joints = [j for j in joints if j.parent != "world"]
    cut_names = set(loop_joints or ())
    unknown = cut_names - {j.name for j in joints}
    if unknown:
        raise ctx.err(f"loop_joints {sorted(unknown)} are not joints of the model")

    def spring_of(j):
        ax = j.el.find("axis")
        dyn = ax.find("dynamics") if ax is not None else None
        return _float(ctx, dyn, "spring_stiffness", f"joint '{j.name}'", 0.0) if dyn is not None else 0.0

    def weight(j):
        if j.name in cut_names:
            if j.type not in _CUTTABLE:
                raise ctx.err(f"joint '{j.name}' ({j.type}) cannot be a loop closure: only "
                              f"{', '.join(_CUTTABLE)} joints can be cut")
            return -1.0
        return {"prismatic": 100, "universal": 100, "revolute2": 100, "fixed": 50, "ball": 1}.get(
            j.type, 20 if spring_of(j) != 0 else 10)

    def tree_path(a, z):
        """Tree joints on the path from link a to link z (None if not connected)."""
        prev = {a: None}
        todo = [a]
        while todo:
            n = todo.pop()
            for j in adj[n]:
                o = j.child if j.parent == n else j.parent
                if o not in prev:
                    prev[o] = (n, j)
                    todo.append(o)
        if z not in prev:
            return None
        out = []
        while prev[z] is not None:
            z, j = prev[z]
            out.append(j)
        return out

    def planarize(c):
        """A loop whose revolute axes are parallel (and prismatic axes perpendicular to them)
        within `planar_tolerance` rad moves in a plane: make it exactly planar (module docstring)."""
        path = tree_path(c.parent, c.child) if c.parent != "world" or "world" in adj else None
        if path is None:
            return
        loop = path + [c]
        if any(j.type not in ("revolute", "continuous", "prismatic", "fixed", "ball") for j in loop) or \
                any(j.type == "ball" for j in path):
            return
        rev = [j for j in loop if j.type in ("revolute", "continuous")]
        pri = [j for j in loop if j.type == "prismatic"]
        if len(rev) < 2:
            return
        world_axis = {j.name: X_M(j.name)[0] @ axis_of(j, "axis") for j in rev + pri}
        n = world_axis[rev[0].name]
        n = sum(world_axis[j.name] * np.sign(world_axis[j.name] @ n) for j in rev)
        n /= np.linalg.norm(n)
        dev = max([np.arccos(min(1.0, abs(world_axis[j.name] @ n))) for j in rev] +
                  [abs(np.arcsin(np.clip(world_axis[j.name] @ n, -1, 1))) for j in pri])
        if dev > planar_tolerance or dev == 0.0:
            return
        for j in rev:
            j.axis_override = X_M(j.name)[0].T @ (n * np.sign(world_axis[j.name] @ n))
        for j in pri:
            a = world_axis[j.name] - (world_axis[j.name] @ n) * n
            j.axis_override = X_M(j.name)[0].T @ (a / np.linalg.norm(a))
        notes.append(f"loop through {[j.name for j in loop]} made exactly planar (axes moved by ≤ {dev:.2g} rad)")

    canonical = mdl.get("canonical_link") or order[0]
    if canonical not in links:
        raise ctx.err(f"canonical_link '{canonical}' does not exist")
    uf = {n: n for n in list(links) + ["world"]}

    def find(x):
        while uf[x] != x:
            uf[x] = uf[uf[x]]
            x = uf[x]
        return x

    for j in sorted(joints, key=lambda j: (-weight(j), j.order)):
        a, c = find(j.parent), find(j.child)
        if a == c:
            j.cut = True
            if j.type not in _CUTTABLE:
                raise ctx.err(f"joint '{j.name}' ({j.type}) closes a loop that has no joint that can be cut "
                              f"(only {', '.join(_CUTTABLE)} joints can be loop closures)")
        else:
            uf[a] = c
    tree = [j for j in joints if not j.cut]
    cut = [j for j in joints if j.cut]
    adj = {n: [] for n in list(links) + ["world"]}
    for j in tree:
        adj[j.parent].append(j)
        adj[j.child].append(j)
    for n in adj:
        adj[n].sort(key=lambda j: j.order)
    for c in cut:
        planarize(c)

    P0 = (np.eye(3), np.zeros(3)) if placement is None else \
        (np.asarray(placement[1], float), np.asarray(placement[0], float))
    R_mp, p_mp, _ = _pose_element(ctx, mdl, "model")
    W = _compose(P0, (R_mp, p_mp))           # model frame in the world (or the builder's parent)

    # ---------------------------------------------------------------- build (depth first)
    first = len(b.bodies)
    parts, geo_c, geo_v, springs, q0 = {}, [], [], [], []
    attach = {}              # link -> (body, X_BL link frame in body frame)
    visited = set()
    tree_names, static_links = [], []

    def attach_link(lname, body, X_BL):
        attach[lname] = (body, X_BL)
        visited.add(lname)
        ln = links[lname]
        if body >= 0:
            m, c, I = _inertial(ctx, ln, frame_of)
            R = X_BL[0]
            parts.setdefault(body, []).append((m, R @ c + X_BL[1], R @ I @ R.T))
        else:
            static_links.append(lname)
        if lname not in b.frames and (body < 0 or b.bodies[body]["name"] != prefix + lname):
            b.frames[prefix + lname] = Frame(prefix + lname, body, X_BL[0], X_BL[1])
        if load_geometry:
            for kind, out in (("collision", geo_c), ("visual", geo_v)):
                out.extend(_geometries(ctx, ln, kind, X_BL, body, sdf_dir, package_dirs, prefix, frame_of,
                                       static_ok=body < 0))

    def motion(j, reversed_):
        """[(jtype, axis in the joint frame)] of joint j, child relative to parent, and whether
        each step follows the SDF sign (reversed joints negate the axes and reverse the order)."""
        if j.type in ("revolute", "continuous"):
            steps = [(REVOLUTE, axis_of(j, "axis"))]
        elif j.type == "prismatic":
            steps = [(PRISMATIC, axis_of(j, "axis"))]
        elif j.type == "ball":
            steps = [(SPHERICAL, None)]
        elif j.type == "fixed":
            steps = [(FIXED, None)]
        elif j.type in ("universal", "revolute2"):
            a2 = axis_of(j, "axis2")
            if a2 is None:
                raise ctx.err(f"joint '{j.name}' ({j.type}) has no <axis2>")
            steps = [(REVOLUTE, axis_of(j, "axis")), (REVOLUTE, a2)]
        else:       # pragma: no cover - refused above
            raise ctx.err(f"joint '{j.name}': unsupported type '{j.type}'")
        if reversed_:
            steps = [(t, None if a is None else -a) for t, a in reversed(steps)]
        return steps

    def joint_kw(j, axis_tag="axis"):
        ax = j.el.find(axis_tag)
        lim = ax.find("limit") if ax is not None else None
        dyn = ax.find("dynamics") if ax is not None else None
        what = f"joint '{j.name}'"
        kw = {}
        if lim is not None and j.type not in ("continuous", "ball", "fixed"):
            lo = _float(ctx, lim, "lower", what, -1e16)
            hi = _float(ctx, lim, "upper", what, 1e16)
            kw["lower"] = lo if lo > -_INF else -np.inf
            kw["upper"] = hi if hi < _INF else np.inf
            if kw["lower"] > kw["upper"]:
                raise ctx.err(f"{what}: lower limit {lo} > upper {hi}")
            eff = _float(ctx, lim, "effort", what, -1.0)
            vel = _float(ctx, lim, "velocity", what, -1.0)
            if eff >= 0:
                kw["effort"] = eff
            if vel >= 0:
                kw["velocity"] = vel
        if dyn is not None:
            kw["damping"] = _float(ctx, dyn, "damping", what, 0.0)
            kw["friction"] = _float(ctx, dyn, "friction", what, 0.0)
            for key in ("damping", "friction"):
                if kw[key] < 0:
                    raise ctx.err(f"{what}: negative {key} {kw[key]}")
        return kw, (spring_of(j) if axis_tag == "axis" else 0.0), \
            (_float(ctx, dyn, "spring_reference", what, 0.0) if dyn is not None else 0.0)

    def descend(j, other, body, X_B_M, reversed_):
        """Bodies of tree joint j (from the current body, whose frame sees the model frame at
        X_B_M), then the subtree of link `other`."""
        X_MJ = X_M(j.name)
        X_B_J = _compose(X_B_M, X_MJ)                 # joint frame in the current body's frame
        X_J_other = _compose(_inv(X_MJ), X_M(other))  # the other link in the joint frame at q = 0
        steps = motion(j, reversed_)
        if steps[0][0] == FIXED:
            visit(other, body, _compose(X_B_J, X_J_other))
            return
        tree_names.append(j.name)
        parent, Xj = body, X_B_J
        for k, (jt, a) in enumerate(steps):
            last = k == len(steps) - 1
            tag = "axis" if len(steps) == 1 or (k == 0) != reversed_ else "axis2"
            suffix = "" if len(steps) == 1 else ("_1" if tag == "axis" else "_2")
            jname = prefix + j.name + suffix
            ident = last and np.allclose(X_J_other[0], np.eye(3), atol=1e-12) and \
                np.allclose(X_J_other[1], 0.0, atol=1e-12)
            bname = prefix + (other if ident else f"{other}:{j.name}{suffix}")
            kw, kspring, ref = joint_kw(j, tag)
            if jt == REVOLUTE and getattr(j, "extra_armature", 0.0):
                kw["armature"] = j.extra_armature
            try:
                idx = b.add_body(bname, parent, jt, jname, orthonormalize(Xj[0]), Xj[1],
                                 a if a is not None else (0.0, 0.0, 1.0), mass=0.0, inertia=np.zeros((3, 3)),
                                 allow_massless=True, **kw)
            except ModelError as e:
                raise ctx.err(str(e)) from None
            if kspring != 0:
                if jt not in (REVOLUTE, PRISMATIC):
                    raise ctx.err(f"joint '{j.name}': springs on {j.type} joints are not supported")
                springs.append(JointSpring(jname, kspring, ref))
            q0.append(np.array([0.0, 0.0, 0.0, 1.0]) if jt == SPHERICAL else np.zeros(1))
            parent, Xj = idx, (np.eye(3), np.zeros(3))
        visit(other, parent, X_J_other)

    def visit(lname, body, X_BL):
        attach_link(lname, body, X_BL)
        X_B_M = _compose(X_BL, _inv(X_M(lname)))
        for j in adj[lname]:
            other = j.child if j.parent == lname else j.parent
            if other not in visited:
                descend(j, other, body, X_B_M, j.parent != lname)

    roots = []
    if static:          # a static model: every link welded to the world at its pose, joints ignored
        for n in order:
            attach_link(n, -1, _compose(W, X_M(n)))
    else:
        if world_joints and not floating_base:
            visited.add("world")
            for j in adj["world"]:
                if j.child not in visited:
                    descend(j, j.child, -1, W, False)
        for n in [canonical] + [n for n in order if n != canonical]:
            if n in visited:
                continue
            if n == canonical and not floating_base and not world_joints:
                visit(n, -1, _compose(W, X_M(n)))       # welded to the world
                continue
            # a free joint at the link's pose (the canonical link, or a link not joined to it)
            X = _compose(W, X_M(n))
            idx = b.add_body(prefix + n, -1, FREE, prefix + ("root_joint" if n == canonical else f"{n}_free_joint"),
                             mass=0.0, inertia=np.zeros((3, 3)), allow_massless=True)
            q0.append(np.concatenate([X[1], matrix_to_quat_xyzw(orthonormalize(X[0]))]))
            roots.append(n)
            visit(n, idx, (np.eye(3), np.zeros(3)))
    for body, pts in parts.items():
        m, c, I = combine_inertias(pts)
        bd = b.bodies[body]
        bd["mass"], bd["com"], bd["inertia"] = m, c, I

    # geometry with the surface parameters of the file (None: the caller's default)
    for lst, out in ((geo_c, b.collision_geometries), (geo_v, b.visual_geometries)):
        for geo, mu, e in lst:
            geo.sdf_friction, geo.sdf_restitution = mu, e       # None where the file has none
            geo.friction = 1.0 if mu is None else mu            # SDF's defaults: μ = 1, no bounce
            geo.restitution = 0.0 if e is None else e
            out.append(geo)

    # ---------------------------------------------------------------- loop closures
    from solvers.constraints import LoopClosure
    closures, dropped = [], []
    for j in cut:
        if j.parent == "world" and floating_base:
            continue
        kw, kspring, _ = joint_kw(j)
        if kspring != 0:
            raise ctx.err(f"joint '{j.name}' has a spring but closes a loop (cut joints have no coordinate); "
                          f"pass loop_joints= to cut another joint of its loop")
        lost = [k for k in ("lower", "upper", "damping", "friction") if k in kw and np.isfinite(kw[k]) and kw[k] != 0]
        if lost:
            dropped.append(f"'{j.name}' ({', '.join(lost)})")
        X_MJ = X_M(j.name)
        ends = []
        for ln in (j.child, j.parent):
            if ln == "world":
                ends.append(("world", _compose(W, X_MJ)))
                continue
            body, X_BL = attach[ln]
            ends.append(("world" if body < 0 else b.bodies[body]["name"],
                         _compose(_compose(X_BL, _inv(X_M(ln))), X_MJ)))
        (n1, X1), (n2, X2) = ends
        if n1 == n2 == "world":
            continue
        if j.type == "ball":
            closures.append(LoopClosure(n1, (X1[1], orthonormalize(X1[0])), n2, (X2[1], orthonormalize(X2[0])),
                                        kind="point"))
        elif j.type == "fixed":
            closures.append(LoopClosure(n1, (X1[1], orthonormalize(X1[0])), n2, (X2[1], orthonormalize(X2[0])),
                                        kind="weld"))
        else:       # revolute: two points on the axis
            a = axis_of(j, "axis")
            for s in (0.0, hinge_length):
                closures.append(LoopClosure(n1, (X1[1] + s * (X1[0] @ a), orthonormalize(X1[0])),
                                            n2, (X2[1] + s * (X2[0] @ a), orthonormalize(X2[0])), kind="point"))
    if dropped:
        warnings.warn(f"{path}: loop-closing joints cannot keep their limits, damping or friction: "
                      f"{', '.join(dropped)}", stacklevel=3)
    if notes and any("plugin" in n for n in notes):
        warnings.warn(f"{path}: " + "; ".join(n for n in notes if "plugin" in n), stacklevel=3)
    q0 = np.concatenate(q0) if q0 else np.zeros(0)
    info = dict(tree_joints=tree_names, loop_joints=[j.name for j in cut], roots=roots, notes=notes,
                static_links=static_links)
    return Loaded(first_body=first, closures=closures, springs=springs, q0=q0, info=info)


def load_sdf(path, floating_base=True, package_dirs=None, prefix="", root_placement=None,
             gravity=(0.0, 0.0, -9.81), load_geometry=True, model_name=None, loop_joints=None, gearbox=None,
             hinge_length=0.1):
    """Load an SDF file (module docstring) → ``(model, closures)``: the `Model` of the spanning
    tree and the `LoopClosure`s of the joints that close loops (bodies by name; pass them to
    `simstep.Simulator(constraints=...)` or load with `simstep.WorldBuilder.add_sdf`).

    floating_base: a free joint at the canonical link (False: welded to the world at its pose,
    or attached by the file's joints to ``world``). package_dirs: folders searched for
    ``model://`` and ``package://`` meshes (default: pip-installed shares). root_placement:
    (position, rotation) of the model frame (identity: the file's poses). loop_joints: names
    of the joints to cut (default: chosen, see the module docstring). gearbox: "armature" or
    "error" (default "armature" with a warning). hinge_length (m): spacing of the two point
    closures of a cut revolute joint.

    Also set: ``model.q0`` (the file's configuration: the root at its pose, joints at 0; the
    loops are closed there), ``model.springs`` (`JointSpring`s), ``model.closures``,
    ``model.sdf`` (tree joints, loop joints, notes)."""
    b = ModelBuilder(gravity)
    loaded = _append_sdf(path, b, prefix, floating_base, package_dirs, root_placement, load_geometry, model_name,
                         loop_joints, gearbox, hinge_length)
    # static links' geometry stays on body -1
    model = b.build()
    finish_model(model, loaded, path)
    model.sdf = loaded.info
    return model, list(loaded.closures)

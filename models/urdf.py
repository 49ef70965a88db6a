"""URDF loading into a `Model`, with visual and collision geometry descriptions.

Joint order: depth-first from the root; the children of a link are visited in the order of
their joint names, which is how Pinocchio orders them (urdfdom keeps joints in a name-sorted
map), so q and v have Pinocchio's layout. Links attached by fixed joints are merged into
their parent body (inertia combined, geometry re-attached) and stay addressable as frames.
URDF continuous joints are revolute joints without position limits and with one q entry
(Pinocchio stores them as (cos, sin)). Mimic joints are loaded as independent joints by
default (as Pinocchio does) and listed in `Model.mimic`; ``mimic="error"`` rejects them.
"""
from __future__ import annotations

import glob
import os
import site
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .joints import FIXED, FREE, PLANAR, PRISMATIC, REVOLUTE
from .model import Frame, Geometry, ModelBuilder, ModelError


class URDFError(ValueError):
    """A URDF file that cannot be loaded: malformed XML, missing elements, missing meshes."""


def rpy_to_rot(r, p, y):
    """R = Rz(y) Ry(p) Rx(r) (URDF fixed-axis roll, pitch, yaw)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _floats(text, n, what, path):
    try:
        vals = [float(x) for x in text.split()]
    except (AttributeError, ValueError):
        raise URDFError(f"{path}: {what}: cannot read numbers from {text!r}") from None
    if len(vals) != n or not np.all(np.isfinite(vals)):
        raise URDFError(f"{path}: {what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _origin(el, what, path):
    o = el.find("origin") if el is not None else None
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz", path)
    rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy", path)
    return rpy_to_rot(*rpy), xyz


def _attr_float(el, name, what, path, default=None):
    s = el.get(name) if el is not None else None
    if s is None:
        if default is None:
            raise URDFError(f"{path}: {what}: missing attribute '{name}'")
        return default
    try:
        val = float(s)
    except ValueError:
        raise URDFError(f"{path}: {what}: attribute {name}={s!r} is not a number") from None
    if not np.isfinite(val):
        raise URDFError(f"{path}: {what}: attribute {name}={s!r} is not finite")
    return val


def default_package_dirs():
    """Folders holding ROS-style packages shipped by pip (example-robot-data's share/)."""
    out = []
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        d = os.path.join(sp, "cmeel.prefix", "share")
        if os.path.isdir(d):
            out.append(d)
    return out


_ROBOTS = {
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "romeo": "romeo_description/urdf/romeo.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
}


def robot_path(name):
    """(urdf path, package_dirs) of a robot shipped by example-robot-data: one of
    g1, go1, go2, solo12, talos, talos_full, romeo, panda, ur5, anymal_c."""
    if name not in _ROBOTS:
        raise KeyError(f"unknown robot '{name}'; known: {', '.join(_ROBOTS)}")
    dirs = default_package_dirs()
    for d in dirs:
        p = os.path.join(d, "example-robot-data", "robots", _ROBOTS[name])
        if os.path.isfile(p):
            return p, dirs
    raise FileNotFoundError(f"robot '{name}': {_ROBOTS[name]} not found; install example-robot-data")


def resolve_mesh(filename, urdf_dir, package_dirs, path):
    """Absolute path of a mesh given as package://, file:// or relative to the URDF."""
    if filename.startswith("package://"):
        rel = filename[len("package://"):].lstrip("/")
        candidates = [os.path.join(d, rel) for d in package_dirs]
        # also accept package_dirs that point at the package itself
        pkg, _, rest = rel.partition("/")
        candidates += [os.path.join(d, rest) for d in package_dirs if os.path.basename(os.path.normpath(d)) == pkg]
        for c in candidates:
            if os.path.isfile(c):
                return os.path.abspath(c)
        raise URDFError(f"{path}: mesh file {filename!r} not found in package_dirs {list(package_dirs)}")
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    full = filename if os.path.isabs(filename) else os.path.join(urdf_dir, filename)
    if not os.path.isfile(full):
        raise URDFError(f"{path}: mesh file {filename!r} not found (looked at {full})")
    return os.path.abspath(full)


def _geometries(link, kind, body, R0, p0, materials, urdf_dir, package_dirs, path, prefix, default_color):
    out = []
    for k, el in enumerate(link.findall(kind)):
        R, p = _origin(el, f"link '{link.get('name')}' {kind}", path)
        g = el.find("geometry")
        if g is None or len(g) == 0:
            raise URDFError(f"{path}: link '{link.get('name')}' {kind} has no geometry")
        shape = g[0]
        what = f"link '{link.get('name')}' {kind} {shape.tag}"
        mesh, scale, size = None, np.ones(3), np.zeros(0)
        if shape.tag == "box":
            size = _floats(shape.get("size"), 3, what + " size", path) / 2.0
            gkind = "box"
        elif shape.tag == "sphere":
            size = np.array([_attr_float(shape, "radius", what, path)])
            gkind = "sphere"
        elif shape.tag in ("cylinder", "capsule"):
            size = np.array([_attr_float(shape, "radius", what, path), _attr_float(shape, "length", what, path)])
            gkind = shape.tag
        elif shape.tag == "mesh":
            fn = shape.get("filename")
            if not fn:
                raise URDFError(f"{path}: {what} has no filename")
            mesh = resolve_mesh(fn, urdf_dir, package_dirs, path)
            if shape.get("scale"):
                scale = _floats(shape.get("scale"), 3, what + " scale", path)
            gkind = "mesh"
        else:
            raise URDFError(f"{path}: {what}: unsupported geometry '{shape.tag}'")
        if gkind != "mesh" and np.any(size <= 0):
            raise URDFError(f"{path}: {what}: sizes must be positive, got {size}")
        color = default_color
        mat = el.find("material")
        if mat is not None:
            c = mat.find("color")
            if c is not None and c.get("rgba"):
                color = tuple(_floats(c.get("rgba"), 4, what + " material rgba", path))
            elif mat.get("name") in materials:
                color = materials[mat.get("name")]
        name = el.get("name") or f"{prefix}{link.get('name')}_{kind}_{k}"
        out.append(Geometry(name=name, body=body, kind=gkind, size=size, rotation=R0 @ R,
                            translation=R0 @ p + p0, mesh=mesh, scale=scale, color=color))
    return out


def load_urdf(path, floating_base=True, package_dirs=None, mimic="independent", prefix="",
              root_placement=None, builder=None, gravity=(0.0, 0.0, -9.81), load_geometry=True):
    """Load a URDF file into a `Model`.

    floating_base: attach the root link to the world by a free joint (else it is welded to
    the world at `root_placement` = (position (3,), rotation (3, 3)), identity by default,
    and merged into it).
    package_dirs: folders searched for ``package://`` meshes (default: pip-installed shares).
    mimic: "independent" (load mimic joints as ordinary joints, listed in `Model.mimic`) or "error".
    prefix: prepended to body, joint, frame and geometry names.
    builder: an existing `ModelBuilder` to append to (then the builder is returned, not a Model).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise URDFError(f"URDF file not found: {path}")
    if mimic not in ("independent", "error"):
        raise ValueError(f"mimic must be 'independent' or 'error', got {mimic!r}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise URDFError(f"{path}: malformed XML: {e}") from None
    if root.tag != "robot":
        raise URDFError(f"{path}: root element is <{root.tag}>, expected <robot>")
    urdf_dir = os.path.dirname(os.path.abspath(path))
    package_dirs = list(package_dirs) if package_dirs is not None else default_package_dirs()

    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if m.get("name") and c is not None and c.get("rgba"):
            materials[m.get("name")] = tuple(_floats(c.get("rgba"), 4, f"material {m.get('name')}", path))

    links = {}
    for ln in root.findall("link"):
        name = ln.get("name")
        if not name:
            raise URDFError(f"{path}: a <link> has no name")
        if name in links:
            raise URDFError(f"{path}: duplicate link '{name}'")
        links[name] = ln
    if not links:
        raise URDFError(f"{path}: no <link> elements")

    children, is_child = {}, set()
    for j in root.findall("joint"):
        jn = j.get("name")
        if not jn:
            raise URDFError(f"{path}: a <joint> has no name")
        par, ch = j.find("parent"), j.find("child")
        if par is None or ch is None or par.get("link") not in links or ch.get("link") not in links:
            raise URDFError(f"{path}: joint '{jn}' must name an existing parent and child link")
        if ch.get("link") in is_child:
            raise URDFError(f"{path}: link '{ch.get('link')}' has two parent joints (kinematic loops are not URDF)")
        is_child.add(ch.get("link"))
        children.setdefault(par.get("link"), []).append(j)
        if j.find("mimic") is not None and mimic == "error":
            raise URDFError(f"{path}: joint '{jn}' is a mimic joint; pass mimic='independent' to load it "
                            f"as an ordinary joint")
    roots = [n for n in links if n not in is_child]
    if len(roots) != 1:
        raise URDFError(f"{path}: expected exactly one root link, found {roots}")

    own = builder is None
    b = ModelBuilder(gravity) if own else builder

    # per body: list of (mass, com, inertia about com) contributions in the body frame
    contrib = {}

    def add_inertial(body, link, R0, p0):
        inert = link.find("inertial")
        if inert is None:
            return
        what = f"link '{link.get('name')}' inertial"
        mass = _attr_float(inert.find("mass"), "value", what + " mass", path, 0.0)
        if mass < 0:
            raise ModelError(f"{path}: {what}: negative mass {mass}")
        R, p = _origin(inert, what, path)
        ie = inert.find("inertia")
        I = np.zeros((3, 3))
        if ie is not None:
            g = {k: _attr_float(ie, k, what, path, 0.0) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
            I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
        ev = np.linalg.eigvalsh(I)
        if ev.min() < -1e-12 * max(1.0, abs(ev).max()):
            raise ModelError(f"{path}: {what}: inertia is not positive semi-definite (eigenvalues {ev})")
        Rb = R0 @ R
        contrib.setdefault(body, []).append((mass, R0 @ p + p0, Rb @ I @ Rb.T))

    def combine(body):
        parts = contrib.get(body, [])
        m = sum(c[0] for c in parts)
        if m <= 0:
            return 0.0, np.zeros(3), np.zeros((3, 3))
        c = sum(ci[0] * ci[1] for ci in parts) / m
        I = np.zeros((3, 3))
        for mi, ci, Ii in parts:
            d = ci - c
            I += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
        return m, c, 0.5 * (I + I.T)

    pending = []  # (body index, body name) to receive combined inertia at the end
    geoms_c, geoms_v = [], []

    def attach(link, body, R0, p0):
        """Link `link` is rigidly attached to `body` at placement (R0, p0) in the body frame."""
        add_inertial(body, link, R0, p0)
        if link.get("name") != "world":
            b.frames[prefix + link.get("name")] = Frame(prefix + link.get("name"), body, R0, p0)
        if load_geometry:
            geoms_c.extend(_geometries(link, "collision", body, R0, p0, materials, urdf_dir, package_dirs,
                                       path, prefix, (0.7, 0.7, 0.7, 1.0)))
            geoms_v.extend(_geometries(link, "visual", body, R0, p0, materials, urdf_dir, package_dirs,
                                       path, prefix, (0.7, 0.7, 0.7, 1.0)))

    def visit(link_name, body, R0, p0):
        attach(links[link_name], body, R0, p0)
        for j in sorted(children.get(link_name, []), key=lambda e: e.get("name")):
            jn, jt = j.get("name"), j.get("type")
            child = j.find("child").get("link")
            Rj, pj = _origin(j, f"joint '{jn}'", path)
            Rc, pc = R0 @ Rj, R0 @ pj + p0       # joint frame in the body frame
            if jt == "fixed":
                visit(child, body, Rc, pc)
                continue
            axis = _floats(j.find("axis").get("xyz"), 3, f"joint '{jn}' axis", path) \
                if j.find("axis") is not None else np.array([1.0, 0.0, 0.0])
            lim = j.find("limit")
            dyn = j.find("dynamics")
            kw = {}
            if jt in ("revolute", "prismatic"):
                if lim is None:
                    raise URDFError(f"{path}: joint '{jn}' ({jt}) has no <limit>")
                kw.update(lower=_attr_float(lim, "lower", f"joint '{jn}' limit", path, 0.0),
                          upper=_attr_float(lim, "upper", f"joint '{jn}' limit", path, 0.0))
                if kw["lower"] > kw["upper"]:
                    raise URDFError(f"{path}: joint '{jn}': lower limit {kw['lower']} > upper {kw['upper']}")
            if lim is not None:
                eff = _attr_float(lim, "effort", f"joint '{jn}' limit", path, np.inf)
                vel = _attr_float(lim, "velocity", f"joint '{jn}' limit", path, np.inf)
                kw.update(effort=eff if eff > 0 else np.inf, velocity=vel if vel > 0 else np.inf)
            if dyn is not None:
                kw.update(damping=_attr_float(dyn, "damping", f"joint '{jn}' dynamics", path, 0.0),
                          friction=_attr_float(dyn, "friction", f"joint '{jn}' dynamics", path, 0.0))
            if jt in ("revolute", "continuous"):
                jtype = REVOLUTE
            elif jt == "prismatic":
                jtype = PRISMATIC
            elif jt == "floating":
                jtype = FREE
            elif jt == "planar":
                jtype = PLANAR
                # URDF planar: motion in the plane normal to `axis`; make that the joint frame's z
                z = axis / np.linalg.norm(axis)
                x = np.cross([0.0, 1.0, 0.0] if abs(z[1]) < 0.9 else [1.0, 0.0, 0.0], z)
                x /= np.linalg.norm(x)
                Rc = Rc @ np.column_stack((x, np.cross(z, x), z))
            else:
                raise URDFError(f"{path}: joint '{jn}': unsupported type '{jt}'")
            if jtype in (REVOLUTE, PRISMATIC) and np.linalg.norm(axis) < 1e-12:
                raise URDFError(f"{path}: joint '{jn}': zero axis")
            m = j.find("mimic")
            if m is not None:
                b.mimic.append((prefix + jn, prefix + m.get("joint", ""),
                                float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0))))
            try:
                idx = b.add_body(prefix + child, body, jtype, prefix + jn, Rc, pc, axis,
                                 mass=0.0, inertia=np.zeros((3, 3)), allow_massless=True, **kw)
            except ModelError as e:
                raise URDFError(f"{path}: {e}") from None
            pending.append(idx)
            visit(child, idx, np.eye(3), np.zeros(3))

    root_name = roots[0]
    if floating_base:
        body_name = root_name
        if root_name == "world":  # a URDF "world" link under a free joint: name the body after its first child
            fixed = sorted((j for j in children.get(root_name, []) if j.get("type") == "fixed"),
                           key=lambda e: e.get("name"))
            body_name = fixed[0].find("child").get("link") if fixed else "root"
        idx = b.add_body(prefix + body_name, -1, FREE, prefix + "root_joint", mass=0.0,
                         inertia=np.zeros((3, 3)), allow_massless=True)
        pending.append(idx)
        visit(root_name, idx, np.eye(3), np.zeros(3))
    else:
        R0, p0 = (np.eye(3), np.zeros(3)) if root_placement is None else \
            (np.asarray(root_placement[1], float), np.asarray(root_placement[0], float))
        visit(root_name, -1, R0, p0)
        contrib.pop(-1, None)   # mass welded to the world does not move
    for idx in pending:
        m, c, I = combine(idx)
        body = b.bodies[idx]
        body["mass"], body["com"], body["inertia"] = m, c, I
    b.collision_geometries.extend(geoms_c)
    b.visual_geometries.extend(geoms_v)
    if not own:
        return b
    model = b.build()
    bad = model.massless_joints()
    if bad:
        warnings.warn(f"{path}: joints {bad} move no mass or inertia, so M(q) is singular; set "
                      f"model.armature on their dofs before simulating", stacklevel=2)
    return model

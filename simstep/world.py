"""`WorldBuilder` and `World`: bodies, robots and static geometry assembled into one model.

Every free object (box, sphere, capsule, cylinder, mesh) is a tree of one body hanging from
the world by a free joint; a URDF robot is a tree; static geometry (``fixed=True``, the
ground) is attached to the world (body -1). The world's `Model` is the forest of all of them,
in the order they were added, so q and v concatenate the objects' coordinates in that order.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field

import numpy as np

import models
from collision.shapes import hull_tolerance as hull_tolerance_of, load_convex_mesh
from models import FREE, Geometry, ModelBuilder, ModelError
from models.spatial import matrix_to_quat_xyzw, quat_xyzw_to_matrix
from models.model import check_inertia

from ._checks import check_body, check_bool, check_int, check_number, check_quaternion, check_vector

_PALETTE = [(0.90, 0.45, 0.15, 1.0), (0.20, 0.55, 0.85, 1.0), (0.30, 0.70, 0.35, 1.0),
            (0.85, 0.25, 0.35, 1.0), (0.60, 0.40, 0.80, 1.0), (0.95, 0.75, 0.20, 1.0)]


# the public names of `models.spatial`'s conversions: quaternions (x, y, z, w), w ≥ 0 out
quat_to_matrix = quat_xyzw_to_matrix
matrix_to_quat = matrix_to_quat_xyzw


# ------------------------------------------------------------------ inertia of shapes
def box_inertia(mass, half_extents):
    """Inertia (3, 3) about the center of a solid box of half extents (a, b, c)."""
    a, b, c = 2.0 * np.asarray(half_extents, float)
    return mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def sphere_inertia(mass, radius):
    return 0.4 * mass * radius * radius * np.eye(3)


def cylinder_inertia(mass, radius, length):
    """Solid cylinder, axis z."""
    ixx = mass * (3 * radius * radius + length * length) / 12.0
    return np.diag([ixx, ixx, 0.5 * mass * radius * radius])


def capsule_inertia(mass, radius, length):
    """Solid capsule: cylinder of `length` along z capped by two hemispheres, uniform density."""
    r, L = radius, length
    vc, vs = np.pi * r * r * L, 4.0 / 3.0 * np.pi * r ** 3
    mc, ms = mass * vc / (vc + vs), mass * vs / (vc + vs)
    izz = 0.5 * mc * r * r + 0.4 * ms * r * r
    # hemispheres: own inertia 2/5 m r² about their flat face's center axis, CoM at 3r/8 from it
    ixx = mc * (3 * r * r + L * L) / 12.0 + ms * (0.4 * r * r + L * L / 4.0 + 3.0 * L * r / 8.0)
    return np.diag([ixx, ixx, izz])


class JointSprings:
    """Joint springs as an actuation callable: τ = −k (q − q_ref) on one-dof joints
    (the `models.JointSpring`s SDF and MJCF files declare). ``springs(sim)`` → τ (nv,);
    ``springs.torque(q)`` for a configuration. Add it to your own actuation to keep the
    springs: ``Simulator(world, actuation=lambda sim: mine(sim) + world.actuation(sim))``."""

    def __init__(self, model, springs):
        self.model = model
        self.springs = list(springs)
        names = [model.joint_name(s.joint) for s in self.springs]
        for n in names:
            if model.nvs[model.joint_body(n)] != 1:
                raise ModelError(f"joint '{n}': springs need a one-dof joint")
        self.iq = np.array([model.joint_q_index(n) for n in names], dtype=np.int64)
        self.iv = np.array([model.joint_v_index(n) for n in names], dtype=np.int64)
        self.k = np.array([s.stiffness for s in self.springs], float)
        self.ref = np.array([s.reference for s in self.springs], float)

    def torque(self, q):
        tau = np.zeros(self.model.nv)
        np.add.at(tau, self.iv, -self.k * (np.asarray(q, float)[self.iq] - self.ref))
        return tau

    def __call__(self, sim):
        return self.torque(sim.q)


@dataclass
class World:
    """A built world: the `Model` (forest of all moving bodies), collision and visual geometry,
    the initial state, and a record of each added object."""
    model: models.Model
    q0: np.ndarray
    v0: np.ndarray
    geometries: list = field(default_factory=list)   # collision geometry (Geometry records)
    visuals: list = field(default_factory=list)      # visual geometry
    objects: dict = field(default_factory=dict)      # name -> dict(kind, bodies, ...)
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    constraints: list = field(default_factory=list)  # loop closures etc. a scene asks the Simulator for
    actuation: object = None                          # default joint torques: array (nv,) or callable(sim)
    # `collision.detect`'s CollisionDetector per option set, made on first use: a cache, so not
    # compared, printed or pickled
    collision_detectors: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self):
        return dict(self.__dict__, collision_detectors={})

    def _full_name(self, body):
        """The model's name for `body`: itself if the model knows it (or it is an index), else
        the unique ``"<object>/<link>"`` whose link part is `body`."""
        body = check_body("body", body)
        if not isinstance(body, str) or body == "world" or body in self.model.frames \
                or body in self.model.body_names:
            return body
        hits = sorted({n for n in list(self.model.body_names) + list(self.model.frames) if n.rsplit("/", 1)[-1] == body})
        if len(hits) > 1:
            raise KeyError(f"body name '{body}' is ambiguous: {hits}")
        return hits[0] if hits else body

    def body_index(self, body):
        """Index of a body given by name or index (-1 / "world" for the world). For a robot
        added as ``add_urdf("g1", ...)``, its links are ``"g1/<link>"``; the bare link name
        is accepted when only one object has such a link."""
        return self.model.body_index(self._full_name(body))

    def body_frame(self, body):
        """(body index, R, p): a body or merged URDF link as an offset from its body's frame
        (a link welded to the world gives -1 and its world placement)."""
        return self.model.body_placement_offset(self._full_name(body))

    @property
    def body_names(self):
        return self.model.body_names


class WorldBuilder:
    """Assemble free objects, robots and static geometry into a `World`."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = check_vector("gravity", gravity, 3)
        self._mb = ModelBuilder(self.gravity)
        self._q0, self._v0 = [], []
        self._static = []       # geometry attached to the world
        self._visual_static = []
        self._objects = {}
        self._closures = []     # loop closures of SDF/MJCF robots (world.constraints)
        self._springs = []      # their joint springs (world.actuation, see JointSprings)

    # ---------------------------------------------------------------- helpers
    def _name(self, name):
        if not isinstance(name, str) or not name or name == "world":
            raise ValueError(f"object name must be a non-empty string other than 'world', got {name!r}")
        if name in self._objects:
            raise ValueError(f"an object named '{name}' already exists")
        return name

    @staticmethod
    def _material(name, friction, restitution, compliance, hull_tolerance=None):
        """The checked `Geometry` fields an object gives all its geometries: its material, and
        the tolerance of its meshes' collision hulls (m; None: `collision.shapes.HULL_TOLERANCE`)."""
        return dict(friction=check_number(f"'{name}' friction", friction, low=0.0),
                    restitution=check_number(f"'{name}' restitution", restitution, low=0.0, high=1.0),
                    compliance=check_number(f"'{name}' compliance", compliance, low=0.0),
                    hull_tolerance=None if hull_tolerance is None else hull_tolerance_of(hull_tolerance, name))

    @staticmethod
    def _filter_bits(name, group, mask):
        """Collision group and mask: integers in [0, 2³² − 1] (MuJoCo's contype/conaffinity)."""
        return (check_int(f"'{name}' group", group, 0, 0xFFFFFFFF),
                check_int(f"'{name}' mask", mask, 0, 0xFFFFFFFF))

    def _color(self, name, color):
        if color is None:
            return _PALETTE[len(self._objects) % len(_PALETTE)]
        n = len(color) if hasattr(color, "__len__") else 0
        c = tuple(check_vector(f"'{name}' color", color, 4 if n == 4 else 3).tolist())
        if not all(0 <= x <= 1 for x in c):
            raise ValueError(f"'{name}' color must be rgb or rgba in [0, 1], got {color!r}")
        return c + (1.0,) * (4 - len(c))

    def _add_shape(self, name, kind, size, mass, inertia_fn, position, quaternion, velocity,
                   fixed, inertia, com, friction, restitution, compliance, color, group, mask,
                   mesh=None, scale=None, convex=False, hull_tolerance=None):
        # every argument is checked before the builder changes
        name = self._name(name)
        p = check_vector(f"'{name}' position", position, 3)
        qu = check_quaternion(f"'{name}' quaternion", quaternion)
        mat = self._material(name, friction, restitution, compliance, hull_tolerance)
        group, mask = self._filter_bits(name, group, mask)
        fixed = check_bool(f"'{name}' fixed", fixed)
        mass = check_number(f"'{name}' mass", mass, low=0.0, low_open=not fixed, exc=ModelError)
        vel = np.zeros(6) if velocity is None else check_vector(f"'{name}' velocity", velocity, 6)
        if fixed and np.any(vel):
            raise ValueError(f"'{name}' is fixed, so its velocity must be zero, got {velocity!r}")
        c = np.zeros(3) if com is None else check_vector(f"'{name}' com", com, 3)
        I = inertia_fn(mass) if inertia is None else check_vector(f"'{name}' inertia", inertia, (3, 3))
        if not fixed:
            check_inertia(name, mass, I)
        g = Geometry(name=name, body=-1, kind=kind, size=np.asarray(size, float), color=self._color(name, color),
                     group=group, mask=mask, mesh=mesh, scale=np.ones(3) if scale is None else scale,
                     convex=convex, **mat)
        if fixed:
            g.rotation, g.translation = quat_to_matrix(qu), p
            self._static.append(g)
            self._visual_static.append(copy.copy(g))
            self._objects[name] = dict(kind=kind, bodies=[], fixed=True)
            return name
        idx = self._mb.add_body(name, -1, FREE, name, mass=mass, com=c, inertia=I)
        g.body = idx
        self._mb.collision_geometries.append(g)
        self._mb.visual_geometries.append(copy.copy(g))
        self._q0.append(np.concatenate([p, qu]))
        self._v0.append(vel)
        self._objects[name] = dict(kind=kind, bodies=[idx], fixed=False)
        return name

    @staticmethod
    def _positive(name, what, value):
        return check_number(f"'{name}' {what}", value, low=0.0, low_open=True)

    # ---------------------------------------------------------------- public
    def add_ground(self, friction=0.5, restitution=0.0, height=0.0, compliance=0.0,
                   color=(0.82, 0.82, 0.80, 1.0), name="ground"):
        """The halfspace z ≤ height, attached to the world."""
        name = self._name(name)
        mat = self._material(name, friction, restitution, compliance)
        height = check_number(f"'{name}' height", height)
        g = Geometry(name=name, body=-1, kind="plane", size=np.zeros(0),
                     translation=np.array([0.0, 0.0, height]), color=self._color(name, color), **mat)
        self._static.append(g)
        self._visual_static.append(copy.copy(g))
        self._objects[name] = dict(kind="plane", bodies=[], fixed=True)
        return name

    def add_box(self, name, half_extents, mass=1.0, position=(0, 0, 0), quaternion=(0, 0, 0, 1),
                friction=0.5, restitution=0.0, fixed=False, velocity=None, inertia=None, com=None,
                compliance=0.0, color=None, group=1, mask=0xFFFFFFFF):
        """A solid box. velocity: initial [v, ω] in the body frame (the free-joint convention)."""
        name = self._name(name)
        h = check_vector(f"'{name}' half_extents", half_extents, 3)
        if np.any(h <= 0):
            raise ValueError(f"'{name}': half_extents must be positive, got {half_extents!r}")
        return self._add_shape(name, "box", h, mass, lambda m: box_inertia(m, h), position, quaternion,
                               velocity, fixed, inertia, com, friction, restitution, compliance, color, group, mask)

    def add_sphere(self, name, radius, mass=1.0, position=(0, 0, 0), quaternion=(0, 0, 0, 1),
                   friction=0.5, restitution=0.0, fixed=False, velocity=None, inertia=None, com=None,
                   compliance=0.0, color=None, group=1, mask=0xFFFFFFFF):
        name = self._name(name)
        radius = self._positive(name, "radius", radius)
        return self._add_shape(name, "sphere", [radius], mass, lambda m: sphere_inertia(m, radius), position,
                               quaternion, velocity, fixed, inertia, com, friction, restitution, compliance,
                               color, group, mask)

    def add_capsule(self, name, radius, length, mass=1.0, position=(0, 0, 0), quaternion=(0, 0, 0, 1),
                    friction=0.5, restitution=0.0, fixed=False, velocity=None, inertia=None, com=None,
                    compliance=0.0, color=None, group=1, mask=0xFFFFFFFF):
        """A capsule: the segment of `length` along local z, swept by a sphere of `radius`."""
        name = self._name(name)
        radius, length = self._positive(name, "radius", radius), self._positive(name, "length", length)
        return self._add_shape(name, "capsule", [radius, length], mass,
                               lambda m: capsule_inertia(m, radius, length), position, quaternion, velocity,
                               fixed, inertia, com, friction, restitution, compliance, color, group, mask)

    def add_cylinder(self, name, radius, length, mass=1.0, position=(0, 0, 0), quaternion=(0, 0, 0, 1),
                     friction=0.5, restitution=0.0, fixed=False, velocity=None, inertia=None, com=None,
                     compliance=0.0, color=None, group=1, mask=0xFFFFFFFF):
        """A solid cylinder of `length` along local z."""
        name = self._name(name)
        radius, length = self._positive(name, "radius", radius), self._positive(name, "length", length)
        return self._add_shape(name, "cylinder", [radius, length], mass,
                               lambda m: cylinder_inertia(m, radius, length), position, quaternion, velocity,
                               fixed, inertia, com, friction, restitution, compliance, color, group, mask)

    def add_mesh(self, name, path, mass=1.0, position=(0, 0, 0), quaternion=(0, 0, 0, 1), scale=1.0,
                 convex=False, friction=0.5, restitution=0.0, fixed=False, velocity=None, inertia=None,
                 com=None, compliance=0.0, color=None, group=1, mask=0xFFFFFFFF, hull_tolerance=None):
        """A mesh loaded with trimesh (STL, OBJ, DAE, PLY, ...). convex=True collides with its
        convex hull. Mass properties at uniform density: from the mesh if watertight, else from
        its convex hull. The body frame is the mesh file's frame. hull_tolerance (m): how far
        inside the convex hull of the vertices the collision hull may lie (None:
        `collision.shapes.HULL_TOLERANCE`, 0.1 mm; 0: every vertex of the hull)."""
        import trimesh
        name = self._name(name)
        path = os.fspath(path)
        s = check_vector(f"'{name}' scale", scale if np.ndim(scale) else [scale] * 3, 3)
        if np.any(s <= 0):
            raise ValueError(f"'{name}' scale must be positive, got {scale!r}")
        convex = check_bool(f"'{name}' convex", convex)
        tol = None if hull_tolerance is None else hull_tolerance_of(hull_tolerance, name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"'{name}': mesh file not found: {path}")
        try:
            mesh = trimesh.load(path, force="mesh")
        except Exception as e:  # trimesh raises many types
            raise ValueError(f"'{name}': cannot load mesh {path}: {e}") from None
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            raise ValueError(f"'{name}': mesh {path} has no triangles")
        mesh.apply_scale(s)
        try:
            solid = mesh if mesh.is_watertight and mesh.volume > 0 else mesh.convex_hull
        except Exception:  # qhull fails on flat or too-small point sets
            solid = None
        if solid is None or solid.volume <= 1e-15:
            raise ValueError(f"'{name}': mesh {path} encloses no volume (flat or degenerate)")
        load_convex_mesh(path, s, name, tol)   # the collision hull, as the simulator will load it (cached)
        c = solid.center_mass if com is None else com
        return self._add_shape(name, "mesh", np.zeros(0), mass,
                               lambda m: solid.moment_inertia * (m / solid.volume), position, quaternion,
                               velocity, fixed, inertia, c, friction, restitution, compliance, color, group,
                               mask, mesh=os.path.abspath(path), scale=s, convex=convex, hull_tolerance=tol)

    def add_urdf(self, name, path, floating_base=True, position=(0, 0, 0), quaternion=(0, 0, 0, 1),
                 q=None, package_dirs=None, friction=0.5, restitution=0.0, compliance=0.0,
                 mimic="independent", group=1, mask=0xFFFFFFFF, hull_tolerance=None):
        """A URDF robot. Its bodies, joints and frames are named ``"<name>/<link or joint>"``.
        position/quaternion: placement of the root link (the free joint's initial value, or the
        weld to the world if not floating). q: initial joint positions of the actuated joints
        (the robot's nq minus its free joint), default neutral. hull_tolerance (m): how far
        inside the convex hull of each collision mesh's vertices its collision hull may lie
        (None: `collision.shapes.HULL_TOLERANCE`, 0.1 mm; 0: every vertex of the hull)."""
        name = self._name(name)
        p = check_vector(f"'{name}' position", position, 3)
        qu = check_quaternion(f"'{name}' quaternion", quaternion)
        mat = self._material(name, friction, restitution, compliance, hull_tolerance)
        floating_base = check_bool(f"'{name}' floating_base", floating_base)
        package_dirs = self._package_dirs(name, package_dirs)
        group, mask = self._filter_bits(name, group, mask)
        snapshot = self._snapshot()
        try:
            return self._add_urdf(name, path, floating_base, p, qu, q, package_dirs, mat, mimic, group, mask)
        except Exception:
            self._restore(snapshot)     # leave the builder as it was
            raise

    def _snapshot(self):
        return (len(self._mb.bodies), len(self._mb.collision_geometries), len(self._mb.visual_geometries),
                len(self._mb.mimic), len(self._static), len(self._visual_static), dict(self._mb.frames),
                len(self._closures), len(self._springs), len(self._q0), len(self._v0), dict(self._objects))

    def _restore(self, snapshot):
        nb, nc, nv, nm, ns, nvs, frames, ncl, nsp, nq, nv0, objects = snapshot
        del self._mb.bodies[nb:], self._mb.collision_geometries[nc:], self._mb.visual_geometries[nv:]
        del self._mb.mimic[nm:], self._static[ns:], self._visual_static[nvs:]
        del self._closures[ncl:], self._springs[nsp:], self._q0[nq:], self._v0[nv0:]
        self._mb.frames = frames
        self._objects = objects

    def _add_urdf(self, name, path, floating_base, p, qu, q, package_dirs, mat, mimic, group, mask):
        first = len(self._mb.bodies)
        ng_c, ng_v = len(self._mb.collision_geometries), len(self._mb.visual_geometries)
        models.load_urdf(path, floating_base=floating_base, package_dirs=package_dirs, mimic=mimic,
                         prefix=name + "/", root_placement=(p, quat_to_matrix(qu)), builder=self._mb,
                         gravity=self.gravity)
        self._dress_geometry(ng_c, ng_v, mat, group, mask)
        bodies = list(range(first, len(self._mb.bodies)))
        sub = models.Model(self._mb.bodies[first:])  # only for sizes and neutral of this robot
        q_robot = sub.neutral() if sub.nq else np.zeros(0)
        nq_free = 7 if floating_base and bodies else 0
        if floating_base and bodies:
            q_robot[:3], q_robot[3:7] = p, qu
        if q is not None:
            qj = check_vector(f"'{name}' q", q, sub.nq - nq_free)
            q_robot[nq_free:] = qj
            sub.check_q(q_robot, f"'{name}' q")
        self._q0.append(q_robot)
        self._v0.append(np.zeros(sub.nv))
        self._objects[name] = dict(kind="urdf", bodies=bodies, fixed=not floating_base, path=os.fspath(path))
        return name

    def _dress_geometry(self, ng_c, ng_v, mat, group, mask, keep=None):
        """The collision geometries a loader appended from index ng_c (visuals from ng_v): the
        materials mat (the file's friction/restitution where it gives them, SDF's ``<surface>``),
        the filter bits (keep={"friction": True, "group": True} leaves the file's), each mesh
        loaded now (an unreadable or flat collision mesh is refused here, not at Simulator()),
        then the geometry of links welded to the world made static (`_keep_static`)."""
        keep = keep or {}
        for g in self._mb.collision_geometries[ng_c:]:
            mu, e = getattr(g, "sdf_friction", None), getattr(g, "sdf_restitution", None)
            if not keep.get("friction"):
                g.friction = mat["friction"] if mu is None else mu
            g.restitution = mat["restitution"] if e is None else e
            g.compliance = mat["compliance"]
            if not keep.get("group"):
                g.group, g.mask = group, mask
            if g.kind == "mesh":
                g.hull_tolerance = mat["hull_tolerance"]
                load_convex_mesh(g.mesh, g.scale, g.name, g.hull_tolerance)
        self._keep_static(ng_c, ng_v)

    def _keep_static(self, ng_c, ng_v):
        """Links welded to the world (fixed base) carry their geometry on body -1: keep it static."""
        for lst, static in ((self._mb.collision_geometries, self._static),
                            (self._mb.visual_geometries, self._visual_static)):
            start = ng_c if lst is self._mb.collision_geometries else ng_v
            moved = [g for g in lst[start:] if g.body < 0]
            lst[start:] = [g for g in lst[start:] if g.body >= 0]
            static.extend(moved)

    def add_sdf(self, name, path, floating_base=True, position=(0, 0, 0), quaternion=(0, 0, 0, 1), q=None,
                package_dirs=None, friction=None, restitution=None, compliance=0.0, group=1, mask=0xFFFFFFFF,
                model_name=None, loop_joints=None, gearbox=None, hinge_length=0.1, hull_tolerance=None):
        """An SDF robot (`models.load_sdf`), closed loops included. Its bodies, joints and frames
        are named ``"<name>/<link or joint>"``; the joints that close loops become
        `LoopClosure`s in ``world.constraints`` and joint springs (``<spring_stiffness>``) a
        `JointSprings` term of ``world.actuation`` (keep it when you pass your own actuation).
        position/quaternion: placement of the SDF model frame (identity: the file's poses, e.g.
        Cassie's pelvis 1.01 m up). q: initial positions of the tree's joints (the robot's nq
        minus its free joint; default: the file's configuration, where the loops are closed); a
        q that opens a loop is projected onto the closures by `build`. friction/restitution:
        where the file's ``<surface>`` gives none (default: SDF's, μ = 1 and e = 0).
        model_name, loop_joints, gearbox, hinge_length: see `models.load_sdf`. hull_tolerance:
        as `add_urdf`'s."""
        name = self._name(name)
        p = check_vector(f"'{name}' position", position, 3)
        qu = check_quaternion(f"'{name}' quaternion", quaternion)
        mat = self._material(name, 1.0 if friction is None else friction, 0.0 if restitution is None else restitution,
                             compliance, hull_tolerance)
        floating_base = check_bool(f"'{name}' floating_base", floating_base)
        package_dirs = self._package_dirs(name, package_dirs)
        group, mask = self._filter_bits(name, group, mask)
        snapshot = self._snapshot()
        try:
            def append(mb):
                return models.sdf._append_sdf(path, mb, name + "/", floating_base, package_dirs,
                                              (p, quat_to_matrix(qu)), True, model_name, loop_joints, gearbox,
                                              hinge_length)
            self._append_file(name, "sdf", path, append, mat, group, mask)
            if q is not None:
                self._set_tree_q(name, q, floating_base)
            return name
        except Exception:
            self._restore(snapshot)
            raise

    def add_mjcf(self, name, path, position=(0, 0, 0), quaternion=(0, 0, 0, 1), qpos=None, friction=None,
                 restitution=0.0, compliance=0.0, group=None, mask=None, unsupported="error", hull_tolerance=None):
        """An MJCF model compiled by MuJoCo (`models.load_mjcf`; needs the ``mjcf`` extra): its
        bodies, free bodies and static geometry (the worldbody's). Bodies, joints, frames and
        geometries are named ``"<name>/<MuJoCo name>"``; connect and weld equalities become
        `LoopClosure`s in ``world.constraints``, joint springs a `JointSprings` term of
        ``world.actuation``. position/quaternion: placement of MuJoCo's world frame. qpos:
        initial configuration in MuJoCo's layout (default its qpos0), converted by the model's
        `models.MJCFMap` (``world.objects[name]["mjcf"]``; q and v of the object start at
        ``world.objects[name]["q_start"]``/``["v_start"]``). friction, group, mask: None keeps
        the file's (geom friction, contype, conaffinity). The file's gravity must be the
        world's. hull_tolerance: as `add_urdf`'s."""
        name = self._name(name)
        p = check_vector(f"'{name}' position", position, 3)
        qu = check_quaternion(f"'{name}' quaternion", quaternion)
        mat = self._material(name, 0.5 if friction is None else friction, restitution, compliance, hull_tolerance)
        if group is not None or mask is not None:
            group, mask = self._filter_bits(name, 1 if group is None else group, 0xFFFFFFFF if mask is None else mask)
        snapshot = self._snapshot()
        try:
            compiled = models.mjcf._compile(path)
            m = compiled[1]
            g = np.zeros(3) if int(m.opt.disableflags) & models.mjcf._DSBL_GRAVITY else np.asarray(m.opt.gravity)
            if np.abs(g - self.gravity).max() > 1e-9:
                raise ValueError(f"'{name}': {path} has gravity {g.tolist()} but the world's is "
                                 f"{self.gravity.tolist()}; build the world with WorldBuilder(gravity=...)")

            def append(mb):
                return models.mjcf._append_mjcf(path, mb, name + "/", (p, quat_to_matrix(qu)), True, unsupported,
                                                None, compiled)
            keep = dict(friction=friction is None, group=group is None)
            loaded = self._append_file(name, "mjcf", path, append, mat, group, mask, keep=keep)
            obj = self._objects[name]
            obj["mjcf"] = loaded.info["map"]
            obj["timestep"] = loaded.info["timestep"]
            if qpos is not None:
                qpos = check_vector(f"'{name}' qpos", qpos, obj["mjcf"].nq)
                qr = obj["mjcf"].qpos_to_q(qpos)
                models.Model(self._mb.bodies[obj["first_body"]:]).check_q(qr, f"'{name}' qpos")
                self._q0[obj["q_part"]] = qr
            return name
        except Exception:
            self._restore(snapshot)
            raise

    @staticmethod
    def _package_dirs(name, package_dirs):
        if isinstance(package_dirs, (str, os.PathLike)):
            return [package_dirs]
        if package_dirs is not None and not hasattr(package_dirs, "__iter__"):
            raise TypeError(f"'{name}' package_dirs must be a list of folders, got {package_dirs!r}")
        return package_dirs

    def _append_file(self, name, kind, path, append, mat, group, mask, keep=None):
        """Run a loader that appends to the model builder (`models.loaded.Loaded` back), then
        give its collision geometry the materials (the file's where it has them) and record the
        object, its initial state, closures and springs."""
        first = len(self._mb.bodies)
        ng_c, ng_v = len(self._mb.collision_geometries), len(self._mb.visual_geometries)
        loaded = append(self._mb)
        self._dress_geometry(ng_c, ng_v, mat, group, mask, keep)
        bodies = list(range(first, len(self._mb.bodies)))
        q_start = sum(len(x) for x in self._q0)
        v_start = sum(len(x) for x in self._v0)
        sub = models.Model(self._mb.bodies[first:])
        self._q0.append(np.asarray(loaded.q0, float).copy())
        self._v0.append(np.zeros(sub.nv))
        self._closures.extend(loaded.closures)
        self._springs.extend(loaded.springs)
        self._objects[name] = dict(kind=kind, bodies=bodies, fixed=not any(self._mb.bodies[i]["jtype"] == FREE
                                                                           for i in bodies),
                                   path=os.fspath(path), first_body=first, q_start=q_start, v_start=v_start,
                                   q_part=len(self._q0) - 1, closures=list(loaded.closures),
                                   springs=list(loaded.springs), info=loaded.info)
        return loaded

    def _set_tree_q(self, name, q, floating_base):
        obj = self._objects[name]
        sub = models.Model(self._mb.bodies[obj["first_body"]:])
        q_robot = self._q0[obj["q_part"]].copy()
        nq_free = 7 if floating_base and obj["bodies"] and sub.jtype[0] == FREE else 0
        q_robot[nq_free:] = check_vector(f"'{name}' q", q, sub.nq - nq_free)
        sub.check_q(q_robot, f"'{name}' q")
        self._q0[obj["q_part"]] = q_robot

    def build(self):
        """Assemble the `World`. Raises ModelError if some joint moves no mass (singular M)."""
        model = self._mb.build()
        model.collision_geometries = self._static + model.collision_geometries
        model.visual_geometries = self._visual_static + model.visual_geometries
        model.check_mass_matrix()
        q0 = np.concatenate(self._q0) if self._q0 else np.zeros(0)
        v0 = np.concatenate(self._v0) if self._v0 else np.zeros(0)
        model.check_q(q0, "initial q")
        world = World(model=model, q0=q0, v0=v0, geometries=model.collision_geometries,
                      visuals=model.visual_geometries, objects=dict(self._objects), gravity=self.gravity.copy())
        if self._closures:      # SDF/MJCF loops: closed in q0 (a user's q may open them)
            from .projection import project_loop_closures
            world.constraints = list(self._closures)
            r = project_loop_closures(model, q0, world.constraints, tol=1e-12, max_iter=50)
            if r.residual > 1e-6:       # m; files round π/2 and the like, which can leave ~1e-8
                raise ModelError(f"the initial configuration cannot be brought onto the loop closures "
                                 f"(largest error {r.residual:.3g} after {r.iterations} projection steps)")
            world.q0 = r.q
        if self._springs:
            world.actuation = JointSprings(model, self._springs)
        return world

"""`Model`: the static kinematic forest, and `ModelBuilder` that assembles one.

A model is a forest rooted at the world: body ``i`` hangs from ``parent[i] < i`` (``-1`` is
the world) through exactly one joint. Everything is stored in flat arrays; the numba
kernels read the two packed tables ``jint`` and ``jfloat`` (their columns: `models.layout`)
so a call passes few arguments.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .dynamics import crba_diagonal_kernel
from .joints import FIXED, FREE, JOINT_NAMES, JOINT_NQ, JOINT_NV, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL
from .kinematics import all_finite, difference_kernel, integrate_kernel, q_status_kernel
from .layout import (JF_AXIS, JF_COM, JF_INERTIA, JF_MASS, JF_P, JF_R, JF_SIZE, JI_IQ, JI_IV, JI_NQ, JI_NV,
                     JI_PARENT, JI_SIZE, JI_TYPE)


class ModelError(ValueError):
    """Invalid model data (masses, inertias, joints, names)."""


@dataclass
class Frame:
    """A named frame rigidly attached to a body: a URDF link merged by a fixed joint."""
    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray


@dataclass
class Geometry:
    """A shape attached to a body (``body == -1``: the world) at a local placement.

    kind: "box" (size = half extents (3,)), "sphere" (size = (radius,)),
    "capsule" / "cylinder" (size = (radius, length), axis = local z),
    "plane" (halfspace z <= 0 of its placement; size unused), "mesh" (``mesh`` = file path,
    ``scale`` (3,); ``convex`` asks collision to use the convex hull; ``hull_tolerance`` (m)
    how far inside the hull of the mesh's vertices its collision hull may lie, None for
    collision's default, `collision.shapes.HULL_TOLERANCE`).
    """
    name: str
    body: int
    kind: str
    size: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    mesh: str | None = None
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    convex: bool = False
    color: tuple = (0.7, 0.7, 0.7, 1.0)
    friction: float = 0.5
    restitution: float = 0.0
    compliance: float = 0.0
    group: int = 1
    mask: int = 0xFFFFFFFF
    hull_tolerance: float | None = None


def check_inertia(name, mass, inertia, allow_massless=False):
    """Raise ModelError unless mass ≥ 0 (> 0 unless allow_massless) and inertia is PD (PSD if massless)."""
    if not np.isfinite(mass) or mass < 0 or (mass == 0 and not allow_massless):
        raise ModelError(f"body '{name}': mass must be positive, got {mass}")
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"body '{name}': inertia must be a finite 3x3 matrix")
    if not np.allclose(inertia, inertia.T, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
        raise ModelError(f"body '{name}': inertia is not symmetric")
    ev = np.linalg.eigvalsh(inertia)
    if mass > 0 and ev.min() <= 0:
        raise ModelError(f"body '{name}': inertia is not positive definite (eigenvalues {ev})")
    if mass == 0 and ev.min() < 0:
        raise ModelError(f"body '{name}': inertia of a massless body has negative eigenvalues {ev}")


def _float_array(x, name):
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {x!r}") from None


def subtree_preorder(parent):
    """(pre, size) (n,) int64 of a forest given by parent (n,) (−1 at roots): each link's
    depth-first preorder index (roots and children by index) and its subtree size, so the
    subtree of i is the preorder range pre[i] : pre[i] + size[i]."""
    n = len(parent)
    children = [[] for _ in range(n)]
    for i in range(n):
        if parent[i] >= 0:
            children[parent[i]].append(i)
    pre, size = np.zeros(n, np.int64), np.ones(n, np.int64)
    stack = [i for i in range(n - 1, -1, -1) if parent[i] < 0]
    k = 0
    while stack:
        i = stack.pop()
        pre[i] = k
        k += 1
        stack.extend(reversed(children[i]))
    for i in range(n - 1, -1, -1):   # children after parents
        if parent[i] >= 0:
            size[parent[i]] += size[i]
    return pre, size


def dof_parents(parent, idx_v, nvs):
    """(nv,) int64: the dof tree of M's sparsity, λ(k) = the previous dof of the joint, or the
    last dof of the nearest ancestor joint with dofs (−1 at roots)."""
    dp = np.full(int(np.sum(nvs)), -1, np.int64)
    last = np.full(len(parent), -1, np.int64)
    for i in range(len(parent)):
        p = parent[i]
        up = last[p] if p >= 0 else -1
        for k in range(idx_v[i], idx_v[i] + nvs[i]):
            dp[k] = up
            up = k
        last[i] = up
    return dp


class Model:
    """Static description of a kinematic forest; built by `ModelBuilder.build()`.

    Attributes: ``nbodies``, ``nq``, ``nv``, ``body_names``, ``joint_names`` (joints with
    dofs, in q/v order), ``parent`` (n,), ``jtype`` (n,), ``idx_q``, ``idx_v``, ``nqs``,
    ``nvs``, ``armature``/``damping``/``friction``/``effort_limit``/``velocity_limit`` (nv,),
    ``lower``/``upper`` (nv,) position limits of 1-dof joints (±inf otherwise),
    ``frames`` (name -> Frame), ``collision_geometries``/``visual_geometries``,
    ``mimic`` (list of (joint, mimicked joint, multiplier, offset)), ``gravity`` (3,).
    """

    def __init__(self, bodies, gravity=(0.0, 0.0, -9.81), frames=None,
                 collision_geometries=(), visual_geometries=(), mimic=()):
        n = len(bodies)
        self.nbodies = n
        self.body_names = [b["name"] for b in bodies]
        self.parent = np.array([b["parent"] for b in bodies], dtype=np.int64)
        self.jtype = np.array([b["jtype"] for b in bodies], dtype=np.int64)
        self.nqs = np.array([JOINT_NQ[t] for t in self.jtype], dtype=np.int64)
        self.nvs = np.array([JOINT_NV[t] for t in self.jtype], dtype=np.int64)
        self.idx_q = np.concatenate(([0], np.cumsum(self.nqs)[:-1])).astype(np.int64) if n else np.zeros(0, np.int64)
        self.idx_v = np.concatenate(([0], np.cumsum(self.nvs)[:-1])).astype(np.int64) if n else np.zeros(0, np.int64)
        self.nq = int(self.nqs.sum())
        self.nv = int(self.nvs.sum())
        self.joint_names = [b["joint"] for b in bodies if JOINT_NV[b["jtype"]] > 0]
        self._joint_body = {b["joint"]: i for i, b in enumerate(bodies)}
        self._body_index = {name: i for i, name in enumerate(self.body_names)}
        self.gravity = np.asarray(gravity, dtype=float).copy()

        self.jint = np.zeros((n, JI_SIZE), dtype=np.int64)
        self.jfloat = np.zeros((n, JF_SIZE))
        self.zero_fext = np.zeros((n, 6))   # fext = None of the dynamics functions (kernels only read it)
        nv = self.nv
        self.armature = np.zeros(nv)
        self.damping = np.zeros(nv)
        self.friction = np.zeros(nv)
        self.effort_limit = np.full(nv, np.inf)
        self.velocity_limit = np.full(nv, np.inf)
        self.lower = np.full(nv, -np.inf)
        self.upper = np.full(nv, np.inf)
        for i, b in enumerate(bodies):
            ji = self.jint[i]
            ji[JI_PARENT], ji[JI_TYPE], ji[JI_IQ], ji[JI_IV], ji[JI_NQ], ji[JI_NV] = (
                b["parent"], b["jtype"], self.idx_q[i], self.idx_v[i], self.nqs[i], self.nvs[i])
            f = self.jfloat[i]
            f[JF_R:JF_R + 9] = np.asarray(b["rotation"], float).reshape(9)
            f[JF_P:JF_P + 3] = b["translation"]
            f[JF_AXIS:JF_AXIS + 3] = b["axis"]
            f[JF_MASS] = b["mass"]
            f[JF_COM:JF_COM + 3] = b["com"]
            f[JF_INERTIA:JF_INERTIA + 9] = np.asarray(b["inertia"], float).reshape(9)
            sl = slice(self.idx_v[i], self.idx_v[i] + self.nvs[i])
            for key, arr in (("armature", self.armature), ("damping", self.damping),
                             ("friction", self.friction), ("effort", self.effort_limit),
                             ("velocity", self.velocity_limit), ("lower", self.lower),
                             ("upper", self.upper)):
                if b.get(key) is not None and self.nvs[i] > 0:
                    arr[sl] = b[key]
        self.frames = dict(frames or {})
        self.collision_geometries = list(collision_geometries)
        self.visual_geometries = list(visual_geometries)
        self.mimic = list(mimic)

    # ------------------------------------------------------------------ tree orders
    # for the algorithms that walk subtrees (PV-OSIMr, proxPV, proxLTL); made on first use
    @functools.cached_property
    def _tree_orders(self):
        return subtree_preorder(self.parent)

    @property
    def preorder(self):
        """(n,) int64: each link's depth-first preorder index (`subtree_preorder`)."""
        return self._tree_orders[0]

    @property
    def subtree_size(self):
        """(n,) int64: the number of links in each link's subtree (itself included)."""
        return self._tree_orders[1]

    @functools.cached_property
    def dof_parent(self):
        """(nv,) int64: the dof tree of M's sparsity (`dof_parents`)."""
        return dof_parents(self.parent, self.idx_v, self.nvs)

    # ------------------------------------------------------------------ views
    @property
    def mass(self):
        return self.jfloat[:, JF_MASS]

    @property
    def com(self):
        return self.jfloat[:, JF_COM:JF_COM + 3]

    @property
    def inertia(self):
        return self.jfloat[:, JF_INERTIA:JF_INERTIA + 9].reshape(-1, 3, 3)

    def joint_type_name(self, body):
        return JOINT_NAMES[self.jtype[self.body_index(body)]]

    def __repr__(self):
        return f"Model(nbodies={self.nbodies}, nq={self.nq}, nv={self.nv})"

    # ------------------------------------------------------------------ names
    def body_index(self, body):
        """Index of a body given by name or index; "world" and -1 give -1; merged links resolve to their body."""
        if isinstance(body, (int, np.integer)):
            if -1 <= body < self.nbodies:
                return int(body)
            raise KeyError(f"body index {body} out of range [-1, {self.nbodies})")
        if body == "world":
            return -1
        if body in self._body_index:
            return self._body_index[body]
        if body in self.frames:
            return self.frames[body].body
        raise KeyError(f"unknown body '{body}'; bodies: {', '.join(self.body_names[:20])}"
                       + (" ..." if self.nbodies > 20 else ""))

    def body_placement_offset(self, body):
        """(body index, R, p): the frame of a body or merged link relative to its body."""
        if isinstance(body, str) and body not in self._body_index and body in self.frames:
            fr = self.frames[body]
            return fr.body, fr.rotation, fr.translation
        return self.body_index(body), np.eye(3), np.zeros(3)

    def joint_name(self, name):
        """The model's name for joint `name`: itself if known, else the unique ``"<object>/<joint>"``
        whose last part is `name` (a robot added to a world as ``add_urdf("g1", ...)`` has joints
        ``"g1/<joint>"``); KeyError if that is ambiguous."""
        if not isinstance(name, str):
            raise TypeError(f"joint names are strings, got {name!r}")
        if name in self._joint_body:
            return name
        hits = sorted(n for n in self._joint_body if n.rsplit("/", 1)[-1] == name)
        if len(hits) > 1:
            raise KeyError(f"joint name '{name}' is ambiguous: {hits}")
        return hits[0] if hits else name

    def _joint(self, name):
        name = self.joint_name(name)
        if name not in self._joint_body or self.nvs[self._joint_body[name]] == 0:
            raise KeyError(f"unknown joint '{name}'; joints with dofs: {', '.join(self.joint_names[:20])}"
                           + (" ..." if len(self.joint_names) > 20 else ""))
        return self._joint_body[name]

    def joint_q_index(self, name):
        """First index of joint `name` in q."""
        return int(self.idx_q[self._joint(name)])

    def joint_v_index(self, name):
        """First index of joint `name` in v."""
        return int(self.idx_v[self._joint(name)])

    def joint_body(self, name):
        """Index of the body that joint `name` moves."""
        return self._joint(name)

    # ------------------------------------------------------------- configurations
    def neutral(self):
        """Neutral configuration: zero angles and displacements, identity quaternions."""
        q = np.zeros(self.nq)
        for i in range(self.nbodies):
            t, iq = self.jtype[i], self.idx_q[i]
            if t == FREE:
                q[iq + 6] = 1.0
            elif t == SPHERICAL:
                q[iq + 3] = 1.0
            elif t == PLANAR:
                q[iq + 2] = 1.0
        return q

    def random_configuration(self, rng=None, bound=1.0):
        """A random q: 1-dof joints uniform within limits (±π, or ±`bound` m, where unlimited),
        free/planar positions uniform in [-bound, bound], rotations uniform."""
        rng = np.random.default_rng(rng)
        q = self.neutral()
        for i in range(self.nbodies):
            t, iq, iv = self.jtype[i], self.idx_q[i], self.idx_v[i]
            if t in (REVOLUTE, PRISMATIC):
                lo, hi = self.lower[iv], self.upper[iv]
                d = np.pi if t == REVOLUTE else bound
                lo = lo if np.isfinite(lo) else -d
                hi = hi if np.isfinite(hi) else d
                q[iq] = rng.uniform(lo, hi)
            elif t == FREE:
                q[iq:iq + 3] = rng.uniform(-bound, bound, 3)
                u = rng.normal(size=4)
                q[iq + 3:iq + 7] = u / np.linalg.norm(u)
            elif t == SPHERICAL:
                u = rng.normal(size=4)
                q[iq:iq + 4] = u / np.linalg.norm(u)
            elif t == PLANAR:
                th = rng.uniform(-np.pi, np.pi)
                q[iq:iq + 4] = (*rng.uniform(-bound, bound, 2), np.cos(th), np.sin(th))
        return q

    def integrate(self, q, v, dt=1.0):
        """q ⊕ dt·v on the configuration manifold (exact exponential map per joint)."""
        q, v = self.check_q(q), self.check_v(v)
        out = np.empty(self.nq)
        integrate_kernel(self.jint, q, v, float(dt), out)
        return out

    def difference(self, q0, q1):
        """v such that integrate(q0, v) = q1 (per-joint logarithm; used by tests and finite differences)."""
        q0, q1 = self.check_q(q0), self.check_q(q1)
        out = np.empty(self.nv)
        difference_kernel(self.jint, q0, q1, out)
        return out

    # ------------------------------------------------------------------ checks
    def check_q(self, q, name="q", unit_tol=1e-6):
        """q as a float array of shape (nq,), finite, with unit quaternions; ValueError otherwise."""
        q = _float_array(q, name)
        if q.shape != (self.nq,):
            raise ValueError(f"{name} has shape {q.shape}, expected ({self.nq},)")
        status = q_status_kernel(self.jint, q, unit_tol)
        if status == -2:
            raise ValueError(f"{name} contains NaN or inf at indices {np.flatnonzero(~np.isfinite(q))[:10]}")
        if status >= 0:
            t, iq = self.jtype[status], self.idx_q[status]
            sl = {FREE: slice(iq + 3, iq + 7), SPHERICAL: slice(iq, iq + 4), PLANAR: slice(iq + 2, iq + 4)}[t]
            what = "(cos, sin)" if t == PLANAR else "quaternion"
            raise ValueError(f"{name}: {what} of joint '{self._joint_name_of(status)}' (q[{sl.start}:{sl.stop}]) "
                             f"is not unit (norm {np.linalg.norm(q[sl]):.9g})")
        return q

    def check_v(self, v, name="v"):
        """v as a C-contiguous float array of shape (nv,), finite; ValueError otherwise."""
        v = _float_array(v, name)
        if not v.flags.c_contiguous:     # the kernels' own layout (`simstep.steady` calls them untyped)
            v = v.copy()
        if v.shape != (self.nv,):
            raise ValueError(f"{name} has shape {v.shape}, expected ({self.nv},)")
        if not all_finite(v):
            raise ValueError(f"{name} contains NaN or inf at indices {np.flatnonzero(~np.isfinite(v))[:10]}")
        return v

    def _joint_name_of(self, i):
        for name, b in self._joint_body.items():
            if b == i:
                return name
        return self.body_names[i]

    def massless_joints(self):
        """Joints whose dofs move no mass or inertia (M(q) is singular there): diag of M at neutral ≈ 0."""
        if self.nv == 0:
            return []
        d = np.empty(self.nv)
        crba_diagonal_kernel(self.jint, self.jfloat, self.armature, self.neutral(), d)
        bad = np.flatnonzero(~(d > 1e-12 * max(1.0, d.max())))
        bodies = sorted({int(np.searchsorted(self.idx_v, k, side="right") - 1) for k in bad})
        return [self._joint_name_of(i) for i in bodies]

    def singular_mass_matrix_error(self, op):
        """The error for a failed ABA factorisation at a configuration whose body origins are
        op (n, 3): joints that move no mass, or else the precision limit of spatial inertias
        expressed about the world origin (bodies far from it)."""
        bad = self.massless_joints()
        if bad:
            return np.linalg.LinAlgError(f"the mass matrix is singular: joints {bad} move no mass; "
                                         f"set model.armature on their dofs")
        far = float(np.abs(op).max()) if op.size else 0.0
        return np.linalg.LinAlgError(
            f"the mass matrix lost its positive definiteness in floating point at this configuration: "
            f"spatial inertias are expressed about the world origin and a body is {far:.3g} m from it; "
            f"keep scenes within about 1e5 m of the origin")

    def check_mass_matrix(self):
        """Raise ModelError if some joint moves no mass (singular M); suggests armature as the fix."""
        bad = self.massless_joints()
        if bad:
            raise ModelError(f"joints {bad} move no mass or inertia, so the mass matrix is singular; "
                             f"give their links mass or set model.armature on their dofs")


class ModelBuilder:
    """Accumulates bodies (each with its joint) and produces a `Model`."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.bodies = []
        self.frames = {}
        self.collision_geometries = []
        self.visual_geometries = []
        self.mimic = []
        self.gravity = gravity

    def add_body(self, name, parent=-1, jtype=FREE, joint=None, rotation=None, translation=None,
                 axis=(0.0, 0.0, 1.0), mass=1.0, com=(0.0, 0.0, 0.0), inertia=None,
                 allow_massless=False, **limits):
        """Add a body moved by one joint from `parent` (index, -1 = world); returns its index.

        rotation/translation: joint frame in the parent body frame. axis: unit joint axis in
        the joint frame (revolute, prismatic). mass (kg), com (m, body frame), inertia (3, 3)
        about the CoM in body axes. limits: armature, damping, friction, effort, velocity,
        lower, upper (per dof).
        """
        if name in (b["name"] for b in self.bodies) or name == "world":
            raise ModelError(f"duplicate body name '{name}'")
        joint = joint or name
        if any(b["joint"] == joint for b in self.bodies):
            raise ModelError(f"duplicate joint name '{joint}'")
        if not -1 <= parent < len(self.bodies):
            raise ModelError(f"body '{name}': parent index {parent} must be an earlier body or -1")
        if jtype not in (FIXED, REVOLUTE, PRISMATIC, FREE, SPHERICAL, PLANAR):
            raise ModelError(f"body '{name}': unknown joint type {jtype}")
        inertia = np.eye(3) * 1e-3 if inertia is None else np.asarray(inertia, float)
        check_inertia(name, float(mass), inertia, allow_massless)
        axis = np.asarray(axis, float)
        if jtype in (REVOLUTE, PRISMATIC):
            na = np.linalg.norm(axis)
            if not np.isfinite(na) or na < 1e-12:
                raise ModelError(f"joint '{joint}': axis {axis} is zero or not finite")
            axis = axis / na
        R = np.eye(3) if rotation is None else np.asarray(rotation, float)
        if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
            raise ModelError(f"joint '{joint}': placement rotation is not a rotation matrix")
        p = np.zeros(3) if translation is None else np.asarray(translation, float)
        self.bodies.append(dict(name=name, parent=int(parent), jtype=int(jtype), joint=joint,
                                rotation=R, translation=p, axis=axis, mass=float(mass),
                                com=np.asarray(com, float), inertia=inertia, **limits))
        return len(self.bodies) - 1

    def build(self):
        return Model(self.bodies, self.gravity, self.frames, self.collision_geometries,
                     self.visual_geometries, self.mimic)

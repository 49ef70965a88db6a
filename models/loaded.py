"""What the SDF and MJCF loaders hand back besides the tree: loop closures, joint springs, the
file's configuration, and the small rotation helpers they share.

`Loaded` is the record of one robot appended to a `ModelBuilder` (the public loaders turn it
into ``(model, closures)``; `simstep.WorldBuilder.add_sdf`/``add_mjcf`` keep it to fill the
world's constraints, initial state and springs).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np


@dataclass
class JointSpring:
    """A linear spring on a one-dof joint: τ = −stiffness (q − reference) (N·m/rad or N/m)."""
    joint: str
    stiffness: float
    reference: float = 0.0


@dataclass
class Loaded:
    """One robot appended to a `ModelBuilder` by a loader.

    first_body: index of its first body in the builder; closures: `LoopClosure`s (bodies by
    name); springs: `JointSpring`s; q0 (its nq,): the file's configuration (root at its pose
    in the file, joints at zero for SDF, MuJoCo's qpos0 for MJCF); info: loader-specific
    records (SDF: tree and loop joints, notes; MJCF: the `MJCFMap`, timestep, gravity)."""
    first_body: int
    closures: list = field(default_factory=list)
    springs: list = field(default_factory=list)
    q0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    info: dict = field(default_factory=dict)


def finish_model(model, loaded, path):
    """Attach the loader's results to a standalone `Model` (``model.q0``, ``model.springs``,
    ``model.closures``) and warn about joints that move no mass."""
    model.q0 = loaded.q0.copy()
    model.springs = list(loaded.springs)
    model.closures = list(loaded.closures)
    bad = model.massless_joints()
    if bad:
        warnings.warn(f"{path}: joints {bad} move no mass or inertia, so M(q) is singular; set "
                      f"model.armature on their dofs before simulating", stacklevel=3)
    return model


# ----------------------------------------------------------------------------- rotations
def quat_wxyz_to_rot(q):
    """Rotation matrix of the quaternion (w, x, y, z) (normalised first)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rot_to_quat_xyzw(R):
    """Unit quaternion (x, y, z, w), w ≥ 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


def axis_angle(a, theta):
    """Rotation by theta about the unit axis a (Rodrigues)."""
    a = np.asarray(a, float)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * (K @ K)


def orthonormalize(R):
    """The nearest rotation matrix (polar factor) of a nearly orthonormal R."""
    U, _, Vt = np.linalg.svd(np.asarray(R, float))
    Q = U @ Vt
    if np.linalg.det(Q) < 0:
        U[:, -1] *= -1
        Q = U @ Vt
    return Q


def combine_inertias(parts):
    """(mass, com, inertia about the com) of rigidly joined parts [(m, c, I about c), ...]
    expressed in one frame."""
    m = sum(p[0] for p in parts)
    if m <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = sum(p[0] * np.asarray(p[1], float) for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = np.asarray(ci, float) - c
        I += np.asarray(Ii, float) + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, 0.5 * (I + I.T)

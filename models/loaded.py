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

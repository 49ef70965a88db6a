"""What a step and a run produce: `StepStats`, `StepContacts`, `Trajectory` (saved and loaded
as ``.npz`` by `Trajectory.save` and `load_trajectory`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from numba import njit

TRAJECTORY_FORMAT = 1    # version written into saved trajectories


@njit(cache=True, _nrt=False)
def max_penetration(distance):
    """The deepest penetration max(0, −min distance) of contacts' signed distances (k,), m."""
    d = 0.0
    for i in range(distance.shape[0]):
        d = max(d, -distance[i])
    return d


@dataclass
class StepStats:
    """Statistics of the last step (times in seconds)."""
    iterations: int = 0
    newton_steps: int = 0              # steps of the ADMM's semismooth Newton polish (`solvers.newton_polish`)
    converged: bool = True
    primal_residual: float = 0.0
    dual_residual: float = 0.0
    complementarity: float = 0.0
    velocity_residual: float = 0.0     # m/s: contact law error of the returned impulses (ADMM)
    rho: float = 0.0
    warm_started: bool = False
    ncontacts: int = 0
    nrows: int = 0
    max_penetration: float = 0.0
    time_collision: float = 0.0
    time_dynamics: float = 0.0
    time_operator: float = 0.0
    time_solver: float = 0.0
    time_integration: float = 0.0
    time_total: float = 0.0
    projection_iterations: int = 0      # Gauss–Newton steps of the loop-closure projection
    projection_residual: float = 0.0    # max loop-closure row error after it (m, rad for weld rotations)
    time_projection: float = 0.0        # included in time_integration
    steady: bool = False                # stages 3–6 ran in one compiled call (`simstep.steady`), timed in time_solver
    #                                     (with a `JointPD`'s torques when that PD is the whole actuation)

    def as_dict(self):
        return dict(self.__dict__)

    def record_solve(self, r):
        """The ADMM's numbers of this step from r (a `solvers.admm.ADMMResult`, or the steady
        step's `simstep.steady.SteadyOut`, which has the same fields)."""
        self.iterations, self.converged, self.newton_steps = r.iterations, r.converged, r.newton_steps
        self.primal_residual, self.dual_residual = r.primal_residual, r.dual_residual
        self.complementarity, self.rho, self.warm_started = r.complementarity, r.rho, r.warm_started
        self.velocity_residual = r.velocity_residual

    def __getitem__(self, key):
        return getattr(self, key)


@dataclass
class StepContacts:
    """Contacts of the last step with their impulses (k points). Over the step of length dt
    (s), an impulse λ (N·s) is the mean force λ / dt (N): `force`, `world_force`."""
    body1: np.ndarray
    body2: np.ndarray
    position: np.ndarray     # (k, 3) world
    frame: np.ndarray        # (k, 3, 3) columns (t1, t2, n), n from body 2 into body 1
    distance: np.ndarray     # (k,) signed, negative = penetration
    impulse: np.ndarray      # (k, 3) (λ_t1, λ_t2, λ_n) in N·s, acting on body 1
    friction: np.ndarray
    key: np.ndarray
    dt: float = 0.0          # the step's length (s); 0 when no step was taken

    @property
    def depth(self):
        return np.maximum(-self.distance, 0.0)

    @property
    def normal(self):
        """(k, 3) world normals, from body 2 into body 1."""
        return self.frame[:, :, 2]

    @property
    def world_impulse(self):
        """(k, 3) impulses on body 1 in world axes (N·s; divide by dt for the mean force)."""
        return np.einsum("kij,kj->ki", self.frame, self.impulse)

    @property
    def force(self):
        """(k, 3) mean forces (N) on body 1 over the step, contact axes (t1, t2, n)."""
        return self.impulse / self.dt if self.dt > 0 else np.zeros_like(self.impulse)

    @property
    def world_force(self):
        """(k, 3) mean forces (N) on body 1 over the step, world axes."""
        return self.world_impulse / self.dt if self.dt > 0 else np.zeros_like(self.impulse)

    def __len__(self):
        return self.body1.shape[0]


@dataclass
class RecordedContacts:
    """The contacts of one recorded step (`Trajectory.contacts`): bodies (indices, -1 the world),
    world points, normals (from body 2 into body 1), world impulses on body 1 (N·s) and the
    signed distances (m); `force` is the mean force over the step (N)."""
    body1: np.ndarray
    body2: np.ndarray
    position: np.ndarray
    normal: np.ndarray
    impulse: np.ndarray
    distance: np.ndarray
    dt: float

    @property
    def force(self):
        return self.impulse / self.dt if self.dt > 0 else np.zeros_like(self.impulse)

    @property
    def frame(self):
        """(k, 3, 3) identity: the impulses are already in world axes (for the viewer's
        ``frame @ impulse`` convention)."""
        return np.broadcast_to(np.eye(3), (len(self), 3, 3))

    def __len__(self):
        return self.body1.shape[0]


class ContactRows:
    """``traj.contacts``: the recorded contacts as a sequence, one `RecordedContacts` per row."""

    def __init__(self, traj):
        self._traj = traj

    def __len__(self):
        return len(self._traj)

    def __getitem__(self, i):
        tr = self._traj
        n = len(tr)
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"contacts rows are indexed by an integer, got {i!r}")
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for a trajectory of {n} rows")
        i %= n
        a, b = tr.contact_ptr[i], tr.contact_ptr[i + 1]
        return RecordedContacts(tr.contact_body1[a:b], tr.contact_body2[a:b], tr.contact_position[a:b],
                                tr.contact_normal[a:b], tr.contact_impulse[a:b], tr.contact_distance[a:b], tr.dt)


@dataclass
class Trajectory:
    """A recorded run: t (k,), q (k, nq), v (k, nv); row 0 is the state before the first step.

    iterations, ncontacts (k,) per row (row 0: 0). When contacts were recorded, row i's
    contacts (those of the step that ended at row i) are ``contacts[i]``; they are stored flat
    (``contact_ptr`` (k + 1,) offsets into ``contact_body1``, ...). body_names / joint_names
    name the model's bodies and joints; dt (s) is the time step."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    iterations: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    ncontacts: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    dt: float = 0.0
    body_names: tuple = ()
    joint_names: tuple = ()
    contact_ptr: np.ndarray | None = None
    contact_body1: np.ndarray | None = None
    contact_body2: np.ndarray | None = None
    contact_position: np.ndarray | None = None
    contact_normal: np.ndarray | None = None
    contact_impulse: np.ndarray | None = None
    contact_distance: np.ndarray | None = None

    def __len__(self):
        return self.t.shape[0]

    @property
    def has_contacts(self):
        return self.contact_ptr is not None

    @property
    def contacts(self):
        """The recorded contacts, a sequence of `RecordedContacts` (``traj.contacts[i]`` for row i,
        negative i from the end), or None if the run recorded none."""
        return ContactRows(self) if self.has_contacts else None

    def save(self, path):
        """Write the trajectory to ``path`` (.npz, numpy only; `load_trajectory` reads it)."""
        path = os.fspath(path)
        arrays = dict(format=np.int64(TRAJECTORY_FORMAT), t=self.t, q=self.q, v=self.v, iterations=self.iterations,
                      ncontacts=self.ncontacts, dt=np.float64(self.dt),
                      body_names=np.array(self.body_names, dtype=str), joint_names=np.array(self.joint_names, dtype=str))
        if self.has_contacts:
            arrays.update(contact_ptr=self.contact_ptr, contact_body1=self.contact_body1,
                          contact_body2=self.contact_body2, contact_position=self.contact_position,
                          contact_normal=self.contact_normal, contact_impulse=self.contact_impulse,
                          contact_distance=self.contact_distance)
        with open(path, "wb") as f:       # exactly this path (np.savez would append .npz)
            np.savez_compressed(f, **arrays)
        return path


def attach_contacts(traj, rec):
    """Store a list of `StepContacts` (one per trajectory row) flat in the trajectory's arrays."""
    traj.contact_ptr = np.concatenate([[0], np.cumsum([len(c) for c in rec])]).astype(np.int64)
    traj.contact_body1 = np.concatenate([c.body1 for c in rec]).astype(np.int64)
    traj.contact_body2 = np.concatenate([c.body2 for c in rec]).astype(np.int64)
    traj.contact_position = np.concatenate([c.position for c in rec]).reshape(-1, 3)
    traj.contact_normal = np.concatenate([c.normal for c in rec]).reshape(-1, 3)
    traj.contact_impulse = np.concatenate([c.world_impulse for c in rec]).reshape(-1, 3)
    traj.contact_distance = np.concatenate([c.distance for c in rec])


_REQUIRED = ("format", "t", "q", "v")


def load_trajectory(path):
    """The `Trajectory` saved by `Trajectory.save` at ``path``; a file that is not one (or is
    damaged) raises ValueError naming what is wrong."""
    path = os.fspath(path)
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except Exception as e:
        raise ValueError(f"{path} is not a saved trajectory (.npz): {e}") from None
    with z:
        missing = [k for k in _REQUIRED if k not in z.files]
        if missing:
            raise ValueError(f"{path} is not a saved trajectory: missing {', '.join(missing)}")
        if int(z["format"]) > TRAJECTORY_FORMAT:
            raise ValueError(f"{path} was written by a newer version (format {int(z['format'])})")
        t, q, v = z["t"], z["q"], z["v"]
        k = t.shape[0]
        if t.ndim != 1 or q.ndim != 2 or v.ndim != 2 or q.shape[0] != k or v.shape[0] != k:
            raise ValueError(f"{path}: t, q, v must have the same number of rows, got {t.shape}, {q.shape}, {v.shape}")
        get = lambda name, default: z[name] if name in z.files else default
        traj = Trajectory(t, q, v, get("iterations", np.zeros(k, int)), get("ncontacts", np.zeros(k, int)),
                          float(get("dt", 0.0)), tuple(get("body_names", ())), tuple(get("joint_names", ())))
        if "contact_ptr" in z.files:
            ptr = z["contact_ptr"]
            if ptr.shape != (k + 1,) or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
                raise ValueError(f"{path}: contact_ptr must be {k + 1} non-decreasing offsets from 0")
            traj.contact_ptr = ptr
            for name in ("body1", "body2", "position", "normal", "impulse", "distance"):
                a = z[f"contact_{name}"]
                if a.shape[0] != ptr[-1]:
                    raise ValueError(f"{path}: contact_{name} has {a.shape[0]} rows, contact_ptr says {ptr[-1]}")
                setattr(traj, f"contact_{name}", a)
    return traj

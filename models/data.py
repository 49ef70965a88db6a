"""`Data`: per-model workspace and the quantities cached at one configuration.

As in Pinocchio, `Model` is static and `Data` holds everything computed at a given q:
placements, world motion subspaces, inertias and the bias-free articulated factorisation
(U, D⁻¹) that the simulator and the Delassus operators reuse for every M⁻¹ application.

Its arrays cross into numba as one `DataState` (a structref with named fields, one pointer to
unbox per call, where a tuple or named tuple of arrays costs an unboxing per array) where that
is cheaper: `compute` (kinematics and factor in one call). The sweeps at q take a few named
arrays directly: a structref's unboxing (about 0.4 µs) costs more than their 7–9 arrays.
"""
import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

from . import dynamics, joints, kinematics, scratch, spatial
from .dynamics import aba_bias_kernel, aba_factor_kernel, aba_refactor_kernel, minv_kernel
from .jitcache import drop_stale_cache
from .kinematics import kinematics_kernel, velocity_kernel
from .layout import JI_PARENT

# the kernels below compile in kernels of these modules
drop_stale_cache(__file__, [dynamics.__file__, kinematics.__file__, spatial.__file__, joints.__file__,
                            scratch.__file__])

_FIELDS = ("oR", "op", "S", "H", "IA", "U", "Dinv", "vel", "acc", "pA", "leaf")


@structref.register
class DataStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class DataState(structref.StructRefProxy):
    """The arrays of one `Data`, by name (shapes in `Data`); it references them, never copies."""

    def __new__(cls, *arrays):
        return _new_state(*arrays)


structref.define_proxy(DataState, DataStateType, list(_FIELDS))


@njit(cache=True)
def _new_state(oR, op, S, H, IA, U, Dinv, vel, acc, pA, leaf):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return DataState(oR, op, S, H, IA, U, Dinv, vel, acc, pA, leaf)


@njit(cache=True, _nrt=False)
def compute_kernel(jint, jfloat, armature, q, d, refactor):
    """Kinematics (oR, op, S, H) and the bias-free articulated factor (Iᴬ, U, D⁻¹) of d at q:
    `kinematics_kernel`, then `aba_refactor_kernel` (keeping the leaves' D⁻¹) if `refactor`,
    else `aba_factor_kernel`. Returns False if some D is not positive definite."""
    kinematics_kernel(jint, jfloat, q, d.oR, d.op, d.S, d.H)
    if refactor:
        return aba_refactor_kernel(jint, armature, d.S, d.H, d.IA, d.U, d.Dinv, d.leaf)
    return aba_factor_kernel(jint, armature, d.S, d.H, d.IA, d.U, d.Dinv)


class Data:
    """Workspace for one `Model`. Call `compute(q)` once per configuration, then reuse."""

    def __init__(self, model):
        n, nv = model.nbodies, model.nv
        self.model = model
        self.q = None
        self.oR = np.zeros((n, 3, 3))   # world rotation of each body
        self.op = np.zeros((n, 3))      # world position of each body origin
        self.S = np.zeros((6, nv))      # motion subspace, world frame
        self.H = np.zeros((n, 6, 6))    # body spatial inertias, world frame
        self.IA = np.zeros((n, 6, 6))   # articulated inertias (no constraints)
        self.U = np.zeros((6, nv))      # U = Iᴬ S
        self.Dinv = np.zeros((n, 6, 6))  # D⁻¹ per body (top-left nvᵢ × nvᵢ)
        self.acc = np.zeros((n, 6))     # body accelerations of the last sweep
        self.vel = np.zeros((n, 6))     # body velocities of the last sweep
        self._pA = np.zeros((n, 6))     # link forces (sweep workspace)
        # bodies without children: their D⁻¹ does not depend on q (`aba_refactor_kernel`), so
        # it is kept once a factorisation has succeeded
        self._leaf = np.ones(n, np.bool_)
        parent = model.jint[:, JI_PARENT]
        self._leaf[parent[parent >= 0]] = False
        self._factored = False
        self._make_state()

    def _make_state(self):
        self.state = DataState(self.oR, self.op, self.S, self.H, self.IA, self.U, self.Dinv, self.vel, self.acc,
                               self._pA, self._leaf)

    def __getstate__(self):
        """Picklable (snapshots, rollout workers): the `DataState` handle is rebuilt on load."""
        s = self.__dict__.copy()
        del s["state"]
        return s

    def __setstate__(self, s):
        self.__dict__.update(s)
        self._make_state()

    def compute(self, q):
        """Kinematics, world S and H, and the articulated factorisation at q (O(n))."""
        return self._compute(self.model.check_q(q).copy())

    def _compute(self, q):
        """`compute` on a q already checked (the simulator's integrated state); keeps q."""
        m = self.model
        return self._computed(q, compute_kernel(m.jint, m.jfloat, m.armature, q, self.state, self._factored))

    def _computed(self, q, ok):
        """After `compute_kernel` ran on this Data's state at q with result ok (here, or inside a
        caller's kernel: `simstep.integrator.step_end_kernel`): keeps q; raises if the
        factorisation failed."""
        self.q = q
        if not ok:
            self._factored = False
            raise self.model.singular_mass_matrix_error(self.op)
        self._factored = True
        return self

    def free_acceleration(self, v, tau, fext, out):
        """ABA q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext) at the computed q from the cached articulated
        inertias (no kinematics, no factorisation); v, tau (nv,), fext (n, 6) world, trusted
        (the simulator's validated state). Writes and returns out (nv,)."""
        m = self.model
        aba_bias_kernel(m.jint, m.gravity, self.S, self.H, self.IA, self.U, self.Dinv, v, tau, fext, out,
                        self.vel, self.acc, self._pA)
        return out

    def minv(self, tau, fext=None, out=None):
        """M⁻¹ (τ + Σ Jᵀ fext) at the computed q, O(n), no matrix formed. fext (n, 6) world."""
        m = self.model
        out = np.empty(m.nv) if out is None else out
        minv_kernel(m.jint, self.S, self.U, self.Dinv, np.asarray(tau, float), m.zero_fext if fext is None else fext,
                    out, self.acc, self._pA)
        return out

    def body_velocities(self, v):
        """World-frame spatial velocities (n, 6) of all bodies at the computed q."""
        velocity_kernel(self.model.jint, self.S, np.asarray(v, float), self.vel)
        return self.vel

"""`Data`: per-model workspace and the quantities cached at one configuration.

As in Pinocchio, `Model` is static and `Data` holds everything computed at a given q:
placements, world motion subspaces, inertias and the bias-free articulated factorisation
(U, D⁻¹) that the simulator and the Delassus operators reuse for every M⁻¹ application.
"""
import numpy as np

from .dynamics import aba_bias_kernel, aba_factor_kernel, aba_refactor_kernel, minv_kernel
from .kinematics import kinematics_kernel, velocity_kernel


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
        self.acc = np.zeros((n, 6))
        self.vel = np.zeros((n, 6))
        self._pA = np.zeros((n, 6))
        self._fzero = np.zeros((n, 6))
        self._u = np.zeros(nv)
        # bodies without children: their D⁻¹ does not depend on q (`aba_refactor_kernel`), so
        # it is kept once a factorisation has succeeded
        self._leaf = np.ones(n, np.bool_)
        self._leaf[model.jint[:, 0][model.jint[:, 0] >= 0]] = False
        self._factored = False

    def compute(self, q):
        """Kinematics, world S and H, and the articulated factorisation at q (O(n))."""
        return self._compute(self.model.check_q(q).copy())

    def _compute(self, q):
        """`compute` on a q already checked (the simulator's integrated state); keeps q."""
        m = self.model
        self.q = q
        kinematics_kernel(m.jint, m.jfloat, self.q, self.oR, self.op, self.S, self.H)
        if self._factored:
            ok = aba_refactor_kernel(m.jint, m.armature, self.S, self.H, self.IA, self.U, self.Dinv, self._leaf)
        else:
            ok = aba_factor_kernel(m.jint, m.armature, self.S, self.H, self.IA, self.U, self.Dinv)
        if not ok:
            self._factored = False
            raise m.singular_mass_matrix_error(self.op)
        self._factored = True
        return self

    def free_acceleration(self, v, tau, fext, out):
        """ABA q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext) at the computed q from the cached articulated
        inertias (no kinematics, no factorisation); v, tau (nv,), fext (n, 6) world, trusted
        (the simulator's validated state). Writes and returns out (nv,)."""
        m = self.model
        aba_bias_kernel(m.jint, m.gravity, self.S, self.H, self.IA, self.U, self.Dinv, v, tau, fext, out,
                        self.vel, self.acc, self._pA, self._u)
        return out

    def minv(self, tau, fext=None, out=None):
        """M⁻¹ (τ + Σ Jᵀ fext) at the computed q, O(n), no matrix formed. fext (n, 6) world."""
        m = self.model
        out = np.empty(m.nv) if out is None else out
        minv_kernel(m.jint, self.S, self.U, self.Dinv, np.asarray(tau, float),
                    self._fzero if fext is None else fext, out, self.acc, self._pA)
        return out

    def body_velocities(self, v):
        """World-frame spatial velocities (n, 6) of all bodies at the computed q."""
        velocity_kernel(self.model.jint, self.S, np.asarray(v, float), self.vel)
        return self.vel

"""Delassus operators: the explicit baseline and the matrix-free operators of paper 000.

    G = Λ⁻¹ = J M⁻¹ Jᵀ            (m × m, m constraint rows)
    Λ_R = (R⁻¹ + J M⁻¹ Jᵀ)⁻¹       with R⁻¹ = diag(d), the damping

Both classes share one interface (the ADMM solver calls it):

    op = MatrixFreeDelassus(model, q, constraints, data=None, damping=None)
    op.m                   number of rows
    op.matvec(x)           G x
    op.update_damping(d)   d scalar or (m,), d > 0
    op.solve(b)            (G + diag(d))⁻¹ b
    op.max_eigenvalue()    largest eigenvalue of G (Lanczos on matvec; exact on the dense one)
    op.J_apply(v)          J v          (constraint velocities of joint velocities v)
    op.JT_apply(lam)       Jᵀ λ         (joint torques of constraint impulses)
    op.JT_minv(lam)        M⁻¹ Jᵀ λ     (velocity change of impulses λ: v⁺ = v_free + M⁻¹ Jᵀ λ)
    op.nbytes()            memory of the operator's state (arrays it keeps), bytes

`constraints` is a list of `Contact`, `ContactSet`, `LoopClosure`, `JointLimit`,
`JointFriction` or a prebuilt `ConstraintSet` (resolve once, reuse for every q).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

import models
from models.dynamics import crba_kernel

from .constraints import ConstraintSet, as_constraint_set, rows_kernel
from .delassus_kernels import (assemble_scalar_kernel, assemble_unit_kernel, assemble_vector_kernel,
                               dense_jacobian_kernel, j_apply_kernel, jt_minv_kernel, lanczos_kernel,
                               lcaba_factor_kernel, lcaba_solve_kernel, matvec_kernel, scatter_kernel)
from .elimination import cached_elimination

_FREE = models.FREE


class _Rows:
    """Constraint rows at q (shared by both operators): la, lb, kA, kB, dof, sg."""

    def __init__(self, model, q, constraints, data):
        self.model = model
        self.cs = as_constraint_set(model, constraints)
        if data is None:
            data = models.Data(model).compute(q)
        elif q is not None and (data.q is None or not np.array_equal(data.q, np.asarray(q, float))):
            data.compute(q)
        self.data = data
        cs = self.cs
        m = cs.m
        self.m = m
        self.la = np.empty(m, np.int64)
        self.lb = np.empty(m, np.int64)
        self.kA = np.empty((m, 6))
        self.kB = np.empty((m, 6))
        rows_kernel(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, data.oR, data.op,
                    self.la, self.lb, self.kA, self.kB)
        self.dof = cs.dof
        self.sg = cs.sg

    def args(self):
        return self.la, self.lb, self.kA, self.kB, self.dof, self.sg

    def _damping(self, d):
        d = np.asarray(d, dtype=float)
        if d.ndim == 0:
            if not (np.isfinite(d) and d > 0):
                raise ValueError(f"damping must be > 0 and finite, got {float(d)}")
            return float(d), None
        if d.shape != (self.m,):
            raise ValueError(f"damping must be a scalar or shape ({self.m},), got {d.shape}")
        if not np.all(np.isfinite(d)) or d.min() <= 0:
            raise ValueError("damping must be > 0 and finite")
        if self.m and d.max() == d.min():
            return float(d[0]), None
        return None, d.copy()

    def _vec(self, x, n, what):
        x = np.asarray(x, dtype=float)
        if x.shape != (n,):
            raise ValueError(f"{what} must have shape ({n},), got {x.shape}")
        return x


class MatrixFreeDelassus(_Rows):
    """Matrix-free Λ⁻¹ and Λ_R (paper 000 Sec. IV–V). Never forms G or M.

    Construction (per q): kinematics and the plain articulated inertias (a `models.Data`,
    passed in or computed), the constraint rows K (Eq. 5c), and the elimination order of the
    constraint graph (cached by the set of coupled body pairs). `update_damping(d)` redoes only
    what depends on d: the augmented link inertias and the LCABA factors (Alg. 4 backward
    sweep); with a scalar d the constraint inertias Σ KᵀK are kept from the first call and only
    rescaled. `matvec` is two ABA sweeps (Alg. 1–3 merged); `solve` is one backward and one
    forward pass over the stored factors (Alg. 4 with Eq. 9).

    Memory: O(n + m) for trees and for localised loops; the LCABA factors add one 6×6 block per
    (link, neighbour) pair and one per fill-in block, so in the worst case (all links coupled,
    e.g. every box touching every other) O(n + n²) blocks.
    """

    def __init__(self, model, q, constraints, data=None, damping=None):
        super().__init__(model, q, constraints, data)
        n, nv, m = model.nbodies, model.nv, self.m
        cs = self.cs
        self._fext = np.empty((n, 6))
        self._tau = np.empty(nv)
        self._qdd = np.empty(nv)
        self._acc = np.empty((n, 6))
        self._pA = np.empty((n, 6))
        self._y = np.empty(m)
        self._el = None
        self._unit = None
        self._rho = None
        self._Rv = None
        self._factored = False
        if damping is not None:
            self.update_damping(damping)

    # ------------------------------------------------------------------ Λ⁻¹
    def matvec(self, x, out=None):
        """G x = J M⁻¹ Jᵀ x (paper 000 Alg. 1–3 in two sweeps), O(n + m)."""
        x = self._vec(x, self.m, "x")
        out = np.empty(self.m) if out is None else out
        d = self.data
        matvec_kernel(self.model.jint, d.S, d.U, d.Dinv, self.la, self.lb, self.kA, self.kB, self.dof, self.sg,
                      x, out, self._fext, self._tau, self._qdd, self._acc, self._pA)
        return out

    def J_apply(self, v, out=None):
        """Constraint velocities J v (m,) of joint velocities v (nv,)."""
        v = self._vec(v, self.model.nv, "v")
        out = np.empty(self.m) if out is None else out
        j_apply_kernel(self.model.jint, self.data.S, self.la, self.lb, self.kA, self.kB, self.dof, self.sg,
                       v, out, self._acc)
        return out

    def JT_apply(self, lam):
        """Joint torques Jᵀ λ (nv,) (paper 000 Alg. 1)."""
        lam = self._vec(lam, self.m, "lam")
        scatter_kernel(self.la, self.lb, self.kA, self.kB, self.dof, self.sg, lam, self._fext, self._tau)
        tau = self._tau.copy()
        d = self.data
        # backward force sweep: τᵢ += Sᵢᵀ fᵢ, f_λ(i) += fᵢ (Alg. 1 lines 7–10)
        f = self._fext
        jint = self.model.jint
        for i in range(self.model.nbodies - 1, -1, -1):
            par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
            if nvi:
                tau[iv:iv + nvi] += d.S[:, iv:iv + nvi].T @ f[i]
            if par >= 0:
                f[par] += f[i]
        return tau

    def JT_minv(self, lam, out=None):
        """Velocity change M⁻¹ Jᵀ λ (nv,) of constraint impulses λ (Alg. 1 merged into Alg. 2)."""
        lam = self._vec(lam, self.m, "lam")
        out = np.empty(self.model.nv) if out is None else out
        d = self.data
        jt_minv_kernel(self.model.jint, d.S, d.U, d.Dinv, self.la, self.lb, self.kA, self.kB, self.dof,
                       self.sg, lam, self._fext, self._tau, out, self._acc, self._pA)
        return out

    def max_eigenvalue(self, iters=20, seed=0):
        """Largest eigenvalue of G by `iters` Lanczos steps on `matvec` (a lower bound that is
        tight to a few 1e-3 relative after ~20 steps on Delassus spectra)."""
        if self.m == 0:
            return 0.0
        v0 = np.random.default_rng(seed).standard_normal(self.m)
        d = self.data
        return float(lanczos_kernel(self.model.jint, d.S, d.U, d.Dinv, self.la, self.lb, self.kA, self.kB,
                                    self.dof, self.sg, v0, int(iters), self._fext, self._tau, self._qdd,
                                    self._acc, self._pA))

    # ------------------------------------------------------------------ Λ_R
    def _structure(self):
        """Elimination order (cached per constraint graph) and per-q arrays it needs."""
        model, cs = self.model, self.cs
        pairs = cs.coupling_pairs()
        el = cached_elimination(model, cs.graph_key()[1], pairs)
        n = model.nbodies
        # slot of the coupling block of each link row (initial slots follow the sorted pairs)
        row_slot = np.full(self.m, -1, np.int64)
        if pairs.shape[0]:
            a, b = self.la, self.lb
            two = (a >= 0) & (b >= 0)
            key = np.minimum(a, b) * n + np.maximum(a, b)
            pk = pairs[:, 0] * n + pairs[:, 1]
            row_slot[two] = np.searchsorted(pk, key[two])
        # free roots without joint rows or armature are eliminated in link coordinates
        use_a = (model.jtype == _FREE) & (model.parent < 0)
        if np.any(use_a):
            dof_rows = cs.dof[cs.dof >= 0]
            has_rows = np.zeros(model.nv, bool)
            has_rows[dof_rows] = True
            arm = model.armature != 0
            for i in np.flatnonzero(use_a):
                sl = slice(model.idx_v[i], model.idx_v[i] + 6)
                if has_rows[sl].any() or arm[sl].any():
                    use_a[i] = False
        self._el = el
        self._row_slot = row_slot
        self._use_a = use_a.astype(np.int64)
        self._Hd = np.empty((n, 6, 6))
        self._Ho = np.empty((el.nslots, 6, 6))
        self._Dj = np.empty(model.nv)
        self._L = np.zeros((n, 6, 6))
        self._Y = np.zeros((el.nb_node.shape[0], 6, 6))
        self._w = np.zeros((n, 6))
        self._g = np.empty((n, 6))

    def update_damping(self, d):
        """Set R⁻¹ = diag(d) (scalar or (m,)) and refactor M_R = M + Jᵀ R J (Alg. 4 backward
        sweep). Kinematics, rows and the elimination order are reused."""
        rho_d, dv = self._damping(d)
        if self._el is None:
            self._structure()
        model, data, el = self.model, self.data, self._el
        if dv is None:
            if self._unit is None:
                self._unit = assemble_unit_kernel(self.la, self.lb, self.kA, self.kB, self.dof, self._row_slot,
                                                  model.nbodies, el.nslots, model.nv)
            Pd, Po, Pj = self._unit
            rho = 1.0 / rho_d
            assemble_scalar_kernel(data.H, model.armature, Pd, Po, Pj, rho, self._Hd, self._Ho, self._Dj)
            self._Rv = np.full(self.m, rho)
        else:
            self._Rv = 1.0 / dv
            assemble_vector_kernel(data.H, model.armature, self.la, self.lb, self.kA, self.kB, self.dof,
                                   self._row_slot, self._Rv, self._Hd, self._Ho, self._Dj)
        lcaba_factor_kernel(model.jint, data.S, self._use_a, el.order, el.par, el.nb_ptr, el.nb_node, el.nb_slot,
                            el.nb_tr, el.pair_ptr, el.pair_slot, el.pair_tr, self._Hd, self._Ho, self._Dj,
                            self._L, self._Y)
        self._factored = True
        return self

    def solve(self, b, out=None):
        """Λ_R b = (G + diag(d))⁻¹ b via Eq. (9) and the stored LCABA factors, O(n + m + fill).

        Accuracy: the matrix inversion lemma forms λ = (b − J q̈_R)/d, so rounding errors of
        order ε‖G‖‖b‖ are divided by d: relative error ≈ ε‖G‖/d in the range of G (about 1e-8
        for d = 1e-8 on unit-mass systems); components in the null space of G are exact to ε.
        `solve_refined` adds iterative-refinement steps when that matters."""
        if not self._factored:
            raise RuntimeError("call update_damping(d) before solve()")
        b = self._vec(b, self.m, "b")
        out = np.empty(self.m) if out is None else out
        el = self._el
        d = self.data
        lcaba_solve_kernel(self.model.jint, d.S, self._use_a, el.order, el.par, el.nb_ptr, el.nb_node,
                           self._L, self._Y, self.la, self.lb, self.kA, self.kB, self.dof, self.sg, self._Rv,
                           b, out, self._g, self._tau, self._w, self._acc, self._qdd, self._y)
        return out

    def solve_refined(self, b, steps=1):
        """`solve` followed by `steps` iterative-refinement steps r = b − (G + R⁻¹) λ, λ += solve(r)."""
        lam = self.solve(b)
        dinv = 1.0 / self._Rv
        for _ in range(steps):
            r = b - self.matvec(lam) - dinv * lam
            lam = lam + self.solve(r)
        return lam

    def nbytes(self):
        """Bytes of the arrays this operator keeps (rows, its share of the Data used by the
        sweeps: S, H, U, D⁻¹, placements; LCABA factors and workspaces)."""
        d = self.data
        arrs = [self.la, self.lb, self.kA, self.kB, self.dof, self.sg, d.S, d.U, d.Dinv, d.H, d.oR, d.op,
                self._fext, self._tau, self._qdd, self._acc, self._pA, self._y]
        if self._el is not None:
            arrs += [self._Hd, self._Ho, self._Dj, self._L, self._Y, self._w, self._g, self._row_slot, self._use_a]
            if self._Rv is not None:
                arrs.append(self._Rv)
            if self._unit is not None:
                arrs += list(self._unit)
        return sum(a.nbytes for a in arrs) + (self._el.nbytes() if self._el is not None else 0)

    @property
    def elimination(self):
        """The `Elimination` (order, neighbours, fill) used by `solve`."""
        if self._el is None:
            self._structure()
        return self._el


class DenseDelassus(_Rows):
    """Explicit baseline: J (m, nv) formed from the same rows, M by CRBA, M = L Lᵀ (Cholesky),
    G = (L⁻¹ Jᵀ)ᵀ (L⁻¹ Jᵀ); `solve` through a Cholesky of G + diag(d)."""

    def __init__(self, model, q, constraints, data=None, damping=None):
        super().__init__(model, q, constraints, data)
        nv, m = model.nv, self.m
        self.J = np.empty((m, nv))
        dense_jacobian_kernel(model.jint, self.data.S, self.la, self.lb, self.kA, self.kB, self.dof, self.sg,
                              self.J)
        self.M = np.empty((nv, nv))
        crba_kernel(model.jint, model.jfloat, model.armature, self.data.q, self.M)
        self._Mc = sla.cho_factor(self.M, lower=True, check_finite=False)
        X = sla.solve_triangular(self._Mc[0], self.J.T, lower=True, check_finite=False)
        self.G = X.T @ X
        self._Gc = None
        self.d = None
        if damping is not None:
            self.update_damping(damping)

    def matrix(self):
        """G = J M⁻¹ Jᵀ (m, m)."""
        return self.G

    def matvec(self, x):
        return self.G @ self._vec(x, self.m, "x")

    def update_damping(self, d):
        """Cholesky of G + diag(d) (O(m³))."""
        rho_d, dv = self._damping(d)
        self.d = np.full(self.m, rho_d) if dv is None else dv
        A = self.G.copy()
        A[np.diag_indices_from(A)] += self.d
        self._Gc = sla.cho_factor(A, lower=True, check_finite=False)
        return self

    def solve(self, b):
        if self._Gc is None:
            raise RuntimeError("call update_damping(d) before solve()")
        return sla.cho_solve(self._Gc, self._vec(b, self.m, "b"), check_finite=False)

    def max_eigenvalue(self):
        return float(np.linalg.eigvalsh(self.G)[-1]) if self.m else 0.0

    def J_apply(self, v):
        return self.J @ self._vec(v, self.model.nv, "v")

    def JT_apply(self, lam):
        return self.J.T @ self._vec(lam, self.m, "lam")

    def JT_minv(self, lam):
        return sla.cho_solve(self._Mc, self.J.T @ self._vec(lam, self.m, "lam"), check_finite=False)

    def nbytes(self):
        arrs = [self.la, self.lb, self.kA, self.kB, self.J, self.M, self._Mc[0], self.G]
        if self._Gc is not None:
            arrs += [self._Gc[0], self.d]
        return sum(a.nbytes for a in arrs)

"""Delassus operators: the explicit baseline and the matrix-free operators of paper 000.

    G = Λ⁻¹ = J M⁻¹ Jᵀ            (m × m, m constraint rows)
    Λ_R = (R⁻¹ + J M⁻¹ Jᵀ)⁻¹       with R⁻¹ = diag(d), the damping

Both classes share one interface (the ADMM solver calls it):

    op = MatrixFreeDelassus(model, q, constraints, data=None, damping=None)
    op.m                   number of rows
    op.matvec(x)           G x
    op.update_damping(d)   d scalar or (m,), d > 0
    op.solve(b, out=None, refine=0)   (G + diag(d))⁻¹ b (refine: iterative-refinement steps)
    op.max_eigenvalue()    largest eigenvalue of G (Lanczos on matvec; exact on the dense one)
    op.J_apply(v)          J v          (constraint velocities of joint velocities v)
    op.JT_apply(lam)       Jᵀ λ         (joint torques of constraint impulses)
    op.JT_minv(lam)        M⁻¹ Jᵀ λ     (velocity change of impulses λ: v⁺ = v_free + M⁻¹ Jᵀ λ)
    op.nbytes()            memory of the operator's state (arrays it keeps), bytes

`constraints` is a list of `Contact`, `ContactSet`, `LoopClosure`, `JointLimit`,
`JointFriction` or a prebuilt `ConstraintSet` (resolve once, reuse for every q). Rows follow
the order of the constraints (a contact: t1, t2, n; a weld: 3 linear then 3 angular).

Data layout of an operator at q (flat arrays, no Python object per constraint):
    la, lb (m,), kA, kB (m, 6)   link rows (Eq. 5c): (J v)_r = kA[r]·V[la[r]] + kB[r]·V[lb[r]]
                                 (the matrix-free operator leaves contact rows out: it reads a
                                 contact as its point p and frame R, `ConstraintSet.contact_arrays`)
    dof, sg (m,)                 joint rows (Eq. 5d): (J v)_r = sg[r] v[dof[r]] when dof[r] ≥ 0
    rows                         the tuple (la, lb, kA, kB, dof, sg, gen, crow, cbody, cf) the kernels take
    data (models.Data)           oR, op, S (6, nv), H (n, 6, 6); U, D⁻¹ of plain ABA for Λ⁻¹
    elimination (cached per constraint graph): order, parents, neighbour lists and fill slots
    factors (per damping): Hd (n, 6, 6) augmented/eliminated link inertias, Ho (slots, 6, 6)
                           coupling blocks, L (n, 6, 6) Cholesky of each Dᵢ, Y (entries, 6, 6)
                           Ŷ = L⁻¹ Sᵀ C per (link, neighbour); unit sums Σ KᵀK for scalar damping
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

import models
from models.dynamics import aba_factor_kernel, crba_kernel
from models.kinematics import kinematics_kernel

from .constraints import POINT, WELD, as_constraint_set, rows_kernel
from .delassus_kernels import (Blocks, Explicit, Factors, Geometry, Rows, Workspace, dense_factor,
                               dense_jacobian_kernel, dense_solve, j_apply_kernel, jt_apply_kernel, jt_minv_kernel,
                               mf_matvec)
from .lcaba_kernels import mf_factor, mf_solve
from .elimination import StructureCache
from .opstate import (StateCache, explicit_state, matrix_free_state, matrix_free_state_like, max_eigenvalue,
                      state_j_apply)



class _Rows:
    """Constraint rows at q (shared by both operators): la, lb, kA, kB, dof, sg."""

    def __init__(self, model, q, constraints, data, matrix_free=False):
        self.model = model
        self.cs = as_constraint_set(model, constraints)
        self._aba = True
        if data is None:
            data = models.Data(model)
            if matrix_free:
                # kinematics now; the articulated inertias only when Λ⁻¹ is first used
                qa = np.asarray(q, dtype=float)
                if qa.shape != (model.nq,):
                    qa = model.check_q(q)
                data.q = qa.copy()
                kinematics_kernel(model.jint, model.jfloat, data.q, data.oR, data.op, data.S, data.H)
                self._aba = False
            else:
                data.compute(q)
        elif data.model is not model:
            raise ValueError("data was created for another model")
        elif q is not None and q is not data.q and \
                (data.q is None or not np.array_equal(data.q, np.asarray(q, float))):
            data.compute(q)
        self.data = data
        cs = self.cs
        m = cs.m
        self.m = m
        self.la = np.empty(m, np.int64)
        self.lb = np.empty(m, np.int64)
        # the matrix-free operator reads contacts as (p, R) (cs.contact_arrays), not as rows
        self.kA = np.zeros((m, 6)) if matrix_free else np.empty((m, 6))
        self.kB = np.zeros((m, 6)) if matrix_free else np.empty((m, 6))
        self._compute_rows(data, not matrix_free)
        self.dof = cs.dof
        self.sg = cs.sg
        self.rows = Rows(self.la, self.lb, self.kA, self.kB, self.dof, self.sg, *cs.contact_arrays())

    def _compute_rows(self, data, contact_rows):
        """la, lb, kA, kB of the constraint set at data's placements, in place (`rows_kernel`)."""
        cs = self.cs
        rows_kernel(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, data.oR, data.op,
                    self.la, self.lb, self.kA, self.kB, contact_rows)

    def _need_aba(self):
        if not self._aba:
            d, m = self.data, self.model
            aba_factor_kernel(m.jint, m.armature, d.S, d.H, d.IA, d.U, d.Dinv)
            self._aba = True

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

    def __init__(self, model, q, constraints, data=None, damping=None, reuse=None, structures=None):
        """reuse: a previous operator of the same model that will not be used again (a
        simulator's oldest kept operator): its workspaces are taken over, and its factor storage
        when the elimination structure is the same (the arrays of m rows reallocated if m
        differs; saves ~20 allocations).
        structures: a `solvers.elimination.StructureCache` of the model, to share elimination
        orders between operators (default: reuse's, else a new one)."""
        super().__init__(model, q, constraints, data, matrix_free=True)
        if structures is None:
            structures = reuse.structures if reuse is not None and reuse.model is model else StructureCache(model)
        elif structures.model is not model:
            raise ValueError("structures (StructureCache) was built for another model")
        self.structures = structures
        self._ws = None
        self._st = None
        self._fac = None
        self._factored = False
        self._reuse = None
        self._kstates = []               # `kernel_state`'s last two (data, fac, ws, tuples)
        self._cstates = StateCache()     # `compiled_state`'s
        self._last_states = []
        self._q_rows = None              # whether the set has rows that `refresh` must recompute at a new q
        if reuse is not None and reuse.model is model and reuse is not self and reuse._ws is not None:
            ws, reuse._ws = reuse._ws, None            # the old operator reallocates if used again
            self._ws = ws if ws.y.shape[0] == self.m else Workspace(*ws[:7], np.empty(self.m))
            self._reuse = reuse          # its `fac` storage, if the elimination structure matches
        if damping is not None:
            self.update_damping(damping)

    def refresh(self, data):
        """This operator at a new configuration, for the same constraint set object (its contact
        points refreshed in place, `ConstraintSet.refresh_contacts`): `data` computed at the new
        q, the loop closures' rows K recomputed in place (the other rows do not depend on q),
        factors marked stale (`update_damping` again before
        `solve`). The elimination order, factor storage and workspaces are kept: the per-step
        path of a simulator whose contact set did not change."""
        if data.model is not self.model:
            raise ValueError("data was created for another model")
        self.data, self._aba = data, True
        if self._q_rows is None:
            self._q_rows = bool(np.any((self.cs.cb_kind == POINT) | (self.cs.cb_kind == WELD)))
        if self._q_rows:     # only loop-closure rows depend on the placements (contacts are read as (p, R))
            self._compute_rows(data, False)
        if self._fac is not None:
            self._fac.flag[0] = 0        # the unit sums Σ KᵀK belong to the old q
        self._factored = False
        return self

    def _work(self):
        """Workspaces of the sweeps (fext, tau, qdd, acc, pA, g, w, y; allocated on first use)."""
        if self._ws is None:
            n, nv = self.model.nbodies, self.model.nv
            self._ws = Workspace(np.empty((n, 6)), np.empty(nv), np.empty(nv), np.empty((n, 6)), np.empty((n, 6)),
                                 np.empty((n, 6)), np.empty((n, 6)), np.empty(self.m))
        return self._ws[:5]

    def _geo(self):
        d, m = self.data, self.model
        return Geometry(m.jint, d.S, d.H, d.U, d.Dinv, m.armature, self.rows)

    # ------------------------------------------------------------------ Λ⁻¹
    def matvec(self, x, out=None):
        """G x = J M⁻¹ Jᵀ x (paper 000 Alg. 1–3 in two sweeps), O(n + m)."""
        x = self._vec(x, self.m, "x")
        out = np.empty(self.m) if out is None else out
        self._need_aba()
        self._work()
        mf_matvec(self._geo(), self._ws, x, out)
        return out

    def J_apply(self, v, out=None):
        """Constraint velocities J v (m,) of joint velocities v (nv,)."""
        v = self._vec(v, self.model.nv, "v")
        out = np.empty(self.m) if out is None else out
        if self._st is not None and self._aba and self._ws is not None:   # a refreshed operator: its compiled state
            state_j_apply(self.compiled_state(), v, out)
            return out
        acc = self._work()[3]
        j_apply_kernel(self.model.jint, self.data.S, self.rows, v, out, acc)
        return out

    def JT_apply(self, lam, out=None):
        """Joint torques Jᵀ λ (nv,) (paper 000 Alg. 1)."""
        lam = self._vec(lam, self.m, "lam")
        out = np.empty(self.model.nv) if out is None else out
        fext = self._work()[0]
        jt_apply_kernel(self.model.jint, self.data.S, self.rows, lam, fext, out)
        return out

    def JT_minv(self, lam, out=None):
        """Velocity change M⁻¹ Jᵀ λ (nv,) of constraint impulses λ (Alg. 1 merged into Alg. 2)."""
        lam = self._vec(lam, self.m, "lam")
        out = np.empty(self.model.nv) if out is None else out
        self._need_aba()
        d = self.data
        fext, tau, qdd, acc, pA = self._work()
        jt_minv_kernel(self.model.jint, d.S, d.U, d.Dinv, self.rows, lam, fext, tau, out, acc, pA)
        return out

    def max_eigenvalue(self, iters=20):
        """Largest eigenvalue of G by `iters` Lanczos steps (full reorthogonalisation) on the
        matrix-free product (`solvers.opstate.op_max_eigenvalue`): the largest Ritz value, a
        lower bound that converges fast for the extreme eigenvalue."""
        return max_eigenvalue(self, self.m, iters)

    # ------------------------------------------------------------------ Λ_R
    def _structure(self):
        """Per-constraint-graph data from `self.structures` (`StructureCache.lcaba`: elimination
        order, slot of each constraint block's coupling, free roots eliminated in link
        coordinates); then the per-q factor storage `fac` (see `delassus_kernels`)."""
        model, cs = self.model, self.cs
        st = self.structures.lcaba(cs)
        el, elk = st.elimination, st.arrays
        n = model.nbodies
        self._st = st
        csk = Blocks(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, st.cb_slot, self.la, self.lb, self.kA,
                     self.kB, self.dof)
        old, self._reuse = self._reuse, None
        if old is not None and old._st is not None and old._st.elimination is el:
            f = old._fac
            f.flag[0] = 0                # the unit sums Σ KᵀK belong to the old q
            Rv = f.Rv if f.Rv.shape[0] == self.m else np.empty(self.m)
            self._fac = Factors(csk, elk, *f[2:10], Rv, f.flag)
            old._fac, old._st, old._factored = None, None, False   # the old operator is spent
            self._work()
            return
        # Pd, Po, Pj: unit-damping sums (scalar damping); Hd, Ho, Dj: damped inertias; L, Y factors
        self._fac = Factors(csk, elk, np.empty((n, 6, 6)), np.empty((el.nslots, 6, 6)), np.empty(model.nv),
                            np.empty((n, 6, 6)), np.empty((el.nslots, 6, 6)), np.empty(model.nv), np.empty((n, 6, 6)),
                            np.empty((el.nb_node.shape[0], 6, 6)), np.empty(self.m), np.zeros(1, np.int64))
        self._work()

    def kernel_state(self):
        """(geo, fac, ws) tuples for the compiled drivers (`solvers.admm.admm_kernel`); the
        factor storage exists but holds a factorisation only after `update_damping`. The same
        tuple objects come back while the Data, factor storage and workspaces are the same
        objects (the last two Data, which a simulator alternates), so callers can cache per
        tuple identity (`compiled_state`, `solvers.opstate.StateCache`)."""
        self._need_aba()
        if self._st is None:
            self._structure()
        elif self._ws is None:           # given to a newer operator (`reuse`)
            self._work()
        for key in self._kstates:
            if key[0] is self.data and key[1] is self._fac and key[2] is self._ws:
                return key[3]
        state = (self._geo(), self._fac, self._ws)
        self._kstates = [(self.data, self._fac, self._ws, state)] + self._kstates[:1]
        return state

    def compiled_state(self):
        """This operator as one `solvers.opstate.OperatorState` for the compiled solvers: the
        same object while `kernel_state`'s tuples are."""
        if self._aba:       # the per-step path: (data, fac, ws, state) of the last two calls (two Data alternate)
            for last in self._last_states:
                if last[0] is self.data and last[1] is self._fac and last[2] is self._ws:
                    return last[3]
        parts = self.kernel_state()
        entries = self._cstates.entries
        if entries and entries[0][0] is not parts:      # another Data: the last state with its arrays swapped
            old, prev = entries[0]
            state = self._cstates.get(parts, lambda p: matrix_free_state_like(p, prev, old))
        else:
            state = self._cstates.get(parts, matrix_free_state)
        self._last_states = [(self.data, self._fac, self._ws, state)] + self._last_states[:1]
        return state

    def mark_factored(self):
        """A compiled solver has factored the damped operator in this operator's storage
        (`opstate.op_factor`): `solve` may be called."""
        self._factored = True

    def update_damping(self, d):
        """Set R⁻¹ = diag(d) (scalar or (m,)) and refactor M_R = M + Jᵀ R J (Alg. 4 backward
        sweep). Kinematics, rows and the elimination order are reused; for a scalar d the
        constraint inertias Σ KᵀK of the first call are rescaled."""
        rho_d, dv = self._damping(d)
        if self._st is None:
            self._structure()
        if dv is None:
            mf_factor(self._geo(), self._fac, rho_d, self._fac.Rv, False)
        else:
            mf_factor(self._geo(), self._fac, 0.0, dv, True)
        self._factored = True
        return self

    @property
    def _Rv(self):
        return self._fac.Rv

    def solve(self, b, out=None, refine=0):
        """Λ_R b = (G + diag(d))⁻¹ b via Eq. (9) and the stored LCABA factors, O(n + m + fill).

        Accuracy: Eq. (9) forms λ = R (b − J q̈_R), and b − J q̈_R = d λ is small when d is:
        rounding of order ε‖b‖ there is multiplied by R = 1/d, a relative error up to about
        ε‖G‖/d in the range of G (≈1e-8 at d = 1e-8 for ‖G‖ ~ 1). Components of b in the null
        space of Jᵀ (redundant constraints, where the large entries of λ live) are exact.
        refine=k adds k iterative-refinement steps (each one `matvec` and one more pass over
        the factors), which brings the error down to the dense level ε κ(G + dI)."""
        if not self._factored:
            raise RuntimeError("call update_damping(d) before solve()")
        b = self._vec(b, self.m, "b")
        out = np.empty(self.m) if out is None else out
        mf_solve(self._geo(), self._fac, self._ws, b, out)
        if refine:
            dinv = 1.0 / self._Rv
            corr = np.empty(self.m)
            for _ in range(int(refine)):
                r = b - self.matvec(out) - dinv * out
                mf_solve(self._geo(), self._fac, self._ws, r, corr)
                out += corr
        return out

    def nbytes(self):
        """Bytes of the state this operator keeps: rows K, the Data arrays its sweeps read
        (placements, S, H, and for Λ⁻¹ U, D⁻¹), LCABA factors, workspaces, elimination order."""
        d = self.data
        arrs = [self.la, self.lb, self.kA, self.kB, self.dof, self.sg, d.S, d.H, d.oR, d.op]
        if self._aba:
            arrs += [d.U, d.Dinv]
        if self._ws is not None:
            arrs += list(self._ws)
        total = sum(a.nbytes for a in arrs)
        if self._st is not None:
            el, cb_slot, use_a = self._st[:3]
            f = self._fac
            total += sum(a.nbytes for a in (f.Hd, f.Ho, f.Dj, f.L, f.Y, f.Rv, f.flag))
            total += cb_slot.nbytes + use_a.nbytes + el.nbytes()
            if f.flag[0]:
                total += sum(a.nbytes for a in (f.Pd, f.Po, f.Pj))   # unit sums
        return total

    @property
    def elimination(self):
        """The `Elimination` (order, neighbours, fill) used by `solve`."""
        if self._st is None:
            self._structure()
        return self._st[0]


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
        self._dn = None
        self._cstate = None
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
        dn = self.kernel_state()
        if dv is None:
            dense_factor(dn, rho_d, dn.d, False)
        else:
            dense_factor(dn, 0.0, dv, True)
        self.d = self._dn.d
        return self

    def kernel_state(self):
        """The tuple (G, C, d, t) for the compiled drivers (`solvers.admm.admm_kernel`)."""
        if self._dn is None:
            self._dn = Explicit(self.G, np.empty((self.m, self.m)), np.empty(self.m), np.empty(self.m))
        return self._dn

    def compiled_state(self):
        """This operator as one `solvers.opstate.OperatorState` for the compiled solvers."""
        if self._cstate is None:
            self._cstate = explicit_state(self.kernel_state())
        return self._cstate

    def mark_factored(self):
        """A compiled solver has factored G + diag d in this operator's storage: `solve` may be called."""
        self.d = self.kernel_state().d

    def solve(self, b, out=None, refine=0):
        """(G + diag(d))⁻¹ b by the stored Cholesky factor; refine=k iterative-refinement steps."""
        if self.d is None:
            raise RuntimeError("call update_damping(d) before solve()")
        b = self._vec(b, self.m, "b")
        x = np.empty(self.m) if out is None else out
        dense_solve(self._dn, b, x)
        if refine:
            corr = np.empty(self.m)
            for _ in range(int(refine)):
                dense_solve(self._dn, b - self.G @ x - self.d * x, corr)
                x += corr
        return x

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
        if self._dn is not None:
            arrs += [self._dn.C, self._dn.d, self._dn.t]
        return sum(a.nbytes for a in arrs)

"""Explicit Delassus matrix and damped Delassus inverse by articulated-body recursions.

    pv_osimr(model, q, constraints)           G = J M⁻¹ Jᵀ (m, m)            O(n + m²)
    pv_osim(model, q, constraints)            the same by PV-OSIM            O(n + m² d)
    caba_osim(model, q, constraints, damping)  Λ_μ = (G + diag(d))⁻¹ (m, m)   O(n + m²)
    caba_osimf(model, q, constraints, damping) the same, floating bases grounded (Eq. 41)

PV-OSIM and PV-OSIMr: Sathya, Decré, Swevers, "PV-OSIMr: A Lowest Order Complexity Algorithm
for Computing the Delassus Matrix" (Alg. 1 and Alg. 3). cABA-OSIM and cABA-OSIMf: Sathya,
Carpentier, "Constrained Articulated Body Dynamics Algorithms" (Sec. VI, Alg. 5, Eq. 40–41).

`constraints`: a list of `Contact`, `ContactSet`, `LoopClosure`, `JointLimit`, `JointFriction`
or a prebuilt `ConstraintSet` (pass one to reuse the branching-link structure across calls).
Rows are in the order of the constraints, as in `DenseDelassus`.

cABA-OSIM augments the inertias of the links touched by constraints with the world (and the
armature of joint rows), M_R = M + J_Uᵀ R_U J_U with R = diag(1/d), and applies Eq. 40
Λ = R − R J M_R⁻¹ Jᵀ R. Rows coupling two moving links (self-contacts, loop closures between
links) would make M_R leave the tree; they are kept out of the augmentation and eliminated
by the Schur complement S = L_BB + diag(d_B) of L = J M_R⁻¹ Jᵀ on those m_B rows:
    Λ_BB = S⁻¹,  Λ_UB = −R_U L_UB S⁻¹,  Λ_UU = R_U − R_U L_UU R_U + R_U L_UB S⁻¹ L_BU R_U
(exact block inversion; O(n + m² + m_B³), the paper's O(n + m²) when m_B = 0).
Accuracy (measured against 40-digit arithmetic; the formula is the paper's, the loss is not a
defect of this implementation): Λ_μ loses about ε R² relative, R = 1/d. Two factors of R:
  - Eq. 40 subtracts two terms of size R (Λ_μ = R − R L R with L ≈ d): the dense Eq. 40
    (L by a Cholesky of M_R = M + Jᵀ R J) loses ε R: 6e-14 at d = 1e-3, 7e-12 at d = 1e-5.
  - The recursion forms L = K ⁰Ω Kᵀ from the 6 × 6 inverse inertias ⁰Ω of the stiff system
    (Eq. 18). In the directions the rows do not span (a 3D point on a link; a weld on a link
    with unconstrained descendants) ⁰Ω stays of the size of the free inverse inertias, so L
    (of size d) carries an absolute error ε‖⁰Ω‖ that does not shrink with d: Talos with both
    feet held at a point, |L − L_exact| ≈ 4e-14 for every d in 1e-1 … 1e-4, relative 5e-13 at
    d = 0.1 and 1e-10 at d = 1e-4. Eq. 40 multiplies it by R².
  Measured relative errors of Λ_μ (cABA-OSIM / cABA-OSIMf / dense Eq. 40): Talos feet points
  8e-12 / 8e-12 / 1e-15 at d = 1e-2, 3e-10 / 3e-10 / 3e-14 at d = 1e-3; a random 14-link
  forest with three point closures 8e-11 / 1e-12 / 3e-15 at 1e-2, 6e-9 / 1e-10 / 5e-14 at
  1e-3; Talos with both feet welded (6D on leaves: ⁰Ω is of size d in every direction) stays
  at 1e-14 down to d = 1e-3. A cheap fix would need L to relative accuracy without the m × m
  factorisation the algorithm avoids (one refinement step costs O(m³)); none was found.
  So: 1e-9 holds for d ≥ 1e-2 (tested); for small d prefer `MatrixFreeDelassus.solve(b,
  refine=1)` or the dense Cholesky route.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

import models
from models.kinematics import kinematics_kernel

from .constraints import as_constraint_set
from .delassus import _Rows
from .lcaba_kernels import damped_inertias_kernel
from .osim_kernels import OsimStructure, OsimWork, delassus_kernel, matrix_inversion_kernel

__all__ = ["pv_osimr", "pv_osim", "caba_osim", "caba_osimf", "OsimStructure"]


# --------------------------------------------------------------------------- structure
def osim_structure(model, la, lb, dof, ground=None):
    """`OsimStructure` of a constraint set from its row links la, lb and joint rows dof
    (q-independent); ground (n,) int64 marks floating bases to ground (cABA-OSIMf)."""
    n = model.nbodies
    pre, size = model.preorder, model.subtree_size
    body_of_dof = np.repeat(np.arange(n, dtype=np.int64), model.nvs)
    parent = model.parent
    r = np.arange(la.shape[0], dtype=np.int64)
    jr = dof >= 0
    jl = body_of_dof[dof[jr]]
    jp = parent[jl]
    a = ~jr & (la >= 0)
    b = ~jr & (lb >= 0)
    link = np.concatenate([la[a], lb[b], jl, jp[jp >= 0]])
    row = np.concatenate([r[a], r[b], r[jr], r[jr][jp >= 0]])
    src = np.concatenate([np.zeros(a.sum(), np.int64), np.ones(b.sum(), np.int64),
                          np.full(jl.shape[0], 2, np.int64), np.full(int((jp >= 0).sum()), 3, np.int64)])
    aux = np.concatenate([np.full(a.sum() + b.sum(), -1, np.int64), jl, jl[jp >= 0]])
    order = np.lexsort((row, pre[link]))
    side_pre = pre[link][order]
    s0 = np.searchsorted(side_pre, pre).astype(np.int64)
    s1 = np.searchsorted(side_pre, pre + size).astype(np.int64)
    own_end = np.searchsorted(side_pre, pre, side="right").astype(np.int64)
    es = s1 > s0
    nkids = np.bincount(parent[es & (parent >= 0)], minlength=n)
    ground = np.zeros(n, np.int64) if ground is None else (np.asarray(ground, np.int64) * es)
    inN = (own_end > s0) | (nkids >= 2) | (ground > 0)
    npar = np.full(n, -1, np.int64)
    for i in range(n):
        p = parent[i]
        if p >= 0:
            npar[i] = p if inN[p] else npar[p]
    nodes = np.flatnonzero(inN).astype(np.int64)
    kids = nodes[npar[nodes] >= 0]
    kids = kids[np.lexsort((s0[kids], npar[kids]))]
    nch_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(npar[kids], minlength=n), out=nch_ptr[1:])
    return OsimStructure(row[order], src[order], aux[order], s0, s1, own_end, es.astype(np.int64),
                         inN.astype(np.int64), npar, nodes, nch_ptr, kids.astype(np.int64), ground)


def _structure(rows, ground=False):
    """The structure of rows' constraint set, kept in its `derived` (keyed by grounding)."""
    cs = rows.cs
    cache = cs.derived.setdefault("osim", {})
    st = cache.get(ground)
    if st is None:
        g = None
        if ground:
            m = rows.model
            g = ((m.jtype == models.FREE) & (m.parent < 0)).astype(np.int64)
        st = cache[ground] = osim_structure(rows.model, rows.la, rows.lb, rows.dof, g)
    return st


def _work(model, st):
    ms = st.side_row.shape[0]
    n = model.nbodies
    return OsimWork(np.empty((ms, 6)), np.empty((ms, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6)),
                    np.empty((n, 6, 6)))


# --------------------------------------------------------------------------- entry points
def _rows(model, q, constraints):
    """Constraint rows (contacts included) and a Data with kinematics at q (no ABA yet)."""
    q = model.check_q(q).copy()
    data = models.Data(model)
    data.q = q
    kinematics_kernel(model.jint, model.jfloat, q, data.oR, data.op, data.S, data.H)
    return _Rows(model, q, as_constraint_set(model, constraints), data)


def delassus_from_rows(rows, H, armature, method="pv_osimr", ground=False):
    """J M⁻¹ Jᵀ (m, m) for the rows of a `_Rows` at its q, M given by the link inertias H
    (n, 6, 6) and the armature (nv,) (the plain ones, or cABA's augmented ones); the ABA
    factors are left in rows.data."""
    model, data = rows.model, rows.data
    st = _structure(rows, ground)
    ws = _work(model, st)
    G = np.empty((rows.m, rows.m))
    if not delassus_kernel(0 if method == "pv_osimr" else 1, model.jint, armature, data.S, H, data.IA, data.U,
                           data.Dinv, st, rows.kA, rows.kB, rows.dof, rows.sg, ws, G):
        raise model.singular_mass_matrix_error(data.op)
    return G


def pv_osimr(model, q, constraints):
    """Delassus matrix G = J M⁻¹ Jᵀ (m, m) by PV-OSIMr (Sathya, Decré, Swevers, Alg. 3),
    O(n + m²): one ABA backward pass, one sweep over the supporting links for the extended
    force propagators between branching links (Eq. 16–17), a forward sweep over the branching
    links for ⁰Ω (Eq. 18), and a backward sweep over them that carries the constraint rows up
    (Eq. 19) and forms each block once at its closest common ancestor (Eq. 13)."""
    rows = _rows(model, q, constraints)
    return delassus_from_rows(rows, rows.data.H, model.armature)


def pv_osim(model, q, constraints):
    """Delassus matrix G = J M⁻¹ Jᵀ (m, m) by PV-OSIM (Sathya, Decré, Swevers, Alg. 1),
    O(n + m² d): the constraint rows and their inverse inertia are updated at every supporting
    link. The baseline PV-OSIMr improves on."""
    rows = _rows(model, q, constraints)
    return delassus_from_rows(rows, rows.data.H, model.armature, method="pv_osim")


def _caba(model, q, constraints, damping, ground):
    rows = _rows(model, q, constraints)
    rho, dv = rows._damping(damping)
    d = np.full(rows.m, rho) if dv is None else dv
    Rv = 1.0 / d
    unary = (rows.lb < 0) | (rows.dof >= 0)
    cs, data = rows.cs, rows.data
    cs.coupling_pairs()                  # sets cs.cb_slot (binary blocks get zero weight below)
    Hd, Dj = np.empty_like(data.H), np.empty(model.nv)
    Ho = np.empty((max(int(cs.cb_slot.max(initial=-1)) + 1, 1), 6, 6))
    # Alg. 5 line 4: Hᴬᵢ ← Hᵢ + Kᵢᵀ R Kᵢ (and armature + R for joint rows), unary rows only
    damped_inertias_kernel(np.where(unary, Rv, 0.0), data.H, model.armature, cs.cb_kind, cs.cb_row, cs.cb_nrows,
                           cs.cb_body, cs.cb_f, cs.cb_slot, rows.la, rows.lb, rows.kA, rows.kB, rows.dof, Hd, Ho, Dj)
    L = delassus_from_rows(rows, Hd, Dj, ground=ground)
    if unary.all():
        matrix_inversion_kernel(L, Rv)
        return L
    return _schur_inverse(L, Rv, d, unary)


def _schur_inverse(L, Rv, d, unary):
    """(G + diag d)⁻¹ from L = J M_R⁻¹ Jᵀ when rows B = ~unary are not in M_R (module doc)."""
    u, b = np.flatnonzero(unary), np.flatnonzero(~unary)
    Ru = Rv[u]
    S = L[np.ix_(b, b)] + np.diag(d[b])
    Sinv = sla.cho_solve(sla.cho_factor(S, lower=True, check_finite=False), np.eye(b.size), check_finite=False)
    X = -Ru[:, None] * L[np.ix_(u, b)]
    XS = X @ Sinv
    out = np.empty_like(L)
    Luu = -(Ru[:, None] * L[np.ix_(u, u)] * Ru[None, :]) + XS @ X.T
    Luu[np.diag_indices(u.size)] += Ru
    out[np.ix_(u, u)] = Luu
    out[np.ix_(u, b)] = XS
    out[np.ix_(b, u)] = XS.T
    out[np.ix_(b, b)] = Sinv
    return out


def caba_osim(model, q, constraints, damping):
    """Damped inverse Λ_μ = (J M⁻¹ Jᵀ + diag(d))⁻¹ (m, m) by cABA-OSIM (Sathya, Carpentier,
    Alg. 5): PV-OSIMr on the augmented inertias Hᵢ + Kᵢᵀ R Kᵢ, R = diag(1/d), then the matrix
    inversion lemma Λ_μ = R − R J M_R⁻¹ Jᵀ R (Eq. 40), O(n + m²), no m × m factorisation.
    damping: scalar or (m,), > 0 (as `MatrixFreeDelassus.update_damping`). Rows between two
    moving links are handled by a Schur complement on them (module doc)."""
    return _caba(model, q, constraints, damping, False)


def caba_osimf(model, q, constraints, damping):
    """Λ_μ as `caba_osim`, by cABA-OSIMf (Sathya, Carpentier, Sec. VI-B): free-flyer roots are
    grounded, so the constraints of different branches stay decoupled (L₁ᴬ block-diagonal per
    branch), and the base's coupling is added as one rank-6 term ᵇK (H_bᴬ)⁻¹ ᵇKᵀ (Eq. 41)."""
    return _caba(model, q, constraints, damping, True)

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

import models

from .constraints import as_constraint_set, rows_kernel
from .osim_kernels import (BAD_DAMPING, BAD_OUT, BAD_Q, OSIM_FIELDS, OSIM_SIZE_NAMES, SINGULAR, OsimStructure,
                           damped_inverse_prepared_kernel, delassus_prepared_kernel)
from .packed import pack, typed_entry

__all__ = ["pv_osimr", "pv_osim", "caba_osim", "caba_osimf", "PvOsimr", "CabaOsim", "OsimStructure"]


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


# --------------------------------------------------------------------------- prepared objects
UNIT_TOL = 1e-6          # as `Model.check_q`
_STATUS_NAMES = {BAD_Q: "q", BAD_DAMPING: "damping", BAD_OUT: "out"}


class _Prepared:
    """The packed workspaces of one (model, constraint set, algorithm) (`osim_kernels.OSIM_FIELDS`):
    the model's and the set's arrays (copied: `refresh()` after an in-place change), the
    branching-link structure of the rows and every workspace, built once."""

    def __init__(self, model, constraints, method=0, ground=False):
        cs = as_constraint_set(model, constraints)
        self.model, self.constraints, self.m = model, cs, cs.m
        cs.coupling_pairs()                              # sets cs.cb_slot
        # the rows' links la, lb do not depend on q: `rows_kernel` at any placements
        n, m = model.nbodies, cs.m
        la, lb = np.empty(m, np.int64), np.empty(m, np.int64)
        rows_kernel(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, np.zeros((n, 3, 3)), np.zeros((n, 3)),
                    la, lb, np.empty((m, 6)), np.empty((m, 6)), True)
        g = ((model.jtype == models.FREE) & (model.parent < 0)).astype(np.int64) if ground else None
        st = osim_structure(model, la, lb, cs.dof, g)
        unary = (lb < 0) | (cs.dof >= 0)
        urow, brow = np.flatnonzero(unary).astype(np.int64), np.flatnonzero(~unary).astype(np.int64)
        sizes = dict(n=model.nbodies, nv=model.nv, nq=model.nq, m=cs.m, nc=cs.cb_kind.shape[0],
                     ns=st.side_row.shape[0], nn=st.nodes.shape[0], nk=st.nch.shape[0],
                     no=max(int(cs.cb_slot.max(initial=-1)) + 1, 1), nu=urow.shape[0], nb=brow.shape[0])
        self._fw, self._iw, self._views = pack(OSIM_SIZE_NAMES, OSIM_FIELDS, sizes)
        v = self._views
        v["settings"][0], v["method"][0] = UNIT_TOL, method
        for name, x in zip(OsimStructure._fields, st):
            v[name][...] = x
        v["urow"][...], v["brow"][...] = urow, brow
        self.refresh()

    def refresh(self):
        """Copy the model's and the constraint set's arrays again (after an in-place change)."""
        model, cs, v = self.model, self.constraints, self._views
        for name, x in (("jint", model.jint), ("jfloat", model.jfloat), ("armature", model.armature),
                        ("cb_kind", cs.cb_kind), ("cb_row", cs.cb_row), ("cb_nrows", cs.cb_nrows),
                        ("cb_body", cs.cb_body), ("cb_f", cs.cb_f), ("dof", cs.dof), ("sg", cs.sg),
                        ("cb_slot", cs.cb_slot)):
            v[name][...] = x

    def _out(self, out):
        return np.empty((self.m, self.m)) if out is None else out

    def _checked_out(self, out):
        """out, or a new (m, m) array; ValueError unless out is None or a writable, aligned,
        C-contiguous float64 ndarray of shape (m, m)."""
        if out is not None and not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
                                    and out.flags.writeable and out.flags.aligned and out.shape == (self.m, self.m)):
            raise ValueError(f"out must be None or a writable C-contiguous float64 array of shape ({self.m}, {self.m})")
        return self._out(out)

    def _raise(self, status, q, damping=None, out=None):
        """The model's message for q, or the damping's / out's."""
        if status == SINGULAR:
            raise self.model.singular_mass_matrix_error(self._views["op"])
        self.model.check_q(q)
        if damping is not None:
            _check_damping(damping, self.m)
        self._checked_out(out)
        raise ValueError(f"bad {_STATUS_NAMES.get(status, status)}")


def _check_damping(d, m):
    """damping as a float64 array of shape (1,) (a scalar) or (m,), finite and > 0, or ValueError."""
    try:
        d = np.asarray(d, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"damping must be a number or an array of numbers, got {d!r}") from None
    if d.ndim == 0:
        if not (np.isfinite(d) and d > 0):
            raise ValueError(f"damping must be > 0 and finite, got {float(d)}")
        return d.reshape(1)
    if d.shape != (m,):
        raise ValueError(f"damping must be a scalar or shape ({m},), got {d.shape}")
    if not np.all(np.isfinite(d)) or d.min() <= 0:
        raise ValueError("damping must be > 0 and finite")
    return np.ascontiguousarray(d)


class PvOsimr(_Prepared):
    """The Delassus matrix G = J M⁻¹ Jᵀ (m, m) of a constraint set, prepared once for a model and
    the set (`pv_osimr`'s structure, workspaces and the model's arrays), so that `compute(q)` is
    one compiled call (`osim_kernels.delassus_prepared_kernel`) with the check of q inside it.

        P = solvers.osim.PvOsimr(model, constraints)      # method="pv_osim": PV-OSIM (Alg. 1)
        G = P.compute(q)                                  # or P.compute(q, out=G): no allocation

    ValueError on a bad q or out, before anything is written."""

    def __init__(self, model, constraints, method="pv_osimr"):
        if method not in ("pv_osimr", "pv_osim"):
            raise ValueError(f"method must be 'pv_osimr' or 'pv_osim', got {method!r}")
        super().__init__(model, constraints, 0 if method == "pv_osimr" else 1)
        self.method = method
        self._kernel = typed_entry(delassus_prepared_kernel, self._fw, self._iw, np.zeros(1), np.zeros((1, 1)))

    def compute(self, q, out=None):
        """G (m, m) at q (nq,): a new array, or written into out ((m, m) float64, C-contiguous)."""
        try:
            G = self._out(out)
            status = self._kernel(self._fw, self._iw, q, G)
        except TypeError:
            q = np.require(self.model.check_q(q), np.float64, ("C", "W", "A"))
            G = self._checked_out(out)
            status = self._kernel(self._fw, self._iw, q, G)
        if status:
            self._raise(status, q, None, out)
        return G


class CabaOsim(_Prepared):
    """The damped inverse Λ_μ = (J M⁻¹ Jᵀ + diag(d))⁻¹ (m, m) by cABA-OSIM (or cABA-OSIMf with
    grounded=True), prepared once for a model and a constraint set, so that
    `compute(q, damping)` is one compiled call (`osim_kernels.damped_inverse_prepared_kernel`)
    with the checks of q and the damping inside it.

        P = solvers.osim.CabaOsim(model, constraints)
        Lmu = P.compute(q, 1e-2)               # damping: scalar or (m,), > 0; out= as in PvOsimr

    ValueError on a bad q, damping or out, before anything is written."""

    def __init__(self, model, constraints, grounded=False):
        super().__init__(model, constraints, 0, bool(grounded))
        self.grounded = bool(grounded)
        self._d1 = np.zeros(1)
        self._kernel = typed_entry(damped_inverse_prepared_kernel, self._fw, self._iw, np.zeros(1), np.zeros(1),
                                    np.zeros((1, 1)))

    def compute(self, q, damping, out=None):
        """Λ_μ (m, m) at q (nq,) for damping (scalar or (m,)): a new array, or written into out."""
        try:
            if type(damping) is not np.ndarray:
                self._d1[0] = damping
                damping = self._d1
            G = self._out(out)
            status = self._kernel(self._fw, self._iw, q, damping, G)
        except (TypeError, ValueError):
            q = np.require(self.model.check_q(q), np.float64, ("C", "W", "A"))
            d = _check_damping(damping, self.m)
            G = self._checked_out(out)
            status = self._kernel(self._fw, self._iw, q, d, G)
        if status:
            self._raise(status, q, damping, out)
        return G


def _prepared(model, constraints, cls, *args):
    """The prepared object of (model, constraints, cls, args), kept in a prebuilt set's `derived`
    (refreshed: the one-shot functions read the model and the set as they are now)."""
    cs = as_constraint_set(model, constraints)
    cache = cs.derived.setdefault("osim_prepared", {})
    key = (cls, args)
    p = cache.get(key)
    if p is None or p.model is not model:
        p = cache[key] = cls(model, cs, *args)
    else:
        p.refresh()
    return p


# --------------------------------------------------------------------------- entry points
def pv_osimr(model, q, constraints):
    """Delassus matrix G = J M⁻¹ Jᵀ (m, m) by PV-OSIMr (Sathya, Decré, Swevers, Alg. 3),
    O(n + m²): one ABA backward pass, one sweep over the supporting links for the extended
    force propagators between branching links (Eq. 16–17), a forward sweep over the branching
    links for ⁰Ω (Eq. 18), and a backward sweep over them that carries the constraint rows up
    (Eq. 19) and forms each block once at its closest common ancestor (Eq. 13).
    Runs `PvOsimr` (cached on a prebuilt ConstraintSet: pass one, or hold a `PvOsimr`)."""
    return _prepared(model, constraints, PvOsimr, "pv_osimr").compute(q)


def pv_osim(model, q, constraints):
    """Delassus matrix G = J M⁻¹ Jᵀ (m, m) by PV-OSIM (Sathya, Decré, Swevers, Alg. 1),
    O(n + m² d): the constraint rows and their inverse inertia are updated at every supporting
    link. The baseline PV-OSIMr improves on. Runs `PvOsimr(..., method="pv_osim")`."""
    return _prepared(model, constraints, PvOsimr, "pv_osim").compute(q)


def caba_osim(model, q, constraints, damping):
    """Damped inverse Λ_μ = (J M⁻¹ Jᵀ + diag(d))⁻¹ (m, m) by cABA-OSIM (Sathya, Carpentier,
    Alg. 5): PV-OSIMr on the augmented inertias Hᵢ + Kᵢᵀ R Kᵢ, R = diag(1/d), then the matrix
    inversion lemma Λ_μ = R − R J M_R⁻¹ Jᵀ R (Eq. 40), O(n + m²), no m × m factorisation.
    damping: scalar or (m,), > 0 (as `MatrixFreeDelassus.update_damping`). Rows between two
    moving links are handled by a Schur complement on them (module doc). Runs `CabaOsim`."""
    return _prepared(model, constraints, CabaOsim, False).compute(q, damping)


def caba_osimf(model, q, constraints, damping):
    """Λ_μ as `caba_osim`, by cABA-OSIMf (Sathya, Carpentier, Sec. VI-B): free-flyer roots are
    grounded, so the constraints of different branches stay decoupled (L₁ᴬ block-diagonal per
    branch), and the base's coupling is added as one rank-6 term ᵇK (H_bᴬ)⁻¹ ᵇKᵀ (Eq. 41).
    Runs `CabaOsim(..., grounded=True)`."""
    return _prepared(model, constraints, CabaOsim, True).compute(q, damping)

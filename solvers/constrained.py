"""Constrained forward dynamics with equality constraints by the proximal augmented Lagrangian
(paper 002: A. Sathya and J. Carpentier, "Constrained Articulated Body Dynamics Algorithms").

Problem (paper 002 Eq. 2, Gauss' principle with motion constraints): the accelerations a of

    minimise ½ ‖a − a_free‖²_M   subject to   J a + γ = a_ref,

with M a_free = τ − c(q, v), γ = J̇ v the constraint drift and a_ref the desired constraint
accelerations (0 by default; a Baumgarte term for stabilisation). Every row is bilateral: a
`Contact` is read as a point that may not accelerate relative to the other body, a
`LoopClosure` as its point/weld, a joint constraint as q̈-row = a_ref. Redundant or singular
constraint sets are fine: the proximal term makes every step well posed and the iterations
converge to the minimum-norm multipliers (paper 002 Sec. II-C/D).

Public functions (same signature, same result record):

    constrained_aba(model, q, v, tau, constraints, mu=1e6, tol=1e-10, max_iter=50, a_ref=None)
    prox_pv(model, q, v, tau, constraints, mu=1e6, tol=1e-10, max_iter=50, a_ref=None)
    prox_ltl(...)   the dense reference (CRBA, LTL of M, Cholesky of Λ⁻¹ + I/μ)

→ `ConstrainedResult(a (nv,), lam (m,), iterations, residual)`: `lam` are the constraint
forces in this code base's sign (M a = τ − c + Jᵀ lam, as contact impulses), `residual` is
‖J a + γ − a_ref‖∞ (m/s², rad/s²), `iterations` the number of proximal (primal) solves.

J (rows in the order of the constraints), γ: J(q) is the one of `DenseDelassus` (a contact's
point and frame fixed in the world, loop anchors moving with their bodies, loop axes with
body 1), and γ = d/dt(J(q(t))) v along the motion (`constraint_drift`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import models

from .constrained_kernels import (PACKED_FIELDS, SINGULAR, SIZE_NAMES, bias_chain_kernel, caba_impulse_kernel,
                                  caba_solve_kernel, prepare_kernel, prox_ltl_kernel, pv_impulse_kernel, pv_solve_kernel,
                                  refresh_kernel, supports_kernel)
from .constraints import as_constraint_set
from .delassus_kernels import dense_jacobian_kernel, gather_kernel
from .packed import pack, typed_entry


class ConstrainedResult(NamedTuple):
    """a (nv,) joint accelerations; lam (m,) constraint forces (M a = τ − c + Jᵀ lam);
    iterations: proximal (primal) solves; residual: ‖J a + γ − a_ref‖∞."""
    a: np.ndarray
    lam: np.ndarray
    iterations: int
    residual: float


# ----------------------------------------------------------------------------- inputs
def _settings(mu, tol, max_iter):
    mu = float(mu)
    if not (np.isfinite(mu) and mu > 0):
        raise ValueError(f"mu (the proximal parameter) must be > 0 and finite, got {mu}")
    tol = float(tol)
    if not (tol >= 0 and np.isfinite(tol)):
        raise ValueError(f"tol must be >= 0 and finite, got {tol}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter}")
    return mu, tol, int(max_iter)


def _inputs(model, q, v, tau, constraints, a_ref):
    """(q, v, tau, ConstraintSet, a_ref) checked: shapes, finiteness, unit quaternions, bodies."""
    cs = as_constraint_set(model, constraints)
    q = model.check_q(q)
    v = model.check_v(v)
    tau = model.check_v(tau, "tau")
    if a_ref is None:
        a_ref = np.zeros(cs.m)
    else:
        a_ref = np.asarray(a_ref, dtype=float)
        if a_ref.shape != (cs.m,) or not np.all(np.isfinite(a_ref)):
            raise ValueError(f"a_ref must be {cs.m} finite numbers (one per constraint row)")
    return q, v, tau, cs, a_ref


class _Work:
    """Per (model, constraint set) structure and workspaces, cached on the ConstraintSet:
    row links, link rows (CSR), joint rows, 𝒮_E, whether some constraint couples two bodies."""

    def __init__(self, model, cs):
        n, nv, m = model.nbodies, model.nv, cs.m
        self.model, self.cs, self.n, self.nv, self.m = model, cs, n, nv, m
        b = cs.cb_body[cs.row_block] if m else np.zeros((0, 2), np.int64)
        link_rows = cs.dof < 0
        self.coupled = bool(np.any(link_rows & (b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 0] != b[:, 1])))
        la = np.where(b[:, 0] >= 0, b[:, 0], b[:, 1]) if m else np.zeros(0, np.int64)
        la = np.where(link_rows, la, -1).astype(np.int64)
        self.lrow = np.flatnonzero(la >= 0)
        self.lrow = self.lrow[np.argsort(la[self.lrow], kind="stable")].astype(np.int64)
        self.lptr = np.searchsorted(la[self.lrow], np.arange(n + 1)).astype(np.int64)
        self.jrow = np.flatnonzero(~link_rows).astype(np.int64)
        dof_link = np.repeat(np.arange(n), model.nvs).astype(np.int64)
        self.se = np.zeros(n, np.int64)
        supports_kernel(model.jint, la, cs.dof, dof_link, self.se)
        z = np.zeros
        self.oR, self.op, self.S, self.H = z((n, 3, 3)), z((n, 3)), z((6, nv)), z((n, 6, 6))
        self.la, self.lb, self.kA, self.kB = z(m, np.int64), z(m, np.int64), z((m, 6)), z((m, 6))
        self.vel, self.c, self.pA, self.dpA, self.acc = z((n, 6)), z((n, 6)), z((n, 6)), z((n, 6)), z((n, 6))
        self.IA, self.Lc, self.U = z((n, 6, 6)), z((n, 6, 6)), z((6, nv))
        self.u, self.du, self.qprev = z(nv), z(nv), z(nv)
        self.gk, self.kref, self.e = z(m), z(m), z(m)
        self.krow = np.arange(m, dtype=np.int64)
        self.zero = z(m)
        self.scratch = z((4, 6, 6))
        self.rows = (self.la, self.lb, self.kA, self.kB, cs.dof, cs.sg, np.arange(m, dtype=np.int64),
                     z(0, np.int64), z((0, 2), np.int64), z((0, 24)))

    def pv(self):
        """The proxPV items (row sides and joint rows sorted by the preorder of their link, with
        each link's subtree range lo:hi), the link CSR of the roll-out and 𝒮_E; built once."""
        if getattr(self, "_pv", None) is None:
            model, cs, n = self.model, self.cs, self.n
            b = cs.cb_body[cs.row_block] if self.m else np.zeros((0, 2), np.int64)
            la = np.where(b[:, 0] >= 0, b[:, 0], b[:, 1])
            lb = np.where((b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 0] != b[:, 1]), b[:, 1], -1)
            dof_link = np.repeat(np.arange(n), model.nvs)
            rows, sides, links = [], [], []
            for r in range(self.m):
                if cs.dof[r] >= 0:
                    rows.append(r), sides.append(2), links.append(dof_link[cs.dof[r]])
                    continue
                for side, lk in ((0, la[r]), (1, lb[r])):
                    if lk >= 0:
                        rows.append(r), sides.append(side), links.append(lk)
            pre, size = model.preorder, model.subtree_size
            links = np.asarray(links, np.int64)
            order = np.argsort(pre[links], kind="stable")
            it_row = np.asarray(rows, np.int64)[order]
            it_side = np.asarray(sides, np.int64)[order]
            it_link = links[order]
            spre = pre[it_link]
            lo = np.searchsorted(spre, pre).astype(np.int64)
            hi = np.searchsorted(spre, pre + size).astype(np.int64)
            own = np.flatnonzero(it_side < 2)
            own = own[np.argsort(it_link[own], kind="stable")].astype(np.int64)
            lptr = np.searchsorted(it_link[own], np.arange(n + 1)).astype(np.int64)
            se = np.zeros(n, np.int64)
            supports_kernel(model.jint, it_link, np.full(len(it_link), -1), dof_link, se)
            ni = len(it_row)
            self._pv = (it_row, it_side, lo, hi, lptr, own, se,
                        (np.zeros((ni, 6)), np.zeros((ni, 6)), np.zeros((ni, 6)), np.zeros((self.m, self.m)),
                         np.zeros((self.m, self.m)), np.zeros(self.m), np.zeros(self.m)))
        return self._pv

    def at(self, q, v, a_ref=None):
        """Kinematics at q, the rows K, the velocity sweep at v, γ_K (the K̇ v part of γ) and
        kref (`prepare_kernel`)."""
        model, cs = self.model, self.cs
        prepare_kernel(model.jint, model.jfloat, model.gravity, q, v, cs.cb_kind, cs.cb_row, cs.cb_nrows,
                       cs.cb_body, cs.cb_f, cs.dof, self.zero if a_ref is None else a_ref, self.oR, self.op, self.S,
                       self.H, self.la, self.lb, self.kA, self.kB, self.vel, self.c, self.pA, self.gk, self.kref,
                       self.scratch)

    def drift(self):
        """γ = J̇ v (m,) at the state of `at`: K·(bias accelerations, no gravity) + γ_K."""
        acc = self.acc
        bias_chain_kernel(self.model.jint, self.c, acc)
        y = np.empty(self.m)
        _link_rows_values(self, acc, np.zeros(self.nv), y)
        return y + self.gk


def _link_rows_values(w, acc, qdd, y):
    """y = J-rows applied to link accelerations acc and joint accelerations qdd (both sides)."""
    gather_kernel(w.rows, acc, qdd, y)


def _work(model, cs):
    w = cs.derived.get("constrained_work")
    if w is None or w.model is not model:
        w = cs.derived["constrained_work"] = _Work(model, cs)
    return w


def constraint_drift(model, q, v, constraints):
    """γ = J̇(q, v) v (m,): the constraint accelerations at zero joint acceleration and no
    gravity, J a + γ being the rows' acceleration (see the module doc for J(q))."""
    cs = as_constraint_set(model, constraints)
    w = _work(model, cs)
    w.at(model.check_q(q), model.check_v(v))
    return w.drift()


# ----------------------------------------------------------------------------- prepared calls
ALGORITHMS = ("constrainedABA", "proxPV")
UNIT_TOL = 1e-6          # as `Model.check_q`
_SOLVE = {"constrainedABA": caba_solve_kernel, "proxPV": pv_solve_kernel}
_IMPULSE = {"constrainedABA": caba_impulse_kernel, "proxPV": pv_impulse_kernel}
_result = tuple.__new__  # a NamedTuple made without its Python-level __new__ (0.1 µs a call)
_empty = np.empty


class ConstrainedDynamics:
    """Constrained forward dynamics prepared once for a model and a constraint set: the model's
    and the set's arrays, the row structure (𝒮_E, link rows, proxPV's items), the settings and
    every workspace are packed here into two flat arrays (`constrained_kernels.PACKED_FIELDS`),
    so that `solve(q, v, tau)` is one compiled call on them, with the input checks inside it.

        cd = solvers.ConstrainedDynamics(model, constraints, algorithm="constrainedABA")
        r = cd.solve(q, v, tau)          # ConstrainedResult(a, lam, iterations, residual)

    algorithm: "constrainedABA" (paper 002 Alg. 3, `constrained_aba`) or "proxPV" (Alg. 4,
    `prox_pv`); mu, tol, max_iter as in `constrained_aba`, kept as attributes (checked here;
    change them with `set_settings`). Constraint sets that couple two moving bodies under
    "constrainedABA" take `constrained_aba`'s link-graph path (not one compiled call).
    The model's arrays (tree, inertias, armature, gravity) and the constraint set's are copied
    when prepared: after changing them in place, call `refresh()`. Each solve returns new arrays
    a (nv,) and lam (m,)."""

    def __init__(self, model, constraints, algorithm="constrainedABA", mu=1e6, tol=1e-10, max_iter=50):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
        self.model = model
        self.constraints = as_constraint_set(model, constraints)
        self.algorithm = algorithm
        self.nv, self.m = model.nv, self.constraints.m
        self._work = _work(model, self.constraints)
        self._graph = algorithm == "constrainedABA" and self._work.coupled
        if not self._graph:
            self._fw, self._iw, self._views = _pack(model, self.constraints, self._work)
            self._zero = self._views["zero_m"]
            z = np.zeros
            self._solve_kernel = typed_entry(_SOLVE[algorithm], self._fw, self._iw, z(1), z(1), z(1), z(1), z(1),
                                              z(1))
            self._impulse_kernel = typed_entry(_IMPULSE[algorithm], self._fw, self._iw, z(1), z(1), z(1), z(1),
                                                z(1))
        self.set_settings(mu, tol, max_iter)

    def set_settings(self, mu=1e6, tol=1e-10, max_iter=50):
        """The proximal parameter μ > 0, the tolerance and the iteration cap of later solves."""
        self.mu, self.tol, self.max_iter = _settings(mu, tol, max_iter)
        if not self._graph:
            self._views["settings"][:] = (self.mu, self.tol, self.max_iter, UNIT_TOL)

    def refresh(self):
        """Copy the model's and the constraint set's arrays again (after an in-place change)."""
        if not self._graph:
            m, cs = self.model, self.constraints
            refresh_kernel(self._fw, self._iw, m.jint, m.jfloat, m.armature, m.gravity, cs.cb_kind, cs.cb_row,
                           cs.cb_nrows, cs.cb_body, cs.cb_f, cs.dof, cs.sg)

    def solve(self, q, v, tau, a_ref=None, out=None):
        """`ConstrainedResult` at (q (nq,), v (nv,), tau (nv,)), a_ref (m,) the desired constraint
        accelerations (None: 0). out: None (new arrays a, lam) or the caller's (a, lam), float64
        C-contiguous arrays of shapes (nv,), (m,) to write into (no allocation: a loop of solves).
        ValueError on bad input, before anything is computed or written."""
        if self._graph:
            return self._solve_coupled(q, v, tau, a_ref, out)
        try:
            a, lam = (_empty(self.nv), _empty(self.m)) if out is None else out
            status, it, res = self._solve_kernel(self._fw, self._iw, q, v, tau, self._zero if a_ref is None else a_ref,
                                                 a, lam)
        except (TypeError, ValueError):     # not C-contiguous float64 arrays: convert, or raise
            q, v, tau, a_ref, (a, lam) = self._converted(q, v, tau, a_ref, out)
            status, it, res = self._solve_kernel(self._fw, self._iw, q, v, tau, a_ref, a, lam)
        if status:
            self._raise(status, q, v, tau, a_ref, out)
        return _result(ConstrainedResult, (a, lam, it, res))

    def _converted(self, q, v, tau, a_ref, out):
        """(q, v, tau, a_ref, (a, lam)) as the prepared kernel's types, converted by the model's
        checks (lists, other dtypes, strided or read-only arrays), or the checks' ValueError."""
        q, v, tau, _, a_ref = _inputs(self.model, q, v, tau, self.constraints, a_ref)
        _check_out(out, self.nv, self.m)
        q, v, tau, a_ref = (np.require(x, np.float64, ("C", "W", "A")) for x in (q, v, tau, a_ref))
        return q, v, tau, a_ref, (_empty(self.nv), _empty(self.m)) if out is None else out

    def _solve_coupled(self, q, v, tau, a_ref, out):
        q, v, tau, cs, a_ref = _inputs(self.model, q, v, tau, self.constraints, a_ref)
        _check_out(out, self.nv, self.m)
        r = _coupled(self.model, q, v, tau, cs, self._work, self.mu, self.tol, self.max_iter, a_ref)
        if out is None:
            return r
        out[0][...], out[1][...] = r.a, r.lam
        return r._replace(a=out[0], lam=out[1])

    def impulse(self, q, v_free, corr):
        """The velocity-level step of a time-stepping scheme (`caba_impulse_kernel`): Δv (nv,)
        minimising ½‖Δv‖²_M with J(q)(v_free + Δv) = −corr (corr (m,), m/s), and the impulses
        lam (m,) (M Δv = Jᵀ lam), as `ConstrainedResult(dv, lam, iterations, residual)` (residual:
        ‖J Δv + J v_free + corr‖∞, m/s). q (nq,), v_free (nv,), corr: float64 arrays, trusted
        (the caller's own state: shapes are not checked). Not for constraint sets that couple two
        moving bodies under "constrainedABA" (use "proxPV")."""
        if self._graph:
            raise ValueError("impulse: rows between two moving bodies need algorithm='proxPV'")
        dv, lam = np.empty(self.nv), np.empty(self.m)
        status, it, res = self._impulse_kernel(self._fw, self._iw, q, v_free, corr, dv, lam)
        if status:
            raise self.model.singular_mass_matrix_error(self._views["op"])
        return _result(ConstrainedResult, (dv, lam, it, res))

    def _raise(self, status, q, v, tau, a_ref, out=None):
        """The model's own message for a bad input (status of `caba_solve_kernel`)."""
        if status == SINGULAR:
            raise self.model.singular_mass_matrix_error(self._views["op"])
        _inputs(self.model, q, v, tau, self.constraints, a_ref)
        _check_out(out, self.nv, self.m)
        raise AssertionError(f"prepared solve status {status} on inputs that pass the checks")

    def _solve_with(self, q, v, tau, a_ref, mu, tol, max_iter):
        """`solve` with these (checked) settings (the one-shot functions), after `refresh`."""
        if (mu, tol, max_iter) != (self.mu, self.tol, self.max_iter):
            self.set_settings(mu, tol, max_iter)
        self.refresh()
        return self.solve(q, v, tau, a_ref)


def _check_out(out, nv, m):
    """ValueError unless out is None or a pair of writable, aligned, C-contiguous float64 arrays
    (nv,), (m,) (ndarray itself: a subclass is not what the kernel was compiled for)."""
    if out is None:
        return
    ok = isinstance(out, (tuple, list)) and len(out) == 2 and all(
        type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable
        and x.flags.aligned and x.shape == (k,) for x, k in zip(out, (nv, m)))
    if not ok:
        raise ValueError(f"out must be None or (a, lam): writable C-contiguous float64 arrays of shapes ({nv},), "
                         f"({m},)")


def _pack(model, cs, w):
    """(fw, iw, views by name) of the packed workspaces of (model, cs), w its `_Work`."""
    it_row, it_side, lo, hi, lptr, own, se, _ = w.pv()
    sizes = dict(n=model.nbodies, nv=model.nv, nq=model.nq, m=cs.m, nc=cs.cb_kind.shape[0], ni=it_row.shape[0],
                 nl=w.lrow.shape[0], nj=w.jrow.shape[0], no=own.shape[0])
    fw, iw, views = pack(SIZE_NAMES, PACKED_FIELDS, sizes)
    refresh_kernel(fw, iw, model.jint, model.jfloat, model.armature, model.gravity, cs.cb_kind, cs.cb_row,
                   cs.cb_nrows, cs.cb_body, cs.cb_f, cs.dof, cs.sg)
    for name, x in (("krow", w.krow), ("lptr", w.lptr), ("lrow", w.lrow), ("jrow", w.jrow), ("se", w.se),
                    ("it_row", it_row), ("it_side", it_side), ("lo", lo), ("hi", hi), ("pv_lptr", lptr),
                    ("own", own), ("pv_se", se)):
        views[name][...] = x
    return fw, iw, views


def _prepared(model, cs, algorithm):
    """The `ConstrainedDynamics` of (model, cs, algorithm), kept in the set's `derived`."""
    cache = cs.derived.setdefault("constrained", {})
    cd = cache.get(algorithm)
    if cd is None or cd.model is not model:
        cd = cache[algorithm] = ConstrainedDynamics(model, cs, algorithm)
    return cd


# ----------------------------------------------------------------------------- constrainedABA
def constrained_aba(model, q, v, tau, constraints, mu=1e6, tol=1e-10, max_iter=50, a_ref=None):
    """Constrained forward dynamics by constrainedABA (paper 002 Alg. 1–3), O(n + m) per
    proximal iteration: the ABA with constraint-augmented link inertias H̃ᵢ = Hᵢ + μ KᵢᵀKᵢ and
    forces (Eq. 29), then reduced two-sweep passes over the links that support constraints
    (Alg. 2) until min(‖Δa‖∞, ‖J a + γ − a_ref‖∞) < tol or `max_iter` solves.

    mu > 0: the proximal / augmented-Lagrangian parameter (the paper uses 1e6); larger converges
    in fewer iterations. Constraints that couple two moving bodies (body-body contacts, loop
    closures) make the augmented inertia a graph, not a tree: their primal step uses the
    link-graph elimination of the matrix-free Λ_R (paper 000 Alg. 4), the same iterates.
    Runs `ConstrainedDynamics` (cached on a prebuilt ConstraintSet: pass one, or hold a
    `ConstrainedDynamics`, for repeated calls). Returns `ConstrainedResult` (module doc)."""
    mu, tol, max_iter = _settings(mu, tol, max_iter)
    cs = as_constraint_set(model, constraints)
    return _prepared(model, cs, "constrainedABA")._solve_with(q, v, tau, a_ref, mu, tol, max_iter)


def _coupled(model, q, v, tau, cs, w, mu, tol, max_iter, a_ref):
    """The proximal iterations λᵏ⁺¹ = Λ_μ (λᵏ/μ − b) (paper 002 Eq. 13, identical to the ALM
    iterates of Eq. 16) on the matrix-free Λ_μ of paper 000 (LCABA on the link graph), for
    constraint sets with body-body rows; b = J a_free + γ − a_ref."""
    from .delassus import MatrixFreeDelassus
    w.at(q, v)
    gamma = w.drift()
    data = models.Data(model)
    data._compute(q)
    a_free = data.free_acceleration(v, tau, np.zeros((model.nbodies, 6)), np.empty(model.nv))
    op = MatrixFreeDelassus(model, data.q, cs, data=data, damping=1.0 / mu)
    b = op.J_apply(a_free) + gamma - a_ref
    lam = np.zeros(cs.m)
    it = 0
    while it < max_iter:
        new = op.solve(lam / mu - b, refine=1)
        it += 1
        step = np.max(np.abs(new - lam), initial=0.0) / mu
        lam = new
        if step < tol:
            break
    a = a_free + op.JT_minv(lam)
    res = float(np.max(np.abs(op.J_apply(a) + gamma - a_ref), initial=0.0))
    return ConstrainedResult(a, lam, it, res)


# ----------------------------------------------------------------------------- proxPV
def prox_pv(model, q, v, tau, constraints, mu=1e6, tol=1e-10, max_iter=50, a_ref=None):
    """Constrained forward dynamics by proxPV (paper 002 Alg. 4): the PV algorithm's backward
    sweep forms the Delassus matrix Λ⁻¹ = J M⁻¹ Jᵀ and J a_free + γ − a_ref recursively
    (O(n + m²d)), the proximal-point iterations run on the dual with one Cholesky of
    Λ⁻¹ + I/μ (O(m³)), and a roll-out gives the accelerations. Handles every constraint kind,
    body-body rows included (a row's two sides merge at their common ancestor).
    Stops when min(‖J a + γ − a_ref‖∞, the least-squares error of Eq. 14) < tol or after
    `max_iter` dual solves. Runs `ConstrainedDynamics(..., algorithm="proxPV")`.
    Returns `ConstrainedResult`."""
    mu, tol, max_iter = _settings(mu, tol, max_iter)
    cs = as_constraint_set(model, constraints)
    return _prepared(model, cs, "proxPV")._solve_with(q, v, tau, a_ref, mu, tol, max_iter)


# ----------------------------------------------------------------------------- proxLTL
def prox_ltl(model, q, v, tau, constraints, mu=1e6, tol=1e-10, max_iter=50, a_ref=None):
    """The dense reference proxLTL (paper 002 Sec. II-D1): M by CRBA factored by Featherstone's
    LTL (branching-induced sparsity), the explicit Delassus matrix Λ⁻¹ = J M⁻¹ Jᵀ, one dense
    Cholesky of Λ⁻¹ + I/μ and the proximal iterations of Eq. 13 on the dual,
    O(nd² + m²d + md² + m³). Same signature and result as `constrained_aba`."""
    mu, tol, max_iter = _settings(mu, tol, max_iter)
    q, v, tau, cs, a_ref = _inputs(model, q, v, tau, constraints, a_ref)
    w = _work(model, cs)
    w.at(q, v)
    gamma = w.drift() - a_ref
    J = np.empty((cs.m, model.nv))
    dense_jacobian_kernel(model.jint, w.S, w.la, w.lb, w.kA, w.kB, cs.dof, cs.sg, J)
    nv, m = model.nv, cs.m
    a, lam = np.empty(nv), np.zeros(m)
    it, res = prox_ltl_kernel(model.jint, model.jfloat, model.armature, model.gravity, model.dof_parent, q, v,
                              tau, J, gamma, mu, tol, max_iter, np.empty((nv, nv)), np.empty((nv, m)),
                              np.empty((m, m)), lam, a)
    return ConstrainedResult(a, -lam, int(it), float(res))

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
from models.kinematics import kinematics_kernel

from .constrained_kernels import (bias_chain_kernel, bias_sweep_kernel, caba_kernel, row_drift_kernel, row_values_kernel,
                                  supports_kernel)
from .constraints import as_constraint_set, rows_kernel


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
        self.model, self.n, self.nv, self.m = model, n, nv, m
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

    def at(self, q, v):
        """Kinematics at q, the rows K, the velocity sweep at v and γ_K (the K̇ v part of γ)."""
        model, cs = self.model, self.cs
        kinematics_kernel(model.jint, model.jfloat, q, self.oR, self.op, self.S, self.H)
        rows_kernel(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, self.oR, self.op, self.la, self.lb,
                    self.kA, self.kB, True)
        bias_sweep_kernel(model.jint, self.S, self.H, v, self.vel, self.c, self.pA)
        row_drift_kernel(cs.cb_kind, cs.cb_row, cs.cb_nrows, cs.cb_body, cs.cb_f, self.oR, self.op, self.vel,
                         self.gk)

    def drift(self):
        """γ = J̇ v (m,) at the state of `at`: K·(bias accelerations, no gravity) + γ_K."""
        acc = self.acc
        bias_chain_kernel(self.model.jint, self.c, acc)
        y = np.empty(self.m)
        _link_rows_values(self, acc, np.zeros(self.nv), y)
        return y + self.gk


def _link_rows_values(w, acc, qdd, y):
    """y = J-rows applied to link accelerations acc and joint accelerations qdd (both sides)."""
    row_values_kernel(w.la, w.kA, w.cs.dof, w.cs.sg, acc, qdd, y)
    b = w.lb >= 0
    if np.any(b):
        y[b] += np.einsum("rk,rk->r", w.kB[b], acc[w.lb[b]])


def _work(model, cs):
    w = getattr(cs, "_cdyn", None)
    if w is None or w.model is not model:
        w = cs._cdyn = _Work(model, cs)
        w.cs = cs
    return w


def constraint_drift(model, q, v, constraints):
    """γ = J̇(q, v) v (m,): the constraint accelerations at zero joint acceleration and no
    gravity, J a + γ being the rows' acceleration (see the module doc for J(q))."""
    cs = as_constraint_set(model, constraints)
    w = _work(model, cs)
    w.at(model.check_q(q), model.check_v(v))
    return w.drift()


def _gravity_rows(w, gravity):
    """K a₀ (m,) for the uniform field a₀ = (−g, 0) that the sweeps add to every link (Eq. 20d)."""
    a0 = np.concatenate([-np.asarray(gravity, float), np.zeros(3)])
    out = w.kA @ a0
    b = w.lb >= 0
    out[b] += w.kB[b] @ a0
    out[w.cs.dof >= 0] = 0.0
    return out


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
    Returns `ConstrainedResult` (see the module doc)."""
    mu, tol, max_iter = _settings(mu, tol, max_iter)
    q, v, tau, cs, a_ref = _inputs(model, q, v, tau, constraints, a_ref)
    w = _work(model, cs)
    if w.coupled:
        return _coupled(model, q, v, tau, cs, w, mu, tol, max_iter, a_ref)
    w.at(q, v)
    np.subtract(a_ref, w.gk, out=w.kref)
    w.kref += _gravity_rows(w, model.gravity)
    a = np.empty(model.nv)
    lam = np.zeros(cs.m)
    it, res = caba_kernel(model.jint, model.armature, model.gravity, w.S, w.H, v, tau, w.la, w.kA, cs.dof, cs.sg,
                          w.kref, w.lptr, w.lrow, w.jrow, w.se, mu, tol, max_iter, w.vel, w.c, w.pA, w.IA, w.U,
                          w.Lc, w.u, w.du, w.dpA, w.qprev, w.e, a, w.acc, lam)
    if it < 0:
        raise model.singular_mass_matrix_error(w.op)
    return ConstrainedResult(a, -lam, int(it), float(res))


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

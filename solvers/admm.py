"""ADMM on the frictional contact NCP (Carpentier, Le Lidec, Montaut, RSS 2024; notes/admm.md).

Find λ ∈ K, σ = (G + R_c) λ + g + s(σ) ∈ K*, λ ⟂ σ, with G = J M⁻¹ Jᵀ given as an operator
(``matvec``, ``update_damping(d)``, ``solve(b)`` = (G + diag d)⁻¹ b, ``max_eigenvalue()``),
R_c the compliance (m,), s the De Saxcé correction (dropped for the convex relaxation).

One iteration, with penalty ρ, factor τ and proximal weight μ_prox (notes/admm.md):
  1. s  = DeSaxcé(z)
  2. x⁺ = (G + R_c + (μ_prox + τρ) I)⁻¹ (−(g + s) + τρ y + μ_prox x + z)
  3. y⁺ = Π_K(x⁺ − z / (τρ))
  4. z⁺ = z − τρ (x⁺ − y⁺)
At convergence y = λ and z = σ. The operator's damping is refreshed only when ρ changes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
from models.jitcache import drop_stale_cache

from . import cones as _cones
from . import delassus_kernels as _dk
from .cones import CONE, ORTHANT, ConeSet, desaxce_kernel, ncp_residuals_kernel, project_kernel
from .delassus_kernels import dense_factor, dense_solve, mf_factor, mf_matvec, mf_solve

# admm_kernel compiles in the operator and cone kernels
drop_stale_cache(__file__, [_dk.__file__, _cones.__file__, models.dynamics.__file__, models.kinematics.__file__,
                            models.spatial.__file__, models.joints.__file__])


@dataclass
class ADMMSettings:
    """Solver settings (defaults from notes/admm.md)."""
    max_iter: int = 1000
    eps_abs: float = 1e-6            # Pinocchio's defaults; tighter costs many iterations on
    eps_rel: float = 1e-6            # redundant contact sets (four coplanar corners)
    tau: float = 0.5
    mu_prox: float = 1e-6
    rho_power: float = 0.2           # ρ₀ = √(L m) (L/m)^rho_power
    rho_power_factor: float = 0.05   # ρ ← ρ (L/m)^±rho_power_factor
    ratio_primal_dual: float = 10.0
    update_rule: str = "spectral"    # "spectral" (ρ ← ρ (L/m)^±factor) or "osqp" (ρ ← ρ √(r_p / r_d))
    ncp: bool = True                 # De Saxcé correction (Coulomb); False: convex relaxation
    warm_start: bool = True
    eig_iters: int = 20              # Lanczos steps for λ_max(G)
    keep_rho_power: bool = True      # reuse the last ρ exponent at the next solve

    def check(self):
        if not (self.max_iter >= 1 and self.eps_abs >= 0 and self.eps_rel >= 0 and self.eps_abs + self.eps_rel > 0):
            raise ValueError("ADMM needs max_iter ≥ 1 and a positive tolerance")
        if not (0 < self.tau <= 1 and self.mu_prox > 0 and self.ratio_primal_dual > 1):
            raise ValueError("ADMM needs 0 < tau ≤ 1, mu_prox > 0, ratio_primal_dual > 1")
        if self.update_rule not in ("spectral", "osqp"):
            raise ValueError(f"update_rule must be 'spectral' or 'osqp', got {self.update_rule!r}")


@dataclass
class ADMMResult:
    """λ (m,), σ (m,) and the solve's statistics."""
    lam: np.ndarray
    sigma: np.ndarray
    iterations: int
    converged: bool
    primal_residual: float
    dual_residual: float
    complementarity: float
    rho: float
    rho_updates: int
    max_eigenvalue: float
    warm_started: bool
    time: float
    history: list = field(default_factory=list)


@njit(cache=True)
def admm_update_kernel(kind, start, size, param, g, x, x_prev, y, z, trho, mu_prox, ncp, rhs, s):
    """Steps 3, 4 and 1 of the iteration, the residuals, and the next right-hand side.

    In: x = x⁺ from the damped solve, x_prev, y, z of the previous iterate. Out: y, z updated
    in place; rhs = −(g + s(z)) + τρ y + μ_prox x + z; returns (r_primal, r_dual, r_compl,
    ‖x‖∞, ‖z‖∞)."""
    m = x.shape[0]
    inv = 1.0 / trho
    rp, rd, xn, zn = 0.0, 0.0, 0.0, 0.0
    for r in range(m):
        rhs[r] = x[r] - z[r] * inv           # reuse rhs as workspace for x − z/τρ
    project_kernel(kind, start, size, param, rhs, s)   # s holds y⁺ for now
    for r in range(m):
        dy = s[r] - y[r]
        dx = x[r] - x_prev[r]
        y[r] = s[r]
        z[r] -= trho * (x[r] - y[r])
        rp = max(rp, abs(x[r] - y[r]))
        rd = max(rd, abs(mu_prox * dx + trho * dy))
        xn = max(xn, abs(x[r]))
        zn = max(zn, abs(z[r]))
    rc = 0.0
    for b in range(kind.shape[0]):
        if kind[b] == CONE or kind[b] == ORTHANT:
            acc = 0.0
            for r in range(start[b], start[b] + size[b]):
                acc += y[r] * z[r]
            rc = max(rc, abs(acc))
    if ncp:
        desaxce_kernel(kind, start, param, z, s)
    else:
        s[:] = 0.0
    for r in range(m):
        rhs[r] = -(g[r] + s[r]) + trho * y[r] + mu_prox * x[r] + z[r]
    return rp, rd, rc, xn, zn


@njit(cache=True)
def warm_cold_residuals_kernel(kind, start, size, param, xw, zw, g, ncp):
    """Largest NCP residual of the warm start (λ = xw, σ = zw + s) and of λ = 0 (σ = g + s)."""
    m = g.shape[0]
    s = np.zeros(m)
    sw, sc = zw.copy(), g.copy()
    if ncp:
        desaxce_kernel(kind, start, param, zw, s)
        sw += s
        desaxce_kernel(kind, start, param, g, s)
        sc += s
    a = ncp_residuals_kernel(kind, start, size, param, xw, sw)
    b = ncp_residuals_kernel(kind, start, size, param, np.zeros(m), sc)
    return max(a[0], a[1], a[2]), max(b[0], b[1], b[2])


@njit(cache=True)
def _op_factor(dense, geo, fac, dn, dscal, dvec, vec):
    if dense:
        dense_factor(dn, dscal, dvec, vec)
    else:
        mf_factor(geo, fac, dscal, dvec, vec)


@njit(cache=True)
def _refactor(dense, geo, fac, dn, Rc, has_rc, d, dvec):
    """Damping μ_prox + τρ (+ R_c) into the operator and refactor."""
    if has_rc:
        for r in range(dvec.shape[0]):
            dvec[r] = Rc[r] + d
    _op_factor(dense, geo, fac, dn, d, dvec, has_rc)


@njit(cache=True)
def _op_solve(dense, geo, fac, ws, dn, b, out):
    if dense:
        dense_solve(dn, b, out)
    else:
        mf_solve(geo, fac, ws, b, out)


@njit(cache=True)
def admm_kernel(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, x0, use_x0, ip, fp,
                lam, sigma, hist):
    """The ADMM iterations of the module docstring on one operator, entirely compiled.

    dense: 1 drives the explicit operator dn = (G, C, d, t), 0 the matrix-free one (geo, fac,
    ws) (`delassus_kernels`); the other operator's tuples are placeholders. ip = (max_iter,
    ncp, osqp rule, record); fp = (τ, μ_prox, ε_abs, ε_rel, primal/dual ratio, ρ₀, spectral
    step, L = λ_max(G), ρ_min). x0: warm start, kept if its NCP residual beats λ = 0. Writes λ
    (= y) and σ (= z); hist (max_iter, 4) gets (r_p, r_d, r_c, ρ) per iteration if recording.
    Returns (iterations, converged, r_p, r_d, r_c, ρ, ρ updates, warm started)."""
    max_iter, ncp, osqp, record = ip[0], ip[1] != 0, ip[2] != 0, ip[3] != 0
    tau, mu_prox, eps_abs, eps_rel, ratio, rho, step, L, rho_min = fp[0], fp[1], fp[2], fp[3], fp[4], fp[5], \
        fp[6], fp[7], fp[8]
    m = g.shape[0]
    x = np.zeros(m)
    z = g.copy()
    s = np.zeros(m)
    warm = False
    if use_x0:
        xw = np.empty(m)
        project_kernel(kind, start, size, param, x0, xw)
        zw = np.empty(m)
        if dense:
            G = dn[0]
            for r in range(m):
                acc = 0.0
                for c in range(m):
                    acc += G[r, c] * xw[c]
                zw[r] = acc
        else:
            mf_matvec(geo, ws, xw, zw)
        for r in range(m):
            zw[r] += g[r] + (Rc[r] * xw[r] if has_rc else 0.0)
        r_warm, r_cold = warm_cold_residuals_kernel(kind, start, size, param, xw, zw, g, ncp)
        if r_warm < r_cold:
            x, z, warm = xw, zw, True
    y = x.copy()
    if ncp:
        desaxce_kernel(kind, start, param, z, s)
        z += s
        desaxce_kernel(kind, start, param, z, s)          # step 1 for the first iteration
    trho = tau * rho
    dvec = np.empty(m)
    _refactor(dense, geo, fac, dn, Rc, has_rc, mu_prox + trho, dvec)
    rhs = np.empty(m)
    for r in range(m):
        rhs[r] = -(g[r] + s[r]) + trho * y[r] + mu_prox * x[r] + z[r]
    x_prev = x.copy()
    xn = np.empty(m)
    converged = False
    n_updates = 0
    rp = rd = rc = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        _op_solve(dense, geo, fac, ws, dn, rhs, xn)
        rp, rd, rc, xnorm, znorm = admm_update_kernel(kind, start, size, param, g, xn, x_prev, y, z, trho, mu_prox,
                                                      ncp, rhs, s)
        if record:
            hist[it - 1, 0], hist[it - 1, 1], hist[it - 1, 2], hist[it - 1, 3] = rp, rd, rc, rho
        tol_p = eps_abs + eps_rel * max(xnorm, 1e-300)
        tol_d = eps_abs + eps_rel * max(znorm, 1e-300)
        tol_c = eps_abs + eps_rel * max(xnorm * znorm, 1e-300)
        if rp <= tol_p and rd <= tol_d and rc <= tol_c:
            converged = True
            break
        x_prev[:] = xn
        # ρ update when the residuals are unbalanced (spectral: ρ (L/m)^±factor; osqp: √(r_p/r_d))
        new_rho = rho
        if rp > ratio * rd or rd > ratio * rp:
            if osqp:
                new_rho = rho * np.sqrt(rp / max(rd, 1e-300))
            else:
                new_rho = rho * step if rp > rd else rho / step
            new_rho = min(max(new_rho, rho_min), L)     # keep τρ within the spectrum's range
        if new_rho != rho:
            rho = new_rho
            new_trho = tau * rho
            for r in range(m):
                rhs[r] += (new_trho - trho) * y[r]      # rhs depends on τρ through τρ y
            trho = new_trho
            _refactor(dense, geo, fac, dn, Rc, has_rc, mu_prox + trho, dvec)
            n_updates += 1
    lam[:] = y
    sigma[:] = z
    return it, converged, rp, rd, rc, rho, n_updates, warm


def lanczos_max_eigenvalue(matvec, m, iters=20):
    """Largest eigenvalue of the PSD operator `matvec` (m × m) by `iters` Lanczos steps with full
    reorthogonalisation from a fixed start vector (deterministic). The largest Ritz value is a
    lower bound that converges fast for the extreme eigenvalue; it needs only `matvec`, so every
    operator gets the same estimate (and hence the same ADMM iterates)."""
    k = min(iters, m)
    Q = np.zeros((k + 1, m))
    alpha, beta = np.zeros(k), np.zeros(k)
    q = 1.0 + 0.5 * np.sin(np.arange(m) + 1.0)     # generic: a component on every eigenvector
    Q[0] = q / np.linalg.norm(q)
    j = 0
    for j in range(k):
        w = matvec(Q[j])
        alpha[j] = Q[j] @ w
        w -= Q[:j + 1].T @ (Q[:j + 1] @ w)         # full reorthogonalisation (twice is enough)
        w -= Q[:j + 1].T @ (Q[:j + 1] @ w)
        beta[j] = np.linalg.norm(w)
        if beta[j] <= 1e-12 * max(abs(alpha[j]), 1e-300):
            break
        Q[j + 1] = w / beta[j]
    n = j + 1
    T = np.diag(alpha[:n]) + np.diag(beta[:n - 1], 1) + np.diag(beta[:n - 1], -1)
    return float(np.linalg.eigvalsh(T)[-1])


_EMPTY = np.zeros(0)
_PLACEHOLDER = {}


def _placeholders():
    """Operator tuples of the right types for the side of `admm_kernel` that is not used
    (one compiled specialisation serves both operators)."""
    if not _PLACEHOLDER:
        import models
        from .constraints import ContactSet
        from .delassus import MatrixFreeDelassus
        b = models.ModelBuilder()
        b.add_body("b", -1, models.FREE, mass=1.0, inertia=np.eye(3))
        mdl = b.build()
        op = MatrixFreeDelassus(mdl, mdl.neutral(), [ContactSet(np.array([0]), np.array([-1]), np.zeros((1, 3)),
                                                                  np.eye(3)[None], np.ones(1))])
        _PLACEHOLDER["mf"] = op.kernel_state()
        _PLACEHOLDER["dn"] = (np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0), np.zeros(0))
    return _PLACEHOLDER["mf"], _PLACEHOLDER["dn"]


class _ExplicitOperator:
    """G of an operator that only offers ``matvec`` (m products), for `admm_kernel`'s dense side."""

    def __init__(self, op, m):
        G = np.column_stack([np.asarray(op.matvec(e), float) for e in np.eye(m)]) if m else np.zeros((0, 0))
        self.G = np.ascontiguousarray(0.5 * (G + G.T))

    def kernel_state(self):
        m = self.G.shape[0]
        return (self.G, np.empty((m, m)), np.empty(m), np.empty(m))


def _kernel_operator(op, m):
    """(dense, geo, fac, ws, dn) for `admm_kernel`: the matrix-free operator's own tuples, the
    explicit operator's (G, C, d, t), or for any other operator G built from its matvec."""
    mf_ph, dn_ph = _placeholders()
    state = op.kernel_state() if hasattr(op, "kernel_state") else _ExplicitOperator(op, m).kernel_state()
    if len(state) == 3:
        return 0, state[0], state[1], state[2], dn_ph
    return 1, mf_ph[0], mf_ph[1], mf_ph[2], state


class ADMMSolver:
    """Frictional contact solver; keeps the ρ exponent between solves (a warm start for ρ).

    ``solve(op, g, cones, compliance=None, x0=None)`` → `ADMMResult`. The same iterates
    come out of a dense or a matrix-free operator (up to round-off)."""

    def __init__(self, settings: ADMMSettings | None = None, **kw):
        self.settings = settings or ADMMSettings()
        for k, val in kw.items():
            if not hasattr(self.settings, k):
                raise TypeError(f"unknown ADMM setting '{k}'")
            setattr(self.settings, k, val)
        self.settings.check()
        self.rho_power = self.settings.rho_power

    def solve(self, op, g, cones: ConeSet, compliance=None, x0=None, record=False, max_eigenvalue=None):
        """Solve the NCP (or its convex relaxation) for λ. compliance: R_c (m,) or None;
        x0: warm start (kept only if its residual beats λ = 0); max_eigenvalue: λ_max(G) if
        the caller has an estimate (else the operator's own estimate is used)."""
        st = self.settings
        t0 = time.perf_counter()
        g = np.ascontiguousarray(g, dtype=float)
        m = g.shape[0]
        if cones.m != m:
            raise ValueError(f"cone set has {cones.m} rows, g has {m}")
        kind, start, size, param = cones.arrays()
        if m == 0:
            return ADMMResult(np.zeros(0), np.zeros(0), 0, True, 0.0, 0.0, 0.0, 0.0, 0, 0.0, False, 0.0)
        if not np.isfinite(g.sum()):        # NaN or inf in g (or an overflow, as bad)
            raise ValueError("g contains NaN or inf")
        Rc = None if compliance is None or not np.any(compliance) else \
            np.broadcast_to(np.asarray(compliance, float), (m,)).copy()

        if max_eigenvalue is not None:
            L = float(max_eigenvalue)
        elif hasattr(op, "max_eigenvalue"):
            L = float(op.max_eigenvalue())
        else:
            L = lanczos_max_eigenvalue(op.matvec, m, st.eig_iters)
        L = max(L, 1e-12)
        mm = st.mu_prox + (0.0 if Rc is None else float(Rc.min()))
        cond = max(L / mm, 1.0 + 1e-12)
        rho = math.sqrt(L * mm) * cond ** self.rho_power
        step = cond ** st.rho_power_factor

        dense, geo, fac, ws, dn = _kernel_operator(op, m)
        use_x0 = bool(st.warm_start and x0 is not None and np.asarray(x0).any())
        x0 = np.ascontiguousarray(x0, dtype=float) if use_x0 else _EMPTY
        if use_x0 and x0.shape != (m,):
            raise ValueError(f"x0 must have shape ({m},), got {x0.shape}")
        ip = np.array([st.max_iter, st.ncp, st.update_rule == "osqp", record], np.int64)
        fp = np.array([st.tau, st.mu_prox, st.eps_abs, st.eps_rel, st.ratio_primal_dual, rho, step, L, mm])
        lam, sigma = np.empty(m), np.empty(m)
        hist = np.empty((st.max_iter if record else 0, 4))
        it, converged, rp, rd, rc, rho, n_updates, warm = admm_kernel(
            dense, geo, fac, ws, dn, kind, start, size, param, g, _EMPTY if Rc is None else Rc, Rc is not None,
            x0, use_x0, ip, fp, lam, sigma, hist)
        if not dense:
            op._factored = True
        if st.keep_rho_power:
            self.rho_power = math.log(rho / math.sqrt(L * mm)) / math.log(cond)
        history = [tuple(h) for h in hist[:it]] if record else []
        return ADMMResult(lam=lam, sigma=sigma, iterations=int(it), converged=bool(converged), primal_residual=rp,
                          dual_residual=rd, complementarity=rc, rho=rho, rho_updates=int(n_updates),
                          max_eigenvalue=L, warm_started=bool(warm), time=time.perf_counter() - t0, history=history)

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

import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .cones import CONE, ORTHANT, ConeSet, desaxce_kernel, ncp_residuals_kernel, project_cone, project_kernel


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
        if not np.all(np.isfinite(g)):
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
        rho = np.sqrt(L * mm) * cond ** self.rho_power
        step = cond ** st.rho_power_factor

        # start point: the warm start if its NCP residual beats λ = 0 (one matvec, reused for z)
        warm = False
        x = np.zeros(m)
        s_vec = np.zeros(m)
        z = g.copy()
        if st.warm_start and x0 is not None and np.any(x0):
            xw = cones.project(np.asarray(x0, float))
            zw = op.matvec(xw) + g
            if Rc is not None:
                zw += Rc * xw
            r_warm, r_cold = warm_cold_residuals_kernel(kind, start, size, param, xw, zw, g, st.ncp)
            if r_warm < r_cold:
                x, z, warm = xw, zw, True
        y = x.copy()
        if st.ncp:
            desaxce_kernel(kind, start, param, z, s_vec)
            z += s_vec
            desaxce_kernel(kind, start, param, z, s_vec)          # step 1 for the first iteration
        trho = st.tau * rho

        def damping(trho):
            return st.mu_prox + trho if Rc is None else Rc + (st.mu_prox + trho)

        op.update_damping(damping(trho))
        rhs = -(g + s_vec) + trho * y + st.mu_prox * x + z
        x_prev = x.copy()
        s_work = np.empty(m)
        history = []
        converged = False
        n_updates = 0
        rp = rd = rc = np.inf
        it = 0
        for it in range(1, st.max_iter + 1):
            x = op.solve(rhs)
            rp, rd, rc, xn, zn = admm_update_kernel(kind, start, size, param, g, x, x_prev, y, z, trho,
                                                    st.mu_prox, st.ncp, rhs, s_work)
            if record:
                history.append((rp, rd, rc, rho))
            tol_p = st.eps_abs + st.eps_rel * max(xn, 1e-300)
            tol_d = st.eps_abs + st.eps_rel * max(zn, 1e-300)
            tol_c = st.eps_abs + st.eps_rel * max(xn * zn, 1e-300)
            if rp <= tol_p and rd <= tol_d and rc <= tol_c:
                converged = True
                break
            x_prev[:] = x
            # spectral ρ update when the residuals are unbalanced
            new_rho = rho
            if rp > st.ratio_primal_dual * rd or rd > st.ratio_primal_dual * rp:
                if st.update_rule == "spectral":
                    new_rho = rho * step if rp > rd else rho / step
                else:
                    new_rho = rho * np.sqrt(rp / max(rd, 1e-300))
                new_rho = min(max(new_rho, mm), L)     # keep τρ within the spectrum's range
            if new_rho != rho:
                rho = new_rho
                new_trho = st.tau * rho
                rhs += (new_trho - trho) * y      # rhs depends on τρ through τρ y
                trho = new_trho
                op.update_damping(damping(trho))
                n_updates += 1
        if st.keep_rho_power:
            self.rho_power = float(np.log(rho / np.sqrt(L * mm)) / np.log(cond))
        lam = y.copy()
        return ADMMResult(lam=lam, sigma=z.copy(), iterations=it, converged=converged, primal_residual=rp,
                          dual_residual=rd, complementarity=rc, rho=rho, rho_updates=n_updates,
                          max_eigenvalue=L, warm_started=warm, time=time.perf_counter() - t0, history=history)

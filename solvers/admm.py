"""ADMM on the frictional contact NCP (Carpentier, Le Lidec, Montaut: "From Compliant to Rigid
Contact Simulation: a Unified and Efficient Approach", RSS 2024, as in the Simple simulator).

Find λ ∈ K, σ = (G + R_c) λ + g + s(σ) ∈ K*, λ ⟂ σ, with G = J M⁻¹ Jᵀ given as an operator
(``matvec``, ``update_damping(d)``, ``solve(b)`` = (G + diag d)⁻¹ b, ``max_eigenvalue()``),
R_c the compliance (m,), s the De Saxcé correction (dropped for the convex relaxation).

One iteration, with penalty ρ, factor τ and proximal weight μ_prox:
  1. s  = DeSaxcé(z)
  2. x⁺ = (G + R_c + (μ_prox + τρ) I)⁻¹ (−(g + s) + τρ y + μ_prox x + z)
  3. y⁺ = Π_K(x̂ − z / (τρ)),  x̂ = α x⁺ + (1 − α) y  (α: over-relaxation, 1 by default)
  4. z⁺ = z − τρ (x̂ − y⁺)
At convergence y = λ and z = σ. The operator's damping is refreshed only when ρ changes.

Around the iterations (`admm_kernel`):
- start: the warm start (previous impulses) or λ = 0, whichever satisfies the contact law
  better; if it already does within tolerance, no factorisation at all;
- polish (`polish_kernel`): the warm start's contact modes (sticking, sliding, separated) are
  taken as right and the sticking rows corrected by one least-squares solve; on a settled
  pile this is the whole solve. Skipped (the Newton polish below goes first) when a sliding
  contact of the warm start slips faster than 100 tol (`boundary_slip`, `SLIP_POLISH`): the
  polish holds its impulse fixed, so it cannot succeed. Retried from the iterate's modes at
  iterations 10, 20, 40, 80;
- Newton polish (`newton_polish.ssn_kernel`, setting ``newton_rows``, default 96): the contact
  law solved by a semismooth Newton on the smoothed Alart–Curnier equations (every contact's
  mode from the iterate at every step, sliding included), on the dense block of the rows not
  clearly separated; tried from the warm start after its polish (if that left more than
  ``newton_warm`` = 100 tol) or when λ = 0 beat the warm start (an impact: its largest error
  exceeds zero's while its modes are mostly right), and after each of the iterate's polishes (at
  most four attempts in all: iterations 10, 20, 40, and 80 without a warm start), when the
  active rows number at most ``newton_rows``; accepted only if it meets the stopping test
  below. A falling robot's contacts mostly slide, which the polish above cannot finish: on 1000
  recorded G1-falling problems (`bench/bench_replay.py`) the ADMM iterations were 3.1 mean
  (median 1, p95 10, 87% of the solves within one) with the former active-set Newton, the
  Newton steps averaging 11.6 (accepted or not), against 39.9 mean (p95 80) without it. G1
  lying on its back (600 recorded steps, creeping contacts near the stick–slip transition, where
  the active-set Newton cycled): 40.4 → 1.5 iterations mean (p95 158 → 10) and 43.9 → 7.9
  Newton steps with the semismooth Newton;
- scaling (`scale_kernel`, setting ``scaling`` = p, default 0.35): once iterations are needed
  they run on G̃ = S G S, g̃ = S g, λ̃ = S⁻¹ λ with S = diag(G)^(−p), one value per contact (the
  cone keeps its shape) and per row elsewhere; diag(G) comes from the links' apparent inverse
  inertias (`solvers.scaling`), λ_max(G̃) from a few Lanczos steps (reused while the caller's
  λ_max(G) is). On robots the diagonal spans 10⁴–10⁵ (a wrist's joint limit next to a torso's
  contact): on the saved G1 problems of tests/data, > 1500 iterations unscaled, about 170
  scaled; p = ½ (Jacobi) over-corrects there (about 460);
- Anderson acceleration (setting ``anderson`` = memory, default 10; `anderson_update`): type-II
  mixing of the projection's input t (y = Π_K(t), z = τρ (y − t)) over the last iterations,
  safeguarded (a mixed point whose fixed-point residual grew is replaced by the plain step),
  memory cleared when ρ changes, paused for `AA_PAUSE` plain iterations after 3 rejections
  (contact modes switching), then tried again with an empty memory: once the modes have
  settled the iteration is nearly affine, where mixing works best. Falling G1 (bench_step,
  1000 steps): 98 → 25–37 iterations mean; the pause instead of stopping for the rest of the
  solve: G1 on its back 83 → 42 iterations mean (p95 364 → 142);
- ρ: the spectral rule (ρ ← ρ (L/m)^±0.05 when the residuals differ tenfold), carried from the
  previous solve; OSQP's rule on relative residuals (Stellato et al., "OSQP: an operator
  splitting solver for quadratic programs", 2020, Sec. 5.2) as an option: faster on some
  robot transients but it can make the non-convex NCP iteration diverge (found by the fuzz
  test), so not the default;
- stopping, in velocities: λ = y is always inside its cones; the solve stops when the contact
  velocities σ' that λ produces are within ``eps_abs`` (m/s) of velocities satisfying the
  contact law exactly with λ (`cones.velocity_residual_kernel`): no approach of a separated
  contact, no slip or normal velocity of a sticking one, slip only against the friction force
  of a sliding one, no velocity error on bilateral rows. At the iteration cap the last
  iterate is returned, with converged = False and its true residual, unless that residual is
  ten times the start's (the non-convex iteration diverged): then the best point seen (start,
  polish or an iterate, checked every 25 iterations) is returned instead.
"""
from __future__ import annotations

import math
from collections import namedtuple
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.scratch
import models.spatial
from models.jitcache import drop_stale_cache
from models.scratch import copy_into

from . import cones as _cones
from . import delassus_kernels as _dk
from . import lcaba_kernels as _lk
from . import opstate as _opstate
from .cones import BOX, CONE, FREE, ORTHANT, ConeSet, desaxce_kernel, on_edge, project_kernel, \
    velocity_residual_kernel
from .opstate import (compiled_state, max_eigenvalue, op_diag, op_factor, op_jt_minv, op_matvec, op_max_eigenvalue,
                      op_refactor, op_solve, op_spare_factor, state_j_apply, state_max_eigenvalue)
from . import scaling as _scaling
from . import newton_polish as _newton_polish
from .newton_polish import ssn_kernel

# admm_kernel compiles in the operator and cone kernels
drop_stale_cache(__file__, [_dk.__file__, _lk.__file__, _opstate.__file__, _cones.__file__, _scaling.__file__,
                            _newton_polish.__file__, models.dynamics.__file__, models.kinematics.__file__,
                            models.spatial.__file__, models.joints.__file__, models.scratch.__file__])


@dataclass
class ADMMSettings:
    """Solver settings. Accuracy is stated in velocities (m/s): a solve stops when the contact
    velocities produced by the returned impulses are within eps_abs + eps_rel ‖g‖∞ of
    velocities that satisfy the contact law exactly with those impulses (slip of a sticking
    contact, approach or penetration velocity, slip off the friction direction of a sliding one,
    velocity error of a bilateral row); the impulses are always inside their cones."""
    max_iter: int = 1000
    eps_abs: float = 1e-6            # m/s: 1 µm/s of creep at most on a sticking contact
    eps_rel: float = 0.0             # relative to ‖g‖∞ (the free velocities and targets)
    tau: float = 0.5
    mu_prox: float = 1e-6
    rho_power: float = 0.2           # ρ₀ = √(L m) (L/m)^rho_power
    rho_power_factor: float = 0.05   # ρ ← ρ (L/m)^±rho_power_factor
    ratio_primal_dual: float = 10.0  # ρ moves when the residuals differ by more than this factor
    update_rule: str = "spectral"    # "spectral" (ρ ← ρ (L/m)^±factor) or "osqp" (ρ ← ρ √(r̂_p / r̂_d))
    relaxation: float = 1.0          # over-relaxation α ∈ (0, 2) of steps 3–4
    polish: bool = True              # active-set solves on the guessed contact modes
    ncp: bool = True                 # De Saxcé correction (Coulomb); False: convex relaxation
    warm_start: bool = True
    eig_iters: int = 20              # Lanczos steps for λ_max(G)
    keep_rho_power: bool = True      # reuse the last ρ exponent at the next solve
    scaling: float = 0.35            # p of the diagonal scaling S = diag(G)^(-p); 0: off, 0.5: Jacobi
    anderson: int = 10               # memory of the safeguarded Anderson acceleration (`anderson_step`); 0: off
    newton_rows: int = 96            # semismooth Newton polish (`newton_polish`) up to this many rows; 0: off
    newton_steps: int = 30           # its Newton steps per attempt (after the warm and the iterations' polishes)
    newton_warm: float = 100.0       # Newton from the warm start only if its polish left > newton_warm · tol

    def __setattr__(self, name, value):
        # every change counts, so a solver rewrites its compiled record (`ADMMSolver._write_params`)
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_version", self.__dict__.get("_version", 0) + 1)

    def check(self):
        if not (self.max_iter >= 1 and self.eps_abs >= 0 and self.eps_rel >= 0 and self.eps_abs + self.eps_rel > 0):
            raise ValueError("ADMM needs max_iter ≥ 1 and a positive tolerance")
        if not (0 < self.tau <= 1 and self.mu_prox > 0 and self.ratio_primal_dual > 1):
            raise ValueError("ADMM needs 0 < tau ≤ 1, mu_prox > 0, ratio_primal_dual > 1")
        if not 0 < self.relaxation < 2:
            raise ValueError(f"relaxation must be in (0, 2), got {self.relaxation}")
        if not 0 <= self.scaling <= 0.5:
            raise ValueError(f"scaling must be in [0, 0.5], got {self.scaling}")
        if isinstance(self.anderson, bool) or not isinstance(self.anderson, (int, np.integer)) or \
                not 0 <= self.anderson <= 50:
            raise ValueError(f"anderson must be an integer memory in [0, 50], got {self.anderson!r}")
        if not (isinstance(self.newton_rows, (int, np.integer)) and self.newton_rows >= 0 and
                isinstance(self.newton_steps, (int, np.integer)) and self.newton_steps >= 1):
            raise ValueError(f"newton_rows must be an integer ≥ 0 and newton_steps ≥ 1, got {self.newton_rows!r}, "
                             f"{self.newton_steps!r}")
        if not (isinstance(self.newton_warm, (int, float, np.integer, np.floating)) and self.newton_warm >= 1):
            raise ValueError(f"newton_warm must be a number ≥ 1, got {self.newton_warm!r}")
        if self.update_rule not in ("spectral", "osqp"):
            raise ValueError(f"update_rule must be 'spectral' or 'osqp', got {self.update_rule!r}")


@dataclass
class ADMMResult:
    """λ (m,), the contact velocities σ' (m,) it produces, and the solve's statistics:
    velocity_residual (m/s, see `ADMMSettings`) and complementarity max |λ_b · σ'_b| of the
    returned λ; primal_residual ‖x − y‖∞ (N·s) and dual_residual (m/s) of the last iteration."""
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
    velocity_residual: float = 0.0
    polish_solves: int = 0
    history: list = field(default_factory=list)
    warm_next: np.ndarray | None = None     # the next step's warm start (see `ADMMSolver.solve`)
    velocity_change: np.ndarray | None = None   # M⁻¹ Jᵀ λ (nv,): v's change by λ (matrix-free operators, else None)
    newton_steps: int = 0        # steps of the semismooth Newton polish (`newton_polish`), accepted or not


@njit(cache=True, _nrt=False)
def admm_update_kernel(kind, start, size, param, g, x, x_prev, y, z, trho, mu_prox, alpha, ncp, rhs, s):
    """Steps 3, 4 and 1 of the iteration, the residuals, and the next right-hand side.

    In: x = x⁺ from the damped solve, x_prev, y, z of the previous iterate. Over-relaxation
    (Eckstein & Bertsekas; OSQP's α): steps 3–4 use x̂ = α x⁺ + (1 − α) y. Out: y, z updated
    in place; rhs = −(g + s(z)) + τρ y + μ_prox x + z; returns (r_primal = ‖x⁺ − y⁺‖∞ (N·s),
    r_dual = ‖μ_prox Δx + τρ Δy‖∞ (m/s: the velocity mismatch G x⁺ + g + s − z⁺), max(‖x⁺‖∞,
    ‖y⁺‖∞), ‖z⁺‖∞). Allocates nothing: compiled without numba's reference counting."""
    m = x.shape[0]
    inv = 1.0 / trho
    for r in range(m):
        rhs[r] = alpha * x[r] + (1.0 - alpha) * y[r] - z[r] * inv     # x̂ − z/τρ (rhs as workspace)
    project_kernel(kind, start, size, param, rhs, s)   # s holds y⁺ for now
    rp, rd, xn, zn = 0.0, 0.0, 0.0, 0.0
    for r in range(m):
        dy = s[r] - y[r]
        dx = x[r] - x_prev[r]
        xh = alpha * x[r] + (1.0 - alpha) * y[r]
        y[r] = s[r]
        z[r] -= trho * (xh - y[r])
        rp = max(rp, abs(x[r] - y[r]))
        rd = max(rd, abs(mu_prox * dx + trho * dy))
        xn = max(xn, max(abs(x[r]), abs(y[r])))
        zn = max(zn, abs(z[r]))
    next_rhs_kernel(kind, start, param, g, x, y, z, trho, mu_prox, ncp, rhs, s)
    return rp, rd, xn, zn


@njit(cache=True, inline="always")
def next_rhs_kernel(kind, start, param, g, x, y, z, trho, mu_prox, ncp, rhs, s):
    """Step 1 and the next solve's right-hand side: s = s(z) (the De Saxcé term; 0 for the
    convex relaxation), rhs = −(g + s) + τρ y + μ_prox x + z (m,)."""
    if ncp:
        desaxce_kernel(kind, start, param, z, s)
    else:
        s[:] = 0.0
    for r in range(g.shape[0]):
        rhs[r] = -(g[r] + s[r]) + trho * y[r] + mu_prox * x[r] + z[r]


@njit(cache=True, inline="always")
def constraint_velocities_kernel(dense, geo, ws, dn, g, Rc, has_rc, lam, sigma):
    """σ = (G + R_c) λ + g (m/s) by one product with the operator."""
    op_matvec(dense, geo, ws, dn, lam, sigma)
    for r in range(g.shape[0]):
        sigma[r] += g[r] + (Rc[r] * lam[r] if has_rc else 0.0)


@njit(cache=True, _nrt=False)
def contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, lam, sigma, s):
    """σ' = (G + R_c) λ + g + s(σ) (m/s); returns the Coulomb residual of (λ, σ')
    (`velocity_residual_kernel`: max velocity error, max |λ·σ'|)."""
    constraint_velocities_kernel(dense, geo, ws, dn, g, Rc, has_rc, lam, sigma)
    if ncp:
        desaxce_kernel(kind, start, param, sigma, s)
        for r in range(g.shape[0]):
            sigma[r] += s[r]
    return velocity_residual_kernel(kind, start, size, param, lam, sigma)


@njit(cache=True, _nrt=False)
def newton_try(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, lam0, max_steps, tol, diag, cols,
               col_of, ncols, sw, lam_out, sigma_out, steps):
    """One attempt of the semismooth Newton polish (`newton_polish.ssn_kernel`, tol its target, diag
    ≈ diag G (m,) from `opstate.op_diag`) from λ0:
    σ0 = (G + R_c) λ0 + g into the workspace sw, the Newton solve into λ_out, and if it succeeded
    σ'_out and the Coulomb residual of (λ_out, σ'_out). Adds its Newton steps to steps[0];
    returns (ncols, success, (residual, complementarity))."""
    constraint_velocities_kernel(dense, geo, ws, dn, g, Rc, has_rc, lam0, sw)
    k, good, ncols = ssn_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sw, max_steps, tol,
                                diag, cols, col_of, ncols, lam_out)
    steps[0] += k
    r = (np.inf, np.inf)
    if good:
        r = contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, lam_out,
                                      sigma_out, sw)
    return ncols, good, r


@njit(cache=True)
def scale_kernel(kind, start, size, diag, p, sc):
    """Diagonal scaling sc (m,) = d^(−p) (d ≈ G_rr in 1/kg or 1/(kg m²)), one value per cone (its
    rows' mean d, so the cone keeps its shape: s(σ̃) = S s(σ)), one per row elsewhere; G̃ = S G S
    has the diagonal d^(1−2p) (1 for p = ½)."""
    dmax = 0.0
    for r in range(diag.shape[0]):
        dmax = max(dmax, diag[r])
    if not dmax > 0.0:
        sc[:] = 1.0
        return
    floor = 1e-12 * dmax
    for b in range(kind.shape[0]):
        s0, n = start[b], size[b]
        if kind[b] == CONE:
            d = (diag[s0] + diag[s0 + 1] + diag[s0 + 2]) / 3.0
            v = max(d, floor) ** (-p)
            for r in range(s0, s0 + n):
                sc[r] = v
        else:
            for r in range(s0, s0 + n):
                sc[r] = max(diag[r], floor) ** (-p)


@njit(cache=True, inline="always")
def _scaled_solve(dense, geo, fac, ws, dn, sc, rhs, b, out):
    """out = (G̃ + D̃)⁻¹ rhs for G̃ = S G S, through the operator's (G + S⁻¹ D̃ S⁻¹)⁻¹ (`opstate.op_refactor`)."""
    for r in range(rhs.shape[0]):
        b[r] = rhs[r] / sc[r]
    op_solve(dense, geo, fac, ws, dn, b, out)
    for r in range(rhs.shape[0]):
        out[r] /= sc[r]


@njit(cache=True, inline="always")
def boundary_slip(kind, start, param, lam, sigma):
    """The largest slip speed ‖σ_t‖ (m/s) of the cones whose impulse λ is on the boundary
    (`cones.on_edge`: sliding, as `active_set_kernel` classifies them), 0 if none."""
    slip = 0.0
    for b in range(kind.shape[0]):
        if kind[b] == CONE:
            s = start[b]
            n, nt = lam[s + 2], math.sqrt(lam[s] ** 2 + lam[s + 1] ** 2)
            if n > 0.0 and on_edge(param[b], nt, n):
                slip = max(slip, math.sqrt(sigma[s] ** 2 + sigma[s + 1] ** 2))
    return slip


@njit(cache=True, _nrt=False)
def active_set_kernel(kind, start, size, param, lam, sigma, fixed):
    """Contact modes guessed from impulses λ and velocities σ' (m,): fixed[r] = 1 on rows whose
    impulse is known (separated contacts and inactive limits: 0; sliding contacts: λ as is;
    joint friction at its bound: ±f), 0 on rows that must have zero velocity (sticking
    contacts, bilateral rows, active limits, joint friction inside its bound). A row at zero
    impulse that approaches (σ_n < 0) is taken as active."""
    for b in range(kind.shape[0]):
        s, k = start[b], kind[b]
        if k == CONE:
            mu = param[b]
            t1, t2, n = lam[s], lam[s + 1], lam[s + 2]
            nt = np.sqrt(t1 * t1 + t2 * t2)
            if n <= 0.0:
                f = 0 if sigma[s + 2] < 0.0 else 1
            elif on_edge(mu, nt, n):
                f = 1
            else:
                f = 0
            for r in range(s, s + 3):
                fixed[r] = f
        elif k == FREE:
            for r in range(s, s + size[b]):
                fixed[r] = 0
        elif k == ORTHANT:
            for r in range(s, s + size[b]):
                fixed[r] = 0 if (lam[r] > 0.0 or sigma[r] < 0.0) else 1
        else:
            f = param[b]
            at = (lam[s] >= f and sigma[s] <= 0.0) or (lam[s] <= -f and sigma[s] >= 0.0)
            fixed[s] = 1 if (at and f > 0.0) or f == 0.0 else 0


@njit(cache=True)
def polish_kernel(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, delta, big, lam, sigma,
                  fixed, lam_out, sigma_out):
    """One active-set correction (the polish of OSQP, Stellato et al. 2020, Sec. 4, taken from
    the impulses λ and their velocities σ = (G + R_c) λ + g without the De Saxcé term): with the
    modes of `active_set_kernel`, the rows E that must not move get the correction
    Δ_E = −A⁻¹ H A⁻¹ σ_E, H = G_EE + R_c, A = H + δ I (Newton's step −H⁻¹ σ_E on the range of H,
    filtered where H is singular: `cancel_velocities_into`), the fixed rows F keep their
    impulses (the operator's damped solve with damping δ on E and `big` on F, which decouples
    them). Starting from λ rather
    than from zero keeps λ's distribution over redundant rows (the four corners of a face):
    only the part of λ in the range of G moves, by the least-squares step that zeroes the
    velocities. δ (0.1 μ_prox) bounds the velocity error it leaves. Writes λ_out = Π_K(λ + Δ)
    and σ'_out; returns their Coulomb residual (`velocity_residual_kernel`)."""
    return polish_modes_into(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, delta, big, lam,
                             sigma, fixed, fixed, False, lam_out, sigma_out, np.empty((5, g.shape[0])))


@njit(cache=True, _nrt=False)
def polish_modes_into(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, delta, big, lam, sigma,
                      fixed, fixed_prev, factored, lam_out, sigma_out, work):
    """`polish_kernel` on the caller's workspace work (5, m), which factors only when needed: if
    `factored` (the operator's storage still holds the factorisation of the modes fixed_prev
    (m,), with the same δ, big and R_c) and the modes come out the same, that factorisation is
    used as it is (the matrix is the same one, so the result is the same to the bit). Compiled
    without numba's reference counting (the operator's tuples are passed and unpacked without
    an atomic pair per array: a fraction of the code to compile)."""
    m = g.shape[0]
    active_set_kernel(kind, start, size, param, lam, sigma, fixed)
    same = factored
    if same:
        for r in range(m):
            if fixed[r] != fixed_prev[r]:
                same = False
                break
    if not same:
        dvec = work[0]
        for r in range(m):
            dvec[r] = (big if fixed[r] else delta) + (Rc[r] if has_rc else 0.0)
        op_factor(dense, geo, fac, dn, 0.0, dvec, True)
    cancel_velocities_into(dense, geo, fac, ws, dn, kind, start, size, param, Rc, has_rc, delta, fixed, sigma, lam,
                           lam_out, work[2], work[3], work[4])
    return contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, lam_out,
                                     sigma_out, work[1])


@njit(cache=True, _nrt=False)
def cancel_velocities_into(dense, geo, fac, ws, dn, kind, start, size, param, Rc, has_rc, delta, fixed, vel, lam, out,
                           b, x, y):
    """out = Π_K(λ − Δ) with Δ_E = A⁻¹ H A⁻¹ vel_E on the rows E (fixed = 0), H = G_EE + R_c,
    A = H + δ I, and Δ = 0 on the fixed rows: the impulse change that cancels the velocities vel
    (m,) on E, on the factorisation `polish_kernel` sets up (damping δ on E, `big` on the fixed
    rows). Along an eigenvector of H with eigenvalue h the step is h / (h + δ)² times vel's
    component: 1/h (Newton's) where h ≫ δ, but → 0 rather than 1/δ where h → 0 (Tikhonov's
    filter twice). On a redundant set (a pile's contacts outnumber its dofs: rank 285 for 700
    sticking rows at rest) vel keeps a small part outside the range of H (targets of redundant
    rows that no motion meets exactly), which A⁻¹ alone amplifies by 1/δ: the plain correction
    A⁻¹ vel_E left 7–12 m/s on the resting robot pile's saved problems, this one 1e-7 to 2e-5.
    With rows fixed, H x is an operator product: the identity H x = b − δ x (x = A⁻¹ b) also
    carries the fixed rows' coupling G_EF x_F = O(‖G‖² ‖x‖ / big), which failed the polish of
    G1 lying on the floor where the product succeeds (tried: 1.2 → 1.4 iterations a step).
    Without fixed rows A = G + R_c + δ I exactly and the identity replaces the product.
    δ: the factorisation's damping on E (beyond R_c), units of G.
    b, x, y (m,) are workspace."""
    m = lam.shape[0]
    any_fixed = False
    for r in range(m):
        b[r] = 0.0 if fixed[r] else vel[r]
        any_fixed = any_fixed or fixed[r] != 0
    op_solve(dense, geo, fac, ws, dn, b, x)
    if any_fixed:            # H x = (G + R_c) x on E, x_F = 0: one operator product
        for r in range(m):
            if fixed[r]:
                x[r] = 0.0
        op_matvec(dense, geo, ws, dn, x, y)
        for r in range(m):
            b[r] = 0.0 if fixed[r] else y[r] + (Rc[r] * x[r] if has_rc else 0.0)
    else:                    # A x = b with A = G + R_c + δ I: H x = b − δ x
        for r in range(m):
            b[r] -= delta * x[r]
    op_solve(dense, geo, fac, ws, dn, b, x)
    for r in range(m):
        x[r] = lam[r] if fixed[r] else lam[r] - x[r]
    project_kernel(kind, start, size, param, x, out)


@njit(cache=True, _nrt=True)     # it allocates (stated: its callers may run without the runtime)
def warm_next_kernel(state, kind, start, size, param, Rc, has_rc, delta, fixed, jv, lam, out):
    """The next step's warm start after an accepted polish (λ, its rows `fixed`, its
    factorisation still in the operator): λ without the part that cancelled the incoming
    velocity jv = J v. Returns False (out untouched) if jv is not finite.

    g = J v + g_rest: J v is the velocity the bodies bring into the step, the residual a
    previous accepted λ left. The polish zeroes it along with the rest, so its λ carries a
    one-step correction; kept as the next warm start, that correction comes back as a velocity
    error of the same size with the other sign, and on a settled pile the warm start then fails
    the tolerance every second step (10-box pyramid: 47% of steps polished). The result balances
    g_rest alone: the impulse of the equilibrium the step settles into. The polish's change is
    linear in σ_E (`cancel_velocities_into`) and σ contains jv, so taking jv's share back out
    is the change that cancels −jv."""
    return warm_next_into(state, kind, start, size, param, Rc, has_rc, delta, fixed, jv, lam, out,
                          np.empty((4, lam.shape[0])))


@njit(cache=True, _nrt=False)
def warm_next_into(state, kind, start, size, param, Rc, has_rc, delta, fixed, jv, lam, out, work):
    """`warm_next_kernel` on the caller's workspace work (4, m)."""
    if not models.kinematics.all_finite(jv):
        return False
    vel = work[0]
    for r in range(jv.shape[0]):
        vel[r] = -jv[r]
    cancel_velocities_into(state.dense, state.geo, state.fac, state.ws, state.dn, kind, start, size, param, Rc,
                           has_rc, delta, fixed, vel, lam, out, work[1], work[2], work[3])
    return True


@njit(cache=True)
def spd_solve(M, b):
    """b ← M⁻¹ b for a small symmetric positive definite M (k, k) by Cholesky, in place (M's lower
    triangle is overwritten by the factor); returns False (b partly overwritten) if a pivot is
    not positive and finite."""
    k = b.shape[0]
    for j in range(k):
        d = M[j, j]
        for p in range(j):
            d -= M[j, p] * M[j, p]
        if not (d > 0.0 and d < np.inf):
            return False
        d = math.sqrt(d)
        M[j, j] = d
        for i in range(j + 1, k):
            a = M[i, j]
            for p in range(j):
                a -= M[i, p] * M[j, p]
            M[i, j] = a / d
    for i in range(k):                  # L w = b
        a = b[i]
        for p in range(i):
            a -= M[i, p] * b[p]
        b[i] = a / M[i, i]
    for i in range(k - 1, -1, -1):      # Lᵀ x = w
        a = b[i]
        for p in range(i + 1, k):
            a -= M[p, i] * b[p]
        b[i] = a / M[i, i]
    return True


@njit(cache=True)
def anderson_step(dF, dG, gram, count, f, gk, ridge, wmax, out):
    """Type-II Anderson mixing (Walker & Ni, "Anderson acceleration for fixed-point iterations",
    SIAM J. Numer. Anal. 2011, Eq. 2.3, with a Tikhonov ridge as in Zhang, O'Donoghue & Boyd,
    "Globally convergent type-I Anderson acceleration for nonsmooth fixed-point iterations", 2020).

    For the fixed-point map u ↦ T(u) with residual f = T(u) − u: rows 0..count−1 of dF, dG
    (mem, n) hold differences of successive residuals and images (ΔF_j = f_{j+1} − f_j, ΔG_j
    likewise, in any order), gram (mem, mem) their inner products ΔFᵀΔF;
    γ = argmin ‖f − ΔF γ‖² + ridge tr(ΔFᵀΔF) ‖γ‖², and out (n,) = T(u) − ΔG γ with gk = T(u).
    Returns False (out untouched) if the least squares is singular or a weight |γ_j| exceeds
    wmax (the mixing would extrapolate far from the iterates)."""
    return anderson_step_into(dF, dG, gram, count, f, gk, ridge, wmax, out, np.empty((count, count)), np.empty(count))


@njit(cache=True, _nrt=False)
def anderson_step_into(dF, dG, gram, count, f, gk, ridge, wmax, out, M, b):
    """`anderson_step` on the caller's workspaces M (count, count) and b (count,) (views of
    larger ones are fine), compiled without numba's reference counting."""
    n = f.shape[0]
    tr = 0.0
    for i in range(count):
        acc = 0.0
        for r in range(n):
            acc += dF[i, r] * f[r]
        b[i] = acc
        for j in range(count):
            M[i, j] = gram[i, j]
        tr += gram[i, i]
    if not (tr > 0.0 and tr < np.inf):
        return False
    for i in range(count):
        M[i, i] += ridge * tr
    if not spd_solve(M, b):
        return False
    gam = b
    for i in range(count):
        if not abs(gam[i]) <= wmax:
            return False
    for r in range(n):
        out[r] = gk[r]
    for i in range(count):
        gi = gam[i]
        for r in range(n):
            out[r] -= dG[i, r] * gi
    return True


@njit(cache=True, _nrt=False)
def anderson_update(kind, start, size, param, g, x, y, z, yk, zk, s, rhs, trho, mu_prox, ncp, dF, dG, gram, f, gk, fp,
                    gp, out, aM, ab, count, head, have_prev, last, fn_prev):
    """Safeguarded Anderson acceleration of the ADMM iteration (Zhang, O'Donoghue & Boyd 2020,
    Alg. 3's safeguard), in place after one iteration.

    The map: the iteration is a function of the projection's input t = x̂ − z/τρ alone
    (y = Π_K(t), z = τρ (y − t); the μ_prox x term aside), so the mixing runs on t (m,): t_k from
    yk, zk (the iterate before), T(t_k) from y, z (after). If the last point was a mixed one and
    its residual ‖T(t) − t‖ grew, it is rejected: t goes back to the plain image T(t_{k−1})
    saved then, and the memory is cleared. Else the differences are stored (memory
    dF.shape[0], circular; gram (mem, mem) their inner products, updated by one row) and t
    becomes the mixture of `anderson_step`. A new t gives y = Π_K(t) (in its cones by
    construction), z = τρ (y − t), s = s(z) and the next rhs = −(g + s) + τρ y + μ_prox x + z
    (x the last damped solve). aM (mem, mem), ab (mem,) are the least squares' workspaces; no
    allocation, compiled without numba's reference counting. Returns the new (count, head,
    have_prev, last, fn_prev)."""
    m = y.shape[0]
    mem = dF.shape[0]
    inv = 1.0 / trho
    fn = 0.0
    for r in range(m):
        gk[r] = y[r] - z[r] * inv
        f[r] = gk[r] - (yk[r] - zk[r] * inv)
        fn += f[r] * f[r]
    fn = math.sqrt(fn)
    t = out
    moved = False
    if last and fn > fn_prev:               # the mixed point did worse: back to the plain step
        for r in range(m):
            t[r] = gp[r]
        count, head, have_prev, last = 0, 0, False, False
        moved = True
    else:
        if have_prev:
            for r in range(m):
                dF[head, r] = f[r] - fp[r]
                dG[head, r] = gk[r] - gp[r]
            count = min(count + 1, mem)
            for j in range(count):          # the Gram matrix's new row and column
                acc = 0.0
                for r in range(m):
                    acc += dF[head, r] * dF[j, r]
                gram[head, j] = acc
                gram[j, head] = acc
            head = (head + 1) % mem
        for r in range(m):
            fp[r] = f[r]
            gp[r] = gk[r]
        fn_prev = fn
        have_prev = True
        last = False
        if count > 0 and anderson_step_into(dF, dG, gram, count, f, gk, 1e-10, 1e4, t, aM[:count, :count],
                                            ab[:count]):
            last = True
            moved = True
    if moved:
        project_kernel(kind, start, size, param, t, y)
        for r in range(m):
            z[r] = trho * (y[r] - t[r])
        next_rhs_kernel(kind, start, param, g, x, y, z, trho, mu_prox, ncp, rhs, s)
    return count, head, have_prev, last, fn_prev


AA_PAUSE = 10           # admm_kernel: plain iterations after Anderson's third rejection before it tries again
SLIP_POLISH = 100.0      # admm_kernel: no polish from a warm start slipping faster than this many tol

SolveParams = np.dtype([("max_iter", np.int64), ("ncp", np.bool_), ("osqp", np.bool_), ("record", np.bool_),
                        ("polish", np.bool_), ("eig_iters", np.int64), ("tau", np.float64), ("mu_prox", np.float64),
                        ("eps_abs", np.float64), ("eps_rel", np.float64), ("ratio", np.float64),
                        ("rho_power", np.float64), ("rho_factor", np.float64), ("L", np.float64),
                        ("rho_min", np.float64), ("relaxation", np.float64), ("scaling", np.float64),
                        ("L_scaled", np.float64),
                        ("anderson", np.int64), ("newton_rows", np.int64), ("newton_steps", np.int64),
                        ("newton_warm", np.float64)], align=True)
"""One solve's settings for the kernel, a record (the kernel takes a (1,) array of it: one
argument to unbox, where a named tuple of 18 fields costs about 1.5 µs a call): `ADMMSettings`'
names; eps_abs in m/s (the tolerance is eps_abs + eps_rel max|g|), L = λ_max(G), rho_min the
smallest damping μ_prox + min R_c, L_scaled λ_max(S G S) if known else 0, anderson the memory,
0: off; newton_rows, newton_steps the Newton polish's limits (0 rows: off), newton_warm its
threshold after the warm start's polish (in tolerances)."""
# float64 indices of the fields `ADMMSolver._write_params` writes at each solve (align=True keeps
# every float field on an 8-byte boundary)
_PRM_RHO_POWER, _PRM_L, _PRM_RHO_MIN, _PRM_L_SCALED = (SolveParams.fields[n][1] // 8
                                                      for n in ("rho_power", "L", "rho_min", "L_scaled"))
KernelOut = namedtuple("KernelOut", ["iterations", "converged", "primal_residual", "dual_residual",
                                     "velocity_residual", "complementarity", "rho", "rho_updates", "warm_started",
                                     "polish_solves", "eigenvalue_used", "polished", "velocity_change",
                                     "newton_steps", "warm_next"])


@njit(cache=True, _nrt=False)
def _kernel_out(state, lam, dv, it, conv, rp, rd, rv, rc, rho, nup, warm, npol, L_used, polished, n_newton, wn,
                work):
    """`KernelOut` of a solve whose impulses are λ, with dv (nv,) = M⁻¹ Jᵀ λ and velocity_change
    True on a matrix-free operator with a non-empty dv (`opstate.op_jt_minv`); after an accepted
    polish on a matrix-free operator, with the bodies' velocities v in wn (`_warm_next_into`),
    the next step's warm start too (warm_next 1; −1: v not finite; 0: not computed). work
    (5, m) is workspace."""
    if (it == 0 or polished) and not state.dense and dv.shape[0] > 0:
        # λ is 0, the warm start or an accepted polish: the test of the last of these took the
        # product G λ = J (M⁻¹ Jᵀ λ), which left M⁻¹ Jᵀ λ in the workspace's q̈
        # (`delassus_kernels.matvec_kernel`): the same numbers as a second sweep
        qdd = state.ws.qdd
        for i in range(dv.shape[0]):
            dv[i] = qdd[i] if warm or polished else 0.0
        has_dv = True
    else:
        has_dv = op_jt_minv(state.dense, state.geo, state.ws, lam, dv)
    wnext = _warm_next_into(state, lam, wn, work) if polished else 0     # after dv: it reuses the workspace
    return KernelOut(it, conv, rp, rd, rv, rc, rho, nup, warm, npol, L_used, polished, has_dv, n_newton, wnext)


@njit(cache=True, _nrt=False)
def _warm_next_into(state, lam, wn, work):
    """`warm_next_kernel` inside the solve: wn = (kind, start, size, param, Rc, has_rc, δ, fixed,
    v, out), v (nv,) the bodies' velocities at the step's start, J v on the operator's own rows
    (`opstate.state_j_apply`), work (5, m) workspace. Returns 1 (out holds the warm start), −1
    (v not finite), 0 (not computed: explicit operator, or no v)."""
    kind, start, size, param, Rc, has_rc, delta, fixed, v, out = wn
    if state.dense or v.shape[0] == 0:
        return 0
    jv = work[0]
    state_j_apply(state, v, jv)
    return 1 if warm_next_into(state, kind, start, size, param, Rc, has_rc, delta, fixed, jv, lam, out,
                               work[1:]) else -1


@njit(cache=True, inline="always")
def _uses_newton(sp):
    """Whether a solve with `SolveParams` sp tries the semismooth Newton polish (`newton_polish`):
    with polishes, on the NCP (it solves the Coulomb law, not its convex relaxation)."""
    return sp.polish and sp.ncp and sp.newton_rows > 0


@njit(cache=True, inline="always")
def _start_rho(sp):
    """(ρ, δ, big) of a solve's start from its `SolveParams` sp: ρ = √(L ρ_min) cond^power
    (cond = L / ρ_min), the polish's damping δ = 0.1 μ_prox and its `big`."""
    cond = max(sp.L / sp.rho_min, 1.0 + 1e-12)
    return math.sqrt(sp.L * sp.rho_min) * cond ** sp.rho_power, 0.1 * sp.mu_prox, 1e8 * max(sp.L, 1.0)


@njit(cache=True, _nrt=False)
def _admm_start(state, kind, start, size, param, g, Rc, has_rc, x0, use_x0, prm, lam, sigma, fixed, dv, v,
                warm_out, w):
    """`admm_kernel`'s start, which allocates nothing and runs without numba's reference counting
    (`models.scratch`): the checks of g, of λ = 0 and of the warm start, and the polish of the
    warm start's modes, on the workspace w (11, m): x, s, z, the projected warm start and its
    σ', σ, the polish's workspace (5). Returns (done, `KernelOut` if done, tol, the start's
    residual r0, the warm polish's (inf if it did not run), warm (the start is the warm start:
    x, z = w[3], w[4], else w[0], w[2]), polishes so far, slipping); s = w[1] holds s(σ') of
    the last σ' computed."""
    total, gmax = 0.0, 0.0
    for r in range(g.shape[0]):
        total += g[r]
        gmax = max(gmax, abs(g[r]))
    sp = prm[0]
    tol = sp.eps_abs + (sp.eps_rel * gmax if sp.eps_rel > 0.0 else 0.0)
    r_warm = (np.inf, 0.0)       # the warm polish's residual, if it ran and failed
    if not math.isfinite(total):
        return (True, KernelOut(-1, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0, False, 0, 0.0, False, False, 0, 0), tol,
                r_warm, r_warm, False, 0, False)
    dense, geo, fac, ws, dn = state.dense, state.geo, state.fac, state.ws, state.dn
    ncp, polish = sp.ncp, sp.polish
    rho, delta, big = _start_rho(sp)
    wn = (kind, start, size, param, Rc, has_rc, delta, fixed, v, warm_out)     # `_warm_next_into`'s
    m = g.shape[0]
    x, s, z, xw, zw, sw, pw = w[0], w[1], w[2], w[3], w[4], w[5], w[6:]
    x[:] = 0.0
    s[:] = 0.0
    copy_into(g, z)              # σ'(0) = g + s(g): the cold start's velocities
    if ncp:
        desaxce_kernel(kind, start, param, z, s)
        for r in range(m):
            z[r] += s[r]
    r0 = velocity_residual_kernel(kind, start, size, param, x, z)
    warm = False
    if use_x0:                   # the warm start projected on the cones
        project_kernel(kind, start, size, param, x0, xw)
        rw = contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, xw, zw, s)
        if rw[0] < r0[0]:
            x, z, warm, r0 = xw, zw, True, rw
    if r0[0] <= tol:             # the start already satisfies the contact law: no factorisation
        copy_into(x, lam)
        copy_into(z, sigma)
        return (True, _kernel_out(state, lam, dv, 0, True, 0.0, 0.0, r0[0], r0[1], rho, 0, warm, 0, 0.0, False, 0, wn,
                                  pw), tol, r0, r_warm, warm, 0, False)
    n_polish = 0
    newton = _uses_newton(sp)
    # the polish holds a sliding impulse fixed, so it cannot succeed when a warm start's sliding
    # contact slips (its final slip would have to point exactly against that impulse): the
    # Newton polish then goes first (G1 falling: 638 of 638 such polishes failed; a robot at
    # rest slips nowhere and its polish succeeds)
    slipping = newton and warm and boundary_slip(kind, start, param, x, z) > SLIP_POLISH * tol
    if polish and warm and not slipping:     # the previous step's contact modes, solved exactly
        n_polish += 1
        for r in range(m):       # σ = σ' − s(σ') (s depends on the tangential part only)
            sw[r] = z[r] - s[r] if ncp else z[r]
        rpol = polish_modes_into(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, delta, big,
                                 x, sw, fixed, fixed, False, lam, sigma, pw)      # `polish_kernel`
        if rpol[0] <= tol:
            return (True, _kernel_out(state, lam, dv, 1, True, 0.0, 0.0, rpol[0], rpol[1], rho, 0, warm, n_polish,
                                      0.0, True, 0, wn, pw), tol, r0, rpol, warm, n_polish, slipping)
        r_warm = rpol
    return (False, KernelOut(0, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0, False, 0, 0.0, False, False, 0, 0), tol, r0, r_warm,
            warm, n_polish, slipping)


@njit(cache=True)
def admm_kernel(state, kind, start, size, param, g, Rc, has_rc, x0, use_x0, prm, lam, sigma, fixed, hist, dv,
                v, warm_out):
    """One whole solve, the ADMM iterations of the module docstring on one operator, entirely
    compiled, and the velocity change of its λ: a `KernelOut` (`_kernel_out`), iterations −1
    (nothing computed) if g is not finite.

    state: the operator's `opstate.OperatorState`; its dense = 1 drives the explicit operator
    dn = (G, C, d, t), 0 the matrix-free one (geo, fac, ws) (`delassus_kernels`); the other
    operator's tuples are placeholders. prm: (1,) array of the `SolveParams` record. x0: warm start, kept if its velocity residual beats λ = 0.

    Scaling: the iterations run on λ̃ = S⁻¹ λ, G̃ = S G S, g̃ = S g with S = `scale_kernel`
    (p > 0), ρ from λ_max(G̃); the warm start, the polish, the stopping test and the returned λ,
    σ' are in physical units.

    Stopping (physical units): λ = y ∈ K always; the step stops when the contact velocities
    σ' = (G + R_c) λ + g + s(σ) are within tol (m/s) of velocities that satisfy the contact law
    exactly with λ (`velocity_residual_kernel`). That test costs one operator product, so it
    runs when the iteration's own velocity mismatch r_d is below tol and, unless L r_p is too,
    at most every 10 iterations, and every 25 iterations to keep the best point for the cap.
    Writes λ, σ', and in `fixed` (m,) the rows a polish held fixed; hist (max_iter, 4) gets
    (r_p, r_d, r_v, ρ) per iteration if recording (r_v = −1 where not evaluated; r_p, r_d
    scaled). The `KernelOut` holds: iterations, converged, r_p, r_d, r_v, r_c, ρ, ρ updates, warm
    started, polish solves, the λ_max the iterations used (0 if none ran), polished (λ is an
    accepted polish, whose factorisation is still in the operator), velocity_change (dv
    holds M⁻¹ Jᵀ λ) and warm_next (warm_out (m,) holds the next step's warm start, computed
    from the bodies' velocities v (nv,) at the step's start, `_warm_next_into`; v empty: not
    computed)."""
    m = g.shape[0]
    w = np.empty((11, m))        # x, s, z, the warm start and its σ', σ, the polish's workspace (5)
    done, out, tol, r0, r_warm, warm, n_polish, slipping = _admm_start(state, kind, start, size, param, g, Rc,
                                                                       has_rc, x0, use_x0, prm, lam, sigma, fixed,
                                                                       dv, v, warm_out, w)
    if done:
        return out
    sp = prm[0]
    newton = _uses_newton(sp)
    mem = sp.anderson
    fac, dn = state.fac, state.dn
    afac, adn = fac, dn          # the iterations' factorisation; with polishes, in storage of its own
    if sp.polish:                # (the polish's goes to the state's, where `warm_next_kernel` finds it)
        afac, adn = op_spare_factor(state.dense, fac, dn)
    wi, iw = np.empty((21, m)), np.empty((3, m), np.int64)
    aa_dF, aa_dG, aa_gram, aa_M, aa_b = np.empty((mem, m)), np.empty((mem, m)), np.empty((mem, mem)), \
        np.empty((mem, mem)), np.empty(mem)
    nw_rows = sp.newton_rows if newton else 0
    nw_G, param_c, blk = np.empty((nw_rows, m)), param.copy(), np.empty((state.geo[0].shape[0], 6, 6))
    return _admm_iterate(state, kind, start, size, param, g, Rc, has_rc, use_x0, prm, lam, sigma, fixed, hist, dv, v,
                         warm_out, w, wi, iw, aa_dF, aa_dG, aa_gram, aa_M, aa_b, nw_G, param_c, blk, afac, adn, tol,
                         r0, r_warm, warm, n_polish, slipping)


@njit(cache=True, _nrt=False)
def _admm_iterate(state, kind, start, size, param, g, Rc, has_rc, use_x0, prm, lam, sigma, fixed, hist, dv, v,
                  warm_out, w, wi, iw, aa_dF, aa_dG, aa_gram, aa_M, aa_b, nw_G, param_c, blk, afac, adn, tol, r0,
                  r_warm, warm, n_polish, slipping):
    """`admm_kernel` after `_admm_start` (its w, tol, r0, r_warm, warm, n_polish and slipping):
    the Newton polish from the warm start, the scaled ADMM iterations with their polishes, and
    the result. Allocates nothing and runs without numba's reference counting
    (`models.scratch`): the caller gives the workspaces wi (21, m), iw (3, m) int, Anderson's
    (mem, m) ×2, (mem, mem) ×2, (mem,), the Newton's columns nw_G (rows, m), a copy of param
    for the scaled bounds, blk (n, 6, 6) for the diagonal and the iterations' factor storage
    afac, adn (the state's own, or a spare one with polishes, `opstate.op_spare_factor`)."""
    dense, geo, fac, ws, dn = state.dense, state.geo, state.fac, state.ws, state.dn
    sp = prm[0]
    max_iter, ncp, osqp, record, polish, eig_iters = sp.max_iter, sp.ncp, sp.osqp, sp.record, sp.polish, \
        sp.eig_iters
    tau, mu_prox, ratio, rho_power, factor = sp.tau, sp.mu_prox, sp.ratio, sp.rho_power, sp.rho_factor
    L, rho_min, alpha, p_scale, L_scaled = sp.L, sp.rho_min, sp.relaxation, sp.scaling, sp.L_scaled
    cond = max(L / rho_min, 1.0 + 1e-12)
    rho, delta, big = _start_rho(sp)
    wn = (kind, start, size, param, Rc, has_rc, delta, fixed, v, warm_out)     # `_warm_next_into`'s
    s, xw, sw, pw = w[1], w[3], w[5], w[6:]
    x, z = (w[3], w[4]) if warm else (w[0], w[2])
    newton = _uses_newton(sp)
    m = g.shape[0]
    best_lam, best_sig, diag, xw_n, sc, g_sc, y, dvec, rhs, x_prev, xn, xw_p, yp, bw, yk, zk = \
        wi[0], wi[1], wi[2], wi[3], wi[4], wi[5], wi[6], wi[7], wi[8], wi[9], wi[10], wi[11], wi[12], wi[13], \
        wi[14], wi[15]
    aa_f, aa_g, aa_fp, aa_gp, aa_out = wi[16], wi[17], wi[18], wi[19], wi[20]
    fixed_prev, nw_col_of, nw_steps = iw[0], iw[1], iw[2, :1]
    copy_into(x, best_lam)           # safeguard: the best point seen so far
    copy_into(z, best_sig)
    best = r0
    if r_warm[0] < best[0]:
        copy_into(lam, best_lam)
        copy_into(sigma, best_sig)
        best = r_warm
    # the semismooth Newton polish (`newton_polish`): its columns of G kept for the whole solve
    n_newton_tries, nw_cols = 0, 0
    nw_steps[0] = 0
    nw_col_of[:] = -1
    have_diag = False            # ≈ diag G (`op_diag`), once per solve: Newton and scaling
    # Newton from the warm start's modes, unless the warm start or its polish came within
    # newton_warm tol of the law (modes right: a few iterations finish it for less than
    # the Newton's dense block costs; G1 lying: solver +9 µs a step without this test). Also
    # when λ = 0 beat the warm start: its largest error can exceed zero's (a falling robot's
    # impact) while its modes are mostly right (G1 falling: Newton from it succeeded on 105 of
    # 127 such solves, which otherwise ran 10 iterations first)
    if newton and use_x0 and (not warm or slipping or best[0] > sp.newton_warm * tol):
        n_newton_tries += 1
        op_diag(dense, geo, dn, diag, blk)
        have_diag = True
        nw_cols, good, rnw = newton_try(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, xw,
                                        sp.newton_steps, tol, diag, nw_G, nw_col_of, nw_cols, sw, xw_n, sigma,
                                        nw_steps)
        if good and rnw[0] <= tol:
            copy_into(xw_n, lam)
            return _kernel_out(state, lam, dv, 1, True, 0.0, 0.0, rnw[0], rnw[1], rho, 0, warm, n_polish, 0.0,
                               False, nw_steps[0], wn, pw)
        if good and rnw[0] < best[0]:
            copy_into(xw_n, best_lam)
            copy_into(sigma, best_sig)
            best = rnw
    # the scaled problem: sc, g̃ = S g, box bounds / S, ρ from λ_max(G̃)
    for r in range(m):
        sc[r] = 1.0
    scaled = p_scale > 0.0
    g_s, param_s = g, param
    if scaled:
        if not have_diag:
            op_diag(dense, geo, dn, diag, blk)
            have_diag = True
        scale_kernel(kind, start, size, diag, p_scale, sc)
        for r in range(m):
            g_sc[r] = g[r] * sc[r]
        g_s = g_sc
        copy_into(param, param_c)
        param_s = param_c
        for b in range(kind.shape[0]):
            if kind[b] == BOX:      # |λ̃| ≤ f / s
                param_s[b] = param[b] / sc[start[b]]
        if not L_scaled > 0.0:
            L_scaled = op_max_eigenvalue(dense, geo, ws, dn, sc, eig_iters)
        L = max(L_scaled, 1e-12)
        cond = max(L / rho_min, 1.0 + 1e-12)
        rho = math.sqrt(L * rho_min) * cond ** rho_power
        for r in range(m):
            x[r] /= sc[r]
            z[r] *= sc[r]
    step = cond ** factor
    sc_max = -np.inf             # max(sc), NaN if any is (np.max's; its library function compiles slowly)
    for r in range(m):
        if sc[r] != sc[r]:
            sc_max = sc[r]
            break
        sc_max = max(sc_max, sc[r])
    tol_s = tol * sc_max         # r_d is a scaled velocity: the physical test is triggered generously
    copy_into(x, y)
    trho = tau * rho
    op_refactor(dense, geo, afac, adn, Rc, has_rc, mu_prox + trho, sc, scaled, dvec)
    next_rhs_kernel(kind, start, param_s, g_s, x, y, z, trho, mu_prox, ncp, rhs, s)   # step 1 for the first iteration
    copy_into(x, x_prev)             # (yp: λ = S y, physical)
    gnorm = 0.0
    for r in range(m):
        gnorm = max(gnorm, abs(g_s[r]))
    next_polish = 10
    # Anderson acceleration (sp.anderson = memory) on the projection's input t (`anderson_update`)
    mem = sp.anderson
    aa_count, aa_head, aa_prev, aa_last, aa_fn_prev = 0, 0, False, False, 0.0
    aa_rejects, aa_resume = 0, 0  # after 3 rejections (modes switching) the plain iteration alone until aa_resume
    converged = False
    n_updates = 0
    rp = rd = rv = np.inf
    rc = 0.0
    next_check = 0
    it = 0
    for it in range(1, max_iter + 1):
        if mem > 0:
            copy_into(y, yk)
            copy_into(z, zk)
        _scaled_solve(dense, geo, afac, ws, adn, sc, rhs, bw, xn)
        rp, rd, xnorm, znorm = admm_update_kernel(kind, start, size, param_s, g_s, xn, x_prev, y, z, trho, mu_prox,
                                                  alpha, ncp, rhs, s)
        rv_it = -1.0
        if (rd <= tol_s and (L * rp <= tol_s or it >= next_check)) or it % 25 == 0:
            for r in range(m):
                yp[r] = sc[r] * y[r]
            rv, rc = contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, yp,
                                               sigma, sw)
            rv_it = rv
            if rv <= tol:
                converged = True
            elif rv < best[0]:
                copy_into(yp, best_lam)
                copy_into(sigma, best_sig)
                best = (rv, rc)
            next_check = it + 10
        if record:
            hist[it - 1, 0], hist[it - 1, 1], hist[it - 1, 2], hist[it - 1, 3] = rp, rd, rv_it, rho
        if converged:
            break
        if polish and it == next_polish and n_polish < 4:   # the iterate's modes, solved exactly
            n_polish += 1
            next_polish *= 2
            for r in range(m):
                yp[r] = sc[r] * y[r]
            constraint_velocities_kernel(dense, geo, ws, dn, g, Rc, has_rc, yp, sw)
            copy_into(fixed, fixed_prev)     # the modes the operator's storage is factored for (if n_polish > 1)
            rpol = polish_modes_into(dense, geo, fac, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, delta,
                                     big, yp, sw, fixed, fixed_prev, n_polish > 1, xw_p, sw, pw)
            if rpol[0] <= tol:
                copy_into(xw_p, lam)
                copy_into(sw, sigma)
                return _kernel_out(state, lam, dv, it, True, rp, rd, rpol[0], rpol[1], rho, n_updates, warm, n_polish,
                                   L, True, 0, wn, pw)
            if rpol[0] < best[0]:
                copy_into(xw_p, best_lam)
                copy_into(sw, best_sig)
                best = rpol
            if n_newton_tries < 4 and newton:          # the modes with sliding, by Newton
                n_newton_tries += 1
                if not have_diag:
                    op_diag(dense, geo, dn, diag, blk)
                    have_diag = True
                nw_cols, good, rnw = newton_try(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, yp,
                                                sp.newton_steps, tol, diag, nw_G, nw_col_of, nw_cols, sw, xw_p,
                                                sigma, nw_steps)
                if good and rnw[0] <= tol:
                    copy_into(xw_p, lam)
                    return _kernel_out(state, lam, dv, it, True, rp, rd, rnw[0], rnw[1], rho, n_updates, warm,
                                       n_polish, L, False, nw_steps[0], wn, pw)
                if good and rnw[0] < best[0]:
                    copy_into(xw_p, best_lam)
                    copy_into(sigma, best_sig)
                    best = rnw
        if mem > 0 and it >= aa_resume:
            was_mixed = aa_last
            aa_count, aa_head, aa_prev, aa_last, aa_fn_prev = anderson_update(
                kind, start, size, param_s, g_s, xn, y, z, yk, zk, s, rhs, trho, mu_prox, ncp, aa_dF, aa_dG, aa_gram, aa_f,
                aa_g, aa_fp, aa_gp, aa_out, aa_M, aa_b, aa_count, aa_head, aa_prev, aa_last, aa_fn_prev)
            if was_mixed and not aa_prev:     # the safeguard rejected the mixed point
                aa_rejects += 1
                if aa_rejects == 3:
                    aa_rejects, aa_resume = 0, it + AA_PAUSE
        copy_into(xn, x_prev)
        # ρ update when the residuals are unbalanced. osqp (Stellato et al. 2020, Sec. 5.2): the
        # residuals relative to their scales, ρ ← ρ √(r̂_p / r̂_d); spectral: ρ (L/m)^±factor
        new_rho = rho
        if osqp:
            q = (rp / max(xnorm, 1e-300)) / max(rd / max(znorm, gnorm, 1e-300), 1e-300)
            if q > ratio or q * ratio < 1.0:
                new_rho = rho * math.sqrt(q)
        elif rp > ratio * rd or rd > ratio * rp:
            new_rho = rho * step if rp > rd else rho / step
        new_rho = min(max(new_rho, rho_min), L)         # keep τρ within the spectrum's range
        if new_rho != rho:
            rho = new_rho
            new_trho = tau * rho
            for r in range(m):
                rhs[r] += (new_trho - trho) * y[r]      # rhs depends on τρ through τρ y
            trho = new_trho
            op_refactor(dense, geo, afac, adn, Rc, has_rc, mu_prox + trho, sc, scaled, dvec)
            n_updates += 1
            aa_count, aa_head, aa_prev, aa_last = 0, 0, False, False    # the map changed: forget it
    for r in range(m):
        yp[r] = sc[r] * y[r]
    if not converged:       # at the cap: the last iterate, unless the iteration diverged
        rv, rc = contact_velocities_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, ncp, yp,
                                           sigma, sw)
        if rv > 10.0 * r0[0] and best[0] < rv:      # worse than its start: the best point seen instead
            copy_into(best_lam, yp)
            copy_into(best_sig, sigma)
            rv, rc = best
    copy_into(yp, lam)
    return _kernel_out(state, lam, dv, it, converged, rp, rd, rv, rc, rho, n_updates, warm, n_polish, L, False,
                       nw_steps[0], wn, pw)


class _Matvec:
    """An operator offering only ``matvec`` (for `opstate.max_eigenvalue`)."""

    def __init__(self, matvec):
        self.matvec = matvec


def lanczos_max_eigenvalue(matvec, m, iters=20):
    """Largest eigenvalue of the PSD operator `matvec` (m × m): `opstate.op_max_eigenvalue`
    (the one Lanczos of the package) on its explicit matrix, built from m products."""
    return max_eigenvalue(_Matvec(matvec), m, iters)


_EMPTY = np.zeros(0)
_NO_HIST = np.zeros((0, 4))


def _checked_jv(jv, m, check_finite=True):
    """jv as a contiguous float array (m,); its finiteness is checked here, or (check_finite
    False) by `warm_next_kernel`."""
    jv = np.ascontiguousarray(jv, dtype=float)
    if jv.shape != (m,) or (check_finite and not math.isfinite(jv.sum())):
        raise ValueError(f"jv must be finite with shape ({m},), got shape {jv.shape}")
    return jv


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
        self._scaled_eig = (None, 0.0)
        self._params = np.zeros(1, SolveParams)    # the kernel's settings (`_write_params`)
        self._params_f = self._params.view(np.float64)   # its float fields by offset, written at each solve
        self._params_key = None                   # (settings, their version, record) the record holds
        self._params_vals = None                  # (ρ exponent, L, rho_min, L_scaled) the record holds

    def solve(self, op, g=None, cones: ConeSet = None, compliance=None, x0=None, record=False, max_eigenvalue=None,
              jv=None):
        """Solve the NCP (or its convex relaxation) for λ. ``solve(problem)``: a step's problem,
        an object with op, g, cones, compliance, x0, max_eigenvalue and jv (such as
        `simstep.problem.ContactProblem`). Otherwise op: the Delassus operator; g (m,) m/s;
        cones: the rows' `ConeSet`; compliance: R_c (m,) or None;
        x0: warm start (kept only if its residual beats λ = 0); max_eigenvalue: λ_max(G) if
        the caller has an estimate (else the operator's own estimate is used); jv: the part
        of g that is the bodies' incoming velocity J v (m,), or a function returning it, called
        only when it is needed. The result's warm_next is the warm start for the next time
        step: λ, or after an accepted polish and with jv given, λ without the correction of jv
        (`warm_next_kernel`)."""
        t0 = time.perf_counter()
        if g is None and cones is None:          # a step's problem
            p = op
            op, g, cones, compliance, x0, max_eigenvalue, jv = p.op, p.g, p.cones, p.compliance, p.x0, \
                p.max_eigenvalue, p.jv
        st = self.settings
        g = np.ascontiguousarray(g, dtype=float)
        m = g.shape[0]
        if cones.m != m:
            raise ValueError(f"cone set has {cones.m} rows, g has {m}")
        kind, start, size, param = cones.arrays()
        if m == 0:
            return ADMMResult(np.zeros(0), np.zeros(0), 0, True, 0.0, 0.0, 0.0, 0.0, 0, 0.0, False, 0.0)
        Rc = None if compliance is None or not np.any(compliance) else \
            np.broadcast_to(np.asarray(compliance, float), (m,)).copy()

        state = compiled_state(op, m)
        if max_eigenvalue is not None:
            L = float(max_eigenvalue)
        elif hasattr(op, "max_eigenvalue"):
            L = float(op.max_eigenvalue())
        else:         # an operator with only matvec: Lanczos on the explicit G its state holds
            L = float(state_max_eigenvalue(state, st.eig_iters))
        L = max(L, 1e-12)
        mm = st.mu_prox + (0.0 if Rc is None else float(Rc.min()))

        use_x0 = bool(st.warm_start and x0 is not None)
        x0 = np.ascontiguousarray(x0, dtype=float) if use_x0 else _EMPTY
        if use_x0 and x0.shape != (m,):
            raise ValueError(f"x0 must have shape ({m},), got {x0.shape}")
        if jv is not None and not callable(jv):
            jv = _checked_jv(jv, m)
        prm = self.params_for(L, m, mm, bool(record))
        lam, sigma, fixed = np.empty(m), np.empty(m), np.empty(m, np.int64)
        hist = np.empty((st.max_iter, 4)) if record else _NO_HIST
        model = getattr(op, "model", None)
        dv = np.empty(model.nv) if model is not None else _EMPTY
        rc, has_rc = (_EMPTY, False) if Rc is None else (Rc, True)     # the kernels' compliance arguments
        # the bodies' velocities behind a deferred jv (`simstep.problem.IncomingVelocity`): the
        # kernel then computes the next warm start itself (matrix-free operators)
        v = getattr(jv, "v", None) if callable(jv) else None
        v, warm_next = (_EMPTY, None) if v is None or v.shape[0] != dv.shape[0] else (v, np.empty(m))
        k = admm_kernel(state, kind, start, size, param, g, rc, has_rc, x0, use_x0, prm, lam, sigma, fixed, hist, dv,
                        v, _EMPTY if warm_next is None else warm_next)
        it, rho, L_used = k.iterations, k.rho, k.eigenvalue_used
        if it < 0:
            raise ValueError("g contains NaN or inf")
        if not (k.polished and jv is not None):
            warm_next = lam
        elif k.warm_next < 0:
            raise ValueError("the bodies' velocities behind jv must be finite")
        elif k.warm_next == 0:
            jv = _checked_jv(jv(), m, check_finite=False) if callable(jv) else jv
            warm_next = np.empty(m)
            if not warm_next_kernel(state, kind, start, size, param, rc, has_rc, 0.1 * self.settings.mu_prox, fixed,
                                    jv, lam, warm_next):
                raise ValueError(f"jv must be finite with shape ({m},)")
        self.keep_after(op, it, k.polish_solves, rho, L_used, L, m, mm)
        history = [tuple(h) for h in hist[:it]] if record else []
        # positional (a third of the keyword call's cost), in the fields' order
        return ADMMResult(lam, sigma, int(it), k.converged, k.primal_residual, k.dual_residual, k.complementarity,
                          rho, k.rho_updates, L, k.warm_started, time.perf_counter() - t0, k.velocity_residual,
                          k.polish_solves, history, warm_next, dv if k.velocity_change else None, k.newton_steps)

    def params_for(self, L, m, rho_min, record=False):
        """The kernel's `SolveParams` (`_write_params`) for a solve of m rows with λ_max(G) = L
        (> 0) and smallest damping rho_min, with the scaled λ_max kept from the last solve while
        the caller's L and m are the same (the caller caches L per constraint graph)."""
        L_scaled = self._scaled_eig[1] if self._scaled_eig[0] == (L, m) else 0.0
        return self._write_params(self.settings, record, L, rho_min, L_scaled)

    def keep_after(self, op, iterations, polish_solves, rho, L_used, L, m, rho_min):
        """After `admm_kernel` solved on op (the `params_for(L, m, rho_min)` solve): marks op
        factored when its storage holds the last polish's (or the iterations') factors, and keeps
        ρ's exponent and the scaled λ_max when iterations ran (L_used > 0)."""
        if not (iterations or polish_solves or L_used > 0):     # the warm start held: nothing to keep
            return
        st = self.settings
        if L_used > 0:
            power = self.rho_power
            if st.keep_rho_power:    # first: a step that fails here has changed nothing
                power = math.log(rho / math.sqrt(L_used * rho_min)) / math.log(max(L_used / rho_min, 1.0 + 1e-12))
            if st.scaling > 0:
                self._scaled_eig = ((L, m), L_used)
            self.rho_power = power
        if hasattr(op, "mark_factored") and (polish_solves > 0 if st.polish else iterations > 0):
            op.mark_factored()

    def _write_params(self, st, record, L, rho_min, L_scaled):
        """The kernel's `SolveParams` record (1,): the settings' fields rewritten only when the
        settings (or record) changed since the last solve (a record's assignment costs about
        0.7 µs), the solve's own numbers (ρ's exponent, L, rho_min, L_scaled) written through a
        float64 view of it when they changed (a robot at rest solves with the same numbers for
        thousands of steps)."""
        prm, f = self._params, self._params_f
        key = self._params_key
        if key is None or key[0] is not st or key[1] != st._version or key[2] != record:
            prm[0] = (int(st.max_iter), bool(st.ncp), st.update_rule == "osqp", record, bool(st.polish),
                      int(st.eig_iters), float(st.tau), float(st.mu_prox), float(st.eps_abs), float(st.eps_rel),
                      float(st.ratio_primal_dual), 0.0, float(st.rho_power_factor), 0.0, 0.0, float(st.relaxation),
                      float(st.scaling), 0.0, int(st.anderson), int(st.newton_rows), int(st.newton_steps),
                      float(st.newton_warm))
            self._params_key = (st, st._version, record)
            self._params_vals = None
        vals = (self.rho_power, L, rho_min, L_scaled)
        if vals != self._params_vals:
            f[_PRM_RHO_POWER], f[_PRM_L], f[_PRM_RHO_MIN], f[_PRM_L_SCALED] = vals
            self._params_vals = vals
        return prm

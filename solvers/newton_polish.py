"""Newton polishes with sliding contacts, for the ADMM (`admm.admm_kernel`).

The ADMM uses the semismooth Newton (`ssn_kernel`, at the end of this module): Newton's method on
the whole contact law written as the Alart–Curnier equations F(λ) = (λ − P(λ − ρσ)) / ρ = 0
(P_n = [x_n]₊, P_t = the projection of x_t on the disc of radius μ P_n), the kinks of P smoothed
by ε (max(t, 0) → (t + √(t² + 4ε²)) / 2) with ε shrinking with the exact residual, a damping
ν ∝ ‖F‖ on the Newton matrix (the redundant contacts' singular directions) and backtracking on
‖F‖. Every contact's mode follows from the iterate at every step, so several contacts can move
between sticking and sliding at once, and a contact creeping at a tiny slip speed is regular
(the smoothing keeps the Jacobian invertible at the stick–slip transition). On G1 lying on its
back (600 recorded steps, `g1_on_back`) the active-set Newton below cycles between two mode
guesses on creeping contacts (two contacts sliding at 3e-6 and 7.5e-6 m/s next to a sticking
one: each sticking guess leaves the cone, each sliding guess from γ = 0 stalls) and fails on
about half of its attempts; the semismooth Newton succeeds from the warm start on 596 of them
(ADMM iterations 40.4 → 1.5 mean, Newton steps 43.9 → 8.8 per solve).

The active-set Newton (`active_newton_kernel`, kept for reference and its tests):

The ADMM's own polish (`admm.polish_kernel`) holds sliding impulses fixed, so it cannot finish a
solve whose active contacts slide (a falling robot: mostly sliding feet, hands and knees). This
one solves the contact law on guessed modes exactly, sliding included, by Newton's method on
the small dense system of the active rows, then corrects the modes (an active-set loop):

  separated   λ_b = 0                                            (no unknowns)
  sticking    σ_b = 0                         unknowns λ_b (3)   (also bilateral rows, active limits)
  sliding     σ_t + γ w(θ) = 0, σ_n = 0       unknowns λ_n, θ, γ with λ_b = (μ λ_n w(θ), λ_n),
              w(θ) = (cos θ, sin θ): the friction force on the cone's boundary, the slip speed γ ≥ 0
              against it

with σ = (G + R_c) λ + g the constraint velocities (m/s) and G_AA formed column by column from
the operator's products (only for the active rows). Parametrising a sliding contact by its force
angle and slip speed keeps the equations regular at the stick–slip transition (γ → 0), where
the slip direction σ_t / ‖σ_t‖ would not be. Each Newton step solves the dense (n × n) system
with a damping δ on the sticking rows' impulses (δ λ: the rows of a redundant patch, the four
corners of a face, are singular otherwise; δ ≪ diag G) and backtracks on ‖F‖₂. Mode changes
after a round: a sticking contact whose λ leaves its cone slides (θ from λ_t, γ = 0), a sliding
one whose γ < 0 sticks, λ_n < 0 separates, a separated one that approaches (σ_n < 0) sticks, or
slides against its tangential velocity if that is faster than its approach; limits likewise.
The caller accepts the result only if its Coulomb residual (`cones.velocity_residual_kernel`,
the ADMM's stopping test) is within tolerance, so a wrong guess costs time, never accuracy.

Measured on 1000 contact problems recorded from G1 falling (`bench/bench_replay.py`), in the
ADMM (`admm.admm_kernel`): 87% of the solves end within one ADMM iteration, the ADMM
iterations per solve 39.9 → 3.1 mean (p95 80 → 10), 11.6 Newton steps per solve on average. On a redundant pile with
hundreds of active rows (three G1 on the box pyramid, tests/data/problem_robots_*.npz) it fails
from every start tried, even from an ADMM iterate within 1e-6 m/s of the law (the damped system
amplifies one wrong mode by 1/δ: residuals of 1e0 to 1e4 m/s); the ADMM's setting
``newton_rows`` (96) keeps it to small active sets.
"""
import math

import numpy as np
from numba import njit

from .cones import BOX, CONE, FREE, ORTHANT, project_kernel, velocity_residual_kernel
from .opstate import op_diag, op_matvec

SEP, STICK, SLIDE = 0, 1, 2


@njit(cache=True)
def guess_modes_kernel(kind, start, param, lam, sigma, mode):
    """Modes (SEP, STICK, SLIDE) (nb,) from impulses λ and velocities σ = (G + R_c) λ + g (m,):
    a cone with λ_n ≤ 0 is separated unless it approaches, on its boundary (within 1e-6) it
    slides, inside it sticks; a limit is active if λ > 0 or it approaches; free rows stick."""
    for b in range(kind.shape[0]):
        s, k = start[b], kind[b]
        if k == CONE:
            t = math.sqrt(lam[s] ** 2 + lam[s + 1] ** 2)
            n = lam[s + 2]
            if n <= 0.0:
                mode[b] = STICK if sigma[s + 2] < 0.0 else SEP
            elif t >= param[b] * n * (1.0 - 1e-6):
                mode[b] = SLIDE
            else:
                mode[b] = STICK
        elif k == ORTHANT:
            mode[b] = STICK if (lam[s] > 0.0 or sigma[s] < 0.0) else SEP
        else:
            mode[b] = STICK


@njit(cache=True)
def lu_factor(A, piv):
    """A = P L U in place (Gaussian elimination with partial pivoting, LAPACK's getrf layout), the
    row swaps in piv (n,); False if a pivot is zero or not finite."""
    n = A.shape[0]
    for k in range(n):
        p, best = k, abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                p, best = i, abs(A[i, k])
        piv[k] = p
        if not (best > 0.0 and best < np.inf):
            return False
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            f = A[i, k] * inv
            A[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return True


@njit(cache=True)
def lu_apply(A, piv, b):
    """b ← A⁻¹ b with the factors of `lu_factor`."""
    n = b.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc -= A[i, j] * b[j]
        b[i] = acc
    for i in range(n - 1, -1, -1):
        acc = b[i]
        for j in range(i + 1, n):
            acc -= A[i, j] * b[j]
        b[i] = acc / A[i, i]


@njit(cache=True)
def _set_sliding(kind, start, size, param, mode, theta, lam):
    """λ_b = (μ λ_n cos θ, μ λ_n sin θ, λ_n) on sliding cones, 0 on separated blocks."""
    for b in range(kind.shape[0]):
        s = start[b]
        if mode[b] == SEP:
            for r in range(s, s + size[b]):
                lam[r] = 0.0
        elif mode[b] == SLIDE:
            ln = lam[s + 2]
            lam[s] = param[b] * ln * math.cos(theta[b])
            lam[s + 1] = param[b] * ln * math.sin(theta[b])


@njit(cache=True)
def _residual(kind, start, param, mode, theta, gamma, rows, blk, GA, gA, lam, F):
    """F (n,) of the active equations at λ; returns ‖F‖₂. σ_A = G_AA λ_A + g_A."""
    n = rows.shape[0]
    for i in range(n):
        acc = gA[i]
        for j in range(n):
            acc += GA[i, j] * lam[rows[j]]
        F[i] = acc
    for i in range(n):
        b = blk[i]
        if mode[b] == SLIDE and rows[i] == start[b]:      # σ_t + γ w(θ) on the block's first two rows
            F[i] += gamma[b] * math.cos(theta[b])
            F[i + 1] += gamma[b] * math.sin(theta[b])
    acc = 0.0
    for i in range(n):
        acc += F[i] * F[i]
    return math.sqrt(acc)


@njit(cache=True)
def _jacobian(kind, start, param, mode, theta, gamma, rows, blk, GA, lam, delta, Jm):
    """∂F/∂u (n, n) of `_residual`'s equations in the unknowns u (λ rows; λ_n, θ, γ of a sliding
    cone), with the damping δ on the unknowns' own equations (δ λ: redundant rows)."""
    n = rows.shape[0]
    for i in range(n):
        for j in range(n):
            Jm[i, j] = 0.0
    for j in range(n):
        b = blk[j]
        r = rows[j]
        if mode[b] == SLIDE:
            if r != start[b]:
                continue
            mu, c, sn, ln = param[b], math.cos(theta[b]), math.sin(theta[b]), lam[r + 2]
            for i in range(n):     # unknowns λ_n (column j), θ (j + 1), γ (j + 2)
                Jm[i, j] = GA[i, j] * mu * c + GA[i, j + 1] * mu * sn + GA[i, j + 2]
                Jm[i, j + 1] = -GA[i, j] * mu * ln * sn + GA[i, j + 1] * mu * ln * c
            Jm[j, j + 1] += -gamma[b] * sn
            Jm[j + 1, j + 1] += gamma[b] * c
            Jm[j, j + 2] += c
            Jm[j + 1, j + 2] += sn
            Jm[j + 2, j] += delta
        else:
            for i in range(n):
                Jm[i, j] = GA[i, j]
            Jm[j, j] += delta


@njit(cache=True)
def _active_rows(kind, start, size, mode):
    """The rows of the blocks that are not separated (n,), and each row's block (n,)."""
    n = 0
    for b in range(kind.shape[0]):
        if mode[b] != SEP:
            n += size[b]
    rows, blk = np.empty(n, np.int64), np.empty(n, np.int64)
    i = 0
    for b in range(kind.shape[0]):
        if mode[b] != SEP:
            for r in range(start[b], start[b] + size[b]):
                rows[i], blk[i] = r, b
                i += 1
    return rows, blk


@njit(cache=True)
def _dense_block(dense, geo, ws, dn, g, Rc, has_rc, rows, cols, col_of, ncols):
    """(G_AA + R_c (n, n), g_A (n,), ncols) for the rows A: the columns of G + R_c not yet in cols
    (max_rows, m) computed by one operator product each; ncols −1 if cols is full."""
    m, n = g.shape[0], rows.shape[0]
    e = np.zeros(m)
    for i in range(n):
        r = rows[i]
        if col_of[r] < 0:
            if ncols == cols.shape[0]:
                return np.empty((0, 0)), np.empty(0), -1
            e[r] = 1.0
            op_matvec(dense, geo, ws, dn, e, cols[ncols])
            e[r] = 0.0
            if has_rc:
                cols[ncols, r] += Rc[r]
            col_of[r] = ncols
            ncols += 1
    GA, gA = np.empty((n, n)), np.empty(n)
    for i in range(n):
        gA[i] = g[rows[i]]
        for j in range(n):
            GA[i, j] = cols[col_of[rows[j]], rows[i]]
    return GA, gA, ncols


@njit(cache=True)
def _newton_round(kind, start, size, param, mode, theta, gamma, rows, blk, GA, gA, delta, max_steps, lam):
    """Newton's method on one round's equations (`_residual`), in place on λ, θ, γ: chord steps on
    a factored Jacobian (`_jacobian`, `lu_factor`), a new one when a step needed backtracking or
    did not cut ‖F‖₂ by 4; stops at ‖F‖₂ ≤ 1e-11 m/s (10⁻⁵ of the ADMM's default tolerance), after
    max_steps, or when even a fresh Jacobian does not halve ‖F‖₂ (the modes look wrong: back to
    `_update_modes`). Returns (steps, ‖F‖₂)."""
    m, nb, n = lam.shape[0], kind.shape[0], rows.shape[0]
    F, F_t, du = np.empty(n), np.empty(n), np.empty(n)
    Jm = np.empty((n, n))
    piv = np.empty(n, np.int64)
    lam_t, th_t, ga_t = lam.copy(), theta.copy(), gamma.copy()
    fn = _residual(kind, start, param, mode, theta, gamma, rows, blk, GA, gA, lam, F)
    steps = 0
    refactor = True
    while fn > 1e-11 and steps < max_steps:
        steps += 1
        fresh = refactor
        if refactor:
            _jacobian(kind, start, param, mode, theta, gamma, rows, blk, GA, lam, delta, Jm)
            if not lu_factor(Jm, piv):
                break
            refactor = False
        for i in range(n):
            du[i] = -F[i]
        lu_apply(Jm, piv, du)
        a = 1.0
        while True:                   # backtracking on ‖F‖₂
            for r in range(m):
                lam_t[r] = lam[r]
            for b in range(nb):
                th_t[b], ga_t[b] = theta[b], gamma[b]
            for j in range(n):
                b, r = blk[j], rows[j]
                if mode[b] != SLIDE:
                    lam_t[r] += a * du[j]
                elif r == start[b]:
                    lam_t[r + 2] += a * du[j]
                    th_t[b] += a * du[j + 1]
                    ga_t[b] += a * du[j + 2]
            _set_sliding(kind, start, size, param, mode, th_t, lam_t)
            f2 = _residual(kind, start, param, mode, th_t, ga_t, rows, blk, GA, gA, lam_t, F_t)
            if f2 <= (1.0 - 1e-4 * a) * fn or a < 1e-3:
                break
            a *= 0.5
        if a < 1.0 or f2 > 0.25 * fn:
            refactor = True
        for r in range(m):
            lam[r] = lam_t[r]
        for b in range(nb):
            theta[b], gamma[b] = th_t[b], ga_t[b]
        for i in range(n):
            F[i] = F_t[i]
        if fresh and f2 > 0.5 * fn and fn > 1e-10:
            fn = f2
            break                     # even a fresh Jacobian barely descends: these modes look wrong
        fn = f2
    return steps, fn


@njit(cache=True)
def _update_modes(kind, start, param, g, rows, cols, col_of, mode, theta, gamma, lam):
    """The module's mode corrections at the round's λ (σ of every row from the active columns);
    returns True if any mode changed."""
    m = g.shape[0]
    sig = g.copy()
    for j in range(rows.shape[0]):
        lj = lam[rows[j]]
        if lj != 0.0:
            cj = cols[col_of[rows[j]]]
            for r in range(m):
                sig[r] += cj[r] * lj
    changed = False
    for b in range(kind.shape[0]):
        s, old = start[b], mode[b]
        if kind[b] == CONE:
            mu, ln = param[b], lam[s + 2]
            if old == SEP:
                if sig[s + 2] < -1e-12:
                    vt = math.sqrt(sig[s] ** 2 + sig[s + 1] ** 2)
                    if vt > -sig[s + 2]:      # it approaches while moving along the surface: it slides
                        mode[b] = SLIDE
                        theta[b] = math.atan2(-sig[s + 1], -sig[s])
                        gamma[b] = vt
                    else:
                        mode[b] = STICK
            elif ln < 0.0:
                mode[b] = SEP
            elif old == STICK and math.sqrt(lam[s] ** 2 + lam[s + 1] ** 2) > mu * ln:
                mode[b] = SLIDE
                theta[b] = math.atan2(lam[s + 1], lam[s])
                gamma[b] = 0.0
            elif old == SLIDE and gamma[b] < 0.0:
                mode[b] = STICK
        elif kind[b] == ORTHANT:
            if old == STICK and lam[s] < 0.0:
                mode[b] = SEP
            elif old == SEP and sig[s] < -1e-12:
                mode[b] = STICK
        changed = changed or mode[b] != old
    return changed


# _nrt=True stated: it allocates (see `delassus_kernels.dense_factor`)
@njit(cache=True, _nrt=True)
def active_newton_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sigma0, max_steps,
                         delta, cols, col_of, ncols, lam):
    """The module's active-set Newton from impulses λ0 and their velocities σ0 = (G + R_c) λ0 + g
    (m,), on the operator's parts (`opstate`). Writes λ (m,), projected on the cones; returns
    (Newton steps taken, success, ncols): success = a round changed no mode and its equations
    hold to 1e-10 m/s; False also after 8 rounds, when a round has more active rows than cols can
    hold, or when the problem has joint friction rows (box cones; not handled). The columns of
    G + R_c computed so far are kept between calls on the same operator: cols (max_rows, m)
    holds ncols of them, col_of (m,) each row's column or −1."""
    m, nb = g.shape[0], kind.shape[0]
    for b in range(nb):
        if kind[b] == BOX:
            return 0, False, ncols
    mode = np.empty(nb, np.int64)
    guess_modes_kernel(kind, start, param, lam0, sigma0, mode)
    theta, gamma = np.zeros(nb), np.zeros(nb)
    lam[:] = lam0
    for b in range(nb):
        if mode[b] == SLIDE:
            s = start[b]
            theta[b] = math.atan2(lam[s + 1], lam[s])
            gamma[b] = math.sqrt(sigma0[s] ** 2 + sigma0[s + 1] ** 2)
    steps, ok = 0, False
    for rnd in range(8):
        _set_sliding(kind, start, size, param, mode, theta, lam)
        rows, blk = _active_rows(kind, start, size, mode)
        if rows.shape[0] > cols.shape[0]:
            break
        GA, gA, nc = _dense_block(dense, geo, ws, dn, g, Rc, has_rc, rows, cols, col_of, ncols)
        if nc < 0:
            return steps, False, ncols
        ncols = nc
        k, fn = _newton_round(kind, start, size, param, mode, theta, gamma, rows, blk, GA, gA, delta,
                              max_steps - steps, lam)
        steps += k
        if not _update_modes(kind, start, param, g, rows, cols, col_of, mode, theta, gamma, lam):
            ok = fn <= 1e-10
            break
        if steps >= max_steps:
            break
    _set_sliding(kind, start, size, param, mode, theta, lam)
    out = np.empty(m)
    project_kernel(kind, start, size, param, lam, out)
    lam[:] = out
    return steps, ok, ncols


# ---------------------------------------------------------------------------------------------
# Semismooth Newton on the whole contact law (Alart–Curnier, smoothed)
# ---------------------------------------------------------------------------------------------
SSN_KAPPA = 5.0        # ρ = κ / d_b on a block whose mean diagonal of G + R_c is d_b
SSN_EPS = 0.1          # smoothing ε = SSN_EPS κ ‖F₀‖ (never increased)
SSN_NU = 1e-4          # damping ν = SSN_NU ‖F_ε‖ (scaled) on the Newton matrix's diagonal
SSN_TIGHT = 1e-3       # the steps go on to a Coulomb residual of SSN_TIGHT tol ...
SSN_EXTRA = 2          # ... but at most SSN_EXTRA steps once within tol (the best point within tol is kept)


@njit(cache=True, inline="always")
def _phi(t, eps):
    """Smoothed max(t, 0) (Chen–Harker–Kanzow–Smale) and its derivative; exact for eps = 0."""
    if eps <= 0.0:
        return (t, 1.0) if t > 0.0 else (0.0, 0.0)
    sq = math.sqrt(t * t + 4.0 * eps * eps)
    return 0.5 * (t + sq), 0.5 * (1.0 + t / sq)


@njit(cache=True)
def _ssn_block(k, mu, nr, l, x, eps, P, D):
    """P(x) of one block (scaled): the Alart–Curnier point, smoothed by ε (exact for ε = 0), and
    its Jacobian D = ∂P/∂x (nr × nr, only for ε > 0). Cone (t1, t2, n): p_n = φ(x_n), radius
    r = μ p_n, P_t = r x_t / (r + φ(‖x_t‖ − r)); orthant rows: φ(x); free rows: x."""
    for i in range(nr):
        for j in range(nr):
            D[i, j] = 0.0
    if k == CONE:
        pn, dpn = _phi(x[2], eps)
        rad = mu * pn
        nx = math.sqrt(x[0] * x[0] + x[1] * x[1])
        if eps <= 0.0:
            if pn <= 0.0:
                P[0], P[1], P[2] = 0.0, 0.0, 0.0
            elif nx <= rad:
                P[0], P[1], P[2] = x[0], x[1], pn
            else:
                P[0], P[1], P[2] = x[0] * rad / nx, x[1] * rad / nx, pn
            return
        ph, dph = _phi(nx - rad, eps)
        q = rad + ph
        P[0], P[1], P[2] = rad * x[0] / q, rad * x[1] / q, pn
        u0, u1 = (x[0] / nx, x[1] / nx) if nx > 0.0 else (0.0, 0.0)
        c = rad / q
        w = rad / (q * q)
        # ∂P_t/∂x_t = c I − w x_t φ' uᵀ ; ∂P_t/∂r = x_t / q − w x_t (1 − φ'), r = μ φ(x_n)
        D[0, 0] = c - w * x[0] * dph * u0
        D[0, 1] = -w * x[0] * dph * u1
        D[1, 0] = -w * x[1] * dph * u0
        D[1, 1] = c - w * x[1] * dph * u1
        dr = mu * dpn
        D[0, 2] = (x[0] / q - w * x[0] * (1.0 - dph)) * dr
        D[1, 2] = (x[1] / q - w * x[1] * (1.0 - dph)) * dr
        D[2, 2] = dpn
    elif k == ORTHANT:
        for i in range(nr):
            P[i], D[i, i] = _phi(x[i], eps)
    else:
        for i in range(nr):
            P[i], D[i, i] = x[i], 1.0


@njit(cache=True)
def _ssn_residual(kind, start, size, param, kappa, eps, lt, st, F):
    """F_ε (m,) = (λ̃ − P_ε(λ̃ − κ σ̃)) / κ on every block, in scaled velocities (free rows: σ̃);
    returns ‖F_ε‖₂."""
    x, P, D = np.empty(3), np.empty(3), np.empty((3, 3))
    acc = 0.0
    for b in range(kind.shape[0]):
        s, nr, k = start[b], size[b], kind[b]
        if k == FREE:
            for i in range(nr):
                F[s + i] = st[s + i]
                acc += F[s + i] ** 2
            continue
        for i0 in range(0, nr, 3 if k == CONE else 1):
            w = 3 if k == CONE else 1
            for i in range(w):
                x[i] = lt[s + i0 + i] - kappa * st[s + i0 + i]
            _ssn_block(k, param[b], w, lt[s + i0:s + i0 + w], x, eps, P, D)
            for i in range(w):
                F[s + i0 + i] = (lt[s + i0 + i] - P[i]) / kappa
                acc += F[s + i0 + i] ** 2
    return math.sqrt(acc)


@njit(cache=True)
def _ssn_fetch(dense, geo, ws, dn, Rc, has_rc, kind, start, size, inA, cols, col_of, ncols):
    """The columns of G + R_c of the working set's rows not yet in cols; ncols, or −1 if full."""
    m = col_of.shape[0]
    e = np.zeros(m)
    for b in range(kind.shape[0]):
        if not inA[b]:
            continue
        for r in range(start[b], start[b] + size[b]):
            if col_of[r] < 0:
                if ncols == cols.shape[0]:
                    return -1
                e[r] = 1.0
                op_matvec(dense, geo, ws, dn, e, cols[ncols])
                e[r] = 0.0
                if has_rc:
                    cols[ncols, r] += Rc[r]
                col_of[r] = ncols
                ncols += 1
    return ncols


# _nrt=True stated: it allocates (see `delassus_kernels.dense_factor`)
@njit(cache=True, _nrt=True)
def ssn_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sigma0, max_steps, tol,
               cols, col_of, ncols, lam):
    """Semismooth Newton on the whole contact law from impulses λ0 (m,) and σ0 = (G + R_c) λ0 + g:
    the Alart–Curnier equations F(λ) = (λ − P(λ − ρσ)) / ρ = 0, per cone P_n = [x_n]₊,
    P_t = Π_{‖·‖ ≤ μ P_n}(x_t), x = λ − ρσ, on the variables scaled by S = d_b^(−½) per block (d_b the
    block's mean diagonal of G + R_c, `opstate.op_diag`) and ρ = κ = SSN_KAPPA in those units.
    The projections' kinks are smoothed by ε (`_phi`: max(t, 0) → (t + √(t² + 4ε²)) / 2, so a
    sticking contact slips by O(ε) and the Jacobian stays regular at the stick–slip and contact
    transitions), ε = SSN_EPS κ ‖F₀‖ at most (F₀ the exact residual), shrinking with it. Each step
    solves (J + ν I) d = −F_ε on the working set's rows (blocks not clearly separated:
    x_n > −10 ε or λ ≠ 0; the others held at λ = 0), ν = SSN_NU ‖F_ε‖ (the redundant contacts'
    singular directions), then backtracks on ‖F_ε‖₂. The contact modes follow from the iterate
    at every step, all contacts at once. After each step the exact point P (separated blocks
    exactly 0, projected on the cones) is tested with the Coulomb residual
    (`cones.velocity_residual_kernel`, De Saxcé term included): the steps stop at SSN_TIGHT tol,
    or SSN_EXTRA steps after the first point within tol; λ gets the best point, success if it
    is within tol (the caller checks it again). Not tried (False) with box rows or when the
    working set has more rows than cols holds. Columns of G + R_c come one operator product each
    into cols, as for `active_newton_kernel`. Returns (Newton steps, success, ncols)."""
    m, nb = g.shape[0], kind.shape[0]
    for b in range(nb):
        if kind[b] == BOX:
            return 0, False, ncols
    kappa, ec = SSN_KAPPA, SSN_EPS
    d = np.empty(m)
    op_diag(dense, geo, dn, d)
    sc = np.empty(m)             # S: λ̃ = λ / S, σ̃ = S σ
    for b in range(nb):
        acc = 0.0
        for r in range(start[b], start[b] + size[b]):
            acc += d[r] + (Rc[r] if has_rc else 0.0)
        v = acc / size[b]
        v = 1.0 / math.sqrt(v) if v > 0.0 else 1.0
        for r in range(start[b], start[b] + size[b]):
            sc[r] = v
    lt, st = np.empty(m), np.empty(m)
    for r in range(m):
        lt[r] = lam0[r] / sc[r]
        st[r] = sigma0[r] * sc[r]
    F = np.empty(m)
    F0 = np.empty(m)
    eps = ec * kappa * _ssn_residual(kind, start, size, param, kappa, 0.0, lt, st, F0)
    inA = np.zeros(nb, np.bool_)
    x, P, D = np.empty(3), np.empty(3), np.empty((3, 3))
    Pl, Ps, sig_p = np.empty(m), np.empty(m), np.empty(m)
    lt_t, st_t, Gd, dfull = np.empty(m), np.empty(m), np.empty(m), np.zeros(m)
    steps = 0
    need = np.zeros(nb, np.bool_)
    best, best_step = np.inf, 0
    while True:
        # the working set; blocks clearly separated are set to λ = 0 (after fetching their columns)
        for b in range(nb):
            s, nr, k = start[b], size[b], kind[b]
            nz = False
            for r in range(s, s + nr):
                nz = nz or lt[r] != 0.0
            if k == FREE:
                inA[b] = True
            elif k == CONE:
                inA[b] = lt[s + 2] - kappa * st[s + 2] > -10.0 * eps
            else:
                act = False
                for r in range(s, s + nr):
                    act = act or lt[r] - kappa * st[r] > -10.0 * eps
                inA[b] = act
            need[b] = inA[b] or nz
        nneed = 0
        for b in range(nb):
            if need[b]:
                nneed += size[b]
        if nneed > cols.shape[0]:     # too many rows for the dense block (`newton_rows`): not tried
            return steps, best <= tol, ncols
        ncols_new = _ssn_fetch(dense, geo, ws, dn, Rc, has_rc, kind, start, size, need, cols, col_of, ncols)
        if ncols_new < 0:
            return steps, False, ncols
        ncols = ncols_new
        for b in range(nb):
            s, nr = start[b], size[b]
            if not inA[b] and need[b]:
                for r in range(s, s + nr):
                    if lt[r] != 0.0:
                        c = cols[col_of[r]]
                        dl = -lt[r] * sc[r]
                        for i in range(m):
                            st[i] += c[i] * dl * sc[i]
                        lt[r] = 0.0
        rows = np.empty(m, np.int64)
        n = 0
        for b in range(nb):
            if inA[b]:
                for r in range(start[b], start[b] + size[b]):
                    rows[n] = r
                    n += 1
        # the exact point P and its Coulomb residual
        for b in range(nb):
            s, nr, k = start[b], size[b], kind[b]
            w = 3 if k == CONE else 1
            for i0 in range(0, nr, w):
                for i in range(w):
                    x[i] = lt[s + i0 + i] - kappa * st[s + i0 + i]
                _ssn_block(k, param[b], w, lt[s + i0:s + i0 + w], x, 0.0, P, D)
                for i in range(w):
                    Pl[s + i0 + i] = P[i] * sc[s + i0 + i]
        Ps[:] = Pl
        project_kernel(kind, start, size, param, Ps, Pl)
        okP = True
        for r in range(m):
            sig_p[r] = st[r] / sc[r]
        for j in range(n):
            r = rows[j]
            dl = Pl[r] - lt[r] * sc[r]
            if dl != 0.0:
                c = cols[col_of[r]]
                for i in range(m):
                    sig_p[i] += c[i] * dl
        for b in range(nb):       # a nonzero P outside the working set has no column: not testable
            if not inA[b]:
                for r in range(start[b], start[b] + size[b]):
                    okP = okP and Pl[r] == 0.0
        if okP:
            for b in range(nb):   # σ' with the De Saxcé term
                if kind[b] == CONE:
                    s = start[b]
                    Ps[s], Ps[s + 1] = sig_p[s], sig_p[s + 1]
                    Ps[s + 2] = sig_p[s + 2] + param[b] * math.sqrt(sig_p[s] ** 2 + sig_p[s + 1] ** 2)
                else:
                    for r in range(start[b], start[b] + size[b]):
                        Ps[r] = sig_p[r]
            rv, _ = velocity_residual_kernel(kind, start, size, param, Pl, Ps)
            if rv < best:
                if best > tol:
                    best_step = steps
                best = rv
                lam[:] = Pl
            if rv <= SSN_TIGHT * tol:
                return steps, True, ncols
        if steps >= max_steps or (best <= tol and steps >= best_step + SSN_EXTRA):
            break
        steps += 1
        # F_ε and its Jacobian on the working set: J = A + B G̃ per block (A = ∂F/∂λ̃, B = ∂F/∂σ̃)
        fn = _ssn_residual(kind, start, size, param, kappa, eps, lt, st, F)
        Jm = np.zeros((n, n))
        du = np.empty(n)
        pos = np.full(m, -1, np.int64)
        for j in range(n):
            pos[rows[j]] = j
        gmax = 0.0
        for j in range(n):
            r = rows[j]
            gmax = max(gmax, cols[col_of[r], r] * sc[r] * sc[r])
        for b in range(nb):
            if not inA[b]:
                continue
            s, nr, k = start[b], size[b], kind[b]
            w = 3 if k == CONE else 1
            for i0 in range(0, nr, w):
                for i in range(w):
                    x[i] = lt[s + i0 + i] - kappa * st[s + i0 + i]
                _ssn_block(k, param[b], w, lt[s + i0:s + i0 + w], x, eps, P, D)
                for i in range(w):
                    ri = pos[s + i0 + i]
                    # A = (I − D) / κ, B = D (free rows: A = 0, B = I)
                    for kk in range(w):
                        a_ik = ((1.0 if i == kk else 0.0) - D[i, kk]) / kappa if k != FREE else 0.0
                        Jm[ri, pos[s + i0 + kk]] += a_ik
                        bik = D[i, kk]
                        if bik != 0.0:
                            rk = s + i0 + kk       # σ̃_rk = Σ_j G̃[rk, rows_j] λ̃_j
                            for j in range(n):
                                rj = rows[j]
                                Jm[ri, j] += bik * cols[col_of[rj], rk] * sc[rk] * sc[rj]
        nu = SSN_NU * max(gmax, 1e-300) * fn
        for j in range(n):
            Jm[j, j] += nu
            du[j] = -F[rows[j]]
        piv = np.empty(n, np.int64)
        if not lu_factor(Jm, piv):
            break
        lu_apply(Jm, piv, du)
        for i in range(m):        # G̃ d on every row
            Gd[i] = 0.0
        for j in range(n):
            rj = rows[j]
            dj = du[j] * sc[rj]
            if dj != 0.0:
                c = cols[col_of[rj]]
                for i in range(m):
                    Gd[i] += c[i] * dj
        for i in range(m):
            Gd[i] *= sc[i]
        a = 1.0
        while True:               # backtracking on ‖F_ε‖₂
            lt_t[:] = lt
            for j in range(n):
                lt_t[rows[j]] += a * du[j]
            for i in range(m):
                st_t[i] = st[i] + a * Gd[i]
            f2 = _ssn_residual(kind, start, size, param, kappa, eps, lt_t, st_t, F)
            if f2 <= (1.0 - 1e-4 * a) * fn or a < 1e-4:
                break
            a *= 0.5
        lt[:] = lt_t
        st[:] = st_t
        eps = min(eps, ec * kappa * _ssn_residual(kind, start, size, param, kappa, 0.0, lt, st, F0))
    return steps, best <= tol, ncols

"""Active-set Newton polish with sliding contacts, for the ADMM (`admm.admm_kernel`).

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

from .cones import BOX, CONE, ORTHANT, project_kernel
from .opstate import op_matvec

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

"""Linear complementarity problems: Lemke's complementary pivoting and the mixed LCP.

    LCP(M, q):  find z ≥ 0 with w = M z + q ≥ 0 and zᵀ w = 0                  (paper 004 Eq. 9)
    mixed LCP:  the first `n_free` rows are equalities (w_f = 0, z_f free), the others as above

`lemke(M, q)` is Lemke's complementary pivoting method (covering vector e = 1, artificial
variable z₀) on the tableau w − M z − e z₀ = q, with the lexicographic minimum-ratio rule
(Cottle, Pang & Stone, "The Linear Complementarity Problem", Sec. 4.4 and 4.9): ties in the
ratio test are broken by the rows of B⁻¹ divided by the pivot column, which is the
perturbation q(ε) = q + (ε, ε², …, εⁿ) worked out symbolically, so degenerate problems cannot
cycle. When z₀ can leave it does. Lemke solves every LCP whose matrix is a P-matrix, positive
semi-definite with a feasible q, or copositive-plus with a feasible q (the Stewart–Trinkle
friction matrices of paper 004 Eq. 41/53 are of the last kind); otherwise it may stop on a
secondary ray, which raises `LCPRayTermination`.

`solve_mixed_lcp(M, q, n_free)` eliminates the equality rows first (Gaussian elimination with
complete pivoting on M_ff; rows of M_ff that are linearly dependent on others are dropped
when q's equality is consistent, e.g. a hinge written as two point closures, 6 rows of rank 5),
(Cholesky with diagonal pivoting when M_ff is symmetric, as a Delassus block is), then solves
the Schur-complement LCP with `lemke` and recovers z_f.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
from numba import njit

OK, RAY, MAX_PIVOTS, SINGULAR = 0, 1, 2, 3


class LCPRayTermination(RuntimeError):
    """Lemke's method ended on a secondary ray: no entering column has a positive entry. The
    LCP has no solution, or its matrix is outside the class Lemke's method processes."""


class LCPResult(NamedTuple):
    """Solution of an LCP: z (n,), w = M z + q (n,), pivots (number of Lemke pivots)."""
    z: np.ndarray
    w: np.ndarray
    pivots: int


class MixedLCPResult(NamedTuple):
    """Solution of a mixed LCP: z (n,) (the first n_free entries free), w = M z + q (n,) (its
    first n_free entries ≈ 0), pivots (Lemke pivots on the Schur complement), rank (independent
    equality rows kept; the dropped ones have z = 0)."""
    z: np.ndarray
    w: np.ndarray
    pivots: int
    rank: int


# ---------------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always")
def _column(M, v, n, d):
    """Tableau column of variable v (0..n−1: w_v, n..2n−1: z_{v−n}, 2n: z₀) of [I, −M, −e]."""
    if v < n:
        for i in range(n):
            d[i] = 0.0
        d[v] = 1.0
    elif v < 2 * n:
        for i in range(n):
            d[i] = -M[i, v - n]
    else:
        for i in range(n):
            d[i] = -1.0


@njit(cache=True)
def _lexmin_row(xb, Binv, s, cand, ncand, z0_row, tol):
    """Row of the lexicographic minimum of (x̄_i, B⁻¹_i·) s_i over the candidate rows (the
    perturbed ratio test, Cottle–Pang–Stone Sec. 4.9); z₀'s row wins as soon as it ties."""
    n = Binv.shape[0]
    for k in range(-1, n):
        best = np.inf
        for c in range(ncand):
            i = cand[c]
            v = (xb[i] if k < 0 else Binv[i, k]) * s[i]
            if v < best:
                best = v
        scale = 1.0
        for c in range(ncand):
            i = cand[c]
            a = abs((xb[i] if k < 0 else Binv[i, k]) * s[i])
            if a > scale:
                scale = a
        keep = 0
        for c in range(ncand):
            i = cand[c]
            v = (xb[i] if k < 0 else Binv[i, k]) * s[i]
            if v <= best + tol * scale:
                cand[keep] = i
                keep += 1
        ncand = keep
        if ncand == 1:
            return cand[0]
        for c in range(ncand):
            if cand[c] == z0_row:
                return z0_row
    return cand[0]


@njit(cache=True)
def _pivot(Binv, xb, d, r):
    """Exchange row r's basic variable for the column d = B⁻¹ a (Gauss–Jordan on B⁻¹ and x̄)."""
    n = xb.shape[0]
    p = d[r]
    for j in range(n):
        Binv[r, j] /= p
    xb[r] /= p
    for i in range(n):
        if i == r or d[i] == 0.0:
            continue
        f = d[i]
        for j in range(n):
            Binv[i, j] -= f * Binv[r, j]
        xb[i] -= f * xb[r]


@njit(cache=True)
def lemke_kernel(M, q, max_pivots, tol, z):
    """Lemke's method with the lexicographic rule (module docstring) on LCP(M, q); writes z (n,).
    Returns (status, pivots): status OK, RAY (secondary ray), MAX_PIVOTS or SINGULAR (the final
    basis could not be refactored). O(n²) per pivot on the explicit basis inverse."""
    n = q.shape[0]
    z[:] = 0.0
    if n == 0:
        return OK, 0
    qmin = q.min()
    if qmin >= 0.0:
        return OK, 0
    basis = np.arange(n)
    Binv = np.eye(n)
    xb = q.copy()
    d = np.empty(n)
    s = np.ones(n)
    cand = np.arange(n)
    # z₀ enters at max(−q): the leaving row is the lexicographic minimum of (q_i, e_i)
    for i in range(n):
        cand[i] = i
    nc = 0
    for i in range(n):          # ties relative to |q_min|: only rows as negative as the minimum
        if q[i] <= qmin + tol * abs(qmin):
            cand[nc] = i
            nc += 1
    r = _lexmin_row(xb, Binv, s, cand, nc, -1, tol)
    _column(M, 2 * n, n, d)
    _pivot(Binv, xb, d, r)
    leaving = basis[r]
    basis[r] = 2 * n
    z0_row = r
    pivots = 1
    status = MAX_PIVOTS
    while pivots < max_pivots:
        entering = leaving + n if leaving < n else leaving - n       # the complement of the leaver
        _column(M, entering, n, d)
        dd = d.copy()
        for i in range(n):                  # d = B⁻¹ a
            acc = 0.0
            for j in range(n):
                acc += Binv[i, j] * dd[j]
            d[i] = acc
        dmax = np.abs(d).max()
        nc = 0
        for i in range(n):
            if d[i] > tol * max(1.0, dmax):
                s[i] = 1.0 / d[i]
                cand[nc] = i
                nc += 1
        if nc == 0:
            status = RAY
            break
        r = _lexmin_row(xb, Binv, s, cand, nc, z0_row, tol)
        _pivot(Binv, xb, d, r)
        leaving = basis[r]
        basis[r] = entering
        pivots += 1
        if leaving == 2 * n:
            status = OK
            break
    if status != OK:
        for i in range(n):
            if n <= basis[i] < 2 * n:
                z[basis[i] - n] = max(xb[i], 0.0)
        return status, pivots
    # the final basis refactored from M (removes the round-off of the pivot updates)
    B = np.zeros((n, n))
    for i in range(n):
        _column(M, basis[i], n, d)
        B[:, i] = d
    try:
        x = np.linalg.solve(B, q)
    except Exception:  # noqa: BLE001 (numba raises a generic error on a singular matrix)
        x = xb
    for i in range(n):
        if n <= basis[i] < 2 * n:
            z[basis[i] - n] = max(x[i], 0.0)
    return OK, pivots


@njit(cache=True)
def eliminate_free_kernel(M, q, nf, tol, perm, Ms, qs, Xc, xq):
    """Gaussian elimination with complete pivoting of the free block M_ff (nf × nf) of a mixed
    LCP. Writes the Schur complement Ms = M_cc − M_cf M_ff⁺ M_fc, qs = q_c − M_cf M_ff⁺ q_f,
    and z_f = Xc z_c + xq (the kept rows' solution; dropped rows 0), perm (nf,) the pivot order.
    Returns (rank, inconsistency): the number of pivots above tol·max|M_ff|, and the largest
    |q_f| (relative to max|q_f|) or |M_fc| (relative to max|M_fc|) left in the dropped
    (dependent) rows after elimination."""
    n = q.shape[0]
    nc = n - nf
    A = np.empty((nf, nf))
    Bc = np.empty((nf, nc))
    bq = np.empty(nf)
    for i in range(nf):
        for j in range(nf):
            A[i, j] = M[i, j]
        for j in range(nc):
            Bc[i, j] = M[i, nf + j]
        bq[i] = q[i]
    rowp = np.arange(nf)
    colp = np.arange(nf)
    amax = 0.0
    for i in range(nf):
        for j in range(nf):
            amax = max(amax, abs(A[i, j]))
    rank = 0
    for k in range(nf):
        bi, bj, bv = k, k, 0.0
        for i in range(k, nf):
            for j in range(k, nf):
                if abs(A[i, j]) > bv:
                    bi, bj, bv = i, j, abs(A[i, j])
        if bv <= tol * amax or bv == 0.0:
            break
        if bi != k:          # swap rows k, bi (with their right-hand sides)
            for j in range(nf):
                A[k, j], A[bi, j] = A[bi, j], A[k, j]
            for j in range(nc):
                Bc[k, j], Bc[bi, j] = Bc[bi, j], Bc[k, j]
            bq[k], bq[bi] = bq[bi], bq[k]
            rowp[k], rowp[bi] = rowp[bi], rowp[k]
        if bj != k:          # swap columns k, bj (unknowns)
            for i in range(nf):
                A[i, k], A[i, bj] = A[i, bj], A[i, k]
            colp[k], colp[bj] = colp[bj], colp[k]
        for i in range(k + 1, nf):
            f = A[i, k] / A[k, k]
            if f == 0.0:
                continue
            A[i, k] = f
            for j in range(k + 1, nf):
                A[i, j] -= f * A[k, j]
            for j in range(nc):
                Bc[i, j] -= f * Bc[k, j]
            bq[i] -= f * bq[k]
        rank += 1
    qsc, bsc = 1e-300, 1e-300
    for i in range(nf):
        qsc = max(qsc, abs(q[i]))
        for j in range(nc):
            bsc = max(bsc, abs(M[i, nf + j]))
    incons = 0.0
    for i in range(rank, nf):       # a dropped row must be a combination of the kept ones
        incons = max(incons, abs(bq[i]) / qsc)
        for j in range(nc):
            incons = max(incons, abs(Bc[i, j]) / bsc)
    # back substitution on the kept r × r upper triangle: y = U⁻¹ [Bc | bq] (unknowns in colp order)
    r = rank
    Y = np.zeros((nf, nc))
    yq = np.zeros(nf)
    for i in range(r - 1, -1, -1):
        for j in range(nc):
            acc = Bc[i, j]
            for k in range(i + 1, r):
                acc -= A[i, k] * Y[k, j]
            Y[i, j] = acc / A[i, i]
        acc = bq[i]
        for k in range(i + 1, r):
            acc -= A[i, k] * yq[k]
        yq[i] = acc / A[i, i]
    # z_f (unknown colp[i]) = −(Y z_c + yq)
    Xc[:, :] = 0.0
    xq[:] = 0.0
    for i in range(r):
        u = colp[i]
        for j in range(nc):
            Xc[u, j] = -Y[i, j]
        xq[u] = -yq[i]
    for i in range(nf):
        perm[i] = colp[i]
    # Schur complement: M_cc + M_cf Xc, q_c + M_cf xq
    for i in range(nc):
        for j in range(nc):
            acc = M[nf + i, nf + j]
            for k in range(nf):
                acc += M[nf + i, k] * Xc[k, j]
            Ms[i, j] = acc
        acc = q[nf + i]
        for k in range(nf):
            acc += M[nf + i, k] * xq[k]
        qs[i] = acc
    return rank, incons


# ---------------------------------------------------------------------------------- API
def _check(M, q, what="LCP"):
    M = np.asarray(M, dtype=float)
    q = np.asarray(q, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{what}: M must be a square matrix, got shape {M.shape}")
    if q.ndim != 1 or q.shape[0] != M.shape[0]:
        raise ValueError(f"{what}: q must have shape ({M.shape[0]},) to match M {M.shape}, got {q.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{what}: M has non-finite entries (NaN or inf)")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"{what}: q has non-finite entries (NaN or inf)")
    return np.ascontiguousarray(M), np.ascontiguousarray(q)


def _max_pivots(n, max_pivots):
    if max_pivots is None:
        return max(1000, 10 * n * n)
    if isinstance(max_pivots, bool) or not isinstance(max_pivots, (int, np.integer)) or max_pivots < 1:
        raise ValueError(f"max_pivots must be a positive integer, got {max_pivots!r}")
    return int(max_pivots)


def _raise(status, pivots, n):
    if status == RAY:
        raise LCPRayTermination(f"Lemke's method ended on a secondary ray after {pivots} pivots (n = {n}): "
                                f"the LCP has no solution or its matrix is not in a class Lemke processes "
                                f"(P, positive semi-definite or copositive-plus with a feasible q)")
    if status == MAX_PIVOTS:
        raise RuntimeError(f"Lemke's method did not terminate within {pivots} pivots (n = {n})")


def lemke(M, q, max_pivots=None, tol=1e-12):
    """Solve LCP(M, q) by Lemke's method (module docstring). M (n, n), q (n,) finite.
    Returns `LCPResult(z, w, pivots)`; raises ValueError on bad input, `LCPRayTermination` on
    a secondary ray, RuntimeError after max_pivots (default max(1000, 10 n²)) pivots."""
    M, q = _check(M, q)
    n = q.shape[0]
    z = np.empty(n)
    status, pivots = lemke_kernel(M, q, _max_pivots(n, max_pivots), float(tol), z)
    _raise(status, pivots, n)
    return LCPResult(z, M @ z + q, int(pivots))


def _eliminate_symmetric(M, q, nf, rank_tol):
    """The free block eliminated when M_ff is symmetric (a Delassus block, positive
    semi-definite): Cholesky with diagonal pivoting (LAPACK dpstrf), rank at pivots above
    rank_tol·max diag; dependent rows dropped. Same outputs as `eliminate_free_kernel`; when
    M_ff is not PSD after all (dpstrf stops early), the LU kernel."""
    nc = q.shape[0] - nf
    Mff = M[:nf, :nf]
    dmax = float(np.diag(Mff).max())
    c, piv, rank, info = sla.lapack.dpstrf(Mff, lower=1, tol=rank_tol * dmax if dmax > 0 else -1.0)
    if info < 0 or dmax <= 0:
        rank, piv = 0, np.arange(1, nf + 1)
    piv = piv - 1
    keep, drop = piv[:rank], piv[rank:]
    L = np.tril(c[:rank, :rank])
    rhs = np.column_stack([M[keep, nf:], q[keep]])
    Y = sla.cho_solve((L, True), rhs) if rank else np.zeros((0, nc + 1))
    Xc, xq = np.zeros((nf, nc)), np.zeros(nf)
    Xc[keep], xq[keep] = -Y[:, :nc], -Y[:, nc]
    Mcf = M[nf:, :nf]
    Ms, qs = M[nf:, nf:] + Mcf @ Xc, q[nf:] + Mcf @ xq
    incons = 0.0
    if drop.size:
        # PSD of rank r: the dropped block's Schur complement is below the pivot tolerance
        # (an indefinite M_ff stops dpstrf early instead: eliminate it by LU)
        Z = sla.cho_solve((L, True), Mff[np.ix_(keep, drop)]) if rank else np.zeros((0, drop.size))
        if np.abs(Mff[np.ix_(drop, drop)] - Mff[np.ix_(drop, keep)] @ Z).max() > 10 * rank_tol * max(dmax, 1e-300):
            return _eliminate_lu(M, q, nf, rank_tol)
        # a dropped row must hold for every z_c: M_df X_c + M_dc = 0 and M_df x_q + q_d = 0
        Mdf = M[drop, :nf]
        bsc, qsc = max(np.abs(M[:nf, nf:]).max(initial=0.0), 1e-300), max(np.abs(q[:nf]).max(), 1e-300)
        incons = max(np.abs(Mdf @ Xc + M[drop, nf:]).max(initial=0.0) / bsc, np.abs(Mdf @ xq + q[drop]).max() / qsc)
    return rank, incons, Ms, qs, Xc, xq


def _eliminate_lu(M, q, nf, rank_tol):
    nc = q.shape[0] - nf
    perm = np.empty(nf, np.int64)
    Ms, qs = np.empty((nc, nc)), np.empty(nc)
    Xc, xq = np.empty((nf, nc)), np.empty(nf)
    rank, incons = eliminate_free_kernel(M, q, nf, float(rank_tol), perm, Ms, qs, Xc, xq)
    return rank, incons, Ms, qs, Xc, xq


def solve_mixed_lcp(M, q, n_free, max_pivots=None, tol=1e-12, rank_tol=1e-10, consistency_tol=1e-8):
    """Mixed LCP: rows < n_free are equalities w_f = 0 with z_f free, the others complementary.
    The equality block is eliminated by complete pivoting; rows whose pivot falls below
    rank_tol·max|M_ff| are dropped (their z_f = 0, their equality left to the kept rows) when
    what remains of them is below consistency_tol (relative; else ValueError; inf: always
    drop, a least-effort answer for slightly inconsistent targets). The Schur complement is
    solved by `lemke`. Returns `MixedLCPResult(z, w, pivots, rank)`."""
    M, q = _check(M, q, "mixed LCP")
    n = q.shape[0]
    if isinstance(n_free, bool) or not isinstance(n_free, (int, np.integer)) or not 0 <= n_free <= n:
        raise ValueError(f"n_free must be an integer in [0, {n}], got {n_free!r}")
    nf, nc = int(n_free), n - int(n_free)
    Mff = M[:nf, :nf]
    if nf and np.array_equal(Mff, Mff.T) and np.all(np.diag(Mff) >= 0):
        rank, incons, Ms, qs, Xc, xq = _eliminate_symmetric(M, q, nf, rank_tol)
    else:
        rank, incons, Ms, qs, Xc, xq = _eliminate_lu(M, q, nf, rank_tol)
    if not incons <= consistency_tol:
        raise ValueError(f"mixed LCP: the equality rows are rank deficient (rank {rank} of {nf}) and inconsistent "
                         f"(residual {incons:.2e} of max|q_f|)")
    zc = np.empty(nc)
    status, pivots = lemke_kernel(Ms, qs, _max_pivots(nc, max_pivots), float(tol), zc)
    _raise(status, pivots, nc)
    z = np.concatenate([Xc @ zc + xq, zc])
    return MixedLCPResult(z, M @ z + q, int(pivots), int(rank))

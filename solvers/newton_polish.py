"""Semismooth Newton polish of the contact law, for the ADMM (`admm.admm_kernel`).

Newton's method on the whole contact law written as the Alart–Curnier equations
F(λ) = (λ − P(λ − ρσ)) / ρ = 0 (P_n = [x_n]₊, P_t the projection of x_t on the disc of radius
μ P_n; Alart and Curnier, *A mixed formulation for frictional contact problems prone to Newton
like solution methods*, 1991), with σ = (G + R_c) λ + g the constraint velocities (m/s) and the
columns of G + R_c formed one operator product each (only for the rows not clearly separated).
The kinks of P are smoothed by ε (max(t, 0) → (t + √(t² + 4ε²)) / 2, Chen–Harker–Kanzow–Smale)
with ε shrinking with the exact residual, the Newton matrix is damped by ν ∝ ‖F‖ (the redundant
contacts' singular directions: the four corners of a face) and each step backtracks on ‖F‖.
Every contact's mode (separated, sticking, sliding) follows from the iterate at every step, so
several contacts can move between sticking and sliding at once, and a contact creeping at a
tiny slip speed stays regular (the smoothing keeps the Jacobian invertible at the stick–slip
transition). The caller accepts the result only if its Coulomb residual
(`cones.velocity_residual_kernel`, the ADMM's stopping test) is within tolerance, so a failed
attempt costs time, never accuracy.

It replaced an active-set Newton (modes guessed, the law solved on them, then one round of sign
tests to correct the modes), which cycled on G1 lying on its back (`g1_on_back`): two contacts
sliding at 3e-6 and 7.5e-6 m/s next to a sticking one, each sticking guess leaving the cone (the
sticking rows' null space holds no feasible impulses) and each sliding guess from zero slip
stalling. On 600 recorded steps of that scene, in the ADMM, the semismooth Newton succeeds
from the warm start on 596: ADMM iterations 40.4 → 1.5 mean (p95 158 → 10), Newton steps
43.9 → 7.9 per solve; on 400 recorded G1-falling steps 2.24 → 0.96 iterations (p95 10 → 1),
Newton steps 9.0 → 3.3. Each step refactors its dense matrix (the active-set Newton's chord
steps reused theirs), so a falling robot's solve costs a little more. On a redundant pile with
hundreds of active rows (three G1 on the box pyramid) the dense block is too large: the ADMM's
setting ``newton_rows`` (96) keeps it to small working sets.
"""
import math

import numpy as np
from numba import njit

import models.dynamics
import models.scratch
from models.jitcache import drop_stale_cache
from models.scratch import copy_into, stack_matrix, stack_vector

from . import cones as _cones
from . import delassus_kernels as _dk
from . import opstate as _opstate
from .cones import BOX, CONE, FREE, ORTHANT, desaxce_kernel, project_kernel, velocity_residual_kernel
from .delassus_kernels import contact_columns_kernel
from .opstate import op_matvec

# the Newton compiles in the operators' products (`opstate.op_matvec`, the kernels of `delassus_kernels`
# and `models.dynamics` they call) and the cone kernels
drop_stale_cache(__file__, [_cones.__file__, _dk.__file__, _opstate.__file__, models.dynamics.__file__,
                            models.scratch.__file__])


@njit(cache=True, _nrt=False)
def lu_factor(A, piv):
    """A = P L U in place (Gaussian elimination with partial pivoting, LAPACK's getrf layout), the
    row swaps in piv (n,); False if a pivot is zero or not finite. Blocked by panels of 4
    columns (right-looking, as LAPACK's getrf): each panel is factored with its pivots, its rows
    of U solved, and the trailing matrix updated by one rank-4 product, four multiply-adds per
    load of a row (40 rows: 6.9 µs against 11.1 µs unblocked). Same pivots as the unblocked
    elimination: every column is fully updated when its pivot is chosen."""
    n = A.shape[0]
    for k0 in range(0, n, 4):
        k1 = min(k0 + 4, n)
        for k in range(k0, k1):           # the panel: columns k0..k1-1, all rows below
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
                for j in range(k + 1, k1):
                    A[i, j] -= f * A[k, j]
        for k in range(k0, k1):           # U12 = L11⁻¹ A12 (unit lower L11)
            for i in range(k + 1, k1):
                f = A[i, k]
                for j in range(k1, n):
                    A[i, j] -= f * A[k, j]
        if k1 - k0 == 4:                  # A22 −= L21 U12, rank 4
            u0, u1, u2, u3 = A[k0], A[k0 + 1], A[k0 + 2], A[k0 + 3]
            for i in range(k1, n):
                a = A[i]
                l0, l1, l2, l3 = a[k0], a[k0 + 1], a[k0 + 2], a[k0 + 3]
                for j in range(k1, n):
                    a[j] -= l0 * u0[j] + l1 * u1[j] + l2 * u2[j] + l3 * u3[j]
    return True


@njit(cache=True, _nrt=False)
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


# ---------------------------------------------------------------------------------------------
# Semismooth Newton on the whole contact law (Alart–Curnier, smoothed)
# ---------------------------------------------------------------------------------------------
SSN_KAPPA = 5.0        # ρ = κ / d_b on a block whose mean diagonal of G + R_c is d_b
SSN_EPS = 0.1          # smoothing ε = SSN_EPS κ ‖F₀‖ (never increased)
SSN_NU = 1e-4          # damping ν = SSN_NU ‖F_ε‖ (scaled) on the Newton matrix's diagonal


@njit(cache=True, inline="always")
def _phi(t, eps):
    """Smoothed max(t, 0) (Chen–Harker–Kanzow–Smale) and its derivative; exact for eps = 0."""
    if eps <= 0.0:
        return (t, 1.0) if t > 0.0 else (0.0, 0.0)
    sq = math.sqrt(t * t + 4.0 * eps * eps)
    return 0.5 * (t + sq), 0.5 * (1.0 + t / sq)


@njit(cache=True, _nrt=False)
def _ssn_block(k, mu, nr, x, eps, P, D):
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


@njit(cache=True, _nrt=False)
def _ssn_residual(kind, start, size, param, kappa, eps, lt, st, F):
    """F_ε (m,) = (λ̃ − P_ε(λ̃ − κ σ̃)) / κ on every block, in scaled velocities (free rows: σ̃);
    returns ‖F_ε‖₂."""
    x, P, D = stack_vector(3), stack_vector(3), stack_matrix(3, 3)
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
            _ssn_block(k, param[b], w, x, eps, P, D)
            for i in range(w):
                F[s + i0 + i] = (lt[s + i0 + i] - P[i]) / kappa
                acc += F[s + i0 + i] ** 2
    return math.sqrt(acc)


@njit(cache=True, _nrt=True)     # it allocates (stated: `_ssn_solve` runs without the runtime)
def _ssn_fetch(dense, geo, ws, dn, Rc, has_rc, kind, start, size, inA, cols, col_of, ncols):
    """The columns of G + R_c of the working set's rows not yet in cols; ncols, or −1 if full. On a
    matrix-free operator a contact's three columns come from one call of
    `delassus_kernels.contact_columns_kernel` (the same columns as three products)."""
    m = col_of.shape[0]
    e = np.zeros(m)
    rows = geo.rows
    contact = np.full(m if dense == 0 else 0, -1, np.int64)     # the contact whose first row is r
    for k in range(rows.crow.shape[0] if dense == 0 else 0):
        contact[rows.crow[k]] = k
    n, nv = geo.jint.shape[0], geo.S.shape[1]
    F, A = np.empty((0, 6, 3)), np.empty((0, 6, 3))
    Q, hot = np.empty((0, 3)), np.empty(0, np.bool_)
    for b in range(kind.shape[0]):
        if not inA[b]:
            continue
        s = start[b]
        if dense == 0 and kind[b] == CONE and size[b] == 3 and contact[s] >= 0 and col_of[s] < 0 and \
                col_of[s + 1] < 0 and col_of[s + 2] < 0:
            if ncols + 3 > cols.shape[0]:
                return -1
            if F.shape[0] == 0:
                F, A = np.empty((n, 6, 3)), np.empty((n, 6, 3))
                Q, hot = np.empty((nv, 3)), np.empty(n, np.bool_)
            contact_columns_kernel(geo.jint, geo.S, geo.U, geo.Dinv, rows, contact[s], F, Q, A, hot,
                                   cols[ncols:ncols + 3])
            for j in range(3):
                if has_rc:
                    cols[ncols, s + j] += Rc[s + j]
                col_of[s + j] = ncols
                ncols += 1
            continue
        for r in range(s, s + size[b]):
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
def ssn_kernel(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sigma0, max_steps, tol, d,
               cols, col_of, ncols, lam):
    """Semismooth Newton on the whole contact law from impulses λ0 (m,) and σ0 = (G + R_c) λ0 + g:
    the Alart–Curnier equations F(λ) = (λ − P(λ − ρσ)) / ρ = 0, per cone P_n = [x_n]₊,
    P_t = Π_{‖·‖ ≤ μ P_n}(x_t), x = λ − ρσ, on the variables scaled by S = d_b^(−½) per block (d_b the
    block's mean diagonal of G + R_c; d (m,) ≈ diag G from the caller, `opstate.op_diag`) and
    ρ = κ = SSN_KAPPA in those units.
    The projections' kinks are smoothed by ε (`_phi`: max(t, 0) → (t + √(t² + 4ε²)) / 2, so a
    sticking contact slips by O(ε) and the Jacobian stays regular at the stick–slip and contact
    transitions), ε = SSN_EPS κ ‖F₀‖ at most (F₀ the exact residual), shrinking with it. Each step
    solves (J + ν I) d = −F_ε on the working set's rows (blocks not clearly separated:
    x_n > −10 ε or λ ≠ 0; the others held at λ = 0), ν = SSN_NU ‖F_ε‖ (the redundant contacts'
    singular directions), then backtracks on ‖F_ε‖₂. The contact modes follow from the iterate
    at every step, all contacts at once. After each step the exact point P (separated blocks
    exactly 0, projected on the cones) is tested with the Coulomb residual
    (`cones.velocity_residual_kernel`, De Saxcé term included): the steps stop at the first
    point within tol, the solver's own accuracy (going on to round-off, one more step on G1 on
    its back, cost 13% of its solver time); λ gets the best point, success if it is within tol
    (the caller checks it again). Not tried (False) with box rows or when the
    working set has more rows than cols holds. Columns of G + R_c come one operator product each
    (a contact's three from one pass on a matrix-free operator, `_ssn_fetch`) into cols (kept for
    the whole solve). Returns (Newton steps, success, ncols)."""
    m, nb, R = g.shape[0], kind.shape[0], cols.shape[0]
    return _ssn_solve(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sigma0, max_steps, tol, d,
                      cols, col_of, ncols, lam, np.empty(11 * m + 2 * R * R + R), np.empty(2 * m + R, np.int64),
                      np.empty(2 * nb, np.bool_))


@njit(cache=True, _nrt=False)
def _ssn_solve(dense, geo, ws, dn, kind, start, size, param, g, Rc, has_rc, lam0, sigma0, max_steps, tol, d, cols,
               col_of, ncols, lam, work, iwork, bwork):
    """`ssn_kernel` on the workspaces work (11 m + 2 R² + R,), iwork (2 m + R,) int and bwork
    (2 nb,) bool (R = cols.shape[0], which bounds the working set), without numba's runtime
    (`models.scratch`)."""
    m, nb, R = g.shape[0], kind.shape[0], cols.shape[0]
    for b in range(nb):
        if kind[b] == BOX:
            return 0, False, ncols
    kappa, ec = SSN_KAPPA, SSN_EPS
    sc, lt, st, F, F0, Pl, Ps, sig_p, lt_t, st_t, Gd = work[:m], work[m:2 * m], work[2 * m:3 * m], \
        work[3 * m:4 * m], work[4 * m:5 * m], work[5 * m:6 * m], work[6 * m:7 * m], work[7 * m:8 * m], \
        work[8 * m:9 * m], work[9 * m:10 * m], work[10 * m:11 * m]      # sc: S, λ̃ = λ / S, σ̃ = S σ
    Gw_buf, Jm_buf, du_buf = work[11 * m:11 * m + R * R], work[11 * m + R * R:11 * m + 2 * R * R], \
        work[11 * m + 2 * R * R:]
    rows, pos, piv_buf = iwork[:m], iwork[m:2 * m], iwork[2 * m:]
    inA, need = bwork[:nb], bwork[nb:]
    for b in range(nb):
        acc = 0.0
        for r in range(start[b], start[b] + size[b]):
            acc += d[r] + (Rc[r] if has_rc else 0.0)
        v = acc / size[b]
        v = 1.0 / math.sqrt(v) if v > 0.0 else 1.0
        for r in range(start[b], start[b] + size[b]):
            sc[r] = v
    for r in range(m):
        lt[r] = lam0[r] / sc[r]
        st[r] = sigma0[r] * sc[r]
    eps = ec * kappa * _ssn_residual(kind, start, size, param, kappa, 0.0, lt, st, F0)
    inA[:] = False
    need[:] = False
    x, P, D = stack_vector(3), stack_vector(3), stack_matrix(3, 3)
    nw = -1                      # the rows of the working set Gw holds (-1: none)
    Gw = Gw_buf[:0].reshape((0, 0))
    steps = 0
    best = np.inf
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
        n, same = 0, True
        for b in range(nb):
            if inA[b]:
                for r in range(start[b], start[b] + size[b]):
                    same = same and n < nw and rows[n] == r
                    rows[n] = r
                    n += 1
        if not (same and n == nw):      # G̃ on the working set, Gw[a, j] = G̃[rows_a, rows_j] (n, n)
            Gw = Gw_buf[:n * n].reshape((n, n))
            for j in range(n):
                rj = rows[j]
                c = cols[col_of[rj]]
                for a in range(n):
                    Gw[a, j] = c[rows[a]] * sc[rows[a]] * sc[rj]
            nw = n
        # the exact point P and its Coulomb residual
        for b in range(nb):
            s, nr, k = start[b], size[b], kind[b]
            w = 3 if k == CONE else 1
            for i0 in range(0, nr, w):
                for i in range(w):
                    x[i] = lt[s + i0 + i] - kappa * st[s + i0 + i]
                _ssn_block(k, param[b], w, x, 0.0, P, D)
                for i in range(w):
                    Pl[s + i0 + i] = P[i] * sc[s + i0 + i]
        copy_into(Pl, Ps)
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
            desaxce_kernel(kind, start, param, sig_p, Ps)     # σ' with the De Saxcé term
            for r in range(m):
                Ps[r] += sig_p[r]
            rv, _ = velocity_residual_kernel(kind, start, size, param, Pl, Ps)
            if rv < best:
                best = rv
                copy_into(Pl, lam)
            if rv <= tol:
                return steps, True, ncols
        if steps >= max_steps:
            break
        steps += 1
        # F_ε and its Jacobian on the working set: J = A + B G̃ per block (A = ∂F/∂λ̃, B = ∂F/∂σ̃)
        fn = _ssn_residual(kind, start, size, param, kappa, eps, lt, st, F)
        Jm = Jm_buf[:n * n].reshape((n, n))
        Jm[:, :] = 0.0
        du = du_buf[:n]
        pos[:] = -1
        for j in range(n):
            pos[rows[j]] = j
        gmax = 0.0
        for j in range(n):
            gmax = max(gmax, Gw[j, j])
        for b in range(nb):
            if not inA[b]:
                continue
            s, nr, k = start[b], size[b], kind[b]
            w = 3 if k == CONE else 1
            for i0 in range(0, nr, w):
                for i in range(w):
                    x[i] = lt[s + i0 + i] - kappa * st[s + i0 + i]
                _ssn_block(k, param[b], w, x, eps, P, D)
                for i in range(w):
                    ri = pos[s + i0 + i]
                    Ji = Jm[ri]
                    # A = (I − D) / κ, B = D (free rows: A = 0, B = I); row ri of B G̃ = Σ_kk D[i, kk] Gw[rk]
                    for kk in range(w):
                        rk = pos[s + i0 + kk]
                        Ji[rk] += ((1.0 if i == kk else 0.0) - D[i, kk]) / kappa if k != FREE else 0.0
                        bik = D[i, kk]
                        if bik != 0.0:
                            Gk = Gw[rk]
                            for j in range(n):
                                Ji[j] += bik * Gk[j]
        nu = SSN_NU * max(gmax, 1e-300) * fn
        for j in range(n):
            Jm[j, j] += nu
            du[j] = -F[rows[j]]
        piv = piv_buf[:n]
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
            copy_into(lt, lt_t)
            for j in range(n):
                lt_t[rows[j]] += a * du[j]
            for i in range(m):
                st_t[i] = st[i] + a * Gd[i]
            f2 = _ssn_residual(kind, start, size, param, kappa, eps, lt_t, st_t, F)
            if f2 <= (1.0 - 1e-4 * a) * fn or a < 1e-4:
                break
            a *= 0.5
        copy_into(lt_t, lt)
        copy_into(st_t, st)
        eps = min(eps, ec * kappa * _ssn_residual(kind, start, size, param, kappa, 0.0, lt, st, F0))
    return steps, best <= tol, ncols

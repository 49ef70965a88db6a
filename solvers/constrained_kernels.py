"""Numba kernels of constrained forward dynamics (paper 002: Sathya and Carpentier,
"Constrained Articulated Body Dynamics Algorithms"). World frame, Featherstone's symbols.

Conventions (as in `models.dynamics`): spatial vectors (linear, angular) in world axes about
the world origin; pᴬ is the articulated *bias* force (pᴬ = −fᴬ of the paper), U = Iᴬ S,
D = Sᵀ U (+ armature), u = τ − Sᵀ pᴬ, c = v × S q̇ (the paper's a_b), a₀ = (−g, 0).

Rows (see `constraints.rows_kernel`, contact rows included): link row r on link la[r] with
spatial row kA[r] (unary: the world or the same link on the other side), joint row r on
dof[r] with sign sg[r]. The paper's Kᵢ aᵢ = kᵢ (Eq. 20c) reads kA[r]·a_{la[r]} = k[r] and
sg[r] q̈_{dof[r]} = k[r]; its multipliers λ enter as M q̈ = τ − c − Jᵀ λ.

Tree structure for the sweeps over 𝒮_E (links supporting a constraint): `lptr`/`lrow` list
the link rows of each link (CSR), `jrow` the joint rows, `se` (n,) 1 for links in 𝒮_E.

Speed: the per-iteration kernels are compiled without numba's reference counting (`_NOREF`):
with it, every array a helper receives or a loop views is an atomic incref/decref pair, which
measured half of `articulate_kernel`'s time on Talos. They allocate nothing (temporaries live
in the caller's `scratch` (4, 6, 6)) and call only each other, inlined helpers, or
`_gather` (`delassus_kernels.gather_kernel` compiled the same way); the option is inherited by
every kernel they call, so kernels that call `models` kernels (`prepare_kernel`) keep it.
"""
from collections import namedtuple

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
import solvers.constraints
import solvers.delassus_kernels
import solvers.packed
from models.dynamics import _dot_col, _mv6, bias_sweep_into
from models.dynamics import cholesky_into, cholesky_solve, crba_kernel, rnea_kernel
from models.jitcache import drop_stale_cache
from models.kinematics import all_finite, fk_kernel, q_status_kernel, world_quantities_into
from models.layout import JF_SIZE, JI_SIZE

from .constraints import rows_kernel
from .delassus_kernels import gather_kernel
from .packed import slots, view1, view2, view3

# kernels that allocate nothing: no reference counting (numba's private `_nrt` option), no
# division-by-zero checks (error_model "numpy": inf/nan as in NumPy), and two of LLVM's fast-math
# permissions that keep IEEE semantics for inf/nan (the input checks rely on them): fused
# multiply-adds ("contract") and x / d as x · (1/d) ("arcp", the reciprocal leaves the sweeps'
# dependency chains). These options are inherited by the kernels they call.
_FLAGS = dict(_nrt=False, error_model="numpy", fastmath={"contract", "arcp"})
_NOREF = dict(cache=True, **_FLAGS)
# other modules' kernels compiled with these options for the kernels here (not cached: a second
# dispatcher of the same function would share its cache index; they are compiled into their
# callers, whose cache `drop_stale_cache` drops when their modules change)
_gather = njit(**_FLAGS)(gather_kernel.py_func)
_rows = njit(**_FLAGS)(rows_kernel.py_func)
_q_status = njit(**_FLAGS)(q_status_kernel.py_func)
_all_finite = njit(**_FLAGS)(all_finite.py_func)
_fk = njit(**_FLAGS)(fk_kernel.py_func)

drop_stale_cache(__file__, [models.dynamics.__file__, models.kinematics.__file__, models.spatial.__file__,
                            models.joints.__file__, solvers.constraints.__file__, solvers.delassus_kernels.__file__,
                            solvers.packed.__file__])


# --------------------------------------------------------------------------- shared pieces
@njit(**_NOREF)
def bias_chain_kernel(jint, c, acc):
    """acc (n, 6): link accelerations at q̈ = 0 without gravity, aᵢ = a_λ(i) + cᵢ."""
    for i in range(jint.shape[0]):
        par = jint[i, 0]
        for r in range(6):
            acc[i, r] = c[i, r] + (acc[par, r] if par >= 0 else 0.0)


@njit(cache=True, inline="always")
def _cross_dot(t, a, b):
    """t · (a × b) for 3-vectors."""
    return (t[0] * (a[1] * b[2] - a[2] * b[1]) + t[1] * (a[2] * b[0] - a[0] * b[2])
            + t[2] * (a[0] * b[1] - a[1] * b[0]))


@njit(cache=True, inline="always")
def _point_velocity(vel, b, p, out):
    """Velocity of the material point of body b at world point p (0 for the world)."""
    if b < 0:
        out[:] = 0.0
        return
    w = vel[b]
    out[0] = w[0] + w[4] * p[2] - w[5] * p[1]
    out[1] = w[1] + w[5] * p[0] - w[3] * p[2]
    out[2] = w[2] + w[3] * p[1] - w[4] * p[0]


@njit(**_NOREF)
def row_drift_kernel(cb_kind, cb_row, cb_nrows, cb_body, cb_f, oR, op, vel, gk, scratch):
    """γ_K (m,): the part of the constraint drift J̇ v that comes from rows moving with their
    bodies, K̇ · v (the rest, Kᵢ J̇ᵢ v, is in the bias accelerations cᵢ of the sweeps).

    J(q) is the one of `rows_kernel`: a contact's point and frame are fixed in the world
    (K̇ = 0); a loop closure's anchors move with their bodies and its axes with body 1 (ω_t).
    For a point row along t on side s (sign σ, body velocity wₛ at the anchor, anchor velocity
    ṗ): σ t·(wₛ × ω_t + ωₛ × ṗ); for an angular row: σ t·(ωₛ × ω_t). Joint rows: 0.
    scratch (4, 6, 6): temporaries."""
    p1, p2, t, wt, ws, pd = scratch[0, 0, :3], scratch[0, 1, :3], scratch[0, 2, :3], scratch[0, 3, :3], \
        scratch[0, 4, :3], scratch[0, 5, :3]
    om, R = scratch[1, 0, :3], scratch[1, 1:4, :3]
    for c in range(cb_kind.shape[0]):
        kind, r0, nr = cb_kind[c], cb_row[c], cb_nrows[c]
        if kind == 0 or kind >= 3:
            for r in range(r0, r0 + nr):
                gk[r] = 0.0
            continue
        b1, b2 = cb_body[c, 0], cb_body[c, 1]
        f = cb_f[c]
        for a in range(3):
            if b1 >= 0:
                p1[a] = oR[b1, a, 0] * f[0] + oR[b1, a, 1] * f[1] + oR[b1, a, 2] * f[2] + op[b1, a]
                for k in range(3):
                    R[a, k] = oR[b1, a, 0] * f[3 + k] + oR[b1, a, 1] * f[6 + k] + oR[b1, a, 2] * f[9 + k]
                wt[a] = vel[b1, 3 + a]
            else:
                p1[a] = f[a]
                for k in range(3):
                    R[a, k] = f[3 + 3 * a + k]
                wt[a] = 0.0
            if kind == 2:
                p2[a] = p1[a]
            elif b2 >= 0:
                p2[a] = oR[b2, a, 0] * f[12] + oR[b2, a, 1] * f[13] + oR[b2, a, 2] * f[14] + op[b2, a]
            else:
                p2[a] = f[12 + a]
        for r in range(nr):
            for a in range(3):
                t[a] = R[a, r % 3]
            g = 0.0
            for side in range(2):
                b = b1 if side == 0 else b2
                if b < 0:
                    continue
                sigma = 1.0 if side == 0 else -1.0
                for a in range(3):
                    om[a] = vel[b, 3 + a]
                if r >= 3:
                    g += sigma * _cross_dot(t, om, wt)
                    continue
                p = p1 if side == 0 else p2
                _point_velocity(vel, b, p, ws)
                if kind == 2:
                    _point_velocity(vel, b1, p1, pd)     # the weld anchor moves with body 1
                else:
                    for a in range(3):
                        pd[a] = ws[a]
                g += sigma * (_cross_dot(t, ws, wt) + _cross_dot(t, om, pd))
            gk[r0 + r] = g


@njit(**_NOREF)
def rollout_kernel(jint, gravity, S, U, Lc, c, u, qdd, acc, se, select, w):
    """Roll-out (Alg. 1 lines 11–12) over the links i with se[i] == select (select = -1: all):
    q̈ᵢ = D⁻¹ (u − Uᵀ(a_λ + cᵢ)), aᵢ = a_λ + cᵢ + Sᵢ q̈ᵢ (D = Lc Lcᵀ), a₀ = (−g, 0).
    w (6,): temporary."""
    for i in range(jint.shape[0]):
        if select >= 0 and se[i] != select:
            continue
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        for r in range(6):
            if par >= 0:
                acc[i, r] = acc[par, r] + c[i, r]
            else:
                acc[i, r] = c[i, r] - gravity[r] if r < 3 else c[i, r]
        if nvi == 1:                      # the same operations, scalar
            x = u[iv]
            for r in range(6):
                x -= U[r, iv] * acc[i, r]
            x /= Lc[i, 0, 0]
            x /= Lc[i, 0, 0]
            qdd[iv] = x
            for r in range(6):
                acc[i, r] += S[r, iv] * x
            continue
        for k in range(nvi):
            w[k] = u[iv + k] - _dot_col(U, iv + k, acc[i])
        cholesky_solve(Lc[i], nvi, w, w, w)
        for k in range(nvi):
            qdd[iv + k] = w[k]
        for r in range(6):
            t = acc[i, r]
            for k in range(nvi):
                t += S[r, iv + k] * w[k]
            acc[i, r] = t


@njit(**_NOREF)
def supports_kernel(jint, la, dof, dof_link, se):
    """se (n,) int64: 1 for links that support a constraint (𝒮_E: the link of a row or an ancestor)."""
    se[:] = 0
    for r in range(la.shape[0]):
        i = la[r] if dof[r] < 0 else dof_link[dof[r]]
        while i >= 0 and se[i] == 0:
            se[i] = 1
            i = jint[i, 0]


@njit(**_NOREF)
def kinematics_scratch_kernel(jint, jfloat, q, oR, op, S, H, scratch):
    """`models.kinematics.kinematics_kernel` (FK, world-frame S (6, nv) and H (n, 6, 6)) with its
    temporaries in scratch (4, 6, 6) (rows 2–3), so that it runs without reference counting."""
    _fk(jint, jfloat, q, oR, op)
    world_quantities_into(jint, jfloat, oR, op, S, H, scratch[2, 0], scratch[2, 1], scratch[2, 2, :3],
                          scratch[3, :3, :3], scratch[3, 3:, :3])


@njit(**_NOREF)
def bias_sweep_scratch_kernel(jint, S, H, v, vel, c, pA, scratch):
    """`models.dynamics.bias_sweep_kernel` (vᵢ, cᵢ = vᵢ × Sᵢ q̇ᵢ, pᴬᵢ += vᵢ ×* Hᵢ vᵢ) with its
    temporaries in scratch (4, 6, 6) (row 2), so that it runs without reference counting."""
    bias_sweep_into(jint, S, H, v, vel, c, pA, scratch[2, 3], scratch[2, 4])


@njit(**_NOREF)
def prepare_kernel(jint, jfloat, gravity, q, v, cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, a_ref, oR, op, S, H,
                   la, lb, kA, kB, vel, c, pA, gk, kref, scratch):
    """Everything at (q, v) before the sweeps, in one call: kinematics, the rows K
    (`rows_kernel`), the first forward sweep (vel, c, pA) and γ_K; then kref = k of Eq. 20c
    for the sweeps, k = a_ref − γ_K + K a₀ (a₀ = (−g, 0), the uniform field of Eq. 20d that
    every link acceleration of the sweeps carries). scratch (4, 6, 6): temporaries."""
    kinematics_scratch_kernel(jint, jfloat, q, oR, op, S, H, scratch)
    _rows(cb_kind, cb_row, cb_nrows, cb_body, cb_f, oR, op, la, lb, kA, kB, True)
    for i in range(pA.shape[0]):
        for r in range(6):
            pA[i, r] = 0.0
    bias_sweep_scratch_kernel(jint, S, H, v, vel, c, pA, scratch)
    row_drift_kernel(cb_kind, cb_row, cb_nrows, cb_body, cb_f, oR, op, vel, gk, scratch)
    for r in range(kref.shape[0]):
        t = a_ref[r] - gk[r]
        if dof[r] < 0:
            for side in range(2):
                b = la[r] if side == 0 else lb[r]
                if b >= 0:
                    for k in range(3):
                        t -= (kA[r, k] if side == 0 else kB[r, k]) * gravity[k]
        kref[r] = t


# --------------------------------------------------------------------------- sweeps
@njit(cache=True, inline="always")
def _articulate_one(i, par, k, dj, S, IA, U, Lc, c, pA, u, h):
    """The backward step of `articulate_kernel` at a one-dof joint k (scalar D = Sᵀ Iᴬ S + dj,
    Lcᵢ = √D): the same operations without the small-matrix loops, Iᴬ S and Iᴬ c (into h (6,))
    in one pass over Iᴬ, and the symmetric parent update on its upper triangle. False if D ≤ 0."""
    s0, s1, s2, s3, s4, s5 = S[0, k], S[1, k], S[2, k], S[3, k], S[4, k], S[5, k]
    c0, c1, c2, c3, c4, c5 = c[i, 0], c[i, 1], c[i, 2], c[i, 3], c[i, 4], c[i, 5]
    d = dj
    for r in range(6):
        a0, a1, a2, a3, a4, a5 = IA[i, r, 0], IA[i, r, 1], IA[i, r, 2], IA[i, r, 3], IA[i, r, 4], IA[i, r, 5]
        t = a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3 + a4 * s4 + a5 * s5
        U[r, k] = t
        d += S[r, k] * t
        h[r] = a0 * c0 + a1 * c1 + a2 * c2 + a3 * c3 + a4 * c4 + a5 * c5
    if not d > 0.0:
        return False
    Lc[i, 0, 0] = np.sqrt(d)
    u[k] -= s0 * pA[i, 0] + s1 * pA[i, 1] + s2 * pA[i, 2] + s3 * pA[i, 3] + s4 * pA[i, 4] + s5 * pA[i, 5]
    if par < 0:
        return True
    # pᴬ_λ += pᴬ + Iᴬ c + U (u − Uᵀ c)/D;  Iᴬ_λ += Iᴬ − U Uᵀ/D
    y = u[k]
    for r in range(6):
        y -= U[r, k] * c[i, r]
    y /= d
    for r in range(6):
        pA[par, r] += pA[i, r] + h[r] + U[r, k] * y
    for r in range(6):                   # symmetric: the upper triangle, mirrored
        w = U[r, k] / d
        for cc in range(r, 6):
            t = IA[par, r, cc] + IA[i, r, cc] - w * U[cc, k]
            IA[par, r, cc] = t
            IA[par, cc, r] = t
    return True


@njit(**_NOREF)
def articulate_kernel(jint, armature, S, H, tau, K, krow, lptr, lidx, dof, sg, jrow, kref, lam, mu, c, pA, IA, U,
                      Lc, u, scratch):
    """Alg. 1 lines 5–9 after the first forward sweep (c, pA from `bias_sweep_kernel`): the
    augmented inertias and forces of Eq. 29, H̃ᵢ = Hᵢ + μ Σ KᵀK, f̃ᵢ = fᵢ + Σ Kᵀ(μ k − λ)
    (pᴬ −= …), joint rows adding μ sg² to Dᵢ and sg (μ k − λ) to uᵢ; then the backward
    sweep: Uᵢ = Iᴬᵢ Sᵢ, Dᵢ = Lcᵢ Lcᵢᵀ, uᵢ = τᵢ − Sᵢᵀ pᴬᵢ, and the parent's Iᴬ, pᴬ. With
    μ = 0 and λ = 0 this is the plain ABA (the PV algorithm's first two sweeps).
    Link entries: for j in lptr[i]:lptr[i+1], row krow[lidx[j]] with spatial row K[lidx[j]].
    H may be IA itself (the prepared calls' kinematics write H there): Iᴬ then starts as H in
    place, without the copy. scratch (4, 6, 6): temporaries. Returns False if some Dᵢ is not
    positive definite."""
    n = jint.shape[0]
    D, W = scratch[0], scratch[1]
    y, h = scratch[2, 0], scratch[2, 1]
    copy = H.ctypes.data != IA.ctypes.data
    for i in range(n):
        if copy:
            for a in range(6):
                for b in range(6):
                    IA[i, a, b] = H[i, a, b]
        for j in range(lptr[i], lptr[i + 1]):
            x = lidx[j]
            r = krow[x]
            s = mu * kref[r] - lam[r]
            for a in range(6):
                pA[i, a] -= K[x, a] * s
                if mu != 0.0:
                    for b in range(6):
                        IA[i, a, b] += mu * K[x, a] * K[x, b]
    for k in range(u.shape[0]):
        u[k] = tau[k]
    for j in range(jrow.shape[0]):
        r = jrow[j]
        u[dof[r]] += sg[r] * (mu * kref[r] - lam[r])
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        if nvi == 1:
            dj = armature[iv]
            for j in range(jrow.shape[0]):
                r = jrow[j]
                if dof[r] == iv:
                    dj += mu * sg[r] * sg[r]
            if not _articulate_one(i, par, iv, dj, S, IA, U, Lc, c, pA, u, h):
                return False
            continue
        for k in range(nvi):
            for r in range(6):
                t = 0.0
                for cc in range(6):
                    t += IA[i, r, cc] * S[cc, iv + k]
                U[r, iv + k] = t
        for k in range(nvi):
            for l in range(nvi):
                D[k, l] = _dot_col(S, iv + k, U[:, iv + l])
            D[k, k] += armature[iv + k]
        for j in range(jrow.shape[0]):
            r = jrow[j]
            d = dof[r]
            if iv <= d < iv + nvi:
                D[d - iv, d - iv] += mu * sg[r] * sg[r]
        # D is kept as its Cholesky factor, solved by two triangular solves: backward stable
        # where an explicit D⁻¹ is not (D carries the μ-sized constraint terms)
        if not cholesky_into(D, nvi, Lc[i]):
            return False
        for k in range(nvi):
            u[iv + k] -= _dot_col(S, iv + k, pA[i])
        if par >= 0:
            # pᴬ_λ += pᴬ + Iᴬ c + U D⁻¹ (u − Uᵀ c);  Iᴬ_λ += Iᴬ − Wᵀ W, W = Lc⁻¹ Uᵀ
            _mv6(IA[i], c[i], h)
            for k in range(nvi):
                y[k] = u[iv + k] - _dot_col(U, iv + k, c[i])
            cholesky_solve(Lc[i], nvi, y, y, y)
            for r in range(6):
                t = pA[i, r] + h[r]
                for k in range(nvi):
                    t += U[r, iv + k] * y[k]
                pA[par, r] += t
            for cc in range(6):
                for k in range(nvi):
                    t = U[cc, iv + k]
                    for l in range(k):
                        t -= Lc[i, k, l] * W[l, cc]
                    W[k, cc] = t / Lc[i, k, k]
            for r in range(6):
                for cc in range(6):
                    t = IA[i, r, cc]
                    for k in range(nvi):
                        t -= W[k, r] * W[k, cc]
                    IA[par, r, cc] += t
    return True


@njit(**_NOREF)
def force_sweep_kernel(jint, S, U, Lc, K, krow, lptr, lidx, dof, sg, jrow, se, x, u, du, dpA, y):
    """Alg. 2 lines 1–3: the backward sweep over 𝒮_E of a change x (m,) of the multipliers λ
    (Δf = −Kᵀ x on links, Δτ = −sg x on joints), through Pᵢ = I − Uᵢ Dᵢ⁻¹ Sᵢᵀ, accumulated
    into the stored uᵢ (so the roll-out of `rollout_kernel` sees f^A + Δf). In pᴬ form:
    Δpᴬ_λ += Δpᴬᵢ + Uᵢ D⁻¹ Δuᵢ, Δuᵢ = Δτᵢ − Sᵢᵀ Δpᴬᵢ. y (6,): temporary."""
    n = jint.shape[0]
    for i in range(n):
        if se[i]:
            for a in range(6):
                dpA[i, a] = 0.0
            for k in range(jint[i, 3], jint[i, 3] + jint[i, 5]):
                du[k] = 0.0
    for j in range(jrow.shape[0]):
        r = jrow[j]
        du[dof[r]] -= sg[r] * x[r]
    for i in range(n - 1, -1, -1):
        if not se[i]:
            continue
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        for j in range(lptr[i], lptr[i + 1]):
            e = lidx[j]
            xr = x[krow[e]]
            for a in range(6):
                dpA[i, a] += K[e, a] * xr
        if nvi == 1:                      # the same operations, scalar
            z = du[iv]
            for r in range(6):
                z -= S[r, iv] * dpA[i, r]
            du[iv] = z
            u[iv] += z
            if par >= 0:
                z = z / Lc[i, 0, 0] / Lc[i, 0, 0]
                for r in range(6):
                    dpA[par, r] += dpA[i, r] + U[r, iv] * z
            continue
        for k in range(nvi):
            du[iv + k] -= _dot_col(S, iv + k, dpA[i])
            u[iv + k] += du[iv + k]
            y[k] = du[iv + k]
        if par >= 0:
            cholesky_solve(Lc[i], nvi, y, y, y)
            for r in range(6):
                t = dpA[i, r]
                for k in range(nvi):
                    t += U[r, iv + k] * y[k]
                dpA[par, r] += t


# --------------------------------------------------------------------------- constrainedABA
@njit(**_NOREF)
def caba_kernel(jint, armature, gravity, S, H, tau, rows, kA, krow, dof, sg, kref, lptr, lrow, jrow, se, mu, tol,
                max_iter, c, pA, IA, U, Lc, u, du, dpA, qprev, e, qdd, acc, lam, scratch):
    """constrainedABA (paper 002 Alg. 3) for unary constraints on a tree, O(n + m) per iteration.

    Alg. 1 (`articulate_kernel`: the ABA with the augmented inertias and forces of Eq. 29,
    after the first forward sweep `bias_sweep_kernel` gave c, pA), roll-out over 𝒮_E; then
    Alg. 2 (`force_sweep_kernel` with Δλ = μ (K a − k), roll-out over 𝒮_E) until
    min(‖q̈ᵏ − q̈ᵏ⁻¹‖∞, ‖K a − k‖∞) < tol (Alg. 3 line 6) or max_iter primal solves; then the
    roll-out of the links outside 𝒮_E (Alg. 3 lines 9–11). kref (m,) is k (desired K a);
    krow = arange(m); rows: the row tuple of `delassus_kernels.gather_kernel` (K a, all rows
    generic). lam (m,) on entry λ⁰ (the paper's sign), on exit the multipliers of q̈
    (M q̈ = τ − c − Jᵀ λ, the update of Eq. 27b after the last solve).
    scratch (4, 6, 6): temporaries.
    Returns (iterations, residual ‖K a − k‖∞); iterations = -1 if some Dᵢ is not PD."""
    n = jint.shape[0]
    w = scratch[3, 0]
    if not articulate_kernel(jint, armature, S, H, tau, kA, krow, lptr, lrow, dof, sg, jrow, kref, lam, mu, c, pA,
                             IA, U, Lc, u, scratch):
        return -1, np.inf
    rollout_kernel(jint, gravity, S, U, Lc, c, u, qdd, acc, se, 1, w)
    it = 1
    res = np.inf
    while True:
        # Eq. 27b: λ ← λ + μ (K a − k); the primal step just taken is exact for this λ
        _gather(rows, acc, qdd, e)
        res = 0.0
        for r in range(e.shape[0]):
            e[r] -= kref[r]
            res = max(res, abs(e[r]))
            e[r] *= mu
            lam[r] += e[r]
        step = np.inf
        if it > 1 and tol > 0.0:            # (tol = 0: a fixed number of iterations)
            step = 0.0
            for i in range(n):
                if se[i]:
                    for k in range(jint[i, 3], jint[i, 3] + jint[i, 5]):
                        step = max(step, abs(qdd[k] - qprev[k]))
        if min(step, res) < tol or it >= max_iter:
            break
        if tol > 0.0:
            for i in range(n):
                if se[i]:
                    for k in range(jint[i, 3], jint[i, 3] + jint[i, 5]):
                        qprev[k] = qdd[k]
        force_sweep_kernel(jint, S, U, Lc, kA, krow, lptr, lrow, dof, sg, jrow, se, e, u, du, dpA, w)
        rollout_kernel(jint, gravity, S, U, Lc, c, u, qdd, acc, se, 1, w)
        it += 1
    # Alg. 3 lines 9–11: the links outside 𝒮_E
    rollout_kernel(jint, gravity, S, U, Lc, c, u, qdd, acc, se, 0, w)
    return it, res


# --------------------------------------------------------------------------- proxPV / proxLTL dual
@njit(cache=True)
def prox_dual_kernel(G, b, mu, tol, max_iter, C, tmp, lam):
    """The proximal-point iterations on the dual (paper 002 Eq. 13, Alg. 4 lines 12–15):
    C = chol(G + I/μ) once, then λ ← C⁻ᵀ C⁻¹ (λ/μ + b) until min(‖G λ − b‖∞,
    ‖G (G λ − b)‖∞ (Eq. 14)) < tol or max_iter solves. λ in the paper's sign.
    Returns (iterations, ‖G λ − b‖∞)."""
    m = b.shape[0]
    for r in range(m):
        for k in range(m):
            C[r, k] = G[r, k]
        C[r, r] += 1.0 / mu
    if m:
        C[:, :] = np.linalg.cholesky(C)
    it = 0
    res = 0.0
    while it < max_iter and m:
        for r in range(m):
            tmp[r] = lam[r] / mu + b[r]
        cholesky_solve(C, m, tmp, tmp, lam)
        it += 1
        e = G @ lam - b
        res = np.max(np.abs(e))
        if min(res, np.max(np.abs(G @ e))) < tol:
            break
    return it, res


# --------------------------------------------------------------------------- proxPV
@njit(cache=True)
def _item_rows(kA, kB, it_row, it_side, KI):
    """KI (items, 6): each item's spatial row at q (kA, kB, or 0 for joint rows)."""
    for x in range(it_row.shape[0]):
        r = it_row[x]
        for a in range(6):
            KI[x, a] = kA[r, a] if it_side[x] == 0 else (kB[r, a] if it_side[x] == 1 else 0.0)


@njit(cache=True, _nrt=True)
def pv_kernel(jint, armature, gravity, S, H, tau, la, lb, kA, kB, dof, sg, kref, it_row, it_side, lo, hi, lptr,
              lidx, jrow, se, mu, tol, max_iter, c, pA, IA, U, Lc, u, du, dpA, KI, Wk, Zk, L, C, l, tmp, lam, qdd,
              acc, scratch):
    """proxPV (paper 002 Alg. 4): plain ABA sweeps, the PV backward sweep accumulating the
    Delassus matrix L₀ᴬ = Λ⁻¹ and l₀ (lines 5–11), the proximal iterations on the dual with
    one Cholesky of L₀ᴬ + I/μ (lines 12–15), then the roll-out with the constraint forces.

    Items: each row's link sides (it_side 0: kA on la, 1: kB on lb) and joint rows (it_side 2,
    weight sg on dof), sorted by the preorder of their link so that the items of the subtree
    of link i are lo[i]:hi[i] (ES(i)); KI (items, 6) holds each item's row Kᴬ propagated to the
    current link (line 9: Kᴬ ← Kᴬ Pᵢᵀ = Kᴬ − (D⁻¹ wᵀ) Uᵀ with w = Sᵢᵀ Kᴬᵀ (+ sg eₖ)), L gets
    w D⁻¹ wᵀ (line 10), l gets Kᴬ cᵢ + w D⁻¹ (uᵢ − Uᵢᵀ cᵢ) (line 11) and, past a root, Kᴬ a₀.
    The roll-out (lines 17–19) applies −Kᵀλ through `force_sweep_kernel` (the same sum
    Σ Kᴬᵀλᴬ of line 18, propagated once) and `rollout_kernel`.
    Stops when min(‖L λ − b‖∞, ‖L(L λ − b)‖∞ (Eq. 14)) < tol or after max_iter solves.
    Returns (iterations, ‖L λ − b‖∞); iterations = -1 if some Dᵢ is not PD."""
    n = jint.shape[0]
    m = kref.shape[0]
    ni = it_row.shape[0]
    lam[:] = 0.0
    if not articulate_kernel(jint, armature, S, H, tau, kA, it_row[:0], np.zeros(n + 1, np.int64), lidx[:0], dof,
                             sg, jrow[:0], kref, lam, 0.0, c, pA, IA, U, Lc, u, scratch):
        return -1, np.inf
    _item_rows(kA, kB, it_row, it_side, KI)
    L[:, :] = 0.0
    l[:] = 0.0
    y = scratch[3, 0]
    for i in range(n - 1, -1, -1):
        a0, b0 = lo[i], hi[i]
        if a0 == b0:
            continue
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        for k in range(nvi):
            y[k] = u[iv + k] - _dot_col(U, iv + k, c[i])
        cholesky_solve(Lc[i], nvi, y, y, y)
        for x in range(a0, b0):
            r = it_row[x]
            for k in range(nvi):
                Wk[x, k] = _dot_col(S, iv + k, KI[x])
            if it_side[x] == 2 and iv <= dof[r] < iv + nvi:
                Wk[x, dof[r] - iv] += sg[r]
            t = 0.0
            for k in range(nvi):
                Zk[x, k] = Wk[x, k]
                t += Wk[x, k] * y[k]
            cholesky_solve(Lc[i], nvi, Zk[x], Zk[x], Zk[x])
            for a in range(6):
                t += KI[x, a] * c[i, a]
            l[r] += t
        for x in range(a0, b0):
            r = it_row[x]
            for z in range(a0, b0):
                t = 0.0
                for k in range(nvi):
                    t += Wk[x, k] * Zk[z, k]
                L[r, it_row[z]] += t
        for x in range(a0, b0):
            for a in range(6):
                t = KI[x, a]
                for k in range(nvi):
                    t -= U[a, iv + k] * Zk[x, k]
                KI[x, a] = t
            if par < 0:
                l[it_row[x]] -= KI[x, 0] * gravity[0] + KI[x, 1] * gravity[1] + KI[x, 2] * gravity[2]
    # lines 12–15: proximal iterations on the dual, b = K₀ a₀ + l₀ (l₀ holding −k)
    for r in range(m):
        l[r] -= kref[r]
    it, res = prox_dual_kernel(L, l, mu, tol, max_iter, C, tmp, lam)
    # lines 17–19: roll-out with the constraint forces −Kᵀλ
    _item_rows(kA, kB, it_row, it_side, KI)
    force_sweep_kernel(jint, S, U, Lc, KI, it_row, lptr, lidx, dof, sg, jrow, se, lam, u, du, dpA, y)
    rollout_kernel(jint, gravity, S, U, Lc, c, u, qdd, acc, se, -1, y)
    return it, res


# --------------------------------------------------------------------------- proxLTL (dense)
@njit(cache=True)
def ltl_factor(lam, H):
    """Featherstone's LTL factorisation in place (RBDA Table 6.3): H = Lᵀ L with L lower
    triangular and the sparsity of H, lam (nv,) the dof parent array (−1 at roots)."""
    for k in range(H.shape[0] - 1, -1, -1):
        a = np.sqrt(H[k, k])
        H[k, k] = a
        i = lam[k]
        while i >= 0:
            H[k, i] /= a
            i = lam[i]
        i = lam[k]
        while i >= 0:
            j = i
            while j >= 0:
                H[i, j] -= H[k, i] * H[k, j]
                j = lam[j]
            i = lam[i]


@njit(cache=True)
def ltl_solve_t(lam, L, b):
    """b ← L⁻ᵀ b (back-substitution over the dof tree)."""
    for i in range(L.shape[0] - 1, -1, -1):
        b[i] /= L[i, i]
        j = lam[i]
        while j >= 0:
            b[j] -= L[i, j] * b[i]
            j = lam[j]


@njit(cache=True)
def ltl_solve(lam, L, b):
    """b ← L⁻¹ b (forward substitution over the dof tree)."""
    for i in range(L.shape[0]):
        j = lam[i]
        while j >= 0:
            b[i] -= L[i, j] * b[j]
            j = lam[j]
        b[i] /= L[i, i]


@njit(cache=True)
def prox_ltl_kernel(jint, jfloat, armature, gravity, dpar, q, v, tau, J, gamma, mu, tol, max_iter, M, Y, C, lam, a):
    """proxLTL (paper 002 Sec. II-D1, Eq. 13): M by CRBA, M = Lᵀ L by LTL, Y = L⁻ᵀ Jᵀ,
    Λ⁻¹ = Yᵀ Y, one dense Cholesky of Λ⁻¹ + I/μ, proximal iterations on the dual with
    b = J a_free + γ (γ: the drift minus the desired constraint accelerations), then
    a = a_free − L⁻¹ Y λ. J (m, nv) dense. Returns (iterations, ‖Λ⁻¹λ − b‖∞)."""
    m, nv = J.shape
    crba_kernel(jint, jfloat, armature, q, M)
    ltl_factor(dpar, M)
    rnea_kernel(jint, jfloat, armature, gravity, q, v, np.zeros(nv), np.zeros((jint.shape[0], 6)), a)
    for k in range(nv):
        a[k] = tau[k] - a[k]
    ltl_solve_t(dpar, M, a)
    ltl_solve(dpar, M, a)                      # a_free
    for r in range(m):
        for k in range(nv):
            Y[k, r] = J[r, k]
        ltl_solve_t(dpar, M, Y[:, r])
    G = Y.T @ Y
    b = J @ a + gamma
    it, res = prox_dual_kernel(G, b, mu, tol, max_iter, C, np.empty(m), lam)
    f = Y @ lam
    ltl_solve(dpar, M, f)
    for k in range(nv):
        a[k] -= f[k]
    return it, res


# --------------------------------------------------------------------------- prepared calls
# The prepared calls run on packed workspaces (`solvers.packed`): the entry kernels below make
# their arrays as views of fw/iw (`packed_views`) and are compiled without numba's reference
# counting where nothing allocates (constrainedABA; proxPV's dense Cholesky allocates).
SIZE_NAMES = ("n", "nv", "nq", "m", "nc", "ni", "nl", "nj", "no")
PACKED_FIELDS = (
    # (name, kind, shape: ints or size names; "n1" = n + 1)
    # the model and the constraint set (copied when prepared; `ConstrainedDynamics.refresh`)
    ("jint", "i", ("n", JI_SIZE)), ("jfloat", "f", ("n", JF_SIZE)), ("armature", "f", ("nv",)),
    ("gravity", "f", (3,)), ("cb_kind", "i", ("nc",)), ("cb_row", "i", ("nc",)), ("cb_nrows", "i", ("nc",)),
    ("cb_body", "i", ("nc", 2)), ("cb_f", "f", ("nc", 24)), ("dof", "i", ("m",)), ("sg", "f", ("m",)),
    # settings: μ, tol, max_iter, the unit-quaternion tolerance
    ("settings", "f", (4,)),
    # structure of the rows (`constrained._Work`): link rows CSR, joint rows, 𝒮_E
    ("krow", "i", ("m",)), ("lptr", "i", ("n1",)), ("lrow", "i", ("nl",)), ("jrow", "i", ("nj",)),
    ("se", "i", ("n",)),
    # proxPV items (`constrained._Work.pv`)
    ("it_row", "i", ("ni",)), ("it_side", "i", ("ni",)), ("lo", "i", ("n",)), ("hi", "i", ("n",)),
    ("pv_lptr", "i", ("n1",)), ("own", "i", ("no",)), ("pv_se", "i", ("n",)),
    # workspaces
    ("la", "i", ("m",)), ("lb", "i", ("m",)), ("oR", "f", ("n", 3, 3)), ("op", "f", ("n", 3)),
    ("S", "f", (6, "nv")), ("kA", "f", ("m", 6)), ("kB", "f", ("m", 6)),
    ("vel", "f", ("n", 6)), ("c", "f", ("n", 6)), ("pA", "f", ("n", 6)), ("dpA", "f", ("n", 6)),
    ("acc", "f", ("n", 6)), ("gk", "f", ("m",)), ("kref", "f", ("m",)), ("e", "f", ("m",)),
    ("IA", "f", ("n", 6, 6)), ("Lc", "f", ("n", 6, 6)), ("U", "f", (6, "nv")), ("u", "f", ("nv",)),
    ("du", "f", ("nv",)), ("qprev", "f", ("nv",)), ("zero_m", "f", ("m",)), ("zero_nv", "f", ("nv",)),
    ("zero3", "f", (3,)), ("scratch", "f", (4, 6, 6)),
    ("KI", "f", ("ni", 6)), ("Wk", "f", ("ni", 6)), ("Zk", "f", ("ni", 6)), ("L", "f", ("m", "m")),
    ("C", "f", ("m", "m")), ("l", "f", ("m",)), ("tmp", "f", ("m",)))
SIZE, SLOT = slots(SIZE_NAMES, PACKED_FIELDS)     # header slots of the sizes, offsets of the fields
SET_MU, SET_TOL, SET_MAX_ITER, SET_UNIT_TOL = range(4)              # entries of `settings`
Packed = namedtuple("Packed", SLOT._fields)


@njit(cache=True, inline="always")
def packed_views(fw, iw):
    """`Packed`: every field of `PACKED_FIELDS` as a view of fw or iw (no copies)."""
    n, nv, m, nc = iw[SIZE.n], iw[SIZE.nv], iw[SIZE.m], iw[SIZE.nc]
    ni, nl, nj, no = iw[SIZE.ni], iw[SIZE.nl], iw[SIZE.nj], iw[SIZE.no]
    return Packed(
        view2(iw, iw, SLOT.jint, n, JI_SIZE), view2(fw, iw, SLOT.jfloat, n, JF_SIZE),
        view1(fw, iw, SLOT.armature, nv),
        view1(fw, iw, SLOT.gravity, 3), view1(iw, iw, SLOT.cb_kind, nc), view1(iw, iw, SLOT.cb_row, nc),
        view1(iw, iw, SLOT.cb_nrows, nc), view2(iw, iw, SLOT.cb_body, nc, 2), view2(fw, iw, SLOT.cb_f, nc, 24),
        view1(iw, iw, SLOT.dof, m), view1(fw, iw, SLOT.sg, m),
        view1(fw, iw, SLOT.settings, 4),
        view1(iw, iw, SLOT.krow, m), view1(iw, iw, SLOT.lptr, n + 1), view1(iw, iw, SLOT.lrow, nl),
        view1(iw, iw, SLOT.jrow, nj), view1(iw, iw, SLOT.se, n),
        view1(iw, iw, SLOT.it_row, ni), view1(iw, iw, SLOT.it_side, ni), view1(iw, iw, SLOT.lo, n),
        view1(iw, iw, SLOT.hi, n), view1(iw, iw, SLOT.pv_lptr, n + 1), view1(iw, iw, SLOT.own, no),
        view1(iw, iw, SLOT.pv_se, n),
        view1(iw, iw, SLOT.la, m), view1(iw, iw, SLOT.lb, m), view3(fw, iw, SLOT.oR, n, 3, 3), view2(fw, iw, SLOT.op, n, 3),
        view2(fw, iw, SLOT.S, 6, nv), view2(fw, iw, SLOT.kA, m, 6),
        view2(fw, iw, SLOT.kB, m, 6),
        view2(fw, iw, SLOT.vel, n, 6), view2(fw, iw, SLOT.c, n, 6), view2(fw, iw, SLOT.pA, n, 6),
        view2(fw, iw, SLOT.dpA, n, 6), view2(fw, iw, SLOT.acc, n, 6), view1(fw, iw, SLOT.gk, m),
        view1(fw, iw, SLOT.kref, m), view1(fw, iw, SLOT.e, m),
        view3(fw, iw, SLOT.IA, n, 6, 6), view3(fw, iw, SLOT.Lc, n, 6, 6), view2(fw, iw, SLOT.U, 6, nv),
        view1(fw, iw, SLOT.u, nv), view1(fw, iw, SLOT.du, nv), view1(fw, iw, SLOT.qprev, nv),
        view1(fw, iw, SLOT.zero_m, m), view1(fw, iw, SLOT.zero_nv, nv), view1(fw, iw, SLOT.zero3, 3),
        view3(fw, iw, SLOT.scratch, 4, 6, 6),
        view2(fw, iw, SLOT.KI, ni, 6), view2(fw, iw, SLOT.Wk, ni, 6), view2(fw, iw, SLOT.Zk, ni, 6),
        view2(fw, iw, SLOT.L, m, m), view2(fw, iw, SLOT.C, m, m), view1(fw, iw, SLOT.l, m), view1(fw, iw, SLOT.tmp, m))


@njit(cache=True, inline="always")
def _rows_tuple(p):
    """The row tuple of `delassus_kernels.gather_kernel` with every row generic (K a)."""
    return (p.la, p.lb, p.kA, p.kB, p.dof, p.sg, p.krow, p.krow[:0], p.jint[:0, :2], p.cb_f[:0])


# status codes of the prepared calls
OK, BAD_Q, BAD_V, BAD_TAU, BAD_AREF, BAD_OUT, SINGULAR = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True, inline="always")
def _check_inputs(iw, p, q, v, tau, a_ref, qdd, lam):
    """OK, or the status of the first bad argument: q (nq,) finite with unit quaternions within
    the tolerance of `settings`; v, tau (nv,), a_ref (m,) finite; outputs qdd (nv,), lam (m,)."""
    nv, m = iw[SIZE.nv], iw[SIZE.m]
    if q.shape[0] != iw[SIZE.nq] or _q_status(p.jint, q, p.settings[SET_UNIT_TOL]) != -1:
        return BAD_Q
    if v.shape[0] != nv or not _all_finite(v):
        return BAD_V
    if tau.shape[0] != nv or not _all_finite(tau):
        return BAD_TAU
    if a_ref.shape[0] != m or not _all_finite(a_ref):
        return BAD_AREF
    if qdd.shape[0] != nv or lam.shape[0] != m:
        return BAD_OUT
    return OK


@njit(cache=True, inline="always")
def _prepare(p, gravity, q, v, a_ref):
    """`prepare_kernel` on the packed workspace; the world inertias H go into IA, where
    `articulate_kernel` starts Iᴬ from them without a copy."""
    prepare_kernel(p.jint, p.jfloat, gravity, q, v, p.cb_kind, p.cb_row, p.cb_nrows, p.cb_body, p.cb_f, p.dof,
                   a_ref, p.oR, p.op, p.S, p.IA, p.la, p.lb, p.kA, p.kB, p.vel, p.c, p.pA, p.gk, p.kref, p.scratch)


@njit(cache=True, inline="always")
def _caba(p, gravity, tau, qdd, lam):
    """`caba_kernel` on the packed workspace from λ⁰ = 0; lam in this code base's sign on exit."""
    for r in range(lam.shape[0]):
        lam[r] = 0.0
    it, res = caba_kernel(p.jint, p.armature, gravity, p.S, p.IA, tau, _rows_tuple(p), p.kA, p.krow, p.dof, p.sg,
                          p.kref, p.lptr, p.lrow, p.jrow, p.se, p.settings[SET_MU], p.settings[SET_TOL],
                          int(p.settings[SET_MAX_ITER]), p.c, p.pA, p.IA, p.U, p.Lc, p.u, p.du, p.dpA, p.qprev, p.e,
                          qdd, p.acc, lam, p.scratch)
    if it < 0:
        return SINGULAR, 0, np.inf
    for r in range(lam.shape[0]):
        lam[r] = -lam[r]
    return OK, it, res


@njit(cache=True, inline="always")
def _pv(p, gravity, tau, qdd, lam):
    """`pv_kernel` on the packed workspace; lam in this code base's sign on exit."""
    it, res = pv_kernel(p.jint, p.armature, gravity, p.S, p.IA, tau, p.la, p.lb, p.kA, p.kB, p.dof, p.sg, p.kref,
                        p.it_row, p.it_side, p.lo, p.hi, p.pv_lptr, p.own, p.jrow, p.pv_se, p.settings[SET_MU],
                        p.settings[SET_TOL], int(p.settings[SET_MAX_ITER]), p.c, p.pA, p.IA, p.U, p.Lc, p.u, p.du,
                        p.dpA, p.KI, p.Wk, p.Zk, p.L, p.C, p.l, p.tmp, lam, qdd, p.acc, p.scratch)
    if it < 0:
        return SINGULAR, 0, np.inf
    for r in range(lam.shape[0]):
        lam[r] = -lam[r]
    return OK, it, res


@njit(**_NOREF)
def caba_solve_kernel(fw, iw, q, v, tau, a_ref, qdd, lam):
    """One prepared constrainedABA call (paper 002 Alg. 3; unary rows): the input checks (status
    BAD_* before anything is written), `prepare_kernel`, `caba_kernel` from λ⁰ = 0 with the
    settings of the packed workspace. qdd (nv,), lam (m,) out, lam in this code base's sign
    (M q̈ = τ − c + Jᵀ lam). Returns (status, iterations, residual)."""
    p = packed_views(fw, iw)
    status = _check_inputs(iw, p, q, v, tau, a_ref, qdd, lam)
    if status != OK:
        return status, 0, np.inf
    _prepare(p, p.gravity, q, v, a_ref)
    return _caba(p, p.gravity, tau, qdd, lam)


# the proxPV entries take their arrays without reference counting (no meminfo made per argument,
# no atomic pair per view of the packed workspace); `pv_kernel` allocates (the dense Cholesky) and
# keeps it (`_nrt=True`, not inherited)
@njit(cache=True, _nrt=False)
def pv_solve_kernel(fw, iw, q, v, tau, a_ref, qdd, lam):
    """`caba_solve_kernel` by proxPV (paper 002 Alg. 4, `pv_kernel`; every row kind)."""
    p = packed_views(fw, iw)
    status = _check_inputs(iw, p, q, v, tau, a_ref, qdd, lam)
    if status != OK:
        return status, 0, np.inf
    _prepare(p, p.gravity, q, v, a_ref)
    return _pv(p, p.gravity, tau, qdd, lam)


@njit(cache=True, inline="always")
def _impulse_problem(p, q, v_free, corr):
    """The velocity-level problem of the impulse kernels: kinematics and rows at q, link
    velocities at v_free (no gravity), kref = −(J v_free + corr), no bias terms."""
    _prepare(p, p.zero3, q, v_free, corr)
    _gather(_rows_tuple(p), p.vel, v_free, p.e)
    for r in range(corr.shape[0]):
        p.kref[r] = -(p.e[r] + corr[r])
    for i in range(p.c.shape[0]):
        for a in range(6):
            p.c[i, a] = 0.0
            p.pA[i, a] = 0.0


@njit(**_NOREF)
def caba_impulse_kernel(fw, iw, q, v_free, corr, dv, lam):
    """The velocity-level (impulse) form of `caba_solve_kernel` for a time step: Δv minimising
    ½ ‖Δv‖²_M subject to J(q) (v_free + Δv) = −corr, by the same proximal iterations (paper 002
    Eq. 2 with a_free = 0, no velocity or gravity terms, and the desired constraint
    "accelerations" −(J v_free + corr)). dv (nv,), lam (m,) out: M Δv = Jᵀ lam (impulses, N·s).
    q, v_free, corr are trusted (the simulator's state). Returns (status, iterations, residual)."""
    p = packed_views(fw, iw)
    _impulse_problem(p, q, v_free, corr)
    return _caba(p, p.zero3, p.zero_nv, dv, lam)


@njit(cache=True, _nrt=False)
def pv_impulse_kernel(fw, iw, q, v_free, corr, dv, lam):
    """`caba_impulse_kernel` by proxPV (every row kind)."""
    p = packed_views(fw, iw)
    _impulse_problem(p, q, v_free, corr)
    return _pv(p, p.zero3, p.zero_nv, dv, lam)


@njit(cache=True, _nrt=False)
def refresh_kernel(fw, iw, jint, jfloat, armature, gravity, cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg):
    """The model's and the constraint set's arrays copied into the packed workspace again (in one
    call: the one-shot functions refresh their cached prepared object every time)."""
    p = packed_views(fw, iw)
    for dst, src in ((p.jint, jint), (p.cb_body, cb_body)):
        for i in range(src.shape[0]):
            for k in range(src.shape[1]):
                dst[i, k] = src[i, k]
    for dst, src in ((p.jfloat, jfloat), (p.cb_f, cb_f)):
        for i in range(src.shape[0]):
            for k in range(src.shape[1]):
                dst[i, k] = src[i, k]
    for dst, src in ((p.armature, armature), (p.gravity, gravity), (p.sg, sg)):
        for i in range(src.shape[0]):
            dst[i] = src[i]
    for dst, src in ((p.cb_kind, cb_kind), (p.cb_row, cb_row), (p.cb_nrows, cb_nrows), (p.dof, dof)):
        for i in range(src.shape[0]):
            dst[i] = src[i]

"""Numba kernels of the Delassus operator Λ⁻¹ = J M⁻¹ Jᵀ (paper 000 Alg. 1–3) and its dense
baseline; the damped inverse Λ_R (Alg. 4, LCABA) is in `lcaba_kernels`. World-frame,
Featherstone's symbols.

Rows (see `constraints.rows_kernel`): link rows r act on links la[r], lb[r] with spatial row
vectors kA[r], kB[r] (K of Eq. 5c), joint rows on dof[r] with sign sg[r] (𝒦 of Eq. 5d).
Kinematic quantities come from `models.Data`: S (6, nv) world motion subspaces, H (n, 6, 6)
body inertias, and the bias-free articulated factors U = Iᴬ S, D⁻¹ of plain ABA.
"""
from collections import namedtuple

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
from models.dynamics import cholesky_solve, minv_kernel
from models.jitcache import drop_stale_cache
from models.kinematics import velocity_kernel
from models.layout import JI_IV, JI_NV, JI_PARENT


# several kernels here compile in `models` kernels (minv_kernel, velocity_kernel and helpers)
drop_stale_cache(__file__, [models.dynamics.__file__, models.kinematics.__file__, models.spatial.__file__,
                            models.joints.__file__])


# --------------------------------------------------------------------------- Alg. 1 / 3
@njit(cache=True, _nrt=False)
def scatter_kernel(rows, x, fext, tau):
    """Jᵀ x at link level (paper 000 Alg. 1 lines 1–6): fᵢ = Σ K_eⁱᵀ x_e, τ = Σ 𝒦ᵀ x.

    rows = (la, lb, kA, kB, dof, sg, gen, crow, cbody, cf): contacts are applied per contact
    (F = R x_e at p on body 1, −F on body 2: (F, p × F)); the other rows (gen) one by one."""
    la, lb, kA, kB, dof, sg, gen, crow, cbody, cf = rows
    fext[:, :] = 0.0
    tau[:] = 0.0
    for k in range(crow.shape[0]):
        b1, b2 = cbody[k, 0], cbody[k, 1]
        if b1 == b2:
            continue
        r0 = crow[k]
        f = cf[k]
        x0, x1, x2 = x[r0], x[r0 + 1], x[r0 + 2]
        F0 = f[3] * x0 + f[4] * x1 + f[5] * x2
        F1 = f[6] * x0 + f[7] * x1 + f[8] * x2
        F2 = f[9] * x0 + f[10] * x1 + f[11] * x2
        px, py, pz = f[0], f[1], f[2]
        M0, M1, M2 = py * F2 - pz * F1, pz * F0 - px * F2, px * F1 - py * F0
        if b1 >= 0:
            fext[b1, 0] += F0; fext[b1, 1] += F1; fext[b1, 2] += F2
            fext[b1, 3] += M0; fext[b1, 4] += M1; fext[b1, 5] += M2
        if b2 >= 0:
            fext[b2, 0] -= F0; fext[b2, 1] -= F1; fext[b2, 2] -= F2
            fext[b2, 3] -= M0; fext[b2, 4] -= M1; fext[b2, 5] -= M2
    for e in range(gen.shape[0]):
        r = gen[e]
        xr = x[r]
        if dof[r] >= 0:
            tau[dof[r]] += sg[r] * xr
            continue
        a = la[r]
        if a >= 0:
            for c in range(6):
                fext[a, c] += kA[r, c] * xr
            b = lb[r]
            if b >= 0:
                for c in range(6):
                    fext[b, c] += kB[r, c] * xr


@njit(cache=True, _nrt=False)
def gather_kernel(rows, acc, qdd, y):
    """Constraint-space values from link motions (paper 000 Alg. 3 lines 4–8):
    y_e = Σ K_eⁱ aᵢ for link rows (for a contact Rᵀ (a₁(p) − a₂(p)), a(p) = a_O + ω̇ × p),
    y = 𝒦 q̈ for joint rows."""
    la, lb, kA, kB, dof, sg, gen, crow, cbody, cf = rows
    for k in range(crow.shape[0]):
        b1, b2 = cbody[k, 0], cbody[k, 1]
        r0 = crow[k]
        if b1 == b2:
            y[r0] = 0.0
            y[r0 + 1] = 0.0
            y[r0 + 2] = 0.0
            continue
        f = cf[k]
        px, py, pz = f[0], f[1], f[2]
        w0 = w1 = w2 = 0.0
        if b1 >= 0:
            a = acc[b1]
            w0 += a[0] + a[4] * pz - a[5] * py
            w1 += a[1] + a[5] * px - a[3] * pz
            w2 += a[2] + a[3] * py - a[4] * px
        if b2 >= 0:
            a = acc[b2]
            w0 -= a[0] + a[4] * pz - a[5] * py
            w1 -= a[1] + a[5] * px - a[3] * pz
            w2 -= a[2] + a[3] * py - a[4] * px
        y[r0] = f[3] * w0 + f[6] * w1 + f[9] * w2
        y[r0 + 1] = f[4] * w0 + f[7] * w1 + f[10] * w2
        y[r0 + 2] = f[5] * w0 + f[8] * w1 + f[11] * w2
    for e in range(gen.shape[0]):
        r = gen[e]
        if dof[r] >= 0:
            y[r] = sg[r] * qdd[dof[r]]
            continue
        s = 0.0
        a = la[r]
        if a >= 0:
            for c in range(6):
                s += kA[r, c] * acc[a, c]
            b = lb[r]
            if b >= 0:
                for c in range(6):
                    s += kB[r, c] * acc[b, c]
        y[r] = s


@njit(cache=True, _nrt=False)
def matvec_kernel(jint, S, U, Dinv, rows, x, y, fext, tau, qdd, acc, pA):
    """Λ⁻¹ x = J M⁻¹ Jᵀ x in two sweeps (paper 000 Alg. 1–3 merged, Sec. IV-D): the constraint
    forces initialise the backward force sweep of the bias-free ABA (Alg. 2) and the link
    accelerations of its forward sweep are read by the constraint rows (Alg. 3 line 6).
    O(n + m); the ABA sweeps are `models.dynamics.minv_kernel` on the cached U, D⁻¹."""
    scatter_kernel(rows, x, fext, tau)
    minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA)
    gather_kernel(rows, acc, qdd, y)


@njit(cache=True, _nrt=False)
def jt_minv_kernel(jint, S, U, Dinv, rows, x, fext, tau, qdd, acc, pA):
    """q̈ = M⁻¹ Jᵀ x (Alg. 1 merged into Alg. 2)."""
    scatter_kernel(rows, x, fext, tau)
    minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA)


@njit(cache=True, _nrt=False)
def contact_columns_kernel(jint, S, U, Dinv, rows, k, F, Q, A, hot, out):
    """The three columns of Λ⁻¹ = J M⁻¹ Jᵀ at contact k's rows crow[k] + j (j = 0, 1, 2) into
    out (3, m): `matvec_kernel` on the three unit impulses at once, in the same operations per
    column (each column equals that product's, bit for bit). The backward sweep runs only over the
    links that carry the contact's force (its bodies and their ancestors, hot (n,) bool); the
    forward sweep and the rows' gather over all. F, A (n, 6, 3) link forces and accelerations,
    Q (nv, 3) joint torques then accelerations (workspace). G1 lying on the floor (30 links, 55
    rows): a contact's three columns in 1.7–2.1 µs, one product 1.8 µs."""
    la, lb, kA, kB, dof, sg, gen, crow, cbody, cf = rows
    n = jint.shape[0]
    b1, b2 = cbody[k, 0], cbody[k, 1]
    if b1 == b2:                    # a contact within one body applies no force (`scatter_kernel`)
        out[:, :] = 0.0
        return
    for i in range(n):
        hot[i] = False
    f = cf[k]
    px, py, pz = f[0], f[1], f[2]
    for side in range(2):           # Alg. 1: the unit impulses' link forces, +(F, p × F) on b1, − on b2
        b = b1 if side == 0 else b2
        if b < 0:
            continue
        if not hot[b]:
            hot[b] = True
            F[b, :, :] = 0.0
        for j in range(3):
            F0, F1, F2 = f[3 + j], f[6 + j], f[9 + j]
            M0, M1, M2 = py * F2 - pz * F1, pz * F0 - px * F2, px * F1 - py * F0
            if side == 0:
                F[b, 0, j] += F0; F[b, 1, j] += F1; F[b, 2, j] += F2
                F[b, 3, j] += M0; F[b, 4, j] += M1; F[b, 5, j] += M2
            else:
                F[b, 0, j] -= F0; F[b, 1, j] -= F1; F[b, 2, j] -= F2
                F[b, 3, j] -= M0; F[b, 4, j] -= M1; F[b, 5, j] -= M2
    for i in range(n - 1, -1, -1):  # Alg. 2 backward: uᵢ = Sᵢᵀ fᵢ, f_λ(i) += fᵢ − Uᵢ D⁻¹ᵢ uᵢ
        if not hot[i]:
            continue
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        if par >= 0 and not hot[par]:
            hot[par] = True
            F[par, :, :] = 0.0
        for j in range(3):
            for kk in range(nvi):
                c = iv + kk
                Q[c, j] = (S[0, c] * F[i, 0, j] + S[1, c] * F[i, 1, j] + S[2, c] * F[i, 2, j] +
                           S[3, c] * F[i, 3, j] + S[4, c] * F[i, 4, j] + S[5, c] * F[i, 5, j])
            if par < 0:
                continue
            for kk in range(nvi):   # y = D⁻¹ᵢ uᵢ, held in A[i] (written by the forward sweep)
                y = 0.0
                for l in range(nvi):
                    y += Dinv[i, kk, l] * Q[iv + l, j]
                A[i, kk, j] = y
            for r in range(6):
                t = F[i, r, j]
                for kk in range(nvi):
                    t -= U[r, iv + kk] * A[i, kk, j]
                F[par, r, j] += t
    for i in range(n):              # forward: q̈ᵢ = D⁻¹ᵢ (uᵢ − Uᵢᵀ a_λ(i)), aᵢ = a_λ(i) + Sᵢ q̈ᵢ
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        if nvi == 1:                # one dof (most joints), written out
            d = Dinv[i, 0, 0]
            for j in range(3):
                w = Q[iv, j] if hot[i] else 0.0
                if par >= 0:
                    w -= (U[0, iv] * A[par, 0, j] + U[1, iv] * A[par, 1, j] + U[2, iv] * A[par, 2, j] +
                          U[3, iv] * A[par, 3, j] + U[4, iv] * A[par, 4, j] + U[5, iv] * A[par, 5, j])
                t = d * w
                Q[iv, j] = t
                for r in range(6):
                    A[i, r, j] = (A[par, r, j] if par >= 0 else 0.0) + S[r, iv] * t
            continue
        for j in range(3):
            for kk in range(nvi):   # w = u − Uᵢᵀ a_λ(i), held in A[i] until aᵢ is written
                c = iv + kk
                w = Q[c, j] if hot[i] else 0.0
                if par >= 0:
                    w -= (U[0, c] * A[par, 0, j] + U[1, c] * A[par, 1, j] + U[2, c] * A[par, 2, j] +
                          U[3, c] * A[par, 3, j] + U[4, c] * A[par, 4, j] + U[5, c] * A[par, 5, j])
                A[i, kk, j] = w
            for kk in range(nvi):
                t = 0.0
                for l in range(nvi):
                    t += Dinv[i, kk, l] * A[i, l, j]
                Q[iv + kk, j] = t
        for r in range(6):
            for j in range(3):
                t = A[par, r, j] if par >= 0 else 0.0
                for kk in range(nvi):
                    t += S[r, iv + kk] * Q[iv + kk, j]
                A[i, r, j] = t
    for e in range(crow.shape[0]):  # Alg. 3: the rows' values of the three columns
        c1, c2 = cbody[e, 0], cbody[e, 1]
        r0 = crow[e]
        if c1 == c2:
            for j in range(3):
                out[j, r0] = 0.0
                out[j, r0 + 1] = 0.0
                out[j, r0 + 2] = 0.0
            continue
        g = cf[e]
        qx, qy, qz = g[0], g[1], g[2]
        for j in range(3):
            w0 = w1 = w2 = 0.0
            if c1 >= 0:
                a = A[c1]
                w0 += a[0, j] + a[4, j] * qz - a[5, j] * qy
                w1 += a[1, j] + a[5, j] * qx - a[3, j] * qz
                w2 += a[2, j] + a[3, j] * qy - a[4, j] * qx
            if c2 >= 0:
                a = A[c2]
                w0 -= a[0, j] + a[4, j] * qz - a[5, j] * qy
                w1 -= a[1, j] + a[5, j] * qx - a[3, j] * qz
                w2 -= a[2, j] + a[3, j] * qy - a[4, j] * qx
            out[j, r0] = g[3] * w0 + g[6] * w1 + g[9] * w2
            out[j, r0 + 1] = g[4] * w0 + g[7] * w1 + g[10] * w2
            out[j, r0 + 2] = g[5] * w0 + g[8] * w1 + g[11] * w2
    for e in range(gen.shape[0]):
        r = gen[e]
        for j in range(3):
            if dof[r] >= 0:
                out[j, r] = sg[r] * Q[dof[r], j]
                continue
            s = 0.0
            a = la[r]
            if a >= 0:
                for c in range(6):
                    s += kA[r, c] * A[a, c, j]
                b = lb[r]
                if b >= 0:
                    for c in range(6):
                        s += kB[r, c] * A[b, c, j]
            out[j, r] = s


@njit(cache=True)
def jt_apply_kernel(jint, S, rows, x, fext, tau):
    """τ = Jᵀ x (paper 000 Alg. 1): scatter Kᵀx on links, then the backward force sweep
    τᵢ += Sᵢᵀ fᵢ, f_λ(i) += fᵢ (lines 7–10)."""
    scatter_kernel(rows, x, fext, tau)
    for i in range(jint.shape[0] - 1, -1, -1):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for k in range(iv, iv + nvi):
            s = 0.0
            for c in range(6):
                s += S[c, k] * fext[i, c]
            tau[k] += s
        if par >= 0:
            for c in range(6):
                fext[par, c] += fext[i, c]


@njit(cache=True, _nrt=False)
def j_apply_kernel(jint, S, rows, v, y, vel):
    """J v: link velocities by a forward sweep, then the rows (Alg. 3 with ν in place of ν̇)."""
    velocity_kernel(jint, S, v, vel)
    gather_kernel(rows, vel, v, y)


# --------------------------------------------------------------------------- dense baseline
@njit(cache=True)
def dense_jacobian_kernel(jint, S, la, lb, kA, kB, dof, sg, J):
    """J (m, nv) explicitly: row r = kA[r]ᵀ S over the ancestors of la[r] + the same for lb[r]."""
    J[:, :] = 0.0
    for r in range(J.shape[0]):
        if dof[r] >= 0:
            J[r, dof[r]] = sg[r]
            continue
        for side in range(2):
            i = la[r] if side == 0 else lb[r]
            while i >= 0:
                iv, nvi = jint[i, JI_IV], jint[i, JI_NV]
                for kcol in range(iv, iv + nvi):
                    s = 0.0
                    for c in range(6):
                        s += (kA[r, c] if side == 0 else kB[r, c]) * S[c, kcol]
                    J[r, kcol] += s
                i = jint[i, JI_PARENT]


# --------------------------------------------------------------------------- operator entry points
# The operators keep their state in named tuples so that one compiled function (here, in
# `lcaba_kernels`, and the ADMM loop in `solvers.admm` through `solvers.opstate`) can drive them
# without Python in between.
Geometry = namedtuple("Geometry", "jint S H U Dinv armature rows")
"""Kinematics and rows at q: the model's jint, armature; Data's S, H, U, D⁻¹; `Rows`."""
Rows = namedtuple("Rows", "la lb kA kB dof sg gen crow cbody cf")
"""Constraint rows (m,): links la, lb and their 6-vectors kA, kB, joint dof and sign; then the
contacts' (`ConstraintSet.contact_arrays`): first row, rows, bodies, points and frames."""
Blocks = namedtuple("Blocks", "cb_kind cb_row cb_nrows cb_body cb_f cb_slot la lb kA kB dof")
"""Constraint blocks (`ConstraintSet`'s cb_* and coupling slot) with the rows' links and vectors."""
EliminationArrays = namedtuple("EliminationArrays",
                               "use_a order par nb_ptr nb_node nb_slot nb_tr pair_ptr pair_slot pair_tr")
"""LCABA's elimination order and fill (`solvers.elimination`), use_a: free roots in link axes."""
Factors = namedtuple("Factors", "cs el Pd Po Pj Hd Ho Dj L Y Rv flag")
"""LCABA factors of Λ_R: `Blocks` cs, `EliminationArrays` el; unit-damping sums Pd, Po, Pj;
damped inertias Hd, Ho, Dj; factors L, Y; R⁻¹ = Rv (m,); flag (1,) int64: 1 once Pd, Po, Pj
hold Σ KᵀK at this q."""
Workspace = namedtuple("Workspace", "fext tau qdd acc pA g w y")
"""Sweep workspaces: (n, 6) fext, acc, pA, g, w; (nv,) tau, qdd; (m,) y."""
Explicit = namedtuple("Explicit", "G C d t")
"""The explicit operator: G (m, m), C its damped Cholesky factor (lower), d (m,), t (m,)."""


@njit(cache=True, inline="always")
def mf_matvec(geo, ws, x, out):
    """out = Λ⁻¹ x = J M⁻¹ Jᵀ x (paper 000 Alg. 1–3, `matvec_kernel`)."""
    jint, S, H, U, Dinv, armature, rows = geo
    fext, tau, qdd, acc, pA, g, w, y = ws
    matvec_kernel(jint, S, U, Dinv, rows, x, out, fext, tau, qdd, acc, pA)


# _nrt=True stated: it allocates, and numba compiles a callee whose options do not say with the NRT setting of
# its first caller, which may be a kernel compiled without it (`solvers.admm.polish_modes_into`)
@njit(cache=True, _nrt=True)
def dense_factor(dn, dscal, dvec, vec):
    """C = chol(G + diag d) (lower), the explicit baseline's damped factorisation (O(m³))."""
    G, C, d, t = dn
    m = G.shape[0]
    for r in range(m):
        d[r] = dvec[r] if vec else dscal
    for i in range(m):
        for j in range(m):
            C[i, j] = G[i, j]
        C[i, i] += d[i]
    C[:, :] = np.linalg.cholesky(C)


@njit(cache=True, inline="always")
def dense_solve(dn, b, out):
    """out = (G + diag d)⁻¹ b by the two triangular solves with C."""
    G, C, d, t = dn
    cholesky_solve(C, G.shape[0], b, t, out)

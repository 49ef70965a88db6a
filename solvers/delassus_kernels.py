"""Numba kernels of the Delassus operators (paper 000). World-frame, Featherstone's symbols.

Rows (see `constraints.rows_kernel`): link rows r act on links la[r], lb[r] with spatial row
vectors kA[r], kB[r] (K of Eq. 5c), joint rows on dof[r] with sign sg[r] (𝒦 of Eq. 5d).
Kinematic quantities come from `models.Data`: S (6, nv) world motion subspaces, H (n, 6, 6)
body inertias, and the bias-free articulated factors U = Iᴬ S, D⁻¹ of plain ABA.
"""
import numpy as np
from numba import njit

from models.dynamics import minv_kernel
from models.kinematics import velocity_kernel


# --------------------------------------------------------------------------- Alg. 1 / 3
@njit(cache=True)
def scatter_kernel(la, lb, kA, kB, dof, sg, x, fext, tau):
    """Jᵀ x at link level (paper 000 Alg. 1 lines 1–6): fᵢ = Σ K_eⁱᵀ x_e, τ = Σ 𝒦ᵀ x."""
    fext[:, :] = 0.0
    tau[:] = 0.0
    for r in range(x.shape[0]):
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


@njit(cache=True)
def gather_kernel(la, lb, kA, kB, dof, sg, acc, qdd, y):
    """Constraint-space values from link motions (paper 000 Alg. 3 lines 4–8):
    y_e = Σ K_eⁱ aᵢ for link rows, y = 𝒦 q̈ for joint rows."""
    for r in range(y.shape[0]):
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


@njit(cache=True)
def matvec_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, sg, x, y, fext, tau, qdd, acc, pA):
    """Λ⁻¹ x = J M⁻¹ Jᵀ x in two sweeps (paper 000 Alg. 1–3 merged, Sec. IV-D): the constraint
    forces initialise the backward force sweep of the bias-free ABA (Alg. 2) and the link
    accelerations of its forward sweep are read by the constraint rows (Alg. 3 line 6).
    O(n + m); the ABA sweeps are `models.dynamics.minv_kernel` on the cached U, D⁻¹."""
    scatter_kernel(la, lb, kA, kB, dof, sg, x, fext, tau)
    minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA)
    gather_kernel(la, lb, kA, kB, dof, sg, acc, qdd, y)


@njit(cache=True)
def jt_minv_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, sg, x, fext, tau, qdd, acc, pA):
    """q̈ = M⁻¹ Jᵀ x (Alg. 1 merged into Alg. 2)."""
    scatter_kernel(la, lb, kA, kB, dof, sg, x, fext, tau)
    minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA)


@njit(cache=True)
def j_apply_kernel(jint, S, la, lb, kA, kB, dof, sg, v, y, vel):
    """J v: link velocities by a forward sweep, then the rows (Alg. 3 with ν in place of ν̇)."""
    velocity_kernel(jint, S, v, vel)
    gather_kernel(la, lb, kA, kB, dof, sg, vel, v, y)


@njit(cache=True)
def lanczos_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, sg, v0, k, fext, tau, qdd, acc, pA):
    """Largest eigenvalue of Λ⁻¹ by k steps of Lanczos with full reorthogonalisation on the
    matrix-free product (for the ADMM spectral rule). Returns the largest Ritz value."""
    m = v0.shape[0]
    k = min(k, m)
    V = np.zeros((k + 1, m))
    alpha = np.zeros(k)
    beta = np.zeros(k)
    nrm = np.sqrt(np.sum(v0 * v0))
    V[0] = v0 / nrm
    w = np.empty(m)
    kk = k
    for j in range(k):
        matvec_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, sg, V[j], w, fext, tau, qdd, acc, pA)
        alpha[j] = np.dot(w, V[j])
        for it in range(2):
            for i in range(j + 1):
                w -= np.dot(w, V[i]) * V[i]
        b = np.sqrt(np.sum(w * w))
        beta[j] = b
        if b <= 1e-14 * max(abs(alpha[j]), 1e-300):
            kk = j + 1
            break
        V[j + 1] = w / b
    T = np.zeros((kk, kk))
    for j in range(kk):
        T[j, j] = alpha[j]
        if j + 1 < kk:
            T[j, j + 1] = beta[j]
            T[j + 1, j] = beta[j]
    ev = np.linalg.eigvalsh(T)
    return ev[-1]


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
                iv, nvi = jint[i, 3], jint[i, 5]
                for kcol in range(iv, iv + nvi):
                    s = 0.0
                    for c in range(6):
                        s += (kA[r, c] if side == 0 else kB[r, c]) * S[c, kcol]
                    J[r, kcol] += s
                i = jint[i, 0]


# --------------------------------------------------------------------------- Λ_R: assembly
@njit(cache=True)
def assemble_unit_kernel(la, lb, kA, kB, dof, row_slot, nbody, nslots, nv):
    """Σ_e K_eⁱᵀ K_eⁱ per link (Pd), Σ K_eⁱᵀ K_eʲ per coupling slot (Po) and the number of
    joint rows per dof (Pj): the constraint inertias of Alg. 4 lines 3–11 for unit damping.
    Depends on q only; a scalar damping then scales them (Λ'_R re-evaluation)."""
    Pd = np.zeros((nbody, 6, 6))
    Po = np.zeros((nslots, 6, 6))
    Pj = np.zeros(nv)
    for r in range(la.shape[0]):
        if dof[r] >= 0:
            Pj[dof[r]] += 1.0
            continue
        a = la[r]
        if a < 0:
            continue
        for i in range(6):
            ka = kA[r, i]
            for j in range(6):
                Pd[a, i, j] += ka * kA[r, j]
        b = lb[r]
        if b >= 0:
            for i in range(6):
                kb = kB[r, i]
                for j in range(6):
                    Pd[b, i, j] += kb * kB[r, j]
            s = row_slot[r]
            if a < b:
                for i in range(6):
                    for j in range(6):
                        Po[s, i, j] += kA[r, i] * kB[r, j]
            else:
                for i in range(6):
                    for j in range(6):
                        Po[s, i, j] += kB[r, i] * kA[r, j]
    return Pd, Po, Pj


@njit(cache=True)
def assemble_scalar_kernel(H, armature, Pd, Po, Pj, rho, Hd, Ho, Dj):
    """Alg. 4 lines 1–11 for R = ρ I: H_{i,i} = Hᵢ + ρ Σ KᵀK, H_{i,j} = ρ Σ KᵢᵀKⱼ, D = armature + ρ 𝒦ᵀ𝒦."""
    n = H.shape[0]
    for i in range(n):
        for a in range(6):
            for b in range(6):
                Hd[i, a, b] = H[i, a, b] + rho * Pd[i, a, b]
    Ho[:, :, :] = 0.0
    for s in range(Po.shape[0]):
        for a in range(6):
            for b in range(6):
                Ho[s, a, b] = rho * Po[s, a, b]
    for k in range(Dj.shape[0]):
        Dj[k] = armature[k] + rho * Pj[k]


@njit(cache=True)
def assemble_vector_kernel(H, armature, la, lb, kA, kB, dof, row_slot, Rv, Hd, Ho, Dj):
    """Alg. 4 lines 1–11 for a diagonal R = diag(Rv): Hᵢ,ᵢ += Kⁱᵀ R_e Kⁱ, H_{i,j} += Kⁱᵀ R_e Kʲ."""
    Hd[:, :, :] = H
    Ho[:, :, :] = 0.0
    Dj[:] = armature
    for r in range(la.shape[0]):
        w = Rv[r]
        if dof[r] >= 0:
            Dj[dof[r]] += w
            continue
        a = la[r]
        if a < 0:
            continue
        for i in range(6):
            ka = w * kA[r, i]
            for j in range(6):
                Hd[a, i, j] += ka * kA[r, j]
        b = lb[r]
        if b >= 0:
            for i in range(6):
                kb = w * kB[r, i]
                for j in range(6):
                    Hd[b, i, j] += kb * kB[r, j]
            s = row_slot[r]
            if a < b:
                for i in range(6):
                    for j in range(6):
                        Ho[s, i, j] += w * kA[r, i] * kB[r, j]
            else:
                for i in range(6):
                    for j in range(6):
                        Ho[s, i, j] += w * kB[r, i] * kA[r, j]


# --------------------------------------------------------------------------- Λ_R: LCABA
@njit(cache=True, inline="always")
def _add_block(Ho, s, X, tr):
    if tr:
        for i in range(6):
            for j in range(6):
                Ho[s, i, j] += X[j, i]
    else:
        for i in range(6):
            for j in range(6):
                Ho[s, i, j] += X[i, j]


@njit(cache=True)
def lcaba_factor_kernel(jint, S, use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr,
                        pair_ptr, pair_slot, pair_tr, Hd, Ho, Dj, L, Y):
    """Backward sweep of the loop-constrained ABA on M_R = M + Jᵀ R J (paper 000 Alg. 4,
    lines 12–32), the part that depends on the damping: done once per `update_damping`.

    For link i in the elimination order 𝒮ᴱ with neighbours k ∈ 𝒩ᵢ ∪ {λ(i)} (parent first):
      C_k = H_{i,k} (+ H_{i,i} for the parent), D = Sᵢᵀ H_{i,i} Sᵢ + 𝒟ᵢ = L Lᵀ,
      Ŷ_k = L⁻¹ Sᵢᵀ C_k                          (stored in Y, L stored in L)
      H_{k,l} ← H_{k,l} − Ŷ_kᵀ Ŷ_l  for k, l ∈ 𝒩ᵢ ∪ {λ(i)}        (Alg. 4 lines 22–28)
      H_{λ,λ} ← H_{λ,λ} + H_{i,i} + H_{i,λ} + H_{i,λ}ᵀ, H_{λ,j} ← H_{λ,j} + H_{i,j}  (lines 23, 29–30)
    With the parent's entry this is ABA's Iᴬ_λ += Iᴬᵢ − U D⁻¹ Uᵀ (Pᵢ = I − U D⁻¹ Sᵀ, line 16).
    Free roots (use_a) are eliminated in link coordinates (Sᵢ = I), the same up to a change of
    variables. Hd (n, 6, 6) and Ho (nslots, 6, 6) are modified in place.
    """
    nsteps = order.shape[0]
    C = np.empty((12, 6, 6))
    Dm = np.empty((6, 6))
    Lt = np.empty((6, 6))
    X = np.empty((6, 6))
    for t in range(nsteps):
        i = order[t]
        p = par[t]
        iv, nvi = jint[i, 3], jint[i, 5]
        e0, e1 = nb_ptr[t], nb_ptr[t + 1]
        deg = e1 - e0
        if deg > C.shape[0]:
            C = np.empty((2 * deg, 6, 6))
        for e in range(deg):
            s = nb_slot[e0 + e]
            if e == 0 and p >= 0:
                for a in range(6):
                    for b in range(6):
                        C[e, a, b] = Hd[i, a, b]
            else:
                C[e, :, :] = 0.0
            if s >= 0:
                if nb_tr[e0 + e]:
                    for a in range(6):
                        for b in range(6):
                            C[e, a, b] += Ho[s, b, a]
                else:
                    for a in range(6):
                        for b in range(6):
                            C[e, a, b] += Ho[s, a, b]
        q0 = pair_ptr[t]
        if nvi == 0:
            # a fixed link moves with its parent: hand its inertia and couplings over
            if p >= 0:
                s0 = nb_slot[e0]
                for a in range(6):
                    for b in range(6):
                        v = C[0, a, b]
                        if s0 >= 0:
                            v += C[0, b, a] - Hd[i, b, a]
                        Hd[p, a, b] += v
                for e in range(1, deg):
                    _add_block(Ho, pair_slot[q0 + e - 1], C[e], pair_tr[q0 + e - 1])
            continue
        na = 6 if use_a[i] else nvi
        # D = Sᵀ H S + 𝒟 (or H in link coordinates) and its Cholesky factor
        if use_a[i]:
            for a in range(6):
                for b in range(6):
                    Dm[a, b] = Hd[i, a, b]
        else:
            for a in range(6):
                for c in range(nvi):
                    s = 0.0
                    for b in range(6):
                        s += Hd[i, a, b] * S[b, iv + c]
                    X[a, c] = s
            for r in range(nvi):
                for c in range(nvi):
                    s = 0.0
                    for a in range(6):
                        s += S[a, iv + r] * X[a, c]
                    Dm[r, c] = s
                Dm[r, r] += Dj[iv + r]
        for r in range(na):
            for c in range(r + 1):
                s = Dm[r, c]
                for k in range(c):
                    s -= Lt[r, k] * Lt[c, k]
                if r == c:
                    Lt[r, r] = np.sqrt(s)
                else:
                    Lt[r, c] = s / Lt[c, c]
        for r in range(na):
            for c in range(na):
                L[i, r, c] = Lt[r, c] if c <= r else 0.0
        # Ŷ_e = L⁻¹ Sᵀ C_e
        for e in range(deg):
            E = e0 + e
            for c in range(6):
                for r in range(na):
                    if use_a[i]:
                        s = C[e, r, c]
                    else:
                        s = 0.0
                        for a in range(6):
                            s += S[a, iv + r] * C[e, a, c]
                    for k in range(r):
                        s -= Lt[r, k] * Y[E, k, c]
                    Y[E, r, c] = s / Lt[r, r]
        # Schur complement on the neighbours (fill-in), parent transfer
        q = q0
        for ea in range(deg):
            ka = nb_node[e0 + ea]
            Ea = e0 + ea
            for eb in range(ea, deg):
                Eb = e0 + eb
                for a in range(6):
                    for b in range(6):
                        s = 0.0
                        for r in range(na):
                            s -= Y[Ea, r, a] * Y[Eb, r, b]
                        X[a, b] = s
                if ea == 0 and p >= 0:
                    if eb == 0:
                        s0 = nb_slot[e0]
                        for a in range(6):
                            for b in range(6):
                                v = C[0, a, b]
                                if s0 >= 0:
                                    v += C[0, b, a] - Hd[i, b, a]
                                X[a, b] += v
                    else:
                        for a in range(6):
                            for b in range(6):
                                X[a, b] += C[eb, a, b]
                if ea == eb:
                    for a in range(6):
                        for b in range(6):
                            Hd[ka, a, b] += X[a, b]
                else:
                    _add_block(Ho, pair_slot[q], X, pair_tr[q])
                    q += 1


@njit(cache=True)
def lcaba_solve_kernel(jint, S, use_a, order, par, nb_ptr, nb_node, L, Y,
                       la, lb, kA, kB, dof, sg, Rv, b, lam, g, tau, w, acc, qdd, y):
    """λ = Λ_R b = (R⁻¹ + J M⁻¹ Jᵀ)⁻¹ b by the matrix inversion lemma (paper 000 Eq. 8–9):
    λ_R = R b, q̈_R = M_R⁻¹ Jᵀ λ_R (Alg. 4 sweeps on the stored factors), λ = R (b − J q̈_R).
    Jᵀ is merged into the backward sweep and J into the forward sweep (Sec. V-D). O(n + m + fill).
    """
    m = b.shape[0]
    for r in range(m):
        lam[r] = Rv[r] * b[r]
    scatter_kernel(la, lb, kA, kB, dof, sg, lam, g, tau)
    nsteps = order.shape[0]
    u = np.empty(6)
    # backward sweep (Alg. 4 lines 13–32, the force part)
    for t in range(nsteps):
        i = order[t]
        p = par[t]
        iv, nvi = jint[i, 3], jint[i, 5]
        if nvi == 0:
            if p >= 0:
                for c in range(6):
                    g[p, c] += g[i, c]
            continue
        if use_a[i]:
            na = 6
            for c in range(6):
                u[c] = g[i, c]
        else:
            na = nvi
            for r in range(nvi):
                s = tau[iv + r]
                for c in range(6):
                    s += S[c, iv + r] * g[i, c]
                u[r] = s
        for r in range(na):       # w = L⁻¹ u
            s = u[r]
            for k in range(r):
                s -= L[i, r, k] * w[i, k]
            w[i, r] = s / L[i, r, r]
        for E in range(nb_ptr[t], nb_ptr[t + 1]):
            k = nb_node[E]
            for c in range(6):
                s = 0.0
                for r in range(na):
                    s += Y[E, r, c] * w[i, r]
                g[k, c] -= s
        if p >= 0:
            for c in range(6):
                g[p, c] += g[i, c]
    # forward sweep (lines 34–38)
    for t in range(nsteps - 1, -1, -1):
        i = order[t]
        p = par[t]
        iv, nvi = jint[i, 3], jint[i, 5]
        if nvi == 0:
            for c in range(6):
                acc[i, c] = acc[p, c] if p >= 0 else 0.0
            continue
        na = 6 if use_a[i] else nvi
        for r in range(na):
            u[r] = w[i, r]
        for E in range(nb_ptr[t], nb_ptr[t + 1]):
            k = nb_node[E]
            for r in range(na):
                s = 0.0
                for c in range(6):
                    s += Y[E, r, c] * acc[k, c]
                u[r] -= s
        for r in range(na - 1, -1, -1):   # x = L⁻ᵀ u
            s = u[r]
            for k in range(r + 1, na):
                s -= L[i, k, r] * u[k]
            u[r] = s / L[i, r, r]
        if use_a[i]:
            for c in range(6):
                acc[i, c] = u[c]
        else:
            for c in range(6):
                s = acc[p, c] if p >= 0 else 0.0
                for r in range(nvi):
                    s += S[c, iv + r] * u[r]
                acc[i, c] = s
            for r in range(nvi):
                qdd[iv + r] = u[r]
    gather_kernel(la, lb, kA, kB, dof, sg, acc, qdd, y)
    for r in range(m):
        lam[r] = Rv[r] * (b[r] - y[r])

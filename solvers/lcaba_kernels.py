"""Numba kernels of the damped inverse Λ_R = (J M⁻¹ Jᵀ + R⁻¹)⁻¹ by LCABA (Carpentier et al.,
paper 000 Alg. 4): the constraint inertias (lines 1–11), the elimination of the augmented tree
with its fill (the backward sweep, lines 12–32) and the solve sweeps (Eq. 9); `mf_factor` and
`mf_solve` on the operator's named tuples (`delassus_kernels.Geometry`, `Factors`,
`Workspace`). Rows and kinematics as in `delassus_kernels`.
"""
import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.scratch
import models.spatial
from models.dynamics import joint_torque_into
from models.jitcache import drop_stale_cache
from models.layout import JI_IV, JI_NV
from models.scratch import stack_matrix

from . import delassus_kernels as _dk
from .constraints import CONTACT
from .delassus_kernels import gather_kernel, scatter_kernel

drop_stale_cache(__file__, [_dk.__file__, models.dynamics.__file__, models.kinematics.__file__, models.spatial.__file__,
                            models.joints.__file__, models.scratch.__file__])


# --------------------------------------------------------------------------- Λ_R: assembly
@njit(cache=True, inline="always")
def _outer_add(P, i, k, w, x, y):
    """P[i] += w x yᵀ for 6-vectors (rows of kA/kB)."""
    for a in range(6):
        xa = w * x[a]
        for b in range(6):
            P[i, a, b] += xa * y[b]


@njit(cache=True, inline="always")
def _contact_block(b1, b2, f, Rv, r0, slot, Hd, Ho, W, A, B):
    """Σ_r w_r k_r k_rᵀ for the three rows k_r = (t_r, p × t_r) of a contact with frame R and
    weights w = Rv[r0:r0+3]: X W Xᵀ = [[W, −W p̂], [p̂ W, −p̂ W p̂]] with W = R diag(w) Rᵀ,
    X = [I; p̂]; added to both links, its negative to their coupling block."""
    if b1 == b2:
        return
    px, py, pz = f[0], f[1], f[2]
    W[:, :] = 0.0
    for k in range(3):
        w = Rv[r0 + k]
        t0, t1, t2 = f[3 + k], f[6 + k], f[9 + k]      # column k of R (row-major storage)
        W[0, 0] += w * t0 * t0; W[0, 1] += w * t0 * t1; W[0, 2] += w * t0 * t2
        W[1, 1] += w * t1 * t1; W[1, 2] += w * t1 * t2; W[2, 2] += w * t2 * t2
    W[1, 0] = W[0, 1]; W[2, 0] = W[0, 2]; W[2, 1] = W[1, 2]
    # A = p̂ W
    for j in range(3):
        A[0, j] = -pz * W[1, j] + py * W[2, j]
        A[1, j] = pz * W[0, j] - px * W[2, j]
        A[2, j] = -py * W[0, j] + px * W[1, j]
    for i in range(3):
        for j in range(3):
            B[i, j] = W[i, j]
            B[3 + i, j] = A[i, j]
            B[i, 3 + j] = A[j, i]
        # −p̂ W p̂ = −A p̂ : (A p̂)[i] = A[i] × ... column-wise: (A p̂)[:, j] = A (p̂ e_j)
        B[3 + i, 3] = -(A[i, 1] * pz - A[i, 2] * py)
        B[3 + i, 4] = -(-A[i, 0] * pz + A[i, 2] * px)
        B[3 + i, 5] = -(A[i, 0] * py - A[i, 1] * px)
    for side in range(2):
        i = b1 if side == 0 else b2
        if i >= 0:
            for a in range(6):
                for b in range(6):
                    Hd[i, a, b] += B[a, b]
    if b1 >= 0 and b2 >= 0:
        for a in range(6):
            for b in range(6):
                Ho[slot, a, b] -= B[a, b]


@njit(cache=True, _nrt=False)
def damped_inertias_kernel(Rv, H, armature, cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof,
                           Hd, Ho, Dj):
    """Constraint inertias of paper 000 Alg. 4 lines 1–11 for R = diag(Rv), row by row:
    H_{i,i} = Hᵢ + Σ_e K_eⁱᵀ R_e K_eⁱ into Hd (n, 6, 6), H_{i,j} = Σ_e K_eⁱᵀ R_e K_eʲ into the
    coupling slots Ho, 𝒟 = armature + Σ 𝒦ᵀ R 𝒦 into Dj (nv,) for joint rows."""
    damped_inertias_into(Rv, H, armature, cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof,
                         Hd, Ho, Dj, stack_matrix(3, 3), stack_matrix(3, 3), stack_matrix(6, 6))


@njit(cache=True, _nrt=False)
def damped_inertias_into(Rv, H, armature, cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof,
                         Hd, Ho, Dj, Ws, As, Bs):
    """`damped_inertias_kernel` on the caller's workspaces Ws, As (3, 3), Bs (6, 6), compiled
    without numba's reference counting."""
    nbk = cb_kind.shape[0]
    for i in range(H.shape[0]):       # Hd = H (an element loop: a whole-array copy may allocate)
        for a in range(6):
            for b in range(6):
                Hd[i, a, b] = H[i, a, b]
    Ho[:, :, :] = 0.0
    for k in range(Dj.shape[0]):
        Dj[k] = armature[k]
    for c in range(nbk):
        if cb_kind[c] == CONTACT:
            _contact_block(cb_body[c, 0], cb_body[c, 1], cb_f[c], Rv, cb_row[c], cb_slot[c], Hd, Ho, Ws, As, Bs)
            continue
        for r in range(cb_row[c], cb_row[c] + cb_nrows[c]):
            w = Rv[r]
            if dof[r] >= 0:
                Dj[dof[r]] += w
                continue
            a = la[r]
            if a < 0:
                continue
            _outer_add(Hd, a, 0, w, kA[r], kA[r])
            b = lb[r]
            if b >= 0:
                _outer_add(Hd, b, 0, w, kB[r], kB[r])
                s = cb_slot[c]
                if a < b:
                    _outer_add(Ho, s, 0, w, kA[r], kB[r])
                else:
                    _outer_add(Ho, s, 0, w, kB[r], kA[r])


@njit(cache=True, _nrt=False)
def unit_sums_kernel(cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof, Pd, Po, Pj):
    """The unit-damping sums of Alg. 4 lines 1–11 (R = I): Pd (n, 6, 6) = Σ Kᵀ K per body, Po
    per coupling slot, Pj (nv,) per joint row. They depend on q only; `scaled_inertias_kernel`
    makes any R = ρ I from them. For a contact the three rows share the point p and an
    orthonormal frame, so Σ_r k_r k_rᵀ = [[I, −p̂], [p̂, −p̂²]] and its coupling block is the
    negative of that."""
    nbk = cb_kind.shape[0]
    Pd[:, :, :] = 0.0
    Po[:, :, :] = 0.0
    Pj[:] = 0.0
    for c in range(nbk):
        r0, nr = cb_row[c], cb_nrows[c]
        if cb_kind[c] == CONTACT:
            b1, b2 = cb_body[c, 0], cb_body[c, 1]
            if b1 == b2:
                continue
            px, py, pz = cb_f[c, 0], cb_f[c, 1], cb_f[c, 2]
            # P = [[I, -p^], [p^, -p^ p^]]
            for side in range(2):
                i = b1 if side == 0 else b2
                if i < 0:
                    continue
                Pd[i, 0, 0] += 1.0; Pd[i, 1, 1] += 1.0; Pd[i, 2, 2] += 1.0
                Pd[i, 0, 4] += pz; Pd[i, 0, 5] -= py; Pd[i, 1, 3] -= pz
                Pd[i, 1, 5] += px; Pd[i, 2, 3] += py; Pd[i, 2, 4] -= px
                Pd[i, 4, 0] += pz; Pd[i, 5, 0] -= py; Pd[i, 3, 1] -= pz
                Pd[i, 5, 1] += px; Pd[i, 3, 2] += py; Pd[i, 4, 2] -= px
                Pd[i, 3, 3] += py * py + pz * pz; Pd[i, 4, 4] += px * px + pz * pz
                Pd[i, 5, 5] += px * px + py * py
                Pd[i, 3, 4] -= px * py; Pd[i, 4, 3] -= px * py
                Pd[i, 3, 5] -= px * pz; Pd[i, 5, 3] -= px * pz
                Pd[i, 4, 5] -= py * pz; Pd[i, 5, 4] -= py * pz
            if b1 >= 0 and b2 >= 0:
                s = cb_slot[c]
                Po[s, 0, 0] -= 1.0; Po[s, 1, 1] -= 1.0; Po[s, 2, 2] -= 1.0
                Po[s, 0, 4] -= pz; Po[s, 0, 5] += py; Po[s, 1, 3] += pz
                Po[s, 1, 5] -= px; Po[s, 2, 3] -= py; Po[s, 2, 4] += px
                Po[s, 4, 0] -= pz; Po[s, 5, 0] += py; Po[s, 3, 1] += pz
                Po[s, 5, 1] -= px; Po[s, 3, 2] -= py; Po[s, 4, 2] += px
                Po[s, 3, 3] -= py * py + pz * pz; Po[s, 4, 4] -= px * px + pz * pz
                Po[s, 5, 5] -= px * px + py * py
                Po[s, 3, 4] += px * py; Po[s, 4, 3] += px * py
                Po[s, 3, 5] += px * pz; Po[s, 5, 3] += px * pz
                Po[s, 4, 5] += py * pz; Po[s, 5, 4] += py * pz
            continue
        for r in range(r0, r0 + nr):
            if dof[r] >= 0:
                Pj[dof[r]] += 1.0
                continue
            a = la[r]
            if a < 0:
                continue
            _outer_add(Pd, a, 0, 1.0, kA[r], kA[r])
            b = lb[r]
            if b >= 0:
                _outer_add(Pd, b, 0, 1.0, kB[r], kB[r])
                s = cb_slot[c]
                if a < b:
                    _outer_add(Po, s, 0, 1.0, kA[r], kB[r])
                else:
                    _outer_add(Po, s, 0, 1.0, kB[r], kA[r])


@njit(cache=True, _nrt=False)
def scaled_inertias_kernel(rho, H, armature, Pd, Po, Pj, Hd, Ho, Dj):
    """Constraint inertias of Alg. 4 lines 1–11 for R = ρ I from the unit sums
    (`unit_sums_kernel`): Hd = H + ρ Pd, Ho = ρ Po, Dj = armature + ρ Pj, O(n + slots)."""
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


@njit(cache=True, inline="always")
def _schur(Ya, Yb, na, X):
    """X = −Ŷaᵀ Ŷb (6×6) for Ŷ of na rows."""
    if na == 6:
        for a in range(6):
            y0, y1, y2, y3, y4, y5 = Ya[0, a], Ya[1, a], Ya[2, a], Ya[3, a], Ya[4, a], Ya[5, a]
            for b in range(6):
                X[a, b] = -(y0 * Yb[0, b] + y1 * Yb[1, b] + y2 * Yb[2, b]
                            + y3 * Yb[3, b] + y4 * Yb[4, b] + y5 * Yb[5, b])
    elif na == 1:                 # a one-dof joint: the same operations, unrolled
        for a in range(6):
            ya = Ya[0, a]
            for b in range(6):
                s = 0.0
                s -= ya * Yb[0, b]
                X[a, b] = s
    else:
        for a in range(6):
            for b in range(6):
                s = 0.0
                for r in range(na):
                    s -= Ya[r, a] * Yb[r, b]
                X[a, b] = s


@njit(cache=True, inline="always")
def _schur_sym(Ya, na, X):
    """X = −Ŷaᵀ Ŷa (6×6, symmetric: upper triangle computed, mirrored)."""
    if na == 1:                   # a one-dof joint: the same operations, unrolled
        for a in range(6):
            ya = Ya[0, a]
            for b in range(a, 6):
                s = 0.0
                s -= ya * Ya[0, b]
                X[a, b] = s
                X[b, a] = s
        return
    for a in range(6):
        for b in range(a, 6):
            s = 0.0
            for r in range(na):
                s -= Ya[r, a] * Ya[r, b]
            X[a, b] = s
            X[b, a] = s


@njit(cache=True, inline="always")
def _parent_block_add(C0, Hi, coupled, out):
    """out += H_{λ,λ}'s share of link i (Alg. 4 line 23): C₀ = H_{i,i} + H_{i,λ} (the parent's
    neighbour block), plus H_{i,λ}ᵀ = C₀ᵀ − H_{i,i} when i is coupled to its parent (6 × 6)."""
    for a in range(6):
        for b in range(6):
            v = C0[a, b]
            if coupled:
                v += C0[b, a] - Hi[b, a]
            out[a, b] += v


# _nrt=True stated: it allocates (see `delassus_kernels.dense_factor`)
@njit(cache=True, _nrt=True)
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
    deg = 16
    for t in range(order.shape[0]):
        deg = max(deg, nb_ptr[t + 1] - nb_ptr[t])
    lcaba_factor_into(jint, S, use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr, Hd, Ho,
                      Dj, L, Y, np.empty((deg, 6, 6)), np.empty((3, 6, 6)))


@njit(cache=True, _nrt=False)
def lcaba_factor_into(jint, S, use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr,
                      pair_ptr, pair_slot, pair_tr, Hd, Ho, Dj, L, Y, C, scratch):
    """`lcaba_factor_kernel` on the caller's workspaces C (≥ max degree, 6, 6) and scratch (3, 6, 6),
    compiled without numba's reference counting (an atomic pair per block view otherwise)."""
    nsteps = order.shape[0]
    Dm, X, SC = scratch[0], scratch[1], scratch[2]
    for t in range(nsteps):
        i = order[t]
        p = par[t]
        iv, nvi = jint[i, JI_IV], jint[i, JI_NV]
        e0, e1 = nb_ptr[t], nb_ptr[t + 1]
        deg = e1 - e0
        Hi = Hd[i]
        for e in range(deg):
            s = nb_slot[e0 + e]
            Ce = C[e]
            if e == 0 and p >= 0:
                if s >= 0:
                    B = Ho[s]
                    if nb_tr[e0]:
                        for a in range(6):
                            for b in range(6):
                                Ce[a, b] = Hi[a, b] + B[b, a]
                    else:
                        for a in range(6):
                            for b in range(6):
                                Ce[a, b] = Hi[a, b] + B[a, b]
                else:
                    for a in range(6):
                        for b in range(6):
                            Ce[a, b] = Hi[a, b]
            else:
                B = Ho[s]
                if nb_tr[e0 + e]:
                    for a in range(6):
                        for b in range(6):
                            Ce[a, b] = B[b, a]
                else:
                    for a in range(6):
                        for b in range(6):
                            Ce[a, b] = B[a, b]
        q0 = pair_ptr[t]
        if nvi == 0:
            # a fixed link moves with its parent: hand its inertia and couplings over
            if p >= 0:
                _parent_block_add(C[0], Hi, nb_slot[e0] >= 0, Hd[p])
                for e in range(1, deg):
                    _add_block(Ho, pair_slot[q0 + e - 1], C[e], pair_tr[q0 + e - 1])
            continue
        ua = use_a[i] != 0
        na = 6 if ua else nvi
        # D = Sᵀ H S + 𝒟 (or H in link coordinates)
        if ua:
            for a in range(6):
                for b in range(6):
                    Dm[a, b] = Hi[a, b]
        else:
            for a in range(6):
                for c in range(nvi):
                    s = 0.0
                    for b in range(6):
                        s += Hi[a, b] * S[b, iv + c]
                    X[a, c] = s
            for r in range(nvi):
                for c in range(nvi):
                    s = 0.0
                    for a in range(6):
                        s += S[a, iv + r] * X[a, c]
                    Dm[r, c] = s
                Dm[r, r] += Dj[iv + r]
        # Cholesky D = L Lᵀ (L[i, r, r] holds 1 / L_rr)
        Li = L[i]
        for r in range(na):
            for c in range(r + 1):
                s = Dm[r, c]
                for k in range(c):
                    s -= Li[r, k] * Li[c, k]
                if r == c:
                    Li[r, r] = 1.0 / np.sqrt(s)
                else:
                    Li[r, c] = s * Li[c, c]
        # Ŷ_e = L⁻¹ Sᵀ C_e
        for e in range(deg):
            Ye = Y[e0 + e]
            Ce = C[e]
            if ua:
                src = Ce
            else:
                for r in range(nvi):
                    for c in range(6):
                        s = 0.0
                        for a in range(6):
                            s += S[a, iv + r] * Ce[a, c]
                        SC[r, c] = s
                src = SC
            for r in range(na):
                for c in range(6):
                    Ye[r, c] = src[r, c]
                for k in range(r):
                    lrk = Li[r, k]
                    for c in range(6):
                        Ye[r, c] -= lrk * Ye[k, c]
                d = Li[r, r]
                for c in range(6):
                    Ye[r, c] *= d
        # Schur complement on the neighbours (fill-in), parent transfer
        q = q0
        for ea in range(deg):
            ka = nb_node[e0 + ea]
            Ya = Y[e0 + ea]
            for eb in range(ea, deg):
                if eb == ea:
                    _schur_sym(Ya, na, X)
                else:
                    _schur(Ya, Y[e0 + eb], na, X)
                if ea == 0 and p >= 0:
                    if eb == 0:
                        _parent_block_add(C[0], Hi, nb_slot[e0] >= 0, X)
                    else:
                        Cb = C[eb]
                        for a in range(6):
                            for b in range(6):
                                X[a, b] += Cb[a, b]
                if ea == eb:
                    Hk = Hd[ka]
                    for a in range(6):
                        for b in range(6):
                            Hk[a, b] += X[a, b]
                else:
                    _add_block(Ho, pair_slot[q], X, pair_tr[q])
                    q += 1


@njit(cache=True, _nrt=False)
def lcaba_solve_kernel(jint, S, use_a, order, par, nb_ptr, nb_node, L, Y,
                       rows, Rv, b, lam, g, tau, w, acc, qdd, y, u):
    """λ = Λ_R b = (R⁻¹ + J M⁻¹ Jᵀ)⁻¹ b by the matrix inversion lemma (paper 000 Eq. 8–9):
    λ_R = R b, q̈_R = M_R⁻¹ Jᵀ λ_R (Alg. 4 sweeps on the stored factors), λ = R (b − J q̈_R).
    Jᵀ is merged into the backward sweep and J into the forward sweep (Sec. V-D). O(n + m + fill).
    u (6,) is workspace: the kernel allocates nothing and runs without numba's reference counting.
    """
    m = b.shape[0]
    for r in range(m):
        lam[r] = Rv[r] * b[r]
    scatter_kernel(rows, lam, g, tau)
    nsteps = order.shape[0]
    # backward sweep (Alg. 4 lines 13–32, the force part; the net joint torque is ABA's `joint_torque_into`)
    for t in range(nsteps):
        i = order[t]
        p = par[t]
        iv, nvi = jint[i, JI_IV], jint[i, JI_NV]
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
            joint_torque_into(S, iv, nvi, tau, g[i], u, 0)
        for r in range(na):       # w = L⁻¹ u (L's diagonal is stored inverted)
            s = u[r]
            for k in range(r):
                s -= L[i, r, k] * w[i, k]
            w[i, r] = s * L[i, r, r]
        if na == 1:               # a one-dof joint: the same operations, unrolled
            w0 = w[i, 0]
            for E in range(nb_ptr[t], nb_ptr[t + 1]):
                k = nb_node[E]
                for c in range(6):
                    s = 0.0
                    s += Y[E, 0, c] * w0
                    g[k, c] -= s
        else:
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
        iv, nvi = jint[i, JI_IV], jint[i, JI_NV]
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
            u[r] = s * L[i, r, r]
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
    gather_kernel(rows, acc, qdd, y)
    for r in range(m):
        lam[r] = Rv[r] * (b[r] - y[r])


@njit(cache=True, inline="always")
def mf_factor(geo, fac, dscal, dvec, vec):
    """R⁻¹ = diag(d) (d = dvec if vec else the scalar dscal) and M_R = M + Jᵀ R J factored
    (paper 000 Alg. 4 lines 1–32). A scalar d after the first reuses the unit sums Σ KᵀK."""
    jint, S, H, U, Dinv, armature, rows = geo
    cs, el, Pd, Po, Pj, Hd, Ho, Dj, L, Y, Rv, flag = fac
    cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof = cs
    use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr = el
    rho, first = 0.0, False
    if vec:
        for r in range(Rv.shape[0]):
            Rv[r] = 1.0 / dvec[r]
    else:
        rho = 1.0 / dscal
        Rv[:] = rho
        first = flag[0] == 0
        flag[0] = 1
    if vec:
        damped_inertias_kernel(Rv, H, armature, cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB,
                               dof, Hd, Ho, Dj)
    else:
        if first:
            unit_sums_kernel(cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, la, lb, kA, kB, dof, Pd, Po, Pj)
        scaled_inertias_kernel(rho, H, armature, Pd, Po, Pj, Hd, Ho, Dj)
    lcaba_factor_kernel(jint, S, use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot,
                        pair_tr, Hd, Ho, Dj, L, Y)


@njit(cache=True, inline="always")
def mf_solve(geo, fac, ws, b, out):
    """out = Λ_R b = (G + diag d)⁻¹ b on the stored factors (paper 000 Eq. 9, Alg. 4 sweeps); the
    workspace's pA (used by the products, not here) lends its first row to the sweeps."""
    jint, S, H, U, Dinv, armature, rows = geo
    cs, el, Pd, Po, Pj, Hd, Ho, Dj, L, Y, Rv, flag = fac
    use_a, order, par, nb_ptr, nb_node = el[0], el[1], el[2], el[3], el[4]
    fext, tau, qdd, acc, pA, g, w, y = ws
    lcaba_solve_kernel(jint, S, use_a, order, par, nb_ptr, nb_node, L, Y, rows, Rv, b, out, g, tau, w, acc,
                       qdd, y, pA[0])

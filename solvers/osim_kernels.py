"""Numba kernels of the explicit Delassus algorithms PV-OSIM, PV-OSIMr and cABA-OSIM.

Papers: Sathya, Decré, Swevers, "PV-OSIMr: A Lowest Order Complexity Algorithm for Computing
the Delassus Matrix" (Alg. 1 PV-OSIM, Alg. 3 PV-OSIMr, Eq. 16–19); Sathya, Carpentier,
"Constrained Articulated Body Dynamics Algorithms" (Sec. VI, Alg. 5 cABA-OSIM, Eq. 40–41).

World frame, Featherstone's symbols. The articulated quantities come from the bias-free ABA
backward pass `models.dynamics.aba_factor_kernel` (Hᴬ, U = Hᴬ S, D⁻¹): the algorithms' own
backward sweep computes the same Hᴬ, so it is not repeated here. From them, per joint i,
    ᵖ⁽ⁱ⁾Ωᵢ = Sᵢ Dᵢ⁻¹ Sᵢᵀ,   ᵖ⁽ⁱ⁾Pᵢ = I − Uᵢ Dᵢ⁻¹ Sᵢᵀ          (001 Eq. 8, 10)
are applied without forming the 6×6 matrices (rank-nvᵢ updates).

Constraint rows enter as "sides" (the paper's end-effector rows): each link row r of the
constraint set gives one side per moving link it touches (kA[r] on la[r], kB[r] on lb[r]); a
joint row on dof k of link i (Eq. 5d of paper 000) is written as the link rows
±sg (Sᵢ⁺)ᵀ eₖ on i and on its parent, since (Sᵢ⁺)ᵀ eₖ · (aᵢ − a_λ(i)) = q̈ₖ. Sides are sorted in
the depth-first preorder of their links, so every link's subtree owns a contiguous range
[s0, s1) of sides (its own sides first, up to own_end). The Delassus matrix is then
G = Σ_{sides r ≤ s} (side_row r, side_row s) blocks of K Ω Kᵀ: PV-OSIM's Lᴬ blocks
(001 Eq. 14) accumulated straight into G.

Structure arrays (`OsimStructure`, built once per constraint set by `solvers.osim`):
    side_row, side_src (0 kA, 1 kB, 2 joint +, 3 joint −), side_aux (joint rows: the joint's link)
    s0, s1, own_end (n,) side ranges; es (n,) 1 if the link supports a side (ES(i) ≠ ∅)
    inN (n,) 1 for branching links 𝒩 (own sides or ≥ 2 supporting children), npar (n,) 𝒜(i),
    the closest proper ancestor in 𝒩 (−1: the world), nodes: 𝒩 in index order,
    nch_ptr (n+1,), nch: children of each node in the 𝒩-tree by increasing s0,
    ground (n,) 1 for the floating bases of cABA-OSIMf (002 Sec. VI-B, forced into 𝒩)
"""
from typing import NamedTuple

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
import solvers.constraints
import solvers.delassus_kernels
from models.dynamics import aba_factor_kernel, spd_inverse
from models.jitcache import drop_stale_cache

drop_stale_cache(__file__, [models.dynamics.__file__, models.kinematics.__file__, models.spatial.__file__,
                            models.joints.__file__, solvers.delassus_kernels.__file__,
                            solvers.constraints.__file__])


class OsimStructure(NamedTuple):
    """Side ordering and branching-link tree of one constraint set (see module doc)."""
    side_row: np.ndarray
    side_src: np.ndarray
    side_aux: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    own_end: np.ndarray
    es: np.ndarray
    inN: np.ndarray
    npar: np.ndarray
    nodes: np.ndarray
    nch_ptr: np.ndarray
    nch: np.ndarray
    ground: np.ndarray


class OsimWork(NamedTuple):
    """Workspaces: Kp, W (m', 6) propagated side rows and Ω-weighted rows; EP, Om, O0 (n, 6, 6)
    extended force propagators 𝒜⁽ᶜ⁾P_c, inverse inertias 𝒜⁽ᶜ⁾Ω_c and ⁰Ω_c."""
    Kp: np.ndarray
    W: np.ndarray
    EP: np.ndarray
    Om: np.ndarray
    O0: np.ndarray


# --------------------------------------------------------------------------- sides
@njit(cache=True)
def side_rows_kernel(jint, S, st, kA, kB, dof, sg, Kp):
    """Kp[s] (m', 6): the spatial row of each side at this q (module doc). Joint rows:
    ±sg Sᵢ (SᵢᵀSᵢ)⁻¹ eₖ, so that Sᵢᵀ Kp[s] = ±sg eₖ."""
    G = np.empty((6, 6))
    Gi = np.empty((6, 6))
    for s in range(st.side_row.shape[0]):
        r, src = st.side_row[s], st.side_src[s]
        if src == 0:
            for c in range(6):
                Kp[s, c] = kA[r, c]
        elif src == 1:
            for c in range(6):
                Kp[s, c] = kB[r, c]
        else:
            i = st.side_aux[s]
            iv, nvi = jint[i, 3], jint[i, 5]
            for a in range(nvi):
                for b in range(nvi):
                    t = 0.0
                    for c in range(6):
                        t += S[c, iv + a] * S[c, iv + b]
                    G[a, b] = t
            spd_inverse(G, nvi, Gi)
            k = dof[r] - iv
            w = sg[r] if src == 2 else -sg[r]
            for c in range(6):
                t = 0.0
                for l in range(nvi):
                    t += S[c, iv + l] * Gi[l, k]
                Kp[s, c] = w * t


@njit(cache=True, inline="always")
def _add_pair(G, side_row, r, s, v):
    """Upper triangle of G += v (e_ρr e_ρsᵀ + e_ρs e_ρrᵀ) for sides r < s (once for r = s):
    G = Pᵀ Lᴬ P; `symmetrize_kernel` mirrors it at the end (one write per pair, in rows)."""
    a, b = side_row[r], side_row[s]
    if a == b:
        G[a, a] += v if r == s else 2.0 * v
    elif a < b:
        G[a, b] += v
    else:
        G[b, a] += v


@njit(cache=True)
def symmetrize_kernel(G):
    """G's lower triangle from its upper one, in 32 × 32 tiles (cache-friendly transpose)."""
    m = G.shape[0]
    for i0 in range(0, m, 32):
        for j0 in range(i0, m, 32):
            for i in range(i0, min(i0 + 32, m)):
                for j in range(max(j0, i + 1), min(j0 + 32, m)):
                    G[j, i] = G[i, j]


# --------------------------------------------------------------------------- PV-OSIM (Alg. 1)
@njit(cache=True)
def pv_osim_kernel(jint, S, U, Dinv, st, Kp, W, G):
    """PV-OSIM (paper 001 Alg. 1), O(n + m² d): for every supporting link i, leaves first,
    Lᴬ ← Lᴬ + Kᴬᵢ ᵖ⁽ⁱ⁾Ωᵢ Kᴬᵢᵀ (line 14) and Kᴬᵢ ← Kᴬᵢ ᵖ⁽ⁱ⁾Pᵢᵀ (line 13), where Kᴬᵢ are the
    side rows of i's subtree (contiguous, so the block-diagonal stacking of lines 4–5 and
    13–14 is implicit). With y_r = Sᵢᵀ k_r, z_r = Dᵢ⁻¹ y_r: (K Ω Kᵀ)_rs = y_r·z_s, P k = k − U z.
    Kp (m', 6) holds the side rows on entry; W (m', 6) is workspace. G (m, m) is overwritten."""
    G[:, :] = 0.0
    Y = np.empty((Kp.shape[0], 6))
    for i in range(jint.shape[0] - 1, -1, -1):
        iv, nvi = jint[i, 3], jint[i, 5]
        r0, r1 = st.s0[i], st.s1[i]
        if r0 == r1 or nvi == 0:
            continue
        for r in range(r0, r1):
            for k in range(nvi):
                t = 0.0
                for c in range(6):
                    t += S[c, iv + k] * Kp[r, c]
                Y[r, k] = t
            for k in range(nvi):
                t = 0.0
                for l in range(nvi):
                    t += Dinv[i, k, l] * Y[r, l]
                W[r, k] = t
        for r in range(r0, r1):
            for s in range(r, r1):
                t = 0.0
                for k in range(nvi):
                    t += Y[r, k] * W[s, k]
                _add_pair(G, st.side_row, r, s, t)
        if jint[i, 0] >= 0:
            for r in range(r0, r1):
                for c in range(6):
                    t = 0.0
                    for k in range(nvi):
                        t += U[c, iv + k] * W[r, k]
                    Kp[r, c] -= t
    symmetrize_kernel(G)


# --------------------------------------------------------------------------- PV-OSIMr (Alg. 3)
@njit(cache=True)
def segment_kernel(jint, S, U, Dinv, st, EP, Om):
    """First backward sweep of PV-OSIMr (paper 001 Alg. 3 lines 5–15, Eq. 16–17) over the
    supporting links: for each branching link d, the extended force propagator 𝒜⁽ᵈ⁾P_d and the
    inverse inertia 𝒜⁽ᵈ⁾Ω_d of the joints between d and its branching ancestor 𝒜(d):
        ᵖ⁽ⁱ⁾Ω_d = ⁱΩ_d + ⁱP_dᵀ Sᵢ Dᵢ⁻¹ Sᵢᵀ ⁱP_d,   ᵖ⁽ⁱ⁾P_d = ᵖ⁽ⁱ⁾Pᵢ ⁱP_d.
    A non-branching supporting link has one supporting child, so each running pair is passed
    up to the parent; it is stored at EP[d], Om[d] when the parent is in 𝒩 (or the world)."""
    n = jint.shape[0]
    owner = np.empty(n, np.int64)
    Y = np.empty((6, 6))
    Z = np.empty((6, 6))
    for i in range(n - 1, -1, -1):
        if not st.es[i]:
            continue
        if st.inN[i]:
            owner[i] = i
            for a in range(6):
                for b in range(6):
                    EP[i, a, b] = 1.0 if a == b else 0.0
                    Om[i, a, b] = 0.0
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        E = EP[i]
        O = Om[i]
        if nvi > 0:
            for k in range(nvi):                 # Y = Sᵢᵀ ⁱP_d, Z = Dᵢ⁻¹ Y
                for c in range(6):
                    t = 0.0
                    for a in range(6):
                        t += S[a, iv + k] * E[a, c]
                    Y[k, c] = t
            for k in range(nvi):
                for c in range(6):
                    t = 0.0
                    for l in range(nvi):
                        t += Dinv[i, k, l] * Y[l, c]
                    Z[k, c] = t
            for a in range(6):                   # Ω += Yᵀ Z, P ← P − U Z
                for b in range(a, 6):
                    t = 0.0
                    for k in range(nvi):
                        t += Y[k, a] * Z[k, b]
                    O[a, b] += t
                    if b != a:
                        O[b, a] += t
            for a in range(6):
                for c in range(6):
                    t = 0.0
                    for k in range(nvi):
                        t += U[a, iv + k] * Z[k, c]
                    E[a, c] -= t
        d = owner[i]
        if par >= 0 and not st.inN[par]:
            owner[par] = d
            EP[par, :, :] = E
            Om[par, :, :] = O
        elif d != i:
            EP[d, :, :] = E
            Om[d, :, :] = O


@njit(cache=True)
def omega_kernel(st, EP, Om, O0):
    """Forward sweep over 𝒩 (paper 001 Alg. 3 lines 16–17, Eq. 18):
    ⁰Ω_c = 𝒜Ω_c + 𝒜P_cᵀ ⁰Ω_𝒜 𝒜P_c (𝒜 = 𝒜(c); ⁰Ω_world = 0). Below a grounded floating base b
    (cABA-OSIMf) ᵇΩ_c is computed instead (002 Sec. VI-B)."""
    T = np.empty((6, 6))
    for t in range(st.nodes.shape[0]):
        c = st.nodes[t]
        a = st.npar[c]
        O = O0[c]
        O[:, :] = Om[c]
        if a < 0 or st.ground[a]:
            continue
        E = EP[c]
        A = O0[a]
        for i in range(6):
            for j in range(6):
                s = 0.0
                for k in range(6):
                    s += A[i, k] * E[k, j]
                T[i, j] = s
        for i in range(6):
            for j in range(i, 6):
                s = 0.0
                for k in range(6):
                    s += E[k, i] * T[k, j]
                O[i, j] += s
                if j != i:
                    O[j, i] += s


@njit(cache=True)
def assemble_kernel(st, EP, O0, Kp, W, G):
    """Backward sweep over 𝒩 with the assembly (paper 001 Alg. 3 lines 18–28, Eq. 13 and 19):
    at branching link c, Kp[s0:s1] holds ᶜK_e for every side e of its subtree; the blocks of
    pairs whose closest common ancestor is c (c's own sides with all, and sides of different
    𝒩-children) are ᶜK_e ⁰Ω_c ᶜK_fᵀ, then the rows are carried to 𝒜(c): 𝒜K_e = ᶜK_e 𝒜P_cᵀ.
    Each pair is formed once: O(m²) products plus O(m |𝒩 ∩ anc|) propagations.
    At a grounded floating base b (cABA-OSIMf) all pairs of its subtree get the rank-6 term
    ᵇK ⁰Ω_b ᵇKᵀ of Eq. 41 (the others were formed with ᵇΩ). G (m, m) is overwritten."""
    G[:, :] = 0.0
    sr = st.side_row
    for t in range(st.nodes.shape[0] - 1, -1, -1):
        c = st.nodes[t]
        r0, r1 = st.s0[c], st.s1[c]
        O = O0[c]
        for r in range(r0, r1):
            for a in range(6):
                W[r, a] = (O[a, 0] * Kp[r, 0] + O[a, 1] * Kp[r, 1] + O[a, 2] * Kp[r, 2]
                           + O[a, 3] * Kp[r, 3] + O[a, 4] * Kp[r, 4] + O[a, 5] * Kp[r, 5])
        oe = r1 if st.ground[c] else st.own_end[c]
        for r in range(r0, oe):
            for s in range(r, r1):
                _add_pair(G, sr, r, s, Kp[r, 0] * W[s, 0] + Kp[r, 1] * W[s, 1] + Kp[r, 2] * W[s, 2]
                          + Kp[r, 3] * W[s, 3] + Kp[r, 4] * W[s, 4] + Kp[r, 5] * W[s, 5])
        if not st.ground[c]:
            for e in range(st.nch_ptr[c], st.nch_ptr[c + 1]):
                k = st.nch[e]
                ke = st.s1[k]
                for r in range(st.s0[k], ke):
                    for s in range(ke, r1):
                        _add_pair(G, sr, r, s, Kp[r, 0] * W[s, 0] + Kp[r, 1] * W[s, 1] + Kp[r, 2] * W[s, 2]
                                  + Kp[r, 3] * W[s, 3] + Kp[r, 4] * W[s, 4] + Kp[r, 5] * W[s, 5])
        if st.npar[c] >= 0:
            E = EP[c]
            for r in range(r0, r1):
                k0, k1, k2, k3, k4, k5 = Kp[r, 0], Kp[r, 1], Kp[r, 2], Kp[r, 3], Kp[r, 4], Kp[r, 5]
                for a in range(6):
                    Kp[r, a] = (E[a, 0] * k0 + E[a, 1] * k1 + E[a, 2] * k2 + E[a, 3] * k3
                                + E[a, 4] * k4 + E[a, 5] * k5)
    symmetrize_kernel(G)


@njit(cache=True)
def pv_osimr_kernel(jint, S, U, Dinv, st, kA, kB, dof, sg, ws, G):
    """G = J M⁻¹ Jᵀ (m, m) by PV-OSIMr (paper 001 Alg. 3), O(n + m²), on the articulated
    factors U, D⁻¹ of the mass matrix at hand (plain for the Delassus matrix, augmented for
    cABA-OSIM)."""
    side_rows_kernel(jint, S, st, kA, kB, dof, sg, ws.Kp)
    segment_kernel(jint, S, U, Dinv, st, ws.EP, ws.Om)
    omega_kernel(st, ws.EP, ws.Om, ws.O0)
    assemble_kernel(st, ws.EP, ws.O0, ws.Kp, ws.W, G)


@njit(cache=True)
def delassus_kernel(method, jint, armature, S, H, IA, U, Dinv, st, kA, kB, dof, sg, ws, G):
    """The ABA backward pass on inertias H and armature (`aba_factor_kernel`: Hᴬ, U, D⁻¹), then
    G = J M⁻¹ Jᵀ by PV-OSIMr (method 0, Alg. 3) or PV-OSIM (method 1, Alg. 1). Returns False
    (G untouched) if some Dᵢ is not positive definite."""
    if not aba_factor_kernel(jint, armature, S, H, IA, U, Dinv):
        return False
    if method == 0:
        pv_osimr_kernel(jint, S, U, Dinv, st, kA, kB, dof, sg, ws, G)
    else:
        side_rows_kernel(jint, S, st, kA, kB, dof, sg, ws.Kp)
        pv_osim_kernel(jint, S, U, Dinv, st, ws.Kp, ws.W, G)
    return True


# --------------------------------------------------------------------------- cABA-OSIM (Alg. 5)
@njit(cache=True)
def matrix_inversion_kernel(L, Rv):
    """Λ_μ = R − R L R in place (paper 002 Eq. 40, Alg. 5 line 21), L = J M_R⁻¹ Jᵀ, R = diag(Rv)."""
    m = L.shape[0]
    for r in range(m):
        for s in range(m):
            L[r, s] = -Rv[r] * L[r, s] * Rv[s]
        L[r, r] += Rv[r]

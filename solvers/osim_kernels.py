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
from collections import namedtuple
from typing import NamedTuple

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
import solvers.constraints
import solvers.delassus_kernels
import solvers.lcaba_kernels
import solvers.packed
from models.dynamics import aba_factor_kernel, cholesky_into, cholesky_solve, spd_inverse
from models.jitcache import drop_stale_cache
from models.kinematics import kinematics_kernel, q_status_kernel
from models.layout import JF_SIZE, JI_SIZE
from solvers.constraints import rows_kernel
from solvers.lcaba_kernels import damped_inertias_kernel
from solvers.packed import slots, view1, view2, view3

drop_stale_cache(__file__, [models.dynamics.__file__, models.kinematics.__file__, models.spatial.__file__,
                            models.joints.__file__, solvers.delassus_kernels.__file__,
                            solvers.constraints.__file__, solvers.lcaba_kernels.__file__, solvers.packed.__file__])


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


# --------------------------------------------------------------------------- prepared calls
# `solvers.osim.PvOsimr` / `CabaOsim` run on packed workspaces (`solvers.packed`): one compiled
# call per q, its arrays views of fw/iw.
OSIM_SIZE_NAMES = ("n", "nv", "nq", "m", "nc", "ns", "nn", "nk", "no", "nu", "nb")
OSIM_FIELDS = (
    # (name, kind, shape: ints or size names; "n1" = n + 1)
    # the model and the constraint set (copied when prepared; `refresh`)
    ("jint", "i", ("n", JI_SIZE)), ("jfloat", "f", ("n", JF_SIZE)), ("armature", "f", ("nv",)),
    ("cb_kind", "i", ("nc",)), ("cb_row", "i", ("nc",)), ("cb_nrows", "i", ("nc",)), ("cb_body", "i", ("nc", 2)),
    ("cb_f", "f", ("nc", 24)), ("dof", "i", ("m",)), ("sg", "f", ("m",)), ("cb_slot", "i", ("nc",)),
    # settings: the unit-quaternion tolerance; the method (0 PV-OSIMr, 1 PV-OSIM)
    ("settings", "f", (1,)), ("method", "i", (1,)),
    # `OsimStructure` (sides: ns, branching links: nn, their tree's edges: nk)
    ("side_row", "i", ("ns",)), ("side_src", "i", ("ns",)), ("side_aux", "i", ("ns",)), ("s0", "i", ("n",)),
    ("s1", "i", ("n",)), ("own_end", "i", ("n",)), ("es", "i", ("n",)), ("inN", "i", ("n",)),
    ("npar", "i", ("n",)), ("nodes", "i", ("nn",)), ("nch_ptr", "i", ("n1",)), ("nch", "i", ("nk",)),
    ("ground", "i", ("n",)),
    # cABA-OSIM: rows in M_R (unary: nu) and the others (nb), eliminated by a Schur complement
    ("urow", "i", ("nu",)), ("brow", "i", ("nb",)),
    # workspaces
    ("oR", "f", ("n", 3, 3)), ("op", "f", ("n", 3)), ("S", "f", (6, "nv")), ("H", "f", ("n", 6, 6)),
    ("IA", "f", ("n", 6, 6)), ("U", "f", (6, "nv")), ("Dinv", "f", ("n", 6, 6)), ("la", "i", ("m",)),
    ("lb", "i", ("m",)), ("kA", "f", ("m", 6)), ("kB", "f", ("m", 6)), ("Kp", "f", ("ns", 6)),
    ("W", "f", ("ns", 6)), ("EP", "f", ("n", 6, 6)), ("Om", "f", ("n", 6, 6)), ("O0", "f", ("n", 6, 6)),
    ("Hd", "f", ("n", 6, 6)), ("Ho", "f", ("no", 6, 6)), ("Dj", "f", ("nv",)), ("Rv", "f", ("m",)),
    ("Ru", "f", ("m",)), ("Sb", "f", ("nb", "nb")), ("Lb", "f", ("nb", "nb")), ("X", "f", ("nu", "nb")),
    ("XS", "f", ("nu", "nb")), ("tb", "f", ("nb",)))
OSIM_SIZE, OSIM_SLOT = slots(OSIM_SIZE_NAMES, OSIM_FIELDS)
OsimPacked = namedtuple("OsimPacked", OSIM_SLOT._fields)
SZ, SL = OSIM_SIZE, OSIM_SLOT


@njit(cache=True, inline="always")
def osim_views(fw, iw):
    """`OsimPacked`: every field of `OSIM_FIELDS` as a view of fw or iw."""
    n, nv, m, nc, ns = iw[SZ.n], iw[SZ.nv], iw[SZ.m], iw[SZ.nc], iw[SZ.ns]
    nn, nk, no, nu, nb = iw[SZ.nn], iw[SZ.nk], iw[SZ.no], iw[SZ.nu], iw[SZ.nb]
    return OsimPacked(
        view2(iw, iw, SL.jint, n, JI_SIZE), view2(fw, iw, SL.jfloat, n, JF_SIZE), view1(fw, iw, SL.armature, nv),
        view1(iw, iw, SL.cb_kind, nc), view1(iw, iw, SL.cb_row, nc), view1(iw, iw, SL.cb_nrows, nc),
        view2(iw, iw, SL.cb_body, nc, 2), view2(fw, iw, SL.cb_f, nc, 24), view1(iw, iw, SL.dof, m),
        view1(fw, iw, SL.sg, m), view1(iw, iw, SL.cb_slot, nc), view1(fw, iw, SL.settings, 1),
        view1(iw, iw, SL.method, 1),
        view1(iw, iw, SL.side_row, ns), view1(iw, iw, SL.side_src, ns), view1(iw, iw, SL.side_aux, ns),
        view1(iw, iw, SL.s0, n), view1(iw, iw, SL.s1, n), view1(iw, iw, SL.own_end, n), view1(iw, iw, SL.es, n),
        view1(iw, iw, SL.inN, n), view1(iw, iw, SL.npar, n), view1(iw, iw, SL.nodes, nn),
        view1(iw, iw, SL.nch_ptr, n + 1), view1(iw, iw, SL.nch, nk), view1(iw, iw, SL.ground, n),
        view1(iw, iw, SL.urow, nu), view1(iw, iw, SL.brow, nb),
        view3(fw, iw, SL.oR, n, 3, 3), view2(fw, iw, SL.op, n, 3), view2(fw, iw, SL.S, 6, nv),
        view3(fw, iw, SL.H, n, 6, 6), view3(fw, iw, SL.IA, n, 6, 6), view2(fw, iw, SL.U, 6, nv),
        view3(fw, iw, SL.Dinv, n, 6, 6), view1(iw, iw, SL.la, m), view1(iw, iw, SL.lb, m),
        view2(fw, iw, SL.kA, m, 6), view2(fw, iw, SL.kB, m, 6), view2(fw, iw, SL.Kp, ns, 6),
        view2(fw, iw, SL.W, ns, 6), view3(fw, iw, SL.EP, n, 6, 6), view3(fw, iw, SL.Om, n, 6, 6),
        view3(fw, iw, SL.O0, n, 6, 6), view3(fw, iw, SL.Hd, n, 6, 6), view3(fw, iw, SL.Ho, no, 6, 6),
        view1(fw, iw, SL.Dj, nv), view1(fw, iw, SL.Rv, m), view1(fw, iw, SL.Ru, m), view2(fw, iw, SL.Sb, nb, nb),
        view2(fw, iw, SL.Lb, nb, nb), view2(fw, iw, SL.X, nu, nb), view2(fw, iw, SL.XS, nu, nb),
        view1(fw, iw, SL.tb, nb))


# status codes of the prepared calls
OK, BAD_Q, BAD_DAMPING, BAD_OUT, SINGULAR = 0, 1, 2, 3, 4


@njit(cache=True)
def schur_inverse_kernel(L, Rv, d, urow, brow, Sb, Lb, X, XS, tb, out):
    """(G + diag d)⁻¹ (m, m) into out from L = J M_R⁻¹ Jᵀ (m, m) when the rows brow are not in
    M_R (`solvers.osim` module doc): S = L_BB + diag(d_B) = Lb Lbᵀ, Λ_BB = S⁻¹,
    Λ_UB = X S⁻¹ with X = −R_U L_UB, Λ_UU = R_U − R_U L_UU R_U + X S⁻¹ Xᵀ. Returns False if S is
    not positive definite."""
    nu, nb = urow.shape[0], brow.shape[0]
    for a in range(nb):
        for b in range(nb):
            Sb[a, b] = L[brow[a], brow[b]]
        Sb[a, a] += d[brow[a]]
    if not cholesky_into(Sb, nb, Lb):
        return False
    for a in range(nb):                         # Sb ← S⁻¹, column by column
        for b in range(nb):
            tb[b] = 1.0 if a == b else 0.0
        cholesky_solve(Lb, nb, tb, tb, tb)
        for b in range(nb):
            Sb[b, a] = tb[b]
    for i in range(nu):
        for a in range(nb):
            X[i, a] = -Rv[urow[i]] * L[urow[i], brow[a]]
    for i in range(nu):
        for a in range(nb):
            t = 0.0
            for b in range(nb):
                t += X[i, b] * Sb[b, a]
            XS[i, a] = t
    for i in range(nu):
        ri = urow[i]
        for j in range(nu):
            rj = urow[j]
            t = -Rv[ri] * L[ri, rj] * Rv[rj]
            for a in range(nb):
                t += XS[i, a] * X[j, a]
            out[ri, rj] = t
        out[ri, ri] += Rv[ri]
        for a in range(nb):
            out[ri, brow[a]] = XS[i, a]
            out[brow[a], ri] = XS[i, a]
    for a in range(nb):
        for b in range(nb):
            out[brow[a], brow[b]] = Sb[a, b]
    return True


@njit(cache=True, inline="always")
def _osim_rows(p, q):
    """Kinematics at q and the constraint rows (`rows_kernel`)."""
    kinematics_kernel(p.jint, p.jfloat, q, p.oR, p.op, p.S, p.H)
    rows_kernel(p.cb_kind, p.cb_row, p.cb_nrows, p.cb_body, p.cb_f, p.oR, p.op, p.la, p.lb, p.kA, p.kB, True)


@njit(cache=True, inline="always")
def _structure(p):
    return OsimStructure(p.side_row, p.side_src, p.side_aux, p.s0, p.s1, p.own_end, p.es, p.inN, p.npar, p.nodes,
                         p.nch_ptr, p.nch, p.ground)


@njit(cache=True)
def delassus_prepared_kernel(fw, iw, q, G):
    """One prepared Delassus call: the checks of q (length, finite, unit quaternions: BAD_Q) and
    G (m, m) (BAD_OUT), before anything is written; kinematics, rows, then `delassus_kernel`
    (PV-OSIMr or PV-OSIM, the method of the workspace). Returns a status (OK, …, SINGULAR)."""
    p = osim_views(fw, iw)
    m = iw[SZ.m]
    if q.shape[0] != iw[SZ.nq] or q_status_kernel(p.jint, q, p.settings[0]) != -1:
        return BAD_Q
    if G.shape[0] != m or G.shape[1] != m:
        return BAD_OUT
    _osim_rows(p, q)
    ws = OsimWork(p.Kp, p.W, p.EP, p.Om, p.O0)
    if not delassus_kernel(p.method[0], p.jint, p.armature, p.S, p.H, p.IA, p.U, p.Dinv, _structure(p), p.kA, p.kB,
                           p.dof, p.sg, ws, G):
        return SINGULAR
    return OK


@njit(cache=True)
def damped_inverse_prepared_kernel(fw, iw, q, d, G):
    """One prepared cABA-OSIM call (paper 002 Alg. 5): the checks of q (BAD_Q), the damping d
    ((1,): a scalar, or (m,); finite and > 0: BAD_DAMPING) and G (m, m) (BAD_OUT) before
    anything is written; kinematics, rows, the augmented inertias Hᵢ + Kᵢᵀ R Kᵢ of the rows in
    M_R (`lcaba_kernels.damped_inertias_kernel`, R = diag(1/d)), PV-OSIMr on them, then Eq. 40
    (`matrix_inversion_kernel`) or, with rows between two moving links, `schur_inverse_kernel`.
    Returns a status (OK, …, SINGULAR)."""
    p = osim_views(fw, iw)
    m = iw[SZ.m]
    if q.shape[0] != iw[SZ.nq] or q_status_kernel(p.jint, q, p.settings[0]) != -1:
        return BAD_Q
    if d.shape[0] != 1 and d.shape[0] != m:
        return BAD_DAMPING
    for r in range(d.shape[0]):
        if not (d[r] > 0.0 and d[r] < np.inf):
            return BAD_DAMPING
    if G.shape[0] != m or G.shape[1] != m:
        return BAD_OUT
    _osim_rows(p, q)
    for r in range(m):
        p.Rv[r] = 1.0 / (d[0] if d.shape[0] == 1 else d[r])
        p.Ru[r] = 0.0
    for i in range(p.urow.shape[0]):
        p.Ru[p.urow[i]] = p.Rv[p.urow[i]]
    # Alg. 5 line 4: Hᴬᵢ ← Hᵢ + Kᵢᵀ R Kᵢ (and armature + R for joint rows), rows in M_R only
    damped_inertias_kernel(p.Ru, p.H, p.armature, p.cb_kind, p.cb_row, p.cb_nrows, p.cb_body, p.cb_f, p.cb_slot,
                           p.la, p.lb, p.kA, p.kB, p.dof, p.Hd, p.Ho, p.Dj)
    ws = OsimWork(p.Kp, p.W, p.EP, p.Om, p.O0)
    if not delassus_kernel(0, p.jint, p.Dj, p.S, p.Hd, p.IA, p.U, p.Dinv, _structure(p), p.kA, p.kB, p.dof, p.sg,
                           ws, G):
        return SINGULAR
    if p.brow.shape[0] == 0:
        matrix_inversion_kernel(G, p.Rv)
        return OK
    dd = p.Ru                                    # d per row (Ru is no longer needed)
    for r in range(m):
        dd[r] = d[0] if d.shape[0] == 1 else d[r]
    # in place: every entry of L = G is read before its own write (`schur_inverse_kernel`)
    if not schur_inverse_kernel(G, p.Rv, dd, p.urow, p.brow, p.Sb, p.Lb, p.X, p.XS, p.tb, G):
        return SINGULAR
    return OK

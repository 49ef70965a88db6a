"""Paper 004's contact model: friction polyhedra and the operational-space (OS) mixed LCP.

Friction polyhedron (paper 004 Sec. 2, Eq. 6-8): at contact i the tangential impulse is a
non-negative combination of n_f unit directions d̂_j(i) = cos(2πj/n_f) t̂1 + sin(2πj/n_f) t̂2 of
the tangent plane, F_u(i) = D(i) β(i) with D(i) = [n̂, d̂_1 … d̂_nf] and β(i) = (F_n, β_1 … β_nf)
(Eq. 7). With the slack σ(i) (the sliding speed), Eq. 10-13:

    D(i)ᵀ v⁺(i) + Ê(i) σ(i) ⊥ β(i) ≥ 0        (separation and friction direction)
    μ F_n − Σ_j β_j ⊥ σ(i) ≥ 0                 (friction magnitude: the polyhedron's bound)

The polyhedron is inscribed in the Coulomb cone: its limit depends on the direction, μ F_n
along a d̂_j and μ F_n cos(π/n_f) half-way between two of them (n_f = 4: μ F_n/√2 at 45°).

OS formulation (Sec. 6, Eq. 53). With Λ = J M⁻¹ Jᵀ the operational-space compliance of all
constraint rows (paper 004 calls it the OSCM; it is our Delassus G) and u = J v_f + targets the
rows' velocities without constraint impulses (v_f: the free velocity, Eq. 44, plus the
simulator's position targets), the unknowns z = (p_b, p_l, β, σ) and

    [ W_bᵀ Λ W_b   W_bᵀ Λ W_u   0 ] [p_b]   [W_bᵀ u]      = 0   (bilateral: loop closures, free)
    [ W_uᵀ Λ W_b   W_uᵀ Λ W_u   Ê ] [β  ] + [W_uᵀ u]  ⊥   ≥ 0   (contacts, joint limits)
    [ 0            Ē            0 ] [σ  ]   [0     ]  ⊥   ≥ 0

where W maps the LCP unknowns to our impulse rows (λ = W z: a contact's (t1, t2, n) rows get
(Σ β_j cos, Σ β_j sin, F_n)). The size is n_b + n_l + n_u (n_f + 2) (Table 1, independent of
the number of links for the minimal-coordinate OS; with the hinges of maximal coordinates as
bilateral rows it is the NMC/OS LCP of Sec. 8). Λ is assembled column by column from the
matrix-free operator's product (paper 000's two sweeps on unit vectors, m products of
O(n + m) each), never as a dense J M⁻¹ Jᵀ; the paper's Appendix reaches O(N + n_c²) by the
Ω recursion (Eq. 64-69), which this product replaces at O(m (n + m)).

Impacts (Sec. 7): `impact_impulses` solves the compression LCP (Eq. 54: Δt = 0, u = J v⁻) and
the decompression LCP (Eq. 56-57: the restitution impulse ϑ = ε F_n(compression) n̂ added and
a second LCP keeping the contacts from approaching), returning λ_c + ϑ + λ_d.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
from models.jitcache import drop_stale_cache

from . import delassus_kernels as _dk
from .cones import BOX, CONE, FREE, ORTHANT
from .delassus import MatrixFreeDelassus
from .lcp import solve_mixed_lcp

# `delassus_columns_kernel` compiles in the operator's sweeps
drop_stale_cache(__file__, [_dk.__file__, models.dynamics.__file__, models.kinematics.__file__,
                            models.spatial.__file__, models.joints.__file__])


class PolyhedralLCP(NamedTuple):
    """The mixed LCP of Eq. 53: M (nz, nz), q (nz,), n_free (leading equality rows),
    W_rows (nz, 2) int64 and W_coef (nz, 2): unknown v adds W_coef[v, a] z_v to impulse row
    W_rows[v, a] (−1: none); n_contacts (contacts with unknowns), n_f."""
    M: np.ndarray
    q: np.ndarray
    n_free: int
    W_rows: np.ndarray
    W_coef: np.ndarray
    n_contacts: int
    n_f: int


class PolyhedralSolution(NamedTuple):
    """λ (m,) impulses in the operator's rows (contacts (t1, t2, n)), z (nz,) the LCP unknowns,
    lcp_size (nz less the dependent bilateral rows dropped: n_b + n_l + n_u (n_f + 2) as paper
    004 counts it, 5 rows per hinge), pivots (Lemke), rank (independent bilateral rows kept)."""
    lam: np.ndarray
    z: np.ndarray
    lcp_size: int
    pivots: int
    rank: int


def friction_directions(n_f):
    """(n_f, 2) unit tangent directions (cos, sin)(2πj/n_f) in the contact frame's (t1, t2);
    n_f even ≥ 4 (every direction's opposite is in the set, Sec. 2.1)."""
    if isinstance(n_f, bool) or not isinstance(n_f, (int, np.integer)) or n_f < 4 or n_f % 2:
        raise ValueError(f"the number of friction directions n_f must be an even integer ≥ 4, got {n_f!r}")
    a = 2 * np.pi * np.arange(n_f) / n_f
    return np.column_stack([np.cos(a), np.sin(a)])


# ---------------------------------------------------------------------------------- Λ
@njit(cache=True)
def delassus_columns_kernel(jint, S, U, Dinv, rows, G, x, y, fext, tau, qdd, acc, pA):
    """G (m, m) = Λ = J M⁻¹ Jᵀ column by column: G e_j by the operator's two sweeps
    (`delassus_kernels.matvec_kernel`, paper 000 Alg. 1-3); G is symmetric, so column j is
    written as row j (contiguous)."""
    m = G.shape[0]
    x[:] = 0.0
    for j in range(m):
        x[j] = 1.0
        _dk.matvec_kernel(jint, S, U, Dinv, rows, x, y, fext, tau, qdd, acc, pA)
        G[j, :] = y
        x[j] = 0.0


def delassus_matrix(op):
    """Λ (m, m) of a Delassus operator: from m matrix-free products for `MatrixFreeDelassus`
    (`delassus_columns_kernel`, symmetrised), the stored matrix for `DenseDelassus`."""
    if not isinstance(op, MatrixFreeDelassus):
        return op.matrix()
    m = op.m
    G = np.empty((m, m))
    if m:
        op._need_aba()
        fext, tau, qdd, acc, pA = op._work()
        d = op.data
        delassus_columns_kernel(op.model.jint, d.S, d.U, d.Dinv, op.rows, G, np.zeros(m), np.empty(m),
                                fext, tau, qdd, acc, pA)
        G += G.T            # symmetric to the last bit (the products agree to round-off)
        G *= 0.5
    return G


# ---------------------------------------------------------------------------------- Eq. 53
def lcp_unknowns(kind, start, size, param, active, n_f):
    """The LCP's unknowns for blocks (kind, start, size, param) of a `ConeSet` (cones = contacts
    in order, the i-th cone used only where active[i]): W_rows, W_coef (see `PolyhedralLCP`),
    n_free, contact cone starts (kc,) and μ (kc,). Order: free rows, orthant rows, per active
    contact (F_n, β_1 … β_nf), then one σ per active contact."""
    if np.any(kind == BOX):
        raise ValueError("the polyhedral LCP model has no joint dry friction (box rows); use contact_model='ncp'")
    dirs = friction_directions(n_f)
    free = np.concatenate([np.arange(s, s + z) for s, z in zip(start[kind == FREE], size[kind == FREE])] or
                          [np.zeros(0, np.int64)])
    orth = np.concatenate([np.arange(s, s + z) for s, z in zip(start[kind == ORTHANT], size[kind == ORTHANT])] or
                          [np.zeros(0, np.int64)])
    cones = kind == CONE
    cstart, mu = start[cones][active], param[cones][active]
    kc = cstart.shape[0]
    nb = free.shape[0] + orth.shape[0]
    nz = nb + kc * (n_f + 2)
    rows = np.full((nz, 2), -1, np.int64)
    coef = np.zeros((nz, 2))
    rows[:nb, 0] = np.concatenate([free, orth])
    coef[:nb, 0] = 1.0
    blk = nb + (n_f + 1) * np.arange(kc)
    rows[blk, 0], coef[blk, 0] = cstart + 2, 1.0                 # F_n on the normal row
    for j in range(n_f):                                          # β_j on (t1, t2)
        rows[blk + 1 + j, 0], coef[blk + 1 + j, 0] = cstart, dirs[j, 0]
        rows[blk + 1 + j, 1], coef[blk + 1 + j, 1] = cstart + 1, dirs[j, 1]
    return rows, coef, free.shape[0], cstart, mu


@njit(cache=True)
def os_lcp_kernel(G, u, W_rows, W_coef, nb, kc, n_f, mu, M, q):
    """M, q of paper 004 Eq. 53 (module docstring): Wᵀ Λ W and Wᵀ u over the impulse unknowns
    (the first nb + kc (n_f + 1)), then Ê (β rows × σ) and Ē = [μ, −1 … −1] (σ rows)."""
    nz = q.shape[0]
    ni = nb + kc * (n_f + 1)
    M[:, :] = 0.0
    q[:] = 0.0
    for a in range(ni):
        for ka in range(2):
            ra = W_rows[a, ka]
            if ra < 0:
                continue
            ca = W_coef[a, ka]
            q[a] += ca * u[ra]
            for b in range(ni):
                s = 0.0
                for kb in range(2):
                    rb = W_rows[b, kb]
                    if rb >= 0:
                        s += W_coef[b, kb] * G[ra, rb]
                M[a, b] += ca * s
    for i in range(kc):
        fn = nb + i * (n_f + 1)
        sg = ni + i
        for j in range(n_f):
            M[fn + 1 + j, sg] = 1.0          # Ê: D̂ᵀ v + e σ
            M[sg, fn + 1 + j] = -1.0         # Ē: μ F_n − Σ β
        M[sg, fn] = mu[i]
    return nz


def build_os_lcp(G, u, kind, start, size, param, n_f=4, active=None):
    """`PolyhedralLCP` of Eq. 53 for the Delassus matrix G (m, m), the rows' free velocities u
    (m,) and the blocks of a `ConeSet` (`ConeSet.arrays()`); active (k,) bool selects contacts
    (default all)."""
    ncones = int(np.count_nonzero(kind == CONE))
    active = np.ones(ncones, bool) if active is None else np.asarray(active, bool)
    if active.shape != (ncones,):
        raise ValueError(f"active must have shape ({ncones},), got {active.shape}")
    W_rows, W_coef, nfree, cstart, mu = lcp_unknowns(kind, start, size, param, active, n_f)
    nz = W_rows.shape[0]
    kc = cstart.shape[0]
    nb = nz - kc * (n_f + 2)
    M, q = np.empty((nz, nz)), np.empty(nz)
    os_lcp_kernel(G, np.ascontiguousarray(u, float), W_rows, W_coef, nb, kc, n_f, mu, M, q)
    return PolyhedralLCP(M, q, nfree, W_rows, W_coef, kc, n_f)


def impulses(lcp, z, m):
    """λ = W z (m,) of an LCP solution z."""
    lam = np.zeros(m)
    for a in range(2):
        r = lcp.W_rows[:, a]
        ok = r >= 0
        np.add.at(lam, r[ok], lcp.W_coef[ok, a] * z[ok])
    return lam


def solve_os_lcp(G, u, blocks, n_f=4, active=None):
    """Solve Eq. 53 (`build_os_lcp`, `solve_mixed_lcp`): returns `PolyhedralSolution`. Linearly
    dependent bilateral rows (a hinge written as two point closures) are dropped; their
    equality holds through the kept rows up to the targets' inconsistency."""
    kind, start, size, param = blocks
    lcp = build_os_lcp(G, u, kind, start, size, param, n_f, active)
    # velocities at round-off level (a resting or separating contact's tangential 1e-16 m/s)
    # are zero: a needless Lemke start on them only meets the round-off again
    if lcp.q.size:
        lcp.q[np.abs(lcp.q) <= 1e-13 * np.abs(lcp.q).max()] = 0.0
    r = solve_mixed_lcp(lcp.M, lcp.q, lcp.n_free, consistency_tol=np.inf)
    size = lcp.q.shape[0] - lcp.n_free + r.rank          # the mixed LCP's size with independent rows (Table 1)
    return PolyhedralSolution(impulses(lcp, r.z, G.shape[0]), r.z, size, r.pivots, r.rank)


# ---------------------------------------------------------------------------------- Sec. 7
class ImpactResult(NamedTuple):
    """lam (m,) total impact impulse λ_c + ϑ + λ_d, compression (m,) λ_c, pivots (both LCPs),
    lcp_size (of the compression LCP)."""
    lam: np.ndarray
    compression: np.ndarray
    pivots: int
    lcp_size: int


def impact_impulses(G, u_pre, blocks, restitution, active, n_f=4):
    """Paper 004 Sec. 7 at the contacts `active` (k,) bool (the others take no part):
    compression LCP (Eq. 54: Eq. 53 at Δt = 0, u = J v⁻), λ_c, u_c = u⁻ + G λ_c (Eq. 55);
    decompression: ϑ_i = ε_i (λ_c)_n,i n̂_i (Eq. 56) and Eq. 57's LCP at u_c + G ϑ, λ_d
    (Eq. 58). ε_i = restitution[i] (k,). Returns `ImpactResult`."""
    kind, start, size, param = blocks
    comp = solve_os_lcp(G, u_pre, blocks, n_f, active)
    lam_c = comp.lam
    nrow = start[kind == CONE] + 2
    theta = np.zeros_like(lam_c)
    theta[nrow] = np.asarray(restitution, float) * lam_c[nrow] * active
    pivots = comp.pivots
    lam = lam_c
    if np.any(theta):
        u_c = u_pre + G @ (lam_c + theta)
        dec = solve_os_lcp(G, u_c, blocks, n_f, active)
        lam = lam_c + theta + dec.lam
        pivots += dec.pivots
    return ImpactResult(lam, lam_c, pivots, comp.lcp_size)

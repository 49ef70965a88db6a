"""Broad phase: world placements of the geometries, their AABBs, and the candidate pairs
(sweep and prune along x with the pair filter; planes against every AABB)."""
import numpy as np
from numba import njit

from .jitopts import _NONRT
from .kinds import PLANE


@njit(**_NONRT)
def placements_kernel(gbody, gRl, gpl, oR, op, gR, gp):
    """World placement of every geometry: gR (ng,3,3), gp (ng,3) from body placements."""
    for g in range(gbody.shape[0]):
        b = gbody[g]
        if b < 0:
            for r in range(3):
                gp[g, r] = gpl[g, r]
                for c in range(3):
                    gR[g, r, c] = gRl[g, r, c]
        else:
            for r in range(3):
                for c in range(3):
                    gR[g, r, c] = oR[b, r, 0] * gRl[g, 0, c] + oR[b, r, 1] * gRl[g, 1, c] + oR[b, r, 2] * gRl[g, 2, c]
                gp[g, r] = (oR[b, r, 0] * gpl[g, 0] + oR[b, r, 1] * gpl[g, 1] + oR[b, r, 2] * gpl[g, 2]) + op[b, r]


@njit(**_NONRT)
def aabb_kernel(gkind, gR, gp, lc, le, inflate, lo, hi):
    """World AABBs lo, hi (ng,3) of the local boxes (center lc, half extents le), inflated.
    Planes get infinite boxes."""
    for g in range(gkind.shape[0]):
        if gkind[g] == PLANE:
            lo[g, :] = -np.inf
            hi[g, :] = np.inf
            continue
        for i in range(3):
            c = gp[g, i] + gR[g, i, 0] * lc[g, 0] + gR[g, i, 1] * lc[g, 1] + gR[g, i, 2] * lc[g, 2]
            h = (abs(gR[g, i, 0]) * le[g, 0] + abs(gR[g, i, 1]) * le[g, 1]
                 + abs(gR[g, i, 2]) * le[g, 2]) + inflate
            lo[g, i] = c - h
            hi[g, i] = c + h


@njit(**_NONRT)
def sort_by_lower_x(lo, others, order):
    """Insertion sort of order (m,) int64, a permutation of the rows of others, by (lo[others[i],
    0], i): kept across calls, so the boxes that moved little since the last call cost O(m)."""
    for i in range(1, order.shape[0]):
        o = order[i]
        x = lo[others[o], 0]
        j = i - 1
        while j >= 0 and (lo[others[order[j]], 0] > x or (lo[others[order[j]], 0] == x and order[j] > o)):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = o


@njit(**_NONRT)
def broadphase_kernel(gkind, gR, gp, lo, hi, allow, margin, planes, others, order, pairs):
    """Candidate pairs (a < b) into pairs (cap, 2); returns their count (may exceed cap).

    Non-plane geometries: sweep and prune along x over AABBs (order: their sort by lower x,
    `sort_by_lower_x`, kept across calls); planes: every allowed shape whose AABB reaches
    within `margin` of the halfspace. allow (ng, ng) uint8 is the filter.
    """
    cap = pairs.shape[0]
    k = 0
    m = others.shape[0]
    if m > 1:
        sort_by_lower_x(lo, others, order)
        for ii in range(m):
            a = others[order[ii]]
            for jj in range(ii + 1, m):
                b = others[order[jj]]
                if lo[b, 0] > hi[a, 0]:
                    break
                if (lo[b, 1] > hi[a, 1] or lo[a, 1] > hi[b, 1] or lo[b, 2] > hi[a, 2]
                        or lo[a, 2] > hi[b, 2]):
                    continue
                if allow[a, b] == 0:
                    continue
                if k < cap:
                    pairs[k, 0] = min(a, b)
                    pairs[k, 1] = max(a, b)
                k += 1
    for pi in range(planes.shape[0]):
        P = planes[pi]
        nx, ny, nz = gR[P, 0, 2], gR[P, 1, 2], gR[P, 2, 2]
        off = nx * gp[P, 0] + ny * gp[P, 1] + nz * gp[P, 2]
        for ii in range(m):
            g = others[ii]
            if allow[P, g] == 0:
                continue
            cx = 0.5 * (lo[g, 0] + hi[g, 0])
            cy = 0.5 * (lo[g, 1] + hi[g, 1])
            cz = 0.5 * (lo[g, 2] + hi[g, 2])
            low = (nx * cx + ny * cy + nz * cz - 0.5 * (abs(nx) * (hi[g, 0] - lo[g, 0])
                   + abs(ny) * (hi[g, 1] - lo[g, 1]) + abs(nz) * (hi[g, 2] - lo[g, 2])))
            if low > off + margin:
                continue
            if k < cap:
                pairs[k, 0] = min(P, g)
                pairs[k, 1] = max(P, g)
            k += 1
    return k

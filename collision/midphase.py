"""Proofs of separation before the narrow phase: a pair whose support heights along some axis
leave a gap larger than the margin cannot touch (the axis between the geometries' origins or
bounding-box centres, or the pair's last separating axis, remembered across calls)."""
from collections import namedtuple

import numpy as np
from numba import njit

import models.jitcache

from . import hulls, support
from .hulls import hull_climb
from .jitopts import _NONRT
from .kinds import CONVEX
from .support import support_height

# kernels here compile in those of these modules: drop the cache when they change
models.jitcache.drop_stale_cache(__file__, [hulls.__file__, support.__file__])

PairCache = namedtuple("PairCache", "slot axis vert local verts nsimplex")
PairCache.__doc__ = """Per-pair memory of the last separating direction and GJK simplex, kept across
calls (time coherence: the axis that separated two links at the last step usually still does,
and touching links keep their closest features).

slot (ng, ng) int64: row of the pair (a < b) among the pairs culled by support heights (GJK
and library pairs), −1 for the others. axis (P, 3): last direction a → b that separated
the pair or GJK's last normal (zeros: none). vert (P, 2) int64: hull vertices supporting
a along axis and b along −axis, where the next climbs start (−1: none). local (P, 4, 2, 3),
verts (P, 4, 2) int64, nsimplex (P,) int64: the pair's last GJK simplex, its first nsimplex
rows (0: none), each a pair of core points (a's, b's) in their geometry frames and their hull
vertices (−1: not a hull), where the next GJK starts (`gjk.warm_simplex`). The axis only
proves separation (exact support heights) and the simplex only starts GJK, so the contacts
do not depend on them beyond round-off, only the time; except a cylinder apart from its
partner, where GJK stops short on the rim (`narrow.convex_pair`: normals within 1e-4 rad)."""


@njit(**_NONRT)
def _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2):
    """True if direction d separates geometry a (below) from b (above) by more than margin."""
    dn = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if dn < 1e-9:
        return False
    ha = support_height(gkind[a], a, gsize, gR, gp, cverts, coff, hg, d0, d1, d2)
    hb = support_height(gkind[b], b, gsize, gR, gp, cverts, coff, hg, -d0, -d1, -d2)   # −min over b of x·d
    return ha + hb < -margin * dn       # nan (a plane) compares False


@njit(**_NONRT)
def separated_along_centres(a, b, gkind, gsize, gR, gp, lc, cverts, coff, hg, margin):
    """True if the axis between the two geometries' origins, or between their bounding-box
    centres (lc, local), separates them by more than margin (max over a of x·d < min over b of
    x·d − margin |d|): a proof of no contact within the margin, so the pair can skip the
    library's narrow phase. False when neither axis proves it. Returns (proved, the last axis
    tried)."""
    d0 = gp[b, 0] - gp[a, 0]
    d1 = gp[b, 1] - gp[a, 1]
    d2 = gp[b, 2] - gp[a, 2]
    if _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2):
        return True, d0, d1, d2
    for j in range(3):
        d0 += gR[b, 0, j] * lc[b, j] - gR[a, 0, j] * lc[a, j]
        d1 += gR[b, 1, j] * lc[b, j] - gR[a, 1, j] * lc[a, j]
        d2 += gR[b, 2, j] * lc[b, j] - gR[a, 2, j] * lc[a, j]
    return _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2), d0, d1, d2


@njit(**_NONRT)
def _height_from(kind, g, gsize, gR, gp, cverts, coff, hg, d0, d1, d2, vert, s, j):
    """`support_height` of g along d; a hull's climb starts at vert[s, j] and leaves its
    support vertex there."""
    if kind != CONVEX:
        return support_height(kind, g, gsize, gR, gp, cverts, coff, hg, d0, d1, d2)
    l0 = gR[g, 0, 0] * d0 + gR[g, 1, 0] * d1 + gR[g, 2, 0] * d2
    l1 = gR[g, 0, 1] * d0 + gR[g, 1, 1] * d1 + gR[g, 2, 1] * d2
    l2 = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
    v, h = hull_climb(g, cverts, hg, l0, l1, l2, vert[s, j])
    vert[s, j] = v
    return gp[g, 0] * d0 + gp[g, 1] * d1 + gp[g, 2] * d2 + h


@njit(**_NONRT)
def separated_along_cached(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, pc, s):
    """True if the pair's cached axis (`PairCache` row s) separates a (below) from b by more
    than margin; the climbs start at the cached support vertices."""
    d0, d1, d2 = pc.axis[s, 0], pc.axis[s, 1], pc.axis[s, 2]
    dn = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if dn < 1e-9:
        return False
    ha = _height_from(gkind[a], a, gsize, gR, gp, cverts, coff, hg, d0, d1, d2, pc.vert, s, 0)
    hb = _height_from(gkind[b], b, gsize, gR, gp, cverts, coff, hg, -d0, -d1, -d2, pc.vert, s, 1)
    return ha + hb < -margin * dn


@njit(**_NONRT)
def _cache_axis(pc, s, d0, d1, d2):
    """Remember d as pair row s's separating direction (support vertices unknown; the pair's
    GJK simplex forgotten)."""
    pc.axis[s, 0], pc.axis[s, 1], pc.axis[s, 2] = d0, d1, d2
    pc.vert[s, 0] = -1
    pc.vert[s, 1] = -1
    pc.nsimplex[s] = 0

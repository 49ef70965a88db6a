"""Narrow phase per pair type, behind one dispatch table.

`pair_table` maps every (kind, kind) to a pair type; `narrow_pair` calls that type's kernel:
a plane against anything (`plane_pair`), spheres and capsules through their core points and
segments (`core_pair`), boxes by the separating axis test (`box_pair`), a sphere against a box
(`sphere_box_pair`), and every pair with a hull or a cylinder by GJK/EPA (`convex_pair`). Each
kernel finds the normal n (a → b) and a witness pair, then the contact patch from the support
features along n (`patch.build_patch`). Returns the patch size (point pairs in PA, PB), 0
beyond the margin, -2 when the pair is left to the library backend.

Conventions: see `collision.patch`.
"""
import numpy as np
from numba import njit

import models.jitcache

from . import gjk, hulls, patch, support, workspace
from .jitopts import _NONRT, _NONRT_INLINE
from .kinds import BOX, CAPSULE, CONVEX, CYLINDER, PLANE, SPHERE
from .patch import build_patch, patch_along_normal
from .hulls import hull_climb, hull_flood, hull_patch_collapses, hull_tied_partner, hull_tied_point
from .support import (INF_FEATURE, _cvert_world, _support_box, box_height, hull_points_unordered,
                      support_feature, support_height)
from .workspace import (_VC1, _VC2, _VEX0, _VN, _VNEGN, _VPAW, _VPBW, _VPLA0, _VPLA1, _VPLB0, _VPLB1, _VREF,
                        _cprr, _dotrr, _tangent_basis_v)

# kernels here compile in those of these modules: drop the cache when they change
models.jitcache.drop_stale_cache(__file__, [gjk.__file__, hulls.__file__, patch.__file__, support.__file__,
                                            workspace.__file__])

# `support._support_box` inlined into `box_pair` (the box-box pairs of box scenes)
_support_box_inline = njit(**_NONRT_INLINE)(_support_box.py_func)

# pair types (`pair_table`)
PAIR_NONE, PAIR_LIBRARY, PAIR_PLANE, PAIR_CORES, PAIR_BOXES, PAIR_SPHERE_BOX, PAIR_GJK = range(7)
# the pair types `narrow_pair_nobox` handles (the others it leaves at 0 contacts)
NOBOX_CODES = (PAIR_NONE, PAIR_LIBRARY, PAIR_PLANE, PAIR_CORES, PAIR_GJK)
# the kernel of each pair of kinds (either order); the others go to the library backend
NATIVE_PAIRS = {
    **{(PLANE, k): PAIR_PLANE for k in (SPHERE, CAPSULE, CYLINDER, BOX, CONVEX)},
    (PLANE, PLANE): PAIR_NONE,
    (SPHERE, SPHERE): PAIR_CORES, (SPHERE, CAPSULE): PAIR_CORES, (CAPSULE, CAPSULE): PAIR_CORES,
    (BOX, BOX): PAIR_BOXES, (SPHERE, BOX): PAIR_SPHERE_BOX,
    # hulls and cylinders (GJK/EPA on closed-form support functions), capsules against boxes
    **{(k, j): PAIR_GJK for k in (CONVEX, CYLINDER) for j in (SPHERE, CAPSULE, CYLINDER, BOX, CONVEX)},
    (CAPSULE, BOX): PAIR_GJK,
}


def pair_table(native=True):
    """(6, 6) uint8 pair type of every (kind a, kind b); native=False: every pair with a
    volume to the library backend (the baseline of the benchmarks)."""
    t = np.full((6, 6), PAIR_LIBRARY, dtype=np.uint8)
    for (ka, kb), code in NATIVE_PAIRS.items():
        if native or code == PAIR_NONE:
            t[ka, kb] = t[kb, ka] = code
    return t


@njit(**_NONRT_INLINE)
def _box_box(gsize, gR, gp, a, b, V, margin):
    """SAT for boxes a and b: best separating axis into n = V[_VN] (oriented a -> b), its
    separation (negative = penetration) and whether it is an edge-edge axis.

    Stops as soon as the best separation exceeds `margin` (the best can only grow, so the
    pair is then rejected either way); the separation returned is then a lower bound."""
    dx, dy, dz = gp[b, 0] - gp[a, 0], gp[b, 1] - gp[a, 1], gp[b, 2] - gp[a, 2]
    sa0, sa1, sa2 = gsize[a, 0], gsize[a, 1], gsize[a, 2]
    sb0, sb1, sb2 = gsize[b, 0], gsize[b, 1], gsize[b, 2]
    best = -np.inf
    edge = False
    for ax in range(15):
        if ax < 3:
            L0, L1, L2 = gR[a, 0, ax], gR[a, 1, ax], gR[a, 2, ax]
        elif ax < 6:
            L0, L1, L2 = gR[b, 0, ax - 3], gR[b, 1, ax - 3], gR[b, 2, ax - 3]
        else:
            i, j = (ax - 6) // 3, (ax - 6) % 3
            L0 = gR[a, 1, i] * gR[b, 2, j] - gR[a, 2, i] * gR[b, 1, j]
            L1 = gR[a, 2, i] * gR[b, 0, j] - gR[a, 0, i] * gR[b, 2, j]
            L2 = gR[a, 0, i] * gR[b, 1, j] - gR[a, 1, i] * gR[b, 0, j]
            ln = np.sqrt(L0 * L0 + L1 * L1 + L2 * L2)
            if ln < 1e-6:
                continue
            L0, L1, L2 = L0 / ln, L1 / ln, L2 / ln
        ra = (sa0 * abs(L0 * gR[a, 0, 0] + L1 * gR[a, 1, 0] + L2 * gR[a, 2, 0])
              + sa1 * abs(L0 * gR[a, 0, 1] + L1 * gR[a, 1, 1] + L2 * gR[a, 2, 1])
              + sa2 * abs(L0 * gR[a, 0, 2] + L1 * gR[a, 1, 2] + L2 * gR[a, 2, 2]))
        rb = (sb0 * abs(L0 * gR[b, 0, 0] + L1 * gR[b, 1, 0] + L2 * gR[b, 2, 0])
              + sb1 * abs(L0 * gR[b, 0, 1] + L1 * gR[b, 1, 1] + L2 * gR[b, 2, 1])
              + sb2 * abs(L0 * gR[b, 0, 2] + L1 * gR[b, 1, 2] + L2 * gR[b, 2, 2]))
        c = L0 * dx + L1 * dy + L2 * dz
        s = abs(c) - ra - rb
        # edge axes must beat face axes clearly (face contacts are preferred on ties)
        thr = best + 1e-9 if ax < 6 else best + 1e-6 + 1e-3 * abs(best)
        if s > thr:
            best = s
            edge = ax >= 6
            sgn = 1.0 if c >= 0 else -1.0
            V[_VN, 0] = sgn * L0
            V[_VN, 1] = sgn * L1
            V[_VN, 2] = sgn * L2
            if best > margin:
                return best, edge
    return best, edge


@njit(**_NONRT)
def _segments_closest(A, ia, ja, B, ib, jb, C, ic1, ic2):
    """Closest points C[ic1] on segment A[ia]-A[ja] and C[ic2] on B[ib]-B[jb] (either may be
    a point). The output rows must not be input rows."""
    d10, d11, d12 = A[ja, 0] - A[ia, 0], A[ja, 1] - A[ia, 1], A[ja, 2] - A[ia, 2]
    d20, d21, d22 = B[jb, 0] - B[ib, 0], B[jb, 1] - B[ib, 1], B[jb, 2] - B[ib, 2]
    r0, r1, r2 = A[ia, 0] - B[ib, 0], A[ia, 1] - B[ib, 1], A[ia, 2] - B[ib, 2]
    a = d10 * d10 + d11 * d11 + d12 * d12
    e = d20 * d20 + d21 * d21 + d22 * d22
    f = d20 * r0 + d21 * r1 + d22 * r2
    c = d10 * r0 + d11 * r1 + d12 * r2
    b = d10 * d20 + d11 * d21 + d12 * d22
    den = a * e - b * b
    s = 0.0
    t = 0.0
    if e <= 1e-18:  # second segment is a point
        s = min(1.0, max(0.0, -c / a)) if a > 1e-18 else 0.0
    elif a <= 1e-18:  # first segment is a point
        t = min(1.0, max(0.0, f / e))
    else:
        if den > 1e-18:
            s = min(1.0, max(0.0, (b * f - c * e) / den))
        t = (b * s + f) / e
    if e <= 1e-18 or a <= 1e-18:
        pass
    elif t < 0.0:
        t = 0.0
        s = min(1.0, max(0.0, -c / a)) if a > 1e-18 else 0.0
    elif t > 1.0:
        t = 1.0
        s = min(1.0, max(0.0, (b - c) / a)) if a > 1e-18 else 0.0
    C[ic1, 0] = A[ia, 0] + s * d10
    C[ic1, 1] = A[ia, 1] + s * d11
    C[ic1, 2] = A[ia, 2] + s * d12
    C[ic2, 0] = B[ib, 0] + t * d20
    C[ic2, 1] = B[ib, 1] + t * d21
    C[ic2, 2] = B[ib, 2] + t * d22


@njit(**_NONRT_INLINE)
def plane_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws):
    """A plane (the halfspace z <= 0 of its frame) against any other shape (either order): n
    the plane's normal (a → b), u = −(plane normal) the shape's direction towards the plane.
    The shape's lowest point (`support_height` along u) decides the margin test before any
    feature is built; then its support feature along u, unordered (every vertex within the
    tolerance of the deepest; when penetrating, of the plane)."""
    pa = gkind[a] == PLANE
    P, s = (a, b) if pa else (b, a)            # the plane, the shape
    sg = 1.0 if pa else -1.0                   # n = sg · (plane normal)
    i_u = _VNEGN if pa else _VN                # row of u in V
    i_pl0, i_pl1 = (_VPLA0, _VPLA1) if pa else (_VPLB0, _VPLB1)
    i_ws, i_wp = (_VPBW, _VPAW) if pa else (_VPAW, _VPBW)   # witness rows: on the shape, on the plane
    F = FB if pa else FA
    for k in range(3):
        V[_VN, k] = sg * gR[P, k, 2]
        V[_VNEGN, k] = -V[_VN, k]
        V[i_pl0, k] = gp[P, k]
    _cprr(V, i_pl1, V, _VN)
    ks = gkind[s]
    pu = gp[P, 0] * V[i_u, 0] + gp[P, 1] * V[i_u, 1] + gp[P, 2] * V[i_u, 2]
    # heights above the plane are pu − x · u: the lowest point's first; beyond the margin no
    # feature is needed; when penetrating, every vertex up to tol above the plane, not only
    # the deepest's tol
    if ks == CONVEX:   # one climb for the margin test and the support set
        return _hull_plane(s, pa, gR, gp, cverts, hg, margin, tol, pu, V, i_u, i_ws, i_wp, F, PA, PB, FA, FB, ws)
    if ks == BOX:
        low = pu - box_height(s, gsize, gR, gp, V[i_u, 0], V[i_u, 1], V[i_u, 2])
    else:
        low = pu - support_height(ks, s, gsize, gR, gp, cverts, coff, hg, V[i_u, 0], V[i_u, 1], V[i_u, 2])
    if low > margin:
        return 0
    tol_s = tol - min(low, 0.0)
    if ks == BOX:   # the hot path of box scenes: the box's feature directly
        m = _support_box(s, gsize, gR, gp, V, i_u, tol_s, F)
    else:
        m = support_feature(ks, s, gsize, gR, gp, cverts, coff, hg, V, i_u, tol_s, F, False, False)
    dmin = np.inf
    for i in range(m):
        dd = pu - _dotrr(F, i, V, i_u)
        if dd < dmin:
            dmin = dd
            _cprr(V, i_ws, F, i)
    if dmin > margin:
        return 0
    for k in range(3):
        V[i_wp, k] = V[i_ws, k] + dmin * V[i_u, k]
    return build_patch(FA, INF_FEATURE if pa else m, FB, m if pa else INF_FEATURE, V, PA, PB, ws)


@njit(**_NONRT)
def _hull_plane(s, pa, gR, gp, cverts, hg, margin, tol, pu, V, i_u, i_ws, i_wp, F, PA, PB, FA, FB, ws):
    """`plane_pair` for a convex hull s (pa: the plane is a), u = V[i_u], pu = (plane point) · u:
    the climb's vertex gives the lowest point (the margin test) and starts the flood fill of the
    support set (`hulls.hull_flood`), whose extreme vertex (first of `hull_points_unordered`) is
    the witness; a set that is a curved surface's cap, not a face (`hulls.hull_patch_collapses`,
    decided on the band of width tol, not the one widened by the penetration), is one point,
    the weighted mean of its near-tied lowest vertices at the lowest one's height
    (`hulls.hull_tied_point`), or two when two of them rest on a line
    (`hulls.hull_tied_partner`). Otherwise the same result as `support_height` then
    `support_feature`, with one climb."""
    u0, u1, u2 = V[i_u, 0], V[i_u, 1], V[i_u, 2]
    l0 = gR[s, 0, 0] * u0 + gR[s, 1, 0] * u1 + gR[s, 2, 0] * u2      # u in the hull's frame
    l1 = gR[s, 0, 1] * u0 + gR[s, 1, 1] * u1 + gR[s, 2, 1] * u2
    l2 = gR[s, 0, 2] * u0 + gR[s, 1, 2] * u1 + gR[s, 2, 2] * u2
    v0, hmax = hull_climb(s, cverts, hg, l0, l1, l2, -1)
    low = pu - ((gp[s, 0] * u0 + gp[s, 1] * u1 + gp[s, 2] * u2) + hmax)
    if low > margin:
        return 0
    m = hull_flood(cverts, hg, v0, hmax, l0, l1, l2, tol - min(low, 0.0))
    if hull_patch_collapses(s, cverts, hg, v0, hmax, m, l0, l1, l2, tol):   # a curved cap: one point,
        w = hull_tied_partner(cverts, hg, v0, hmax, m, l0, l1, l2, tol)    # or two on a line
        if w >= 0:
            for k in range(3):
                F[0, k] = _cvert_world(gR, gp, s, cverts, v0, k)
                F[1, k] = _cvert_world(gR, gp, s, cverts, w, k)
            m = 2
        else:
            c0, c1, c2 = hull_tied_point(cverts, hg, hmax, m, l0, l1, l2, tol)     # (geometry frame)
            for k in range(3):
                F[0, k] = gp[s, k] + gR[s, k, 0] * c0 + gR[s, k, 1] * c1 + gR[s, k, 2] * c2
            m = 1
    else:
        m = hull_points_unordered(s, gR, gp, cverts, hg, m, V, i_u, F)
    dmin = pu - _dotrr(F, 0, V, i_u)   # F[0] is the lowest: no point of F is deeper
    if dmin > margin:
        return 0
    _cprr(V, i_ws, F, 0)
    for k in range(3):
        V[i_wp, k] = V[i_ws, k] + dmin * V[i_u, k]
    return build_patch(FA, INF_FEATURE if pa else m, FB, m if pa else INF_FEATURE, V, PA, PB, ws)


@njit(**_NONRT)
def core_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws):
    """Spheres and capsules: the closest points of their cores (centre points, axis segments),
    n along them; two spheres give one point, capsules the patch of their support features."""
    ka, kb = gkind[a], gkind[b]
    if ka == SPHERE and kb == SPHERE:
        dv0, dv1, dv2 = gp[b, 0] - gp[a, 0], gp[b, 1] - gp[a, 1], gp[b, 2] - gp[a, 2]
        dist = np.sqrt(dv0 * dv0 + dv1 * dv1 + dv2 * dv2)
        if dist - gsize[a, 0] - gsize[b, 0] > margin:
            return 0
        if dist < 1e-12:
            V[_VN, 0] = 0.0
            V[_VN, 1] = 0.0
            V[_VN, 2] = 1.0
        else:
            V[_VN, 0] = dv0 / dist
            V[_VN, 1] = dv1 / dist
            V[_VN, 2] = dv2 / dist
        for k in range(3):
            PA[0, k] = gp[a, k] + gsize[a, 0] * V[_VN, k]
            PB[0, k] = gp[b, k] - gsize[b, 0] * V[_VN, k]
        return 1
    ha = gsize[a, 1] if ka == CAPSULE else 0.0
    hb = gsize[b, 1] if kb == CAPSULE else 0.0
    for k in range(3):
        FA[0, k] = gp[a, k] + ha * gR[a, k, 2]
        FA[1, k] = gp[a, k] - ha * gR[a, k, 2]
        FB[0, k] = gp[b, k] + hb * gR[b, k, 2]
        FB[1, k] = gp[b, k] - hb * gR[b, k, 2]
    _segments_closest(FA, 0, 1, FB, 0, 1, V, _VC1, _VC2)
    dx, dy, dz = V[_VC2, 0] - V[_VC1, 0], V[_VC2, 1] - V[_VC1, 1], V[_VC2, 2] - V[_VC1, 2]
    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
    if dist - gsize[a, 0] - gsize[b, 0] > margin:
        return 0
    if dist > 1e-12:
        V[_VN, 0], V[_VN, 1], V[_VN, 2] = dx / dist, dy / dist, dz / dist
    else:  # core segments intersect: any direction normal to the first axis
        for k in range(3):
            V[_VREF, k] = gR[a, k, 2]
            V[_VEX0, k] = gR[b, k, 0]
        _tangent_basis_v(V, _VREF, _VEX0, _VN, _VNEGN)
    for k in range(3):
        V[_VPAW, k] = V[_VC1, k] + gsize[a, 0] * V[_VN, k]
        V[_VPBW, k] = V[_VC2, k] - gsize[b, 0] * V[_VN, k]
        V[_VNEGN, k] = -V[_VN, k]
    mA = support_feature(ka, a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, True, False)
    mB = support_feature(kb, b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, True, False)
    return build_patch(FA, mA, FB, mB, V, PA, PB, ws)


@njit(**_NONRT_INLINE)
def box_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws):
    """Two boxes: the separating axis test (`_box_box`) for n, the witness pair of the two
    edges' closest points or of a feature against the other's face, then the patch."""
    sep, edge = _box_box(gsize, gR, gp, a, b, V, margin)
    if sep > margin:
        return 0
    for k in range(3):
        V[_VNEGN, k] = -V[_VN, k]
    mA = mB = 0
    for side in range(2):    # one inlined copy of `_support_box` for both boxes
        g, i_d, F = (a, _VN, FA) if side == 0 else (b, _VNEGN, FB)
        m = _support_box_inline(g, gsize, gR, gp, V, i_d, tol, F)
        if side == 0:
            mA = m
        else:
            mB = m
    if edge and mA == 2 and mB == 2:
        _segments_closest(FA, 0, 1, FB, 0, 1, V, _VPAW, _VPBW)
        for k in range(3):  # the SAT separation is the exact edge-edge distance along n
            mid = 0.5 * (V[_VPAW, k] + V[_VPBW, k])
            V[_VPAW, k] = mid - 0.5 * sep * V[_VN, k]
            V[_VPBW, k] = mid + 0.5 * sep * V[_VN, k]
    else:
        # a vertex or feature of one box against the other's face
        if mB <= mA:
            _cprr(V, _VPBW, FB, 0)
            for k in range(3):
                V[_VPAW, k] = V[_VPBW, k] - sep * V[_VN, k]
        else:
            _cprr(V, _VPAW, FA, 0)
            for k in range(3):
                V[_VPBW, k] = V[_VPAW, k] + sep * V[_VN, k]
    return build_patch(FA, mA, FB, mB, V, PA, PB, ws)


@njit(**_NONRT)
def sphere_box_pair(a, b, gkind, gsize, gR, gp, margin, V, PA, PB):
    """A sphere against a box (either order): the closest point of the box to the centre, or
    when the centre is inside, the nearest face; one point pair (PA[0], PB[0])."""
    s, x = (a, b) if gkind[a] == SPHERE else (b, a)
    r = gsize[s, 0]
    # the centre in the box frame, clamped to the box
    inside = True
    c0 = c1 = c2 = 0.0
    q0 = q1 = q2 = 0.0
    for j in range(3):
        cl = (gR[x, 0, j] * (gp[s, 0] - gp[x, 0]) + gR[x, 1, j] * (gp[s, 1] - gp[x, 1])
              + gR[x, 2, j] * (gp[s, 2] - gp[x, 2]))
        qj = min(gsize[x, j], max(-gsize[x, j], cl))
        if abs(cl) > gsize[x, j]:
            inside = False
        if j == 0:
            c0, q0 = cl, qj
        elif j == 1:
            c1, q1 = cl, qj
        else:
            c2, q2 = cl, qj
    if inside:   # push out through the nearest face
        j, best = 0, np.inf
        for k in range(3):
            ck = c0 if k == 0 else (c1 if k == 1 else c2)
            sk = gsize[x, k] - abs(ck)
            if sk < best:
                best, j = sk, k
        cj = c0 if j == 0 else (c1 if j == 1 else c2)
        sg = 1.0 if cj >= 0 else -1.0
        q0, q1, q2 = c0, c1, c2
        if j == 0:
            q0 = sg * gsize[x, 0]
        elif j == 1:
            q1 = sg * gsize[x, 1]
        else:
            q2 = sg * gsize[x, 2]
        dist = -best - r
        for k in range(3):
            V[_VN, k] = -sg * gR[x, k, j]       # from the sphere into the box
    for k in range(3):
        V[_VPBW, k] = gR[x, k, 0] * q0 + gR[x, k, 1] * q1 + gR[x, k, 2] * q2 + gp[x, k]   # on the box
    if not inside:
        e0, e1, e2 = V[_VPBW, 0] - gp[s, 0], V[_VPBW, 1] - gp[s, 1], V[_VPBW, 2] - gp[s, 2]
        d = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        V[_VN, 0], V[_VN, 1], V[_VN, 2] = e0 / d, e1 / d, e2 / d
        dist = d - r
    if dist > margin:
        return 0
    for k in range(3):
        V[_VPAW, k] = gp[s, k] + r * V[_VN, k]   # on the sphere
    if s == a:
        _cprr(PA, 0, V, _VPAW)
        _cprr(PB, 0, V, _VPBW)
    else:        # n from a (the box) to b (the sphere)
        for k in range(3):
            V[_VN, k] = -V[_VN, k]
        _cprr(PA, 0, V, _VPBW)
        _cprr(PB, 0, V, _VPAW)
    return 1


@njit(**_NONRT)
def convex_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G, pc, s):
    """A convex hull or a cylinder against a hull or a primitive (not a plane): normal and
    witness points by GJK/EPA (`gjk.gjk_epa`, into rows 0, 1, 2 of G (3, 3)), then the patch
    along the normal. Returns the patch size; 0 beyond the margin; -2 for a flat Minkowski
    difference (left to the library). gw: `gjk.GjkWork` scratch; pc: the `midphase.PairCache`
    whose row s (−1: none) keeps the pair's last GJK simplex and normal. GJK starts from the
    kept simplex. On a cylinder's smooth rim GJK ends where rounding stops its progress, so a
    pair apart ends a little differently from another start (G1 drops: normals within 5e-5
    rad, separations within 1e-7 m, the kept start's the better one in 70% of such pairs); a
    cylinder pair found overlapping from a kept simplex is solved again from scratch, as
    EPA's depth and normal depend on the polytope it starts from (a slab's patch point 2e-5 m
    off its face from a kept start)."""
    ns = pc.nsimplex[s] if s >= 0 else 0
    sep, n = gjk.gjk_epa(a, b, gkind, gsize, gR, gp, cverts, hg, gw, G, pc.local, pc.verts, max(s, 0), ns)
    if ns > 0 and not sep > 0.0 and (gkind[a] == CYLINDER or gkind[b] == CYLINDER):
        sep, n = gjk.gjk_epa(a, b, gkind, gsize, gR, gp, cverts, hg, gw, G, pc.local, pc.verts, 0, 0)
    if s >= 0:
        gjk.keep_simplex(a, b, gR, gp, gw, n, pc.local, pc.verts, s)
        pc.nsimplex[s] = n
    if s >= 0 and not np.isnan(sep):     # the normal, and the hulls' last supports along ±n as the climbs' starts
        pc.axis[s, 0], pc.axis[s, 1], pc.axis[s, 2] = G[0, 0], G[0, 1], G[0, 2]
        pc.vert[s, 0] = gw.sv[0] if gkind[a] == CONVEX else -1
        pc.vert[s, 1] = gw.sv[1] if gkind[b] == CONVEX else -1
    if np.isnan(sep):
        return -2
    if sep > margin:
        return 0
    return patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, G, 0, G, 1, G, 2, tol, V, PA, PB, FA, FB, ws,
                              True)


@njit(**_NONRT_INLINE)
def narrow_pair(code, a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G, pc, s):
    """The kernel of pair type `code` (`pair_table`) on geometries a < b (s: the pair's
    `midphase.PairCache` row, −1 for none)."""
    if code == PAIR_PLANE:
        return plane_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
    if code == PAIR_BOXES:
        return box_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
    if code == PAIR_CORES:
        return core_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
    if code == PAIR_SPHERE_BOX:
        return sphere_box_pair(a, b, gkind, gsize, gR, gp, margin, V, PA, PB)
    if code == PAIR_GJK:
        return convex_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G,
                           pc, s)
    return 0


@njit(**_NONRT_INLINE)
def narrow_pair_nobox(code, a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G, pc,
                      s):
    """`narrow_pair` for the pair types of shapes without boxes (`NOBOX_CODES`: planes,
    spheres, capsules, cylinders and hulls, e.g. robots on the ground): the box-box and
    sphere-box kernels are not compiled in (`driver.detect_nobox_kernel`)."""
    if code == PAIR_PLANE:
        return plane_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
    if code == PAIR_CORES:
        return core_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
    if code == PAIR_GJK:
        return convex_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G,
                           pc, s)
    return 0

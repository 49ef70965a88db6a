"""GJK distance and EPA penetration between two convex shapes (hulls, boxes, cylinders, and
spheres and capsules through their core point or segment plus radius).

Gilbert, Johnson and Keerthi, "A fast procedure for computing the distance between complex
objects in three-dimensional space" (IEEE J. Robot. Autom., 1988): the closest point of the
Minkowski difference A − B to the origin, by simplices of support points; the sub-simplex
closest to the origin is found by the Voronoi-region tests of Ericson ("Real-Time Collision
Detection", 2005, Sec. 5.1.5 and 5.1.6). When the cores overlap, van den Bergen's Expanding
Polytope Algorithm ("Proximity queries and penetration depth computation on 3D game
objects", GDC 2001) grows a polytope inside A − B from GJK's simplex until its face nearest
the origin is on the boundary: that face's normal and distance are the contact normal and
the depth.

Result convention (as `collision.patch`): n unit from shape a to shape b, witness points pa, pb on
the surfaces, separation (pb − pa) · n (negative = penetration).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .hulls import hull_climb
from .jitopts import _JIT, _NONRT
from .kinds import BOX, CAPSULE, CONVEX, CYLINDER, SPHERE

GJK_ITERS = 64
EPA_ITERS = 96
EPA_MAXV = EPA_ITERS + 4            # polytope vertices
EPA_MAXF = 2 * EPA_MAXV             # faces of a closed triangulated polytope: 2V − 4
EPA_TOL = 1e-9                      # m: EPA stops when the support point gains less
FLAT_TETRA = 1e-10                  # GJK's tetrahedron is flat below this volume / (longest edge)³
SAME_POINT = 1e-12                  # two support points closer than this times their coordinates' size are one

GjkWork = namedtuple("GjkWork", "W A B lam F FN FD E sv ids")
GjkWork.__doc__ = """Scratch of `gjk_epa` (allocate with `gjk_work`): support points W = A − B
and their parts A, B (EPA_MAXV, 3) (rows 0–3: GJK's simplex), barycentric weights lam (4,),
EPA faces F (EPA_MAXF, 3) int64 (row −1: dead), their unit normals FN (EPA_MAXF, 3) and
distances FD (EPA_MAXF,), horizon edges E (3 EPA_MAXF, 2) int64, the last support vertices
sv (2,) int64 of hulls a and b (where the next hill climb starts; −1: from the seeds), and
each row's hull vertices ids (EPA_MAXV, 2) int64 (−1: not a hull's vertex)."""


@njit(**_JIT)
def gjk_work():
    """A `GjkWork` scratch."""
    return GjkWork(np.zeros((EPA_MAXV, 3)), np.zeros((EPA_MAXV, 3)), np.zeros((EPA_MAXV, 3)), np.zeros(4),
                   np.zeros((EPA_MAXF, 3), dtype=np.int64), np.zeros((EPA_MAXF, 3)), np.zeros(EPA_MAXF),
                   np.zeros((3 * EPA_MAXF, 2), dtype=np.int64), np.full(2, -1, dtype=np.int64),
                   np.full((EPA_MAXV, 2), -1, dtype=np.int64))


@njit(**_NONRT)
def core_radius(kind, g, gsize):
    """Radius around the core of a sphere (its centre) or a capsule (its segment); 0 else."""
    if kind == SPHERE or kind == CAPSULE:
        return gsize[g, 0]
    return 0.0


@njit(**_NONRT)
def support_core(kind, g, gsize, gR, gp, cverts, hg, d0, d1, d2, P, i, sv, j):
    """A point of geometry g's core maximizing x · d, into P[i] (world). A hull's climb starts
    at vertex sv[j] (−1: the seeds) and leaves its result there."""
    if kind == CONVEX:
        l0 = gR[g, 0, 0] * d0 + gR[g, 1, 0] * d1 + gR[g, 2, 0] * d2
        l1 = gR[g, 0, 1] * d0 + gR[g, 1, 1] * d1 + gR[g, 2, 1] * d2
        l2 = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
        v = hull_climb(g, cverts, hg, l0, l1, l2, sv[j])[0]
        sv[j] = v
        for k in range(3):
            P[i, k] = gp[g, k] + gR[g, k, 0] * cverts[v, 0] + gR[g, k, 1] * cverts[v, 1] + gR[g, k, 2] * cverts[v, 2]
        return
    for k in range(3):
        P[i, k] = gp[g, k]
    if kind == BOX:
        for j in range(3):
            s = gsize[g, j] if gR[g, 0, j] * d0 + gR[g, 1, j] * d1 + gR[g, 2, j] * d2 >= 0 else -gsize[g, j]
            for k in range(3):
                P[i, k] += s * gR[g, k, j]
    elif kind == CAPSULE or kind == CYLINDER:
        du = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
        h = gsize[g, 1] if du >= 0 else -gsize[g, 1]
        for k in range(3):
            P[i, k] += h * gR[g, k, 2]
        if kind == CYLINDER:   # the rim point along d's part normal to the axis (the disc's centre if none)
            w0, w1, w2 = d0 - du * gR[g, 0, 2], d1 - du * gR[g, 1, 2], d2 - du * gR[g, 2, 2]
            wn = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            if wn > 1e-12 * np.sqrt(d0 * d0 + d1 * d1 + d2 * d2):
                r = gsize[g, 0] / wn
                P[i, 0] += r * w0
                P[i, 1] += r * w1
                P[i, 2] += r * w2


@njit(**_NONRT)
def _support(a, b, gkind, gsize, gR, gp, cverts, hg, d0, d1, d2, ws, i):
    """Support point of A − B along d: ws.A[i] (of a along d), ws.B[i] (of b along −d),
    ws.W[i] = A[i] − B[i], their hull vertices ws.ids[i]."""
    support_core(gkind[a], a, gsize, gR, gp, cverts, hg, d0, d1, d2, ws.A, i, ws.sv, 0)
    support_core(gkind[b], b, gsize, gR, gp, cverts, hg, -d0, -d1, -d2, ws.B, i, ws.sv, 1)
    ws.ids[i, 0] = ws.sv[0] if gkind[a] == CONVEX else -1
    ws.ids[i, 1] = ws.sv[1] if gkind[b] == CONVEX else -1
    for k in range(3):
        ws.W[i, k] = ws.A[i, k] - ws.B[i, k]


@njit(**_NONRT)
def _d(W, i, j):
    return W[i, 0] * W[j, 0] + W[i, 1] * W[j, 1] + W[i, 2] * W[j, 2]


@njit(**_NONRT)
def _closest_triangle(W, a, b, c, lam):
    """Barycentric weights (lam[a], lam[b], lam[c], others untouched) of the point of
    triangle (W[a], W[b], W[c]) closest to the origin (Ericson, Sec. 5.1.5)."""
    lam[a] = lam[b] = lam[c] = 0.0
    # with p = 0: d1 = ab · (p − a) = a·a − a·b, d4 = ac · (p − b) = a·b − b·c, etc.
    aa, ab_, ac_, bb, bc_, cc = _d(W, a, a), _d(W, a, b), _d(W, a, c), _d(W, b, b), _d(W, b, c), _d(W, c, c)
    d1 = aa - ab_
    d2 = aa - ac_
    if d1 <= 0 and d2 <= 0:
        lam[a] = 1.0
        return
    d3 = ab_ - bb
    d4 = ab_ - bc_
    if d3 >= 0 and d4 <= d3:
        lam[b] = 1.0
        return
    vc = d1 * d4 - d3 * d2
    if vc <= 0 and d1 >= 0 and d3 <= 0:
        v = d1 / (d1 - d3)
        lam[a], lam[b] = 1.0 - v, v
        return
    d5 = ac_ - bc_
    d6 = ac_ - cc
    if d6 >= 0 and d5 <= d6:
        lam[c] = 1.0
        return
    vb = d5 * d2 - d1 * d6
    if vb <= 0 and d2 >= 0 and d6 <= 0:
        w = d2 / (d2 - d6)
        lam[a], lam[c] = 1.0 - w, w
        return
    va = d3 * d6 - d5 * d4
    if va <= 0 and (d4 - d3) >= 0 and (d5 - d6) >= 0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        lam[b], lam[c] = 1.0 - w, w
        return
    den = 1.0 / (va + vb + vc)
    v, w = vb * den, vc * den
    lam[a], lam[b], lam[c] = 1.0 - v - w, v, w


@njit(**_NONRT)
def _point2(W, lam, n):
    """|Σ lam_i W_i|² over the first n rows."""
    x = y = z = 0.0
    for i in range(n):
        x += lam[i] * W[i, 0]
        y += lam[i] * W[i, 1]
        z += lam[i] * W[i, 2]
    return x * x + y * y + z * z


@njit(**_NONRT)
def _flat_tetrahedron(W):
    """Whether the tetrahedron W[:4] has a volume below FLAT_TETRA L³ (L its longest edge)."""
    L = 0.0
    for i in range(4):
        for j in range(i + 1, 4):
            L = max(L, (W[j, 0] - W[i, 0]) ** 2 + (W[j, 1] - W[i, 1]) ** 2 + (W[j, 2] - W[i, 2]) ** 2)
    u0, u1, u2 = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
    v0, v1, v2 = W[2, 0] - W[0, 0], W[2, 1] - W[0, 1], W[2, 2] - W[0, 2]
    w0, w1, w2 = W[3, 0] - W[0, 0], W[3, 1] - W[0, 1], W[3, 2] - W[0, 2]
    vol = (u1 * v2 - u2 * v1) * w0 + (u2 * v0 - u0 * v2) * w1 + (u0 * v1 - u1 * v0) * w2
    return abs(vol) <= FLAT_TETRA * L * np.sqrt(L)


@njit(**_NONRT)
def _closest_simplex(ws, n):
    """Weights ws.lam of the point of simplex W[:n] (n ≤ 4) closest to the origin; returns
    True if the origin is inside the tetrahedron (n = 4). (Ericson, Sec. 5.1.6.)"""
    W, lam = ws.W, ws.lam
    if n == 1:
        lam[0] = 1.0
        return False
    if n == 2:
        e0, e1, e2 = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        ee = e0 * e0 + e1 * e1 + e2 * e2
        t = 0.0 if ee <= 0 else -(W[0, 0] * e0 + W[0, 1] * e1 + W[0, 2] * e2) / ee
        t = min(1.0, max(0.0, t))
        lam[0], lam[1] = 1.0 - t, t
        return False
    if n == 3:
        _closest_triangle(W, 0, 1, 2, lam)
        return False
    # tetrahedron: the closest point of the faces the origin is outside of. A flat one (volume
    # below FLAT_TETRA times its longest edge cubed: four support points on one supporting
    # plane of touching shapes, up to round-off) contains nothing: the side tests of its faces
    # are then rounding noise, and all four faces are searched
    flat = _flat_tetrahedron(W)
    best = np.inf
    b0 = b1 = b2 = b3 = 0.0
    inside = not flat
    for f in range(4):
        i, j, k, o = (0, 1, 2, 3) if f == 0 else ((0, 1, 3, 2) if f == 1 else ((0, 2, 3, 1) if f == 2 else (1, 2, 3, 0)))
        u0, u1, u2 = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
        v0, v1, v2 = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
        c0, c1, c2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
        so = c0 * (W[o, 0] - W[i, 0]) + c1 * (W[o, 1] - W[i, 1]) + c2 * (W[o, 2] - W[i, 2])
        sp = -(c0 * W[i, 0] + c1 * W[i, 1] + c2 * W[i, 2])
        if not flat and sp * so > 0 and abs(so) > 1e-30:
            continue        # the origin is on the inner side of this face
        inside = False
        lam[o] = 0.0
        _closest_triangle(W, i, j, k, lam)
        d2 = _point2(W, lam, 4)
        if d2 < best:
            best, b0, b1, b2, b3 = d2, lam[0], lam[1], lam[2], lam[3]
    if inside:
        return True
    lam[0], lam[1], lam[2], lam[3] = b0, b1, b2, b3
    return False


@njit(**_NONRT)
def _same_point(ws, i, j):
    """Whether support points W[i] and W[j] are one point up to rounding: closer than
    SAME_POINT times the size of their coordinates (a kept simplex's point placed again from
    its geometry frames, `warm_simplex`, differs from the same vertex's fresh support point in
    the last bits)."""
    d = (ws.W[i, 0] - ws.W[j, 0]) ** 2 + (ws.W[i, 1] - ws.W[j, 1]) ** 2 + (ws.W[i, 2] - ws.W[j, 2]) ** 2
    s = 0.0
    for k in range(3):
        s = max(s, abs(ws.A[i, k]), abs(ws.B[i, k]), abs(ws.A[j, k]), abs(ws.B[j, k]))
    return d <= (SAME_POINT * s) ** 2


@njit(**_NONRT)
def _repeats(ws, n, j):
    """Whether support point W[j] is one of the points W[:n] (`_same_point`)."""
    for i in range(n):
        if _same_point(ws, i, j):
            return True
    return False


@njit(**_NONRT)
def _move_row(ws, i, m):
    """Simplex row i (W, A, B, lam, ids) copied to row m."""
    for k in range(3):
        ws.W[m, k] = ws.W[i, k]
        ws.A[m, k] = ws.A[i, k]
        ws.B[m, k] = ws.B[i, k]
    ws.lam[m] = ws.lam[i]
    ws.ids[m, 0], ws.ids[m, 1] = ws.ids[i, 0], ws.ids[i, 1]


@njit(**_NONRT)
def _distinct(ws, n):
    """Drop the simplex rows W[:n] that repeat an earlier row (`_same_point`); returns the new
    count. EPA's blow-up needs distinct points: a repeated one leaves a triangle without a
    normal, which would read as a flat Minkowski difference."""
    m = 0
    for i in range(n):
        if not _repeats(ws, m, i):
            if m != i:
                _move_row(ws, i, m)
            m += 1
    return m


@njit(**_NONRT)
def _compact(ws, n):
    """Drop the simplex rows with zero weight; returns the new count."""
    m = 0
    for i in range(n):
        if ws.lam[i] > 0.0:
            if m != i:
                _move_row(ws, i, m)
            m += 1
    return m


@njit(**_NONRT)
def warm_simplex(a, b, gR, gp, ws, local, verts, r, ns):
    """GJK's start from the simplex the pair ended with at its last call (frame coherence:
    touching links keep their closest features from one step to the next): its points
    local[r, :ns] (ns ≤ 4 rows of (a's, b's) core points in their geometry frames; hull
    vertices verts[r, :ns], where the climbs start; `keep_simplex`) at the current
    placements, reduced to the sub-simplex closest to the origin. Any points of A − B are a
    valid start: only the number of iterations depends on it. Returns the rows kept (4: the
    origin is inside), 0 when the start is degenerate."""
    for i in range(ns):
        for k in range(3):
            ws.A[i, k] = gp[a, k] + gR[a, k, 0] * local[r, i, 0, 0] + gR[a, k, 1] * local[r, i, 0, 1] + \
                gR[a, k, 2] * local[r, i, 0, 2]
            ws.B[i, k] = gp[b, k] + gR[b, k, 0] * local[r, i, 1, 0] + gR[b, k, 1] * local[r, i, 1, 1] + \
                gR[b, k, 2] * local[r, i, 1, 2]
            ws.W[i, k] = ws.A[i, k] - ws.B[i, k]
        ws.ids[i, 0], ws.ids[i, 1] = verts[r, i, 0], verts[r, i, 1]
    ws.sv[0], ws.sv[1] = verts[r, 0, 0], verts[r, 0, 1]
    if _closest_simplex(ws, ns):
        return 4
    if not np.isfinite(_point2(ws.W, ws.lam, ns)):
        return 0
    return _compact(ws, ns)


@njit(**_NONRT)
def keep_simplex(a, b, gR, gp, ws, n, local, verts, s):
    """Row s of the caller's cache (`warm_simplex`) from GJK's final simplex, rows ws[:n]: its
    core points in the geometries' frames and their hull vertices."""
    for i in range(n):
        for k in range(3):
            local[s, i, 0, k] = gR[a, 0, k] * (ws.A[i, 0] - gp[a, 0]) + gR[a, 1, k] * (ws.A[i, 1] - gp[a, 1]) + \
                gR[a, 2, k] * (ws.A[i, 2] - gp[a, 2])
            local[s, i, 1, k] = gR[b, 0, k] * (ws.B[i, 0] - gp[b, 0]) + gR[b, 1, k] * (ws.B[i, 1] - gp[b, 1]) + \
                gR[b, 2, k] * (ws.B[i, 2] - gp[b, 2])
        verts[s, i, 0], verts[s, i, 1] = ws.ids[i, 0], ws.ids[i, 1]


@njit(**_NONRT)
def gjk(a, b, gkind, gsize, gR, gp, cverts, hg, ws, local, verts, r, ns):
    """GJK on the cores of a and b: returns (n, dist²): the simplex W[:n] with weights lam,
    whose point Σ lam W is the closest of A − B to the origin (dist² its squared norm);
    n = 4 with dist² = 0 when the origin is inside (the cores overlap). Starts from the
    cached simplex row r of ns points (`warm_simplex`; ns = 0: from the support point along the
    centres)."""
    n = warm_simplex(a, b, gR, gp, ws, local, verts, r, ns) if ns > 0 else 0
    if n == 4:
        return 4, 0.0
    if n == 0:
        d0, d1, d2 = gp[a, 0] - gp[b, 0], gp[a, 1] - gp[b, 1], gp[a, 2] - gp[b, 2]
        if d0 * d0 + d1 * d1 + d2 * d2 < 1e-24:
            d0 = 1.0
        ws.sv[0] = -1
        ws.sv[1] = -1
        _support(a, b, gkind, gsize, gR, gp, cverts, hg, -d0, -d1, -d2, ws, 0)
        ws.lam[0] = 1.0
        n = 1
    v0 = v1 = v2 = 0.0
    for i in range(n):
        v0 += ws.lam[i] * ws.W[i, 0]
        v1 += ws.lam[i] * ws.W[i, 1]
        v2 += ws.lam[i] * ws.W[i, 2]
    vv = v0 * v0 + v1 * v1 + v2 * v2
    for _ in range(GJK_ITERS):
        if vv <= 1e-24:
            return n, 0.0
        _support(a, b, gkind, gsize, gR, gp, cverts, hg, -v0, -v1, -v2, ws, n)
        vw = v0 * ws.W[n, 0] + v1 * ws.W[n, 1] + v2 * ws.W[n, 2]
        if vv - vw <= 1e-12 * vv:       # no support point beyond the current closest point
            return n, vv
        if _repeats(ws, n, n):      # the new point repeats one of the simplex's
            return n, vv
        n += 1
        if _closest_simplex(ws, n):
            return 4, 0.0
        n = _compact(ws, n)
        v0 = v1 = v2 = 0.0
        for i in range(n):
            v0 += ws.lam[i] * ws.W[i, 0]
            v1 += ws.lam[i] * ws.W[i, 1]
            v2 += ws.lam[i] * ws.W[i, 2]
        vnew = v0 * v0 + v1 * v1 + v2 * v2
        if vnew >= vv:                  # no progress (rounding): the current point is the answer
            return n, vnew
        vv = vnew
    return n, vv


@njit(**_NONRT)
def _face(ws, f, i, j, k, c0, c1, c2):
    """EPA face f = (i, j, k), its normal oriented away from the interior point c; False if
    degenerate (the face is then never the nearest)."""
    W = ws.W
    u0, u1, u2 = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    v0, v1, v2 = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    n0, n1, n2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
    nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    ws.F[f, 0], ws.F[f, 1], ws.F[f, 2] = i, j, k
    if nn < 1e-30:
        ws.FN[f, 0], ws.FN[f, 1], ws.FN[f, 2] = 0.0, 0.0, 0.0
        ws.FD[f] = np.inf
        return False
    if n0 * (W[i, 0] - c0) + n1 * (W[i, 1] - c1) + n2 * (W[i, 2] - c2) < 0:
        nn = -nn
    ws.FN[f, 0], ws.FN[f, 1], ws.FN[f, 2] = n0 / nn, n1 / nn, n2 / nn
    ws.FD[f] = ws.FN[f, 0] * W[i, 0] + ws.FN[f, 1] * W[i, 1] + ws.FN[f, 2] * W[i, 2]
    return True


@njit(**_NONRT)
def _blow_up(a, b, gkind, gsize, gR, gp, cverts, hg, ws, n):
    """Grow GJK's simplex W[:n] (the origin on it) to a tetrahedron of support points;
    returns False for a flat Minkowski difference."""
    W = ws.W
    n = _distinct(ws, n)
    while n < 4:
        ok = False
        for t in range(6):
            # candidate directions: the axes (n = 1), normals to the segment (n = 2), the
            # triangle's normal and its opposite (n = 3)
            if n == 1 or n == 2:
                e0, e1, e2 = (1.0 if t // 2 == 0 else 0.0), (1.0 if t // 2 == 1 else 0.0), (1.0 if t // 2 == 2 else 0.0)
                if n == 2:
                    u0, u1, u2 = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
                    e0, e1, e2 = u1 * e2 - u2 * e1, u2 * e0 - u0 * e2, u0 * e1 - u1 * e0
            else:
                if t >= 2:
                    break
                u0, u1, u2 = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
                v0, v1, v2 = W[2, 0] - W[0, 0], W[2, 1] - W[0, 1], W[2, 2] - W[0, 2]
                e0, e1, e2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
            if t % 2 == 1:
                e0, e1, e2 = -e0, -e1, -e2
            if e0 * e0 + e1 * e1 + e2 * e2 < 1e-30:
                continue
            _support(a, b, gkind, gsize, gR, gp, cverts, hg, e0, e1, e2, ws, n)
            # accept the point if it leaves the affine hull of the simplex
            if n == 1:
                x0, x1, x2 = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
                gain = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            else:
                en = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
                gain = ((W[n, 0] - W[0, 0]) * e0 + (W[n, 1] - W[0, 1]) * e1 + (W[n, 2] - W[0, 2]) * e2) / en
            if gain > 1e-9:
                ok = True
                break
        if not ok:
            return False
        n += 1
    return True


@njit(**_NONRT)
def epa(a, b, gkind, gsize, gR, gp, cverts, hg, ws, n):
    """EPA from GJK's simplex W[:n] (containing the origin or touching it). Returns the
    index of the face of the final polytope nearest the origin (its normal FN[f] points from
    a to b, FD[f] is the depth), or −1 when A − B is flat."""
    if not _blow_up(a, b, gkind, gsize, gR, gp, cverts, hg, ws, n):
        return -1
    W, F, FN, FD, E = ws.W, ws.F, ws.FN, ws.FD, ws.E
    c0 = 0.25 * (W[0, 0] + W[1, 0] + W[2, 0] + W[3, 0])
    c1 = 0.25 * (W[0, 1] + W[1, 1] + W[2, 1] + W[3, 1])
    c2 = 0.25 * (W[0, 2] + W[1, 2] + W[2, 2] + W[3, 2])
    _face(ws, 0, 0, 1, 2, c0, c1, c2)
    _face(ws, 1, 0, 3, 1, c0, c1, c2)
    _face(ws, 2, 0, 2, 3, c0, c1, c2)
    _face(ws, 3, 1, 3, 2, c0, c1, c2)
    nf = 4
    nv = 4
    best = 0
    for _ in range(EPA_ITERS):
        best = -1
        for f in range(nf):
            if F[f, 0] >= 0 and (best < 0 or FD[f] < FD[best]):
                best = f
        if best < 0 or not np.isfinite(FD[best]) or nv >= EPA_MAXV:
            break
        _support(a, b, gkind, gsize, gR, gp, cverts, hg, FN[best, 0], FN[best, 1], FN[best, 2], ws, nv)
        dnew = FN[best, 0] * W[nv, 0] + FN[best, 1] * W[nv, 1] + FN[best, 2] * W[nv, 2]
        if dnew - FD[best] <= EPA_TOL:
            break
        # remove the faces the new point sees; their unshared edges form the horizon
        ne = 0
        for f in range(nf):
            if F[f, 0] < 0:
                continue
            i0 = F[f, 0]
            if FN[f, 0] * (W[nv, 0] - W[i0, 0]) + FN[f, 1] * (W[nv, 1] - W[i0, 1]) + FN[f, 2] * (W[nv, 2] - W[i0, 2]) <= 1e-14:
                continue
            for q in range(3):
                x, y = F[f, q], F[f, (q + 1) % 3]
                found = -1
                for e in range(ne):
                    if (E[e, 0] == y and E[e, 1] == x) or (E[e, 0] == x and E[e, 1] == y):
                        found = e
                        break
                if found >= 0:
                    ne -= 1
                    E[found, 0], E[found, 1] = E[ne, 0], E[ne, 1]
                else:
                    E[ne, 0], E[ne, 1] = x, y
                    ne += 1
            F[f, 0] = -1
        # new faces from the horizon to the new point, in the dead slots first
        slot = 0
        full = False
        for e in range(ne):
            while slot < nf and F[slot, 0] >= 0:
                slot += 1
            if slot == nf:
                if nf >= EPA_MAXF:
                    full = True
                    break
                nf += 1
            _face(ws, slot, E[e, 0], E[e, 1], nv, c0, c1, c2)
        nv += 1
        if full:
            break
    best = -1
    for f in range(nf):
        if F[f, 0] >= 0 and (best < 0 or FD[f] < FD[best]):
            best = f
    return best


@njit(**_NONRT)
def gjk_epa(a, b, gkind, gsize, gR, gp, cverts, hg, ws, out, local, verts, r, ns):
    """Normal and witness points of shapes a and b: out rows 0 = n (unit, a → b), 1 = pa,
    2 = pb (on the surfaces). Returns (the separation (pb − pa) · n (negative: penetration),
    or nan when the Minkowski difference is flat (the caller then uses another method); the
    rows of GJK's final simplex in ws, which the caller may keep (`keep_simplex`) for the next
    call's start (`gjk` from row r of ns points of local, verts))."""
    n, vv = gjk(a, b, gkind, gsize, gR, gp, cverts, hg, ws, local, verts, r, ns)
    ra = core_radius(gkind[a], a, gsize)
    rb = core_radius(gkind[b], b, gsize)
    apart = vv > 1e-18
    if apart:     # cores apart: n from their closest points
        for k in range(3):
            out[1, k] = 0.0
            out[2, k] = 0.0
        for i in range(n):
            for k in range(3):
                out[1, k] += ws.lam[i] * ws.A[i, k]
                out[2, k] += ws.lam[i] * ws.B[i, k]
        dist = np.sqrt(vv)
        for k in range(3):
            out[0, k] = (out[2, k] - out[1, k]) / dist
        # GJK converges slowly on curved shapes: touching ones may stop at a tiny closest-point
        # vector of meaningless direction. Accept n only if the exact separation of the cores
        # along it (their support points) is the distance found; else EPA gives the normal
        _support(a, b, gkind, gsize, gR, gp, cverts, hg, out[0, 0], out[0, 1], out[0, 2], ws, EPA_MAXV - 1)
        gap = -(ws.W[EPA_MAXV - 1, 0] * out[0, 0] + ws.W[EPA_MAXV - 1, 1] * out[0, 1]
                + ws.W[EPA_MAXV - 1, 2] * out[0, 2])
        apart = gap > dist - 1e-7 - 1e-3 * dist
    if not apart:
        f = epa(a, b, gkind, gsize, gR, gp, cverts, hg, ws, n)
        if f < 0 or not np.isfinite(ws.FD[f]):
            return np.nan, n
        dist = -ws.FD[f]
        i, j, k_ = ws.F[f, 0], ws.F[f, 1], ws.F[f, 2]
        # barycentric weights of the origin's projection on the face (areas)
        W = ws.W
        px, py, pz = ws.FD[f] * ws.FN[f, 0], ws.FD[f] * ws.FN[f, 1], ws.FD[f] * ws.FN[f, 2]
        tot = 0.0
        for q in range(3):
            u = j if q == 0 else (k_ if q == 1 else i)
            v = k_ if q == 0 else (i if q == 1 else j)
            x0, x1, x2 = W[u, 0] - px, W[u, 1] - py, W[u, 2] - pz
            y0, y1, y2 = W[v, 0] - px, W[v, 1] - py, W[v, 2] - pz
            ws.lam[q] = ((x1 * y2 - x2 * y1) * ws.FN[f, 0] + (x2 * y0 - x0 * y2) * ws.FN[f, 1]
                         + (x0 * y1 - x1 * y0) * ws.FN[f, 2])
            tot += ws.lam[q]
        for k in range(3):
            out[0, k] = ws.FN[f, k]
            out[1, k] = 0.0
            out[2, k] = 0.0
        for q in range(3):
            idx = i if q == 0 else (j if q == 1 else k_)
            lq = ws.lam[q] / tot if tot != 0 else 1.0 / 3.0
            for k in range(3):
                out[1, k] += lq * ws.A[idx, k]
                out[2, k] += lq * ws.B[idx, k]
    for k in range(3):
        out[1, k] += ra * out[0, k]
        out[2, k] -= rb * out[0, k]
    return dist - ra - rb, n

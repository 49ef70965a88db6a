"""Support features and heights of every kind: the points of a shape maximizing x · d within
a tolerance (a vertex, an edge, a face as an ordered convex polygon) and the maximum itself.

Shape kinds and their ``size`` row (4 floats): PLANE (unused; the halfspace z <= 0 of its
placement), SPHERE (r), CAPSULE (r, half length), CYLINDER (r, half length), BOX (hx, hy, hz),
CONVEX (vertices in ``cverts[coff[g]:coff[g+1]]``, geometry frame; `hulls` climbs them).
"""
import numpy as np
from numba import njit

import models.jitcache

from . import hulls, workspace
from .hulls import hull_climb, hull_flood, hull_patch_collapses
from .jitopts import _NONRT
from .kinds import BOX, CAPSULE, CONVEX, CYLINDER, PLANE, SPHERE
from .workspace import _tangents

NDISC = 12          # samples of a cylinder's flat face
INF_FEATURE = -1    # feature size of a plane (infinite face)

# kernels here compile in those of these modules: drop the cache when they change
models.jitcache.drop_stale_cache(__file__, [hulls.__file__, workspace.__file__])


@njit(**_NONRT)
def _support_box(g, gsize, gR, gp, D, i_d, tol, out):
    """`support_feature` of box g (called directly on the box-box and box-plane paths)."""
    # per local axis j: span the face (both signs) when |d_j| is within the tolerance
    ns = 0
    sg0 = sg1 = sg2 = 0.0
    sp0 = sp1 = sp2 = False
    for j in range(3):
        dj = gR[g, 0, j] * D[i_d, 0] + gR[g, 1, j] * D[i_d, 1] + gR[g, 2, j] * D[i_d, 2]
        sgj = 1.0 if dj >= 0 else -1.0
        spj = 2.0 * gsize[g, j] * abs(dj) <= tol
        if spj:
            ns += 1
        if j == 0:
            sg0, sp0 = sgj, spj
        elif j == 1:
            sg1, sp1 = sgj, spj
        else:
            sg2, sp2 = sgj, spj
    if ns == 3:  # a wide tolerance (a penetrating plane pair): span the face most normal to d
        e0 = gsize[g, 0] * abs(gR[g, 0, 0] * D[i_d, 0] + gR[g, 1, 0] * D[i_d, 1] + gR[g, 2, 0] * D[i_d, 2])
        e1 = gsize[g, 1] * abs(gR[g, 0, 1] * D[i_d, 0] + gR[g, 1, 1] * D[i_d, 1] + gR[g, 2, 1] * D[i_d, 2])
        e2 = gsize[g, 2] * abs(gR[g, 0, 2] * D[i_d, 0] + gR[g, 1, 2] * D[i_d, 1] + gR[g, 2, 2] * D[i_d, 2])
        ns = 2
        if e0 >= e1 and e0 >= e2:
            sp0 = False
        elif e1 >= e2:
            sp1 = False
        else:
            sp2 = False
    cnt = 1 << ns
    s0, s1, s2 = gsize[g, 0], gsize[g, 1], gsize[g, 2]
    for i in range(cnt):
        # cyclic sign patterns of the spanned axes: 1 axis (+), (-); 2 axes (+,+), (+,-), (-,-), (-,+)
        first = 1.0 if (i == 0 or i == 1) else -1.0
        second = 1.0 if (i == 0 or i == 3) else -1.0
        if ns == 1:
            first = 1.0 if i == 0 else -1.0
        used = 0
        l0 = sg0 * s0
        if sp0:
            l0 = s0 * first
            used = 1
        l1 = sg1 * s1
        if sp1:
            l1 = s1 * (first if used == 0 else second)
            used += 1
        l2 = sg2 * s2
        if sp2:
            l2 = s2 * (first if used == 0 else second)
        for k in range(3):
            out[i, k] = gp[g, k] + gR[g, k, 0] * l0 + gR[g, k, 1] * l1 + gR[g, k, 2] * l2
    return cnt


@njit(**_NONRT)
def support_feature(kind, g, gsize, gR, gp, cverts, coff, hg, D, i_d, tol, out, ordered=True, collapse=False):
    """Points of geometry g's surface (kind, gsize[g], placement gR[g], gp[g]) that maximize
    x·d within `tol` (metres), d = D[i_d]: a vertex, an edge (2 points) or a face (convex
    polygon, ordered); written into out (MAXF, 3). ordered=False (contact with a plane): a
    convex hull's selected vertices unordered, the extreme one first, none dropped as
    interior. collapse=True (the patches of contacts): a convex hull's set that is the cap of
    a tessellated curved surface, not a face (`hulls.hull_patch_collapses`), is its extreme
    vertex alone (against a plane, `narrow._hull_plane` keeps a near-tied far vertex too).
    Returns the count; -1 for a plane."""
    if kind == PLANE:
        return INF_FEATURE
    if kind == SPHERE:
        for k in range(3):
            out[0, k] = gp[g, k] + gsize[g, 0] * D[i_d, k]
        return 1
    if kind == CAPSULE:
        r, h = gsize[g, 0], gsize[g, 1]
        du = gR[g, 0, 2] * D[i_d, 0] + gR[g, 1, 2] * D[i_d, 1] + gR[g, 2, 2] * D[i_d, 2]
        if 2.0 * h * abs(du) <= tol:
            for k in range(3):
                out[0, k] = gp[g, k] + h * gR[g, k, 2] + r * D[i_d, k]
                out[1, k] = gp[g, k] - h * gR[g, k, 2] + r * D[i_d, k]
            return 2
        s = 1.0 if du > 0 else -1.0
        for k in range(3):
            out[0, k] = gp[g, k] + s * h * gR[g, k, 2] + r * D[i_d, k]
        return 1
    if kind == CYLINDER:
        r, h = gsize[g, 0], gsize[g, 1]
        du = gR[g, 0, 2] * D[i_d, 0] + gR[g, 1, 2] * D[i_d, 1] + gR[g, 2, 2] * D[i_d, 2]
        w0, w1, w2 = D[i_d, 0] - du * gR[g, 0, 2], D[i_d, 1] - du * gR[g, 1, 2], D[i_d, 2] - du * gR[g, 2, 2]
        wn = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        s = 1.0 if du > 0 else -1.0
        if 2.0 * r * wn <= tol:  # flat face: sampled disc
            for i in range(NDISC):
                th = 2.0 * np.pi * i / NDISC
                c, sn = r * np.cos(th), r * np.sin(th)
                for k in range(3):
                    out[i, k] = gp[g, k] + s * h * gR[g, k, 2] + c * gR[g, k, 0] + sn * gR[g, k, 1]
            if s < 0:  # keep the polygon counter-clockwise seen along d
                for i in range(NDISC // 2):
                    for k in range(3):
                        tmp = out[i, k]
                        out[i, k] = out[NDISC - 1 - i, k]
                        out[NDISC - 1 - i, k] = tmp
            return NDISC
        w0, w1, w2 = w0 / wn, w1 / wn, w2 / wn
        if 2.0 * h * abs(du) <= tol:  # side line
            for k in range(3):
                wk = w0 if k == 0 else (w1 if k == 1 else w2)
                out[0, k] = gp[g, k] + h * gR[g, k, 2] + r * wk
                out[1, k] = gp[g, k] - h * gR[g, k, 2] + r * wk
            return 2
        for k in range(3):
            wk = w0 if k == 0 else (w1 if k == 1 else w2)
            out[0, k] = gp[g, k] + s * h * gR[g, k, 2] + r * wk
        return 1
    if kind == BOX:
        return _support_box(g, gsize, gR, gp, D, i_d, tol, out)
    # CONVEX: the vertices within tol of the support height (world points p + R v), or (collapse)
    # the extreme vertex alone when they are a curved surface's cap (`hulls.hull_patch_collapses`)
    dl0 = gR[g, 0, 0] * D[i_d, 0] + gR[g, 1, 0] * D[i_d, 1] + gR[g, 2, 0] * D[i_d, 2]
    dl1 = gR[g, 0, 1] * D[i_d, 0] + gR[g, 1, 1] * D[i_d, 1] + gR[g, 2, 1] * D[i_d, 2]
    dl2 = gR[g, 0, 2] * D[i_d, 0] + gR[g, 1, 2] * D[i_d, 1] + gR[g, 2, 2] * D[i_d, 2]
    v0, hmax = hull_climb(g, cverts, hg, dl0, dl1, dl2, -1)     # `hulls.hull_support_set`
    m = hull_flood(cverts, hg, v0, hmax, dl0, dl1, dl2, tol)
    if collapse and hull_patch_collapses(g, cverts, hg, v0, hmax, m, dl0, dl1, dl2, tol):
        for k in range(3):
            out[0, k] = _cvert_world(gR, gp, g, cverts, v0, k)
        return 1
    if m > 2 and ordered:
        return _hull_face(g, gR, gp, cverts, hg, m, D, i_d, out)
    return hull_points_unordered(g, gR, gp, cverts, hg, m, D, i_d, out)


@njit(**_NONRT)
def hull_points_unordered(g, gR, gp, cverts, hg, m, D, i_d, out):
    """The m hull vertices hg.queue[:m] (global indices, ascending) as world points into out:
    the extreme one along d = D[i_d] first (the first in index order on ties), then the others
    in index order, as many as out holds. Returns their count."""
    queue = hg.queue
    cap = out.shape[0]
    if m <= cap:   # each world point computed once, in place; the extreme one rotated to the front
        jbest = -1
        hbest = 0.0
        for j in range(m):
            i = queue[j]
            for k in range(3):
                out[j, k] = _cvert_world(gR, gp, g, cverts, i, k)
            h = out[j, 0] * D[i_d, 0] + out[j, 1] * D[i_d, 1] + out[j, 2] * D[i_d, 2]
            if jbest < 0 or h > hbest:
                jbest, hbest = j, h
        x0, x1, x2 = out[jbest, 0], out[jbest, 1], out[jbest, 2]
        for j in range(jbest, 0, -1):
            for k in range(3):
                out[j, k] = out[j - 1, k]
        out[0, 0], out[0, 1], out[0, 2] = x0, x1, x2
        return m
    ibest = -1
    hbest = 0.0
    for j in range(m):
        i = queue[j]
        h = (_cvert_world(gR, gp, g, cverts, i, 0) * D[i_d, 0] + _cvert_world(gR, gp, g, cverts, i, 1) * D[i_d, 1]
             + _cvert_world(gR, gp, g, cverts, i, 2) * D[i_d, 2])
        if ibest < 0 or h > hbest:
            ibest, hbest = i, h
    for k in range(3):
        out[0, k] = _cvert_world(gR, gp, g, cverts, ibest, k)
    j = 1
    for jj in range(m):
        i = queue[jj]
        if i == ibest or j >= cap:
            continue
        for k in range(3):
            out[j, k] = _cvert_world(gR, gp, g, cverts, i, k)
        j += 1
    return j


@njit(**_NONRT)
def _cvert_world(gR, gp, g, cverts, i, k):
    """Coordinate k of convex vertex i of geometry g in the world."""
    return gp[g, k] + gR[g, k, 0] * cverts[i, 0] + gR[g, k, 1] * cverts[i, 1] + gR[g, k, 2] * cverts[i, 2]


@njit(**_NONRT)
def _before(hg, i, j):
    """Lexicographic (u, v, index) order of hull face points i, j (`_hull_face`)."""
    ui, uj = hg.su[i], hg.su[j]
    if ui != uj:
        return ui < uj
    if hg.sv[i] != hg.sv[j]:
        return hg.sv[i] < hg.sv[j]
    return i < j


@njit(**_NONRT)
def _chain_push(hull, h, lo, i, su, sv):
    """Monotone chain step: pop the stack hull[:h] (down to lo entries) while its last two
    points and point i do not turn left, push i; returns the new h."""
    while h >= lo:
        o, a = hull[h - 2], hull[h - 1]
        if (su[a] - su[o]) * (sv[i] - sv[o]) - (sv[a] - sv[o]) * (su[i] - su[o]) <= 1e-14:
            h -= 1
        else:
            break
    hull[h] = i
    return h + 1


@njit(**_NONRT)
def _hull_face(g, gR, gp, cverts, hg, m, D, i_d, out):
    """The m hull vertices hg.queue[:m] (global indices, g's support set along d = D[i_d]) as
    a convex polygon in the plane ⟂ d: Andrew's monotone chain on their projections (u, v) on
    `_tangents`(d, a generic axis of g), counter-clockwise, collinear points dropped. World points
    into out (at most out.shape[0]); returns their count. Scratch: hg.su, hg.sv, hg.order,
    hg.stack (no allocation)."""
    # reference axis: a generic direction of g's frame (not an axis: a mesh's rows of vertices
    # along an axis would project to equal u up to rounding, where the chain's sort by u, then
    # v, misorders them and drops a corner)
    r0 = gR[g, 0, 0] + 0.3183 * gR[g, 0, 1] + 0.1415 * gR[g, 0, 2]
    r1 = gR[g, 1, 0] + 0.3183 * gR[g, 1, 1] + 0.1415 * gR[g, 1, 2]
    r2 = gR[g, 2, 0] + 0.3183 * gR[g, 2, 1] + 0.1415 * gR[g, 2, 2]
    t10, t11, t12, t20, t21, t22 = _tangents(D[i_d, 0], D[i_d, 1], D[i_d, 2], r0, r1, r2)
    su, sv, order, hull = hg.su, hg.sv, hg.order, hg.stack
    for j in range(m):
        i = hg.queue[j]
        x0, x1, x2 = _cvert_world(gR, gp, g, cverts, i, 0), _cvert_world(gR, gp, g, cverts, i, 1), \
            _cvert_world(gR, gp, g, cverts, i, 2)
        su[j] = x0 * t10 + x1 * t11 + x2 * t12
        sv[j] = x0 * t20 + x1 * t21 + x2 * t22
        order[j] = j
    gap = m // 2   # Shell sort (gaps halving) by (u, v, index)
    while gap > 0:
        for i in range(gap, m):
            x = order[i]
            j = i
            while j >= gap and _before(hg, x, order[j - gap]):
                order[j] = order[j - gap]
                j -= gap
            order[j] = x
        gap //= 2
    h = 0
    for ii in range(m):          # lower chain
        h = _chain_push(hull, h, 2, order[ii], su, sv)
    lower = h + 1
    for ii in range(m - 2, -1, -1):   # upper chain
        h = _chain_push(hull, h, lower, order[ii], su, sv)
    h -= 1  # the last point repeats the first
    if m == 1:
        h = 1
    h = min(h, out.shape[0])
    for j in range(h):
        v = hg.queue[hull[j]]
        for k in range(3):
            out[j, k] = _cvert_world(gR, gp, g, cverts, v, k)
    return h


@njit(**_NONRT)
def box_height(g, gsize, gR, gp, d0, d1, d2):
    """max over box g of x · d (`support_height` of a box)."""
    t = gp[g, 0] * d0 + gp[g, 1] * d1 + gp[g, 2] * d2
    for j in range(3):
        t += gsize[g, j] * abs(gR[g, 0, j] * d0 + gR[g, 1, j] * d1 + gR[g, 2, j] * d2)
    return t


@njit(**_NONRT)
def support_height(kind, g, gsize, gR, gp, cverts, coff, hg, d0, d1, d2):
    """max over geometry g of x · d (m, d need not be unit) for the kinds with a closed-form
    support (sphere, capsule, cylinder, box) and convex hulls (`hull_climb`); nan for
    a plane (unbounded)."""
    c = gp[g, 0] * d0 + gp[g, 1] * d1 + gp[g, 2] * d2
    dn = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if kind == SPHERE:
        return c + gsize[g, 0] * dn
    if kind == CAPSULE or kind == CYLINDER:
        r, h = gsize[g, 0], gsize[g, 1]
        du = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
        if kind == CAPSULE:
            return c + h * abs(du) + r * dn
        return c + h * abs(du) + r * np.sqrt(max(dn * dn - du * du, 0.0))
    if kind == BOX:
        return box_height(g, gsize, gR, gp, d0, d1, d2)
    if kind == CONVEX:
        l0 = gR[g, 0, 0] * d0 + gR[g, 1, 0] * d1 + gR[g, 2, 0] * d2      # d in the geometry frame
        l1 = gR[g, 0, 1] * d0 + gR[g, 1, 1] * d1 + gR[g, 2, 1] * d2
        l2 = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
        return c + hull_climb(g, cverts, hg, l0, l1, l2, -1)[1]
    return np.nan

"""Numba kernels of the collision pipeline: geometry placements, AABBs, broad phase, native
narrow phase for simple pairs, and contact patches (support features clipped against each
other, reduced to at most 4 points) written into flat output buffers.

Conventions inside the kernels: a pair is (a, b) with geometry indices a < b; ``n`` is the
unit normal pointing from shape a to shape b, ``pa``/``pb`` are witness points on the
surfaces of a and b, and the signed distance of a point pair is ``(pb - pa) · n``
(negative = penetration). Shape b's body is reported as body 1 and a's as body 2, so ``n``
points from body 2 into body 1 as DESIGN.md requires.

Shape kinds and their ``size`` row (4 floats): PLANE (unused; the halfspace z <= 0 of its
placement), SPHERE (r), CAPSULE (r, half length), CYLINDER (r, half length), BOX (hx, hy, hz),
CONVEX (vertices in ``cverts[coff[g]:coff[g+1]]``, geometry frame).

Performance (profiled with perf on the box pyramids): numba's runtime (NRT) increments and
decrements an atomic reference count for every array view made in a kernel (``A[i]``,
``A[2:4]``) and for every array argument of a call between kernels (about 10 ns per pair of
operations here), and a call passes each array as 7 to 11 machine words. Both cost more
than the geometry. So the per-pair kernels never slice (whole arrays with row indices:
geometry g of ``gR``/``gp``/``gsize``, point i of a feature, 3-vectors as rows of the
workspace ``V`` named by the ``_V*`` constants), run without the runtime (``_NONRT``: no
reference counting, no allocation), the ones called per pair or per point are inlined
(``_NONRT_INLINE``), and the scratch arrays are allocated once per detection. The code that
allocates (ordered convex-hull faces, sphere–box) runs in NRT kernels outside that loop.
"""

import numpy as np
from numba import njit

import models.joints
import models.kinematics
import models.model
import models.spatial
from models.jitcache import drop_stale_cache
from models.joints import FREE
from models.kinematics import fk_kernel

from . import gjk, hulls
from .hulls import NSEED, HullGraph, hull_climb, hull_support_set  # noqa: F401 (re-exported)
from .jitopts import _JIT, _NONRT, _NONRT_INLINE
from .kinds import BOX, CAPSULE, CONVEX, CYLINDER, KIND_CODES, PLANE, SPHERE  # noqa: F401 (re-exported)


# `detect_kernel` compiles in `models.kinematics.fk_kernel` and its helpers
drop_stale_cache(__file__, [models.kinematics.__file__, models.joints.__file__, models.model.__file__,
                            models.spatial.__file__, hulls.__file__, gjk.__file__])

MAXF = 64           # max points of one support feature / clipped polygon
NDISC = 12          # samples of a cylinder's flat face
INF_FEATURE = -1    # feature size of a plane (infinite face)
NEEDS_HULL = -3     # support_feature: an ordered convex-hull face (see support_feature_any)

# rows of the 3-vector workspace V (NV3, 3) shared by the narrow phase and the patch code
(_VT1, _VT2, _VXA0, _VXAN, _VXB0, _VXBN, _VEX0, _VN, _VPLA0, _VPLA1, _VPLB0, _VPLB1,
 _VPAW, _VPBW, _VNEGN, _VC1, _VC2, _VREF, _VQA, _VQB) = range(20)
NV3 = 20
NWS = 9             # rows of the scalar workspace ws (NWS, MAXF); row 8: angles in emit_patch

# native_ok codes of a kind pair: the library backend, `native_pair`, `convex_pair` (GJK/EPA)
LIBRARY, NATIVE, NATIVE_GJK = 0, 1, 2

# detect_kernel status codes
Q_OK, Q_NOT_FINITE, Q_NOT_UNIT = 0, -1, -2

# Kernels without numba's runtime (see the module docstring and `collision.jitopts`). They
# cannot allocate nor call a kernel that does (numba refuses to compile them); the allocations
# stay in the callers (`detect_kernel`, the library-pair kernels, `support_feature_any`,
# `_sphere_box_pair`, `gjk.convex_pair`).


# ---------------------------------------------------------------- small vector helpers
@njit(cache=True, inline="always", error_model="numpy")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always", error_model="numpy")
def _cp3(dst, src):
    """dst[:3] = src[:3] element by element (numba's slice assignment checks for overlap
    and may copy through a temporary)."""
    dst[0] = src[0]
    dst[1] = src[1]
    dst[2] = src[2]


@njit(cache=True, inline="always", error_model="numpy")
def _dotr(A, i, b):
    """A[i] · b without making a view of the row."""
    return A[i, 0] * b[0] + A[i, 1] * b[1] + A[i, 2] * b[2]


@njit(cache=True, inline="always", error_model="numpy")
def _dotrr(A, i, B, j):
    """A[i] · B[j] without views."""
    return A[i, 0] * B[j, 0] + A[i, 1] * B[j, 1] + A[i, 2] * B[j, 2]


@njit(cache=True, inline="always", error_model="numpy")
def _cprr(A, i, B, j):
    """A[i] = B[j] without views."""
    A[i, 0] = B[j, 0]
    A[i, 1] = B[j, 1]
    A[i, 2] = B[j, 2]


@njit(cache=True, error_model="numpy")
def tangent_basis(n, ref, t1, t2):
    """t1 = ref projected on the plane ⟂ n (or a fixed fallback), t2 = n × t1."""
    d = _dot(ref, n)
    for k in range(3):
        t1[k] = ref[k] - d * n[k]
    nrm = np.sqrt(_dot(t1, t1))
    if nrm < 0.3:  # ref nearly parallel to n: use the world axis least aligned with n
        ax = 0
        if abs(n[1]) < abs(n[ax]):
            ax = 1
        if abs(n[2]) < abs(n[ax]):
            ax = 2
        for k in range(3):
            t1[k] = -n[ax] * n[k]
        t1[ax] += 1.0
        nrm = np.sqrt(_dot(t1, t1))
    for k in range(3):
        t1[k] /= nrm
    t2[0] = n[1] * t1[2] - n[2] * t1[1]
    t2[1] = n[2] * t1[0] - n[0] * t1[2]
    t2[2] = n[0] * t1[1] - n[1] * t1[0]


@njit(**_NONRT)
def _tangent_basis_v(V, i_n, i_ref, i_t1, i_t2):
    """`tangent_basis` on rows of V: n = V[i_n], ref = V[i_ref] into t1 = V[i_t1], t2 = V[i_t2]
    (same arithmetic; the four rows must be distinct)."""
    d = _dotrr(V, i_ref, V, i_n)
    for k in range(3):
        V[i_t1, k] = V[i_ref, k] - d * V[i_n, k]
    nrm = np.sqrt(_dotrr(V, i_t1, V, i_t1))
    if nrm < 0.3:
        ax = 0
        if abs(V[i_n, 1]) < abs(V[i_n, ax]):
            ax = 1
        if abs(V[i_n, 2]) < abs(V[i_n, ax]):
            ax = 2
        for k in range(3):
            V[i_t1, k] = -V[i_n, ax] * V[i_n, k]
        V[i_t1, ax] += 1.0
        nrm = np.sqrt(_dotrr(V, i_t1, V, i_t1))
    for k in range(3):
        V[i_t1, k] /= nrm
    V[i_t2, 0] = V[i_n, 1] * V[i_t1, 2] - V[i_n, 2] * V[i_t1, 1]
    V[i_t2, 1] = V[i_n, 2] * V[i_t1, 0] - V[i_n, 0] * V[i_t1, 2]
    V[i_t2, 2] = V[i_n, 0] * V[i_t1, 1] - V[i_n, 1] * V[i_t1, 0]


# ---------------------------------------------------------------- placements, AABBs
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


@njit(**_JIT)
def broadphase_kernel(gkind, gR, gp, lo, hi, allow, margin, planes, others, pairs):
    """Candidate pairs (a < b) into pairs (cap, 2); returns their count (may exceed cap).

    Non-plane geometries: sweep and prune along x over AABBs; planes: every allowed shape
    whose AABB reaches within `margin` of the halfspace. allow (ng, ng) uint8 is the filter.
    """
    cap = pairs.shape[0]
    k = 0
    m = others.shape[0]
    if m > 1:
        keys = np.empty(m)
        for i in range(m):
            keys[i] = lo[others[i], 0]
        order = np.argsort(keys)
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


# ---------------------------------------------------------------- support features
@njit(cache=True, error_model="numpy")
def _hull2d(pts, m, t1, t2, out):
    """Order the m 3-D points `pts` as a convex polygon in the plane (t1, t2) (monotone
    chain, counter-clockwise); writes the hull into out and returns its size."""
    u = np.empty(m)
    v = np.empty(m)
    for i in range(m):
        u[i] = _dotr(pts, i, t1)
        v[i] = _dotr(pts, i, t2)
    order = np.argsort(u, kind="mergesort")
    for i in range(1, m):  # ties in u: order by v (insertion sort, near-sorted input)
        j = i
        while j > 0 and u[order[j - 1]] == u[order[j]] and v[order[j - 1]] > v[order[j]]:
            order[j - 1], order[j] = order[j], order[j - 1]
            j -= 1
    hull = np.empty(2 * m + 1, dtype=np.int64)
    h = 0
    for ii in range(m):
        i = order[ii]
        while h >= 2:
            o, a = hull[h - 2], hull[h - 1]
            cr = (u[a] - u[o]) * (v[i] - v[o]) - (v[a] - v[o]) * (u[i] - u[o])
            if cr <= 1e-14:
                h -= 1
            else:
                break
        hull[h] = i
        h += 1
    lower = h + 1
    for ii in range(m - 2, -1, -1):
        i = order[ii]
        while h >= lower:
            o, a = hull[h - 2], hull[h - 1]
            cr = (u[a] - u[o]) * (v[i] - v[o]) - (v[a] - v[o]) * (u[i] - u[o])
            if cr <= 1e-14:
                h -= 1
            else:
                break
        hull[h] = i
        h += 1
    h -= 1  # last point repeats the first
    if m == 1:
        h = 1
    h = min(h, out.shape[0])
    for i in range(h):
        out[i] = pts[hull[i]]
    return h


@njit(**_NONRT_INLINE)
def _support_box(g, gsize, gR, gp, D, i_d, tol, out):
    """`support_feature` of box g (inlined on the box-box and box-plane paths)."""
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
def support_feature(kind, g, gsize, gR, gp, cverts, coff, hg, D, i_d, tol, out, ordered=True):
    """Points of geometry g's surface (kind, gsize[g], placement gR[g], gp[g]) that maximize
    x·d within `tol` (metres), d = D[i_d]: a vertex, an edge (2 points) or a face (convex
    polygon, ordered); written into out (MAXF, 3). ordered=False (contact with a plane): a
    convex hull's selected vertices unordered, the extreme one first, none dropped as
    interior. Returns the count; -1 for a plane; NEEDS_HULL for a convex hull's face of
    more than 2 vertices with ordered=True (`support_feature_any` orders it)."""
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
    # CONVEX: the vertices within tol of the support height (world points p + R v)
    dl0 = gR[g, 0, 0] * D[i_d, 0] + gR[g, 1, 0] * D[i_d, 1] + gR[g, 2, 0] * D[i_d, 2]
    dl1 = gR[g, 0, 1] * D[i_d, 0] + gR[g, 1, 1] * D[i_d, 1] + gR[g, 2, 1] * D[i_d, 2]
    dl2 = gR[g, 0, 2] * D[i_d, 0] + gR[g, 1, 2] * D[i_d, 1] + gR[g, 2, 2] * D[i_d, 2]
    m, _ = hull_support_set(g, cverts, hg, dl0, dl1, dl2, tol)
    if m > 2 and ordered:
        return NEEDS_HULL
    # unordered: the extreme vertex in the world first (the first in index order on ties),
    # then the others in index order, as many as out holds
    queue = hg.queue
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
        if i == ibest or j >= out.shape[0]:
            continue
        for k in range(3):
            out[j, k] = _cvert_world(gR, gp, g, cverts, i, k)
        j += 1
    return j


@njit(cache=True, inline="always", error_model="numpy")
def _cvert_world(gR, gp, g, cverts, i, k):
    """Coordinate k of convex vertex i of geometry g in the world."""
    return gp[g, k] + gR[g, k, 0] * cverts[i, 0] + gR[g, k, 1] * cverts[i, 1] + gR[g, k, 2] * cverts[i, 2]


@njit(cache=True, error_model="numpy")
def support_feature_any(kind, g, gsize, gR, gp, cverts, coff, hg, D, i_d, tol, out, ordered=True):
    """`support_feature`, including the ordered face of a convex hull (the hull of the
    selected vertices in the plane ⟂ d, which allocates: NRT callers only)."""
    m = support_feature(kind, g, gsize, gR, gp, cverts, coff, hg, D, i_d, tol, out, ordered)
    if m != NEEDS_HULL:
        return m
    R = gR[g]
    d = D[i_d].copy()
    dl0 = R[0, 0] * d[0] + R[1, 0] * d[1] + R[2, 0] * d[2]
    dl1 = R[0, 1] * d[0] + R[1, 1] * d[1] + R[2, 1] * d[2]
    dl2 = R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]
    m, _ = hull_support_set(g, cverts, hg, dl0, dl1, dl2, tol)
    sel = np.empty((m, 3))
    for j in range(m):
        for k in range(3):
            sel[j, k] = _cvert_world(gR, gp, g, cverts, hg.queue[j], k)
    t1 = np.empty(3)
    t2 = np.empty(3)
    tangent_basis(d, R[:, 0].copy(), t1, t2)
    return _hull2d(sel, m, t1, t2, out)


# ---------------------------------------------------------------- patch construction
@njit(**_NONRT_INLINE)
def _lift(F, m, V, iX0, iXn, u, v, P, ip):
    """Point of feature F (m points; polygon with plane (X0, Xn) = (V[iX0], V[iXn]), or
    segment, or point, or the plane (m == -1, then X0/Xn are the plane's point and normal))
    whose projection on the tangent plane (V[_VT1], V[_VT2]) is (u, v), along n = V[_VN];
    written into P[ip]. Returns False if the lift is ill-conditioned."""
    for i in range(max(m, 0)):  # a vertex of the feature: exact, even on non-planar sets
        du, dv = _dotrr(F, i, V, _VT1) - u, _dotrr(F, i, V, _VT2) - v
        if du * du + dv * dv <= 1e-20:
            _cprr(P, ip, F, i)
            return True
    b0, b1, b2 = (u * V[_VT1, 0] + v * V[_VT2, 0], u * V[_VT1, 1] + v * V[_VT2, 1],
                  u * V[_VT1, 2] + v * V[_VT2, 2])
    if m == INF_FEATURE or m >= 3:
        den = _dotrr(V, _VN, V, iXn)
        if abs(den) < 1e-9:
            return False
        s = ((V[iX0, 0] - b0) * V[iXn, 0] + (V[iX0, 1] - b1) * V[iXn, 1] + (V[iX0, 2] - b2) * V[iXn, 2]) / den
        P[ip, 0] = b0 + s * V[_VN, 0]
        P[ip, 1] = b1 + s * V[_VN, 1]
        P[ip, 2] = b2 + s * V[_VN, 2]
        return True
    if m == 2:
        au, av = _dotrr(F, 0, V, _VT1), _dotrr(F, 0, V, _VT2)
        bu, bv = _dotrr(F, 1, V, _VT1), _dotrr(F, 1, V, _VT2)
        L2 = (bu - au) ** 2 + (bv - av) ** 2
        t = 0.0
        if L2 > 1e-24:
            t = ((u - au) * (bu - au) + (v - av) * (bv - av)) / L2
        t = min(1.0, max(0.0, t))
        for k in range(3):
            P[ip, k] = F[0, k] + t * (F[1, k] - F[0, k])
        return True
    _cprr(P, ip, F, 0)
    return True


@njit(**_NONRT)
def _snap(F, m, u, v, V, P, ip):
    """Replace P[ip] by the feature vertex whose projection on (V[_VT1], V[_VT2]) is (u, v),
    if there is one."""
    for i in range(m):
        du, dv = _dotrr(F, i, V, _VT1) - u, _dotrr(F, i, V, _VT2) - v
        if du * du + dv * dv <= 1e-16:
            _cprr(P, ip, F, i)
            return True
    return False


@njit(**_NONRT)
def _newell(F, m, V, io):
    """Unit Newell normal of the polygon F (m points) into V[io]; False if degenerate."""
    V[io, 0] = 0.0
    V[io, 1] = 0.0
    V[io, 2] = 0.0
    for i in range(m):
        j = (i + 1) % m
        V[io, 0] += (F[i, 1] - F[j, 1]) * (F[i, 2] + F[j, 2])
        V[io, 1] += (F[i, 2] - F[j, 2]) * (F[i, 0] + F[j, 0])
        V[io, 2] += (F[i, 0] - F[j, 0]) * (F[i, 1] + F[j, 1])
    nrm = np.sqrt(_dotrr(V, io, V, io))
    if nrm < 1e-300:
        return False
    for k in range(3):
        V[io, k] /= nrm
    return True


@njit(cache=True, inline="always", error_model="numpy")
def _reverse(ws, r, m):
    for i in range(m // 2):
        ws[r, i], ws[r, m - 1 - i] = ws[r, m - 1 - i], ws[r, i]


@njit(cache=True, inline="always", error_model="numpy")
def _area2(ws, ru, rv, m):
    s = 0.0
    for i in range(m):
        j = (i + 1) % m
        s += ws[ru, i] * ws[rv, j] - ws[ru, j] * ws[rv, i]
    return s


@njit(**_NONRT)
def _clip_polygon(ws, su, sv, sm, cu, cv, cm, ou, ov, bu, bv):
    """Sutherland–Hodgman: subject polygon (rows su, sv of ws; sm points) clipped by the
    convex clip polygon (rows cu, cv; cm points), both counter-clockwise. Writes into rows
    ou, ov (bu, bv: scratch rows); returns the count."""
    m = sm
    for i in range(m):
        ws[ou, i] = ws[su, i]
        ws[ov, i] = ws[sv, i]
    cap = ws.shape[1]
    for e in range(cm):
        if m == 0:
            break
        e2 = (e + 1) % cm
        ax, ay = ws[cu, e], ws[cv, e]
        ex, ey = ws[cu, e2] - ax, ws[cv, e2] - ay
        for i in range(m):
            ws[bu, i] = ws[ou, i]
            ws[bv, i] = ws[ov, i]
        nm = m
        m = 0
        for i in range(nm):
            j = (i + 1) % nm
            pu, pv, qu, qv = ws[bu, i], ws[bv, i], ws[bu, j], ws[bv, j]
            dp = ex * (pv - ay) - ey * (pu - ax)
            dq = ex * (qv - ay) - ey * (qu - ax)
            if dp >= 0:
                if m < cap:
                    ws[ou, m] = pu
                    ws[ov, m] = pv
                    m += 1
                if dq < 0 and m < cap:
                    t = dp / (dp - dq)
                    ws[ou, m] = pu + t * (qu - pu)
                    ws[ov, m] = pv + t * (qv - pv)
                    m += 1
            elif dq >= 0 and m < cap:
                t = dp / (dp - dq)
                ws[ou, m] = pu + t * (qu - pu)
                ws[ov, m] = pv + t * (qv - pv)
                m += 1
    return m


@njit(**_NONRT)
def _clip_segment(au, av, bu, bv, ws, cu, cv, cm, ou, ov):
    """Segment a-b clipped by the convex counter-clockwise polygon in rows cu, cv of ws
    (Cyrus–Beck), into rows ou, ov."""
    t0, t1 = 0.0, 1.0
    du, dv = bu - au, bv - av
    for e in range(cm):
        e2 = (e + 1) % cm
        ex, ey = ws[cu, e2] - ws[cu, e], ws[cv, e2] - ws[cv, e]
        # inside: ex*(y - ey0) - ey*(x - ex0) >= 0
        f0 = ex * (av - ws[cv, e]) - ey * (au - ws[cu, e])
        fd = ex * dv - ey * du
        if abs(fd) < 1e-300:
            if f0 < 0:
                return 0
            continue
        t = -f0 / fd
        if fd > 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return 0
    ws[ou, 0], ws[ov, 0] = au + t0 * du, av + t0 * dv
    if t1 - t0 < 1e-12:
        return 1
    ws[ou, 1], ws[ov, 1] = au + t1 * du, av + t1 * dv
    return 2


@njit(**_NONRT)
def build_patch(FA, mA, FB, mB, V, PA, PB, ws):
    """Contact patch between support features FA (of shape a, along +n) and FB (of b,
    along -n), n = V[_VN]. m = -1 marks a plane ((point, normal) in rows _VPLA0, _VPLA1 /
    _VPLB0, _VPLB1 of V). Intersects the projections on the plane ⟂ n and lifts the result
    back on both features. Falls back to the witness pair (V[_VPAW], V[_VPBW]) for point
    contacts or degenerate cases. Returns the count of (PA[i], PB[i]) point pairs.
    ws (NWS, MAXF): scratch."""
    V[_VEX0, 0], V[_VEX0, 1], V[_VEX0, 2] = 1.0, 0.0, 0.0
    _tangent_basis_v(V, _VN, _VEX0, _VT1, _VT2)
    m = 0
    okA, okB = True, True
    if mA == INF_FEATURE:
        _cprr(V, _VXA0, V, _VPLA0)
        _cprr(V, _VXAN, V, _VPLA1)
    elif mA >= 3:
        _cprr(V, _VXA0, FA, 0)
        okA = _newell(FA, mA, V, _VXAN)
    if mB == INF_FEATURE:
        _cprr(V, _VXB0, V, _VPLB0)
        _cprr(V, _VXBN, V, _VPLB1)
    elif mB >= 3:
        _cprr(V, _VXB0, FB, 0)
        okB = _newell(FB, mB, V, _VXBN)
    if okA and okB and not (mA == INF_FEATURE and mB == INF_FEATURE):
        if mA == INF_FEATURE:
            if mB >= 2:
                for i in range(mB):
                    ws[0, i] = _dotrr(FB, i, V, _VT1)
                    ws[1, i] = _dotrr(FB, i, V, _VT2)
                m = mB
        elif mB == INF_FEATURE:
            if mA >= 2:
                for i in range(mA):
                    ws[0, i] = _dotrr(FA, i, V, _VT1)
                    ws[1, i] = _dotrr(FA, i, V, _VT2)
                m = mA
        elif mA >= 2 and mB >= 2:
            # rows of ws: 0, 1 output (u, v); 2, 3 feature a; 4, 5 feature b; 6, 7 scratch
            for i in range(mA):
                ws[2, i] = _dotrr(FA, i, V, _VT1)
                ws[3, i] = _dotrr(FA, i, V, _VT2)
            for i in range(mB):
                ws[4, i] = _dotrr(FB, i, V, _VT1)
                ws[5, i] = _dotrr(FB, i, V, _VT2)
            if mA >= 3 and _area2(ws, 2, 3, mA) < 0:
                _reverse(ws, 2, mA)
                _reverse(ws, 3, mA)
            if mB >= 3 and _area2(ws, 4, 5, mB) < 0:
                _reverse(ws, 4, mB)
                _reverse(ws, 5, mB)
            if mA >= 3 and mB >= 3:
                if abs(_area2(ws, 2, 3, mA)) > 1e-16 and abs(_area2(ws, 4, 5, mB)) > 1e-16:
                    m = _clip_polygon(ws, 4, 5, mB, 2, 3, mA, 0, 1, 6, 7)
            elif mA >= 3:
                if abs(_area2(ws, 2, 3, mA)) > 1e-16:
                    m = _clip_segment(ws[4, 0], ws[5, 0], ws[4, 1], ws[5, 1], ws, 2, 3, mA, 0, 1)
            elif mB >= 3:
                if abs(_area2(ws, 4, 5, mB)) > 1e-16:
                    m = _clip_segment(ws[2, 0], ws[3, 0], ws[2, 1], ws[3, 1], ws, 4, 5, mB, 0, 1)
            else:  # two segments: an overlap only if parallel
                dau, dav = ws[2, 1] - ws[2, 0], ws[3, 1] - ws[3, 0]
                dbu, dbv = ws[4, 1] - ws[4, 0], ws[5, 1] - ws[5, 0]
                la = np.sqrt(dau * dau + dav * dav)
                lb = np.sqrt(dbu * dbu + dbv * dbv)
                if la > 1e-12 and lb > 1e-12 and abs(dau * dbv - dav * dbu) <= 1e-6 * la * lb:
                    ex, ey = dau / la, dav / la
                    s0 = (ws[4, 0] - ws[2, 0]) * ex + (ws[5, 0] - ws[3, 0]) * ey
                    s1 = (ws[4, 1] - ws[2, 0]) * ex + (ws[5, 1] - ws[3, 0]) * ey
                    lo_ = max(0.0, min(s0, s1))
                    hi_ = min(la, max(s0, s1))
                    if hi_ >= lo_:
                        ws[0, 0], ws[1, 0] = ws[2, 0] + lo_ * ex, ws[3, 0] + lo_ * ey
                        m = 1
                        if hi_ - lo_ > 1e-12:
                            ws[0, 1], ws[1, 1] = ws[2, 0] + hi_ * ex, ws[3, 0] + hi_ * ey
                            m = 2
    k = 0
    if m > 0 and (mA == INF_FEATURE or mB == INF_FEATURE):
        # against a plane the feature's own points are exact (no lift: the support set of a
        # convex hull within the tolerance need not be planar)
        for i in range(m):
            if mA == INF_FEATURE:
                _cprr(PB, i, FB, i)
                _lift(FA, mA, V, _VXA0, _VXAN, ws[0, i], ws[1, i], PA, i)
            else:
                _cprr(PA, i, FA, i)
                _lift(FB, mB, V, _VXB0, _VXBN, ws[0, i], ws[1, i], PB, i)
        return m
    for i in range(m):
        if not _lift(FA, mA, V, _VXA0, _VXAN, ws[0, i], ws[1, i], PA, k):
            continue
        if not _lift(FB, mB, V, _VXB0, _VXBN, ws[0, i], ws[1, i], PB, k):
            continue
        k += 1
    if k == 0:
        _cprr(PA, 0, V, _VPAW)
        _cprr(PB, 0, V, _VPBW)
        k = 1
    return k


@njit(cache=True, inline="always", error_model="numpy")
def _mid(PA, PB, i, k):
    return 0.5 * (PA[i, k] + PB[i, k])


@njit(**_NONRT)
def _tri(PA, PB, a, b, c, V):
    """((P_b - P_a) × (P_c - P_a)) · n for the patch midpoints P (twice the signed area),
    n = V[_VN]."""
    ux, uy, uz = _mid(PA, PB, b, 0) - _mid(PA, PB, a, 0), _mid(PA, PB, b, 1) - _mid(PA, PB, a, 1), \
        _mid(PA, PB, b, 2) - _mid(PA, PB, a, 2)
    vx, vy, vz = _mid(PA, PB, c, 0) - _mid(PA, PB, a, 0), _mid(PA, PB, c, 1) - _mid(PA, PB, a, 1), \
        _mid(PA, PB, c, 2) - _mid(PA, PB, a, 2)
    return (uy * vz - uz * vy) * V[_VN, 0] + (uz * vx - ux * vz) * V[_VN, 1] + (ux * vy - uy * vx) * V[_VN, 2]


@njit(**_NONRT)
def reduce_patch(PA, PB, m, V, keep):
    """Indices (into keep) of at most 4 points of the patch: the deepest, the farthest from
    it, the one maximizing the triangle area, then the one adding the most area."""
    if m <= 4:
        for i in range(m):
            keep[i] = i
        return m
    i0, d0 = 0, np.inf
    for i in range(m):
        di = _dotrr(PB, i, V, _VN) - _dotrr(PA, i, V, _VN)
        if di < d0 - 1e-12:
            i0, d0 = i, di
    i1, best = -1, -1.0
    for i in range(m):
        s = 0.0
        for k in range(3):
            e = _mid(PA, PB, i, k) - _mid(PA, PB, i0, k)
            s += e * e
        if s > best + 1e-18:
            best, i1 = s, i
    i2, best = -1, -1.0
    for i in range(m):
        s = abs(_tri(PA, PB, i0, i1, i, V))
        if s > best + 1e-18:
            best, i2 = s, i
    if best <= 1e-18:
        keep[0], keep[1] = i0, i1
        return 2
    orient = 1.0 if _tri(PA, PB, i0, i1, i2, V) > 0 else -1.0
    i3, best = -1, 1e-18
    for i in range(m):
        if i == i0 or i == i1 or i == i2:
            continue
        for q in range(3):
            a = i0 if q == 0 else (i1 if q == 1 else i2)
            b = i1 if q == 0 else (i2 if q == 1 else i0)
            s = -orient * _tri(PA, PB, a, b, i, V)  # > 0: outside edge a-b
            if s > best + 1e-18:
                best, i3 = s, i
    keep[0], keep[1], keep[2] = i0, i1, i2
    if i3 < 0:
        return 3
    keep[3] = i3
    return 4


@njit(**_NONRT_INLINE)
def emit_patch(a, b, V, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k, cap,
               keep, ws):
    """Reduce the patch (normal n = V[_VN]) to ≤ 4 points and write them as contacts from
    index k.

    out_i (5, cap) int64: rows body1, body2, geom1, geom2, key; out_p (cap, 3): position;
    out_R (cap, 3, 3): frame; out_s (4, cap): rows distance, friction, restitution,
    compliance (so that the first k entries of each row or block are contiguous).
    Friction = sqrt(μa μb), restitution = max(ea, eb), compliance = ca + cb.
    keep (4,) int64, ws (NWS, MAXF): scratch.
    Returns the new k (counts past cap so the caller can grow the buffers)."""
    r = reduce_patch(PA, PB, m, V, keep)
    col = 0
    if abs(gR[b, 0, 0] * V[_VN, 0] + gR[b, 1, 0] * V[_VN, 1] + gR[b, 2, 0] * V[_VN, 2]) > 0.9:
        col = 1
    for q in range(3):
        V[_VREF, q] = gR[b, q, col]
    _tangent_basis_v(V, _VN, _VREF, _VT1, _VT2)
    # slot of each point: rank of its angle around the patch centroid, measured from t1
    cu, cv = 0.0, 0.0
    for j in range(r):
        i = keep[j]
        cu += 0.5 * (_dotrr(PA, i, V, _VT1) + _dotrr(PB, i, V, _VT1)) / r
        cv += 0.5 * (_dotrr(PA, i, V, _VT2) + _dotrr(PB, i, V, _VT2)) / r
    for j in range(r):
        i = keep[j]
        u = 0.5 * (_dotrr(PA, i, V, _VT1) + _dotrr(PB, i, V, _VT1)) - cu
        v = 0.5 * (_dotrr(PA, i, V, _VT2) + _dotrr(PB, i, V, _VT2)) - cv
        th = np.arctan2(v, u)
        if th < 0:
            th += 2.0 * np.pi
        ws[8, j] = th if r > 1 else 0.0
    mu = np.sqrt(gfric[a] * gfric[b])
    e = max(grest[a], grest[b])
    cmp = gcomp[a] + gcomp[b]
    pair = (np.int64(a) * ng + b) * 4
    for j in range(r):
        i = keep[j]
        slot = 0
        for jj in range(r):
            if ws[8, jj] < ws[8, j] or (ws[8, jj] == ws[8, j] and jj < j):
                slot += 1
        if k < cap:
            out_i[0, k] = gbody[b]
            out_i[1, k] = gbody[a]
            out_i[2, k] = b
            out_i[3, k] = a
            out_i[4, k] = pair + slot
            for q in range(3):
                out_p[k, q] = 0.5 * (PA[i, q] + PB[i, q])
                out_R[k, q, 0] = V[_VT1, q]
                out_R[k, q, 1] = V[_VT2, q]
                out_R[k, q, 2] = V[_VN, q]
            out_s[0, k] = _dotrr(PB, i, V, _VN) - _dotrr(PA, i, V, _VN)
            out_s[1, k] = mu
            out_s[2, k] = e
            out_s[3, k] = cmp
        k += 1
    return k


# ---------------------------------------------------------------- native narrow phase
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


@njit(cache=True, error_model="numpy")
def _sphere_box(r, c, sb, Rb, pb, n, pa_w, pb_w):
    """Sphere (a) against box (b): n from the sphere to the box; returns the distance."""
    cl = Rb.T @ (c - pb)
    q = np.empty(3)
    inside = True
    for k in range(3):
        q[k] = min(sb[k], max(-sb[k], cl[k]))
        if abs(cl[k]) > sb[k]:
            inside = False
    if not inside:
        qw = Rb @ q + pb
        dv = qw - c
        dist = np.sqrt(_dot(dv, dv))
        for k in range(3):
            n[k] = dv[k] / dist
            pb_w[k] = qw[k]
            pa_w[k] = c[k] + r * n[k]
        return dist - r
    # center inside: push out through the nearest face
    j, best = 0, np.inf
    for k in range(3):
        s = sb[k] - abs(cl[k])
        if s < best:
            best, j = s, k
    sg = 1.0 if cl[j] >= 0 else -1.0
    _cp3(q, cl)
    q[j] = sg * sb[j]
    qw = Rb @ q + pb
    for k in range(3):
        n[k] = -sg * Rb[k, j]  # from sphere toward box interior
        pb_w[k] = qw[k]
        pa_w[k] = c[k] + r * n[k]
    return -best - r


@njit(cache=True, error_model="numpy")
def _sphere_box_pair(a, b, gkind, gsize, gR, gp, margin, V, PA, PB):
    """Sphere–box pair (either order) for `detect_kernel`: normal into V[_VN], the witness
    pair into PA[0], PB[0]; returns 1, or 0 beyond the margin. (Allocates: NRT.)"""
    n = V[_VN]
    pa_w = V[_VPAW]
    pb_w = V[_VPBW]
    if gkind[a] == SPHERE:
        dist = _sphere_box(gsize[a, 0], gp[a], gsize[b], gR[b], gp[b], n, pa_w, pb_w)
        if dist > margin:
            return 0
    else:
        dist = _sphere_box(gsize[b, 0], gp[b], gsize[a], gR[a], gp[a], n, pb_w, pa_w)
        if dist > margin:
            return 0
        n *= -1.0
    _cprr(PA, 0, V, _VPAW)
    _cprr(PB, 0, V, _VPBW)
    return 1


@njit(**_NONRT_INLINE)
def native_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws):
    """Native narrow phase of geometries a < b for pairs with a plane, sphere–sphere,
    box–box, sphere–capsule and capsule–capsule (sphere–box: `_sphere_box_pair`); the
    normal goes to V[_VN]. Returns the patch size (0: no contact within margin, -2: not
    handled here).
    FA, FB (MAXF, 3), ws (NWS, MAXF), V (NV3, 3): scratch."""
    ka, kb = gkind[a], gkind[b]
    # 1. the normal n (a -> b) and -n; pairs without support features return here
    case = 0  # 1: a is a plane, 2: b is a plane, 3: capsule/sphere cores, 4: box-box
    sep = 0.0
    edge = False
    if ka == PLANE or kb == PLANE:
        if ka == PLANE and kb == PLANE:
            return 0
        if ka == PLANE:
            case = 1
            for k in range(3):
                V[_VN, k] = gR[a, k, 2]
            for k in range(3):
                V[_VPLA0, k] = gp[a, k]
            _cprr(V, _VPLA1, V, _VN)
            for k in range(3):
                V[_VNEGN, k] = -V[_VN, k]
        else:
            case = 2
            for k in range(3):
                V[_VN, k] = -gR[b, k, 2]
            for k in range(3):
                V[_VPLB0, k] = gp[b, k]
            _cprr(V, _VPLB1, V, _VN)
    elif ka == SPHERE and kb == SPHERE:
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
    elif ka == CAPSULE or kb == CAPSULE:
        if ka == BOX or kb == BOX or ka == CYLINDER or kb == CYLINDER or ka == CONVEX or kb == CONVEX:
            return -2
        # sphere–capsule / capsule–sphere / capsule–capsule: closest points of the core segments
        case = 3
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
    elif ka == BOX and kb == BOX:
        case = 4
        sep, edge = _box_box(gsize, gR, gp, a, b, V, margin)
        if sep > margin:
            return 0
        for k in range(3):
            V[_VNEGN, k] = -V[_VN, k]
    else:
        return -2
    # 2. support features along n (a) and -n (b); against a plane, unordered
    mA = INF_FEATURE
    mB = INF_FEATURE
    if case != 1:
        if ka == BOX:
            mA = _support_box(a, gsize, gR, gp, V, _VN, tol, FA)
        else:
            mA = support_feature(ka, a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, case >= 3)
    if case != 2:
        if kb == BOX:
            mB = _support_box(b, gsize, gR, gp, V, _VNEGN, tol, FB)
        else:
            mB = support_feature(kb, b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, case >= 3)
    # 3. witness pair
    if case == 1:
        dmin = np.inf
        pn = gp[a, 0] * V[_VN, 0] + gp[a, 1] * V[_VN, 1] + gp[a, 2] * V[_VN, 2]
        for i in range(mB):
            dd = _dotrr(FB, i, V, _VN) - pn
            if dd < dmin:
                dmin = dd
                _cprr(V, _VPBW, FB, i)
        if dmin > margin:
            return 0
        if dmin < 0.0:   # penetrating: every vertex up to tol above the plane, not only the deepest's tol
            if kb == BOX:
                mB = _support_box(b, gsize, gR, gp, V, _VNEGN, tol - dmin, FB)
            else:
                mB = support_feature(kb, b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol - dmin, FB, False)
        for k in range(3):
            V[_VPAW, k] = V[_VPBW, k] - dmin * V[_VN, k]
    elif case == 2:
        dmin = np.inf
        pn = gp[b, 0] * V[_VN, 0] + gp[b, 1] * V[_VN, 1] + gp[b, 2] * V[_VN, 2]
        for i in range(mA):
            dd = pn - _dotrr(FA, i, V, _VN)
            if dd < dmin:
                dmin = dd
                _cprr(V, _VPAW, FA, i)
        if dmin > margin:
            return 0
        if dmin < 0.0:   # penetrating: every vertex up to tol above the plane, not only the deepest's tol
            if ka == BOX:
                mA = _support_box(a, gsize, gR, gp, V, _VN, tol - dmin, FA)
            else:
                mA = support_feature(ka, a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol - dmin, FA, False)
        for k in range(3):
            V[_VPBW, k] = V[_VPAW, k] + dmin * V[_VN, k]
    elif case == 4:
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


@njit(**_NONRT_INLINE)
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
        t = 0.0
        for j in range(3):
            t += gsize[g, j] * abs(gR[g, 0, j] * d0 + gR[g, 1, j] * d1 + gR[g, 2, j] * d2)
        return c + t
    if kind == CONVEX:
        l0 = gR[g, 0, 0] * d0 + gR[g, 1, 0] * d1 + gR[g, 2, 0] * d2      # d in the geometry frame
        l1 = gR[g, 0, 1] * d0 + gR[g, 1, 1] * d1 + gR[g, 2, 1] * d2
        l2 = gR[g, 0, 2] * d0 + gR[g, 1, 2] * d1 + gR[g, 2, 2] * d2
        return c + hull_climb(g, cverts, hg, l0, l1, l2)[1]
    return np.nan


@njit(**_NONRT_INLINE)
def _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2):
    """True if direction d separates geometry a (below) from b (above) by more than margin."""
    dn = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if dn < 1e-9:
        return False
    ha = support_height(gkind[a], a, gsize, gR, gp, cverts, coff, hg, d0, d1, d2)
    hb = support_height(gkind[b], b, gsize, gR, gp, cverts, coff, hg, -d0, -d1, -d2)   # −min over b of x·d
    return ha + hb < -margin * dn       # nan (a plane) compares False


@njit(**_NONRT_INLINE)
def separated_along_centres(a, b, gkind, gsize, gR, gp, lc, cverts, coff, hg, margin):
    """True if the axis between the two geometries' origins, or between their bounding-box
    centres (lc, local), separates them by more than margin (max over a of x·d < min over b of
    x·d − margin |d|): a proof of no contact within the margin, so the pair can skip the
    library's narrow phase. False when neither axis proves it."""
    d0 = gp[b, 0] - gp[a, 0]
    d1 = gp[b, 1] - gp[a, 1]
    d2 = gp[b, 2] - gp[a, 2]
    if _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2):
        return True
    for j in range(3):
        d0 += gR[b, 0, j] * lc[b, j] - gR[a, 0, j] * lc[a, j]
        d1 += gR[b, 1, j] * lc[b, j] - gR[a, 1, j] * lc[a, j]
        d2 += gR[b, 2, j] * lc[b, j] - gR[a, 2, j] * lc[a, j]
    return _separated_along(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, d0, d1, d2)


@njit(**_NONRT)
def _narrow_loop(pi, npairs, pairs, lib_pairs, nlib, k, gbody, gkind, gsize, gR, gp, lc, cverts, coff, hg,
                 native_ok, margin, tol, gfric, grest, gcomp, out_i, out_p, out_R, out_s, V, PA, PB, FA, FB,
                 ws, keep):
    """Native narrow phase of the candidate pairs from index pi on, contacts appended from
    index k; pairs left to the library backend go to lib_pairs. Stops before a sphere–box
    or a GJK pair (solved by the caller, they allocate). Returns (next pair index, nlib, k)."""
    ng = gbody.shape[0]
    cap = out_i.shape[1]
    while pi < npairs:
        a, b = pairs[pi, 0], pairs[pi, 1]
        ka, kb = gkind[a], gkind[b]
        if native_ok[ka, kb] != NATIVE:
            # the library's narrow phase or GJK (culled when the centres' axis separates)
            if separated_along_centres(a, b, gkind, gsize, gR, gp, lc, cverts, coff, hg, margin):
                pi += 1
                continue
            if native_ok[ka, kb] == NATIVE_GJK:
                break
            lib_pairs[nlib] = pi
            nlib += 1
            pi += 1
            continue
        if (ka == SPHERE and kb == BOX) or (ka == BOX and kb == SPHERE):
            break
        m = native_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws)
        if m == -2:
            lib_pairs[nlib] = pi
            nlib += 1
        elif m > 0:
            k = emit_patch(a, b, V, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
                           cap, keep, ws)
        pi += 1
    return pi, nlib, k


@njit(cache=True, error_model="numpy")
def q_status(jint, q):
    """Q_OK, Q_NOT_FINITE (q has a NaN or inf) or Q_NOT_UNIT (a free joint's quaternion is
    not unit within 1e-6)."""
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return Q_NOT_FINITE
    for i in range(jint.shape[0]):
        if jint[i, 1] == FREE:
            iq = jint[i, 2] + 3
            s = q[iq] * q[iq] + q[iq + 1] * q[iq + 1] + q[iq + 2] * q[iq + 2] + q[iq + 3] * q[iq + 3]
            if abs(np.sqrt(s) - 1.0) > 1e-6:
                return Q_NOT_UNIT
    return Q_OK


@njit(**_JIT)
def _patch_workspace():
    """Scratch of the narrow phase and the patch code, allocated once per call of a batch
    kernel: support features PA, PB, FA, FB (MAXF, 3), scalars ws (NWS, MAXF), 3-vectors V
    (NV3, 3), kept patch points keep (4,)."""
    return (np.empty((MAXF, 3)), np.empty((MAXF, 3)), np.empty((MAXF, 3)), np.empty((MAXF, 3)),
            np.empty((NWS, MAXF)), np.zeros((NV3, 3)), np.empty(4, dtype=np.int64))


@njit(**_JIT)
def detect_kernel(jint, jfloat, q, gbody, gkind, gsize, gRl, gpl, lc, le, cverts, coff, hg,
                  allow, planes, others, native_ok, margin, tol, gfric, grest, gcomp,
                  oR, op, gR, gp, lo, hi, pairs, lib_pairs, out_i, out_p, out_R, out_s):
    """Input check of q, FK, geometry placements, AABBs, broad phase and the native narrow
    phase.

    native_ok (6, 6) uint8: per kind pair NATIVE (solved here by the closed-form kernels),
    NATIVE_GJK (solved here by GJK/EPA) or 0: the candidate pair goes to lib_pairs for the
    library backend. Returns (status, number of candidate pairs, number of
    library pairs, number of contacts written); status is `q_status` (nothing else is done
    when it is not Q_OK); counts beyond the buffers mean "grow and call again"."""
    status = q_status(jint, q)
    if status != Q_OK:
        return status, 0, 0, 0
    if jint.shape[0] > 0:
        fk_kernel(jint, jfloat, q, oR, op)
    placements_kernel(gbody, gRl, gpl, oR, op, gR, gp)
    aabb_kernel(gkind, gR, gp, lc, le, margin, lo, hi)
    npairs = broadphase_kernel(gkind, gR, gp, lo, hi, allow, margin, planes, others, pairs)
    if npairs > pairs.shape[0]:
        return Q_OK, npairs, 0, 0
    ng = gbody.shape[0]
    PA, PB, FA, FB, ws, V, keep = _patch_workspace()
    gw = gjk.gjk_work()
    G = np.zeros((3, 3))
    nlib = 0
    k = 0
    pi = 0
    while True:
        pi, nlib, k = _narrow_loop(pi, npairs, pairs, lib_pairs, nlib, k, gbody, gkind, gsize, gR, gp, lc,
                                   cverts, coff, hg, native_ok, margin, tol, gfric, grest, gcomp, out_i, out_p, out_R, out_s,
                                   V, PA, PB, FA, FB, ws, keep)
        if pi >= npairs:
            break
        a, b = pairs[pi, 0], pairs[pi, 1]  # a sphere–box pair or a GJK pair
        if native_ok[gkind[a], gkind[b]] == NATIVE_GJK:
            m = convex_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G)
            if m == -2:
                lib_pairs[nlib] = pi
                nlib += 1
        else:
            m = _sphere_box_pair(a, b, gkind, gsize, gR, gp, margin, V, PA, PB)
        if m > 0:
            k = emit_patch(a, b, V, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s,
                           k, out_i.shape[1], keep, ws)
        pi += 1
    return Q_OK, npairs, nlib, k


@njit(cache=True, error_model="numpy")
def patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, bwa, bwb, i, tol, V, PA, PB, FA, FB, ws):
    """Contact patch of geometries a, b from a normal n = bn[i] (a → b) and one witness pair
    (bwa[i], bwb[i]): the support features along ±n clipped against each other
    (`build_patch`). Returns the count of point pairs (PA, PB)."""
    for q in range(3):
        V[_VN, q] = bn[i, q]
        V[_VNEGN, q] = -bn[i, q]
        V[_VPLA0, q] = 0.0
        V[_VPLA1, q] = 0.0
        V[_VPLB0, q] = 0.0
        V[_VPLB1, q] = 0.0
        V[_VPAW, q] = bwa[i, q]
        V[_VPBW, q] = bwb[i, q]
    mA = support_feature_any(gkind[a], a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, gkind[b] != PLANE)
    mB = support_feature_any(gkind[b], b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, gkind[a] != PLANE)
    if mA == INF_FEATURE:
        for q in range(3):
            V[_VPLA0, q] = gp[a, q]
            V[_VPLA1, q] = gR[a, q, 2]
    if mB == INF_FEATURE:
        for q in range(3):
            V[_VPLB0, q] = gp[b, q]
            V[_VPLB1, q] = gR[b, q, 2]
    return build_patch(FA, mA, FB, mB, V, PA, PB, ws)


@njit(cache=True, error_model="numpy")
def convex_pair(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, V, PA, PB, FA, FB, ws, gw, G):
    """A convex hull against a hull or a primitive (not a plane): normal and witness points by
    GJK/EPA (`gjk.gjk_epa`, into rows 0, 1, 2 of G (3, 3)), then the patch along the normal.
    Returns the patch size; 0 beyond the margin; -2 for a flat Minkowski difference (left to
    the library). gw: `gjk.GjkWork` scratch."""
    sep = gjk.gjk_epa(a, b, gkind, gsize, gR, gp, cverts, hg, gw, G)
    if np.isnan(sep):
        return -2
    if sep > margin:
        return 0
    return patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, G[0:1], G[1:2], G[2:3], 0, tol, V, PA,
                              PB, FA, FB, ws)


@njit(cache=True, error_model="numpy")
def patch_from_normal_kernel(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, bwa, bwb, i, tol,
                             gbody, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k, V, PA, PB, FA, FB, ws,
                             keep):
    """Library backends that return a normal and one witness pair (fcl): build the patch
    from the support features along n = bn[i] (witnesses bwa[i], bwb[i]) and emit it.
    Returns the new contact count."""
    m = patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, bwa, bwb, i, tol, V, PA, PB, FA,
                           FB, ws)
    return emit_patch(a, b, V, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
                      out_i.shape[1], keep, ws)


@njit(cache=True, error_model="numpy")
def emit_points_kernel(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, PA, PB, m, bwa, bwb, i, tol,
                       gbody, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k, V, FA, FB, ws, keep):
    """Library backends that return a whole patch (coal): each patch point (PA, PB; m) is
    lifted back onto both shapes' support features along n = bn[i], so every point gets its
    own distance (coal gives all points of a patch the pair's distance); the witness pair
    (bwa[i], bwb[i]) is added when it is deeper than every patch point (coal's patch is the
    hull of the support set and may miss an interior deepest vertex); then reduce and emit."""
    for q in range(3):
        V[_VN, q] = bn[i, q]
        V[_VNEGN, q] = -bn[i, q]
    mA = support_feature_any(gkind[a], a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, gkind[b] != PLANE)
    mB = support_feature_any(gkind[b], b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, gkind[a] != PLANE)
    okA, okB = True, True
    if mA == INF_FEATURE:
        for q in range(3):
            V[_VXA0, q] = gp[a, q]
            V[_VXAN, q] = gR[a, q, 2]
    elif mA >= 3:
        _cprr(V, _VXA0, FA, 0)
        okA = _newell(FA, mA, V, _VXAN)
    if mB == INF_FEATURE:
        for q in range(3):
            V[_VXB0, q] = gp[b, q]
            V[_VXBN, q] = gR[b, q, 2]
    elif mB >= 3:
        _cprr(V, _VXB0, FB, 0)
        okB = _newell(FB, mB, V, _VXBN)
    if m == 1:  # coal found no patch (e.g. capsule–capsule): clip the support features
        _cprr(V, _VPLA0, V, _VXA0)
        _cprr(V, _VPLA1, V, _VXAN)
        _cprr(V, _VPLB0, V, _VXB0)
        _cprr(V, _VPLB1, V, _VXBN)
        _cprr(V, _VPAW, PA, 0)
        _cprr(V, _VPBW, PB, 0)
        m = build_patch(FA, mA, FB, mB, V, PA, PB, ws)
    elif okA and okB and m > 1:
        V[_VEX0, 0], V[_VEX0, 1], V[_VEX0, 2] = 1.0, 0.0, 0.0
        _tangent_basis_v(V, _VN, _VEX0, _VT1, _VT2)
        plane = mA == INF_FEATURE or mB == INF_FEATURE
        for j in range(m):
            u = 0.5 * (_dotrr(PA, j, V, _VT1) + _dotrr(PB, j, V, _VT1))
            v = 0.5 * (_dotrr(PA, j, V, _VT2) + _dotrr(PB, j, V, _VT2))
            if plane:
                # against a plane the shape's support set is unordered (maybe not planar):
                # snap to its vertices only, and project on the plane exactly
                if mA == INF_FEATURE:
                    _snap(FB, mB, u, v, V, PB, j)
                    _lift(FA, mA, V, _VXA0, _VXAN, _dotrr(PB, j, V, _VT1), _dotrr(PB, j, V, _VT2), PA, j)
                else:
                    _snap(FA, mA, u, v, V, PA, j)
                    _lift(FB, mB, V, _VXB0, _VXBN, _dotrr(PA, j, V, _VT1), _dotrr(PA, j, V, _VT2), PB, j)
            elif (_lift(FA, mA, V, _VXA0, _VXAN, u, v, V, _VQA)
                    and _lift(FB, mB, V, _VXB0, _VXBN, u, v, V, _VQB)):
                _cprr(PA, j, V, _VQA)
                _cprr(PB, j, V, _VQB)
        dmin = np.inf
        for j in range(m):
            dmin = min(dmin, _dotrr(PB, j, V, _VN) - _dotrr(PA, j, V, _VN))
        if _dotrr(bwb, i, V, _VN) - _dotrr(bwa, i, V, _VN) < dmin - 1e-9:
            # replace a patch point within the patch tolerance of the witness, else append
            jb, best = -1, np.inf
            for j in range(m):
                e0 = 0.5 * (PA[j, 0] + PB[j, 0] - bwa[i, 0] - bwb[i, 0])
                e1 = 0.5 * (PA[j, 1] + PB[j, 1] - bwa[i, 1] - bwb[i, 1])
                e2 = 0.5 * (PA[j, 2] + PB[j, 2] - bwa[i, 2] - bwb[i, 2])
                en = e0 * V[_VN, 0] + e1 * V[_VN, 1] + e2 * V[_VN, 2]
                dd = (e0 * e0 + e1 * e1 + e2 * e2) - en ** 2
                if dd < best:
                    best, jb = dd, j
            if best > max(tol, 1e-9) ** 2 and m < PA.shape[0]:
                jb = m
                m += 1
            _cprr(PA, jb, bwa, i)
            _cprr(PB, jb, bwb, i)
    return emit_patch(a, b, V, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
                      out_i.shape[1], keep, ws)


@njit(**_JIT)
def patch_from_normal_batch(npairs, bpair, bn, bwa, bwb, gkind, gsize, gR, gp, cverts, coff, hg, tol,
                            gbody, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k):
    """`patch_from_normal_kernel` over a batch of library results (fcl): pairs bpair (P, 2),
    normals bn (P, 3), witness points bwa, bwb (P, 3). Returns the new contact count."""
    ng = gbody.shape[0]
    PA, PB, FA, FB, ws, V, keep = _patch_workspace()
    for i in range(npairs):
        k = patch_from_normal_kernel(bpair[i, 0], bpair[i, 1], gkind, gsize, gR, gp, cverts, coff, hg, bn, bwa,
                                     bwb, i, tol, gbody, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
                                     V, PA, PB, FA, FB, ws, keep)
    return k


@njit(**_JIT)
def emit_points_batch(npairs, bpair, bn, bPA, bPB, bcnt, bwa, bwb, gkind, gsize, gR, gp, cverts, coff, hg,
                      tol, gbody, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k):
    """`emit_points_kernel` over a batch of library patches (coal): bPA, bPB (P, MAXF, 3) with
    bcnt (P,) points each. Returns the new contact count."""
    ng = gbody.shape[0]
    FA = np.empty((MAXF, 3))
    FB = np.empty((MAXF, 3))
    ws = np.empty((NWS, MAXF))
    V = np.zeros((NV3, 3))
    keep = np.empty(4, dtype=np.int64)
    for i in range(npairs):
        k = emit_points_kernel(bpair[i, 0], bpair[i, 1], gkind, gsize, gR, gp, cverts, coff, hg, bn,
                               bPA[i], bPB[i], bcnt[i], bwa, bwb, i, tol, gbody, ng, gfric, grest,
                               gcomp, out_i, out_p, out_R, out_s, k, V, FA, FB, ws, keep)
    return k

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
"""
import numpy as np
from numba import njit

from models.kinematics import fk_kernel

PLANE, SPHERE, CAPSULE, CYLINDER, BOX, CONVEX = 0, 1, 2, 3, 4, 5
KIND_CODES = {"plane": PLANE, "sphere": SPHERE, "capsule": CAPSULE, "cylinder": CYLINDER,
              "box": BOX, "mesh": CONVEX}
MAXF = 64           # max points of one support feature / clipped polygon
NDISC = 12          # samples of a cylinder's flat face
INF_FEATURE = -1    # feature size of a plane (infinite face)

_JIT = dict(cache=True, error_model="numpy")


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
def _dotc(b, A, j):
    """b · A[:, j] without making a view of the column."""
    return b[0] * A[0, j] + b[1] * A[1, j] + b[2] * A[2, j]


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


# ---------------------------------------------------------------- placements, AABBs
@njit(**_JIT)
def placements_kernel(gbody, gRl, gpl, oR, op, gR, gp):
    """World placement of every geometry: gR (ng,3,3), gp (ng,3) from body placements."""
    for g in range(gbody.shape[0]):
        b = gbody[g]
        if b < 0:
            gR[g] = gRl[g]
            gp[g] = gpl[g]
        else:
            gR[g] = oR[b] @ gRl[g]
            gp[g] = oR[b] @ gpl[g] + op[b]


@njit(**_JIT)
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


@njit(cache=True, error_model="numpy")
def support_feature(kind, size, R, p, cverts, d, tol, out, ordered=True):
    """Points of the shape's surface that maximize x·d within `tol` (metres): a vertex,
    an edge (2 points) or a face (convex polygon, ordered); written into out (MAXF, 3).
    ordered=False (contact with a plane): a convex hull's selected vertices unordered, the
    extreme one first, none dropped as interior. Returns the count; -1 for a plane."""
    if kind == PLANE:
        return INF_FEATURE
    if kind == SPHERE:
        for k in range(3):
            out[0, k] = p[k] + size[0] * d[k]
        return 1
    if kind == CAPSULE:
        r, h = size[0], size[1]
        du = R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]
        if 2.0 * h * abs(du) <= tol:
            for k in range(3):
                out[0, k] = p[k] + h * R[k, 2] + r * d[k]
                out[1, k] = p[k] - h * R[k, 2] + r * d[k]
            return 2
        s = 1.0 if du > 0 else -1.0
        for k in range(3):
            out[0, k] = p[k] + s * h * R[k, 2] + r * d[k]
        return 1
    if kind == CYLINDER:
        r, h = size[0], size[1]
        du = R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]
        w0, w1, w2 = d[0] - du * R[0, 2], d[1] - du * R[1, 2], d[2] - du * R[2, 2]
        wn = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        s = 1.0 if du > 0 else -1.0
        if 2.0 * r * wn <= tol:  # flat face: sampled disc
            for i in range(NDISC):
                th = 2.0 * np.pi * i / NDISC
                c, sn = r * np.cos(th), r * np.sin(th)
                for k in range(3):
                    out[i, k] = p[k] + s * h * R[k, 2] + c * R[k, 0] + sn * R[k, 1]
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
                out[0, k] = p[k] + h * R[k, 2] + r * wk
                out[1, k] = p[k] - h * R[k, 2] + r * wk
            return 2
        for k in range(3):
            wk = w0 if k == 0 else (w1 if k == 1 else w2)
            out[0, k] = p[k] + s * h * R[k, 2] + r * wk
        return 1
    if kind == BOX:
        # per local axis j: span the face (both signs) when |d_j| is within the tolerance
        ns = 0
        sg0 = sg1 = sg2 = 0.0
        sp0 = sp1 = sp2 = False
        for j in range(3):
            dj = R[0, j] * d[0] + R[1, j] * d[1] + R[2, j] * d[2]
            sgj = 1.0 if dj >= 0 else -1.0
            spj = 2.0 * size[j] * abs(dj) <= tol
            if spj:
                ns += 1
            if j == 0:
                sg0, sp0 = sgj, spj
            elif j == 1:
                sg1, sp1 = sgj, spj
            else:
                sg2, sp2 = sgj, spj
        if ns == 3:  # cannot happen for a unit d; guard anyway
            ns = 0
            sp0 = sp1 = sp2 = False
        cnt = 1 << ns
        for i in range(cnt):
            # cyclic sign patterns of the spanned axes: 1 axis (+), (-); 2 axes (+,+), (+,-), (-,-), (-,+)
            first = 1.0 if (i == 0 or i == 1) else -1.0
            second = 1.0 if (i == 0 or i == 3) else -1.0
            if ns == 1:
                first = 1.0 if i == 0 else -1.0
            used = 0
            l0 = sg0 * size[0]
            if sp0:
                l0 = size[0] * first
                used = 1
            l1 = sg1 * size[1]
            if sp1:
                l1 = size[1] * (first if used == 0 else second)
                used += 1
            l2 = sg2 * size[2]
            if sp2:
                l2 = size[2] * (first if used == 0 else second)
            for k in range(3):
                out[i, k] = p[k] + R[k, 0] * l0 + R[k, 1] * l1 + R[k, 2] * l2
        return cnt
    # CONVEX
    nv = cverts.shape[0]
    dl = R.T @ d
    hmax = -np.inf
    for i in range(nv):
        s = cverts[i, 0] * dl[0] + cverts[i, 1] * dl[1] + cverts[i, 2] * dl[2]
        if s > hmax:
            hmax = s
    sel = np.empty((nv, 3))
    m = 0
    for i in range(nv):
        s = cverts[i, 0] * dl[0] + cverts[i, 1] * dl[1] + cverts[i, 2] * dl[2]
        if s >= hmax - tol:
            for k in range(3):
                sel[m, k] = p[k] + R[k, 0] * cverts[i, 0] + R[k, 1] * cverts[i, 1] + R[k, 2] * cverts[i, 2]
            m += 1
    if m <= 2 or not ordered:
        ibest = 0
        for i in range(m):
            if _dotr(sel, i, d) > _dotr(sel, ibest, d):
                ibest = i
        _cp3(out[0], sel[ibest])
        j = 1
        for i in range(m):
            if i != ibest and j < out.shape[0]:
                _cp3(out[j], sel[i])
                j += 1
        return j
    t1 = np.empty(3)
    t2 = np.empty(3)
    tangent_basis(d, R[:, 0].copy(), t1, t2)
    return _hull2d(sel, m, t1, t2, out)


# ---------------------------------------------------------------- patch construction
@njit(cache=True, error_model="numpy")
def _lift(F, m, X0, Xn, u, v, t1, t2, n, out):
    """Point of feature F (m points; polygon with plane (X0, Xn), or segment, or point, or
    the plane (m == -1, then X0/Xn are the plane's point and normal)) whose projection on
    the tangent plane is (u, v). Returns False if the lift is ill-conditioned."""
    for i in range(max(m, 0)):  # a vertex of the feature: exact, even on non-planar sets
        du, dv = _dotr(F, i, t1) - u, _dotr(F, i, t2) - v
        if du * du + dv * dv <= 1e-20:
            _cp3(out, F[i])
            return True
    b0, b1, b2 = u * t1[0] + v * t2[0], u * t1[1] + v * t2[1], u * t1[2] + v * t2[2]
    if m == INF_FEATURE or m >= 3:
        den = _dot(n, Xn)
        if abs(den) < 1e-9:
            return False
        s = ((X0[0] - b0) * Xn[0] + (X0[1] - b1) * Xn[1] + (X0[2] - b2) * Xn[2]) / den
        out[0] = b0 + s * n[0]
        out[1] = b1 + s * n[1]
        out[2] = b2 + s * n[2]
        return True
    if m == 2:
        au, av = _dotr(F, 0, t1), _dotr(F, 0, t2)
        bu, bv = _dotr(F, 1, t1), _dotr(F, 1, t2)
        L2 = (bu - au) ** 2 + (bv - av) ** 2
        t = 0.0
        if L2 > 1e-24:
            t = ((u - au) * (bu - au) + (v - av) * (bv - av)) / L2
        t = min(1.0, max(0.0, t))
        for k in range(3):
            out[k] = F[0, k] + t * (F[1, k] - F[0, k])
        return True
    _cp3(out, F[0])
    return True


@njit(cache=True, error_model="numpy")
def _snap(F, m, u, v, t1, t2, out):
    """Replace out by the feature vertex whose projection is (u, v), if there is one."""
    for i in range(m):
        du, dv = _dotr(F, i, t1) - u, _dotr(F, i, t2) - v
        if du * du + dv * dv <= 1e-16:
            _cp3(out, F[i])
            return True
    return False


@njit(cache=True, error_model="numpy")
def _newell(F, m, out):
    out[:] = 0.0
    for i in range(m):
        j = (i + 1) % m
        out[0] += (F[i, 1] - F[j, 1]) * (F[i, 2] + F[j, 2])
        out[1] += (F[i, 2] - F[j, 2]) * (F[i, 0] + F[j, 0])
        out[2] += (F[i, 0] - F[j, 0]) * (F[i, 1] + F[j, 1])
    nrm = np.sqrt(_dot(out, out))
    if nrm < 1e-300:
        return False
    for k in range(3):
        out[k] /= nrm
    return True


@njit(cache=True, inline="always", error_model="numpy")
def _reverse(x, m):
    for i in range(m // 2):
        x[i], x[m - 1 - i] = x[m - 1 - i], x[i]


@njit(cache=True, inline="always", error_model="numpy")
def _area2(u, v, m):
    s = 0.0
    for i in range(m):
        j = (i + 1) % m
        s += u[i] * v[j] - u[j] * v[i]
    return s


@njit(cache=True, error_model="numpy")
def _clip_polygon(su, sv, sm, cu, cv, cm, ou, ov, bu, bv):
    """Sutherland–Hodgman: subject polygon (su, sv, sm) clipped by the convex clip polygon
    (cu, cv, cm), both counter-clockwise. Writes into ou, ov (bu, bv: scratch); returns
    the count."""
    m = sm
    for i in range(m):
        ou[i] = su[i]
        ov[i] = sv[i]
    cap = ou.shape[0]
    for e in range(cm):
        if m == 0:
            break
        e2 = (e + 1) % cm
        ax, ay = cu[e], cv[e]
        ex, ey = cu[e2] - ax, cv[e2] - ay
        for i in range(m):
            bu[i] = ou[i]
            bv[i] = ov[i]
        nm = m
        m = 0
        for i in range(nm):
            j = (i + 1) % nm
            pu, pv, qu, qv = bu[i], bv[i], bu[j], bv[j]
            dp = ex * (pv - ay) - ey * (pu - ax)
            dq = ex * (qv - ay) - ey * (qu - ax)
            if dp >= 0:
                if m < cap:
                    ou[m] = pu
                    ov[m] = pv
                    m += 1
                if dq < 0 and m < cap:
                    t = dp / (dp - dq)
                    ou[m] = pu + t * (qu - pu)
                    ov[m] = pv + t * (qv - pv)
                    m += 1
            elif dq >= 0 and m < cap:
                t = dp / (dp - dq)
                ou[m] = pu + t * (qu - pu)
                ov[m] = pv + t * (qv - pv)
                m += 1
    return m


@njit(cache=True, error_model="numpy")
def _clip_segment(au, av, bu, bv, cu, cv, cm, ou, ov):
    """Segment a-b clipped by the convex counter-clockwise polygon (Cyrus–Beck)."""
    t0, t1 = 0.0, 1.0
    du, dv = bu - au, bv - av
    for e in range(cm):
        e2 = (e + 1) % cm
        ex, ey = cu[e2] - cu[e], cv[e2] - cv[e]
        # inside: ex*(y - ey0) - ey*(x - ex0) >= 0
        f0 = ex * (av - cv[e]) - ey * (au - cu[e])
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
    ou[0], ov[0] = au + t0 * du, av + t0 * dv
    if t1 - t0 < 1e-12:
        return 1
    ou[1], ov[1] = au + t1 * du, av + t1 * dv
    return 2


@njit(cache=True, error_model="numpy")
def build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3):
    """Contact patch between support features FA (of shape a, along +n) and FB (of b,
    along -n). m = -1 marks a plane (planeA/planeB = (point, normal) rows). Intersects the
    projections on the plane ⟂ n and lifts the result back on both features. Falls back to
    the witness pair (pa_w, pb_w) for point contacts or degenerate cases. Returns the count
    of (PA[i], PB[i]) point pairs. ws (8, MAXF), v3 (>= 7, 3): scratch."""
    t1, t2, ex0 = v3[0], v3[1], v3[6]
    ex0[0], ex0[1], ex0[2] = 1.0, 0.0, 0.0
    tangent_basis(n, ex0, t1, t2)
    ou, ov = ws[0], ws[1]
    m = 0
    XA0, XAn, XB0, XBn = v3[2], v3[3], v3[4], v3[5]
    okA, okB = True, True
    if mA == INF_FEATURE:
        _cp3(XA0, planeA[0])
        _cp3(XAn, planeA[1])
    elif mA >= 3:
        _cp3(XA0, FA[0])
        okA = _newell(FA, mA, XAn)
    if mB == INF_FEATURE:
        _cp3(XB0, planeB[0])
        _cp3(XBn, planeB[1])
    elif mB >= 3:
        _cp3(XB0, FB[0])
        okB = _newell(FB, mB, XBn)
    if okA and okB and not (mA == INF_FEATURE and mB == INF_FEATURE):
        if mA == INF_FEATURE or mB == INF_FEATURE:
            F, mm = (FB, mB) if mA == INF_FEATURE else (FA, mA)
            if mm >= 2:
                for i in range(mm):
                    ou[i] = _dotr(F, i, t1)
                    ov[i] = _dotr(F, i, t2)
                m = mm
        elif mA >= 2 and mB >= 2:
            ua, va, ub, vb = ws[2], ws[3], ws[4], ws[5]
            for i in range(mA):
                ua[i] = _dotr(FA, i, t1)
                va[i] = _dotr(FA, i, t2)
            for i in range(mB):
                ub[i] = _dotr(FB, i, t1)
                vb[i] = _dotr(FB, i, t2)
            if mA >= 3 and _area2(ua, va, mA) < 0:
                _reverse(ua, mA)
                _reverse(va, mA)
            if mB >= 3 and _area2(ub, vb, mB) < 0:
                _reverse(ub, mB)
                _reverse(vb, mB)
            if mA >= 3 and mB >= 3:
                if abs(_area2(ua, va, mA)) > 1e-16 and abs(_area2(ub, vb, mB)) > 1e-16:
                    m = _clip_polygon(ub, vb, mB, ua, va, mA, ou, ov, ws[6], ws[7])
            elif mA >= 3:
                if abs(_area2(ua, va, mA)) > 1e-16:
                    m = _clip_segment(ub[0], vb[0], ub[1], vb[1], ua, va, mA, ou, ov)
            elif mB >= 3:
                if abs(_area2(ub, vb, mB)) > 1e-16:
                    m = _clip_segment(ua[0], va[0], ua[1], va[1], ub, vb, mB, ou, ov)
            else:  # two segments: an overlap only if parallel
                dau, dav = ua[1] - ua[0], va[1] - va[0]
                dbu, dbv = ub[1] - ub[0], vb[1] - vb[0]
                la = np.sqrt(dau * dau + dav * dav)
                lb = np.sqrt(dbu * dbu + dbv * dbv)
                if la > 1e-12 and lb > 1e-12 and abs(dau * dbv - dav * dbu) <= 1e-6 * la * lb:
                    ex, ey = dau / la, dav / la
                    s0 = (ub[0] - ua[0]) * ex + (vb[0] - va[0]) * ey
                    s1 = (ub[1] - ua[0]) * ex + (vb[1] - va[0]) * ey
                    lo_ = max(0.0, min(s0, s1))
                    hi_ = min(la, max(s0, s1))
                    if hi_ >= lo_:
                        ou[0], ov[0] = ua[0] + lo_ * ex, va[0] + lo_ * ey
                        m = 1
                        if hi_ - lo_ > 1e-12:
                            ou[1], ov[1] = ua[0] + hi_ * ex, va[0] + hi_ * ey
                            m = 2
    k = 0
    if m > 0 and (mA == INF_FEATURE or mB == INF_FEATURE):
        # against a plane the feature's own points are exact (no lift: the support set of a
        # convex hull within the tolerance need not be planar)
        for i in range(m):
            if mA == INF_FEATURE:
                _cp3(PB[i], FB[i])
                _lift(FA, mA, XA0, XAn, ou[i], ov[i], t1, t2, n, PA[i])
            else:
                _cp3(PA[i], FA[i])
                _lift(FB, mB, XB0, XBn, ou[i], ov[i], t1, t2, n, PB[i])
        return m
    for i in range(m):
        if not _lift(FA, mA, XA0, XAn, ou[i], ov[i], t1, t2, n, PA[k]):
            continue
        if not _lift(FB, mB, XB0, XBn, ou[i], ov[i], t1, t2, n, PB[k]):
            continue
        k += 1
    if k == 0:
        _cp3(PA[0], pa_w)
        _cp3(PB[0], pb_w)
        k = 1
    return k


@njit(cache=True, inline="always", error_model="numpy")
def _mid(PA, PB, i, k):
    return 0.5 * (PA[i, k] + PB[i, k])


@njit(cache=True, error_model="numpy")
def _tri(PA, PB, a, b, c, n):
    """((P_b - P_a) × (P_c - P_a)) · n for the patch midpoints P (twice the signed area)."""
    ux, uy, uz = _mid(PA, PB, b, 0) - _mid(PA, PB, a, 0), _mid(PA, PB, b, 1) - _mid(PA, PB, a, 1), \
        _mid(PA, PB, b, 2) - _mid(PA, PB, a, 2)
    vx, vy, vz = _mid(PA, PB, c, 0) - _mid(PA, PB, a, 0), _mid(PA, PB, c, 1) - _mid(PA, PB, a, 1), \
        _mid(PA, PB, c, 2) - _mid(PA, PB, a, 2)
    return (uy * vz - uz * vy) * n[0] + (uz * vx - ux * vz) * n[1] + (ux * vy - uy * vx) * n[2]


@njit(cache=True, error_model="numpy")
def reduce_patch(PA, PB, m, n, keep):
    """Indices (into keep) of at most 4 points of the patch: the deepest, the farthest from
    it, the one maximizing the triangle area, then the one adding the most area."""
    if m <= 4:
        for i in range(m):
            keep[i] = i
        return m
    i0, d0 = 0, np.inf
    for i in range(m):
        di = _dotr(PB, i, n) - _dotr(PA, i, n)
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
        s = abs(_tri(PA, PB, i0, i1, i, n))
        if s > best + 1e-18:
            best, i2 = s, i
    if best <= 1e-18:
        keep[0], keep[1] = i0, i1
        return 2
    orient = 1.0 if _tri(PA, PB, i0, i1, i2, n) > 0 else -1.0
    i3, best = -1, 1e-18
    for i in range(m):
        if i == i0 or i == i1 or i == i2:
            continue
        for q in range(3):
            a = i0 if q == 0 else (i1 if q == 1 else i2)
            b = i1 if q == 0 else (i2 if q == 1 else i0)
            s = -orient * _tri(PA, PB, a, b, i, n)  # > 0: outside edge a-b
            if s > best + 1e-18:
                best, i3 = s, i
    keep[0], keep[1], keep[2] = i0, i1, i2
    if i3 < 0:
        return 3
    keep[3] = i3
    return 4


@njit(cache=True, error_model="numpy")
def emit_patch(a, b, n, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_f, k, cap, v3):
    """Reduce the patch to ≤ 4 points and write them as contacts from index k.

    out_i (cap, 5) int64: body1, body2, geom1, geom2, key; out_f (cap, 16): position (3),
    frame row-major (9), distance, friction, restitution, compliance.
    Friction = sqrt(μa μb), restitution = max(ea, eb), compliance = ca + cb.
    Returns the new k (counts past cap so the caller can grow the buffers)."""
    keep = np.empty(4, dtype=np.int64)
    r = reduce_patch(PA, PB, m, n, keep)
    t1, t2, ref, ang = v3[0], v3[1], v3[2], v3[3]
    col = 0
    if abs(gR[b, 0, 0] * n[0] + gR[b, 1, 0] * n[1] + gR[b, 2, 0] * n[2]) > 0.9:
        col = 1
    for q in range(3):
        ref[q] = gR[b, q, col]
    tangent_basis(n, ref, t1, t2)
    # slot of each point: rank of its angle around the patch centroid, measured from t1
    cu, cv = 0.0, 0.0
    for j in range(r):
        i = keep[j]
        cu += 0.5 * (_dotr(PA, i, t1) + _dotr(PB, i, t1)) / r
        cv += 0.5 * (_dotr(PA, i, t2) + _dotr(PB, i, t2)) / r
    for j in range(r):
        i = keep[j]
        u = 0.5 * (_dotr(PA, i, t1) + _dotr(PB, i, t1)) - cu
        v = 0.5 * (_dotr(PA, i, t2) + _dotr(PB, i, t2)) - cv
        th = np.arctan2(v, u)
        if th < 0:
            th += 2.0 * np.pi
        ang[j] = th if r > 1 else 0.0
    mu = np.sqrt(gfric[a] * gfric[b])
    e = max(grest[a], grest[b])
    cmp = gcomp[a] + gcomp[b]
    pair = (np.int64(a) * ng + b) * 4
    for j in range(r):
        i = keep[j]
        slot = 0
        for jj in range(r):
            if ang[jj] < ang[j] or (ang[jj] == ang[j] and jj < j):
                slot += 1
        if k < cap:
            out_i[k, 0] = gbody[b]
            out_i[k, 1] = gbody[a]
            out_i[k, 2] = b
            out_i[k, 3] = a
            out_i[k, 4] = pair + slot
            for q in range(3):
                out_f[k, q] = 0.5 * (PA[i, q] + PB[i, q])
                out_f[k, 3 + 3 * q] = t1[q]
                out_f[k, 4 + 3 * q] = t2[q]
                out_f[k, 5 + 3 * q] = n[q]
            out_f[k, 12] = _dotr(PB, i, n) - _dotr(PA, i, n)
            out_f[k, 13] = mu
            out_f[k, 14] = e
            out_f[k, 15] = cmp
        k += 1
    return k


# ---------------------------------------------------------------- native narrow phase
@njit(cache=True, error_model="numpy")
def _box_box(sa, Ra, pa, sb, Rb, pb, n, L):
    """SAT for two boxes: best separating axis into n (oriented a -> b), its separation
    (negative = penetration) and whether it is an edge-edge axis."""
    dx, dy, dz = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    best = -np.inf
    edge = False
    for ax in range(15):
        if ax < 3:
            L[0], L[1], L[2] = Ra[0, ax], Ra[1, ax], Ra[2, ax]
        elif ax < 6:
            L[0], L[1], L[2] = Rb[0, ax - 3], Rb[1, ax - 3], Rb[2, ax - 3]
        else:
            i, j = (ax - 6) // 3, (ax - 6) % 3
            L[0] = Ra[1, i] * Rb[2, j] - Ra[2, i] * Rb[1, j]
            L[1] = Ra[2, i] * Rb[0, j] - Ra[0, i] * Rb[2, j]
            L[2] = Ra[0, i] * Rb[1, j] - Ra[1, i] * Rb[0, j]
            ln = np.sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2])
            if ln < 1e-6:
                continue
            L[0], L[1], L[2] = L[0] / ln, L[1] / ln, L[2] / ln
        ra = sa[0] * abs(_dotc(L, Ra, 0)) + sa[1] * abs(_dotc(L, Ra, 1)) + sa[2] * abs(_dotc(L, Ra, 2))
        rb = sb[0] * abs(_dotc(L, Rb, 0)) + sb[1] * abs(_dotc(L, Rb, 1)) + sb[2] * abs(_dotc(L, Rb, 2))
        c = L[0] * dx + L[1] * dy + L[2] * dz
        s = abs(c) - ra - rb
        # edge axes must beat face axes clearly (face contacts are preferred on ties)
        thr = best + 1e-9 if ax < 6 else best + 1e-6 + 1e-3 * abs(best)
        if s > thr:
            best = s
            edge = ax >= 6
            sgn = 1.0 if c >= 0 else -1.0
            for k in range(3):
                n[k] = sgn * L[k]
    return best, edge


@njit(cache=True, error_model="numpy")
def _segments_closest(p1, q1, p2, q2, c1, c2):
    """Closest points c1 on segment p1-q1 and c2 on p2-q2 (either may be a point)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    c = _dot(d1, r)
    b = _dot(d1, d2)
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
    for k in range(3):
        c1[k] = p1[k] + s * d1[k]
        c2[k] = p2[k] + t * d2[k]


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
def native_pair(ka, sa, Ra, pa, ca, kb, sb, Rb, pb, cb, margin, tol, n, PA, PB, FA, FB, ws, v3):
    """Native narrow phase for pairs with a plane, sphere–sphere, sphere–box, box–box,
    sphere–capsule and capsule–capsule.
    Returns the patch size (0: no contact within margin, -2: not handled natively).
    FA, FB (MAXF, 3), ws (8, MAXF), v3 (20, 3): scratch."""
    planeA = v3[8:10]
    planeB = v3[10:12]
    pa_w = v3[12]
    pb_w = v3[13]
    negn = v3[15]
    if ka == PLANE or kb == PLANE:
        if ka == PLANE and kb == PLANE:
            return 0
        if ka == PLANE:
            for k in range(3):
                n[k] = Ra[k, 2]
            _cp3(planeA[0], pa)
            _cp3(planeA[1], n)
            mA = INF_FEATURE
            for k in range(3):
                negn[k] = -n[k]
            mB = support_feature(kb, sb, Rb, pb, cb, negn, tol, FB, False)
            dmin = np.inf
            for i in range(mB):
                dd = _dotr(FB, i, n) - _dot(pa, n)
                if dd < dmin:
                    dmin = dd
                    _cp3(pb_w, FB[i])
            if dmin > margin:
                return 0
            for k in range(3):
                pa_w[k] = pb_w[k] - dmin * n[k]
        else:
            for k in range(3):
                n[k] = -Rb[k, 2]
            _cp3(planeB[0], pb)
            _cp3(planeB[1], n)
            mB = INF_FEATURE
            mA = support_feature(ka, sa, Ra, pa, ca, n, tol, FA, False)
            dmin = np.inf
            for i in range(mA):
                dd = _dot(pb, n) - _dotr(FA, i, n)
                if dd < dmin:
                    dmin = dd
                    _cp3(pa_w, FA[i])
            if dmin > margin:
                return 0
            for k in range(3):
                pb_w[k] = pa_w[k] + dmin * n[k]
        return build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3)
    if ka == SPHERE and kb == SPHERE:
        dv = pb - pa
        dist = np.sqrt(_dot(dv, dv))
        if dist - sa[0] - sb[0] > margin:
            return 0
        if dist < 1e-12:
            n[:] = 0.0
            n[2] = 1.0
        else:
            for k in range(3):
                n[k] = dv[k] / dist
        for k in range(3):
            PA[0, k] = pa[k] + sa[0] * n[k]
            PB[0, k] = pb[k] - sb[0] * n[k]
        return 1
    if (ka == SPHERE and kb == BOX) or (ka == BOX and kb == SPHERE):
        if ka == SPHERE:
            dist = _sphere_box(sa[0], pa, sb, Rb, pb, n, pa_w, pb_w)
            if dist > margin:
                return 0
            _cp3(PA[0], pa_w)
            _cp3(PB[0], pb_w)
        else:
            dist = _sphere_box(sb[0], pb, sa, Ra, pa, n, pb_w, pa_w)
            if dist > margin:
                return 0
            n *= -1.0
            _cp3(PA[0], pa_w)
            _cp3(PB[0], pb_w)
        return 1
    if ka == CAPSULE or kb == CAPSULE:
        if ka == BOX or kb == BOX or ka == CYLINDER or kb == CYLINDER or ka == CONVEX or kb == CONVEX:
            return -2
        # sphere–capsule / capsule–sphere / capsule–capsule: closest points of the core segments
        c1, c2 = v3[16], v3[17]
        ha = sa[1] if ka == CAPSULE else 0.0
        hb = sb[1] if kb == CAPSULE else 0.0
        for k in range(3):
            FA[0, k] = pa[k] + ha * Ra[k, 2]
            FA[1, k] = pa[k] - ha * Ra[k, 2]
            FB[0, k] = pb[k] + hb * Rb[k, 2]
            FB[1, k] = pb[k] - hb * Rb[k, 2]
        _segments_closest(FA[0], FA[1], FB[0], FB[1], c1, c2)
        dx, dy, dz = c2[0] - c1[0], c2[1] - c1[1], c2[2] - c1[2]
        dist = np.sqrt(dx * dx + dy * dy + dz * dz)
        if dist - sa[0] - sb[0] > margin:
            return 0
        if dist > 1e-12:
            n[0], n[1], n[2] = dx / dist, dy / dist, dz / dist
        else:  # core segments intersect: any direction normal to the first axis
            tangent_basis(Ra[:, 2].copy(), Rb[:, 0].copy(), n, negn)
        for k in range(3):
            pa_w[k] = c1[k] + sa[0] * n[k]
            pb_w[k] = c2[k] - sb[0] * n[k]
            negn[k] = -n[k]
        mA = support_feature(ka, sa, Ra, pa, ca, n, tol, FA)
        mB = support_feature(kb, sb, Rb, pb, cb, negn, tol, FB)
        return build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3)
    if ka == BOX and kb == BOX:
        sep, edge = _box_box(sa, Ra, pa, sb, Rb, pb, n, v3[14])
        if sep > margin:
            return 0
        for k in range(3):
            negn[k] = -n[k]
        mA = support_feature(BOX, sa, Ra, pa, ca, n, tol, FA)
        mB = support_feature(BOX, sb, Rb, pb, cb, negn, tol, FB)
        if edge and mA == 2 and mB == 2:
            _segments_closest(FA[0], FA[1], FB[0], FB[1], pa_w, pb_w)
            for k in range(3):  # the SAT separation is the exact edge-edge distance along n
                mid = 0.5 * (pa_w[k] + pb_w[k])
                pa_w[k] = mid - 0.5 * sep * n[k]
                pb_w[k] = mid + 0.5 * sep * n[k]
        else:
            # a vertex or feature of one box against the other's face
            if mB <= mA:
                _cp3(pb_w, FB[0])
                for k in range(3):
                    pa_w[k] = pb_w[k] - sep * n[k]
            else:
                _cp3(pa_w, FA[0])
                for k in range(3):
                    pb_w[k] = pa_w[k] + sep * n[k]
        return build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3)
    return -2


@njit(**_JIT)
def detect_kernel(jint, jfloat, q, gbody, gkind, gsize, gRl, gpl, lc, le, cverts, coff,
                  allow, planes, others, native_ok, margin, tol, gfric, grest, gcomp,
                  oR, op, gR, gp, lo, hi, pairs, lib_pairs, out_i, out_f):
    """FK, geometry placements, AABBs, broad phase and the native narrow phase.

    native_ok (6, 6) uint8: kind pairs handled here; the other candidate pairs go to
    lib_pairs for the library backend. Returns (number of candidate pairs, number of
    library pairs, number of contacts written); counts beyond the buffers mean "grow and
    call again"."""
    if jint.shape[0] > 0:
        fk_kernel(jint, jfloat, q, oR, op)
    placements_kernel(gbody, gRl, gpl, oR, op, gR, gp)
    aabb_kernel(gkind, gR, gp, lc, le, margin, lo, hi)
    npairs = broadphase_kernel(gkind, gR, gp, lo, hi, allow, margin, planes, others, pairs)
    if npairs > pairs.shape[0]:
        return npairs, 0, 0
    ng = gbody.shape[0]
    PA = np.empty((MAXF, 3))
    PB = np.empty((MAXF, 3))
    FA = np.empty((MAXF, 3))
    FB = np.empty((MAXF, 3))
    ws = np.empty((8, MAXF))
    v3 = np.zeros((20, 3))
    n = np.empty(3)
    nlib = 0
    k = 0
    cap = out_i.shape[0]
    for pi in range(npairs):
        a, b = pairs[pi, 0], pairs[pi, 1]
        ka, kb = gkind[a], gkind[b]
        if native_ok[ka, kb] == 0:
            lib_pairs[nlib] = pi
            nlib += 1
            continue
        m = native_pair(ka, gsize[a], gR[a], gp[a], cverts[coff[a]:coff[a + 1]],
                        kb, gsize[b], gR[b], gp[b], cverts[coff[b]:coff[b + 1]],
                        margin, tol, n, PA, PB, FA, FB, ws, v3)
        if m == -2:
            lib_pairs[nlib] = pi
            nlib += 1
            continue
        if m > 0:
            k = emit_patch(a, b, n, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_f, k, cap, v3)
    return npairs, nlib, k


@njit(cache=True, error_model="numpy")
def patch_from_normal_kernel(a, b, gkind, gsize, gR, gp, cverts, coff, n, pa_w, pb_w, tol,
                             gbody, ng, gfric, grest, gcomp, out_i, out_f, k):
    """Library backends that return a normal and one witness pair (fcl): build the patch
    from the support features along n and emit it. Returns the new contact count."""
    FA = np.empty((MAXF, 3))
    FB = np.empty((MAXF, 3))
    PA = np.empty((MAXF, 3))
    PB = np.empty((MAXF, 3))
    planeA = np.zeros((2, 3))
    planeB = np.zeros((2, 3))
    mA = support_feature(gkind[a], gsize[a], gR[a], gp[a], cverts[coff[a]:coff[a + 1]], n, tol, FA,
                         gkind[b] != PLANE)
    mB = support_feature(gkind[b], gsize[b], gR[b], gp[b], cverts[coff[b]:coff[b + 1]], -n, tol, FB,
                         gkind[a] != PLANE)
    if mA == INF_FEATURE:
        _cp3(planeA[0], gp[a])
        planeA[1] = gR[a][:, 2]
    if mB == INF_FEATURE:
        _cp3(planeB[0], gp[b])
        planeB[1] = gR[b][:, 2]
    ws = np.empty((8, MAXF))
    v3 = np.zeros((20, 3))
    m = build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3)
    return emit_patch(a, b, n, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_f, k,
                      out_i.shape[0], v3)


@njit(cache=True, error_model="numpy")
def emit_points_kernel(a, b, gkind, gsize, gR, gp, cverts, coff, n, PA, PB, m, wa, wb, tol,
                       gbody, ng, gfric, grest, gcomp, out_i, out_f, k):
    """Library backends that return a whole patch (coal): each patch point is lifted back
    onto both shapes' support features along n, so every point gets its own distance
    (coal gives all points of a patch the pair's distance); the witness pair (wa, wb) is
    added when it is deeper than every patch point (coal's patch is the hull of the support
    set and may miss an interior deepest vertex); then reduce and emit."""
    FA = np.empty((MAXF, 3))
    FB = np.empty((MAXF, 3))
    ws = np.empty((8, MAXF))
    v3 = np.zeros((20, 3))
    XA0, XAn, XB0, XBn = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    mA = support_feature(gkind[a], gsize[a], gR[a], gp[a], cverts[coff[a]:coff[a + 1]], n, tol, FA,
                         gkind[b] != PLANE)
    mB = support_feature(gkind[b], gsize[b], gR[b], gp[b], cverts[coff[b]:coff[b + 1]], -n, tol, FB,
                         gkind[a] != PLANE)
    okA, okB = True, True
    if mA == INF_FEATURE:
        _cp3(XA0, gp[a])
        XAn[:] = gR[a][:, 2]
    elif mA >= 3:
        _cp3(XA0, FA[0])
        okA = _newell(FA, mA, XAn)
    if mB == INF_FEATURE:
        _cp3(XB0, gp[b])
        XBn[:] = gR[b][:, 2]
    elif mB >= 3:
        _cp3(XB0, FB[0])
        okB = _newell(FB, mB, XBn)
    if m == 1:  # coal found no patch (e.g. capsule–capsule): clip the support features
        planeA = np.zeros((2, 3))
        planeB = np.zeros((2, 3))
        planeA[0], planeA[1], planeB[0], planeB[1] = XA0, XAn, XB0, XBn
        pa_w, pb_w = PA[0].copy(), PB[0].copy()
        m = build_patch(FA, mA, FB, mB, n, planeA, planeB, pa_w, pb_w, PA, PB, ws, v3)
    elif okA and okB and m > 1:
        t1 = np.empty(3)
        t2 = np.empty(3)
        tangent_basis(n, np.array((1.0, 0.0, 0.0)), t1, t2)
        qa = np.empty(3)
        qb = np.empty(3)
        plane = mA == INF_FEATURE or mB == INF_FEATURE
        for i in range(m):
            u = 0.5 * (_dotr(PA, i, t1) + _dotr(PB, i, t1))
            v = 0.5 * (_dotr(PA, i, t2) + _dotr(PB, i, t2))
            if plane:
                # against a plane the shape's support set is unordered (maybe not planar):
                # snap to its vertices only, and project on the plane exactly
                if mA == INF_FEATURE:
                    _snap(FB, mB, u, v, t1, t2, PB[i])
                    _lift(FA, mA, XA0, XAn, _dotr(PB, i, t1), _dotr(PB, i, t2), t1, t2, n, PA[i])
                else:
                    _snap(FA, mA, u, v, t1, t2, PA[i])
                    _lift(FB, mB, XB0, XBn, _dotr(PA, i, t1), _dotr(PA, i, t2), t1, t2, n, PB[i])
            elif (_lift(FA, mA, XA0, XAn, u, v, t1, t2, n, qa)
                    and _lift(FB, mB, XB0, XBn, u, v, t1, t2, n, qb)):
                _cp3(PA[i], qa)
                _cp3(PB[i], qb)
        dmin = np.inf
        for i in range(m):
            dmin = min(dmin, _dotr(PB, i, n) - _dotr(PA, i, n))
        if _dot(wb, n) - _dot(wa, n) < dmin - 1e-9:
            # replace a patch point within the patch tolerance of the witness, else append
            j, best = -1, np.inf
            for i in range(m):
                e = 0.5 * (PA[i] + PB[i] - wa - wb)
                dd = _dot(e, e) - _dot(e, n) ** 2
                if dd < best:
                    best, j = dd, i
            if best > max(tol, 1e-9) ** 2 and m < PA.shape[0]:
                j = m
                m += 1
            _cp3(PA[j], wa)
            _cp3(PB[j], wb)
    return emit_patch(a, b, n, PA, PB, m, gbody, gR, ng, gfric, grest, gcomp, out_i, out_f, k,
                      out_i.shape[0], v3)


@njit(**_JIT)
def patch_from_normal_batch(npairs, bpair, bn, bwa, bwb, gkind, gsize, gR, gp, cverts, coff, tol,
                            gbody, gfric, grest, gcomp, out_i, out_f, k):
    """`patch_from_normal_kernel` over a batch of library results (fcl): pairs bpair (P, 2),
    normals bn (P, 3), witness points bwa, bwb (P, 3). Returns the new contact count."""
    ng = gbody.shape[0]
    for i in range(npairs):
        k = patch_from_normal_kernel(bpair[i, 0], bpair[i, 1], gkind, gsize, gR, gp, cverts, coff, bn[i],
                                     bwa[i], bwb[i], tol, gbody, ng, gfric, grest, gcomp, out_i, out_f, k)
    return k


@njit(**_JIT)
def emit_points_batch(npairs, bpair, bn, bPA, bPB, bcnt, bwa, bwb, gkind, gsize, gR, gp, cverts, coff,
                      tol, gbody, gfric, grest, gcomp, out_i, out_f, k):
    """`emit_points_kernel` over a batch of library patches (coal): bPA, bPB (P, MAXF, 3) with
    bcnt (P,) points each. Returns the new contact count."""
    ng = gbody.shape[0]
    for i in range(npairs):
        k = emit_points_kernel(bpair[i, 0], bpair[i, 1], gkind, gsize, gR, gp, cverts, coff, bn[i],
                               bPA[i], bPB[i], bcnt[i], bwa[i], bwb[i], tol, gbody, ng, gfric, grest,
                               gcomp, out_i, out_f, k)
    return k

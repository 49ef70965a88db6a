"""Contact patches: the support features of the two shapes along the normal, clipped against
each other in the tangent plane, lifted back onto both surfaces, reduced to at most 4 points
and written as contacts into the flat output buffers (`emit_patch`).

Conventions: a pair is (a, b) with geometry indices a < b; ``n`` is the unit normal pointing
from shape a to shape b, ``pa``/``pb`` are witness points on the surfaces of a and b, and the
signed distance of a point pair is ``(pb - pa) · n`` (negative = penetration). Shape b's body
is reported as body 1 and a's as body 2, so ``n`` points from body 2 into body 1 as DESIGN.md
requires.
"""
import numpy as np
from numba import njit

import models.jitcache

from . import hulls, support, workspace
from .jitopts import _NONRT, _NONRT_INLINE
from .kinds import CONVEX, PLANE
from .support import INF_FEATURE, support_feature
from .workspace import (_VEX0, _VN, _VNEGN, _VPAW, _VPBW, _VPLA0, _VPLA1, _VPLB0, _VPLB1, _VREF, _VT1, _VT2,
                        _VXA0, _VXAN, _VXB0, _VXBN, _cprr, _dotrr, _tangent_basis_v)

# kernels here compile in those of these modules: drop the cache when they change
models.jitcache.drop_stale_cache(__file__, [hulls.__file__, support.__file__, workspace.__file__])

# `reduce_patch`: a point within PATCH_TOUCH patch tolerances of the deepest separation touches;
# a touching point is kept over the best one when it gives PATCH_PREFER of its distance or area
PATCH_TOUCH = 0.1
PATCH_PREFER = 0.5


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


@njit(**_NONRT_INLINE)
def _ccw_area2(ws, ru, rv, m):
    """Twice the area of the polygon of m points (ws[ru, i], ws[rv, i]) (m ≥ 3), its points
    reversed in place first if they run clockwise (so the area returned is ≥ 0)."""
    s = 0.0
    for i in range(m):
        j = (i + 1) % m
        s += ws[ru, i] * ws[rv, j] - ws[ru, j] * ws[rv, i]
    if s < 0:
        for i in range(m // 2):
            ws[ru, i], ws[ru, m - 1 - i] = ws[ru, m - 1 - i], ws[ru, i]
            ws[rv, i], ws[rv, m - 1 - i] = ws[rv, m - 1 - i], ws[rv, i]
    return abs(s)


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
    ws (NWS, MAXF): scratch.

    A feature against a plane needs no plane of its own (its points are kept as they are):
    its Newell normal is not computed there, where a convex hull's unordered support set (a
    face's corners in index order, e.g. a bow tie) may have none and would drop the patch."""
    V[_VEX0, 0], V[_VEX0, 1], V[_VEX0, 2] = 1.0, 0.0, 0.0
    _tangent_basis_v(V, _VN, _VEX0, _VT1, _VT2)
    m = 0
    okA, okB = True, True
    if mA == INF_FEATURE:
        _cprr(V, _VXA0, V, _VPLA0)
        _cprr(V, _VXAN, V, _VPLA1)
    elif mA >= 3 and mB != INF_FEATURE:   # (against a plane no lift onto the feature: no plane of it)
        _cprr(V, _VXA0, FA, 0)
        okA = _newell(FA, mA, V, _VXAN)
    if mB == INF_FEATURE:
        _cprr(V, _VXB0, V, _VPLB0)
        _cprr(V, _VXBN, V, _VPLB1)
    elif mB >= 3 and mA != INF_FEATURE:
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
            # counter-clockwise (reversed if not), with their areas (twice)
            areaA = _ccw_area2(ws, 2, 3, mA) if mA >= 3 else 0.0
            areaB = _ccw_area2(ws, 4, 5, mB) if mB >= 3 else 0.0
            if mA >= 3 and mB >= 3:
                if areaA > 1e-16 and areaB > 1e-16:
                    m = _clip_polygon(ws, 4, 5, mB, 2, 3, mA, 0, 1, 6, 7)
            elif mA >= 3:
                if areaA > 1e-16:
                    m = _clip_segment(ws[4, 0], ws[5, 0], ws[4, 1], ws[5, 1], ws, 2, 3, mA, 0, 1)
            elif mB >= 3:
                if areaB > 1e-16:
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
        # convex hull within the tolerance need not be planar); the plane's points lifted
        pa = mA == INF_FEATURE
        F, P, Q = (FB, PB, PA) if pa else (FA, PA, PB)
        iX0, iXn = (_VXA0, _VXAN) if pa else (_VXB0, _VXBN)
        for i in range(m):
            _cprr(P, i, F, i)
            _lift(F, INF_FEATURE, V, iX0, iXn, ws[0, i], ws[1, i], Q, i)
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


@njit(**_NONRT)
def reduce_patch(PA, PB, m, V, tol, keep, ws):
    """Indices (into keep) of at most 4 points of the patch: the deepest, the farthest from
    it, the one maximizing the triangle area, then the one adding the most area; at each
    choice a touching point (separation within PATCH_TOUCH · tol of the deepest's, tol the
    patch tolerance) is taken over the best point when it gives at least PATCH_PREFER of the
    best's distance or area. A link resting on two vertices of its hull, with the rest of its
    1 mm band slightly above the floor, then keeps both (G1's wrist lying: the far vertex lost
    to a band point 1 cm away and 0.7 mm up, the load jumped between the two every step).

    Areas are those of the patch midpoints X_i = (PA_i + PB_i) / 2, computed once into rows
    2-4 of the scratch ws (NWS, MAXF), seen along n = V[_VN]: twice the signed area of
    (X_a, X_b, X_c) is ((X_b − X_a) × (X_c − X_a)) · n, each triangle's first edge
    X_b − X_a computed once (`_tri2` evaluates the rest); the separations go to row 5."""
    if m <= 4:
        for i in range(m):
            keep[i] = i
        return m
    n0, n1, n2 = V[_VN, 0], V[_VN, 1], V[_VN, 2]
    i0, d0 = 0, np.inf
    for i in range(m):
        di = _dotrr(PB, i, V, _VN) - _dotrr(PA, i, V, _VN)
        ws[5, i] = di
        if di < d0 - 1e-12:
            i0, d0 = i, di
        ws[2, i] = 0.5 * (PA[i, 0] + PB[i, 0])
        ws[3, i] = 0.5 * (PA[i, 1] + PB[i, 1])
        ws[4, i] = 0.5 * (PA[i, 2] + PB[i, 2])
    touch = d0 + PATCH_TOUCH * tol
    x0, y0, z0 = ws[2, i0], ws[3, i0], ws[4, i0]
    i1, best, j1, bt = -1, -1.0, -1, -1.0
    for i in range(m):
        ex, ey, ez = ws[2, i] - x0, ws[3, i] - y0, ws[4, i] - z0
        s = ex * ex + ey * ey + ez * ez
        if s > best + 1e-18:
            best, i1 = s, i
        if i != i0 and ws[5, i] <= touch and s > bt + 1e-18:
            bt, j1 = s, i
    if j1 >= 0 and bt >= PATCH_PREFER ** 2 * best:    # (squared distances)
        i1 = j1
    ux, uy, uz = ws[2, i1] - x0, ws[3, i1] - y0, ws[4, i1] - z0
    i2, best, j2, bt = -1, -1.0, -1, -1.0
    for i in range(m):
        s = abs(_tri2(ux, uy, uz, ws[2, i] - x0, ws[3, i] - y0, ws[4, i] - z0, n0, n1, n2))
        if s > best + 1e-18:
            best, i2 = s, i
        if ws[5, i] <= touch and s > bt + 1e-18:
            bt, j2 = s, i
    if best <= 1e-18:
        keep[0], keep[1] = i0, i1
        return 2
    if j2 >= 0 and bt >= PATCH_PREFER * best:
        i2 = j2
    orient = 1.0 if _tri2(ux, uy, uz, ws[2, i2] - x0, ws[3, i2] - y0, ws[4, i2] - z0, n0, n1, n2) > 0 else -1.0
    # the triangle's edges a → b: (i0, i1) is u; (i1, i2) and (i2, i0)
    x1, y1, z1 = ws[2, i1], ws[3, i1], ws[4, i1]
    x2, y2, z2 = ws[2, i2], ws[3, i2], ws[4, i2]
    ax, ay, az = x2 - x1, y2 - y1, z2 - z1
    bx, by, bz = x0 - x2, y0 - y2, z0 - z2
    i3, best, j3, bt = -1, 1e-18, -1, 1e-18
    for i in range(m):
        if i == i0 or i == i1 or i == i2:
            continue
        px, py, pz = ws[2, i], ws[3, i], ws[4, i]
        # > 0: outside the edge
        s = max(-orient * _tri2(ux, uy, uz, px - x0, py - y0, pz - z0, n0, n1, n2),
                -orient * _tri2(ax, ay, az, px - x1, py - y1, pz - z1, n0, n1, n2),
                -orient * _tri2(bx, by, bz, px - x2, py - y2, pz - z2, n0, n1, n2))
        if s > best + 1e-18:
            best, i3 = s, i
        if ws[5, i] <= touch and s > bt + 1e-18:
            bt, j3 = s, i
    if j3 >= 0 and bt >= PATCH_PREFER * best:
        i3 = j3
    keep[0], keep[1], keep[2] = i0, i1, i2
    if i3 < 0:
        return 3
    keep[3] = i3
    return 4


@njit(**_NONRT)
def _tri2(ux, uy, uz, vx, vy, vz, n0, n1, n2):
    """(u × v) · n."""
    return (uy * vz - uz * vy) * n0 + (uz * vx - ux * vz) * n1 + (ux * vy - uy * vx) * n2


@njit(**_NONRT)
def _angle(u, v):
    """Angle of (u, v) in [0, 2π) (arctan2 shifted; −0.0 counts as 0)."""
    th = np.arctan2(v, u)
    if th < 0:
        th += 2.0 * np.pi
    return th


@njit(**_NONRT)
def _angle_before(ws, a, b):
    """True if point a of a patch comes before point b in `emit_patch`'s slot order: its
    `_angle` (u, v in rows 7, 8 of ws) is smaller, or equal and a < b.

    The angles themselves (two arctan2) only for nearly parallel or opposite points (sine of
    the angle between them below 1e-9, or a point at the centroid): otherwise the order is
    that of the half planes [0, π] / (π, 2π) and the sign of the cross product, which the
    rounding of the angles (~1e-15 rad) cannot reverse, so the slots are the same."""
    ua, va, ub, vb = ws[7, a], ws[8, a], ws[7, b], ws[8, b]
    c = ua * vb - va * ub
    if abs(c) > 1e-9 * ((abs(ua) + abs(va)) * (abs(ub) + abs(vb))):
        la, lb = va < 0, vb < 0        # in the lower half plane, angle in (π, 2π)
        if la != lb:
            return lb
        return c > 0
    ta, tb = _angle(ua, va), _angle(ub, vb)
    return ta < tb or (ta == tb and a < b)


@njit(**_NONRT_INLINE)
def emit_patch(a, b, V, PA, PB, m, tol, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k, cap,
               keep, ws):
    """Reduce the patch (normal n = V[_VN]; tol the patch tolerance, m) to ≤ 4 points and write
    them as contacts from index k.

    out_i (5, cap) int64: rows body1, body2, geom1, geom2, key; out_p (cap, 3): position;
    out_R (cap, 3, 3): frame; out_s (4, cap): rows distance, friction, restitution,
    compliance (so that the first k entries of each row or block are contiguous).
    Friction = sqrt(μa μb), restitution = max(ea, eb), compliance = ca + cb.
    keep (4,) int64, ws (NWS, MAXF): scratch.
    Returns the new k (counts past cap so the caller can grow the buffers)."""
    r = reduce_patch(PA, PB, m, V, tol, keep, ws)
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
    for j in range(r):   # each point about the centroid (u, v) in rows 7, 8 of ws
        i = keep[j]
        ws[7, j] = 0.5 * (_dotrr(PA, i, V, _VT1) + _dotrr(PB, i, V, _VT1)) - cu
        ws[8, j] = 0.5 * (_dotrr(PA, i, V, _VT2) + _dotrr(PB, i, V, _VT2)) - cv
    mu = np.sqrt(gfric[a] * gfric[b])
    e = max(grest[a], grest[b])
    cmp = gcomp[a] + gcomp[b]
    pair = (np.int64(a) * ng + b) * 4
    for j in range(r):
        i = keep[j]
        slot = 0
        for jj in range(r):
            if jj != j and _angle_before(ws, jj, j):
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


@njit(**_NONRT)
def patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, i_n, bwa, i_a, bwb, i_b, tol, V, PA, PB,
                       FA, FB, ws, exact):
    """Contact patch of geometries a, b from a normal n = bn[i_n] (a → b) and one witness pair
    (bwa[i_a], bwb[i_b]): the support features along ±n clipped against each other
    (`build_patch`). exact: the normal is accurate (our GJK/EPA; not python-fcl's libccd, off by
    up to 0.4 rad on curved pairs), so a one-point feature's witnesses are taken at the exact
    separation along n. Returns the count of point pairs (PA, PB)."""
    for q in range(3):
        V[_VN, q] = bn[i_n, q]
        V[_VNEGN, q] = -bn[i_n, q]
        V[_VPLA0, q] = 0.0
        V[_VPLA1, q] = 0.0
        V[_VPLB0, q] = 0.0
        V[_VPLB1, q] = 0.0
        V[_VPAW, q] = bwa[i_a, q]
        V[_VPBW, q] = bwb[i_b, q]
    mA = support_feature(gkind[a], a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, gkind[b] != PLANE, True)
    mB = support_feature(gkind[b], b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, gkind[a] != PLANE, True)
    if mA == INF_FEATURE:
        for q in range(3):
            V[_VPLA0, q] = gp[a, q]
            V[_VPLA1, q] = gR[a, q, 2]
    if mB == INF_FEATURE:
        for q in range(3):
            V[_VPLB0, q] = gp[b, q]
            V[_VPLB1, q] = gR[b, q, 2]
    # a one-point support feature (a vertex, a curved surface's point) is exact where the
    # witnesses of an iterative method (GJK's simplex, EPA's face) lie on a chord inside a
    # curved shape: witnesses from the support features, at their exact separation along n.
    # A convex hull's one point is GJK's own witness on it: its extreme vertex, or for a cap
    # collapsed to that vertex (`hulls.hull_patch_collapses`) the point of the cap that
    # touches, which may be inside a facet or on an edge away from that vertex
    if exact and mA >= 1 and mB >= 1 and (mA == 1 or mB == 1):
        if mA == 1 and gkind[a] == CONVEX:
            _cprr(FA, 0, V, _VPAW)
        if mB == 1 and gkind[b] == CONVEX:
            _cprr(FB, 0, V, _VPBW)
        _exact_witnesses(FA, mA, FB, mB, V)
    m = build_patch(FA, mA, FB, mB, V, PA, PB, ws)
    if exact:
        m = keep_witness(PA, PB, m, V, tol, True)
    return m


@njit(**_NONRT)
def keep_witness(PA, PB, m, V, tol, exact):
    """The witness pair (V[_VPAW], V[_VPBW]) in the patch (m point pairs PA, PB; normal
    n = V[_VN]) when it is deeper than every patch point: it replaces the patch point within
    the patch tolerance of it, else it is appended (a patch's points are lifted onto planes
    fitted to support features within the tolerance, and may miss the deepest point by up to
    it). exact: the witness separation is the exact distance along n (GJK/EPA), which no pair
    of surface points undercuts, so shallower is also clamped up to it. Returns the new m."""
    dw = _dotrr(V, _VPBW, V, _VN) - _dotrr(V, _VPAW, V, _VN)
    dmin = np.inf
    for j in range(m):
        dj = _dotrr(PB, j, V, _VN) - _dotrr(PA, j, V, _VN)
        if exact and dj < dw:
            for q in range(3):
                PB[j, q] += (dw - dj) * V[_VN, q]
            dj = dw
        dmin = min(dmin, dj)
    if dw < dmin - 1e-9:
        jb, best = -1, np.inf
        for j in range(m):
            e0 = 0.5 * (PA[j, 0] + PB[j, 0] - V[_VPAW, 0] - V[_VPBW, 0])
            e1 = 0.5 * (PA[j, 1] + PB[j, 1] - V[_VPAW, 1] - V[_VPBW, 1])
            e2 = 0.5 * (PA[j, 2] + PB[j, 2] - V[_VPAW, 2] - V[_VPBW, 2])
            en = e0 * V[_VN, 0] + e1 * V[_VN, 1] + e2 * V[_VN, 2]
            dd = (e0 * e0 + e1 * e1 + e2 * e2) - en ** 2
            if dd < best:
                best, jb = dd, j
        if best > max(tol, 1e-9) ** 2 and m < PA.shape[0]:
            jb = m
            m += 1
        _cprr(PA, jb, V, _VPAW)
        _cprr(PB, jb, V, _VPBW)
    return m


@njit(**_NONRT)
def _exact_witnesses(FA, mA, FB, mB, V):
    """Witnesses V[_VPAW], V[_VPBW] from the support features FA (along n = V[_VN]) and FB
    (along -n), one of which is a single point: that point, and the other witness at the
    exact separation s = min FB·n - max FA·n from it along n (the other feature's support
    plane)."""
    ha = -np.inf
    for i in range(mA):
        ha = max(ha, _dotrr(FA, i, V, _VN))
    hb = np.inf
    for i in range(mB):
        hb = min(hb, _dotrr(FB, i, V, _VN))
    s = hb - ha
    for q in range(3):
        if mA == 1 and mB == 1:
            V[_VPAW, q] = FA[0, q]
            V[_VPBW, q] = FB[0, q]
        elif mA == 1:
            V[_VPAW, q] = FA[0, q]
            V[_VPBW, q] = FA[0, q] + s * V[_VN, q]
        else:
            V[_VPBW, q] = FB[0, q]
            V[_VPAW, q] = FB[0, q] - s * V[_VN, q]

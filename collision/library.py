"""Results of the library backends (`collision.backends`: coal, python-fcl) into contacts: one
numba call per detection for all the pairs the library solved (a normal and a witness pair,
or coal's whole patch), through the same support features and patch code as the native
pairs."""
from numba import njit

import models.jitcache

from . import hulls, patch, support, workspace
from .jitopts import _JIT
from .patch import _lift, _newell, _snap, build_patch, emit_patch, keep_witness, patch_along_normal
from .kinds import CONVEX, PLANE
from .support import INF_FEATURE, support_feature
from .workspace import (_VEX0, _VN, _VNEGN, _VPAW, _VPBW, _VPLA0, _VPLA1, _VPLB0, _VPLB1, _VQA, _VQB,
                        _VT1, _VT2, _VXA0, _VXAN, _VXB0, _VXBN, _cprr, _dotrr, _tangent_basis_v, patch_workspace)

# kernels here compile in those of these modules: drop the cache when they change
models.jitcache.drop_stale_cache(__file__, [hulls.__file__, patch.__file__, support.__file__, workspace.__file__])


@njit(cache=True, error_model="numpy")
def patch_from_normal_kernel(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, bwa, bwb, i, tol,
                             gbody, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k, V, PA, PB, FA, FB, ws,
                             keep):
    """Library backends that return a normal and one witness pair (fcl): build the patch
    from the support features along n = bn[i] (witnesses bwa[i], bwb[i]) and emit it.
    Returns the new contact count."""
    m = patch_along_normal(a, b, gkind, gsize, gR, gp, cverts, coff, hg, bn, i, bwa, i, bwb, i, tol, V, PA, PB,
                           FA, FB, ws, False)
    return emit_patch(a, b, V, PA, PB, m, tol, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
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
    mA = support_feature(gkind[a], a, gsize, gR, gp, cverts, coff, hg, V, _VN, tol, FA, gkind[b] != PLANE, True)
    mB = support_feature(gkind[b], b, gsize, gR, gp, cverts, coff, hg, V, _VNEGN, tol, FB, gkind[a] != PLANE, True)
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
    elif (mA == 1 and gkind[a] == CONVEX) or (mB == 1 and gkind[b] == CONVEX):
        # a hull's one point (a vertex, or a curved cap collapsed, `hulls.hull_patch_collapses`):
        # a point contact, at the witness pair (coal's patch spans the cap's band)
        _cprr(PA, 0, bwa, i)
        _cprr(PB, 0, bwb, i)
        m = 1
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
        _cprr(V, _VPAW, bwa, i)
        _cprr(V, _VPBW, bwb, i)
        m = keep_witness(PA, PB, m, V, tol, False)
    return emit_patch(a, b, V, PA, PB, m, tol, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k,
                      out_i.shape[1], keep, ws)


@njit(**_JIT)
def patch_from_normal_batch(npairs, bpair, bn, bwa, bwb, gkind, gsize, gR, gp, cverts, coff, hg, tol,
                            gbody, gfric, grest, gcomp, out_i, out_p, out_R, out_s, k):
    """`patch_from_normal_kernel` over a batch of library results (fcl): pairs bpair (P, 2),
    normals bn (P, 3), witness points bwa, bwb (P, 3). Returns the new contact count."""
    ng = gbody.shape[0]
    PA, PB, FA, FB, ws, V, keep = patch_workspace()
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
    _, _, FA, FB, ws, V, keep = patch_workspace()
    for i in range(npairs):
        k = emit_points_kernel(bpair[i, 0], bpair[i, 1], gkind, gsize, gR, gp, cverts, coff, hg, bn,
                               bPA[i], bPB[i], bcnt[i], bwa, bwb, i, tol, gbody, ng, gfric, grest,
                               gcomp, out_i, out_p, out_R, out_s, k, V, FA, FB, ws, keep)
    return k

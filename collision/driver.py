"""The detection driver: one numba call per detection runs the stages in order.

(body placements from the caller: the step's kinematics, or `detector` runs FK) → geometry
placements and AABBs (`broadphase`) → candidate
pairs (`broadphase`) → per pair: proofs of separation (`midphase`), then the kernel of its
pair type (`narrow`), and the patch into the output buffers (`patch.emit_patch`). Pairs of a
type left to the library backend are listed for `collision.backends`. `detect_nobox_kernel`
is the same without the box-box and sphere-box kernels, for shapes without boxes.

Performance: numba's runtime (NRT) increments and decrements an atomic reference count for
every array view made in a kernel and every array argument of a call between kernels, and
a call passes each array as 7 to 11 machine words; both cost more than the geometry. So
the per-pair loop and every kernel it calls run without the runtime (`collision.jitopts`),
never slice, and the scratch is allocated once per detector (`state.DetectState`, the one
argument besides the body placements).
"""

from numba import njit

from models.jitcache import drop_stale_cache, kernel_variant

from . import broadphase, gjk, hulls, midphase, narrow, patch, state, support, workspace
from .broadphase import aabb_kernel, broadphase_kernel, placements_kernel
from .jitopts import _NONRT
from .midphase import _cache_axis, separated_along_cached, separated_along_centres
from .narrow import PAIR_GJK, PAIR_LIBRARY, PAIR_NONE, narrow_pair, narrow_pair_nobox
from .patch import emit_patch

# `detect_kernel` compiles in the stages' kernels
drop_stale_cache(__file__, [broadphase.__file__, gjk.__file__, hulls.__file__,
                            midphase.__file__, narrow.__file__, patch.__file__, support.__file__,
                            state.__file__, workspace.__file__])


@njit(**_NONRT)
def narrow_phase(npairs, pairs, lib_pairs, gbody, gkind, gsize, gR, gp, lc, cverts, coff, hg, table, pc, margin,
                 tol, gfric, grest, gcomp, out_i, out_p, out_R, out_s, pw, gw, G):
    """Every candidate pair: culled by a proof of separation (pairs solved by support
    heights: GJK and library types), solved by its type's kernel (`narrow.narrow_pair`) and
    emitted, or listed in lib_pairs for the library. Returns (library pairs, contacts)."""
    ng = gbody.shape[0]
    cap = out_i.shape[1]
    nlib = 0
    k = 0
    for pi in range(npairs):
        a, b = pairs[pi, 0], pairs[pi, 1]
        code = table[gkind[a], gkind[b]]
        if code == PAIR_NONE:
            continue
        s = -1
        if code == PAIR_GJK or code == PAIR_LIBRARY:
            # culled when the last separating axis (or GJK's last normal) separates, or else
            # the centres' axis, unless GJK ran on the pair the last time it got this far
            # (a kept simplex: the pair is near, and GJK starts from that simplex)
            s = pc.slot[a, b]
            if s >= 0 and separated_along_cached(a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, pc, s):
                continue
            if s < 0 or pc.nsimplex[s] == 0:
                sep, d0, d1, d2 = separated_along_centres(a, b, gkind, gsize, gR, gp, lc, cverts, coff, hg, margin)
                if sep:
                    if s >= 0:
                        _cache_axis(pc, s, d0, d1, d2)
                    continue
            if code == PAIR_LIBRARY:
                lib_pairs[nlib] = pi
                nlib += 1
                continue
        m = narrow_pair(code, a, b, gkind, gsize, gR, gp, cverts, coff, hg, margin, tol, pw.V, pw.PA, pw.PB, pw.FA,
                        pw.FB, pw.ws, gw, G, pc, s)
        if m == -2:
            lib_pairs[nlib] = pi
            nlib += 1
        elif m > 0:
            k = emit_patch(a, b, pw.V, pw.PA, pw.PB, m, tol, gbody, gR, ng, gfric, grest, gcomp, out_i, out_p, out_R,
                           out_s, k, cap, pw.keep, pw.ws)
    return nlib, k


@njit(**_NONRT)
def detect_kernel(st, oR, op):
    """Geometry placements of st (a `state.DetectState`) from the body placements oR (n, 3, 3),
    op (n, 3), AABBs, broad phase and the narrow phase, into st's output buffers.

    Returns (number of candidate pairs, number of library pairs, number of contacts written);
    counts beyond the buffers mean "grow and call again"."""
    kind, gR, gp, lo, hi, pairs, margin = st.kind, st.gR, st.gp, st.lo, st.hi, st.pairs, st.margin
    placements_kernel(st.body, st.Rl, st.pl, oR, op, gR, gp)
    aabb_kernel(kind, gR, gp, st.lc, st.le, margin, lo, hi)
    npairs = broadphase_kernel(kind, gR, gp, lo, hi, st.allow, margin, st.planes, st.others, st.order, pairs)
    if npairs > pairs.shape[0]:
        return npairs, 0, 0
    nlib, k = narrow_phase(npairs, pairs, st.lib, st.body, kind, st.size, gR, gp, st.lc, st.cverts, st.coff,
                           st.hull, st.table, st.pc, margin, st.tol, st.friction, st.restitution, st.compliance,
                           st.out_i, st.out_p, st.out_R, st.out_s, st.pw, st.gw, st.G)
    return npairs, nlib, k


# detectors without boxes (robots on the ground): the narrow phase without the box-box and
# sphere-box kernels (a fifth less compile)
narrow_phase_nobox = kernel_variant(narrow_phase, "narrow_phase_nobox", _NONRT, narrow_pair=narrow_pair_nobox)
detect_nobox_kernel = kernel_variant(detect_kernel, "detect_nobox_kernel", _NONRT, narrow_phase=narrow_phase_nobox)

"""Scratch of the narrow phase and the patch code, and the row helpers that read it.

The per-pair kernels never slice (see `collision.jitopts`): 3-vectors are rows of one
workspace ``V`` (NV3, 3) named by the ``_V*`` constants, feature points are rows of (MAXF, 3)
arrays, scalars rows of ``ws`` (NWS, MAXF); all allocated once per detection by
`patch_workspace`.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .jitopts import _JIT, _NONRT, _NONRT_INLINE

MAXF = 64           # max points of one support feature / clipped polygon
NWS = 9             # rows of the scalar workspace ws (NWS, MAXF); rows 7, 8: points about the centroid in emit_patch

# rows of the 3-vector workspace V (NV3, 3) shared by the narrow phase and the patch code
(_VT1, _VT2, _VXA0, _VXAN, _VXB0, _VXBN, _VEX0, _VN, _VPLA0, _VPLA1, _VPLB0, _VPLB1,
 _VPAW, _VPBW, _VNEGN, _VC1, _VC2, _VREF, _VQA, _VQB) = range(20)
NV3 = 20

PatchWork = namedtuple("PatchWork", "PA PB FA FB ws V keep")
PatchWork.__doc__ = """Scratch of one detection (`patch_workspace`): patch point pairs PA, PB and
support features FA, FB (MAXF, 3), scalar rows ws (NWS, MAXF), 3-vectors V (NV3, 3), the kept
patch points keep (4,) int64."""


@njit(**_JIT)
def patch_workspace():
    """A `PatchWork`."""
    return PatchWork(np.zeros((MAXF, 3)), np.zeros((MAXF, 3)), np.zeros((MAXF, 3)), np.zeros((MAXF, 3)),
                     np.zeros((NWS, MAXF)), np.zeros((NV3, 3)), np.zeros(4, dtype=np.int64))


@njit(**_NONRT)
def _dotrr(A, i, B, j):
    """A[i] · B[j] without views."""
    return A[i, 0] * B[j, 0] + A[i, 1] * B[j, 1] + A[i, 2] * B[j, 2]


@njit(**_NONRT)
def _cprr(A, i, B, j):
    """A[i] = B[j] without views."""
    A[i, 0] = B[j, 0]
    A[i, 1] = B[j, 1]
    A[i, 2] = B[j, 2]


@njit(**_NONRT_INLINE)
def _tangents(n0, n1, n2, r0, r1, r2):
    """Contact tangents of the unit normal n from a reference r: t1 = r projected on the plane
    ⟂ n (or, when r is nearly parallel to n, the world axis least aligned with n), t2 = n × t1;
    as 6 scalars."""
    d = r0 * n0 + r1 * n1 + r2 * n2
    a0, a1, a2 = r0 - d * n0, r1 - d * n1, r2 - d * n2
    nrm = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if nrm < 0.3:
        ax = 0
        if abs(n1) < abs(n0):
            ax = 1
        if abs(n2) < abs(n0 if ax == 0 else n1):
            ax = 2
        na = n0 if ax == 0 else (n1 if ax == 1 else n2)
        a0, a1, a2 = -na * n0, -na * n1, -na * n2
        if ax == 0:
            a0 += 1.0
        elif ax == 1:
            a1 += 1.0
        else:
            a2 += 1.0
        nrm = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    a0, a1, a2 = a0 / nrm, a1 / nrm, a2 / nrm
    return a0, a1, a2, n1 * a2 - n2 * a1, n2 * a0 - n0 * a2, n0 * a1 - n1 * a0


@njit(**_NONRT)
def _tangent_basis_v(V, i_n, i_ref, i_t1, i_t2):
    """`_tangents` on rows of V: n = V[i_n], ref = V[i_ref] into t1 = V[i_t1], t2 = V[i_t2]
    (the four rows must be distinct)."""
    V[i_t1, 0], V[i_t1, 1], V[i_t1, 2], V[i_t2, 0], V[i_t2, 1], V[i_t2, 2] = _tangents(
        V[i_n, 0], V[i_n, 1], V[i_n, 2], V[i_ref, 0], V[i_ref, 1], V[i_ref, 2])

"""`DetectState`: everything `driver.detect_kernel` reads and writes, as one named compiled object.

A structref (numba's mutable struct with named fields): a call unboxes one pointer (about
0.5 µs), where the 32 arrays, scalars and named tuples it replaces cost about 4.5 µs per
call (measured on the 10-box pyramid). The state references the detector's arrays, it never
copies them: the Python side (`detector.CollisionDetector`, the library backends) keeps
reading and writing the same buffers. A buffer that grows gets a new state (`make_state`).

Fields (ng geometries, P candidate-pair capacity, K contact capacity):
  shape table   body (ng,) int64, kind (ng,) int64, size (ng, 4), Rl (ng, 3, 3), pl (ng, 3),
                lc, le (ng, 3) (local AABB centre and half extents), cverts (NV, 3), coff
                (ng+1,) int64, hull (`hulls.HullGraph`), friction, restitution, compliance (ng,)
                (see `shapes.ShapeTable`)
  filter        allow (ng, ng) uint8, planes, others (int64 geometry indices), table (6, 6)
                uint8 (`narrow.pair_table`), margin (m), tol (m, patch tolerance)
  memory        pc (`midphase.PairCache`, kept across calls)
  scratch       gR (ng, 3, 3), gp (ng, 3) geometry placements; lo, hi (ng, 3) AABBs; order
                (len(others),) int64 (their sweep order, `broadphase.sort_by_lower_x`); pairs
                (P, 2) int64; lib (P,) int64 (library pairs); pw (`workspace.PatchWork`); gw
                (`gjk.GjkWork`); G (3, 3)
  output        out_i (5, K) int64, out_p (K, 3), out_R (K, 3, 3), out_s (4, K) (layout in
                `patch.emit_patch`)
"""
import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

from .gjk import gjk_work
from .workspace import patch_workspace

FIELDS = ("body", "kind", "size", "Rl", "pl", "lc", "le", "cverts", "coff", "hull", "friction", "restitution",
          "compliance", "allow", "planes", "others", "table", "margin", "tol", "pc", "gR", "gp", "lo", "hi",
          "order", "pairs", "lib", "pw", "gw", "G", "out_i", "out_p", "out_R", "out_s")


@structref.register
class DetectStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class DetectState(structref.StructRefProxy):
    """The detector's arrays by name (module docstring); built by `make_state`."""


structref.define_proxy(DetectState, DetectStateType, list(FIELDS))


@njit(cache=True)
def _new_state(body, kind, size, Rl, pl, lc, le, cverts, coff, hull, friction, restitution, compliance, allow,
               planes, others, table, margin, tol, pc, gR, gp, lo, hi, order, pairs, lib, out_i, out_p, out_R, out_s):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached); the
    narrow phase's scratch is allocated here, once per state."""
    return DetectState(body, kind, size, Rl, pl, lc, le, cverts, coff, hull, friction, restitution, compliance,
                       allow, planes, others, table, margin, tol, pc, gR, gp, lo, hi, order, pairs, lib, patch_workspace(),
                       gjk_work(), np.zeros((3, 3)), out_i, out_p, out_R, out_s)


def make_state(S, allow, planes, others, table, margin, tol, pc, gR, gp, lo, hi, order, pairs, lib, out):
    """A `DetectState` over a `shapes.ShapeTable` S and the detector's arrays (out: the 4
    output buffers)."""
    return _new_state(S.body, S.kind, S.size, S.Rl, S.pl, S.lc, S.le, S.cverts, S.coff, S.hull, S.friction,
                      S.restitution, S.compliance, allow, planes, others, table, float(margin), float(tol), pc,
                      gR, gp, lo, hi, order, pairs, lib, *out)

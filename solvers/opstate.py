"""One boxed handle on a Delassus operator's compiled state, for cheap calls into the solvers.

`admm_kernel` needs an operator's arrays: the matrix-free side's (geo, fac, ws) tuples (about
55 arrays, nested) or the explicit side's dn = (G, C, d, t). Passed as tuples, numba unboxes
every array at each call: about 250 ns an array, 18 µs a call on the 10-box pyramid, where the
whole warm-started solve computes in 6 µs. An `OperatorState` (a numba structref) holds the same
tuples and crosses the boundary as one pointer (about 1 µs). It references the arrays, it does
not copy them: the operator keeps updating them in place (rows, factors, workspaces, and the
Data it reads), so one state serves as long as the tuples hold the same array objects.

`operator_state(parts, cache)` returns the state of parts = (dense, geo, fac, ws, dn), reusing
one from `cache` (a list owned by the operator) when every array in parts is the same object.
"""
from __future__ import annotations

from numba import njit
from numba.core import types
from numba.experimental import structref


@structref.register
class OperatorStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class OperatorState(structref.StructRefProxy):
    """dense (int: 1 explicit, 0 matrix-free), geo, fac, ws (matrix-free tuples, placeholders on
    the explicit side), dn (explicit (G, C, d, t), placeholders on the matrix-free side)."""

    def __new__(cls, dense, geo, fac, ws, dn):
        return _new_state(dense, geo, fac, ws, dn)


structref.define_proxy(OperatorState, OperatorStateType, ["dense", "geo", "fac", "ws", "dn"])


@njit(cache=True)
def _new_state(dense, geo, fac, ws, dn):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return OperatorState(dense, geo, fac, ws, dn)


def _same(a, b):
    """a and b are the same object, or tuples of the same objects (one level deep: geo is
    rebuilt as a tuple on every call, its arrays are not)."""
    if a is b:
        return True
    return type(a) is tuple and type(b) is tuple and len(a) == len(b) and all(x is y for x, y in zip(a, b))


def operator_state(parts, cache, keep=2):
    """`OperatorState` of parts = (dense, geo, fac, ws, dn): from `cache` (a list of
    (parts, state), most recent last, at most `keep` long; the simulator's two Data buffers
    alternate, hence 2) when all parts are the same objects, else built and cached."""
    for old, state in cache:
        if old[0] == parts[0] and all(_same(a, b) for a, b in zip(old[1:], parts[1:])):
            return state
    state = OperatorState(int(parts[0]), *parts[1:])
    cache.append((parts, state))
    del cache[:-keep]
    return state

"""Scratch arrays on a kernel's stack frame, for kernels compiled without numba's reference counting.

numba gives every array it allocates (np.empty, np.zeros) a reference count, and a kernel that
allocates must be compiled with numba's runtime (NRT). Such a kernel then counts references to
every array it receives or unpacks, each count an atomic increment or decrement through a
function call: on Go2 a steady step made about 600 of them, a sixth of its time. A kernel whose
temporaries are `stack_vector` / `stack_matrix` arrays allocates nothing on the heap and can be
compiled with ``_nrt=False``, which emits no counting at all.

A stack array has no owner (its meminfo is NULL, which numba's counting functions skip) and
lives in the frame of the compiled function that created it, inlined callers included: it must
not be returned or stored in an array or structure that outlives that call. Its entries are
uninitialised. Sizes are compile-time integer constants.

Such a kernel may fill an array with a scalar (``x[:] = 0.0``), but not assign one array to
another by a slice (``a[:] = b`` may copy b through a temporary, which the runtime allocates):
`copy_into` copies by a loop.
"""
from __future__ import annotations

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array


def _stack_array(context, builder, shape):
    """The array struct of a C-contiguous float64 array of the given constant shape whose data
    is an alloca in the function's entry block."""
    aryty = types.Array(types.float64, len(shape), "C")
    dbl = context.get_data_type(types.float64)
    count = 1
    for n in shape:
        count *= n
    data = cgutils.alloca_once(builder, dbl, size=max(count, 1))
    itemsize = context.get_abi_sizeof(dbl)
    strides, stride = [], itemsize
    for n in reversed(shape):
        strides.insert(0, stride)
        stride *= n
    intp = lambda x: context.get_constant(types.intp, x)    # noqa: E731
    ary = context.make_array(aryty)(context, builder)
    populate_array(ary, data=data, shape=[intp(n) for n in shape], strides=[intp(s) for s in strides],
                   itemsize=intp(itemsize), meminfo=None)
    return ary._getvalue()


def _literal_sizes(*sizes):
    """The sizes' values if all are non-negative integer literals, else None (the call does not type)."""
    if not all(isinstance(n, types.IntegerLiteral) and n.literal_value >= 0 for n in sizes):
        return None
    return tuple(n.literal_value for n in sizes)


@intrinsic
def stack_vector(typingctx, n):
    """An uninitialised float64 array (n,) on the caller's stack frame; n a constant."""
    shape = _literal_sizes(n)
    if shape is None:
        return None

    def codegen(context, builder, signature, args):
        return _stack_array(context, builder, shape)
    return types.Array(types.float64, 1, "C")(n), codegen


@intrinsic
def stack_matrix(typingctx, rows, cols):
    """An uninitialised float64 array (rows, cols) on the caller's stack frame; constant sizes."""
    shape = _literal_sizes(rows, cols)
    if shape is None:
        return None

    def codegen(context, builder, signature, args):
        return _stack_array(context, builder, shape)
    return types.Array(types.float64, 2, "C")(rows, cols), codegen


@njit(cache=True, inline="always")
def copy_into(src, dst):
    """dst[:] = src (1-D, the same length) by a loop, in kernels without numba's runtime."""
    for r in range(src.shape[0]):
        dst[r] = src[r]

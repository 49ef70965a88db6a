"""Packed workspaces of the prepared kernels (`solvers.constrained`, `solvers.osim`).

A prepared call crosses the Python/numba boundary with two flat arrays, fw (float64) and iw
(int64), and its per-call arrays: each array argument costs about 0.03 µs in the dispatcher
(its C type check included), where a structref handle cost 0.5 µs and every field read inside it
an atomic reference-count pair, and a namedtuple of arrays costs one unboxing per field. The
kernels make their arrays as views of fw/iw (`view1`, `view2`, `view3`: free, and dropped by the
compiler when unused) and can be compiled without numba's reference counting.

Layout: iw starts with the sizes (one slot per size name), then one offset per field (in the
order of the field list), each into fw or iw as the field's kind ("f" or "i") says.
"""
from collections import namedtuple

import numba
import numpy as np
from numba import njit, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


def slots(size_names, fields):
    """(Sizes, Slots): namedtuples of the header slots of the sizes and of the fields' offsets
    (module constants of the kernels: numba reads them as compile-time integers)."""
    sizes = namedtuple("Sizes", size_names)(*range(len(size_names)))
    offsets = namedtuple("Slots", [f[0] for f in fields])(*range(len(size_names), len(size_names) + len(fields)))
    return sizes, offsets


def pack(size_names, fields, sizes):
    """(fw, iw, views by field name) for sizes (dict of size_names): zeroed arrays of the layout
    (module doc) and a NumPy view of each field. A shape entry is an int or a size name
    ("n1" = n + 1)."""
    dims = dict(sizes, n1=sizes["n"] + 1)
    header = [int(sizes[k]) for k in size_names] + [0] * len(fields)
    ends = {"f": 0, "i": len(header)}
    where = {}
    for k, (name, kind, shape) in enumerate(fields):
        shape = tuple(int(dims[d]) if isinstance(d, str) else d for d in shape)
        header[len(size_names) + k] = ends[kind]
        where[name] = (kind, ends[kind], shape)
        ends[kind] += int(np.prod(shape))
    fw, iw = np.zeros(ends["f"]), np.zeros(ends["i"], np.int64)
    iw[:len(header)] = header
    views = {name: (fw if kind == "f" else iw)[off:off + int(np.prod(shape))].reshape(shape)
             for name, (kind, off, shape) in where.items()}
    return fw, iw, views


def typed_entry(dispatcher, *args):
    """dispatcher compiled (or loaded from its cache) for the types of args, the only types it
    accepts from now on: another type raises TypeError in the dispatcher's C type check, before
    the kernel runs (each prepared kernel has one signature for every model: flat arrays)."""
    sig = tuple(numba.typeof(a) for a in args)
    if sig not in dispatcher.overloads:
        dispatcher.compile(sig)
    dispatcher.disable_compile()
    return dispatcher


@intrinsic
def packed_view(typingctx, base, offset, shape):
    """The C-contiguous array of the given shape (a tuple of integers) that starts at
    base[offset], base a 1-D C-contiguous array: a view (base's memory and owner) made without
    numba's reshape, whose helper call the compiler can neither inline nor drop when unused."""
    if not (isinstance(base, types.Array) and base.ndim == 1 and base.layout == "C"
            and isinstance(offset, types.Integer) and isinstance(shape, types.BaseTuple)):
        return None
    nd = len(shape)
    retty = types.Array(base.dtype, nd, "C")

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(retty)(context, builder)
        intp = types.intp
        dims = [context.cast(builder, builder.extract_value(args[2], k), sig.args[2][k], intp) for k in range(nd)]
        itemsize = context.get_constant(intp, context.get_abi_sizeof(context.get_data_type(retty.dtype)))
        strides, stride = [None] * nd, itemsize
        for k in range(nd - 1, -1, -1):
            strides[k] = stride
            stride = builder.mul(stride, dims[k])
        data = builder.gep(src.data, [context.cast(builder, args[1], sig.args[1], intp)])
        populate_array(out, data=data, shape=dims, strides=strides, itemsize=itemsize, meminfo=src.meminfo,
                       parent=src.parent)
        return impl_ret_borrowed(context, builder, retty, out._getvalue())
    return retty(base, offset, shape), codegen


@njit(cache=True, inline="always")
def view1(w, iw, slot, a):
    """Field `slot` of the packed workspace w (fw or iw) as an (a,) array."""
    return packed_view(w, iw[slot], (a,))


@njit(cache=True, inline="always")
def view2(w, iw, slot, a, b):
    """Field `slot` of w as an (a, b) array."""
    return packed_view(w, iw[slot], (a, b))


@njit(cache=True, inline="always")
def view3(w, iw, slot, a, b, c):
    """Field `slot` of w as an (a, b, c) array."""
    return packed_view(w, iw[slot], (a, b, c))

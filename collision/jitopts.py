"""numba options shared by the collision kernels.

_JIT: compiled with numba's runtime (may allocate). _NONRT: without the runtime, so no
reference counting of array views and arguments (measured to cost more than the geometry in
the per-pair kernels; see `collision.driver`); such a kernel cannot allocate nor call one
that does. _NONRT_INLINE: the same, inlined into its callers by numba.

Inlining policy (compile time, issue 17): numba inlines by running its whole front end on the
callee again at every call site (nested inlines again inside each copy), then types, lowers
and LLVM optimises every copy; a mid-sized kernel inlined at four sites cost 2 s of CPU. So
only the kernels of the per-pair hot path with one or two call sites are inlined
(`narrow.narrow_pair`, `plane_pair`, `box_pair`, `_box_box`, `support._support_box` into
`box_pair` only, `patch.emit_patch`, `patch._lift`, `patch._ccw_area2`, `hulls.hull_climb`,
`workspace._tangents`): there a call would pass a dozen arrays (7 to 11 machine words each)
and lose the constant row indices. Tiny helpers (`workspace._dotrr`, `_cprr`, ...) are plain
kernels: LLVM inlines them when it links the callee into its caller.
"""
_JIT = dict(cache=True, error_model="numpy")
_NONRT = dict(cache=True, error_model="numpy", _nrt=False)
_NONRT_INLINE = dict(_NONRT, inline="always")

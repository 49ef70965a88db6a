"""numba options shared by the collision kernels.

_JIT: compiled with numba's runtime (may allocate). _NONRT: without the runtime, so no
reference counting of array views and arguments (measured to cost more than the geometry in
the per-pair kernels; see `collision.driver`); such a kernel cannot allocate nor call one
that does. _NONRT_INLINE: the same, inlined into its callers (per-pair and per-point helpers).
"""
_JIT = dict(cache=True, error_model="numpy")
_NONRT = dict(cache=True, error_model="numpy", _nrt=False)
_NONRT_INLINE = dict(_NONRT, inline="always")

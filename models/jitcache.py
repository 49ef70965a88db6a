"""Invalidate numba's on-disk cache of a module when a module it compiles in has changed.

Numba keys a function's cache on its own source file only, but a kernel that calls kernels of
other modules compiles them in. `drop_stale_cache(__file__, deps)` at the top of such a module
removes its cache files when any dependency's (mtime, size) changed since the last import.
"""
from __future__ import annotations

import glob
import os


def drop_stale_cache(module_file, deps):
    """Remove ``__pycache__/<module>.*.nb[ic]`` of `module_file` if any file in `deps` changed."""
    try:
        name = os.path.splitext(os.path.basename(module_file))[0]
        stamp = ";".join(f"{os.path.getmtime(p)}:{os.path.getsize(p)}" for p in deps)
        cache = os.path.join(os.path.dirname(os.path.abspath(module_file)), "__pycache__")
        mark = os.path.join(cache, f"{name}.deps")
        old = open(mark).read() if os.path.exists(mark) else None
        if old != stamp:
            for f in glob.glob(os.path.join(cache, f"{name}.*.nb[ic]")):
                os.remove(f)
            os.makedirs(cache, exist_ok=True)
            with open(mark, "w") as fh:
                fh.write(stamp)
    except OSError:
        pass

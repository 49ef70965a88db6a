"""How this project's kernels are compiled and cached.

Numba keys a function's cache on its own source file only, but a kernel that calls kernels of
other modules compiles them in. `drop_stale_cache(__file__, deps)` at the top of such a module
removes its cache files when any dependency's (mtime, size) changed since the last import.
On import, `compile_without_literals` and `compile_without_cfunc_wrappers` set how numba
compiles the kernels of this project's packages (one specialisation per plain signature; no
C-callable wrapper).
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


_PACKAGES = ("models", "collision", "solvers", "simstep", "scenes", "viewer", "bench", "examples", "tests")


def compile_without_literals():
    """Compile calls between this project's kernels for the plain types of their arguments.

    Inside a kernel, numba types a constant argument (``f(x, 0)``, ``g(V, _VN)``, ``h(True)``)
    as a literal and compiles the callee once per distinct constant, and once more for the
    plain type when a loop variable that starts at a constant is unified with its update
    (``pi = 0`` then ``pi = f(pi)``). No kernel here depends on literal arguments, so calls to
    kernels of these packages are typed with `numba.types.unliteral` arguments: one
    specialisation per call signature. This halves the cold compilation of the demo."""
    from numba.core import dispatcher, types
    cls = dispatcher.Dispatcher
    if getattr(cls.get_call_template, "_unliteral", False):
        return
    original = cls.get_call_template

    def get_call_template(self, args, kws):
        if _own(self.py_func):
            args = tuple(types.unliteral(a) for a in args)
            kws = {k: types.unliteral(a) for k, a in kws.items()}
        return original(self, args, kws)

    get_call_template._unliteral = True
    cls.get_call_template = get_call_template


def _own(py_func):
    """True for a function of this project's packages (by its module's top-level name)."""
    module = getattr(py_func, "__module__", None) or ""   # None on generated functions
    return module.split(".")[0] in _PACKAGES


def compile_without_cfunc_wrappers():
    """Compile this project's kernels without numba's C-callable wrapper.

    numba adds to every compiled function, besides its Python wrapper, a C-ABI wrapper that is
    used only when the function is passed as a first-class function value (``types.
    FunctionType``, `numba.cfunc`), which no kernel here is. The wrapper unpacks every array
    argument and is optimised and emitted as machine code with its kernel, for every callee
    compiled alone too: without it (numba's ``no_cfunc_wrapper`` compile flag) the cold compile
    takes about a tenth less CPU. The kernels' code is otherwise the same."""
    from numba.core import dispatcher
    cls = dispatcher._FunctionCompiler
    if getattr(cls._customize_flags, "_no_cfunc", False):
        return
    original = cls._customize_flags

    def _customize_flags(self, flags):
        flags = original(self, flags)
        if _own(self.py_func):
            flags.no_cfunc_wrapper = True
        return flags

    _customize_flags._no_cfunc = True
    cls._customize_flags = _customize_flags


compile_without_literals()
compile_without_cfunc_wrappers()

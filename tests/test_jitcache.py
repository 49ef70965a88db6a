"""models.jitcache.compile_without_literals: calls between the project's kernels are compiled
once per plain signature, and callees without a module (generated functions, e.g. a
structref constructor) still compile."""
import numpy as np
from numba import njit

import models  # noqa: F401  (installs compile_without_literals)
from numba.core import dispatcher


def test_patch_is_installed():
    assert getattr(dispatcher.Dispatcher.get_call_template, "_unliteral", False)


def test_constant_arguments_compile_one_specialisation():
    # a callee of a project package (the module name decides): one plain int64 signature for
    # the constants 0 and 1, where numba alone compiles one per literal
    ns = {"njit": njit, "np": np}
    exec("def scale(x, k):\n    return x * k\n", ns)
    ns["scale"].__module__ = "models.test_only"
    callee = njit(ns["scale"])

    @njit
    def caller(x):
        return callee(x, 0) + callee(x, 1)

    assert caller(2.0) == 2.0
    assert len(callee.signatures) == 1


def test_a_callee_without_module_compiles():
    def f(x):
        return x + 1.0
    f.__module__ = None
    callee = njit(f)

    @njit
    def caller(x):
        return callee(x)

    assert caller(1.0) == 2.0


def test_project_kernels_compile_without_cfunc_wrapper():
    # numba's C-callable wrapper ("cfunc." symbol) is left out of the project's kernels only
    def make(module):
        def twice(x):
            return 2.0 * x
        twice.__module__ = module
        return njit(twice)

    own, other = make("solvers.test_only"), make("elsewhere")
    assert own(1.5) == other(1.5) == 3.0
    ir_own = own.overloads[own.signatures[0]].library.get_llvm_str()
    ir_other = other.overloads[other.signatures[0]].library.get_llvm_str()
    assert "cfunc." in ir_other and "cfunc." not in ir_own

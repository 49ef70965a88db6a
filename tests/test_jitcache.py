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

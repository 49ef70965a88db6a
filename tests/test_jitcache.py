"""models.jitcache.compile_without_literals: calls between the project's kernels are compiled
once per plain signature, and callees without a module (generated functions, e.g. a
structref constructor) still compile."""
import numpy as np
import pytest
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


def _fresh_process(script, cache_dir, *args):
    """stdout of `script` run by a new Python process of this checkout with NUMBA_CACHE_DIR
    cache_dir (its numba patches installed anew, its kernels compiled or loaded from there)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


_BY_REFERENCE = """
import sys, numpy as np, scenes, models
from models import dynamics
model = scenes.SCENES["humanoid"][0]().model
q = model.neutral()
v = np.linspace(-1, 1, model.nv)
qdd = models.aba(model, q, v, np.linspace(1, 2, model.nv))
lib = dynamics.aba_kernel.overloads[dynamics.aba_kernel.signatures[0]].library
cres = dynamics.aba_factor_kernel.overloads[dynamics.aba_factor_kernel.signatures[0]]
print(qdd.tobytes().hex())
print(dynamics.aba_kernel.stats.cache_hits.total())
# the factor's address is known, also when loaded from the cache (its own module declares it)
print(int(cres.library.get_pointer_to_function(cres.fndesc.mangled_name) != 0))
if sys.argv[1] == "fresh":   # the factor is called, not copied: a declaration in aba_kernel's module
    fn = lib._final_module.get_function(cres.fndesc.mangled_name)
    print(int(fn.is_declaration))
    # the cache entry records, in the current format, the kernels its code calls and those the
    # module it offers to callers declares; that module holds no body of the large factor
    from models import jitcache
    name, kind, data = lib.serialize_using_object_code()
    recorded = {d[0] for d in data[2]}
    own = dynamics.aba_kernel.overloads[dynamics.aba_kernel.signatures[0]].fndesc.mangled_name
    shared = lib._get_module_for_linking()
    offered = {f.name for f in shared.functions if f.is_declaration and f.name in jitcache._KERNELS} - {own}
    print(int(data[3] == jitcache._DEPS_FORMAT and cres.fndesc.mangled_name in recorded and offered <= recorded
              and own not in recorded and shared.get_function(cres.fndesc.mangled_name).is_declaration))
"""


def test_large_callees_linked_by_reference_and_reloaded_from_the_cache(tmp_path):
    # aba_kernel calls aba_factor_kernel (large) by reference; a fresh process loads aba_kernel
    # from the cache with its callee and computes the same bits
    from models import jitcache
    if not jitcache.LINKED_BY_REFERENCE:
        pytest.skip("numba or llvmlite not of the versions the linking by reference is applied on")
    fresh, cached = (_fresh_process(_BY_REFERENCE, tmp_path, mode).split() for mode in ("fresh", "cached"))
    assert fresh[0] == cached[0]
    assert fresh[1] == "0" and cached[1] == "1"
    assert fresh[2] == "1" and cached[2] == "1"
    assert fresh[3] == "1" and fresh[4] == "1"


_WRAPPERS = """
import os, numba, numpy as np, models
from numba.core import callwrapper
from models import jitcache
from tests import kernels_for_jitcache as K
built = []                       # the Python wrappers this process compiles
build = callwrapper.PyCallWrapper.build
callwrapper.PyCallWrapper.build = lambda self: (built.append(self.fndesc.qualname), build(self))[1]
a = np.array([3.0, 1.0, 2.0, 0.5])
print(K.head_sum(a))             # compiles sorted_head for its caller (no wrapper), or loads it from the cache
lacks = lambda k: int(jitcache._lacks_wrapper(k.overloads[k.signatures[0]])) if k.signatures else "-"
print(lacks(K.head_sum), lacks(K.sorted_head))
with jitcache.for_kernel_callers():     # compiled ahead for callers: no wrapper either
    K.doubled.compile((numba.typeof(a),))
print(lacks(K.doubled))
k, s = K.sorted_head(a, 2)       # Python calls them: their wrappers, built or from the disk cache
print(k.tolist(), s, K.doubled(a).tolist())
print(",".join(sorted(built)) or "-")
print(sum(f.endswith(".nbw") for _, _, fs in os.walk(os.environ["NUMBA_CACHE_DIR"]) for f in fs))
"""


def test_python_wrappers_only_where_python_calls(tmp_path):
    # kernels compiled for kernel callers have no Python wrapper; Python calling them compiles
    # the wrapper alone (the same results, arrays boxed), which a second process loads from disk
    from models import jitcache
    if jitcache._CALLER is None:
        pytest.skip("numba not of the version the wrappers are left out on")
    fresh, cached = (_fresh_process(_WRAPPERS, tmp_path).splitlines() for _ in range(2))
    assert fresh[1] == "0 1"       # (from the cache, head_sum holds sorted_head's code: not loaded)
    assert cached[1] == "0 -"
    for out in (fresh, cached):
        assert out[0] == "6.5" and out[2] == "1"
        assert out[3] == "[3, 1] 6.5 [6.0, 2.0, 4.0, 1.0]"
        assert out[5] == "2"
    assert fresh[4] == "doubled,head_sum,sorted_head"    # head_sum's with its compile, the others alone
    assert cached[4] == "-"                               # all from the disk cache


def test_cache_entries_of_the_earlier_dependency_format_are_misses():
    # entries written before the kernels of the module offered to callers were recorded: a
    # caller built from such an entry in another process could reference a kernel nothing loads
    # (LLVM aborts the process), so they are not loaded; numba then compiles the kernel again
    from numba.core import codegen
    from models import jitcache
    if not jitcache.LINKED_BY_REFERENCE:
        pytest.skip("numba or llvmlite not of the versions the linking by reference is applied on")
    with pytest.raises(jitcache._StaleDependency):
        codegen.CPUCodeLibrary._unserialize(None, ("k", "object", (b"", b"", ())))
    with pytest.raises(jitcache._StaleDependency):
        codegen.CPUCodeLibrary._unserialize(None, ("k", "object", (b"", b"", (), jitcache._DEPS_FORMAT - 1)))
    with pytest.raises(jitcache._StaleDependency):      # without the list of its own kernels
        codegen.CPUCodeLibrary._unserialize(None, ("k", "object", (b"", b"", (), jitcache._DEPS_FORMAT)))


def test_entry_point_runs_the_specialisation_the_dispatcher_ran():
    """`entry_point` after a call through the dispatcher: the same machine code, called without
    typing the arguments; with two specialisations, the one of the arguments' types."""
    from models.jitcache import entry_point

    @njit
    def f(x, out):
        out[0] = x[0] * 2 + x.shape[0]
        return x[-1] + 1

    a, b, out = np.arange(3.0), np.arange(4), np.zeros(1)
    assert f(a, out) == 3.0
    ea = entry_point(f, (a, out))
    assert ea is not None and ea(a, out) == 3.0 and out[0] == 3.0
    f(b, out)                          # a second specialisation (int64)
    eb, ea2 = entry_point(f, (b, out)), entry_point(f, (a, out))
    assert eb is not ea2 and ea2 is ea
    assert eb(b, out) == 4 and out[0] == 4.0


_SLICE = """
import numpy as np
import models  # noqa: F401  (installs shape_errors_unformatted)
from numba import njit
from numba.core import event

names = []


class Listener(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        names.append(f"{f.__module__}.{f.__qualname__}")

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())


@njit
def assign(a, b):
    a[:] = b


a = np.zeros(3)
assign(a, np.arange(3.0))
print(a.tolist() == [0.0, 1.0, 2.0])
try:
    assign(a, np.ones(4))
    print("no error")
except ValueError as e:
    print(e)
print(sorted({n for n in names if ".unicode." in n or "str_generic" in n}))
"""


def test_a_slice_assignment_compiles_without_numba_string_formatting(tmp_path):
    # numba 0.68 formats both shapes into the error of a mismatched slice assignment, which
    # compiles its string functions (about 2 s of a cold start); the generic message compiles none
    from models import jitcache
    if not jitcache._numba_checked():
        pytest.skip("applied on the numba version it was checked on only")
    out = _fresh_process(_SLICE, tmp_path)
    assert out.splitlines() == ["True", "cannot assign slice from input of different size", "[]"]


def test_styled_messages_are_built_without_terminal_setup(monkeypatch):
    # with colorama installed numba styles every message it makes (tens of thousands in a cold
    # start); the same strings, without initialising colorama's stream wrappers each time
    from numba.core import errors
    if not hasattr(errors, "HighlightColorScheme"):
        pytest.skip("colorama not installed: numba leaves its messages plain")
    setups = []
    for name in ("init", "reinit", "deinit"):
        monkeypatch.setattr(errors, name, lambda *a, **k: setups.append(1))
    Fore, Style = errors.Fore, errors.Style
    dark, plain = errors.HighlightColorScheme(errors.themes["dark_bg"]), errors.HighlightColorScheme(
        errors.themes["no_color"])
    assert dark.highlight("x") == Fore.RED + Style.BRIGHT + "x" + Style.RESET_ALL
    assert plain.errmsg("y") == Style.BRIGHT + "y" + Style.RESET_ALL
    assert not setups


def test_flags_compare_as_numba_defines():
    # numba's definition: equal iff every option's value is; the hash that of the options' names
    import itertools
    from numba.core import compiler, targetconfig
    assert getattr(targetconfig.TargetConfig.__eq__, "_by_set", False)

    def flags(**set_):
        f = compiler.Flags()
        for k, v in set_.items():
            setattr(f, k, v)
        return f
    cases = [flags(), flags(nrt=True), flags(nrt=False), flags(nrt=True, no_cpython_wrapper=True),
             flags(no_cpython_wrapper=True, nrt=True), flags(error_model="numpy"), flags(error_model="python"),
             flags(nrt=True, error_model="numpy")]
    for a, b in itertools.product(cases, cases):
        assert (a == b) == (a.values() == b.values())
        assert hash(a) == hash(tuple(sorted(a.values())))
    assert cases[0] != object() and (cases[0] == 1) is False


def test_inlined_callees_are_spliced_without_copies(monkeypatch):
    # an inline="always" callee at two call sites: the same results, its fresh IR not copied
    from numba.core import inline_closurecall, ir
    assert getattr(inline_closurecall.InlineWorker.inline_function, "_handed_over", False)
    copies = []
    var_copy = ir.Var.__deepcopy__
    monkeypatch.setattr(ir.Var, "__deepcopy__", lambda self, memo: copies.append(1) or var_copy(self, memo))

    @njit(inline="always")
    def axpy(a, x, y):
        s = 0.0
        for i in range(x.shape[0]):
            y[i] += a * x[i]
            s += y[i]
        return s

    @njit
    def twice(x, y):
        return axpy(2.0, x, y) + axpy(-1.0, y, x)

    x, y = np.arange(3.0), np.ones(3)
    xp, yp = x.copy(), y.copy()
    assert twice(x, y) == twice.py_func(xp, yp)
    assert np.array_equal(x, xp) and np.array_equal(y, yp)
    assert not copies


def test_structref_fields_are_read_without_numba_runtime():
    """A kernel compiled with _nrt=False reads a structref's fields (a `models.data.DataState`'s
    arrays) through `structref_fields_without_runtime`; allocating there still fails to compile."""
    import scenes
    from models.data import Data
    from numba.core.errors import NumbaRuntimeError, TypingError

    @njit(_nrt=False)
    def body_height(d, i):
        return d.op[i, 2] + d.oR[i, 2, 2] * 0.0

    w = scenes.quadruped("go2")
    data = Data(w.model)
    data.compute(w.q0)
    for i in range(w.model.nbodies):
        assert body_height(data.state, i) == data.op[i, 2]

    @njit(_nrt=False)
    def allocates(d):
        return np.empty(3)[0] + d.op[0, 0]
    with pytest.raises((NumbaRuntimeError, TypingError)):
        allocates(data.state)


def test_project_kernels_divide_by_numpy_rules():
    # the project's kernels compile with NumPy's error model (no zero test at a division: a
    # float division by zero gives ±inf, an integer one 0), other code with numba's default
    def make(module):
        def ratio(a, b):
            return a / b, 7 // int(b), 7 % int(b)
        ratio.__module__ = module
        return njit(ratio)

    own, other = make("solvers.test_only"), make("elsewhere")
    assert own(1.0, 0.0) == (np.inf, 0, 0) and own(-1.0, 0.0) == (-np.inf, 0, 0)
    with pytest.raises(ZeroDivisionError):
        other(1.0, 0.0)
    assert own(-7.5, 2.0) == other(-7.5, 2.0) == (-3.75, 3, 1)


def test_compiles_run_on_one_frame_stack_chunk():
    # each outermost compile runs in `_on_one_stack_chunk`'s frame (whose declared stack makes
    # CPython give it a data-stack chunk of its own), and a compile nested in it (a callee typed
    # by its caller) inside that same frame, not in a second one
    import sys

    from numba.core import event

    from models import jitcache
    assert jitcache._on_one_stack_chunk.__code__.co_stacksize * 8 > 512 * 1024
    frames = []

    class Listener(event.Listener):
        def on_start(self, ev):
            f, n = sys._getframe(), 0
            while f is not None:
                n += f.f_code is jitcache._on_one_stack_chunk.__code__
                f = f.f_back
            frames.append(n)

        def on_end(self, ev):
            pass

    @njit
    def inner(x):
        return x + 1.0

    @njit
    def outer(x):
        return inner(x) * 2.0

    with event.install_listener("numba:compile", Listener()):
        assert outer(1.0) == 4.0
    assert len(frames) >= 2 and set(frames) == {1}


def test_llvm_calls_broadcast_no_lock_events():
    # numba's callbacks on llvmlite's lock are unregistered: compiling a kernel broadcasts no
    # "numba:llvm_lock" event
    from llvmlite.binding import ffi
    from numba.core import event
    assert not [a for a, _ in ffi.lib._lock._cblist if "_initialize_llvm_lock_event" in a.__qualname__]

    @njit
    def plus_three(x):
        return x + 3.0

    with event.install_recorder("numba:llvm_lock") as seen:
        assert plus_three(1.0) == 4.0
    assert seen.buffer == []


def test_remembered_abi_sizes_are_llvms():
    # the ABI sizes numba asks for while lowering, remembered per type, are LLVM's own, asked
    # again and for a struct known by name
    import llvmlite.ir as ir
    from numba.core.registry import cpu_target
    ctx = cpu_target.target_context
    kinds = [ir.IntType(8), ir.IntType(1), ir.DoubleType(), ir.IntType(64).as_pointer(), ir.ArrayType(ir.IntType(16), 5),
             ir.LiteralStructType([ir.IntType(8), ir.DoubleType(), ir.IntType(32)]),
             ir.LiteralStructType([ir.IntType(8), ir.IntType(8)])]
    sizes = [1, 1, 8, 8, 10, 24, 2]
    for _ in range(2):
        assert [ctx.get_abi_sizeof(t) for t in kinds] == sizes
        assert [t.get_abi_size(ctx.target_data) for t in kinds] == sizes
    named = ir.global_context.get_identified_type("jitcache_test_pair")
    named.set_body(ir.IntType(8), ir.DoubleType())
    assert ctx.get_abi_sizeof(named) == ctx.get_abi_sizeof(named.as_pointer()) + 8 == 16

"""How this project's kernels are compiled and cached.

Numba keys a function's cache on its own source file only, but a kernel that calls kernels of
other modules compiles them in. `drop_stale_cache(__file__, deps)` at the top of such a module
removes its cache files when any dependency's (mtime, size) changed since the last import.
On import, `compile_without_literals`, `compile_without_cfunc_wrappers`,
`divisions_without_zero_checks`, `link_large_kernels_by_reference` and
`compile_callees_without_python_wrappers` set how numba compiles the kernels of this project's
packages (one specialisation per plain signature; no C-callable wrapper; NumPy's error model; a
large callee's code called, not copied into each caller; a Python wrapper only for kernels
Python calls), `structref_fields_without_runtime` lets kernels compiled without
numba's runtime read structref fields, `shape_errors_unformatted` how numba compiles a slice
assignment's shape check in this process (a constant message), and
`messages_without_terminal_setup`, `flags_compared_by_what_is_set`,
`inline_fresh_callees_without_copies`, `llvm_calls_without_lock_events`,
`abi_sizes_remembered` and `compile_on_one_stack_chunk` cut six of numba's own overheads (the
same code).
"""
from __future__ import annotations

import contextlib
import functools
import glob
import os
import re


def drop_stale_cache(module_file, deps):
    """Remove ``__pycache__/<module>.*.nb[icw]`` of `module_file` (numba's index and entries, our
    cached Python wrappers) if any file in `deps` changed."""
    try:
        name = os.path.splitext(os.path.basename(module_file))[0]
        stamp = ";".join(f"{os.path.getmtime(p)}:{os.path.getsize(p)}" for p in deps)
        cache = os.path.join(os.path.dirname(os.path.abspath(module_file)), "__pycache__")
        mark = os.path.join(cache, f"{name}.deps")
        old = open(mark).read() if os.path.exists(mark) else None
        if old != stamp:
            for f in glob.glob(os.path.join(cache, f"{name}.*.nb[icw]")):
                os.remove(f)
            os.makedirs(cache, exist_ok=True)
            with open(mark, "w") as fh:
                fh.write(stamp)
    except OSError:
        pass


def kernel_variant(kernel, name, options, **names):
    """A kernel compiled (``njit(**options)``) from `kernel`'s Python code with the global
    `names` rebound (e.g. a callee replaced by a narrower one), under its own name (so its own
    cache file)."""
    import types
    from numba import njit
    f = kernel.py_func
    g = dict(f.__globals__, **names)
    v = types.FunctionType(f.__code__, g, name, f.__defaults__, f.__closure__)
    v.__qualname__, v.__module__ = name, f.__module__
    v.__doc__ = f"`{f.__name__}` with " + ", ".join(f"`{k}` = `{w.__name__}`" for k, w in names.items())
    return njit(**options)(v)


_SINGLE = {}     # `entry_point`: dispatcher -> the entry point of its one specialisation


def entry_point(kernel, args):
    """The compiled entry point of `kernel` (a numba dispatcher) that a call just made through
    the dispatcher with `args` (a tuple) ran, or None if numba is not a version this was checked
    on (`_LINK_TESTED`).

    Called with arguments of exactly those types, it runs the same machine code as the
    dispatcher without typing each argument first (about 0.25 µs an array, 0.7 µs a structref:
    8 µs of each steady step of a robot, whose kernel takes 29 arguments). It does not check the
    types: a caller uses it only where each argument's type is fixed by construction, and goes
    through the dispatcher otherwise. A kernel with one specialisation ran that one (kept here
    per kernel); with more, the arguments are typed here (in Python: about a millisecond for a
    large kernel's)."""
    if not _numba_checked():
        return None
    ov = kernel.overloads
    if len(ov) == 1:
        # a dispatcher only gains specialisations (but for recompile(), which nothing here calls),
        # so its one specialisation is the one found the last time; reading it from `overloads`
        # hashes the signature's types in Python (an OrderedDict looks up each key it iterates:
        # 20–40 µs for a 29-argument kernel, on every change of a robot's contact set)
        e = _SINGLE.get(kernel)
        if e is None:
            e = _SINGLE[kernel] = next(iter(ov.values())).entry_point
        return e
    cres = ov.get(tuple(kernel.typeof_pyval(a) for a in args))
    return None if cres is None else cres.entry_point


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
    _flags_of_own_kernels("_no_cfunc", no_cfunc_wrapper=True)


def _flags_of_own_kernels(mark, **values):
    """Set numba's compile flags `values` for this project's kernels (`_own`), once (`mark`
    names the patch on numba's `_FunctionCompiler._customize_flags`)."""
    from numba.core import dispatcher
    cls = dispatcher._FunctionCompiler
    f = cls._customize_flags
    while f is not None:                        # (other patches may wrap this one)
        if getattr(f, mark, False):
            return
        f = getattr(f, "__wrapped__", None)
    original = cls._customize_flags

    def _customize_flags(self, flags):
        flags = original(self, flags)
        if _own(self.py_func):
            for k, v in values.items():
                setattr(flags, k, v)
        return flags

    setattr(_customize_flags, mark, True)
    _customize_flags.__wrapped__ = original
    cls._customize_flags = _customize_flags


def divisions_without_zero_checks():
    """Compile this project's kernels with NumPy's error model (numba's ``error_model="numpy"``).

    Under numba's default (Python's) model every division (``/``, ``//``, ``%``, ``**`` of a
    zero) tests its divisor and raises ZeroDivisionError, a branch and an exception's code per
    division site that numba lowers and LLVM optimises with the kernel: about 6% of the CPU of a
    cold start of the demo. Under NumPy's, a float division by zero gives inf or NaN (an integer
    one 0), as NumPy's arrays do. Every other result is the same, bit for bit. A step whose
    result is not finite raises `simstep.SimulationError`, as it did when the ZeroDivisionError
    was its cause."""
    _flags_of_own_kernels("_numpy_errors", error_model="numpy")


def shape_errors_unformatted():
    """Compile array slice assignments (``a[:] = b``) with numba's constant error message.

    Where the source's shape does not match, numba 0.68's CPU code formats both shapes into its
    ValueError ("cannot assign slice of shape (3,) from input of shape (4,)"). That one function
    compiles numba's string machinery (str of an int, join, concatenation) in each process that
    compiles a slice assignment: about 2 s of a cold start, on the critical path of the first
    run's worker (`simstep.warmup`). With this, the CPU target uses numba's generic-target
    version, "cannot assign slice from input of different size" (the same ValueError, without
    the shapes). Applied on the numba versions the rest of this module is checked on."""
    if not _numba_checked():
        return
    from numba.core.typing import templates
    from numba.np import arrayobj
    for f, fnty in templates.builtin_registry.globals:
        if f is arrayobj.raise_with_shape_context:
            for t in fnty.templates:
                if getattr(t, "_overload_func", None) is arrayobj.ol_raise_with_shape_context_cpu:
                    t._overload_func = arrayobj.ol_raise_with_shape_context_generic


def structref_fields_without_runtime():
    """Let kernels compiled without numba's runtime (``_nrt=False``) read a structref's fields.

    A structref's fields are read through its data pointer, which numba gets from the structref's
    meminfo by a function of its runtime library (linked into every kernel) that counts nothing
    and allocates nothing. numba still refuses it when the runtime is off ("NRT required but not
    enabled"), so a kernel that takes a `models.data.DataState` or an operator state had to count
    references to every array it unpacked (`models.scratch`). Here that one read is made as with
    the runtime on; every other use of the runtime still raises. Applied on every numba version:
    the kernels that take structrefs compile with ``_nrt=False`` only through it."""
    from numba.core.runtime.context import NRTContext
    original = NRTContext.meminfo_data
    if getattr(original, "_any_runtime", False):
        return

    def meminfo_data(self, builder, meminfo):
        if self._enabled:
            return original(self, builder, meminfo)
        self._enabled = True
        try:
            return original(self, builder, meminfo)
        finally:
            self._enabled = False

    meminfo_data._any_runtime = True
    NRTContext.meminfo_data = meminfo_data


compile_without_literals()
compile_without_cfunc_wrappers()
divisions_without_zero_checks()
structref_fields_without_runtime()


# ---------------------------------------------------------------- numba's own overheads
def messages_without_terminal_setup():
    """Build numba's styled error messages without setting up the terminal each time.

    numba raises and catches its own errors by the thousand while it types and lowers kernels
    (a constant that is not a literal, an overload that does not match) and styles each message
    when it is made. Where colorama is installed, each styling initialises colorama (wrapping
    the standard streams) and takes it down again, to build a string: 2.7% of the CPU of a
    cold start of the demo (py-spy). The messages are built here the same way, style codes
    included, without that set-up."""
    from numba.core import errors
    cls = getattr(errors, "HighlightColorScheme", None)      # (without colorama: plain messages)
    if cls is None or getattr(cls._markup, "_no_setup", False):
        return
    style = errors.Style

    def _markup(self, msg, color=None, style_=style.BRIGHT):
        return (color or "") + (style_ or "") + msg + style.RESET_ALL

    _markup._no_setup = True
    cls._markup = _markup


def flags_compared_by_what_is_set():
    """Compare numba's compile flags by the values set on them first.

    numba looks up each library function it compiles into a kernel (``np.empty``, ``min``, ...)
    in a cache keyed by the compile's flags. Their hash is that of the options' names, the same
    for every instance of a class, and their equality builds a dict of every option's value on
    both sides: 4% of the CPU of a cold start of the demo (py-spy). Two flags of one class are
    compared here on the options set on either (an option not set reads its default; flags of
    other classes as numba does), and the hash is kept per class. Same results."""
    from numba.core import targetconfig
    cls = targetconfig.TargetConfig
    if getattr(cls.__eq__, "_by_set", False) or not _numba_checked():
        return                   # (numba's internals relied on here are checked on that version)
    eq, hashes = cls.__eq__, {}

    def __eq__(self, other):
        if type(other) is not type(self):
            return eq(self, other)
        a, b = self._values, other._values
        if a == b:
            return True
        options = type(self).options
        for k, v in a.items():
            if v != b.get(k, options[k].default):
                return False
        for k, v in b.items():
            if k not in a and v != options[k].default:
                return False
        return True

    def __hash__(self):
        h = hashes.get(type(self))
        if h is None:
            h = hashes[type(self)] = hash(tuple(sorted(self.values())))
        return h

    __eq__._by_set = True
    cls.__eq__, cls.__hash__ = __eq__, __hash__


_FRAME_SLOTS = 70_000      # `_on_one_stack_chunk`'s frame: 560 kB, so CPython gives it a 1 MiB chunk


def _on_one_stack_chunk(f, *args):
    """f(*args) in a frame that CPython (3.11 on) places in a data stack chunk of 1 MiB of its
    own (`compile_on_one_stack_chunk`), the frames of the calls under it in the rest of it."""
    return f(*args)


_on_one_stack_chunk.__code__ = _on_one_stack_chunk.__code__.replace(co_stacksize=_FRAME_SLOTS)
_OUTER = None               # thread-local: whether a compile of this thread runs on that chunk


def compile_on_one_stack_chunk():
    """Run each outermost compile (`Dispatcher.compile`: numba's compile or cache load of a
    kernel, with the kernels it compiles while typing it) on one chunk of CPython's frame stack.

    Since 3.11 CPython keeps the frames of Python calls on a stack of 16 kB chunks, allocates a
    chunk with mmap when a call does not fit in the current one and unmaps it when that call
    returns. numba's compiler recurses deep and its call depth goes up and down across chunk
    boundaries all the time: a cold start of the demo made 720 000 mmap/munmap pairs and 870 000
    page faults, 5.4 of its 72 s of CPU in the kernel. A frame larger than half a MiB (here one
    with a declared stack of `_FRAME_SLOTS` slots) gets a chunk of a MiB whose second half holds
    the compile's frames, so they no longer cross a boundary (0.7 s of system CPU). The same code
    is compiled; on other versions of Python the frame is merely larger."""
    global _OUTER
    import threading

    from numba.core import dispatcher
    if _OUTER is not None:
        return
    _OUTER = threading.local()
    D = dispatcher.Dispatcher
    compile_ = D.compile

    @functools.wraps(compile_)
    def compile(self, sig):
        if getattr(_OUTER, "on", False):
            return compile_(self, sig)
        _OUTER.on = True
        try:
            return _on_one_stack_chunk(compile_, self, sig)
        finally:
            _OUTER.on = False

    D.compile = compile


def llvm_calls_without_lock_events():
    """Call into LLVM without numba's lock events.

    llvmlite holds a lock around each of its calls into LLVM (hundreds of thousands in a cold
    start), and numba registers callbacks on that lock that broadcast a ``numba:llvm_lock``
    event at each acquire and release to a timer of every compile in progress (one per nested
    compile), only to record in each compile result's metadata (``timers``, which nothing here
    reads) how long it held the lock: 2% of the CPU of a cold start of the demo (py-spy). The
    callbacks are unregistered; that metadata then records 0 s."""
    from llvmlite.binding import ffi
    lock = getattr(ffi.lib, "_lock", None)
    if lock is None or not _numba_checked():
        return                   # (numba's internals relied on here are checked on that version)
    for acquire, release in list(getattr(lock, "_cblist", ())):
        if getattr(acquire, "__qualname__", "").startswith("_initialize_llvm_lock_event."):
            lock.unregister(acquire, release)


def abi_sizes_remembered():
    """Remember the ABI size of each LLVM type numba asks for.

    numba asks for the size of a value's LLVM type at every stack slot it makes and every
    variable it stores while lowering, and llvmlite answers each question by printing a module
    that declares a global of that type and having LLVM parse it: 1.7% of the CPU of a cold
    start of the demo (py-spy). The size depends only on the type and the data layout, so it is
    kept per (data layout, type) here; types that name a struct (whose body a module defines)
    are asked each time, as before."""
    from numba.core import base
    cls = base.BaseContext
    if getattr(cls.get_abi_sizeof, "_remembered", False) or not _numba_checked():
        return                   # (numba's internals relied on here are checked on that version)
    ask, layouts = cls.get_abi_sizeof, {}     # id(target data) -> (it, {type's text: size})

    def get_abi_sizeof(self, ty):
        text = str(ty)
        if "%" in text:          # an identified struct, or a type made of one
            return ask(self, ty)
        td = self.target_data
        held = layouts.get(id(td))
        if held is None or held[0] is not td:
            held = layouts[id(td)] = (td, {})
        size = held[1].get(text)
        if size is None:
            size = held[1][text] = ask(self, ty)
        return size

    get_abi_sizeof._remembered = True
    cls.get_abi_sizeof = get_abi_sizeof

class _HandedOver:
    """A fresh block's ``__deepcopy__`` for the two copies numba's `InlineWorker.inline_ir` makes
    (`inline_fresh_callees_without_copies`): the block itself, then the attribute is gone."""

    def __init__(self, block):
        self.block, self.left = block, 2

    def __call__(self, memo):
        self.left -= 1
        if self.left == 0:
            del self.block.__deepcopy__
        return self.block


def inline_fresh_callees_without_copies():
    """Inline a kernel's ``inline="always"`` callees into it without copying their fresh IR.

    At every call site numba translates the callee's Python code to IR afresh
    (`InlineWorker.inline_function`), then `inline_ir` deep-copies that IR twice: once to
    rename and splice into the caller, once kept unchanged and returned, which the only caller,
    numba's inlining pass, discards. The copies were 5.7% of the CPU of a cold start of the
    demo (py-spy). Here the fresh IR's blocks are handed over as they are (the block a copy
    would have made, as nothing else holds the fresh IR); any later copy of them is a real one."""
    from numba.core import inline_closurecall
    worker = inline_closurecall.InlineWorker
    if getattr(worker.inline_function, "_handed_over", False) or not _numba_checked():
        return                   # (numba's internals relied on here are checked on that version)

    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        callee_ir = self.run_untyped_passes(function)
        fresh = list(callee_ir.blocks.values())
        for b in fresh:
            b.__deepcopy__ = _HandedOver(b)
        try:
            return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)
        finally:
            for b in fresh:
                b.__dict__.pop("__deepcopy__", None)

    inline_function._handed_over = True
    worker.inline_function = inline_function


# ---------------------------------------------------------------- linking large kernels by reference
_LINK_MIN_BLOCKS = 24       # a kernel this large (basic blocks) is called, not copied, by its callers
_LINK_TESTED = ("0.68.", "0.50.")   # numba, llvmlite versions (prefixes) it is applied on


def _numba_checked():
    """Whether numba is of the version whose internals the patches here were checked on."""
    import numba
    return numba.__version__.startswith(_LINK_TESTED[0])
LINKED_BY_REFERENCE = False
_KERNELS = {}               # symbol -> (module, qualname, signature) of this project's compiled kernels
_DEPS_FORMAT = 3            # version of the dependency record a cache entry carries


class _StaleDependency(Exception):
    """A cached library's external kernel could not be loaded with the signature it was built for."""


def _register_kernel(f, cres):
    """Records a compiled kernel of this project (py_func f) in `_KERNELS` by its symbol."""
    if _own(f) and cres.fndesc is not None:
        _KERNELS[cres.fndesc.mangled_name] = (f.__module__, f.__qualname__, cres.signature)


def _dispatcher(module, qualname):
    import importlib
    if "<locals>" in qualname:
        return None
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if hasattr(obj, "overloads") else None


_DEFINE_NAME = re.compile(r'@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)\(')


def _declared(mod, names):
    """A copy of the LLVM module mod (llvmlite.binding) in which the functions `names` are
    declarations: their bodies (from `define ... {` to the closing `}` of LLVM's printout) are
    dropped, the linkage and comdat removed from their headers."""
    import llvmlite.binding as ll
    out, skip = [], False
    for line in str(mod).splitlines():
        if skip:
            skip = line != "}"
            continue
        if line.startswith("define "):
            m = _DEFINE_NAME.search(line)
            name = m.group(1) if m else ""
            if name.startswith('"'):
                name = name[1:-1]
            if name in names:
                head = line[len("define "):].rstrip().removesuffix("{").rstrip()
                head = re.sub(r"\b(linkonce_odr|available_externally|weak_odr|internal|private) ", "", head)
                head = re.sub(r" comdat(\([^)]*\))?", "", head)
                out.append("declare " + head)
                skip = True
                continue
        out.append(line)
    new = ll.parse_assembly("\n".join(out) + "\n")
    new.verify()
    return new


def link_large_kernels_by_reference():
    """Link a large kernel into its callers by reference instead of copying its code.

    numba links the LLVM module of every kernel a kernel calls into the caller's module (with
    `linkonce_odr` linkage), so LLVM optimises and emits each callee again in every caller (a
    kernel three calls deep four times). A large kernel is not inlined by LLVM anyway, so its copy
    only costs compile time: in the module a kernel offers its callers (numba's
    `_get_module_for_linking`) this project's kernels of at least `_LINK_MIN_BLOCKS` basic blocks
    are declarations (`_declared`), and the callers call the callee's own compiled code in
    numba's JIT. (Marking them `available_externally` instead, so that LLVM sees their bodies
    but emits no code, still had every caller parse and optimise them: the humanoid's cold
    compile took 5% more CPU, 131.3 / 126.5 s against 125.5 / 119.1 s in two alternated pairs,
    `bench/bench_compile.py --serial`.) A cached library records the kernels it calls this way
    (module, qualname, signature, symbol); loading it from the cache first loads (or compiles)
    them and maps the recorded symbols to their code (a kernel compiled in another process has
    another symbol name), or treats the entry as a cache miss if a signature changed. The record
    also lists the kernels the module offered to callers leaves to them (large callees are
    declarations there): a caller compiled from a cached library calls them by reference even
    where the library's own code holds a copy, so they must be loaded with it. And it lists the
    library's own kernels, registered as defined when it is loaded: numba takes the symbols a
    cached library defines from its module offered to callers, where a large own kernel is a
    declaration. Entries of earlier record formats, which missed either, are cache misses (a
    process loading such a caller aborted with LLVM's "Symbol not found"). It patches
    numba's internals, so it is applied only on the numba and llvmlite versions it was tested on
    (`_LINK_TESTED`); on others numba links as usual (`LINKED_BY_REFERENCE` False)."""
    global LINKED_BY_REFERENCE
    import llvmlite
    import llvmlite.binding as ll
    from numba.core import caching, codegen, dispatcher

    if not (_numba_checked() and llvmlite.__version__.startswith(_LINK_TESTED[1])):
        return                   # numba's internals patched here are checked on these versions only
    lib = codegen.CPUCodeLibrary
    if getattr(lib._get_module_for_linking, "_by_reference", False):
        return
    LINKED_BY_REFERENCE = True

    add_overload = dispatcher.Dispatcher.add_overload

    def _add_overload(self, cres):
        add_overload(self, cres)
        _register_kernel(self.py_func, cres)

    dispatcher.Dispatcher.add_overload = _add_overload

    get_module = lib._get_module_for_linking

    def _get_module_for_linking(self):
        if self._shared_module is not None:
            return self._shared_module
        mod = get_module(self)
        if mod is self._final_module:
            return mod
        large = set()
        for fn in mod.functions:
            if fn.is_declaration or fn.name not in _KERNELS or fn.linkage != ll.Linkage.linkonce_odr:
                continue
            n = 0
            for _ in fn.blocks:
                n += 1
                if n >= _LINK_MIN_BLOCKS:
                    large.add(fn.name)
                    break
        if large:
            mod = self._shared_module = _declared(mod, large)
        return mod

    _get_module_for_linking._by_reference = True
    lib._get_module_for_linking = _get_module_for_linking

    serialize = lib.serialize_using_object_code

    def serialize_using_object_code(self):
        name, kind, data = serialize(self)      # (object code, the module offered to callers)
        # the kernels this entry needs loaded: those its code calls, and those the module it
        # offers to callers declares (a caller compiled from it in another process calls them,
        # though this entry's own code may hold a copy)
        deps, own = {}, set()
        for fn in self._final_module.functions:
            if fn.is_declaration and fn.name in _KERNELS:
                deps[fn.name] = _KERNELS[fn.name]
            elif not fn.is_declaration and fn.linkage == ll.Linkage.external:
                own.add(fn.name)             # this entry's own kernel, offered to callers too
        for fn in self._get_module_for_linking().functions:
            if fn.is_declaration and fn.name in _KERNELS and fn.name not in own:
                deps[fn.name] = _KERNELS[fn.name]
        return name, kind, data + (tuple((k,) + v for k, v in deps.items()), _DEPS_FORMAT, tuple(sorted(own)))

    lib.serialize_using_object_code = serialize_using_object_code

    unserialize = lib._unserialize.__func__

    def _unserialize(cls, codegen_, state):
        name, kind, data = state
        if kind != "object" or len(data) <= 2:
            return unserialize(cls, codegen_, state)
        if len(data) != 5 or data[3] != _DEPS_FORMAT:
            # an earlier format: it missed the kernels of the module offered to callers (a caller
            # built from it in another process could not be loaded), or its own (see below)
            raise _StaleDependency(name)
        for symbol, module, qualname, sig in data[2]:
            _load_dependency(symbol, module, qualname, sig)
        library = unserialize(cls, codegen_, (name, kind, data[:2]))
        # numba takes the symbols a cached library defines from its module offered to callers,
        # where its own kernel is a declaration if large: without this its address is unknown
        # (0) to `get_pointer_to_function`, and a caller that calls it under another process's
        # symbol (`_load_dependency`) aborted with LLVM's "Symbol not found"
        library._codegen._engine._defined_symbols.update(data[4])
        return library

    lib._unserialize = classmethod(_unserialize)

    def _load_dependency(symbol, module, qualname, sig):
        if symbol in _KERNELS:
            return
        disp = _dispatcher(module, qualname)
        if disp is None:
            raise _StaleDependency(symbol)
        try:
            with for_kernel_callers():          # a cached caller's callee: no Python entry needed
                disp.compile(sig.args)
        except Exception as e:
            raise _StaleDependency(symbol) from e
        cres = disp.overloads.get(tuple(sig.args))
        if cres is None or cres.signature != sig:
            raise _StaleDependency(symbol)
        own = cres.fndesc.mangled_name
        if own != symbol:
            ll.add_symbol(symbol, cres.library.get_pointer_to_function(own))
            _KERNELS[symbol] = _KERNELS.get(own, (module, qualname, sig))

    rebuild = caching.CompileResultCacheImpl.rebuild

    def _rebuild(self, target_context, payload):
        try:
            return rebuild(self, target_context, payload)
        except _StaleDependency:
            return None

    caching.CompileResultCacheImpl.rebuild = _rebuild


# ---------------------------------------------------------------- Python wrappers only where Python calls
_PY_WRAPPER_FORMAT = 1      # version of a cached wrapper's key (`_wrapper_file`)
_CALLER = None              # thread-local stack: True while numba compiles a kernel for a kernel caller
_NO_WRAPPER = {}            # id(CompileResult) -> (it, whether its library lacks the Python wrapper)


def _compiling_for_kernels():
    """The thread's stack of compile requests: True for a kernel caller's, False for Python's."""
    s = getattr(_CALLER, "stack", None)
    if s is None:
        s = _CALLER.stack = []
    return s


@contextlib.contextmanager
def for_kernel_callers():
    """Within this context, kernels compiled by `Dispatcher.compile` are compiled for kernel
    callers (no Python wrapper; `compile_callees_without_python_wrappers`), as when a kernel's
    typing compiles them: for code that compiles callees ahead of their callers."""
    if _CALLER is None:
        yield
        return
    s = _compiling_for_kernels()
    s.append(True)
    try:
        yield
    finally:
        s.pop()


def _lacks_wrapper(cres):
    """Whether a compiled kernel's library has no Python wrapper (compiled for kernel callers)."""
    e = _NO_WRAPPER.get(id(cres))
    if e is None or e[0] is not cres:
        lib = cres.library
        e = _NO_WRAPPER[id(cres)] = (cres, lib is not None and not cres.objectmode and
                                     lib.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name) == 0)
    return e[1]


def _wrapper_file(disp, cres, ctx):
    """Where the Python wrapper of cres (a kernel of dispatcher disp) is cached, or None for a
    dispatcher without a disk cache. The name holds a hash of everything the wrapper's code
    depends on: the kernel's symbols and types, the runtime flag, the CPU and numba's version."""
    import hashlib
    import numba
    path = getattr(disp._cache, "cache_path", None)
    if path is None:
        return None
    f, d = disp.py_func, cres.fndesc
    key = repr((_PY_WRAPPER_FORMAT, numba.__version__, ctx.codegen().magic_tuple(), d.llvm_func_name, d.env_name,
                d.llvm_cpython_wrapper_name, tuple(map(str, d.argtypes)), str(d.restype), ctx.enable_nrt))
    digest = hashlib.sha1(key.encode()).hexdigest()[:20]
    module = f.__module__.rsplit(".", 1)[-1]
    return os.path.join(path, f"{module}.{f.__qualname__}-wrap-{digest}.nbw")


def _build_wrapper(disp, cres):
    """The Python entry point of a kernel compiled without its wrapper: the wrapper compiled as a
    library of its own that calls the kernel's code by its symbol (numba's `PyCallWrapper`, with
    the kernel's compile flags), or loaded from the disk cache where an earlier process saved it."""
    import pickle

    from llvmlite import ir
    from numba.core import cgutils, compiler
    from numba.core.callwrapper import PyCallWrapper
    flags = compiler.Flags()
    disp.targetdescr.options.parse_as_flags(flags, disp.targetoptions)
    ctx = compiler._make_subtarget(disp.targetctx, flags)
    fndesc, env = cres.fndesc, cres.environment
    path = _wrapper_file(disp, cres, ctx)
    lib = None
    if path is not None and os.path.exists(path):
        try:
            with open(path, "rb") as fh:
                n0, consts, state = pickle.load(fh)
            # the wrapper reads the constants it added to the kernel's environment (a boxed
            # array's dtype, ...) at the positions they had after the kernel's own
            if len(env.consts) == n0:
                lib = ctx.codegen().unserialize_library(state)
                env.consts.extend(consts)
        except Exception:       # unreadable or stale: compiled again below
            lib = None
    if lib is None:
        lib = ctx.codegen().create_library(f"{fndesc.qualname}.wrapper")
        if path is not None:
            lib.enable_object_caching()
        mod = ctx.create_module("wrapper")
        # the kernel's environment and code, by reference (declarations: defined by its library)
        ir.GlobalVariable(mod, cgutils.voidptr_t, name=ctx.get_env_name(fndesc))
        callee = ir.Function(mod, ctx.call_conv.get_function_type(fndesc.restype, fndesc.argtypes),
                             fndesc.llvm_func_name)
        n0 = len(env.consts)
        PyCallWrapper(ctx, mod, callee, fndesc, env, None, False).build()
        lib.add_ir_module(mod)
        lib.finalize()
        if path is not None:           # (not saved where the directory or a constant refuses)
            tmp = f"{path}.{os.getpid()}.tmp"
            try:
                with open(tmp, "wb") as fh:
                    pickle.dump((n0, list(env.consts[n0:]), lib.serialize_using_object_code()), fh,
                                protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, path)
            except Exception:
                with contextlib.suppress(OSError):
                    os.remove(tmp)
    return ctx.get_executable(lib, fndesc, env)


def compile_callees_without_python_wrappers():
    """Compile a kernel's Python wrapper only when Python calls the kernel.

    numba gives every compiled function a Python wrapper (it unboxes each argument from a Python
    object, boxes the result and turns errors into exceptions) and optimises and emits it with the
    function's module. Most kernels here are only ever called by other kernels, and a wrapper of a
    kernel with many array and structref arguments is large: in a cold start of the demo the
    wrappers were 14% of the LLVM IR and 7 s of numba's lowering. So a kernel that numba compiles
    for a kernel caller (while typing it; `for_kernel_callers`) is compiled without the wrapper
    (numba's ``no_cpython_wrapper`` flag) and not offered to Python calls; when Python then calls
    it, the wrapper alone is compiled as a small library of its own calling the kernel's code, and
    cached on disk next to the kernel's entries (`_build_wrapper`). The kernels' code is the
    same. Applied with `link_large_kernels_by_reference` (its numba versions)."""
    global _CALLER
    import threading

    from numba.core import dispatcher, sigutils
    from numba.core.compiler_lock import global_compiler_lock
    if _CALLER is not None or not _numba_checked():
        return
    _CALLER = threading.local()
    D, base, fc = dispatcher.Dispatcher, dispatcher._DispatcherBase, dispatcher._FunctionCompiler

    get_call_template = D.get_call_template

    @functools.wraps(get_call_template)        # (keeps the marks of `compile_without_literals`)
    def _get_call_template(self, args, kws):      # a kernel's typing: compiles for a kernel caller
        s = _compiling_for_kernels()
        s.append(True)
        try:
            return get_call_template(self, args, kws)
        finally:
            s.pop()

    compile_for_args = base._compile_for_args

    def _compile_for_args(self, *args, **kws):    # a Python call without a matching entry
        s = _compiling_for_kernels()
        s.append(False)
        try:
            return compile_for_args(self, *args, **kws)
        finally:
            s.pop()

    customize = fc._customize_flags

    def _customize_flags(self, flags):
        flags = customize(self, flags)
        s = _compiling_for_kernels()
        if s and s[-1] and _own(self.py_func):
            flags.no_cpython_wrapper = True
        return flags

    add_overload = D.add_overload

    def _add_overload(self, cres):
        if _own(self.py_func) and _lacks_wrapper(cres):      # kernels only: no Python entry yet
            self.overloads[tuple(cres.signature.args)] = cres
            _register_kernel(self.py_func, cres)
            return
        add_overload(self, cres)

    compile_ = D.compile

    def _compile(self, sig):
        s = _compiling_for_kernels()
        if (s and s[-1]) or not _own(self.py_func):
            return compile_(self, sig)
        # for Python: an entry compiled (or cached) for kernel callers gets its wrapper, also
        # where compiling is disabled (`solvers.packed.typed_entry`)
        args = tuple(sigutils.normalize_signature(sig)[0])
        cres = self.overloads.get(args)
        if cres is None or not _lacks_wrapper(cres):
            entry = compile_(self, sig)
            cres = self.overloads.get(args)
            if cres is None or not _lacks_wrapper(cres):
                return entry
        with global_compiler_lock:
            cres = self.overloads[args]
            if not _lacks_wrapper(cres):        # another thread built it meanwhile
                return cres.entry_point
            entry = _build_wrapper(self, cres)
            cres = cres._replace(entry_point=entry)
            _NO_WRAPPER[id(cres)] = (cres, False)
            self.targetctx.insert_user_function(entry, cres.fndesc, [cres.library])
            add_overload(self, cres)
            _SINGLE.pop(self, None)
        return entry

    D.get_call_template = _get_call_template
    base._compile_for_args = _compile_for_args
    fc._customize_flags = _customize_flags
    D.add_overload = _add_overload
    D.compile = _compile


link_large_kernels_by_reference()
compile_callees_without_python_wrappers()
shape_errors_unformatted()
messages_without_terminal_setup()
flags_compared_by_what_is_set()
inline_fresh_callees_without_copies()
llvm_calls_without_lock_events()
abi_sizes_remembered()
compile_on_one_stack_chunk()

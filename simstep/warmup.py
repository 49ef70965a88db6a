"""Kernel compilation up front: `python -m simstep warmup`, and the first-run notice.

The numba kernels are compiled on their first call and cached on disk (``__pycache__`` beside
each module), one specialisation per call signature. `warmup()` steps a small set of scenes
that together call every kernel signature the simulator and the command line's scenes use
(boxes, meshes of a URDF robot under joint PD with limits, loop closures and their projection,
capsules and spheres, SDF springs; a large time step so that the solver iterates), so that a
later run loads everything from the cache and never compiles in the middle.

`announce_compilation()` installs a numba event listener that prints one line before the
first kernel compiles; it prints nothing when the caches are warm (loading a kernel from the
cache is not a compilation).

`start_compile_ahead(scene, kwargs, dt)` splits a cold first start over two cores: numba
compiles in one thread per process, and its on-disk cache is shared, so a worker process
compiles the contact solver while the calling process compiles collision detection and the rest
of the step; each loads the other's kernels from the cache instead of compiling them. The
worker builds the scene with placeholder collision hulls (`placeholder_hulls`: the same array
types, no mesh files read) and steps it with the detector's detection
(`CollisionDetector.run_placed`) replaced by synthetic contacts (`synthetic_collision`), so it
calls the same kernels with the same argument types as a real step and never compiles the
narrow phase. The caller (`compile_callers_share`) first compiles the solver's semismooth
Newton (`compile_newton_ahead`, for argument types made without an operator), which the worker
reaches late, then waits for the worker's build (`wait_compile_ahead(proc, until=BUILT)`: the
scene's and the Simulator's kernels, compiled once instead of in both processes at the same
time), compiles the free dynamics and the integration (`compile_integration_ahead`: the scene
stepped once without contacts), then builds the scene itself, compiling collision, while the
worker builds one synthetic contact problem and solves it (`_solve_first`: the ADMM and its
callees, about half of the compile time) and steps. The worker reports ready
(`wait_compile_ahead` returns) once it has stepped (contacts with the ground and between bodies
of different trees; its second step compiles the steady step's kernel), then goes on with what
only later steps may need (a self-contact, whose loop brings the elimination ordering in) while
the caller steps. If it fails or is slower, the caller compiles what it needs itself.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import select
import subprocess
import sys
import time

NOTICE = ("compiling kernels, first run only (0.5-2 min, about 30 s on 2 cores; `python -m simstep warmup` "
          "compiles them all up front)")

# (scene, scene arguments, dt, steps): each step at a large dt drives the solver through its
# iterations, the polish and the ρ updates; together they cover the CLI scenes' kernels.
WARMUP_SCENES = (
    ("box_stack", dict(n=2), 0.01, 30),
    ("box_pyramid", dict(layers=2), 0.01, 20),
    ("humanoid", {}, 0.02, 100),          # falls over: mesh pairs through the library backend
    ("humanoid", {}, 0.001, 3),
    ("quadruped", {}, 0.01, 5),
    ("four_bar", {}, 0.01, 5),
    ("pendulum_maximal", dict(n_links=3), 0.001, 3),
    ("swimmer", dict(n_links=3), 0.01, 10),
    ("cassie", {}, 0.01, 5),
    ("mjcf", {}, 0.01, 10),               # skipped without the mjcf extra
)


class CompileCounter:
    """numba compilations (cache misses) from creation on: `count` and `seconds` of the
    outermost ones, `names` of the kernels compiled (module.function). cache_loads=True also
    counts the loads of compiled kernels from numba's disk cache (numba holds its compiler lock
    for both; that event names no kernel, so `names` stays empty)."""

    def __init__(self, cache_loads=False):
        from numba.core import event
        self.count, self.seconds, self._depth, self._t0 = 0, 0.0, 0, 0.0
        self.names = []
        self._event = "numba:compiler_lock" if cache_loads else "numba:compile"
        counter = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                if counter._depth == 0:
                    counter._t0 = time.perf_counter()
                    counter.count += 1
                    if not cache_loads:
                        f = ev.data["dispatcher"].py_func
                        counter.names.append(f"{f.__module__}.{f.__name__}")
                counter._depth += 1

            def on_end(self, ev):
                counter._depth -= 1
                if counter._depth == 0:
                    counter.seconds += time.perf_counter() - counter._t0

        self._listener = _Listener()
        event.register(self._event, self._listener)

    def close(self):
        from numba.core import event
        event.unregister(self._event, self._listener)


_announced = [False]                  # printed in this process
_notice = {"listener": None, "message": NOTICE, "file": None}


def announce_compilation(file=None, message=NOTICE):
    """Print `message` (to `file`, default stderr) once, just before the first numba
    compilation of this process; nothing if every kernel comes from the cache. One listener
    per process: a later call changes the message and the file."""
    from numba.core import event
    _notice["message"], _notice["file"] = message, file
    if _announced[0] or _notice["listener"] is not None:
        return

    class _Notice(event.Listener):
        def on_start(self, ev):
            if not _announced[0]:
                _announced[0] = True
                print(_notice["message"], file=_notice["file"] or sys.stderr, flush=True)

        def on_end(self, ev):
            pass

    _notice["listener"] = _Notice()
    event.register("numba:compile", _notice["listener"])


def warmup(scenes=WARMUP_SCENES, verbose=True, file=None):
    """Compile (or load from the cache) the kernels of every scene in `scenes` by building it
    and stepping it; returns the number of kernels compiled (0 when the caches were warm)."""
    import numpy as np

    import models
    import scenes as scene_lib
    from .simulator import Simulator

    out = file or sys.stderr
    counter = CompileCounter()
    t_all = time.perf_counter()
    ahead = start_compile_ahead(*scenes[0][:3]) if scenes else None   # cold: the first scene on two cores
    try:
        if scenes:
            compile_callers_share(ahead, scene_lib.SCENES[scenes[0][0]][0], scenes[0][1], scenes[0][2])
        for name, kw, dt, steps in scenes:
            fn = scene_lib.SCENES[name][0]
            t0, n0 = time.perf_counter(), counter.count
            try:
                world = fn(**kw)
            except ImportError as e:         # an optional extra (e.g. MuJoCo) is not installed
                if verbose:
                    print(f"  {name}: skipped ({e})", file=out, flush=True)
                continue
            sim = Simulator(world, dt=dt)
            wait_compile_ahead(ahead)
            ahead = None
            traj = sim.run(steps=steps, record=True)
            sim.contact_wrench(world.model.body_names[-1])
            if world.model.nv:
                models.aba(world.model, traj.q[-1], traj.v[-1], np.zeros(world.model.nv))
                models.rnea(world.model, traj.q[-1], traj.v[-1], np.zeros(world.model.nv))
                models.crba(world.model, traj.q[-1])
            if verbose:
                new = counter.names[n0:]
                print(f"  {name:18s} {time.perf_counter() - t0:6.1f} s, {len(new)} kernels compiled"
                      + (f" ({', '.join(new)})" if new else ""), file=out, flush=True)
    finally:
        stop_compile_ahead(ahead)
        counter.close()
    if verbose:
        print(f"warmup: {counter.count} kernels compiled in {time.perf_counter() - t_all:.1f} s "
              f"({'all were cached' if counter.count == 0 else 'cached for the next runs'})", file=out, flush=True)
    return counter.count


def cache_is_cold():
    """True when the solver's main kernel (`solvers.admm.admm_kernel`) has no valid entry in
    numba's on-disk cache: a first start (or the first after its source changed)."""
    try:
        from solvers.admm import admm_kernel
        return not admm_kernel._cache._cache_file._load_index()
    except Exception:           # numba's cache internals moved: assume warm, start no worker
        return False


def start_compile_ahead(scene, kwargs=None, dt=None):
    """Start a worker process that compiles the post-collision kernels of `scene` (a name of
    `scenes.SCENES`, scene arguments `kwargs` (picklable), time step `dt`, None: the
    scene's), or None if the cache is warm, no second core is free (`_core_free`), or the
    worker cannot be started. Stop it with `stop_compile_ahead` (it exits by itself once done)."""
    if not cache_is_cold() or not _core_free():
        return None
    cmd = [sys.executable, "-m", "simstep.warmup", "ahead", pickle.dumps((scene, kwargs or {}, dt)).hex()]
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=_child_env())
    except OSError:
        return None


def _core_free():
    """True if a second core is idle enough for the worker (on a busy machine it only adds its
    duplicated work): two or more cores this process may run on (`_cores`: its CPU affinity, as
    under taskset or a container's cpuset; the worker inherits it), and fewer than cores − 1.5
    of them busy now (`_busy_cores`: one core for this process, one for the worker, half a core
    of slack), or where that cannot be read, a 1-minute load average below cores − 1. The load
    average lags: after `pip install` or another run it stays near 1 for a minute on an idle
    machine, which kept the worker off (`run humanoid` started right after another run: first
    step after 142 s instead of 96 s)."""
    cpus = _cores()
    if len(cpus) < 2:
        return False
    busy = _busy_cores(cpus)
    if busy is not None:
        return busy < len(cpus) - 1.5
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return load < len(cpus) - 1


def _cores():
    """The cores (numbers) this process may run on: its CPU affinity, else all of them."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _busy_cores(cpus=None, window=0.3):
    """How many of the cores `cpus` (default: `_cores`) the machine kept busy over the next
    `window` s (this process sleeps through it): the sum of their non-idle shares of time in
    /proc/stat's per-core lines; None where /proc/stat cannot be read (not Linux)."""
    cpus = set(_cores() if cpus is None else cpus)

    def sample():
        out = {}
        with open("/proc/stat") as f:
            for line in f:
                name, _, rest = line.partition(" ")
                if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                    t = [int(x) for x in rest.split()[:8]]    # user nice system idle iowait irq softirq steal
                    out[name] = (sum(t), t[3] + t[4])
        return out
    try:
        s0 = sample()
        time.sleep(window)
        s1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    busy, seen = 0.0, 0
    for name, (total0, idle0) in s0.items():
        total1, idle1 = s1.get(name, (total0, idle0))
        if total1 > total0:
            busy += 1.0 - (idle1 - idle0) / (total1 - total0)
            seen += 1
    return busy if seen else None


def _child_env():
    """This process's environment with its import path first, so the worker imports the same tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


BUILT = b"built\n"      # the worker's line on its stdout once the scene's build kernels are cached
READY = b"ready\n"      # ... and once the first steps' kernels are cached


def wait_compile_ahead(proc, timeout=600.0, until=READY):
    """Wait (at most `timeout` s) until the worker of `start_compile_ahead` has cached the
    kernels of the first steps (its `READY` line; until=BUILT: those of the scene's build and
    the Simulator's construction) or has ended, so that they are loaded from the cache rather
    than compiled a second time here."""
    if proc is None:
        return
    seen = getattr(proc, "_lines", None)
    if seen is None:
        seen = proc._lines = set()         # the worker's lines read so far
    if until in seen or READY in seen:
        return
    deadline = time.monotonic() + timeout
    out = proc.stdout
    while out is not None and proc.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if select.select([out], [], [], left)[0]:
            line = out.readline()
            seen.add(line)
            if line in (until, READY, b""):     # the line waited for, ready, or the worker closed its stdout
                return


def stop_compile_ahead(proc):
    """End the worker of `start_compile_ahead` if it still runs (its finished kernels stay cached)."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _tree_root(parent, b):
    """The root link of link b's tree (parent (n,), −1 at roots)."""
    while parent[b] >= 0:
        b = parent[b]
    return b


def synthetic_pairs(detector, self_contact=False):
    """Geometry pairs [(g1, g2 or −1 for the world)] for `_synthetic_fill`: the first
    geometry g on a moving link against the world and, if a link of another tree has geometry,
    against that link (box on box: contacts between bodies bring the operator's elimination
    ordering in); with `self_contact`, against a link of g's own tree instead (None if it has no
    other link with geometry). No geometry at all (a mechanism of loop closures): no pairs."""
    import numpy as np
    body = np.asarray(detector.shapes.body)
    if body.size == 0:
        return None if self_contact else []
    parent = np.asarray(detector.model.parent)
    moving = np.flatnonzero(body >= 0)
    g = int(moving[0]) if moving.size else 0
    pairs = [(g, -1)]
    if not moving.size:
        return None if self_contact else pairs
    root = _tree_root(parent, body[g])
    same = np.array([_tree_root(parent, body[h]) == root for h in moving], bool)
    other = moving[(body[moving] != body[g]) & (same == self_contact)]
    if self_contact and not other.size:
        return None
    return pairs + ([(g, int(other[0]))] if other.size else [])


def _synthetic_fill(detector, pairs):
    """One contact 0.1 mm deep per geometry pair (g1, g2 or −1 for the world) of
    `synthetic_pairs`, written into `detector`'s output buffers as a real detection writes
    them (without running one). Returns their number."""
    import numpy as np
    body = np.asarray(detector.shapes.body)
    out_i, out_p, out_R, out_s = detector._out
    for j, (g1, g2) in enumerate(pairs):
        out_i[:, j] = (body[g1], body[g2] if g2 >= 0 else -1, g1, max(g2, 0), 4 * g1 + j)
        out_s[:, j] = (-1e-4, 0.5, 0.0, 0.0)      # distance (m), friction, restitution, compliance
        out_p[j] = 0.0
        out_R[j] = np.eye(3)
    return len(pairs)


@contextlib.contextmanager
def synthetic_collision(self_contact=False):
    """Within: every detection of a `CollisionDetector` (`run_placed`, which `detect` and the
    steady step call) gives `_synthetic_fill`'s contacts of its `synthetic_pairs(detector,
    self_contact)` (restored after)."""
    from collision.detector import CollisionDetector
    real = CollisionDetector.run_placed, CollisionDetector.detect

    def run_placed(self, oR, op):
        k = _synthetic_fill(self, synthetic_pairs(self, self_contact) or synthetic_pairs(self))
        return k, 0, k
    CollisionDetector.run_placed = run_placed
    CollisionDetector.detect = lambda self, q, **kw: self.contacts_of(*self.run_placed(None, None))
    try:
        yield
    finally:
        CollisionDetector.run_placed, CollisionDetector.detect = real


@contextlib.contextmanager
def placeholder_hulls():
    """Within: every collision mesh a world's builder or a `CollisionDetector` loads
    (`collision.shapes.load_convex_mesh`) is the hull of a 2 cm cube, made without reading the
    file: the worker's scene then has the real one's geometry kinds and array types, for which
    the kernels are compiled, without the meshes' reading and hulls (1.1 s of the humanoid's
    build, trimesh's import included)."""
    import numpy as np
    from scipy.spatial import ConvexHull

    from collision import shapes
    from . import world
    cube = 0.01 * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    hull = shapes._hull_arrays(cube, ConvexHull(cube))
    real = shapes.load_convex_mesh, world.load_convex_mesh
    shapes.load_convex_mesh = world.load_convex_mesh = lambda *a, **k: hull
    try:
        yield
    finally:
        shapes.load_convex_mesh, world.load_convex_mesh = real


@contextlib.contextmanager
def unconstrained():
    """Within: `ProblemAssembler.build` gives no problem (no constraint rows), so a step is its
    free dynamics and its integration alone (`compile_integration_ahead`)."""
    from .problem import ProblemAssembler
    real = ProblemAssembler.build
    ProblemAssembler.build = lambda self, *a, **k: None
    try:
        yield
    finally:
        ProblemAssembler.build = real


def _solve_first(sim):
    """The contact problem of one synthetic step of `sim`, built and solved (the ADMM and what
    it calls, half of a cold start's compile time, before the step's other kernels)."""
    problem = _synthetic_problem(sim)
    if problem is not None:
        sim.admm.solve(problem)


def _synthetic_problem(sim):
    """The contact problem of `sim`'s state with `_synthetic_fill`'s contacts (under
    `synthetic_collision`), or None if the ADMM would not solve one (no geometry, no rows, loop
    closures only, another solver)."""
    import numpy as np
    from .problem import ProblemAssembler
    if len(sim.detector.shapes) == 0 or sim.solver_name != "admm" or sim.lcp is not None:
        return None
    with synthetic_collision():
        c = sim.detector.detect(sim.q, placements=(sim.data.oR, sim.data.op))
    # on an assembler of its own: sim's first step stays a first step (staged, as in a real run)
    problem = ProblemAssembler(sim).build(c, sim.q, sim.v, np.zeros(sim.model.nv), sim.data)
    return problem if problem is not None and problem.op is not None else None


def newton_types():
    """The argument types of `solvers.admm.newton_try` as the ADMM passes them, the same for
    every scene (its operator's parts are named tuples of arrays of fixed kinds), from empty
    arrays: no operator, and so no kernel, is needed to make them (`compile_newton_ahead`)."""
    import numpy as np
    from numba import typeof

    from solvers.delassus_kernels import Explicit, Geometry, Rows, Workspace

    def f(*shape):
        return np.zeros(shape)

    def i(*shape):
        return np.zeros(shape, np.int64)
    rows = Rows(i(0), i(0), f(0, 6), f(0, 6), i(0), f(0), i(0), i(0), i(0, 2), f(0, 12))
    geo = Geometry(i(0, 8), f(6, 0), f(0, 6, 6), f(6, 0), f(0, 6, 6), f(0), rows)
    ws = Workspace(f(0, 6), f(0), f(0), f(0, 6), f(0, 6), f(0, 6), f(0, 6), f(0))
    dn = Explicit(f(0, 0), f(0, 0), f(0), f(0))
    v, vi = f(0), i(0)
    args = (0, geo, ws, dn, vi, vi, vi, v, v, v, True, True, v, 0, 0.0, v, f(0, 0), vi, 0, v, v, v, vi)
    return tuple(typeof(a) for a in args)


def compile_newton_ahead():
    """Compile the ADMM's semismooth Newton polish (`solvers.admm.newton_try` and its callees,
    about 6 s of a cold start's CPU) for `newton_types`, as a callee of the ADMM
    (`models.jitcache.for_kernel_callers`). The caller of `start_compile_ahead` runs it while it
    waits for the worker's build, so the worker, which reaches the Newton about 20 s into a cold
    start, loads it from the cache instead of compiling it."""
    from models.jitcache import for_kernel_callers
    from solvers.admm import newton_try
    with for_kernel_callers():
        newton_try.compile(newton_types())


def compile_callers_share(ahead, scene_fn, kwargs, dt):
    """The share of a cold start that the caller of `start_compile_ahead` takes before it builds
    the scene `scene_fn(**kwargs)` at `dt` itself (nothing without a worker, `ahead` None): the
    Newton while the worker builds the scene (`compile_newton_ahead`), the wait for that build
    (`BUILT`, whose kernels it then loads), then the dynamics and the integration while the
    worker compiles the solver (`compile_integration_ahead`)."""
    if ahead is None:
        return
    compile_newton_ahead()
    wait_compile_ahead(ahead, until=BUILT)
    compile_integration_ahead(scene_fn, kwargs, dt)


def compile_integration_ahead(scene_fn, kwargs, dt):
    """The caller's share of the step besides the solver, before its own build: the scene
    `scene_fn(**kwargs)` built with `placeholder_hulls` and stepped once at `dt` (None: the
    scene's) under `synthetic_collision` and `unconstrained`, which compiles the free dynamics
    and the integration (`simstep.integrator`) for the argument types of a real step without
    collision detection, the contact problem's assembly or the solver (the worker's share). The
    worker, which reaches them after the ADMM, then loads them from the cache."""
    from .simulator import Simulator
    with synthetic_collision(), placeholder_hulls(), unconstrained():
        world = scene_fn(**kwargs)
        dt = dt if dt is not None else getattr(world, "dt", 1e-3)
        Simulator(world, dt=dt, steady_steps=False).run(steps=1)


def compile_ahead(scene, kwargs=None, dt=None, steps=3, ready=None, built=None):
    """The worker of `start_compile_ahead`: build `scene` with `placeholder_hulls` and its
    `Simulator` (then call `built()` if given), solve one synthetic step's contact problem
    (`_solve_first`: the solver's kernels, while the caller compiles the integration and
    collision), and take `steps` steps under `synthetic_collision` (the first step compiles or
    loads the step's kernels, the next ones the warm start's and the steady step's), call
    `ready()` if given, then, if the scene has a self-contact, `steps` more steps with it (the
    elimination ordering of a loop inside a tree)."""
    import scenes as scene_lib
    from .simulator import Simulator
    with synthetic_collision(), placeholder_hulls():
        world = scene_lib.SCENES[scene][0](**(kwargs or {}))
        sim = Simulator(world, dt=dt)
        if built is not None:
            built()
        _solve_first(sim)
        sim.run(steps=steps)
    if ready is not None:
        ready()
    if synthetic_pairs(sim.detector, self_contact=True) is not None:
        with synthetic_collision(self_contact=True):
            sim.run(steps=steps)


def _report_built():
    """The worker's `BUILT` line on its stdout."""
    os.write(1, BUILT)


def _report_ready():
    """The worker's `READY` line on its stdout, which is then closed (fd 1 goes to os.devnull)."""
    os.write(1, READY)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)


if __name__ == "__main__" and sys.argv[1:2] == ["ahead"]:
    sys.stdout = open(os.devnull, "w")          # fd 1 carries the BUILT and READY lines only
    compile_ahead(*pickle.loads(bytes.fromhex(sys.argv[2])), ready=_report_ready, built=_report_built)

"""Many simulations at once: `rollouts` runs a batch of episodes on all cores (a pool of worker
processes) or on a Ray cluster and returns their results in input order.

    import simstep, scenes
    params = [dict(friction=f) for f in np.linspace(0.2, 1.0, 9)]
    trajs = simstep.rollouts(scenes.box_stack, params, duration=2.0)       # all cores
    trajs = simstep.rollouts(scenes.box_stack, params, duration=2.0, backend="ray")

One episode, in a worker: ``world = make_world(**world_args)``, ``sim = Simulator(world, dt=dt,
**sim_options)``, the optional initial state and controller, ``sim.run(steps, record=...)``;
its result is the `Trajectory` (record=True), else a `FinalState`, or what ``reduce(sim,
result)`` returns. The arguments of ``make_world`` are the keys of the parameter dict it names
(all of them if it takes ``**kwargs``); ``q0`` / ``v0`` set the initial state when make_world does
not take them; the controller sees the whole dict. A worker keeps its numba kernels loaded
between episodes (they are read from numba's on-disk cache, not compiled per worker) and
reuses a world it has already built for the same world arguments (``reuse_world``).

Results are bitwise identical to running the same episodes one after the other in one process
(``backend="serial"``): each episode has a fresh `Simulator` and nothing else carries over. An
episode that raises, or whose worker process dies, is returned as an `EpisodeError` (its index,
parameters, error and traceback text) in its place; the others complete.
"""
from __future__ import annotations

import collections
import contextlib
import inspect
import os
import pickle
import sys
import time
import traceback
from dataclasses import dataclass, fields, is_dataclass

import numpy as np

from .results import Trajectory

BACKENDS = ("process", "ray", "serial")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
_STATE_KEYS = ("q0", "v0")


# ---------------------------------------------------------------------------------- results
@dataclass
class FinalState:
    """The state at the end of an episode run with record=False: t (s), q (nq,), v (nv,), the
    number of steps taken; outputs: {name: (steps + 1, ...) array} of the `outputs` sampled
    before the first step and after each step (None without outputs)."""
    t: float
    q: np.ndarray
    v: np.ndarray
    steps: int
    outputs: dict | None = None


class EpisodeError(Exception):
    """An episode that failed, in the place of its result: index (in params), params (its
    dict), error ("ExceptionType: message"), traceback (text, the worker's)."""

    def __init__(self, index, params, error, traceback=""):
        super().__init__(index, params, error, traceback)
        self.index, self.params, self.error, self.traceback = index, params, error, traceback

    def __str__(self):
        return f"episode {self.index} with parameters {self.params!r} failed: {self.error}"

    def __repr__(self):
        return f"EpisodeError({self.index}, {self.params!r}, {self.error!r})"


class RolloutResults(list):
    """The results in input order (a list), with timings of the batch: wall (s, the whole call,
    with starting the workers if it did), episode_wall and episode_cpu (s per episode, wall and
    CPU time of its worker process: less CPU than wall means the core was shared),
    worker (the worker that ran each episode), kernel_compilations (numba kernels the workers
    compiled instead of loading them from the cache; 0 when the cache is warm), backend and
    workers. ``failed`` lists the `EpisodeError`s."""

    def __init__(self, items=(), **info):
        super().__init__(items)
        self.wall = 0.0
        self.episode_wall = np.zeros(len(self))
        self.episode_cpu = np.zeros(len(self))
        self.worker = np.full(len(self), -1)
        self.kernel_compilations = 0
        self.backend, self.workers = None, 0
        self.__dict__.update(info)

    @property
    def failed(self):
        return [r for r in self if isinstance(r, EpisodeError)]


# ---------------------------------------------------------------------------------- episode
_DISPATCHERS = [None, []]     # (number of modules when collected, the cache=True dispatchers found)


def _numba_compilations():
    """Kernels of simstep and the packages it uses that numba compiled in this process instead of
    loading from its on-disk cache (``cache=True`` dispatchers' cache misses)."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:      # pragma: no cover
        return 0
    if _DISPATCHERS[0] != len(sys.modules):     # collected again only when modules were imported
        found = []
        for name, mod in list(sys.modules.items()):
            if mod is None or name.split(".")[0] not in ("simstep", "models", "collision", "solvers", "scenes"):
                continue
            found += [obj for obj in list(vars(mod).values()) if isinstance(obj, Dispatcher) and obj._cache is not None]
        _DISPATCHERS[:] = [len(sys.modules), list({id(d): d for d in found}.values())]
    n = 0
    for d in _DISPATCHERS[1]:
        n += sum(d._cache_misses.values())
    return n


@dataclass
class _Spec:
    """What every episode of one batch shares (pickled once, sent once per worker)."""
    make_world: object
    world_keys: tuple | None      # the parameter names make_world takes; None: all (**kwargs)
    steps: int | None
    duration: float | None
    dt: float | None
    controller: object
    record: bool
    record_contacts: bool
    outputs: dict | None
    reduce: object
    sim_options: dict
    reuse_world: bool


class _WorkerState:
    """A worker's memory between episodes: the batch spec and the last worlds it built."""

    WORLDS = 4

    def __init__(self, in_driver=False):
        self.in_driver = in_driver       # the serial backend: Ctrl-C stops the batch
        self.spec_key, self.spec = None, None
        self.worlds = collections.OrderedDict()

    def set_spec(self, key, blob):
        if key != self.spec_key:
            self.spec = pickle.loads(blob)
            self.spec_key = key
            self.worlds.clear()

    def world(self, spec, kw):
        if not spec.reuse_world:
            return spec.make_world(**kw)
        try:
            key = pickle.dumps(sorted(kw.items()), protocol=4)
        except Exception:      # pragma: no cover (the params came through pickle)
            return spec.make_world(**kw)
        w = self.worlds.get(key)
        if w is None:
            w = spec.make_world(**kw)
            self.worlds[key] = w
            while len(self.worlds) > self.WORLDS:
                self.worlds.popitem(last=False)
        else:
            self.worlds.move_to_end(key)
        return w

    def run(self, p):
        """(ok, result or (error, traceback), (wall, CPU) seconds of the episode)."""
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            out = _episode(self, self.spec, p)
            return True, out, (time.perf_counter() - t0, time.process_time() - c0)
        except BaseException as e:     # noqa: BLE001 (KeyboardInterrupt in a worker is a failure too)
            if isinstance(e, KeyboardInterrupt) and self.in_driver:
                raise
            err = f"{type(e).__name__}: {e}"
            return False, (err, traceback.format_exc()), (time.perf_counter() - t0, time.process_time() - c0)


def _split(spec, p):
    """(make_world's arguments, q0, v0) of a parameter dict."""
    if spec.world_keys is None:
        kw = dict(p)
        state = {}
    else:
        kw = {k: v for k, v in p.items() if k in spec.world_keys}
        state = {k: p[k] for k in _STATE_KEYS if k in p and k not in spec.world_keys}
    return kw, state.get("q0"), state.get("v0")


def _episode(state, spec, p):
    from .simulator import Simulator
    kw, q0, v0 = _split(spec, p)
    world = state.world(spec, kw)
    sim = Simulator(world, dt=spec.dt, **spec.sim_options)
    if q0 is not None or v0 is not None:
        sim.set_state(sim.q if q0 is None else q0, sim.v if v0 is None else v0)
    callback = spec.controller(sim, p) if spec.controller is not None else None
    if callback is not None and not callable(callback):
        raise TypeError(f"the controller must return None or a callable(sim) called after every step, "
                        f"got {callback!r}")
    samples = None
    if spec.outputs:
        samples = {name: [np.asarray(fn(sim))] for name, fn in spec.outputs.items()}
        ctrl = callback

        def callback(s):
            for name, fn in spec.outputs.items():
                samples[name].append(np.asarray(fn(s)))
            if ctrl is not None:
                ctrl(s)
    steps = dict(steps=spec.steps) if spec.duration is None else dict(duration=spec.duration)
    traj = sim.run(**steps, record=spec.record, record_contacts=spec.record_contacts, callback=callback)
    outputs = None if samples is None else {k: np.stack(v) for k, v in samples.items()}
    if spec.record:
        result = traj
        if outputs is not None:
            result.outputs = outputs
    else:
        result = FinalState(sim.t, sim.q.copy(), sim.v.copy(), sim.steps, outputs)
    if spec.reduce is not None:
        result = spec.reduce(sim, result)
    return result


# ---------------------------------------------------------------------------------- outcomes
def max_penetration(sim):
    """The last step's largest penetration (m): an `outputs` entry (picklable)."""
    return sim.stats.max_penetration


SUMMARY_OUTCOMES = {
    "displacement": "largest distance a body origin moved from its start (m)",
    "travel": "horizontal distance the mean of the body origins moved (m)",
    "height": "final height of the highest body origin (m)",
    "final_speed": "largest body-origin speed at the end (m/s)",
    "mean_iterations": "mean ADMM iterations per step",
    "max_iterations": "largest ADMM iterations of a step",
    "mean_contacts": "mean number of contact points per step",
    "max_penetration": "largest penetration over the episode (m)",
}


def summary(sim, result):
    """A reduction (``reduce=summary``) to the scalar outcomes of `SUMMARY_OUTCOMES`, from the
    body origins at the start (the trajectory's first row, else the world's q0) and at the end;
    iterations and contacts need record=True, max_penetration the output `max_penetration`."""
    import models
    m = sim.model
    traj = result if isinstance(result, Trajectory) else None
    q_start = traj.q[0] if traj is not None else sim.world.q0
    p0 = models.Data(m).compute(q_start).op.copy()
    p1 = sim.data.op
    V = sim.data.body_velocities(sim.v)
    speed = np.linalg.norm(V[:, :3] + np.cross(V[:, 3:], p1), axis=1) if m.nbodies else np.zeros(0)
    nan = float("nan")
    out = dict(
        displacement=float(np.linalg.norm(p1 - p0, axis=1).max()) if m.nbodies else 0.0,
        travel=float(np.linalg.norm((p1.mean(0) - p0.mean(0))[:2])) if m.nbodies else 0.0,
        height=float(p1[:, 2].max()) if m.nbodies else nan,
        final_speed=float(speed.max()) if m.nbodies else 0.0,
        mean_iterations=nan, max_iterations=nan, mean_contacts=nan, max_penetration=nan)
    if traj is not None and len(traj) > 1:
        out.update(mean_iterations=float(traj.iterations[1:].mean()), max_iterations=float(traj.iterations[1:].max()),
                   mean_contacts=float(traj.ncontacts[1:].mean()))
    outputs = getattr(result, "outputs", None) or {}
    if "max_penetration" in outputs:
        out["max_penetration"] = float(np.max(outputs["max_penetration"]))
    out["q"] = sim.q.copy()
    return out


# ---------------------------------------------------------------------------------- checks
def _picklable(what, obj, backend):
    try:
        pickle.dumps(obj)
    except Exception as e:
        name = getattr(obj, "__qualname__", type(obj).__name__)
        raise TypeError(
            f"{what} ({name}) must be picklable to run on the {backend!r} backend: it is sent to other "
            f"processes by reference, so define it at module level (not a lambda, nor a function defined "
            f"inside another function); functools.partial of a module-level function works "
            f"(backend='serial' takes anything). Pickling failed with {type(e).__name__}: {e}") from None
    mod = getattr(obj, "__module__", None)
    main = sys.modules.get("__main__")
    if backend == "process" and mod == "__main__" and not getattr(main, "__file__", None):
        raise TypeError(f"{what} ({getattr(obj, '__qualname__', obj)!r}) is defined in an interactive session's "
                        f"__main__, which worker processes cannot import: put it in a module (or use "
                        f"backend='serial' or backend='ray')")


def _world_keys(make_world):
    try:
        sig = inspect.signature(make_world)
    except (TypeError, ValueError):
        return None
    ps = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in ps):
        return None
    return tuple(p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _check_params(params, world_keys, controller):
    if isinstance(params, dict) or isinstance(params, (str, bytes)):
        raise TypeError("params must be a list of dicts, one per episode (got a single "
                        f"{type(params).__name__})")
    try:
        params = list(params)
    except TypeError:
        raise TypeError(f"params must be a list of dicts, one per episode, got {params!r}") from None
    for i, p in enumerate(params):
        if not isinstance(p, dict):
            raise TypeError(f"params[{i}] must be a dict of parameters, got {p!r}")
        bad = [k for k in p if not isinstance(k, str)]
        if bad:
            raise TypeError(f"params[{i}] has keys that are not strings: {bad}")
        if world_keys is not None and controller is None:
            unused = [k for k in p if k not in world_keys and k not in _STATE_KEYS]
            if unused:
                raise TypeError(f"params[{i}] has {unused}, which make_world does not take (its parameters: "
                                f"{', '.join(world_keys) or 'none'}) and no controller receives")
    return params


def _callable_or_none(what, f):
    if f is not None and not callable(f):
        raise TypeError(f"{what} must be callable or None, got {f!r}")
    return f


def _make_spec(make_world, steps, duration, dt, controller, record, record_contacts, outputs, reduce,
               sim_options, reuse_world):
    from ._checks import check_bool, check_int, check_number
    if not callable(make_world):
        raise TypeError(f"make_world must be a callable make_world(**params) -> World, got {make_world!r}")
    if (steps is None) == (duration is None):
        raise TypeError("rollouts needs either steps= (a number of steps) or duration= (seconds), not both")
    if steps is not None:
        steps = check_int("steps", steps, 0)
    else:
        duration = check_number("duration", duration, low=0.0)
    if dt is not None:
        dt = check_number("dt", dt, low=0.0, low_open=True)
    _callable_or_none("controller", controller)
    _callable_or_none("reduce", reduce)
    if outputs is not None:
        if not isinstance(outputs, dict) or not all(isinstance(k, str) and callable(f) for k, f in outputs.items()):
            raise TypeError(f"outputs must be a dict {{name: callable(sim) -> value}}, got {outputs!r}")
        outputs = dict(outputs)
    if sim_options is not None and not isinstance(sim_options, dict):
        raise TypeError(f"sim_options must be a dict of Simulator keywords, got {sim_options!r}")
    sim_options = dict(sim_options or {})
    if "dt" in sim_options:
        raise TypeError("give dt as rollouts(dt=...), not in sim_options")
    return _Spec(make_world, _world_keys(make_world), steps, duration, dt, controller, check_bool("record", record),
                 check_bool("record_contacts", record_contacts), outputs, reduce, sim_options,
                 check_bool("reuse_world", reuse_world))


def _own(x):
    """x with read-only arrays (Ray's zero-copy views of its object store) copied."""
    if isinstance(x, np.ndarray):
        return x if x.flags.writeable else x.copy()
    if isinstance(x, (Trajectory, FinalState)) or (is_dataclass(x) and not isinstance(x, type)):
        for f in fields(x):
            v = getattr(x, f.name)
            nv = _own(v)
            if nv is not v:
                try:
                    setattr(x, f.name, nv)
                except Exception:      # pragma: no cover (frozen dataclass)
                    return x
        if isinstance(getattr(x, "outputs", None), dict) and not any(f.name == "outputs" for f in fields(x)):
            x.outputs = _own(x.outputs)
        return x
    if isinstance(x, dict):
        return {k: _own(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_own(v) for v in x]
    if isinstance(x, tuple) and type(x) is tuple:
        return tuple(_own(v) for v in x)
    return x


@contextlib.contextmanager
def _single_threaded_env():
    """One thread per worker for BLAS and OpenMP (the workers fill the cores), unless set."""
    old = {k: os.environ.get(k) for k in _THREAD_VARS}
    for k in _THREAD_VARS:
        os.environ.setdefault(k, "1")
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1


def _check_workers(workers):
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive integer or None (all cores), got {workers!r}")
    return int(workers)


# ---------------------------------------------------------------------------------- backends
def _process_worker(conn, path):
    """A worker process: receive ("spec", key, blob) and ("run", i, p); answer each run with
    ("done", i, ok, payload, wall, compilations)."""
    for p in reversed(path):
        if p not in sys.path:
            sys.path.insert(0, p)
    state = _WorkerState()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if msg is None:
            return
        if msg[0] == "spec":
            try:
                state.set_spec(msg[1], msg[2])
                conn.send(("spec_ok",))
            except BaseException as e:      # noqa: BLE001
                conn.send(("spec_error", f"{type(e).__name__}: {e}", traceback.format_exc()))
            continue
        _, i, p = msg
        ok, payload, wall = state.run(p)
        try:
            conn.send(("done", i, ok, payload, wall, _numba_compilations()))
        except Exception as e:      # the result would not pickle
            conn.send(("done", i, False, (f"{type(e).__name__}: the episode's result could not be sent back: {e}",
                                          traceback.format_exc()), wall, _numba_compilations()))


class _Proc:
    def __init__(self, ctx, k):
        self.id = k
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_process_worker, args=(child, list(sys.path)), daemon=True,
                                name=f"simstep-rollout-{k}")
        with _single_threaded_env():
            self.proc.start()
        child.close()
        self.spec_key = None
        self.task = None
        self.ready = False       # has answered once (it started and loaded a batch)

    def stop(self, timeout=2.0):
        try:
            self.conn.send(None)
        except Exception:
            pass
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(1.0)
        self.conn.close()


class _ProcessBackend:
    name = "process"

    def __init__(self, workers, start_method="spawn"):
        import multiprocessing as mp
        if start_method not in ("spawn", "forkserver", "fork"):
            raise ValueError(f"start_method must be 'spawn', 'forkserver' or 'fork', got {start_method!r}")
        self.ctx = mp.get_context(start_method)
        self.n = workers or _cpu_count()
        self.procs = []
        self.next_id = 0

    def _spawn(self):
        w = _Proc(self.ctx, self.next_id)
        self.next_id += 1
        return w

    def ensure(self, n):
        while len(self.procs) < n:
            self.procs.append(self._spawn())

    def run(self, spec_key, spec, blob, params, done, n):
        from multiprocessing.connection import wait
        self.ensure(min(self.n, max(n, 1)))
        queue = collections.deque(range(len(params)))
        busy = {}

        def give(w):
            if not queue:
                return
            i = queue.popleft()
            w.task = i
            busy[w.id] = w
            try:
                if w.spec_key != spec_key:
                    w.conn.send(("spec", spec_key, blob))
                    w.spec_key = spec_key
                w.conn.send(("run", i, params[i]))
            except OSError:      # it has died: its sentinel reports it below
                pass

        for w in self.procs:
            give(w)
        while busy:
            ws = list(busy.values())
            ready = wait([w.conn for w in ws] + [w.proc.sentinel for w in ws])
            for w in ws:
                if w.id not in busy:
                    continue
                msg = None
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.conn.poll():
                            msg = w.conn.recv()
                    except (EOFError, OSError):
                        msg = None
                    if msg is None and (w.proc.sentinel in ready or not w.proc.is_alive()):
                        w.proc.join(1.0)
                        if not w.ready:
                            raise RuntimeError(
                                f"a rollout worker process exited with code {w.proc.exitcode} while starting, "
                                f"before it could load the batch. With the {self.ctx.get_start_method()!r} start "
                                f"method a worker imports the main module of the program: a script must start "
                                f"its work under `if __name__ == '__main__':`. Its error output is above.")
                        i = w.task
                        del busy[w.id]
                        done(i, False, (f"WorkerDied: the worker process (pid {w.proc.pid}) exited with code "
                                        f"{w.proc.exitcode} while running this episode (a crash in native code, "
                                        f"os._exit, or killed, e.g. out of memory)", ""), (0.0, 0.0), w.id, 0)
                        self.procs[self.procs.index(w)] = nw = self._spawn()
                        w.conn.close()
                        give(nw)
                        continue
                if msg is None:
                    continue
                if msg[0] == "spec_ok":
                    w.ready = True
                    continue
                if msg[0] == "spec_error":
                    raise RuntimeError(f"a worker could not load the batch (make_world, controller, outputs, "
                                       f"reduce): {msg[1]}\n{msg[2]}")
                _, i, ok, payload, wall, comp = msg
                w.task = None
                del busy[w.id]
                done(i, ok, payload, wall, w.id, comp)
                give(w)

    def close(self, timeout=2.0):
        for w in self.procs:
            w.stop(timeout)
        self.procs = []


class _RayWorker:
    """A Ray actor (one per core): the `_WorkerState` of a process worker."""

    def __init__(self, path):
        for p in reversed(path):
            if p not in sys.path:
                sys.path.insert(0, p)
        self.state = _WorkerState()

    def set_spec(self, key, blob):
        self.state.set_spec(key, blob)
        return os.getpid()

    def run(self, i, p):
        ok, payload, wall = self.state.run(p)
        return i, ok, payload, wall, _numba_compilations()


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("backend='ray' needs Ray: pip install 'ray' (or this package's extra: "
                          "pip install '.[ray]')") from None
    return ray


class _RayBackend:
    name = "ray"
    IN_FLIGHT = 2        # tasks queued per actor, so that an actor never waits for the driver

    def __init__(self, workers, address=None):
        ray = self.ray = _import_ray()
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, logging_level="ERROR")
            if address is None:
                kw["num_cpus"] = workers or _cpu_count()
            ray.init(address=address, **kw)
        self.n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.cls = ray.remote(num_cpus=1, max_restarts=0)(_RayWorker)
        self.actors = []
        self.next_id = 0

    def _spawn(self):
        a = self.cls.remote(list(sys.path))
        a._simstep_id, a._simstep_spec = self.next_id, None
        self.next_id += 1
        return a

    def ensure(self, n):
        while len(self.actors) < n:
            self.actors.append(self._spawn())

    def _set_spec(self, actors, spec_key, blob_ref):
        todo = [a for a in actors if a._simstep_spec != spec_key]
        if todo:
            # a barrier once per batch: every actor is up and has the spec (from the object store)
            try:
                self.ray.get([a.set_spec.remote(spec_key, blob_ref) for a in todo])
            except self.ray.exceptions.RayError as e:
                raise RuntimeError(f"a Ray worker could not start or load the batch (make_world, controller, "
                                   f"outputs, reduce; on a cluster, every node needs simstep and the modules "
                                   f"that define them, e.g. through ray.init(runtime_env=...)): {e}") from None
            for a in todo:
                a._simstep_spec = spec_key

    def run(self, spec_key, spec, blob, params, done, n):
        ray = self.ray
        self.ensure(min(self.n, max(n, 1)))
        blob_ref = ray.put(blob)        # the spec travels through the object store, once per node
        self._set_spec(self.actors, spec_key, blob_ref)
        queue = collections.deque(range(len(params)))
        suspects = collections.deque()   # episodes in flight on an actor that died: each runs alone
        alone = set()       # ids of the actors running a suspect
        inflight = {}       # ref -> (actor, i)
        per_actor = {a._simstep_id: collections.deque() for a in self.actors}    # its refs, oldest first

        def submit(a, i):
            ref = a.run.remote(i, params[i])
            inflight[ref] = (a, i)
            per_actor[a._simstep_id].append(ref)

        def give(a):
            mine = per_actor[a._simstep_id]
            if a._simstep_id in alone:
                return
            if suspects and not mine:
                submit(a, suspects.popleft())
                alone.add(a._simstep_id)
                return
            while queue and len(mine) < self.IN_FLIGHT:
                submit(a, queue.popleft())

        for a in self.actors:
            give(a)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            rest = [r for r in inflight if r not in ready]
            if rest:      # everything else that has finished too, fetched as one batch
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            try:     # the finished results in one call, mapped from the object store
                got = dict(zip(ready, ray.get(ready)))
            except ray.exceptions.RayActorError:
                got = {}
            for ref in ready:
                if ref not in inflight:      # handled with its dead actor
                    continue
                a, i = inflight[ref]
                try:
                    _, ok, payload, wall, comp = got[ref] if ref in got else ray.get(ref)
                except ray.exceptions.RayActorError:
                    self._actor_died(a, inflight, per_actor, suspects, a._simstep_id in alone, done)
                    alone.discard(a._simstep_id)
                    na = self._spawn()
                    self.actors[self.actors.index(a)] = na
                    per_actor[na._simstep_id] = collections.deque()
                    self._set_spec([na], spec_key, blob_ref)
                    for b in self.actors:       # the suspects go to idle actors first
                        give(b)
                    continue
                del inflight[ref]
                per_actor[a._simstep_id].remove(ref)
                alone.discard(a._simstep_id)
                done(i, ok, _own(payload), wall, a._simstep_id, comp)
                give(a)

    def _actor_died(self, a, inflight, per_actor, suspects, alone, done):
        """The tasks of a dead actor, oldest first: those that finished are results. If the actor
        ran one suspect alone, that episode killed it (a failure). Otherwise the ones that did
        not finish become suspects, each run alone on an actor: with several in flight, Ray may
        lose the result of an episode that finished just before another one killed the actor,
        so the oldest unfinished task is not necessarily the culprit."""
        ray = self.ray
        for r in per_actor.pop(a._simstep_id):
            i = inflight.pop(r)[1]
            try:
                _, ok, payload, wall, comp = ray.get(r, timeout=30)
                done(i, ok, _own(payload), wall, a._simstep_id, comp)
            except ray.exceptions.RayActorError as e:
                if not alone:
                    suspects.append(i)
                    continue
                msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
                done(i, False, (f"WorkerDied: the Ray actor running this episode died ({type(e).__name__}: {msg})",
                                ""), (0.0, 0.0), a._simstep_id, 0)
            except ray.exceptions.GetTimeoutError:      # pragma: no cover
                suspects.append(i)

    def close(self, timeout=None):
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:
                pass
        self.actors = []


class _SerialBackend:
    name = "serial"

    def __init__(self, workers=None):
        self.n = 1
        self.state = _WorkerState(in_driver=True)

    def run(self, spec_key, spec, blob, params, done, n):
        self.state.spec_key, self.state.spec = spec_key, spec     # nothing pickled: anything callable works
        self.state.worlds.clear()
        for i, p in enumerate(params):
            ok, payload, wall = self.state.run(p)
            done(i, ok, payload, wall, 0, 0)

    def close(self, timeout=None):
        pass


# ---------------------------------------------------------------------------------- API
class RolloutPool:
    """Workers kept between batches: ``pool.map(make_world, params, ...)`` as `rollouts` (the
    same keywords), without starting the workers again (a process pool starts in about a second
    per worker, a Ray actor in a few). Use as a context manager, or call `close`.

    backend: "process" (worker processes on this machine, started by `start_method`, "spawn"
    by default: a fork of a process that has started threads is unsafe), "ray" (one actor per
    core of the Ray cluster; `address` to join an existing cluster, else a local Ray instance
    with `workers` CPUs is started, and left running for later calls: ``ray.shutdown()`` stops
    it; an already initialised Ray is used as it is) or "serial" (this process, one episode
    after the other). workers: number of worker processes or actors (default: the cores of this
    machine, or of the Ray cluster)."""

    def __init__(self, backend="process", workers=None, address=None, start_method="spawn"):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}")
        workers = _check_workers(workers)
        if address is not None and backend != "ray":
            raise ValueError(f"address= joins a Ray cluster: it needs backend='ray', not {backend!r}")
        self.backend = backend
        t0 = time.perf_counter()
        if backend == "process":
            self._b = _ProcessBackend(workers, start_method)
        elif backend == "ray":
            self._b = _RayBackend(workers, address)
        else:
            self._b = _SerialBackend()
        self._init_time = time.perf_counter() - t0
        self._batches = 0

    @property
    def workers(self):
        """The number of workers (processes or actors) a batch is spread over."""
        return self._b.n

    def map(self, make_world, params, steps=None, dt=None, controller=None, record=True, progress=True, *,
            duration=None, sim_options=None, outputs=None, reduce=None, record_contacts=False, reuse_world=True,
            errors="return", on_result=None, desc=None):
        """Run the episodes of `params` (see `rollouts`) and return their results in input order."""
        batch = _prepare(self.backend, make_world, params, steps, duration, dt, controller, record, record_contacts,
                         outputs, reduce, sim_options, reuse_world, errors, on_result)
        return self._run(batch, progress, desc)

    def _run(self, batch, progress, desc):
        spec, params, errors, on_result = batch
        blob = self._dumps(spec) if self.backend != "serial" else None
        self._batches += 1
        key = (os.getpid(), id(self), self._batches)
        n = len(params)
        out = [None] * n
        ep_wall, ep_cpu, who = np.zeros(n), np.zeros(n), np.full(n, -1)
        comp = {}
        bar = None
        if progress and n:
            from tqdm import tqdm
            bar = tqdm(total=n, desc=desc or "rollouts", unit="episode", file=sys.stderr, mininterval=0.5,
                       dynamic_ncols=True)
        nfail = [0]

        def done(i, ok, payload, wall, worker, compilations):
            if ok:
                out[i] = payload
            else:
                err, tb = payload
                out[i] = EpisodeError(i, params[i], err, tb)
                nfail[0] += 1
            (ep_wall[i], ep_cpu[i]), who[i] = wall, worker
            comp[worker] = max(comp.get(worker, 0), compilations)
            if bar is not None:
                bar.update(1)
                if nfail[0]:
                    bar.set_postfix(failed=nfail[0], refresh=False)
            if on_result is not None:
                on_result(i, out[i])

        t0 = time.perf_counter()
        if n:
            try:
                self._b.run(key, spec, blob, params, done, n)
            except BaseException:
                # interrupted or a batch that cannot load: the workers may still be busy, so they
                # are stopped (the next batch starts new ones)
                self._b.close(timeout=0.2)
                raise
            finally:
                if bar is not None:
                    bar.close()
        res = RolloutResults(out, wall=time.perf_counter() - t0, episode_wall=ep_wall, episode_cpu=ep_cpu, worker=who,
                             kernel_compilations=int(sum(comp.values())), backend=self.backend,
                             workers=min(self._b.n, n) if self.backend != "serial" else 1)
        if errors == "raise" and res.failed:
            first = res.failed[0]
            raise EpisodeError(first.index, first.params, f"{first.error} ({len(res.failed)} of {n} episodes "
                               f"failed)", first.traceback)
        return res

    def _dumps(self, spec):
        if self.backend == "ray":
            # cloudpickle (Ray's) also sends functions of a script's __main__ by value
            import ray.cloudpickle as cp
            return cp.dumps(spec)
        return pickle.dumps(spec)

    def close(self):
        """Stop the workers (a started local Ray instance keeps running)."""
        if getattr(self, "_b", None) is not None:
            self._b.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def rollouts(make_world, params, steps=None, dt=None, controller=None, record=True, backend="process",
             workers=None, progress=True, *, duration=None, sim_options=None, outputs=None, reduce=None,
             record_contacts=False, reuse_world=True, errors="return", on_result=None, address=None,
             start_method="spawn", pool=None, desc=None):
    """Run one simulation per parameter dict of `params` on all cores and return their results,
    a list in input order (`RolloutResults`, with the batch's timings).

    make_world: a picklable (module-level) callable ``make_world(**args) -> World``; its
    arguments are the entries of each parameter dict it names (all of them if it takes
    ``**kwargs``). Entries ``q0`` (nq,) / ``v0`` (nv,) that it does not take set the initial state.
    steps (or duration= in seconds, rounded to whole steps): the length of every episode; dt:
    the time step (default: the world's, see `Simulator`); sim_options: other `Simulator`
    keywords.

    controller: None or a picklable ``controller(sim, params)``, called once the episode's
    Simulator is built, before the first step, with the whole parameter dict: it sets gains and
    targets (``sim.set_targets``, ``sim.set_actuation``) and may return a callable(sim) that
    `Simulator.run` calls after every step (``callback``).

    Each result: the episode's `Trajectory` (record=True; contacts with record_contacts=True),
    else its `FinalState`; outputs ({name: picklable callable(sim) -> array}) are sampled before
    the first step and after every step, as ``result.outputs[name]`` (steps + 1, ...); reduce, a
    picklable ``reduce(sim, result) -> value``, replaces the result by its value in the worker
    (only that value travels back). An episode that failed is an `EpisodeError` in its place
    (errors="raise": raise the first one once all have run). on_result(index, result) is called
    in this process as each episode finishes (in completion order); progress: a tqdm bar.

    backend: "process" (worker processes; workers: how many, default one per core), "ray" (Ray
    actors, one per core of the cluster, `address` to join one; see `RolloutPool`) or "serial"
    (this process; the reference the other two reproduce bitwise). reuse_world: a worker keeps
    the last worlds it built and reuses one for the same make_world arguments (a world is not
    changed by simulating it; set False if make_world attaches state that an episode changes).
    pool: a `RolloutPool` to run on (its backend and workers; the others are ignored)."""
    if pool is not None:
        if not isinstance(pool, RolloutPool):
            raise TypeError(f"pool must be a RolloutPool, got {pool!r}")
        backend = pool.backend
    elif backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}")
    workers = _check_workers(workers)
    # everything is checked before any worker starts
    batch = _prepare(backend, make_world, params, steps, duration, dt, controller, record, record_contacts,
                     outputs, reduce, sim_options, reuse_world, errors, on_result)
    if pool is not None:
        return pool._run(batch, progress, desc)
    t0 = time.perf_counter()
    if not batch[1]:
        return RolloutResults([], backend=backend)
    with RolloutPool(backend, workers, address=address, start_method=start_method) as p:
        res = p._run(batch, progress, desc)
    res.wall = time.perf_counter() - t0       # with starting and stopping the workers
    return res


def _prepare(backend, make_world, params, steps, duration, dt, controller, record, record_contacts, outputs, reduce,
             sim_options, reuse_world, errors, on_result):
    """(spec, params, errors, on_result) of a batch, everything checked."""
    if errors not in ("return", "raise"):
        raise ValueError(f"errors must be 'return' or 'raise', got {errors!r}")
    if on_result is not None and not callable(on_result):
        raise TypeError(f"on_result must be callable(index, result), got {on_result!r}")
    spec = _make_spec(make_world, steps, duration, dt, controller, record, record_contacts, outputs, reduce,
                      sim_options, reuse_world)
    params = _check_params(params, spec.world_keys, controller)
    if backend != "serial":
        for what, obj in (("make_world", make_world), ("controller", controller), ("reduce", reduce)):
            if obj is not None:
                _picklable(what, obj, backend)
        for name, fn in (outputs or {}).items():
            _picklable(f"outputs[{name!r}]", fn, backend)
        for i, p in enumerate(params):
            try:
                pickle.dumps(p)
            except Exception as e:
                raise TypeError(f"params[{i}] cannot be sent to a worker (pickling failed with "
                                f"{type(e).__name__}: {e})") from None
    return spec, params, errors, on_result

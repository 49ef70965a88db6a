"""Command line.

    python -m simstep list                       # the ready scenes
    python -m simstep run SCENE [--duration S] [--dt DT] [--view] [--html OUT] [--plot OUT] [--save OUT]
                                [--video OUT.mp4|OUT.gif] [--contacts]
                                [--set KEY=VALUE ...] [--progress/--no-progress]
    python -m simstep demo [--robot g1]          # load a robot and time one ABA call
    python -m simstep warmup                     # compile every kernel up front (first install)
    python -m simstep sweep SCENE --param NAME=A:B:N [--param ...] [--set KEY=VALUE ...]
                                  [--duration S] [--dt DT] [--backend process|ray|serial]
                                  [--workers N] [--address ADDR] [--out OUT.npz] [--plot OUT.png]
                                  [--outcome NAME]

`run` simulates a scene of `scenes.SCENES` with a progress bar and prints a summary
(simulated time, steps per second, mean and max ADMM iterations, max penetration); --html
writes a self-contained replay, --view serves a live meshcat view (and keeps it open at the
end), --plot writes a PNG of solver iterations, contacts and penetration over time, --video
a movie (viewer.record_video), --contacts draws contact points and force arrows.
--set passes keyword arguments to the scene function (e.g. --set n_links=6).

`sweep` runs one episode per value of the swept scene arguments (`simstep.rollouts`, on all
cores or a Ray cluster): NAME=A:B:N is N values evenly from A to B, NAME=V1,V2,... a list;
several --param give their grid. It prints and saves (--out, .npz) the outcomes of
`simstep.rollouts.SUMMARY_OUTCOMES` per episode and plots the chosen --outcome against the
first swept argument (--plot, default: beside --out).
"""
import argparse
import inspect
import os
import sys
import time
import warnings

import numpy as np


class UsageError(Exception):
    """A bad scene name, option or value: reported in one line, exit status 2."""


def demo(args):
    """Load G1 from example-robot-data, print its sizes and the time of one ABA call."""
    import models
    try:
        path, dirs = models.robot_path(args.robot)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = models.load_urdf(path, package_dirs=dirs)
    q = model.neutral()
    v, tau = np.zeros(model.nv), np.zeros(model.nv)
    t0 = time.perf_counter()
    models.aba(model, q, v, tau)   # first call loads (or compiles) the numba kernels
    t_first = time.perf_counter() - t0
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        a = models.aba(model, q, v, tau)
    t_call = (time.perf_counter() - t0) / n
    print(f"{args.robot}: {model.nbodies} bodies, nq = {model.nq}, nv = {model.nv}, "
          f"{len(model.collision_geometries)} collision and {len(model.visual_geometries)} visual geometries")
    print(f"ABA: {t_call * 1e6:.1f} us per call (first call {t_first:.2f} s incl. kernel loading); "
          f"free-fall base acceleration {a[:3].round(3)}")
    return 0


def _scenes():
    import scenes
    return scenes.SCENES


def list_scenes(args):
    for name, (fn, kw, dur, desc) in _scenes().items():
        extra = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        print(f"{name:22s} {desc} [{dur:g} s; scenes.{fn.__name__}({extra})]")
    return 0


def _parse_value(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    return text


def _scene_kwargs(name, fn, defaults, sets):
    kw = dict(defaults)
    params = inspect.signature(fn).parameters
    for item in sets:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        key, val = item.split("=", 1)
        if key not in params:
            raise UsageError(f"scene '{name}' has no parameter '{key}'; its parameters: {', '.join(params)}")
        kw[key] = _parse_value(val)
    return kw


def _positive(what):
    def conv(text):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if not (np.isfinite(x) and x > 0):
            raise argparse.ArgumentTypeError(f"{what} must be positive, got {text!r}")
        return x
    return conv


def _scene(args):
    """(function, keyword arguments with --set, default duration) of the scene args.scene."""
    table = _scenes()
    if args.scene not in table:
        raise UsageError(f"unknown scene '{args.scene}'; scenes: {', '.join(table)}")
    fn, defaults, duration, _ = table[args.scene]
    return fn, _scene_kwargs(args.scene, fn, defaults, args.set or []), duration


def run(args):
    from simstep.warmup import announce_compilation, start_compile_ahead, stop_compile_ahead
    fn, kw, duration = _scene(args)
    announce_compilation()      # one line before the first kernel compiles (the scene's build may compile)
    ahead = start_compile_ahead(args.scene, kw, args.dt)    # cold cache: a second process compiles half
    try:
        return _run(args, fn, kw, duration, ahead)
    finally:
        stop_compile_ahead(ahead)


def _run(args, fn, kw, duration, ahead):
    import simstep
    from simstep.warmup import CompileCounter, compile_callers_share, wait_compile_ahead
    t_start = time.perf_counter()    # the scene's build and the Simulator's compile most kernels
    try:
        compile_callers_share(ahead, fn, kw, args.dt)    # the Newton and the integration here, the solver there
        world = fn(**kw)
    except (TypeError, ValueError) as e:
        raise UsageError(f"scene '{args.scene}': {e}") from None
    dt = args.dt if args.dt is not None else getattr(world, "dt", 1e-3)
    duration = args.duration if args.duration is not None else duration
    steps = max(1, int(round(duration / dt)))
    sim = simstep.Simulator(world, dt=dt)    # compiles the collision kernels on a cold cache
    wait_compile_ahead(ahead)
    viewer = None
    if args.view:
        from viewer import MeshcatViewer
        viewer = MeshcatViewer(world, realtime=False, contacts=args.contacts)
        print(f"meshcat viewer: {viewer.url()}", file=sys.stderr, flush=True)
    desc = getattr(world, "description", args.scene)
    print(f"{args.scene}: {desc}; nq = {world.model.nq}, nv = {world.model.nv}, dt = {dt:g} s, {steps} steps",
          flush=True)
    record = bool(args.html or args.plot or args.view or args.save or args.video)
    samples = None
    if args.plot:
        from simstep.plots import Sampler
        try:
            samples = Sampler(world)
        except ValueError as e:
            raise UsageError(f"scene '{args.scene}': {e}") from None
    its = np.zeros(steps, int)
    nc = np.zeros(steps, int)
    pen = np.zeros(steps)
    conv = np.ones(steps, bool)
    T = np.empty(steps + 1)
    Q = np.empty((steps + 1, world.model.nq)) if record else None
    V = np.empty((steps + 1, world.model.nv)) if record else None
    contacts = [sim.contacts] if (args.save or args.contacts) else None
    T[0] = sim.t
    if record:
        Q[0], V[0] = sim.q, sim.v
    bar = None
    t0 = time.perf_counter()
    t_first = None
    k = 0
    try:
        for k in range(steps):
            st = sim.step()
            if t_first is None:
                t_first = time.perf_counter() - t0   # includes loading or compiling the numba kernels
                late = CompileCounter()              # compilations after the first step
                if args.progress and steps > 1:      # no bar (and no ETA) before the first step is done
                    from tqdm import tqdm
                    bar = tqdm(total=steps, initial=1, desc=args.scene, unit="step", file=sys.stderr,
                               mininterval=0.5)
            elif bar is not None:
                bar.update()
            its[k], nc[k], pen[k], conv[k] = st.iterations, st.ncontacts, st.max_penetration, st.converged
            T[k + 1] = sim.t
            if record:
                Q[k + 1], V[k + 1] = sim.q, sim.v
            if contacts is not None:
                contacts.append(sim.contacts)
            if samples is not None:
                samples.sample(sim)
            if viewer is not None:
                viewer.update(sim.q, sim.t, contacts=sim.contacts if args.contacts else None, dt=sim.dt)
    except KeyboardInterrupt:
        steps = k
        print("\ninterrupted", file=sys.stderr)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    if t_first is not None:
        late.close()
        if late.count:
            print(f"{late.count} kernels compiled after the first step ({late.seconds:.1f} s of the run: "
                  f"{', '.join(late.names)}); "
                  f"`python -m simstep warmup` compiles them up front")
    its, nc, pen, conv = its[:steps], nc[:steps], pen[:steps], conv[:steps]
    rest = wall - (t_first or 0.0)
    rate = (steps - 1) / rest if steps > 1 and rest > 0 else float("nan")
    done = t0 - t_start + (t_first or 0.0)      # the first step done, from the scene's build on
    print(f"simulated {sim.t:.4g} s in {wall:.2f} s wall ({t_first or 0.0:.2f} s for the first step, done "
          f"{done:.2f} s after the start, kernels {'compiling' if _announced() else 'loading'}): {rate:.0f} "
          f"steps/s after it, {sim.t / max(wall, 1e-12):.3g}x real time overall")
    if steps:
        print(f"ADMM iterations: mean {its.mean():.1f}, max {its.max()}; not converged in {int((~conv).sum())} "
              f"steps; contacts: mean {nc.mean():.1f}, max {nc.max()}; max penetration {pen.max():.3e} m")
    contacts_of = (lambda tr: tr.contacts) if args.contacts else (lambda tr: None)
    if record:
        traj = simstep.Trajectory(T[:steps + 1], Q[:steps + 1], V[:steps + 1], np.concatenate([[0], its]),
                                  np.concatenate([[0], nc]), sim.dt, tuple(world.model.body_names),
                                  tuple(world.model.joint_names))
    if contacts is not None and record:
        from simstep.results import attach_contacts
        attach_contacts(traj, contacts[:steps + 1])
    if args.save:
        traj.save(args.save)
        print(f"wrote {args.save} (simstep.load_trajectory reads it)")
    if args.html:
        from viewer.meshcat_viewer import export_html
        export_html(world, args.html, traj, title=f"simstep: {args.scene}", contacts=contacts_of(traj),
                    dt=sim.dt)
        print(f"wrote {args.html}")
    if args.video:
        from viewer.video import record_video
        n = record_video(world, traj, args.video, contacts=bool(args.contacts))
        print(f"wrote {args.video} ({n} frames)")
    if args.plot:
        from simstep.plots import plot_run
        plot_run(args.plot, f"{args.scene}: {desc}", T[1:steps + 1], its, nc, pen,
                 max_iter=sim.admm.settings.max_iter if sim.solver_name == "admm" else None, samples=samples)
        print(f"wrote {args.plot}")
    if viewer is not None:
        _sigterm_as_interrupt()      # `serve_forever` stops its server on Ctrl-C; do the same on SIGTERM
        if record and steps:
            viewer.play(traj, contacts=contacts_of(traj), dt=sim.dt)   # replay with a time slider
        viewer.serve_forever()
    return 0


def _announced():
    from simstep.warmup import _announced
    return _announced[0]


def warmup(args):
    """Compile every kernel signature the simulator and the scenes use, once."""
    from simstep.warmup import warmup as run_warmup
    print("compiling the numba kernels (a few minutes on a cold cache, seconds when they are cached)",
          file=sys.stderr, flush=True)
    run_warmup()
    return 0


def _sweep_values(item):
    """(name, values) of a --param NAME=A:B:N | NAME=V1,V2,... | NAME=V."""
    if "=" not in item:
        raise UsageError(f"--param expects NAME=A:B:N or NAME=V1,V2,..., got {item!r}")
    name, spec = item.split("=", 1)
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise UsageError(f"--param {name}: a range is A:B:N (N values from A to B), got {spec!r}")
        a, b, n = (_parse_value(p) for p in parts)
        if isinstance(a, (bool, str)) or isinstance(b, (bool, str)) or not isinstance(n, int) or n < 1:
            raise UsageError(f"--param {name}: a range is A:B:N with numbers A, B and a count N ≥ 1, got {spec!r}")
        vals = np.linspace(a, b, n) if n > 1 else np.array([a], float)
        if isinstance(a, int) and isinstance(b, int) and np.all(vals == np.round(vals)):
            return name, [int(v) for v in np.round(vals)]
        return name, [float(f"{v:.12g}") for v in vals]      # 0.6, not 0.6000000000000001
    vals = [_parse_value(v) for v in spec.split(",") if v != ""]
    if not vals:
        raise UsageError(f"--param {name} has no values")
    return name, vals


def sweep(args):
    import itertools

    import simstep
    from simstep.rollouts import SUMMARY_OUTCOMES, max_penetration, summary
    fn, base, duration = _scene(args)
    scene_params = inspect.signature(fn).parameters
    swept = [_sweep_values(item) for item in args.param]
    names = [n for n, _ in swept]
    for n in names:
        if n not in scene_params:
            raise UsageError(f"scene '{args.scene}' has no parameter '{n}'; its parameters: {', '.join(scene_params)}")
    if len(set(names)) != len(names):
        raise UsageError(f"--param names a parameter twice: {names}")
    if args.outcome not in SUMMARY_OUTCOMES:
        raise UsageError(f"unknown outcome '{args.outcome}'; outcomes: {', '.join(SUMMARY_OUTCOMES)}")
    grid = list(itertools.product(*[v for _, v in swept]))
    params = [dict(base, **dict(zip(names, vals))) for vals in grid]
    duration = args.duration if args.duration is not None else duration
    print(f"{args.scene}: {len(params)} episodes of {duration:g} s ({', '.join(f'{n}: {len(v)} values' for n, v in swept)}), "
          f"backend {args.backend}", flush=True)
    try:
        res = simstep.rollouts(fn, params, duration=duration, dt=args.dt, backend=args.backend, workers=args.workers,
                               progress=args.progress, reduce=summary, outputs=dict(max_penetration=max_penetration),
                               address=args.address, desc=args.scene)
    except ImportError as e:
        raise UsageError(str(e)) from None
    failed = res.failed
    cols = ["displacement", "height", "mean_iterations"]
    if args.outcome not in cols:
        cols.insert(0, args.outcome)
    print("  ".join(f"{n:>12s}" for n in names + cols))
    for vals, r in zip(grid, res):
        cells = [f"{v:>12g}" if isinstance(v, (int, float)) else f"{v!s:>12}" for v in vals]
        if isinstance(r, simstep.EpisodeError):
            cells.append(f"  failed: {r.error.splitlines()[0][:100]}")
        else:
            cells += [f"{r[c]:>12.4g}" for c in cols]
        print("  ".join(cells))
    sim_time = sum(duration for r in res if not isinstance(r, simstep.EpisodeError))
    print(f"{len(params) - len(failed)} of {len(params)} episodes in {res.wall:.2f} s wall on {res.workers} "
          f"{args.backend} worker(s): {sim_time / max(res.wall, 1e-12):.3g} simulated s per wall s"
          + (f"; {len(failed)} failed" if failed else ""))
    if args.out:
        _save_sweep(args.out, args.scene, duration, names, grid, res)
        print(f"wrote {args.out}")
    plot = args.plot or (os.path.splitext(args.out)[0] + ".png" if args.out else None)
    if plot:
        _plot_sweep(plot, args.scene, duration, names, grid, res, args.outcome, SUMMARY_OUTCOMES[args.outcome])
        print(f"wrote {plot}")
    return 1 if failed and len(failed) == len(params) else 0


def _save_sweep(path, scene, duration, names, grid, res):
    import simstep
    from simstep.rollouts import SUMMARY_OUTCOMES
    ok = [not isinstance(r, simstep.EpisodeError) for r in res]
    arrays = dict(scene=np.array(scene), duration=np.float64(duration), names=np.array(names, dtype=str),
                  failed=~np.array(ok), error=np.array([r.error if not k else "" for r, k in zip(res, ok)], dtype=str),
                  wall=res.episode_wall)
    for j, n in enumerate(names):
        col = [g[j] for g in grid]
        arrays[f"param_{n}"] = np.array(col) if all(isinstance(v, (int, float)) for v in col) else \
            np.array([str(v) for v in col])
    for o in SUMMARY_OUTCOMES:
        arrays[o] = np.array([r[o] if k else np.nan for r, k in zip(res, ok)], float)
    qs = [r["q"] for r, k in zip(res, ok) if k]
    if qs and all(q.shape == qs[0].shape for q in qs):
        Q = np.full((len(res), qs[0].shape[0]), np.nan)
        Q[np.flatnonzero(ok)] = qs
        arrays["q_final"] = Q
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def _plot_sweep(path, scene, duration, names, grid, res, outcome, label):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import simstep
    x_all = [g[0] for g in grid]
    numeric = all(isinstance(v, (int, float)) for v in x_all)
    xs = sorted(set(x_all), key=lambda v: (v if numeric else str(v)))
    pos = {v: (v if numeric else k) for k, v in enumerate(xs)}
    groups = {}
    for g, r in zip(grid, res):
        groups.setdefault(tuple(g[1:]), []).append((g[0], r))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, rows in groups.items():
        lab = ", ".join(f"{n}={v:g}" if isinstance(v, float) else f"{n}={v}" for n, v in zip(names[1:], key)) or None
        good = [(pos[x], r[outcome]) for x, r in rows if not isinstance(r, simstep.EpisodeError)]
        bad = [pos[x] for x, r in rows if isinstance(r, simstep.EpisodeError)]
        if good:
            ax.plot(*zip(*good), "o-", ms=4, lw=1, label=lab)
        if bad:
            ax.plot(bad, [0.0] * len(bad), "x", color="red", ms=8, label="failed" if lab is None else f"{lab}: failed")
    if not numeric:
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_xlabel(names[0])
    unit = label[label.rfind("(") + 1:-1] if label.endswith(")") else ""
    ax.set_ylabel(f"{outcome} ({unit})" if unit else outcome)
    ax.set_title(f"{scene}: {outcome} after {duration:g} s")
    ax.grid(alpha=0.3)
    if len(groups) > 1 or any(isinstance(r, simstep.EpisodeError) for r in res):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _sigterm_as_interrupt():
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:      # not the main thread
        pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line (what is wrong and what exists), status 2."""

    def error(self, message):
        raise UsageError(message)


def main(argv=None):
    ap = _Parser(prog="python -m simstep", description="simstep command line")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    d = sub.add_parser("demo", help="load a robot and time one ABA call")
    d.add_argument("--robot", default="g1")
    d.set_defaults(fn=demo)
    w = sub.add_parser("warmup", help="compile every numba kernel up front (cached on disk)")
    w.set_defaults(fn=warmup)
    ls = sub.add_parser("list", help="list the ready scenes")
    ls.set_defaults(fn=list_scenes)
    r = sub.add_parser("run", help="simulate a scene")
    r.add_argument("scene")
    r.add_argument("--duration", type=_positive("--duration"), help="simulated seconds (default: the scene's)")
    r.add_argument("--dt", type=_positive("--dt"), help="time step in seconds (default: the scene's)")
    r.add_argument("--view", action="store_true", help="live meshcat view")
    r.add_argument("--html", metavar="OUT", help="write a self-contained HTML replay")
    r.add_argument("--plot", metavar="OUT", help="write a PNG of solver iterations, contacts, penetration and the scene's quantities (world.plots)")
    r.add_argument("--save", metavar="OUT", help="write the trajectory (t, q, v, contacts) as .npz")
    r.add_argument("--video", metavar="OUT", help="write a movie of the run (.mp4 or .gif; needs chromium)")
    r.add_argument("--contacts", action="store_true",
                   help="draw contact points and force arrows in --view, --html and --video")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="scene function argument (repeatable)")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="tqdm progress bar (default on)")
    r.set_defaults(fn=run)
    s = sub.add_parser("sweep", help="one episode per value of swept scene arguments, on all cores or Ray")
    s.add_argument("scene")
    s.add_argument("--param", action="append", required=True, metavar="NAME=A:B:N",
                   help="swept scene argument: A:B:N (N values from A to B) or V1,V2,... (repeatable: a grid)")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="fixed scene function argument (repeatable)")
    s.add_argument("--duration", type=_positive("--duration"), help="simulated seconds (default: the scene's)")
    s.add_argument("--dt", type=_positive("--dt"), help="time step in seconds (default: the scene's)")
    s.add_argument("--backend", choices=("process", "ray", "serial"), default="process")
    s.add_argument("--workers", type=int, help="worker processes or Ray actors (default: one per core)")
    s.add_argument("--address", help="a Ray cluster to join (with --backend ray; default: a local Ray)")
    s.add_argument("--out", metavar="OUT", help="write the parameters and outcomes as .npz")
    s.add_argument("--plot", metavar="OUT", help="PNG of the outcome against the first swept argument "
                                                 "(default: --out with .png)")
    s.add_argument("--outcome", default="displacement", help="the outcome plotted (default: displacement)")
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="tqdm progress bar (default on)")
    s.set_defaults(fn=sweep)
    try:
        args = ap.parse_args(argv)
        return args.fn(args)
    except UsageError as e:
        msg = str(e)
        words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
        if "invalid choice" in msg and "argument cmd" in msg:
            msg += "; commands: demo, list, run, sweep, warmup"
        elif words[:1] == ["sweep"] and ("unrecognized arguments" in msg or "the following arguments" in msg):
            msg += ("; sweep options: --param NAME=A:B:N, --set KEY=VALUE, --duration S, --dt DT, --backend "
                    "process|ray|serial, --workers N, --address ADDR, --out OUT, --plot OUT, --outcome NAME, "
                    "--no-progress; scenes: " + ", ".join(_scenes()))
        elif "unrecognized arguments" in msg or "the following arguments" in msg:
            msg += ("; run options: --duration S, --dt DT, --view, --html OUT, --plot OUT, --save OUT, --set KEY=VALUE, "
                    "--no-progress; scenes: " + ", ".join(_scenes()))
        print(f"python -m simstep: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Command line.

    python -m simstep list                       # the ready scenes
    python -m simstep run SCENE [--duration S] [--dt DT] [--view] [--html OUT] [--plot OUT]
                                [--set KEY=VALUE ...] [--progress/--no-progress]
    python -m simstep demo [--robot g1]          # load a robot and time one ABA call

`run` simulates a scene of `scenes.SCENES` with a progress bar and prints a summary
(simulated time, steps per second, mean and max ADMM iterations, max penetration); --html
writes a self-contained replay, --view serves a live meshcat view (and keeps it open at the
end), --plot writes a PNG of solver iterations, contacts and penetration over time.
--set passes keyword arguments to the scene function (e.g. --set n_links=6).
"""
import argparse
import inspect
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


def run(args):
    import simstep
    table = _scenes()
    if args.scene not in table:
        raise UsageError(f"unknown scene '{args.scene}'; scenes: {', '.join(table)}")
    fn, defaults, duration, _ = table[args.scene]
    kw = _scene_kwargs(args.scene, fn, defaults, args.set or [])
    try:
        world = fn(**kw)
    except (TypeError, ValueError) as e:
        raise UsageError(f"scene '{args.scene}': {e}") from None
    dt = args.dt if args.dt is not None else getattr(world, "dt", 1e-3)
    duration = args.duration if args.duration is not None else duration
    steps = max(1, int(round(duration / dt)))
    sim = simstep.Simulator(world, dt=dt)
    viewer = None
    if args.view:
        from viewer import MeshcatViewer
        viewer = MeshcatViewer(world, realtime=False)
        print(f"meshcat viewer: {viewer.url()}", file=sys.stderr, flush=True)
    desc = getattr(world, "description", args.scene)
    print(f"{args.scene}: {desc}; nq = {world.model.nq}, nv = {world.model.nv}, dt = {dt:g} s, {steps} steps",
          flush=True)
    record = bool(args.html or args.plot or args.view or args.save)
    its = np.zeros(steps, int)
    nc = np.zeros(steps, int)
    pen = np.zeros(steps)
    conv = np.ones(steps, bool)
    T = np.empty(steps + 1)
    Q = np.empty((steps + 1, world.model.nq)) if record else None
    V = np.empty((steps + 1, world.model.nv)) if record else None
    contacts = [sim.contacts] if args.save else None
    T[0] = sim.t
    if record:
        Q[0], V[0] = sim.q, sim.v
    it = range(steps)
    if args.progress:
        from tqdm import tqdm
        it = tqdm(it, desc=args.scene, unit="step", file=sys.stderr, mininterval=0.5)
    t0 = time.perf_counter()
    t_first = None
    k = 0
    try:
        for k in it:
            st = sim.step()
            if t_first is None:
                t_first = time.perf_counter() - t0   # includes loading or compiling the numba kernels
            its[k], nc[k], pen[k], conv[k] = st.iterations, st.ncontacts, st.max_penetration, st.converged
            T[k + 1] = sim.t
            if record:
                Q[k + 1], V[k + 1] = sim.q, sim.v
            if contacts is not None:
                contacts.append(sim.contacts)
            if viewer is not None:
                viewer.update(sim.q, sim.t)
    except KeyboardInterrupt:
        steps = k
        print("\ninterrupted", file=sys.stderr)
    wall = time.perf_counter() - t0
    its, nc, pen, conv = its[:steps], nc[:steps], pen[:steps], conv[:steps]
    rest = wall - (t_first or 0.0)
    rate = (steps - 1) / rest if steps > 1 and rest > 0 else float("nan")
    print(f"simulated {sim.t:.4g} s in {wall:.2f} s wall ({t_first or 0.0:.2f} s for the first step, kernels "
          f"loading): {rate:.0f} steps/s after it, {sim.t / max(wall, 1e-12):.3g}x real time overall")
    if steps:
        print(f"ADMM iterations: mean {its.mean():.1f}, max {its.max()}; not converged in {int((~conv).sum())} "
              f"steps; contacts: mean {nc.mean():.1f}, max {nc.max()}; max penetration {pen.max():.3e} m")
    if record:
        traj = simstep.Trajectory(T[:steps + 1], Q[:steps + 1], V[:steps + 1], np.concatenate([[0], its]),
                                  np.concatenate([[0], nc]), sim.dt, tuple(world.model.body_names),
                                  tuple(world.model.joint_names))
    if args.save:
        from simstep.results import attach_contacts
        attach_contacts(traj, contacts[:steps + 1])
        traj.save(args.save)
        print(f"wrote {args.save} (simstep.load_trajectory reads it)")
    if args.html:
        from viewer.meshcat_viewer import export_html
        export_html(world, args.html, traj, title=f"simstep: {args.scene}")
        print(f"wrote {args.html}")
    if args.plot:
        _plot(args.plot, args.scene, T[1:steps + 1], its, nc, pen)
        print(f"wrote {args.plot}")
    if viewer is not None:
        _sigterm_as_interrupt()      # `serve_forever` stops its server on Ctrl-C; do the same on SIGTERM
        if record and steps:
            viewer.play(traj)        # replay with a time slider in the open page
        viewer.serve_forever()
    return 0


def _sigterm_as_interrupt():
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:      # not the main thread
        pass


def _plot(path, name, t, its, nc, pen):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    ax[0].plot(t, its, lw=0.8)
    ax[0].set_ylabel("ADMM iterations")
    ax[0].set_title(name)
    ax[1].plot(t, nc, lw=0.8)
    ax[1].set_ylabel("contacts")
    ax[2].plot(t, pen * 1e3, lw=0.8)
    ax[2].set_ylabel("max penetration (mm)")
    ax[2].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
    ls = sub.add_parser("list", help="list the ready scenes")
    ls.set_defaults(fn=list_scenes)
    r = sub.add_parser("run", help="simulate a scene")
    r.add_argument("scene")
    r.add_argument("--duration", type=_positive("--duration"), help="simulated seconds (default: the scene's)")
    r.add_argument("--dt", type=_positive("--dt"), help="time step in seconds (default: the scene's)")
    r.add_argument("--view", action="store_true", help="live meshcat view")
    r.add_argument("--html", metavar="OUT", help="write a self-contained HTML replay")
    r.add_argument("--plot", metavar="OUT", help="write a PNG of iterations, contacts and penetration")
    r.add_argument("--save", metavar="OUT", help="write the trajectory (t, q, v, contacts) as .npz")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="scene function argument (repeatable)")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="tqdm progress bar (default on)")
    r.set_defaults(fn=run)
    try:
        args = ap.parse_args(argv)
        return args.fn(args)
    except UsageError as e:
        msg = str(e)
        if "invalid choice" in msg:
            msg += "; commands: demo, list, run"
        elif "unrecognized arguments" in msg or "the following arguments" in msg:
            msg += ("; run options: --duration S, --dt DT, --view, --html OUT, --plot OUT, --save OUT, --set KEY=VALUE, "
                    "--no-progress; scenes: " + ", ".join(_scenes()))
        print(f"python -m simstep: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

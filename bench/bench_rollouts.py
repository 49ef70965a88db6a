"""Batched rollouts (`simstep.rollouts`): throughput against the number of workers, per-episode
overhead and start-up of each backend, and what they imply for a cluster.

Workload: the 36-box triangle pyramid (`box_pyramid_triangle`: 8 layers, dt 1 ms) with the
friction swept over [0.3, 0.9], episodes of --duration s (0.5), --episodes of them (16). For
each backend (this process one episode after the other; worker processes; Ray actors on a
local Ray with one CPU per core) and 1, 2, ... workers up to the cores (--max-workers), the
workers are started and warmed first (one episode each), then the batch is timed:
throughput = simulated seconds / wall second, scaling efficiency = throughput / (n × the
1-worker throughput of that backend). Every batch's results are checked bitwise against the
serial run. The workers' CPU time per episode against the wall time tells how much of the
cores they actually got (on a machine shared with other jobs, less than all).

Overhead: --tiny episodes of one step on a one-box world (reused by the worker) on one warm
worker: per episode, the wall time less the time the worker spent in the episode (Simulator
built, one step) is what the backend adds (dispatch, pickling, transport). Start-up: a new pool
until its first result (spawn and forkserver processes, Ray actors; `ray.init` apart).

Cluster arithmetic (printed and in the JSON): on N nodes of M cores, episodes per hour ≈
N·M·3600 / (t_episode + overhead), capped at 3600 / overhead for one driver, from the CPU
time of an episode on one worker and Ray's per-episode overhead measured here (episodes are
independent: a dedicated core runs one episode after the other at that pace).

    python bench/bench_rollouts.py [--episodes 16] [--duration 0.5] [--max-workers 2] [--tiny 200]
                                   [--no-ray]

Writes bench/results/rollouts.json and rollouts.png. On a shared 2-core machine the numbers are
noisy (other processes take cores): one run, as measured.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import scenes  # noqa: E402
import simstep  # noqa: E402
from simstep.rollouts import _cpu_count  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
SCENE = "box_pyramid_triangle"


def pyramid(friction=0.5):
    fn, kw, _, _ = scenes.SCENES[SCENE]
    return fn(**kw, friction=friction)


def one_box(n=1):
    return scenes.box_stack(n=n)


def same(a, b):
    return all(getattr(a, f).tobytes() == getattr(b, f).tobytes() for f in ("t", "q", "v", "iterations"))


def timed_batch(pool, params, duration, reference):
    """(throughput, wall, results) of one batch on a warm pool."""
    t0 = time.perf_counter()
    res = pool.map(pyramid, params, duration=duration, progress=False)
    wall = time.perf_counter() - t0
    if res.failed:
        raise RuntimeError(f"episodes failed: {res.failed[0]}")
    if reference is not None and not all(same(a, b) for a, b in zip(res, reference)):
        raise AssertionError(f"{pool.backend}: results differ from the serial run")
    return duration * len(params) / wall, wall, res


def warm(pool, n):
    """Start the pool's workers and load their kernels: one short episode each."""
    pool.map(pyramid, [dict(friction=0.5)] * n, steps=5, progress=False)


def overhead(pool, tiny):
    """Per-episode backend overhead on one warm worker (s), and the mean in-worker episode time."""
    pool.map(one_box, [dict(n=1)] * 4, steps=1, progress=False)
    t0 = time.perf_counter()
    res = pool.map(one_box, [dict(n=1)] * tiny, steps=1, progress=False)
    wall = time.perf_counter() - t0
    inside = float(np.mean(res.episode_wall))
    return wall / tiny - inside, inside


def startup(backend, **kw):
    t0 = time.perf_counter()
    with simstep.RolloutPool(backend, workers=1, **kw) as pool:
        pool.map(one_box, [dict(n=1)], steps=1, progress=False)
        return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--max-workers", type=int, default=_cpu_count())
    ap.add_argument("--tiny", type=int, default=200)
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    cores = _cpu_count()
    params = [dict(friction=float(f)) for f in np.linspace(0.3, 0.9, args.episodes)]
    counts = list(range(1, args.max_workers + 1))
    out = dict(machine=dict(cores=cores, cpu=platform.processor() or platform.machine(), python=platform.python_version(),
                            load_at_start=os.getloadavg()),
               scene=SCENE, episodes=args.episodes, duration=args.duration, backends={})

    print(f"{SCENE}: {args.episodes} episodes of {args.duration:g} s (friction 0.3..0.9), {cores} cores, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    serial = simstep.RolloutPool("serial")
    warm(serial, 1)
    thr, wall, ref = timed_batch(serial, params, args.duration, None)
    t_ep = wall / args.episodes
    cpu_s = float(np.sum(ref.episode_cpu))
    o, inside = overhead(serial, args.tiny)
    out["backends"]["serial"] = dict(workers=[1], throughput=[thr], wall=[wall], episode_wall=t_ep,
                                     cpu_share=[cpu_s / wall], per_cpu_second=[args.duration * args.episodes / cpu_s],
                                     overhead=o, tiny_episode=inside)
    print(f"serial: {thr:.3f} simulated s / s ({t_ep:.3f} s per episode, CPU {cpu_s / wall:.0%} of the wall time); "
          f"overhead {o * 1e6:.0f} µs per episode (a one-step episode takes {inside * 1e3:.2f} ms inside)", flush=True)

    backends = [("process", {})]
    ray = None
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            print("ray: not installed (pip install '.[ray]'), skipped")
    if ray is not None:
        t0 = time.perf_counter()
        ray.init(num_cpus=max(counts), include_dashboard=False, logging_level="ERROR")
        out["ray_init"] = time.perf_counter() - t0
        print(f"ray.init (local, {max(counts)} CPUs): {out['ray_init']:.2f} s", flush=True)
        backends.append(("ray", {}))
    for backend, kw in backends:
        rec = dict(workers=[], throughput=[], wall=[], efficiency=[], cpu_share=[], per_cpu_second=[])
        for n in counts:
            with simstep.RolloutPool(backend, workers=n, **kw) as pool:
                warm(pool, n)
                thr, wall, res = timed_batch(pool, params, args.duration, ref)
                if n == 1:
                    rec["overhead"], rec["tiny_episode"] = overhead(pool, args.tiny)
            rec["workers"].append(n)
            rec["throughput"].append(thr)
            rec["wall"].append(wall)
            rec["efficiency"].append(thr / (n * rec["throughput"][0]))
            cpu_s = float(np.sum(res.episode_cpu))
            rec["cpu_share"].append(cpu_s / (wall * n))      # the part of n cores the workers got
            rec["per_cpu_second"].append(args.duration * args.episodes / cpu_s)
            print(f"{backend} ×{n}: {thr:.3f} simulated s / s (wall {wall:.2f} s), efficiency "
                  f"{rec['efficiency'][-1]:.2f}, vs serial {thr / out['backends']['serial']['throughput'][0]:.2f}×; "
                  f"the workers had {rec['cpu_share'][-1]:.0%} of {n} core(s), "
                  f"{rec['per_cpu_second'][-1]:.3f} simulated s per CPU s", flush=True)
        print(f"{backend}: overhead {rec['overhead'] * 1e6:.0f} µs per episode "
              f"(a one-step episode takes {rec['tiny_episode'] * 1e3:.2f} ms inside)", flush=True)
        out["backends"][backend] = rec

    st = dict(process_spawn=startup("process"), process_forkserver=startup("process", start_method="forkserver"))
    if ray is not None:
        st["ray_actor"] = startup("ray")
    out["startup"] = st
    print("start-up of one worker until its first result: " + ", ".join(f"{k} {v:.2f} s" for k, v in st.items()))
    if ray is not None:
        ray.shutdown()

    # cluster arithmetic: a node's cores run independent episodes, each taking the CPU time an
    # episode took here on one worker, plus the backend's per-episode overhead; one driver
    # dispatches at most 1 / overhead episodes per second
    name = "ray" if "ray" in out["backends"] else "process"
    b = out["backends"][name]
    t1 = args.duration / b["per_cpu_second"][0]      # CPU s per episode on one core (1 worker, warm)
    o = max(b["overhead"], 0.0)
    rows = []
    for N, M in ((1, cores), (4, 32), (16, 64), (64, 64)):
        ideal = N * M * 3600 / (t1 + o)
        rate = min(ideal, 3600 / o if o > 0 else np.inf)
        rows.append(dict(nodes=N, cores=M, episodes_per_hour=rate, limited_by_driver=bool(ideal > rate)))
    out["cluster"] = dict(backend=name, episode_cpu_seconds=t1, overhead=o, rows=rows)
    print(f"cluster ({name}): {t1:.3f} CPU s per episode on one core, overhead {o * 1e3:.2f} ms per episode")
    for r in rows:
        print(f"  {r['nodes']:3d} nodes × {r['cores']:3d} cores: {r['episodes_per_hour']:.3g} episodes of "
              f"{args.duration:g} s per hour" + (" (one driver's dispatch limit)" if r["limited_by_driver"] else ""))
    out["machine"]["load_at_end"] = os.getloadavg()

    path = os.path.join(RESULTS, "rollouts.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path}")
    plot(out, os.path.join(RESULTS, "rollouts.png"))


def plot(out, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    base = out["backends"]["serial"]["throughput"][0]
    n_max = 1
    for name, rec in out["backends"].items():
        if name == "serial":
            continue
        ax.plot(rec["workers"], rec["throughput"], "o-", label=name)
        n_max = max(n_max, max(rec["workers"]))
    ax.plot([1, n_max], [base, base * n_max], "k--", lw=0.8, label="serial × workers (ideal)")
    ax.axhline(base, color="gray", lw=0.8, ls=":", label="serial (this process)")
    ax.set_xlabel("workers")
    ax.set_ylabel("simulated seconds per wall second")
    ax.set_xticks(range(1, n_max + 1))
    ax.set_title(f"{out['scene']}: {out['episodes']} episodes of {out['duration']:g} s, "
                 f"{out['machine']['cores']} cores")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

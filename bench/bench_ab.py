"""Two checkouts of this project on one core, in alternating blocks, each against MuJoCo.

A change's effect on a step is often a few per cent, while a shared machine's speed drifts by more
than that from one run to the next (`bench_step.py`'s two runs at the same time moved by 5–10%
on a 2-core VM). Here both checkouts step the same settled state (`bench_step.py`'s scenes and
states) in two worker processes pinned to one core. The parent alternates them block by block,
flipping the order every round, and each worker times MuJoCo right after its own block, so a
drift hits both checkouts and their peer alike. Per scene it reports the medians of the blocks'
mean step times, the two checkouts' ratio per round (median, mean, 10th and 90th percentiles)
and each checkout's ratio to MuJoCo per block; it writes bench/results/bench_ab.json and
bench_ab.png.

    python bench/bench_ab.py --base ../previous-checkout --scenes go2_standing go2_trotting

The workers run this file from this checkout with the other checkout's packages first on their
path, so the other checkout needs `bench/bench_step.py` with the same scene names. Both load the
state this checkout's `bench_step.py` settled (settling it first if it is not in bench/results).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")


def worker(root, scene, state, steps, core):
    """A checkout's side: ready once its simulator and MuJoCo sit at the settled state, then for
    each line on stdin one block of `steps` of ours and then of MuJoCo's; prints both means (µs)."""
    os.sched_setaffinity(0, {core})
    sys.path[:0] = [root, os.path.join(root, "bench")]
    import bench_step as bs
    import simstep
    build, settle, _ = bs.SCENES[scene]
    world, mj = build()
    if not os.path.exists(state):          # this checkout's settle (`bench_step.settled`), saved there
        bs.settled(scene, world, settle, False)
    d = np.load(state)
    sim = simstep.Simulator(world, dt=bs.DT)
    sim.set_state(d["q"], d["v"], t=float(d["t"]))
    step_mj = None if mj is None else _mujoco_stepper(mj, settle, bs.DT)
    for _ in range(200):                   # warm start, ρ and the compiled code's first calls
        sim.step()
    print("ready", flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        for _ in range(steps):
            sim.step()
        t1 = time.perf_counter()
        if step_mj is not None:
            for _ in range(steps):
                step_mj()
        t2 = time.perf_counter()
        print((t1 - t0) / steps * 1e6, (t2 - t1) / steps * 1e6 if step_mj is not None else float("nan"), flush=True)


def _mujoco_stepper(mj, settle, dt):
    """One step of the scene's MuJoCo (its control first: the trot's targets, timed as ours
    evaluates them inside its step), after `settle` s of them."""
    import mujoco
    mjm, mjd, control = mj()

    def step():
        if control is not None:
            control(mjm, mjd)
        mujoco.mj_step(mjm, mjd)
    for _ in range(int(round(settle / dt))):
        step()
    return step


def compare(scene, base, rounds, steps, core, warm_rounds):
    """Block means (µs) of both checkouts and their MuJoCo, `rounds` rounds after `warm_rounds`."""
    sys.path.insert(0, HERE)
    import bench_step as bs
    state = os.path.join(RESULTS, f"settled_{scene}_{bs.SCENES[scene][1]:g}s.npz")
    procs = {}
    for name, root in (("head", ROOT), ("base", base)):      # head first: it settles the state if needed
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", root, scene, state, str(steps),
                              str(core)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        if line != "ready":
            p.kill()
            raise RuntimeError(f"the {name} worker ({root}) failed on {scene}: {line or p.wait()}")
        procs[name] = p
    times = {name: [] for name in procs}
    try:
        for r in range(warm_rounds + rounds):
            for name in (("head", "base") if r % 2 == 0 else ("base", "head")):
                p = procs[name]
                p.stdin.write("go\n")
                p.stdin.flush()
                ours, theirs = map(float, p.stdout.readline().split())
                if r >= warm_rounds:
                    times[name].append((ours, theirs))
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait()
    return {name: np.array(t) for name, t in times.items()}


def summary(scene, t):
    """The row of one scene from `compare`'s block means."""
    h, b = t["head"], t["base"]
    ratio = h[:, 0] / b[:, 0]
    row = dict(scene=scene, blocks=len(ratio), head_us=float(np.median(h[:, 0])), base_us=float(np.median(b[:, 0])),
               ratio_median=float(np.median(ratio)), ratio_mean=float(ratio.mean()),
               ratio_p10=float(np.percentile(ratio, 10)), ratio_p90=float(np.percentile(ratio, 90)),
               ratios=ratio.tolist())
    if np.isfinite(h[:, 1]).all():
        row.update(mujoco_us=float(np.median(np.r_[h[:, 1], b[:, 1]])),
                   head_vs_mujoco=float(np.median(h[:, 0] / h[:, 1])), base_vs_mujoco=float(np.median(b[:, 0] / b[:, 1])))
    return row


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(rows), 3.6))
    ax.boxplot([r["ratios"] for r in rows], whis=(10, 90), showfliers=False)
    ax.set_xticks(range(1, len(rows) + 1), [r["scene"] for r in rows], rotation=20)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_ylabel("step time, this checkout / base (per round)")
    ax.set_title("Alternating blocks on one core (whiskers: 10th–90th percentiles)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        root, scene, state, steps, core = sys.argv[2:7]
        return worker(root, scene, state, int(steps), int(core))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout's root directory")
    ap.add_argument("--scenes", nargs="+", default=["go2_standing", "go2_trotting"])
    ap.add_argument("--rounds", type=int, default=30, help="measured rounds (one block of each checkout)")
    ap.add_argument("--steps", type=int, default=1000, help="steps per block (ours, then MuJoCo's as many)")
    ap.add_argument("--warm-rounds", type=int, default=2, help="rounds run first and not counted")
    ap.add_argument("--core", type=int, default=None, help="the core both workers run on (default: the last allowed)")
    a = ap.parse_args()
    base = os.path.abspath(a.base)
    if not os.path.exists(os.path.join(base, "bench", "bench_step.py")):
        ap.error(f"--base {a.base}: no bench/bench_step.py there (give the other checkout's root)")
    sys.path.insert(0, HERE)
    import bench_step as bs
    unknown = [s for s in a.scenes if s not in bs.SCENES]
    if unknown:
        ap.error(f"unknown scenes {unknown}; bench_step.py has {sorted(bs.SCENES)}")
    if a.rounds < 1 or a.steps < 1 or a.warm_rounds < 0:
        ap.error("--rounds and --steps must be ≥ 1, --warm-rounds ≥ 0")
    core = max(os.sched_getaffinity(0)) if a.core is None else a.core
    rows = []
    print(f"{'scene':16s} {'this µs':>9s} {'base µs':>9s} {'ratio (median, mean, p10–p90)':>33s} "
          f"{'MuJoCo µs':>10s} {'this/MJ':>8s} {'base/MJ':>8s}")
    for scene in a.scenes:
        row = summary(scene, compare(scene, base, a.rounds, a.steps, core, a.warm_rounds))
        rows.append(row)
        print(f"{scene:16s} {row['head_us']:9.1f} {row['base_us']:9.1f} {row['ratio_median']:9.3f} "
              f"{row['ratio_mean']:7.3f} {row['ratio_p10']:7.3f}–{row['ratio_p90']:.3f} "
              f"{row.get('mujoco_us', np.nan):10.1f} {row.get('head_vs_mujoco', np.nan):8.2f} "
              f"{row.get('base_vs_mujoco', np.nan):8.2f}", flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "bench_ab.json"), "w") as f:
        json.dump(dict(base=base, core=core, rounds=a.rounds, steps=a.steps, rows=rows), f, indent=1)
    plot(rows, os.path.join(RESULTS, "bench_ab.png"))


if __name__ == "__main__":
    main()

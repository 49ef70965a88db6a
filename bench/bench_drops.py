"""G1 dropped in many orientations, ours against MuJoCo: the step's cost once the robot lies.

One settled state is a lottery: where a fallen robot comes to rest decides how hard its
contact problems are (the same scene settled by two releases differed by 5x in solver time,
by 50x on the robot pile), so a change is judged here on a distribution. Each drop: G1
(passive, as `bench_step`'s G1 scenes, self-collision on, 0.9 m up) released in a random
orientation (seeded axis, angle 0.3-1.2 rad), settled for `--settle` s in each simulator (each on
its own trajectory: they part after a few steps), then `--steps` steps timed in alternating
blocks of `--block`, ours then MuJoCo's (`bench_step.robot_mujoco`: the same URDF, our
collision hulls as its meshes, elliptic cones, dt 1 ms).

Per drop: mean step time of both and its phases, ADMM iterations, Newton steps, steps at the
iteration cap, the largest joint speed (a robot still moving after the settle). Then the mean,
median and p95 over the drops and the ratio of the means. Writes
``bench/results/bench_drops.json`` and ``bench_drops.png``.

    python bench/bench_drops.py --drops 24
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench_step as B  # noqa: E402
import simstep  # noqa: E402

PHASES = ("time_collision", "time_dynamics", "time_operator", "time_solver", "time_integration")


def orientation(seed):
    """(x, y, z, w) of a rotation about a seeded random axis by 0.3-1.2 rad."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.3, 1.2)
    return tuple(float(x) for x in np.r_[axis * np.sin(angle / 2), np.cos(angle / 2)])


def drop(seed, settle, steps, block, peer=True, sim_options=None):
    """One drop's row (module docstring); sim_options: keywords of our `simstep.Simulator`."""
    quat = orientation(seed)
    sim = simstep.Simulator(B.g1_world(quat), dt=B.DT, **(sim_options or {}))
    sim.run(int(round(settle / B.DT)))
    mjm = mjd = None
    if peer:
        import mujoco
        mjm = B.g1_mujoco(quat)
        mjd = mujoco.MjData(mjm)
        for _ in range(int(round(settle / B.DT))):
            mujoco.mj_step(mjm, mjd)
    phases = {k: 0.0 for k in PHASES}
    counts = dict(its=0, newton=0, cap=0, vmax=0.0, contacts=0)

    def record(st):
        for k in PHASES:
            phases[k] += getattr(st, k)
        counts["its"] += st.iterations
        counts["newton"] += st.newton_steps
        counts["cap"] += st.iterations >= sim.admm.settings.max_iter
        counts["vmax"] = max(counts["vmax"], float(np.abs(sim.v).max()))
        counts["contacts"] = st.ncontacts
    ours, theirs = B.alternating_blocks(sim, steps, block, record,
                                        None if mjm is None else (lambda: mujoco.mj_step(mjm, mjd)))
    row = dict(seed=seed, quaternion=quat, ours_mean_us=1e6 * float(np.mean(ours)),
               phases_mean_us={k[5:]: 1e6 * v / steps for k, v in phases.items()},
               iterations_mean=counts["its"] / steps, newton_steps_mean=counts["newton"] / steps,
               at_cap=int(counts["cap"]), contacts=int(counts["contacts"]), max_joint_speed=counts["vmax"])
    if theirs:
        row.update(mujoco_mean_us=1e6 * float(np.mean(theirs)), mujoco_contacts=int(mjd.ncon),
                   ratio=float(np.mean(ours) / np.mean(theirs)))
    return row


def summary(values):
    """mean, median and p95 of the drops' values."""
    x = np.asarray(values, float)
    return dict(mean=float(x.mean()), median=float(np.median(x)), p95=float(np.percentile(x, 95)))


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    seeds = [r["seed"] for r in rows]
    ax.plot(seeds, [r["ours_mean_us"] for r in rows], "o", label="ours")
    if "mujoco_mean_us" in rows[0]:
        ax.plot(seeds, [r["mujoco_mean_us"] for r in rows], "s", label="MuJoCo")
    ax.set_xlabel("drop (seed)")
    ax.set_ylabel("mean step time after the settle (µs)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("G1 dropped in random orientations")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drops", type=int, default=24, help="number of drops (seeds 1..N)")
    ap.add_argument("--first", type=int, default=1, help="first seed")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds before the measured steps")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--block", type=int, default=100, help="steps per alternating block")
    ap.add_argument("--no-peer", action="store_true", help="ours only (no MuJoCo)")
    ap.add_argument("--erp", type=float, default=None, help="our Simulator's erp (default: its default)")
    args = ap.parse_args()
    if args.drops < 1 or args.steps < 1 or args.block < 1 or not args.settle >= 0:
        ap.error("--drops, --steps and --block must be ≥ 1 and --settle ≥ 0")
    rows = []
    print(f"{'seed':>4s} {'ours us':>8s} {'mj us':>8s} {'ratio':>6s} {'solver':>7s} {'coll':>6s} {'its':>6s} "
          f"{'newton':>6s} {'cap':>4s} {'k':>3s} {'max |v|':>8s}")
    for seed in range(args.first, args.first + args.drops):
        r = drop(seed, args.settle, args.steps, args.block, not args.no_peer,
                 None if args.erp is None else dict(erp=args.erp))
        rows.append(r)
        print(f"{seed:4d} {r['ours_mean_us']:8.0f} {r.get('mujoco_mean_us', np.nan):8.0f} {r.get('ratio', np.nan):6.2f} "
              f"{r['phases_mean_us']['solver']:7.0f} {r['phases_mean_us']['collision']:6.1f} "
              f"{r['iterations_mean']:6.2f} {r['newton_steps_mean']:6.2f} {r['at_cap']:4d} {r['contacts']:3d} "
              f"{r['max_joint_speed']:8.2e}", flush=True)
    out = dict(benchmark="g1_drops", python=platform.python_version(), machine=platform.machine(), dt=B.DT,
               erp=args.erp, settle_s=args.settle, steps=args.steps, block=args.block, rows=rows,
               ours_us=summary([r["ours_mean_us"] for r in rows]),
               solver_us=summary([r["phases_mean_us"]["solver"] for r in rows]),
               collision_us=summary([r["phases_mean_us"]["collision"] for r in rows]),
               steps_at_cap=int(sum(r["at_cap"] for r in rows)),
               moving=int(sum(r["max_joint_speed"] > 0.05 for r in rows)))
    line = (f"\nover {len(rows)} drops: ours mean {out['ours_us']['mean']:.0f} / median {out['ours_us']['median']:.0f} "
            f"/ p95 {out['ours_us']['p95']:.0f} µs (solver mean {out['solver_us']['mean']:.0f}, collision "
            f"{out['collision_us']['mean']:.1f}); {out['steps_at_cap']} steps at the cap; {out['moving']} robots "
            f"with a joint faster than 0.05 rad/s")
    if not args.no_peer:
        out["mujoco_us"] = summary([r["mujoco_mean_us"] for r in rows])
        out["ratio_of_means"] = out["ours_us"]["mean"] / out["mujoco_us"]["mean"]
        out["ratio_median"] = float(np.median([r["ratio"] for r in rows]))
        line += (f"\nMuJoCo mean {out['mujoco_us']['mean']:.0f} / median {out['mujoco_us']['median']:.0f} / p95 "
                 f"{out['mujoco_us']['p95']:.0f} µs; ratio of means {out['ratio_of_means']:.2f}, median of the "
                 f"drops' ratios {out['ratio_median']:.2f}")
    print(line)
    os.makedirs(B.RESULTS, exist_ok=True)
    dst = os.path.join(B.RESULTS, "bench_drops.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
    plot(rows, os.path.join(B.RESULTS, "bench_drops.png"))
    print(f"wrote {dst} and bench_drops.png")


if __name__ == "__main__":
    main()

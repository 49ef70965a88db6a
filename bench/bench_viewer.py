"""Cost of live viewing: the same simulation run with and without a live meshcat viewer,
alternated so machine noise hits both, as the ratio of median wall times.

    python bench/bench_viewer.py [--scene g1] [--steps 300] [--rounds 7] [--fps 30]
"""
import argparse
import json
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import models  # noqa: E402
import simstep  # noqa: E402
import viewer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def g1_world():
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, position=(0, 0, 0.9), quaternion=(0, np.sin(0.3), 0, np.cos(0.3)), package_dirs=dirs)
    return b.build()


def pyramid_world():
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    k = 0
    for level, n in enumerate((4, 3, 2, 1)):
        for i in range(n):
            b.add_box(f"b{k}", (0.1, 0.1, 0.1), position=((i - (n - 1) / 2) * 0.204, 0, 0.1 + 0.2 * level))
            k += 1
    return b.build()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", choices=["g1", "pyramid"], default="g1")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--fps", type=float, default=30.0)
    args = ap.parse_args()
    world = g1_world() if args.scene == "g1" else pyramid_world()
    v = viewer.MeshcatViewer(world, fps=args.fps)
    t_plain, t_live = [], []
    for r in range(args.rounds + 1):
        for live in (False, True):
            sim = simstep.Simulator(world, dt=1e-3)
            t0 = time.perf_counter()
            sim.run(args.steps, viewer=v if live else None)
            dt = time.perf_counter() - t0
            if r:           # round 0 warms up (kernels, server)
                (t_live if live else t_plain).append(dt)
    frames = v.frames_sent
    v.close()
    med_p, med_l = float(np.median(t_plain)), float(np.median(t_live))
    ratio = med_l / med_p
    print(f"{'scene':8s} {'steps':>5s} {'plain [s]':>10s} {'live [s]':>10s} {'slowdown':>9s} {'frames':>7s}")
    print(f"{args.scene:8s} {args.steps:5d} {med_p:10.3f} {med_l:10.3f} {100 * (ratio - 1):8.1f}% {frames:7d}")
    out = dict(benchmark="viewer", scene=args.scene, steps=args.steps, fps=args.fps, plain_s=t_plain, live_s=t_live,
               median_plain_s=med_p, median_live_s=med_l, slowdown=ratio - 1, frames_sent=frames,
               python=platform.python_version())
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    dst = os.path.join(HERE, "results", "bench_viewer.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()

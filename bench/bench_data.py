"""`models.Data` per call (compute at q, free acceleration, M⁻¹) on the 10-box triangle pyramid
and G1, optionally against another checkout of this repository in the same run.

Each round times every case in this tree and then in the other (`--against PATH`, a
`git worktree` of the baseline), each in a fresh process, alternating so that machine noise hits
both alike. Times are CPU time of the process (`time.process_time`: less sensitive than the
wall clock to other processes on a loaded machine); reported: medians and 95th percentiles over rounds of the best-of-5 mean of a batch,
and the ratio of the medians (ours / theirs).

    python bench/bench_data.py [--against ../main] [--rounds 9] [--number 2000]
"""
import argparse
import json
import os
import subprocess
import sys
import time
import timeit
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("compute", "free_acceleration", "minv")


def _cases():
    import models
    import scenes
    path, dirs = models.robot_path("g1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g1 = models.load_urdf(path, package_dirs=dirs)
    out = {}
    for name, m in (("pyramid10", scenes.box_pyramid(layers=4, shape="triangle").model), ("g1", g1)):
        rng = np.random.default_rng(0)
        q = m.random_configuration(rng)
        v, tau = rng.normal(size=(2, m.nv))
        fext, qdd = rng.normal(size=(m.nbodies, 6)), np.empty(m.nv)
        d = models.Data(m).compute(q)
        out[name] = dict(compute=lambda d=d, q=q: d._compute(q),
                         free_acceleration=lambda d=d, v=v, tau=tau, f=fext, o=qdd: d.free_acceleration(v, tau, f, o),
                         minv=lambda d=d, tau=tau, f=fext, o=qdd: d.minv(tau, f, o))
    return out


def _time_here(number):
    """One round in this process: {scene: {case: µs per call}}."""
    res = {}
    for scene, fns in _cases().items():
        res[scene] = {}
        for case in CASES:
            fns[case]()
            res[scene][case] = min(timeit.repeat(fns[case], number=number, repeat=5, timer=time.process_time)) / number * 1e6
    return res


def _round(tree, number):
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--number", str(number)],
                         env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", help="another checkout (the baseline), timed in alternation")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--number", type=int, default=2000, help="calls per timed batch")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_time_here(args.number)))
        return
    trees = {"ours": ROOT} | ({"theirs": os.path.abspath(args.against)} if args.against else {})
    runs = {k: [] for k in trees}
    for _ in range(args.rounds):
        for k, tree in trees.items():
            runs[k].append(_round(tree, args.number))
    print(f"load {open('/proc/loadavg').read().split()[:3]}" if os.path.exists("/proc/loadavg") else "")
    print(f"{'scene':10s} {'case':18s} " + " ".join(f"{k + ' med':>10s} {k + ' p95':>10s}" for k in trees)
          + ("  ratio" if len(trees) > 1 else ""))
    for scene in runs["ours"][0]:
        for case in CASES:
            cols, med = [], {}
            for k in trees:
                t = np.array([r[scene][case] for r in runs[k]])
                med[k] = float(np.median(t))
                cols.append(f"{med[k]:10.3f} {float(np.percentile(t, 95)):10.3f}")
            ratio = f"  {med['ours'] / med['theirs']:.3f}" if len(trees) > 1 else ""
            print(f"{scene:10s} {case:18s} " + " ".join(cols) + ratio)


if __name__ == "__main__":
    main()

"""ABA, RNEA and CRBA per call on G1 and Talos: ours against Pinocchio in the same run.

Both are called from Python through their public functions (input checks included), at the
same random configurations. Times are the median over rounds of the best-of-5 mean of a
batch; ours and Pinocchio's batches alternate so machine noise hits both alike.

    python bench/bench_dynamics.py [--robots g1 talos] [--number 2000]
"""
import argparse
import json
import os
import platform
import sys
import timeit
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import models  # noqa: E402

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    sys.exit("bench_dynamics needs Pinocchio: pip install -e '.[dev]'")

HERE = os.path.dirname(os.path.abspath(__file__))


def per_call_us(fn, number, rounds):
    fn()
    return [min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6 for _ in range(rounds)]


def bench_robot(name, number, rounds, seed=0):
    path, dirs = models.robot_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = models.load_urdf(path, package_dirs=dirs)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    q = m.random_configuration(rng)
    v, tau = rng.normal(size=(2, m.nv))
    cases = {
        "ABA": (lambda: models.aba(m, q, v, tau), lambda: pin.aba(pm, pd, q, v, tau)),
        "RNEA": (lambda: models.rnea(m, q, v, tau), lambda: pin.rnea(pm, pd, q, v, tau)),
        "CRBA": (lambda: models.crba(m, q), lambda: pin.crba(pm, pd, q)),
    }
    rows = []
    for alg, (ours, theirs) in cases.items():
        t_ours, t_pin = [], []
        for _ in range(rounds):
            t_ours += per_call_us(ours, number, 1)
            t_pin += per_call_us(theirs, number, 1)
        o, p = float(np.median(t_ours)), float(np.median(t_pin))
        rows.append(dict(robot=name, nv=m.nv, algorithm=alg, ours_us=o, pinocchio_us=p, ratio=o / p))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=["g1", "talos"])
    ap.add_argument("--number", type=int, default=2000, help="calls per timed batch")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = [r for name in args.robots for r in bench_robot(name, args.number, args.rounds)]
    print(f"{'robot':8s} {'nv':>3s} {'alg':5s} {'ours [us]':>10s} {'pinocchio [us]':>15s} {'ratio':>6s}")
    for r in rows:
        print(f"{r['robot']:8s} {r['nv']:3d} {r['algorithm']:5s} {r['ours_us']:10.2f} {r['pinocchio_us']:15.2f} "
              f"{r['ratio']:6.2f}")
    out = dict(benchmark="dynamics", python=platform.python_version(), pinocchio=pin.__version__,
               machine=platform.machine(), cpus=os.cpu_count(), rows=rows)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    dst = os.path.join(HERE, "results", "bench_dynamics.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()

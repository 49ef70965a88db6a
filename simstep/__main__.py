"""Command line: ``python -m simstep demo`` (more commands come with the scenes)."""
import argparse
import sys
import time
import warnings

import numpy as np


def demo(args):
    """Load G1 from example-robot-data, print its sizes and the time of one ABA call."""
    import models
    path, dirs = models.robot_path(args.robot)
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m simstep", description="simstep command line")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="load a robot and time one ABA call")
    d.add_argument("--robot", default="g1")
    d.set_defaults(fn=demo)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())

"""The contact solver's settings compared on the same recorded problems.

A simulation of one of `bench_step`'s scenes (from its settled state, default G1 falling 0.3 s
after release) is run with the default solver, and every step's contact problem is recorded:
G = J M⁻¹ Jᵀ explicitly (from the operator's products), g, the cones, the compliance, the warm
start and λ_max. Then each variant of the ADMM's settings solves all of them, in order, with
one solver object (ρ carried over as in a simulation), on the explicit G: the iterates are
those of the matrix-free operator up to round-off, so the iteration counts are the
simulation's, while times are not (the explicit route's factorisations are O(m³): use
`bench_step.py` for times). Prints per variant the ADMM iterations mean / median / p95 / max,
the share of solves ended by the warm start or its polishes (ADMM iterations ≤ 1), the Newton
polish's steps per solve and the unconverged solves; writes bench/results/bench_replay.json.

    python bench/bench_replay.py [--scene g1_falling] [--steps 1000] [--variants default no_newton ...]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_step  # noqa: E402
from solvers.admm import ADMMSettings, ADMMSolver  # noqa: E402
from solvers.cones import ConeSet  # noqa: E402
from solvers.pgs import explicit_matrix  # noqa: E402

VARIANTS = {
    "default": {},
    "no_newton": dict(newton_rows=0),
    "no_newton_no_anderson": dict(newton_rows=0, anderson=0),
    "newton_steps_12": dict(newton_steps=12),
}


class RecordedOperator:
    """A recorded G offering only ``matvec``: the solver runs on its explicit side
    (`solvers.opstate.compiled_state`)."""

    def __init__(self, G):
        self.G = G

    def matvec(self, x):
        return self.G @ x


def record(scene, steps):
    """The contact problems of `steps` steps of `scene` from its settled state (dicts)."""
    build, settle, _ = bench_step.SCENES[scene]
    world, _ = build()
    sim = bench_step.settled(scene, world, settle, False)
    problems = []
    solve = ADMMSolver.solve

    def recording(self, op, g=None, cones=None, **kw):
        if g is None and cones is None:
            p = op
            m = p.g.shape[0]
            G = explicit_matrix(lambda x: np.asarray(p.op.matvec(x), float), m)
            kind, _, size, param = p.cones.arrays()
            problems.append(dict(G=0.5 * (G + G.T), g=p.g.copy(),
                                 cones=ConeSet.from_blocks(zip(kind.tolist(), size.tolist(), param.tolist())),
                                 x0=None if p.x0 is None else p.x0.copy(), L=p.max_eigenvalue,
                                 Rc=None if p.compliance is None else np.array(p.compliance, float)))
        return solve(self, op, g, cones, **kw)

    ADMMSolver.solve = recording
    try:
        sim.run(steps)
    finally:
        ADMMSolver.solve = solve
    return problems


def replay(problems, settings):
    solver = ADMMSolver(ADMMSettings(**settings))
    its, newton, conv = [], [], []
    for p in problems:
        r = solver.solve(RecordedOperator(p["G"]), p["g"], p["cones"], compliance=p["Rc"], x0=p["x0"],
                         max_eigenvalue=p["L"])
        its.append(r.iterations)
        newton.append(r.newton_steps)
        conv.append(r.converged)
    its = np.array(its)
    return dict(iterations_mean=float(its.mean()), iterations_median=float(np.median(its)),
                iterations_p95=float(np.percentile(its, 95)), iterations_max=int(its.max()),
                within_one_percent=100.0 * float(np.mean(its <= 1)), newton_steps_mean=float(np.mean(newton)),
                unconverged=int(len(conv) - sum(conv)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="g1_falling", choices=list(bench_step.SCENES))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--variants", nargs="+", default=["default", "no_newton"], choices=list(VARIANTS))
    args = ap.parse_args()
    problems = record(args.scene, args.steps)
    print(f"{args.scene}: {len(problems)} problems recorded, {np.mean([p['g'].size for p in problems]):.0f} rows mean")
    print(f"{'variant':24s} {'mean':>6s} {'median':>6s} {'p95':>5s} {'max':>5s} {'<=1 %':>6s} {'newton':>6s} "
          f"{'unconv':>6s}   [ADMM iterations per solve; newton: its steps per solve]")
    rows = {}
    for v in args.variants:
        r = rows[v] = replay(problems, VARIANTS[v])
        print(f"{v:24s} {r['iterations_mean']:6.1f} {r['iterations_median']:6.0f} {r['iterations_p95']:5.0f} "
              f"{r['iterations_max']:5d} {r['within_one_percent']:6.1f} {r['newton_steps_mean']:6.1f} {r['unconverged']:6d}")
    os.makedirs(bench_step.RESULTS, exist_ok=True)
    dst = os.path.join(bench_step.RESULTS, "bench_replay.json")
    with open(dst, "w") as f:
        json.dump(dict(scene=args.scene, steps=args.steps, problems=len(problems), variants=rows), f, indent=1)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()

"""Save contact problems of three G1 on the 30-box pyramid (`scenes.pyramid_with_robots`) as data
(tests/data/problem_robots_*.npz), read by tests/robot_problems.py.

The pile's state after seconds of simulation differs in the last bits between CPUs, so the tests
read the problems instead of simulating them. Each file holds the state (q, v) at the start of a
step, that step's contacts (bodies, points, frames, friction), its joint-limit and joint-friction
rows (joint, side or bound), the right-hand side g = J v_free + targets, the warm start x0 the
simulator built (zeros and has_x0 = False if it had none), the λ_max(G) estimate it passed and the
step's iteration count on the solver of the day. The operator is rebuilt from them.

    python bench/make_robot_problems.py [--settle 3] [--steps 300] [--save 0 40 ...]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import scenes  # noqa: E402
import simstep  # noqa: E402
from solvers.constraints import JointFriction, JointLimit  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "tests", "data")


def capture_step(sim):
    """One step; returns the solver's inputs (g, x0, max_eigenvalue), the state before it and the
    step's stats."""
    got = {}
    solve = sim.admm.solve

    def spy(op, g=None, cones=None, compliance=None, x0=None, max_eigenvalue=None, **kw):
        if g is None and cones is None:      # solve(problem): the step's problem object
            p = op
            op, g, cones, compliance, x0, max_eigenvalue = p.op, p.g, p.cones, p.compliance, p.x0, p.max_eigenvalue
            kw.setdefault("jv", p.jv)
        got.update(g=np.array(g), has_x0=x0 is not None, x0=np.zeros(len(g)) if x0 is None else np.array(x0),
                   L=float(max_eigenvalue), kind=cones.arrays()[0].copy(), size=cones.arrays()[2].copy(),
                   param=cones.arrays()[3].copy())
        return solve(op, g, cones, compliance=compliance, x0=x0, max_eigenvalue=max_eigenvalue, **kw)

    q, v = sim.q.copy(), sim.v.copy()
    sim.admm.solve = spy
    try:
        st = sim.step()
    finally:
        sim.admm.solve = solve
    return q, v, got, st


def tail_rows(sim):
    """The step's rows after the contacts: (joint names, sides ('lower'/'upper' or '' for
    friction), joint-friction bounds (N·m, 0 for limits))."""
    tail = sim.assembler.tail          # (signature, ConstraintSet, ConeSet) of the step's rows after the contacts
    cons = [] if tail is None else tail[1].constraints
    if any(not isinstance(c, (JointLimit, JointFriction)) for c in cons):
        raise ValueError("only joint limits and joint friction after the contacts are saved")
    names = [str(c.joint) for c in cons]
    sides = [c.side if isinstance(c, JointLimit) else "" for c in cons]
    bounds = [c.max_torque if isinstance(c, JointFriction) else 0.0 for c in cons]
    return np.array(names), np.array(sides), np.array(bounds, float)


def settled(settle):
    world = scenes.pyramid_with_robots()
    sim = simstep.Simulator(world, dt=1e-3)
    path = os.path.join(HERE, "results", f"settled_robots_on_pyramid_{settle:g}s.npz")
    if os.path.exists(path):          # bench_step.py's cached state
        d = np.load(path)
        sim.set_state(d["q"], d["v"], t=float(d["t"]))
    else:
        sim.run(int(round(settle / sim.dt)))
    return sim


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--steps", type=int, default=300, help="steps run after settling")
    ap.add_argument("--save", type=int, nargs="*", default=[30, 150, 299], help="steps to save")
    ap.add_argument("--name", default="robots")
    args = ap.parse_args()
    sim = settled(args.settle)
    for i in range(args.steps):
        q, v, got, st = capture_step(sim)
        print(f"step {i}: t {sim.t:.3f} contacts {st.ncontacts} rows {st.nrows} iterations {st.iterations} "
              f"warm {st.warm_started} residual {st.velocity_residual:.1e}", flush=True)
        if i not in args.save:
            continue
        c = sim.contacts
        names, sides, bounds = tail_rows(sim)
        path = os.path.join(OUT, f"problem_{args.name}_{i}.npz")
        np.savez_compressed(path, scene="pyramid_with_robots", t=sim.t - sim.dt, dt=sim.dt, q=q, v=v,
                            body1=c.body1, body2=c.body2, position=c.position, frame=c.frame, friction=c.friction,
                            tail_joint=names, tail_side=sides, tail_bound=bounds, g=got["g"], x0=got["x0"],
                            has_x0=got["has_x0"], L=got["L"], kind=got["kind"], size=got["size"],
                            param=got["param"], iterations=st.iterations)
        print(f"  -> {path}: {os.path.getsize(path) // 1024} KiB", flush=True)


if __name__ == "__main__":
    main()

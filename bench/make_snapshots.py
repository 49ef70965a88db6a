"""Save the contact problems of settled, loaded pyramids as data (tests/data/snapshot_*.npz).

A long simulation ends in a state that differs in the last bits between CPUs, and a solver
that stalls on one machine's snapshot converges on another's: tests that need a loaded pile
read these files instead of simulating one. Each file holds the scene's arguments, the state
(q, v) at the start of the step, the step's contacts (bodies, positions, frames, friction), the
right-hand side g = J v_free + targets and the warm start x0 the simulator used; the
operator is rebuilt from them (`tests/snapshots.py`).

    python bench/make_snapshots.py [--settle 2]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import scenes  # noqa: E402
import simstep  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data")
SNAPSHOTS = {      # name: box_pyramid arguments
    "triangle": dict(layers=4, shape="triangle"),
    "triangle_unit": dict(layers=4, shape="triangle", half=0.5, gap=0.05),
    "square": dict(layers=4, shape="square"),
    "square_unit": dict(layers=4, shape="square", half=0.5, gap=0.05),
}


def capture_step(sim):
    """One step; returns the ADMM's inputs (g, x0) and the state before it."""
    got = {}
    solve = sim.admm.solve

    def spy(op, g, cones, compliance=None, x0=None, **kw):
        got.update(g=np.array(g), x0=np.zeros(len(g)) if x0 is None else np.array(x0))
        return solve(op, g, cones, compliance=compliance, x0=x0, **kw)

    q, v = sim.q.copy(), sim.v.copy()
    sim.admm.solve = spy
    try:
        sim.step()
    finally:
        sim.admm.solve = solve
    return q, v, got


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settle", type=float, default=2.0)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    for name, kw in SNAPSHOTS.items():
        world = scenes.box_pyramid(**kw)
        sim = simstep.Simulator(world, dt=1e-3)
        sim.run(int(round(args.settle / sim.dt)))
        q, v, got = capture_step(sim)
        c = sim.contacts
        path = os.path.join(OUT, f"snapshot_{name}.npz")
        np.savez_compressed(path, scene="box_pyramid", layers=kw["layers"], shape=kw["shape"],
                            half=kw.get("half", scenes.boxes.HALF), gap=kw.get("gap", scenes.boxes.GAP), dt=sim.dt,
                            t=sim.t - sim.dt, q=q, v=v, body1=c.body1, body2=c.body2, position=c.position,
                            frame=c.frame, friction=c.friction, g=got["g"], x0=got["x0"])
        print(f"{path}: {len(c)} contacts, {os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()

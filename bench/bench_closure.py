"""Loop-closure drift with and without the position-level projection (simstep.projection).

Runs each scene twice in the same process, `project_closures=False` (velocity-level rows with
Baumgarte only) and `True` (plus the M-metric Gauss–Newton projection after integration), and
reports: the largest closure error over the run (the Euclidean norm of each closure's error,
as tests/test_scenes.py measures it), the largest velocity residual |J(q⁺) v⁺| of the closure
rows at the end of a step (velocities are not projected), the projection's Gauss–Newton steps
per time step, and its cost per step (µs, median and mean of `StepStats.time_projection`)
beside the whole step's.

Scenes: paper 004's 12-link pendulum in maximal coordinates (1 s at dt = 0.1 ms, erp = 1, as
the acceptance test), the four-bar of tests/test_simulator.py (5 s at dt = 1 ms, erp = 1, the
acceptance test "closure ≤ 1e-6 over 5 s"), and scenes.four_bar / scenes.slider_crank (5 s).

Writes bench/results/bench_closure.json.

    python bench/bench_closure.py [--pendulum-duration 1.0] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scenes  # noqa: E402
import simstep  # noqa: E402
from solvers import MatrixFreeDelassus  # noqa: E402

FOUR_BAR_URDF = """<robot name="four_bar"><link name="base"/>{links}
  <joint name="j1" type="continuous"><parent link="base"/><child link="crank"/>
    <origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="0 0 -0.3"/><axis xyz="0 1 0"/></joint>
  <joint name="j3" type="continuous"><parent link="coupler"/><child link="rocker"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/></joint></robot>"""


def passive_four_bar():
    """The passive four-bar of tests/test_simulator.py::test_four_bar_loop_closure_holds."""
    link = ('<link name="{n}"><inertial><origin xyz="{c}"/><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    links = "".join(link.format(n=n, c=c) for n, c in
                    (("crank", "0 0 -0.15"), ("coupler", "0.2 0 0"), ("rocker", "0 0 0.15")))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "four_bar.urdf")
        with open(path, "w") as f:
            f.write(FOUR_BAR_URDF.format(links=links))
        b = simstep.WorldBuilder()
        b.add_urdf("fb", path, floating_base=False, q=[0.3, -0.3, 0.3])
        w = b.build()
    w.constraints = [simstep.LoopClosure("fb/rocker", ((0, 0, 0.3), np.eye(3)), "world", ((0.4, 0, 1.0), np.eye(3)))]
    w.dt = 1e-3
    return w


def run(world, duration, erp, project):
    sim = simstep.Simulator(world, dt=world.dt, erp=erp, project_closures=project)
    sim.run(5)                                  # kernels loaded outside the timing
    sim = simstep.Simulator(world, dt=world.dt, erp=erp, project_closures=project)
    loops = list(world.constraints)
    steps = int(round(duration / world.dt))
    closure, vres = 0.0, 0.0
    its = np.zeros(steps, int)
    tp = np.zeros(steps)
    ts = np.zeros(steps)
    for k in range(steps):
        st = sim.step()
        its[k], tp[k], ts[k] = st.projection_iterations, st.time_projection, st.time_total
        closure = max(closure, max(float(np.linalg.norm(sim.loop_error(c))) for c in loops))
        if k % 10 == 0:       # |J(q⁺) v⁺| of the closure rows (sampled: it builds an operator)
            vres = max(vres, float(np.abs(MatrixFreeDelassus(world.model, sim.q, loops).J_apply(sim.v)).max()))
    return dict(project=project, steps=steps, closure_max=closure, velocity_residual_max=vres,
                iterations_mean=float(its.mean()), iterations_max=int(its.max()),
                projection_us_median=float(np.median(tp) * 1e6), projection_us_mean=float(tp.mean() * 1e6),
                step_us_median=float(np.median(ts) * 1e6), step_us_mean=float(ts.mean() * 1e6))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pendulum-duration", type=float, default=1.0)
    ap.add_argument("--duration", type=float, default=5.0, help="mechanisms' simulated time (s)")
    ap.add_argument("--quick", action="store_true", help="0.25 s pendulum, 1 s mechanisms")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "bench_closure.json"))
    a = ap.parse_args(argv)
    if a.quick:
        a.pendulum_duration, a.duration = 0.25, 1.0
    cases = [("pendulum 12 links, maximal", scenes.pendulum_benchmark(12, "maximal"), a.pendulum_duration),
             ("four-bar (tests/test_simulator.py)", passive_four_bar(), a.duration),
             ("scenes.four_bar", scenes.four_bar(), a.duration),
             ("scenes.slider_crank", scenes.slider_crank(), a.duration)]
    out = dict(machine=platform.machine(), python=platform.python_version(), cases=[])
    print(f"{'scene':36s} {'proj':>5s} {'closure max (m)':>16s} {'|Jv| max (m/s)':>15s} {'GN it mean/max':>15s} "
          f"{'proj µs med/mean':>17s} {'step µs med':>12s}")
    for name, w, dur in cases:
        for project in (False, True):
            t0 = time.perf_counter()
            r = run(w, dur, 1.0, project)
            r.update(scene=name, duration=dur, wall=time.perf_counter() - t0)
            out["cases"].append(r)
            print(f"{name:36s} {str(project):>5s} {r['closure_max']:16.3e} {r['velocity_residual_max']:15.3e} "
                  f"{r['iterations_mean']:7.3f}/{r['iterations_max']:<7d} "
                  f"{r['projection_us_median']:8.1f}/{r['projection_us_mean']:<8.1f} {r['step_us_median']:12.1f}",
                  flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

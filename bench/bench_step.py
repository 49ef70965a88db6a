"""Steady-state step time and solver iterations against MuJoCo in the same run.

Scenes (dt 1 ms, friction 0.5 unless noted): the 10-box triangle pyramid and the 30-box square
pyramid of paper 000 (Sathya et al., "Matrix-Free Delassus Operations"), each with the 0.1 m
boxes of `scenes` and with unit boxes (half extent 0.5 m, 1 kg); a 30-box vertical stack; G1
lying on the floor after falling from standing (pitched forward); three G1 on the pyramid
(`scenes.pyramid_with_robots`, ours only). Each scene first settles (default 2 s; G1 and the
robots on the pyramid 3 s), then ≥ 1000 steps are measured, ours and MuJoCo (elliptic cones,
same boxes, masses, friction and dt, settled the same time) in alternating blocks of 100 steps
so that machine noise hits both alike. Per scene: contacts, ADMM iterations mean / p95 / max,
% of steps at the iteration cap, our step mean / median / p95, MuJoCo's mean / median, the
ratio of the means, and our per-phase means. JSON and an iteration histogram under
bench/results/. Settled states are cached there (`--fresh` resettles). Then our ADMM against
Pinocchio's on the loaded pyramids saved in tests/data.

    python bench/bench_step.py [--scenes ...] [--settle 2] [--steps 1000] [--quick]
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
import scenes  # noqa: E402
import simstep  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
DT, MU = 1e-3, 0.5
G1_QUAT = (0.0, np.sin(0.3), 0.0, np.cos(0.3))   # pitched forward so it falls


def box_scene(shape, layers, half):
    """(our world, MuJoCo MJCF) of a pyramid or a stack (shape "stack": `layers` boxes)."""
    gap = scenes.boxes.GAP * half / scenes.boxes.HALF
    if shape == "stack":
        centres = np.array([(0.0, 0.0, half + 2 * half * k) for k in range(layers)])
    else:
        centres = scenes.pyramid_centres(layers, shape, half, gap)
    b = simstep.WorldBuilder()
    b.add_ground(friction=MU)
    for k, c in enumerate(centres):
        b.add_box(f"box{k}", (half, half, half), mass=1.0, position=c, friction=MU)
    bodies = "".join(f'<body pos="{c[0]} {c[1]} {c[2]}"><freejoint/><geom type="box" size="{half} {half} {half}" '
                     f'mass="1" friction="{MU} 0.005 0.0001"/></body>' for c in centres)
    mjcf = (f'<mujoco><option timestep="{DT}" cone="elliptic"/><worldbody>'
            f'<geom type="plane" size="50 50 .1" friction="{MU} 0.005 0.0001"/>{bodies}</worldbody></mujoco>')
    return b.build(), mjcf


def g1_world():
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground(friction=MU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, position=(0, 0, 0.9), quaternion=G1_QUAT, package_dirs=dirs, friction=MU)
    return b.build()


def g1_mujoco():
    import mujoco
    path, dirs = models.robot_path("g1")
    spec = mujoco.MjSpec.from_file(path)
    spec.strippath = True
    spec.meshdir = os.path.join(os.path.dirname(os.path.dirname(path)), "meshes")
    root = spec.body("pelvis")
    root.add_freejoint()
    root.pos = [0, 0, 0.9]
    root.quat = [G1_QUAT[3], G1_QUAT[0], G1_QUAT[1], G1_QUAT[2]]
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1], friction=[MU, 0.005, 0.0001])
    m = spec.compile()
    m.opt.timestep = DT
    m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    return m


# name: (builder of (our world, MuJoCo model or None), settle seconds, description)
SCENES = {
    "triangle": (lambda: box_scene("triangle", 4, 0.1), 2.0, "10-box triangle pyramid, 0.1 m boxes"),
    "triangle_unit": (lambda: box_scene("triangle", 4, 0.5), 2.0, "10-box triangle pyramid, unit boxes"),
    "square": (lambda: box_scene("square", 4, 0.1), 2.0, "30-box square pyramid (paper 000), 0.1 m boxes"),
    "square_unit": (lambda: box_scene("square", 4, 0.5), 2.0, "30-box square pyramid, unit boxes"),
    "stack": (lambda: box_scene("stack", 30, 0.1), 2.0, "30-box vertical stack"),
    "g1_lying": (lambda: (g1_world(), "g1"), 3.0, "G1 lying on the floor after a fall"),
    "g1_falling": (lambda: (g1_world(), "g1"), 0.3, "G1 falling (transient: 0.3 s after release, then the steps)"),
    "robots_on_pyramid": (lambda: (scenes.pyramid_with_robots(), None), 3.0, "three G1 on the 30-box pyramid"),
}


def settled(name, world, settle, fresh):
    """Our simulator after `settle` s (state cached in bench/results/)."""
    sim = simstep.Simulator(world, dt=DT)
    path = os.path.join(RESULTS, f"settled_{name}_{settle:g}s.npz")
    if os.path.exists(path) and not fresh:
        d = np.load(path)
        if d["q"].shape == sim.q.shape:
            sim.set_state(d["q"], d["v"], t=float(d["t"]))
            sim.run(20)                 # warm start and ρ as in a running simulation
            return sim
    sim.run(int(round(settle / DT)))
    np.savez(path, q=sim.q, v=sim.v, t=sim.t)
    return sim


def measure(name, settle, steps, block, fresh):
    build, settle_default, desc = SCENES[name]
    settle = settle_default if settle is None else settle
    world, mj = build()
    sim = settled(name, world, settle, fresh)
    mjm = mjd = None
    if mj is not None:
        import mujoco
        mjm = g1_mujoco() if mj == "g1" else mujoco.MjModel.from_xml_string(mj)
        mjd = mujoco.MjData(mjm)
        for _ in range(int(round(settle / DT))):
            mujoco.mj_step(mjm, mjd)
    cap = sim.admm.settings.max_iter
    ours, theirs, its, ncs, conv = [], [], [], [], []
    phases = {k: [] for k in ("time_collision", "time_dynamics", "time_operator", "time_solver",
                              "time_integration")}
    done = 0
    while done < steps:
        n = min(block, steps - done)
        for _ in range(n):
            t0 = time.perf_counter()
            st = sim.step()
            ours.append(time.perf_counter() - t0)
            its.append(st.iterations)
            ncs.append(st.ncontacts)
            conv.append(st.converged)
            for k in phases:
                phases[k].append(getattr(st, k))
        if mjm is not None:
            for _ in range(n):
                t0 = time.perf_counter()
                mujoco.mj_step(mjm, mjd)
                theirs.append(time.perf_counter() - t0)
        done += n
    its, ours = np.array(its), np.array(ours) * 1e6
    row = dict(scene=name, description=desc, settle_s=settle, steps=steps, contacts=float(np.mean(ncs)),
               iterations_mean=float(its.mean()), iterations_p95=float(np.percentile(its, 95)),
               iterations_max=int(its.max()), at_cap_percent=100.0 * float(np.mean(its >= cap)),
               unconverged_percent=100.0 * (1.0 - float(np.mean(conv))),
               ours_mean_us=float(ours.mean()), ours_median_us=float(np.median(ours)),
               ours_p95_us=float(np.percentile(ours, 95)),
               phases_mean_us={k[5:]: float(np.mean(v)) * 1e6 for k, v in phases.items()},
               iterations=its.tolist())
    if theirs:
        theirs = np.array(theirs) * 1e6
        row.update(mujoco_mean_us=float(theirs.mean()), mujoco_median_us=float(np.median(theirs)),
                   mujoco_contacts=int(mjd.ncon), ratio_of_means=float(ours.mean() / theirs.mean()))
    return row


def admm_vs_pinocchio():
    """Our ADMM (matrix-free operator) and Pinocchio's ADMM (dense operator on our G) on the
    loaded pyramids saved in tests/data, cold-started, both at 1e-6; best of 3 each."""
    try:
        import pinocchio as pin
    except ImportError:
        return []
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from snapshots import NAMES, load_problem
    from solvers.admm import ADMMSolver
    rows = []
    for name in NAMES:
        p = load_problem(name)
        k = p.ncontacts
        t_ours = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            res = ADMMSolver().solve(p.matrix_free(), p.g, p.cones)
            t_ours = min(t_ours, time.perf_counter() - t0)
        pm = pin.Model()
        j = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "b")
        pm.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
        cms, cds = pin.StdVec_ConstraintModel(), pin.StdVec_ConstraintData()
        for i in range(k):      # only the cones' sizes and friction are read from these
            pc = pin.PointContactConstraintModel(pm, 0, pin.SE3.Identity(), j, pin.SE3.Identity())
            pc.setFriction(float(p.friction[i]))
            cm = pin.ConstraintModel(pc)
            cms.append(cm)
            cds.append(cm.createData())
        s = pin.ADMMSolverSettings()
        s.lanczos_size = 20
        s.max_iterations = 1000
        s.admm_update_rule = pin.ADMMUpdateRule.SPECTRAL
        D = pin.DelassusOperatorDense(p.dense().matrix())
        solver = pin.ADMMConstraintSolver(3 * k)
        t_pin, r = np.inf, None
        for _ in range(3):
            r = pin.ADMMSolverResult()
            t0 = time.perf_counter()
            solver.solve(D, p.g, cms, cds, s, r)
            t_pin = min(t_pin, time.perf_counter() - t0)
        rows.append(dict(snapshot=name, contacts=k, ours_iterations=res.iterations, ours_converged=res.converged,
                         ours_us=t_ours * 1e6, pin_iterations=int(r.iterations), pin_us=t_pin * 1e6,
                         ratio=t_ours / t_pin))
    return rows


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 2.8), squeeze=False)
    for ax, r in zip(axes[0], rows):
        its = np.array(r["iterations"])
        bins = np.concatenate([[-0.5, 0.5, 1.5, 2.5], np.logspace(np.log10(3.5), np.log10(1001), 20)])
        ax.hist(its, bins=bins, color="tab:blue")
        ax.set_xscale("symlog", linthresh=3)
        ax.axvline(1000, color="tab:red", ls="--", lw=1)
        ax.set_title(f"{r['scene']}\nmean {r['iterations_mean']:.1f}, p95 {r['iterations_p95']:.0f}", fontsize=8)
        ax.set_xlabel("ADMM iterations per step (red: cap)", fontsize=7)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("steps")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    ap.add_argument("--settle", type=float, default=None, help="seconds (default per scene: 2, robots 3)")
    ap.add_argument("--steps", type=int, default=1000, help="measured steps (>= 1000 for the README)")
    ap.add_argument("--block", type=int, default=100, help="steps per alternating block")
    ap.add_argument("--fresh", action="store_true", help="resettle instead of using cached states")
    ap.add_argument("--quick", action="store_true", help="smoke run: 0.2 s settle, 100 steps")
    args = ap.parse_args()
    if args.quick:
        args.settle, args.steps = 0.2, 100
    os.makedirs(RESULTS, exist_ok=True)
    rows = []
    for name in args.scenes:
        rows.append(measure(name, args.settle, args.steps, args.block, args.fresh))
        print(f"[{name}] done", flush=True)
    print(f"\n{'scene':18s} {'contacts':>8s} {'iters mean/p95/max':>19s} {'cap%':>5s} {'ours mean':>9s} {'median':>7s} "
          f"{'p95':>7s} {'MuJoCo mean':>11s} {'median':>7s} {'ratio':>6s}   [us per step]")
    for r in rows:
        mj = (f"{r['mujoco_mean_us']:11.0f} {r['mujoco_median_us']:7.0f} {r['ratio_of_means']:6.2f}"
              if "mujoco_mean_us" in r else f"{'-':>11s} {'-':>7s} {'-':>6s}")
        print(f"{r['scene']:18s} {r['contacts']:8.0f} {r['iterations_mean']:7.1f}/{r['iterations_p95']:4.0f}/"
              f"{r['iterations_max']:<5d} {r['at_cap_percent']:5.1f} {r['ours_mean_us']:9.0f} {r['ours_median_us']:7.0f} "
              f"{r['ours_p95_us']:7.0f} {mj}")
    print(f"\n{'scene':18s} " + " ".join(f"{k:>11s}" for k in rows[0]["phases_mean_us"]) + "   [us, mean per step]")
    for r in rows:
        print(f"{r['scene']:18s} " + " ".join(f"{v:11.0f}" for v in r["phases_mean_us"].values()))
    pin_rows = admm_vs_pinocchio()
    if pin_rows:
        print(f"\n{'snapshot':14s} {'contacts':>8s} {'ours it':>7s} {'ours us':>9s} {'pin it':>7s} {'pin us':>9s} "
              f"{'ratio':>6s}   (saved loaded pyramids, cold start, tol 1e-6; Pinocchio on the dense G)")
        for a in pin_rows:
            print(f"{a['snapshot']:14s} {a['contacts']:8d} {a['ours_iterations']:7d} {a['ours_us']:9.0f} "
                  f"{a['pin_iterations']:7d} {a['pin_us']:9.0f} {a['ratio']:6.2f}")
    out = dict(benchmark="step_steady_state", python=platform.python_version(), machine=platform.machine(),
               processor=platform.processor(), dt=DT, rows=rows, admm_vs_pinocchio=pin_rows)
    dst = os.path.join(RESULTS, "bench_step.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
    plot(rows, os.path.join(RESULTS, "bench_step_iterations.png"))
    print(f"wrote {dst} and bench_step_iterations.png")


if __name__ == "__main__":
    main()

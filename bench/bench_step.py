"""Time per simulation step, split by phase, against MuJoCo in the same run; our ADMM against
Pinocchio's ADMM on the same contact problems.

Scenes: the 10-box triangle pyramid (rows 4-3-2-1), the paper's 30-box square pyramid
(4×4 + 3×3 + 2×2 + 1, each box on four below) and G1 falling on the ground. Boxes in a layer
are 4 mm apart so only the support contacts are active (as in paper 000's count of 288).
MuJoCo runs the same scenes (elliptic cones, same dt) from Python; both are timed after the
scene has settled, in alternating rounds (ours, MuJoCo, ours, ...) so that machine noise hits
both alike: the median step, and the best round's mean step (the less noisy ratio; a mean
includes the slow steps where the ADMM needs many iterations).

    python bench/bench_step.py [--steps 50] [--rounds 10] [--scenes triangle square g1]
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
from solvers import ContactSet, DenseDelassus, MatrixFreeDelassus  # noqa: E402
from solvers.admm import ADMMSolver  # noqa: E402
from solvers.cones import ConeSet  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
H, GAP, MU, DT = 0.1, 4e-3, 0.6, 1e-3


def triangle_centres(rows=(4, 3, 2, 1)):
    out = []
    for level, n in enumerate(rows):
        for i in range(n):
            out.append(((i - (n - 1) / 2) * (2 * H + GAP), 0.0, H + 2 * H * level))
    return np.array(out)


def square_centres(layers=4):
    out = []
    for level in range(layers):
        s = layers - level
        for i in range(s):
            for j in range(s):
                out.append(((i - (s - 1) / 2) * (2 * H + GAP), (j - (s - 1) / 2) * (2 * H + GAP), H + 2 * H * level))
    return np.array(out)


def box_world(centres):
    b = simstep.WorldBuilder()
    b.add_ground(friction=MU)
    for k, c in enumerate(centres):
        b.add_box(f"box{k}", (H, H, H), mass=1.0, position=c, friction=MU)
    return b.build()


def box_mjcf(centres):
    bodies = "".join(f'<body pos="{c[0]} {c[1]} {c[2]}"><freejoint/><geom type="box" size="{H} {H} {H}" '
                     f'mass="1" friction="{MU} 0.005 0.0001"/></body>' for c in centres)
    return (f'<mujoco><option timestep="{DT}" cone="elliptic"/><worldbody>'
            f'<geom type="plane" size="10 10 .1" friction="{MU} 0.005 0.0001"/>{bodies}</worldbody></mujoco>')


G1_QUAT = (0.0, np.sin(0.3), 0.0, np.cos(0.3))   # pitched forward so it falls


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


PHASES = ("time_collision", "time_dynamics", "time_operator", "time_solver", "time_integration", "time_total")


def time_both(world, mjmodel, settle, steps, rounds):
    """Ours and MuJoCo after `settle` steps each, in alternating rounds of `steps` steps (so
    machine noise hits both alike). Returns our per-phase medians over all steps and, for
    both, the median step and the best round's mean step (µs)."""
    import mujoco
    sim = simstep.Simulator(world, dt=DT)
    sim.run(settle)
    d = mujoco.MjData(mjmodel)
    for _ in range(settle):
        mujoco.mj_step(mjmodel, d)
    phases = {k: [] for k in PHASES}
    its, ncs, mj, ours_round, mj_round = [], [], [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            st = sim.step()
            for k in phases:
                phases[k].append(getattr(st, k))
            its.append(st.iterations)
            ncs.append(st.ncontacts)
        ours_round.append((time.perf_counter() - t0) / steps)
        t0 = time.perf_counter()
        for _ in range(steps):
            t1 = time.perf_counter()
            mujoco.mj_step(mjmodel, d)
            mj.append(time.perf_counter() - t1)
        mj_round.append((time.perf_counter() - t0) / steps)
    out = {k: float(np.median(v)) * 1e6 for k, v in phases.items()}
    out.update(iter_mean=float(np.mean(its)), iter_max=int(np.max(its)), contacts=float(np.mean(ncs)),
               best_round_mean=min(ours_round) * 1e6)
    return out, sim, dict(median=float(np.median(mj)) * 1e6, best_round_mean=min(mj_round) * 1e6, ncon=int(d.ncon))


def admm_vs_pinocchio(sim):
    """Our ADMM (matrix-free operator, its construction included) and Pinocchio's ADMM (its dense
    operator on our G, construction not included) on the contact problem of the simulator's
    current state, both cold-started at tolerance 1e-6; best of 3."""
    import pinocchio as pin
    m, q, v = sim.model, sim.q, sim.v
    c = sim.detector.detect(q)
    k = len(c)
    if k == 0:
        return None
    cons = [ContactSet(c.body1, c.body2, c.position, c.frame, c.friction)]
    t_op, t_ours = np.inf, np.inf
    for _ in range(3):      # best of 3: the first call also loads kernels
        t0 = time.perf_counter()
        op = MatrixFreeDelassus(m, q, cons, data=sim.data)
        g = op.J_apply(v + DT * models.aba(m, q, v, np.zeros(m.nv)))
        g[np.arange(k) * 3 + 2] += np.where(c.distance > 0, c.distance / DT, 0.2 * c.distance / DT)
        t_op = min(t_op, time.perf_counter() - t0)
        res = ADMMSolver().solve(op, g, ConeSet.contacts(c.friction))
        t_ours = min(t_ours, time.perf_counter() - t0)
    G = DenseDelassus(m, q, cons).matrix()
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "b")
    pm.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    cms, cds = pin.StdVec_ConstraintModel(), pin.StdVec_ConstraintData()
    for i in range(k):
        pc = pin.PointContactConstraintModel(pm, 0, pin.SE3.Identity(), j, pin.SE3.Identity())
        pc.setFriction(float(c.friction[i]))
        cm = pin.ConstraintModel(pc)
        cms.append(cm)
        cds.append(cm.createData())
    s = pin.ADMMSolverSettings()
    s.lanczos_size = 20
    s.max_iterations = 1000
    s.admm_update_rule = pin.ADMMUpdateRule.SPECTRAL
    r = pin.ADMMSolverResult()
    solver = pin.ADMMConstraintSolver(3 * k)
    D = pin.DelassusOperatorDense(G)
    t_pin = np.inf
    for _ in range(3):
        r = pin.ADMMSolverResult()
        t0 = time.perf_counter()
        solver.solve(D, g, cms, cds, s, r)
        t_pin = min(t_pin, time.perf_counter() - t0)
    return dict(contacts=k, ours_iterations=res.iterations, ours_us=t_ours * 1e6, ours_operator_us=t_op * 1e6,
                pin_iterations=int(r.iterations), pin_us=t_pin * 1e6, ratio=t_ours / t_pin)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50, help="steps per round")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--settle", type=int, default=100)
    ap.add_argument("--scenes", nargs="+", default=["triangle", "square", "g1"])
    args = ap.parse_args()
    rows = []
    for name in args.scenes:
        if name == "triangle":
            c = triangle_centres()
            world, mj = box_world(c), box_mjcf(c)
        elif name == "square":
            c = square_centres()
            world, mj = box_world(c), box_mjcf(c)
        elif name == "g1":
            world, mj = g1_world(), None
        else:
            sys.exit(f"unknown scene {name!r}; scenes: triangle, square, g1")
        import mujoco
        mjm = mujoco.MjModel.from_xml_string(mj) if mj else g1_mujoco()
        ours, sim, mjt = time_both(world, mjm, args.settle, args.steps, args.rounds)
        cmp = admm_vs_pinocchio(sim)
        rows.append(dict(scene=name, ours=ours, mujoco_us=mjt["median"], mujoco_best_round_us=mjt["best_round_mean"],
                         mujoco_contacts=mjt["ncon"], ratio_to_mujoco=ours["time_total"] / mjt["median"],
                         ratio_best_rounds=ours["best_round_mean"] / mjt["best_round_mean"], admm_vs_pinocchio=cmp))
        print(f"[{name}] done", flush=True)
    print(f"\n{'scene':9s} {'contacts':>8s} {'iters':>11s} {'collision':>9s} {'dynamics':>8s} {'operator':>8s} "
          f"{'ADMM':>9s} {'integr.':>7s} {'total':>9s} {'MuJoCo':>8s} {'ratio':>7s} {'best ours':>9s} {'best MJ':>8s} "
          f"{'ratio':>6s}   [us; medians over steps, then best round means]")
    for r in rows:
        o = r["ours"]
        print(f"{r['scene']:9s} {o['contacts']:8.0f} {o['iter_mean']:6.1f}/{o['iter_max']:<4d} "
              f"{o['time_collision']:9.0f} {o['time_dynamics']:8.0f} {o['time_operator']:8.0f} {o['time_solver']:9.0f} "
              f"{o['time_integration']:7.0f} {o['time_total']:9.0f} {r['mujoco_us']:8.0f} {r['ratio_to_mujoco']:7.1f} "
              f"{o['best_round_mean']:9.0f} {r['mujoco_best_round_us']:8.0f} {r['ratio_best_rounds']:6.1f}")
    print(f"\n{'scene':9s} {'contacts':>8s} {'ours it':>7s} {'ours us':>9s} {'pin it':>7s} {'pin us':>9s} {'ratio':>6s}"
          "   (ADMM on one snapshot, cold start, tol 1e-6)")
    for r in rows:
        a = r["admm_vs_pinocchio"]
        if a:
            print(f"{r['scene']:9s} {a['contacts']:8d} {a['ours_iterations']:7d} {a['ours_us']:9.0f} "
                  f"{a['pin_iterations']:7d} {a['pin_us']:9.0f} {a['ratio']:6.2f}")
    out = dict(benchmark="step", python=platform.python_version(), machine=platform.machine(), dt=DT, rows=rows)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    dst = os.path.join(HERE, "results", "bench_step.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()

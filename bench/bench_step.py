"""Steady-state step time and solver iterations against MuJoCo in the same run.

Scenes (dt 1 ms, friction 0.5 unless noted): the 10-box triangle pyramid and the 30-box square
pyramid of paper 000 (Sathya et al., "Matrix-Free Delassus Operations"), each with the 0.1 m
boxes of `scenes` and with unit boxes (half extent 0.5 m, 1 kg); a 30-box vertical stack; G1
lying on the floor after falling from standing (pitched forward), G1 lying on its back (pitched
backward; its legs creep apart on the floor for seconds) or after a fall on its side (rolled)
and G1 falling (0.3 s after release); Go2 standing on its joint PD (`scenes.quadruped`) and
trotting in place (the PD's targets on a 0.4 s diagonal gait, `trot_reference`; measured
from 2 s on, i.e. 2.5 gait cycles per 1000 steps; both simulators' times include the reference's
evaluation, 3–5 µs of numpy, which ours calls inside its step and MuJoCo's control callback
before mj_step); three G1 on the pyramid (`scenes.pyramid_with_robots`; chaotic: the two
simulators' piles differ after the landing). Each scene first settles (default 2 s; G1 lying on
either side 3 s, the robots on the pyramid 6 s), then ≥ 1000 steps are measured, ours and MuJoCo
(elliptic cones, same boxes, masses, URDF collision meshes (convex hulls), friction, dt, joint
PD (as MuJoCo position actuators with the same gains, rotor inertias and effort limits), settled
the same time) in alternating blocks of 100 steps so that machine noise hits both alike. Per
scene: contacts, ADMM iterations mean / p95 / max, % of steps at the iteration cap, the Newton
polish's steps per step (mean), our step mean / median / p95, MuJoCo's mean / median, the ratio
of the means, and our per-phase means. JSON and an iteration histogram under bench/results/.
Settled states are cached there (`--fresh` resettles). Then our ADMM against Pinocchio's on the
loaded pyramids saved in tests/data.

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
from simstep.warmup import CompileCounter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
DT, MU = 1e-3, 0.5
G1_QUAT = (0.0, np.sin(0.3), 0.0, np.cos(0.3))   # pitched forward so it falls
G1_BACK = (0.0, -np.sin(0.3), 0.0, np.cos(0.3))  # pitched backward: it lies on its back
G1_SIDE = (np.sin(0.3), 0.0, 0.0, np.cos(0.3))   # rolled: it falls on its side


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


def g1_world(quat=G1_QUAT):
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground(friction=MU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, position=(0, 0, 0.9), quaternion=quat, package_dirs=dirs, friction=MU)
    return b.build()


def mujoco_urdf(path, dirs, mesh_files=False):
    """MjSpec of a URDF of example-robot-data (package:// mesh paths resolved in `dirs[0]`), each
    mesh given as the vertices of our collision hull of it (`collision.load_convex_mesh`, whose
    default tolerance leaves out vertices within 0.1 mm of the others' hull), so that MuJoCo
    collides the same convex hulls as we do; mesh_files: MuJoCo reads the mesh files (the hulls
    of all their vertices)."""
    import mujoco
    from collision import load_convex_mesh
    spec = mujoco.MjSpec.from_file(path)
    for m in spec.meshes:
        m.file = m.file.replace("package://", dirs[0] + "/")
        if mesh_files:
            continue
        verts, _ = load_convex_mesh(m.file, np.array(m.scale))
        m.uservert = verts.ravel()
        m.scale = [1.0, 1.0, 1.0]
        m.file = ""
    return spec


def robot_mujoco(robot, world=None, self_collision=True, quat=G1_QUAT, height=0.9, mesh_files=False):
    """MuJoCo model of `robot` (example-robot-data URDF, its convex-hull collision meshes, free
    root, ground plane, elliptic cones, dt 1 ms). world: our world of the same robot, whose
    joint PD (``world.actuation``, `simstep.control.JointPD`) and rotor inertias are copied as
    position actuators (force = kp (ctrl − q) − kd v, clipped to the same effort limits; ctrl =
    the PD target) and ``dof_armature``, and whose friction (robot, ground) is used; without it
    the robot is unactuated at `height` with orientation `quat` (xyzw) and friction MU.
    self_collision False: the robot's geoms get conaffinity 0 (they still touch the plane).
    mesh_files: see `mujoco_urdf`."""
    import mujoco
    path, dirs = models.robot_path(robot)
    spec = mujoco_urdf(path, dirs, mesh_files)
    root = spec.bodies[1]
    root.add_freejoint(name="root_joint")
    root.pos = [0, 0, height]
    root.quat = [quat[3], quat[0], quat[1], quat[2]]
    mu = MU if world is None else float(world.geometries[0].friction)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1], friction=[mu, 0.005, 0.0001])
    pd = None if world is None else world.actuation
    if pd is not None:
        for j, iv, kp, kd, lim in zip(pd.joints, pd.iv, pd.kp, pd.kd, pd.limit):
            name = j.split("/", 1)[1]
            spec.joint(name).armature = float(world.model.armature[iv])
            a = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            a.gainprm[0] = kp
            a.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            a.biasprm[:3] = [0.0, -kp, -kd]
            if np.isfinite(lim):
                a.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                a.forcerange = [-lim, lim]
    m = spec.compile()
    m.opt.timestep = DT
    m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    robot_geoms = m.geom_bodyid > 0
    if world is not None:
        m.geom_friction[robot_geoms, 0] = float(world.geometries[-1].friction)
    if not self_collision:
        m.geom_conaffinity[robot_geoms] = 0
    return m


def g1_mujoco(quat=G1_QUAT):
    return robot_mujoco("g1", quat=quat)


def mujoco_qpos(world, m, q, prefix=""):
    """Our q as MuJoCo's qpos: each of our joints by name (MuJoCo's name is ours without
    `prefix`); free joints: xyz, then the quaternion as wxyz."""
    import mujoco
    qpos = np.zeros(m.nq)
    for name in world.model.joint_names:
        iq = world.model.joint_q_index(name)
        j = m.joint(name[len(prefix):] if name.startswith(prefix) else name)
        a = j.qposadr[0]
        if j.type[0] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[a:a + 3] = q[iq:iq + 3]
            qpos[a + 3:a + 7] = q[[iq + 6, iq + 3, iq + 4, iq + 5]]
        else:
            qpos[a] = q[iq]
    return qpos


def mujoco_start(world, m, prefix=""):
    """MjData at our world's initial state (q0 at rest), the PD targets as ctrl."""
    import mujoco
    d = mujoco.MjData(m)
    d.qpos[:] = mujoco_qpos(world, m, world.q0, prefix)
    pd = getattr(world, "actuation", None)
    if pd is not None:
        for k, j in enumerate(pd.joints):
            d.ctrl[m.actuator(j[len(prefix):]).id] = pd.q_target[k]
    mujoco.mj_forward(m, d)
    return d


def trot_reference(pd, period=0.4):
    """q*(t) of Go2 trotting in place on the standing PD `pd` (also `bench_collision.go2_trotting`'s):
    the diagonal pairs FL+RR and FR+RL lifted in turn (thigh +0.35 rad, calf −0.7 rad on a half
    sine of period `period` s)."""
    base = pd.q_target.copy()
    names = [j.split("/", 1)[1] for j in pd.joints]
    phase = np.array([0.0 if n[:2] in ("FL", "RR") else 0.5 for n in names])
    lift = np.array([0.35 if "thigh" in n else (-0.7 if "calf" in n else 0.0) for n in names])
    return lambda t: base + lift * np.maximum(np.sin(2 * np.pi * (t / period - phase)), 0.0)


def go2(trot):
    """(our Go2 world, its MuJoCo factory): standing on the scene's joint PD, or trotting in
    place (`trot_reference`); no self-collision in either simulator (as `scenes.quadruped`)."""
    w = scenes.quadruped("go2")
    ref = None
    if trot:
        ref = w.actuation.q_ref_fn = trot_reference(w.actuation)

    def mujoco_factory():
        m = robot_mujoco("go2", w, self_collision=False)
        d = mujoco_start(w, m, "go2/")
        if ref is None:
            return m, d, None
        ids = np.array([m.actuator(j.split("/", 1)[1]).id for j in w.actuation.joints])

        def control(m, d):
            d.ctrl[ids] = ref(d.time)
        return m, d, control
    return w, mujoco_factory


def robots_on_pyramid():
    """(`scenes.pyramid_with_robots()`, its MuJoCo factory): the same 30 boxes and three G1
    (same initial q, no self-collision, robots collide with each other); MuJoCo combines
    friction by max, ours by √(μ1 μ2): the robots' geoms get √(0.8·0.5) so that every pair
    but robot-robot (0.8 here, 0.63 in MuJoCo) has our friction."""
    w = scenes.pyramid_with_robots()

    def mujoco_factory():
        import mujoco
        m = w.model
        spec = mujoco.MjSpec()
        spec.option.timestep = DT
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[50, 50, 0.1], friction=[MU, 0.005, 0.0001])
        h = scenes.boxes.HALF
        for name in m.joint_names:
            if name.startswith("box"):
                b = spec.worldbody.add_body(name=name)
                b.add_freejoint(name=name)
                b.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[h, h, h], mass=1.0, friction=[MU, 0.005, 0.0001])
        robots = sorted({n.split("/", 1)[0] for n in m.joint_names if "/" in n})
        path, dirs = models.robot_path("g1")
        mu = float(np.sqrt(0.8 * MU))
        for r, name in enumerate(robots):
            child = mujoco_urdf(path, dirs)
            child.bodies[1].add_freejoint(name="root_joint")
            bit = 1 << (r + 1)
            for g in child.geoms:
                g.contype, g.conaffinity = bit, 0x7FFFFFFF & ~bit
                g.friction = [mu, 0.005, 0.0001]
            spec.worldbody.add_frame().attach_body(child.bodies[1], name + "/", "")
        mm = spec.compile()
        return mm, mujoco_start(w, mm), None
    return w, mujoco_factory


def mjcf_factory(mjcf):
    def make():
        import mujoco
        m = mujoco.MjModel.from_xml_string(mjcf)
        return m, mujoco.MjData(m), None
    return make


def g1_factory(quat=G1_QUAT):
    import mujoco
    m = g1_mujoco(quat)
    return m, mujoco.MjData(m), None


def box_case(shape, layers, half):
    w, mjcf = box_scene(shape, layers, half)
    return w, mjcf_factory(mjcf)


# name: (builder of (our world, MuJoCo model or None), settle seconds, description)
SCENES = {
    "triangle": (lambda: box_case("triangle", 4, 0.1), 2.0, "10-box triangle pyramid, 0.1 m boxes"),
    "triangle_unit": (lambda: box_case("triangle", 4, 0.5), 2.0, "10-box triangle pyramid, unit boxes"),
    "square": (lambda: box_case("square", 4, 0.1), 2.0, "30-box square pyramid (paper 000), 0.1 m boxes"),
    "square_unit": (lambda: box_case("square", 4, 0.5), 2.0, "30-box square pyramid, unit boxes"),
    "stack": (lambda: box_case("stack", 30, 0.1), 2.0, "30-box vertical stack"),
    "g1_lying": (lambda: (g1_world(), g1_factory), 3.0, "G1 lying on the floor after a fall"),
    "g1_on_back": (lambda: (g1_world(G1_BACK), lambda: g1_factory(G1_BACK)), 3.0,
                   "G1 lying on its back after a fall (pitched backward)"),
    "g1_on_side": (lambda: (g1_world(G1_SIDE), lambda: g1_factory(G1_SIDE)), 3.0,
                   "G1 lying after a fall on its side (rolled)"),
    "g1_falling": (lambda: (g1_world(), g1_factory), 0.3, "G1 falling (transient: 0.3 s after release, then the steps)"),
    "go2_standing": (lambda: go2(False), 2.0, "Go2 standing, joint PD"),
    "go2_trotting": (lambda: go2(True), 2.0, "Go2 trotting in place (joint PD on a 0.4 s gait; 2 s, then the steps)"),
    # the pile comes to rest about 5.5 s after the drop (robots still slide off the boxes at 3 s)
    "robots_on_pyramid": (robots_on_pyramid, 6.0, "three G1 on the 30-box pyramid"),
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


# numba compilations and loads from its disk cache in this process (`measure`)
COMPILES = CompileCounter(cache_loads=True)


def alternating_blocks(sim, steps, block, record, peer=None):
    """Time `steps` steps of our simulator and of the peer in alternating blocks of `block`
    (ours first): record(stats) after each of ours (untimed), peer() one step of the peer (None:
    ours only). Returns the step times (s) as lists: ours, the peer's."""
    ours, theirs = [], []
    done = 0
    while done < steps:
        n = min(block, steps - done)
        for _ in range(n):
            t0 = time.perf_counter()
            st = sim.step()
            ours.append(time.perf_counter() - t0)
            record(st)
        if peer is not None:
            for _ in range(n):
                t0 = time.perf_counter()
                peer()
                theirs.append(time.perf_counter() - t0)
        done += n
    return ours, theirs


def measure(name, settle, steps, block, fresh, attempts=3):
    """`measure_once`, repeated (on a new simulator from the same settled state) while numba
    compiled or loaded code during the measured steps: a code path first used there (for
    example on a machine whose numba cache is cold) would add its one-time compilation to the
    steady state; the row says how many attempts it took."""
    for attempt in range(1, attempts + 1):
        row = measure_once(name, settle, steps, block, fresh)
        compiled = COMPILES.count - row.pop("compiles_before_measuring")
        if compiled == 0:
            break
        print(f"[{name}] numba compiled or loaded {compiled} kernels during the measured steps: measuring again",
              flush=True)
    row.update(attempts=attempt, compiles_while_measuring=compiled)
    return row


def measure_once(name, settle, steps, block, fresh):
    build, settle_default, desc = SCENES[name]
    settle = settle_default if settle is None else settle
    world, mj = build()
    sim = settled(name, world, settle, fresh)
    mjm = mjd = control = None
    if mj is not None:
        import mujoco
        mjm, mjd, control = mj()
        for _ in range(int(round(settle / DT))):
            if control is not None:
                control(mjm, mjd)
            mujoco.mj_step(mjm, mjd)
    cap = sim.admm.settings.max_iter
    compiles_before_measuring = COMPILES.count
    its, ncs, conv, nws = [], [], [], []
    phases = {k: [] for k in ("time_collision", "time_dynamics", "time_operator", "time_solver",
                              "time_integration")}

    def record(st):
        its.append(st.iterations)
        nws.append(st.newton_steps)
        ncs.append(st.ncontacts)
        conv.append(st.converged)
        for k in phases:
            phases[k].append(getattr(st, k))

    def peer():
        if control is not None:     # the trot's targets: timed, as our step evaluates the same
            control(mjm, mjd)       # reference (`trot_reference`, numpy) inside its joint PD
        mujoco.mj_step(mjm, mjd)
    ours, theirs = alternating_blocks(sim, steps, block, record, None if mjm is None else peer)
    its, ours = np.array(its), np.array(ours) * 1e6
    row = dict(scene=name, description=desc, settle_s=settle, steps=steps, contacts=float(np.mean(ncs)),
               iterations_mean=float(its.mean()), iterations_p95=float(np.percentile(its, 95)),
               iterations_max=int(its.max()), at_cap_percent=100.0 * float(np.mean(its >= cap)),
               newton_steps_mean=float(np.mean(nws)),
               unconverged_percent=100.0 * (1.0 - float(np.mean(conv))),
               ours_mean_us=float(ours.mean()), ours_median_us=float(np.median(ours)),
               ours_p95_us=float(np.percentile(ours, 95)),
               phases_mean_us={k[5:]: float(np.mean(v)) * 1e6 for k, v in phases.items()},
               iterations=its.tolist(), compiles_before_measuring=compiles_before_measuring)
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
          f"{'p95':>7s} {'MuJoCo mean':>11s} {'median':>7s} {'ratio':>6s} {'newton':>6s}   [us per step; newton: its steps "
          f"per step, mean]")
    for r in rows:
        mj = (f"{r['mujoco_mean_us']:11.0f} {r['mujoco_median_us']:7.0f} {r['ratio_of_means']:6.2f}"
              if "mujoco_mean_us" in r else f"{'-':>11s} {'-':>7s} {'-':>6s}")
        print(f"{r['scene']:18s} {r['contacts']:8.0f} {r['iterations_mean']:7.1f}/{r['iterations_p95']:4.0f}/"
              f"{r['iterations_max']:<5d} {r['at_cap_percent']:5.1f} {r['ours_mean_us']:9.0f} {r['ours_median_us']:7.0f} "
              f"{r['ours_p95_us']:7.0f} {mj} {r['newton_steps_mean']:6.1f}")
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

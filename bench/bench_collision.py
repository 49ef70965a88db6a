"""Collision detection per call: the 30-box square pyramid, the 30-box stack, G1 lying on the
ground (also with a 2 cm margin) and bench_step's pyramids as the simulator sees them (settled
for 100 steps, 2 mm margin), coal vs python-fcl, with and without the native numba kernels, in
the same run.

Variants (all through `collision.CollisionDetector.detect(q)`, input checks and the copy of
the output arrays included):
  coal+native  box/sphere/plane pairs in numba, the rest through coal (the default)
  coal         every narrow-phase pair through coal (collide + ComputeContactPatch)
  fcl+native   box/sphere/plane pairs in numba, the rest through python-fcl
  fcl          every pair through python-fcl (collide, patch clipped here)
and, for the broad phase alone, ours (numba sweep and prune with the filter) against coal's
DynamicAABBTreeCollisionManager (update + collide with a collecting callback), FK included.

Times are the median over rounds of the best-of-3 mean of a batch; variants alternate inside
each round so machine noise hits all alike. Ratios are against `coal` (library narrow phase).
"kernel" is the numba call alone (input check, FK, placements, AABBs, broad phase, native
narrow phase; `CollisionDetector._run_kernel`): the rest of detect() is the library pairs and
the copy of the output arrays.

Robot scenes (``--only robots``): G1 lying on the floor and G1 falling (bench_step's
settled states), Go2 standing (its scene's initial state) and trotting in place
(`go2_trotting`), each with self-collision off and on, against MuJoCo on the same robot,
meshes and configuration: ``mj_kinematics`` + ``mj_collision`` (ours includes the q check and
forward kinematics too); and three G1 on the
30-box pyramid (``scenes.pyramid_with_robots`` after 0.4 s, ours only: no MuJoCo model of
that scene). Per pair type, our time is that of a
detector allowed only that pair type minus one allowed no pair (the fixed cost: q check, FK,
placements, AABBs, broad phase), written to bench/results/bench_collision_robots.json and
.png.

    python bench/bench_collision.py [--number 200] [--rounds 5] [--only boxes|robots]

Same-run A/B against another checkout (``--baseline DIR``, e.g. a git worktree of main): the
step's detection (`Simulator.step` passes the placements of its kinematics: no FK, no q check)
and ``detect(q)`` on bench_step's settled 10-box triangle and 30-box square pyramids, G1 lying
(self-collision off and on), G1 falling, Go2 standing and trotting and the three G1 on the pyramid, each
tree in its own worker process, blocks alternating; each block's time is the best of
`--repeat` batches of `--number` calls; medians and p95 over `--rounds` blocks, the ratio of
the medians, MuJoCo's ``mj_kinematics + mj_collision`` timed in the same rounds, and whether
the two trees' contact arrays are identical (a digest of every field):

    python bench/bench_collision.py --baseline ../main-checkout [--number 50 --repeat 30 --rounds 7]

With ``--trajectory``, the A/B replays trajectories instead of one state: the simulator's own
detector (`simstep.Simulator`'s options) on G1 falling, G1 lying and Go2 standing, each a run
of bench_step's scene from its settled state (2000, 500 and 500 steps at dt 1 ms; q and the
step's body placements saved once in bench/results/trajectory_<scene>.npz by this tree), every
state in order as the step calls it (``detect(q, placements)``: the pair cache and the sweep
order evolve as in a simulation). Per block: the best of `--repeat` passes, the mean per call;
``--evict MB`` writes a buffer of that size between calls (the caches a step's dynamics and
solver leave behind). The digest covers every contact field of every state:

    python bench/bench_collision.py --baseline ../main-checkout --trajectory [--repeat 3 --rounds 7 --evict 3]
"""
import argparse
import json
import os
import platform
import sys
import timeit
import warnings

import numpy as np

# --baseline's workers import the tree they measure (BENCH_COLLISION_TREE), not this one
sys.path.insert(0, os.environ.get("BENCH_COLLISION_TREE") or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import collision  # noqa: E402
from collision import kinds  # noqa: E402
import models  # noqa: E402
import simstep  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
H = 0.1            # box half extent (m)
PEN = 1e-5         # penetration at every resting interface (m)
GAP = 1e-3         # gap between neighbours of one pyramid layer (m)


def pyramid():
    """30 boxes: layers 4x4, 3x3, 2x2, 1; each upper box centred on four below it."""
    b = simstep.WorldBuilder()
    b.add_ground()
    step = 2 * H + GAP
    for layer, n in enumerate((4, 3, 2, 1)):
        z = H - PEN + layer * (2 * H - PEN)
        off = -(n - 1) * step / 2
        for i in range(n):
            for j in range(n):
                b.add_box(f"b{layer}_{i}_{j}", (H, H, H), position=(off + i * step, off + j * step, z))
    w = b.build()
    return w, w.q0, 4 * (16 + 9 * 4 + 4 * 4 + 1 * 4)


def stack():
    """30 boxes on top of each other, alternately yawed by 0 and 45 degrees."""
    b = simstep.WorldBuilder()
    b.add_ground()
    for k in range(30):
        a = (np.pi / 8) * (k % 2)
        b.add_box(f"b{k}", (H, H, H), position=(0, 0, H - PEN + k * (2 * H - PEN)),
                  quaternion=(0, 0, np.sin(a), np.cos(a)))
    w = b.build()
    return w, w.q0, 4 * 30


def settled(shape):
    """bench_step's 0.1 m box pyramid (`box_scene(shape, 4, 0.1)`) after 100 steps of the
    simulator (dt 1 ms), its 2 mm margin."""
    from bench.bench_step import DT, box_scene
    w = box_scene(shape, 4, 0.1)[0]
    sim = simstep.Simulator(w, dt=DT)
    sim.run(100)
    return w, sim.q.copy(), None


def g1_lying():
    """G1 on its back (rotated -90 degrees about y), lowest point 1 mm into the ground."""
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_urdf("g1", path, package_dirs=dirs, position=(0, 0, 1.0),
               quaternion=(0, -np.sin(np.pi / 4), 0, np.cos(np.pi / 4)))
    w = b.build()
    q = w.q0.copy()
    # exact lowest point: a margin large enough to report every ground pair's distance
    far = collision.CollisionDetector(w, margin=1.0, self_collision=False)
    c = far.detect(q)
    q[2] -= c.distance[c.body2 == -1].min() + 1e-3
    return w, q, None


class CoalManagerBroadPhase:
    """Broad-phase baseline: FK, every moving geometry's transform set on its coal
    CollisionObject, DynamicAABBTreeCollisionManager.update() and collide() with a collecting
    callback (no filtering: coal's manager has none)."""

    def __init__(self, world):
        import coal
        self.coal, self.world = coal, world
        shapes = collision.CollisionDetector(world, backend="coal", native=False)._backend.shapes
        self.objs = [coal.CollisionObject(s, coal.Transform3s()) for s in shapes]
        self.moving = [(i, g.body, g.rotation, g.translation) for i, g in enumerate(world.geometries)
                       if g.body >= 0]
        for i, g in enumerate(world.geometries):
            if g.body < 0:
                self.objs[i].setTransform(coal.Transform3s(g.rotation, g.translation))
        self.mgr = coal.DynamicAABBTreeCollisionManager()
        for o in self.objs:
            self.mgr.registerObject(o)
        self.mgr.setup()
        self.cb = coal.CollisionCallBackCollect(100000)

    def pairs(self, q):
        oR, op = models.forward_kinematics(self.world.model, q)
        for i, b, R, p in self.moving:
            o = self.objs[i]
            o.setRotation(oR[b] @ R)
            o.setTranslation(oR[b] @ p + op[b])
            o.computeAABB()
        self.mgr.update()
        self.cb.init()
        self.mgr.collide(self.cb)
        return self.cb.numCollisionPairs()


def per_call_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def run(number, rounds):
    scenes = {"pyramid-30": (pyramid, 0.0), "stack-30": (stack, 0.0), "g1-lying": (g1_lying, 0.0),
              "g1-lying-m2cm": (g1_lying, 0.02),
              "step-triangle-10": (lambda: settled("triangle"), 2e-3),
              "step-square-30": (lambda: settled("square"), 2e-3)}
    variants = [("coal+native", "coal", True), ("coal", "coal", False),
                ("fcl+native", "fcl", True), ("fcl", "fcl", False)]
    rows, broad = [], []
    for name, (make, margin) in scenes.items():
        w, q, expected = make()
        dets = {v: collision.CollisionDetector(w, backend=b, native=nat, margin=margin) for v, b, nat in variants}
        counts = {}
        for v, d in dets.items():
            c = d.detect(q)
            counts[v] = dict(contacts=len(c), pairs=int(len(set(zip(c.geom1, c.geom2)))),
                             ground=int((c.body2 == -1).sum()), min_distance=float(c.distance.min()),
                             candidates=d.stats["candidates"], library_pairs=d.stats["library_pairs"])
        fns = {v: (lambda d=d: d.detect(q)) for v, d in dets.items()}
        kfns = {v: (lambda d=d: d._run_kernel(q)) for v, d in dets.items()}
        times = {v: [] for v in fns}
        ktimes = {v: [] for v in fns}
        for _ in range(rounds):
            for v, fn in fns.items():
                times[v].append(per_call_us(fn, number))
                ktimes[v].append(per_call_us(kfns[v], number))
        med = {v: float(np.median(t)) for v, t in times.items()}
        kmed = {v: float(np.median(t)) for v, t in ktimes.items()}
        for v in fns:
            rows.append(dict(scene=name, variant=v, us_per_call=med[v], kernel_us=kmed[v],
                             ratio_to_coal=med[v] / med["coal"], margin=margin, expected_contacts=expected,
                             **counts[v]))
        # broad phase alone: ours (FK + placements + AABBs + SAP + filter) vs coal's manager
        det = dets["coal"]
        mgr = CoalManagerBroadPhase(w)  # (no margin: AABBs as they are)
        bp = {"ours": lambda: det.candidate_pairs(q), "coal-manager": lambda: mgr.pairs(q)}
        bt = {k: [] for k in bp}
        for _ in range(rounds):
            for k, fn in bp.items():
                bt[k].append(per_call_us(fn, number))
        bmed = {k: float(np.median(t)) for k, t in bt.items()}
        broad.append(dict(scene=name, ours_us=bmed["ours"], coal_manager_us=bmed["coal-manager"],
                          ratio=bmed["ours"] / bmed["coal-manager"], ours_pairs=len(det.candidate_pairs(q)),
                          coal_manager_pairs=int(mgr.pairs(q))))
    return rows, broad


# ---------------------------------------------------------------- robots against MuJoCo
ROBOT_MARGIN = 2e-3   # the simulator's default detection margin


def robot_states(only=None):
    """(name, robot, world, q) of the robot scenes (robot None: no MuJoCo model of the scene);
    only: the index of one of them, returned alone."""
    import scenes
    from bench.bench_step import g1_world, settled

    def g1(name, settle):
        w = g1_world()
        return name, "g1", w, settled(name.replace("-", "_"), w, settle, False).q.copy()

    def go2(trot):
        w = scenes.quadruped("go2")
        return ("go2-trotting", "go2", w, go2_trotting(w)) if trot else ("go2-standing", "go2", w, w.q0.copy())

    def robots():   # three G1 falling on the 30-box pyramid, the first one landed (0.4 s; cached in bench/results)
        w = scenes.pyramid_with_robots()
        return "pyramid-robots", None, w, settled("pyramid_with_robots", w, 0.4, False).q.copy()

    makers = [lambda: g1("g1-lying", 3.0), lambda: g1("g1-falling", 0.3), lambda: go2(False), lambda: go2(True),
              robots]
    return makers[only]() if only is not None else [m() for m in makers]


def go2_trotting(w, duration=0.75):
    """Go2 trotting in place: the standing scene's joint PD (`scenes.quadruped`) on bench_step's
    gait (`trot_reference`: the diagonal leg pairs FL+RR and FR+RL lifted in turn, period
    0.4 s), simulated `duration` s at dt 1 ms from the standing state; returns q then
    (mid-swing of FR+RL: two feet on the ground)."""
    from bench.bench_step import trot_reference
    pd = w.actuation
    pd.q_ref_fn = trot_reference(pd)
    try:
        sim = simstep.Simulator(w, dt=1e-3)
        sim.run(int(round(duration / 1e-3)))
    finally:
        pd.q_ref_fn = None
    return sim.q.copy()


def save_g1_lying():
    """tests/data/g1_lying.npz: the G1-lying state of `robot_states` (bench_step's G1 dropped
    on its back, 3 s at dt 1 ms), for tests/test_collision_mujoco.py."""
    name, _, _, q = robot_states()[0]
    path = os.path.join(os.path.dirname(HERE), "tests", "data", "g1_lying.npz")
    np.savez_compressed(path, q=q, source="bench_step's G1 (ground + g1_29dof_rev_1_0.urdf, free base) dropped "
                        "from 0.9 m on its back and simulated 3 s at dt 1 ms (python bench/bench_collision.py "
                        "--save-g1-lying)")
    print(f"wrote {path}")


def _pair_types(det):
    """Pair type of each (a, b) geometry pair: 'hull-plane', 'hull-hull', 'prim-plane',
    'hull-prim', 'prim-prim', 'cyl-hull' (G1's shoulders), 'cyl-prim', 'cyl-plane'."""
    S = det.shapes
    cls = np.where(S.kind == kinds.PLANE, 0, np.where(S.kind == kinds.CONVEX, 1,
                                                      np.where(S.kind == kinds.CYLINDER, 3, 2)))
    names = {(1, 0): "hull-plane", (0, 1): "hull-plane", (1, 1): "hull-hull", (2, 0): "prim-plane",
             (0, 2): "prim-plane", (1, 2): "hull-prim", (2, 1): "hull-prim", (2, 2): "prim-prim",
             (3, 0): "cyl-plane", (0, 3): "cyl-plane", (3, 1): "cyl-hull", (1, 3): "cyl-hull",
             (3, 2): "cyl-prim", (2, 3): "cyl-prim", (3, 3): "cyl-prim"}
    return {t: np.array([[names.get((cls[i], cls[j])) == t for j in range(len(S))] for i in range(len(S))])
            for t in set(names.values())}


def run_robots(number, rounds):
    import mujoco
    from bench.bench_step import mujoco_qpos, robot_mujoco
    rows = []
    for name, robot, w, q in robot_states():
        for sc in (False, True):
            det = collision.CollisionDetector(w, self_collision=sc, margin=ROBOT_MARGIN)
            c = det.detect(q)
            full = det.allow.copy()
            # detectors restricted to one pair type, and one with no pair (the fixed cost)
            types = {t: msk for t, msk in _pair_types(det).items() if (full & msk).any()}
            dets = {"all": det}
            for t, msk in types.items():
                d = collision.CollisionDetector(w, self_collision=sc, margin=ROBOT_MARGIN)
                d.allow &= msk.astype(np.uint8)
                dets[t] = d
            none = collision.CollisionDetector(w, self_collision=sc, margin=ROBOT_MARGIN)
            none.allow[:] = 0
            dets["fixed"] = none
            fns = {k: (lambda d=d: d.detect(q)) for k, d in dets.items()}
            if robot is not None:
                mjm = robot_mujoco(robot, self_collision=sc)
                mjm.geom_margin[:] = ROBOT_MARGIN / 2      # a pair's margin is the sum: the same as ours
                mjd = mujoco.MjData(mjm)
                mjd.qpos[:] = mujoco_qpos(w, mjm, q, robot + "/")

                def mj_call():
                    mujoco.mj_kinematics(mjm, mjd)
                    mujoco.mj_collision(mjm, mjd)

                mj_call()
                fns["mujoco"] = mj_call
            times = {k: [] for k in fns}
            for _ in range(rounds):
                for k, fn in fns.items():
                    times[k].append(per_call_us(fn, number))
            med = {k: float(np.median(t)) for k, t in times.items()}
            per_type = {t: max(med[t] - med["fixed"], 0.0) for t in types}
            mj = {}
            if robot is not None:
                mj_pairs = {(min(b1, b2), max(b1, b2)) for b1, b2 in zip(mjd.contact.geom1, mjd.contact.geom2)}
                mj = dict(mujoco_us=med["mujoco"], ratio=med["all"] / med["mujoco"], mujoco_contacts=int(mjd.ncon),
                          mujoco_pairs=len(mj_pairs))
            p95 = {k: float(np.percentile(t, 95)) for k, t in times.items()}
            row = dict(scene=name, self_collision=sc, ours_us=med["all"], ours_p95_us=p95["all"],
                       mujoco_us=None, ratio=None, mujoco_contacts=None, mujoco_pairs=None,
                       fixed_us=med["fixed"], per_type_us=per_type,
                       contacts=len(c), pairs=int(len(set(zip(c.geom1, c.geom2)))),
                       candidates=det.stats["candidates"], library_pairs=det.stats["library_pairs"],
                       min_distance=float(c.distance.min()) if len(c) else None)
            row.update(mj)
            rows.append(row)
            r = rows[-1]
            mjtxt = "mujoco     - " if robot is None else \
                f"mujoco {r['mujoco_us']:7.1f} us  ratio {r['ratio']:5.2f}  contacts {r['contacts']:3d} " \
                f"(mujoco {r['mujoco_contacts']:3d})"
            print(f"{name:<14} self={str(sc):<5} ours {r['ours_us']:7.1f} us (p95 {r['ours_p95_us']:.1f})  {mjtxt}  "
                  f"library pairs {r['library_pairs']}  per type " +
                  ", ".join(f"{t} {v:.1f}" for t, v in per_type.items()) + f", fixed {r['fixed_us']:.1f}")
    return rows


def plot_robots(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['scene']}\nself {'on' if r['self_collision'] else 'off'}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(9, 4))
    bottom = np.array([r["fixed_us"] for r in rows])
    ax.bar(x - 0.2, bottom, 0.4, label="ours: fixed (FK, AABBs, broad phase)")
    for t in ("hull-plane", "prim-plane", "cyl-plane", "hull-hull", "hull-prim", "cyl-hull", "cyl-prim", "prim-prim"):
        v = np.array([r["per_type_us"].get(t, 0.0) for r in rows])
        if v.any():
            ax.bar(x - 0.2, v, 0.4, bottom=bottom, label=f"ours: {t}")
            bottom = bottom + v
    ax.bar(x + 0.2, [r["mujoco_us"] or 0.0 for r in rows], 0.4, color="k", alpha=0.6, label="MuJoCo mj_kinematics + mj_collision")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("µs per call")
    ax.set_title("Robot collision detection per call (same configuration)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ---------------------------------------------------------------- same-run A/B against another tree
AB_SCENES = ("triangle-10", "square-30", "g1-lying", "g1-lying-self", "g1-falling", "go2-standing",
             "go2-standing-self", "go2-trotting", "pyramid-robots")


def ab_detector(name):
    """(detector, MuJoCo robot or None) of an A/B scene, built with the code on sys.path: the
    pyramids with their simulator's own detector, the robots with a 2 mm margin,
    self-collision off unless the name ends in -self."""
    import scenes
    from bench.bench_step import DT, box_scene, g1_world
    if name in ("triangle-10", "square-30"):
        return simstep.Simulator(box_scene(name.split("-")[0], 4, 0.1)[0], dt=DT).detector, None
    base = name[:-5] if name.endswith("-self") else name
    if base in ("g1-lying", "g1-falling"):
        w, robot = g1_world(), "g1"
    elif base.startswith("go2"):
        w, robot = scenes.quadruped("go2"), "go2"
    else:
        w, robot = scenes.pyramid_with_robots(), None
    return collision.CollisionDetector(w, self_collision=name.endswith("-self"), margin=ROBOT_MARGIN), robot


def ab_configuration(name):
    """q of an A/B scene (computed once, by this tree, for both): bench_step's pyramids after 2 s,
    the robot scenes' states of `robot_states`."""
    from bench.bench_step import box_scene, settled as step_settled
    if name in ("triangle-10", "square-30"):
        shape = name.split("-")[0]
        return step_settled(shape, box_scene(shape, 4, 0.1)[0], 2.0, False).q.copy()
    base = name[:-5] if name.endswith("-self") else name
    index = {"g1-lying": 0, "g1-falling": 1, "go2-standing": 2, "go2-trotting": 3, "pyramid-robots": 4}[base]
    return robot_states(only=index)[3]


def ab_worker():
    """Serve A/B requests on stdin ("scene number repeat q.npy"): the best per-call µs of the
    step's detection (placements given) and of detect(q), the contact count and a digest."""
    import hashlib
    warnings.simplefilter("ignore")
    cache = {}
    for line in sys.stdin:
        name, number, repeat, qpath = line.split()
        if name.startswith("trajectory:"):     # `--trajectory` (number: the eviction in MB)
            print(json.dumps(ab_trajectory_worker(name.split(":", 1)[1], int(repeat), float(number), cache)),
                  flush=True)
            continue
        if name not in cache:
            det, _ = ab_detector(name)
            q = np.load(qpath)
            data = models.Data(det.model)
            data.compute(q)
            c = det.detect(q, placements=(data.oR, data.op))
            h = hashlib.sha1()
            for f in ("body1", "body2", "geom1", "geom2", "key", "position", "frame", "distance", "friction",
                      "restitution", "compliance"):
                h.update(np.ascontiguousarray(getattr(c, f)).tobytes())
            cache[name] = (det, q, (data.oR, data.op), len(c), h.hexdigest())
        det, q, pl, k, digest = cache[name]
        n, r = int(number), int(repeat)
        step = min(timeit.repeat(lambda: det.detect(q, placements=pl), number=n, repeat=r)) / n * 1e6
        full = min(timeit.repeat(lambda: det.detect(q), number=n, repeat=r)) / n * 1e6
        print(json.dumps(dict(step=step, detect=full, contacts=k, digest=digest)), flush=True)


TRAJECTORIES = {"g1_falling": 2000, "g1_lying": 500, "go2_standing": 500}
CONTACT_FIELDS = ("body1", "body2", "geom1", "geom2", "key", "position", "frame", "distance", "friction",
                  "restitution", "compliance")


def trajectory(name):
    """(q (T, nq), oR (T, n, 3, 3), op (T, n, 3)) of bench_step's scene `name` run from its
    settled state for TRAJECTORIES[name] steps: the configurations and body placements its
    detection sees (cached in bench/results/trajectory_<name>.npz)."""
    path = os.path.join(HERE, "results", f"trajectory_{name}.npz")
    if not os.path.exists(path):
        from bench.bench_step import SCENES, settled
        build, settle, _ = SCENES[name]
        sim = settled(name, build()[0], settle, False)
        qs, oR, op = [], [], []
        for _ in range(TRAJECTORIES[name]):
            qs.append(sim.q.copy())
            oR.append(sim.data.oR.copy())
            op.append(sim.data.op.copy())
            sim.step()
        np.savez(path, q=np.array(qs), oR=np.array(oR), op=np.array(op))
    d = np.load(path)
    return d["q"], d["oR"], d["op"]


def ab_trajectory_worker(name, repeat, evict_mb, cache):
    """One block of `--trajectory`: (best mean µs per call over `repeat` passes, contacts per
    state, digest of all contacts)."""
    import hashlib
    import time
    if name not in cache:
        from bench.bench_step import SCENES
        det = simstep.Simulator(SCENES[name][0]()[0], dt=1e-3).detector
        qs, oR, op = trajectory(name)
        pls = [(np.ascontiguousarray(oR[i]), np.ascontiguousarray(op[i])) for i in range(len(qs))]
        h = hashlib.sha1()
        nc = 0
        for i in range(len(qs)):
            c = det.detect(qs[i], placements=pls[i])
            nc += len(c)
            for f in CONTACT_FIELDS:
                h.update(np.ascontiguousarray(getattr(c, f)).tobytes())
        cache[name] = (det, qs, pls, nc / len(qs), h.hexdigest())
    det, qs, pls, nc, digest = cache[name]
    buf = np.zeros(max(1, int(evict_mb * 1e6 / 8)))
    clock = time.perf_counter
    best = np.inf
    for _ in range(repeat):
        total = 0.0
        for i in range(len(qs)):
            if evict_mb > 0:
                buf += 1.0
            t0 = clock()
            det.detect(qs[i], placements=pls[i])
            total += clock() - t0
        best = min(best, total / len(qs))
    return dict(step=best * 1e6, contacts=nc, digest=digest)


def ab_workers(baseline):
    """The `--ab-worker` processes of the checkout in `baseline` and of this tree: {"base": …, "new": …}."""
    import subprocess
    trees = {"base": os.path.abspath(baseline), "new": os.path.dirname(HERE)}
    return {t: subprocess.Popen([sys.executable, os.path.abspath(__file__), "--ab-worker"], cwd=p, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=dict(os.environ, BENCH_COLLISION_TREE=p, PYTHONPATH=p))
            for t, p in trees.items()}


def ab_round(procs, r, request):
    """One block per worker: `request` sent to each, base first in even rounds r and last in odd
    ones; [(tree, its JSON reply)] in the order they ran."""
    out = []
    for t in (list(procs) if r % 2 == 0 else list(procs)[::-1]):
        procs[t].stdin.write(request + "\n")
        procs[t].stdin.flush()
        out.append((t, json.loads(procs[t].stdout.readline())))
    return out


def ab_close(procs):
    for p in procs.values():
        p.stdin.close()
        p.wait()


def run_ab_trajectory(baseline, repeat, rounds, evict_mb):
    """`--trajectory` blocks of the baseline tree and this tree, alternating."""
    for name in TRAJECTORIES:     # made by this tree, read by both
        trajectory(name)
    procs = ab_workers(baseline)
    rows = []
    for name in TRAJECTORIES:
        res = {t: [] for t in procs}
        for r in range(rounds):
            for t, out in ab_round(procs, r, f"trajectory:{name} {evict_mb} {repeat} {os.path.join(HERE, 'results')}"):
                res[t].append(out)
        b, n = np.array([x["step"] for x in res["base"]]), np.array([x["step"] for x in res["new"]])
        row = dict(scene=name, states=TRAJECTORIES[name], contacts=res["new"][0]["contacts"],
                   identical=res["new"][0]["digest"] == res["base"][0]["digest"],
                   base_us=float(np.median(b)), base_min_us=float(b.min()), new_us=float(np.median(n)),
                   new_min_us=float(n.min()), ratio=float(np.median(n) / np.median(b)))
        rows.append(row)
        print(f"{name:<14} base {row['base_us']:6.2f} (min {row['base_min_us']:6.2f}) new {row['new_us']:6.2f} "
              f"(min {row['new_min_us']:6.2f}) us/call x{row['ratio']:.3f} | contacts/state {row['contacts']:.1f} "
              f"identical {row['identical']}", flush=True)
    ab_close(procs)
    return rows


def run_ab(baseline, number, repeat, rounds):
    """Blocks of the baseline tree, this tree and MuJoCo, alternating (see the module docstring)."""
    import tempfile
    import mujoco
    from bench.bench_step import mujoco_qpos, robot_mujoco
    procs = ab_workers(baseline)
    rows = []
    tmp = tempfile.mkdtemp()
    for name in AB_SCENES:
        det, robot = ab_detector(name)
        q = ab_configuration(name)
        qpath = os.path.join(tmp, f"{name}.npy")
        np.save(qpath, q)
        mj = None
        if robot is not None:
            mjm = robot_mujoco(robot, self_collision=name.endswith("-self"))
            mjm.geom_margin[:] = ROBOT_MARGIN / 2
            mjd = mujoco.MjData(mjm)
            mjd.qpos[:] = mujoco_qpos(det.world, mjm, q, robot + "/")

            def mj():
                mujoco.mj_kinematics(mjm, mjd)
                mujoco.mj_collision(mjm, mjd)
        res = {t: [] for t in procs}
        mjt = []
        for r in range(rounds):
            for t, out in ab_round(procs, r, f"{name} {number} {repeat} {qpath}"):
                res[t].append(out)
            if mj is not None:
                mjt.append(min(timeit.repeat(mj, number=number, repeat=repeat)) / number * 1e6)
        row = dict(scene=name, contacts=res["new"][0]["contacts"], base_contacts=res["base"][0]["contacts"],
                   identical=res["new"][0]["digest"] == res["base"][0]["digest"],
                   mujoco_us=float(np.median(mjt)) if mjt else None,
                   mujoco_contacts=int(mjd.ncon) if mjt else None)
        for key in ("step", "detect"):
            b, n = np.array([x[key] for x in res["base"]]), np.array([x[key] for x in res["new"]])
            row.update({f"{key}_base_us": float(np.median(b)), f"{key}_base_p95_us": float(np.percentile(b, 95)),
                        f"{key}_new_us": float(np.median(n)), f"{key}_new_p95_us": float(np.percentile(n, 95)),
                        f"{key}_ratio": float(np.median(n) / np.median(b))})
        rows.append(row)
        mjtxt = f"  mujoco {row['mujoco_us']:6.1f} ({row['mujoco_contacts']:3d})" if mjt else ""
        print(f"{name:<18} step path: base {row['step_base_us']:6.1f} (p95 {row['step_base_p95_us']:6.1f}) "
              f"new {row['step_new_us']:6.1f} (p95 {row['step_new_p95_us']:6.1f}) x{row['step_ratio']:.3f} | "
              f"detect(q): base {row['detect_base_us']:6.1f} new {row['detect_new_us']:6.1f} "
              f"x{row['detect_ratio']:.3f} | contacts {row['contacts']:3d} identical {row['identical']}{mjtxt}",
              flush=True)
    ab_close(procs)
    return rows


def main():
    if "--ab-worker" in sys.argv:
        return ab_worker()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--number", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=("boxes", "robots"), default=None)
    ap.add_argument("--save-g1-lying", action="store_true", help="write tests/data/g1_lying.npz and exit")
    ap.add_argument("--baseline", metavar="DIR", help="same-run A/B of the detection against the checkout in DIR")
    ap.add_argument("--repeat", type=int, default=30, help="--baseline: batches per block (the best is kept)")
    ap.add_argument("--trajectory", action="store_true", help="--baseline: replay trajectories (module docstring)")
    ap.add_argument("--evict", type=float, default=0.0, metavar="MB",
                    help="--trajectory: buffer written between calls (MB)")
    args = ap.parse_args()
    if args.save_g1_lying:
        return save_g1_lying()
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    if args.baseline and args.trajectory:
        print(f"load before: {open('/proc/loadavg').read().split()[:3]}")
        rows = run_ab_trajectory(args.baseline, args.repeat, args.rounds, args.evict)
        print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
        path = os.path.join(HERE, "results", "bench_collision_ab_trajectory.json")
        with open(path, "w") as f:
            json.dump(dict(benchmark="collision detection per call along trajectories, this tree against a "
                           "baseline checkout", baseline=os.path.abspath(args.baseline), repeat=args.repeat,
                           rounds=args.rounds, evict_mb=args.evict, rows=rows), f, indent=1)
        print(f"wrote {path}")
        return
    if args.baseline:
        print(f"load before: {open('/proc/loadavg').read().split()[:3]}")
        rows = run_ab(args.baseline, args.number, args.repeat, args.rounds)
        print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
        path = os.path.join(HERE, "results", "bench_collision_ab.json")
        with open(path, "w") as f:
            json.dump(dict(benchmark="collision detection per call, this tree against a baseline checkout",
                           baseline=os.path.abspath(args.baseline), number=args.number, repeat=args.repeat,
                           rounds=args.rounds, rows=rows), f, indent=1)
        print(f"wrote {path}")
        return
    if args.only != "robots":
        main_boxes(args)
    if args.only != "boxes":
        import mujoco
        rows = run_robots(args.number, args.rounds)
        out = dict(benchmark="robot collision detection per call against MuJoCo mj_kinematics + mj_collision",
                   python=platform.python_version(), mujoco=mujoco.__version__, machine=platform.machine(),
                   cpus=os.cpu_count(), number=args.number, rounds=args.rounds, margin=ROBOT_MARGIN, rows=rows)
        path = os.path.join(HERE, "results", "bench_collision_robots.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        plot_robots(rows, path[:-5] + ".png")
        print(f"wrote {path} and .png")


def main_boxes(args):
    rows, broad = run(args.number, args.rounds)
    print(f"{'scene':<16} {'variant':<12} {'us/call':>10} {'kernel':>8} {'x coal':>8} {'contacts':>9} "
          f"{'expected':>9} {'pairs':>6} {'min dist (m)':>13}")
    for r in rows:
        print(f"{r['scene']:<16} {r['variant']:<12} {r['us_per_call']:>10.1f} {r['kernel_us']:>8.1f} "
              f"{r['ratio_to_coal']:>8.3f} {r['contacts']:>9d} {str(r['expected_contacts'] or '-'):>9} "
              f"{r['pairs']:>6d} {r['min_distance']:>13.2e}")
    print(f"\nbroad phase alone (FK included): {'scene':<16} {'ours us':>9} {'coal mgr us':>12} {'ratio':>7} "
          f"{'our pairs':>10} {'mgr pairs':>10}")
    for r in broad:
        print(f"{'':33}{r['scene']:<16} {r['ours_us']:>9.1f} {r['coal_manager_us']:>12.1f} {r['ratio']:>7.3f} "
              f"{r['ours_pairs']:>10d} {r['coal_manager_pairs']:>10d}")
    import coal
    import fcl
    out = dict(benchmark="collision detection per call (CollisionDetector.detect)",
               python=platform.python_version(), coal=coal.__version__,
               fcl=getattr(fcl, "__version__", "?"), machine=platform.machine(), cpus=os.cpu_count(),
               number=args.number, rounds=args.rounds, rows=rows, broad_phase=broad)
    path = os.path.join(HERE, "results", "bench_collision.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Contact scenarios of paper 000 Table I (built from `scenes`), the Fig. 2 swimmer, and
their Pinocchio 4.1 counterparts.

`table1(quick=False)` returns the Table I scenarios as (label, model, q, constraints): the
scene functions' worlds (`scenes.quadruped`, `scenes.biped` (Cassie: its 24 loop-closure rows
are part of the constraints), `scenes.humanoid`, `scenes.box_stack`,
`scenes.box_pyramid`, `scenes.pyramid_with_robots`), with the contacts the simulator's
collision detection finds at q (contact patches of up to 4 points, the simulator's margin),
as the paper does ("each pair of contacting surfaces is modeled with up to 4 contact
points"). Standing robots and the boxes are taken at their initial state (Cassie after 1 s
of standing: it starts on one point of one foot); the fallen robots and the robots on the
pyramid after simulating the scene (`SETTLE` seconds, default settings): the robots lie on
the ground / on the pyramid. "+JF" adds a joint-friction row per joint dof.

`swimmer(n)` is the planar swimmer of Fig. 2 (a planar base and two point contacts per link,
not the `scenes.swimmer` world).

`pin_problem(model, q, constraints)` rebuilds the model in Pinocchio (free, revolute,
prismatic and planar joints) and the constraints as `PointContactConstraintModel`s /
`JointFrictionConstraintModel`s with the same rows (same frames, same order); a point loop
closure is a point contact at its anchor (the same rows where the loop is closed).
"""
from __future__ import annotations

import numpy as np

import models
import scenes
import simstep
from models import FREE, PLANAR, REVOLUTE, ModelBuilder
from solvers import ContactSet, JointFriction

# simulated seconds before the snapshot of the scenes that start in the air
SETTLE = {"Go2 fallen": 1.0, "G1 fallen": 2.0, "Pyramid + robots": 1.0, "Cassie standing": 1.0}


def scene_problem(world, seconds=0.0):
    """(model, q, [ContactSet]): the world at q0, or after simulating it for `seconds`
    (default Simulator settings, dt = world.dt), with the contacts the simulator's detector
    finds at that q."""
    sim = simstep.Simulator(world, dt=world.dt)
    if seconds > 0:
        sim.run(int(round(seconds / world.dt)))
    q = sim.q.copy()
    c = sim.detector.detect(q)
    # a scene's loop closures (Cassie) are constraint rows of every step as well
    return world.model, q, [ContactSet(c.body1, c.body2, c.position, c.frame, c.friction)] + list(world.constraints)


def with_joint_friction(model, cons):
    """cons plus one joint-friction row per dof of every joint that is not a free joint."""
    return cons + [JointFriction(j, 1.0) for j in model.joint_names if model.jtype[model.joint_body(j)] != FREE]


def table1(quick=False, only=None):
    """Paper 000 Table I scenarios as (label, model, q, constraints); quick: the robots and
    the box pyramid only; only: the scenarios whose label contains this text."""
    if only:
        return [s for s in table1(quick) if only.lower() in s[0].lower()] if not only.lower().startswith("cassie") \
            else _cassie_rows()
    out = []
    worlds = [("Go2 standing", lambda: scenes.quadruped("go2", pose="standing")),
              ("Go2 fallen", lambda: scenes.quadruped("go2", pose="falling")),
              ("Cassie standing", lambda: scenes.biped("cassie", pose="standing")),
              ("G1 standing", lambda: scenes.humanoid("g1", pose="standing")),
              ("G1 fallen", lambda: scenes.humanoid("g1", pose="falling"))]
    for label, make in worlds:
        model, q, cons = scene_problem(make(), SETTLE.get(label, 0.0))
        out.append((label, model, q, cons))
        out.append((label + " +JF", model, q, with_joint_friction(model, cons)))
    if not quick:
        out.append(("Stack of boxes",) + scene_problem(scenes.box_stack(30)))
    out.append(("Box pyramid",) + scene_problem(scenes.box_pyramid()))
    if not quick:
        out.append(("Pyramid + robots",) + scene_problem(scenes.pyramid_with_robots(), SETTLE["Pyramid + robots"]))
    return out


def swimmer(nlinks, link_length=0.3):
    """Planar swimmer (paper 000 Fig. 2): planar floating base + (nlinks-1) revolute joints about z,
    links along x lying on the ground, 2 point contacts per link (its two ends)."""
    mb = ModelBuilder()
    L = link_length
    I = np.diag([1e-4, L * L / 12, L * L / 12])
    prev = mb.add_body("link0", -1, PLANAR, mass=1.0, com=(L / 2, 0, 0), inertia=I)
    for k in range(1, nlinks):
        prev = mb.add_body(f"link{k}", prev, REVOLUTE, translation=(L, 0, 0), axis=(0, 0, 1), mass=1.0,
                           com=(L / 2, 0, 0), inertia=I)
    model = mb.build()
    rng = np.random.default_rng(nlinks)
    q = model.neutral()
    q[4:] = rng.uniform(-0.3, 0.3, nlinks - 1)
    data = models.Data(model).compute(q)
    bodies, pts = [], []
    for i in range(nlinks):
        for s in (0.0, L):
            bodies.append(i); pts.append(data.oR[i] @ np.array([s, 0, 0]) + data.op[i])
    k = len(bodies)
    return model, q, [ContactSet(np.array(bodies), np.full(k, -1), np.array(pts), np.tile(np.eye(3), (k, 1, 1)), 0.5)]


# ----------------------------------------------------------------------------- Pinocchio
def pin_model(model):
    """The same kinematic tree in Pinocchio (joint i+1 = our body i; same q and v layout)."""
    import pinocchio as pin
    from models.layout import JF_AXIS, JF_COM, JF_INERTIA, JF_MASS, JF_P, JF_R
    pm = pin.Model()
    for i in range(model.nbodies):
        f = model.jfloat[i]
        X = pin.SE3(f[JF_R:JF_R + 9].reshape(3, 3), f[JF_P:JF_P + 3].copy())
        jt = model.jtype[i]
        if jt == FREE:
            jm = pin.JointModelFreeFlyer()
        elif jt == REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(f[JF_AXIS:JF_AXIS + 3].copy())
        elif jt == PLANAR:
            jm = pin.JointModelPlanar()
        elif jt == models.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(f[JF_AXIS:JF_AXIS + 3].copy())
        else:
            raise NotImplementedError(f"joint type {jt}")
        j = pm.addJoint(int(model.parent[i]) + 1, jm, X, model.body_names[i])
        pm.appendBodyToJoint(j, pin.Inertia(f[JF_MASS], f[JF_COM:JF_COM + 3].copy(),
                                            f[JF_INERTIA:JF_INERTIA + 9].reshape(3, 3).copy()), pin.SE3.Identity())
    pm.armature = model.armature.copy()
    return pm


def pin_problem(model, q, cons, pm=None):
    """(pm, pd, cms, cds): Pinocchio model/data and constraint models with our rows' order and
    frames. A contact (body1, body2, p, R) becomes PointContactConstraintModel(j1 = body2 + 1,
    placement (R, p) in j1, j2 = body1 + 1, placement at p in j2): its Jacobian
    J_{j2}(p) − J_{j1}(p) in the axes of R is our Rᵀ (v₁(p) − v₂(p))."""
    import pinocchio as pin
    from solvers import as_constraint_set
    pm = pin_model(model) if pm is None else pm
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q)
    cs = as_constraint_set(model, cons)
    cms = pin.StdVec_ConstraintModel()
    seen_joint = set()
    for c in range(len(cs)):
        kind = cs.cb_kind[c]
        if kind in (0, 1):    # a contact, or a point loop closure: a contact at the anchor in frame 1's axes
            b1, b2 = cs.cb_body[c]
            f = cs.cb_f[c]
            if kind == 0:
                p, R = f[:3], f[3:12].reshape(3, 3)
            else:
                o1 = pd.oMi[int(b1) + 1]
                R, p = o1.rotation @ f[3:12].reshape(3, 3), o1.rotation @ f[0:3] + o1.translation
            j1, j2 = int(b2) + 1, int(b1) + 1

            def place(j):
                if j == 0:
                    return pin.SE3(R, p)
                oM = pd.oMi[j]
                return pin.SE3(oM.rotation.T @ R, oM.rotation.T @ (p - oM.translation))
            cms.append(pin.ConstraintModel(pin.PointContactConstraintModel(pm, j1, place(j1), j2, place(j2))))
        elif kind == 4:
            dofs = cs.dof[cs.cb_row[c]:cs.cb_row[c] + cs.cb_nrows[c]]
            seen_joint.add(int(np.searchsorted(model.idx_v, dofs[0], side="right") - 1) + 1)
        else:
            raise NotImplementedError("pin_problem: contacts, point loop closures and joint friction only")
    if seen_joint:
        cms.append(pin.ConstraintModel(pin.JointFrictionConstraintModel(pm, sorted(seen_joint))))
    cds = pin.StdVec_ConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    return pm, pd, cms, cds


def pin_compute(pm, pd, cms, cds, q, mu):
    """What Pinocchio needs before its Cholesky: joint Jacobians, CRBA, each constraint's calc."""
    import pinocchio as pin
    pin.computeJointJacobians(pm, pd, q)
    pin.crba(pm, pd, q)
    for cm, cd in zip(cms, cds):
        cm.calc(pm, pd, cd)


def _cassie_rows():
    model, q, cons = scene_problem(scenes.biped("cassie", pose="standing"), SETTLE["Cassie standing"])
    return [("Cassie standing", model, q, cons), ("Cassie standing +JF", model, q, with_joint_friction(model, cons))]

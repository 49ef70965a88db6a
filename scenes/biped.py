"""Cassie, the biped with internal loops (paper 000 Table I), from example-robot-data's SDF.

The model is ``cassie_v2.sdf`` (`models.load_sdf`): its loops are cut at the four ball
joints (achilles rods at the hips, plantar rods at the feet): four point closures, 12 rows.
The knee-shin and heel springs (1500 and 1250 N·m/rad) act through ``world.actuation``. Its
ten motors get the rotor inertia of ``cassie.sdf``'s gearboxes (0.025–0.059 kg·m², what
``gearbox="armature"`` gives on that file), without which the explicit joint damping of the
file (1 N·m·s/rad on the 0.15 kg feet) is unstable at 1 ms. ``cassie.sdf`` itself adds a
knee-spring link on a slider, closed by a hinge to the knee; that loop is singular (its two
dofs meet the closure with rank 1: an instantaneous motion that no finite motion follows),
which rigid closures turn into a jammed linkage that the ADMM does not converge on once the
robot falls; the scenes do not use it.

Posture (``standing`` and ``falling``): the file's configuration (every joint at 0, loops
closed, springs at rest) but the hip pitch (0.2727 rad, feet under the centre of mass) and
the foot motor (−1.3754 rad, feet level), the passive foot linkage (crank, plantar rod)
solved to close the foot loops. The file's own zero configuration puts the foot's
parallelogram linkage flat, a singular point of its loop; the simulator cannot step from
there. Motors: hip roll, yaw, pitch, knee, foot (``*-op``), 5 per leg.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

import models
import simstep
from simstep.projection import closure_error_kernel

from ._util import JointPD, check_choice, lowest_point_height

VARIANT = "cassie_v2.sdf"
# rotor inertia of the motors (kg·m²): cassie.sdf's gearboxes as reflected inertia (load_sdf's
# gearbox="armature" gives these on that file), applied to cassie_v2.sdf's motor joints
ROTOR = {"roll-op": 0.04608, "yaw-op": 0.04605, "pitch-op": 0.05858, "knee-op": 0.05858, "foot-op": 0.02544}
MOTORS = ("roll-op", "yaw-op", "pitch-op", "knee-op", "foot-op")
# joint suffix -> angle (rad) of the standing posture; other joints at the file's 0
POSTURE = {"pitch-op": 0.2727, "foot-op": -1.3754, "tarsus-crank-joint": -1.3754, "crank-rod-joint": 1.3754}
PASSIVE_FOOT = ("tarsus-crank-joint", "crank-rod-joint")      # solved to close the foot loops
# PD of the motors (N·m/rad, N·m·s/rad), explicit as every JointPD: kd·dt ≪ the rotor inertia
PD_GAINS = dict(kp=400.0, kd=10.0)


def cassie_path(variant=VARIANT):
    """Path of a Cassie SDF of example-robot-data (variants: cassie.sdf, cassie_v2.sdf,
    cassie_reduced.sdf, cassie_simple.sdf, cassie_wo_gearbox_spring.sdf)."""
    for d in models.urdf.default_package_dirs():
        p = os.path.join(d, "example-robot-data", "robots", "cassie_description", "robots", variant)
        if os.path.isfile(p):
            return p
    raise FileNotFoundError(f"Cassie's {variant} not found; install example-robot-data")


def load_cassie(variant=VARIANT, **kw):
    """`models.load_sdf` of a Cassie variant, with its expected notes silenced (the
    gearboxes as armature, the plugin, the cut ball joints' 0.01 damping)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw.setdefault("gearbox", "armature")
        return models.load_sdf(cassie_path(variant), **kw)


def close_loops(model, q, closures, dofs, tol=1e-13, max_iter=50):
    """Gauss–Newton on the closures moving only the dofs `dofs` (least-norm steps, limited
    to 0.2 rad): the scene's passive linkages are solved while the motors keep their angles."""
    from solvers import ConstraintSet, DenseDelassus
    cs = ConstraintSet(model, closures)
    e = np.zeros(cs.m)
    dofs = np.asarray(dofs, dtype=np.int64)
    for _ in range(max_iter):
        oR, op = models.forward_kinematics(model, q)
        if closure_error_kernel(cs.cb_kind, cs.cb_row, cs.cb_body, cs.cb_f, oR, op, e) <= tol:
            break
        J = DenseDelassus(model, q, cs).J[:, dofs]
        step = -np.linalg.lstsq(J, e, rcond=1e-10)[0]
        step *= min(1.0, 0.2 / max(np.abs(step).max(), 1e-300))
        dv = np.zeros(model.nv)
        dv[dofs] = step
        q = model.integrate(q, dv)
    oR, op = models.forward_kinematics(model, q)
    return q, float(closure_error_kernel(cs.cb_kind, cs.cb_row, cs.cb_body, cs.cb_f, oR, op, e))


def cassie_posture(model, closures, prefix=""):
    """q (model.nq,) of the standing posture (module docstring) for a model loaded from
    a Cassie SDF with a free base at the file's pose."""
    q = model.q0.copy()
    for side in ("left", "right"):
        for suffix, val in POSTURE.items():
            q[model.joint_q_index(f"{prefix}{side}-{suffix}")] = val
    dofs = [model.joint_v_index(f"{prefix}{side}-{j}") for side in ("left", "right") for j in PASSIVE_FOOT]
    q, err = close_loops(model, q, closures, dofs)
    if err > 1e-9:
        raise RuntimeError(f"Cassie's posture: the foot loops do not close ({err:.3g} m)")
    return q


class _Sum:
    """Sum of actuation callables."""

    def __init__(self, *terms):
        self.terms = terms

    def __call__(self, sim):
        return sum(t(sim) for t in self.terms)


def biped(robot="cassie", pose="standing", height=None):
    """Cassie on flat ground (module docstring). pose="standing": feet on the ground, the 10
    motors held at the posture by a joint PD (``world.pd``; the motors have rotor inertia),
    plus the springs; "falling": unactuated but for the springs, dropped with its lowest
    point `height` above the ground (default 0.3 m); "hanging": the pelvis welded 1 m up
    (its feet 0.1 m above the ground), unactuated but for the springs. Sets
    ``world.constraints`` (24 closure rows), ``world.actuation``, ``world.dt`` (1 ms)."""
    check_choice(robot, "biped robot", ("cassie",))
    check_choice(pose, "biped pose", ("standing", "falling", "hanging"))
    if height is None:
        height = {"standing": 0.0, "falling": 0.3, "hanging": 0.1}[pose]
    if not (np.isfinite(height) and height >= 0):
        raise ValueError(f"height must be ≥ 0, got {height}")
    m0, cl0 = load_cassie(load_geometry=False)
    q = cassie_posture(m0, cl0)

    def world(floating, z):
        wb = simstep.WorldBuilder()
        wb.add_ground(friction=0.8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the plugin, the cut ball joints' 0.01 damping
            wb.add_sdf("cassie", cassie_path(), floating_base=floating, q=q[7:], position=(0.0, 0.0, z))
        w = wb.build()
        for side in ("left", "right"):
            for j, arm in ROTOR.items():
                w.model.armature[w.model.joint_v_index(f"cassie/{side}-{j}")] = arm
        return w

    w = world(True, 0.0)
    low = lowest_point_height(w, w.q0, "cassie/")
    if pose == "hanging":       # the pelvis welded so that the feet are `height` above the ground
        w = world(False, height - low)
    else:
        w.q0[w.model.joint_q_index("cassie/root_joint") + 2] += height - low
    m = w.model
    springs = w.actuation
    if pose == "standing":
        joints = [f"cassie/{s}-{j}" for s in ("left", "right") for j in MOTORS]
        w.pd = JointPD(m, w.q0, joints, **PD_GAINS)
        w.actuation = _Sum(w.pd, springs)
    w.dt = 1e-3
    w.description = f"Cassie {pose}" + (" (joint PD, springs)" if pose == "standing" else " (springs only)")
    w.plots = ("base_height", "tracking_error", "contact_force") if pose == "standing" else ("base_height", "energy")
    return w

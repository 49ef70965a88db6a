"""Robot scenes: humanoids (G1, Talos), the Go2 quadruped, robots falling on the box pyramid."""
from __future__ import annotations

import warnings

import numpy as np

import models
import simstep

from ._util import JointPD, check_choice, check_int, lowest_point_height
from .boxes import HALF, pyramid_centres

# standing postures (joint name suffix -> angle, rad); joints not listed stay at 0
_POSTURES = {
    "g1": {"hip_pitch_joint": -0.1, "knee_joint": 0.3, "ankle_pitch_joint": -0.2,
           "shoulder_roll_joint": 0.0, "elbow_joint": 0.3},
    "talos": {"leg_left_3_joint": -0.4, "leg_right_3_joint": -0.4, "leg_left_4_joint": 0.8,
              "leg_right_4_joint": 0.8, "leg_left_5_joint": -0.4, "leg_right_5_joint": -0.4,
              "arm_left_2_joint": 0.2, "arm_right_2_joint": -0.2, "arm_left_4_joint": -0.5,
              "arm_right_4_joint": -0.5},
    "go2": {"thigh_joint": 0.8, "calf_joint": -1.5},
}


# standing controllers: rotor inertia of the actuated joints (kg·m²), PD gains
_PD = {"g1": (0.1, 1000.0, 20.0), "talos": (0.1, 3000.0, 40.0), "go2": (0.1, 1000.0, 20.0)}


def _stand(w, robot):
    """Give the actuated joints of `robot` their armature and a PD holding world.q0."""
    m = w.model
    arm, kp, kd = _PD[robot]
    joints = _joint_names(m, robot + "/")
    pd = JointPD(m, w.q0, joints, kp=kp, kd=kd)
    m.armature[pd.iv] = arm
    w.actuation = pd
    return pd


def _posture(model, prefix, robot):
    """Joint positions (model.nq − 7,) of the robot's standing posture, within its limits."""
    q = model.neutral()[7:].copy()
    for j in model.joint_names:
        if model.jtype[model.joint_body(j)] == models.FREE:
            continue
        short = j[len(prefix):]
        for key, val in _POSTURES[robot].items():
            if short == key or short.endswith("_" + key) or short.endswith(key):
                iq, iv = model.joint_q_index(j), model.joint_v_index(j)
                q[iq - 7] = np.clip(val, model.lower[iv], model.upper[iv])
    return q


def _add_robot(wb, name, robot, position, quaternion=(0, 0, 0, 1), q=None, group=1, mask=0xFFFFFFFF,
               friction=0.8):
    path, dirs = models.robot_path(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wb.add_urdf(name, path, floating_base=True, position=position, quaternion=quaternion, q=q,
                    package_dirs=dirs, friction=friction, group=group, mask=mask)


def _place_on(world, name, z_target):
    """Shift the free base of `name` vertically so that its lowest collision point is at z_target."""
    m = world.model
    iq = m.joint_q_index(f"{name}/root_joint")
    low = lowest_point_height(world, world.q0, name + "/")
    world.q0[iq + 2] += z_target - low


def _robot_world(robot, height, posture, self_collision):
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=0.8)
    # robots whose link hulls overlap at rest (Talos, Go2) are loaded without self-collision:
    # group 2 never tests against mask ~2 (the ground, group 1, still collides with them)
    kw = {} if self_collision else dict(group=2, mask=0xFFFFFFFF & ~2)
    m0 = _probe_model(robot)
    q = _posture(m0, "", robot) if posture else None
    _add_robot(wb, robot, robot, position=(0.0, 0.0, 1.5), q=q, **kw)
    w = wb.build()
    _place_on(w, robot, height)
    return w


_MODEL_CACHE = {}


def _probe_model(robot):
    if robot not in _MODEL_CACHE:
        path, dirs = models.robot_path(robot)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _MODEL_CACHE[robot] = models.load_urdf(path, floating_base=True, package_dirs=dirs,
                                                   load_geometry=False)
    return _MODEL_CACHE[robot]


def _joint_names(model, prefix):
    return [j for j in model.joint_names if j.startswith(prefix) and model.jtype[model.joint_body(j)] != models.FREE]


def humanoid(robot="g1", pose="standing", height=None):
    """A humanoid on flat ground. pose="standing": feet on the ground in a slightly crouched
    posture held by a joint PD controller (``world.actuation``; the actuated joints get a
    rotor inertia, see `JointPD`); "falling": unactuated (the URDF as is), in
    the same posture, dropped with its lowest point `height` above the ground (default 0.3 m).
    G1 keeps self-collision; Talos' link hulls overlap at rest, so it is loaded without."""
    check_choice(robot, "humanoid robot", ("g1", "talos"))
    check_choice(pose, "humanoid pose", ("standing", "falling"))
    if height is None:
        height = 0.0 if pose == "standing" else 0.3
    if not (np.isfinite(height) and height >= 0):
        raise ValueError(f"height must be ≥ 0, got {height}")
    w = _robot_world(robot, height, posture=True, self_collision=(robot == "g1"))
    if pose == "standing":
        _stand(w, robot)
    w.dt = 1e-3
    w.description = f"{robot} {pose}" + (f" from {height:g} m" if pose == "falling" else " (joint PD)")
    w.plots = ("base_height", "tracking_error", "contact_force", "energy") if pose == "standing" else \
        ("base_height", "contact_force", "energy")
    return w


def quadruped(robot="go2", pose="standing", height=None):
    """A quadruped (Go2) on flat ground; "standing": crouched stance held by a joint PD
    controller (``world.actuation``); "falling": unactuated, dropped from `height` (0.3 m)."""
    check_choice(robot, "quadruped robot", ("go2",))
    check_choice(pose, "quadruped pose", ("standing", "falling"))
    if height is None:
        height = 0.0 if pose == "standing" else 0.3
    if not (np.isfinite(height) and height >= 0):
        raise ValueError(f"height must be ≥ 0, got {height}")
    w = _robot_world(robot, height, posture=True, self_collision=False)
    if pose == "standing":
        _stand(w, robot)
    w.dt = 1e-3
    w.description = f"{robot} {pose}"
    w.plots = ("base_height", "tracking_error", "contact_force") if pose == "standing" else ("base_height", "contact_force")
    return w


def pyramid_with_robots(n_robots=3, robot="g1", height=0.3):
    """Paper 000 Fig. 1: unactuated robots (three G1 by default: nv = 180 + 3·35 = 285)
    falling on the 30-box pyramid: the first with its lowest point `height` above the top
    box, the next ones 1.5 m higher each, with different yaws. Robots collide with the
    boxes, the ground and each other (not with themselves)."""
    n_robots = check_int(n_robots, "pyramid_with_robots n_robots", 0, 8)
    check_choice(robot, "pyramid_with_robots robot", ("g1", "talos", "go2"))
    centres = pyramid_centres()
    top = centres[-1, 2] + HALF
    # rebuild with the robots: the pyramid's boxes, then the robots
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=0.5)
    for k, c in enumerate(centres):
        wb.add_box(f"box{k}", (HALF, HALF, HALF), mass=1.0, position=c, friction=0.5)
    # all land on the pyramid: different yaws and small offsets, stacked in time (each starts
    # `spacing` higher than the previous, so they never overlap at the start)
    spacing = 1.5
    offsets = [(0.0, 0.0), (0.12, -0.1), (-0.12, 0.1), (0.1, 0.12), (-0.1, -0.12), (0.0, 0.15), (0.15, 0.0),
               (-0.15, 0.0)]
    yaw = [0.0, 1.2, -2.0, 0.5, 2.5, -0.8, 1.9, 3.0]
    m0 = _probe_model(robot)
    q = _posture(m0, "", robot)
    for r in range(n_robots):
        bit = 1 << (r + 1)
        x, y = offsets[r]
        qu = (0.0, 0.0, np.sin(yaw[r] / 2), np.cos(yaw[r] / 2))
        _add_robot(wb, f"{robot}_{r}", robot, position=(x, y, 3.0 + 2 * r), quaternion=qu, q=q, group=bit,
                   mask=0xFFFFFFFF & ~bit, friction=0.8)
    w = wb.build()
    for r in range(n_robots):
        _place_on(w, f"{robot}_{r}", top + height + spacing * r)
    w.dt = 1e-3
    w.description = f"{n_robots} {robot} falling on the 30-box pyramid"
    return w

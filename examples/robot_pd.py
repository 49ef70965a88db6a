"""A robot under joint PD control: G1 standing, then bending its knees by joint-name targets.

    python examples/robot_pd.py
"""
import numpy as np

import scenes
import simstep
from _common import duration

world = scenes.humanoid("g1")                              # G1 on the ground, posture held by its PD
sim = simstep.Simulator(world)                             # dt: the scene's (1 ms)

pd = world.actuation                                       # the scene's joint PD (simstep.control.JointPD)
sim.set_actuation(None)                                    # ... replaced by set_targets on the same joints
targets = dict(zip(pd.joints, pd.target(0.0)))             # {"g1/left_knee_joint": q*, ...}
knees = ["g1/left_knee_joint", "g1/right_knee_joint"]
for j in knees:
    targets[j] += 0.25                                     # bend the knees by 0.25 rad,
for j in ("left_hip_pitch_joint", "right_hip_pitch_joint", "left_ankle_pitch_joint", "right_ankle_pitch_joint"):
    targets["g1/" + j] -= 0.125                            # hips and ankles by half as much
sim.set_targets(targets, kp=dict(zip(pd.joints, pd.kp)), kd=dict(zip(pd.joints, pd.kd)))   # N·m/rad, N·m·s/rad
T = duration(1.0)
height = []
sim.run(duration=T, callback=lambda s: height.append(s.body_pose("g1/pelvis")[0][2]))

err = np.array([targets[j] for j in knees]) - sim.joint_positions(knees)
print(f"pelvis height {height[0]:.3f} m -> {height[-1]:.3f} m after {T:g} s")
print(f"knee tracking error {np.round(err, 4)} rad; knee torques {np.round(sim.joint_torques(knees), 2)} N·m")

"""Boxes: build a world of free boxes on the ground, simulate, read poses and solver stats.

    python examples/boxes.py
"""
import numpy as np

import simstep
from _common import duration

builder = simstep.WorldBuilder(gravity=(0, 0, -9.81))
builder.add_ground(friction=0.6)
for i in range(3):                                        # a leaning tower of three 10 cm cubes
    builder.add_box(f"box{i}", half_extents=(0.05, 0.05, 0.05), mass=0.5,
                    position=(0.02 * i, 0.0, 0.05 + 0.1 * i + 0.001 * i))
builder.add_sphere("ball", radius=0.05, mass=0.3, position=(-0.4, 0.0, 0.05))
world = builder.build()

sim = simstep.Simulator(world, dt=1e-3)
sim.set_state(world.q0, np.r_[np.zeros(18), 1.5, 0, 0, 0, 0, 0])   # roll the ball towards the tower (v in its body frame)
traj = sim.run(duration=duration(1.0), record=True)

for name in ("box0", "box1", "box2", "ball"):
    p, quat = sim.body_pose(name)
    print(f"{name}: position {np.round(p, 4)} m, quaternion {np.round(quat, 4)}")
print(f"{len(traj.t)} samples; last step: {sim.stats.iterations} ADMM iterations, "
      f"{sim.stats.ncontacts} contacts, converged {sim.stats.converged}")

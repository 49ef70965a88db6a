"""Reading contact forces: a box resting on the ground and a box on top of it.

    python examples/contact_forces.py
"""
import numpy as np

import simstep
from _common import duration

b = simstep.WorldBuilder()
b.add_ground(friction=0.8)
b.add_box("bottom", half_extents=(0.1, 0.1, 0.1), mass=2.0, position=(0, 0, 0.1))
b.add_box("top", half_extents=(0.05, 0.05, 0.05), mass=1.0, position=(0, 0, 0.25))
world = b.build()
sim = simstep.Simulator(world, dt=1e-3)
sim.run(duration=duration(0.5))

c = sim.contacts                                           # the last step's contact points
print(f"{len(c.position)} contact points; forces on body 1 (N, world axes):")
for b1, b2, p, f in zip(c.body1, c.body2, c.position, c.world_force):
    n1 = "world" if b1 < 0 else world.model.body_names[b1]
    n2 = "world" if b2 < 0 else world.model.body_names[b2]
    print(f"  {n1:>6} on {n2:<6} at {np.round(p, 3)}: {np.round(f, 2)}")
force, torque = sim.contact_wrench("bottom")               # total over the body's contacts
print(f"contact force on 'bottom': {np.round(force, 2)} N (weight of both boxes: {3.0 * 9.81:.2f} N "
      f"up from the ground, {9.81:.2f} N down from the top box)")
print(f"force/torque sensor at 'top' (its axes): {np.round(sim.force_torque('top')[0], 2)} N")

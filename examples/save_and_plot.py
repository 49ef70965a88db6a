"""Save a trajectory, load it back, and plot physical quantities with matplotlib.

    python examples/save_and_plot.py        # writes g1_fall.npz and g1_fall.png
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import scenes
import simstep
from _common import duration, out

world = scenes.humanoid("g1", pose="falling")             # unactuated, dropped from 0.3 m
sim = simstep.Simulator(world)
traj = sim.run(duration=duration(1.0), record=True)        # t, q, v and every step's contacts
traj.save(out("g1_fall.npz"))

traj = simstep.load_trajectory(out("g1_fall.npz"))
iz = world.model.idx_q[world.model.body_index("g1/pelvis")] + 2    # the floating base's z in q
normal = [c.force[:, 2].sum() for c in traj.contacts]              # N, world axes

fig, ax = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
ax[0].plot(traj.t, traj.q[:, iz])
ax[0].set_ylabel("pelvis height (m)")
ax[1].plot(traj.t, normal)
ax[1].axhline(sum(world.model.mass) * 9.81, ls="--", color="gray", label="weight")
ax[1].set_ylabel("vertical contact force (N)")
ax[1].set_xlabel("t (s)")
ax[1].legend()
fig.tight_layout()
fig.savefig(out("g1_fall.png"), dpi=90)
print(f"saved {len(traj.t)} samples to {out('g1_fall.npz')}, plot {out('g1_fall.png')}; "
      f"pelvis {traj.q[0, iz]:.3f} m -> {traj.q[-1, iz]:.3f} m, peak contact force {np.max(normal):.0f} N")

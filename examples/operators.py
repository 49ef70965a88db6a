"""The matrix-free Delassus operators directly, checked against the dense baseline.

Λ⁻¹ = J M⁻¹ Jᵀ of a box pile's contacts is applied without forming it (two sweeps), and the
damped inverse (Λ⁻¹ + diag(d))⁻¹ b solved by LCABA and the matrix inversion lemma.

    python examples/operators.py
"""
import numpy as np

import collision
import scenes
import simstep
import solvers

world = scenes.box_pyramid(layers=3)
q = world.q0
c = collision.detect(world, q)                             # contact points and frames (t1, t2, n)
contacts = [simstep.Contact(int(c.body1[i]), int(c.body2[i]), c.position[i], c.frame[i], float(c.friction[i]))
            for i in range(len(c.position))]
F = solvers.MatrixFreeDelassus(world.model, q, contacts)  # O(n + m), never forms a matrix
D = solvers.DenseDelassus(world.model, q, contacts)       # explicit baseline
m = 3 * len(contacts)
x = np.random.default_rng(0).normal(size=m)
print(f"{len(contacts)} contacts, {m} rows, {world.model.nv} dofs")
print(f"matvec: |F x - D x| / |D x| = {np.linalg.norm(F.matvec(x) - D.matvec(x)) / np.linalg.norm(D.matvec(x)):.1e}")
for d in (1e-3, 1e-6):
    F.update_damping(d)                                    # cheap: no kinematics again
    D.update_damping(d)
    y = F.solve(x)
    r = np.linalg.norm(D.matrix() @ y + d * y - x) / np.linalg.norm(x)
    print(f"damping {d:g}: residual of (Λ⁻¹ + dI) y = x: {r:.1e}")

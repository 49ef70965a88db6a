"""Our ADMM against Pinocchio 4.1's ADMMConstraintSolver on the same contact problems: G from
Pinocchio's ConstraintCholeskyDecomposition (equal to ours), the same g and μ.

With four coplanar corner contacts per face (the box pyramid) the impulses λ are not unique:
only Jᵀλ (the generalized impulse, which fixes v⁺) is, so that is what must agree there. A
sphere pile has a full-row-rank J and unique λ, compared directly."""
import os
import sys

import numpy as np
import pytest

import models
import simstep
from solvers import ContactSet, DenseDelassus, MatrixFreeDelassus
from solvers.admm import ADMMSolver
from solvers.cones import ConeSet

pin = pytest.importorskip("pinocchio")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from delassus_scenarios import pin_compute, pin_problem  # noqa: E402
from test_admm import kkt_violation  # noqa: E402
from snapshots import load_problem  # noqa: E402


def sphere_pile():
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    r = 0.1
    b.add_sphere("s0", r, position=(-0.11, 0, r))
    b.add_sphere("s1", r, position=(0.11, 0, r))
    b.add_sphere("s2", r, position=(0.0, 0.02, r + np.sqrt((2 * r) ** 2 - 0.11 ** 2) + 1e-4))
    return b.build()


def snapshot(world, steps=30):
    """The contact problem (ours and Pinocchio's) of a settled scene."""
    sim = simstep.Simulator(world, dt=1e-3)
    sim.run(steps)
    m, q, v, dt = sim.model, sim.q, sim.v, sim.dt
    c = sim.detector.detect(q)
    k = len(c)
    cons = [ContactSet(c.body1, c.body2, c.position, c.frame, c.friction)]
    op = MatrixFreeDelassus(m, q, cons)
    g = op.J_apply(v + dt * models.aba(m, q, v, np.zeros(m.nv)))
    g[np.arange(k) * 3 + 2] += np.where(c.distance > 0, c.distance / dt, 0.2 * c.distance / dt)
    pm, pd, cms, cds = pin_problem(m, q, cons)
    for i, cm in enumerate(cms):
        cm.extract().setFriction(float(c.friction[i]))
    pin_compute(pm, pd, cms, cds, q, 1e-10)
    chol = pin.ConstraintCholeskyDecomposition(pm, pd, cms, cds)
    chol.compute(pm, pd, cms, cds, 1e-10)
    dense = DenseDelassus(m, q, cons)
    return op, dense, g, c, chol.getDelassusOperatorCholeskyExpression(), cms, cds


def solve_both(op, g, c, D, cms, cds, tol):
    k = len(c)
    s = pin.ADMMSolverSettings()
    s.lanczos_size = 20
    s.max_iterations = 20000
    s.admm_update_rule = pin.ADMMUpdateRule.SPECTRAL
    for a in ("absolute_feasibility_tol", "relative_feasibility_tol", "absolute_complementarity_tol",
              "relative_complementarity_tol"):
        setattr(s, a, tol)
    r = pin.ADMMSolverResult()
    assert pin.ADMMConstraintSolver(3 * k).solve(D, g, cms, cds, s, r)
    ours = ADMMSolver(eps_abs=tol, max_iter=20000).solve(op, g, ConeSet.contacts(c.friction))
    assert ours.converged
    return ours.lam, r.retrieveConstraintImpulses()


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("name", ["triangle", "square"])
def test_loaded_pyramid_snapshot_generalized_impulses_agree(name):
    """A settled, loaded pyramid read from tests/data (not simulated here: where a long
    simulation ends differs in the last bits between CPUs, and so does whether a solver stalls
    on it). Four coplanar corner contacts per face make λ non-unique; Jᵀλ (which fixes v⁺) is
    what must agree. Both solvers converge on these files at 1e-9 (checked by the asserts)."""
    p = load_problem(name)
    c = p.constraints[0]
    dense = p.dense()
    pm, pd, cms, cds = pin_problem(p.model, p.q, p.constraints)
    for i, cm in enumerate(cms):
        cm.extract().setFriction(float(p.friction[i]))
    pin_compute(pm, pd, cms, cds, p.q, 1e-10)
    chol = pin.ConstraintCholeskyDecomposition(pm, pd, cms, cds)
    chol.compute(pm, pd, cms, cds, 1e-10)
    D = chol.getDelassusOperatorCholeskyExpression()
    G = dense.matrix()
    assert rel(D.matrix(), G) < 1e-9                        # the same Delassus matrix
    lam, lam_pin = solve_both(p.matrix_free(), p.g, c, D, cms, cds, 1e-9)
    J = dense.J
    assert rel(J.T @ lam, J.T @ lam_pin) < 1e-5
    blocks = [("cone", slice(3 * i, 3 * i + 3), p.friction[i]) for i in range(p.ncontacts)]
    assert kkt_violation(G, p.g, blocks, lam) < 1e-6 and kkt_violation(G, p.g, blocks, lam_pin) < 1e-6


def test_sphere_pile_impulses_agree():
    op, dense, g, c, D, cms, cds = snapshot(sphere_pile())
    assert np.linalg.matrix_rank(dense.J) == dense.J.shape[0]   # unique impulses
    lam, lam_pin = solve_both(op, g, c, D, cms, cds, 1e-8)
    assert rel(lam, lam_pin) < 1e-5
    blocks = [("cone", slice(3 * i, 3 * i + 3), c.friction[i]) for i in range(len(c))]
    G = dense.matrix()
    assert kkt_violation(G, g, blocks, lam) < 1e-8 and kkt_violation(G, g, blocks, lam_pin) < 1e-8

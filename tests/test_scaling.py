"""The Delassus diagonal estimate of `solvers.scaling` against the dense G = J M⁻¹ Jᵀ.

Exact wherever the two sides of a row are in different trees (or one is the world) and for
joint rows; contacts between links of one tree drop the cross term kAᵀ Ω_ab kB, so there the
estimate is checked to be the dense diagonal plus that term, computed densely."""
import numpy as np
import pytest

import models
from models import FREE, PRISMATIC, REVOLUTE, SPHERICAL, FIXED, ModelBuilder
from solvers import Contact, DenseDelassus, JointFriction, JointLimit, LoopClosure, MatrixFreeDelassus
from solvers.scaling import delassus_diagonal_kernel, inverse_inertia_kernel
from test_delassus import _inertia, random_contacts, random_forest, rot


def estimate(model, q, cons):
    op = MatrixFreeDelassus(model, q, cons)
    op._need_aba()
    d = op.data
    la, lb, kA, kB, dof, sg, gen, crow, cbody, cf = op.rows
    out = np.full(op.m, np.nan)
    delassus_diagonal_kernel(model.jint, d.S, d.U, d.Dinv, la, lb, kA, kB, dof, gen, crow, cbody, cf,
                             np.empty((model.nbodies, 6, 6)), out)
    return op, out


def dense_G(model, q, cons):
    return DenseDelassus(model, q, cons).matrix()


def contact_mean(G, m_contacts):
    """diag(G) with each contact's three rows replaced by their mean (the estimate's form)."""
    d = np.diag(G).copy()
    for c in range(m_contacts):
        d[3 * c:3 * c + 3] = d[3 * c:3 * c + 3].mean()
    return d


def two_robots(rng, n_per=6, roots=(FREE, FREE)):
    mb = ModelBuilder()
    for r in range(2):
        prev = mb.add_body(f"r{r}_0", -1, roots[r], translation=(r, 0, 0), **_inertia(rng))
        for i in range(1, n_per):
            kinds = (REVOLUTE, PRISMATIC, SPHERICAL, FIXED)
            prev = mb.add_body(f"r{r}_{i}", prev, kinds[i % 4], translation=rng.normal(size=3) * 0.3,
                               rotation=rot(rng), axis=rng.normal(size=3), **_inertia(rng))
    return mb.build()


@pytest.mark.parametrize("seed", range(3))
def test_inverse_inertia_is_the_links_response_to_a_unit_force(seed):
    """⁰Ωᵢ against dense Jᵢ M⁻¹ Jᵢᵀ (Jᵢ the link's world spatial Jacobian) on a random tree with
    every joint kind: the apparent inverse inertia seen at each link."""
    rng = np.random.default_rng(seed)
    model = random_forest(rng, 12, nroots=1, kinds=(REVOLUTE, PRISMATIC, SPHERICAL, FIXED))
    q = model.random_configuration(rng)
    d = models.Data(model).compute(q)
    Om = np.empty((model.nbodies, 6, 6))
    inverse_inertia_kernel(model.jint, d.S, d.U, d.Dinv, Om)
    Minv = np.linalg.inv(models.crba(model, q))
    for i in range(model.nbodies):
        Ji = np.zeros((6, model.nv))       # world spatial Jacobian of link i: columns of S on its path
        b = i
        while b >= 0:
            iv, nvi = model.jint[b, 3], model.jint[b, 5]
            Ji[:, iv:iv + nvi] = d.S[:, iv:iv + nvi]
            b = model.jint[b, 0]
        ref = Ji @ Minv @ Ji.T
        assert np.allclose(Om[i], ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("seed", range(3))
def test_exact_between_trees_and_for_joint_rows(seed):
    """Contacts to the world and between two robots, loop closures between the robots, joint
    limits and joint friction: the estimate is the dense diagonal (contacts: their mean)."""
    rng = np.random.default_rng(seed)
    model = two_robots(rng)
    q = model.random_configuration(rng)
    oR, op_ = models.forward_kinematics(model, q)
    cons = random_contacts(rng, model, q, 5, 0)
    for a, b in [(1, 8), (3, 10), (0, 11), (5, 7)]:   # robot 0 against robot 1
        cons.append(Contact(a, b, (op_[a] + op_[b]) / 2, rot(rng), 0.5))
    k = len(cons)
    pl = lambda: (rng.normal(size=3) * 0.2, rot(rng))
    cons += [LoopClosure(2, pl(), 9, pl(), "point"), LoopClosure(4, pl(), 10, pl(), "weld"),
             LoopClosure("world", pl(), 6, pl(), "point")]
    j = [model.joint_names[i] for i in (1, 2, 7, 9)]
    cons += [JointLimit(j[0], "lower"), JointLimit(j[2], "upper"), JointFriction(j[1], 1.0), JointFriction(j[3], 2.0)]
    op, est = estimate(model, q, cons)
    ref = contact_mean(dense_G(model, q, cons), k)
    assert np.allclose(est, ref, rtol=1e-9, atol=0)


def test_contacts_inside_one_tree_drop_only_the_cross_term():
    rng = np.random.default_rng(7)
    model = random_forest(rng, 14, nroots=1, kinds=(REVOLUTE, SPHERICAL))
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 0, 6)
    op, est = estimate(model, q, cons)
    G = dense_G(model, q, cons)
    # the same rows with body 2 moved to the world and body 1 to the world: G_rr = A + B − 2 C
    only1 = [Contact(c.body1, -1, c.position, c.frame, 0.5) for c in cons]
    only2 = [Contact(c.body2, -1, c.position, c.frame, 0.5) for c in cons]
    ref = contact_mean(dense_G(model, q, only1), 6) + contact_mean(dense_G(model, q, only2), 6)
    assert np.allclose(est, ref, rtol=1e-9)
    assert not np.allclose(est, contact_mean(G, 6), rtol=1e-3)   # the cross term is really there

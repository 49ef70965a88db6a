"""Constraint records (simstep.Contact, ContactSet, LoopClosure, JointLimit, JointFriction) and
their compiled rows: validation, name resolution, and J against `models.body_jacobian`."""
import numpy as np
import pytest

import models
import simstep
from solvers import ConstraintSet, DenseDelassus, MatrixFreeDelassus
from test_delassus import chain, oracle_J, random_forest, rot


def test_public_names():
    for name in ("Contact", "ContactSet", "LoopClosure", "JointLimit", "JointFriction"):
        assert hasattr(simstep, name)


def test_validation():
    with pytest.raises(ValueError):
        simstep.Contact(0, -1, (0, 0, 0), np.ones((3, 3)))
    with pytest.raises(ValueError):
        simstep.Contact(0, -1, (0, 0), np.eye(3))
    with pytest.raises(ValueError):
        simstep.Contact(0, -1, (0, 0, 0), np.eye(3), friction=-1)
    with pytest.raises(ValueError):
        simstep.LoopClosure(0, None, 1, None, kind="hinge")
    with pytest.raises(ValueError):
        simstep.JointLimit("j", side="middle")
    with pytest.raises(ValueError):
        simstep.ContactSet([0, 1], [-1, -1], np.zeros((2, 3)), np.stack([np.eye(3), 2 * np.eye(3)]))
    model = chain(3)
    with pytest.raises(KeyError):
        ConstraintSet(model, [simstep.Contact("nope", -1, np.zeros(3), np.eye(3))])
    with pytest.raises(KeyError):
        ConstraintSet(model, [simstep.Contact(7, -1, np.zeros(3), np.eye(3))])
    with pytest.raises(KeyError):
        ConstraintSet(model, [simstep.JointFriction("nope", 1.0)])


def test_contact_set_equals_contacts_and_layout():
    rng = np.random.default_rng(0)
    model = random_forest(rng, 8, nroots=2)
    q = model.random_configuration(rng)
    k = 5
    b1 = rng.integers(0, 8, k)
    b2 = np.array([-1, 3, -1, 0, 7])
    P = rng.normal(size=(k, 3))
    R = np.stack([rot(rng) for _ in range(k)])
    single = [simstep.Contact(int(b1[i]), int(b2[i]), P[i], R[i], 0.3 + i) for i in range(k)]
    batch = simstep.ContactSet(b1, b2, P, R, 0.3 + np.arange(k))
    extra = [simstep.JointLimit(model.joint_names[2], "upper"), simstep.JointFriction(model.joint_names[3], 2.0)]
    c1 = ConstraintSet(model, single + extra)
    c2 = ConstraintSet(model, [batch] + extra)
    assert c1.m == c2.m == 3 * k + 1 + 1
    np.testing.assert_array_equal(c1.mu, c2.mu)
    np.testing.assert_array_equal(c1.contact_row, np.arange(k) * 3)
    assert list(c1.row_kind[-2:]) == [3, 4]
    assert c1.joint_friction_max[-1] == 2.0
    D1, D2 = DenseDelassus(model, q, c1), DenseDelassus(model, q, c2)
    np.testing.assert_array_equal(D1.J, D2.J)
    np.testing.assert_allclose(D1.J, oracle_J(model, q, single + extra), atol=1e-13)
    # the simulator's per-step builder: contacts in front of a prebuilt contact-free tail (with a
    # loop closure between two moving links, so the coupling pairs and slots are exercised)
    loop = simstep.LoopClosure(2, (np.zeros(3), np.eye(3)), 5, (np.ones(3), np.eye(3)))
    tail = ConstraintSet(model, [loop] + extra)
    c3 = ConstraintSet.with_contacts(tail, b1, b2, P, R, 0.3 + np.arange(k))
    c4 = ConstraintSet(model, [batch, loop] + extra)
    for name in ("cb_kind", "cb_row", "cb_nrows", "cb_body", "cb_f", "dof", "sg", "mu", "contact_row",
                 "joint_friction_max", "row_block", "row_kind"):
        np.testing.assert_array_equal(getattr(c3, name), getattr(c4, name), err_msg=name)
    assert c3.m == c4.m
    np.testing.assert_array_equal(c3.coupling_pairs(), c4.coupling_pairs())
    np.testing.assert_array_equal(c3.cb_slot, c4.cb_slot)
    pairs = {(min(a, b), max(a, b)) for a, b in c4.cb_body if a >= 0 and b >= 0 and a != b}
    assert [tuple(p) for p in c4.coupling_pairs()] == sorted(pairs)
    np.testing.assert_array_equal(DenseDelassus(model, q, c3).J, DenseDelassus(model, q, c4).J)


def test_with_joint_limits_matches_constraint_set():
    """The simulator's compiled tail (`ConstraintSet.with_joint_limits`: fixed head, active joint
    limits, fixed tail) has the arrays of the same constraints resolved by `ConstraintSet`, and
    contacts put in front of it give those of the full list."""
    rng = np.random.default_rng(3)
    model = random_forest(rng, 8, nroots=2)
    names = model.joint_names
    one_dof = [j for j in names if model.nvs[model.joint_body(j)] == 1]
    loop = simstep.LoopClosure(2, (np.zeros(3), np.eye(3)), 5, (np.ones(3), np.eye(3)), kind="weld")
    head_cons = [loop, simstep.JointLimit(one_dof[0], "upper"), simstep.JointFriction(names[1], 2.0)]
    fric_cons = [simstep.JointFriction(one_dof[1], 0.0), simstep.JointFriction(names[0], 1.5)]
    for heads, fric in ((head_cons, fric_cons), ([], []), ([loop], [])):
        head, tail = ConstraintSet(model, heads), ConstraintSet(model, fric)
        for sel in ([], [0], [2, 0, 1]):
            limits = [simstep.JointLimit(one_dof[i], ("lower", "upper")[i % 2]) for i in sel]
            dof = np.array([model.idx_v[model.joint_body(one_dof[i])] for i in sel], np.int64)
            sign = np.array([c.sign for c in limits])
            c1 = ConstraintSet.with_joint_limits(head, dof, sign, tail, limits)
            c2 = ConstraintSet(model, heads + limits + fric)
            c3 = ConstraintSet.with_joint_limits(head, dof, sign, tail)     # records made from the dofs
            assert c1.m == c2.m == c3.m and c1.constraints == c2.constraints
            assert [type(c) for c in c3.constraints] == [type(c) for c in c2.constraints]
            for name in ("cb_kind", "cb_row", "cb_nrows", "cb_body", "cb_f", "dof", "sg", "mu", "contact_row",
                         "joint_friction_max", "row_block", "row_kind"):
                np.testing.assert_array_equal(getattr(c1, name), getattr(c2, name), err_msg=name)
                np.testing.assert_array_equal(getattr(c3, name), getattr(c2, name), err_msg=name)
            for a, b in zip(c1.contact_arrays(), ConstraintSet(model, heads + limits + fric).contact_arrays()):
                np.testing.assert_array_equal(a, b)
                assert a.dtype == b.dtype and a.shape == b.shape
            k = 3
            b1, b2 = rng.integers(0, 8, k), np.array([-1, 4, 1])
            P, R = rng.normal(size=(k, 3)), np.stack([rot(rng) for _ in range(k)])
            c4 = ConstraintSet.with_contacts(c1, b1, b2, P, R, np.full(k, 0.5))
            c5 = ConstraintSet(model, [simstep.ContactSet(b1, b2, P, R, 0.5)] + heads + limits + fric)
            for name in ("cb_kind", "cb_row", "cb_nrows", "cb_body", "cb_f", "dof", "sg", "joint_friction_max",
                         "row_block", "row_kind"):
                np.testing.assert_array_equal(getattr(c4, name), getattr(c5, name), err_msg=name)
            np.testing.assert_array_equal(c4.coupling_pairs(), c5.coupling_pairs())
            np.testing.assert_array_equal(c4.cb_slot, c5.cb_slot)
            for c in (c1, c3, c4):            # inherited / assembled, not recomputed from the rows
                assert c.joint_dofs_key() == c2.joint_dofs_key() == c2.dof[c2.dof >= 0].tobytes()
            q = model.random_configuration(rng)
            np.testing.assert_array_equal(DenseDelassus(model, q, c4).J, DenseDelassus(model, q, c5).J)


def test_contact_convention():
    """Rows Rᵀ (v₁(p) − v₂(p)): a body moving up relative to the ground has a positive normal
    velocity; the joint-limit row is +q̇ for "lower", −q̇ for "upper"."""
    mb = models.ModelBuilder()
    mb.add_body("box", -1, models.FREE, mass=1.0, inertia=np.eye(3) * 0.01)
    model = mb.build()
    q = model.neutral()
    F = MatrixFreeDelassus(model, q, [simstep.Contact("box", "world", (0.1, 0, 0), np.eye(3)),
                                      simstep.Contact("world", "box", (0.1, 0, 0), np.eye(3)),
                                      simstep.JointLimit("box", "upper")])
    v = np.zeros(6)
    v[2] = 1.0      # upward
    y = F.J_apply(v)
    assert y[2] == pytest.approx(1.0) and y[5] == pytest.approx(-1.0)
    assert y[6:9].tolist() == [0.0, 0.0, -1.0]
    # λ acts on body 1: a unit normal impulse on the box accelerates it upwards
    lam = np.zeros(F.m)
    lam[2] = 1.0
    assert F.JT_minv(lam)[2] == pytest.approx(1.0)


def test_merged_link_names_resolve_with_placement():
    """A URDF link merged by a fixed joint (G1 'left_rubber_hand') resolves to its body, with
    the fixed placement applied to loop-closure anchors."""
    path, dirs = models.robot_path("g1")
    model = models.load_urdf(path, floating_base=True, package_dirs=dirs)
    assert "left_rubber_hand" in model.frames and "left_rubber_hand" not in model.body_names
    rng = np.random.default_rng(1)
    q = model.random_configuration(rng)
    oR, op = models.forward_kinematics(model, q)
    cons = [simstep.LoopClosure("left_rubber_hand", ((0.01, 0.02, 0.0), np.eye(3)), "world",
                                ((0.3, 0.2, 1.0), np.eye(3)), "point"),
            simstep.LoopClosure("left_rubber_hand", ((0.0, 0.0, 0.03), rot(rng)), "right_knee_link",
                                ((0.0, 0.05, 0.0), rot(rng)), "weld"),
            simstep.Contact("left_rubber_hand", "torso_link", op[15], rot(rng))]
    D = DenseDelassus(model, q, cons)
    np.testing.assert_allclose(D.J, oracle_J(model, q, cons), atol=1e-12)
    cs = ConstraintSet(model, cons)
    assert cs.cb_body[0, 0] == model.body_index("left_wrist_yaw_link")


def test_empty_constraint_set():
    model = chain(3)
    q = model.neutral()
    F = MatrixFreeDelassus(model, q, [], damping=1e-3)
    assert F.m == 0 and F.matvec(np.zeros(0)).shape == (0,) and F.solve(np.zeros(0)).shape == (0,)
    assert F.max_eigenvalue() == 0.0

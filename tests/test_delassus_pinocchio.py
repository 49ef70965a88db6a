"""MatrixFreeDelassus against Pinocchio 4.1's ConstraintCholeskyDecomposition (an independent
implementation: its own URDF parser, kinematics and sparse KKT factorisation).

Reference: `chol.compute(model, data, cms, cds, mu)` then
`chol.getDelassusOperatorCholeskyExpression().matrix()`, which is G + mu I (checked); we use a
small mu (mu = 0 gives NaN on rank-deficient sets) and subtract it. Not used, because they are
wrong from Python in 4.1 (notes/peers.md): `computeDelassusMatrix` (ignores the second body of
a contact) and `computeDampedDelassusMatrixInverse`.
"""
import numpy as np
import pytest

import models
from solvers import Contact, MatrixFreeDelassus

pin = pytest.importorskip("pinocchio")
import scenes  # noqa: E402
from bench.delassus_scenarios import pin_compute, pin_problem, scene_problem  # noqa: E402

pytestmark = pytest.mark.pinocchio
TOL = 1e-9
MU = 1e-10


def rot(rng):
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] *= -1
    return Q


def pin_G(pm, q, cons, model, mu=MU):
    pm, pd, cms, cds = pin_problem(model, q, cons, pm=pm)
    pin_compute(pm, pd, cms, cds, q, mu)
    chol = pin.ConstraintCholeskyDecomposition(pm, pd, cms, cds)
    chol.compute(pm, pd, cms, cds, mu)
    E = chol.getDelassusOperatorCholeskyExpression()
    return E.matrix() - mu * np.eye(E.rows()), chol, E


def robot(name):
    path, dirs = models.robot_path(name)
    model = models.load_urdf(path, floating_base=True, package_dirs=dirs)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    assert pm.nq == model.nq and pm.nv == model.nv
    assert [pm.names[i + 1] for i in range(model.nbodies)] == model.joint_names
    return model, pm


def compare(model, pm, q, cons, dampings=(1e-2, 1e-4)):
    Gp, chol, E = pin_G(pm, q, cons, model)
    F = MatrixFreeDelassus(model, q, cons)
    G = np.column_stack([F.matvec(e) for e in np.eye(F.m)])
    assert G.shape == Gp.shape
    assert np.abs(G - Gp).max() <= TOL * np.abs(Gp).max()
    rng = np.random.default_rng(0)
    for d in dampings:
        F.update_damping(d)
        b = rng.normal(size=F.m)
        ref = np.linalg.solve(Gp + d * np.eye(F.m), b)
        x = F.solve(b)
        assert np.linalg.norm(x - ref) <= TOL * np.linalg.norm(ref), d
    return F, Gp


def _feet_and_self_contact(model, q, rng, feet, pairs):
    oR, op = models.forward_kinematics(model, q)
    cons = []
    for b in feet:
        i = model.body_index(b)
        for _ in range(4):
            cons.append(Contact(b, "world", op[i] + rng.normal(size=3) * 0.05, rot(rng)))
    for a, b in pairs:   # self-contacts: internal loops inside the robot
        ia, ib = model.body_index(a), model.body_index(b)
        cons.append(Contact(a, b, (op[ia] + op[ib]) / 2, rot(rng)))
    return cons


def test_g1_point_contacts_and_self_contact():
    model, pm = robot("g1")
    rng = np.random.default_rng(1)
    q = model.random_configuration(rng)
    cons = _feet_and_self_contact(model, q, rng, ["left_ankle_roll_link", "right_ankle_roll_link"],
                                  [("left_wrist_yaw_link", "right_hip_pitch_link"),
                                   ("right_wrist_yaw_link", "left_knee_link")])
    compare(model, pm, q, cons)


def test_talos_point_contacts_and_self_contact():
    model, pm = robot("talos")
    rng = np.random.default_rng(2)
    q = model.random_configuration(rng)
    cons = _feet_and_self_contact(model, q, rng, ["leg_left_6_link", "leg_right_6_link"],
                                  [("arm_left_7_link", "leg_right_3_link")])
    compare(model, pm, q, cons)


def test_box_on_box_pyramid():
    """Two layers of the paper's pyramid: 4 boxes on the ground, 1 on top of all four."""
    model, q, cons = scene_problem(scenes.box_pyramid(layers=2))
    F, Gp = compare(model, None, q, cons)
    assert F.m == 3 * (16 + 16)


def test_pinocchio_solve_matches():
    """Pinocchio's own damped solve (chol.compute with mu = d, then solve) against ours."""
    model, q, cons = scene_problem(scenes.box_pyramid(layers=2))
    d = 1e-3
    _, chol, E = pin_G(None, q, cons, model, mu=d)
    F = MatrixFreeDelassus(model, q, cons, damping=d)
    b = np.random.default_rng(3).normal(size=F.m)
    ref = E.solve(b)
    assert np.linalg.norm(F.solve(b) - ref) <= TOL * np.linalg.norm(ref)

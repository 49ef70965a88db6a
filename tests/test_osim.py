"""PV-OSIMr, PV-OSIM, cABA-OSIM and cABA-OSIMf against an independent dense oracle.

Oracle: J built constraint by constraint from `models.body_jacobian` (`test_delassus.oracle_J`,
not from the link rows the algorithms use), M from `models.crba`, G = J M⁻¹ Jᵀ by dense
Cholesky, and (G + diag d)⁻¹ by a dense Cholesky inverse (accurate to ~1e-13 here: checked
against 40-digit arithmetic on the worst case below while writing these tests).

Damping range: cABA-OSIM loses accuracy like ε R² with R = 1/d, one R from Eq. 40's
cancellation and one from forming L = J M_R⁻¹ Jᵀ out of 6 × 6 link inverse inertias in
directions the rows do not span (see `solvers.osim` for the measurements): 1e-9 holds for
d ≥ 1e-2 and is tested there; where the rows span every direction of the constrained leaves
(6D welds), the recursion loses only Eq. 40's ε R (`test_caba_osim_small_damping_on_welded_leaves`).
"""
import numpy as np
import pytest
import scipy.linalg as sla

import models
from bench.osim_scenarios import branching_mechanism, constrained_chain, point_here, robot, weld_here
from models import FIXED, PRISMATIC, REVOLUTE, SPHERICAL
from solvers import (Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure, caba_osim,
                     caba_osimf, pv_osim, pv_osimr)
from solvers.osim import osim_structure
from test_delassus import oracle_J, random_contacts, random_forest, rot

TOL = 1e-9


def dense_G(model, q, cons):
    J = oracle_J(model, q, cons)
    L = np.linalg.cholesky(models.crba(model, q))
    X = sla.solve_triangular(L, J.T, lower=True)
    return X.T @ X


def dense_inverse(G, d):
    A = G + np.diag(np.broadcast_to(d, (G.shape[0],)))
    return sla.cho_solve(sla.cho_factor(A), np.eye(G.shape[0]))


def relmax(A, B):
    return np.abs(A - B).max() / np.abs(B).max()


def check(model, q, cons, dampings=(1.0, 1e-1, 1e-2), seed=0):
    """Both Delassus algorithms and both damped inverses (scalar and vector damping)."""
    G = dense_G(model, q, cons)
    cs = ConstraintSet(model, cons)
    for f in (pv_osimr, pv_osim):
        assert relmax(f(model, q, cons), G) <= TOL, f.__name__
        assert relmax(f(model, q, cs), G) <= TOL, f.__name__      # prebuilt set, cached structure
    rng = np.random.default_rng(seed)
    for d in list(dampings) + [rng.uniform(1e-2, 1.0, G.shape[0])]:
        ref = dense_inverse(G, d)
        for f in (caba_osim, caba_osimf):
            assert relmax(f(model, q, cs, d), ref) <= TOL, (f.__name__, d)
    return G


def random_q(model, rng, scale=0.5):
    return model.integrate(model.neutral(), rng.normal(size=model.nv) * scale)


def loops(rng, model, q, k_point, k_weld, world=True):
    """Loop closures between random pairs of links (and with the world when `world`)."""
    oR, op = models.forward_kinematics(model, q)
    out = []
    for kind, k in (("point", k_point), ("weld", k_weld)):
        for _ in range(k):
            a, b = (int(x) for x in rng.choice(model.nbodies, 2, replace=False))
            if world and rng.random() < 0.5:
                out.append(LoopClosure(a, (rng.normal(size=3) * 0.1, rot(rng)), "world",
                                       (op[a], rot(rng)), kind=kind))
            else:
                out.append(LoopClosure(a, (rng.normal(size=3) * 0.1, rot(rng)), b,
                                       (rng.normal(size=3) * 0.1, rot(rng)), kind=kind))
    return out


# ----------------------------------------------------------------------------- random trees
@pytest.mark.parametrize("seed", range(6))
def test_random_forest_unary_constraints(seed):
    """Contacts, welds and point closures with the world, joint limits: the paper's setting."""
    rng = np.random.default_rng(seed)
    model = random_forest(rng, 14, nroots=1 + seed % 3)
    q = random_q(model, rng)
    cons = random_contacts(rng, model, q, 4, 0) + loops(rng, model, q, 0, 0)
    oR, op = models.forward_kinematics(model, q)
    for _ in range(3):
        a = int(rng.integers(model.nbodies))
        cons.append(LoopClosure(a, (rng.normal(size=3) * 0.1, rot(rng)), "world", (op[a], rot(rng)),
                                kind=("point", "weld")[int(rng.integers(2))]))
    moving = [j for j in model.joint_names if model.nvs[model.joint_body(j)] > 0]
    for j in rng.choice(moving, 2, replace=False):
        cons.append(JointLimit(str(j), "lower"))
    check(model, q, cons, seed=seed)


@pytest.mark.parametrize("seed", range(6))
def test_random_forest_loops_between_links(seed):
    """Self-contacts, point and weld closures between moving links (the Schur path of cABA),
    joint friction on every joint kind (spherical, prismatic, free), contacts with the world."""
    rng = np.random.default_rng(100 + seed)
    model = random_forest(rng, 12, nroots=1 + seed % 2, kinds=(REVOLUTE, PRISMATIC, SPHERICAL, FIXED))
    q = random_q(model, rng)
    cons = random_contacts(rng, model, q, 3, 2) + loops(rng, model, q, 2, 1, world=False)
    cons += [JointFriction(str(j), 1.0) for j in rng.choice(model.joint_names, 3, replace=False)]
    check(model, q, cons, seed=seed)


def test_contact_set_and_zero_rows():
    """A ContactSet, a contact of a body with itself (zero rows) and one with the world only."""
    rng = np.random.default_rng(7)
    model = random_forest(rng, 8, nroots=2)
    q = random_q(model, rng)
    oR, op = models.forward_kinematics(model, q)
    k = 5
    b1 = rng.integers(0, model.nbodies, k)
    cs = ContactSet(b1, np.full(k, -1), op[b1] + 0.05, np.stack([rot(rng) for _ in range(k)]), 0.5)
    cons = [cs, Contact(3, 3, op[3], rot(rng)), Contact(2, 5, op[2], rot(rng))]
    check(model, q, cons, dampings=(1e-2,))


# ----------------------------------------------------------------------------- robots
ROBOTS = {"g1": (["left_ankle_roll_link", "right_ankle_roll_link"], ["left_wrist_yaw_link", "right_wrist_yaw_link"]),
          "talos": (["leg_left_6_link", "leg_right_6_link"], ["arm_left_7_link", "arm_right_7_link"]),
          "solo12": (["FL_LOWER_LEG", "FR_LOWER_LEG", "HL_LOWER_LEG"], ["HR_LOWER_LEG"]),
          "panda": (["panda_link7"], ["panda_leftfinger"])}


@pytest.mark.parametrize("name", ["g1", "talos", "solo12", "panda"])
def test_robots(name):
    """Feet welded (6D) and in 4-point contact, hands as 3D points, a hand-to-hand (or
    finger-to-link) loop closure, a self-contact and a joint limit."""
    feet, hands = ROBOTS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    model = robot(name)
    q = random_q(model, rng, 0.3)
    oR, op = models.forward_kinematics(model, q)
    welds = [weld_here(model, q, f) for f in feet] + [point_here(model, q, h, (0.05, 0, 0)) for h in hands]
    G = check(model, q, welds)
    assert G.shape == (6 * len(feet) + 3 * len(hands),) * 2
    contacts = []
    for f in feet:
        i = model.body_index(f)
        contacts += [Contact(f, "world", op[i] + rng.normal(size=3) * 0.05, rot(rng)) for _ in range(4)]
    a, b = (hands + feet)[0], (hands + feet)[-1]
    extra = [LoopClosure(a, ((0.05, 0, 0), None), b, ((0, 0.05, 0), None), kind="point"),
             Contact(a, model.body_names[model.parent[model.body_index(a)]], op[model.body_index(a)], rot(rng)),
             JointLimit(model.joint_names[-1], "upper")]
    check(model, q, contacts + welds[len(feet):] + extra)


# ----------------------------------------------------------------------------- benchmark mechanisms
@pytest.mark.parametrize("k", [1, 2, 5])
def test_branching_mechanism(k):
    model, q, cons = branching_mechanism(k)
    check(model, q, cons, dampings=(1e-2,))
    # branching links 𝒩: the k welded tips and the stem links that carry both a branch and
    # the stem above (all but the last)
    cs = ConstraintSet(model, cons)
    la = np.array([model.body_index(f"b{s}_6") for s in range(k) for _ in range(6)])
    st = osim_structure(model, la, np.full(la.size, -1), np.full(la.size, -1))
    want = {f"b{s}_6" for s in range(k)} | {f"s{s}" for s in range(k - 1)}
    assert {model.body_names[i] for i in st.nodes} == want
    assert cs.m == 6 * k


def test_constrained_chain():
    model, q, cons = constrained_chain(9)
    check(model, q, cons, dampings=(1e-2,))


def test_caba_osim_small_damping_on_welded_leaves():
    """Talos with both feet welded (6D rows on leaf links: ⁰Ω of the stiff system is of size d in
    every direction there) keeps 1e-10 at d = 1e-3, where point rows lose ε R² (`solvers.osim`)."""
    model = robot("talos")
    q = model.neutral()
    cons = [weld_here(model, q, "leg_left_6_link"), weld_here(model, q, "leg_right_6_link")]
    G = dense_G(model, q, cons)
    ref = dense_inverse(G, 1e-3)
    for f in (caba_osim, caba_osimf):
        assert relmax(f(model, q, cons, 1e-3), ref) <= 1e-10, f.__name__


# ----------------------------------------------------------------------------- bad input
def test_bad_input():
    rng = np.random.default_rng(0)
    model = random_forest(rng, 5)
    q = model.neutral()
    cons = [Contact(1, -1, np.zeros(3), np.eye(3))]
    with pytest.raises(KeyError, match="nosuchbody"):
        pv_osimr(model, q, [Contact("nosuchbody", "world", np.zeros(3), np.eye(3))])
    with pytest.raises(KeyError, match="nosuchbody"):
        caba_osim(model, q, [LoopClosure("nosuchbody", None, "world", None)], 1.0)
    bad = q.copy()
    bad[0] = np.nan
    for f in (pv_osimr, pv_osim):
        with pytest.raises(ValueError, match="q"):
            f(model, bad, cons)
    with pytest.raises(ValueError, match="q"):
        caba_osim(model, q[:-1], cons, 1.0)
    for d in (-1.0, 0.0, np.nan, np.inf, np.array([1.0, -1.0, 1.0]), np.ones(4)):
        for f in (caba_osim, caba_osimf):
            with pytest.raises(ValueError, match="damping"):
                f(model, q, cons, d)
    with pytest.raises(ValueError, match="another model"):
        other = random_forest(rng, 5)
        pv_osimr(other, other.neutral(), ConstraintSet(model, cons))


# ----------------------------------------------------------------------------- prepared objects
@pytest.mark.parametrize("between_links", [False, True])
def test_prepared_objects_match_functions_and_dense(between_links):
    """`PvOsimr` / `CabaOsim` reused at several q (workspaces kept) against the dense oracle at
    each q and against the one-shot functions; out= writes the same values in place."""
    from solvers.osim import CabaOsim, PvOsimr
    rng = np.random.default_rng(11)
    model = random_forest(rng, 12, nroots=2, kinds=(REVOLUTE, PRISMATIC, SPHERICAL, FIXED))
    q0 = random_q(model, rng)
    cons = random_contacts(rng, model, q0, 3, 2 if between_links else 0) + loops(rng, model, q0, 1, 1,
                                                                                 world=not between_links)
    cs = ConstraintSet(model, cons)
    P, Pf, C, Cf = PvOsimr(model, cs), PvOsimr(model, cs, method="pv_osim"), CabaOsim(model, cs), \
        CabaOsim(model, cs, grounded=True)
    out = np.full((cs.m, cs.m), np.nan)
    for _ in range(3):
        q = random_q(model, rng)
        G = dense_G(model, q, cons)
        d = rng.uniform(1e-2, 1.0, cs.m)
        for obj in (P, Pf):
            assert relmax(obj.compute(q), G) <= TOL
        assert np.array_equal(P.compute(q), pv_osimr(model, q, cs))
        for obj, f in ((C, caba_osim), (Cf, caba_osimf)):
            for damp in (0.1, d):
                ref = dense_inverse(G, damp)
                assert relmax(obj.compute(q, damp), ref) <= TOL
                assert np.array_equal(obj.compute(q, damp), f(model, q, cs, damp))
                assert obj.compute(q, damp, out=out) is out and relmax(out, ref) <= TOL


def test_prepared_objects_bad_input_before_any_write():
    """Bad q, damping or out raise ValueError with the model's / the damping's message, and
    neither out nor the next result changes."""
    from solvers.osim import CabaOsim, PvOsimr
    rng = np.random.default_rng(3)
    model = random_forest(rng, 6, nroots=1, kinds=(SPHERICAL, SPHERICAL))
    q = random_q(model, rng)
    cons = [Contact(2, -1, np.zeros(3), np.eye(3)), LoopClosure(4, None, "world", None, kind="weld")]
    P, C = PvOsimr(model, cons), CabaOsim(model, cons)
    m = P.m
    out = np.zeros((m, m))
    G, L = P.compute(q), C.compute(q, 0.1)
    bad_q = q.copy()
    bad_q[model.idx_q[np.flatnonzero(model.jtype == SPHERICAL)[0]]] = 3.0     # not a unit quaternion
    for x, match in ((bad_q, "quaternion"), (q[:-1], "q"), (np.full_like(q, np.nan), "q")):
        with pytest.raises(ValueError, match=match):
            P.compute(x, out=out)
        with pytest.raises(ValueError, match=match):
            C.compute(x, 0.1, out=out)
    for d in (0.0, -1.0, np.nan, np.inf, np.ones(m + 1), np.r_[np.ones(m - 1), -1.0], "a"):
        with pytest.raises(ValueError, match="damping"):
            C.compute(q, d, out=out)
    for o in (np.zeros((m, m + 1)), np.zeros((m, m), np.float32), np.zeros((m, m)).T[:, ::1][::-1]):
        with pytest.raises(ValueError, match="out"):
            P.compute(q, out=o)
    assert not out.any()
    assert np.array_equal(P.compute(q), G) and np.array_equal(C.compute(q, 0.1), L)
    with pytest.raises(ValueError, match="method"):
        PvOsimr(model, cons, method="lu")

"""Constrained forward dynamics (paper 002: constrainedABA, proxPV) against a dense oracle.

Oracle: J built constraint by constraint from `models.body_jacobian` (`oracle_J`), M from
`models.crba`, c from `models.rnea`; the drift γ = J̇ v is checked separately against central
finite differences of that J along q(t) = q ⊕ t v. Full-rank sets: the KKT system
[M Jᵀ; J 0] solved densely. Redundant sets: the dense proximal-point iterations on the dual
(λ ← (G + I/μ)⁻¹ (λ/μ − b), G = J M⁻¹ Jᵀ) run to convergence, which give the minimum-norm
multipliers that every proximal method started at λ = 0 converges to.
"""
import sys

import numpy as np
import pytest

import models
import solvers
from solvers import Contact, ConstraintSet, JointLimit, LoopClosure
from solvers.constrained import constraint_drift
from test_delassus import oracle_J, random_forest, rot

TOL = 1e-9
METHODS = [solvers.constrained_aba, solvers.prox_pv, solvers.prox_ltl]


# ----------------------------------------------------------------------------- oracle
def dense_problem(model, q, v, tau, cons):
    cons = cons.constraints if isinstance(cons, ConstraintSet) else cons
    J = oracle_J(model, q, cons)
    M = models.crba(model, q)
    c = models.rnea(model, q, v, np.zeros(model.nv))
    gamma = constraint_drift(model, q, v, cons)
    return J, M, c, gamma


def kkt(model, q, v, tau, cons):
    """(a, lam) of [M Jᵀ; J 0] [a; −lam] = [τ − c; −γ] (lam: M a = τ − c + Jᵀ lam)."""
    J, M, c, gamma = dense_problem(model, q, v, tau, cons)
    m, nv = J.shape
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([tau - c, -gamma]))
    return sol[:nv], -sol[nv:]


def dense_prox(model, q, v, tau, cons, mu=1e4, iters=2000):
    """Dense proximal point on the dual to convergence (minimum-norm lam on redundant sets)."""
    J, M, c, gamma = dense_problem(model, q, v, tau, cons)
    a_free = np.linalg.solve(M, tau - c)
    X = np.linalg.solve(M, J.T)
    G = J @ X
    b = J @ a_free + gamma
    C = np.linalg.cholesky(G + np.eye(len(b)) / mu)
    lam = np.zeros(len(b))
    for _ in range(iters):
        new = np.linalg.solve(C.T, np.linalg.solve(C, lam / mu - b))
        if np.max(np.abs(new - lam)) < 1e-15 * max(1.0, np.max(np.abs(new))):
            lam = new
            break
        lam = new
    return a_free + X @ lam, lam


def rel(x, ref):
    return np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300)


def check(method, model, q, v, tau, cons, ref=None, mu=1e4, tol=1e-12, lam_tol=TOL):
    a_ref, lam_ref = kkt(model, q, v, tau, cons) if ref is None else ref
    r = method(model, q, v, tau, cons, mu=mu, tol=tol, max_iter=100)
    assert r.a.shape == (model.nv,) and r.lam.shape == lam_ref.shape
    assert rel(r.a, a_ref) < TOL, (method.__name__, rel(r.a, a_ref))
    assert rel(r.lam, lam_ref) < lam_tol, (method.__name__, rel(r.lam, lam_ref))
    J, M, c, gamma = dense_problem(model, q, v, tau, cons)
    assert np.max(np.abs(J @ r.a + gamma)) < 1e-8 * max(1.0, np.max(np.abs(gamma)))
    assert r.residual < 1e-8 and 1 <= r.iterations <= 100
    return r


def full_rank(model, q, make):
    """The first constraint list from make() whose Delassus matrix G = J M⁻¹ Jᵀ has its smallest
    eigenvalue above 1e-2: random links often over-constrain a random tree (no KKT reference),
    and the proximal iterations need about log(tol) / log(1 + μ σ_min(G)) steps."""
    M = models.crba(model, q)
    while True:
        cons = make()
        J = oracle_J(model, q, cons)
        if np.linalg.eigvalsh(J @ np.linalg.solve(M, J.T))[0] > 1e-2:
            return cons


def one_dof_joint(model, k):
    return [j for j in model.joint_names if model.nvs[model.joint_body(j)] == 1][k]


def place(rng, scale=0.1):
    return rng.normal(size=3) * scale, rot(rng)


# ----------------------------------------------------------------------------- drift
def test_drift_matches_finite_differences():
    rng = np.random.default_rng(3)
    model = random_forest(rng, 14, nroots=2)
    q = model.integrate(model.neutral(), rng.normal(size=model.nv) * 0.5, 1.0)
    v = rng.normal(size=model.nv)
    cons = [Contact(5, -1, rng.normal(size=3), rot(rng)), Contact(3, 9, rng.normal(size=3), rot(rng)),
            LoopClosure(8, place(rng), -1, place(rng, 1.0), kind="weld"),
            LoopClosure(-1, place(rng, 1.0), 10, place(rng), kind="point"),
            LoopClosure(4, place(rng), 12, place(rng), kind="point"),
            LoopClosure(6, place(rng), 11, place(rng), kind="weld"),
            LoopClosure(7, place(rng), 7, place(rng), kind="weld"),
            JointLimit(one_dof_joint(model, 0), "upper")]
    g = constraint_drift(model, q, v, cons)
    h = 1e-6
    fd = (oracle_J(model, model.integrate(q, v, h), cons) - oracle_J(model, model.integrate(q, v, -h), cons)) @ v
    fd /= 2 * h
    assert np.max(np.abs(g - fd)) < 1e-7 * max(1.0, np.max(np.abs(fd)))
    assert np.max(np.abs(g)) > 1e-2   # not trivially zero


# ----------------------------------------------------------------------------- random trees
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(4))
def test_random_trees_match_kkt(method, seed):
    """Unary contacts, welds and point closures to the world, joint limits; v ≠ 0."""
    rng = np.random.default_rng(seed)
    model = random_forest(rng, 16, nroots=1 + seed % 2)
    q = model.integrate(model.neutral(), rng.normal(size=model.nv) * 0.5, 1.0)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv) * 5
    leaves = [i for i in range(model.nbodies) if i not in model.jint[:, 0]]

    def make():
        b = rng.choice(leaves + [int(rng.integers(model.nbodies))], 3, replace=False)
        return [Contact(int(b[0]), -1, rng.normal(size=3), rot(rng)),
                LoopClosure(int(b[1]), place(rng), "world", place(rng, 1.0), kind="weld"),
                LoopClosure("world", place(rng, 1.0), int(b[2]), place(rng), kind="point"),
                JointLimit(one_dof_joint(model, -1), "lower")]
    cons = full_rank(model, q, make)
    check(method, model, q, v, tau, cons)


@pytest.mark.parametrize("method", METHODS)
def test_loops_between_moving_bodies_match_kkt(method):
    """Point and weld closures and a contact between two moving links (a graph, not a tree)."""
    rng = np.random.default_rng(11)
    model = random_forest(rng, 14, nroots=1)
    q = model.integrate(model.neutral(), rng.normal(size=model.nv) * 0.5, 1.0)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)

    def make():
        b = rng.choice(model.nbodies, 7, replace=False)
        return [LoopClosure(int(b[0]), place(rng), int(b[1]), place(rng), kind="point"),
                LoopClosure(int(b[2]), place(rng), int(b[3]), place(rng), kind="weld"),
                Contact(int(b[4]), int(b[5]), rng.normal(size=3), rot(rng)),
                Contact(int(b[6]), -1, rng.normal(size=3), rot(rng))]
    cons = full_rank(model, q, make)
    check(method, model, q, v, tau, cons)


# ----------------------------------------------------------------------------- robots
def _robot(name):
    path, dirs = models.robot_path(name)
    return models.load_urdf(path, floating_base=name != "panda", package_dirs=dirs)


def _state(model, rng, scale=0.2):
    q = model.integrate(model.neutral(), rng.normal(size=model.nv) * scale, 1.0)
    return q, rng.normal(size=model.nv) * 0.5, rng.normal(size=model.nv) * 2


def _weld(body):
    return LoopClosure(body, None, "world", None, kind="weld")


def _point(body, rng):
    return LoopClosure(body, (rng.normal(size=3) * 0.05, None), "world", None, kind="point")


ROBOT_SETS = {
    "g1": lambda rng: [_weld("left_ankle_roll_link"), _weld("right_ankle_roll_link"),
                       _point("left_wrist_yaw_link", rng)],
    "talos": lambda rng: [_weld("leg_left_6_link"), _weld("leg_right_6_link"), _weld("arm_left_7_link")],
    "solo12": lambda rng: [Contact(f"{f}_LOWER_LEG", "world", rng.normal(size=3) * 0.3, rot(rng))
                           for f in ("FL", "FR", "HL")],
    "panda": lambda rng: [_weld("panda_link7")],
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(ROBOT_SETS))
def test_robots_match_kkt(method, name):
    rng = np.random.default_rng(5)
    model = _robot(name)
    q, v, tau = _state(model, rng)
    check(method, model, q, v, tau, ConstraintSet(model, ROBOT_SETS[name](rng)))


@pytest.mark.parametrize("method", METHODS)
def test_talos_redundant_set_matches_dense_proximal(method):
    """Paper 002 Fig. 4's case: both feet and both hands welded plus both elbows held at a
    point: 30 rows on the 16 dofs of torso and arms, G singular. v in the null space of J, so
    the drift is consistent; the reference is the dense proximal solve (minimum-norm lam)."""
    rng = np.random.default_rng(7)
    model = _robot("talos")
    q, v, tau = _state(model, rng)
    cons = ConstraintSet(model, [_weld("leg_left_6_link"), _weld("leg_right_6_link"), _weld("arm_left_7_link"),
                                 _weld("arm_right_7_link"), _point("arm_left_4_link", rng),
                                 _point("arm_right_4_link", rng)])
    J = oracle_J(model, q, cons.constraints)
    assert np.linalg.matrix_rank(J) < J.shape[0]
    _, s, Vt = np.linalg.svd(J)
    N = Vt[np.sum(s > 1e-10 * s[0]):]
    v = N.T @ (N @ v)
    a_ref, lam_ref = dense_prox(model, q, v, tau, cons.constraints)
    Jd, M, c, gamma = dense_problem(model, q, v, tau, cons.constraints)
    assert np.max(np.abs(Jd @ a_ref + gamma)) < 1e-9          # the reference converged
    check(method, model, q, v, tau, cons, ref=(a_ref, lam_ref), lam_tol=1e-6)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("method", METHODS)
def test_bad_input_raises(method):
    rng = np.random.default_rng(0)
    model = _robot("solo12")
    q, v, tau = _state(model, rng)
    cons = ROBOT_SETS["solo12"](rng)
    with pytest.raises(KeyError, match="no_such_link"):
        method(model, q, v, tau, [Contact("no_such_link", "world", np.zeros(3))])
    for mu in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="mu"):
            method(model, q, v, tau, cons, mu=mu)
    with pytest.raises(ValueError, match="max_iter"):
        method(model, q, v, tau, cons, max_iter=0)
    for bad, name in ((q, "q"), (v, "v"), (tau, "tau")):
        x = bad.copy()
        x[3] = np.nan
        args = dict(q=q, v=v, tau=tau)
        args[name] = x
        with pytest.raises(ValueError, match=name):
            method(model, args["q"], args["v"], args["tau"], cons)
    with pytest.raises(ValueError, match="tau"):
        method(model, q, v, tau[:-1], cons)


@pytest.mark.parametrize("method", METHODS)
def test_default_settings_converge_fast(method):
    """The paper's μ = 1e6 (the default): a few iterations, precision about μ·1e-16 relative."""
    rng = np.random.default_rng(2)
    model = _robot("talos")
    q, v, tau = _state(model, rng)
    cons = ROBOT_SETS["talos"](rng)
    a_ref, lam_ref = kkt(model, q, v, tau, cons)
    r = method(model, q, v, tau, cons)
    assert r.iterations <= 5 and r.residual < 1e-10
    assert rel(r.a, a_ref) < 1e-7 and rel(r.lam, lam_ref) < 1e-7


# ----------------------------------------------------------------------------- prepared calls
@pytest.mark.parametrize("algorithm", ["constrainedABA", "proxPV"])
def test_prepared_object_matches_kkt_at_every_state(algorithm):
    """One `ConstrainedDynamics` solved at several states (workspaces reused) against the dense
    KKT oracle at each; a bad input raises with the model's message and leaves no trace."""
    rng = np.random.default_rng(4)
    model = _robot("solo12")
    cons = ROBOT_SETS["solo12"](rng)
    cd = solvers.ConstrainedDynamics(model, cons, algorithm=algorithm, mu=1e4, tol=1e-12, max_iter=100)
    for _ in range(3):
        q, v, tau = _state(model, rng)
        r = cd.solve(q, v, tau)
        a_ref, lam_ref = kkt(model, q, v, tau, cons)
        assert rel(r.a, a_ref) < TOL and rel(r.lam, lam_ref) < TOL
        assert r.iterations >= 1 and r.residual < 1e-8
    bad = q.copy()
    bad[5] = 2.0                                     # the base quaternion is no longer unit
    with pytest.raises(ValueError, match="quaternion"):
        cd.solve(bad, v, tau)
    with pytest.raises(ValueError, match="v contains NaN"):
        cd.solve(q, np.full(model.nv, np.nan), tau)
    with pytest.raises(ValueError, match="a_ref"):
        cd.solve(q, v, tau, a_ref=np.full(cd.m, np.inf))
    assert np.array_equal(cd.solve(q, v, tau).a, r.a)
    r2 = cd.solve(list(q), list(v), list(tau))      # converted by the model's checks
    assert np.array_equal(r2.a, r.a)


def test_prepared_object_settings_and_names():
    rng = np.random.default_rng(0)
    model = _robot("panda")
    with pytest.raises(ValueError, match="algorithm"):
        solvers.ConstrainedDynamics(model, [_weld("panda_link7")], algorithm="aba")
    with pytest.raises(ValueError, match="mu"):
        solvers.ConstrainedDynamics(model, [_weld("panda_link7")], mu=0.0)
    cd = solvers.ConstrainedDynamics(model, [_weld("panda_link7")], tol=0.0, max_iter=3)
    q, v, tau = _state(model, rng)
    assert cd.solve(q, v, tau).iterations == 3
    cd.set_settings(max_iter=50)
    fn = solvers.constrained_aba(model, q, v, tau, [_weld("panda_link7")])
    r = cd.solve(q, v, tau)
    assert np.array_equal(r.a, fn.a) and r.iterations == fn.iterations


# ----------------------------------------------------------------------------- velocity-level step
@pytest.mark.parametrize("algorithm,between_links", [("constrainedABA", False), ("proxPV", False), ("proxPV", True)])
def test_impulse_step_matches_dense_projection(algorithm, between_links):
    """`ConstrainedDynamics.impulse`: Δv = argmin ½‖Δv‖²_M s.t. J (v_f + Δv) = −corr, against the
    dense M-metric projection Δv = M⁻¹Jᵀ G⁺ b, b = −(J v_f + corr), G = J M⁻¹ Jᵀ (G⁺: the
    pseudo-inverse, so that a redundant set is covered: two welds and a point on one link)."""
    rng = np.random.default_rng(8)
    model = random_forest(rng, 12, nroots=1)
    q = model.integrate(model.neutral(), rng.normal(size=model.nv) * 0.5, 1.0)
    other = (lambda: int(rng.integers(model.nbodies))) if between_links else (lambda: "world")
    cons = [LoopClosure(9, place(rng), other(), place(rng), kind="weld"),
            LoopClosure(5, place(rng), other(), place(rng), kind="point"),
            LoopClosure(5, place(rng), other(), place(rng), kind="point")]
    cd = solvers.ConstrainedDynamics(model, cons, algorithm=algorithm, mu=1e4, tol=1e-13, max_iter=500)
    J = oracle_J(model, q, cons)
    M = models.crba(model, q)
    X = np.linalg.solve(M, J.T)
    G = J @ X
    for _ in range(2):
        v_free, corr = rng.normal(size=model.nv), rng.normal(size=J.shape[0]) * 0.1
        b = -(J @ v_free + corr)
        if np.linalg.matrix_rank(J) < J.shape[0]:       # keep b consistent (in the range of J)
            corr = -(J @ v_free) - J @ rng.normal(size=model.nv)
            b = -(J @ v_free + corr)
        dv_ref = X @ np.linalg.lstsq(G, b, rcond=1e-12)[0]
        r = cd.impulse(q, v_free, corr)
        assert rel(r.a, dv_ref) < TOL, rel(r.a, dv_ref)
        assert rel(np.linalg.solve(M, J.T @ r.lam), dv_ref) < TOL       # M Δv = Jᵀ lam
        assert np.max(np.abs(J @ (v_free + r.a) + corr)) < 1e-9 and r.residual < 1e-9


@pytest.mark.parametrize("algorithm", ["constrainedABA", "proxPV"])
def test_prepared_out_and_refresh(algorithm):
    """solve(..., out=(a, lam)) writes the same values as solve() into the caller's arrays; a bad
    out raises before anything is written; after an in-place change of the model (armature) the
    prepared object gives the new dynamics once refreshed, and the one-shot functions at once."""
    rng = np.random.default_rng(5)
    model = _robot("solo12")
    cons = ConstraintSet(model, ROBOT_SETS["solo12"](rng))
    cd = solvers.ConstrainedDynamics(model, cons, algorithm=algorithm, mu=1e4, tol=1e-12, max_iter=100)
    q, v, tau = _state(model, rng)
    r = cd.solve(q, v, tau)
    a, lam = np.full(model.nv, np.nan), np.full(cd.m, np.nan)
    r2 = cd.solve(q, v, tau, out=(a, lam))
    assert r2.a is a and r2.lam is lam and np.array_equal(a, r.a) and np.array_equal(lam, r.lam)
    # the record is made by the compiled call: a real ConstrainedResult, Python scalars, no leaked references
    assert type(r2) is solvers.ConstrainedResult and r2 == (a, lam, r.iterations, r.residual)
    assert type(r2.iterations) is int and r2.iterations >= 1 and type(r2.residual) is float
    refs = sys.getrefcount(a), sys.getrefcount(lam)
    for _ in range(50):
        cd.solve(q, v, tau, out=(a, lam))
    assert (sys.getrefcount(a), sys.getrefcount(lam)) == refs
    a[:], lam[:] = 7.0, 7.0
    for bad in ((a,), (a, lam[:-1]), (a.astype(np.float32), lam), (a, lam.reshape(1, -1)), 3.0):
        with pytest.raises(ValueError, match="out"):
            cd.solve(q, v, tau, out=bad)
    with pytest.raises(ValueError, match="v contains NaN"):
        cd.solve(q, np.full(model.nv, np.nan), tau, out=(a, lam))
    assert np.all(a == 7.0) and np.all(lam == 7.0)
    fn = solvers.constrained_aba if algorithm == "constrainedABA" else solvers.prox_pv
    saved = model.armature.copy()
    try:
        model.armature[:] = 0.05
        a_ref, lam_ref = kkt(model, q, v, tau, cons.constraints)
        assert rel(fn(model, q, v, tau, cons, mu=1e4, tol=1e-12, max_iter=100).a, a_ref) < TOL
        assert rel(cd.solve(q, v, tau).a, a_ref) > 1e-6            # still the armature it was prepared with
        cd.refresh()
        assert rel(cd.solve(q, v, tau).a, a_ref) < TOL
    finally:
        model.armature[:] = saved

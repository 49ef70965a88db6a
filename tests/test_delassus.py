"""Delassus operators (paper 000) against an independent dense oracle.

Oracle: J built constraint by constraint from `models.body_jacobian` (not from the operators'
link rows), M from `models.crba`, G = J M⁻¹ Jᵀ by dense Cholesky; the damped inverse
(G + diag(d))⁻¹ b is computed in 32-digit arithmetic (mpmath) from those float64 J and M, so
the reference is exact for the given data even when G is singular and d = 1e-8 (a float64
Cholesky of G + dI is not: on redundant sets it loses ε‖G‖/d, see
`test_dense_cholesky_is_not_a_reference`).

Accuracy of `MatrixFreeDelassus.solve` (Eq. 9, the matrix inversion lemma): the plain solve
is checked to 1e-9 for d ≥ 1e-4 everywhere and for every d on structurally redundant sets
(where (G + dI)⁻¹ b is dominated by the exactly-resolved null space); for smaller d on
full-rank sets Eq. (9) loses about ε‖G‖/d and `solve(b, refine=1)` is checked instead.
"""
import numpy as np
import pytest
import scipy.linalg as sla

import models
from models import FIXED, FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL, ModelBuilder
from solvers import (Contact, ContactSet, ConstraintSet, DenseDelassus, JointFriction, JointLimit, LoopClosure,
                     MatrixFreeDelassus, elimination_order)

TOL = 1e-9


# ----------------------------------------------------------------------------- helpers
def rot(rng):
    A = rng.normal(size=(3, 3))
    Q, R = np.linalg.qr(A)
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] *= -1
    return Q


def _inertia(rng):
    return dict(mass=rng.uniform(0.5, 2.0), com=rng.normal(size=3) * 0.1,
                inertia=np.diag(rng.uniform(0.01, 0.1, 3)))


def random_forest(rng, n, nroots=1, kinds=(REVOLUTE, REVOLUTE, PRISMATIC, SPHERICAL, FIXED), name="b"):
    """A forest of n bodies: free roots, then random joints under random earlier bodies."""
    mb = ModelBuilder()
    for i in range(n):
        if i < nroots:
            mb.add_body(f"{name}{i}", -1, FREE, translation=rng.normal(size=3), **_inertia(rng))
        else:
            jt = kinds[int(rng.integers(0, len(kinds)))]
            mb.add_body(f"{name}{i}", int(rng.integers(0, i)), jt, translation=rng.normal(size=3) * 0.3,
                        rotation=rot(rng), axis=rng.normal(size=3), **_inertia(rng))
    return mb.build()


def chain(n, root=FREE, jt=REVOLUTE, seed=0):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    prev = mb.add_body("l0", -1, root, **_inertia(rng))
    for i in range(1, n):
        prev = mb.add_body(f"l{i}", prev, jt, translation=(0.3, 0, 0), axis=rng.normal(size=3), **_inertia(rng))
    return mb.build()


def oracle_J(model, q, cons):
    """J (m, nv) from models.body_jacobian, constraint by constraint (independent of the rows)."""
    oR, op = models.forward_kinematics(model, q)
    rows = []

    def place(body, local):
        b, Rf, pf = model.body_placement_offset(body) if isinstance(body, str) else (model.body_index(body),
                                                                                    np.eye(3), np.zeros(3))
        if local is None:
            return b, None, None
        r, Q = local
        if b < 0:
            return b, r, Q
        return b, oR[b] @ (Rf @ r + pf) + op[b], oR[b] @ Rf @ Q

    def jac(b, p):
        return np.zeros((6, model.nv)) if b < 0 else models.body_jacobian(model, q, b, p)

    for c in cons:
        if isinstance(c, ContactSet):
            for k in range(len(c)):
                b1, b2 = int(c.body1[k]), int(c.body2[k])
                p, R = c.position[k], c.frame[k]
                rows.append(R.T @ (jac(b1, p)[:3] - jac(b2, p)[:3]))
        elif isinstance(c, Contact):
            b1, b2 = model.body_index(c.body1), model.body_index(c.body2)
            rows.append(c.frame.T @ (jac(b1, c.position)[:3] - jac(b2, c.position)[:3]))
        elif isinstance(c, LoopClosure):
            b1, p1, R1 = place(c.body1, c.placement1)
            b2, p2, R2 = place(c.body2, c.placement2)
            if c.kind == "point":
                rows.append(R1.T @ (jac(b1, p1)[:3] - jac(b2, p2)[:3]))
            else:
                J1, J2 = jac(b1, p1), jac(b2, p1)
                rows.append(R1.T @ (J1[:3] - J2[:3]))
                rows.append(R1.T @ (J1[3:] - J2[3:]))
        elif isinstance(c, (JointLimit, JointFriction)):
            b = model.joint_body(c.joint)
            iv, nvi = model.idx_v[b], model.nvs[b]
            s = c.sign if isinstance(c, JointLimit) else 1.0
            E = np.zeros((nvi, model.nv))
            E[np.arange(nvi), iv + np.arange(nvi)] = s
            rows.append(E)
    return np.vstack(rows)


def oracle(model, q, cons):
    """J, M, the exact-arithmetic reference solver, and G (float64)."""
    J = oracle_J(model, q, cons)
    M = models.crba(model, q)
    L = np.linalg.cholesky(M)
    X = sla.solve_triangular(L, J.T, lower=True)
    return J, M, Ref(J, M), X.T @ X


mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 32


class Ref:
    """(G + diag(d))⁻¹ b in 32-digit arithmetic from float64 J, M (the oracle's)."""

    def __init__(self, J, M):
        Jm = mpmath.matrix(J.tolist())
        self.G = Jm * (mpmath.inverse(mpmath.matrix(M.tolist())) * Jm.T)
        self.m = J.shape[0]
        self._d, self._A = None, None

    def solve(self, d, b):
        d = np.broadcast_to(np.asarray(d, float), (self.m,))
        if self._d is None or not np.array_equal(self._d, d):
            A = self.G.copy()
            for i in range(self.m):
                A[i, i] += mpmath.mpf(float(d[i]))
            self._A, self._d = A, d.copy()
        x = mpmath.lu_solve(self._A, mpmath.matrix([float(v) for v in b]))
        return np.array([float(v) for v in x])


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def G_of(op):
    return np.column_stack([op.matvec(e) for e in np.eye(op.m)])


def check_operator(model, q, cons, dampings=(1.0, 1e-2, 1e-4, 1e-6, 1e-8), seed=0, tol=TOL,
                   plain_small_d=False):
    """matvec, solve (several dampings in a row on one operator, scalar and vector), J helpers."""
    rng = np.random.default_rng(seed)
    J, M, X, G = oracle(model, q, cons)
    F = MatrixFreeDelassus(model, q, cons)
    D = DenseDelassus(model, q, cons)
    assert F.m == D.m == J.shape[0]
    Gmax = np.abs(G).max()
    assert np.abs(G_of(F) - G).max() <= tol * Gmax
    assert np.abs(D.matrix() - G).max() <= tol * Gmax
    for d in dampings:
        F.update_damping(d)
        D.update_damping(d)
        if d >= 1e-4:     # where a float64 Cholesky of G + dI is itself accurate to 1e-9
            b = rng.normal(size=F.m)
            assert rel(F.solve(b), D.solve(b)) <= tol, d
        for _ in range(2):
            b = rng.normal(size=F.m)
            ref = X.solve(d, b)
            # plain Eq. (9) for d >= 1e-4 (or redundant sets, see test_redundant_...);
            # one refinement step at every d (see MatrixFreeDelassus.solve on accuracy)
            if d >= 1e-4 or plain_small_d:
                assert rel(F.solve(b), ref) <= tol, d
            assert rel(F.solve(b, refine=1), ref) <= tol, d
    dv = rng.uniform(1e-4, 1e-1, F.m)
    F.update_damping(dv)
    b = rng.normal(size=F.m)
    assert rel(F.solve(b), X.solve(dv, b)) <= tol
    v, lam = rng.normal(size=model.nv), rng.normal(size=F.m)
    for op in (F, D):
        assert rel(op.J_apply(v), J @ v) <= tol
        assert rel(op.JT_apply(lam), J.T @ lam) <= tol
        assert rel(op.JT_minv(lam), np.linalg.solve(M, J.T @ lam)) <= tol
    return F, D, G


def random_contacts(rng, model, q, k_unary, k_binary, bodies=None):
    oR, op = models.forward_kinematics(model, q)
    bodies = np.arange(model.nbodies) if bodies is None else np.asarray(bodies)
    cons = []
    for _ in range(k_unary):
        b = int(rng.choice(bodies))
        cons.append(Contact(b, -1, op[b] + rng.normal(size=3) * 0.05, rot(rng), 0.5))
    for _ in range(k_binary):
        a, b = rng.choice(bodies, 2, replace=False)
        cons.append(Contact(int(a), int(b), (op[a] + op[b]) / 2, rot(rng), 0.5))
    return cons


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("seed", range(4))
def test_random_tree_unary_contacts(seed):
    rng = np.random.default_rng(seed)
    model = random_forest(rng, 14, nroots=1)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 8, 0)
    F, D, G = check_operator(model, q, cons, seed=seed)
    assert F.elimination.fill == 0           # tree + unary constraints: plain ABA order, no fill-in


@pytest.mark.parametrize("seed", range(4))
def test_contacts_between_moving_bodies_of_one_robot(seed):
    """Internal loops: contacts between links of the same tree (e.g. hand on own thigh)."""
    rng = np.random.default_rng(10 + seed)
    model = random_forest(rng, 16, nroots=1)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 4, 5)
    check_operator(model, q, cons, seed=seed)


def test_contacts_between_two_robots():
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    for r in range(2):
        prev = mb.add_body(f"r{r}_0", -1, FREE, translation=(r, 0, 0), **_inertia(rng))
        for i in range(1, 7):
            prev = mb.add_body(f"r{r}_{i}", prev if i % 3 else prev - 1 if i > 1 else prev, REVOLUTE,
                               translation=rng.normal(size=3) * 0.3, axis=rng.normal(size=3), **_inertia(rng))
    model = mb.build()
    q = model.random_configuration(rng)
    oR, op = models.forward_kinematics(model, q)
    cons = random_contacts(rng, model, q, 3, 0)
    for a, b in [(6, 13), (3, 10), (0, 12), (5, 8)]:
        cons.append(Contact(model.body_names[a], model.body_names[b], (op[a] + op[b]) / 2, rot(rng)))
    check_operator(model, q, cons)


def test_point_and_weld_loops_coupled():
    """Point and weld loop closures, two loops sharing links (coupled), one to the world."""
    rng = np.random.default_rng(4)
    model = random_forest(rng, 12, nroots=1, kinds=(REVOLUTE,))
    q = model.random_configuration(rng)
    pl = lambda: (rng.normal(size=3) * 0.2, rot(rng))
    cons = [LoopClosure(3, pl(), 9, pl(), "point"),
            LoopClosure(5, pl(), 9, pl(), "weld"),       # shares link 9 with the first loop
            LoopClosure(7, pl(), 3, pl(), "point"),
            LoopClosure("world", pl(), 11, pl(), "point"),
            LoopClosure(10, pl(), "world", pl(), "weld")]
    check_operator(model, q, cons)


def test_four_bar_linkage():
    """Planar four-bar: a chain of three links closed to the ground by a point loop."""
    mb = ModelBuilder()
    I = np.diag([1e-3, 1e-2, 1e-2])
    a = mb.add_body("crank", -1, REVOLUTE, axis=(0, 0, 1), mass=1, com=(0.1, 0, 0), inertia=I)
    b = mb.add_body("coupler", a, REVOLUTE, translation=(0.2, 0, 0), axis=(0, 0, 1), mass=1,
                    com=(0.2, 0, 0), inertia=I)
    c = mb.add_body("rocker", b, REVOLUTE, translation=(0.4, 0, 0), axis=(0, 0, 1), mass=1,
                    com=(0.15, 0, 0), inertia=I)
    model = mb.build()
    q = np.array([0.7, -0.9, -1.4])
    oR, op = models.forward_kinematics(model, q)
    tip = oR[c] @ np.array([0.3, 0, 0]) + op[c]
    cons = [LoopClosure("rocker", ((0.3, 0, 0), np.eye(3)), "world", (tip, np.eye(3)), "point")]
    check_operator(model, q, cons)


def test_joint_limit_and_friction_rows():
    rng = np.random.default_rng(5)
    model = random_forest(rng, 10, nroots=1, kinds=(REVOLUTE, PRISMATIC, SPHERICAL))
    q = model.random_configuration(rng)
    joints = [model.joint_names[i] for i in (1, 2, 4, 6)]
    cons = random_contacts(rng, model, q, 3, 2)
    cons += [JointLimit(joints[0], "lower"), JointLimit(joints[1], "upper"),
             JointFriction(joints[2], 2.0), JointFriction(joints[3], 1.0), JointFriction(model.joint_names[0], 1.0)]
    check_operator(model, q, cons)


def test_fixed_bodies_and_planar_joint():
    """Links without dofs (fixed joints) carrying constraints and couplings; a planar root."""
    rng = np.random.default_rng(6)
    model = random_forest(rng, 12, nroots=1, kinds=(FIXED, REVOLUTE, FIXED, PLANAR))
    q = model.random_configuration(rng)
    fixed = [i for i in range(model.nbodies) if model.nvs[i] == 0]
    assert fixed
    cons = random_contacts(rng, model, q, 3, 4, bodies=np.arange(model.nbodies))
    oR, op = models.forward_kinematics(model, q)
    for f in fixed[:2]:
        cons.append(Contact(f, -1, op[f], rot(rng)))
        cons.append(Contact(f, int(rng.integers(0, model.nbodies)), op[f], rot(rng)))
    check_operator(model, q, cons)


def test_boxes_touching_each_other_and_the_ground():
    """Pure maximal-coordinate case: free boxes, 4 corner contacts per touching pair."""
    mb = ModelBuilder()
    h = 0.1
    I = np.eye(3) * (2 * h) ** 2 / 6
    for k in range(3):
        mb.add_body(f"box{k}", -1, FREE, mass=1.0, inertia=I)
    model = mb.build()
    q = model.neutral()
    pos = [(0, 0, h), (2 * h, 0, h), (h, 0, 3 * h)]     # two on the ground, one bridging them
    for k in range(3):
        q[7 * k:7 * k + 3] = pos[k]
    corners = lambda cx, hx, z: [(cx + sx * hx, sy * h, z) for sx in (-1, 1) for sy in (-1, 1)]
    cons = [Contact("box0", "world", p, np.eye(3)) for p in corners(0, h, 0)]
    cons += [Contact("box1", "world", p, np.eye(3)) for p in corners(2 * h, h, 0)]
    cons += [Contact("box2", "box0", p, np.eye(3)) for p in corners(h / 2, h / 2, 2 * h)]
    cons += [Contact("box2", "box1", p, np.eye(3)) for p in corners(3 * h / 2, h / 2, 2 * h)]
    cons += [Contact("box0", "box1", (h, 0, h), np.array([[0, 0, -1], [0, 1, 0], [1, 0, 0.]]).T)]  # side by side
    F, D, G = check_operator(model, q, cons)
    assert F.elimination.fill >= 0


def test_redundant_constraints_small_damping():
    """Four coplanar contacts plus a weld on the same body (18 rows on 6 dofs) and the rest of a
    robot: G is singular; (G + dI)⁻¹ must still match down to d = 1e-8."""
    rng = np.random.default_rng(7)
    model = random_forest(rng, 8, nroots=1, kinds=(REVOLUTE,))
    q = model.random_configuration(rng)
    oR, op = models.forward_kinematics(model, q)
    b = 0
    R = rot(rng)
    cons = [Contact(b, -1, op[b] + R @ np.array([sx * 0.1, sy * 0.1, 0]), R) for sx in (-1, 1) for sy in (-1, 1)]
    cons.append(LoopClosure(b, (np.zeros(3), np.eye(3)), "world", (op[b], oR[b]), "weld"))
    cons.append(Contact(5, 7, (op[5] + op[7]) / 2, rot(rng)))
    F, D, G = check_operator(model, q, cons, dampings=(1e-2, 1e-4, 1e-6, 1e-8, 1e-3, 1e-8),
                             plain_small_d=True)
    assert np.linalg.matrix_rank(G) < F.m


def test_range_space_right_hand_side_accuracy():
    """b = J v (a physical g = J v_free) on a redundant set (m > nv). Measured: plain Eq. (9) is
    1e-10 at d = 1e-4, 5e-9 at 1e-6, 2e-6 at 1e-8; one refinement step brings it to the level
    of a float64 dense Cholesky (1e-10 at 1e-6; ~1e-8 at 1e-8, where every float64 method is
    limited by rounding of ε‖G‖‖λ‖ in the null space of G amplified by 1/d). So: plain to 1e-9
    for d ≥ 1e-4, refined to 1e-9 at 1e-6, and at 1e-8 a forward error within 10× of the
    dense Cholesky's."""
    rng = np.random.default_rng(8)
    model = random_forest(rng, 12, nroots=1, kinds=(REVOLUTE,))
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 8, 3)
    J, M, X, G = oracle(model, q, cons)
    assert J.shape[0] > model.nv
    F = MatrixFreeDelassus(model, q, cons)
    D = DenseDelassus(model, q, cons)
    for d in (1e-2, 1e-4):
        F.update_damping(d)
        b = J @ rng.normal(size=model.nv)
        assert rel(F.solve(b), X.solve(d, b)) <= TOL
    F.update_damping(1e-6)
    b = J @ rng.normal(size=model.nv)
    assert rel(F.solve(b, refine=1), X.solve(1e-6, b)) <= TOL
    d = 1e-8
    F.update_damping(d)
    D.update_damping(d)
    b = J @ rng.normal(size=model.nv)
    lam = F.solve(b, refine=1)
    ref = X.solve(d, b)
    assert rel(lam, ref) <= 10 * rel(D.solve(b), ref)


def test_dense_cholesky_is_not_a_reference():
    """Documents why the oracle uses the SVD: with m > nv the dense Cholesky of G + 1e-8 I is off
    by far more than the matrix-free solve (which is exact on the structural null space)."""
    rng = np.random.default_rng(9)
    model = random_forest(rng, 6, nroots=1, kinds=(REVOLUTE,))
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 6, 2)
    J, M, X, G = oracle(model, q, cons)
    F = MatrixFreeDelassus(model, q, cons, damping=1e-8)
    D = DenseDelassus(model, q, cons, damping=1e-8)
    b = rng.normal(size=F.m)
    ref = X.solve(1e-8, b)
    assert rel(F.solve(b), ref) <= TOL
    assert rel(D.solve(b), ref) > rel(F.solve(b), ref)


def test_solve_requires_damping_and_validates():
    rng = np.random.default_rng(10)
    model = chain(4)
    q = model.random_configuration(rng)
    F = MatrixFreeDelassus(model, q, [Contact(3, -1, np.zeros(3), np.eye(3))])
    with pytest.raises(RuntimeError):
        F.solve(np.ones(3))
    for bad in (0.0, -1.0, np.nan, np.ones(4), np.array([1.0, 0.0, 1.0])):
        with pytest.raises(ValueError):
            F.update_damping(bad)
    with pytest.raises(ValueError):
        F.matvec(np.ones(4))


def test_max_eigenvalue():
    rng = np.random.default_rng(11)
    model = random_forest(rng, 20, nroots=2)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 10, 4)
    F = MatrixFreeDelassus(model, q, cons)
    D = DenseDelassus(model, q, cons)
    lmax = np.linalg.eigvalsh(D.matrix())[-1]
    assert abs(D.max_eigenvalue() - lmax) <= 1e-12 * lmax
    est = F.max_eigenvalue(iters=20)
    assert est <= lmax * (1 + 1e-12) and est >= lmax * (1 - 1e-6)


def test_update_damping_reuses_structure():
    """Λ'_R: a new damping refactors only the d-dependent part (same rows, order, unit sums)."""
    rng = np.random.default_rng(12)
    model = random_forest(rng, 10, nroots=2)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 4, 4)
    F = MatrixFreeDelassus(model, q, cons, damping=1e-3)
    el, kA, fac = F.elimination, F.kA, F.kernel_state()[1]
    X = oracle(model, q, cons)[2]
    for d in (1e-1, 1e-5, 3e-3):
        F.update_damping(d)
        assert F.elimination is el and F.kA is kA and F.kernel_state()[1] is fac
        assert fac[11][0] == 1      # unit sums Σ KᵀK computed once, then rescaled
        b = rng.normal(size=F.m)
        assert rel(F.solve(b), X.solve(d, b)) <= TOL
    # the elimination order is kept per constraint graph by the caller's StructureCache: a new
    # operator at another q reuses it; one built without a cache computes its own
    from solvers.elimination import StructureCache
    cs = ConstraintSet(model, cons)
    sc = StructureCache(model)
    F1 = MatrixFreeDelassus(model, q, cs, damping=1.0, structures=sc)
    F2 = MatrixFreeDelassus(model, model.random_configuration(rng), cs, damping=1.0, structures=sc)
    assert F1.elimination is F2.elimination
    F3 = MatrixFreeDelassus(model, q, cs, damping=1.0)
    assert F3.elimination is not F1.elimination
    assert np.array_equal(F3.elimination.order, F1.elimination.order)
    with pytest.raises(ValueError, match="another model"):
        MatrixFreeDelassus(model, q, cs, structures=StructureCache(random_forest(rng, 3, nroots=1)))


def test_operator_from_precomputed_data():
    rng = np.random.default_rng(13)
    model = random_forest(rng, 9, nroots=1)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 3, 3)
    data = models.Data(model).compute(q)
    F = MatrixFreeDelassus(model, q, cons, data=data)
    G = oracle(model, q, cons)[3]
    assert np.abs(G_of(F) - G).max() <= TOL * np.abs(G).max()
    q2 = model.random_configuration(rng)
    F2 = MatrixFreeDelassus(model, q2, cons, data=data)     # data recomputed at the new q
    G2 = oracle(model, q2, cons)[3]
    assert np.abs(G_of(F2) - G2).max() <= TOL * np.abs(G2).max()


def test_tree_elimination_has_no_fill_and_memory_is_linear():
    """Chains with unary contacts: no fill-in, and the operator's state grows linearly."""
    sizes, mem = (25, 50, 100, 200), []
    for n in sizes:
        model = chain(n)
        q = model.random_configuration(np.random.default_rng(n))
        oR, op = models.forward_kinematics(model, q)
        cons = [Contact(i, -1, op[i], np.eye(3)) for i in range(0, n, 2)]
        F = MatrixFreeDelassus(model, q, cons, damping=1e-4)
        F.matvec(np.ones(F.m))
        F.solve(np.ones(F.m))
        assert F.elimination.fill == 0
        mem.append(F.nbytes())
    per = np.array(mem) / np.array(sizes)
    assert per.max() / per.min() < 1.1


def test_elimination_order_respects_tree_and_min_degree():
    # star of 5 free boxes all touching box 0 + a chain 5-6-7 touching 7 and 2
    parent = np.array([-1, -1, -1, -1, -1, -1, 5, 6])
    nvs = np.array([6, 6, 6, 6, 6, 6, 1, 1])
    pairs = np.array([[0, 1], [0, 2], [0, 3], [0, 4], [2, 7]])
    el = elimination_order(parent, nvs, pairs)
    pos = {int(v): k for k, v in enumerate(el.order)}
    assert pos[7] < pos[6] < pos[5]                         # children before parents
    assert pos[0] > min(pos[1], pos[3], pos[4])             # the hub is not eliminated first


def test_numba_elimination_matches_reference():
    """The numba minimum-degree kernel (used by the operators) reproduces the Python reference."""
    from solvers.elimination import elimination_order_fast
    rng = np.random.default_rng(14)
    for _ in range(100):
        n = int(rng.integers(2, 30))
        parent = np.array([-1 if (i == 0 or rng.random() < 0.2) else int(rng.integers(0, i)) for i in range(n)])
        nvs = rng.choice([0, 1, 1, 3, 6], n)
        a, b = rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n)
        ok = a != b
        key = np.unique(np.minimum(a[ok], b[ok]) * n + np.maximum(a[ok], b[ok]))
        pairs = np.stack([key // n, key % n], 1)
        e1, e2 = elimination_order(parent, nvs, pairs), elimination_order_fast(parent, nvs, pairs)
        for k in ("order", "par", "nb_ptr", "nb_node", "nb_slot", "nb_tr", "pair_ptr", "pair_slot", "pair_tr",
                  "slot_pair"):
            np.testing.assert_array_equal(getattr(e1, k), getattr(e2, k))


def test_localized_loops_memory_is_linear():
    """Chains with unary contacts plus contacts between links i and i+3 (local internal loops):
    fill-in and the operator's state grow linearly in n."""
    sizes, mem, fill = (25, 50, 100, 200), [], []
    for n in sizes:
        model = chain(n)
        q = model.random_configuration(np.random.default_rng(n))
        oR, op = models.forward_kinematics(model, q)
        cons = [Contact(i, -1, op[i], np.eye(3)) for i in range(0, n, 2)]
        cons += [Contact(i, i + 3, op[i], np.eye(3)) for i in range(0, n - 3, 5)]
        F = MatrixFreeDelassus(model, q, cons, damping=1e-4)
        F.matvec(np.ones(F.m))
        F.solve(np.ones(F.m))
        mem.append(F.nbytes())
        fill.append(F.elimination.fill)
    per = np.array(mem) / np.array(sizes)
    assert per.max() / per.min() < 1.1
    assert np.ptp(np.array(fill) / np.array(sizes)) < 0.05


def test_reuse_takes_over_storage_and_matches_a_fresh_operator():
    """`reuse=` (the simulator's per-step path): same results as a fresh operator at the new q
    (against the dense oracle), the unit sums recomputed for the new q, and the spent operator
    refuses to solve rather than reading the storage it gave away."""
    rng = np.random.default_rng(14)
    model = random_forest(rng, 10, nroots=2)
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    cons = random_contacts(rng, model, q0, 5, 4)
    cs = ConstraintSet(model, cons)
    old = MatrixFreeDelassus(model, q0, cs, damping=1e-2)
    fac = old.kernel_state()[1]
    new = MatrixFreeDelassus(model, q1, cs, reuse=old)
    new.update_damping(3e-3)
    assert new.kernel_state()[1][2] is fac[2]          # the unit-sum storage was taken over
    X = oracle(model, q1, cons)[2]
    b = rng.normal(size=new.m)
    assert rel(new.solve(b), X.solve(3e-3, b)) <= TOL
    with pytest.raises(RuntimeError):
        old.solve(b)


def test_reuse_on_another_contact_set_matches_a_fresh_operator():
    """`reuse=` with a new contact set of another number of rows on the same constraint graph
    (the simulator's path when a contact appears or disappears): the factor storage and
    workspaces are taken over (the arrays of m rows reallocated), and the compiled state
    computes what a fresh operator's state computes, bit for bit: J v, λ_max and an ADMM solve
    (factor, solve, matvec)."""
    from solvers.admm import ADMMSolver
    from solvers.cones import ConeSet
    from solvers.elimination import StructureCache
    from solvers.opstate import state_j_apply, state_max_eigenvalue
    rng = np.random.default_rng(23)
    model = random_forest(rng, 10, nroots=2)
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    tail = ConstraintSet(model, [JointLimit(model.joint_names[3], "lower")])
    coupled = random_contacts(rng, model, q0, 0, 2)
    sets = []
    for k in (3, 5, 2):        # unary contacts: the coupling graph stays that of the two binary ones
        cons = random_contacts(rng, model, q0, k, 0) + coupled
        sets.append(ConstraintSet.with_contacts(
            tail, np.array([c.body1 for c in cons]), np.array([c.body2 for c in cons]),
            np.array([c.position for c in cons]), np.array([c.frame for c in cons]), np.full(len(cons), 0.5)))
    sc = StructureCache(model)
    d0, d1 = models.Data(model).compute(q0), models.Data(model).compute(q1)
    op = MatrixFreeDelassus(model, q0, sets[0], data=d0, structures=sc)
    op.compiled_state()
    for i, cs in enumerate(sets[1:]):
        data, q = (d1, q1) if i % 2 == 0 else (d0, q0)
        fac = op.kernel_state()[1]
        new = MatrixFreeDelassus(model, q, cs, data=data, reuse=op, structures=sc)
        state = new.compiled_state()
        assert new.kernel_state()[1].Pd is fac.Pd and new.kernel_state()[1].Rv.shape == (cs.m,)
        fresh = MatrixFreeDelassus(model, q, cs, data=models.Data(model).compute(q), structures=sc)
        v = rng.normal(size=model.nv)
        a, b = np.empty(cs.m), np.empty(cs.m)
        state_j_apply(state, v, a)
        state_j_apply(fresh.compiled_state(), v, b)
        assert np.array_equal(a, b)
        assert state_max_eigenvalue(state, 15) == fresh.max_eigenvalue(15)
        g = rng.normal(size=cs.m)
        cones = ConeSet.with_contacts(cs.mu, ConeSet.from_blocks([("orthant", 1, 0.0)]))
        r1, r2 = ADMMSolver().solve(new, g, cones), ADMMSolver().solve(fresh, g, cones)
        assert r1.iterations == r2.iterations > 0 and np.array_equal(r1.lam, r2.lam)
        with pytest.raises(RuntimeError):
            op.solve(np.ones(op.m))          # the old operator is spent
        op = new


def test_refresh_at_a_new_configuration_matches_the_dense_oracle():
    """`refresh` (the simulator's path when the contact set did not change): the same
    constraint set object, its contact points moved in place (`refresh_contacts`), loop-closure
    and joint rows recomputed from the new placements; G and the damped solve then equal the
    dense oracle's at the new q, and no storage is reallocated."""
    rng = np.random.default_rng(21)
    model = random_forest(rng, 10, nroots=2, kinds=(REVOLUTE, PRISMATIC))
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    pl = lambda: (rng.normal(size=3) * 0.2, rot(rng))
    tail_cons = [LoopClosure(3, pl(), 8, pl(), "point"), LoopClosure("world", pl(), 6, pl(), "weld"),
                 JointLimit(model.joint_names[2], "lower")]
    tail = ConstraintSet(model, tail_cons)
    contacts = random_contacts(rng, model, q0, 4, 3)
    b1 = np.array([c.body1 for c in contacts]); b2 = np.array([c.body2 for c in contacts])
    frames0 = np.array([c.frame for c in contacts]); mu = np.full(len(contacts), 0.5)
    pos0 = np.array([c.position for c in contacts])
    cs = ConstraintSet.with_contacts(tail, b1, b2, pos0, frames0, mu)
    op = MatrixFreeDelassus(model, q0, cs, damping=1e-2)
    fac, ws = op.kernel_state()[1:]
    pos1 = pos0 + rng.normal(size=pos0.shape) * 0.05
    frames1 = np.array([rot(rng) for _ in contacts])
    cs.refresh_contacts(pos1, frames1)
    d1 = models.Data(model).compute(q1)
    assert op.refresh(d1) is op
    with pytest.raises(RuntimeError):
        op.solve(np.ones(op.m))                      # factors of the old q are stale
    op.update_damping(3e-3)
    assert op.kernel_state()[1][2] is fac[2] and op.kernel_state()[2] is ws
    moved = [Contact(int(a), int(b), p, R, 0.5) for a, b, p, R in zip(b1, b2, pos1, frames1)] + tail_cons
    J, M, X, G = oracle(model, q1, moved)
    assert rel(G_of(op), G) <= TOL
    b = rng.normal(size=op.m)
    assert rel(op.solve(b), X.solve(3e-3, b)) <= TOL


def test_compiled_state_on_another_data_reads_that_data():
    """A refreshed operator's compiled state on the simulator's other Data buffer is derived
    from its last state (`solvers.opstate.matrix_free_state_like`: the Data arrays swapped):
    it computes what the state of a fresh operator on that Data computes, bit for bit, and the
    state on the first Data is still the first one's."""
    from solvers.opstate import matrix_free_state, state_j_apply, state_max_eigenvalue
    rng = np.random.default_rng(5)
    model = random_forest(rng, 9, nroots=2)
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    contacts = random_contacts(rng, model, q0, 3, 3)
    cs = ConstraintSet(model, contacts + [LoopClosure(2, None, 6, None, "point")])
    d0, d1 = models.Data(model).compute(q0), models.Data(model).compute(q1)
    op = MatrixFreeDelassus(model, q0, cs, data=d0)
    s0 = op.compiled_state()
    op.refresh(d1)
    s1 = op.compiled_state()
    assert s1 is not s0 and op.compiled_state() is s1
    fresh = MatrixFreeDelassus(model, q1, cs, data=models.Data(model).compute(q1))
    ref = matrix_free_state(fresh.kernel_state())
    v = rng.normal(size=model.nv)
    a, b = np.empty(op.m), np.empty(op.m)
    state_j_apply(s1, v, a)
    state_j_apply(ref, v, b)
    assert np.array_equal(a, b)
    assert state_max_eigenvalue(s1, 15) == state_max_eigenvalue(ref, 15) == fresh.max_eigenvalue(15)
    op.refresh(d0)
    assert op.compiled_state() is s0
    assert state_max_eigenvalue(s0, 15) == MatrixFreeDelassus(model, q0, cs).max_eigenvalue(15)


@pytest.mark.parametrize("seed", range(3))
def test_contact_columns_equal_the_operators_products(seed):
    """`contact_columns_kernel` (a contact's three columns of G in one pass, for the Newton polish)
    gives, bit for bit, the columns of products with unit impulses, and the dense oracle's G:
    two free trees with revolute, prismatic, spherical and fixed joints, contacts with the ground
    and between links of one tree and of the two, joint-limit rows among the contacts' rows."""
    from solvers.delassus_kernels import contact_columns_kernel
    from solvers.opstate import operator_parts
    rng = np.random.default_rng(30 + seed)
    model = random_forest(rng, 16, nroots=2)
    q = model.random_configuration(rng)
    cons = random_contacts(rng, model, q, 5, 6)
    cons += [JointLimit(model.joint_names[1], "lower")]
    op = MatrixFreeDelassus(model, q, cons)
    m = op.m
    _, geo, _, _, _ = operator_parts(op, m)
    rows = geo.rows
    n, nv = model.nbodies, model.nv
    F, A, Q, hot = np.empty((n, 6, 3)), np.empty((n, 6, 3)), np.empty((nv, 3)), np.empty(n, np.bool_)
    G = oracle(model, q, cons)[3]
    assert rows.crow.shape[0] == len(cons) - 1 and rows.gen.shape[0] == m - 3 * (len(cons) - 1) > 0
    for k, r0 in enumerate(rows.crow):
        out = np.full((3, m), np.nan)
        contact_columns_kernel(geo.jint, geo.S, geo.U, geo.Dinv, rows, k, F, Q, A, hot, out)
        for j in range(3):
            e = np.zeros(m)
            e[r0 + j] = 1.0
            assert np.array_equal(out[j], op.matvec(e))
        np.testing.assert_allclose(out, G[:, r0:r0 + 3].T, rtol=0, atol=1e-10 * np.abs(G).max())

"""The semismooth Newton polish of the contact law (`solvers.newton_polish`), against dense
linear algebra, finite differences and an independent KKT check on saved falling, lying and
creeping G1 problems; and the ADMM with it."""
import numpy as np
import pytest

from solvers.admm import ADMMSettings, ADMMSolver
from solvers.cones import CONE, ORTHANT, ConeSet
from solvers.newton_polish import _ssn_block, lu_apply, lu_factor, ssn_kernel
from solvers.opstate import operator_parts

from test_admm import DenseOp, kkt_violation
from test_admm_convergence import dense_problem, falling_problem, random_contact_problem


def test_lu_factor_and_apply_equal_numpy_solve():
    """Partial pivoting (a zero leading pivot included) against numpy, on sizes that fill the
    panels of 4 or not; singular matrices are refused, with the zero pivot in the first panel or
    in a later one."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 8, 40, 43):
        A = rng.normal(size=(n, n))
        A[0, 0] = 0.0 if n > 1 else 2.0
        b = rng.normal(size=n)
        F, piv, x = A.copy(), np.empty(n, np.int64), b.copy()
        assert lu_factor(F, piv)
        lu_apply(F, piv, x)
        assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
    assert not lu_factor(np.ones((3, 3)), np.empty(3, np.int64))
    S = np.triu(rng.normal(size=(9, 9)))
    S[5, 5] = 0.0                               # singular: the zero pivot comes in the second panel
    assert not lu_factor(S, np.empty(9, np.int64))


@pytest.mark.parametrize("name", ["a", "b"])
def test_admm_with_the_newton_polish_on_the_falling_humanoid(name):
    """The default solver (Newton polish on) meets the same law as the ADMM alone, in fewer ADMM
    iterations (measured: alone 71 and 65 with Anderson acceleration; with the semismooth Newton
    polish 1 and 1, 12 and 9 Newton steps; with the former active-set Newton 1 and 10)."""
    G, g, cones, x0, L, blocks = falling_problem(name)
    r = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    alone = ADMMSolver(ADMMSettings(newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and alone.converged
    assert r.newton_steps > 0 and r.iterations <= 40 < alone.iterations
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6
    assert np.abs(r.lam - cones.project(r.lam)).max() <= 1e-15


def test_newton_from_a_warm_start_that_lost_to_zero():
    """On saved problem a (an impact while falling) the warm start's largest velocity error is
    0.44 m/s against 0.0097 m/s at λ = 0, so the ADMM starts from zero (warm_started False), but
    the warm start's contact modes are right: the Newton polish from it solves the problem at
    once (1 iteration reported; the law within the solver's tolerance by the independent KKT
    check, 2.3e-8 measured), where the ADMM from zero needs 71 iterations."""
    G, g, cones, x0, L, blocks = falling_problem("a")
    rw = ADMMSolver(ADMMSettings(max_iter=1, polish=False)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert not rw.warm_started        # λ = 0 beat the warm start
    r = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and r.iterations == 1 and r.newton_steps > 0 and not r.warm_started
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6
    alone = ADMMSolver(ADMMSettings(newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert alone.converged and alone.iterations > 50
    cold = ADMMSolver().solve(DenseOp(G), g, cones, max_eigenvalue=L)      # no warm start: no modes to start from
    assert cold.converged and cold.iterations >= 10


def test_a_sliding_spinning_box_is_solved_by_the_newton_polish():
    """A box sliding and spinning on the floor: its four corners slide in directions that turn
    every step, so the previous step's impulses never satisfy the law and the ADMM alone needs
    about 7 iterations a step. The Newton polish solves nearly every step from the warm start
    (within the ADMM's 1e-6 m/s, where it stops; 7e-8 measured): every corner slides on its
    cone, the box neither sinks nor lifts, its kinetic energy only falls. (The
    velocities are not compared with a tight ADMM: with four corners the normal impulses are not
    unique, nor, through the corners' different slip directions, the friction wrench.)"""
    import simstep
    from test_simulator import box_world
    mu = 0.3
    sim = simstep.Simulator(box_world(mu, v0=(1.0, 0.3, 0, 0, 0, 6.0)), dt=1e-3)
    sim.run(2)
    newton, energy = 0, np.inf
    for k in range(100):
        st = sim.step()
        assert st.converged
        if st.newton_steps > 0 and st.iterations <= 1:
            newton += 1
            assert st.velocity_residual <= 1e-6
        lam = sim.contacts.impulse
        assert len(lam) == 4 and np.all(lam[:, 2] > 0)
        assert np.allclose(np.hypot(lam[:, 0], lam[:, 1]), mu * lam[:, 2], rtol=1e-6)
        lin, ang = sim.body_velocity("box")
        assert abs(lin[2]) < 1e-6 and abs(ang[0]) < 1e-6 and abs(ang[1]) < 1e-6
        e = 0.5 * lin @ lin + 0.5 * (2 * 0.1 ** 2 / 3) * ang[2] ** 2      # unit mass, 0.2 m cube
        assert e < energy
        energy = e
    assert newton >= 90


def test_a_slipping_warm_start_goes_to_newton_without_the_polish():
    """The polish holds sliding impulses fixed, so from a warm start whose sliding contacts slip
    it cannot succeed: the solver skips it and goes to the Newton polish (`boundary_slip`, the
    largest slip of the contacts on their cone's boundary, against numpy). Checked on a step of
    the sliding, spinning box: no polish solve, the Newton polish solves the step (1e-6 m/s)."""
    import simstep
    from solvers.admm import boundary_slip
    from test_simulator import box_world
    rng = np.random.default_rng(3)
    cones = ConeSet.from_blocks([(CONE, 3, 0.5)] * 6)
    kind, start, size, param = cones.arrays()
    lam = cones.project(rng.normal(size=18) + np.tile([0, 0, 0.5], 6))
    sigma = rng.normal(size=18)
    on_edge = [b for b in range(6) if lam[3 * b + 2] > 0 and
               np.hypot(*lam[3 * b:3 * b + 2]) >= 0.5 * lam[3 * b + 2] * (1 - 1e-9)]
    assert 0 < len(on_edge) < 6
    assert boundary_slip(kind, start, param, lam, sigma) == max(np.hypot(*sigma[3 * b:3 * b + 2]) for b in on_edge)
    sim = simstep.Simulator(box_world(0.3, v0=(1.0, 0.3, 0, 0, 0, 6.0)), dt=1e-3, steady_steps=False)  # admm.solve
    sim.run(5)
    problems = []
    solve = sim.admm.solve
    sim.admm.solve = lambda p, *a, **k: problems.append(p) or solve(p, *a, **k)
    sim.step()
    p = problems[0]
    x = p.cones.project(p.x0)
    kind, start, size, param = p.cones.arrays()
    assert boundary_slip(kind, start, param, x, p.op.matvec(x) + p.g) > 1e-3      # the corners slip
    r = ADMMSolver().solve(p)
    assert r.warm_started and r.polish_solves == 0 and r.newton_steps > 0 and r.iterations == 1
    assert r.converged and r.velocity_residual <= 1e-6


@pytest.mark.parametrize("bad", [dict(newton_rows=-1), dict(newton_steps=0), dict(newton_rows=2.5),
                                 dict(newton_warm=0.5), dict(newton_warm="x")])
def test_newton_settings_are_checked(bad):
    import simstep
    from test_simulator import box_world
    with pytest.raises((ValueError, TypeError), match="newton"):
        ADMMSettings(**bad).check()
    with pytest.raises((ValueError, TypeError), match="newton"):
        simstep.Simulator(box_world(), **bad)


# --- the semismooth Newton polish (`ssn_kernel`), the one the ADMM uses ---------------------------

def _ssn(G, g, cones, lam0, steps=30, Rc=None, tol=1e-6):
    m = g.size
    dense, geo, fac, ws, dn = operator_parts(DenseOp(G), m)
    kind, start, size, param = cones.arrays()
    lam = np.empty(m)
    Gc = G if Rc is None else G + np.diag(Rc)
    k, ok, ncols = ssn_kernel(dense, geo, ws, dn, kind, start, size, param, g, np.zeros(0) if Rc is None else Rc,
                              Rc is not None, lam0, Gc @ lam0 + g, steps, tol, np.diag(G).copy(), np.empty((96, m)),
                              np.full(m, -1, np.int64), 0, lam)
    return lam, k, ok, ncols


def test_ssn_block_jacobian_is_the_derivative_of_the_smoothed_projection():
    """`_ssn_block`'s D against central differences of its P (ε > 0), on cone points inside,
    outside, behind and near the cone's kinks, and on an orthant row; with ε → 0 its P tends to
    the exact point (ε = 0: the Alart–Curnier projection, exactly 0 behind the cone)."""
    rng = np.random.default_rng(2)
    P, D, Pp, Pm = np.empty(3), np.empty((3, 3)), np.empty(3), np.empty(3)
    Dx = np.empty((3, 3))
    for eps in (1e-1, 1e-3):
        for _ in range(30):
            x = rng.normal(size=3)
            if _ % 3 == 0:
                x[:2] *= 0.5 * abs(x[2]) / np.hypot(*x[:2])       # on the cone's boundary (μ = 0.5)
            _ssn_block(CONE, 0.5, 3, x, eps, P, D)
            fd = np.empty((3, 3))
            for j in range(3):
                e = np.zeros(3)
                e[j] = 1e-7
                _ssn_block(CONE, 0.5, 3, x + e, eps, Pp, Dx)
                _ssn_block(CONE, 0.5, 3, x - e, eps, Pm, Dx)
                fd[:, j] = (Pp - Pm) / 2e-7
            assert np.abs(D - fd).max() <= 1e-5 * max(1.0, np.abs(fd).max())
        x1 = np.array([0.3])
        _ssn_block(ORTHANT, 0.0, 1, x1, eps, P, D)
        _ssn_block(ORTHANT, 0.0, 1, x1 + 1e-7, eps, Pp, Dx)
        _ssn_block(ORTHANT, 0.0, 1, x1 - 1e-7, eps, Pm, Dx)
        assert abs(D[0, 0] - (Pp[0] - Pm[0]) / 2e-7) < 1e-6
    for x, exact in (([0.1, 0.0, 1.0], [0.1, 0.0, 1.0]), ([2.0, 0.0, 1.0], [0.5, 0.0, 1.0]),
                     ([0.3, 0.2, -1.0], [0.0, 0.0, 0.0])):
        x = np.array(x)
        _ssn_block(CONE, 0.5, 3, x, 0.0, P, D)
        assert np.array_equal(P, exact)
        _ssn_block(CONE, 0.5, 3, x, 1e-9, P, D)
        assert np.abs(P - exact).max() < 1e-8


@pytest.mark.parametrize("stem", ["g1_back_a", "g1_back_b", "g1_lying_creep", "g1_falling_a", "g1_falling_b"])
def test_ssn_solves_the_creeping_and_falling_humanoids_from_the_admm_iterates(stem):
    """On the saved creeping steps (G1 on its back, G1 lying: contacts sliding at 1e-6 to 1e-4
    m/s next to sticking ones on a redundant set, where the active-set Newton cycles) and the
    falling ones: from the warm start and the ADMM's iterates after 10, 20 and 40 iterations the
    semismooth Newton ends within 1e-6 m/s of the law (measured 2 to 17 steps), the independent
    KKT check agrees, the impulses are in their cones, and the working set's columns number
    about 40 (35 to 41) of the 57–112 rows."""
    G, g, cones, x0, L, blocks = dense_problem(stem)
    kind, start, size, param = cones.arrays()
    for K in (0, 10, 20, 40):
        if K == 0:
            lam0 = cones.project(x0)
        else:
            r = ADMMSolver(ADMMSettings(max_iter=K, newton_rows=0, polish=False)).solve(DenseOp(G), g, cones, x0=x0,
                                                                                        max_eigenvalue=L)
            if r.converged:
                continue
            lam0 = r.lam
        lam, k, ok, ncols = _ssn(G, g, cones, lam0)
        assert ok and k <= 25, (K, k)
        assert kkt_violation(G, g, blocks, lam) < 2e-6
        assert np.abs(lam - cones.project(lam)).max() <= 1e-15
        assert ncols <= 45


def test_ssn_on_random_redundant_problems():
    """Random redundant problems (18 rows of rank 14, approaching normals), from the ADMM's iterate
    after 30 iterations and from λ = 0: whenever it reports success the law holds (dense KKT
    check), and it succeeds on most (measured 20 of 20 from the iterates and 20 of 20 from zero)."""
    rng = np.random.default_rng(8)
    near = cold = 0
    for _ in range(20):
        G, g = random_contact_problem(rng, n_contacts=6, nv=14)
        g[2::3] -= 0.05
        cones = ConeSet.from_blocks([("cone", 3, 0.5)] * 6)
        blocks = [("cone", slice(3 * i, 3 * i + 3), 0.5) for i in range(6)]
        early = ADMMSolver(ADMMSettings(max_iter=30, newton_rows=0)).solve(DenseOp(G), g, cones)
        for lam0 in (early.lam, np.zeros(g.size)):
            lam, k, ok, _ = _ssn(G, g, cones, lam0, steps=40)
            if ok:
                assert kkt_violation(G, g, blocks, lam) < 2e-6
            near += ok and lam0 is early.lam
            cold += ok and lam0 is not early.lam
    assert near >= 18 and cold >= 15


def test_ssn_with_compliance_and_the_convex_relaxation():
    """With a compliance R_c the semismooth Newton solves the law of G + R_c (dense KKT check on
    G + R_c), not that of G; the ADMM does not try it on the convex relaxation (ncp=False), whose
    sliding law differs."""
    rng = np.random.default_rng(4)
    G, g = random_contact_problem(rng, n_contacts=5, nv=20)
    g[2::3] -= 0.05
    Rc = np.full(g.size, 1e-3)
    cones = ConeSet.from_blocks([("cone", 3, 0.5)] * 5)
    blocks = [("cone", slice(3 * i, 3 * i + 3), 0.5) for i in range(5)]
    early = ADMMSolver(ADMMSettings(max_iter=30, newton_rows=0)).solve(DenseOp(G), g, cones, compliance=Rc)
    lam, k, ok, _ = _ssn(G, g, cones, early.lam, steps=40, Rc=Rc)
    assert ok and kkt_violation(G + np.diag(Rc), g, blocks, lam) < 2e-6
    assert kkt_violation(G, g, blocks, lam) > 1e-5          # R_c is really in the law it solved
    r = ADMMSolver(ADMMSettings(ncp=False)).solve(DenseOp(G), g, cones)    # not tried on the convex relaxation
    assert r.converged and r.newton_steps == 0

"""Lemke's method and the mixed LCP (solvers.lcp), the polyhedral contact model of paper 004
(solvers.polyhedral) and `Simulator(world, contact_model="lcp")`."""
import itertools

import numpy as np
import pytest

from solvers.lcp import LCPRayTermination, lemke, solve_mixed_lcp


# ------------------------------------------------------------------ oracle
def enumerate_lcp(M, q, tol=1e-9):
    """The distinct solutions of LCP(M, q) over the 2ⁿ complementary bases (dense solves)."""
    n = q.shape[0]
    out = []
    for k in range(n + 1):
        for a in itertools.combinations(range(n), k):
            a = list(a)
            z = np.zeros(n)
            if a:
                Ma = M[np.ix_(a, a)]
                if abs(np.linalg.det(Ma)) < 1e-12:
                    continue
                z[a] = np.linalg.solve(Ma, -q[a])
            w = M @ z + q
            if z.min() >= -tol and w.min() >= -tol and not any(np.allclose(z, o, atol=1e-9) for o in out):
                out.append(z)
    return out


def check_solution(M, q, z, w, tol=1e-9):
    assert np.allclose(w, M @ z + q, atol=tol)
    scale = max(1.0, np.abs(q).max())
    assert z.min() >= -tol * scale and w.min() >= -tol * scale
    assert abs(z @ w) <= tol * scale * max(1.0, np.abs(z).max())


# ------------------------------------------------------------------ literature
def test_textbook_2x2():
    """Murty, "Linear Complementarity, Linear and Nonlinear Programming" (1988), Example 1.1
    form: M = [[2, 1], [1, 2]], q = (−5, −6): z = (4/3, 7/3), w = 0."""
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0])
    r = lemke(M, q)
    assert np.allclose(r.z, [4 / 3, 7 / 3], atol=1e-12) and np.allclose(r.w, 0, atol=1e-12)


def test_murty_exponential_matrix():
    """Murty's lower-triangular P-matrix (1 on the diagonal, 2 below) with q = −e, on which
    pivoting methods need exponentially many pivots (Murty 1978: here 2ⁿ): the unique solution
    is z = (1, 0, …, 0) (closed form: w₁ = z₁ − 1, wᵢ = 2 z₁ + … − 1 = 1 + … > 0)."""
    for n in (3, 6, 9):
        M = np.eye(n) + 2 * np.tril(np.ones((n, n)), -1)
        r = lemke(M, -np.ones(n))
        z = np.zeros(n)
        z[0] = 1.0
        assert np.allclose(r.z, z, atol=1e-12) and r.pivots == 2 ** n
        check_solution(M, -np.ones(n), r.z, r.w)


def test_degenerate_cyclic():
    """The cyclic P-matrix M = [[1, 2, 0], [0, 1, 2], [2, 0, 1]] (Murty 1988, Sec. 2) with
    q = −e: every ratio test of the first pivots ties (all qᵢ equal) and the basic solutions
    are degenerate; the unique solution is z = (1/3, 1/3, 1/3), w = 0."""
    M = np.array([[1.0, 2, 0], [0, 1, 2], [2, 0, 1]])
    r = lemke(M, -np.ones(3))
    assert np.allclose(r.z, 1 / 3, atol=1e-12) and np.allclose(r.w, 0, atol=1e-12)
    # degenerate in q as well: zeros and ties
    for q in (np.array([-1.0, 0.0, -1.0]), np.array([0.0, -1.0, 0.0]), np.array([-2.0, -2.0, 0.0])):
        r = lemke(M, q)
        sols = enumerate_lcp(M, q)
        assert len(sols) == 1
        assert np.allclose(r.z, sols[0], atol=1e-10)


def test_degenerate_psd_ties():
    """A PSD matrix with repeated columns (rank 2 of 4) and a q with ties: the solution set is
    not a point but w is unique (monotone LCP); ties in every ratio test."""
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    M = B @ B.T
    q = np.array([-1.0, -1.0, -1.0, -2.0])
    r = lemke(M, q)
    check_solution(M, q, r.z, r.w)
    sols = enumerate_lcp(M, q)
    assert sols and all(np.allclose(r.w, M @ s + q, atol=1e-9) for s in sols)


def test_trivial_and_empty():
    r = lemke(np.eye(2), [1.0, 0.0])
    assert r.pivots == 0 and np.array_equal(r.z, [0, 0])
    r = lemke(np.zeros((0, 0)), np.zeros(0))
    assert r.z.shape == (0,)


def test_ray_termination():
    """w = −z − 1 ≥ 0 has no solution with z ≥ 0: Lemke's method ends on a ray."""
    with pytest.raises(LCPRayTermination, match="secondary ray"):
        lemke([[-1.0]], [-1.0])
    # infeasible 2×2: w₁ = −z₁ − z₂ − 1
    with pytest.raises(LCPRayTermination):
        lemke([[-1.0, -1.0], [0.0, 1.0]], [-1.0, 1.0])


@pytest.mark.parametrize("M, q, match", [
    (np.ones((2, 3)), np.ones(2), "square"),
    (np.ones(3), np.ones(3), "square"),
    (np.eye(2), np.ones(3), "shape"),
    (np.eye(2), np.ones((2, 1)), "shape"),
    (np.array([[1.0, np.nan], [0, 1]]), np.ones(2), "M has non-finite"),
    (np.eye(2), np.array([np.inf, 1.0]), "q has non-finite"),
])
def test_bad_input(M, q, match):
    with pytest.raises(ValueError, match=match):
        lemke(M, q)
    with pytest.raises(ValueError, match=match):
        solve_mixed_lcp(M, q, 0)


def test_bad_mixed_arguments():
    with pytest.raises(ValueError, match="n_free"):
        solve_mixed_lcp(np.eye(2), np.ones(2), 3)
    with pytest.raises(ValueError, match="max_pivots"):
        lemke(np.eye(2), -np.ones(2), max_pivots=0)


# ------------------------------------------------------------------ random vs enumeration
def _p_matrix(rng, n):
    """Positive definite but not symmetric (a P-matrix): B Bᵀ + 0.1 I + S − Sᵀ."""
    B, S = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return B @ B.T + 0.1 * np.eye(n) + S - S.T


@pytest.mark.parametrize("n", [2, 4, 7])
def test_random_p_matrix_vs_enumeration(n):
    rng = np.random.default_rng(n)
    for _ in range(15):
        M, q = _p_matrix(rng, n), rng.standard_normal(n) * 3
        sols = enumerate_lcp(M, q)
        assert len(sols) == 1           # P-matrix: exactly one solution
        r = lemke(M, q)
        check_solution(M, q, r.z, r.w)
        assert np.allclose(r.z, sols[0], atol=1e-8)


@pytest.mark.parametrize("n", [3, 6])
def test_random_psd_vs_enumeration(n):
    """Singular symmetric PSD matrices (rank n − 2) with a feasible q: w is unique, z solves."""
    rng = np.random.default_rng(10 + n)
    for _ in range(15):
        B = rng.standard_normal((n, n - 2))
        M = B @ B.T
        x0 = np.maximum(rng.standard_normal(n), 0)
        q = -M @ x0 + np.maximum(rng.standard_normal(n), 0)       # z = x0 is feasible
        r = lemke(M, q)
        check_solution(M, q, r.z, r.w, tol=1e-8)
        sols = enumerate_lcp(M, q)
        assert sols and np.allclose(r.w, M @ sols[0] + q, atol=1e-7)


def test_mixed_lcp_vs_enumeration():
    """Mixed LCP with a rank-deficient, consistent equality block (repeated rows): the same
    solution as the LCP obtained by eliminating the independent rows by hand."""
    rng = np.random.default_rng(3)
    for _ in range(10):
        J = rng.standard_normal((7, 9))
        J[2] = J[0]                               # rows 0 and 2 of the equality block repeat
        G = J @ J.T                               # a Delassus matrix: free rows 0..2, then 4
        g = rng.standard_normal(7)
        g[2] = g[0]
        r = solve_mixed_lcp(G, g, 3)
        assert r.rank == 2
        assert np.abs(r.w[:3]).max() < 1e-9
        check_solution(G[3:, 3:], g[3:] + G[3:, :3] @ r.z[:3], r.z[3:], r.w[3:])
        keep = [0, 1]
        Gff = G[np.ix_(keep, keep)]
        S = G[3:, 3:] - G[3:, keep] @ np.linalg.solve(Gff, G[keep, 3:])
        s = g[3:] - G[3:, keep] @ np.linalg.solve(Gff, g[keep])
        sols = enumerate_lcp(S, s)
        assert len(sols) == 1 and np.allclose(r.z[3:], sols[0], atol=1e-8)
    # a non-symmetric equality block (the LU path) and a symmetric indefinite one
    for k in range(6):
        A = _p_matrix(rng, 6) if k % 2 else np.diag([1.0, -1.0, 2.0, 1.0, 1.0, 1.0]) + 0.1 * np.ones((6, 6))
        g = rng.standard_normal(6)
        r = solve_mixed_lcp(A, g, 3)
        assert r.rank == 3 and np.abs(r.w[:3]).max() < 1e-9
        check_solution(A[3:, 3:], g[3:] + A[3:, :3] @ r.z[:3], r.z[3:], r.w[3:])
    with pytest.raises(ValueError, match="inconsistent"):
        solve_mixed_lcp(np.array([[1.0, 1, 0], [1, 1, 0], [0, 0, 1]]), np.array([1.0, 2.0, -1.0]), 2)


# ------------------------------------------------------------------ the polyhedral OS LCP (paper 004)
import simstep  # noqa: E402
from solvers import DenseDelassus, MatrixFreeDelassus  # noqa: E402
from solvers.cones import ConeSet  # noqa: E402
from solvers.polyhedral import build_os_lcp, delassus_matrix, friction_directions, solve_os_lcp  # noqa: E402


def test_friction_directions_bad_input():
    for bad in (3, 5, 0, 4.0, True, "4"):
        with pytest.raises(ValueError, match="n_f"):
            friction_directions(bad)
    d = friction_directions(6)
    assert np.allclose(np.linalg.norm(d, axis=1), 1) and np.allclose(d[:3], -d[3:])


def _two_box_problem():
    """Two boxes, one on the ground and one on the other, plus a loop closure to the world."""
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=0.5)
    wb.add_box("a", half_extents=(.1, .1, .1), mass=1.0, position=(0, 0, .1))
    wb.add_box("b", half_extents=(.1, .1, .1), mass=2.0, position=(0.03, 0, .3), quaternion=(0, 0, np.sin(0.2), np.cos(0.2)))
    w = wb.build()
    q = w.q0
    rng = np.random.default_rng(1)
    cons = [simstep.Contact("a", "world", (x, y, 0.0), np.eye(3), 0.5) for x, y in ((.1, .1), (-.1, .1), (.1, -.1))]
    cons += [simstep.Contact("b", "a", (0.0, 0.05, 0.2), np.eye(3), 0.3),
             simstep.LoopClosure("b", ((0, 0, .1), np.eye(3)), "world", ((0.03, 0, .4), np.eye(3)))]
    cones = ConeSet.with_contacts(np.array([.5, .5, .5, .3]), ConeSet.from_blocks([("free", 3, 0.0)]))
    return w.model, q, cons, cones, rng


def test_delassus_matrix_matches_dense():
    model, q, cons, cones, rng = _two_box_problem()
    G = delassus_matrix(MatrixFreeDelassus(model, q, cons))
    D = DenseDelassus(model, q, cons).matrix()
    assert np.allclose(G, D, atol=1e-12 * np.abs(D).max())


def test_os_lcp_solution_satisfies_polyhedral_law():
    """Eq. 53 solved for random velocities: the bilateral rows are met, the normal velocity is
    ≥ 0 and complementary to F_n, the friction is in the polyhedron and opposes sliding
    (Eq. 10), all checked on λ and v⁺ = G λ + u in the contact frames."""
    model, q, cons, cones, rng = _two_box_problem()
    G = DenseDelassus(model, q, cons).matrix()
    d = friction_directions(4)
    for _ in range(20):
        u = rng.standard_normal(G.shape[0])
        s = solve_os_lcp(G, u, cones.arrays(), 4)
        assert s.lcp_size == 3 + 4 * 6
        v = G @ s.lam + u
        assert np.abs(v[12:]).max() < 1e-9                      # loop closure rows
        for i, mu in enumerate((.5, .5, .5, .3)):
            lt, ln = s.lam[3 * i:3 * i + 2], s.lam[3 * i + 2]
            vt, vn = v[3 * i:3 * i + 2], v[3 * i + 2]
            assert ln >= -1e-12 and vn >= -1e-9 and abs(ln * vn) < 1e-9
            # in the polyhedron: the support along each direction's normal is at most μ F_n
            assert np.abs(lt).sum() <= mu * ln + 1e-9
            if np.linalg.norm(vt) > 1e-7:                     # sliding: on the boundary, maximal dissipation
                assert abs(np.abs(lt).sum() - mu * ln) < 1e-9
                assert lt @ vt <= -mu * ln * np.abs(vt).max() + 1e-9
        # the LCP matrix's structure: Ê, Ē blocks
        L = build_os_lcp(G, u, *cones.arrays(), n_f=4)
        assert L.n_free == 3 and L.M.shape == (27, 27)
        assert np.array_equal(L.M[-4:, -4:], np.zeros((4, 4)))


def test_os_lcp_rejects_joint_friction_and_bad_active():
    G = np.eye(4)
    cones = ConeSet.with_contacts(np.array([.5]), ConeSet.from_blocks([("box", 1, 1.0)]))
    with pytest.raises(ValueError, match="joint dry friction"):
        solve_os_lcp(G, np.zeros(4), cones.arrays())
    with pytest.raises(ValueError, match="active"):
        solve_os_lcp(np.eye(3), np.zeros(3), ConeSet.contacts([.5]).arrays(), active=[True, False])


def _box_on_incline(alpha, psi, n_f=4, steps=300, dt=1e-3):
    """A box on the ground with gravity tilted by alpha towards the azimuth psi (the contact
    frames' t1 is world x): an incline of angle alpha whose downhill direction makes the angle
    psi with the friction direction t1."""
    g = 9.81 * np.array([np.sin(alpha) * np.cos(psi), np.sin(alpha) * np.sin(psi), -np.cos(alpha)])
    wb = simstep.WorldBuilder(gravity=g)
    wb.add_ground(friction=0.5)
    wb.add_box("b", half_extents=(.1, .1, .1), mass=1.0, position=(0, 0, .1), friction=0.5)
    s = simstep.Simulator(wb.build(), dt=dt, contact_model="lcp", friction_directions=n_f)
    s.step()
    assert np.allclose(s.contacts.frame[:, :, 0], [1, 0, 0])
    s.run(steps - 1)
    return s, np.linalg.norm(s.body_velocity("b")[0]) / (steps * dt)


@pytest.mark.parametrize("n_f, psi", [(4, 0.0), (4, np.pi / 4), (4, np.pi / 8), (8, np.pi / 8)])
def test_box_on_incline_polyhedron_limit(n_f, psi):
    """The polyhedron holds the box up to the support h(ψ) μ in the downhill direction ψ:
    h = 1/(|cos ψ| + |sin ψ|) for n_f = 4 (1 along t1, 1/√2 at 45°), cos(π/8) for n_f = 8 at
    22.5° (half-way between two directions). Below (0.95 h μ) it sticks, above (1.05 h μ) it
    slides; along a direction or half-way between two the sliding acceleration is
    g (sin α − h μ cos α) (maximal dissipation on the polyhedron's boundary)."""
    mu = 0.5
    h = 1 / (abs(np.cos(psi)) + abs(np.sin(psi))) if n_f == 4 else np.cos(np.pi / 8)
    _, a = _box_on_incline(np.arctan(0.95 * h * mu), psi, n_f)
    assert a < 1e-9
    alpha = np.arctan(1.05 * h * mu)
    s, a = _box_on_incline(alpha, psi, n_f)
    expect = 9.81 * (np.sin(alpha) - h * mu * np.cos(alpha))
    if psi in (0.0, np.pi / 4) or n_f == 8:
        assert a == pytest.approx(expect, rel=1e-6)
    else:
        assert a > 0.5 * expect


def test_simulator_lcp_arguments():
    wb = simstep.WorldBuilder()
    wb.add_ground()
    w = wb.build()
    with pytest.raises(ValueError, match="contact_model"):
        simstep.Simulator(w, contact_model="lcpp")
    with pytest.raises(ValueError, match="needs contact_model='lcp'"):
        simstep.Simulator(w, friction_directions=8)
    with pytest.raises(ValueError, match="n_f"):
        simstep.Simulator(w, contact_model="lcp", friction_directions=5)


def _pendulum_heights(formulation, dt, duration=1.0, n=3):
    import scenes
    w = scenes.pendulum_benchmark(n, formulation)
    s = simstep.Simulator(w, dt=dt, contact_model="lcp", erp=1.0)
    steps = int(round(duration / dt))
    z = np.empty(steps)
    impacts = 0
    for i in range(steps):
        s.step()
        z[i] = s.body_pose(w.last_link)[0][2]
        impacts += s.lcp.last.impacts > 0
    return z, impacts


@pytest.mark.slow
def test_pendulum_os_and_nmc_os_agree():
    """Paper 004 Sec. 8: the OS (minimal coordinates, contact rows only) and NMC/OS (free
    spheres, hinges as bilateral rows of the mixed LCP) formulations of the 3-link pendulum
    agree on the last link's height over 1 s, through its floor impact (a few cm in the paper's
    Fig. 6 at dt = 1e-4; here well under 1 cm), and the difference shrinks with dt (first order:
    about halved when dt is halved)."""
    dev = {}
    for dt in (2e-4, 1e-4):
        zm, im = _pendulum_heights("minimal", dt)
        zx, ix = _pendulum_heights("maximal", dt)
        assert im >= 1 and ix >= 1                    # the floor impact happened in both
        assert zm.min() < 2.0 + 1e-3                  # the last sphere (radius 2 m) reached the floor
        dev[dt] = np.abs(zm - zx).max()
    assert dev[1e-4] < 0.01
    assert dev[1e-4] < 0.7 * dev[2e-4]


# ------------------------------------------------------------------ impacts (paper 004 Sec. 7)
def test_impact_impulses_closed_form():
    """One particle of mass m against the ground (G = I/m): compression stops it (λ_c = m v),
    decompression adds ε λ_c: the velocity after is −ε v⁻; with a tangential velocity below the
    friction limit the tangential part is stopped as well (sticking impact)."""
    from solvers.polyhedral import impact_impulses
    m, eps = 2.0, 0.7
    G = np.eye(3) / m
    blocks = ConeSet.contacts([0.5]).arrays()
    u = np.array([0.3, 0.0, -4.0])
    r = impact_impulses(G, u, blocks, np.array([eps]), np.array([True]))
    assert np.allclose(r.compression, [-m * 0.3, 0, m * 4.0])
    assert np.allclose(u + G @ r.lam, [0, 0, eps * 4.0])
    r = impact_impulses(G, u, blocks, np.array([eps]), np.array([False]))
    assert np.array_equal(r.lam, np.zeros(3))


def test_ball_bounces_to_eps_squared():
    """A ball dropped from h = 1 m onto the ground, ε = 0.7: its first rebound apex is ε² h
    (within the O(ε v dt) of the impact detected at the step's start)."""
    dt, r, h, eps = 1e-4, 0.1, 1.0, 0.7
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=0.5, restitution=eps)
    wb.add_sphere("s", radius=r, mass=1.0, position=(0, 0, h + r), restitution=eps)
    s = simstep.Simulator(wb.build(), dt=dt, contact_model="lcp")
    z, impacts = [], 0
    for _ in range(int(0.8 / dt)):
        s.step()
        z.append(s.body_pose("s")[0][2] - r)
        impacts += s.lcp.last.impacts
    z = np.array(z)
    assert impacts == 1
    lo = np.argmin(z)
    apex = z[lo:].max()
    v = np.sqrt(2 * 9.81 * h)
    assert abs(apex - eps ** 2 * h) < 1.5 * eps * v * dt
    assert z[lo:].argmax() < z[lo:].size - 1          # the apex was passed (not cut off by the run)


def test_simultaneous_impacts_box_falls_flat():
    """A box falling flat hits the ground at its four corners at once: one compression and one
    decompression LCP over the four contacts (24 unknowns), the box leaves with ε v⁻ (minus the
    step's gravity) and no rotation."""
    eps, dt = 0.5, 1e-3
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=0.5, restitution=eps)
    wb.add_box("b", half_extents=(.2, .1, .05), mass=1.0, position=(0, 0, 0.55), restitution=eps)
    s = simstep.Simulator(wb.build(), dt=dt, contact_model="lcp")
    for _ in range(600):
        v_pre = s.body_velocity("b")[0][2]
        s.step()
        if s.lcp.last.impacts:
            break
    info = s.lcp.last
    assert info.impacts == 4 and info.impact_lcp_size == 24
    lin, ang = s.body_velocity("b")
    assert lin[2] == pytest.approx(-eps * v_pre - 9.81 * dt, rel=1e-9)
    assert np.abs(ang).max() < 1e-9 and np.abs(lin[:2]).max() < 1e-9
    s.run(50)
    assert s.lcp.last.impacts == 0 and s.body_velocity("b")[0][2] > 0     # in flight again

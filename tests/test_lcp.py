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
    with pytest.raises(ValueError, match="inconsistent"):
        solve_mixed_lcp(np.array([[1.0, 1, 0], [1, 1, 0], [0, 0, 1]]), np.array([1.0, 2.0, -1.0]), 2)

"""ADMM and PGS on explicit Delassus matrices: KKT conditions checked with plain numpy,
closed-form impulses for a box resting and sliding on the ground, agreement of the solvers."""
import numpy as np
import pytest

import models
from models import FREE
from solvers.admm import ADMMSettings, ADMMSolver, lanczos_max_eigenvalue
from solvers.cones import ConeSet
from solvers.pgs import PGSSolver


class DenseOp:
    """Minimal explicit operator for these tests: G given as a matrix."""

    def __init__(self, G):
        self.G = np.asarray(G, float)
        self.d = None

    def matvec(self, x):
        return self.G @ x

    def update_damping(self, d):
        self.d = np.broadcast_to(d, (self.G.shape[0],))
        self.c = np.linalg.cholesky(self.G + np.diag(self.d))

    def solve(self, b):
        return np.linalg.solve(self.c.T, np.linalg.solve(self.c, b))

    def max_eigenvalue(self):
        return np.linalg.eigvalsh(self.G).max()


def kkt_violation(G, g, blocks, lam, ncp=True):
    """Independent check of λ ∈ K, σ ∈ K*, λ ⟂ σ with σ = G λ + g + s(σ) (numpy only)."""
    sigma = G @ lam + g
    worst = 0.0
    for kind, rows, param in blocks:
        l, s = lam[rows], sigma[rows].copy()
        if kind == "cone":
            mu = param
            if ncp:
                s[2] += mu * np.linalg.norm(s[:2])
            worst = max(worst, np.linalg.norm(l[:2]) - mu * l[2], mu * np.linalg.norm(s[:2]) - s[2],
                        abs(l @ s) / max(1.0, np.abs(l).max()))
        elif kind == "free":
            worst = max(worst, np.abs(s).max())
        elif kind == "orthant":
            worst = max(worst, -l.min(), -s.min(), np.abs(l * s).max())
        elif kind == "box":
            f = param
            worst = max(worst, abs(l[0]) - f)
            if abs(l[0]) < f * (1 - 1e-6):
                worst = max(worst, abs(s[0]))
            else:
                worst = max(worst, s[0] * np.sign(l[0]))
    return worst


def free_box(mass=2.0, half=(0.2, 0.15, 0.1)):
    b = models.ModelBuilder()
    a, bb, c = 2 * np.asarray(half)
    I = mass / 12 * np.diag([bb * bb + c * c, a * a + c * c, a * a + bb * bb])
    b.add_body("box", -1, FREE, mass=mass, inertia=I)
    return b.build(), np.asarray(half)


def ground_contacts(model, q, half):
    """Jacobian (12, nv) of the 4 bottom corners of the box, rows (t1, t2, n) = world (x, y, z)."""
    R = models.forward_kinematics(model, q)[0][0]
    rows = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            p = q[:3] + R @ (half * np.array([sx, sy, -1]))
            rows.append(models.point_jacobian(model, q, 0, p))
    return np.vstack(rows)


def box_problem(v0, dt=1e-3):
    model, half = free_box()
    q = model.neutral()
    q[2] = half[2]
    J = ground_contacts(model, q, half)
    M = models.crba(model, q)
    v_free = v0 + dt * models.aba(model, q, v0, np.zeros(6))
    G = J @ np.linalg.solve(M, J.T)
    return model, J, M, G, J @ v_free, v_free


def test_box_at_rest_gets_its_weight():
    model, J, M, G, g, v_free = box_problem(np.zeros(6))
    res = ADMMSolver(eps_abs=1e-12, eps_rel=1e-10).solve(DenseOp(G), g, ConeSet.contacts([0.5] * 4))
    assert res.converged
    lam = res.lam.reshape(4, 3)
    assert abs(lam[:, 2].sum() - 2.0 * 9.81 * 1e-3) < 1e-9
    assert np.abs(lam[:, :2]).max() < 1e-9
    v_next = v_free + np.linalg.solve(M, J.T @ res.lam)
    assert np.abs(v_next).max() < 1e-8


def test_sliding_box_friction_saturates_and_opposes_motion():
    mu, vx = 0.3, 1.0
    model, J, M, G, g, v_free = box_problem(np.array([vx, 0, 0, 0, 0, 0]))
    res = ADMMSolver(eps_abs=1e-12, eps_rel=1e-10).solve(DenseOp(G), g, ConeSet.contacts([mu] * 4))
    assert res.converged
    lam = res.lam.reshape(4, 3)
    v_next = v_free + np.linalg.solve(M, J.T @ res.lam)
    # Coulomb: total friction μ m g dt against the motion, v decreases by μ g dt
    assert abs(lam[:, 0].sum() + mu * 2.0 * 9.81e-3) < 1e-8
    assert abs(v_next[0] - (vx - mu * 9.81e-3)) < 1e-8
    assert np.allclose(np.linalg.norm(lam[:, :2], axis=1), mu * lam[:, 2], atol=1e-9)


def random_mixed_problem(rng, nc=6, nfree=3, nlim=2, nfric=2, nv=30):
    blocks, cs = [], ConeSet()
    for _ in range(nc):
        mu = rng.uniform(0.2, 1.0)
        r = cs.add("cone", 3, mu)
        blocks.append(("cone", slice(r, r + 3), mu))
    r = cs.add("free", nfree)
    blocks.append(("free", slice(r, r + nfree), 0.0))
    for _ in range(nlim):
        r = cs.add("orthant", 1)
        blocks.append(("orthant", slice(r, r + 1), 0.0))
    for _ in range(nfric):
        f = rng.uniform(0.01, 0.1)
        r = cs.add("box", 1, f)
        blocks.append(("box", slice(r, r + 1), f))
    J = rng.normal(size=(cs.m, nv))
    A = rng.normal(size=(nv, nv))
    M = A @ A.T + nv * np.eye(nv)
    G = J @ np.linalg.solve(M, J.T)
    g = rng.normal(size=cs.m)
    for b in blocks:   # mostly approaching contacts so many are active
        if b[0] == "cone":
            g[b[1].stop - 1] -= 0.5
    return G, g, cs, blocks


@pytest.mark.parametrize("ncp", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_admm_satisfies_kkt_on_mixed_sets(seed, ncp):
    rng = np.random.default_rng(seed)
    G, g, cs, blocks = random_mixed_problem(rng)
    res = ADMMSolver(eps_abs=1e-10, eps_rel=1e-9, ncp=ncp, max_iter=5000).solve(DenseOp(G), g, cs)
    assert res.converged, (res.primal_residual, res.dual_residual, res.complementarity, res.iterations)
    assert kkt_violation(G, g, blocks, res.lam, ncp=ncp) < 1e-7


def test_admm_and_pgs_agree():
    rng = np.random.default_rng(5)
    G, g, cs, blocks = random_mixed_problem(rng, nc=5, nfree=2, nlim=2, nfric=2, nv=40)
    admm = ADMMSolver(eps_abs=1e-12, eps_rel=1e-11, max_iter=20000).solve(DenseOp(G), g, cs)
    pgs = PGSSolver(max_iter=200000, tol=1e-13).solve(G, g, cs)
    assert admm.converged and pgs.converged
    assert kkt_violation(G, g, blocks, pgs.lam) < 1e-8
    # G is full rank here (m < nv), so the solution is unique
    assert np.abs(admm.lam - pgs.lam).max() / np.abs(pgs.lam).max() < 1e-6


def test_warm_start_cuts_iterations_and_rho_is_kept():
    rng = np.random.default_rng(2)
    G, g, cs, blocks = random_mixed_problem(rng)
    solver = ADMMSolver(eps_abs=1e-10, eps_rel=1e-9)
    cold = solver.solve(DenseOp(G), g, cs)
    warm = solver.solve(DenseOp(G), g, cs, x0=cold.lam)
    assert warm.warm_started and warm.iterations < cold.iterations / 3
    assert np.abs(warm.lam - cold.lam).max() < 1e-7


def test_iteration_cap_is_reported():
    rng = np.random.default_rng(3)
    G, g, cs, blocks = random_mixed_problem(rng)
    res = ADMMSolver(max_iter=3, eps_abs=1e-14, eps_rel=0).solve(DenseOp(G), g, cs)
    assert not res.converged and res.iterations == 3
    assert np.isfinite(res.lam).all() and res.primal_residual > 0


def test_settings_changed_between_solves_reach_the_kernel():
    """The solver keeps its compiled record of the settings between solves (`_write_params`):
    a setting changed on a live solver, or a new settings object, must reach the next solve
    exactly as on a fresh solver with those settings."""
    rng = np.random.default_rng(3)
    G, g, cs, blocks = random_mixed_problem(rng)
    solver = ADMMSolver(eps_abs=1e-10, eps_rel=1e-9, keep_rho_power=False)
    first = solver.solve(DenseOp(G), g, cs)
    assert first.converged and first.iterations > 3
    solver.settings.max_iter = 3
    capped = solver.solve(DenseOp(G), g, cs, record=True)
    assert not capped.converged and capped.iterations == 3 and len(capped.history) == 3
    solver.settings.max_iter, solver.settings.anderson = 5000, 0
    again = solver.solve(DenseOp(G), g, cs)
    fresh = ADMMSolver(eps_abs=1e-10, eps_rel=1e-9, keep_rho_power=False, anderson=0).solve(DenseOp(G), g, cs)
    assert again.converged and not again.history
    assert again.iterations == fresh.iterations and np.array_equal(again.lam, fresh.lam)
    solver.settings = ADMMSettings(eps_abs=1e-10, eps_rel=1e-9, keep_rho_power=False)
    assert np.array_equal(solver.solve(DenseOp(G), g, cs).lam, first.lam)


def test_operator_with_only_matvec():
    """An operator offering only ``matvec`` (no λ_max estimate, no compiled state): the solve
    runs on its explicit G (built from m products) with λ_max from the same Lanczos, and gives
    the iterates of the explicit DenseOp with that λ_max passed in."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(6, 9))
    G = A @ A.T
    g = rng.normal(size=6)
    cones = ConeSet.contacts(np.full(2, 0.5))

    class MatvecOnly:
        def matvec(self, x):
            return G @ x

    r = ADMMSolver().solve(MatvecOnly(), g, cones)
    L = lanczos_max_eigenvalue(lambda x: G @ x, 6)
    ref = ADMMSolver().solve(MatvecOnly(), g, cones, max_eigenvalue=L)
    assert r.converged and r.iterations == ref.iterations
    assert np.allclose(r.lam, ref.lam, rtol=0, atol=1e-12)
    assert r.velocity_change is None       # no M to give M⁻¹ Jᵀ λ


def test_lanczos_max_eigenvalue():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(300, 200))
    G = A @ A.T          # PSD, rank deficient like a redundant contact set
    est = lanczos_max_eigenvalue(lambda x: G @ x, 300, iters=20)
    exact = np.linalg.eigvalsh(G).max()
    assert est <= exact * (1 + 1e-12) and (exact - est) / exact < 1e-6


def test_bad_settings_raise():
    with pytest.raises(TypeError, match="unknown ADMM setting 'rho_typo'"):
        ADMMSolver(rho_typo=1.0)
    with pytest.raises(ValueError, match="tau"):
        ADMMSolver(ADMMSettings(tau=2.0))
    with pytest.raises(ValueError, match="friction coefficient"):
        ConeSet.contacts([-0.1])
    with pytest.raises(ValueError, match="g contains NaN"):
        ADMMSolver().solve(DenseOp(np.eye(3)), np.array([0, np.nan, 0]), ConeSet.contacts([0.5]))

"""The ADMM on contact problems of three G1 on the 30-box pyramid (`scenes.pyramid_with_robots`),
saved in tests/data by bench/make_robot_problems.py (steps 0–299 after 3 s of simulation, and
the pile at rest: steps 50–299 after 6 s, `restpile`).

What these problems show (measured on the saved files; see the session report of issue 12):
- the pile is not at rest at 3–3.3 s: of ~340 contacts about 200 are separated, 100 stick and
  30–70 slide at 0.05–1 m/s (box–box contacts of the pyramid the robots pushed, robot–box,
  robot–floor); rank of G 285 (the dofs) for 1020–1080 rows;
- the simulator's warm start (matched by geometry pair and nearest point) is worse than λ = 0 on
  91% of the 300 steps (0.25–3.6 m/s against 0.13–1.6 m/s at zero);
- the ADMM reaches 1e-3 m/s in about 150 iterations and 2e-5 m/s in about 600, then stalls near
  5e-6 m/s for thousands of iterations; what is left is the slip direction of sliding box–box
  contacts. The convex relaxation (no De Saxcé term) does not reach 1e-6 m/s in 1000 either, so
  the conditioning, not the non-convexity, is what costs.

Later in the same simulation (measured, not tested here: scratch runs of `scenes.pyramid_with_robots`
to 12 s) the pile comes to rest (largest joint speed below 0.02 m/s from 4.5 s on, 450 contacts,
1372 rows) and the ADMM still needs 550–750 iterations a step, because:
- the warm start loses to λ = 0 (0.7 m/s against 0.01 m/s): a robot link lying on the floor has
  hull vertices just under the 1 mm patch tolerance above its lowest point, which enter and
  leave the four-point patch from step to step, so patch points jump by up to 19 mm and an
  impulse is carried to a point 1 mm above the floor;
- the polish cannot finish it even from the converged impulses and their own modes (it returns
  5 m/s): σ_E keeps a component outside the range of the redundant G_EE, which the damped solve
  (G_EE + δ I)⁻¹ σ_E amplifies by 1/δ. A filtered correction (G_EE + δ I)⁻¹ G_EE (G_EE + δ I)⁻¹ σ_E
  leaves the converged impulses as they are, but from the warm start or from ADMM iterates the
  mode guesses stay wrong (12–20 contacts sit on their cone's edge with slip below 2e-5 m/s) and
  repeated mode corrections diverge;
- forcing the ADMM to start from the warm start saves little (394 → 360 iterations)."""
import numpy as np
import pytest

from solvers.admm import ADMMSettings, ADMMSolver
from solvers.cones import desaxce_kernel, velocity_residual_kernel

from robot_problems import load, names

NAMES = names()


@pytest.fixture(scope="module")
def problem():
    return load("robots_299")


def test_saved_problems_are_all_there():
    assert len(NAMES) >= 6 and "robots_299" in NAMES


def test_saved_problem_rebuilds_the_operator(problem):
    """The matrix-free operator rebuilt from the file equals the dense J M⁻¹ Jᵀ (independent
    route: CRBA and a Cholesky), and the saved λ_max estimate is close to G's (the simulator
    reuses an estimate while the constraint graph stays: measured 2e-5 relative here)."""
    p = problem
    G = p.dense().matrix()
    assert G.shape == (p.g.size, p.g.size) and p.g.size > 3 * p.ncontacts     # contacts, then joint limits
    op = p.matrix_free()
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=p.g.size)
        assert np.abs(op.matvec(x) - G @ x).max() <= 1e-9 * np.abs(G @ x).max()
    top = np.linalg.eigvalsh(G)[-1]
    assert abs(p.L - top) <= 1e-3 * top
    assert np.linalg.matrix_rank(G, tol=1e-9 * top) <= p.model.nv


def dense_residual(p, lam):
    """The Coulomb residual (m/s) of (λ, G λ + g + s) with the dense G (CRBA and a Cholesky)."""
    G = p.dense().matrix()
    kind, start, size, param = p.cones.arrays()
    sig = G @ lam + p.g
    s = np.empty_like(sig)
    desaxce_kernel(kind, start, param, sig, s)
    return velocity_residual_kernel(kind, start, size, param, lam, sig + s)[0]


def test_admm_returns_cone_feasible_impulses_and_their_true_residual(problem):
    """At the iteration cap on a loaded robot pile, λ is in its cones and the reported residual is
    the Coulomb residual of (λ, G λ + g + s) recomputed with the dense G."""
    p = problem
    r = ADMMSolver(ADMMSettings(max_iter=200)).solve(p.matrix_free(), p.g, p.cones, x0=p.x0, max_eigenvalue=p.L)
    assert np.abs(r.lam - p.cones.project(r.lam)).max() <= 1e-15
    rv = dense_residual(p, r.lam)
    assert r.velocity_residual == pytest.approx(rv, rel=1e-6, abs=1e-12)
    assert rv < 1e-2       # measured 1e-3 to 4e-5 at 200 iterations on these problems


@pytest.mark.xfail(strict=True, reason="the moving pile 3 s after the drop (saved with 4-point patches on curved "
                                       "hull caps): ~900 iterations mean")
def test_robot_pile_meets_the_iteration_target():
    """Issue 12's iteration target (mean ≤ 15 at 1e-6 m/s) on the pile 3–3.3 s after the drop,
    still moving, saved before curved hull caps became one point: the ADMM needs 491–1000 (4 of 6
    at the cap). The target is for the steady state, which the resting pile's problems meet
    (`test_resting_pile_converges_in_tens_of_iterations`); this transient fails until a solver
    meets it too (strict xfail)."""
    its = []
    for n in NAMES:
        p = load(n)
        r = ADMMSolver().solve(p.matrix_free(), p.g, p.cones, x0=p.x0, max_eigenvalue=p.L)
        its.append(r.iterations if r.converged else 10 * r.iterations)
    assert np.mean(its) <= 15


@pytest.mark.parametrize("name", names("restpile"))
def test_resting_pile_converges_in_tens_of_iterations(name):
    """The pile at rest (6 s after the drop, bench_step's settle for this scene; saved with
    `python bench/make_robot_problems.py --settle 6 --save 50 150 299 --name restpile`): from the
    simulator's warm start the ADMM meets 1e-6 m/s within 100 iterations (measured 14–22 when
    saved, 1–20 with the filtered polish). At rest the pile needed 550–750 before convex hulls'
    curved caps became one contact point (their patch points, 1 mm above the floor, entered and
    left the patches from step to step, so the warm start lost to λ = 0); its λ is in the cones
    and the dense G confirms the residual."""
    p = load(name)
    r = ADMMSolver().solve(p.matrix_free(), p.g, p.cones, x0=p.x0, max_eigenvalue=p.L)
    assert r.converged and r.iterations <= 100 and r.warm_started
    assert dense_residual(p, r.lam) <= 1e-6 and np.abs(r.lam - p.cones.project(r.lam)).max() <= 1e-15

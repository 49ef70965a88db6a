"""The convergence pieces of the ADMM against independent references: the Coulomb velocity
residual (the stopping test, in m/s) against Dykstra's alternating projections, the
active-set polish against a dense least-squares solve, over-relaxation and the ρ rules on the
KKT check of test_admm, the iteration cap returning cone-feasible impulses, and the loaded
pyramids saved in tests/data."""
import os

import numpy as np
import pytest

import scenes
import simstep

from solvers.delassus import MatrixFreeDelassus
from solvers.opstate import operator_parts
from simstep.problem import IncomingVelocity
from solvers.admm import (ADMMSettings, ADMMSolver, active_set_kernel, polish_kernel,
                          scale_kernel)
from solvers.cones import BOX, CONE, FREE, ORTHANT, ConeSet, velocity_residual_kernel

from snapshots import NAMES as SNAPSHOTS, load_problem
from test_admm import DenseOp, kkt_violation


def soc_projection(a, v):
    """Projection on the second-order cone ‖v_t‖ ≤ a v_n (closed form)."""
    nt = np.hypot(v[0], v[1])
    if nt <= a * v[2]:
        return v.copy()
    if a * nt <= -v[2]:
        return np.zeros(3)
    c = (a * nt + v[2]) / (1 + a * a)
    return np.array([a * c * v[0] / nt, a * c * v[1] / nt, c])


def face_projection_oracle(lam, sp, mu, iters=20000):
    """z nearest to σ' on K* ∩ λ^⊥ (K* = {μ‖z_t‖ ≤ z_n}) by Dykstra's alternating projections
    between K* and the plane λ^⊥ (a generic algorithm, independent of the kernel's case split)."""
    n = np.linalg.norm(lam)
    u = lam / n if n > 0 else None
    x, p, q = sp.copy(), np.zeros(3), np.zeros(3)
    for _ in range(iters):
        y = soc_projection(1.0 / mu, x + p)
        p = x + p - y
        x = y + q if u is None else (y + q) - u * (u @ (y + q))
        q = y + q - x
    return x


@pytest.mark.parametrize("seed", range(6))
def test_velocity_residual_matches_the_projection_on_the_face(seed):
    """The kernel's residual is the velocity error to the nearest velocity z that satisfies the
    contact law with λ (z on the face K* ∩ λ^⊥). Separated and sticking contacts: z from
    Dykstra's alternating projections (the face is K*, resp. {0}). Sliding contacts (the face is
    a ray tangent to the plane, where alternating projections crawl): z is checked by the
    conditions that define the projection on a closed convex cone: z ∈ K*, λ·z = 0,
    (σ' − z)·z = 0 and σ' − z in the polar of the face."""
    rng = np.random.default_rng(seed)
    mu = 0.3 + rng.random()
    t = rng.normal(size=2)
    t /= np.linalg.norm(t)
    one = (np.array([CONE]), np.array([0]), np.array([3]), np.array([mu]))
    for _ in range(5):
        sp = rng.normal(size=3) * 0.1
        for lam in (np.zeros(3), np.array([*(0.3 * mu * t), 1.0])):     # separated, sticking
            rv, rc = velocity_residual_kernel(*one, lam, sp)
            z = face_projection_oracle(lam, sp, mu)
            assert abs(rv - np.abs(sp - z).max()) < 1e-9, (lam, sp, rv, np.abs(sp - z).max())
            assert abs(rc - abs(lam @ sp)) < 1e-14
        lam = np.array([*(mu * 2.0 * t), 2.0])                            # sliding
        rv, _ = velocity_residual_kernel(*one, lam, sp)
        ray = np.array([*(-t), mu])                                       # spans the face
        beta = max(sp @ ray / (ray @ ray), 0.0)
        z = beta * ray
        assert mu * np.hypot(z[0], z[1]) <= z[2] + 1e-15 and abs(lam @ z) < 1e-14
        assert abs((sp - z) @ z) < 1e-14 and (sp - z) @ ray <= 1e-14
        assert rv == pytest.approx(np.abs(sp - z).max(), abs=1e-15)


def test_velocity_residual_of_the_other_sets():
    kind = np.array([FREE, ORTHANT, ORTHANT, BOX, BOX, BOX])
    start, size = np.arange(6), np.ones(6, np.int64)
    param = np.array([0, 0, 0, 1.0, 1.0, 1.0])
    lam = np.array([0.5, 0.0, 0.2, 1.0, -1.0, 0.3])
    sig = np.array([0.01, -0.02, 0.003, 0.004, 0.005, -0.006])
    # free: |σ|; orthant at 0: approach only; active: |σ|; box at +f: σ > 0 only; at −f: σ < 0 only; inside: |σ|
    expect = [0.01, 0.02, 0.003, 0.004, 0.0, 0.006]
    rv, _ = velocity_residual_kernel(kind, start, size, param, lam, sig)
    assert rv == pytest.approx(max(expect), abs=1e-15)
    for i, e in enumerate(expect):       # one block at a time
        r, _ = velocity_residual_kernel(kind[i:i + 1], np.array([0]), np.array([1]), param[i:i + 1], lam[i:i + 1],
                                        sig[i:i + 1])
        assert r == pytest.approx(e, abs=1e-15)


def random_contact_problem(rng, n_contacts=6, nv=9, extra=()):
    """G = J M⁻¹ Jᵀ of random rank ≤ nv (redundant when 3 n_contacts > nv), g = J v."""
    m = 3 * n_contacts + len(extra)
    J = rng.normal(size=(m, nv))
    A = rng.normal(size=(nv, nv))
    Minv = np.linalg.inv(A @ A.T + nv * np.eye(nv))
    G = J @ Minv @ J.T
    g = J @ rng.normal(size=nv) * 0.1
    return G, g


def test_polish_is_the_dense_least_squares_correction():
    """From impulses λ with sticking, sliding and separated contacts, the polish moves the
    sticking rows by Δ_E = −A⁻¹ G_EE A⁻¹ σ_E, A = G_EE + δ I (σ = G λ + g), keeps the others, and
    projects."""
    rng = np.random.default_rng(3)
    G, g = random_contact_problem(rng, n_contacts=5, nv=12)
    mu = np.full(5, 0.8)
    cones = ConeSet.contacts(mu)
    kind, start, size, param = cones.arrays()
    lam = np.zeros(15)
    lam[0:3] = [0.01, 0.0, 0.1]          # sticking
    lam[3:6] = [0.08, 0.0, 0.1]          # sliding (on the boundary)
    lam[9:12] = [0.0, -0.02, 0.2]        # sticking
    sigma = G @ lam + g
    sigma[8] = 0.5                        # contact 2 separating (λ = 0, σ_n > 0)
    sigma[14] = -0.5                      # contact 4 approaching at λ = 0: taken as active
    fixed = np.empty(15, np.int64)
    active_set_kernel(kind, start, size, param, lam, sigma, fixed)
    assert fixed.tolist() == [0] * 3 + [1] * 3 + [1] * 3 + [0] * 3 + [0] * 3
    op = DenseOp(G)
    dense, geo, fac, ws, dn = operator_parts(op, 15)
    delta, big = 1e-7, 1e10
    out, sig_out = np.empty(15), np.empty(15)
    polish_kernel(dense, geo, fac, ws, dn, kind, start, size, param, g, np.zeros(0), False, True, delta, big,
                  lam, sigma, fixed, out, sig_out)
    E = fixed == 0
    ref = lam.copy()
    A = G[np.ix_(E, E)] + delta * np.eye(E.sum())
    ref[E] -= np.linalg.solve(A, G[np.ix_(E, E)] @ np.linalg.solve(A, sigma[E]))
    ref = cones.project(ref)
    assert np.abs(out - ref).max() < 1e-7 * np.abs(ref).max()
    # σ'_out is the velocity the polished impulses produce, with the De Saxcé term
    s0 = G @ out + g
    s0[2::3] += mu * np.hypot(s0[0::3], s0[1::3])
    assert np.allclose(sig_out, s0, atol=1e-12)


def test_polish_filters_what_a_redundant_set_cannot_cancel():
    """On a redundant sticking set (36 rows on 18 dofs: G_EE has rank 18), velocities with a part
    outside the range of G_EE (targets of redundant rows that no motion meets) are amplified by
    1/δ by the plain damped correction (G_EE + δ I)⁻¹ σ_E; the polish's filtered correction
    A⁻¹ G_EE A⁻¹ σ_E cancels the part in the range (to δ) and leaves the rest as it is (dense
    oracle: the eigen-decomposition of G_EE)."""
    rng = np.random.default_rng(5)
    J = rng.normal(size=(36, 18))
    G = J @ J.T / 18
    ev, U = np.linalg.eigh(G)
    rng_part = U[:, ev > 1e-9] @ rng.normal(size=(ev > 1e-9).sum())
    null_part = U[:, ev <= 1e-9] @ rng.normal(size=(ev <= 1e-9).sum())
    sigma = rng_part + 1e-6 * null_part / np.abs(null_part).max()
    cones = ConeSet.from_blocks([("free", 36, 0.0)])         # every row sticks (bilateral)
    kind, start, size, param = cones.arrays()
    dense, geo, fac, ws, dn = operator_parts(DenseOp(G), 36)
    delta, big = 1e-7, 1e10
    lam, out, sig_out = np.zeros(36), np.empty(36), np.empty(36)
    g = sigma - G @ lam
    polish_kernel(dense, geo, fac, ws, dn, kind, start, size, param, g, np.zeros(0), False, True, delta, big,
                  lam, sigma, np.empty(36, np.int64), out, sig_out)
    plain = -np.linalg.solve(G + delta * np.eye(36), sigma)
    assert np.abs(plain).max() > 1.0                        # 1e-6 / δ along the null space
    coef = ev / (ev + delta) ** 2
    ref = -U @ (coef * (U.T @ sigma))
    assert np.abs(out - ref).max() <= 1e-6 * np.abs(ref).max()
    assert np.abs(out).max() < 10 * np.abs(np.linalg.pinv(G) @ sigma).max()
    resid = G @ out + sigma
    assert np.abs(U[:, ev > 1e-9].T @ resid).max() < 1e-5 * np.abs(sigma).max()    # the range part cancelled


def redundant_pile(rng, n_contacts=12, nv=18):
    """A loaded, redundant contact set (3 n_contacts rows on nv dof) with consistent targets:
    g = J v for a velocity v pressing every contact (sticking solution exists with margin)."""
    J = rng.normal(size=(3 * n_contacts, nv))
    A = rng.normal(size=(nv, nv))
    Minv = np.linalg.inv(A @ A.T + nv * np.eye(nv))
    G = J @ Minv @ J.T
    lam_star = np.tile([0.0, 0.0, 1.0], n_contacts) + 0.05 * rng.normal(size=3 * n_contacts)
    g = -G @ lam_star            # σ = G (λ − λ*) = 0 at λ*: all contacts stick, inside their cones
    return G, g, ConeSet.contacts(np.full(n_contacts, 1.0)), lam_star


def test_polish_solves_a_warm_started_sticking_pile_in_one_step():
    """Warm-started near a sticking solution of a redundant set, the solve ends after the
    polish (one factorisation and one solve); without the polish the ADMM iterates."""
    rng = np.random.default_rng(0)
    G, g, cones, lam_star = redundant_pile(rng)
    x0 = lam_star + 0.05 * rng.normal(size=lam_star.shape)
    with_polish = ADMMSolver(ADMMSettings()).solve(DenseOp(G), g, cones, x0=x0)
    without = ADMMSolver(ADMMSettings(polish=False)).solve(DenseOp(G), g, cones, x0=x0)
    assert with_polish.converged and without.converged
    assert with_polish.iterations == 1 and with_polish.polish_solves == 1
    assert without.iterations > 5
    for r in (with_polish, without):
        assert r.velocity_residual <= 1e-6
        assert kkt_violation(G, g, [("cone", slice(3 * i, 3 * i + 3), 1.0) for i in range(12)], r.lam) < 1e-5


def test_next_warm_start_leaves_out_the_correction_of_the_incoming_velocity():
    """g = J v + g_rest: after a polish, warm_next = Π_K(λ − Δ_v) with Δ_v = −(G_EE + δ I)⁻¹ (J v)_E
    (dense oracle), so that it balances g_rest alone: the sticking rows' velocities
    G warm_next + g − J v vanish where λ's made G λ + g vanish. Without jv, warm_next is λ."""
    rng = np.random.default_rng(4)
    G, g, cones, lam_star = redundant_pile(rng)
    jv = G @ (1e-3 * rng.normal(size=g.shape))    # an incoming velocity J v (in the range of J, as G's)
    x0 = lam_star + 0.05 * rng.normal(size=lam_star.shape)
    r = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, jv=jv)
    assert r.iterations == 1 and r.polish_solves == 1 and r.converged
    kind, start, size, param = cones.arrays()
    fixed = np.empty(g.size, np.int64)
    sig = G @ x0 + g
    active_set_kernel(kind, start, size, param, cones.project(x0), sig, fixed)
    E = fixed == 0
    assert E.all()                                 # every contact sticks on this pile
    delta = 0.1 * ADMMSettings().mu_prox
    dv = -np.linalg.solve(G + delta * np.eye(g.size), jv)
    ref = cones.project(r.lam - dv)
    assert np.abs(r.warm_next - ref).max() <= 1e-8 * np.abs(ref).max()
    # λ zeroes the velocities with jv, warm_next without it (both up to the damping δ)
    assert np.abs(G @ r.lam + g).max() <= 1e-6
    assert np.abs(G @ r.warm_next + g - jv).max() <= 1e-6
    assert np.abs(G @ r.lam + g - jv).max() > 1e-4            # λ itself would not
    plain = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0)
    assert np.array_equal(plain.warm_next, plain.lam) and np.array_equal(plain.lam, r.lam)
    # jv as a function: called once after the polish, not at all when the warm start holds
    calls = []
    lazy = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, jv=lambda: calls.append(1) or jv)
    assert calls == [1] and np.array_equal(lazy.warm_next, r.warm_next)
    held = ADMMSolver().solve(DenseOp(G), g, cones, x0=r.lam, jv=lambda: calls.append(1) or jv)
    assert held.iterations == 0 and calls == [1] and np.array_equal(held.warm_next, held.lam)
    with pytest.raises(ValueError, match="jv"):
        ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, jv=np.full(g.size, np.nan))
    with pytest.raises(ValueError, match="jv"):     # a function's J v is checked by `warm_next_kernel`
        ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, jv=lambda: np.full(g.size, np.nan))


def test_the_kernel_computes_the_next_warm_start_as_the_function_would():
    """A step's problem carries jv as `simstep.problem.IncomingVelocity` (J v on the operator, with
    v): on a matrix-free operator the ADMM kernel computes the next warm start itself after an
    accepted polish, to the bit the one `warm_next_kernel` computes from jv as a plain function
    (3-box stack at dt = 0.01: the polish is accepted on its third step); non-finite velocities
    are then refused."""
    sim = simstep.Simulator(scenes.box_stack(n=3), dt=0.01, steady_steps=False)   # every step through admm.solve
    seen, solve = [], sim.admm.solve

    def fresh():
        s = ADMMSolver(sim.admm.settings)
        s.rho_power = sim.admm.rho_power
        return s

    def both(p):
        jvs = (p.jv, None if p.jv is None else (lambda: p.jv.op.J_apply(p.jv.v)))
        a, b = (fresh().solve(p._replace(jv=jv)) for jv in jvs)
        seen.append((a, b))
        if a.warm_next is not a.lam:          # polished: the same solve with velocities that are not finite
            bad = IncomingVelocity(p.jv.op, np.full_like(p.jv.v, np.nan))
            with pytest.raises(ValueError, match="velocities"):
                fresh().solve(p._replace(jv=bad))
        return solve(p)

    sim.admm.solve = both
    sim.run(10)
    assert isinstance(sim.assembler.op, MatrixFreeDelassus)
    polished = [a for a, b in seen if a.warm_next is not a.lam]
    assert len(polished) >= 1 and all(not np.array_equal(a.warm_next, a.lam) for a in polished)
    for a, b in seen:
        assert np.array_equal(a.lam, b.lam) and np.array_equal(a.warm_next, b.warm_next)


@pytest.mark.parametrize("name", ["square", "triangle_unit"])
def test_settled_pyramids_keep_their_warm_start(name):
    """Stepping on from a saved settled pile (tests/data), the previous step's impulses satisfy
    the contact law within 1e-6 m/s at every step: no polish, no iteration. Warm-starting from
    the polished λ itself, its correction of the incoming velocity came back with the other
    sign and every second step needed a polish (measured: 50% on both snapshots)."""
    d = np.load(os.path.join(os.path.dirname(__file__), "data", f"snapshot_{name}.npz"))
    world = scenes.box_pyramid(layers=int(d["layers"]), shape=str(d["shape"]), half=float(d["half"]),
                               gap=float(d["gap"]))
    sim = simstep.Simulator(world, dt=float(d["dt"]))
    sim.set_state(d["q"], d["v"])
    sim.run(20)
    its = []
    for _ in range(200):
        st = sim.step()
        assert st.converged and st.velocity_residual <= 1e-6
        its.append(st.iterations)
    assert np.mean(np.array(its) == 0) >= 0.95


@pytest.mark.parametrize("settings", [dict(), dict(relaxation=1.6), dict(update_rule="spectral", ratio_primal_dual=10),
                                      dict(polish=False), dict(eps_abs=1e-9)])
def test_settings_meet_the_velocity_tolerance(settings):
    """Every variant returns impulses in their cones whose velocities are within the tolerance
    (m/s) of the contact law, on a cold-started redundant pile with sliding and separation."""
    rng = np.random.default_rng(5)
    G, g = random_contact_problem(rng, n_contacts=8, nv=14)
    cones = ConeSet.contacts(np.full(8, 0.4))
    st = ADMMSettings(max_iter=5000, **settings)
    r = ADMMSolver(st).solve(DenseOp(G), g, cones)
    assert r.converged
    tol = st.eps_abs
    kind, start, size, param = cones.arrays()
    s0 = G @ r.lam + g
    s0[2::3] += 0.4 * np.hypot(s0[0::3], s0[1::3])
    rv, _ = velocity_residual_kernel(kind, start, size, param, r.lam, s0)
    assert rv <= tol and r.velocity_residual == pytest.approx(rv, abs=1e-15)
    assert np.abs(r.lam - cones.project(r.lam)).max() <= 1e-15


def test_iteration_cap_returns_cone_feasible_impulses_and_the_true_residual():
    rng = np.random.default_rng(2)
    G, g = random_contact_problem(rng, n_contacts=8, nv=14)
    cones = ConeSet.contacts(np.full(8, 0.4))
    r = ADMMSolver(ADMMSettings(max_iter=3, polish=False)).solve(DenseOp(G), g, cones)
    assert not r.converged and r.iterations == 3
    assert np.abs(r.lam - cones.project(r.lam)).max() <= 1e-15
    kind, start, size, param = cones.arrays()
    s0 = G @ r.lam + g
    s0[2::3] += 0.4 * np.hypot(s0[0::3], s0[1::3])
    rv, _ = velocity_residual_kernel(kind, start, size, param, r.lam, s0)
    assert r.velocity_residual == pytest.approx(rv, abs=1e-15) and rv > 1e-6


def test_a_start_that_already_satisfies_the_law_costs_no_factorisation():
    """Separating contacts (g > 0 on the normals) need no impulse: zero iterations."""
    G = np.eye(6) * 2.0
    g = np.array([0.1, 0.0, 0.5, 0.0, -0.2, 0.3])
    r = ADMMSolver().solve(DenseOp(G), g, ConeSet.contacts([0.5, 0.5]))
    assert r.converged and r.iterations == 0 and not r.lam.any()


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_loaded_pyramid_snapshots_converge_in_few_iterations(name):
    """Settled, loaded pyramids (tests/data; 64 and 288 redundant corner contacts): warm-started
    as in the simulator, the polish ends the solve; cold, the ADMM needs a handful of
    iterations. Both meet 1e-6 m/s and give the same generalized impulse Jᵀλ (λ itself is not
    unique on four coplanar corners), also on the dense baseline."""
    p = load_problem(name)
    op = p.matrix_free()
    warm = ADMMSolver().solve(op, p.g, p.cones, x0=p.x0)
    cold = ADMMSolver().solve(op, p.g, p.cones)
    no_polish = ADMMSolver(ADMMSettings(polish=False)).solve(op, p.g, p.cones, x0=p.x0)
    assert warm.warm_started and warm.iterations == 1 and warm.polish_solves == 1
    assert no_polish.iterations <= 5 and cold.iterations <= 20
    for r in (warm, cold, no_polish):
        assert r.converged and r.velocity_residual <= 1e-6
    dense = p.dense()
    J = dense.J
    ref = J.T @ warm.lam
    for r in (cold, no_polish):
        assert np.abs(J.T @ r.lam - ref).max() <= 1e-4 * np.abs(ref).max()
    # the polish's damped solve at δ = 1e-7: the matrix-free route loses about ε‖G‖/δ relative
    # (measured 2e-8 on the triangle), see MatrixFreeDelassus.solve
    d = ADMMSolver().solve(dense, p.g, p.cones, x0=p.x0)
    assert d.iterations == warm.iterations and np.abs(d.lam - warm.lam).max() <= 1e-7 * np.abs(warm.lam).max()


def falling_problem(name):
    """A contact problem saved from G1 falling on the floor (`bench/bench_step.py`'s robot, friction
    0.8; 35 contacts and 7 active joint limits; diag(G) from 0.07 to 3.7e3 1/kg or 1/(kg m²):
    contacts on the torso next to joint limits of the wrists). Data, not a simulation, so the
    same on every CPU."""
    return dense_problem(f"g1_falling_{name}")


def dense_problem(stem):
    """(G, g, cones, x0, L, blocks) of tests/data/problem_{stem}.npz (a saved step's dense G)."""
    d = np.load(os.path.join(os.path.dirname(__file__), "data", f"problem_{stem}.npz"))
    cones = ConeSet.from_blocks([(int(k), int(s), float(p)) for k, s, p in zip(d["kind"], d["size"], d["param"])])
    blocks = [("cone" if k == CONE else "orthant", slice(s, s + n), p)
              for k, s, n, p in zip(*cones.arrays())]
    return d["G"], d["g"], cones, d["x0"], float(d["L"]), blocks


@pytest.mark.parametrize("name", ["a", "b"])
def test_diagonal_scaling_on_a_falling_humanoid(name):
    """The spread of G's diagonal is what stalls the ADMM on robots: unscaled it does not reach
    1e-6 m/s in 1500 iterations on these problems; scaled by diag(G)^(−0.35) (the default) it
    does in fewer than 300 (measured 171 and 170), and the impulses pass the independent KKT
    check. Full Jacobi scaling (p = ½) helps less (measured 452, 470)."""
    G, g, cones, x0, L, blocks = falling_problem(name)
    runs = {}
    for p in (0.0, 0.35, 0.5):
        s = ADMMSolver(ADMMSettings(max_iter=1500, scaling=p, anderson=0, newton_rows=0))   # the plain iteration
        runs[p] = s.solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert not runs[0.0].converged
    assert runs[0.35].converged and runs[0.35].iterations < 300
    assert runs[0.5].converged and runs[0.35].iterations < runs[0.5].iterations
    for p in (0.35, 0.5):
        assert kkt_violation(G, g, blocks, runs[p].lam) < 2e-6
        assert np.abs(runs[p].lam - cones.project(runs[p].lam)).max() <= 1e-15


def test_scaling_keeps_every_row_kind_exact():
    """Scaled iterations on cones, bilateral rows, an orthant and friction boxes (whose bounds
    scale with the rows): the same contact law is met, in physical units, as without scaling;
    the scale is one value per cone (its shape kept) and diag^(−p) per row elsewhere."""
    rng = np.random.default_rng(11)
    extra = [("free", 2, 0.0), ("orthant", 1, 0.0), ("box", 1, 0.02), ("box", 1, 0.3)]
    G, g = random_contact_problem(rng, n_contacts=5, nv=16, extra=[None] * 5)   # 5 rows after the contacts
    D = np.diag(np.exp(rng.uniform(-3, 3, G.shape[0])))     # spread the diagonal over e⁶
    G, g = D @ G @ D, D @ g
    cones = ConeSet.from_blocks([("cone", 3, 0.6)] * 5 + extra)
    blocks = [("cone", slice(3 * i, 3 * i + 3), 0.6) for i in range(5)] + \
        [("free", slice(15, 17), 0.0), ("orthant", slice(17, 18), 0.0), ("box", slice(18, 19), 0.02),
         ("box", slice(19, 20), 0.3)]
    kind, start, size, param = cones.arrays()
    sc = np.empty(G.shape[0])
    scale_kernel(kind, start, size, np.diag(G).copy(), 0.35, sc)
    d = np.diag(G)
    for i in range(5):
        assert np.allclose(sc[3 * i:3 * i + 3], d[3 * i:3 * i + 3].mean() ** -0.35, rtol=1e-14)
    assert np.allclose(sc[15:], d[15:] ** -0.35, rtol=1e-14)
    for p in (0.0, 0.35, 0.5):
        r = ADMMSolver(ADMMSettings(max_iter=5000, scaling=p)).solve(DenseOp(G), g, cones)
        assert r.converged and kkt_violation(G, g, blocks, r.lam) < 2e-6
        assert np.abs(r.lam - cones.project(r.lam)).max() <= 1e-15


def test_operator_state_is_reused_while_the_operator_arrays_are_the_same():
    """The boxed operator state (`solvers.opstate`) is built once per operator and Data: solving
    again reuses it, an operator refreshed on another Data gets its own, and the iterates are
    the same as on a freshly built operator."""
    import models
    p = load_problem("triangle")
    op = p.matrix_free()
    s1 = op.compiled_state()
    assert op.compiled_state() is s1
    other = models.Data(p.model).compute(p.q)
    op.refresh(other)
    s2 = op.compiled_state()
    assert s2 is not s1 and op.compiled_state() is s2
    a = ADMMSolver(ADMMSettings(polish=False)).solve(op, p.g, p.cones)
    b = ADMMSolver(ADMMSettings(polish=False)).solve(p.matrix_free(), p.g, p.cones)
    assert a.iterations == b.iterations > 1 and np.array_equal(a.lam, b.lam)


@pytest.mark.parametrize("name", ["a", "b"])
def test_anderson_acceleration_on_a_falling_humanoid(name):
    """Safeguarded Anderson acceleration (`solvers.admm.anderson_update`, the default memory 10)
    on the saved falling-G1 problems: the same contact law is met (independent KKT check on the
    dense G, impulses in their cones) in fewer iterations than the plain iteration (measured
    plain 171 and 169, accelerated 71 and 65)."""
    G, g, cones, x0, L, blocks = falling_problem(name)
    plain = ADMMSolver(ADMMSettings(anderson=0, newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    fast = ADMMSolver(ADMMSettings(newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert ADMMSettings().anderson == 10
    assert plain.converged and fast.converged and fast.iterations < 0.5 * plain.iterations
    assert kkt_violation(G, g, blocks, fast.lam) < 2e-6
    assert np.abs(fast.lam - cones.project(fast.lam)).max() <= 1e-15


def test_anderson_step_is_the_least_squares_mixture():
    """`anderson_step` against dense linear algebra: γ = argmin ‖f − ΔF γ‖² + ridge tr(ΔFᵀΔF)‖γ‖²
    (numpy's lstsq on the stacked ridge system), out = g − ΔG γ; a weight beyond wmax or a
    singular system is refused and leaves out untouched; `spd_solve` equals numpy's solve."""
    from solvers.admm import anderson_step, spd_solve
    rng = np.random.default_rng(3)
    mem, n, ridge = 4, 30, 1e-6
    dF, dG = rng.normal(size=(mem, n)), rng.normal(size=(mem, n))
    f, gk = rng.normal(size=n), rng.normal(size=n)
    out = np.empty(n)
    assert anderson_step(dF, dG, dF @ dF.T, 3, f, gk, ridge, 1e4, out)
    A = dF[:3].T
    tr = np.trace(A.T @ A)
    gam = np.linalg.lstsq(np.vstack([A, np.sqrt(ridge * tr) * np.eye(3)]), np.concatenate([f, np.zeros(3)]),
                          rcond=None)[0]
    assert np.allclose(out, gk - dG[:3].T @ gam, rtol=1e-10, atol=1e-12)
    out[:] = 7.0
    assert not anderson_step(dF, dG, dF @ dF.T, 3, f, gk, ridge, 1e-3 * np.abs(gam).min(), out)
    assert not anderson_step(np.zeros((mem, n)), dG, np.zeros((mem, mem)), 2, f, gk, ridge, 1e4, out)
    assert np.all(out == 7.0)
    M = rng.normal(size=(5, 5))
    M = M @ M.T + 5 * np.eye(5)
    b = rng.normal(size=5)
    x = b.copy()
    assert spd_solve(M.copy(), x) and np.allclose(x, np.linalg.solve(M, b), rtol=1e-12)
    assert not spd_solve(-np.eye(3), np.ones(3))


def sliding_speeds(G, g, blocks, lam):
    """Slip speeds ‖σ_t‖ (m/s) of the contacts whose impulse λ lies on its friction cone's boundary."""
    sig = G @ lam + g
    return [np.hypot(*sig[s.start:s.start + 2]) for kind, s, mu in blocks
            if kind == "cone" and lam[s.start + 2] > 0 and
            np.hypot(*lam[s.start:s.start + 2]) >= mu * lam[s.start + 2] * (1 - 1e-6)]


def test_creeping_arm_of_a_lying_humanoid_is_a_near_null_mode():
    """A step saved from G1 lying on the floor (tests/data/problem_g1_lying_creep.npz: 18 contacts
    and 3 joint limits, 57 rows; the settled state of an older release stepped with hull patches
    of one point on curved caps), on which the ADMM needs hundreds of iterations (issue 12). What
    makes it hard, checked here: G's rank is the robot's 35 dofs, and its smallest nonzero
    eigenvalue (measured 4.2e-5) is over a thousand times below the next (0.062): a pattern of
    friction forces on the right arm's three contacts (shoulder, elbow, wrist) that the arm's
    joints almost entirely absorb. At the solution at least three contacts slide at creeping
    speeds (1e-6 to 1e-4 m/s: the wrist creeps), so the stick–slip modes are nearly degenerate.
    The ADMM still meets 1e-6 m/s (measured 228 iterations), and the impulses pass the
    independent KKT check."""
    G, g, cones, x0, L, blocks = dense_problem("g1_lying_creep")
    ev, U = np.linalg.eigh(G)
    nz = ev > 1e-9 * ev[-1]
    assert nz.sum() == 35
    small, nxt = ev[nz][0], ev[nz][1]
    assert small < 1e-3 * nxt
    u = U[:, np.flatnonzero(nz)[0]]
    assert np.linalg.norm(u[45:54]) ** 2 > 0.8       # contacts 15-17: right shoulder, elbow and wrist
    r = ADMMSolver(ADMMSettings(max_iter=3000, newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and r.iterations > 100     # the ADMM alone (the Newton polish solves it at once)
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6
    slips = sliding_speeds(G, g, blocks, r.lam)
    assert sum(1e-6 < v < 1e-4 for v in slips) >= 3


@pytest.mark.parametrize("stem, most", [("g1_lying_creep", 300), ("g1_back_a", 170), ("g1_back_b", 115)])
def test_anderson_pauses_instead_of_stopping_on_creeping_robots(stem, most):
    """On the creeping robots' steps, Anderson's safeguard rejects three mixed points while the
    contact modes switch; it then pauses for ten plain iterations and tries again (`admm.AA_PAUSE`)
    instead of leaving the rest of the solve to the plain iteration, which took 558, 185 and 129
    iterations (measured; with the pause 228, 155 and 102, unchanged under relative perturbations
    of g of 1e-14). Checked: within 300, 170 and 115 iterations with the default memory, fewer
    than with Anderson off, and the impulses pass the KKT check."""
    G, g, cones, x0, L, blocks = dense_problem(stem)
    runs = {mem: ADMMSolver(ADMMSettings(max_iter=3000, anderson=mem, newton_rows=0)).solve(
        DenseOp(G), g, cones, x0=x0, max_eigenvalue=L) for mem in (0, 10)}      # the iteration alone: no Newton
    assert runs[10].converged and runs[10].iterations <= most
    assert runs[10].iterations < runs[0].iterations
    assert kkt_violation(G, g, blocks, runs[10].lam) < 2e-6


def test_creeping_arm_of_a_lying_humanoid_within_50_iterations():
    """Issue 12: the semismooth Newton polish (`newton_polish.ssn_kernel`) solves it from the
    warm start (measured: 1 iteration, 13 Newton steps); the impulses pass the KKT check."""
    G, g, cones, x0, L, blocks = dense_problem("g1_lying_creep")
    r = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and r.iterations <= 50
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6


@pytest.mark.parametrize("stem", ["g1_back_a", "g1_back_b"])
def test_humanoid_on_its_back_creeps_on_nearly_degenerate_modes(stem):
    """Steps saved from G1 lying on its back (bench_step's `g1_on_back`: pitched backward, 3 s
    after the drop, unactuated; 22 contacts, three of them between the robot's own links, and 5
    joint limits: 71 rows), on which the ADMM needs 100-500 iterations a step (issue 13: the step
    took 13.7× MuJoCo's). Its legs and arms creep apart on the floor for seconds. What is
    checked: G's rank is the robot's 35 dofs; at the solution at least five contacts slide at
    creeping speeds (measured 3e-6 to 3e-4 m/s: near the stick–slip transition, where the modes
    are nearly degenerate); the ADMM meets 1e-6 m/s, but only after more than 100 iterations
    (measured 155 and 102; the same under relative perturbations of g of 1e-14), and the
    impulses pass the independent KKT check."""
    G, g, cones, x0, L, blocks = dense_problem(stem)
    ev = np.linalg.eigvalsh(G)
    assert (ev > 1e-9 * ev[-1]).sum() == 35 and len(g) == 71
    r = ADMMSolver(ADMMSettings(newton_rows=0)).solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and r.iterations > 100     # the ADMM alone (the Newton polish solves it at once)
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6
    slips = sliding_speeds(G, g, blocks, r.lam)
    assert sum(1e-6 < v < 1e-3 for v in slips) >= 5


@pytest.mark.parametrize("stem", ["g1_back_a", "g1_back_b"])
def test_humanoid_on_its_back_stalls_on_its_wrists_self_contacts(stem):
    """On the same steps, the stall comes from two self-contacts: each wrist's roll and yaw links
    (bodies 20–22 and 27–29, light links two joints apart whose convex hulls touch once the
    unactuated wrist bends). The same problem without those two contacts' rows takes the ADMM
    at most 20 iterations (measured 10 and 1; with them 155 and 102)."""
    d = np.load(os.path.join(os.path.dirname(__file__), "data", f"problem_{stem}.npz"))
    G, g, cones, x0, L, blocks = dense_problem(stem)
    wrists = [b for b, (b1, b2) in enumerate(d["bodies"]) if {int(b1), int(b2)} in ({20, 22}, {27, 29})]
    assert len(wrists) == 2
    kind, start, size, param = cones.arrays()
    keep = [b for b in range(len(kind)) if b not in wrists]
    rows = np.concatenate([np.arange(start[b], start[b] + size[b]) for b in keep])
    sub = ConeSet.from_blocks([(int(kind[b]), int(size[b]), float(param[b])) for b in keep])
    Gs = G[np.ix_(rows, rows)]
    r = ADMMSolver().solve(DenseOp(Gs), g[rows], sub, x0=x0[rows], max_eigenvalue=np.linalg.eigvalsh(Gs)[-1])
    assert r.converged and r.iterations <= 20


@pytest.mark.parametrize("stem", ["g1_back_a", "g1_back_b"])
def test_humanoid_on_its_back_within_50_iterations(stem):
    """Issue 13: the semismooth Newton polish (`newton_polish.ssn_kernel`) solves these from the
    warm start (measured: 1 iteration, 11 and 9 Newton steps); the impulses pass the KKT check."""
    G, g, cones, x0, L, blocks = dense_problem(stem)
    r = ADMMSolver().solve(DenseOp(G), g, cones, x0=x0, max_eigenvalue=L)
    assert r.converged and r.iterations <= 50
    assert kkt_violation(G, g, blocks, r.lam) < 2e-6

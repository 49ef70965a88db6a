"""Position-level loop-closure projection (simstep.projection) against a dense Gauss–Newton
oracle written with numpy: closure errors from forward kinematics (rotation error by the
matrix logarithm), the Jacobian by central finite differences on the configuration manifold,
M by CRBA, and the minimum-M-norm step through a pseudo-inverse of J M⁻¹ Jᵀ."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import models
import scenes
import simstep
from simstep.projection import closure_error_kernel, project_loop_closures


# ----------------------------------------------------------------------------- oracle
def _anchors(world, q, c):
    oR, op = models.forward_kinematics(world.model, q)
    out = []
    for body, (pos, rot) in ((c.body1, c.placement1), (c.body2, c.placement2)):
        b, Rb, pb = world.body_frame(body)
        Ro, po = (np.eye(3), np.zeros(3)) if b < 0 else (oR[b], op[b])
        out.append((Ro @ (Rb @ pos + pb) + po, Ro @ Rb @ rot))
    return out


def _errors(world, q, closures):
    rows = []
    for c in closures:
        (x1, F1), (x2, F2) = _anchors(world, q, c)
        rows.append(F1.T @ (x1 - x2))
        if c.kind == "weld":
            rows.append(Rotation.from_matrix(F2.T @ F1).as_rotvec())
    return np.concatenate(rows)


def _jacobian(world, q, closures, h=1e-6):
    """Rows of the closures at q by central differences along each tangent direction: the
    anchor points' relative displacement in the axes of anchor frame 1 frozen at q, and the
    relative rotation of frame 1 w.r.t. frame 2 in frame 1 (the velocity rows' definition)."""
    m = world.model
    base = [_anchors(world, q, c) for c in closures]
    J = np.empty((sum(c.nrows for c in closures), m.nv))
    for i in range(m.nv):
        u = np.zeros(m.nv)
        u[i] = h
        cols = []
        for c, ((_, F1), (_, F2)) in zip(closures, base):
            (x1p, F1p), (x2p, F2p) = _anchors(world, m.integrate(q, u), c)
            (x1m, F1m), (x2m, F2m) = _anchors(world, m.integrate(q, -u), c)
            cols.append(F1.T @ ((x1p - x2p) - (x1m - x2m)) / (2 * h))
            if c.kind == "weld":
                R0 = F2.T @ F1
                lp = Rotation.from_matrix(R0.T @ F2p.T @ F1p).as_rotvec()
                lm = Rotation.from_matrix(R0.T @ F2m.T @ F1m).as_rotvec()
                cols.append((lp - lm) / (2 * h))
        J[:, i] = np.concatenate(cols)
    return J


def _dense_gauss_newton(world, q, closures, iters, tol=1e-13, damping=0.0):
    """Gauss–Newton in the metric of M: δ = −M⁻¹Jᵀ(J M⁻¹ Jᵀ + εI)⁻¹ e (pseudo-inverse if ε = 0)
    restricted to the range of J M⁻¹ Jᵀ."""
    m = world.model
    for _ in range(iters):
        e = _errors(world, q, closures)
        if np.abs(e).max() <= tol:
            break
        J = _jacobian(world, q, closures)
        MinvJT = np.linalg.solve(models.crba(m, q), J.T)
        # eigen-decomposition of G, its null space (redundant rows) dropped: there Jᵀ is zero in
        # exact arithmetic, while the finite-difference J is not (by ~1e-10)
        s, U = np.linalg.eigh(J @ MinvJT)
        keep = s > 1e-10 * s.max()
        lam = U[:, keep] @ ((U[:, keep].T @ e) / (s[keep] + damping))
        q = m.integrate(q, -MinvJT @ lam)
    return q


# ----------------------------------------------------------------------------- cases
def _weld_world():
    """Two free boxes: box a welded to the world, box b pinned to a by a point closure; the
    anchors have arbitrary rotations, the closures hold at q0."""
    rng = np.random.default_rng(3)
    wb = simstep.WorldBuilder()
    wb.add_box("a", (0.2, 0.1, 0.05), mass=2.0, position=(0.1, -0.2, 1.0),
               quaternion=Rotation.random(random_state=rng).as_quat())
    wb.add_box("b", (0.1, 0.1, 0.3), mass=0.5, position=(0.4, 0.1, 0.8), quaternion=(0.5, 0.5, 0.5, 0.5))
    w = wb.build()
    oR, op = models.forward_kinematics(w.model, w.q0)
    Ra = Rotation.random(random_state=rng).as_matrix()
    ra = np.array([0.2, 0.05, -0.1])
    weld = simstep.LoopClosure("a", (ra, Ra), "world", (oR[0] @ ra + op[0], oR[0] @ Ra), kind="weld")
    pw = np.array([0.3, 0.0, 0.9])                    # the pin, a world point on both boxes
    pin = simstep.LoopClosure("b", (oR[1].T @ (pw - op[1]), Rotation.random(random_state=rng).as_matrix()),
                              "a", (oR[0].T @ (pw - op[0]), np.eye(3)), kind="point")
    w.constraints = [weld, pin]
    return w


CASES = {
    "four_bar": scenes.four_bar,
    "slider_crank": scenes.slider_crank,
    "pendulum_maximal": lambda: scenes.pendulum_benchmark(4, "maximal"),
    "weld_and_point": _weld_world,
}


def _perturbed(world, size, seed=0):
    m = world.model
    du = np.random.default_rng(seed).standard_normal(m.nv)
    return m.integrate(world.q0, size * du / np.linalg.norm(du))


@pytest.mark.parametrize("name", list(CASES))
def test_error_kernel_matches_oracle(name):
    w = CASES[name]()
    q = _perturbed(w, 0.05)
    cs = simstep.ConstraintSet(w.model, w.constraints)
    oR, op = models.forward_kinematics(w.model, q)
    e = np.full(cs.m, np.nan)
    worst = closure_error_kernel(cs.cb_kind, cs.cb_row, cs.cb_body, cs.cb_f, oR, op, e)
    ref = _errors(w, q, w.constraints)
    rows = np.concatenate([np.arange(3) if c.kind == "point" else np.arange(6) for c in w.constraints])
    lin = np.concatenate([np.ones(c.nrows, bool) if c.kind == "point" else np.r_[[True] * 3, [False] * 3]
                          for c in w.constraints])
    assert rows.size == cs.m and np.all(np.isfinite(e))
    np.testing.assert_allclose(e[lin], ref[lin], atol=1e-14)
    # weld rotation rows: sin θ times the axis where the oracle has θ times the axis
    th = np.linalg.norm(ref[~lin].reshape(-1, 3), axis=1)
    np.testing.assert_allclose(e[~lin].reshape(-1, 3), ref[~lin].reshape(-1, 3) * (np.sin(th) / np.where(th > 0, th, 1))[:, None],
                               atol=1e-14)
    assert worst == np.abs(e).max() > 1e-3
    # the simulator's error of the velocity-level rows (its Baumgarte term) is the same quantity
    sim = simstep.Simulator(w, dt=1e-3)
    sim.set_state(q, np.zeros(w.model.nv))
    np.testing.assert_allclose(np.concatenate([sim.loop_error(c) for c in w.constraints]), e, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_one_step_is_the_dense_minimum_kinetic_energy_step(name):
    """One Gauss–Newton step equals −M⁻¹Jᵀ(J M⁻¹ Jᵀ + εI)⁻¹ e with J by finite differences
    (ε = the damping the projection chose). Measured: 2e-10 to 2.3e-9 relative."""
    w = CASES[name]()
    q = _perturbed(w, 1e-3)
    r = project_loop_closures(w.model, q, w.constraints, tol=1e-14, max_iter=1)
    ref = _dense_gauss_newton(w, q, w.constraints, iters=1, damping=r.damping)
    assert r.iterations == 1
    d_ours, d_ref = w.model.difference(q, r.q), w.model.difference(q, ref)
    assert np.linalg.norm(d_ref) > 1e-4
    assert np.linalg.norm(d_ours - d_ref) <= 1e-8 * np.linalg.norm(d_ref), (d_ours, d_ref)


@pytest.mark.parametrize("name", list(CASES))
def test_projection_converges_to_the_dense_gauss_newton_point(name):
    """From errors of about 1e-2, 2-3 steps to 1e-12; the same point as the dense iteration
    (measured: within 2e-11, 5e-10 with the weld, whose rotation error is sin θ here and θ
    in the oracle)."""
    w = CASES[name]()
    q = _perturbed(w, 1e-2, seed=1)
    e0 = np.abs(_errors(w, q, w.constraints)).max()
    r = project_loop_closures(w.model, q, w.constraints, tol=1e-12)
    ref = _dense_gauss_newton(w, q, w.constraints, iters=20)
    assert e0 > 1e-3
    assert r.converged and r.residual <= 1e-12 and 1 <= r.iterations <= 5, r
    assert np.abs(_errors(w, r.q, w.constraints)).max() <= 1e-12
    np.testing.assert_allclose(r.q, ref, atol=1e-9)
    assert r.damping > 0


def test_closed_configuration_is_left_unchanged():
    w = scenes.four_bar()
    r = project_loop_closures(w.model, w.q0, w.constraints, tol=1e-10)
    assert r.iterations == 0 and r.converged and r.damping is None
    np.testing.assert_array_equal(r.q, w.q0)
    assert r.q is not w.q0


def test_unreachable_closure_stops_without_making_it_worse():
    """A pin 10 m from the four-bar's reach: not satisfiable; the projection stops when a step
    no longer reduces the error and reports it."""
    w = scenes.four_bar()
    far = simstep.LoopClosure("four_bar/rocker", ((0.3, 0, 0), np.eye(3)), "world", ((10.0, 0, 1.0), np.eye(3)))
    e0 = np.abs(_errors(w, w.q0, [far])).max()
    r = project_loop_closures(w.model, w.q0, [far], tol=1e-10, max_iter=50)
    assert not r.converged and np.all(np.isfinite(r.q))
    assert r.residual < e0
    assert r.residual == pytest.approx(np.abs(_errors(w, r.q, [far])).max(), abs=1e-12)


def test_bad_input():
    w = scenes.four_bar()
    m = w.model
    with pytest.raises(TypeError, match="LoopClosure"):
        project_loop_closures(m, w.q0, [simstep.JointLimit("four_bar/j1", "lower")])
    with pytest.raises(ValueError, match="tol"):
        project_loop_closures(m, w.q0, w.constraints, tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        project_loop_closures(m, w.q0, w.constraints, max_iter=-1)
    with pytest.raises(ValueError, match="damping"):
        project_loop_closures(m, w.q0, w.constraints, damping=-1.0)
    with pytest.raises(ValueError, match="another model"):
        project_loop_closures(m, w.q0, w.constraints, data=models.Data(scenes.slider_crank().model))
    with pytest.raises(ValueError):
        project_loop_closures(m, np.zeros(m.nq + 1), w.constraints)


# ----------------------------------------------------------------------------- in the simulator
def test_simulator_projects_loop_closures_by_default():
    w = scenes.four_bar()
    sim = simstep.Simulator(w, dt=w.dt)
    assert sim.project_closures
    loop = w.constraints[0]
    worst, iters = 0.0, []
    for _ in range(300):
        st = sim.step()
        iters.append(st.projection_iterations)
        assert st.projection_residual <= sim.projection_tol
        worst = max(worst, float(np.abs(sim.loop_error(loop)).max()))
    assert worst <= 1e-10 and max(iters) >= 1 and st.time_projection > 0
    off = simstep.Simulator(w, dt=w.dt, project_closures=False)
    off.run(300)
    assert off.stats.projection_iterations == 0 and float(np.abs(off.loop_error(loop)).max()) > 1e-8
    # no loop closures: nothing to project
    free = simstep.Simulator(scenes.box_stack(2), dt=1e-3)
    assert not free.project_closures and free.step().projection_iterations == 0


@pytest.mark.parametrize("kw", [dict(projection_tol=0.0), dict(projection_tol=np.nan), dict(projection_max_iter=0)])
def test_simulator_rejects_bad_projection_settings(kw):
    with pytest.raises(ValueError, match="projection"):
        simstep.Simulator(scenes.four_bar(), **kw)

"""Time integration of free bodies against invariants and closed forms (issue 11, defect 1):
linear momentum and world angular momentum of a torque-free body, kinetic energy that does
not grow, the discrete projectile parabola, Dzhanibekov's flip, a ball rolling on the ground
(and MuJoCo on the same ball)."""
import numpy as np
import pytest

import models
import simstep
from models.joints import SPHERICAL
from simstep.integrator import body_kinds, free_velocity_kernel

HALF = (0.3, 0.2, 0.05)      # asymmetric box: x minor, y intermediate, z major inertia axis


def one_body_world(kind, velocity, gravity=(0, 0, 0), mass=2.0):
    b = simstep.WorldBuilder(gravity=gravity)
    if kind == "sphere":
        b.add_sphere("b", radius=0.1, mass=mass, position=(0, 0, 1), velocity=velocity)
    else:
        b.add_box("b", half_extents=HALF, mass=mass, position=(0, 0, 1), quaternion=tuple(np.array((0.1, 0.2, 0.3, 0.927)) / np.linalg.norm((0.1, 0.2, 0.3, 0.927))),
                  velocity=velocity)
    return b.build()


def invariants(sim):
    """(world linear momentum, world angular momentum about the CoM, kinetic energy)."""
    m, I = sim.model.mass[0], sim.model.inertia[0]
    R, v, w = sim.data.oR[0], sim.v[:3], sim.v[3:]
    return m * (R @ v), R @ (I @ w), 0.5 * m * (v @ v) + 0.5 * w @ I @ w


@pytest.mark.parametrize("kind", ["sphere", "box"])
@pytest.mark.parametrize("dt, w", [(1e-2, (100.0, 3.0, 60.0)), (1e-3, (0.5, 40.0, -20.0))])
def test_torque_free_body_keeps_momentum_and_does_not_gain_energy(kind, dt, w):
    sim = simstep.Simulator(one_body_world(kind, (1.0, -2.0, 0.5) + w), dt=dt)
    p0, L0, E0 = invariants(sim)
    E_prev = E0
    for _ in range(int(round(10.0 / dt))):      # 10 s
        sim.step()
        p, L, E = invariants(sim)
        assert E <= E_prev * (1 + 1e-13)       # non-increasing up to round-off
        E_prev = E
    assert abs(np.linalg.norm(p) - np.linalg.norm(p0)) <= 1e-12 * np.linalg.norm(p0)
    # the vector to round-off in ABA's world-origin sums (±ω×v cancel to ~1e-16 |ω||v| h a step)
    assert np.linalg.norm(p - p0) <= 1e-11 * np.linalg.norm(p0)
    # the scheme transports the body momentum by the step's own rotation: L_world is exact
    assert np.linalg.norm(L - L0) <= 1e-9 * np.linalg.norm(L0)
    # world velocity of the origin (= CoM) is constant, the body moved on a straight line
    assert np.allclose(sim.body_velocity("b")[0], p0 / 2.0, rtol=0, atol=1e-11)
    assert np.allclose(sim.body_pose("b")[0], (0, 0, 1) + sim.t * p0 / 2.0, rtol=0, atol=1e-9)
    if kind == "sphere":      # isotropic: nothing to dissipate
        assert abs(E - E0) <= 1e-12 * E0


def test_projectile_is_the_discrete_parabola():
    """Semi-implicit Euler on the world velocity: p_n = p₀ + n h v₀ + h² g n(n+1)/2, exactly,
    whatever the spin."""
    g, h, n = np.array((0, 0, -9.81)), 1e-3, 700
    sim = simstep.Simulator(one_body_world("box", (1.0, 2.0, 3.0, 20.0, -30.0, 40.0), gravity=g), dt=h)
    v0 = sim.body_velocity("b")[0]      # world velocity (the builder's is in the body frame)
    sim.run(n)
    p = np.array((0, 0, 1.0)) + n * h * v0 + h * h * g * n * (n + 1) / 2
    assert np.allclose(sim.body_pose("b")[0], p, rtol=0, atol=1e-12 * n)
    assert np.allclose(sim.body_velocity("b")[0], v0 + n * h * g, rtol=0, atol=1e-12 * n)


def test_dzhanibekov_flip_still_happens():
    """Spin about the intermediate axis (body y) with a small perturbation: the y axis turns
    over (its world direction reverses) within a few seconds, while L_world stays put."""
    b = simstep.WorldBuilder(gravity=(0, 0, 0))
    b.add_box("b", half_extents=HALF, mass=1.0, position=(0, 0, 1), velocity=(0, 0, 0, 0.01, 10.0, 0.01))
    sim = simstep.Simulator(b.build(), dt=1e-3)
    tr = sim.run(4000, record=True)
    y_up = []
    for q in tr.q[::10]:
        x, y, z, s = q[3:7]
        y_up.append(1 - 2 * (x * x + z * z))      # R[1, 1]: world y component of the body y axis
    y_up = np.array(y_up)
    assert y_up[0] > 0.999 and y_up.min() < -0.9
    flip = int(np.argmax(y_up < -0.9))
    assert y_up[flip:].max() > 0.9       # and back: the flip is periodic


def rolling_ball(dt=1e-3):
    b = simstep.WorldBuilder()
    b.add_ground(friction=1.0)
    b.add_sphere("ball", radius=0.1, mass=1.0, position=(0, 0, 0.1), friction=1.0, velocity=(5, 0, 0, 0, 50, 0))
    return simstep.Simulator(b.build(), dt=dt)


def test_ball_rolling_on_the_ground_keeps_its_speed():
    sim = rolling_ball()
    for _ in range(5):
        sim.run(1000)
        lin, ang = sim.body_velocity("ball")
        assert abs(np.linalg.norm(lin) - 5.0) <= 5e-3     # 0.1 %
        assert abs(sim.body_pose("ball")[0][2] - 0.1) <= 2e-3   # on the ground (margin 2 mm)
    assert abs(sim.body_pose("ball")[0][0] - 25.0) <= 0.025


def test_ball_rolling_matches_mujoco():
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><option timestep="0.001" cone="elliptic"/><worldbody>
      <geom type="plane" size="0 0 1" friction="1 0 0"/>
      <body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="1 0 0"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = (5, 0, 0, 0, 50, 0)
    mujoco.mj_step(m, d, 2000)
    sim = rolling_ball()
    sim.run(2000)
    assert abs(sim.body_pose("ball")[0][0] - d.qpos[0]) <= 0.01 * d.qpos[0]
    assert abs(np.linalg.norm(sim.body_velocity("ball")[0]) - np.linalg.norm(d.qvel[:3])) <= 0.01 * 5


def test_thin_plate_spinning_fast_on_the_ground_stays_bounded():
    """The plate of the issue (M singular after an energy blow-up at dt 1e-2): energy never
    exceeds its initial value by more than the bounded push-out can add."""
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_box("plate", half_extents=(0.25, 0.15, 0.005), mass=0.5, position=(0, 0, 0.2),
              velocity=(2.0, 0, 0, 30.0, 10.0, 50.0))
    sim = simstep.Simulator(b.build(), dt=1e-2)
    E0 = invariants(sim)[2] + 0.5 * 9.81 * 0.2
    for _ in range(300):
        sim.step()
        E = invariants(sim)[2] + 0.5 * 9.81 * sim.q[2]
        assert E <= E0 + 0.5 * 0.5 * sim.max_depenetration_velocity ** 2 + 1e-9
    assert sim.q[2] > 0.0


def test_spherical_joint_to_the_world_transports_the_pivot_momentum():
    """kind 2 of `free_velocity_kernel`: a body on a spherical joint to the world, no gravity.
    ABA's free velocity with the correction must satisfy I_o ω⁺ = exp(−h ω⁺) I_o ω (I_o about
    the pivot), hence keep |I_o ω| and not gain energy; ABA's explicit step alone gains."""
    mb = models.ModelBuilder(gravity=(0, 0, 0))
    mb.add_body("top", -1, SPHERICAL, mass=1.5, com=(0.02, -0.01, 0.3), inertia=np.diag([0.01, 0.02, 0.03]))
    m = mb.build()
    kind, inertia, inertia_inv = body_kinds(m)
    assert kind[0] == 2
    c = m.com[0]
    Io = m.inertia[0] + m.mass[0] * ((c @ c) * np.eye(3) - np.outer(c, c))
    assert np.allclose(inertia[0], Io)
    d = models.Data(m).compute(m.neutral())
    w, h = np.array([3.0, 20.0, -7.0]), 1e-2
    vf = w + h * d.free_acceleration(w, np.zeros(3), np.zeros((1, 6)), np.empty(3))
    assert vf @ Io @ vf > w @ Io @ w          # the explicit step gains energy
    free_velocity_kernel(m.jint, kind, inertia, inertia_inv, np.ascontiguousarray(m.mass), np.ascontiguousarray(m.com),
                         m.gravity, d.oR, d.op, np.zeros(3), np.zeros((1, 6)), w, h, vf)
    th = np.linalg.norm(h * vf)
    K = np.array([[0, -vf[2], vf[1]], [vf[2], 0, -vf[0]], [-vf[1], vf[0], 0]]) * h / th
    R = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K        # exp(h ω⁺)
    assert np.allclose(Io @ vf, R.T @ Io @ w, rtol=0, atol=1e-12)
    assert vf @ Io @ vf <= w @ Io @ w


def test_articulated_step_kernel_matches_free_step_kernel():
    """A robot on a free base (every body ARTICULATED) takes `articulated_step_kernel`, which
    compiles without the free bodies' Newton solves and gives free_step_kernel's v_f bit for bit."""
    import scenes
    from simstep.integrator import articulated_step_kernel, free_step_kernel
    sim = simstep.Simulator(scenes.quadruped())
    assert not np.any(sim._body_kind) and sim._free_step is articulated_step_kernel
    rng = np.random.default_rng(3)
    m, d = sim.model, sim.data
    v, tau, fext = rng.normal(size=m.nv), rng.normal(size=m.nv), rng.normal(size=(m.nbodies, 6))
    out = []
    for k in (free_step_kernel, articulated_step_kernel):
        vf = np.empty(m.nv)
        k(m.jint, m.gravity, d.S, d.H, d.IA, d.U, d.Dinv, d.vel, d.acc, d._pA, sim._body_kind, sim._body_inertia,
          sim._body_inertia_inv, sim._mass, sim._com, d.oR, d.op, tau, fext, v, 0.01, False, vf)
        out.append(vf)
    assert out[0].tobytes() == out[1].tobytes()
    assert simstep.Simulator(one_body_world("box", (0, 0, 0, 1, 2, 3)))._free_step is free_step_kernel

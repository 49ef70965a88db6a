"""What a user scripts against: run by steps or seconds, the scene's time step, joint names,
saved trajectories with contacts, contact wrenches in newtons, PD targets by joint name,
sensors (joint state, IMU, force/torque). Checked against closed-form statics and dynamics."""
import numpy as np
import pytest

import models
import scenes
import simstep
from scenes._util import add_urdf_text

G = 9.81


def box_world(v0=(0.0, 0.0, 0.0), w0=(0.0, 0.0, 0.0), z=0.1, friction=0.5, gravity=(0, 0, -G), ground=True):
    b = simstep.WorldBuilder(gravity=gravity)
    if ground:
        b.add_ground(friction=friction)
    b.add_box("box", (0.1, 0.1, 0.1), mass=2.0, position=(0, 0, z), friction=friction)
    w = b.build()
    q = w.q0.copy()
    v = np.zeros(w.model.nv)
    v[:3], v[3:6] = v0, w0
    return w, q, v


def stack_world(n=3):
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.5)
    for k in range(n):
        b.add_box(f"b{k}", (0.1, 0.1, 0.1), mass=1.0 + k, position=(0, 0, 0.1 + 0.2 * k), friction=0.5)
    return b.build()


ARM = """<robot name="arm">
  <link name="base"/>
  <link name="link"><inertial><origin xyz="0.5 0 0"/><mass value="1.0"/>
    <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="link"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="{effort}" velocity="10"/></joint>
</robot>"""


def arm_world(effort=100.0, robots=("arm",)):
    b = simstep.WorldBuilder()
    for i, name in enumerate(robots):
        add_urdf_text(b, name, ARM.format(effort=effort), floating_base=False, position=(0, 2.0 * i, 1.0))
    return b.build()


# --------------------------------------------------------------------------- run, dt, names
def test_run_by_steps_or_seconds():
    w, q, v = box_world()
    sim = simstep.Simulator(w)
    tr = sim.run(duration=0.05, record=True)
    assert len(tr) == 51 and sim.steps == 50 and tr.t[-1] == pytest.approx(0.05)
    with pytest.raises(ValueError, match=r"steps must be an integer, got 1.5.*run\(duration=1.5\)"):
        sim.run(1.5)
    with pytest.raises(TypeError, match="either steps"):
        sim.run(2, duration=1.0)
    with pytest.raises(TypeError, match="either steps"):
        sim.run()
    with pytest.raises(ValueError, match="duration"):
        sim.run(duration=-1.0)
    assert sim.steps == 50


def test_the_scene_time_step_is_the_default():
    assert simstep.Simulator(scenes.pendulum_benchmark()).dt == 1e-4     # paper 004's pendulum
    assert simstep.Simulator(scenes.box_stack(2)).dt == 1e-3
    assert simstep.Simulator(scenes.pendulum_benchmark(), dt=2e-4).dt == 2e-4
    w, _, _ = box_world()
    assert simstep.Simulator(w).dt == 1e-3                                # no scene: 1 ms


def test_bare_joint_names_resolve_when_unique():
    w = arm_world(robots=("left", "right"))
    m = w.model
    with pytest.raises(KeyError, match="ambiguous"):
        m.joint_q_index("hinge")
    assert m.joint_q_index("right/hinge") == 1
    w1 = arm_world()
    assert w1.model.joint_q_index("hinge") == w1.model.joint_q_index("arm/hinge") == 0
    with pytest.raises(KeyError, match="unknown joint 'elbow'"):
        w1.model.joint_v_index("elbow")


# --------------------------------------------------------------------------- data out
def test_trajectory_with_contacts_saves_and_loads(tmp_path):
    """A box sliding and spinning on the ground: every row's contacts are those of its step."""
    w, q, v = box_world(v0=(1.5, 0.3, 0.0), w0=(0.0, 0.0, 4.0))
    sim = simstep.Simulator(w)
    sim.set_state(q, v)
    steps = []
    tr = sim.run(40, record=True, callback=lambda s: steps.append(s.contacts))
    assert tr.has_contacts and tr.dt == 1e-3 and tr.body_names == tuple(w.model.body_names)
    assert len(tr.contacts[0]) == 0                 # the state before the first step
    for i in (1, 17, 40):
        c, ref = tr.contacts[i], steps[i - 1]
        assert len(c) == len(ref) == tr.ncontacts[i] > 0
        assert np.array_equal(c.position, ref.position) and np.array_equal(c.impulse, ref.world_impulse)
        assert np.allclose(c.force, ref.world_force)
    assert not np.array_equal(tr.contacts[5].position, tr.contacts[30].position)    # the box moved
    path = tr.save(tmp_path / "run.npz")
    back = simstep.load_trajectory(path)
    for name in ("t", "q", "v", "iterations", "ncontacts", "contact_ptr", "contact_position", "contact_impulse"):
        assert np.array_equal(getattr(back, name), getattr(tr, name)), name
    assert back.dt == tr.dt and back.joint_names == tr.joint_names
    (tmp_path / "bad.npz").write_text("not a trajectory")
    with pytest.raises(ValueError, match="not a saved trajectory"):
        simstep.load_trajectory(tmp_path / "bad.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="missing format, t, q, v"):
        simstep.load_trajectory(tmp_path / "other.npz")
    assert sim.run(2, record=True, record_contacts=False).contacts is None


def test_contact_wrench_of_a_resting_stack_is_the_weight_it_carries():
    """Each box of a settled stack: the contacts push it up by its own weight (N), with no
    torque about its centre; the ground carries the whole stack."""
    w = stack_world(3)
    sim = simstep.Simulator(w)
    sim.run(duration=1.0)
    for k in range(3):
        f, n = sim.contact_wrench(f"b{k}")
        mass = 1.0 + k
        assert f == pytest.approx([0, 0, mass * G], abs=2e-3 * mass * G)
        assert np.abs(n).max() < 1e-6
        fs, ns = sim.force_torque(f"b{k}")        # the same wrench in the box axes
        R = simstep.quat_to_matrix(sim.body_pose(f"b{k}")[1])
        assert np.allclose(R @ fs, f, atol=1e-9)
    c = sim.contacts
    ground = c.body2 == -1
    assert c.world_force[ground].sum(0) == pytest.approx([0, 0, 6 * G], abs=1e-2)
    assert np.allclose(c.force, c.impulse / sim.dt)


def test_contact_wrench_of_a_sliding_box_is_coulomb_friction():
    """Sliding at 2 m/s along x: the ground's force is (−μ m g, 0, m g) exactly (Coulomb)."""
    mu, m = 0.3, 2.0
    w, q, v = box_world(v0=(2.0, 0.0, 0.0), friction=mu)
    sim = simstep.Simulator(w)
    sim.set_state(q, v)
    sim.run(20)
    f, _ = sim.contact_wrench("box")
    assert f == pytest.approx([-mu * m * G, 0.0, m * G], rel=1e-4, abs=1e-6)


# --------------------------------------------------------------------------- sensors
def test_imu_reads_gravity_at_rest_and_nothing_in_free_fall():
    w, q, v = box_world()
    sim = simstep.Simulator(w)
    sim.run(duration=0.5)
    om, f = sim.imu("box")
    assert np.abs(om).max() < 1e-9 and f == pytest.approx([0, 0, G], abs=5e-3)
    # tumbling in free fall (far from the ground): the accelerometer reads 0, the gyro ω in the box axes
    w, q, v = box_world(v0=(0.3, -0.2, 1.0), w0=(2.0, -1.0, 3.0), z=50.0)
    sim = simstep.Simulator(w)
    sim.set_state(q, v)
    om0, f0 = sim.imu("box")
    assert f0 == pytest.approx(simstep.quat_to_matrix(q[3:7]).T @ [0, 0, G])   # no step yet: −g in box axes
    sim.run(30)
    om, f = sim.imu("box")
    assert np.abs(f).max() < 1e-9
    assert np.allclose(om, sim.v[3:6], atol=1e-12)


def test_joint_state_sensors_and_applied_torques():
    w = arm_world()
    sim = simstep.Simulator(w)
    sim.set_actuation(np.array([1.5]))
    sim.run(3)
    assert sim.joint_positions(["hinge"]) == pytest.approx(sim.q[:1])
    assert sim.joint_velocities(["arm/hinge"]) == pytest.approx(sim.v[:1])
    assert sim.joint_torques(["hinge"]) == pytest.approx([1.5])
    with pytest.raises(TypeError, match="list of names"):
        sim.joint_positions("hinge")


# --------------------------------------------------------------------------- PD targets
def test_pd_target_holds_the_arm_where_its_torque_balances_gravity():
    """Static equilibrium of a 1 kg arm (CoM 0.5 m from the hinge): Kp (q* − q) equals the
    gravity torque g(q) of RNEA at the resting angle; Kd brings it to rest."""
    w = arm_world()
    sim = simstep.Simulator(w)
    kp, target = 40.0, 0.4
    sim.set_targets({"hinge": target}, kp=kp, kd=5.0)     # ζ ≈ 0.8 with I = m l² = 0.251 kg m²
    sim.run(duration=3.0)
    q = sim.q.copy()
    assert abs(sim.v[0]) < 1e-6
    grav = models.gravity_torques(w.model, q)[0]
    assert kp * (target - q[0]) == pytest.approx(grav, rel=1e-4)
    assert abs(grav) == pytest.approx(1.0 * G * 0.5 * np.cos(q[0]), rel=1e-6)     # m g l cos q
    assert sim.joint_torques(["hinge"]) == pytest.approx([kp * (target - q[0])], rel=1e-4)
    # a later call moves the target and keeps the gains
    sim.set_targets({"hinge": 0.0})
    sim.run(duration=3.0)
    assert kp * (0.0 - sim.q[0]) == pytest.approx(models.gravity_torques(w.model, sim.q)[0], rel=1e-4)


def test_pd_torque_is_clipped_to_the_urdf_effort_limit():
    """Effort 2 N·m cannot hold 4.9 N·m of gravity: the arm falls, the torque stays at the limit."""
    w = arm_world(effort=2.0)
    sim = simstep.Simulator(w)
    sim.set_targets({"hinge": 0.0}, kp=1000.0, kd=10.0)
    sim.run(duration=0.2)
    assert abs(sim.joint_torques(["hinge"])[0]) == pytest.approx(2.0)
    assert abs(sim.q[0]) > 0.1
    sim2 = simstep.Simulator(w)
    sim2.set_targets({"hinge": 0.0}, kp=1000.0, kd=10.0, effort=False)
    sim2.run(duration=0.2)
    assert abs(sim2.q[0]) < 0.01


def test_pd_torque_matches_its_formula_on_a_quadruped_with_saturated_joints():
    """`JointPD.torque` on Go2's 12 joints at random states against τ = clip(Kp (q* − q) +
    Kd (v* − v), ±effort) written in NumPy, with velocity targets, per-joint gains and states
    far enough from the targets that some joints saturate; a time-varying reference of the
    wrong size, or a non-finite one, is refused by name (a step then fails and changes nothing)."""
    w = scenes.quadruped("go2")
    pd, m = w.actuation, w.model
    rng = np.random.default_rng(3)
    kp, kd = rng.uniform(20.0, 80.0, len(pd.joints)), rng.uniform(0.5, 3.0, len(pd.joints))
    pd = scenes.JointPD(m, w.q0, pd.joints, kp=kp, kd=kd, velocities=rng.normal(0.0, 1.0, len(pd.joints)))
    saturated = 0
    for _ in range(20):
        q = w.q0.copy()
        q[pd.iq] += rng.normal(0.0, 0.8, pd.iq.size)
        v = rng.normal(0.0, 3.0, m.nv)
        u = kp * (pd.q_target - q[pd.iq]) + kd * (pd.v_target - v[pd.iv])
        expected = np.zeros(m.nv)
        expected[pd.iv] = np.clip(u, -pd.limit, pd.limit)
        saturated += int(np.sum(np.abs(u) > pd.limit))
        np.testing.assert_array_equal(pd.torque(0.0, q, v), expected)
    assert saturated > 10 and np.all(np.isfinite(pd.limit))
    pd.q_ref_fn = lambda t: np.zeros(3)
    with pytest.raises(ValueError, match="one per PD joint"):
        pd.torque(0.0, w.q0, np.zeros(m.nv))
    # the simulator trusts a JointPD's torques: a non-finite reference is refused by the PD
    w.actuation = pd
    sim = simstep.Simulator(w)
    pd.q_ref_fn = lambda t: np.where(t > 1.5 * sim.dt, np.nan, pd.q_target)
    with pytest.raises(ValueError, match="non-finite targets"):
        pd.torque(2 * sim.dt, w.q0, np.zeros(m.nv))
    sim.run(2)
    q, v = sim.q.copy(), sim.v.copy()
    with pytest.raises(simstep.SimulationError, match="the actuation .*non-finite targets"):
        sim.step()
    assert sim.steps == 2 and np.array_equal(sim.q, q) and np.array_equal(sim.v, v)


def test_pd_targets_refuse_bad_input_before_changing_anything():
    w = arm_world()
    sim = simstep.Simulator(w)
    with pytest.raises(ValueError, match="no PD gains yet"):
        sim.set_targets({"hinge": 0.1})
    with pytest.raises(KeyError, match="unknown joint"):
        sim.set_targets({"elbow": 0.1}, kp=1.0, kd=0.1)
    with pytest.raises(ValueError, match="finite"):
        sim.set_targets({"hinge": np.nan}, kp=1.0, kd=0.1)
    with pytest.raises(ValueError, match="≥ 0"):
        sim.set_targets({"hinge": 0.1}, kp=-1.0, kd=0.1)
    with pytest.raises(TypeError, match="non-empty dict"):
        sim.set_targets([0.1], kp=1.0, kd=0.1)
    assert sim._pd is None
    wb, _, _ = box_world()
    with pytest.raises(ValueError, match="6 dofs"):
        simstep.Simulator(wb).set_targets({"box": 0.0}, kp=1.0, kd=1.0)
    sim.set_targets({"hinge": 0.1}, kp=1.0, kd=0.1)
    with pytest.raises(ValueError, match="finite"):
        sim.set_targets({"hinge": np.inf})
    assert sim._pd.q_target[0] == 0.1
    sim.clear_targets()
    sim.run(2)
    assert sim.joint_torques(["hinge"]) == pytest.approx([0.0])

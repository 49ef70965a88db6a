"""Simulator features with closed-form answers: external forces, actuation callbacks, joint
damping, joint limits, joint dry friction, contact compliance."""
import numpy as np
import pytest

import simstep

G = 9.81
L_ARM, M_ARM = 0.5, 2.0


def pendulum_world(tmp_path, lower=-3.0, upper=3.0, friction=0.0, damping=0.0, q0=0.0, gravity=(0, 0, -G)):
    """A point-like mass M_ARM at L_ARM on a revolute joint about y, hanging along −z at q = 0."""
    urdf = f"""<robot name="p">
      <link name="base"/>
      <link name="arm"><inertial><origin xyz="0 0 {-L_ARM}"/><mass value="{M_ARM}"/>
        <inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
        <origin xyz="0 0 1"/><axis xyz="0 1 0"/>
        <limit lower="{lower}" upper="{upper}" effort="100" velocity="100"/>
        <dynamics damping="{damping}" friction="{friction}"/></joint>
    </robot>"""
    path = tmp_path / "pendulum.urdf"
    path.write_text(urdf)
    b = simstep.WorldBuilder(gravity=gravity)
    b.add_urdf("p", path, floating_base=False, q=[q0])
    return b.build()


def test_external_force_accelerates_a_free_box():
    b = simstep.WorldBuilder(gravity=(0, 0, 0))
    b.add_box("box", (0.1, 0.2, 0.3), mass=2.0, position=(0, 0, 1))
    sim = simstep.Simulator(b.build(), dt=1e-3)
    for _ in range(100):
        sim.apply_force("box", (4.0, 0, 0))       # through the centre: pure translation
        sim.step()
    lin, ang = sim.body_velocity("box")
    assert np.allclose(lin, (2.0 * 0.1, 0, 0), atol=1e-12) and np.allclose(ang, 0, atol=1e-12)
    sim.apply_force("box", (0, 0, 0), torque=(0, 0, 1.0))
    sim.step()
    Izz = 2.0 / 12 * (0.2 ** 2 + 0.4 ** 2)
    assert np.isclose(sim.body_velocity("box")[1][2], 1e-3 / Izz, rtol=1e-9)


def test_actuation_callback_holds_a_pendulum_against_gravity(tmp_path):
    theta = 0.7
    w = pendulum_world(tmp_path, q0=theta)
    hold = lambda sim: np.array([M_ARM * G * L_ARM * np.sin(sim.q[0])])   # gravity compensation
    sim = simstep.Simulator(w, dt=1e-3, actuation=hold)
    sim.run(500)
    assert abs(sim.q[0] - theta) < 1e-9
    free = simstep.Simulator(w, dt=1e-3)
    free.run(50)
    assert free.q[0] < theta - 1e-3


def test_joint_damping_decay_rate(tmp_path):
    """Without gravity, I q̈ = −c q̇: q̇(t) = q̇₀ exp(−c t / I)."""
    c = 0.3
    w = pendulum_world(tmp_path, damping=c, gravity=(0, 0, 0))
    sim = simstep.Simulator(w, dt=1e-4)
    sim.set_state(w.q0, np.array([2.0]))
    sim.run(5000)
    inertia = M_ARM * L_ARM ** 2 + 1e-4
    assert abs(sim.v[0] - 2.0 * np.exp(-c * 0.5 / inertia)) / sim.v[0] < 2e-3    # explicit damping: O(dt)


def test_joint_limit_stops_the_fall(tmp_path):
    lower = -0.4
    w = pendulum_world(tmp_path, lower=lower, q0=0.6)      # swings to negative angles
    sim = simstep.Simulator(w, dt=1e-3)
    tr = sim.run(1500, record=True)
    q = tr.q[:, 0]
    assert q.min() > lower - 1e-4
    hit = int(np.argmax(q <= lower + 1e-3))
    assert hit > 0
    # the limit absorbs the impact (inelastic): the pendulum leaves it from rest, so it swings
    # back no higher than |lower| (less, by the energy lost while the limit was active)
    assert q[hit:].max() < abs(lower) + 1e-3
    free = simstep.Simulator(w, dt=1e-3, joint_limits=False)
    free.run(600)
    assert min(free.run(600, record=True).q[:, 0]) < lower - 0.1


@pytest.mark.parametrize("margin, sticks", [(1.05, True), (0.9, False)])
def test_joint_dry_friction_sticks_or_slips(tmp_path, margin, sticks):
    theta = 0.5
    tau_g = M_ARM * G * L_ARM * np.sin(theta)
    w = pendulum_world(tmp_path, friction=margin * tau_g, q0=theta)
    sim = simstep.Simulator(w, dt=1e-3)
    sim.run(300)
    moved = abs(sim.q[0] - theta)
    if sticks:
        assert moved < 1e-6           # 0.5 µm at the tip
    else:
        assert moved > 1e-3


def test_contact_compliance_penetration():
    """With compliance R on the contact rows, a resting box settles where the Baumgarte push
    balances R λ: depth beyond the slop band = R (m g dt / 4) dt / erp per corner."""
    R, erp, dt, m = 2.0, 0.2, 1e-3, 1.0
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.5, compliance=0.0)
    b.add_box("box", (0.1, 0.1, 0.1), mass=m, position=(0, 0, 0.1), compliance=R)
    sim = simstep.Simulator(b.build(), dt=dt, erp=erp, eps_abs=1e-12, eps_rel=1e-10)
    sim.run(2000)
    depth = R * (m * G * dt / 4) * dt / erp + sim.contact_slop
    assert sim.contact_slop == 1e-5
    assert abs((0.1 - sim.q[2]) - depth) / depth < 1e-3

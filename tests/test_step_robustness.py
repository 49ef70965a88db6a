"""Bounded push-out (issue 11, defect 2) and the atomic step (defect 3): real failures inside
a step (an actuation that raises or returns NaN, a torque that overflows) raise
`SimulationError` with the cause chained, leave the whole state bit-identical, and the next
step is the one a simulator that never failed would take."""
import numpy as np
import pytest

import simstep
from simstep import SimulationError
from test_fuzz import same, snapshot
from test_simulator_features import pendulum_world


def box_in_ground(depth=0.05, half=0.1):
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.5)
    b.add_box("box", half_extents=(half, half, half), mass=1.0, position=(0, 0, half - depth))
    return b.build()


@pytest.mark.parametrize("dt", [1e-4, 1e-3])
def test_box_started_in_the_ground_leaves_at_the_bounded_speed_and_settles(dt):
    sim = simstep.Simulator(box_in_ground(), dt=dt)
    vb = sim.max_depenetration_velocity
    tr = sim.run(int(round(1.5 / dt)), record=True)
    vz = tr.v[:, 2]      # body frame, the box does not rotate: world z
    assert vz.max() <= vb * (1 + 1e-3) + 9.81 * dt
    assert vz.max() >= 0.9 * vb           # the bound is what limits it (erp·depth/dt ≥ 10 m/s here)
    out = np.argmax(tr.q[:, 2] >= 0.1 - sim.margin)
    assert abs(tr.t[out] - 0.05 / vb) <= 0.2 * 0.05 / vb      # dt-independent exit time
    assert abs(sim.q[2] - 0.1) <= sim.margin and np.abs(sim.v).max() < 1e-2   # at rest on the ground
    assert np.abs(tr.q[:, 3:6]).max() < 1e-6


def test_joint_started_outside_its_limits_comes_back_at_the_bounded_speed(tmp_path):
    """q = 5 with limits [−1, 1], no gravity: pushed back at max_depenetration_velocity
    (rad/s), it reaches the upper limit after (5 − 1)/v_b s; it keeps that speed (the push-out
    is a velocity) and the lower limit then stops it: it never passes −1."""
    w = pendulum_world(tmp_path, lower=-1.0, upper=1.0, q0=5.0, gravity=(0, 0, 0))
    sim = simstep.Simulator(w, dt=1e-3)
    vb = sim.max_depenetration_velocity
    tr = sim.run(14000, record=True)
    q, v = tr.q[:, 0], tr.v[:, 0]
    assert np.abs(v).max() <= vb * (1 + 1e-6)
    back = tr.t[np.argmax(q <= 1.0)]
    assert abs(back - 4.0 / vb) <= 0.02 * 4.0 / vb
    assert q.min() >= -1.0 - 1e-3
    assert abs(q[-1] + 1.0) <= 1e-3 and abs(v[-1]) <= 1e-6


def stepped(world, n=30, **kw):
    sim = simstep.Simulator(world, dt=1e-3, **kw)
    sim.run(n)
    return sim


def spinning_box_on_ground():
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    b.add_box("box", half_extents=(0.2, 0.1, 0.05), mass=2.0, position=(0, 0, 0.05),
              velocity=(1.0, 0.5, 0, 0, 0, 8.0))
    b.add_sphere("ball", radius=0.05, mass=0.3, position=(0.5, 0, 0.05), velocity=(-1, 0, 0, 0, 0, 0))
    return b.build()


def check_failed_step_is_a_no_op(sim, twin, call, cause):
    """call(sim) must raise SimulationError caused by `cause`, change nothing, and the next
    step must equal the twin's (which never failed) bit for bit."""
    before = snapshot(sim)
    with pytest.raises(SimulationError, match="state was left unchanged") as info:
        call(sim)
    assert isinstance(info.value.__cause__, cause) or (cause is None and info.value.__cause__ is None)
    assert same(before, snapshot(sim))
    sim.set_actuation(None)
    sim.step()
    twin.step()
    assert np.array_equal(sim.q, twin.q) and np.array_equal(sim.v, twin.v) and sim.t == twin.t
    assert np.array_equal(sim.contacts.impulse, twin.contacts.impulse)
    return info.value


def test_actuation_that_raises():
    w = spinning_box_on_ground()
    sim, twin = stepped(w), stepped(w)
    assert len(sim.contacts) > 0 and sim.assembler.warm.lam.size > 0

    def broken(s):
        raise RuntimeError("controller lost its sensor")

    sim.set_actuation(broken)
    err = check_failed_step_is_a_no_op(sim, twin, lambda s: s.step(), RuntimeError)
    assert "actuation" in str(err) and "controller lost its sensor" in str(err)


def test_actuation_that_returns_nan():
    w = spinning_box_on_ground()
    sim, twin = stepped(w), stepped(w)
    sim.set_actuation(lambda s: np.full(s.model.nv, np.nan))
    check_failed_step_is_a_no_op(sim, twin, lambda s: s.step(), ValueError)


def test_torque_that_overflows_keeps_the_state_and_the_external_forces():
    w = spinning_box_on_ground()
    sim, twin = stepped(w), stepped(w)
    for s in (sim, twin):
        s.apply_force("box", (0, 0, 5.0), point=(0.1, 0, 0.05))
    huge = np.full(sim.model.nv, 1e308)
    err = check_failed_step_is_a_no_op(sim, twin, lambda s: s.step(tau=huge), (ValueError, type(None)))
    assert f"step {twin.steps - 1}" in str(err)


def test_bad_explicit_torque_is_a_value_error_before_anything_changes():
    sim = stepped(spinning_box_on_ground())
    before = snapshot(sim)
    with pytest.raises(ValueError, match="tau"):
        sim.step(tau=np.full(sim.model.nv, np.nan))
    assert same(before, snapshot(sim))


def test_far_from_the_origin_the_error_says_why():
    """Spatial inertias about the world origin lose the rotational part of a box 1e7 m away
    (a documented limit): the error names the distance and the remedy, not a massless joint."""
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_box("b", (0.1, 0.1, 0.1), mass=1.0, position=(1e7, 0, 0.1))
    with pytest.raises(np.linalg.LinAlgError, match=r"1e\+07 m from it; keep scenes within about 1e5 m"):
        simstep.Simulator(b.build(), dt=1e-3)

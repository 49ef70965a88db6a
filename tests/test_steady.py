"""The steady step (`simstep.steady`): stages 3–6 in one compiled call when the contacts come
from the last step's geometry pairs. Its oracle is the staged path (`steady_steps=False`), which
runs the same kernels one by one: every step must be the same bit for bit, on robots (one-dof
joints on a free base, joint limits toggling), free bodies (their gyroscopic Newton solves) and
a falling robot whose contact set keeps changing (the kernel's fallbacks to the staged path)."""
import warnings

import numpy as np
import pytest

import models
import scenes
import simstep
from simstep.steady import SteadyStep
from test_step_robustness import check_failed_step_is_a_no_op


def g1_dropped(quat=(0.3, -0.4, 0.2, 0.843)):
    """G1 released 0.9 m up, tilted: it falls, rolls and comes to rest on the floor."""
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.5)
    q = np.asarray(quat) / np.linalg.norm(quat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, position=(0, 0, 0.9), quaternion=tuple(q), package_dirs=dirs, friction=0.5)
    return b.build()


def spinning_boxes():
    """Free bodies that spin and slide on the ground and on each other."""
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    b.add_box("a", half_extents=(0.2, 0.1, 0.05), mass=2.0, position=(0, 0, 0.05), velocity=(1.0, 0.5, 0, 0, 0, 8.0))
    b.add_box("b", half_extents=(0.05, 0.05, 0.05), mass=0.5, position=(0.02, 0.01, 0.151),
              velocity=(0, 0, 0, 0.3, 0, 2.0))
    b.add_sphere("ball", radius=0.05, mass=0.3, position=(0.6, 0, 0.05), velocity=(-1, 0, 0, 0, 4.0, 0))
    return b.build()


def go2_trotting():
    """Go2 on its joint PD with targets that move every step (`JointPD.q_ref_fn`, a trot in
    place), every third step given as a strided view: the steady kernel evaluates the PD
    itself (on a C-contiguous copy, `JointPD.target`)."""
    w = scenes.quadruped("go2")
    pd = w.actuation
    base = pd.q_target.copy()
    lift = np.array([0.3 if "thigh" in j else (-0.6 if "calf" in j else 0.0) for j in pd.joints])
    phase = np.array([0.0 if j.split("/", 1)[1][:2] in ("FL", "RR") else 0.5 for j in pd.joints])

    def trot(t):
        q = base + lift * np.maximum(np.sin(2 * np.pi * (t / 0.4 - phase)), 0.0)
        return q if round(t * 1000) % 3 else np.repeat(q, 2)[::2]
    pd.q_ref_fn = trot
    return w


def go2_called():
    """Go2 under an actuation callable that returns its PD's torques, every third step as a
    strided view: the steady kernel takes them as given (a C-contiguous copy,
    `models.Model.check_v`; its compiled entry point reads C arrays)."""
    w = scenes.quadruped("go2")
    pd = w.actuation

    def torques(sim):
        tau = pd(sim)
        return tau if sim.steps % 3 else np.repeat(tau, 2)[::2]
    w.actuation = torques
    return w


def record(sim, steps, force=None, switches=None):
    """Per step: q, v, the contacts' impulses and the solver's numbers; and how many steps were
    steady. force: (body, wrench) applied before every step. switches: a list that gets the
    steps that were steady on another contact set than the step before's (`SteadyStep._switch`)."""
    rows, steady, pairs = [], 0, None
    for k in range(steps):
        if force is not None:
            sim.apply_force(force[0], force[1], point=force[2])
        st = sim.step()
        steady += st.steady
        c = sim.contacts
        if switches is not None:
            if st.steady and pairs is not None and not np.array_equal(c.key // 4, pairs):
                switches.append(k)
            pairs = c.key // 4
        rows.append((sim.q.copy(), sim.v.copy(), c.impulse.copy(), c.key.copy(), sim.assembler.warm.lam.copy(),
                     (st.iterations, st.newton_steps, st.converged, st.rho, st.primal_residual, st.dual_residual,
                      st.velocity_residual, st.complementarity, st.warm_started, st.ncontacts, st.nrows),
                     sim.admm.rho_power))
    return rows, steady


def assert_same_steps(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        for u, w in zip(x, y):
            same = np.array_equal(u, w) if isinstance(u, np.ndarray) else u == w
            assert same, f"step {i + 1} differs"


@pytest.mark.parametrize("make, steps, force", [
    (lambda: scenes.quadruped("go2"), 800, None),
    (go2_trotting, 800, None),
    (go2_called, 500, None),
    (spinning_boxes, 800, ("a", (0.0, 3.0, 0.0), (0.2, 0.0, 0.05))),
    (g1_dropped, 900, None),
], ids=["go2_standing", "go2_trotting", "go2_actuation_callable", "spinning_boxes_pushed", "g1_falling"])
def test_steady_steps_equal_the_staged_steps(make, steps, force):
    world = make()
    staged, n0 = record(simstep.Simulator(world, steady_steps=False), steps, force)
    fused, n1 = record(simstep.Simulator(world), steps, force)
    assert n0 == 0 and 0.3 * steps < n1 < steps      # both paths ran
    assert_same_steps(staged, fused)


def test_settings_changed_between_steps_reach_the_steady_step():
    """erp, contact_slop, the ADMM's tolerance and the gravity changed mid-run: the same steps as
    the staged path."""
    sims = [simstep.Simulator(scenes.quadruped("go2"), steady_steps=False), simstep.Simulator(scenes.quadruped("go2"))]
    out = []
    for sim in sims:
        rows, n = record(sim, 300)
        sim.erp, sim.contact_slop, sim.max_depenetration_velocity = 0.5, 1e-4, 0.1
        sim.admm.settings.eps_abs = 1e-8
        more, m = record(sim, 300)
        sim.model.gravity = np.array([0.5, 0.0, -9.0])       # a new array, no other setting changed
        last, l = record(sim, 300)
        out.append((rows + more + last, n + m + l))
    assert out[0][1] == 0 and out[1][1] > 800
    assert_same_steps(out[0][0], out[1][0])


def test_pd_gains_replaced_between_steps_reach_the_steady_step():
    """A `JointPD`'s gains replaced mid-run by other values, then by a strided view of the same
    values (the contact set stays), then the velocities by a strided view of themselves, then the
    targets by other values, a strided view of them and changed in place: the same steps as the
    staged path (the steady kernel is typed anew for replaced arrays; it keeps fixed targets only
    while they are the same array)."""
    out = []
    for steady in (False, True):
        sim = simstep.Simulator(scenes.quadruped("go2"), steady_steps=steady)
        pd = sim.actuation
        rows, n = record(sim, 200)
        pd.kp = pd.kp * np.linspace(0.9, 1.1, pd.kp.size)
        more, m = record(sim, 200)
        pd.kp = np.repeat(pd.kp, 2)[::2]
        last, l = record(sim, 200)
        sim.v = np.repeat(sim.v, 2)[::2]        # the same velocities, strided
        end, e = record(sim, 100)
        pd.q_target = pd.q_target + 0.02
        moved, t1 = record(sim, 100)
        pd.q_target = np.repeat(pd.q_target - 0.01, 2)[::2]
        strided, t2 = record(sim, 100)
        pd.q_target = pd.q_target.copy()
        pd.q_target[:] += 0.01                  # in place, after a step on the new array
        record(sim, 1)
        pd.q_target[:] -= 0.02
        inplace, t3 = record(sim, 100)
        out.append((rows + more + last + end + moved + strided + inplace, (n, m, l, e, t1, t2, t3)))
    assert out[0][1] == (0,) * 7 and min(out[1][1]) > 60
    assert_same_steps(out[0][0], out[1][0])


def test_detector_buffers_replaced_between_steps_reach_the_steady_step():
    """The detector's output buffers replaced between two steps (they grow when a detection finds
    more contacts than they hold, a user's own `detect` call included): the steady step's kept
    arrays of the set (`SetArrays`) follow them; the same steps as the staged path."""
    out = []
    for steady in (False, True):
        sim = simstep.Simulator(scenes.quadruped("go2"), steady_steps=steady)
        rows, n = record(sim, 200)
        det = sim.detector
        det._alloc_out(2 * det._out[0].shape[1])        # what a detection does when they overflow
        more, m = record(sim, 100)
        out.append((rows + more, (n, m)))
    assert out[0][1] == (0, 0) and min(out[1][1]) > 60
    assert_same_steps(out[0][0], out[1][0])


def test_a_pd_reference_is_evaluated_once_a_step():
    """A `JointPD`'s q_ref_fn runs once a step, also on the steps whose steady call fell back to
    the staged path (a trot in place: feet touch down and lift off), which takes the torques the
    kernel computed instead of evaluating the PD again."""
    world = go2_trotting()
    trot, calls = world.actuation.q_ref_fn, []

    def counted(t):
        calls.append(t)
        return trot(t)
    world.actuation.q_ref_fn = counted
    sim = simstep.Simulator(world)
    del calls[:]
    rows, n = record(sim, 800)
    assert 0.3 * 800 < n < 800       # both paths ran
    assert len(calls) == 800 and len(set(calls)) == 800


def test_a_return_to_a_kept_contact_set_is_a_steady_step():
    """A trot cycles through a few contact sets (both diagonal pairs down, one foot lifting, ...):
    a step whose contacts come from the pairs of a set kept from earlier
    (`ProblemAssembler.sets`, KEEP_SETS) runs steady on that set (`SteadyStep._switch`: the set
    found as the staged path finds it, its operator refreshed and its λ_max estimated at the
    step's contact points when not kept), bitwise the staged path's step, which takes the same set
    up again. Over two gait cycles (800 steps) the returns to earlier sets are steady."""
    world = go2_trotting()
    staged, _ = record(simstep.Simulator(world, steady_steps=False), 800)
    switches = []
    fused, _ = record(simstep.Simulator(world), 800, switches=switches)
    assert len(switches) >= 3      # (measured: 4, from step 427, in the second cycle)
    assert_same_steps(staged, fused)


def test_a_step_that_fails_inside_the_steady_kernel_changes_nothing():
    """A torque that overflows: the steady kernel runs, its state is not finite, the staged path
    recomputes the step and raises; the state is as before and the next step the twin's."""
    world = spinning_boxes()
    sim, twin = simstep.Simulator(world), simstep.Simulator(world)
    for s in (sim, twin):
        s.run(50)
    assert sim.stats.steady
    check_failed_step_is_a_no_op(sim, twin, lambda s: s.step(tau=np.full(s.model.nv, 1e308)),
                                 (ValueError, type(None)))
    assert sim.stats.steady and twin.stats.steady


@pytest.mark.parametrize("options", [dict(operator="dense"), dict(solver="pgs"), dict(contact_model="lcp"),
                                     dict(steady_steps=False)])
def test_configurations_outside_the_steady_path_run_staged(options):
    sim = simstep.Simulator(spinning_boxes(), **options)
    assert sim._steady is None
    sim.run(20)
    assert not sim.stats.steady


def test_restitution_and_compliance_run_staged():
    for material in (dict(restitution=0.5), dict(compliance=1e-4)):
        b = simstep.WorldBuilder()
        b.add_ground()
        b.add_box("b", (0.1, 0.1, 0.1), mass=1.0, position=(0, 0, 0.1), **material)
        assert not SteadyStep.applies(simstep.Simulator(b.build()))


def test_steady_steps_is_checked():
    with pytest.raises(TypeError, match="steady_steps"):
        simstep.Simulator(spinning_boxes(), steady_steps="yes")


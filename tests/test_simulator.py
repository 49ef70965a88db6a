"""Simulator against closed-form physics: friction on an incline, sliding distance,
restitution, resting stacks, a four-bar loop; dense vs matrix-free; determinism; bad input."""
import numpy as np
import pytest

import simstep

G = 9.81


def box_world(mu=0.5, gravity=(0, 0, -G), v0=None, e=0.0, half=0.1):
    b = simstep.WorldBuilder(gravity=gravity)
    b.add_ground(friction=mu, restitution=e)
    b.add_box("box", (half, half, half), mass=1.0, position=(0, 0, half), friction=mu, restitution=e,
              velocity=v0)
    return b.build()


def tilted_gravity(theta):
    """Gravity of an incline of angle theta whose downhill direction is +x (ground stays flat)."""
    return (G * np.sin(theta), 0.0, -G * np.cos(theta))


@pytest.mark.parametrize("delta_deg, sticks", [(-2.0, True), (2.0, False)])
def test_incline_stick_and_slide(delta_deg, sticks):
    mu = 0.5
    theta = np.arctan(mu) + np.radians(delta_deg)
    sim = simstep.Simulator(box_world(mu, tilted_gravity(theta)), dt=1e-3)
    tr = sim.run(1000, record=True)
    x = tr.q[:, 0]
    if sticks:
        assert abs(x[-1] - x[0]) < 1e-6
    else:
        a_ref = G * (np.sin(theta) - mu * np.cos(theta))
        # fit x = x0 + a t²/2 on the second half (after any start-up transient)
        t = tr.t[500:]
        a_fit = np.polyfit(t, x[500:], 2)[0] * 2
        assert abs(a_fit - a_ref) / a_ref < 0.01
    assert sim.stats.converged


@pytest.mark.parametrize("mu", [0.3, 0.0])
def test_sliding_box_stopping_distance(mu):
    v0 = 2.0
    sim = simstep.Simulator(box_world(mu, v0=(v0, 0, 0, 0, 0, 0)), dt=1e-3)
    tr = sim.run(1000 if mu else 500, record=True)
    if mu:
        d_ref = v0 ** 2 / (2 * mu * G)
        assert abs(tr.q[-1, 0] - d_ref) / d_ref < 0.01
        assert abs(tr.v[-1, 0]) < 1e-6      # stopped (5e-7 of v0)
    else:
        assert np.allclose(tr.v[:, 0], v0, atol=1e-9)
        assert abs(tr.q[-1, 0] - v0 * tr.t[-1]) < 1e-9


def test_ball_restitution_rebound_height():
    e, h, r = 0.8, 1.0, 0.05
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.5, restitution=e)
    b.add_sphere("ball", r, mass=0.2, position=(0, 0, r + h), restitution=e)
    sim = simstep.Simulator(b.build(), dt=1e-4)
    tr = sim.run(int(1.6 / 1e-4), record=True)
    z = tr.q[:, 2] - r
    i_bounce = int(np.argmin(z[: int(0.6 / 1e-4)]))
    apex = z[i_bounce:].max()
    assert abs(apex - e * e * h) / (e * e * h) < 0.02
    assert z.min() > -1e-4


def stack_world(n=5, half=0.1):
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    for i in range(n):
        b.add_box(f"b{i}", (half, half, half), mass=1.0, position=(0, 0, half + 2 * half * i), friction=0.8)
    return b.build()


def test_resting_stack_does_not_drift():
    n, half = 5, 0.1
    sim = simstep.Simulator(stack_world(n, half), dt=1e-3)
    q0 = sim.q.copy()
    max_pen = 0.0
    for _ in range(2000):
        sim.step()
        max_pen = max(max_pen, sim.stats.max_penetration)
    pos0, pos1 = q0.reshape(n, 7)[:, :3], sim.q.reshape(n, 7)[:, :3]
    assert np.abs(pos1 - pos0).max() <= 1e-4
    assert max_pen <= 1e-4
    assert sim.stats.ncontacts == 4 * n


FOUR_BAR_URDF = """<robot name="four_bar">
  <link name="base"/>
  {links}
  <joint name="j1" type="continuous"><parent link="base"/><child link="crank"/>
    <origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="0 0 -0.3"/><axis xyz="0 1 0"/></joint>
  <joint name="j3" type="continuous"><parent link="coupler"/><child link="rocker"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/></joint>
</robot>"""


def four_bar_world(tmp_path):
    link = ('<link name="{n}"><inertial><origin xyz="{c}"/><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    links = "".join(link.format(n=n, c=c) for n, c in
                    (("crank", "0 0 -0.15"), ("coupler", "0.2 0 0"), ("rocker", "0 0 0.15")))
    path = tmp_path / "four_bar.urdf"
    path.write_text(FOUR_BAR_URDF.format(links=links))
    b = simstep.WorldBuilder()
    # crank tilted so the linkage swings; rocker hangs back up to the base pivot at (0.4, 0, 1)
    b.add_urdf("fb", path, floating_base=False, q=[0.3, -0.3, 0.3])
    return b.build()


def test_four_bar_loop_closure_holds(tmp_path):
    w = four_bar_world(tmp_path)
    # rocker tip: 0.3 m along its +z, closes on the world pivot at (0.4, 0, 1)
    loop = simstep.LoopClosure("fb/rocker", ((0, 0, 0.3), np.eye(3)), "world", ((0.4, 0, 1.0), np.eye(3)),
                               kind="point")
    sim = simstep.Simulator(w, dt=1e-3, constraints=[loop], erp=1.0)
    err = 0.0
    swing = []
    for _ in range(5000):
        sim.step()
        err = max(err, np.abs(sim.loop_error(loop)).max())
        swing.append(sim.q[0])
    assert err <= 1e-6
    assert np.ptp(swing) > 0.2, "the linkage should swing"


def pyramid_world(rows=(3, 2, 1), half=0.1):
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    k = 0
    for level, n in enumerate(rows):
        for i in range(n):
            x = (i - (n - 1) / 2) * 2 * half
            b.add_box(f"b{k}", (half, half, half), mass=1.0, position=(x, 0, half + 2 * half * level + 1e-4 * level),
                      friction=0.6)
            k += 1
    return b.build()


def test_dense_and_matrix_free_paths_agree():
    """The same ADMM on both operators gives the same iterates up to round-off: with ρ pinned
    (the adaptive rule and the ρ carried between steps are discrete decisions that round-off can
    flip, after which the two runs take different, equally valid paths) and a tight tolerance,
    200 steps of a 3-box pyramid agree to 1e-8 (measured: 2e-12 in q, 5e-9 in v)."""
    w = pyramid_world((2, 1))
    kw = dict(dt=1e-3, eps_abs=1e-9, eps_rel=1e-9, max_iter=5000, ratio_primal_dual=np.inf,
              keep_rho_power=False, rho_power=0.15)
    sims = [simstep.Simulator(w, operator=op, **kw) for op in ("matrix_free", "dense")]
    converged = 0
    for _ in range(200):
        for s in sims:
            s.step()
        assert sims[0].stats.ncontacts == sims[1].stats.ncontacts
        converged += sims[0].stats.converged and sims[1].stats.converged
    assert converged == 200
    assert np.abs(sims[0].q - sims[1].q).max() < 1e-8
    assert np.abs(sims[0].v - sims[1].v).max() < 1e-8


def test_dense_and_matrix_free_agree_at_default_tolerance():
    """With the default stopping test the paths may stop at different iterations; they still
    agree to the solver tolerance."""
    w = pyramid_world()
    sims = [simstep.Simulator(w, dt=1e-3, operator=op) for op in ("matrix_free", "dense")]
    for _ in range(200):
        for s in sims:
            s.step()
    assert np.abs(sims[0].q - sims[1].q).max() < 1e-6


def test_determinism_bitwise():
    w = pyramid_world()
    runs = [simstep.Simulator(w, dt=1e-3).run(100, record=True) for _ in range(2)]
    assert np.array_equal(runs[0].q, runs[1].q) and np.array_equal(runs[0].v, runs[1].v)


def test_iteration_cap_is_reported_and_state_stays_finite():
    sim = simstep.Simulator(pyramid_world(), dt=1e-3, max_iter=5)
    capped = 0
    for _ in range(20):
        st = sim.step()
        capped += not st.converged
        if not st.converged:
            assert st.iterations == 5 and st.primal_residual + st.dual_residual > 0
    assert capped > 0
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))


def test_pgs_solver_runs_the_same_scene():
    w = pyramid_world()
    a = simstep.Simulator(w, dt=1e-3, eps_abs=1e-12, eps_rel=1e-12)
    b = simstep.Simulator(w, dt=1e-3, solver="pgs")
    a.run(100)
    b.run(100)
    assert np.abs(a.q - b.q).max() < 1e-5


def test_body_pose_and_velocity():
    sim = simstep.Simulator(box_world(v0=(1.0, 0, 0, 0, 0, 2.0)), dt=1e-3)
    p, quat = sim.body_pose("box")
    assert np.allclose(p, (0, 0, 0.1)) and np.allclose(quat, (0, 0, 0, 1))
    lin, ang = sim.body_velocity("box")
    assert np.allclose(lin, (1, 0, 0)) and np.allclose(ang, (0, 0, 2))


def test_bad_input():
    w = box_world()
    for dt in (0.0, -1e-3, np.nan):
        with pytest.raises(ValueError, match="dt must be positive"):
            simstep.Simulator(w, dt=dt)
    with pytest.raises(TypeError, match="unknown Simulator settings"):
        simstep.Simulator(w, dt=1e-3, max_iters=3)
    sim = simstep.Simulator(w, dt=1e-3)
    with pytest.raises(ValueError, match=r"q has shape \(6,\), expected \(7,\)"):
        sim.set_state(np.zeros(6), np.zeros(6))
    q = w.q0.copy()
    q[0] = np.nan
    with pytest.raises(ValueError, match="q contains NaN"):
        sim.set_state(q, np.zeros(6))
    q = w.q0.copy()
    q[3:7] = (0, 0, 0.6, 0.6)
    with pytest.raises(ValueError, match="quaternion.*not unit"):
        sim.set_state(q, np.zeros(6))
    with pytest.raises(ValueError, match="v contains NaN"):
        sim.set_state(w.q0, np.array([0, 0, np.inf, 0, 0, 0]))
    with pytest.raises(KeyError, match="unknown body 'ghost'"):
        sim.body_pose("ghost")
    with pytest.raises(ValueError, match="tau has shape"):
        sim.step(tau=np.zeros(3))
    assert np.array_equal(sim.q, w.q0)   # failed calls left the state alone


def _contacts_subset(c, idx):
    """The `collision.Contacts` c restricted to the contacts idx (positions moved by 1 mm), made
    by its constructor from the detector's buffer layout (integer fields, points, frames,
    float fields)."""
    idx = np.asarray(idx)
    return type(c)(c._i[:, idx], c.position[idx] + 1e-3, c.frame[idx], c._s[:, idx], len(idx))


def test_contact_set_of_two_steps_before_is_refreshed_bitwise():
    """Contacts toggling between two sets (a patch of 3 and 4 points): the third step's set is
    the first one's, refreshed in place with its operator (`ProblemAssembler.sets`, `ops`),
    and the problem it gives (g, x0, J v, G x, the rows' cones) is bitwise that of a rebuild."""
    import scenes
    world = scenes.box_pyramid()
    sim, ref = simstep.Simulator(world), simstep.Simulator(world)
    for s in (sim, ref):
        s.run(150)
    d = sim.data
    c = sim.detector.detect(sim.q, placements=(d.oR, d.op))
    k = len(c)
    v_free = sim.v.copy()
    asm = sim.assembler
    c1 = _contacts_subset(c, np.arange(k))
    p1 = asm.build(c1, sim.q, sim.v, v_free, d)
    cs1, op1 = p1.cs, p1.op
    p2 = asm.build(_contacts_subset(c, np.arange(k - 1)), sim.q, sim.v, v_free, d)
    assert p2.cs is not cs1 and p2.op is not op1
    c3 = _contacts_subset(c1, np.arange(k))           # the first set's contacts, moved
    p3 = asm.build(c3, sim.q, sim.v, v_free, d)
    assert p3.cs is cs1 and p3.op is op1 and asm.ops[:2] == [op1, p2.op]
    ref.assembler.sets = []
    r3 = ref.assembler.build(c3, sim.q, sim.v, v_free, d)
    assert r3.cs is not cs1
    x = np.random.default_rng(0).normal(size=p3.op.m)
    assert np.array_equal(p3.g, r3.g) and np.array_equal(p3.cones.arrays()[3], r3.cones.arrays()[3])
    assert (p3.x0 is None) == (r3.x0 is None) and (p3.x0 is None or np.array_equal(p3.x0, r3.x0))
    assert np.array_equal(p3.op.J_apply(sim.v), r3.op.J_apply(sim.v))
    assert np.array_equal(p3.op.matvec(x), r3.op.matvec(x))


def test_unchanged_contact_set_is_refreshed_in_place_bitwise():
    """A step whose contact keys equal the previous step's refreshes the previous constraint set
    and operator in place (`ConstraintSet.refresh_contacts`, `MatrixFreeDelassus.refresh`)
    instead of rebuilding them: the states must be bitwise those of rebuilding every step, on the
    pyramid scene from its start (contacts appearing, modes changing) until it has settled (the
    in-place path taken on most steps)."""
    import scenes
    world = scenes.box_pyramid()
    fast, slow = simstep.Simulator(world), simstep.Simulator(world)
    ops, reused = set(), 0
    for _ in range(400):
        slow.assembler.sets = []                  # forces the rebuild path
        fast.step()
        slow.step()
        reused += id(fast.assembler.op) in ops
        ops.add(id(fast.assembler.op))
    assert reused > 300                  # the in-place path is the common one on a settled pile
    assert np.array_equal(fast.q, slow.q) and np.array_equal(fast.v, slow.v)
    assert np.array_equal(fast.contacts.impulse, slow.contacts.impulse)

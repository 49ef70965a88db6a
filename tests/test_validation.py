"""Bad input at every public entry point of simstep: a clear exception naming the argument,
raised before anything changes (the object compares equal afterwards, bit for bit, and keeps
working: the same add succeeds with good values, build() works, a step gives the same result
as on an object that never saw the bad call). Also: determinism of a contact scene."""
import os
import pickle

import numpy as np
import pytest

import simstep

nan, inf = float("nan"), float("inf")

URDF = """<robot name="r"><link name="base"><inertial><mass value="1"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
<collision><geometry>{geom}</geometry></collision></link></robot>"""
CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for x in (0, 1) for y in (0, 1) for z in (0, 1)) + \
    "f 1 3 2\nf 2 3 4\nf 5 6 7\nf 6 8 7\nf 1 2 5\nf 2 6 5\nf 3 7 4\nf 4 7 8\nf 1 5 3\nf 3 5 7\nf 2 4 6\nf 4 8 6\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("validation")
    (d / "garbage.stl").write_bytes(b"\x00\x01 not a mesh " * 10)
    (d / "flat.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    (d / "cube.obj").write_text(CUBE_OBJ)
    for name, geom in (("ok", '<box size="0.1 0.1 0.1"/>'), ("garbage", f'<mesh filename="{d}/garbage.stl"/>'),
                       ("flat", f'<mesh filename="{d}/flat.obj"/>'), ("missing", '<mesh filename="missing.stl"/>')):
        (d / f"{name}.urdf").write_text(URDF.format(geom=geom))
    return d


def builder():
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_box("a", (0.1, 0.1, 0.1), position=(0, 0, 0.1))
    return b


def state(b):
    return pickle.dumps(b.__dict__)


# ---------------------------------------------------------------- WorldBuilder
SHAPES = {"add_box": dict(half_extents=(0.1, 0.2, 0.3)), "add_sphere": dict(radius=0.1),
          "add_capsule": dict(radius=0.1, length=0.2), "add_cylinder": dict(radius=0.1, length=0.2)}
COMMON = [  # (argument, bad value, exception, message pattern)
    ("velocity", (nan, 0, 0, 0, 0, 0), ValueError, "'n' velocity must be 6 finite numbers"),
    ("velocity", (0, 0, 0, 0, inf, 0), ValueError, "'n' velocity must be 6 finite"),
    ("velocity", (1, 2, 3), ValueError, "'n' velocity must be 6"),
    ("position", (0, nan, 0), ValueError, "'n' position must be 3 finite"),
    ("position", "abc", TypeError, "'n' position must be numbers"),
    ("quaternion", (0, 0, 0, 2), ValueError, "'n' quaternion .* not a unit quaternion"),
    ("quaternion", (0, 0, 0, 0), ValueError, "'n' quaternion .* not a unit quaternion"),
    ("quaternion", (0, 0, nan, 1), ValueError, "'n' quaternion must be 4 finite"),
    ("mass", nan, ValueError, "'n' mass must be positive"),
    ("mass", -1.0, ValueError, "'n' mass must be positive"),
    ("mass", 0.0, ValueError, "'n' mass must be positive"),
    ("mass", "1", TypeError, "'n' mass must be a number"),
    ("friction", -0.1, ValueError, "'n' friction must be ≥ 0"),
    ("friction", nan, ValueError, "'n' friction must be ≥ 0"),
    ("restitution", 1.5, ValueError, r"'n' restitution must be in \[0, 1\]"),
    ("restitution", -0.1, ValueError, r"'n' restitution must be in \[0, 1\]"),
    ("restitution", nan, ValueError, r"'n' restitution must be in \[0, 1\]"),
    ("compliance", -1e-3, ValueError, "'n' compliance must be ≥ 0"),
    ("compliance", inf, ValueError, "'n' compliance must be ≥ 0"),
    ("inertia", np.eye(2), ValueError, r"'n' inertia must be a finite array of shape \(3, 3\)"),
    ("inertia", np.full((3, 3), nan), ValueError, "'n' inertia must be a finite array"),
    ("inertia", -np.eye(3), ValueError, "'n': inertia is not positive definite"),
    ("com", (0, 0, nan), ValueError, "'n' com must be 3 finite"),
    ("color", (2, 0, 0), ValueError, "'n' color must be rgb or rgba in"),
    ("color", (1, 0), ValueError, "'n' color must be 3 finite"),
    ("group", -1, ValueError, "'n' group must be an integer in"),
    ("group", nan, ValueError, "'n' group must be an integer"),
    ("mask", 2 ** 40, ValueError, "'n' mask must be an integer in"),
    ("fixed", "yes", TypeError, "'n' fixed must be True or False"),
    ("name", "a", ValueError, "object named 'a' already exists"),
    ("name", "ground", ValueError, "object named 'ground' already exists"),
    ("name", "", ValueError, "object name must be a non-empty string"),
    ("name", "world", ValueError, "object name must be a non-empty string other than 'world'"),
    ("name", 3, ValueError, "object name must be a non-empty string"),
]
SIZES = [("half_extents", (0.1, nan, 0.1), ValueError, "'n' half_extents must be 3 finite"),
         ("half_extents", (0.1, -0.1, 0.1), ValueError, "'n': half_extents must be positive"),
         ("half_extents", (0.1, 0.1), ValueError, "'n' half_extents must be 3"),
         ("radius", nan, ValueError, "'n' radius must be positive"), ("radius", 0.0, ValueError, "'n' radius"),
         ("radius", -1.0, ValueError, "'n' radius must be positive"), ("radius", "x", TypeError, "'n' radius"),
         ("length", inf, ValueError, "'n' length must be positive"), ("length", -0.2, ValueError, "'n' length")]
FIXED = [("velocity", (1.0, 0, 0, 0, 0, 0), ValueError, "'n' is fixed, so its velocity must be zero"),
         ("velocity", (nan,) * 6, ValueError, "'n' velocity must be 6 finite"),
         ("mass", nan, ValueError, "'n' mass must be ≥ 0")]
SHAPE_CASES = [pytest.param(m, dict(good, **{arg: val}), exc, pat, id=f"{m}-{arg}={val!r}"[:60])
               for m, good in SHAPES.items() for arg, val, exc, pat in COMMON] + \
    [pytest.param(m, dict(good, **{arg: val}), exc, pat, id=f"{m}-{arg}={val!r}")
     for m, good in SHAPES.items() for arg, val, exc, pat in SIZES if arg in good] + \
    [pytest.param(m, dict(good, fixed=True, **{arg: val}), exc, pat, id=f"{m}-fixed-{arg}={val!r}"[:60])
     for m, good in SHAPES.items() for arg, val, exc, pat in FIXED]


def check_unchanged_and_working(b, before, method, kwargs, good):
    """b equals its state before the rejected call; the same object (name) can now be added
    with good values, and the world builds and steps."""
    assert state(b) == before
    name = kwargs.get("name")
    name = name if isinstance(name, str) and name not in ("", "a", "ground", "world") else "n"
    getattr(b, method)(name=name, **good)
    w = b.build()
    assert name in w.objects
    sim = simstep.Simulator(w, dt=1e-3)
    sim.step()
    assert np.all(np.isfinite(sim.q))


@pytest.mark.parametrize("method, kwargs, exc, pattern", SHAPE_CASES)
def test_builder_shapes_reject_before_adding(method, kwargs, exc, pattern):
    b = builder()
    before = state(b)
    kwargs = dict(kwargs)
    kwargs.setdefault("name", "n")
    with pytest.raises(exc, match=pattern):
        getattr(b, method)(**kwargs)
    check_unchanged_and_working(b, before, method, kwargs, SHAPES[method])


OTHER_CASES = [  # (method, kwargs given the files folder, exception, pattern)
    ("add_ground", lambda d: dict(name="g2", height=nan), ValueError, "'g2' height must be a finite number, got nan"),
    ("add_ground", lambda d: dict(name="g2", height=-inf), ValueError, "'g2' height must be a finite number"),
    ("add_ground", lambda d: dict(name="g2", height="0"), TypeError, "'g2' height must be a number"),
    ("add_ground", lambda d: dict(name="g2", friction=nan), ValueError, "'g2' friction must be ≥ 0"),
    ("add_ground", lambda d: dict(name="g2", restitution=2), ValueError, "'g2' restitution must be in"),
    ("add_ground", lambda d: dict(name="g2", compliance=-1), ValueError, "'g2' compliance must be ≥ 0"),
    ("add_ground", lambda d: dict(name="g2", color=(0.5, nan, 0.5)), ValueError, "'g2' color must be 3 finite"),
    ("add_ground", lambda d: dict(), ValueError, "object named 'ground' already exists"),
    ("add_mesh", lambda d: dict(name="n", path=d / "garbage.stl"), ValueError, "'n': mesh .*garbage.stl"),
    ("add_mesh", lambda d: dict(name="n", path=d / "flat.obj"), ValueError, "'n': mesh .* encloses no volume"),
    ("add_mesh", lambda d: dict(name="n", path=d / "nope.stl"), FileNotFoundError, "'n': mesh file not found"),
    ("add_mesh", lambda d: dict(name="n", path=d / "cube.obj", scale=(1, 0, 1)), ValueError, "'n' scale must be positive"),
    ("add_mesh", lambda d: dict(name="n", path=d / "cube.obj", scale=nan), ValueError, "'n' scale must be 3 finite"),
    ("add_mesh", lambda d: dict(name="n", path=d / "cube.obj", velocity=(nan,) * 6), ValueError, "'n' velocity"),
    ("add_mesh", lambda d: dict(name="n", path=d / "cube.obj", mass=-1), ValueError, "'n' mass must be positive"),
    ("add_mesh", lambda d: dict(name="n", path=d / "cube.obj", convex="yes"), TypeError, "'n' convex must be True"),
    ("add_urdf", lambda d: dict(name="r", path=d / "garbage.urdf"), ValueError, "r/base_collision_0.*garbage.stl"),
    ("add_urdf", lambda d: dict(name="r", path=d / "flat.urdf"), ValueError, "r/base_collision_0.* flat"),
    ("add_urdf", lambda d: dict(name="r", path=d / "missing.urdf"), ValueError, "mesh file 'missing.stl' not found"),
    ("add_urdf", lambda d: dict(name="r", path=d / "nope.urdf"), ValueError, "URDF file not found"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", position=(nan, 0, 0)), ValueError, "'r' position"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", quaternion=(0, 0, 0, 3)), ValueError,
     "'r' quaternion .* not a unit"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", q=(1.0,)), ValueError, "'r' q must be 0 finite"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", friction=nan), ValueError, "'r' friction"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", restitution=-1), ValueError, "'r' restitution"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", mask=-1), ValueError, "'r' mask must be an integer"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", floating_base="no"), TypeError, "'r' floating_base"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", package_dirs=5), TypeError, "'r' package_dirs"),
    ("add_urdf", lambda d: dict(name="r", path=d / "ok.urdf", mimic="copy"), ValueError, "mimic must be"),
    ("add_urdf", lambda d: dict(name="a", path=d / "ok.urdf"), ValueError, "object named 'a' already exists"),
]
GOOD = {"add_ground": lambda d: dict(), "add_mesh": lambda d: dict(path=d / "cube.obj"),
        "add_urdf": lambda d: dict(path=d / "ok.urdf", position=(1, 0, 0.5))}


@pytest.mark.parametrize("method, make_kwargs, exc, pattern",
                         [pytest.param(*c, id=f"{c[0]}-{i}") for i, c in enumerate(OTHER_CASES)])
def test_builder_ground_mesh_urdf_reject_before_adding(files, method, make_kwargs, exc, pattern):
    b = builder()
    before = state(b)
    kwargs = make_kwargs(files)
    with pytest.raises(exc, match=pattern):
        getattr(b, method)(**kwargs)
    if method == "add_ground" and "name" not in kwargs:
        kwargs["name"] = "g2"
    check_unchanged_and_working(b, before, method, kwargs, GOOD[method](files))


@pytest.mark.parametrize("gravity", [(0, 0, nan), (0, -9.81), "down"])
def test_world_builder_gravity(gravity):
    with pytest.raises((ValueError, TypeError), match="gravity must be"):
        simstep.WorldBuilder(gravity=gravity)


def test_issue_reproduction_velocity_nan_then_same_name_works():
    b = simstep.WorldBuilder()
    b.add_ground()
    with pytest.raises(ValueError, match="velocity"):
        b.add_box("box", half_extents=(0.1, 0.1, 0.1), position=(0, 0, 0.1), velocity=(nan, 0, 0, 0, 0, 0))
    b.add_box("box", half_extents=(0.1, 0.1, 0.1), position=(0, 0, 0.1), velocity=(1, 0, 0, 0, 0, 0))
    w = b.build()
    assert w.model.nbodies == 1 and np.array_equal(w.v0, [1, 0, 0, 0, 0, 0])


def test_quaternions_within_tolerance_are_normalised_others_refused():
    b = simstep.WorldBuilder()
    b.add_box("a", (0.1, 0.1, 0.1), quaternion=(0, 0, 0, 1 + 5e-7))
    assert b.build().q0[6] == 1.0
    with pytest.raises(ValueError, match="not a unit quaternion"):
        b.add_box("b", (0.1, 0.1, 0.1), quaternion=(0, 0, 0, 1 + 2e-6))


@pytest.mark.parametrize("body", [None, ["a"], 0.5, True])
def test_world_accessors_reject_non_names(body):
    w = builder().build()
    with pytest.raises(TypeError, match="body must be a body name"):
        w.body_index(body)


# ---------------------------------------------------------------- Simulator(...)
@pytest.fixture(scope="module")
def world():
    b = builder()
    b.add_sphere("s", 0.05, position=(0.3, 0, 0.05), velocity=(0, 0, 0, 0, 0, 20))
    w = b.build()
    simstep.Simulator(w, dt=1e-3).run(2)    # fills the model's lazy caches before anything is compared
    return w


SIM_SETTINGS = [
    (dict(dt=nan), ValueError, "dt must be positive and finite, got nan"), (dict(dt=0), ValueError, "dt must be"),
    (dict(dt=-1e-3), ValueError, "dt must be"), (dict(dt=inf), ValueError, "dt must be"),
    (dict(dt="1e-3"), TypeError, "dt must be a number"),
    (dict(restitution_threshold=nan), ValueError, "restitution_threshold must be ≥ 0 and finite, got nan"),
    (dict(restitution_threshold=-1), ValueError, "restitution_threshold must be ≥ 0"),
    (dict(margin=nan), ValueError, "margin must be ≥ 0"), (dict(margin=-1e-3), ValueError, "margin must be ≥ 0"),
    (dict(erp=nan), ValueError, r"erp must be in \[0, 1\]"), (dict(erp=1.5), ValueError, r"erp must be in \[0, 1\]"),
    (dict(joint_limit_margin=nan), ValueError, "joint_limit_margin must be ≥ 0"),
    (dict(joint_limit_margin=-1), ValueError, "joint_limit_margin must be ≥ 0"),
    (dict(projection_tol=nan), ValueError, "projection_tol must be positive"),
    (dict(projection_tol=0), ValueError, "projection_tol must be positive"),
    (dict(projection_max_iter=nan), ValueError, "projection_max_iter must be an integer"),
    (dict(projection_max_iter=0), ValueError, "projection_max_iter must be an integer ≥ 1"),
    (dict(projection_max_iter=2.5), ValueError, "projection_max_iter must be an integer"),
    (dict(pgs_max_iter=nan), ValueError, "pgs_max_iter must be an integer"),
    (dict(pgs_max_iter=0), ValueError, "pgs_max_iter must be an integer ≥ 1"),
    (dict(max_iter=nan), ValueError, "max_iter must be an integer"),
    (dict(max_iter=0), ValueError, "max_iter must be an integer ≥ 1"),
    (dict(max_iter=10.5), ValueError, "max_iter must be an integer"),
    (dict(eps_abs=nan), ValueError, "eps_abs must be ≥ 0"), (dict(eps_abs=-1e-6), ValueError, "eps_abs must be ≥ 0"),
    (dict(eps_rel=nan), ValueError, "eps_rel must be ≥ 0"),
    (dict(eps_abs=0.0, eps_rel=0.0), ValueError, "positive tolerance"),
    (dict(tau=nan), ValueError, r"tau must be in \(0, 1\]"), (dict(tau=0), ValueError, r"tau must be in \(0, 1\]"),
    (dict(mu_prox=nan), ValueError, "mu_prox must be positive"), (dict(mu_prox=0), ValueError, "mu_prox"),
    (dict(rho_power=nan), ValueError, "rho_power must be a finite number"),
    (dict(rho_power_factor=nan), ValueError, "rho_power_factor must be ≥ 0"),
    (dict(ratio_primal_dual=nan), ValueError, "ratio_primal_dual must be > 1"),
    (dict(ratio_primal_dual=1.0), ValueError, "ratio_primal_dual must be > 1"),
    (dict(eig_iters=0), ValueError, "eig_iters must be an integer ≥ 1"),
    (dict(relaxation=2.0), ValueError, "relaxation must be"), (dict(relaxation=nan), ValueError, "relaxation"),
    (dict(polish="yes"), TypeError, "polish must be True or False"),
    (dict(scaling=0.6), ValueError, r"scaling must be in \[0, 0.5\]"), (dict(scaling=nan), ValueError, "scaling"),
    (dict(contact_slop=nan), ValueError, "contact_slop must be"), (dict(contact_slop=-1e-5), ValueError, "contact_slop"),
    (dict(update_rule="newton"), ValueError, "update_rule must be one of"),
    (dict(ncp="yes"), TypeError, "ncp must be True or False"), (dict(warm_start=nan), TypeError, "warm_start"),
    (dict(keep_rho_power=None), TypeError, "keep_rho_power must be True or False"),
    (dict(max_iters=10), TypeError, r"unknown Simulator settings \['max_iters'\]"),
    (dict(operator="sparse"), ValueError, "operator must be one of"),
    (dict(solver="lcp"), ValueError, "solver must be one of"),
    (dict(collision_backend="bullet"), ValueError, "collision_backend must be one of"),
    (dict(joint_limits="on"), TypeError, "joint_limits must be True or False"),
    (dict(project_closures="on"), TypeError, "project_closures must be True or False"),
    (dict(actuation=[nan] * 12), ValueError, "actuation contains NaN"),
    (dict(actuation=[0.0] * 5), ValueError, r"actuation has shape \(5,\)"),
    (dict(constraints=[1]), TypeError, "unsupported constraint 1"),
    (dict(constraints=5), TypeError, "constraints must be a list"),
    (dict(collision_options=5), TypeError, "collision_options must be a dict"),
    (dict(collision_options=dict(patch_tolerance=nan)), ValueError, "patch_tolerance must be ≥ 0"),
    (dict(collision_options=dict(exclude=[("ghost", "a")])), ValueError, "'ghost' is neither a geometry nor a body"),
    (dict(collision_options=dict(foo=1)), TypeError, "foo"),
]


@pytest.mark.parametrize("settings, exc, pattern", [pytest.param(*c, id=str(c[0])[:50]) for c in SIM_SETTINGS])
def test_simulator_settings_rejected(world, settings, exc, pattern):
    before = pickle.dumps(world)
    with pytest.raises(exc, match=pattern):
        simstep.Simulator(world, **settings)
    assert pickle.dumps(world) == before
    simstep.Simulator(world, dt=1e-3).step()


def test_simulator_needs_a_world():
    with pytest.raises(TypeError, match="Simulator needs a World"):
        simstep.Simulator(builder())


# ---------------------------------------------------------------- Simulator methods
def snapshot(sim):
    """Everything a step reads or writes (state, contacts, warm start, pending forces, settings)."""
    skip = {"detector", "admm", "pgs", "data", "world", "model", "stats", "assembler", "bilateral", "_closure_set", "_proj_data"}
    keep = {k: v for k, v in sim.__dict__.items() if k not in skip}
    keep["warm_start"] = tuple(sim.assembler.warm)[:4]
    keep["kinematics"] = (sim.data.oR.copy(), sim.data.op.copy())
    return pickle.dumps(keep)


Q_OK = np.array([0, 0, 0.1, 0, 0, 0, 1.0, 0.3, 0, 0.05, 0, 0, 0, 1.0])
SIM_CALLS = [  # (label, call, exception, pattern)
    ("set_state v nan", lambda s: s.set_state(Q_OK, [nan] + [0] * 11), ValueError, "v contains NaN"),
    ("set_state v shape", lambda s: s.set_state(Q_OK, np.zeros(6)), ValueError, r"v has shape \(6,\)"),
    ("set_state q nan", lambda s: s.set_state(np.r_[nan, Q_OK[1:]], np.zeros(12)), ValueError, "q contains NaN"),
    ("set_state q quat", lambda s: s.set_state(np.r_[Q_OK[:6], 2.0, Q_OK[7:]], np.zeros(12)), ValueError,
     "quaternion of joint 'a'"),
    ("set_state q str", lambda s: s.set_state("q", np.zeros(12)), TypeError, "q must be an array of numbers"),
    ("set_state t nan", lambda s: s.set_state(Q_OK, np.zeros(12), t=nan), ValueError, "t must be a finite number"),
    ("set_state t inf", lambda s: s.set_state(Q_OK, np.zeros(12), t=inf), ValueError, "t must be a finite number"),
    ("set_state t str", lambda s: s.set_state(Q_OK, np.zeros(12), t="0"), TypeError, "t must be a number"),
    ("set_actuation nan", lambda s: s.set_actuation([nan] * 12), ValueError, "actuation contains NaN"),
    ("set_actuation shape", lambda s: s.set_actuation([0.0] * 6), ValueError, "actuation has shape"),
    ("set_actuation str", lambda s: s.set_actuation("x"), TypeError, "actuation must be an array"),
    ("apply_force nan", lambda s: s.apply_force("a", (nan, 0, 0)), ValueError, "force must be 3 finite"),
    ("apply_force shape", lambda s: s.apply_force("a", (1, 0)), ValueError, "force must be 3 finite"),
    ("apply_force point", lambda s: s.apply_force("a", (1, 0, 0), point=(nan, 0, 0)), ValueError, "point must be"),
    ("apply_force torque", lambda s: s.apply_force("a", (1, 0, 0), torque=(inf, 0, 0)), ValueError, "torque must"),
    ("apply_force unknown", lambda s: s.apply_force("ghost", (1, 0, 0)), KeyError, "unknown body 'ghost'"),
    ("apply_force static", lambda s: s.apply_force("ground", (1, 0, 0)), KeyError, "unknown body 'ground'"),
    ("apply_force world", lambda s: s.apply_force("world", (1, 0, 0)), ValueError, "cannot apply a force to 'world'"),
    ("apply_force index", lambda s: s.apply_force(7, (1, 0, 0)), KeyError, "body index 7 out of range"),
    ("apply_force list", lambda s: s.apply_force(["a"], (1, 0, 0)), TypeError, "body must be a body name"),
    ("body_pose unknown", lambda s: s.body_pose("ghost"), KeyError, "unknown body 'ghost'"),
    ("body_pose None", lambda s: s.body_pose(None), TypeError, "body must be a body name"),
    ("body_velocity unknown", lambda s: s.body_velocity("ghost"), KeyError, "unknown body 'ghost'"),
    ("body_velocity float", lambda s: s.body_velocity(1.0), TypeError, "body must be a body name"),
    ("run steps nan", lambda s: s.run(nan), ValueError, "steps must be an integer"),
    ("run steps -1", lambda s: s.run(-1), ValueError, "steps must be an integer ≥ 0"),
    ("run steps 1.5", lambda s: s.run(1.5), ValueError, "steps must be an integer, got 1.5"),
    ("run steps str", lambda s: s.run("3"), TypeError, "steps must be an integer"),
    ("run record", lambda s: s.run(2, record="yes"), TypeError, "record must be True or False"),
    ("run callback", lambda s: s.run(2, callback=5), TypeError, "callback must be callable"),
    ("run viewer", lambda s: s.run(2, viewer=object()), TypeError, "viewer must have an update"),
    ("step tau nan", lambda s: s.step([nan] * 12), ValueError, "tau contains NaN"),
    ("step tau shape", lambda s: s.step(np.zeros(3)), ValueError, r"tau has shape \(3,\)"),
    ("step tau str", lambda s: s.step("x"), TypeError, "tau must be an array of numbers"),
]


def warm_sim(world):
    sim = simstep.Simulator(world, dt=1e-3)
    sim.run(5)      # contacts, warm start and kinematics of a state other than the initial one
    return sim


@pytest.mark.parametrize("call, exc, pattern", [pytest.param(*c[1:], id=c[0]) for c in SIM_CALLS])
def test_simulator_methods_reject_before_changing(world, call, exc, pattern):
    sim, ref = warm_sim(world), warm_sim(world)
    before = snapshot(sim)
    assert before == snapshot(ref)
    with pytest.raises(exc, match=pattern):
        call(sim)
    assert snapshot(sim) == before
    sim.step()
    ref.step()        # the next step is exactly the one of a simulator that never saw the bad call
    assert snapshot(sim) == snapshot(ref)


def test_issue_reproduction_set_state_keeps_q():
    b = builder()
    sim = simstep.Simulator(b.build(), dt=1e-3)
    q_ok = sim.q.copy()
    q_ok[0] = 0.5
    with pytest.raises(ValueError, match="v contains NaN"):
        sim.set_state(q_ok, np.full(6, nan))
    assert sim.q[0] == 0.0
    sim.set_state(q_ok, np.zeros(6), t=2.0)
    assert sim.q[0] == 0.5 and sim.t == 2.0


def test_integral_floats_are_accepted_as_counts(world):
    sim = simstep.Simulator(world, dt=1e-3, max_iter=200.0)
    sim.run(steps=2.0)
    assert sim.steps == 2


# ---------------------------------------------------------------- determinism
def test_same_inputs_give_bitwise_identical_runs():
    """Two simulators of one world, 500 steps of a contact scene (a stack that settles, a box
    sliding and spinning into it, a rolling ball): identical q, v and impulses, bit for bit."""
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    for i in range(3):
        b.add_box(f"s{i}", (0.1, 0.1, 0.1), position=(0.01 * i, 0, 0.1 + 0.2 * i), quaternion=(0, 0, 0.1, np.sqrt(0.99)))
    b.add_box("slider", (0.1, 0.05, 0.05), position=(-0.6, 0, 0.05), velocity=(2, 0, 0, 0, 0, 3))
    b.add_sphere("ball", 0.05, position=(0.5, 0.3, 0.05), velocity=(-1, 0, 0, 0, -20, 0))
    w = b.build()
    sims = [simstep.Simulator(w, dt=2e-3) for _ in range(2)]
    for sim in sims:
        sim.run(500)
    assert len(sims[0].contacts) > 0
    assert np.array_equal(sims[0].q, sims[1].q) and np.array_equal(sims[0].v, sims[1].v)
    assert np.array_equal(sims[0].contacts.impulse, sims[1].contacts.impulse)

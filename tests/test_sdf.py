"""SDF loading with closed loops (models.load_sdf, WorldBuilder.add_sdf) and Cassie.

The `pin` wheels have no SDFormat, so there is no Pinocchio oracle here: the spanning tree
and closures are checked by hand on a four-bar written for the test (tests/data/sdf), the
SDF semantics on small files written in the tests, and Cassie (example-robot-data) by its
closure errors, its mass matrix, the matrix-free Delassus operators against the dense
baseline on its loop rows, and by simulating it (hanging, standing)."""
import os
import warnings

import numpy as np
import pytest

import models
import scenes
import simstep
from scenes.biped import cassie_path, cassie_posture, load_cassie
from simstep.projection import project_loop_closures
from solvers import Contact, DenseDelassus, MatrixFreeDelassus

DATA = os.path.join(os.path.dirname(__file__), "data", "sdf")
FOUR_BAR = os.path.join(DATA, "four_bar.sdf")
CASSIES = ["cassie.sdf", "cassie_v2.sdf", "cassie_reduced.sdf", "cassie_simple.sdf", "cassie_wo_gearbox_spring.sdf"]


def link_poses(model, q, names):
    oR, op = models.forward_kinematics(model, q)
    out = {}
    for n in names:
        b, R, p = model.body_placement_offset(n)
        out[n] = (oR[b] @ R, oR[b] @ p + op[b]) if b >= 0 else (R, p)
    return out


def closure_error(model, q, closures):
    return project_loop_closures(model, q, closures, max_iter=0).residual


def write(tmp_path, body, name="m.sdf", version="1.7"):
    p = tmp_path / name
    p.write_text(f'<sdf version="{version}"><model name="m">{body}</model></sdf>')
    return p


def link(name, pose="0 0 0", mass=1.0, extra=""):
    if len(pose.split()) == 3:
        pose += " 0 0 0"
    return (f'<link name="{name}"><pose>{pose}</pose><inertial><mass>{mass}</mass><inertia><ixx>0.01</ixx>'
            f'<iyy>0.01</iyy><izz>0.01</izz></inertia></inertial>{extra}</link>')


def joint(name, jtype, parent, child, axis="0 1 0", extra=""):
    ax = f"<axis><xyz>{axis}</xyz></axis>" if axis else ""
    return f'<joint name="{name}" type="{jtype}"><parent>{parent}</parent><child>{child}</child>{ax}{extra}</joint>'


# ----------------------------------------------------------------------------- the four-bar, by hand
def test_four_bar_spanning_tree_and_closure_by_hand():
    """The joint written last closes the loop (all are revolute: ties keep file order): the
    tree is ground (welded) → crank → coupler → rocker with the hinge frames at A, B, C, and
    the cut hinge at D becomes two point closures on its axis (y), 0.1 m apart."""
    model, closures = models.load_sdf(FOUR_BAR, floating_base=False)
    assert model.sdf["tree_joints"] == ["j_crank", "j_coupler", "j_rocker"]
    assert model.sdf["loop_joints"] == ["j_close"]
    assert model.body_names == ["crank", "coupler", "rocker"] and list(model.parent) == [-1, 0, 1]
    assert model.joint_names == ["j_crank", "j_coupler", "j_rocker"]
    Xp = model.jfloat[:, 9:12]
    assert np.allclose(Xp, [[0, 0, 1], [0.1, 0, 0], [0.3, 0, 0.4]])       # A in the world, B, C in their parents
    assert np.allclose(model.jfloat[:, 0:9], np.eye(3).reshape(9))
    assert np.allclose(model.jfloat[:, 12:15], [0, 1, 0])
    assert np.allclose(model.mass, [0.2, 1.0, 0.8])
    assert np.allclose(model.com, [[0.05, 0, 0], [0.15, 0, 0.2], [0, 0, -0.2]])
    assert np.allclose(model.inertia[1], [[0.0134, 0, -0.0098], [0, 0.0209, 0], [-0.0098, 0, 0.0076]])
    assert model.damping[0] == 0.01 and (model.lower[2], model.upper[2]) == (-1.5, 1.5)
    assert [c.kind for c in closures] == ["point", "point"]
    for c, y in zip(closures, (0.0, 0.1)):
        assert c.body1 == "rocker" and c.body2 == "world"
        assert np.allclose(c.placement1[0], (0, y, -0.4)) and np.allclose(c.placement2[0], (0.4, y, 1.0))
    assert np.array_equal(model.q0, np.zeros(3)) and closure_error(model, model.q0, closures) < 1e-15
    # ground is welded: its visual is static, the crank's collision carries the file's friction
    (rod,) = model.collision_geometries
    assert rod.body == 0 and rod.kind == "cylinder" and np.allclose(rod.size, (0.01, 0.1))
    assert rod.sdf_friction == 0.3


def test_four_bar_closes_on_the_analytic_solution():
    """Turn the crank and project: at the crank angle t it ends at, the rocker's pivot C is
    the four-bar's (elbow-up) solution, on the circles |C − B| = 0.5 and |C − D| = 0.4."""
    model, closures = models.load_sdf(FOUR_BAR, floating_base=False)
    for t0 in (0.3, -0.5, 1.2):
        r = project_loop_closures(model, np.array([t0, -t0, 0.0]), closures, tol=1e-13, max_iter=30)
        assert r.converged
        t = r.q[0]
        P = link_poses(model, r.q, ["rocker", "coupler"])
        C = P["rocker"][1]
        B = np.array([0.1 * np.cos(t), 0.0, 1.0 - 0.1 * np.sin(t)])        # rotation about +y by t
        D = np.array([0.4, 0.0, 1.0])
        assert np.isclose(np.linalg.norm(C - B), 0.5, atol=1e-12) and np.isclose(np.linalg.norm(C - D), 0.4, atol=1e-12)
        assert np.allclose(P["coupler"][1], B, atol=1e-12)
        # the analytic elbow-up C
        e = D - B
        L = np.linalg.norm(e)
        x = (L * L + 0.25 - 0.16) / (2 * L)
        u = e / L
        n = np.array([-u[2], 0.0, u[0]])
        cands = [B + x * u + s * np.sqrt(0.25 - x * x) * n for s in (1, -1)]
        assert np.allclose(C, max(cands, key=lambda c: c[2]), atol=1e-9)


def test_cutting_another_joint_reverses_tree_joints():
    """loop_joints=["j_coupler"]: the tree becomes ground → crank and ground → rocker (through
    j_close at D) → coupler through j_rocker *reversed* (parent and child swapped: same angle,
    negated axis). The same physical configuration gives the same link poses."""
    a, ca = models.load_sdf(FOUR_BAR, floating_base=False)
    b, cb = models.load_sdf(FOUR_BAR, floating_base=False, loop_joints=["j_coupler"])
    assert b.sdf["tree_joints"] == ["j_crank", "j_close", "j_rocker"] and b.sdf["loop_joints"] == ["j_coupler"]
    assert b.body_names == ["crank", "rocker:j_close", "coupler:j_rocker"]
    assert list(b.parent) == [-1, -1, 1]
    assert np.allclose(b.jfloat[2, 12:15], (0, -1, 0))                  # reversed: negated axis
    assert np.allclose(b.jfloat[1, 9:12], (0.4, 0, 1.0))                # j_close's frame at D
    assert np.allclose(b.frames["rocker"].translation, (0, 0, 0.4))     # the rocker link from D
    assert np.allclose(b.frames["coupler"].translation, (-0.3, 0, -0.4))
    assert all(c.body1 == "coupler:j_rocker" and c.body2 == "crank" for c in cb)
    assert np.allclose(cb[0].placement1[0], (-0.3, 0, -0.4)) and np.allclose(cb[0].placement2[0], (0.1, 0, 0))
    qa = project_loop_closures(a, np.array([0.4, -0.2, 0.0]), ca, tol=1e-13, max_iter=30).q
    # SDF joint angles of that configuration: j_close = rocker's rotation w.r.t. the ground
    qb = np.array([qa[0], qa[0] + qa[1] + qa[2], qa[2]])
    assert closure_error(b, qb, cb) < 1e-12
    Pa, Pb = link_poses(a, qa, ["crank", "coupler", "rocker"]), link_poses(b, qb, ["crank", "coupler", "rocker"])
    for n in Pa:
        assert np.allclose(Pa[n][0], Pb[n][0], atol=1e-12) and np.allclose(Pa[n][1], Pb[n][1], atol=1e-12), n


def test_four_bar_world_simulates_with_closed_loop():
    wb = simstep.WorldBuilder()
    wb.add_sdf("fb", FOUR_BAR, floating_base=False, q=[0.5, -0.5, 0.0])    # opened: build() closes it
    w = wb.build()
    assert len(w.constraints) == 2 and closure_error(w.model, w.q0, w.constraints) < 1e-12
    assert w.geometries[0].friction == 0.3                                 # the file's surface friction
    sim = simstep.Simulator(w)
    for _ in range(500):
        sim.step()
        assert sim.stats.projection_residual < 1e-9
    assert np.abs(sim.q - w.q0).max() > 0.1                               # it swung under gravity


# ----------------------------------------------------------------------------- SDF semantics
def test_axis_frames_poses_and_defaults(tmp_path):
    """Axis in the joint frame (1.7 default) or in the model frame (expressed_in="__model__",
    use_parent_model_frame of 1.6), joint poses relative to the child link, <frame> with
    attached_to and relative_to, degrees, SDF's default inertial (1 kg, unit inertia).
    Link a: 1 m up, turned 90° about z (its x is the world's y); frame f: 0.5 m along a's x,
    turned 90° more; link b at f; joint jb 0.2 m above b."""
    body = (link("base") + link("a", "0 0 1 0 0 1.5707963267948966")
            + '<frame name="f" attached_to="a"><pose degrees="true">0.5 0 0 0 0 90</pose></frame>'
            + '<link name="b"><pose relative_to="f">0 0 0 0 0 0</pose></link>'
            + joint("ja", "revolute", "base", "a", axis="1 0 0")
            + '<joint name="jb" type="revolute"><pose>0 0 0.2 0 0 0</pose><parent>a</parent><child>b</child>'
              '<axis><xyz expressed_in="__model__">1 0 0</xyz></axis></joint>')
    model, _ = models.load_sdf(write(tmp_path, body), floating_base=False)
    assert model.body_names == ["a", "b:jb"] and model.joint_names == ["ja", "jb"]
    oR, op = models.forward_kinematics(model, model.q0)
    assert np.allclose(oR[0] @ model.jfloat[0, 12:15], (0, 1, 0), atol=1e-12)    # a's x = the world's y
    assert np.allclose(oR[1] @ model.jfloat[1, 12:15], (1, 0, 0), atol=1e-12)    # the model's x
    Pb = link_poses(model, model.q0, ["b"])["b"]
    assert np.allclose(Pb[1], (0, 0.5, 1.0), atol=1e-12)
    assert np.allclose(Pb[0], [[-1, 0, 0], [0, -1, 0], [0, 0, 1]], atol=1e-12)    # turned 180° about z
    assert np.allclose(op[1], (0, 0.5, 1.2), atol=1e-12)                          # jb's frame, 0.2 above b
    assert np.isclose(model.mass[1], 1.0) and np.allclose(model.inertia[1], np.eye(3))   # SDF's defaults
    # SDF 1.6: use_parent_model_frame
    body16 = (link("base") + link("a", "0 0 1 0 0 1.5707963267948966")
              + '<joint name="ja" type="revolute"><parent>base</parent><child>a</child>'
                '<axis><xyz>1 0 0</xyz><use_parent_model_frame>1</use_parent_model_frame></axis></joint>')
    m16, _ = models.load_sdf(write(tmp_path, body16, "m16.sdf", "1.6"), floating_base=False)
    assert np.allclose(models.forward_kinematics(m16, m16.q0)[0][0] @ m16.jfloat[0, 12:15], (1, 0, 0), atol=1e-12)


def test_universal_and_ball_joints_and_fixed_links(tmp_path):
    body = (link("base") + link("cross", "0 0 1") + link("arm", "0 0 1", mass=2.0) + link("tip", "0 0 0.5", mass=0.5)
            + joint("u", "universal", "base", "cross", axis="1 0 0",
                    extra="<axis2><xyz>0 1 0</xyz></axis2>")
            + joint("w", "fixed", "cross", "arm", axis=None)
            + joint("s", "ball", "arm", "tip", axis=None))
    model, closures = models.load_sdf(write(tmp_path, body))
    assert closures == [] and model.nv == 6 + 2 + 3
    assert model.joint_names == ["root_joint", "u_1", "u_2", "s"]
    assert model.body_names[1] == "cross:u_1" and model.mass[1] == 0.0   # the universal's massless middle
    assert np.isclose(model.mass[2], 3.0)                                  # cross + arm welded
    assert "arm" in model.frames
    M = models.crba(model, model.random_configuration(0))
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_ball_and_fixed_cuts(tmp_path):
    """A triangle of links closed by a ball joint: the ball is cut (a point closure). Closed
    by a fixed joint: the fixed joint is kept (merged, no dofs) and a hinge is cut (two
    points), unless loop_joints asks for the fixed joint (a weld)."""
    for jt, cut, kinds, kw in (("ball", "ca", ["point"], {}), ("fixed", "bc", ["point", "point"], {}),
                               ("fixed", "ca", ["weld"], dict(loop_joints=["ca"]))):
        body = (link("a") + link("b", "1 0 0") + link("c", "1 1 0")
                + joint("ab", "revolute", "a", "b", axis="0 0 1") + joint("bc", "revolute", "b", "c", axis="0 0 1")
                + joint("ca", jt, "c", "a", axis=None))
        model, closures = models.load_sdf(write(tmp_path, body, f"{jt}.sdf"), **kw)
        assert model.sdf["loop_joints"] == [cut] and [c.kind for c in closures] == kinds
        assert closure_error(model, model.q0, closures) < 1e-15
        q = model.q0.copy()
        q[7:] += 0.3
        r = project_loop_closures(model, q, closures, tol=1e-12, max_iter=30)
        assert r.converged


# ----------------------------------------------------------------------------- errors
def test_clear_errors(tmp_path):
    p = tmp_path / "bad.sdf"
    p.write_text('<sdf version="1.7"><model name="m"><link name="a"></model></sdf>')
    with pytest.raises(models.SDFError, match="malformed XML"):
        models.load_sdf(p)
    mesh = link("a", extra='<visual name="v"><geometry><mesh><uri>model://nowhere/part.stl</uri></mesh>'
                           '</geometry></visual>')
    with pytest.raises(models.SDFError, match="nowhere/part.stl.*not found"):
        models.load_sdf(write(tmp_path, mesh))
    rel = link("a", extra='<collision name="c"><geometry><mesh><uri>meshes/x.stl</uri></mesh></geometry></collision>')
    with pytest.raises(models.SDFError, match="meshes/x.stl"):
        models.load_sdf(write(tmp_path, rel))
    for jt in ("screw", "hinge9"):
        with pytest.raises(models.SDFError, match="screw|unsupported type"):
            models.load_sdf(write(tmp_path, link("a") + link("b") + joint("j", jt, "a", "b")))
    with pytest.raises(models.SDFError, match="does not exist"):
        models.load_sdf(write(tmp_path, link("a") + joint("j", "revolute", "a", "zz")))
    loop = (link("a") + link("b") + link("c") + joint("p1", "prismatic", "a", "b") + joint("p2", "prismatic", "b", "c")
            + joint("p3", "prismatic", "c", "a"))
    with pytest.raises(models.SDFError, match="cannot be cut|no joint that can be cut"):
        models.load_sdf(write(tmp_path, loop))
    spring = (link("a") + link("b", "1 0 0") + link("c", "1 1 0") + joint("ab", "revolute", "a", "b", axis="0 0 1")
              + joint("bc", "revolute", "b", "c", axis="0 0 1")
              + '<joint name="ca" type="revolute"><parent>c</parent><child>a</child><axis><xyz>0 0 1</xyz>'
                '<dynamics><spring_stiffness>10</spring_stiffness></dynamics></axis></joint>')
    model, _ = models.load_sdf(write(tmp_path, spring))
    assert model.sdf["loop_joints"] != ["ca"] and [s.joint for s in model.springs] == ["ca"]
    with pytest.raises(models.SDFError, match="spring"):
        models.load_sdf(write(tmp_path, spring), loop_joints=["ca"])
    with pytest.raises(models.SDFError, match="<include>"):
        models.load_sdf(write(tmp_path, "<include><uri>model://x</uri></include>"))
    with pytest.raises(models.SDFError, match="gearbox"):
        models.load_sdf(cassie_path("cassie.sdf"), gearbox="error")
    with pytest.raises(models.SDFError, match="not found"):
        models.load_sdf(tmp_path / "none.sdf")
    # a failed add_sdf leaves the builder as it was
    wb = simstep.WorldBuilder()
    wb.add_sdf("ok", FOUR_BAR, floating_base=False)
    with pytest.raises(models.SDFError):
        wb.add_sdf("bad", write(tmp_path, mesh))
    with pytest.raises(ValueError, match="'bad2' q"):
        wb.add_sdf("bad2", FOUR_BAR, floating_base=False, q=[0.1, 0.2])
    assert len(wb._closures) == 2 and not {"bad", "bad2"} & set(wb._objects) and len(wb._mb.bodies) == 3
    assert len(wb._q0) == 1 and wb.build().model.nq == 3


# ----------------------------------------------------------------------------- Cassie
@pytest.mark.parametrize("variant", CASSIES)
def test_cassie_variants_load_with_closed_loops(variant):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, closures = models.load_sdf(cassie_path(variant))
    assert any("plugin" in str(w.message) for w in caught)          # the Gazebo plugin is named, not run
    if variant == "cassie.sdf":
        assert any("gearbox" in str(w.message) for w in caught)
        assert model.nv == 30 and sum(c.nrows for c in closures) == 24
    else:
        assert model.nv == 28 and sum(c.nrows for c in closures) == 12
    assert closure_error(model, model.q0, closures) < 1e-12
    assert len(model.springs) == 4 and {s.stiffness for s in model.springs} == {1500.0, 1250.0}
    assert np.isclose(model.mass.sum(), 32.94 + (2.045552 if variant == "cassie.sdf" else 0.0))


def test_cassie_gearbox_armature_by_hand():
    """left-roll: rotor 'left-roll-reference', inertia about its hinge (model x, through the
    link origin) ≈ its principal 7.3735e-5 kg·m² (the inertial's 90° pitch and the link's
    cancel), ratio 0.04: armature 7.3735e-5 / 0.04² on left-roll-op."""
    model, _ = load_cassie("cassie.sdf")
    assert np.isclose(model.armature[model.joint_v_index("left-roll-op")], 7.3735e-5 / 0.04 ** 2, rtol=2e-3)
    assert np.isclose(model.armature[model.joint_v_index("left-foot-op")], 0.02544, rtol=1e-3)
    assert model.armature[model.joint_v_index("left-crank-rod-joint")] == 0.0


def test_cassie_mass_matrix_is_symmetric_positive_definite():
    model, closures = load_cassie("cassie.sdf")
    rng = np.random.default_rng(0)
    for q in [cassie_posture(model, closures)] + [model.random_configuration(rng) for _ in range(5)]:
        M = models.crba(model, q)
        assert np.abs(M - M.T).max() <= 1e-14 * np.abs(M).max()
        assert np.linalg.eigvalsh(M).min() > 1e-6


def _cassie_constraints(model, closures, q):
    """Cassie's loop closures plus 8 contacts (4 under each foot) with random frames."""
    rng = np.random.default_rng(1)
    oR, op = models.forward_kinematics(model, q)
    cons = list(closures)
    for side in ("left", "right"):
        b = model.body_index(f"{side}-foot")
        for k in range(4):
            Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
            Q = Q * np.sign(np.diag(R))
            Q[:, 0] *= np.sign(np.linalg.det(Q))
            cons.append(Contact(b, -1, op[b] + oR[b] @ rng.normal(size=3) * 0.05, Q, 0.8))
    return cons


@pytest.mark.parametrize("variant,loop_rows", [("cassie_v2.sdf", 12), ("cassie.sdf", 24)])
@pytest.mark.parametrize("with_contacts", [False, True])
def test_cassie_matrix_free_operators_match_dense(variant, loop_rows, with_contacts):
    """Λ⁻¹ (G by matvec columns) and Λ_R (damped solves) of the matrix-free operators equal
    the dense baseline's on Cassie's loop-closure rows (4 ball joints; cassie.sdf also its two
    knee-spring hinges, 6 rows of rank 5 each), alone and with 8 foot contacts."""
    model, closures = load_cassie(variant)
    q = cassie_posture(model, closures)
    cons = _cassie_constraints(model, closures, q) if with_contacts else list(closures)
    F, D = MatrixFreeDelassus(model, q, cons), DenseDelassus(model, q, cons)
    assert F.m == D.m == loop_rows + (24 if with_contacts else 0)
    G = np.column_stack([F.matvec(e) for e in np.eye(F.m)])
    assert np.abs(G - D.matrix()).max() <= 1e-10 * np.abs(D.matrix()).max()
    rng = np.random.default_rng(2)
    for d in (1.0, 1e-2, 1e-4):
        F.update_damping(d)
        D.update_damping(d)
        b = rng.normal(size=F.m)
        x, y = F.solve(b, refine=1), D.solve(b, refine=1)
        assert np.linalg.norm(x - y) <= 1e-9 * np.linalg.norm(y)
    v = rng.normal(size=model.nv)
    assert np.allclose(F.J_apply(v), D.J @ v, atol=1e-12)
    lam = rng.normal(size=F.m)
    assert np.allclose(F.JT_minv(lam), np.linalg.solve(D.M, D.J.T @ lam), rtol=1e-9, atol=1e-12)


def test_cassie_hangs_from_a_fixed_base_with_closed_loops():
    w = scenes.biped(pose="hanging")
    assert w.model.jtype[0] != models.FREE and sum(c.nrows for c in w.constraints) == 12
    sim = simstep.Simulator(w)
    worst = 0.0
    for _ in range(1000):
        sim.step()
        worst = max(worst, sim.stats.projection_residual)
        assert sim.stats.converged
    assert worst <= 1e-6                                    # m, after the position projection
    assert closure_error(w.model, sim.q, w.constraints) <= 1e-6
    assert np.abs(sim.v).max() < 5.0


def test_cassie_stands_with_a_joint_pd():
    """Standing posture, PD on the 10 motors (with rotor inertia), springs: for 3 s the loops
    stay closed and the ADMM converges at every step; the pelvis ends within 1 cm of its start
    height, tilted < 0.03 rad, on both feet (measured: 3 mm lower, 0.011 rad, 1 ADMM
    iteration per step once settled)."""
    w = scenes.biped(pose="standing")
    m = w.model
    iq = m.joint_q_index("cassie/root_joint")
    z0 = w.q0[iq + 2]
    sim = simstep.Simulator(w)
    for k in range(3000):
        sim.step()
        assert sim.stats.converged and sim.stats.projection_residual <= 1e-6
    x, y, z, s = sim.q[iq + 3:iq + 7]
    tilt = 2 * np.arcsin(min(1.0, np.hypot(x, y)))
    assert abs(sim.q[iq + 2] - z0) < 0.01 and tilt < 0.03
    feet = {w.model.body_names[b] for b in sim.contacts.body1}
    assert feet == {"cassie/left-foot", "cassie/right-foot"} and sim.stats.ncontacts >= 4


def test_cassie_falls_and_collapses_with_closed_loops():
    """Unactuated but for its springs, dropped from 0.3 m: it lands, folds and lies on the
    ground within 2 s; the loops stay closed throughout (measured over 3 s: 166 of 3000
    steps end at the ADMM's iteration cap, all while it folds, none once it lies still)."""
    w = scenes.biped(pose="falling")
    iq = w.model.joint_q_index("cassie/root_joint")
    sim = simstep.Simulator(w)
    capped = 0
    for _ in range(2000):
        sim.step()
        capped += not sim.stats.converged
        assert sim.stats.projection_residual <= 1e-6
    assert sim.q[iq + 2] < 0.5 and np.all(np.isfinite(sim.q))
    assert capped < 600


def test_joints_to_the_world_and_static_models(tmp_path):
    """cassie_simple.sdf slides its pelvis on a vertical prismatic joint to the world: kept
    with floating_base=False, replaced by a free joint (with a warning) otherwise. A static
    model's links are all welded to the world."""
    model, closures = load_cassie("cassie_simple.sdf", floating_base=False)
    assert model.joint_names[0] == "static" and model.nv == 1 + 22 and model.parent[0] == -1
    assert (model.lower[0], model.upper[0]) == (0.0, 0.2) and len(closures) == 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, _ = models.load_sdf(cassie_path("cassie_simple.sdf"))
    assert any("['static'] attach the model to the world" in str(w.message) for w in caught)
    assert model.joint_names[0] == "root_joint" and model.nv == 6 + 22
    body = ("<static>true</static>" + link("a", extra='<collision name="c"><geometry><box><size>1 1 1</size></box>'
                                                   '</geometry></collision>') + link("b", "0 0 2")
            + joint("j", "revolute", "a", "b"))
    model, closures = models.load_sdf(write(tmp_path, body))
    assert model.nbodies == 0 and closures == [] and model.collision_geometries[0].body == -1
    assert model.frames["b"].body == -1 and np.allclose(model.frames["b"].translation, (0, 0, 2))

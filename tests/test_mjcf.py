"""MJCF loading (models.load_mjcf, WorldBuilder.add_mjcf) against MuJoCo itself, on the
small models of tests/data/mjcf: a humanoid-like tree (free root, ball and multi-joint
bodies, joint anchors off the body origin, a nonzero ref, armature, degrees), a hinge chain,
free boxes and an equality-closed four-bar. Oracle: MuJoCo's compiled model and its own
functions (mj_fullM, qfrc_bias, body poses, mj_integratePos, efc_pos, its Euler integrator)."""
import os
import sys
import warnings

import numpy as np
import pytest

import models
import simstep

mujoco = pytest.importorskip("mujoco")

DATA = os.path.join(os.path.dirname(__file__), "data", "mjcf")
FILES = ["humanoid_tree", "hinge_chain", "box_pile", "connect_loop"]


def path_of(name):
    return os.path.join(DATA, name + ".xml")


def random_qpos(mm, rng, scale=1.0):
    """A random MuJoCo configuration: joints perturbed from qpos0, unit quaternions."""
    qpos = mm.qpos0.copy()
    for j in range(mm.njnt):
        a, t = mm.jnt_qposadr[j], mm.jnt_type[j]
        if t == 0:
            qpos[a:a + 3] += rng.normal(size=3) * 0.3 * scale
            u = rng.normal(size=4)
            qpos[a + 3:a + 7] = u / np.linalg.norm(u)
        elif t == 1:
            u = rng.normal(size=4)
            qpos[a:a + 4] = u / np.linalg.norm(u)
        else:
            qpos[a] += rng.normal() * scale
    return qpos


def mj_state(mm, qpos, qvel):
    d = mujoco.MjData(mm)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(mm, d)
    return d


# ----------------------------------------------------------------------------- dynamics
@pytest.mark.parametrize("name", FILES)
def test_mass_matrix_and_bias_match_mujoco(name):
    """CRBA = mj_fullM and the bias forces = qfrc_bias at random states, armature included.
    Free joints: v = T qvel (the linear part rotated into the body frame), so MuJoCo's M is
    Tᵀ M T and its bias Tᵀ (h + M Ṫ qvel), with Ṫ qvel = −ω × v_body on the linear rows."""
    model, _ = models.load_mjcf(path_of(name))
    mm = mujoco.MjModel.from_xml_path(path_of(name))
    assert (model.nq, model.nv) == (mm.nq, mm.nv)
    if name == "humanoid_tree":
        assert np.any(model.armature > 0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        qpos, qvel = random_qpos(mm, rng), rng.normal(size=mm.nv)
        d = mj_state(mm, qpos, qvel)
        M_mj = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, d, M_mj)
        mp = model.mjcf
        q, v, T = mp.qpos_to_q(qpos), mp.qvel_to_v(qpos, qvel), mp.velocity_map(qpos)
        M = models.crba(model, q)
        assert np.abs(T.T @ M @ T - M_mj).max() <= 1e-9 * np.abs(M_mj).max()
        Tdot_qvel = np.zeros(mm.nv)
        for _, dof in mp.free:
            Tdot_qvel[dof:dof + 3] = -np.cross(v[dof + 3:dof + 6], v[dof:dof + 3])
        bias = T.T @ (models.nonlinear_effects(model, q, v) + M @ Tdot_qvel)
        assert np.abs(bias - d.qfrc_bias).max() <= 1e-9 * max(1.0, np.abs(d.qfrc_bias).max())


def test_hinge_and_slide_trees_keep_mujoco_layout():
    """q = qpos and v = qvel for hinge/slide trees; per joint the indices are MuJoCo's."""
    model, _ = models.load_mjcf(path_of("hinge_chain"))
    mm = mujoco.MjModel.from_xml_path(path_of("hinge_chain"))
    qpos = random_qpos(mm, np.random.default_rng(1))
    assert np.array_equal(model.mjcf.qpos_to_q(qpos), qpos)
    assert np.array_equal(model.mjcf.qvel_to_v(qpos, np.arange(5.0)), np.arange(5.0))
    assert np.array_equal(model.q0, mm.qpos0)
    model, _ = models.load_mjcf(path_of("humanoid_tree"))
    mm = mujoco.MjModel.from_xml_path(path_of("humanoid_tree"))
    for j in range(mm.njnt):
        name = mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_JOINT, j)
        assert model.joint_q_index(name) == mm.jnt_qposadr[j]
        assert model.joint_v_index(name) == mm.jnt_dofadr[j]
    assert np.allclose(model.mjcf.q_to_qpos(model.q0), mm.qpos0, atol=1e-15)
    lo, hi = model.lower[model.joint_v_index("left_knee")], model.upper[model.joint_v_index("left_knee")]
    assert np.allclose([lo, hi], np.deg2rad([-150, 5]))


@pytest.mark.parametrize("name", ["humanoid_tree", "box_pile", "connect_loop"])
def test_body_poses_and_velocity_conversion(name):
    """Every MuJoCo body frame (bodies, merged bodies and anchored-joint frames) is where
    MuJoCo puts it, at random q; and q ⊕ ε v(qvel) agrees with mj_integratePos(qpos, qvel, ε)
    to O(ε²), which checks the free joint's velocity convention (world vs body frame)."""
    model, _ = models.load_mjcf(path_of(name))
    mm = mujoco.MjModel.from_xml_path(path_of(name))
    names = [mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, mm.nbody)]
    rng = np.random.default_rng(2)

    def poses(q):
        oR, op = models.forward_kinematics(model, q)
        out = []
        for n in names:
            b, R, p = model.body_placement_offset(n)
            out.append((oR[b] @ R, oR[b] @ p + op[b]) if b >= 0 else (R, p))
        return out

    for _ in range(3):
        qpos, qvel = random_qpos(mm, rng), rng.normal(size=mm.nv)
        d = mj_state(mm, qpos, qvel)
        q = model.mjcf.qpos_to_q(qpos)
        for i, (R, p) in enumerate(poses(q), start=1):
            assert np.allclose(p, d.xpos[i], atol=1e-12), names[i - 1]
            assert np.allclose(R, d.xmat[i].reshape(3, 3), atol=1e-12), names[i - 1]
        v = model.mjcf.qvel_to_v(qpos, qvel)
        assert np.allclose(model.mjcf.v_to_qvel(q, v), qvel, atol=1e-12)
        for eps in (1e-4, 5e-5):
            qp = qpos.copy()
            mujoco.mj_integratePos(mm, qp, qvel, eps)
            ours = poses(model.integrate(q, v, eps))
            theirs = poses(model.mjcf.qpos_to_q(qp))
            err = max(np.abs(a[1] - b[1]).max() + np.abs(a[0] - b[0]).max() for a, b in zip(ours, theirs))
            assert err <= 50 * eps * eps, (eps, err)


def test_free_body_conversion_by_hand():
    """A free box: MuJoCo qpos (x, y, z, qw, qx, qy, qz), linear qvel in the world frame;
    ours (x, y, z, qx, qy, qz, qw) and both velocities in the body frame."""
    model, _ = models.load_mjcf(path_of("box_pile"))
    mp = model.mjcf
    qpos = model.mjcf.q_to_qpos(model.q0)
    c, s = np.cos(0.35), np.sin(0.35)               # box 5 turned 0.7 rad about z
    qpos[35:42] = (0.1, 0.2, 0.5, c, 0.0, 0.0, s)
    q = mp.qpos_to_q(qpos)
    assert np.allclose(q[35:42], (0.1, 0.2, 0.5, 0.0, 0.0, s, c))
    qvel = np.zeros(36)
    qvel[30:36] = (1.0, 0.0, 0.0, 0.0, 0.0, 2.0)    # world x velocity, spin about z
    v = mp.qvel_to_v(qpos, qvel)
    assert np.allclose(v[30:33], (np.cos(0.7), -np.sin(0.7), 0.0))
    assert np.allclose(v[33:36], (0.0, 0.0, 2.0))


# ----------------------------------------------------------------------------- rollouts
def _rollout_mj(path, dt, steps, qpos=None, qvel=None):
    """MuJoCo's Euler integrator without contacts and limits (constraints are not compared here)."""
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.timestep = dt
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    d = mujoco.MjData(mm)
    if qpos is not None:
        d.qpos[:] = qpos
    if qvel is not None:
        d.qvel[:] = qvel
    for _ in range(steps):
        mujoco.mj_step(mm, d)
    return d.qpos.copy(), d.qvel.copy()


def _rollout_ours(path, dt, steps, qpos=None, qvel=None):
    wb = simstep.WorldBuilder()
    wb.add_mjcf("m", path, qpos=qpos)
    w = wb.build()
    mp = w.objects["m"]["mjcf"]
    if qvel is not None:
        w.v0[:] = mp.qvel_to_v(mp.q_to_qpos(w.q0), qvel)
    sim = simstep.Simulator(w, dt=dt, collision_options=dict(self_collision=False), joint_limits=False)
    for _ in range(steps):
        sim.step()
        assert sim.contacts.impulse.size == 0
    return mp.q_to_qpos(sim.q), mp.v_to_qvel(sim.q, sim.v)


@pytest.mark.parametrize("name", ["hinge_chain", "humanoid_tree"])
def test_rollout_matches_mujoco_euler(name):
    """Contact-free rollouts, 0.3 s from a random velocity. Both are semi-implicit Euler
    (v⁺ = v + dt a, q⁺ = q ⊕ dt v⁺) and both move a free root along its world velocity in a
    straight line while its orientation turns by the body angular velocity, so they agree to
    round-off (no integration error between them, at dt = 1 ms and 0.5 ms alike)."""
    path = path_of(name)
    mm = mujoco.MjModel.from_xml_path(path)
    qvel = np.random.default_rng(3).normal(size=mm.nv) * 2
    qpos = mm.qpos0.copy()
    if name == "humanoid_tree":
        qpos[2] += 3.0              # far above its floor for the whole rollout
    for dt in (1e-3, 5e-4):
        n = int(round(0.3 / dt))
        qa, va = _rollout_mj(path, dt, n, qpos=qpos, qvel=qvel)
        qb, vb = _rollout_ours(path, dt, n, qpos=qpos, qvel=qvel)
        assert np.abs(qa - qb).max() < 1e-9
        assert np.abs(va - vb).max() < 1e-8
        assert np.abs(qa - qpos).max() > 0.1     # it did move


# ----------------------------------------------------------------------------- closures, geometry
def test_equalities_become_loop_closures_with_mujocos_errors():
    """connect → point closure, weld → weld closure (bodies and sites): at random q, the
    anchor distance and relative rotation angle equal MuJoCo's equality residuals."""
    from scipy.spatial.transform import Rotation
    text = open(path_of("connect_loop")).read()
    text = text.replace('<geom fromto="0 0 0 0.35 0 0"/>',
                        '<geom fromto="0 0 0 0.35 0 0"/><site name="cs" pos="0.1 0.05 0" euler="10 20 30"/>')
    text = text.replace("</equality>", '<weld site1="payload_site" site2="cs"/>'
                                       '<connect site1="payload_site" site2="cs"/></equality>')
    tmp = os.path.join(DATA, "_sites_tmp.xml")
    try:
        with open(tmp, "w") as f:
            f.write(text)
        for path in (path_of("connect_loop"), tmp):
            model, closures = models.load_mjcf(path)
            mm = mujoco.MjModel.from_xml_path(path)
            assert [c.kind for c in closures] == (["point", "weld"] if path != tmp else
                                                 ["point", "weld", "weld", "point"])
            rng = np.random.default_rng(4)
            for _ in range(4):
                qpos = random_qpos(mm, rng, 0.5)
                d = mj_state(mm, qpos, np.zeros(mm.nv))
                eq = d.efc_pos[d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY]
                q = model.mjcf.qpos_to_q(qpos)
                oR, op = models.forward_kinematics(model, q)
                k = 0
                for c in closures:
                    ends = []
                    for body, (pos, rot) in ((c.body1, c.placement1), (c.body2, c.placement2)):
                        b, Rb, pb = model.body_placement_offset(body) if body != "world" else \
                            (-1, np.eye(3), np.zeros(3))
                        Ro, po = (np.eye(3), np.zeros(3)) if b < 0 else (oR[b], op[b])
                        ends.append((Ro @ (Rb @ pos + pb) + po, Ro @ Rb @ rot))
                    (x1, F1), (x2, F2) = ends
                    assert abs(np.linalg.norm(x1 - x2) - np.linalg.norm(eq[k:k + 3])) < 1e-12
                    k += 3
                    if c.kind == "weld":
                        ang = np.linalg.norm(Rotation.from_matrix(F2.T @ F1).as_rotvec())
                        assert abs(ang - 2 * np.arcsin(min(1.0, np.linalg.norm(eq[k:k + 3])))) < 1e-9
                        k += 3
                assert k == eq.size
    finally:
        os.remove(tmp)


def test_geometry_materials_and_static_bodies():
    model, closures = models.load_mjcf(path_of("box_pile"))
    assert closures == []
    boxes = [g for g in model.collision_geometries if g.kind == "box"]
    assert len(boxes) == 6 and all(np.allclose(g.size, 0.1) and g.friction == 0.6 for g in boxes)
    floor = [g for g in model.collision_geometries if g.kind == "plane"]
    assert len(floor) == 1 and floor[0].body == -1
    assert np.allclose(model.mass, 1.0)
    model, _ = models.load_mjcf(path_of("humanoid_tree"))
    caps = {g.name: g for g in model.collision_geometries if g.kind == "capsule"}
    assert any(np.allclose(g.size, (0.035, 0.38)) for g in caps.values())   # fromto → (radius, full length)
    assert {g.kind for g in model.collision_geometries} == {"plane", "box", "sphere", "cylinder", "capsule"}


def test_mesh_geoms_use_the_compiled_mesh(tmp_path):
    """A mesh geom: MuJoCo recentres the mesh (geom_pos/quat absorb it); the OBJ written from
    the compiled vertices, placed by the geom, gives back the file's vertices in the body."""
    import trimesh
    box = trimesh.creation.box(extents=(0.2, 0.1, 0.3))
    box.apply_translation((0.3, 0.1, -0.05))
    box.export(tmp_path / "part.stl")
    (tmp_path / "m.xml").write_text(
        '<mujoco><asset><mesh name="part" file="part.stl" scale="2 1 1"/></asset><worldbody>'
        '<body name="b" pos="0 0 1"><freejoint/><geom type="mesh" mesh="part" density="100"/></body>'
        '</worldbody></mujoco>')
    model, _ = models.load_mjcf(tmp_path / "m.xml", mesh_cache=str(tmp_path / "cache"))
    (g,) = model.collision_geometries
    assert g.kind == "mesh" and g.convex and os.path.isfile(g.mesh)
    V = trimesh.load(g.mesh, force="mesh").vertices @ g.rotation.T + g.translation
    ref = box.vertices * (2, 1, 1)
    assert np.allclose(np.sort(V, axis=0), np.sort(ref, axis=0), atol=1e-9)


# ----------------------------------------------------------------------------- refusals
def _write(tmp_path, body, extra=""):
    p = tmp_path / "m.xml"
    p.write_text(f"<mujoco><worldbody>{body}</worldbody>{extra}</mujoco>")
    return p


def test_unsupported_features_are_refused_or_warned(tmp_path):
    body = '<body name="a"><joint name="h" type="hinge"/><geom type="capsule" size=".02 .1"/></body>'
    for extra, word in (('<actuator><motor joint="h"/></actuator>', "actuator"),
                        ('<tendon><fixed name="t"><joint joint="h" coef="1"/></fixed></tendon>', "tendon"),
                        ('<equality><joint joint1="h"/></equality>', "joint equality")):
        p = _write(tmp_path, body, extra)
        with pytest.raises(models.MJCFError, match=word):
            models.load_mjcf(p)
        with pytest.warns(UserWarning, match=word):
            model, _ = models.load_mjcf(p, unsupported="warn")
        assert model.nv == 1
    p = _write(tmp_path, '<body><freejoint/><geom type="ellipsoid" size=".1 .2 .3"/></body>')
    with pytest.raises(models.MJCFError, match="ellipsoid"):
        models.load_mjcf(p)
    p = _write(tmp_path, '<body><freejoint/><geom type="plane" size="1 1 .1"/><geom type="sphere" size=".1"/></body>')
    with pytest.raises(models.MJCFError, match="plane"):
        models.load_mjcf(p)


def test_compiler_errors_and_missing_files(tmp_path):
    with pytest.raises(models.MJCFError, match="not found"):
        models.load_mjcf(tmp_path / "none.xml")
    p = tmp_path / "bad.xml"
    p.write_text("<mujoco><worldbody><body><geom type='box'/></body>")
    with pytest.raises(models.MJCFError, match="compiler"):
        models.load_mjcf(p)
    p.write_text("<mujoco><worldbody><body><geom type='mesh' mesh='nope'/></body></worldbody></mujoco>")
    with pytest.raises(models.MJCFError, match="compiler"):
        models.load_mjcf(p)


def test_missing_mujoco_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(ImportError, match=r"simstep\[mjcf\]"):
        models.load_mjcf(path_of("hinge_chain"))


# ----------------------------------------------------------------------------- worlds
def test_add_mjcf_world_names_placement_and_closures():
    wb = simstep.WorldBuilder()
    wb.add_box("crate", (0.1, 0.1, 0.1), position=(3, 0, 0.1))
    wb.add_mjcf("loop", path_of("connect_loop"), position=(0, 1, 0), quaternion=(0, 0, np.sin(0.3), np.cos(0.3)))
    wb.add_mjcf("pile", path_of("box_pile"), position=(1, 0, 0))
    w = wb.build()
    obj = w.objects["loop"]
    assert obj["q_start"] == 7 and obj["v_start"] == 6 and len(w.constraints) == 2
    assert w.model.body_index("loop/rocker") >= 0 and w.model.joint_v_index("loop/j2") == 6 + 1
    # the placement moves the free body and the fixed-base tree alike
    R = simstep.quat_to_matrix((0, 0, np.sin(0.3), np.cos(0.3)))
    b = w.model.body_index("loop/payload")
    oR, op = models.forward_kinematics(w.model, w.q0)
    assert np.allclose(op[b], R @ (0.3, 0.2, 1.2) + (0, 1, 0))
    # closures hold in the placed world
    from simstep.projection import project_loop_closures
    assert project_loop_closures(w.model, w.q0, w.constraints, max_iter=0).residual < 1e-12
    # the pile's floor is static, its boxes are free bodies with the file's friction
    assert [g.kind for g in w.geometries if g.name == "pile/floor"] == ["plane"]
    assert all(g.friction == 0.6 for g in w.geometries if g.name.startswith("pile/") and g.kind == "box")
    with pytest.raises(ValueError, match="gravity"):
        simstep.WorldBuilder(gravity=(0, 0, -1)).add_mjcf("x", path_of("box_pile"))
    # a failed add leaves the builder as it was
    n = len(wb._mb.bodies)
    with pytest.raises(models.MJCFError):
        wb.add_mjcf("bad", os.path.join(DATA, "none.xml"))
    assert len(wb._mb.bodies) == n and "bad" not in wb._objects


def test_mjcf_loop_simulates_with_closures_kept():
    wb = simstep.WorldBuilder()
    wb.add_mjcf("loop", path_of("connect_loop"))
    w = wb.build()
    sim = simstep.Simulator(w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.run(steps=300)
    assert sim.stats.projection_residual < 1e-9
    # the payload is carried by the coupler: their relative pose is kept
    c = w.constraints[1]
    assert c.kind == "weld"

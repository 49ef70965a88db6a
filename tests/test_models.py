"""Multibody core: dynamics identities on random trees, Pinocchio as an oracle on random trees
and on robots, finite differences for kinematics, a torque-free tumbling body, bad input."""
import os
import warnings

import numpy as np
import pytest

import models
from models import FIXED, FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL

pin = pytest.importorskip("pinocchio")

ROBOTS_PIN = ["g1", "talos", "go2", "panda", "romeo"]
ALL_ROBOTS = ["g1", "go1", "go2", "solo12", "talos", "talos_full", "romeo", "panda", "ur5", "anymal_c"]


def rel_err(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max())


def random_rotation(rng):
    u = rng.normal(size=4)
    u /= np.linalg.norm(u)
    return pin.Quaternion(u[3], *u[:3]).toRotationMatrix()


def random_inertia(rng):
    A = rng.normal(size=(3, 3))
    I = A @ A.T + 0.1 * np.eye(3)
    return rng.uniform(0.5, 3.0), rng.normal(scale=0.2, size=3), I


def random_tree(rng, n, kinds, branching=0.5, with_fixed=False):
    """The same random tree as (ours, Pinocchio's or None); kinds: joint types to draw from.

    With Pinocchio the tree is in depth-first order (Pinocchio's CRBA assumes contiguous
    subtrees): a new body hangs from the previous body or one of its ancestors. Ours accepts
    any topological order, which `with_fixed=True` trees use (parent drawn among all bodies)."""
    b = models.ModelBuilder()
    pm = pin.Model() if not with_fixed else None
    pin_ids = {-1: 0}
    parents = []
    for i in range(n):
        if i == 0:
            parent = -1
        elif rng.random() >= branching:
            parent = i - 1
        elif pm is None:
            parent = int(rng.integers(-1 if FREE in kinds else 0, i))
        else:
            path, j = [], i - 1
            while j >= 0:
                path.append(j)
                j = parents[j]
            if FREE in kinds:
                path.append(-1)
            parent = path[int(rng.integers(len(path)))]
        parents.append(parent)
        jt = kinds[int(rng.integers(len(kinds)))]
        if with_fixed and i > 0 and rng.random() < 0.2:
            jt = FIXED
        R, p = random_rotation(rng), rng.normal(scale=0.3, size=3)
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        m, c, I = random_inertia(rng)
        b.add_body(f"b{i}", parent, jt, f"j{i}", R, p, axis, mass=m, com=c, inertia=I)
        if pm is not None:
            jm = {REVOLUTE: lambda: pin.JointModelRevoluteUnaligned(axis),
                  PRISMATIC: lambda: pin.JointModelPrismaticUnaligned(axis),
                  FREE: pin.JointModelFreeFlyer, SPHERICAL: pin.JointModelSpherical,
                  PLANAR: pin.JointModelPlanar}[jt]()
            jid = pm.addJoint(pin_ids[parent], jm, pin.SE3(R, p), f"j{i}")
            pm.appendBodyToJoint(jid, pin.Inertia(m, c, I), pin.SE3.Identity())
            pin_ids[i] = jid
    return b.build(), pm


TREE_CASES = {
    "chain_revolute": ([REVOLUTE], 0.0),
    "branching_revolute_prismatic": ([REVOLUTE, PRISMATIC], 0.7),
    "floating_mixed": ([FREE, REVOLUTE, SPHERICAL, PRISMATIC], 0.6),
    "planar_spherical": ([PLANAR, SPHERICAL, REVOLUTE], 0.5),
    "forest_of_free_bodies": ([FREE], 1.0),
}


@pytest.mark.parametrize("case", sorted(TREE_CASES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_tree_against_pinocchio(case, seed):
    rng = np.random.default_rng(seed)
    kinds, branching = TREE_CASES[case]
    model, pm = random_tree(rng, 12, kinds, branching)
    pd = pm.createData()
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    for _ in range(3):
        q = model.random_configuration(rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert rel_err(models.crba(model, q), Mp) < 1e-10
        assert rel_err(models.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a)) < 1e-10
        assert rel_err(models.aba(model, q, v, tau), pin.aba(pm, pd, q, v, tau)) < 1e-9
        oR, op = models.forward_kinematics(model, q)
        pin.forwardKinematics(pm, pd, q)
        for i in range(model.nbodies):
            assert np.allclose(pd.oMi[i + 1].rotation, oR[i], atol=1e-12)
            assert np.allclose(pd.oMi[i + 1].translation, op[i], atol=1e-12)
        # q ⊕ v as Pinocchio's integrate (exponential maps on SE(3), SO(3), SE(2))
        dv = 0.3 * rng.normal(size=model.nv)
        assert np.allclose(model.integrate(q, dv), pin.integrate(pm, q, dv), atol=1e-12)


@pytest.mark.parametrize("case", sorted(TREE_CASES))
def test_dynamics_identities_with_fixed_joints_and_armature(case):
    """aba(rnea(a)) = a, M a + rnea(q, v, 0) = rnea(q, v, a), M SPD, including fixed joints."""
    rng = np.random.default_rng(7)
    kinds, branching = TREE_CASES[case]
    model, _ = random_tree(rng, 15, kinds, branching, with_fixed=True)
    model.armature[:] = rng.uniform(0, 0.1, model.nv)
    data = models.Data(model)       # reused: after the first q, the leaves keep their D⁻¹
    for _ in range(5):
        q = model.random_configuration(rng)
        v, a = rng.normal(size=(2, model.nv))
        fext = rng.normal(size=(model.nbodies, 6))
        tau = models.rnea(model, q, v, a, fext)
        assert rel_err(models.aba(model, q, v, tau, fext), a) < 1e-10
        M = models.crba(model, q)
        assert rel_err(M @ a + models.rnea(model, q, v, np.zeros(model.nv), fext), tau) < 1e-10
        assert np.allclose(M, M.T, atol=0)
        assert np.linalg.eigvalsh(M).min() > 0
        # the cached bias-free sweep is M⁻¹ (paper 000 Alg. 2), also on a Data computed before
        data.compute(q)
        assert rel_err(data.minv(tau), np.linalg.solve(M, tau)) < 1e-10
        assert np.allclose(data.Dinv, models.Data(model).compute(q).Dinv, rtol=1e-12, atol=1e-12)


def test_data_pickles_and_keeps_working():
    """A Data (its compiled `DataState` handle included) survives pickling: the copy holds the
    same arrays, its own handle on them, and computes M⁻¹ at a new q exactly as the original."""
    import pickle
    rng = np.random.default_rng(3)
    model, _ = random_tree(rng, 8, [REVOLUTE, FREE, SPHERICAL])
    data = models.Data(model).compute(model.random_configuration(rng))
    copy = pickle.loads(pickle.dumps(data))
    assert np.array_equal(copy.Dinv, data.Dinv) and copy.state is not data.state
    q, tau = model.random_configuration(rng), rng.normal(size=model.nv)
    copy.compute(q)
    data.compute(q)
    assert np.array_equal(copy.minv(tau), data.minv(tau))
    assert np.allclose(copy.minv(tau), models.Data(model).compute(q).minv(tau), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", sorted(TREE_CASES))
def test_dinv_sweeps_against_dense_inverse(case):
    """ABA's one pair of D⁻¹u sweeps (`models.dynamics.dinv_sweeps` / `dinv_bias_sweeps`, behind
    `Data.minv` and `Data.free_acceleration`) against dense linear algebra: q̈ = M⁻¹ (τ + Σ Jᵢᵀ fᵢ)
    with the link accelerations aᵢ = Jᵢ q̈ of the forward sweep, and q̈ = M⁻¹ (τ − rnea(q, v, 0, f)),
    Jᵢ the world Jacobian of body i about the world origin; one Data reused across q."""
    rng = np.random.default_rng(11)
    kinds, branching = TREE_CASES[case]
    model, _ = random_tree(rng, 12, kinds, branching, with_fixed=True)
    model.armature[:] = rng.uniform(0, 0.1, model.nv)
    data = models.Data(model)
    origin = np.zeros(3)
    for _ in range(3):
        q = model.random_configuration(rng)
        v, tau = rng.normal(size=(2, model.nv))
        fext = rng.normal(size=(model.nbodies, 6))
        M = models.crba(model, q)
        J = [models.body_jacobian(model, q, i, origin) for i in range(model.nbodies)]
        data.compute(q)
        qdd = data.minv(tau, fext)
        ref = np.linalg.solve(M, tau + sum(Ji.T @ fi for Ji, fi in zip(J, fext)))
        assert rel_err(qdd, ref) < 1e-10
        assert rel_err(data.acc, np.array([Ji @ ref for Ji in J])) < 1e-10
        ref = np.linalg.solve(M, tau - models.rnea(model, q, v, np.zeros(model.nv), fext))
        assert rel_err(data.free_acceleration(v, tau, fext, np.empty(model.nv)), ref) < 1e-10
        assert rel_err(data.minv(tau), np.linalg.solve(M, tau)) < 1e-10   # fext = None: the model's zeros
    assert not model.zero_fext.any()


def test_external_forces_enter_as_jacobian_transpose():
    """rnea with fext = τ − Jᵀ w where J is the body Jacobian at the world origin."""
    rng = np.random.default_rng(3)
    model, _ = random_tree(rng, 8, [FREE, REVOLUTE, SPHERICAL], 0.5)
    q = model.random_configuration(rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = np.zeros((model.nbodies, 6))
    b = 5
    fext[b] = rng.normal(size=6)
    J0 = models.body_jacobian(model, q, b, point=np.zeros(3))   # motion at the origin: (v_O, ω)
    delta = models.rnea(model, q, v, a, fext) - models.rnea(model, q, v, a)
    assert rel_err(delta, -J0.T @ fext[b]) < 1e-12


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(4)
    model, _ = random_tree(rng, 10, [FREE, REVOLUTE, PRISMATIC, SPHERICAL, PLANAR], 0.5)
    q = model.random_configuration(rng)
    v = rng.normal(size=model.nv)
    eps = 1e-6
    oR0, op0 = models.forward_kinematics(model, q)
    oR1, op1 = models.forward_kinematics(model, model.integrate(q, v, eps))
    oRm, opm = models.forward_kinematics(model, model.integrate(q, v, -eps))
    for b in range(model.nbodies):
        J = models.body_jacobian(model, q, b)
        pdot = (op1[b] - opm[b]) / (2 * eps)
        W = (oR1[b] - oRm[b]) / (2 * eps) @ oR0[b].T   # ω̂
        omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert np.allclose(J[:3] @ v, pdot, atol=1e-7)
        assert np.allclose(J[3:] @ v, omega, atol=1e-7)


def test_integrate_difference_roundtrip():
    rng = np.random.default_rng(5)
    model, pm = random_tree(rng, 10, [FREE, REVOLUTE, PRISMATIC, SPHERICAL, PLANAR], 0.5)
    for _ in range(5):
        q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
        d = model.difference(q0, q1)
        assert np.allclose(model.integrate(q0, d), q1, atol=1e-10) or \
            np.allclose(model.difference(q1, model.integrate(q0, d)), 0, atol=1e-10)
        assert np.allclose(d, pin.difference(pm, q0, q1), atol=1e-9)


def load(name, **kw):
    path, dirs = models.robot_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return models.load_urdf(path, package_dirs=dirs, **kw), path


@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_robots_load_with_geometry(name):
    model, path = load(name)
    assert model.nv == model.nq - 1 and model.nbodies > 5
    assert len(model.collision_geometries) > 0 and len(model.visual_geometries) > 0
    for g in model.collision_geometries + model.visual_geometries:
        assert 0 <= g.body < model.nbodies
        if g.kind == "mesh":
            assert os.path.isfile(g.mesh)
    # fixed base: the root is welded to the world and its mass no longer moves
    fixed, _ = load(name, floating_base=False)
    assert fixed.nv == model.nv - 6


@pytest.mark.parametrize("name", ROBOTS_PIN)
def test_robot_against_pinocchio(name):
    model, path = load(name)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pd = pm.createData()
    assert list(pm.names)[1:] == model.joint_names          # same joint order and q/v layout
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    if name == "romeo":   # massless finger links: M is singular in both libraries without armature
        assert model.massless_joints()
        model.armature[:] = 0.01
        pm.armature[:] = 0.01
    rng = np.random.default_rng(11)
    joint_of = {model.joint_body(j): j for j in model.joint_names}
    for _ in range(3):
        q = model.random_configuration(rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert rel_err(models.crba(model, q), Mp) < 1e-9
        assert rel_err(models.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a)) < 1e-9
        assert rel_err(models.aba(model, q, v, tau), pin.aba(pm, pd, q, v, tau)) < 1e-9
        oR, op = models.forward_kinematics(model, q)
        pin.forwardKinematics(pm, pd, q)
        for i in range(model.nbodies):
            o = pd.oMi[pm.getJointId(joint_of[i])]
            assert np.abs(o.rotation - oR[i]).max() < 1e-9 and np.abs(o.translation - op[i]).max() < 1e-9
        # merged links (frames) land where Pinocchio's frames are
        pin.updateFramePlacements(pm, pd)
        for fname, fr in list(model.frames.items())[:40]:
            if not pm.existFrame(fname):
                continue
            o = pd.oMf[pm.getFrameId(fname)]
            assert np.allclose(oR[fr.body] @ fr.translation + op[fr.body], o.translation, atol=1e-9)
            assert np.allclose(oR[fr.body] @ fr.rotation, o.rotation, atol=1e-9)


def _lie_rk4_step(model, q, v, dt):
    """RK4 on the velocity, configuration advanced by q ⊕ dt·v̄ (exact for the Euler equations'
    velocity part; the rotation error is O(dt²) globally from the missing commutator terms)."""
    z = np.zeros(model.nv)
    k1 = models.aba(model, q, v, z)
    v2 = v + 0.5 * dt * k1
    k2 = models.aba(model, model.integrate(q, v, 0.5 * dt), v2, z)
    v3 = v + 0.5 * dt * k2
    k3 = models.aba(model, model.integrate(q, v2, 0.5 * dt), v3, z)
    v4 = v + dt * k3
    k4 = models.aba(model, model.integrate(q, v3, dt), v4, z)
    vbar = (v + 2 * v2 + 2 * v3 + v4) / 6.0
    return model.integrate(q, vbar, dt), v + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def test_tumbling_body_conserves_momentum_and_energy():
    """Torque-free body spinning near its intermediate axis (Dzhanibekov flip): gyroscopic terms
    and quaternion integration keep world angular momentum and kinetic energy constant."""
    b = models.ModelBuilder(gravity=(0, 0, 0))
    Ib = np.diag([0.1, 0.2, 0.3])
    b.add_body("tumbler", -1, FREE, mass=2.0, com=(0.0, 0.0, 0.0), inertia=Ib)
    model = b.build()
    q = model.neutral()
    v = np.array([0.1, -0.2, 0.3, 0.2, 12.0, 0.2])    # spin about the intermediate (y) axis
    dt, T = 1e-4, 1.0

    def invariants(q, v):
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        M = models.crba(model, q)
        L = R @ (Ib @ v[3:])
        return L, 0.5 * v @ M @ v

    L0, E0 = invariants(q, v)
    wy_min = v[4]
    for _ in range(int(round(T / dt))):
        q, v = _lie_rk4_step(model, q, v, dt)
        wy_min = min(wy_min, v[4])
    L1, E1 = invariants(q, v)
    assert wy_min < 0, "the intermediate-axis instability should flip the spin within 1 s"
    assert np.linalg.norm(L1 - L0) / np.linalg.norm(L0) < 1e-6
    assert abs(E1 - E0) / E0 < 1e-6
    assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-12


# ------------------------------------------------------------------ bad input
def _write(tmp_path, text, name="robot.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


GOOD_LINK = '<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'


def test_malformed_urdf_raises(tmp_path):
    with pytest.raises(models.URDFError, match="malformed XML"):
        models.load_urdf(_write(tmp_path, "<robot name='r'><link name='a'></robot>"))
    with pytest.raises(models.URDFError, match="not found"):
        models.load_urdf(str(tmp_path / "nope.urdf"))
    bad_joint = ("<robot name='r'>" + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b") +
                 "<joint name='j' type='revolute'><parent link='a'/><child link='zz'/></joint></robot>")
    with pytest.raises(models.URDFError, match="joint 'j'"):
        models.load_urdf(_write(tmp_path, bad_joint))
    no_limit = ("<robot name='r'>" + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b") +
                "<joint name='j' type='revolute'><parent link='a'/><child link='b'/><axis xyz='0 0 1'/></joint></robot>")
    with pytest.raises(models.URDFError, match="joint 'j'.*no <limit>"):
        models.load_urdf(_write(tmp_path, no_limit))
    bad_number = no_limit.replace("<axis xyz='0 0 1'/>", "<axis xyz='0 zero 1'/><limit lower='0' upper='1'/>")
    with pytest.raises(models.URDFError, match="axis"):
        models.load_urdf(_write(tmp_path, bad_number))
    mimic = no_limit.replace("<axis xyz='0 0 1'/>", "<axis xyz='0 0 1'/><limit lower='0' upper='1'/><mimic joint='x'/>")
    with pytest.raises(models.URDFError, match="joint 'j' is a mimic joint"):
        models.load_urdf(_write(tmp_path, mimic), mimic="error")
    two_roots = "<robot name='r'>" + GOOD_LINK.format(n="a") + GOOD_LINK.format(n="b") + "</robot>"
    with pytest.raises(models.URDFError, match="one root link"):
        models.load_urdf(_write(tmp_path, two_roots))


def test_missing_mesh_raises(tmp_path):
    text = ("<robot name='r'><link name='a'><collision><geometry><mesh filename='package://nopkg/m.stl'/>"
            "</geometry></collision></link></robot>")
    with pytest.raises(models.URDFError, match="nopkg/m.stl"):
        models.load_urdf(_write(tmp_path, text), package_dirs=[str(tmp_path)])
    text = text.replace("package://nopkg/m.stl", "meshes/m.stl")
    with pytest.raises(models.URDFError, match="meshes/m.stl"):
        models.load_urdf(_write(tmp_path, text))


def test_bad_mass_and_inertia_raise(tmp_path):
    neg = "<robot name='r'>" + GOOD_LINK.format(n="a").replace('value="1"', 'value="-1"') + "</robot>"
    with pytest.raises(models.ModelError, match="negative mass"):
        models.load_urdf(_write(tmp_path, neg))
    nonpd = "<robot name='r'>" + GOOD_LINK.format(n="a").replace('ixx="0.1"', 'ixx="-0.5"') + "</robot>"
    with pytest.raises(models.ModelError, match="not positive semi-definite"):
        models.load_urdf(_write(tmp_path, nonpd))
    b = models.ModelBuilder()
    with pytest.raises(models.ModelError, match="mass must be positive"):
        b.add_body("x", mass=0.0)
    with pytest.raises(models.ModelError, match="mass must be positive"):
        b.add_body("x", mass=-2.0)
    with pytest.raises(models.ModelError, match="not positive definite"):
        b.add_body("x", mass=1.0, inertia=np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(models.ModelError, match="not symmetric"):
        b.add_body("x", mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])


def test_bad_state_raises():
    model, _ = load("go2")
    q, v = model.neutral(), np.zeros(model.nv)
    with pytest.raises(ValueError, match=r"q has shape \(18,\), expected \(19,\)"):
        models.aba(model, q[:-1], v, v)
    with pytest.raises(ValueError, match=r"v has shape"):
        models.rnea(model, q, v[:-1], v)
    qn = q.copy()
    qn[0] = np.nan
    with pytest.raises(ValueError, match="q contains NaN"):
        models.aba(model, qn, v, v)
    vn = v.copy()
    vn[3] = np.inf
    with pytest.raises(ValueError, match="v contains NaN or inf"):
        models.aba(model, q, vn, v)
    with pytest.raises(ValueError, match="tau contains NaN"):
        models.aba(model, q, v, vn)
    qu = q.copy()
    qu[3:7] = (0.1, 0.0, 0.0, 0.9)
    with pytest.raises(ValueError, match="quaternion of joint 'root_joint'.*not unit"):
        models.crba(model, qu)
    with pytest.raises(KeyError, match="unknown body 'nose'"):
        model.body_index("nose")
    with pytest.raises(KeyError, match="unknown joint"):
        model.joint_q_index("elbow")


def test_singular_mass_matrix_is_reported():
    model, _ = load("romeo")
    with pytest.raises(np.linalg.LinAlgError, match="LFinger"):
        models.aba(model, model.neutral(), np.zeros(model.nv), np.zeros(model.nv))
    with pytest.raises(models.ModelError, match="armature"):
        model.check_mass_matrix()


def test_random_configuration_respects_limits():
    model, _ = load("panda")
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = model.random_configuration(rng)
        model.check_q(q)
        for j in model.joint_names[1:]:
            k, iv = model.joint_q_index(j), model.joint_v_index(j)
            assert model.lower[iv] <= q[k] <= model.upper[iv]

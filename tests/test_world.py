"""WorldBuilder: shapes and their inertias, robots, name resolution, initial state, bad input."""
import numpy as np
import pytest
import trimesh

import models
import simstep
from simstep.world import box_inertia, capsule_inertia, cylinder_inertia, sphere_inertia


def mesh_inertia(mesh, mass):
    return mesh.moment_inertia * (mass / mesh.volume)


@pytest.mark.parametrize("kind", ["box", "sphere", "cylinder", "capsule"])
def test_shape_inertia_matches_trimesh(kind):
    """Closed-form inertias against trimesh's mass properties of a fine tessellation."""
    m = 2.5
    if kind == "box":
        I, ref = box_inertia(m, (0.1, 0.2, 0.3)), trimesh.creation.box(extents=(0.2, 0.4, 0.6))
    elif kind == "sphere":
        I, ref = sphere_inertia(m, 0.15), trimesh.creation.icosphere(subdivisions=5, radius=0.15)
    elif kind == "cylinder":
        I, ref = cylinder_inertia(m, 0.1, 0.5), trimesh.creation.cylinder(radius=0.1, height=0.5, sections=256)
    else:
        I, ref = capsule_inertia(m, 0.1, 0.5), trimesh.creation.capsule(height=0.5, radius=0.1, count=[128, 128])
    assert np.allclose(I, mesh_inertia(ref, m), rtol=2e-3, atol=1e-9)


def test_world_layout_and_names():
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    b.add_box("b0", (0.1, 0.1, 0.1), mass=1.0, position=(0, 0, 0.1), friction=0.3, restitution=0.2)
    b.add_box("wall", (0.1, 5, 5), position=(4, 0, 5), fixed=True)
    b.add_sphere("s", 0.05, mass=0.5, position=(1, 0, 0.05), velocity=(1, 0, 0, 0, 0, 0))
    path, dirs = models.robot_path("go2")
    b.add_urdf("go2", path, position=(0, 2, 0.4))
    path, dirs = models.robot_path("panda")
    b.add_urdf("arm", path, floating_base=False, position=(0, -2, 0))
    w = b.build()
    go2 = models.load_urdf(models.robot_path("go2")[0])
    panda = models.load_urdf(models.robot_path("panda")[0], floating_base=False)
    assert w.model.nq == 7 + 7 + go2.nq + panda.nq and w.model.nv == 6 + 6 + go2.nv + panda.nv
    assert w.body_index("b0") == 0 and w.body_index("s") == 1 and w.body_index("world") == -1
    assert w.body_index("go2/base") == w.body_index("base") == 2
    assert w.body_index("arm/panda_link7") == w.body_index("panda_link7")
    assert np.allclose(w.q0[:7], [0, 0, 0.1, 0, 0, 0, 1]) and np.allclose(w.q0[14:17], [0, 2, 0.4])
    assert np.allclose(w.v0[6:12], [1, 0, 0, 0, 0, 0])
    static = [g for g in w.geometries if g.body == -1]
    assert {g.name for g in static} >= {"ground", "wall"}
    # the fixed-base arm's root link geometry is welded to the world at its placement
    assert any(g.name.startswith("arm/") for g in static)
    b0 = next(g for g in w.geometries if g.name == "b0")
    assert (b0.friction, b0.restitution) == (0.3, 0.2)
    # a link welded to the world resolves to -1 with its placement, by full or bare name
    for name in ("arm/panda_link0", "panda_link0"):
        b, R, p = w.body_frame(name)
        assert b == -1 and np.allclose(p, (0, -2, 0)) and np.allclose(R, np.eye(3))
    # the welded arm is where it was put
    oR, op = models.forward_kinematics(w.model, w.q0)
    k = w.body_index("arm/panda_link1")
    assert np.allclose(op[k][:2], [0, -2])


def test_add_mesh_mass_properties(tmp_path):
    box = trimesh.creation.box(extents=(0.2, 0.4, 0.6))
    box.apply_translation((0.05, 0, 0))
    path = tmp_path / "box.stl"
    box.export(path)
    b = simstep.WorldBuilder()
    b.add_mesh("m", path, mass=3.0, position=(0, 0, 1), convex=True)
    w = b.build()
    assert np.allclose(w.model.com[0], (0.05, 0, 0), atol=1e-9)
    assert np.allclose(w.model.inertia[0], box_inertia(3.0, (0.1, 0.2, 0.3)), rtol=1e-9)
    g = w.geometries[0]
    assert g.kind == "mesh" and g.convex and g.mesh == str(path)


def test_builder_bad_input(tmp_path):
    b = simstep.WorldBuilder()
    b.add_box("a", (0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="already exists"):
        b.add_box("a", (0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="half_extents must be positive"):
        b.add_box("z", (0.1, 0.0, 0.1))
    with pytest.raises(ValueError, match="radius must be positive"):
        b.add_sphere("z", -1.0)
    with pytest.raises(ValueError, match="length must be positive"):
        b.add_capsule("z", 0.1, 0.0)
    with pytest.raises(models.ModelError, match="mass must be positive"):
        b.add_box("z", (0.1, 0.1, 0.1), mass=0.0)
    with pytest.raises(models.ModelError, match="mass must be positive"):
        b.add_sphere("z", 0.1, mass=-1.0)
    with pytest.raises(ValueError, match="not a unit quaternion"):
        b.add_box("z", (0.1, 0.1, 0.1), quaternion=(0, 0, 0.5, 0.5))
    with pytest.raises(ValueError, match="position must be 3 finite numbers"):
        b.add_box("z", (0.1, 0.1, 0.1), position=(0, np.nan, 0))
    with pytest.raises(ValueError, match="friction"):
        b.add_box("z", (0.1, 0.1, 0.1), friction=-0.1)
    with pytest.raises(ValueError, match="restitution"):
        b.add_box("z", (0.1, 0.1, 0.1), restitution=1.5)
    with pytest.raises(models.ModelError, match="not positive definite"):
        b.add_box("z", (0.1, 0.1, 0.1), inertia=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(FileNotFoundError, match="nope.stl"):
        b.add_mesh("z", tmp_path / "nope.stl")
    (tmp_path / "flat.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(ValueError, match="encloses no volume"):
        b.add_mesh("z", tmp_path / "flat.obj")
    with pytest.raises(models.URDFError, match="not found"):
        b.add_urdf("r", tmp_path / "missing.urdf")
    with pytest.raises(ValueError, match="'go2' q"):
        b.add_urdf("go2", models.robot_path("go2")[0], q=np.zeros(3))
    w = b.build()
    with pytest.raises(KeyError, match="unknown body"):
        w.body_index("nobody")


def test_bare_link_names_must_be_unambiguous():
    b = simstep.WorldBuilder()
    for name in ("dog1", "dog2"):
        b.add_urdf(name, models.robot_path("go2")[0], position=(0, 0, 0.5) if name == "dog1" else (1, 0, 0.5))
    w = b.build()
    assert w.body_index("dog2/base") != w.body_index("dog1/base")
    with pytest.raises(KeyError, match="'base' is ambiguous"):
        w.body_index("base")

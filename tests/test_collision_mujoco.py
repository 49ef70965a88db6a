"""G1 lying on the floor (a saved configuration, tests/data/g1_lying.npz: a long simulation's
end state differs between CPUs) against MuJoCo's mj_collision on the same URDF, convex hulls
and configuration: the same bodies touch the floor and each other, with the same distances.
The hulls: ours at the default tolerance given to MuJoCo as vertices, or the hulls of all the
meshes' vertices (hull tolerance 0), which MuJoCo computes from the files itself."""
import os
import warnings

import numpy as np
import pytest

import models
import simstep
from collision import CollisionDetector

mujoco = pytest.importorskip("mujoco")
DATA = os.path.join(os.path.dirname(__file__), "data", "g1_lying.npz")
MARGIN = 2e-3       # m: the simulator's default detection margin


def g1_world(hull_tolerance=None):
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, package_dirs=dirs, hull_tolerance=hull_tolerance)
    return b.build()


def mujoco_g1(world, q, self_collision, mesh_files=False):
    """MuJoCo's model of the same URDF (free root, ground plane; `bench_step.robot_mujoco`),
    its data at our q after mj_kinematics and mj_collision."""
    from bench.bench_step import mujoco_qpos, robot_mujoco
    m = robot_mujoco("g1", self_collision=self_collision, mesh_files=mesh_files)
    m.geom_margin[:] = MARGIN / 2       # a pair's margin is the sum of its geoms'
    d = mujoco.MjData(m)
    d.qpos[:] = mujoco_qpos(world, m, q, "g1/")
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    return m, d


def pair_distances(names):
    """{(body, body) sorted: min distance} from (name1, name2, distance) triples."""
    out = {}
    for n1, n2, dist in names:
        key = tuple(sorted((n1, n2)))
        out[key] = min(out.get(key, np.inf), float(dist))
    return out


@pytest.mark.parametrize("full_hulls", [False, True])
@pytest.mark.parametrize("self_collision", [False, True])
def test_g1_lying_contacts_match_mujoco(self_collision, full_hulls):
    w = g1_world(0.0 if full_hulls else None)
    q = np.load(DATA)["q"]
    c = CollisionDetector(w, margin=MARGIN, self_collision=self_collision).detect(q)
    name = lambda b: "world" if b < 0 else w.model.body_names[b].split("/", 1)[1]   # noqa: E731
    ours = pair_distances((name(b1), name(b2), d) for b1, b2, d in zip(c.body1, c.body2, c.distance))
    m, d = mujoco_g1(w, q, self_collision, mesh_files=full_hulls)
    mj = pair_distances((m.body(m.geom_bodyid[k.geom1]).name, m.body(m.geom_bodyid[k.geom2]).name, k.dist)
                        for k in d.contact[:d.ncon])
    ground = {p for p in ours if "world" in p}
    assert len(ground) >= 10 and min(ours.values()) < 0     # lying: many links on the floor, some sunk in
    # every pair within the margin in one is in the other, unless within 0.1 mm of the margin
    for a, b in ((ours, mj), (mj, ours)):
        for p, dist in a.items():
            assert p in b or dist > MARGIN - 1e-4, (p, dist)
    for p in set(ours) & set(mj):
        assert abs(ours[p] - mj[p]) < 1e-3, (p, ours[p], mj[p])        # depths within 1 mm
        if p in ground:                                                  # hull on a plane: both exact
            assert abs(ours[p] - mj[p]) < 1e-6, (p, ours[p], mj[p])
    selfpairs = {p for p in ours if "world" not in p}
    if self_collision:
        # the expected self pairs: the left shoulder against the torso (0.54 mm apart)
        assert ("left_shoulder_yaw_link", "torso_link") in selfpairs
        assert all(a != b for a, b in selfpairs)
    else:
        assert not selfpairs

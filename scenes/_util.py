"""Helpers shared by the scenes: URDF text → world, lowest point of a robot, joint PD control."""
from __future__ import annotations

import os
import tempfile

import numpy as np

import collision
import models
import simstep
from simstep.control import JointPD  # noqa: F401 (scenes.JointPD)


def add_urdf_text(builder, name, xml, **kw):
    """Add a robot given as URDF text (written to a temporary file, read, then deleted)."""
    with tempfile.TemporaryDirectory(prefix="simstep_scene_") as d:
        path = os.path.join(d, f"{name}.urdf")
        with open(path, "w") as f:
            f.write(xml)
        return builder.add_urdf(name, path, **kw)


def inertial(mass, com, inertia_diag):
    ixx, iyy, izz = inertia_diag
    return (f'<inertial><origin xyz="{com[0]:.17g} {com[1]:.17g} {com[2]:.17g}"/><mass value="{mass:.17g}"/>'
            f'<inertia ixx="{ixx:.17g}" iyy="{iyy:.17g}" izz="{izz:.17g}" ixy="0" ixz="0" iyz="0"/></inertial>')


def check_int(value, what, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f"≥ {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{what} must be {rng}, got {value}")
    return int(value)


def check_choice(value, what, choices):
    if value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def robot(name):
    """(urdf path, package dirs) of a robot of example-robot-data, warnings silenced."""
    return models.robot_path(name)


def lowest_point_height(world, q, body_names_prefix):
    """Lowest z of the collision geometry of the bodies whose names start with the prefix,
    at configuration q (distance to a probe ground plane far below, via the collision
    detector, so meshes count exactly)."""
    probe = -10.0
    wb = simstep.WorldBuilder()
    wb.add_ground(height=probe)
    m = world.model
    # a world with only the probe plane and the robot: reuse the robot's geometries
    probe_world = wb.build()
    plane = probe_world.geometries[0]
    geoms = [plane] + [g for g in world.geometries
                       if g.body >= 0 and m.body_names[g.body].startswith(body_names_prefix)]
    det = collision.CollisionDetector(_GeomWorld(m, geoms), margin=100.0, self_collision=False)
    c = det.detect(q)
    ground = (c.body2 == -1) | (c.body1 == -1)
    if not ground.any():
        raise RuntimeError(f"no collision geometry found for '{body_names_prefix}'")
    return probe + float(c.distance[ground].min())


class _GeomWorld:
    """Just enough of a World for CollisionDetector: a model and a geometry list."""

    def __init__(self, model, geometries):
        self.model, self.geometries = model, geometries


# the joint PD lives in simstep.control (Simulator.set_targets uses it); re-exported here

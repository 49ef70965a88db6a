"""Contact problems of three G1 on the 30-box pyramid (`scenes.pyramid_with_robots`), read from
tests/data/problem_robots_*.npz (written by bench/make_robot_problems.py): 1000+ rows, 335+
contacts between meshes, boxes and the floor, active joint limits. Data, not a simulation, so
the same on every CPU."""
import glob
import os

import numpy as np

import scenes
from snapshots import DATA, Problem
from solvers import ContactSet
from solvers.cones import ConeSet
from solvers.constraints import ConstraintSet, JointFriction, JointLimit

_WORLD = {}


def names(prefix="robots"):
    """The saved problems problem_{prefix}_*.npz: "robots" 3–3.3 s after the drop (the pile still
    moving), "restpile" 6–6.3 s (at rest)."""
    return sorted(os.path.basename(p)[8:-4] for p in glob.glob(os.path.join(DATA, f"problem_{prefix}_*.npz")))


class RobotProblem(Problem):
    """model, q, v, constraints (ConstraintSet), cones, g (m,), warm start x0 (m,) or None,
    L (the simulator's λ_max(G) estimate); operators ``matrix_free()``, ``dense()`` (`snapshots.Problem`'s)."""

    def __init__(self, name):
        d = np.load(os.path.join(DATA, f"problem_{name}.npz"))
        if "world" not in _WORLD:
            _WORLD["world"] = scenes.pyramid_with_robots()
        world = _WORLD["world"]
        self.name, self.model, self.q, self.v, self.dt = name, world.model, d["q"], d["v"], float(d["dt"])
        tail = []
        for joint, side, bound in zip(d["tail_joint"], d["tail_side"], d["tail_bound"]):
            tail.append(JointLimit(str(joint), str(side)) if side else JointFriction(str(joint), float(bound)))
        self.constraints = ConstraintSet(self.model, [ContactSet(d["body1"], d["body2"], d["position"], d["frame"],
                                                                 d["friction"])] + tail)
        self.cones = ConeSet.from_blocks(zip(d["kind"].tolist(), d["size"].tolist(), d["param"].tolist()))
        self.g = d["g"]
        self.x0 = d["x0"] if bool(d["has_x0"]) else None
        self.L = float(d["L"])
        self.ncontacts = len(d["friction"])
        self.iterations = int(d["iterations"])


def load(name):
    return RobotProblem(name)

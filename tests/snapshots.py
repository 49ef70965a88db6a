"""Contact problems of settled, loaded pyramids, read from tests/data (written by
bench/make_snapshots.py), so that no test depends on where a long simulation ends on this CPU."""
import os

import numpy as np

import scenes
from solvers import ContactSet, DenseDelassus, MatrixFreeDelassus
from solvers.cones import ConeSet

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NAMES = ("triangle", "triangle_unit", "square", "square_unit")


class Problem:
    """model, q, constraints ([ContactSet]), cones, g (m,), warm start x0 (m,), and the
    operators: ``matrix_free()``, ``dense()``."""

    def __init__(self, name):
        d = np.load(os.path.join(DATA, f"snapshot_{name}.npz"))
        world = scenes.box_pyramid(layers=int(d["layers"]), shape=str(d["shape"]), half=float(d["half"]),
                                   gap=float(d["gap"]))
        self.name, self.model, self.q, self.v, self.dt = name, world.model, d["q"], d["v"], float(d["dt"])
        self.friction = d["friction"]
        self.constraints = [ContactSet(d["body1"], d["body2"], d["position"], d["frame"], d["friction"])]
        self.cones = ConeSet.contacts(d["friction"])
        self.g, self.x0 = d["g"], d["x0"]
        self.ncontacts = len(d["friction"])

    def matrix_free(self):
        return MatrixFreeDelassus(self.model, self.q, self.constraints)

    def dense(self):
        return DenseDelassus(self.model, self.q, self.constraints)


def load_problem(name):
    return Problem(name)

"""Mechanisms and constraint sets of the explicit-Delassus benchmarks (`bench_osim.py`) and tests.

- `branching_mechanism(k)`: Sathya, Decré, Swevers (PV-OSIMr) Sec. IV-B: a stem of k links with
  one side branch of 7 links on each stem link (alternating sides), each branch tip welded to
  the world (6D), fixed base; n = 8k links, m = 6k rows.
- `constrained_chain(n)`: a serial chain with a 6D weld on every link (the same paper's
  "m ∝ d" case, every link a branching link); m = 6n rows.
- `table3()`: the robots and constraint sets of Sathya, Carpentier (constrained articulated body
  dynamics) Table III as close as example-robot-data allows (Panda for the Iiwa, G1 for the
  Atlas with Shadow hands: the wrist and elbow links of one or both arms stand in
  for the 5 or 10 fingertips), with the paper's timings.
"""
from __future__ import annotations

import numpy as np

import models
from models import REVOLUTE, ModelBuilder
from solvers import LoopClosure

_AXES = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))


def _link(mb, name, parent, rng, translation, axis):
    return mb.add_body(name, parent, REVOLUTE, translation=translation, axis=axis,
                       mass=rng.uniform(0.5, 2.0), com=(0.1, 0.0, 0.0),
                       inertia=np.diag(rng.uniform(0.01, 0.05, 3)))


def weld_here(model, q, body):
    """A 6D weld of `body` to the world at its pose at q (anchored at the body origin)."""
    oR, op = models.forward_kinematics(model, q)
    i = model.body_index(body)
    return LoopClosure(body, None, "world", (op[i], oR[i]), kind="weld")


def point_here(model, q, body, offset=(0.0, 0.0, 0.0)):
    """A 3D point constraint of `body` (at `offset` in its frame) to the world point it is at."""
    oR, op = models.forward_kinematics(model, q)
    i = model.body_index(body)
    return LoopClosure(body, (offset, None), "world", (oR[i] @ np.asarray(offset) + op[i], None), kind="point")


def _random_q(model, rng, scale=0.4):
    return model.integrate(model.neutral(), rng.normal(size=model.nv) * scale)


def branching_mechanism(k, branch=7, seed=0):
    """(model, q, constraints): a stem of k links, a `branch`-link side branch on each, tips welded."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    prev, tips = -1, []
    for s in range(k):
        prev = _link(mb, f"s{s}", prev, rng, (0.0, 0.0, 0.3 if s else 0.0), _AXES[s % 3])
        side = 1.0 if s % 2 == 0 else -1.0
        b = prev
        for j in range(branch):
            b = _link(mb, f"b{s}_{j}", b, rng, (0.25 if j else 0.0, side * (0.0 if j else 0.2), 0.0),
                      _AXES[(j + 1) % 3])
        tips.append(f"b{s}_{branch - 1}")
    model = mb.build()
    q = _random_q(model, rng)
    return model, q, [weld_here(model, q, t) for t in tips]


def constrained_chain(n, seed=0):
    """(model, q, constraints): a chain of n revolute links with a 6D weld on every link."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    prev = -1
    for i in range(n):
        prev = _link(mb, f"l{i}", prev, rng, (0.3 if i else 0.0, 0.0, 0.0), _AXES[i % 3])
    model = mb.build()
    q = _random_q(model, rng)
    return model, q, [weld_here(model, q, f"l{i}") for i in range(n)]


def robot(name):
    path, dirs = models.robot_path(name)
    return models.load_urdf(path, floating_base=name != "panda", package_dirs=dirs)


# (label, robot, [(kind, body)]); kind "weld" (6D) or "point" (3D)
_FEET = {"solo12": ["FL_LOWER_LEG", "FR_LOWER_LEG", "HL_LOWER_LEG", "HR_LOWER_LEG"],
         "talos": ["leg_left_6_link", "leg_right_6_link"], "g1": ["left_ankle_roll_link", "right_ankle_roll_link"]}
_HANDS = {"talos": ["arm_left_7_link", "arm_right_7_link"], "g1": ["left_wrist_yaw_link", "right_wrist_yaw_link"]}
_G1_FINGERS = ["left_wrist_yaw_link", "left_wrist_pitch_link", "left_wrist_roll_link", "left_elbow_link",
               "right_wrist_yaw_link", "right_wrist_pitch_link", "right_wrist_roll_link", "right_elbow_link"]

# paper 002 Table III (µs): cABA-f, cABA, LTL-chol*, LTL-inv (Pinocchio C++, one core, Turbo Boost)
TABLE3 = [
    ("Panda H3 (Iiwa H3)", "panda", [("point", "panda_link7")], (0.7, 0.70, 0.53, 0.63)),
    ("Panda H6 (Iiwa H6)", "panda", [("weld", "panda_link7")], (0.77, 0.77, 0.63, 0.81)),
    ("Solo F3^2", "solo12", [("point", b) for b in _FEET["solo12"][:2]], (1.57, 1.68, 1.38, 1.57)),
    ("Solo F3^4", "solo12", [("point", b) for b in _FEET["solo12"]], (1.94, 2.28, 1.86, 2.48)),
    ("Talos F6^2", "talos", [("weld", b) for b in _FEET["talos"]], (4.05, 4.21, 5.73, 6.42)),
    ("Talos F6^2 H6^2", "talos", [("weld", b) for b in _FEET["talos"] + _HANDS["talos"]], (4.57, 4.95, 8.42, 10.9)),
    ("G1 F6^2 (Atlas SR F6^2)", "g1", [("weld", b) for b in _FEET["g1"]], (6.37, 6.5, 11.4, 12.1)),
    ("G1 F6^2 T3^4 (Atlas SR F6^2 T3^5)", "g1",
     [("weld", b) for b in _FEET["g1"]] + [("point", b) for b in _G1_FINGERS[:4]], (8.8, 9.3, 17.8, 21.2)),
    ("G1 F6^2 T3^8 (Atlas SR F6^2 T3^10)", "g1",
     [("weld", b) for b in _FEET["g1"]] + [("point", b) for b in _G1_FINGERS], (12.6, 13.3, 26.2, 35.9)),
]


def table3(seed=0):
    """[(label, model, q, constraints, paper_us)] for paper 002 Table III."""
    rng = np.random.default_rng(seed)
    out, cache = [], {}
    for label, name, spec, paper in TABLE3:
        model = cache.get(name) or cache.setdefault(name, robot(name))
        q = _random_q(model, rng, 0.2)
        cons = [weld_here(model, q, b) if kind == "weld" else point_here(model, q, b, (0.05, 0.0, 0.0))
                for kind, b in spec]
        out.append((label, model, q, cons, paper))
    return out

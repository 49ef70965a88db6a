"""Closed-loop mechanisms: a motor-driven four-bar linkage and a slider-crank.

Both are planar (xz-plane, joint axes along y), built as a URDF tree closed by a
`simstep.LoopClosure` ("point": 3 rows, the one along y is identically zero for a planar
mechanism, which the proximal ADMM handles). The world carries ``constraints``, the crank
motor as ``actuation`` and the recommended ``dt``.
"""
from __future__ import annotations

import numpy as np

import simstep

from ._util import add_urdf_text, inertial

RHO = 2.0      # rod mass per metre (kg/m)


def _dir(angle):
    """World direction (x, z) of a link's local x axis after a rotation `angle` about y."""
    return np.array([np.cos(angle), -np.sin(angle)])


def _angle(vx, vz):
    return float(np.arctan2(-vz, vx))


def _rod_link(name, length, radius=0.015, color="0.8 0.5 0.2 1"):
    m = RHO * length
    i_t = m * length * length / 12.0
    return (f'<link name="{name}">{inertial(m, (length / 2, 0, 0), (1e-5 * m, i_t, i_t))}'
            f'<visual><origin xyz="{length / 2:.17g} 0 0" rpy="0 1.5707963267948966 0"/>'
            f'<geometry><cylinder radius="{radius}" length="{length:.17g}"/></geometry>'
            f'<material name="{name}_m"><color rgba="{color}"/></material></visual></link>')


def _joint(name, parent, child, xyz, jtype="continuous", axis="0 1 0", limit=""):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]:.17g} {xyz[1]:.17g} {xyz[2]:.17g}"/><axis xyz="{axis}"/>{limit}</joint>')


class CrankMotor:
    """Velocity servo on one joint: τ = gain (speed − q̇), clamped to ±max_torque
    (actuation callback for the simulator)."""

    def __init__(self, model, joint, speed, gain, max_torque=np.inf):
        self.iv = model.joint_v_index(joint)
        self.nv = model.nv
        self.speed, self.gain, self.max_torque = float(speed), float(gain), float(max_torque)

    def __call__(self, sim):
        tau = np.zeros(self.nv)
        tau[self.iv] = np.clip(self.gain * (self.speed - sim.v[self.iv]), -self.max_torque, self.max_torque)
        return tau


def four_bar(crank=0.1, coupler=0.35, rocker=0.3, ground=0.4, height=1.0, crank_angle=0.3, speed=2 * np.pi):
    """A crank-rocker four-bar linkage (Grashof: crank + ground ≤ coupler + rocker) in the
    xz-plane: pivots at (0, 0, height) and (ground, 0, height); the crank is driven at
    `speed` rad/s by a velocity servo (with a motor rotor inertia), the rocker's tip is
    closed on the second pivot by a point `LoopClosure`. Initial state: the closed
    configuration at `crank_angle` (elbow up), at rest."""
    a, b, c, d = (float(x) for x in (crank, coupler, rocker, ground))
    if min(a, b, c, d) <= 0:
        raise ValueError("four_bar link lengths must be positive")
    if min(a, b, c, d) + max(a, b, c, d) > a + b + c + d - min(a, b, c, d) - max(a, b, c, d) or min(a, b, c, d) != a:
        raise ValueError(f"four_bar: not a crank-rocker (the crank must be the shortest link and "
                         f"shortest + longest ≤ the other two): {a}, {b}, {c}, {d}")
    A, D = np.array([0.0, height]), np.array([d, height])

    def close(t1):
        B = A + a * _dir(t1)
        e = D - B
        L = np.linalg.norm(e)
        x = (L * L + b * b - c * c) / (2 * L)
        h = np.sqrt(max(b * b - x * x, 0.0))
        u = e / L
        n = np.array([-u[1], u[0]])
        Cs = [B + x * u + h * n, B + x * u - h * n]
        C = max(Cs, key=lambda p: p[1])          # elbow up
        p2 = _angle(*(C - B))
        p3 = _angle(*(D - C))
        return np.array([t1, p2 - t1, p3 - p2])

    xml = ('<robot name="four_bar"><link name="base"/>'
           + _rod_link("crank", a, 0.02, "0.85 0.25 0.2 1") + _rod_link("coupler", b) + _rod_link("rocker", c, 0.015,
                                                                                               "0.2 0.5 0.85 1")
           + _joint("j1", "base", "crank", (0, 0, height)) + _joint("j2", "crank", "coupler", (a, 0, 0))
           + _joint("j3", "coupler", "rocker", (b, 0, 0)) + "</robot>")
    wb = simstep.WorldBuilder()
    add_urdf_text(wb, "four_bar", xml, floating_base=False, q=close(float(crank_angle)))
    w = wb.build()
    m = w.model
    m.armature[m.joint_v_index("four_bar/j1")] = 0.01
    w.constraints = [simstep.LoopClosure("four_bar/rocker", ((c, 0.0, 0.0), np.eye(3)),
                                         "world", ((d, 0.0, height), np.eye(3)), kind="point")]
    w.actuation = CrankMotor(m, "four_bar/j1", speed, gain=2.0)
    w.dt = 1e-3
    w.description = "motor-driven crank-rocker four-bar linkage (loop closure)"
    return w


def slider_crank(crank=0.1, rod=0.35, height=1.0, crank_angle=0.0, speed=2 * np.pi):
    """A slider-crank (piston) mechanism in the xz-plane: crank pivot at (0, 0, height),
    connecting rod, and a slider on a prismatic joint along x at the pivot's height (a
    second tree); the rod's tip is pinned to the slider by a point `LoopClosure`. The crank
    is driven at `speed` rad/s by a velocity servo."""
    a, l = float(crank), float(rod)
    if not (a > 0 and l > a):
        raise ValueError(f"slider_crank needs 0 < crank < rod, got {a}, {l}")
    t1 = float(crank_angle)
    B = np.array([0.0, height]) + a * _dir(t1)
    s = B[0] + np.sqrt(l * l - (height - B[1]) ** 2)
    p2 = _angle(s - B[0], height - B[1])
    xml = ('<robot name="crank"><link name="base"/>'
           + _rod_link("crank", a, 0.02, "0.85 0.25 0.2 1") + _rod_link("rod", l)
           + _joint("j1", "base", "crank", (0, 0, height)) + _joint("j2", "crank", "rod", (a, 0, 0)) + "</robot>")
    slider = ('<robot name="slider"><link name="rail"/>'
              '<link name="slider">' + inertial(0.5, (0, 0, 0), (1e-3, 1e-3, 1e-3))
              + '<visual><geometry><box size="0.08 0.06 0.05"/></geometry>'
              '<material name="s"><color rgba="0.3 0.3 0.35 1"/></material></visual></link>'
              + _joint("slide", "rail", "slider", (0, 0, height), "prismatic", "1 0 0",
                       f'<limit lower="{l - a - 0.05:.17g}" upper="{l + a + 0.05:.17g}" effort="0" velocity="0"/>')
              + "</robot>")
    wb = simstep.WorldBuilder()
    add_urdf_text(wb, "crank", xml, floating_base=False, q=[t1, p2 - t1])
    add_urdf_text(wb, "slider", slider, floating_base=False, q=[s])
    w = wb.build()
    m = w.model
    m.armature[m.joint_v_index("crank/j1")] = 0.01
    w.constraints = [simstep.LoopClosure("crank/rod", ((l, 0.0, 0.0), np.eye(3)),
                                         "slider/slider", ((0.0, 0.0, 0.0), np.eye(3)), kind="point")]
    w.actuation = CrankMotor(m, "crank/j1", speed, gain=2.0)
    w.dt = 1e-3
    w.description = "motor-driven slider-crank (loop closure between the rod and the slider)"
    return w

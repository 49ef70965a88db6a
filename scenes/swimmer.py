"""The swimmer of paper 000 Fig. 2: a chain of links lying on the ground, joints about the vertical.

Here a floating (free) base link and n-1 revolute joints about z, each link a capsule lying on
the ground (two contact points each while it lies flat), driven by a travelling-wave joint PD
(``world.actuation``) so that the body undulates. Friction is isotropic, so it wriggles more
than it swims; the scene exists to exercise long chains with many ground contacts.
"""
from __future__ import annotations

import numpy as np

import simstep

from ._util import JointPD, add_urdf_text, check_int, inertial


def swimmer(n_links=8, link_length=0.3, radius=0.03, amplitude=0.4, frequency=1.0, friction=0.5):
    """A swimmer of `n_links` capsules (mass 1 kg, `link_length` between joints) along x on
    the ground; joint k follows q_k(t) = amplitude · sin(2π f t − 2π k / n) by a PD."""
    n = check_int(n_links, "swimmer n_links", 2)
    L, r = float(link_length), float(radius)
    if not (L > 0 and 0 < r < L / 2):
        raise ValueError(f"swimmer needs link_length > 0 and 0 < radius < link_length/2, got {L}, {r}")
    m = 1.0
    it = m * L * L / 12.0
    links, joints = [], []
    for k in range(n):
        links.append(f'<link name="link{k}">{inertial(m, (L / 2, 0, 0), (0.5 * m * r * r, it, it))}'
                     f'<visual><origin xyz="{L / 2:.17g} 0 0" rpy="0 1.5707963267948966 0"/>'
                     f'<geometry><capsule radius="{r:.17g}" length="{L - 2 * r:.17g}"/></geometry>'
                     f'<material name="m{k}"><color rgba="0.2 0.6 {0.3 + 0.6 * k / n:.3f} 1"/></material></visual>'
                     f'<collision><origin xyz="{L / 2:.17g} 0 0" rpy="0 1.5707963267948966 0"/>'
                     f'<geometry><capsule radius="{r:.17g}" length="{L - 2 * r:.17g}"/></geometry></collision></link>')
        if k:
            joints.append(f'<joint name="j{k}" type="revolute"><parent link="link{k - 1}"/><child link="link{k}"/>'
                          f'<origin xyz="{L:.17g} 0 0"/><axis xyz="0 0 1"/>'
                          f'<limit lower="-1.5" upper="1.5" effort="50" velocity="20"/></joint>')
    xml = '<robot name="swimmer">' + "".join(links) + "".join(joints) + "</robot>"
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=friction)
    add_urdf_text(wb, "swimmer", xml, floating_base=True, position=(-n * L / 2, 0.0, r), friction=friction)
    w = wb.build()
    model = w.model
    names = [f"swimmer/j{k}" for k in range(1, n)]
    phase = -2 * np.pi * np.arange(1, n) / n
    A, f = float(amplitude), float(frequency)

    def wave(t):
        return A * np.sin(2 * np.pi * f * t + phase)

    pd = JointPD(model, w.q0, names, kp=20.0, kd=1.0, q_ref_fn=wave)
    model.armature[pd.iv] = 0.01
    w.actuation = pd
    w.dt = 1e-3
    w.description = f"{n}-link swimmer on the ground, travelling-wave joint PD"
    return w

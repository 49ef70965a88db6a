"""The multi-link pendulum benchmark of paper 004, Sec. 8 (Table 2, Figs. 5-6).

n identical 1 kg spheres joined by pin hinges (axes along y), the radius scaled so that the
chain is 12 m long (r = 6/n: neighbouring spheres touch at their hinge), the first hinge at
(0, 0, 10), a floor (z = 0) and a wall whose face is 4 m from the base (x = 4), friction 0.5,
restitution 0.7 on every surface, g = 9.8 m/s², time step 0.1 ms. The chain starts straight,
π/4 from the vertical on the side away from the wall, rotating at 1 rad/s towards it: it hits
the floor (12 m hanging from 10 m), bounces, and reaches the wall. Collisions: floor, wall,
non-adjacent links (neighbours touch at their hinge and are never tested).

formulation="minimal": a revolute chain from the world (the paper's OS formulation; only
contacts are constraint rows). formulation="maximal": n free spheres (6 dofs each) joined by
hinge loop closures (the paper's NMC/OS). A hinge is two point closures on its axis, at the
pivot and `r` further along y (6 rows of rank 5: the along-axis rows repeat each other, which
the proximal ADMM handles); the paper counts 5 rows per hinge. Adjacent spheres are kept from
colliding by collision groups: sphere k is in group bit k and masks its neighbours' bits, so
the maximal formulation is limited to 32 links (32-bit groups).
"""
from __future__ import annotations

import numpy as np

import simstep

from ._util import add_urdf_text, check_choice, check_int, inertial

LENGTH = 12.0
BASE_HEIGHT = 10.0
WALL_X = 4.0
FRICTION = 0.5
RESTITUTION = 0.7
GRAVITY = 9.8
DT = 1e-4
ANGLE = np.pi / 4
OMEGA = 1.0


def _environment(wb):
    wb.add_ground(friction=FRICTION, restitution=RESTITUTION)
    wb.add_box("wall", half_extents=(0.5, 6.0, 8.0), position=(WALL_X + 0.5, 0.0, 8.0), fixed=True,
               friction=FRICTION, restitution=RESTITUTION, color=(0.75, 0.75, 0.78, 0.6))


def _initial(n, r):
    """Centres and world velocities of the spheres; the chain's rotation angle and rate."""
    theta, rate = ANGLE, -OMEGA          # rotation about +y; -1 rad/s swings towards +x (the wall)
    d = np.array([-np.sin(theta), 0.0, -np.cos(theta)])      # down the chain
    base = np.array([0.0, 0.0, BASE_HEIGHT])
    w = np.array([0.0, rate, 0.0])
    centres = np.array([base + (2 * k + 1) * r * d for k in range(n)])
    vel = np.cross(w, centres - base)
    return theta, rate, centres, vel


def link_name(n_links, formulation, k):
    """Name of the frame at the centre of sphere k (0 = at the base) of
    `pendulum_benchmark(n_links, formulation)` (for `Simulator.body_pose`/`body_velocity`)."""
    return f"pendulum/center{k}" if formulation == "minimal" else f"link{k}"


def pendulum_benchmark(n_links=12, formulation="minimal"):
    """Paper 004's multi-link pendulum (module docstring). Sets ``world.dt`` (1e-4 s),
    ``world.constraints`` (the hinges, maximal formulation), ``world.last_link`` (the frame at
    the centre of the free end's sphere) and ``world.hinges`` (list of (body1, body2, pivot in body1))."""
    n = check_int(n_links, "pendulum_benchmark n_links", 2)
    check_choice(formulation, "pendulum_benchmark formulation", ("minimal", "maximal"))
    r = LENGTH / (2 * n)
    mass = 1.0
    I = 0.4 * mass * r * r
    theta, rate, centres, vel = _initial(n, r)
    wb = simstep.WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    _environment(wb)
    color = "0.85 0.35 0.2 1"
    if formulation == "minimal":
        links, joints = ['<link name="base"/>'], []
        for k in range(n):
            # a massless frame at the sphere's centre (merged into link k by its fixed joint)
            links.append(f'<link name="center{k}"/>')
            joints.append(f'<joint name="center{k}_joint" type="fixed"><parent link="link{k}"/>'
                          f'<child link="center{k}"/><origin xyz="0 0 {-r:.17g}"/></joint>')
            links.append(f'<link name="link{k}">{inertial(mass, (0, 0, -r), (I, I, I))}'
                         f'<visual><origin xyz="0 0 {-r:.17g}"/><geometry><sphere radius="{r:.17g}"/></geometry>'
                         f'<material name="m{k}"><color rgba="{color}"/></material></visual>'
                         f'<collision><origin xyz="0 0 {-r:.17g}"/><geometry><sphere radius="{r:.17g}"/>'
                         f'</geometry></collision></link>')
            parent, z = ("base", BASE_HEIGHT) if k == 0 else (f"link{k - 1}", -2 * r)
            joints.append(f'<joint name="hinge{k}" type="continuous"><parent link="{parent}"/>'
                          f'<child link="link{k}"/><origin xyz="0 0 {z:.17g}"/><axis xyz="0 1 0"/></joint>')
        xml = '<robot name="pendulum">' + "".join(links) + "".join(joints) + "</robot>"
        q = np.zeros(n)
        q[0] = theta
        add_urdf_text(wb, "pendulum", xml, floating_base=False, q=q, friction=FRICTION, restitution=RESTITUTION)
        w = wb.build()
        w.v0[w.model.joint_v_index("pendulum/hinge0")] = rate
        w.constraints = []
        hinges = [("pendulum/link0", "world", (0.0, 0.0, 0.0))] + \
                 [(f"pendulum/link{k}", f"pendulum/link{k - 1}", (0.0, 0.0, 0.0)) for k in range(1, n)]
    else:
        if n > 32:
            raise ValueError(f"the maximal pendulum uses one collision group bit per link: at most 32 links, got {n}")
        qu = (0.0, np.sin(theta / 2), 0.0, np.cos(theta / 2))       # rotation about y by theta
        R = simstep.quat_to_matrix(qu)
        for k in range(n):
            bit = 1 << k
            mask = 0xFFFFFFFF & ~((1 << (k - 1)) if k > 0 else 0) & ~((1 << (k + 1)) if k + 1 < 32 else 0)
            v_body = np.concatenate([R.T @ vel[k], R.T @ np.array([0.0, rate, 0.0])])
            wb.add_sphere(f"link{k}", r, mass=mass, position=centres[k], quaternion=qu, velocity=v_body,
                          friction=FRICTION, restitution=RESTITUTION, color=(0.2, 0.45, 0.85, 1.0),
                          group=bit, mask=mask)
        w = wb.build()
        cons, hinges = [], []
        axis = np.array([0.0, r, 0.0])
        for k in range(n):
            top = np.array([0.0, 0.0, r])                 # the hinge above sphere k, in its frame
            if k == 0:
                other, p_other = "world", np.array([0.0, 0.0, BASE_HEIGHT])
                p_other_axis = p_other + axis             # the world frame: axis y as well
            else:
                other, p_other = f"link{k - 1}", np.array([0.0, 0.0, -r])
                p_other_axis = p_other + axis
            for p1, p2 in ((top, p_other), (top + axis, p_other_axis)):
                cons.append(simstep.LoopClosure(f"link{k}", (p1, np.eye(3)), other, (p2, np.eye(3)), kind="point"))
            hinges.append((f"link{k}", other, tuple(top)))
        w.constraints = cons
    w.dt = DT
    w.last_link = link_name(n, formulation, n - 1)
    w.link_radius = r
    w.hinges = hinges
    w.description = f"paper 004 pendulum, {n} links, {formulation} coordinates"
    w.plots = ("energy",)                     # conserved up to the integrator's dissipation
    return w

"""Ready scenes: each function returns a built `simstep.World`.

Conventions: a scene that needs more than the world's bodies carries it on the world, and
`simstep.Simulator(world)` picks it up by default:

- ``world.constraints``: loop closures (`simstep.LoopClosure`) of closed-loop mechanisms and
  of the maximal-coordinate pendulum;
- ``world.actuation``: the controller, a callable ``actuation(sim) -> τ (nv,)`` (joint PD
  of the standing robots, crank motors, the swimmer's travelling wave);
- ``world.dt``: the recommended time step (1 ms; 0.1 ms for paper 004's pendulum), which
  the caller passes as ``Simulator(world, dt=world.dt)``;
- ``world.description``: one line for listings.

`SCENES` maps the command line's scene names to (function, keyword arguments, default
duration in seconds, description).
"""
from .biped import biped
from .boxes import box_pyramid, box_stack, pyramid_centres
from .mechanisms import four_bar, slider_crank
from .mjcf_scene import mjcf_scene
from .pendulum import pendulum_benchmark
from .robots import humanoid, pyramid_with_robots, quadruped
from .swimmer import swimmer
from ._util import JointPD

SCENES = {
    "box_stack": (box_stack, {}, 2.0, "5 boxes stacked vertically"),
    "box_pyramid": (box_pyramid, {}, 2.0, "paper 000's square pyramid: 30 boxes, 288 contacts"),
    "box_pyramid_triangle": (box_pyramid, dict(layers=8, shape="triangle"), 2.0, "2D pyramid, rows 8-7-...-1"),
    "pyramid_with_robots": (pyramid_with_robots, {}, 2.5, "three G1 falling on the 30-box pyramid (paper 000 Fig. 1)"),
    "humanoid": (humanoid, {}, 2.0, "G1 standing, joint PD"),
    "humanoid_falling": (humanoid, dict(pose="falling"), 2.0, "G1 dropped from 0.3 m, unactuated"),
    "talos": (humanoid, dict(robot="talos"), 2.0, "Talos standing, joint PD"),
    "quadruped": (quadruped, {}, 2.0, "Go2 standing, joint PD"),
    "cassie": (biped, {}, 2.0, "Cassie standing, joint PD (SDF, closed loops, springs)"),
    "cassie_falling": (biped, dict(pose="falling"), 2.0, "Cassie dropped from 0.3 m, springs only"),
    "four_bar": (four_bar, {}, 3.0, "motor-driven crank-rocker four-bar (loop closure)"),
    "slider_crank": (slider_crank, {}, 3.0, "motor-driven slider-crank (loop closure)"),
    "pendulum": (pendulum_benchmark, dict(n_links=12), 1.0, "paper 004's 12-link pendulum, minimal coordinates"),
    "pendulum_maximal": (pendulum_benchmark, dict(n_links=12, formulation="maximal"), 1.0,
                         "paper 004's 12-link pendulum, free spheres + hinge loop closures"),
    "swimmer": (swimmer, {}, 3.0, "8-link swimmer on the ground, travelling-wave PD"),
    "mjcf": (mjcf_scene, {}, 2.0, "MJCF box pile and hinge chain, compiled by MuJoCo (mjcf extra)"),
}

__all__ = ["JointPD", "SCENES", "biped", "box_pyramid", "box_stack", "four_bar", "humanoid", "mjcf_scene",
           "pendulum_benchmark", "pyramid_centres", "pyramid_with_robots", "quadruped", "slider_crank", "swimmer"]

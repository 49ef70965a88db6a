"""Ready scenes (DESIGN.md): each function returns a built `simstep.World`.

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
duration in seconds).
"""
from .boxes import box_pyramid, box_stack, pyramid_centres
from .mechanisms import four_bar, slider_crank
from .pendulum import pendulum_benchmark
from .robots import humanoid, pyramid_with_robots, quadruped
from .swimmer import swimmer
from ._util import JointPD

SCENES = {
    "box_stack": (box_stack, {}, 2.0),
    "box_pyramid": (box_pyramid, {}, 2.0),
    "box_pyramid_triangle": (box_pyramid, dict(layers=8, shape="triangle"), 2.0),
    "pyramid_with_robots": (pyramid_with_robots, {}, 1.5),
    "humanoid": (humanoid, {}, 2.0),
    "humanoid_falling": (humanoid, dict(pose="falling"), 2.0),
    "talos": (humanoid, dict(robot="talos"), 2.0),
    "quadruped": (quadruped, {}, 2.0),
    "four_bar": (four_bar, {}, 3.0),
    "slider_crank": (slider_crank, {}, 3.0),
    "pendulum": (pendulum_benchmark, dict(n_links=12), 1.0),
    "pendulum_maximal": (pendulum_benchmark, dict(n_links=12, formulation="maximal"), 1.0),
    "swimmer": (swimmer, {}, 3.0),
}

__all__ = ["JointPD", "SCENES", "box_pyramid", "box_stack", "four_bar", "humanoid", "pendulum_benchmark",
           "pyramid_centres", "pyramid_with_robots", "quadruped", "slider_crank", "swimmer"]

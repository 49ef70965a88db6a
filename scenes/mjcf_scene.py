"""A world loaded from MJCF files through MuJoCo's compiler (`simstep.WorldBuilder.add_mjcf`):
the box pile (six free boxes on the file's floor) and the hanging hinge chain of the test
suite's models (tests/data/mjcf). Needs the ``mjcf`` extra (MuJoCo)."""
from __future__ import annotations

import os

import simstep

MJCF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "mjcf")


def mjcf_file(name):
    """Path of one of the MJCF models of tests/data/mjcf (box_pile, hinge_chain, humanoid_tree,
    connect_loop)."""
    p = os.path.join(MJCF_DIR, name + ".xml")
    if not os.path.isfile(p):
        raise FileNotFoundError(f"{p} not found: the MJCF scene reads the test suite's models "
                                f"(run it from a source checkout)")
    return p


def mjcf_scene():
    """The MJCF box pile (its floor plane is static geometry, friction 0.6 from the file) and,
    1 m to its side, the five-link hinge chain starting horizontal, released under gravity.
    ``world.dt``: 1 ms (the chain's file asks for it)."""
    wb = simstep.WorldBuilder()
    wb.add_mjcf("pile", mjcf_file("box_pile"))
    wb.add_mjcf("chain", mjcf_file("hinge_chain"), position=(-0.6, 1.0, 0.0))
    w = wb.build()
    w.dt = w.objects["chain"]["timestep"]
    w.description = "MJCF box pile and hinge chain (compiled by MuJoCo)"
    return w

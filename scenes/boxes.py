"""Box scenes: a vertical stack and the pyramids of paper 000 (Table I, Fig. 1)."""
from __future__ import annotations

import numpy as np

import simstep

from ._util import check_choice, check_int

HALF = 0.1          # box half extent (m): 20 cm cubes, as in paper 000's scenarios
GAP = 0.01          # gap between neighbours of a pyramid layer (m), well above the contact margin


def box_stack(n=5, half=HALF, mass=1.0, friction=0.5):
    """n cubes stacked vertically on the ground, faces exactly touching (4 corner contacts per
    touching pair, 4n in all)."""
    n = check_int(n, "box_stack n", 1)
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=friction)
    for k in range(n):
        wb.add_box(f"box{k}", (half, half, half), mass=mass, position=(0.0, 0.0, half + 2 * half * k),
                   friction=friction)
    w = wb.build()
    w.dt = 1e-3
    w.description = f"{n} boxes stacked vertically"
    w.plots = ("contact_force", "energy")
    return w


def pyramid_centres(layers=4, shape="square", half=HALF, gap=GAP, x0=0.0, y0=0.0):
    """Box centres of a pyramid, bottom layer first. "square": layers×layers, ..., 1×1 boxes,
    each upper box on four below (offset by half a pitch in x and y); "triangle": rows
    layers, layers-1, ..., 1 in the xz-plane, each upper box on two below. Neighbours in a
    layer are `gap` apart, so they do not touch."""
    pitch = 2 * half + gap
    out = []
    for level in range(layers):
        s = layers - level
        z = half + 2 * half * level
        if shape == "square":
            for i in range(s):
                for j in range(s):
                    out.append((x0 + (i - (s - 1) / 2) * pitch, y0 + (j - (s - 1) / 2) * pitch, z))
        else:
            for i in range(s):
                out.append((x0 + (i - (s - 1) / 2) * pitch, y0, z))
    return np.array(out)


def box_pyramid(layers=4, shape="square", half=HALF, gap=GAP, mass=1.0, friction=0.5):
    """The box pyramid of paper 000 by default: 4×4 + 3×3 + 2×2 + 1 = 30 cubes of 20 cm and
    1 kg, each upper cube resting on four below: 288 corner contacts, 864 rows, nv = 180.
    shape="triangle": the 2D pyramid, rows layers, ..., 1 (each box on two below)."""
    layers = check_int(layers, "box_pyramid layers", 1)
    check_choice(shape, "box_pyramid shape", ("square", "triangle"))
    if not (np.isfinite(gap) and 0 <= gap < 2 * half):
        raise ValueError(f"gap must be in [0, 2·half), got {gap}")
    wb = simstep.WorldBuilder()
    wb.add_ground(friction=friction)
    for k, c in enumerate(pyramid_centres(layers, shape, half, gap)):
        wb.add_box(f"box{k}", (half, half, half), mass=mass, position=c, friction=friction)
    w = wb.build()
    w.dt = 1e-3
    n = len(w.model.body_names)
    w.description = f"{shape} pyramid of {n} boxes ({layers} layers)"
    w.plots = ("contact_force", "energy")
    return w

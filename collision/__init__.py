"""Collision detection into contact frames (conventions: docs/architecture.md).

``collision.detect(world, q)`` returns `Contacts` (flat arrays: body1, body2, position,
frame, distance, friction, restitution, compliance, key, ...) through a `CollisionDetector`
kept in the world's ``collision_detectors``. Every pair type is solved by numba kernels (``native=False``: by the
library backend, coal (default) or python-fcl).

Modules, one stage each: `kinds` and `shapes` (geometry kinds, shape data, mesh hulls),
`broadphase` (placements, AABBs, candidate pairs), `midphase` (proofs of separation, the
per-pair cache), `hulls` and `support` (support points, features and heights), `gjk`
(GJK/EPA), `narrow` (one kernel per pair type behind `narrow.pair_table`), `patch` (contact
patches into the output buffers), `state` (the compiled state of a detector, one structref),
`driver` (the numba call per detection), `library` and
`backends` (coal, python-fcl), `detector` (the Python API).
"""
from .detector import CollisionDetector, Contacts, detect
from .shapes import CollisionError, ShapeTable, load_convex_mesh

__all__ = ["CollisionDetector", "Contacts", "detect", "CollisionError", "ShapeTable", "load_convex_mesh"]

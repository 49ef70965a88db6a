"""Collision detection into contact frames (conventions: docs/architecture.md).

``collision.detect(world, q)`` returns `Contacts` (flat arrays: body1, body2, position,
frame, distance, friction, restitution, compliance, key, ...) through a `CollisionDetector`
cached on the world. Backends: coal (default) and python-fcl; box/sphere/plane pairs use
native numba kernels unless ``native=False``.
"""
from .detector import CollisionDetector, Contacts, detect
from .shapes import CollisionError, ShapeTable, load_convex_mesh

__all__ = ["CollisionDetector", "Contacts", "detect", "CollisionError", "ShapeTable", "load_convex_mesh"]

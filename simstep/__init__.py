"""Public API of the simulator: world builder, constraints, time stepping (see DESIGN.md)."""
from .world import World, WorldBuilder, matrix_to_quat, quat_to_matrix
from .constraints import Contact, ContactSet, LoopClosure, JointLimit, JointFriction

__all__ = ["World", "WorldBuilder", "matrix_to_quat", "quat_to_matrix"]

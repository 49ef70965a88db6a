"""Public API of the simulator: world builder, constraints, time stepping (see DESIGN.md)."""
from .world import World, WorldBuilder, matrix_to_quat, quat_to_matrix

__all__ = ["World", "WorldBuilder", "matrix_to_quat", "quat_to_matrix"]

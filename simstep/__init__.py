"""Public API of the simulator: world builder, constraints, time stepping (see DESIGN.md)."""
from .constraints import Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure
from .simulator import SimulationError, Simulator, StepContacts, StepStats, Trajectory
from .world import World, WorldBuilder, matrix_to_quat, quat_to_matrix

__all__ = ["Contact", "ContactSet", "ConstraintSet", "JointFriction", "JointLimit", "LoopClosure",
           "SimulationError", "Simulator", "StepContacts", "StepStats", "Trajectory",
           "World", "WorldBuilder", "matrix_to_quat", "quat_to_matrix"]

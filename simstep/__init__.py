"""Public API of the simulator: world builder, constraints, time stepping (docs/architecture.md)."""
from .constraints import Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure
from .results import StepContacts, StepStats, Trajectory, load_trajectory
from .rollouts import EpisodeError, FinalState, RolloutPool, RolloutResults, rollouts
from .simulator import SimulationError, Simulator
from .world import JointSprings, World, WorldBuilder, matrix_to_quat, quat_to_matrix

__all__ = ["Contact", "ContactSet", "ConstraintSet", "EpisodeError", "FinalState", "JointFriction", "JointLimit",
           "JointSprings", "LoopClosure", "RolloutPool", "RolloutResults", "SimulationError", "Simulator", "StepContacts",
           "StepStats", "Trajectory", "load_trajectory", "World", "WorldBuilder", "matrix_to_quat", "quat_to_matrix",
           "rollouts"]

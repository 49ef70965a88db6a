"""Constraints of the public API: `Contact`, `ContactSet`, `LoopClosure`,
`JointLimit`, `JointFriction`.

They are defined in `solvers.constraints` (solvers may not import simstep) and re-exported
here; see that module for the row conventions.
"""
from solvers.constraints import Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure

__all__ = ["Contact", "ContactSet", "ConstraintSet", "JointFriction", "JointLimit", "LoopClosure"]

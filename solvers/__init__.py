"""Solvers: constraints compiled to link-level rows, Delassus operators (paper 000).

- `DenseDelassus`: explicit baseline (J, CRBA, Cholesky).
- `MatrixFreeDelassus`: Λ⁻¹ in two ABA sweeps and Λ_R by LCABA + the matrix inversion lemma.
- `ConstraintSet`: constraints resolved against a model into flat arrays.
- `constrained_aba`, `prox_pv` (and the dense `prox_ltl`): constrained forward dynamics by the proximal augmented Lagrangian (paper 002).
"""
from .constraints import (Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure,
                          as_constraint_set)
from .constrained import ConstrainedResult, constrained_aba, prox_ltl, prox_pv
from .delassus import DenseDelassus, MatrixFreeDelassus
from .elimination import Elimination, elimination_order

__all__ = ["Contact", "ContactSet", "ConstraintSet", "JointFriction", "JointLimit", "LoopClosure",
           "as_constraint_set", "DenseDelassus", "MatrixFreeDelassus", "Elimination", "elimination_order",
           "ConstrainedResult", "constrained_aba", "prox_ltl", "prox_pv"]

"""Solvers: constraints compiled to link-level rows, Delassus operators (paper 000).

- `DenseDelassus`: explicit baseline (J, CRBA, Cholesky).
- `MatrixFreeDelassus`: Λ⁻¹ in two ABA sweeps and Λ_R by LCABA + the matrix inversion lemma.
- `ConstraintSet`: constraints resolved against a model into flat arrays.
- `lemke`, `solve_mixed_lcp`: Lemke's complementary pivoting (lexicographic) and the mixed LCP.
"""
from .constraints import (Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure,
                          as_constraint_set)
from .delassus import DenseDelassus, MatrixFreeDelassus
from .elimination import Elimination, elimination_order
from .lcp import LCPRayTermination, LCPResult, MixedLCPResult, lemke, solve_mixed_lcp

__all__ = ["Contact", "ContactSet", "ConstraintSet", "JointFriction", "JointLimit", "LoopClosure",
           "as_constraint_set", "DenseDelassus", "MatrixFreeDelassus", "Elimination", "elimination_order",
           "LCPRayTermination", "LCPResult", "MixedLCPResult", "lemke", "solve_mixed_lcp"]

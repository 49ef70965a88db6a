"""Solvers: constraints compiled to link-level rows, Delassus operators (paper 000).

- `DenseDelassus`: explicit baseline (J, CRBA, Cholesky).
- `MatrixFreeDelassus`: Λ⁻¹ in two ABA sweeps and Λ_R by LCABA + the matrix inversion lemma.
- `ConstraintSet`: constraints resolved against a model into flat arrays.
- `pv_osimr`, `pv_osim`: the explicit Delassus matrix by articulated-body recursions;
  `caba_osim`, `caba_osimf`: the damped inverse (G + diag d)⁻¹ explicitly (`solvers.osim`).
- `constrained_aba`, `prox_pv` (and the dense `prox_ltl`): constrained forward dynamics by the proximal augmented Lagrangian (paper 002).
- `lemke`, `solve_mixed_lcp`: Lemke's complementary pivoting (lexicographic) and the mixed LCP.
"""
from .constraints import (Contact, ContactSet, ConstraintSet, JointFriction, JointLimit, LoopClosure,
                          as_constraint_set)
from .constrained import ConstrainedDynamics, ConstrainedResult, constrained_aba, prox_ltl, prox_pv
from .delassus import DenseDelassus, MatrixFreeDelassus
from .elimination import Elimination, elimination_order
from .lcp import LCPRayTermination, LCPResult, MixedLCPResult, lemke, solve_mixed_lcp
from .osim import CabaOsim, PvOsimr, caba_osim, caba_osimf, pv_osim, pv_osimr

__all__ = ["Contact", "ContactSet", "ConstraintSet", "JointFriction", "JointLimit", "LoopClosure",
           "as_constraint_set", "DenseDelassus", "MatrixFreeDelassus", "Elimination", "elimination_order",
           "pv_osimr", "pv_osim", "caba_osim", "caba_osimf", "PvOsimr", "CabaOsim",
           "ConstrainedDynamics", "ConstrainedResult", "constrained_aba", "prox_ltl", "prox_pv",
           "LCPRayTermination", "LCPResult", "MixedLCPResult", "lemke", "solve_mixed_lcp"]

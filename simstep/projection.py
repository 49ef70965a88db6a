"""Position-level projection of loop closures after integration (post-stabilisation).

The simulator enforces loop closures at the velocity level: the step's impulses make the
anchor points' relative velocity J(qₖ) v⁺ = −β e(qₖ)/dt (Baumgarte, β = erp). Integrating
q⁺ = qₖ ⊕ dt v⁺ along curved paths (a hinge point rotating at ω about a pivot at distance r)
still leaves an error e(q⁺) = O(dt² ω² r) per step that Baumgarte only damps. This module
removes it: after integration, q⁺ is moved onto the closure manifold {q : e(q) = 0} by the
smallest correction in the kinetic-energy metric of M(q) (Cline and Pai, "Post-stabilization
for rigid body simulation with contact and constraints", ICRA 2003; Ascher, Chin, Petzold and
Reich, "Stabilization of constrained mechanical systems with DAEs and invariant manifolds",
1995; the projection methods of Hairer, Lubich and Wanner, Geometric Numerical Integration,
Sec. IV.4).

Each Gauss–Newton iteration at q solves the position analogue of the constrained-dynamics QP
of paper 002 (Eq. 2, KKT system Eq. 7) with the target a* = −e(q):

    δ = argmin ½ δᵀ M δ   s.t.   J δ = −e(q)
      = −M⁻¹ Jᵀ (J M⁻¹ Jᵀ + ε I)⁻¹ e(q)               (paper 002 Eq. 8 and Eq. 10 / 13b)
    q ← q ⊕ δ

with J the loop-closure rows at q (paper 000 Eq. 5c: the anchor points' relative velocity in
the axes of anchor frame 1, the same rows the step uses). The damped Delassus inverse
(Λ⁻¹ + ε I)⁻¹ is the matrix-free Λ_R of paper 000 (Sec. V, Alg. 4, `MatrixFreeDelassus.solve`)
at the current q, and M⁻¹Jᵀ is one sweep (`JT_minv`, Alg. 1–2); nothing is formed. ε makes
redundant rows (a hinge as two point closures: 6 rows of rank 5) solvable; the bias it adds,
a factor ε/(σ + ε) on a direction of G with eigenvalue σ, is removed by the next iteration
(the outer iteration is a proximal point iteration on the constraint, paper 002 Eq. 12–13).
J is the derivative of e only at e = 0 (the rotation of anchor frame 1 is left out), which
changes the step by O(‖e‖‖δ‖): convergence is quadratic, in practice one iteration per time
step (e ≈ 1e-7 m after the velocity-level step, ≈ 1e-14 m after one correction).

Velocities are not projected. After the step, J(qₖ) v⁺ = −β e(qₖ)/dt holds to the solver's
tolerance; at the corrected q⁺ the hinge rows see J(q⁺) v⁺ = O(dt ω² r), which the next
step's velocity-level rows remove exactly (they are equalities solved together with the
contacts, so velocity errors do not accumulate as position errors do). A separate velocity
projection v⁺ ← v⁺ − M⁻¹Jᵀ(J M⁻¹ Jᵀ)⁻¹ J v⁺ would ignore the contacts, which the step solved
together with the closures: it could give a contact an approach velocity the step had
removed, and it would cost a second solve for a velocity error the next step removes anyway.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

import models
from models.kinematics import fk_kernel, integrate_kernel
from solvers import MatrixFreeDelassus, as_constraint_set
from solvers.constraints import POINT, WELD
from solvers.elimination import StructureCache


@njit(cache=True)
def closure_error_kernel(cb_kind, cb_row, cb_body, cb_f, oR, op, e):
    """Position errors of point and weld loop closures at the placements oR, op into e (m,);
    returns max |eᵣ|.

    Anchor i is the frame (xᵢ, Fᵢ) = body i ∘ (rᵢ, Qᵢ) (cb_f = (r₁, Q₁, r₂, Q₂), Qᵢ row-major;
    body -1 is the world). Point: e = F₁ᵀ (x₁ − x₂), in the axes of the rows of paper 000
    Eq. (5c) (`solvers.constraints.rows_kernel`). Weld: those 3 rows, then the rotation error
    w = vee(Rₑ − Rₑᵀ)/2 with Rₑ = F₂ᵀ F₁ (sin θ times the axis; the rows' F₁ᵀ(ω₁ − ω₂) is its
    rate at w = 0). Other constraint kinds are skipped (their rows of e are left as given).
    """
    worst = 0.0
    x1 = np.empty(3)
    x2 = np.empty(3)
    F1 = np.empty((3, 3))
    F2 = np.empty((3, 3))
    for c in range(cb_kind.shape[0]):
        kind = cb_kind[c]
        if kind != POINT and kind != WELD:
            continue
        f = cb_f[c]
        for side in range(2):
            b = cb_body[c, side]
            o = 12 * side
            x = x1 if side == 0 else x2
            F = F1 if side == 0 else F2
            for r in range(3):
                if b >= 0:
                    x[r] = oR[b, r, 0] * f[o] + oR[b, r, 1] * f[o + 1] + oR[b, r, 2] * f[o + 2] + op[b, r]
                    for k in range(3):
                        F[r, k] = oR[b, r, 0] * f[o + 3 + k] + oR[b, r, 1] * f[o + 6 + k] + oR[b, r, 2] * f[o + 9 + k]
                else:
                    x[r] = f[o + r]
                    for k in range(3):
                        F[r, k] = f[o + 3 + 3 * r + k]
        r0 = cb_row[c]
        for k in range(3):
            ek = F1[0, k] * (x1[0] - x2[0]) + F1[1, k] * (x1[1] - x2[1]) + F1[2, k] * (x1[2] - x2[2])
            e[r0 + k] = ek
            worst = max(worst, abs(ek))
        if kind == WELD:
            # Rₑ[i, j] = Σ_r F2[r, i] F1[r, j]
            w = np.empty(3)
            for k in range(3):
                i, j = (k + 1) % 3, (k + 2) % 3       # w_k = (Rₑ[j, i] − Rₑ[i, j]) / 2
                rji = F2[0, j] * F1[0, i] + F2[1, j] * F1[1, i] + F2[2, j] * F1[2, i]
                rij = F2[0, i] * F1[0, j] + F2[1, i] * F1[1, j] + F2[2, i] * F1[2, j]
                w[k] = 0.5 * (rji - rij)
            for k in range(3):
                e[r0 + 3 + k] = w[k]
                worst = max(worst, abs(w[k]))
    return worst


@dataclass
class ProjectionResult:
    """`project_loop_closures` output: the corrected q, Gauss–Newton steps taken, the largest
    row error max |eᵣ| at q (m for point rows, rad for weld rotation rows), whether it is ≤ tol,
    and the damping ε used (None if no step was needed)."""
    q: np.ndarray
    iterations: int
    residual: float
    converged: bool
    damping: float | None


def project_loop_closures(model, q, closures, tol=1e-10, max_iter=10, damping=None, refine=1, data=None,
                          structures=None):
    """Move q onto the loop-closure manifold e(q) = 0 by Gauss–Newton steps in the metric of
    M(q) (module docstring): δ = −M⁻¹Jᵀ(J M⁻¹ Jᵀ + εI)⁻¹ e(q), q ← q ⊕ δ, until max |eᵣ| ≤ tol.

    closures: `LoopClosure`s or a `ConstraintSet` of them (pass a ConstraintSet built once to
    reuse its resolved arrays and the elimination order across calls). damping: ε (absolute,
    units of G = J M⁻¹ Jᵀ); None sets 1e-9 λ_max(G) at the first step (10 Lanczos steps) and
    returns it in the result for reuse. refine: iterative-refinement steps of the damped solve
    (`MatrixFreeDelassus.solve`: without it the matrix-free Λ_R loses about 1e-14‖G‖/ε relative
    accuracy at small ε, which would slow the Gauss–Newton convergence to linear; one step costs
    a matvec and a second pass over the factors and brings the step to the dense accuracy). data: a `models.Data` used as workspace (its contents
    are overwritten). structures: a `solvers.elimination.StructureCache` of the model, which
    keeps the closures' elimination order between calls (default: one for this call). A step that does not reduce max |eᵣ| is rejected and the iteration stops
    (unsatisfiable or singular closures then return converged=False and the best q found).
    Cost per step: one kinematics + ABA factorisation, one LCABA factorisation and solve, one
    M⁻¹Jᵀ sweep, O(n + m); checking an already-closed q costs one forward kinematics.
    """
    q = model.check_q(q).copy()
    cs = as_constraint_set(model, closures)
    bad = (cs.cb_kind != POINT) & (cs.cb_kind != WELD)
    if np.any(bad):
        raise TypeError("project_loop_closures projects LoopClosure constraints only; got constraint kinds "
                        f"{sorted({int(k) for k in cs.cb_kind[bad]})} (0 contact, 3 joint limit, 4 joint friction)")
    tol, max_iter = float(tol), int(max_iter)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol}")
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    refine = int(refine)
    if refine < 0:
        raise ValueError(f"refine must be >= 0, got {refine}")
    if damping is not None:
        damping = float(damping)
        if not (np.isfinite(damping) and damping > 0):
            raise ValueError(f"damping must be a positive finite number, got {damping}")
    if data is None:
        data = models.Data(model)
    elif data.model is not model:
        raise ValueError("data was created for another model")
    e = np.zeros(cs.m)
    if cs.m == 0:
        return ProjectionResult(q, 0, 0.0, True, damping)

    def residual(x):
        data.q = None       # only the placements are current: the Delassus operator recomputes all
        fk_kernel(model.jint, model.jfloat, x, data.oR, data.op)
        return closure_error_kernel(cs.cb_kind, cs.cb_row, cs.cb_body, cs.cb_f, data.oR, data.op, e)

    res = residual(q)
    it = 0
    structures = StructureCache(model) if structures is None else structures
    while res > tol and it < max_iter:
        op = MatrixFreeDelassus(model, q, cs, data=data, structures=structures)
        if damping is None:
            lmax = op.max_eigenvalue(iters=10)
            if not lmax > 0:
                break           # Jᵀ = 0: the closures cannot be corrected by moving q
            damping = 1e-9 * lmax
        op.update_damping(damping)
        delta = op.JT_minv(op.solve(e, refine=refine))
        q_new = np.empty_like(q)
        integrate_kernel(model.jint, q, delta, -1.0, q_new)        # q ⊕ (−δ)
        res_new = residual(q_new)
        if not res_new < res:
            residual(q)      # keep e and the placements consistent with the returned q
            break
        q, res = q_new, res_new
        it += 1
    return ProjectionResult(q, it, float(res), bool(res <= tol), damping)

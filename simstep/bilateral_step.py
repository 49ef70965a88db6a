"""Time steps of worlds whose constraints are all bilateral, by constrained articulated-body
dynamics (Sathya, Carpentier, "Constrained Articulated Body Dynamics Algorithms").

When a step has no contacts, no active joint limits and no joint friction, its rows are loop
closures only ("free" rows): the contact solver would solve G λ = −(J v_f + corr) by its
iterations on the Delassus operator. This module solves the same velocity-level problem,

    Δv = argmin ½ ‖Δv‖²_M  subject to  J(q) (v_f + Δv) = −corr,   v⁺ = v_f + Δv,

in one compiled call (`solvers.ConstrainedDynamics.impulse`): constrainedABA's proximal
iterations on the tree (Alg. 3) when every closure holds a body to the world, proxPV (Alg. 4:
the Delassus matrix by the PV sweeps and one m × m Cholesky) when closures join two moving
bodies and m ≤ PROXPV_MAX_ROWS (beyond, the contact solver is faster and keeps the step).
corr is the simulator's own stabilisation of the rows (`simstep.problem`), so both paths aim at the same velocities; redundant closures (a planar four-bar's out-of-plane
row) get the minimum-norm impulses, as the ADMM's free rows do in the limit.

`Simulator(world, bilateral=...)`: "auto" (default) uses it on such steps, "solver" keeps the
contact solver for them.
"""
from __future__ import annotations

from solvers import LoopClosure
from solvers.constrained import ConstrainedDynamics

MU, TOL, MAX_ITER = 1e6, 1e-12, 50     # proximal parameter; residual (m/s) and cap of the iterations
# proxPV's m × m Cholesky outgrows the ADMM's matrix-free iterations past this many rows (closures
# between moving bodies; measured on the maximal-coordinate pendulum, step time against the ADMM's:
# 0.84 at m = 12, 0.94 at 36, 1.03 at 72; `bench/bench_closure.py`)
PROXPV_MAX_ROWS = 48


class BilateralStep:
    """The bilateral step of a `Simulator` (module doc); one `ConstrainedDynamics` per
    constraint set (the simulator reuses its loop-closure set across steps)."""

    def __init__(self, sim):
        self.sim = sim
        self._cs, self._cd = None, None

    def applies(self, k, cs):
        """True when the step's rows are loop closures only (no contacts: k = 0) and the set is
        one this step is faster on (every closure to the world, or m ≤ PROXPV_MAX_ROWS)."""
        if k or not all(isinstance(c, LoopClosure) for c in cs.constraints):
            return False
        if cs is not self._cs:
            cd = ConstrainedDynamics(self.sim.model, cs, mu=MU, tol=TOL, max_iter=MAX_ITER)
            if cd._graph:
                cd = None if cs.m > PROXPV_MAX_ROWS else \
                    ConstrainedDynamics(self.sim.model, cs, algorithm="proxPV", mu=MU, tol=TOL, max_iter=MAX_ITER)
            self._cs, self._cd = cs, cd
        return self._cd is not None

    def solve(self, q, v_free, cs, corr, st):
        """(Δv = M⁻¹ Jᵀ λ (nv,), λ (m,)) of the step (after `applies` said True for cs), for the
        rows' stabilisation targets corr (m,) (`simstep.problem.ProblemAssembler`); its
        iterations and residual into the StepStats st."""
        r = self._cd.impulse(q, v_free, corr)
        st.iterations, st.converged, st.primal_residual = r.iterations, r.residual <= 1e-9, r.residual
        return r.a, r.lam

"""The steady step: stages 3–6 of `Simulator.step` in one compiled call.

Once a simulation has settled into contact, most steps see the contacts of the last step's
geometry pairs in the same order and the same active joint limits: the constraint set, its
operator, the cones and λ_max(G) are the last step's, refreshed in place. Such a step is a
fixed sequence of compiled kernels, and run stage by stage from Python it spent more time
between the kernels (about 60 lines of glue and 10 calls, each unboxing its arrays) than in
them. `steady_step_kernel` runs the sequence in one call, with the same kernels in the same
order on the same arrays, so its results are bitwise those of the staged path:

  free velocity  `integrator.free_step_kernel` (or `articulated_step_kernel`);
  limits         `problem.active_limits_kernel`, which must find the tail's active limits;
  rows           `solvers.constraints.contact_points_kernel` (the refresh of the set's points);
  vectors        `problem.step_vectors_kernel` (g and the contacts' warm start), the tail's
                 warm start carried over;
  solve          `solvers.admm.admm_kernel` (with the velocity change and the next warm start);
  integration    `integrator.step_end_kernel` (q⁺, v⁺ and the next step's Data).

`SteadyStep.step` decides whether a step qualifies (a matrix-free operator under the ADMM, the
NCP model, no loop closures, compliance or restitution; contacts of the same pairs as the
last set) and commits its results; any other outcome of the kernel (limits or pairs changed, a
failed solve, a non-finite state) sends the step down the staged path, which recomputes it
from the same inputs and reports failures as always.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

import models.data
import solvers.admm
import solvers.constraints
from models.jitcache import drop_stale_cache, kernel_variant
from solvers.admm import admm_kernel
from solvers.constraints import contact_points_kernel

from . import integrator, problem
from .integrator import articulated_step_kernel, free_step_kernel, step_end_kernel
from .problem import WARM_START_GATE, active_limits_kernel, same_pairs_kernel, step_vectors_kernel

# the kernel compiles in the stages' kernels (their own modules guard their callees)
drop_stale_cache(__file__, [integrator.__file__, problem.__file__, solvers.admm.__file__,
                            solvers.constraints.__file__, models.data.__file__])

OK, TAIL_CHANGED, STAGED = 0, 1, 2      # `steady_step_kernel`'s status

_CONST_FIELDS = ("jint", "jfloat", "armature", "gravity", "kind", "inertia", "inertia_inv", "mass", "com", "all_free",
                 "lim_q", "lim_dof", "lim_val", "lim_sgn", "gap", "active", "limits", "h", "margin",
                 "slop", "erp", "vmax", "threshold", "gate", "extra_rows")


@structref.register
class StepConstantsType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class StepConstants(structref.StructRefProxy):
    """What the steady step reads but never changes, by name: the model's joint arrays
    (jint, jfloat, armature, gravity), the free step's body data (kind, inertia, inertia_inv,
    mass, com, all_free), the joint limits'
    candidate rows (lim_q, lim_dof, lim_val, lim_sgn; gap, active their scratch; limits: 1 if
    they are checked), the step h (s) and the stabilisation settings (margin m, slop m, erp,
    vmax m/s, threshold m/s, the warm start's gate m), and the rows of the world's extra
    constraints after the contacts."""

    def __new__(cls, *fields):
        return _new_constants(*fields)


structref.define_proxy(StepConstants, StepConstantsType, list(_CONST_FIELDS))


@njit(cache=True)
def _new_constants(jint, jfloat, armature, gravity, kind, inertia, inertia_inv, mass, com, all_free, lim_q, lim_dof,
                   lim_val, lim_sgn, gap, active, limits, h, margin, slop, erp, vmax, threshold, gate, extra_rows):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return StepConstants(jint, jfloat, armature, gravity, kind, inertia, inertia_inv, mass, com, all_free, lim_q,
                         lim_dof, lim_val, lim_sgn, gap, active, limits, h, margin, slop, erp, vmax, threshold, gate,
                         extra_rows)


class SteadyOut(NamedTuple):
    """`steady_step_kernel`'s result: status (OK, or why the staged path must run), the solve's
    `solvers.admm.KernelOut` fields that the step reports, λ (m,) N·s, the next warm start
    (m,), q⁺ (nq,) and v⁺ (nv,)."""
    status: int
    iterations: int
    converged: bool
    primal_residual: float
    dual_residual: float
    velocity_residual: float
    complementarity: float
    rho: float
    warm_started: bool
    polish_solves: int
    eigenvalue_used: float
    newton_steps: int
    lam: np.ndarray
    warm_next: np.ndarray
    q_next: np.ndarray
    v_next: np.ndarray


@njit(cache=True)
def _staged(status):
    e = np.empty(0)
    return SteadyOut(status, 0, False, 0.0, 0.0, 0.0, 0.0, 0.0, False, 0, 0.0, 0, e, e, e, e)


@njit(cache=True)
def steady_step_kernel(cst, d, d_next, state, q, v, tau, fext, keys, position, frame, distance, cb_f,
                       tail_active, warm_keys, warm_pos, warm_frame, warm_lam, carry, kind, start, size, param, prm,
                       v_sum, refactor):
    """Stages 3–6 of a steady step (module docstring) at state (q (nq,), v (nv,)) with joint
    torques tau (nv,) N·m or N and external wrenches fext (n, 6): d, d_next the `models.Data`
    states at q and for q⁺; state the set's `solvers.opstate.OperatorState` at d (refreshed:
    its factors marked stale); keys (k,), position (k, 3), frame (k, 3, 3), distance (k,) m
    the step's contacts, from the set's geometry pairs in the set's order; cb_f the set's
    contact data (rewritten); tail_active (n_l,) the tail's active limit rows; warm_keys,
    warm_pos, warm_frame, warm_lam the last step's contacts and impulses; carry: the tail's
    rows are the last step's (`ProblemAssembler.carries_tail`); kind … param the set's
    cones; prm the ADMM's (1,) `SolveParams`; v_sum (nv,) scratch; refactor: d_next's last
    factorisation succeeded. Returns a `SteadyOut`; status OK only if every stage ran.
    `steady_articulated_kernel` is the same with `articulated_step_kernel` as its free step."""
    nv, k = v.shape[0], keys.shape[0]
    # 3: the free velocity
    vf = np.empty(nv)
    free_step_kernel(cst.jint, cst.gravity, d.S, d.H, d.IA, d.U, d.Dinv, d.vel, d.acc, d.pA, cst.kind, cst.inertia,
                     cst.inertia_inv, cst.mass, cst.com, d.oR, d.op, tau, fext, v, cst.h, cst.all_free, vf)
    # 4: the tail's active limits must be the set's; the set's contact points; g and x0
    n = 0
    if cst.limits:
        n = active_limits_kernel(cst.lim_q, cst.lim_dof, cst.lim_val, cst.lim_sgn, q, vf, cst.h, cst.margin, cst.gap,
                                 cst.active)
    if n != tail_active.shape[0]:
        return _staged(TAIL_CHANGED)
    for i in range(n):
        if cst.active[i] != tail_active[i]:
            return _staged(TAIL_CHANGED)
    contact_points_kernel(position, frame, cb_f)
    m = 0
    for s in size:
        m += s
    g, x0 = np.empty(m), np.zeros(m)
    hit = step_vectors_kernel(state, vf, distance, cst.slop, g, np.zeros(k), cst.h, cst.erp, cst.vmax, cst.threshold,
                              cst.gap[:n], 3 * k + cst.extra_rows, warm_keys, warm_pos, warm_frame, warm_lam, keys,
                              position, frame, cst.gate, g, x0)
    if carry:
        ntail = m - 3 * k
        x0[3 * k:] = warm_lam[warm_lam.shape[0] - ntail:]
        hit = True
    # 5: the solve, with M⁻¹ Jᵀ λ and the next warm start
    # (without a warm start, the staged path has no incoming velocity J v: λ is the next warm start)
    lam, sigma, fixed, dv, warm = np.empty(m), np.empty(m), np.empty(m, np.int64), np.empty(nv), np.empty(m)
    e = np.empty(0)
    r = admm_kernel(state, kind, start, size, param, g, e, False, x0 if hit else e, hit, prm, lam, sigma, fixed,
                    np.empty((0, 4)), dv, v if hit else e, warm)
    if r.iterations < 0 or not r.velocity_change or (r.polished and hit and r.warm_next != 1):
        return _staged(STAGED)
    # 6: q⁺, v⁺ and the next step's Data
    q_next, v_next = np.empty(q.shape[0]), np.empty(nv)
    if step_end_kernel(cst.jint, cst.jfloat, cst.armature, q, vf, dv, lam, cst.h, q_next, v_sum, v_next, d_next,
                       refactor) != 0:
        return _staged(STAGED)
    return SteadyOut(OK, r.iterations, r.converged, r.primal_residual, r.dual_residual, r.velocity_residual,
                     r.complementarity, r.rho, r.warm_started, r.polish_solves, r.eigenvalue_used, r.newton_steps, lam,
                     warm if r.polished and hit else lam, q_next, v_next)


# robots on a free base (`integrator.body_kinds`: no childless free body): the free step without
# the free bodies' Newton solves, which the staged path then never compiles either
steady_articulated_kernel = kernel_variant(steady_step_kernel, "steady_articulated_kernel", dict(cache=True),
                                           free_step_kernel=articulated_step_kernel)


class SteadyStep:
    """A simulator's steady path (module docstring): `step` runs stages 3–7 of a qualifying
    step and returns True, or returns False having changed nothing the staged path reads.
    One per simulator (it keeps that simulator's `StepConstants`)."""

    def __init__(self):
        self._cst, self._key = None, None

    def __getstate__(self):
        """Picklable (snapshots, rollout workers): the `StepConstants` handle is rebuilt on use."""
        return {}

    def __setstate__(self, s):
        self.__init__()

    @staticmethod
    def applies(sim):
        """Whether sim's configuration can take the steady path at all."""
        return (sim.operator == "matrix_free" and sim.solver_name == "admm" and sim.lcp is None
                and sim._closure_set is None and not sim.assembler._closure_rows and not sim._any_compliance
                and not sim._any_restitution)

    def _constants(self, sim):
        """sim's `StepConstants`, rebuilt when a setting they hold was changed on the simulator
        (or the model's gravity array replaced; the arrays are held by reference)."""
        key = (sim.dt, sim.joint_limits, sim.joint_limit_margin, sim.contact_slop, sim.erp,
               sim.max_depenetration_velocity, sim.restitution_threshold, id(sim.model.gravity))
        if key != self._key:
            m, a = sim.model, sim.assembler
            self._cst = StepConstants(
                m.jint, m.jfloat, m.armature, m.gravity, sim._body_kind, sim._body_inertia, sim._body_inertia_inv,
                sim._mass, sim._com, sim._all_free, a._lim_q, a._lim_dof, a._lim_val, a._lim_sgn, a._lim_gap,
                a._lim_active, bool(sim.joint_limits and a._lim_dof.size),
                float(sim.dt), float(sim.joint_limit_margin), float(sim.contact_slop), float(sim.erp),
                float(sim.max_depenetration_velocity), float(sim.restitution_threshold), WARM_START_GATE,
                a._extra_rows)
            self._key = key
        return self._cst

    def step(self, sim, c, tau_v, st, phase):
        """Stages 3–7 of sim's step for the detected contacts c and joint torques tau_v (nv,),
        stats into st."""
        a, admm = sim.assembler, sim.admm
        k = len(c)
        if not k or not a.sets or not admm.settings.warm_start:
            return False
        tail = a.tail
        tail_cs, set_keys, cs, cones = a.sets[0]
        ops, m = a.ops, cones.m
        L = a.cached_eigenvalue(cs, m)
        if tail_cs is not tail[1] or not ops or ops[0].cs is not cs or L is None \
                or not same_pairs_kernel(set_keys, c.key):
            return False
        t0 = time.perf_counter()
        phase[0] = "the steady step (stages 3-6 in one call)"
        op = ops[0].refresh(sim.data)
        state = op.compiled_state()
        w = a.warm
        carry = a.carries_tail(m - 3 * k)
        L = max(float(L), 1e-12)
        rho_min = admm.settings.mu_prox
        prm = admm.params_for(L, m, rho_min)
        d_next = sim._data_next
        kernel = steady_articulated_kernel if sim._free_step is articulated_step_kernel else steady_step_kernel
        r = kernel(self._constants(sim), sim.data.state, d_next.state, state, sim.q, sim.v, tau_v, sim._fext, c.key,
                   c.position, c.frame, c.distance, cs.cb_f, tail[3], w.keys, w.position, w.frame, w.lam, carry,
                   *cones.arrays(), prm, sim._v_sum, d_next._factored)
        if r.status != OK:
            return False
        # the staged path's bookkeeping: the set's points, the assembler's operator, the ADMM's ρ
        c0 = cs.constraints[0]
        c0.position, c0.frame = c.position, c.frame
        a.op = op
        admm.keep_after(op, r.iterations, r.polish_solves, r.rho, r.eigenvalue_used, L, m, rho_min)
        st.ncontacts, st.nrows = k, m
        st.record_solve(r)
        d_next._computed(r.q_next, True)
        st.time_solver = time.perf_counter() - t0
        st.steady = True
        sim._commit(r.q_next, r.v_next, d_next, c, r.lam, r.warm_next, tau_v, st)
        return True

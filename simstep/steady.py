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
last set, or as a set kept from earlier steps, which the step then takes up again as the staged
path would: `SteadyStep._switch`), runs the detection and commits the kernel's results; any
other outcome of the kernel (limits or pairs changed, a failed solve, a non-finite state) sends the step down the
staged path, which recomputes it from the same inputs (with the torques of a `JointPD`
the kernel computed first) and reports failures as always. The kernel also copies the
contacts from the detector's buffers and evaluates a `control.JointPD` that is the whole
actuation; it writes into arrays the step allocates (`SteadyArrays`: numba boxes an array a
kernel returns for about 0.6 µs). It and the detection kernel are called through their
compiled entry points (`models.jitcache.entry_point`) while their arguments' types hold, which
skips numba's typing of each argument (8 µs of a robot's step). What a step reads of the last
contact set is kept while the set, its operator, the tail and λ_max are the same objects
(`SetPlan`), and its arrays and a PD's go to the kernel as one structref each (`SetArrays`,
`PDArrays`, made once per set and per PD: the call unboxes two handles instead of 17 arrays).
"""
from __future__ import annotations

import functools
import time
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

import models.data
import models.scratch
import solvers.admm
import solvers.constraints
from collision.detector import Contacts
from models.jitcache import drop_stale_cache, entry_point, kernel_variant
from models.scratch import copy_into
from solvers.admm import admm_kernel
from solvers.constraints import contact_points_kernel

from . import control, integrator, problem, results
from .control import JointPD, pd_torque_kernel
from .integrator import articulated_step_kernel, free_step_kernel, step_end_kernel
from .problem import WARM_START_GATE, active_limits_kernel, step_vectors_kernel
from .results import max_penetration

# the kernel compiles in the stages' kernels (their own modules guard their callees)
drop_stale_cache(__file__, [control.__file__, integrator.__file__, problem.__file__, results.__file__,
                            solvers.admm.__file__, solvers.constraints.__file__, models.data.__file__,
                            models.scratch.__file__])

OK, TAIL_CHANGED, STAGED, PAIRS_CHANGED = 0, 1, 2, 3      # `steady_step_kernel`'s status
_NOT_STEADY = (None, None)      # `SteadyStep.step`: nothing done

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
    `solvers.admm.KernelOut` fields that the step reports, whether the next warm start is the
    `SteadyArrays`' warm (a polish's, else λ itself) and the contacts' deepest penetration (m).
    The kernel returns its fields as a plain tuple (numba boxes a named tuple by looking up its
    class at every call: 2 µs), `SteadyOut._make` names them."""
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
    warm_polished: bool
    max_penetration: float


class SteadyArrays(NamedTuple):
    """The arrays `steady_step_kernel` writes, allocated by its caller (numba boxes an array it
    allocated for about 0.6 µs, four times a Python allocation; and the kernel, which allocates
    nothing, runs without numba's reference counting, `models.scratch`): λ (m,) N·s, the
    polish's next warm start (m,), q⁺ (nq,), v⁺ (nv,) and the contacts' own arrays
    (`collision.Contacts.of_arrays`: i (5, k), s (4, k), position (k, 3), frame (k, 3, 3)); then
    the kernel's scratch, which it leaves nothing in (`SteadyStep._scratch`, kept across
    steps): work (2 nv + 3 m + k,) for v_f, Δv, g, x0, σ and the contacts' zero restitution,
    iwork (m,) for the polish's fixed rows, and hist (0, 4) (no ADMM history)."""
    lam: np.ndarray
    warm: np.ndarray
    q_next: np.ndarray
    v_next: np.ndarray
    contact_i: np.ndarray
    contact_s: np.ndarray
    position: np.ndarray
    frame: np.ndarray
    work: np.ndarray
    iwork: np.ndarray
    hist: np.ndarray

    @classmethod
    def empty(cls, m, nq, nv, k, scratch):
        """New output arrays for m rows, nq, nv, k contacts, with the scratch (work, iwork, hist)."""
        e = np.empty
        return tuple.__new__(cls, (e(m), e(m), e(nq), e(nv), e((5, k), np.int64), e((4, k)), e((k, 3)), e((k, 3, 3)),
                                   *scratch))


class ContactArrays(NamedTuple):
    """A steady step's contacts as the arrays `collision.Contacts.of_arrays` takes, i (5, k),
    s (4, k), position (k, 3), frame (k, 3, 3): the `Contacts` are made only when
    `Simulator.contacts` is read."""
    i: np.ndarray
    s: np.ndarray
    position: np.ndarray
    frame: np.ndarray

    @property
    def key(self):
        """The contacts' keys (k,) (what `ProblemAssembler.commit` reads, with position and frame)."""
        return self.i[4]

    def contacts(self):
        """The `collision.Contacts` over these arrays."""
        return Contacts.of_arrays(self.i, self.s, self.position, self.frame)


@structref.register
class PDArraysType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class PDArrays(structref.StructRefProxy):
    """A `control.JointPD`'s arrays for `control.pd_torque_kernel`, which the steady kernel
    evaluates itself when such a PD is a simulator's whole actuation: gains kp (N·m/rad or
    N/m), kd, the velocity targets v*, the torque limits (N·m or N) and the joints' q and v
    indices (j,); the position targets q* are passed at each step. One object, so that the
    kernel's call unboxes one handle instead of six arrays."""

    def __new__(cls, kp, kd, v_target, limit, iq, iv):
        return _new_pd_arrays(kp, kd, v_target, limit, iq, iv)


structref.define_proxy(PDArrays, PDArraysType, ["kp", "kd", "v_target", "limit", "iq", "iv"])


@njit(cache=True)
def _new_pd_arrays(kp, kd, v_target, limit, iq, iv):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return PDArrays(kp, kd, v_target, limit, iq, iv)


@structref.register
class SetArraysType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class SetArrays(structref.StructRefProxy):
    """The steady kernel's arrays of one contact set (`SetPlan`), by name: the detector's
    buffers out_i (5, K), out_p (K, 3), out_R (K, 3, 3), out_s (4, K); the set's contact keys
    (k,), its contact data cb_f (rewritten by each step), the tail's active limit rows and the
    set's cones (kind, start, size, param). One object, made once per set, so that the kernel's
    call unboxes one handle instead of eleven arrays."""

    def __new__(cls, out_i, out_p, out_R, out_s, keys, cb_f, tail_active, kind, start, size, param):
        return _new_set_arrays(out_i, out_p, out_R, out_s, keys, cb_f, tail_active, kind, start, size, param)


structref.define_proxy(SetArrays, SetArraysType, ["out_i", "out_p", "out_R", "out_s", "keys", "cb_f", "tail_active",
                                                  "kind", "start", "size", "param"])


@njit(cache=True)
def _new_set_arrays(out_i, out_p, out_R, out_s, keys, cb_f, tail_active, kind, start, size, param):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return SetArrays(out_i, out_p, out_R, out_s, keys, cb_f, tail_active, kind, start, size, param)


_EMPTY = np.zeros(0)


@functools.cache
def _no_pd():
    """The `PDArrays` passed when the kernel does not evaluate a PD (empty arrays), made on first
    use (its constructor is a kernel)."""
    return PDArrays(*(np.zeros(0) for _ in range(4)), np.zeros(0, np.int64), np.zeros(0, np.int64))


class SetPlan(NamedTuple):
    """What a steady step reads from the assembler's last contact set (`SteadyStep._plan_of`),
    kept while the set, its operator, the tail and the kept λ_max are the same objects."""
    set: tuple           # `ProblemAssembler.sets[0]`: (tail, contact keys, ConstraintSet, ConeSet)
    op: object           # its `MatrixFreeDelassus` (`ProblemAssembler.ops[0]`)
    tail: tuple          # `ProblemAssembler.tail`
    eig: tuple           # `ProblemAssembler._eig`, the λ_max estimate L came from
    L: float             # λ_max(G) for the ρ rule (≥ 1e-12)
    m: int               # rows
    points: object       # the set's contact points (`ConstraintSet.constraints[0]`), rewritten each step
    out: tuple           # the detector's buffers (`CollisionDetector._out`, replaced when they grow)
    arrays: object       # the kernel's `SetArrays` of the set and those buffers


@njit(cache=True, _nrt=False)
def _staged(status):
    return (status, 0, False, 0.0, 0.0, 0.0, 0.0, 0.0, False, 0, 0.0, 0, False, 0.0)


@njit(cache=True, _nrt=False)
def _copy_contacts(out_i, out_p, out_R, out_s, k, c_i, position, frame, c_s):
    """The first k contacts of the detector's buffers into the contacts' own arrays, by loops
    (slice assignments of these four arrays added 8 s to the kernel's compile)."""
    for j in range(k):
        for r in range(5):
            c_i[r, j] = out_i[r, j]
        for r in range(4):
            c_s[r, j] = out_s[r, j]
        for r in range(3):
            position[j, r] = out_p[j, r]
            for c in range(3):
                frame[j, r, c] = out_R[j, r, c]


@njit(cache=True, _nrt=False)
def steady_step_kernel(cst, d, d_next, state, q, v, tau, pd, gains, target, fext, sa, warm_keys, warm_pos, warm_frame,
                       warm_lam, carry, prm, v_sum, refactor, out):
    """Stages 3–6 of a steady step (module docstring) at state (q (nq,), v (nv,)) with joint
    torques tau (nv,) N·m or N (pd: written here first from the `PDArrays` gains and the
    targets q* target (j,)) and external wrenches fext (n, 6): d, d_next the `models.Data`
    states at q and for q⁺; state the set's `solvers.opstate.OperatorState` at d (refreshed: its
    factors marked stale); sa the set's `SetArrays`: the first k = len(sa.keys) contacts of the
    detector's buffers (`collision.Contacts`' fields) must come from the geometry pairs of the
    set's keys in the same order; warm_keys, warm_pos, warm_frame, warm_lam the last step's
    contacts and impulses; carry: the tail's rows are the last step's
    (`ProblemAssembler.carries_tail`); prm the ADMM's (1,) `SolveParams`; v_sum (nv,) scratch;
    refactor: d_next's last factorisation succeeded; out the `SteadyArrays` it writes (m the
    set's rows). Returns the fields of a `SteadyOut` (a plain tuple); status OK only if every
    stage ran.
    `steady_articulated_kernel` is the same with `articulated_step_kernel` as its free step."""
    out_i, out_p, out_R, out_s, set_keys, cb_f = sa.out_i, sa.out_p, sa.out_R, sa.out_s, sa.keys, sa.cb_f
    tail_active, kind, start, size, param = sa.tail_active, sa.kind, sa.start, sa.size, sa.param
    nv, k = v.shape[0], set_keys.shape[0]
    if pd:      # first: the staged path takes these torques whatever the status (q* evaluated once a step)
        pd_torque_kernel(gains.kp, gains.kd, target, gains.v_target, gains.limit, gains.iq, gains.iv, q, v, tau)
    m = 0
    for s in size:
        m += s
    if out.lam.shape[0] != m or out.warm.shape[0] != m or out.q_next.shape[0] != q.shape[0] or \
            out.v_next.shape[0] != nv or out.contact_i.shape[1] != k or out.position.shape[0] != k or \
            out.work.shape[0] != 2 * nv + 3 * m + k or out.iwork.shape[0] != m:
        return _staged(STAGED)
    for i in range(k):
        if out_i[4, i] // 4 != set_keys[i] // 4:
            return _staged(PAIRS_CHANGED)
    c_i, c_s, position, frame = out.contact_i, out.contact_s, out.position, out.frame   # the contacts' own arrays
    _copy_contacts(out_i, out_p, out_R, out_s, k, c_i, position, frame, c_s)
    keys, distance = c_i[4], c_s[0]
    work = out.work
    vf, dv, g, x0, sigma, e_k = work[:nv], work[nv:2 * nv], work[2 * nv:2 * nv + m], \
        work[2 * nv + m:2 * nv + 2 * m], work[2 * nv + 2 * m:2 * nv + 3 * m], work[2 * nv + 3 * m:]
    e = work[:0]
    # 3: the free velocity
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
    x0[:] = 0.0
    e_k[:] = 0.0
    hit = step_vectors_kernel(state, vf, distance, cst.slop, g, e_k, cst.h, cst.erp, cst.vmax, cst.threshold,
                              cst.gap[:n], 3 * k + cst.extra_rows, warm_keys, warm_pos, warm_frame, warm_lam, keys,
                              position, frame, cst.gate, g, x0)
    if carry:
        ntail = m - 3 * k
        copy_into(warm_lam[warm_lam.shape[0] - ntail:], x0[3 * k:])
        hit = True
    # 5: the solve, with M⁻¹ Jᵀ λ and the next warm start
    # (without a warm start, the staged path has no incoming velocity J v: λ is the next warm start)
    lam, warm, fixed = out.lam, out.warm, out.iwork
    r = admm_kernel(state, kind, start, size, param, g, e, False, x0 if hit else e, hit, prm, lam, sigma, fixed,
                    out.hist, dv, v if hit else e, warm)
    if r.iterations < 0 or not r.velocity_change or (r.polished and hit and r.warm_next != 1):
        return _staged(STAGED)
    # 6: q⁺, v⁺ and the next step's Data
    q_next, v_next = out.q_next, out.v_next
    if step_end_kernel(cst.jint, cst.jfloat, cst.armature, q, vf, dv, lam, cst.h, q_next, v_sum, v_next, d_next,
                       refactor) != 0:
        return _staged(STAGED)
    return (OK, r.iterations, r.converged, r.primal_residual, r.dual_residual, r.velocity_residual, r.complementarity,
            r.rho, r.warm_started, r.polish_solves, r.eigenvalue_used, r.newton_steps, r.polished and hit,
            max_penetration(distance))


# robots on a free base (`integrator.body_kinds`: no childless free body): the free step without
# the free bodies' Newton solves, which the staged path then never compiles either
steady_articulated_kernel = kernel_variant(steady_step_kernel, "steady_articulated_kernel",
                                           dict(cache=True, _nrt=False), free_step_kernel=articulated_step_kernel)


class SteadyStep:
    """A simulator's steady path (module docstring): `step` runs a qualifying step and returns
    None, or returns what it got to for the staged path, having changed nothing that path reads.
    One per simulator (it keeps that simulator's `StepConstants`, plan and PD arrays)."""

    def __init__(self):
        self._cst, self._key = None, None
        self._entry, self._qv = None, (None, None)     # `_dispatch`'s entry point; the last step's q⁺, v⁺
        self._entries = {}                              # the entry points of the kept sets, by id of their set
        self._gains = None                              # the last step's PD arrays and their `PDArrays`
        self._target = None                             # and its targets q*
        self._plan = None                               # `_plan_of`'s last `SetPlan`
        self._work = (None, None)                       # `_scratch`'s last sizes and arrays

    def __getstate__(self):
        """Picklable (snapshots, rollout workers): the compiled handles (`StepConstants`, the plan's
        `SetArrays`, `PDArrays`) are rebuilt on use."""
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
            self._entry, self._entries = None, {}       # the kernel is typed anew for the new constants
        return self._cst

    def step(self, sim, tau, st, phase):
        """Stages 1–7 of sim's step with joint torques tau (nv,) or None (the actuation), stats
        into st: the detection, then stages 3–6 in one compiled call when the contacts come from
        the last step's set. Returns None when the step is done, else (contacts, joint torques)
        as far as it got (None where not computed) for the staged path, having changed nothing
        else it reads."""
        a, admm = sim.assembler, sim.admm
        sets = a.sets
        if not sets or not admm.settings.warm_start or not a.ops:
            return _NOT_STEADY
        p = self._plan
        det = sim.detector
        if p is None or p.set is not sets[0] or p.op is not a.ops[0] or p.tail is not a.tail or p.eig is not a._eig \
                or p.out is not det._out:
            p = self._plan = self._plan_of(a, det)
            if p is None:
                return _NOT_STEADY
        # 1-2: the contacts, left in the detector's buffers
        t0 = time.perf_counter()
        d = sim.data
        counts = det.run_placed(d.oR, d.op)
        k = counts[2]
        t1 = time.perf_counter()
        st.time_collision = t1 - t0
        sw = None       # a kept set of other pairs the step switches to (`_switch`)
        if counts[1] or not k or det._out is not p.out or \
                (k != p.set[1].shape[0] and (sw := self._switch(sim, a, det, k)) is None):
            c = det.contacts_of(*counts)       # (buffers grown: other pairs)
            st.time_collision = time.perf_counter() - t0
            return c, None
        # 3: the joint torques, by the kernel for a `JointPD` that is the whole actuation
        act = sim.actuation
        pd = tau is None and type(act) is JointPD and sim._pd is None and not sim._damped
        if pd:
            phase[0] = "the actuation"
            # fixed targets: the last step's, checked by `JointPD.target` when they became its
            target = self._target
            if act.q_ref_fn is not None or act.q_target is not target:
                target = self._target = act.target(sim.t)
            g = self._gains
            if g is None or act.kp is not g[0] or act.kd is not g[1] or act.v_target is not g[2] \
                    or act.limit is not g[3] or act.iq is not g[4] or act.iv is not g[5]:
                self._entry, self._entries = None, {}    # a PD array replaced: its type may differ from the entries'
                g = self._gains = (act.kp, act.kd, act.v_target, act.limit, act.iq, act.iv,
                                   PDArrays(act.kp, act.kd, act.v_target, act.limit, act.iq, act.iv))
            gains = g[6]
            tau_v = np.empty(sim.model.nv)
        else:
            gains, target, self._gains, self._target = _no_pd(), _EMPTY, None, None
            tau_v = sim._actuation(tau, st, phase)
            t1 = time.perf_counter()
        phase[0] = "the steady step (stages 3-6 in one call)"
        rho_min = admm.settings.mu_prox
        d_next = sim._data_next
        q, v = sim.q, sim.v
        if sw is not None:
            p = sw[1]
        while True:
            cs, m = p.set[2], p.m
            op = p.op.refresh(d)
            state = op.compiled_state()
            w = a.warm
            carry = a.carries_tail(m - 3 * k)
            prm = admm.params_for(p.L, m, rho_min)
            out = SteadyArrays.empty(m, q.shape[0], v.shape[0], k, self._scratch(m, v.shape[0], k))
            args = (self._constants(sim), d.state, d_next.state, state, q, v, tau_v, pd, gains, target, sim._fext,
                    p.arrays, w.keys, w.position, w.frame, w.lam, carry, prm, sim._v_sum, d_next._factored, out)
            entry = self._entry
            if entry is not None and entry[0] is not cs:        # another set: its own entry point, if kept
                entry = self._entries.get(id(cs))
            if entry is not None and entry[2] is not None and entry[0] is cs and entry[1] is op and \
                    q is self._qv[0] and v is self._qv[1]:
                self._entry = entry
                r = SteadyOut._make(entry[2](*args))
            else:
                r = SteadyOut._make(self._dispatch(sim, cs, op, args))
            if r.status == PAIRS_CHANGED and sw is None:      # the same number of contacts, other pairs
                sw = self._switch(sim, a, det, k)
                if sw is not None:
                    p = sw[1]
                    continue
            break
        if r.status != OK:       # the staged path goes on with the contacts and the torques
            return det.contacts_of(*counts), tau_v
        if sw is not None:       # the staged path's bookkeeping of a kept set taken up again
            p = self._switched(a, sw)
        # the staged path's bookkeeping: the set's points, the assembler's operator, the ADMM's ρ
        c0 = p.points
        c0.position, c0.frame = out.position, out.frame
        admm.keep_after(op, r.iterations, r.polish_solves, r.rho, r.eigenvalue_used, p.L, m, rho_min)
        a.op = op
        st.ncontacts, st.nrows = k, m
        st.record_solve(r)
        d_next._computed(out.q_next, True)
        st.time_solver = time.perf_counter() - t1
        st.steady = True
        c = tuple.__new__(ContactArrays, (out.contact_i, out.contact_s, out.position, out.frame))
        sim._commit(out.q_next, out.v_next, d_next, c, out.lam, out.warm if r.warm_polished else out.lam,
                    tau_v if pd else tau_v.copy(), st, r.max_penetration)
        self._qv = (out.q_next, out.v_next)
        return None

    def _scratch(self, m, nv, k):
        """The kernel's scratch for m rows, nv dofs and k contacts (`SteadyArrays`), kept while
        the sizes are the same (the kernel leaves nothing in it)."""
        if self._work[0] != (m, nv, k):
            self._work = ((m, nv, k), (np.empty(2 * nv + 3 * m + k), np.empty(m, np.int64), np.empty((0, 4))))
        return self._work[1]

    def _switch(self, sim, a, det, k):
        """A kept contact set other than the last (`ProblemAssembler.sets`) whose pairs are those
        of the k contacts in the detector's buffers, found as the staged path finds it
        (`ProblemAssembler.kept_set`, with the current tail), with its operator: (its index, its
        `SetPlan` at the step's points with the operator refreshed at sim.data, the λ_max entry
        estimated here or None if the kept one serves), or None. Beyond what the staged path
        writes again itself (the set's points, the operator's refresh), it changes nothing that
        path reads: `_switched` takes the set up once the step succeeded."""
        out, tail = det._out, a.tail
        i = a.kept_set(tail[1], out[0][4, :k])      # (not the last set: its pairs or count differ)
        if i < 0:
            return None
        e = a.sets[i]
        cs = e[2]
        op = a.kept_operator(cs)
        if op is None:
            return None
        # as `ProblemAssembler._constraints` and `_operator`, before its λ_max: the set's points,
        # its operator at the step's Data
        cs.refresh_contacts(out[1][:k], out[2][:k])
        op.refresh(sim.data)
        L, new = a.estimate_eigenvalue(op, cs)
        return i, self._set_plan(e, op, tail, a._eig, L, out), new

    def _switched(self, a, sw):
        """After a successful step on a kept set (`_switch`): the assembler's lists reordered and
        its λ_max kept as the staged path leaves them (`ProblemAssembler._constraints`,
        `_operator`, `max_eigenvalue`); the set's plan kept for the next steps."""
        i, p, new = sw
        a.sets.insert(0, a.sets.pop(i))
        if a.ops[0] is not p.op:
            a.ops.remove(p.op)
            a.ops.insert(0, p.op)
        if new is not None:
            a._eig = new
        p = self._plan = p._replace(eig=a._eig)
        return p

    @staticmethod
    def _plan_of(a, det):
        """The `SetPlan` of the assembler a's last set with the detector det's buffers, or None
        when a step cannot be steady on it: its tail is not the current one, its operator not
        the newest, or no λ_max is kept for it (`ProblemAssembler.cached_eigenvalue`)."""
        s0, op, tail = a.sets[0], a.ops[0], a.tail
        tail_cs, set_keys, cs, cones = s0
        if tail_cs is not tail[1] or op.cs is not cs:
            return None
        L = a.cached_eigenvalue(cs, cones.m)
        if L is None:
            return None
        return SteadyStep._set_plan(s0, op, tail, a._eig, L, det._out)

    @staticmethod
    def _set_plan(s, op, tail, eig, L, out):
        """The `SetPlan` of the kept set s = (tail, keys, ConstraintSet, ConeSet) on its operator
        op, with λ_max L (from the kept estimate eig) and the detector's buffers out."""
        tail_cs, set_keys, cs, cones = s
        return SetPlan(s, op, tail, eig, max(float(L), 1e-12), cones.m, cs.constraints[0], out,
                       SetArrays(*out, set_keys, cs.cb_f, tail[3], *cones.arrays()))

    def _dispatch(self, sim, cs, op, args):
        """The kernel called through numba's dispatcher, which types each argument, and its
        compiled entry point kept (`models.jitcache.entry_point`) for the next steps on the same
        set cs and operator op: their arrays' types are fixed, as are those of the detector's
        buffers, the warm start and the settings; the state q, v must be the last steady step's
        (set_state or an assignment may bring other layouts), and the joint torques are
        C-contiguous float64 (`models.Model.check_v`, the actuation's own arrays)."""
        kernel = steady_articulated_kernel if sim._free_step is articulated_step_kernel else steady_step_kernel
        r = kernel(*args)
        self._entry = (cs, op, entry_point(kernel, args))
        # those of the sets the assembler still keeps (an entry holds its set and operator alive)
        kept = {id(e[2]) for e in sim.assembler.sets}
        self._entries = {i: e for i, e in self._entries.items() if i in kept}
        self._entries[id(cs)] = self._entry
        return r

"""One step's constraint problem, assembled for the contact solver (stage 4 of `Simulator.step`).

A `ContactProblem` holds what the solvers need: the constraint set and its cones, the Delassus
operator G = J M⁻¹ Jᵀ at q, the free constraint velocities with their targets
g = J v_f + targets (m/s), the contacts' compliance R_c, the warm start x0 and λ_max(G).
`ProblemAssembler` (one per simulator) builds it every step and keeps across steps what did
not change:

  rows        contacts (cones, in detection order), then the world's loop closures (free
              rows), the joint limits within reach (orthant) and joint dry friction (box); the
              part after the contacts is rebuilt only when the active limits change, the
              contact part refreshed in place when the contacts come from the same geometry
              pairs in the same order as in one of the last KEEP_SETS sets
              (`solvers.ConstraintSet.refresh_contacts`);
  operator    that set's operator refreshed at the step's `models.Data`, else a new one on the
              arrays of the oldest kept operator;
  targets     speculative distance, Baumgarte push-out capped at max_depenetration_velocity,
              Newton restitution of isolated impacts (`contact_targets_kernel`), loop-closure
              drift and joint-limit gaps with the same treatment;
  warm start  the previous impulses matched by geometry pair and nearest point
              (`warm_start_kernel`), the rows after the contacts carried over;
  λ_max       re-estimated only when the constraint graph changes (`max_eigenvalue`).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numba import njit

import models.joints
import models.spatial
import solvers.delassus_kernels
import solvers.opstate
from models.jitcache import drop_stale_cache
from solvers import (ConstraintSet, DenseDelassus, JointFriction, JointLimit, LoopClosure, MatrixFreeDelassus,
                     as_constraint_set)
from solvers.opstate import max_eigenvalue, state_j_apply
from solvers.cones import ConeSet
from solvers.elimination import StructureCache

from .projection import closure_error_kernel

# `step_vectors_kernel` compiles in the operator's J v (`solvers.opstate.state_j_apply`)
drop_stale_cache(__file__, [solvers.opstate.__file__, solvers.delassus_kernels.__file__, models.spatial.__file__,
                            models.joints.__file__])

WARM_START_GATE = 0.02     # m: a contact inherits the impulse of the nearest previous point of its pair within this
# contact sets (and their operators) kept: a patch toggling between 3 and 4 points returns to the
# set of two steps before (355 of 363 changes in 1500 steps of G1 lying on its back); a gait cycles
# through a few (Go2 trotting in place: 8 sets a 0.4 s cycle, 56 of 61 changes in 2000 steps built a
# new set with 2 kept, 4 with 8), which the steady step then takes up again (`simstep.steady`)
KEEP_SETS = 8

_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0)


@njit(cache=True, _nrt=True)     # it allocates (stated: see `models.scratch`)
def warm_start_kernel(prev_keys, prev_pos, prev_frames, prev_lam, keys, pos, frames, gate, x0):
    """x0[3i:3i+3] = frameᵢᵀ w, w = F λ the previous world impulse of the previous contact point
    of the same geometry pair (key // 4) nearest to pointᵢ, within `gate` (m), each previous
    point used once (previous frame F, impulse λ in its axes); returns True if any contact
    matched. Matching by position rather than by the key's slot: a pair's slots are ranked by
    angle about the patch centre, which reorders when a patch gains or loses a point (measured
    on mesh contacts: the same key jumping 2–6 cm between steps, a warm start worse than zero)."""
    pp = prev_keys // 4
    order = np.argsort(pp)
    sp = pp[order]
    used = np.zeros(prev_keys.shape[0], np.bool_)
    hit = False
    w = np.empty(3)
    g2 = gate * gate
    for i in range(keys.shape[0]):
        pair = keys[i] // 4
        j = np.searchsorted(sp, pair)
        best, bo = g2, -1
        while j < sp.shape[0] and sp[j] == pair:
            o = order[j]
            if not used[o]:
                d2 = (prev_pos[o, 0] - pos[i, 0]) ** 2 + (prev_pos[o, 1] - pos[i, 1]) ** 2 + \
                    (prev_pos[o, 2] - pos[i, 2]) ** 2
                if d2 <= best:
                    best, bo = d2, o
            j += 1
        if bo < 0:
            continue
        used[bo] = True
        o = bo
        for a in range(3):
            w[a] = prev_frames[o, a, 0] * prev_lam[3 * o] + prev_frames[o, a, 1] * prev_lam[3 * o + 1] + \
                prev_frames[o, a, 2] * prev_lam[3 * o + 2]
        for r in range(3):
            x0[3 * i + r] = frames[i, 0, r] * w[0] + frames[i, 1, r] * w[1] + frames[i, 2, r] * w[2]
        hit = True
    return hit


@njit(cache=True, _nrt=False)
def same_pairs_kernel(prev_keys, keys):
    """True if the contacts of `keys` (k,) come from the geometry pairs of `prev_keys` (k,) in
    the same order (a key's pair is key // 4, `collision.Contacts.key`)."""
    if prev_keys.shape[0] != keys.shape[0]:
        return False
    for i in range(keys.shape[0]):
        if keys[i] // 4 != prev_keys[i] // 4:
            return False
    return True


@njit(cache=True, _nrt=False)
def active_limits_kernel(lim_q, lim_dof, lim_val, lim_sgn, q, v_free, dt, margin, gap, active):
    """The joint-limit rows within reach this step, of the candidate rows (one per finite
    bound, dof-major, lower before upper): row i has the gap sgnᵢ (q[lim_qᵢ] − boundᵢ) (≥ 0
    inside the range; rad or m) and is active when the gap is below |v_f| dt + margin. Writes
    the active rows' indices to active[:n] and their gaps to gap[:n]; returns n."""
    n = 0
    for i in range(lim_q.shape[0]):
        g = lim_sgn[i] * (q[lim_q[i]] - lim_val[i])
        if g < abs(v_free[lim_dof[i]]) * dt + margin:
            active[n], gap[n] = i, g
            n += 1
    return n


@njit(cache=True, inline="always")
def dead_band(phi, slop):
    """A signed distance (m; a joint's gap in rad or m) with the slop band [−slop, slop] removed:
    resting contacts inside the band get the velocity target 0 exactly, so the targets of a
    redundant contact set (four corners of a face) stay consistent with a rigid motion;
    distances beyond it keep their speculative or push-out targets, shifted by the band."""
    return phi - slop if phi > slop else (phi + slop if phi < -slop else 0.0)


@njit(cache=True, inline="always")
def gap_target(phi, dt, erp, vmax):
    """The velocity target (m/s, or rad/s for a revolute limit) of a gap φ with the slop band
    removed: a gap φ > 0 may close within the step (+φ/dt), a penetration is pushed out at the
    Baumgarte rate erp φ/dt but never faster than vmax (dt-independent, as PhysX's
    maxDepenetrationVelocity)."""
    return phi / dt if phi > 0 else max(erp * phi / dt, -vmax)


@njit(cache=True, _nrt=False)
def limit_targets_kernel(gap, slop, dt, erp, vmax, g, row0):
    """g[row0 + i] += `gap_target` of the active joint limits' gaps (n,) (rad or m), slop removed."""
    for i in range(gap.shape[0]):
        g[row0 + i] += gap_target(dead_band(gap[i], slop), dt, erp, vmax)


@njit(cache=True, _nrt=False)
def contact_targets_kernel(distance, slop, vn_pre, e, dt, erp, vmax, threshold, g):
    """Add to the normal rows of g (3i + 2) the contacts' velocity targets, from the signed
    distances with the slop band removed (φ = `dead_band`(distance, slop)): `gap_target`, or for
    an approaching contact faster than the threshold that closes within the step, Newton's
    restitution target σ_n = v_n⁺ + e v_n⁻ ≥ 0 (+e v_n⁻)."""
    for i in range(distance.shape[0]):
        phi = dead_band(distance[i], slop)
        corr = gap_target(phi, dt, erp, vmax)
        v = vn_pre[3 * i + 2]
        if e[i] > 0 and v < -threshold and phi <= -v * dt + 1e-12:
            corr = e[i] * v
        g[3 * i + 2] += corr


@njit(cache=True, _nrt=False)
def step_vectors_kernel(state, v_free, distance, slop, vn_pre, e, dt, erp, vmax, threshold, limit_gaps, limit_row,
                        prev_keys, prev_pos, prev_frames, prev_lam, keys, pos, frames, gate, g, x0):
    """The step's vectors on a matrix-free `solvers.opstate.OperatorState` in one call: g = J v_f
    (`state_j_apply`), plus the contacts' targets (`contact_targets_kernel`; vn_pre: the
    contacts' incoming velocities J v, or g itself without restitution) and the active joint
    limits' (`limit_targets_kernel`, rows from limit_row); then the contacts' part of the warm
    start x0 (`warm_start_kernel`, x0 zeroed by the caller). Returns whether a contact matched."""
    state_j_apply(state, v_free, g)
    contact_targets_kernel(distance, slop, vn_pre, e, dt, erp, vmax, threshold, g)
    limit_targets_kernel(limit_gaps, slop, dt, erp, vmax, g, limit_row)
    if keys.shape[0] == 0 or prev_keys.shape[0] == 0:
        return False
    return warm_start_kernel(prev_keys, prev_pos, prev_frames, prev_lam, keys, pos, frames, gate, x0)


def isolated_pairs(body1, body2):
    """(k,) 1.0 for the contacts whose two bodies touch nothing else this step (all their
    contacts are with each other; the world counts as touching nothing), else 0.0. Newton's
    restitution applied contact by contact to a body wedged between others can create energy
    (Stewart, "Rigid-body dynamics with friction and impact", SIAM Review 2000), so
    only isolated impacts bounce; the others are inelastic."""
    lo, hi = np.minimum(body1, body2), np.maximum(body1, body2)
    pair = lo * (hi.max() + 2) + hi
    ok = np.ones(body1.shape[0])
    for b in np.unique(np.concatenate([body1, body2])):
        if b < 0:
            continue
        mine = (body1 == b) | (body2 == b)
        if np.unique(pair[mine]).size > 1:
            ok[mine] = 0.0
    return ok


class ContactProblem(NamedTuple):
    """One step's problem (module docstring). op is None for a step of loop closures only,
    solved by `simstep.bilateral_step` (g then holds their stabilisation targets alone). m rows: 3 per contact (t1, t2, n), then the rows
    after the contacts; g (m,) m/s; compliance (m,) or None; x0 (m,) N·s or None; jv: a function
    returning the bodies' incoming constraint velocity J v (m,) (for the next warm start), or
    None without a warm start; max_eigenvalue: λ_max(G) estimate (1/kg); contacts: the detected
    `collision.Contacts` behind the first 3k rows."""
    cs: ConstraintSet
    cones: ConeSet
    op: object
    g: np.ndarray
    compliance: np.ndarray | None
    x0: np.ndarray | None
    max_eigenvalue: float
    jv: Callable | None
    contacts: object


class IncomingVelocity:
    """The bodies' incoming constraint velocity J v (m,) m/s on the operator op, evaluated when
    called (a `ContactProblem`'s jv); v (nv,) is there for a solver that applies J itself
    (`solvers.admm.ADMMSolver` on a matrix-free operator's compiled state)."""
    __slots__ = ("op", "v")

    def __init__(self, op, v):
        self.op, self.v = op, v

    def __call__(self):
        return self.op.J_apply(self.v)


class WarmStart(NamedTuple):
    """The last step's contacts (keys (k,), positions (k, 3), frames (k, 3, 3)) and the warm
    start it left (λ (m,) N·s), with the tail of rows it was computed on."""
    keys: np.ndarray
    position: np.ndarray
    frame: np.ndarray
    lam: np.ndarray
    tail: object = None


_NO_WARM = WarmStart(_EMPTY_I, np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros(0))


class ProblemAssembler:
    """Builds each step's `ContactProblem` for a `Simulator` (reads its settings: dt, erp,
    contact_slop, max_depenetration_velocity, restitution_threshold, joint limits, operator, the
    world's extra constraints) and owns the caches carried between steps: the rows after the
    contacts (`tail`), the last KEEP_SETS constraint sets (`sets`) and operators (`ops`), LCABA's
    eliminations (`structures`), λ_max and the warm start."""

    def __init__(self, sim):
        self.sim = sim
        m = sim.model
        dof_joint = sim._joints_of_dofs(np.arange(m.nv))
        self.fric_dofs = np.flatnonzero(m.friction > 0)
        self._fric_joint_names = list(dict.fromkeys(dof_joint[d] for d in self.fric_dofs))
        # joint-limit candidates: one row per finite bound, (dof, q index, bound, sign, (joint, side))
        lim = [(d, side, b, sgn) for d in range(m.nv)
               for side, b, sgn in (("lower", m.lower[d], 1.0), ("upper", m.upper[d], -1.0)) if np.isfinite(b)]
        self._lim_dof = np.array([r[0] for r in lim], np.int64)
        body = np.searchsorted(m.idx_v, self._lim_dof, side="right") - 1
        self._lim_q = m.idx_q[body] + self._lim_dof - m.idx_v[body]
        self._lim_val = np.array([r[2] for r in lim], float)
        self._lim_sgn = np.array([r[3] for r in lim], float)
        self._lim_rec = [JointLimit(dof_joint[r[0]], r[1]) for r in lim]   # the records of the candidate rows
        self._lim_gap, self._lim_active = np.empty(len(lim)), np.empty(len(lim), np.int64)   # active_limits_kernel's
        self.warm = _NO_WARM
        # (active limits signature, ConstraintSet, ConeSet, active rows) of the rows after the contacts
        self.tail = None
        self._tail_cone_sets = {}    # `_tail_cones` by (number of active limits, dt)
        self.sets = []           # (tail, contact keys, ConstraintSet, ConeSet) of the last KEEP_SETS contact sets
        self.ops = []            # the last KEEP_SETS matrix-free operators, newest first
        self.op = None           # the last operator
        self._eig = None         # (graph key, rows, λ_max)
        self.structures = StructureCache(sim.model)   # LCABA's eliminations per constraint graph
        extra = sim.extra_constraints
        # the fixed parts of the rows after the contacts, around the active limits: the world's
        # extra constraints, then (after the limits) joint friction (`ConstraintSet.with_joint_limits`)
        self._tail_head = ConstraintSet(m, list(extra))
        self._tail_fric = ConstraintSet(m, [JointFriction(j, 0.0) for j in self._fric_joint_names])
        # rows of the world's extra constraints (first in the tail), and whether any is a loop closure
        self._extra_rows = sum(lc.nrows if isinstance(lc, LoopClosure) else 1 for lc in extra)
        self._closure_rows = any(isinstance(lc, LoopClosure) for lc in extra)

    # ------------------------------------------------------------------ step protocol
    @property
    def last_set(self):
        """(tail, contact keys, ConstraintSet, ConeSet) of the last step with contacts, or None."""
        return self.sets[0] if self.sets else None

    def snapshot(self):
        """What `build` may change, for `restore` after a failed step."""
        return self.op, list(self.ops), self._eig, self.tail

    def restore(self, saved):
        self.op, ops, self._eig, self.tail = saved
        self.ops = list(ops)

    def reset_warm(self):
        """Forget the warm start (a new state)."""
        self.warm = _NO_WARM

    def commit(self, c, warm_lam):
        """After a successful step: its contacts c and the solver's warm start for the next."""
        # tuple.__new__: a third of the keyword-checking constructor's cost (each step)
        self.warm = tuple.__new__(WarmStart, (c.key, c.position, c.frame, warm_lam, self.tail))

    def build(self, c, q, v, v_free, data):
        """The step's `ContactProblem`, or None without constraint rows. c: the detected
        `collision.Contacts`; q (nq,), v (nv,): the step's start state; v_free (nv,); data: the
        `models.Data` at q."""
        k = len(c)
        cs, cones, extra_err, limit_gaps = self._constraints(c, k, q, v_free, data)
        if not cones.m:
            return None
        bilateral = self.sim.bilateral
        if bilateral is not None and bilateral.applies(k, cs):
            # loop closures only, for `simstep.bilateral_step`: no operator; g holds the rows'
            # stabilisation targets alone (the step solves J (v_f + Δv) = −g itself)
            g = np.zeros(cones.m)
            self._stabilise(g, None, c, 0, v, extra_err, limit_gaps)
            return ContactProblem(cs, cones, None, g, None, None, 0.0, None, c)
        op = self._operator(cs, cones.m, q, data)
        sim = self.sim
        if sim.operator == "matrix_free" and sim.lcp is None and sim.solver_name == "admm":
            g, x0 = self._vectors(op, c, k, cones.m, v, v_free, extra_err, limit_gaps)
        else:
            g = op.J_apply(v_free)
            self._stabilise(g, op, c, k, v, extra_err, limit_gaps)
            x0 = self._warm_start(c, k, cones.m)
        compliance = None
        if k and sim._any_compliance and c.compliance.any():
            compliance = np.zeros(cones.m)
            compliance[:3 * k] = np.repeat(c.compliance, 3)
        # the bodies' incoming constraint velocity J v, evaluated only when the solver asks
        # (after a polish, `solvers.admm.warm_next_kernel`)
        jv = None if x0 is None else IncomingVelocity(op, v)
        return ContactProblem(cs, cones, op, g, compliance, x0, self.max_eigenvalue(op, cs), jv, c)

    # ------------------------------------------------------------------ pieces
    def _operator(self, cs, m_rows, q, data):
        """G at q: the dense baseline, or the matrix-free operator of the same set among the last
        KEEP_SETS refreshed (rows recomputed in place, storage kept), or a new one on the arrays
        of the oldest of them, which leaves the cache."""
        sim = self.sim
        if sim.operator != "matrix_free":
            op = DenseDelassus(sim.model, q, cs, data=data)
        else:
            ops = self.ops
            if ops and ops[0].cs is cs:      # the last step's set
                op = ops[0].refresh(data)
            else:
                op = self.kept_operator(cs)
                if op is not None:
                    op.refresh(data)
                    ops.remove(op)
                else:
                    old = ops.pop() if len(ops) == KEEP_SETS else None
                    op = MatrixFreeDelassus(sim.model, q, cs, data=data, reuse=old, structures=self.structures)
                    if sim.lcp is None and sim.solver_name == "admm":
                        op.compiled_state()     # the ADMM's state, built now: J v then runs on it (`state_j_apply`)
                ops.insert(0, op)
        self.op = op
        if op.m != m_rows:
            raise RuntimeError(f"constraint rows mismatch: operator {op.m}, cones {m_rows}")
        return op

    def _constraints(self, c, k, q, v_free, data):
        """The step's `ConstraintSet` and `ConeSet`: contacts (cones), then loop closures (free
        rows), joint limits within reach (orthant) and joint friction (box). The part after the
        contacts is rebuilt only when the active limits change. Also returns the loop closures'
        position errors (the tail's rows, `simstep.projection.closure_error_kernel`; None without
        loop closures) and the active limits' gaps (n,) (rad or m)."""
        sim = self.sim
        dt = sim.dt
        limit_gaps, active = _EMPTY_F, _EMPTY_I
        if sim.joint_limits and self._lim_dof.size:
            gap, active = self._lim_gap, self._lim_active
            n = active_limits_kernel(self._lim_q, self._lim_dof, self._lim_val, self._lim_sgn, q, v_free, dt,
                                     sim.joint_limit_margin, gap, active)
            if n:
                active, limit_gaps = active[:n].copy(), gap[:n].copy()
            else:
                active = _EMPTY_I
        sig = active.tobytes()
        if self.tail is None or self.tail[0] != sig:
            tail = ConstraintSet.with_joint_limits(self._tail_head, self._lim_dof[active], self._lim_sgn[active],
                                                   self._tail_fric, [self._lim_rec[i] for i in active])
            self.tail = (sig, tail, self._tail_cones(active.shape[0], dt), active)
        tail, tail_cones = self.tail[1], self.tail[2]
        extra_err = None
        if self._closure_rows:     # position errors of the loop closures (rows of the other kinds stay 0)
            extra_err = np.zeros(tail.m)
            closure_error_kernel(tail.cb_kind, tail.cb_row, tail.cb_body, tail.cb_f, data.oR, data.op, extra_err)
        if not k:
            return tail, tail_cones, extra_err, limit_gaps
        sets = self.sets
        i = self.kept_set(tail, c.key)
        if i >= 0:
            # contacts of the same geometry pairs in the same order as one of the kept sets
            # (the last step's, or one the contacts toggle back to; the points within a pair
            # may have been renumbered): its points are refreshed in place, its graph kept
            e = sets[i]
            if i:
                sets.insert(0, sets.pop(i))
            return e[2].refresh_contacts(c.position, c.frame), e[3], extra_err, limit_gaps
        cs = ConstraintSet.with_contacts(tail, c.body1, c.body2, c.position, c.frame, c.friction)
        cones = ConeSet.with_contacts(c.friction, tail_cones)
        self.sets = [(tail, c.key, cs, cones)] + sets[:KEEP_SETS - 1]
        return cs, cones, extra_err, limit_gaps

    def kept_set(self, tail, keys):
        """The index in `sets` of the first kept set after the rows `tail` (a `ConstraintSet`)
        whose contacts come from the geometry pairs of keys (k,) in the same order, or −1."""
        for i, e in enumerate(self.sets):
            if e[0] is tail and same_pairs_kernel(e[1], keys):
                return i
        return -1

    def kept_operator(self, cs):
        """The kept matrix-free operator of the constraint set cs (`ops`), or None."""
        return next((o for o in self.ops if o.cs is cs), None)

    def _tail_cones(self, nlimits, dt):
        """The `ConeSet` of the rows after the contacts with `nlimits` active joint limits: the
        world's extra constraints (loop closures free, joint limits orthant, joint friction box
        |λ| ≤ max_torque dt), the limits (orthant), joint friction (box |λ| ≤ friction dt);
        cached by (nlimits, dt)."""
        key = (nlimits, dt)
        cones = self._tail_cone_sets.get(key)
        if cones is None:
            cones = ConeSet()
            for lc in self.sim.extra_constraints:
                if isinstance(lc, LoopClosure):
                    cones.add("free", lc.nrows)
                elif isinstance(lc, JointLimit):
                    cones.add("orthant", 1)
                else:
                    cones.add("box", 1, lc.max_torque * dt)
            for _ in range(nlimits):
                cones.add("orthant", 1)
            for dof in self.fric_dofs:
                cones.add("box", 1, self.sim.model.friction[dof] * dt)
            cones = self._tail_cone_sets[key] = cones
        return cones

    def _vectors(self, op, c, k, mrows, v, v_free, extra_err, limit_gaps):
        """g (`_stabilise`) and the warm start x0 (`_warm_start`) of a matrix-free operator
        whose compiled state the ADMM runs on: J v_f, the contact and joint-limit targets and
        the contacts' warm start in one call (`step_vectors_kernel`)."""
        sim = self.sim
        g, x0 = np.empty(mrows), np.zeros(mrows)
        e, vn_pre = self._restitution(op, c, v, g)
        w = self.warm
        hit = step_vectors_kernel(op.compiled_state(), v_free, c.distance, sim.contact_slop, vn_pre, e, sim.dt,
                                  sim.erp, sim.max_depenetration_velocity, sim.restitution_threshold, limit_gaps,
                                  3 * k + self._extra_rows, w.keys, w.position, w.frame, w.lam, c.key, c.position,
                                  c.frame, WARM_START_GATE, g, x0)
        if extra_err is not None:
            self._closure_targets(g, 3 * k, extra_err)
        return g, self._warm_tail(x0, k, hit)

    def _closure_targets(self, g, row, extra_err):
        """g[row:row + n] += the world's extra constraints' drift correction (loop closures:
        erp e/dt within ±max_depenetration_velocity; the other kinds have e = 0)."""
        sim = self.sim
        vmax, n = sim.max_depenetration_velocity, self._extra_rows
        g[row:row + n] += np.clip(sim.erp * extra_err[:n] / sim.dt, -vmax, vmax)

    def _stabilise(self, g, op, c, k, v, extra_err, limit_gaps):
        """Add position correction, speculative distance and restitution targets to g in place."""
        sim = self.sim
        dt, erp, vmax = sim.dt, sim.erp, sim.max_depenetration_velocity
        if k:
            e, v_pre = self._restitution(op, c, v, g)
            contact_targets_kernel(c.distance, sim.contact_slop, v_pre, e, dt, erp, vmax,
                                   sim.restitution_threshold, g)
        row = 3 * k
        if extra_err is not None:
            self._closure_targets(g, row, extra_err)
        row += self._extra_rows
        if limit_gaps.size:
            limit_targets_kernel(limit_gaps, sim.contact_slop, dt, erp, vmax, g, row)

    def _restitution(self, op, c, v, g):
        """(e, v_pre) of the contacts for `contact_targets_kernel`: their restitution (zero in the
        LCP model, whose impacts are its own, Sec. 7, and on contacts whose bodies touch something
        else, `isolated_pairs`) and their velocities before the step J v, or g itself when no
        contact restitutes (then not read)."""
        sim = self.sim
        e = c.restitution if sim.lcp is None else np.zeros(len(c))
        if sim._any_restitution and e.any():
            return e * isolated_pairs(c.body1, c.body2), op.J_apply(v)
        return e, g

    def _warm_start(self, c, k, mrows):
        """Previous impulses matched by geometry pair and nearest point (`warm_start_kernel`),
        rotated into the new contact frames; the rows after the contacts carried over when they
        are the same constraints as in the previous step."""
        w = self.warm
        x0 = np.zeros(mrows)
        hit = k > 0 and w.keys.size > 0 and \
            warm_start_kernel(w.keys, w.position, w.frame, w.lam, c.key, c.position, c.frame, WARM_START_GATE, x0)
        return self._warm_tail(x0, k, hit)

    def _warm_tail(self, x0, k, hit):
        """x0 with the rows after the k contacts carried over from the last step's impulses when
        they are the same constraints; None if neither a contact (hit) nor the tail matched."""
        w = self.warm
        ntail = x0.shape[0] - 3 * k
        if self.carries_tail(ntail):
            x0[3 * k:] = w.lam[w.lam.size - ntail:]
            hit = True
        return x0 if hit else None

    def carries_tail(self, ntail):
        """Whether the last step's impulses of the ntail rows after the contacts are this step's
        warm start for them: the same tail (limits, joint friction, extra constraints)."""
        w = self.warm
        return ntail > 0 and w.tail is self.tail and w.lam.size >= ntail

    def cached_eigenvalue(self, cs, m):
        """The kept λ_max(G) when it still serves a set cs of m rows (`max_eigenvalue`), else None."""
        e = self._eig
        if e is not None and e[0] == cs.graph_key() and abs(m - e[1]) <= 0.25 * e[1]:
            return e[2]
        return None

    def max_eigenvalue(self, op, cs):
        """λ_max(G) for the ρ rule: re-estimated when the constraint graph (the coupled body
        pairs) changes or the number of rows moves by more than a quarter, else reused: G moves
        little in one step and the rule only needs its order of magnitude."""
        L, new = self.estimate_eigenvalue(op, cs)
        if new is not None:
            self._eig = new
        return L

    def estimate_eigenvalue(self, op, cs):
        """`max_eigenvalue`'s λ_max of the operator op of cs and, when it was estimated anew, the
        entry to keep for it ((graph key, rows, λ_max), else None), without keeping it."""
        L = self.cached_eigenvalue(cs, op.m)
        if L is not None:
            return L, None
        # the same estimate for every operator (only matvec), so dense and matrix-free runs see
        # the same ρ and hence the same iterates up to round-off
        L = max_eigenvalue(op, op.m, self.sim.admm.settings.eig_iters)
        return L, (cs.graph_key(), op.m, L)

    def loop_error(self, closure, data):
        """Position error of a `LoopClosure` (3 or 6 rows: m, then rad for a weld's rotation
        vector) in its row axes, at data's placements (`simstep.projection.closure_error_kernel`,
        which also gives the step's errors)."""
        cs = as_constraint_set(self.sim.model, [closure])
        e = np.zeros(cs.m)
        closure_error_kernel(cs.cb_kind, cs.cb_row, cs.cb_body, cs.cb_f, data.oR, data.op, e)
        return e

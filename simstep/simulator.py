"""`Simulator`: the time-stepping loop.

One step, at state (q, v), as `Simulator._step` calls its stages:
  1. kinematics and the articulated factorisation at q (`models.Data`, O(n); computed at the
     end of the previous step);
  2. `_detect`: collision detection into contact frames (`collision.CollisionDetector`);
  3. `_free_velocity`: v_f = v + dt · ABA(q, v, τ − damping·v, f_ext);
  4. `_assemble`: the step's `simstep.problem.ContactProblem`: contacts (cones), loop closures
     (free rows), active joint limits (orthant), joint dry friction (box), the Delassus operator
     G = J M⁻¹ Jᵀ (matrix-free by default, or the dense baseline), g = J v_f + stabilisation,
     the warm start and λ_max(G);
  5. `_solve`: the ADMM (or PGS, or paper 004's LCP model) for the impulses λ;
  6. `_integrate`: v⁺ = v_f + M⁻¹ Jᵀ λ by the cached sweep (no dense M); q⁺ = q ⊕ dt v⁺; loop
     closures projected onto e(q⁺) = 0 at position level (`simstep.projection`, option
     project_closures); the next step's Data at q⁺;
  7. `_commit`: the new state, contacts and warm start (nothing there can fail).

A step whose contacts come from the last step's geometry pairs, with the same active joint
limits (a settled scene's usual step), runs 3–6 in one compiled call instead, after the
detection (`simstep.steady.SteadyStep.step`: the same kernels in the same order, bitwise the
same results; `steady_steps=False` turns it off).

Velocity-level contact with speculative distance: a contact at signed distance φ > 0 lets the
bodies approach by at most φ in this step (σ_n = v_n⁺ + φ/dt ≥ 0), a penetration φ < 0 is
pushed out at the rate β φ/dt (Baumgarte, β = `erp`). Restitution (Newton): an approaching
contact that closes within the step with speed above `restitution_threshold` (and whose bodies
touch nothing else, `simstep.problem.isolated_pairs`) gets the target
v_n⁺ ≥ −e v_n⁻. Loop closures and joint limits get the same treatment of their position errors.
"""
from __future__ import annotations

import time

import numpy as np

import collision
import models
from solvers import ConstraintSet, JointFriction, JointLimit, LoopClosure
from solvers.admm import ADMMSettings, ADMMSolver
from solvers.pgs import PGSSolver

from ._checks import check_bool, check_choice, check_int, check_number, check_vector
from .bilateral_step import BilateralStep
from .control import JointPD
from .integrator import (FREE_BODY, articulated_step_kernel, body_kinds, free_step_kernel, integrate_kernel,
                         step_end_kernel)
from .lcp_step import LCPContactModel
from .problem import ProblemAssembler
from .projection import project_loop_closures
from .results import StepContacts, StepStats, Trajectory, attach_contacts, max_penetration
from .steady import ContactArrays, SteadyStep
from .world import World, matrix_to_quat


class SimulationError(RuntimeError):
    """A step failed (an exception in one of its phases, chained as the cause, or a non-finite
    state); the simulator state was left unchanged."""


_EMPTY_I = np.zeros(0, np.int64)


# ranges of the ADMM settings a Simulator accepts as keywords (other float fields: any finite value)
_ADMM_RANGES = dict(eps_abs=dict(low=0.0), eps_rel=dict(low=0.0), tau=dict(low=0.0, high=1.0, low_open=True),
                    mu_prox=dict(low=0.0, low_open=True), rho_power_factor=dict(low=0.0),
                    ratio_primal_dual=dict(low=1.0, low_open=True, allow_inf=True),   # inf: ρ never updated
                    relaxation=dict(low=0.0, high=2.0, low_open=True, high_open=True),
                    scaling=dict(low=0.0, high=0.5))


def _admm_settings(kw):
    """`ADMMSettings` from the Simulator's extra keywords, each checked by name (type of its
    default, range from _ADMM_RANGES); unknown names raise TypeError."""
    fields = ADMMSettings.__dataclass_fields__
    unknown = sorted(k for k in kw if k not in fields)
    if unknown:
        raise TypeError(f"unknown Simulator settings {unknown}; the solver settings are {sorted(fields)}")
    out = {}
    for k, val in kw.items():
        default = fields[k].default
        if isinstance(default, bool):
            out[k] = check_bool(k, val)
        elif isinstance(default, int):
            out[k] = check_int(k, val, 1 if k in ("max_iter", "eig_iters") else 0)
        elif isinstance(default, float):
            out[k] = check_number(k, val, **_ADMM_RANGES.get(k, {}))
        elif k == "update_rule":
            out[k] = check_choice(k, val, ("spectral", "osqp"))
        else:
            out[k] = val
    settings = ADMMSettings(**out)
    settings.check()
    return settings


class Simulator:
    """Time-stepping simulator of a `World`.

    Parameters (keyword): dt (s; default: the world's ``dt`` if its scene set one, else 1 ms);
    operator "matrix_free" | "dense"; solver "admm" | "pgs";
    collision_backend "coal" | "fcl"; margin (m, contact detection margin); erp (Baumgarte
    factor for penetration and loop drift, 0–1); contact_slop (m, default 1e-5: contacts and joint
    limits (rad or m) within ±slop of touching get the velocity target 0, see `dead_band`);
    restitution_threshold (m/s); joint_limits (bool); actuation (array (nv,) or callable(sim) -> (nv,); default: ``world.actuation`` if
    the scene set one); constraints (extra `LoopClosure`s etc.; default: ``world.constraints``);
    collision_options (dict for `collision.CollisionDetector`: exclude, self_collision,
    exclude_at (default: world.q0), ...); project_closures (bool; default: True when there are
    loop closures): after integration, move q onto the loop closures' manifold
    (`simstep.projection.project_loop_closures`, M-metric Gauss–Newton) until the largest row
    error is ≤ projection_tol (m; rad for weld rotations), at most projection_max_iter steps;
    any `ADMMSettings` field (max_iter, eps_abs, eps_rel, ncp, update_rule, ...);
    max_depenetration_velocity (default 0.5): the largest velocity at which a penetration, a
    joint outside its limits or a loop-closure drift is corrected (m/s; rad/s for revolute
    limits and weld rotations), so that the push-out erp·depth/dt does not grow as dt shrinks.
    contact_model "ncp" (default: exact Coulomb cones, ADMM or PGS) | "lcp" (paper 004: friction
    polyhedra of `friction_directions` edges (default 4), the operational-space LCP solved by
    Lemke's method, impacts by compression/decompression; `simstep.lcp_step`; ``sim.lcp.last``).
    bilateral "auto" (default) | "solver": steps whose rows are all loop closures (no contacts,
    limits or joint friction) are solved by constrained articulated-body dynamics
    (`simstep.bilateral_step`, contact_model "ncp" only) or by the contact solver.
    steady_steps (bool, default True): a step whose contacts come from the last step's geometry
    pairs, with the same active joint limits, runs its stages 3–6 in one compiled call
    (`simstep.steady`: bitwise the same results; its stats then time them together in
    ``time_solver``, with ``steady`` True); False runs every step stage by stage.
    """

    def __init__(self, world: World, dt=None, operator="matrix_free", solver="admm", collision_backend="coal",
                 margin=None, erp=0.2, restitution_threshold=0.05, joint_limits=True, joint_limit_margin=0.02,
                 actuation=None, constraints=None, pgs_max_iter=1000, collision_options=None,
                 project_closures=None, projection_tol=1e-10, projection_max_iter=10, contact_slop=1e-5,
                 max_depenetration_velocity=0.5, contact_model="ncp", friction_directions=None, bilateral="auto",
                 steady_steps=True, **solver_settings):
        # every setting is checked before anything is built (the world is never changed)
        if not isinstance(world, World):
            raise TypeError(f"Simulator needs a World from WorldBuilder.build(), got {type(world).__name__}")
        admm_settings = _admm_settings(solver_settings)
        if dt is None:      # the scene's recommended step (paper 004's pendulum: 0.1 ms), else 1 ms
            dt = getattr(world, "dt", None) or 1e-3
        dt = check_number("dt", dt, low=0.0, low_open=True)
        check_choice("operator", operator, ("matrix_free", "dense"))
        check_choice("solver", solver, ("admm", "pgs"))
        check_choice("collision_backend", collision_backend, ("coal", "fcl"))
        check_choice("contact_model", contact_model, ("ncp", "lcp"))
        check_choice("bilateral", bilateral, ("auto", "solver"))
        if friction_directions is not None and contact_model != "lcp":
            raise ValueError("friction_directions (n_f of the friction polyhedra) needs contact_model='lcp'")
        self.margin = 2e-3 if margin is None else check_number("margin", margin, low=0.0)
        erp = check_number("erp", erp, low=0.0, high=1.0)
        restitution_threshold = check_number("restitution_threshold", restitution_threshold, low=0.0)
        joint_limits = check_bool("joint_limits", joint_limits)
        steady_steps = check_bool("steady_steps", steady_steps)
        joint_limit_margin = check_number("joint_limit_margin", joint_limit_margin, low=0.0)
        pgs_max_iter = check_int("pgs_max_iter", pgs_max_iter, 1)
        if project_closures is not None:
            project_closures = check_bool("project_closures", project_closures)
        projection_tol = check_number("projection_tol", projection_tol, low=0.0, low_open=True)
        projection_max_iter = check_int("projection_max_iter", projection_max_iter, 1)
        self.contact_slop = check_number("contact_slop", contact_slop, low=0.0)
        # inf allowed: the unbounded Baumgarte rate
        self.max_depenetration_velocity = check_number("max_depenetration_velocity", max_depenetration_velocity,
                                                       low=0.0, low_open=True, allow_inf=True)
        if collision_options is not None and not isinstance(collision_options, dict):
            raise TypeError(f"collision_options must be a dict of CollisionDetector options, got {collision_options!r}")
        if constraints is not None and (isinstance(constraints, (str, bytes)) or not hasattr(constraints, "__iter__")):
            raise TypeError(f"constraints must be a list of LoopClosure, JointLimit or JointFriction, "
                            f"got {constraints!r}")
        self.world, self.model, self.dt = world, world.model, dt
        self.operator, self.solver_name = operator, solver
        self.erp, self.restitution_threshold = erp, restitution_threshold
        self.joint_limits, self.joint_limit_margin = joint_limits, joint_limit_margin
        opts = dict(collision_options or {})
        # links of one robot whose hulls already touch in the initial state never collide (like
        # an SRDF's disabled pairs); free objects are trees of their own and are not affected
        opts.setdefault("exclude_at", world.q0)
        self.detector = collision.CollisionDetector(world, backend=collision_backend, margin=self.margin, **opts)
        self.admm = ADMMSolver(admm_settings)
        self.pgs = PGSSolver(max_iter=pgs_max_iter)
        self.data = models.Data(self.model)
        # a scene may carry its loop closures and controller on the world
        if constraints is None:
            constraints = getattr(world, "constraints", ())
        if actuation is None:
            actuation = getattr(world, "actuation", None)
        self.extra_constraints = list(constraints)
        for c in self.extra_constraints:
            if not isinstance(c, (LoopClosure, JointLimit, JointFriction)):
                raise TypeError(f"unsupported constraint {c!r}: pass LoopClosure, JointLimit or JointFriction")
        self.set_actuation(actuation)
        self._init_projection(project_closures, projection_tol, projection_max_iter)
        self._fext = np.zeros((self.model.nbodies, 6))
        self._fext_applied = False     # apply_force since the last step: _fext to clear at the commit
        self._body_kind, self._body_inertia, self._body_inertia_inv = body_kinds(self.model)
        self._all_free = bool(self._body_kind.size) and bool(np.all(self._body_kind == FREE_BODY))
        self._free_step = free_step_kernel if np.any(self._body_kind) else articulated_step_kernel
        self._mass, self._com = np.ascontiguousarray(self.model.mass), np.ascontiguousarray(self.model.com)
        self._data_next = models.Data(self.model)   # the next step's Data, swapped in on success
        self._zero_v = np.zeros(self.model.nv)     # read only: τ without actuation, Δv without constraint rows
        self._v_sum = np.empty(self.model.nv)      # scratch of `_integrate`: v_f + Δv in the old axes
        # materials are fixed for the simulator's life: skip the per-step checks when none has them
        self._any_compliance = bool(np.any(self.detector.shapes.compliance))
        self._any_restitution = bool(np.any(self.detector.shapes.restitution))
        self._damped = bool(np.any(self.model.damping))
        self.assembler = ProblemAssembler(self)    # stage 4: the step's constraint problem
        self.stats = StepStats()
        # paper 004's LCP model (simstep.lcp_step), or None for the exact-cone NCP (ADMM/PGS)
        self.lcp = LCPContactModel(self, friction_directions) if contact_model == "lcp" else None
        self.contact_model = contact_model
        # steps whose rows are all loop closures: constrained articulated-body dynamics (simstep.bilateral_step)
        self.bilateral = BilateralStep(self) if bilateral == "auto" and contact_model == "ncp" else None
        # stages 3-6 of a step on the last step's contact set in one compiled call (simstep.steady)
        self._steady = SteadyStep() if steady_steps and SteadyStep.applies(self) else None
        self._prev = None          # (q, v) at the last step's start, for `imu`
        self._pd, self._targets = None, {}   # PD targets of set_targets (simstep.control.JointPD)
        self.applied_torque = np.zeros(self.model.nv)   # τ of the last step (actuation − joint damping), N·m or N
        self.contacts = self._empty_contacts()
        self.t = 0.0
        self.q = world.q0.copy()
        self.v = world.v0.copy()
        self.set_state(world.q0, world.v0)
        self.steps = 0

    def _init_projection(self, project, tol, max_iter):
        loops = [c for c in self.extra_constraints if isinstance(c, LoopClosure)]
        project = bool(loops) if project is None else project    # tol, max_iter checked by __init__
        self.project_closures, self.projection_tol, self.projection_max_iter = project, tol, max_iter
        # resolved once: the ConstraintSet also caches the elimination order of its graph
        self._closure_set = ConstraintSet(self.model, loops) if project and loops else None
        self._proj_data = models.Data(self.model) if self._closure_set is not None else None
        self._proj_damping = None

    def _project(self, q, st):
        """Loop closures projected at position level after integration; stats into st."""
        t0 = time.perf_counter()
        r = project_loop_closures(self.model, q, self._closure_set, tol=self.projection_tol,
                                  max_iter=self.projection_max_iter, damping=self._proj_damping, data=self._proj_data,
                                  structures=self.assembler.structures)
        self._proj_damping = r.damping
        st.projection_iterations, st.projection_residual = r.iterations, r.residual
        st.time_projection = time.perf_counter() - t0
        return r.q

    # ------------------------------------------------------------------ state
    def set_state(self, q, v, t=None):
        """Replace the state (q (nq,), v (nv,), t (s), default: keep t). All three are checked
        (shape, finite, unit quaternions within 1e-6) before any of them is replaced."""
        q = self.model.check_q(q).copy()
        v = self.model.check_v(v).copy()
        t = self.t if t is None else check_number("t", t)
        self.q, self.v, self.t = q, v, t
        self.assembler.reset_warm()
        self._prev = None
        self.data.compute(self.q)

    def set_actuation(self, actuation):
        """Joint torques applied every step: None, an array (nv,), or callable(sim) -> (nv,)."""
        if actuation is not None and not callable(actuation):
            actuation = self.model.check_v(actuation, "actuation").copy()
        self.actuation = actuation

    def set_targets(self, targets, velocities=None, kp=None, kd=None, effort=True):
        """Joint PD targets by joint name (`simstep.control.JointPD`), added to the actuation:
        ``τ = Kp (q* − q) + Kd (v* − v)`` clipped to the URDF effort limits (effort=False: no
        clipping). targets: {joint: q*} (rad or m); velocities: {joint: v*} (default 0); kp, kd:
        a scalar or {joint: gain}, required for joints that have no target yet. A later call
        changes the joints it names and keeps the others; `clear_targets` removes them all. Bare
        robot joint names are accepted when unique. Everything is checked before anything changes."""
        if not isinstance(targets, dict) or not targets:
            raise TypeError(f"targets must be a non-empty dict {{joint name: position}}, got {targets!r}")
        m = self.model
        names = [m.joint_name(j) for j in targets]

        def by_name(d, what):
            if d is None:
                return {}
            if not isinstance(d, dict):
                return {j: d for j in names}
            out = {m.joint_name(j): x for j, x in d.items()}
            extra = sorted(set(out) - set(names))
            if extra:
                raise ValueError(f"{what} names joints without a target in this call: {extra}")
            return out

        q_t = dict(zip(names, targets.values()))
        v_t, kp_t, kd_t = by_name(velocities, "velocities"), by_name(kp, "kp"), by_name(kd, "kd")
        table = {j: dict(e) for j, e in self._targets.items()}
        for j in names:
            if j not in table:
                if j not in kp_t or j not in kd_t:
                    raise ValueError(f"joint '{j}' has no PD gains yet: give kp and kd")
                table[j] = dict(v=0.0)
            table[j]["q"] = q_t[j]
            for key, src in (("v", v_t), ("kp", kp_t), ("kd", kd_t)):
                if j in src:
                    table[j][key] = src[j]
        col = lambda key: [table[j][key] for j in table]
        pd = JointPD(m, None, list(table), kp=col("kp"), kd=col("kd"), effort=effort, targets=col("q"),
                     velocities=col("v"))          # checks names, dofs, finiteness, signs
        self._pd, self._targets = pd, table

    def clear_targets(self):
        """Remove every PD target set by `set_targets` (the actuation stays)."""
        self._pd, self._targets = None, {}

    def apply_force(self, body, force, point=None, torque=None):
        """Add a world force (N) at a world point (default: body origin) and a torque (N·m) on
        `body` for the next step only."""
        b, Rf, pf = self.world.body_frame(body)
        if b < 0:
            raise ValueError(f"cannot apply a force to {body!r}: it is the world or welded to it")
        f = check_vector("force", force, 3)
        p = self.data.oR[b] @ pf + self.data.op[b] if point is None else check_vector("point", point, 3)
        n = np.zeros(3) if torque is None else check_vector("torque", torque, 3)
        self._fext[b, :3] += f
        self._fext[b, 3:] += np.cross(p, f) + n   # moment about the world origin
        self._fext_applied = True

    def body_pose(self, body):
        """(position (3,), quaternion xyzw (4,)) of a body (or merged link) frame in the world."""
        b, Rf, pf = self.world.body_frame(body)
        if b < 0:
            return pf.copy(), matrix_to_quat(Rf)
        R, p = self.data.oR[b], self.data.op[b]
        return R @ pf + p, matrix_to_quat(R @ Rf)

    def body_velocity(self, body):
        """(linear (3,), angular (3,)) velocity of a body frame origin, world coordinates."""
        b, Rf, pf = self.world.body_frame(body)
        if b < 0:
            return np.zeros(3), np.zeros(3)
        V = self.data.body_velocities(self.v)[b]
        p = self.data.oR[b] @ pf + self.data.op[b]
        return V[:3] + np.cross(V[3:], p), V[3:].copy()

    def contact_wrench(self, body, point=None):
        """Total contact force (3,) N and torque (3,) N·m on `body` during the last step, world
        axes, the torque about `point` (world, default: the body frame's origin): the mean of
        the impulses over the step (impulse / dt) of every contact that has the body on either
        side (as body 2 it receives −λ). A body of a merged URDF link resolves to its body."""
        b, Rf, pf = self.world.body_frame(body)
        if b < 0:
            raise ValueError(f"{body!r} is the world or welded to it: it has no contact wrench")
        p0 = self.data.oR[b] @ pf + self.data.op[b] if point is None else check_vector("point", point, 3)
        c = self.contacts
        if not len(c) or c.dt <= 0:
            return np.zeros(3), np.zeros(3)
        sgn = (c.body1 == b).astype(float) - (c.body2 == b)
        f = c.world_force * sgn[:, None]
        return f.sum(0), np.cross(c.position - p0, f).sum(0)

    # ------------------------------------------------------------------ sensors
    def joint_positions(self, joints):
        """Positions (rad or m) of one-dof joints given by name, in the order given."""
        m = self.model
        return np.array([self.q[m.joint_q_index(j)] for j in self._one_dof(joints)])

    def joint_velocities(self, joints):
        """Velocities (rad/s or m/s) of one-dof joints given by name."""
        m = self.model
        return np.array([self.v[m.joint_v_index(j)] for j in self._one_dof(joints)])

    def joint_torques(self, joints):
        """Torques (N·m or N) applied to one-dof joints in the last step: actuation, PD targets
        and joint damping (not the constraint impulses of limits or friction)."""
        m = self.model
        return np.array([self.applied_torque[m.joint_v_index(j)] for j in self._one_dof(joints)])

    def _one_dof(self, joints):
        if isinstance(joints, str):
            raise TypeError(f"joints must be a list of names, got the string {joints!r}")
        m = self.model
        for j in joints:
            if m.nvs[m.joint_body(m.joint_name(j))] != 1:
                raise ValueError(f"joint '{j}' is not a one-dof joint")
        return joints

    def imu(self, frame):
        """An IMU at a body or link frame: (angular velocity (3,) rad/s, specific force (3,) m/s²),
        both in the frame's axes. The specific force is what an accelerometer reads, a − g, with
        a the frame origin's acceleration over the last step, (v⁺ − v⁻)/dt: +9.81 m/s² up when
        resting, 0 in free fall (before any step: −g rotated, the state's velocity only)."""
        b, Rf, pf = self.world.body_frame(frame)
        if b < 0:
            R = Rf
            return np.zeros(3), R.T @ (-self.model.gravity)
        R = self.data.oR[b] @ Rf
        lin, ang = self.body_velocity(frame)
        a = np.zeros(3)
        if self._prev is not None:
            q_prev, v_prev = self._prev
            d_prev = models.Data(self.model)._compute(q_prev)
            V = d_prev.body_velocities(v_prev)[b]
            p = d_prev.oR[b] @ pf + d_prev.op[b]
            a = (lin - (V[:3] + np.cross(V[3:], p))) / self.dt
        return R.T @ ang, R.T @ (a - self.model.gravity)

    def force_torque(self, frame):
        """A 6-axis force/torque sensor at a body or link frame from the last step's contacts:
        (force (3,) N, torque (3,) N·m about the frame origin), in the frame's axes."""
        b, Rf, pf = self.world.body_frame(frame)
        if b < 0:
            raise ValueError(f"{frame!r} is the world or welded to it")
        R, p = self.data.oR[b] @ Rf, self.data.oR[b] @ pf + self.data.op[b]
        f, n = self.contact_wrench(frame, point=p)
        return R.T @ f, R.T @ n

    # ------------------------------------------------------------------ step
    def _joints_of_dofs(self, dofs):
        """Name of the joint that owns each dof."""
        m = self.model
        bodies = np.searchsorted(m.idx_v, dofs, side="right") - 1
        names = {}
        for j in m.joint_names:
            names[m.joint_body(j)] = j
        return [names[int(b)] for b in bodies]

    def _tau(self, tau):
        """The step's joint torques (nv,): tau (checked by `step`) or the actuation's (checked
        here; a `JointPD`'s are finite by construction), the PD targets', the joint damping."""
        m, act = self.model, self.actuation
        if tau is None:
            if isinstance(act, JointPD):
                tau = act(self)
            else:
                tau = act(self) if callable(act) else act
                tau = self._zero_v if tau is None else m.check_v(tau, "tau")
        if self._pd is not None:
            tau = tau + self._pd(self)
        if self._damped:
            tau = tau - m.damping * self.v
        return tau

    @property
    def contacts(self):
        """The last step's `StepContacts` (contact points, frames, bodies, impulses, distances;
        built on first access after the step, not by the step itself)."""
        if self._contacts is None:
            c, lam, dt = self._step_contacts
            if type(c) is ContactArrays:      # a steady step's (`SteadyStep.step`)
                c = c.contacts()
            k = len(c)
            self._contacts = StepContacts(c.body1, c.body2, c.position, c.frame, c.distance,
                                          lam[:3 * k].reshape(k, 3), c.friction, c.key, dt)
        return self._contacts

    @contacts.setter
    def contacts(self, value):
        self._contacts = value

    def _empty_contacts(self):
        z = np.zeros(0)
        return StepContacts(_EMPTY_I, _EMPTY_I, np.zeros((0, 3)), np.zeros((0, 3, 3)), z, np.zeros((0, 3)), z,
                            _EMPTY_I)

    def loop_error(self, closure):
        """Position error of a `LoopClosure` at the current state, in its row axes: 3 rows (m),
        or 6 for a weld (m, then its rotation error as a rotation vector, rad)."""
        return self.assembler.loop_error(closure, self.data)

    def step(self, tau=None):
        """Advance one time step. tau: joint torques for this step (default: the actuation).

        Atomic: everything is computed into locals and committed at the end. Any failure inside
        the step (collision, actuation callable, dynamics, operator, solver, integration,
        projection, or a non-finite result) raises `SimulationError` with the original
        exception as its cause, and leaves q, v, t, steps, contacts, stats, warm start, the
        cached Data, the external forces and the solver's adaptive state as they were."""
        tau = None if tau is None else self.model.check_v(tau, "tau")   # bad input: ValueError, nothing changed
        phase = ["collision detection"]
        saved = []          # what the staged path may change, kept before it starts (`_step`)
        try:
            return self._step(tau, phase, saved)
        except Exception as e:
            if saved:
                snap, self._proj_damping, self.admm.rho_power, self.admm._scaled_eig = saved[0]
                self.assembler.restore(snap)
            if isinstance(e, SimulationError):
                raise
            raise SimulationError(f"step {self.steps} at t = {self.t:.6g} s failed in {phase[0]} "
                                  f"({type(e).__name__}: {e}); the state was left unchanged") from e

    def _step(self, tau, phase, saved):
        """The step itself (see `step`, the module docstring's stages); phase[0] names the
        stage for the error message. Each stage writes its time into the step's stats. The
        staged path first appends to saved what `step` restores if it fails (the steady path
        changes none of it before it cannot fail)."""
        st = StepStats()
        t_start = time.perf_counter()
        # 1-7 with 3-6 in one compiled call, or the contacts and torques it got to
        rest = (None, None) if self._steady is None else self._steady.step(self, tau, st, phase)
        if rest is not None:
            saved.append((self.assembler.snapshot(), self._proj_damping, self.admm.rho_power, self.admm._scaled_eig))
            c, tau_v = rest
            if c is None:
                c = self._detect(st)                                # 1-2 (kinematics: self.data)
            if tau_v is None:
                tau_v = self._actuation(tau, st, phase)             # 3: the step's torques
            v_free = self._free_velocity(tau_v, st, phase)          # 3
            problem = self._assemble(c, v_free, st, phase)          # 4
            lam, warm_lam, dv = self._solve(problem, v_free, st, phase)  # 5
            q_next, v_next, d_next = self._integrate(v_free, problem, lam, dv, st, phase)   # 6
            self._commit(q_next, v_next, d_next, c, lam, warm_lam, tau_v.copy(), st)   # 7: nothing fails below
        st.time_total = time.perf_counter() - t_start
        self.stats = st
        return st

    # ------------------------------------------------------------------ stages
    def _detect(self, st):
        """Contacts at q (self.data holds the kinematics at q, computed when q was set)."""
        t0 = time.perf_counter()
        d = self.data
        c = self.detector.detect(self.q, placements=(d.oR, d.op))
        st.time_collision = time.perf_counter() - t0
        return c

    def _actuation(self, tau, st, phase):
        """The step's joint torques (nv,): tau or the actuation, PD targets, joint damping."""
        t0 = time.perf_counter()
        phase[0] = "the actuation"
        tau_v = self._tau(tau)
        st.time_dynamics = time.perf_counter() - t0
        return tau_v

    def _free_velocity(self, tau_v, st, phase):
        """The step's free velocity v_f = v + dt · ABA(q, v, τ, f_ext), with free and spherical
        joints in world-aligned coordinates and their implicit gyroscopic term
        (`simstep.integrator.free_step_kernel`; `articulated_step_kernel` when no body needs
        that term)."""
        t0 = time.perf_counter()
        m, d, dt, v = self.model, self.data, self.dt, self.v
        phase[0] = "the free dynamics (ABA)"
        # ABA on the articulated inertias cached in self.data at q (no kinematics, no refactor)
        v_free = np.empty(m.nv)
        self._free_step(m.jint, m.gravity, d.S, d.H, d.IA, d.U, d.Dinv, d.vel, d.acc, d._pA, self._body_kind,
                        self._body_inertia, self._body_inertia_inv, self._mass, self._com, d.oR, d.op, tau_v,
                        self._fext, v, dt, self._all_free, v_free)
        st.time_dynamics += time.perf_counter() - t0
        return v_free

    def _assemble(self, c, v_free, st, phase):
        """The step's `ContactProblem` (`simstep.problem`), or None without constraint rows."""
        t0 = time.perf_counter()
        phase[0] = "the constraint set and Delassus operator"
        problem = self.assembler.build(c, self.q, self.v, v_free, self.data)
        st.ncontacts = len(c)
        st.nrows = 0 if problem is None else problem.cones.m
        st.time_operator = time.perf_counter() - t0
        return problem

    def _solve(self, problem, v_free, st, phase):
        """Impulses λ (m,) N·s, the warm start they leave for the next step, and their velocity
        change M⁻¹ Jᵀ λ (nv,) if the solver produced it (the bilateral step; the ADMM on a
        matrix-free operator), else None."""
        t0 = time.perf_counter()
        if problem is None:
            lam = np.zeros(0)
            return lam, lam, None
        phase[0] = f"the {self.solver_name.upper()} contact solver"
        if problem.op is None:        # loop closures only (`ProblemAssembler.build`, `simstep.bilateral_step`)
            phase[0] = "the bilateral step (constrained articulated-body dynamics)"
            dv, lam = self.bilateral.solve(self.q, v_free, problem.cs, problem.g, st)
            st.time_solver = time.perf_counter() - t0
            return lam, lam, dv
        if self.lcp is not None:
            phase[0] = "the LCP contact model (Lemke)"
            p = problem
            lam = warm_lam = self.lcp.solve(p.op, p.g, p.cones, p.contacts, len(p.contacts), p.compliance)
            st.iterations = self.lcp.last.pivots
        elif self.solver_name == "admm":
            res = self.admm.solve(problem)
            lam, warm_lam, dv = res.lam, res.warm_next, res.velocity_change
            st.record_solve(res)
            st.time_solver = time.perf_counter() - t0
            return lam, warm_lam, dv
        else:
            res = self.pgs.solve(problem)
            lam = warm_lam = res.lam
            st.iterations, st.converged, st.primal_residual = res.iterations, res.converged, res.max_change
        st.time_solver = time.perf_counter() - t0
        return lam, warm_lam, None

    def _integrate(self, v_free, problem, lam, dv, st, phase):
        """v⁺ = v_f + M⁻¹ Jᵀ λ, q⁺ = q ⊕ dt v⁺ (free joints on SO(3) × R³) with v⁺ in the new
        body axes, loop closures projected, and the next step's Data at q⁺."""
        t0 = time.perf_counter()
        m, dt = self.model, self.dt
        phase[0] = "the velocity update"
        if problem is None:
            dv = self._zero_v
        elif dv is None:
            dv = problem.op.JT_minv(lam)
        phase[0] = "the integration"
        q_next, v_next = np.empty(m.nq), np.empty(m.nv)
        d_next = self._data_next
        if self._closure_set is None:     # the integration and the next Data at q⁺ in one call
            status = step_end_kernel(m.jint, m.jfloat, m.armature, self.q, v_free, dv, lam, dt, q_next, self._v_sum,
                                     v_next, d_next.state, d_next._factored)
            finite = status != 1
        else:
            status = None
            finite = integrate_kernel(m.jint, self.q, v_free, dv, lam, dt, q_next, self._v_sum, v_next)
            if finite:
                phase[0] = "the loop-closure projection"
                q_next = self._project(q_next, st)
                finite = np.isfinite(q_next.sum())
        if not finite:
            raise SimulationError(f"step {self.steps} at t = {self.t:.6g} s produced a non-finite state "
                                  f"(solver converged: {st.converged}, iterations {st.iterations}); "
                                  f"the state was left unchanged")
        phase[0] = "the kinematics at the new state"
        if status is None:
            d_next._compute(q_next)
        else:
            d_next._computed(q_next, status == 0)
        st.time_integration = time.perf_counter() - t0
        return q_next, v_next, d_next

    def _commit(self, q_next, v_next, d_next, c, lam, warm_lam, applied, st, max_pen=None):
        """The new state, contacts, warm start and sensors' inputs (nothing here can fail):
        c the step's `collision.Contacts` (or a steady step's `ContactArrays`, max_pen then given),
        applied the step's joint torques (nv,) as an array of its own (actuation arrays may be
        reused), max_pen the contacts' deepest penetration if known (m)."""
        self._prev = (self.q, self.v)    # the step's start, for the IMU's finite difference (never mutated)
        self._data_next = self.data
        self.q, self.v, self.data = q_next, v_next, d_next
        self.t += self.dt
        self.steps += 1
        if self._fext_applied:
            self._fext[:] = 0.0
            self._fext_applied = False
        self._contacts, self._step_contacts = None, (c, lam, self.dt)    # `contacts`, built when read
        self.assembler.commit(c, warm_lam)
        self.applied_torque = applied
        st.max_penetration = max_penetration(c.distance) if max_pen is None else max_pen

    # ------------------------------------------------------------------ run
    def run(self, steps=None, progress=False, record=False, viewer=None, callback=None, duration=None,
            record_contacts=True):
        """Advance `steps` steps, or `duration` seconds (rounded to whole steps of dt; give one of
        the two). record=True returns a `Trajectory` (row 0 = the current state) with each
        step's contacts unless record_contacts=False; viewer: an object with ``update(q, t)``
        called every step (it throttles itself); callback(sim) is called after every step."""
        if (steps is None) == (duration is None):
            raise TypeError("run needs either steps (a number of steps) or duration= (seconds), not both")
        if duration is not None:
            duration = check_number("duration", duration, low=0.0)
            steps = int(round(duration / self.dt))
        elif isinstance(steps, (float, np.floating)) and np.isfinite(steps) and steps != int(steps):
            raise ValueError(f"steps must be an integer, got {steps!r}: a number of steps; for seconds use "
                             f"run(duration={steps!r})")
        steps = check_int("steps", steps, 0)
        progress, record = check_bool("progress", progress), check_bool("record", record)
        record_contacts = check_bool("record_contacts", record_contacts)
        if viewer is not None and not callable(getattr(viewer, "update", None)):
            raise TypeError(f"viewer must have an update(q, t) method, got {viewer!r}")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable(sim), got {callback!r}")
        if record:
            T = np.empty(steps + 1)
            Q = np.empty((steps + 1, self.model.nq))
            V = np.empty((steps + 1, self.model.nv))
            its = np.zeros(steps + 1, int)
            ncs = np.zeros(steps + 1, int)
            T[0], Q[0], V[0] = self.t, self.q, self.v
            rec = [self.contacts] if record_contacts else None
        show_contacts = viewer is not None and bool(getattr(viewer, "show_contacts", False))
        it = range(steps)
        if progress:
            from tqdm import tqdm
            it = tqdm(it, desc="simulating", unit="step")
        for i in it:
            st = self.step()
            if record:
                T[i + 1], Q[i + 1], V[i + 1] = self.t, self.q, self.v
                its[i + 1], ncs[i + 1] = st.iterations, st.ncontacts
                if rec is not None:
                    rec.append(self.contacts)
            if viewer is not None:
                if show_contacts:
                    viewer.update(self.q, self.t, contacts=self.contacts, dt=self.dt)
                else:
                    viewer.update(self.q, self.t)
            if callback is not None:
                callback(self)
        if viewer is not None and steps and hasattr(viewer, "display"):
            viewer.display(self.q, contacts=self.contacts if show_contacts else None, dt=self.dt)  # throttling may skip it
        if not record:
            return None
        traj = Trajectory(T, Q, V, its, ncs, self.dt, tuple(self.model.body_names), tuple(self.model.joint_names))
        if rec is not None:
            attach_contacts(traj, rec)
        return traj

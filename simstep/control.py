"""Joint-space PD control: position and velocity targets by joint name (`Simulator.set_targets`).

``τ = Kp (q* − q) + Kd (v* − v)`` per one-dof joint (revolute, prismatic), clipped to the
joint's effort limit (the URDF's ``<limit effort>``; unlimited where the file gives none).
Explicit (evaluated at the start of the step, as a real controller samples): stable while
Kd·dt stays well below the smallest inertia the joint sees; the robot scenes give their
actuated joints a rotor inertia (``armature``) as geared actuators have.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from models.kinematics import all_finite

from ._checks import check_bool


@njit(cache=True, _nrt=False)
def pd_torque_kernel(kp, kd, q_target, v_target, limit, iq, iv, q, v, tau):
    """τ[ivⱼ] = clip(Kpⱼ (q*ⱼ − q[iqⱼ]) + Kdⱼ (v*ⱼ − v[ivⱼ]), ±limitⱼ) for the PD joints j, 0 on
    the other dofs; tau (nv,) written in place (N·m or N); np.clip's result, NaN included."""
    tau[:] = 0.0
    for j in range(iq.shape[0]):
        u = kp[j] * (q_target[j] - q[iq[j]]) + kd[j] * (v_target[j] - v[iv[j]])
        if u > limit[j]:
            u = limit[j]
        elif u < -limit[j]:
            u = -limit[j]
        tau[iv[j]] = u       # NaN stays NaN (the step then fails as non-finite)


def _per_joint(name, value, joints):
    """Gains or targets given as a scalar, a sequence (one per joint) or a dict {joint: value}."""
    if isinstance(value, dict):
        missing = [j for j in joints if j not in value]
        if missing:
            raise ValueError(f"{name} has no value for joints {missing}")
        value = [value[j] for j in joints]
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        a = np.full(len(joints), float(a))
    if a.shape != (len(joints),):
        raise ValueError(f"{name} must be a scalar, a dict or {len(joints)} values, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a}")
    return a


class JointPD:
    """PD on one-dof joints (module docstring), usable as an actuation callable
    ``pd(sim) -> τ (nv,)``.

    model: the `models.Model`; joints: names (bare robot joint names are resolved as
    `Model.joint_name` does); kp (N·m/rad or N/m), kd (N·m·s/rad or N·s/m): scalars, one per
    joint or dicts; targets: q* per joint (default: the joints' values in ``q_ref`` (nq,));
    velocities: v* (default 0); effort: clip to the effort limits; q_ref_fn: optional fn(t) ->
    q* (njoints,) for time-varying references."""

    def __init__(self, model, q_ref, joints, kp, kd, effort=True, q_ref_fn=None, targets=None, velocities=None):
        self.model = model
        self.joints = [model.joint_name(j) for j in joints]
        if len(set(self.joints)) != len(self.joints):
            raise ValueError(f"joints listed twice: {joints}")
        for j in self.joints:
            b = model.joint_body(j)
            if model.nvs[b] != 1:
                raise ValueError(f"joint '{j}' has {model.nvs[b]} dofs: PD targets need a revolute or prismatic joint")
        self.iq = np.array([model.joint_q_index(j) for j in self.joints], dtype=np.int64)
        self.iv = np.array([model.joint_v_index(j) for j in self.joints], dtype=np.int64)
        self.kp = _per_joint("kp", kp, self.joints)
        self.kd = _per_joint("kd", kd, self.joints)
        if np.any(self.kp < 0) or np.any(self.kd < 0):
            raise ValueError("PD gains must be finite and ≥ 0")
        if targets is None:
            q_ref = np.asarray(q_ref, float)
            if q_ref.shape != (model.nq,):
                raise ValueError(f"q_ref must have nq = {model.nq} entries, got {q_ref.shape}")
            targets = q_ref[self.iq]
        self.q_target = _per_joint("targets", targets, self.joints)
        self.v_target = np.zeros(len(self.joints)) if velocities is None else \
            _per_joint("velocities", velocities, self.joints)
        self.limit = model.effort_limit[self.iv] if check_bool("effort", effort) else np.full(len(self.joints), np.inf)
        if q_ref_fn is not None and not callable(q_ref_fn):
            raise TypeError(f"q_ref_fn must be callable(t), got {q_ref_fn!r}")
        self.q_ref_fn = q_ref_fn

    @property
    def q_ref(self):
        """q (nq,) with the targets in place (zeros elsewhere)."""
        q = np.zeros(self.model.nq)
        q[self.iq] = self.q_target
        return q

    def target(self, t):
        """q* (njoints,) at time t (s) as a C-contiguous float array: the fixed targets, or
        q_ref_fn(t) checked (shape, finite)."""
        if self.q_ref_fn is None:
            target = self.q_target
        else:
            target = np.asarray(self.q_ref_fn(t), float)
            if target.shape != self.q_target.shape:
                raise ValueError(f"q_ref_fn(t) must return {self.q_target.size} targets (one per PD joint), "
                                 f"got shape {target.shape}")
            if not all_finite(target):
                raise ValueError(f"q_ref_fn({t:g}) returned non-finite targets: {target}")
        # `simstep.steady` passes it to a compiled entry point typed for C arrays
        return target if target.flags.c_contiguous else np.ascontiguousarray(target)

    def torque(self, t, q, v):
        """τ (nv,) at time t (s) and state (q, v): finite for a finite state (gains, targets and
        limits are checked when set, q_ref_fn's targets each call)."""
        tau = np.empty(self.model.nv)
        pd_torque_kernel(self.kp, self.kd, self.target(t), self.v_target, self.limit, self.iq, self.iv,
                         np.asarray(q, float), np.asarray(v, float), tau)
        return tau

    def __call__(self, sim):
        return self.torque(sim.t, sim.q, sim.v)

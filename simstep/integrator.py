"""Time integration of the simulator's velocities and positions (one step of size h).

The public velocity convention stays Pinocchio's (a free joint's v = [v, ω], both in the body
frame at the current q), but free and spherical joints are integrated as follows:

* Linear part of a free joint in world-aligned (mixed) coordinates. The world velocity of the
  origin is ṗ = R v, so d(R v)/dt = R (v̇ + ω × v): the body-frame derivative that ABA returns
  carries the transport term −ω × v, which an explicit step turns into a gain of
  √(1 + (hω)²) per step. `free_velocity_kernel` adds h ω × v back (the step's free velocity is
  then the world velocity update R (v + h a_mixed), still expressed in the axes of R, which is
  what the constraint Jacobians at q expect), and `advance_kernel` moves the origin along a
  straight line, p⁺ = p + h R v⁺ (SO(3) × R³, not the SE(3) screw), and re-expresses the same
  world velocity in the new axes, v_lin ← R⁺ᵀ R v⁺ = exp(−h ω⁺) v⁺. A torque-free body keeps
  its world linear velocity to round-off.
* Gyroscopic term of a free body (or of a body on a spherical joint to the world) that has no
  children: instead of the explicit −h I⁻¹ (ω × I ω) of ABA, the body momentum Π = I ω is
  transported exactly by the rotation of the step, I ω⁺ = exp(−h ω⁺) I ω (implicit in ω⁺,
  solved by Newton): an implicit Lie–Euler step (Hairer, Lubich & Wanner, "Geometric
  Numerical Integration", Sec. IV.8) with the momentum transport of the discrete rigid body of
  Moser & Veselov ("Discrete versions of some classical integrable systems and factorization
  of matrix polynomials", 1991). Because the rotation of the step is R⁺ = R exp(h ω⁺), the world angular momentum
  R I ω is conserved exactly, and since exp(h ω⁺) ω⁺ = ω⁺, ω⁺ᵀ I ω⁺ = ω⁺ᵀ I ω ≤ ‖ω⁺‖_I ‖ω‖_I:
  the kinetic energy does not increase (Cauchy–Schwarz in the inertia metric). First order and
  dissipative: an asymmetric body relaxes towards its major axis at a rate ∝ h (measured in
  docs/guarantees.md, "Physical guarantees").
"""
import numpy as np
from numba import njit

import models
import models.data
import models.kinematics
from models.data import compute_kernel
from models.dynamics import aba_bias_kernel
from models.jitcache import drop_stale_cache
from models.joints import FREE, SPHERICAL, joint_integrate
from models.layout import JI_IQ, JI_IV, JI_NQ, JI_TYPE
from models.scratch import copy_into

drop_stale_cache(__file__, [models.joints.__file__, models.spatial.__file__, models.dynamics.__file__,
                            models.kinematics.__file__, models.data.__file__, models.scratch.__file__])


@njit(cache=True, inline="always")
def _rotate(wx, wy, wz, u, out):
    """out = exp(ŵ) u (Rodrigues), u and out (3,) may alias."""
    th2 = wx * wx + wy * wy + wz * wz
    th = np.sqrt(th2)
    if th < 1e-6:
        a, b = 1.0 - th2 / 6.0, 0.5 - th2 / 24.0
    else:
        a, b = np.sin(th) / th, (1.0 - np.cos(th)) / th2
    cx, cy, cz = wy * u[2] - wz * u[1], wz * u[0] - wx * u[2], wx * u[1] - wy * u[0]
    ex, ey, ez = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx
    ux, uy, uz = u[0], u[1], u[2]
    out[0], out[1], out[2] = ux + a * cx + b * ex, uy + a * cy + b * ey, uz + a * cz + b * ez


@njit(cache=True)
def _rot_and_right_jacobian(phi, R, Jr):
    """R = exp(φ̂) and the right Jacobian Jr(φ) = I − (1 − cos θ)/θ² φ̂ + (θ − sin θ)/θ³ φ̂²."""
    th2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    th = np.sqrt(th2)
    if th < 1e-6:
        s, a, b = 1.0 - th2 / 6.0, 0.5 - th2 / 24.0, 1.0 / 6.0 - th2 / 120.0
    else:
        s, a, b = np.sin(th) / th, (1.0 - np.cos(th)) / th2, (th - np.sin(th)) / (th2 * th)
    P = np.array(((0.0, -phi[2], phi[1]), (phi[2], 0.0, -phi[0]), (-phi[1], phi[0], 0.0)))
    P2 = P @ P
    E = np.eye(3)
    R[:, :] = E + s * P + a * P2
    Jr[:, :] = E - a * P + b * P2


@njit(cache=True)
def momentum_transport(I, w, h, max_iter=50):
    """ω⁺ with I ω⁺ = exp(−h ω̂⁺) I ω (torque-free rigid body, momentum rotated by the step's
    own rotation), by Newton from ω⁺ = ω; I (3, 3) SPD (kg·m²), w (3,) rad/s, h s.
    Jacobian of F(x) = I x − exp(−h x̂) Π: I − h exp(−h x̂) Π̂ Jr(−h x). Returns (ω⁺, converged);
    the energy guard ½ω⁺ᵀIω⁺ ≤ ½ωᵀIω is enforced by a scaling (a round-off correction when
    Newton converged, the safeguard when it did not)."""
    Pi = I @ w
    x = w.copy()
    R, Jr = np.empty((3, 3)), np.empty((3, 3))
    Ph = np.array(((0.0, -Pi[2], Pi[1]), (Pi[2], 0.0, -Pi[0]), (-Pi[1], Pi[0], 0.0)))
    tol = 1e-14 * np.sqrt(Pi @ Pi) + 1e-300
    ok = False
    for _ in range(max_iter):
        _rot_and_right_jacobian(-h * x, R, Jr)
        F = I @ x - R @ Pi
        if np.sqrt(F @ F) <= tol:
            ok = True
            break
        x = x - np.linalg.solve(I - h * (R @ Ph @ Jr), F)
        if not np.all(np.isfinite(x)):
            break
    if not ok:      # explicit momentum rotation by the current ω (still |Π| exact)
        _rot_and_right_jacobian(-h * w, R, Jr)
        x = np.linalg.solve(I, R @ Pi)
    e0, e1 = w @ Pi, x @ (I @ x)
    if e1 > e0:
        x *= np.sqrt(e0 / e1)
    return x, ok


@njit(cache=True, inline="always")
def _cross(a, b):
    """a × b of two 3-tuples (a tuple: no allocation)."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _mul(A, x):
    """A x for A (3, 3) and a 3-tuple x."""
    return (A[0, 0] * x[0] + A[0, 1] * x[1] + A[0, 2] * x[2], A[1, 0] * x[0] + A[1, 1] * x[1] + A[1, 2] * x[2],
            A[2, 0] * x[0] + A[2, 1] * x[1] + A[2, 2] * x[2])


@njit(cache=True, inline="always")
def _tmul(A, x):
    """Aᵀ x for A (3, 3) and a 3-tuple x."""
    return (A[0, 0] * x[0] + A[1, 0] * x[1] + A[2, 0] * x[2], A[0, 1] * x[0] + A[1, 1] * x[1] + A[2, 1] * x[2],
            A[0, 2] * x[0] + A[1, 2] * x[1] + A[2, 2] * x[2])


@njit(cache=True, inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _single_body(I, Iinv, m, c, g_body, F, Mo, w, u, h, out):
    """Free velocity (out (6,), body axes at q) of one free body: F and Mo (3-tuples, N and N·m)
    the non-gravity wrench about the body origin, body axes; g_body (3-tuple) gravity in body
    axes; c (3,) CoM and I (3, 3) inertia about it, body frame; w, u (3-tuples) the angular and
    linear velocity. Newton–Euler about the CoM with the implicit momentum transport for the
    gyroscopic term, then the origin's world-aligned acceleration
    a_o = a_c − α × c − ω × (ω × c). Iinv = I⁻¹. Returns False if Newton did not converge."""
    ok = True
    Iw = _mul(I, w)
    gy = _cross(w, Iw)
    x = w
    if _dot(gy, gy) > 1e-30 * _dot(w, w) * _dot(Iw, Iw):
        xa, ok = momentum_transport(I, np.array(w), h)
        x = (xa[0], xa[1], xa[2])
    cc = (c[0], c[1], c[2])
    cf = _cross(cc, F)
    da = _mul(Iinv, (Mo[0] - cf[0], Mo[1] - cf[1], Mo[2] - cf[2]))
    x = (x[0] + h * da[0], x[1] + h * da[1], x[2] + h * da[2])
    dw = (x[0] - w[0], x[1] - w[1], x[2] - w[2])
    a1 = _cross(dw, cc)
    a2 = _cross(w, _cross(w, cc))
    for r in range(3):
        out[r] = u[r] + h * (F[r] / m + g_body[r]) - a1[r] - h * a2[r]
        out[3 + r] = x[r]
    return ok


@njit(cache=True, _nrt=False)
def _free_joint_term(v, iv, h, vf):
    """vf[iv:iv+3] += h ω × v of a free joint (world-aligned update of its linear part)."""
    wx, wy, wz = v[iv + 3], v[iv + 4], v[iv + 5]
    ux, uy, uz = v[iv], v[iv + 1], v[iv + 2]
    vf[iv] += h * (wy * uz - wz * uy)
    vf[iv + 1] += h * (wz * ux - wx * uz)
    vf[iv + 2] += h * (wx * uy - wy * ux)


@njit(cache=True, _nrt=True)     # it allocates (stated: `steady_step_kernel` runs without the runtime)
def free_velocity_kernel(jint, kind, inertia, inertia_inv, mass, com, gravity, oR, op, tau, fext, v, h, vf):
    """Rewrite ABA's free velocity vf = v + h a (nv,) of free and spherical joints in place.

    kind[i] = FREE_BODY (a free body without children): its whole free velocity from `_single_body`
    (tau its body wrench about the origin, fext (n, 6) world force and moment about the world
    origin, oR/op the placements at q); any other free joint: + h ω × v on the linear part
    (world-aligned update); kind[i] = PIVOT_BODY (a spherical joint to the world, no children): the
    implicit momentum transport of ω about the pivot instead of ABA's explicit gyroscopic term.
    inertia (n, 3, 3) about the CoM or the pivot, inertia_inv their inverses.
    Returns the number of Newton solves that did not converge."""
    fails = 0
    out = np.empty(6)
    grav = (gravity[0], gravity[1], gravity[2])
    for i in range(jint.shape[0]):
        jt, iv = jint[i, JI_TYPE], jint[i, JI_IV]
        if kind[i] == FREE_BODY:
            R = oR[i]
            f = (fext[i, 0], fext[i, 1], fext[i, 2])
            pf = _cross((op[i, 0], op[i, 1], op[i, 2]), f)
            F = _tmul(R, f)
            M = _tmul(R, (fext[i, 3] - pf[0], fext[i, 4] - pf[1], fext[i, 5] - pf[2]))
            F = (F[0] + tau[iv], F[1] + tau[iv + 1], F[2] + tau[iv + 2])
            M = (M[0] + tau[iv + 3], M[1] + tau[iv + 4], M[2] + tau[iv + 5])
            if not _single_body(inertia[i], inertia_inv[i], mass[i], com[i], _tmul(R, grav), F, M,
                                (v[iv + 3], v[iv + 4], v[iv + 5]), (v[iv], v[iv + 1], v[iv + 2]), h, out):
                fails += 1
            vf[iv:iv + 6] = out
        elif jt == FREE:
            _free_joint_term(v, iv, h, vf)
        elif kind[i] == PIVOT_BODY:
            I = inertia[i]
            w = (v[iv], v[iv + 1], v[iv + 2])
            Iw = _mul(I, w)
            gy = _cross(w, Iw)
            if _dot(gy, gy) <= 1e-30 * _dot(w, w) * _dot(Iw, Iw):
                continue      # ω along a principal axis (or isotropic body): no gyroscopic term
            x, ok = momentum_transport(I, np.array(w), h)
            fails += not ok
            # replace the explicit term −h I⁻¹ (ω × Iω) that ABA put into vf by x − ω
            e = _mul(inertia_inv[i], gy)
            for r in range(3):
                vf[iv + r] += x[r] - w[r] + h * e[r]
    return fails


@njit(cache=True, _nrt=True)     # (as `free_velocity_kernel`)
def free_step_kernel(jint, gravity, S, H, IA, U, Dinv, vel, acc, pA, kind, inertia, inertia_inv, mass, com, oR, op,
                     tau, fext, v, h, all_free, vf):
    """The step's free velocity vf (nv,) in one call: vf = v + h ABA(q, v, τ, f_ext) from the
    articulated factor cached at q (`models.dynamics.aba_bias_kernel` on a `models.Data`'s
    arrays S … pA), skipped when every dof belongs to a childless free body (`all_free`: its
    values would be overwritten), then `free_velocity_kernel`'s rewrite of free and spherical
    joints. Returns that kernel's count of unconverged Newton solves."""
    if not all_free:
        aba_bias_kernel(jint, gravity, S, H, IA, U, Dinv, v, tau, fext, vf, vel, acc, pA)
        for i in range(vf.shape[0]):
            vf[i] = v[i] + h * vf[i]
    return free_velocity_kernel(jint, kind, inertia, inertia_inv, mass, com, gravity, oR, op, tau, fext, v, h, vf)


@njit(cache=True, _nrt=False)
def articulated_step_kernel(jint, gravity, S, H, IA, U, Dinv, vel, acc, pA, kind, inertia, inertia_inv, mass, com,
                            oR, op, tau, fext, v, h, all_free, vf):
    """`free_step_kernel` when every body is ARTICULATED (`body_kinds`: no childless free or
    pivot body, e.g. robots on a free base), with the same arguments: ABA, then only the
    + h ω × v term of free joints. Without the free bodies' Newton solves, half the compile."""
    aba_bias_kernel(jint, gravity, S, H, IA, U, Dinv, v, tau, fext, vf, vel, acc, pA)
    for i in range(vf.shape[0]):
        vf[i] = v[i] + h * vf[i]
    for i in range(jint.shape[0]):
        if jint[i, JI_TYPE] == FREE:
            _free_joint_term(v, jint[i, JI_IV], h, vf)
    return 0


@njit(cache=True, _nrt=False)
def integrate_kernel(jint, q, v_free, dv, lam, h, q_out, v_next, v_out):
    """The step's end: v_next = v_f + Δv (nv,) with Δv = M⁻¹ Jᵀ λ, then `advance_kernel`
    (q_out = q ⊕ h v_next, v_out in the new axes). Returns whether q_out, v_out and the
    impulses λ (m,) are all finite."""
    for i in range(v_next.shape[0]):
        v_next[i] = v_free[i] + dv[i]
    acc = 0.0
    for r in range(lam.shape[0]):
        acc += lam[r]
    return advance_kernel(jint, q, v_next, h, q_out, v_out) and np.isfinite(acc)


@njit(cache=True, _nrt=False)
def step_end_kernel(jint, jfloat, armature, q, v_free, dv, lam, h, q_out, v_next, v_out, d, refactor):
    """`integrate_kernel`, then the next step's kinematics and articulated factor at q_out in the
    same call (`models.data.compute_kernel` on the next Data's `DataState` d, refactor: that
    Data's last factorisation succeeded). Returns 0, or 1 if q_out, v_out or λ is not finite (d
    untouched), or 2 if the factorisation failed (the caller then raises, `models.Data._computed`)."""
    if not integrate_kernel(jint, q, v_free, dv, lam, h, q_out, v_next, v_out):
        return 1
    return 0 if compute_kernel(jint, jfloat, armature, q_out, d, refactor) else 2


@njit(cache=True, _nrt=False)
def advance_kernel(jint, q, v, h, q_out, v_out):
    """q_out = q ⊕ h v with free joints on SO(3) × R³ (p⁺ = p + h R v_lin, Q⁺ = Q ⊗ exp(h ω)),
    other joints by their exponential map (`joints.joint_integrate`); v_out = v with a free
    joint's linear part re-expressed in the new body axes, exp(−h ω) v_lin (same world vector).
    Returns whether every entry of q_out and v_out is finite."""
    copy_into(v, v_out)
    for i in range(jint.shape[0]):
        jt, iq, iv, nqi = jint[i, JI_TYPE], jint[i, JI_IQ], jint[i, JI_IV], jint[i, JI_NQ]
        if nqi > 0:
            joint_integrate(jt, q, iq, v, iv, h, q_out)
        if jt != FREE:
            continue
        # free joint: Q⁺ = Q ⊗ exp(h ω) from joint_integrate, but p⁺ = p + h R v (straight line)
        # instead of its SE(3) screw
        x, y, z, s = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        dx, dy, dz = h * v[iv], h * v[iv + 1], h * v[iv + 2]
        q_out[iq] = q[iq] + (1 - 2 * (y * y + z * z)) * dx + 2 * (x * y - s * z) * dy + 2 * (x * z + s * y) * dz
        q_out[iq + 1] = q[iq + 1] + 2 * (x * y + s * z) * dx + (1 - 2 * (x * x + z * z)) * dy + 2 * (y * z - s * x) * dz
        q_out[iq + 2] = q[iq + 2] + 2 * (x * z - s * y) * dx + 2 * (y * z + s * x) * dy + (1 - 2 * (x * x + y * y)) * dz
        wx, wy, wz = h * v[iv + 3], h * v[iv + 4], h * v[iv + 5]
        _rotate(-wx, -wy, -wz, v[iv:iv + 3], v_out[iv:iv + 3])
    acc = 0.0
    for r in range(q_out.shape[0]):
        acc += q_out[r]
    for r in range(v_out.shape[0]):
        acc += v_out[r]
    return np.isfinite(acc)      # a sum is finite iff every term is (or an overflow: as bad)


# `body_kinds`: how `free_velocity_kernel` treats each body
ARTICULATED, FREE_BODY, PIVOT_BODY = 0, 1, 2


def body_kinds(model):
    """(kind (n,) int, inertia (n, 3, 3), its inverse where kind > 0) for `free_velocity_kernel`:
    FREE_BODY for a free body without children, PIVOT_BODY for a childless body on a spherical
    joint to the world (no armature on their dofs, positive mass), else ARTICULATED; inertia
    about the CoM, or for PIVOT_BODY about the pivot,
    I_c + m(|c|²E − c cᵀ)."""
    n = model.nbodies
    has_child = np.zeros(n, bool)
    for p in model.parent:
        if p >= 0:
            has_child[p] = True
    kind = np.zeros(n, np.int64)
    inertia = np.array(model.inertia, float)
    for i in range(n):
        jt, iv, nv = model.jtype[i], model.idx_v[i], model.nvs[i]
        if has_child[i] or model.mass[i] <= 0 or np.any(model.armature[iv:iv + nv]):
            continue
        if jt == FREE:
            kind[i] = FREE_BODY
        elif jt == SPHERICAL and model.parent[i] < 0:
            c, m = model.com[i], model.mass[i]
            inertia[i] = inertia[i] + m * ((c @ c) * np.eye(3) - np.outer(c, c))
            kind[i] = PIVOT_BODY
    inv = np.zeros_like(inertia)
    for i in np.flatnonzero(kind):
        inv[i] = np.linalg.inv(inertia[i])
    return kind, np.ascontiguousarray(inertia), inv

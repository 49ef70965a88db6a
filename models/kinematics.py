"""Forward kinematics, world-frame motion subspaces and inertias, Jacobians, q ⊕ v.

Kernels (numba) work on the packed model tables ``jint``/``jfloat`` (see `model.py`); the
Python functions at the bottom check inputs and orchestrate.
"""
import numpy as np
from numba import njit

from .joints import FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL, joint_integrate, joint_subspace_local_into, joint_transform
from .layout import JF_AXIS, JF_COM, JF_INERTIA, JF_MASS, JF_P, JF_R, JI_IQ, JI_IV, JI_NQ, JI_NV, JI_PARENT, JI_TYPE
from . import joints, scratch, spatial
from .jitcache import drop_stale_cache
from .scratch import stack_matrix, stack_vector
from .spatial import inertia_to_world, motion_to_world, quat_to_rot, skew

# the kernels below compile in code of these modules
drop_stale_cache(__file__, [joints.__file__, scratch.__file__, spatial.__file__])

_JIT = dict(cache=True)


@njit(cache=True, _nrt=False)
def fk_kernel(jint, jfloat, q, oR, op):
    """Forward kinematics: oMᵢ = oM_λ(i) · X_tree(i) · X_J(qᵢ) for i in topological order.

    oR (n, 3, 3), op (n, 3): world rotation and position of each body frame.
    No temporaries (X_J is written into body i's own slots, then read back as scalars), so it is
    compiled without numba's reference counting (an atomic pair per array view otherwise).
    """
    for i in range(jint.shape[0]):
        par, jt, iq = jint[i, JI_PARENT], jint[i, JI_TYPE], jint[i, JI_IQ]
        joint_transform(jt, jfloat[i, JF_AXIS:JF_AXIS + 3], q, iq, oR[i], op[i])
        j00, j01, j02 = oR[i, 0, 0], oR[i, 0, 1], oR[i, 0, 2]
        j10, j11, j12 = oR[i, 1, 0], oR[i, 1, 1], oR[i, 1, 2]
        j20, j21, j22 = oR[i, 2, 0], oR[i, 2, 1], oR[i, 2, 2]
        p0, p1, p2 = op[i, 0], op[i, 1], op[i, 2]
        # row r of the joint frame in world, (Rp, pp) = oM_parent · X_tree, then oMᵢ = (Rp, pp) · X_J
        for r in range(3):
            if par >= 0:
                a0, a1, a2 = oR[par, r, 0], oR[par, r, 1], oR[par, r, 2]
                b0 = a0 * jfloat[i, JF_R] + a1 * jfloat[i, JF_R + 3] + a2 * jfloat[i, JF_R + 6]
                b1 = a0 * jfloat[i, JF_R + 1] + a1 * jfloat[i, JF_R + 4] + a2 * jfloat[i, JF_R + 7]
                b2 = a0 * jfloat[i, JF_R + 2] + a1 * jfloat[i, JF_R + 5] + a2 * jfloat[i, JF_R + 8]
                pp = a0 * jfloat[i, JF_P] + a1 * jfloat[i, JF_P + 1] + a2 * jfloat[i, JF_P + 2] + op[par, r]
            else:
                b0, b1, b2 = jfloat[i, JF_R + 3 * r], jfloat[i, JF_R + 3 * r + 1], jfloat[i, JF_R + 3 * r + 2]
                pp = jfloat[i, JF_P + r]
            op[i, r] = b0 * p0 + b1 * p1 + b2 * p2 + pp
            oR[i, r, 0] = b0 * j00 + b1 * j10 + b2 * j20
            oR[i, r, 1] = b0 * j01 + b1 * j11 + b2 * j21
            oR[i, r, 2] = b0 * j02 + b1 * j12 + b2 * j22


@njit(cache=True, _nrt=False)
def kinematics_kernel(jint, jfloat, q, oR, op, S, H):
    """FK plus world-frame quantities used by every dynamics sweep (paper 002, Sec. III).

    S (6, nv): motion subspace columns in world coordinates about the origin, Sᵢ = ⁰Xᵢ Sᵢˡᵒᶜᵃˡ.
    H (n, 6, 6): spatial inertia of each body about the world origin, in world axes.
    """
    fk_kernel(jint, jfloat, q, oR, op)
    world_quantities_into(jint, jfloat, oR, op, S, H, stack_vector(6), stack_vector(6), stack_vector(3),
                          stack_matrix(3, 3), stack_matrix(3, 3))


@njit(cache=True, inline="always")
def world_quantities_into(jint, jfloat, oR, op, S, H, s, col, c, T, Ic):
    """S (6, nv) and H (n, 6, 6) of `kinematics_kernel` from the placements oR, op, with the
    temporaries given: s, col (6,), c (3,), T, Ic (3, 3) (so that a caller without reference
    counting can pass views of its scratch). H is exactly symmetric."""
    for i in range(jint.shape[0]):
        jt, iv, nvi = jint[i, JI_TYPE], jint[i, JI_IV], jint[i, JI_NV]
        R = oR[i]
        for k in range(nvi):
            joint_subspace_local_into(jt, jfloat[i, JF_AXIS:JF_AXIS + 3], k, s)
            motion_to_world(R, op[i], s, col)
            for r in range(6):
                S[r, iv + k] = col[r]
        cl, Il = jfloat[i, JF_COM:JF_COM + 3], jfloat[i, JF_INERTIA:JF_INERTIA + 9]
        for r in range(3):
            c[r] = R[r, 0] * cl[0] + R[r, 1] * cl[1] + R[r, 2] * cl[2] + op[i, r]
            for cc in range(3):
                T[r, cc] = R[r, 0] * Il[cc] + R[r, 1] * Il[3 + cc] + R[r, 2] * Il[6 + cc]
        for r in range(3):                   # R Iₗ Rᵀ, symmetric: the upper triangle, mirrored
            for cc in range(r, 3):
                t = T[r, 0] * R[cc, 0] + T[r, 1] * R[cc, 1] + T[r, 2] * R[cc, 2]
                Ic[r, cc] = t
                Ic[cc, r] = t
        inertia_to_world(jfloat[i, JF_MASS], c, Ic, H[i])


@njit(**_JIT)
def body_jacobian_kernel(jint, S, body, point, J):
    """J (6, nv): world-aligned spatial velocity (v of `point`, ω) of a body: J v = (ṗ, ω).

    Columns of the body's ancestors: (S_lin + S_ang × point, S_ang); zero elsewhere.
    `point` is in world coordinates.
    """
    J[:, :] = 0.0
    i = body
    while i >= 0:
        iv, nvi = jint[i, JI_IV], jint[i, JI_NV]
        for k in range(iv, iv + nvi):
            w = S[3:, k]
            # S_lin is the velocity of the point at the origin; at x it is S_lin + ω × x
            J[0, k] = S[0, k] + w[1] * point[2] - w[2] * point[1]
            J[1, k] = S[1, k] + w[2] * point[0] - w[0] * point[2]
            J[2, k] = S[2, k] + w[0] * point[1] - w[1] * point[0]
            J[3, k] = w[0]
            J[4, k] = w[1]
            J[5, k] = w[2]
        i = jint[i, JI_PARENT]


@njit(cache=True, _nrt=False)
def velocity_kernel(jint, S, v, vel):
    """Body spatial velocities vᵢ = v_λ(i) + Sᵢ q̇ᵢ (world frame), vel (n, 6)."""
    for i in range(jint.shape[0]):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for r in range(6):
            x = vel[par, r] if par >= 0 else 0.0
            for k in range(iv, iv + nvi):
                x += S[r, k] * v[k]
            vel[i, r] = x


@njit(**_JIT)
def integrate_kernel(jint, q, v, dt, out):
    """out = q ⊕ dt v, joint by joint."""
    for i in range(jint.shape[0]):
        jt, iq, iv, nqi = jint[i, JI_TYPE], jint[i, JI_IQ], jint[i, JI_IV], jint[i, JI_NQ]
        if nqi > 0:
            joint_integrate(jt, q, iq, v, iv, dt, out)


@njit(cache=True, inline="always")
def _quat_log(a, b):
    """Rotation vector of a⁻¹ ⊗ b for unit quaternions (x, y, z, w)."""
    ax, ay, az, aw = -a[0], -a[1], -a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    w = aw * bw - ax * bx - ay * by - az * bz
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        k = 2.0 / w
    else:
        k = 2.0 * np.arctan2(s, w) / s
    return np.array((k * x, k * y, k * z))


@njit(**_JIT)
def difference_kernel(jint, q0, q1, out):
    """out = q1 ⊖ q0: the v with q0 ⊕ v = q1 (SE(3), SO(3), SE(2) logarithms)."""
    R0 = np.empty((3, 3))
    for i in range(jint.shape[0]):
        jt, iq, iv = jint[i, JI_TYPE], jint[i, JI_IQ], jint[i, JI_IV]
        if jt == REVOLUTE or jt == PRISMATIC:
            out[iv] = q1[iq] - q0[iq]
        elif jt == SPHERICAL:
            out[iv:iv + 3] = _quat_log(q0[iq:iq + 4], q1[iq:iq + 4])
        elif jt == FREE:
            w = _quat_log(q0[iq + 3:iq + 7], q1[iq + 3:iq + 7])
            quat_to_rot(q0[iq + 3], q0[iq + 4], q0[iq + 5], q0[iq + 6], R0)
            dp = R0.T @ (q1[iq:iq + 3] - q0[iq:iq + 3])
            th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
            th = np.sqrt(th2)
            if th < 1e-6:
                b = 1.0 / 12.0 + th2 / 720.0
            else:
                b = 1.0 / th2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
            W = skew(w)
            Vinv = np.eye(3) - 0.5 * W + b * (W @ W)
            out[iv:iv + 3] = Vinv @ dp
            out[iv + 3:iv + 6] = w
        elif jt == PLANAR:
            c0, s0 = q0[iq + 2], q0[iq + 3]
            c1, s1 = q1[iq + 2], q1[iq + 3]
            th = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
            dx0, dy0 = q1[iq] - q0[iq], q1[iq + 1] - q0[iq + 1]
            dx, dy = c0 * dx0 + s0 * dy0, -s0 * dx0 + c0 * dy0
            if abs(th) < 1e-8:
                a, b = 1.0 - th * th / 6.0, 0.5 * th
            else:
                a, b = np.sin(th) / th, (1.0 - np.cos(th)) / th
            det = a * a + b * b
            out[iv] = (a * dx + b * dy) / det
            out[iv + 1] = (-b * dx + a * dy) / det
            out[iv + 2] = th


# ---------------------------------------------------------------------- Python API
def forward_kinematics(model, q):
    """World placements of every body: (R (n, 3, 3), p (n, 3))."""
    q = model.check_q(q)
    oR = np.empty((model.nbodies, 3, 3))
    op = np.empty((model.nbodies, 3))
    fk_kernel(model.jint, model.jfloat, q, oR, op)
    return oR, op


def motion_subspace(model, q):
    """World-frame motion subspace S (6, nv) and body inertias H (n, 6, 6) at q."""
    q = model.check_q(q)
    n = model.nbodies
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, H = np.empty((6, model.nv)), np.empty((n, 6, 6))
    kinematics_kernel(model.jint, model.jfloat, q, oR, op, S, H)
    return S, H


def body_jacobian(model, q, body, point=None):
    """(6, nv) Jacobian of `body` (name or index) at the world `point` (default: body origin):
    rows are the world linear velocity of the point and the angular velocity (world axes)."""
    q = model.check_q(q)
    b, Rf, pf = model.body_placement_offset(body)
    if b < 0:
        return np.zeros((6, model.nv))
    n = model.nbodies
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, H = np.empty((6, model.nv)), np.empty((n, 6, 6))
    kinematics_kernel(model.jint, model.jfloat, q, oR, op, S, H)
    if point is None:
        point = oR[b] @ pf + op[b]
    J = np.empty((6, model.nv))
    body_jacobian_kernel(model.jint, S, b, np.asarray(point, float), J)
    return J


def point_jacobian(model, q, body, point):
    """(3, nv) Jacobian of the world linear velocity of a world `point` fixed on `body`."""
    return body_jacobian(model, q, body, point)[:3]


@njit(**_JIT)
def q_status_kernel(jint, q, tol):
    """-1 if q is finite with unit quaternions / (cos, sin) pairs; -2 if not finite; else the
    index of the first body whose rotation coordinates are not unit within `tol`."""
    for k in range(q.shape[0]):
        if not np.isfinite(q[k]):
            return -2
    for i in range(jint.shape[0]):
        jt, iq = jint[i, JI_TYPE], jint[i, JI_IQ]
        if jt == FREE:
            a = iq + 3
            nrm = q[a] ** 2 + q[a + 1] ** 2 + q[a + 2] ** 2 + q[a + 3] ** 2
        elif jt == SPHERICAL:
            nrm = q[iq] ** 2 + q[iq + 1] ** 2 + q[iq + 2] ** 2 + q[iq + 3] ** 2
        elif jt == PLANAR:
            nrm = q[iq + 2] ** 2 + q[iq + 3] ** 2
        else:
            continue
        if abs(np.sqrt(nrm) - 1.0) > tol:
            return i
    return -1


@njit(cache=True, _nrt=False)
def all_finite(x):
    """True if every entry of the 1-D array x is finite."""
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True

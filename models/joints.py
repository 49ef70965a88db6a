"""Joint models: placement from q, motion subspace, integration on the manifold.

Joint types (``Model.jtype``) and their coordinates:

======== ===  ===  ==========================================================
type     nq   nv   q / v
======== ===  ===  ==========================================================
FIXED    0    0    (none)
REVOLUTE 1    1    angle about ``axis`` (rad) / angular rate; also URDF continuous
PRISMATIC 1   1    displacement along ``axis`` (m) / rate
FREE     7    6    [x, y, z, qx, qy, qz, qw] / [v, ω] in the body (local) frame
SPHERICAL 4   3    [qx, qy, qz, qw] / ω in the body frame
PLANAR   4    3    [x, y, cos θ, sin θ] in the joint frame's xy-plane / [vx, vy, ω] local
======== ===  ===  ==========================================================

FREE, SPHERICAL and PLANAR follow Pinocchio's conventions. Every joint's motion subspace is
constant in the child body frame, so in world coordinates Ṡ = v × S (paper 002, Sec. III).
"""
import numpy as np
from numba import njit

from .spatial import axis_angle_to_rot, quat_to_rot

FIXED, REVOLUTE, PRISMATIC, FREE, SPHERICAL, PLANAR = 0, 1, 2, 3, 4, 5
JOINT_NAMES = ("fixed", "revolute", "prismatic", "free", "spherical", "planar")
JOINT_NQ = (0, 1, 1, 7, 4, 4)
JOINT_NV = (0, 1, 1, 6, 3, 3)

_JIT = dict(cache=True, inline="always")


@njit(**_JIT)
def _eye3(R):
    for r in range(3):
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0


@njit(**_JIT)
def joint_transform(jtype, axis, q, iq, R, p):
    """X_J(q): rotation R (3, 3) and translation p (3,) of the child frame in the joint frame."""
    if jtype == REVOLUTE:
        axis_angle_to_rot(axis, q[iq], R)
        p[:] = 0.0
    elif jtype == PRISMATIC:
        _eye3(R)
        p[0] = axis[0] * q[iq]; p[1] = axis[1] * q[iq]; p[2] = axis[2] * q[iq]
    elif jtype == FREE:
        quat_to_rot(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], R)
        p[0] = q[iq]; p[1] = q[iq + 1]; p[2] = q[iq + 2]
    elif jtype == SPHERICAL:
        quat_to_rot(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], R)
        p[:] = 0.0
    elif jtype == PLANAR:
        c, s = q[iq + 2], q[iq + 3]
        _eye3(R)
        R[0, 0] = c; R[0, 1] = -s; R[1, 0] = s; R[1, 1] = c
        p[0] = q[iq]; p[1] = q[iq + 1]; p[2] = 0.0
    else:
        _eye3(R)
        p[:] = 0.0


@njit(**_JIT)
def joint_subspace_local_into(jtype, axis, k, s):
    """Column k of the motion subspace S in the child body frame, written into s (6,) (lin, ang)."""
    for r in range(6):
        s[r] = 0.0
    if jtype == REVOLUTE:
        s[3] = axis[0]; s[4] = axis[1]; s[5] = axis[2]
    elif jtype == PRISMATIC:
        s[0] = axis[0]; s[1] = axis[1]; s[2] = axis[2]
    elif jtype == FREE:
        s[k] = 1.0
    elif jtype == SPHERICAL:
        s[3 + k] = 1.0
    elif jtype == PLANAR:
        if k < 2:
            s[k] = 1.0
        else:
            s[5] = 1.0


@njit(**_JIT)
def quat_times_exp(q, iq, wx, wy, wz, out):
    """out[iq:iq+4] = q[iq:iq+4] ⊗ exp(w), normalised: a quaternion (x, y, z, w) turned by the
    rotation vector w (rad, in its body frame), in scalars (`spatial.quat_mul`, `spatial.quat_exp`)."""
    th2 = wx * wx + wy * wy + wz * wz
    th = np.sqrt(th2)
    if th < 1e-8:
        k, c = 0.5 - th2 / 48.0, 1.0 - th2 / 8.0
    else:
        k, c = np.sin(0.5 * th) / th, np.cos(0.5 * th)
    x, y, z, s = q[iq], q[iq + 1], q[iq + 2], q[iq + 3]
    bx, by, bz = k * wx, k * wy, k * wz
    nx = s * bx + x * c + y * bz - z * by
    ny = s * by - x * bz + y * c + z * bx
    nz = s * bz + x * by - y * bx + z * c
    nw = s * c - x * bx - y * by - z * bz
    nrm = np.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    out[iq], out[iq + 1], out[iq + 2], out[iq + 3] = nx / nrm, ny / nrm, nz / nrm, nw / nrm


# not inlined: a kernel of its own, called by integrate_kernel and advance_kernel; allocates
# nothing, so that kernels compiled without reference counting call it (`models.scratch`)
@njit(cache=True, _nrt=False)
def joint_integrate(jtype, q, iq, v, iv, dt, out):
    """out[iq:iq+nq] = q ⊕ dt v for one joint: exact exponential map on SE(3), SO(3), SE(2)."""
    if jtype == REVOLUTE or jtype == PRISMATIC:
        out[iq] = q[iq] + dt * v[iv]
    elif jtype == FREE:
        # p⁺ = p + R V(w) u and Q⁺ = Q ⊗ exp(w), w = dt ω, u = dt v (body frame; V the SO(3)
        # left Jacobian, `spatial.so3_left_jacobian`), written out in scalars (no temporaries)
        ux, uy, uz = dt * v[iv], dt * v[iv + 1], dt * v[iv + 2]
        wx, wy, wz = dt * v[iv + 3], dt * v[iv + 4], dt * v[iv + 5]
        th2 = wx * wx + wy * wy + wz * wz
        th = np.sqrt(th2)
        if th < 1e-6:
            a, b = 0.5 - th2 / 24.0, 1.0 / 6.0 - th2 / 120.0
        else:
            a, b = (1.0 - np.cos(th)) / th2, (th - np.sin(th)) / (th2 * th)
        cx, cy, cz = wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux          # w × u
        ex, ey, ez = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx          # w × (w × u)
        dx, dy, dz = ux + a * cx + b * ex, uy + a * cy + b * ey, uz + a * cz + b * ez
        x, y, z, s = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        out[iq] = q[iq] + (1 - 2 * (y * y + z * z)) * dx + 2 * (x * y - s * z) * dy + 2 * (x * z + s * y) * dz
        out[iq + 1] = q[iq + 1] + 2 * (x * y + s * z) * dx + (1 - 2 * (x * x + z * z)) * dy + 2 * (y * z - s * x) * dz
        out[iq + 2] = q[iq + 2] + 2 * (x * z - s * y) * dx + 2 * (y * z + s * x) * dy + (1 - 2 * (x * x + y * y)) * dz
        quat_times_exp(q, iq + 3, wx, wy, wz, out)
    elif jtype == SPHERICAL:
        quat_times_exp(q, iq, dt * v[iv], dt * v[iv + 1], dt * v[iv + 2], out)
    elif jtype == PLANAR:
        c, s = q[iq + 2], q[iq + 3]
        vx, vy, w = dt * v[iv], dt * v[iv + 1], dt * v[iv + 2]
        if abs(w) < 1e-8:
            a, b = 1.0 - w * w / 6.0, 0.5 * w
        else:
            a, b = np.sin(w) / w, (1.0 - np.cos(w)) / w
        dx, dy = a * vx - b * vy, b * vx + a * vy
        out[iq] = q[iq] + c * dx - s * dy
        out[iq + 1] = q[iq + 1] + s * dx + c * dy
        cw, sw = np.cos(w), np.sin(w)
        cn, sn = c * cw - s * sw, s * cw + c * sw
        nrm = np.sqrt(cn * cn + sn * sn)
        out[iq + 2] = cn / nrm
        out[iq + 3] = sn / nrm

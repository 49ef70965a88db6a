"""Spatial algebra on flat arrays (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2).

Conventions (as in Pinocchio):
- a spatial motion vector is ``m = (v, ω)``: linear part first, angular part second;
- a spatial force vector is ``f = (f, n)``: force first, moment second;
- a rigid placement is ``(R, p)``: rotation (3, 3) and translation (3,) of a frame in its
  parent, so a point ``x`` of the frame is ``R x + p`` in the parent.

Every kernel in this package works with world-frame spatial quantities: vectors are
expressed in world axes about the world origin (paper 002, Sec. III), so no transform
is needed when a quantity moves from a body to its parent.

All helpers are small ``@njit(inline="always")`` functions on NumPy arrays so the
dynamics kernels read like the equations.
"""
import numpy as np
from numba import njit

_JIT = dict(cache=True, inline="always")


@njit(**_JIT)
def skew(a):
    """[a]×: the 3×3 cross-product matrix, skew(a) @ b = a × b."""
    S = np.zeros((3, 3))
    S[0, 1] = -a[2]; S[0, 2] = a[1]
    S[1, 0] = a[2]; S[1, 2] = -a[0]
    S[2, 0] = -a[1]; S[2, 1] = a[0]
    return S


@njit(**_JIT)
def cross3(a, b):
    """a × b for 3-vectors."""
    return np.array((a[1] * b[2] - a[2] * b[1],
                     a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]))


@njit(**_JIT)
def crm(v, m):
    """v ×ₘ m: spatial motion cross product (Featherstone Eq. 2.31), v, m = (lin, ang)."""
    out = np.empty(6)
    vl0, vl1, vl2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    ml0, ml1, ml2, mw0, mw1, mw2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = w1 * ml2 - w2 * ml1 + vl1 * mw2 - vl2 * mw1
    out[1] = w2 * ml0 - w0 * ml2 + vl2 * mw0 - vl0 * mw2
    out[2] = w0 * ml1 - w1 * ml0 + vl0 * mw1 - vl1 * mw0
    out[3] = w1 * mw2 - w2 * mw1
    out[4] = w2 * mw0 - w0 * mw2
    out[5] = w0 * mw1 - w1 * mw0
    return out


@njit(**_JIT)
def crf(v, f):
    """v ×* f: spatial force cross product (Featherstone Eq. 2.32), f = (force, moment)."""
    out = np.empty(6)
    vl0, vl1, vl2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    f0, f1, f2, n0, n1, n2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * f2 - w2 * f1
    out[1] = w2 * f0 - w0 * f2
    out[2] = w0 * f1 - w1 * f0
    out[3] = w1 * n2 - w2 * n1 + vl1 * f2 - vl2 * f1
    out[4] = w2 * n0 - w0 * n2 + vl2 * f0 - vl0 * f2
    out[5] = w0 * n1 - w1 * n0 + vl0 * f1 - vl1 * f0
    return out


@njit(**_JIT)
def motion_to_world(R, p, m_local, out):
    """X m: a motion vector given in frame (R, p) expressed in world axes about the origin.

    ω_w = R ω, v_w = R v + p × ω_w (Featherstone Eq. 2.24 with X = [[R, p̂R], [0, R]]).
    """
    w0 = R[0, 0] * m_local[3] + R[0, 1] * m_local[4] + R[0, 2] * m_local[5]
    w1 = R[1, 0] * m_local[3] + R[1, 1] * m_local[4] + R[1, 2] * m_local[5]
    w2 = R[2, 0] * m_local[3] + R[2, 1] * m_local[4] + R[2, 2] * m_local[5]
    l0 = R[0, 0] * m_local[0] + R[0, 1] * m_local[1] + R[0, 2] * m_local[2]
    l1 = R[1, 0] * m_local[0] + R[1, 1] * m_local[1] + R[1, 2] * m_local[2]
    l2 = R[2, 0] * m_local[0] + R[2, 1] * m_local[1] + R[2, 2] * m_local[2]
    out[0] = l0 + p[1] * w2 - p[2] * w1
    out[1] = l1 + p[2] * w0 - p[0] * w2
    out[2] = l2 + p[0] * w1 - p[1] * w0
    out[3] = w0
    out[4] = w1
    out[5] = w2


@njit(**_JIT)
def inertia_to_world(m, c, Ic, out):
    """Spatial inertia about the world origin from mass m, world CoM c and world Ic (3, 3).

    H = [[m 1, -m ĉ], [m ĉ, Ic - m ĉ ĉ]] (Featherstone Eq. 2.63, (lin, ang) ordering);
    -ĉ ĉ = |c|² 1 - c cᵀ.
    """
    cx, cy, cz = c[0], c[1], c[2]
    cc = cx * cx + cy * cy + cz * cz
    for r in range(6):
        for s in range(6):
            out[r, s] = 0.0
    out[0, 0] = m; out[1, 1] = m; out[2, 2] = m
    # -m ĉ in the top-right block, m ĉ bottom-left
    out[0, 4] = m * cz; out[0, 5] = -m * cy
    out[1, 3] = -m * cz; out[1, 5] = m * cx
    out[2, 3] = m * cy; out[2, 4] = -m * cx
    out[4, 0] = m * cz; out[5, 0] = -m * cy
    out[3, 1] = -m * cz; out[5, 1] = m * cx
    out[3, 2] = m * cy; out[4, 2] = -m * cx
    for r in range(3):
        for s in range(3):
            out[3 + r, 3 + s] = Ic[r, s] - m * c[r] * c[s]
        out[3 + r, 3 + r] += m * cc


@njit(**_JIT)
def quat_to_rot(x, y, z, w, R):
    """Rotation matrix of the unit quaternion (x, y, z, w) (scalar last), written into R."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    R[0, 0] = 1 - 2 * (yy + zz); R[0, 1] = 2 * (xy - wz); R[0, 2] = 2 * (xz + wy)
    R[1, 0] = 2 * (xy + wz); R[1, 1] = 1 - 2 * (xx + zz); R[1, 2] = 2 * (yz - wx)
    R[2, 0] = 2 * (xz - wy); R[2, 1] = 2 * (yz + wx); R[2, 2] = 1 - 2 * (xx + yy)


@njit(**_JIT)
def axis_angle_to_rot(a, theta, R):
    """Rodrigues: rotation by theta about the unit axis a, written into R."""
    c, s = np.cos(theta), np.sin(theta)
    t = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    R[0, 0] = t * x * x + c; R[0, 1] = t * x * y - s * z; R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z; R[1, 1] = t * y * y + c; R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y; R[2, 1] = t * y * z + s * x; R[2, 2] = t * z * z + c


@njit(**_JIT)
def quat_mul(a, b):
    """Hamilton product a ⊗ b of quaternions stored (x, y, z, w)."""
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    return np.array((aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz))


@njit(**_JIT)
def quat_exp(w):
    """exp of the rotation vector w (rad) as a unit quaternion (x, y, z, w)."""
    th = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if th < 1e-8:
        k = 0.5 - th * th / 48.0
        c = 1.0 - th * th / 8.0
    else:
        k = np.sin(0.5 * th) / th
        c = np.cos(0.5 * th)
    return np.array((k * w[0], k * w[1], k * w[2], c))


@njit(**_JIT)
def so3_left_jacobian(w):
    """V(w) = I + (1 - cos θ)/θ² ŵ + (θ - sin θ)/θ³ ŵ², so exp of the twist (v, w) moves by V v."""
    th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    th = np.sqrt(th2)
    if th < 1e-6:
        a = 0.5 - th2 / 24.0
        b = 1.0 / 6.0 - th2 / 120.0
    else:
        a = (1.0 - np.cos(th)) / th2
        b = (th - np.sin(th)) / (th2 * th)
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


# ----------------------------------------------------------------------------- quaternions (NumPy, outside kernels)
# The one place for conversions between rotation matrices and quaternions in Python code
# (loaders, world building, sensors, the viewer). Kernels use `quat_to_rot` above.
def quat_xyzw_to_matrix(q):
    """Rotation matrix (3, 3) of the quaternion (x, y, z, w), normalised first."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def quat_wxyz_to_matrix(q):
    """Rotation matrix (3, 3) of the quaternion (w, x, y, z) (MuJoCo's order), normalised first."""
    w, x, y, z = q
    return quat_xyzw_to_matrix((x, y, z, w))


def matrix_to_quat_xyzw(R):
    """Unit quaternion (x, y, z, w), w ≥ 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


def matrices_to_quats_xyzw(R):
    """Quaternions (k, 4) (x, y, z, w) of rotations (k, 3, 3), sign-continuous along k (for
    interpolated animation tracks)."""
    Q = np.array([matrix_to_quat_xyzw(r) for r in R]) if len(R) else np.zeros((0, 4))
    for i in range(1, len(Q)):
        if Q[i] @ Q[i - 1] < 0:
            Q[i] = -Q[i]
    return Q

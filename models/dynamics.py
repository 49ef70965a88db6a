"""RNEA, CRBA and ABA in the world-frame formulation (paper 002, Sec. III), and the
bias-free M⁻¹ sweep with cached articulated inertias (paper 000, Alg. 2).

World frame: every spatial vector and inertia is in world axes about the world origin, so
a quantity passes from a body to its parent with no transform; Ṡᵢ = vᵢ × Sᵢ.
Gravity enters as the base acceleration a₀ = (−g, 0).
Featherstone's symbols: H (spatial inertia), Iᴬ/pᴬ (articulated inertia and bias force),
U = Iᴬ S, D = Sᵀ U (+ armature), u = τ − Sᵀ pᴬ, c = v × S q̇.
"""
import numpy as np
from numba import njit

from . import joints, kinematics, scratch, spatial
from .jitcache import drop_stale_cache
from .kinematics import all_finite, fk_kernel, kinematics_kernel, q_status_kernel
from .layout import JI_IV, JI_NV, JI_PARENT
from .scratch import stack_matrix, stack_vector
from .spatial import crf, crm

# the kernels below compile in code of these modules
drop_stale_cache(__file__, [joints.__file__, kinematics.__file__, scratch.__file__, spatial.__file__])

_JIT = dict(cache=True)


OK, BAD_Q, BAD_V, BAD_AT, SINGULAR = 0, 1, 2, 3, 4
UNIT_TOL = 1e-6


@njit(cache=True, inline="always")
def _status(jint, q, v, x):
    """Input validation inside the kernels (saves separate dispatches): OK or the bad argument."""
    if q_status_kernel(jint, q, UNIT_TOL) != -1:
        return BAD_Q
    if not all_finite(v):
        return BAD_V
    if not all_finite(x):
        return BAD_AT
    return OK


@njit(cache=True, inline="always")
def _crm_into(v, m, out):
    """out = v ×ₘ m (Featherstone Eq. 2.31)."""
    out[0] = v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4]
    out[1] = v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5]
    out[2] = v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3]
    out[3] = v[4] * m[5] - v[5] * m[4]
    out[4] = v[5] * m[3] - v[3] * m[5]
    out[5] = v[3] * m[4] - v[4] * m[3]


@njit(cache=True, inline="always")
def _crf_add(v, f, out):
    """out += v ×* f (Featherstone Eq. 2.32)."""
    out[0] += v[4] * f[2] - v[5] * f[1]
    out[1] += v[5] * f[0] - v[3] * f[2]
    out[2] += v[3] * f[1] - v[4] * f[0]
    out[3] += v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] += v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] += v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@njit(cache=True, inline="always")
def _mv6(A, x, out):
    """out = A x for A (6, 6)."""
    for r in range(6):
        acc = 0.0
        for c in range(6):
            acc += A[r, c] * x[c]
        out[r] = acc


@njit(cache=True, inline="always")
def _dot_col(S, k, x):
    """S[:, k] · x."""
    return S[0, k] * x[0] + S[1, k] * x[1] + S[2, k] * x[2] + S[3, k] * x[3] + S[4, k] * x[4] + S[5, k] * x[5]


@njit(cache=True, inline="always")
def _composite_force(Hc, S, i, k, F):
    """F = Hᶜᵢ Sₖ: the composite body's force for unit motion of dof k (CRBA)."""
    for r in range(6):
        acc = 0.0
        for c in range(6):
            acc += Hc[i, r, c] * S[c, k]
        F[r] = acc


@njit(cache=True, inline="always")
def _add_to_parent(Hc, i, par):
    """Hᶜ_λ(i) += Hᶜᵢ (composite inertia of the parent, CRBA)."""
    if par >= 0:
        for r in range(6):
            for c in range(6):
                Hc[par, r, c] += Hc[i, r, c]


@njit(cache=True, inline="always")
def cholesky_into(D, n, L):
    """L[:n, :n] (lower triangle written) with D[:n, :n] = L Lᵀ; returns False if D is not PD."""
    for j in range(n):
        acc = D[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:
            return False
        L[j, j] = np.sqrt(acc)
        for i in range(j + 1, n):
            acc = D[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    return True


@njit(cache=True, inline="always")
def cholesky_solve(L, n, b, t, out):
    """out[:n] = (L Lᵀ)⁻¹ b[:n] by forward substitution into t, then back substitution into out
    (L lower, as from `cholesky_into`); b, t and out may be the same array (in place)."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * t[k]
        t[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = t[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@njit(cache=True, _nrt=False)
def spd_inverse(D, n, out):
    """out[:n, :n] = D[:n, :n]⁻¹ for a small SPD block (n ≤ 6) by Cholesky; returns False if not PD."""
    if n == 1:      # a one-dof joint: the operations below for n = 1, without their scratch arrays
        if not D[0, 0] > 0.0:
            return False
        li = 1.0 / np.sqrt(D[0, 0])
        out[0, 0] = li * li
        return True
    L = stack_matrix(6, 6)
    L[:, :] = 0.0
    if not cholesky_into(D, n, L):
        return False
    # inverse of L (lower triangular), then out = L⁻ᵀ L⁻¹
    Li = stack_matrix(6, 6)
    Li[:, :] = 0.0
    for j in range(n):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            acc = 0.0
            for k in range(j, i):
                acc -= L[i, k] * Li[k, j]
            Li[i, j] = acc / L[i, i]
    for i in range(n):
        for j in range(i + 1):
            acc = 0.0
            for k in range(i, n):
                acc += Li[k, i] * Li[k, j]
            out[i, j] = acc
            out[j, i] = acc
    return True


@njit(**_JIT)
def rnea_kernel(jint, jfloat, armature, gravity, q, v, a, fext, tau):
    """RNEA (Featherstone Table 5.1, world frame): τ = M(q) a + C(q, v) v + g(q) − Σ Jᵀ fext.

    fext (n, 6): external spatial forces on each body, world frame about the origin.
    Returns a status code (OK, BAD_Q, BAD_V, BAD_AT); tau is untouched unless OK.
    """
    st = _status(jint, q, v, a)
    if st != OK:
        return st
    n, nv = jint.shape[0], v.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, H = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, H)
    vel, acc, f = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    vJ, cJ, h = np.empty(6), np.empty(6), np.empty(6)
    for i in range(n):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for r in range(6):
            x, y = 0.0, 0.0
            for k in range(iv, iv + nvi):
                x += S[r, k] * v[k]
                y += S[r, k] * a[k]
            vJ[r] = x
            if par >= 0:
                vel[i, r] = vel[par, r] + x
                acc[i, r] = acc[par, r] + y
            else:
                vel[i, r] = x
                acc[i, r] = y - gravity[r] if r < 3 else y
        _crm_into(vel[i], vJ, cJ)
        for r in range(6):
            acc[i, r] += cJ[r]
        _mv6(H[i], acc[i], f[i])
        _mv6(H[i], vel[i], h)
        _crf_add(vel[i], h, f[i])
        for r in range(6):
            f[i, r] -= fext[i, r]
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for k in range(iv, iv + nvi):
            tau[k] = _dot_col(S, k, f[i]) + armature[k] * a[k]
        if par >= 0:
            for r in range(6):
                f[par, r] += f[i, r]
    return OK


@njit(**_JIT)
def crba_kernel(jint, jfloat, armature, q, M):
    """CRBA (Featherstone Table 6.2, world frame): composite inertias Hᶜᵢ = Hᵢ + Σ children,
    Mᵢⱼ = Sᵢᵀ Hᶜⱼ Sⱼ for i an ancestor of j. Fills the full symmetric M (nv, nv).
    Returns OK or BAD_Q."""
    if q_status_kernel(jint, q, UNIT_TOL) != -1:
        return BAD_Q
    n, nv = jint.shape[0], M.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, Hc = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, Hc)
    M[:, :] = 0.0
    F = np.empty(6)
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for k in range(iv, iv + nvi):
            _composite_force(Hc, S, i, k, F)
            j = i
            while j >= 0:
                for l in range(jint[j, JI_IV], jint[j, JI_IV] + jint[j, JI_NV]):
                    val = _dot_col(S, l, F)
                    M[l, k] = val
                    M[k, l] = val
                j = jint[j, JI_PARENT]
            M[k, k] += armature[k]
        _add_to_parent(Hc, i, par)
    return OK


@njit(**_JIT)
def crba_diagonal_kernel(jint, jfloat, armature, q, d):
    """Diagonal of M only: dₖ = Sₖᵀ Hᶜ Sₖ + armatureₖ (used to check every dof moves mass)."""
    n, nv = jint.shape[0], d.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, Hc = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, Hc)
    F = np.empty(6)
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for k in range(iv, iv + nvi):
            _composite_force(Hc, S, i, k, F)
            d[k] = _dot_col(S, k, F) + armature[k]
        _add_to_parent(Hc, i, par)


@njit(cache=True, inline="always")
def _copy_inertias(H, IA):
    """IA ← H (n, 6, 6), by loops (a slice assignment may copy, which needs numba's runtime)."""
    for i in range(H.shape[0]):
        for r in range(6):
            for c in range(6):
                IA[i, r, c] = H[i, r, c]


@njit(cache=True, inline="always")
def _articulate(i, par, iv, nvi, S, armature, IA, U, Dinv, D, keep):
    """ABA backward step for body i without bias (paper 000 Alg. 2 lines 4 and 7):
    U = Iᴬ S, D = Sᵀ U + armature, D⁻¹, and Iᴬ_λ += Iᴬ − U D⁻¹ Uᵀ. Returns False if D is not PD.
    keep: D⁻¹ᵢ already holds (`aba_refactor_kernel`), only U and the parent's update are computed."""
    for k in range(nvi):
        for r in range(6):
            acc = 0.0
            for c in range(6):
                acc += IA[i, r, c] * S[c, iv + k]
            U[r, iv + k] = acc
    ok = True
    if not keep:
        for k in range(nvi):
            for l in range(nvi):
                D[k, l] = _dot_col(S, iv + k, U[:, iv + l])
            D[k, k] += armature[iv + k]
        ok = spd_inverse(D, nvi, Dinv[i])
    if par >= 0 and nvi == 1:     # one dof (most joints): the same operations, D⁻¹ U computed once per column
        w = D[1]                  # scratch (a one-dof D uses D[0, 0] only)
        for c in range(6):
            t = 0.0
            t += Dinv[i, 0, 0] * U[c, iv]
            w[c] = t
        for r in range(6):
            for c in range(6):
                IA[par, r, c] += IA[i, r, c] - U[r, iv] * w[c]
    elif par >= 0:
        for r in range(6):
            for c in range(6):
                acc = IA[i, r, c]
                for k in range(nvi):
                    t = 0.0
                    for l in range(nvi):
                        t += Dinv[i, k, l] * U[c, iv + l]
                    acc -= U[r, iv + k] * t
                IA[par, r, c] += acc
    return ok


@njit(cache=True, _nrt=False)
def aba_factor_kernel(jint, armature, S, H, IA, U, Dinv):
    """Backward pass of ABA without bias terms (paper 000 Alg. 2, lines 2–7): the articulated
    inertias Iᴬ (n, 6, 6), U = Iᴬ S (6, nv) and D⁻¹ (n, 6, 6; top-left nvᵢ×nvᵢ used).
    Depends on q only; reused by every `minv_kernel` call. Returns False if some D is singular."""
    n = jint.shape[0]
    D = stack_matrix(6, 6)
    _copy_inertias(H, IA)
    ok = True
    for i in range(n - 1, -1, -1):
        ok &= _articulate(i, jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV], S, armature, IA, U, Dinv, D, False)
    return ok


@njit(cache=True, _nrt=False)
def aba_refactor_kernel(jint, armature, S, H, IA, U, Dinv, leaf):
    """`aba_factor_kernel` at a new q on arrays factorised before, keeping D⁻¹ of the leaf
    bodies (leaf (n,) bool): a body without children has Iᴬ = H, so D = Sᵀ H S + armature is its
    inertia seen through its joint's local subspace, which does not depend on q."""
    n = jint.shape[0]
    D = stack_matrix(6, 6)
    _copy_inertias(H, IA)
    ok = True
    for i in range(n - 1, -1, -1):
        ok &= _articulate(i, jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV], S, armature, IA, U, Dinv, D, leaf[i])
    return ok


@njit(cache=True, inline="always")
def joint_torque_into(S, iv, nvi, tau, f, u, o):
    """u[o+k] = τ[iv+k] + S[:, iv+k]ᵀ f for the nvᵢ dofs k of one joint: the net joint torque of
    ABA's backward sweep (paper 000 Alg. 2 line 3 and Alg. 4 line 14, there written with the
    bias force −f). f (6,) world force on the link."""
    for k in range(nvi):
        u[o + k] = tau[iv + k] + _dot_col(S, iv + k, f)


@njit(cache=True, inline="always")
def joint_accel_into(S, iv, nvi, a_par, x, o, a):
    """a = a_λ(i) + Sᵢ x[o:o+nvi] (paper 000 Alg. 2 line 10): the link
    acceleration from its parent's a_par (6,) and the joint accelerations; a (6,) may be a_par."""
    for r in range(6):
        t = a_par[r]
        for k in range(nvi):
            t += S[r, iv + k] * x[o + k]
        a[r] = t


def _make_dinv_sweeps(bias):
    """ABA's two D⁻¹u sweeps, with (`bias`) or without the velocity-product terms; `bias` is a
    constant of the compiled code, so the bias-free sweeps carry no trace of it."""

    @njit(cache=True, inline="always")
    def sweeps(jint, S, IA, U, Dinv, tau, f, c, a0, qdd, acc):
        n = jint.shape[0]
        h, w, y, a = stack_vector(6), stack_vector(6), stack_vector(6), stack_vector(6)
        for i in range(n - 1, -1, -1):
            par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
            if nvi == 1 and par >= 0:     # one dof (most joints): the same operations, unrolled
                u = tau[iv] + _dot_col(S, iv, f[i])
                qdd[iv] = u
                if bias:
                    _mv6(IA[i], c[i], h)
                    u = u - _dot_col(U, iv, c[i])
                y0 = 0.0
                y0 += Dinv[i, 0, 0] * u
                for r in range(6):
                    t = f[i, r] - h[r] if bias else f[i, r]
                    t -= U[r, iv] * y0
                    f[par, r] += t
                continue
            joint_torque_into(S, iv, nvi, tau, f[i], qdd, iv)       # u, kept in q̈ until the forward sweep
            if par >= 0:
                if bias:
                    _mv6(IA[i], c[i], h)
                    for k in range(nvi):
                        w[k] = qdd[iv + k] - _dot_col(U, iv + k, c[i])
                else:
                    for k in range(nvi):
                        w[k] = qdd[iv + k]
                for k in range(nvi):      # (written out: a helper for D⁻¹ w compiles slower here)
                    t = 0.0
                    for l in range(nvi):
                        t += Dinv[i, k, l] * w[l]
                    y[k] = t
                for r in range(6):
                    t = f[i, r] - h[r] if bias else f[i, r]
                    for k in range(nvi):
                        t -= U[r, iv + k] * y[k]
                    f[par, r] += t
        for i in range(n):
            par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
            for r in range(6):
                t = acc[par, r] if par >= 0 else a0[r]
                a[r] = t + c[i, r] if bias else t
            if nvi == 1:                  # one dof, unrolled as above
                w0 = qdd[iv] - _dot_col(U, iv, a)
                t = 0.0
                t += Dinv[i, 0, 0] * w0
                qdd[iv] = t
                for r in range(6):
                    acc[i, r] = a[r] + S[r, iv] * t
                continue
            for k in range(nvi):
                w[k] = qdd[iv + k] - _dot_col(U, iv + k, a)
            for k in range(nvi):
                t = 0.0
                for l in range(nvi):
                    t += Dinv[i, k, l] * w[l]
                qdd[iv + k] = t
            joint_accel_into(S, iv, nvi, a, qdd, iv, acc[i])

    sweeps.__doc__ = """ABA's two D⁻¹u sweeps on the factor of `aba_factor_kernel` (Featherstone
    Table 7.1, its second and third loops; paper 000 Alg. 2 lines 2–10, with the bias terms
    of Eq. 2a in `dinv_bias_sweeps`):

      backward  uᵢ = τᵢ + Sᵢᵀ fᵢ,  f_λ(i) += fᵢ − Iᴬᵢ cᵢ − Uᵢ D⁻¹ᵢ (uᵢ − Uᵢᵀ cᵢ)
      forward   aᵢ = a_λ(i) + cᵢ (a₀ + cᵢ at a root),  q̈ᵢ = D⁻¹ᵢ (uᵢ − Uᵢᵀ aᵢ),  aᵢ += Sᵢ q̈ᵢ

    f (n, 6): world forces on the links, −pᴬ (consumed); c (n, 6) bias accelerations
    vᵢ × Sᵢ q̇ᵢ and IA (n, 6, 6) articulated inertias, read by `dinv_bias_sweeps` only (in
    `dinv_sweeps` c = 0 and any arrays of these shapes do); a0 (6,) the base acceleration.
    Writes q̈ (nv,) and the body accelerations acc (n, 6), which may be c itself."""
    return sweeps


dinv_sweeps = _make_dinv_sweeps(False)
dinv_bias_sweeps = _make_dinv_sweeps(True)


@njit(cache=True, _nrt=False)
def minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA):
    """q̈ = M⁻¹ (τ + Σᵢ Jᵢᵀ fextᵢ) by the bias-free ABA sweeps (`dinv_sweeps`) on cached U, D⁻¹
    (paper 000 Alg. 2; with fext from constraints this is Alg. 1–2 merged, Sec. IV-D).

    fext (n, 6) world forces on bodies; outputs q̈ (nv,) and body accelerations acc (n, 6).
    pA (n, 6) is workspace (the link forces)."""
    for i in range(jint.shape[0]):
        for r in range(6):
            pA[i, r] = fext[i, r]
    a0 = stack_vector(6)
    a0[:] = 0.0
    dinv_sweeps(jint, S, Dinv, U, Dinv, tau, pA, acc, a0, qdd, acc)


@njit(cache=True, _nrt=False)
def bias_sweep_kernel(jint, S, H, v, vel, c, pA):
    """ABA's first forward sweep (Featherstone Table 7.1; paper 002 Alg. 1 lines 1–4 without
    τ): vᵢ = v_λ(i) + Sᵢ q̇ᵢ, cᵢ = vᵢ × Sᵢ q̇ᵢ, and pᴬᵢ += vᵢ ×* Hᵢ vᵢ on the caller's initial
    pᴬ (−fext for ABA, 0 for constrainedABA). vel, c, pA (n, 6)."""
    bias_sweep_into(jint, S, H, v, vel, c, pA, stack_vector(6), stack_vector(6))


@njit(cache=True, inline="always")
def bias_sweep_into(jint, S, H, v, vel, c, pA, vJ, h):
    """`bias_sweep_kernel` with its temporaries vJ, h (6,) given (a caller without reference
    counting passes views of its scratch)."""
    for i in range(jint.shape[0]):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for r in range(6):
            x = 0.0
            for k in range(iv, iv + nvi):
                x += S[r, k] * v[k]
            vJ[r] = x
            vel[i, r] = vel[par, r] + x if par >= 0 else x
        _crm_into(vel[i], vJ, c[i])
        _mv6(H[i], vel[i], h)
        _crf_add(vel[i], h, pA[i])


@njit(cache=True, _nrt=False)
def aba_bias_kernel(jint, gravity, S, H, IA, U, Dinv, v, tau, fext, qdd, vel, c, pA):
    """The velocity- and force-dependent sweeps of ABA (Featherstone Table 7.1, world frame,
    paper 002 Sec. III) on the articulated inertias of `aba_factor_kernel` at the same q:
    q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext) (nv,). H (n, 6, 6) rigid inertias, IA the articulated
    ones, U = Iᴬ S, D⁻¹; vel, c, pA (n, 6) are workspace (c ends as the body accelerations).
    `bias_sweep_kernel`, then `dinv_bias_sweeps` from the base acceleration a₀ = (−g, 0)."""
    n = jint.shape[0]
    for i in range(n):
        for r in range(6):
            pA[i, r] = -fext[i, r]
    bias_sweep_kernel(jint, S, H, v, vel, c, pA)
    for i in range(n):
        for r in range(6):
            pA[i, r] = -pA[i, r]      # the link forces −pᴬ of `dinv_bias_sweeps` (exact)
    a0 = stack_vector(6)
    a0[:] = 0.0
    for r in range(3):
        a0[r] = -gravity[r]
    dinv_bias_sweeps(jint, S, IA, U, Dinv, tau, pA, c, a0, qdd, c)


@njit(**_JIT)
def aba_kernel(jint, jfloat, armature, gravity, q, v, tau, fext, qdd):
    """ABA (Featherstone Table 7.1) in the world frame (paper 002, Sec. III):
    q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext): kinematics, the articulated inertias
    (`aba_factor_kernel`), then the bias sweeps (`aba_bias_kernel`). O(n).
    Returns a status code: OK, BAD_Q, BAD_V, BAD_AT (tau) or SINGULAR (some D not PD)."""
    st = _status(jint, q, v, tau)
    if st != OK:
        return st
    n, nv = jint.shape[0], v.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, H, IA = np.empty((6, nv)), np.empty((n, 6, 6)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, H)
    U, Dinv = np.empty((6, nv)), np.empty((n, 6, 6))
    if not aba_factor_kernel(jint, armature, S, H, IA, U, Dinv):
        return SINGULAR
    vel, c, pA = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    aba_bias_kernel(jint, gravity, S, H, IA, U, Dinv, v, tau, fext, qdd, vel, c, pA)
    return OK


# ---------------------------------------------------------------------- Python API
def _fext(model, fext):
    """fext checked, or the model's zero forces (made with the model, never written) for None."""
    if fext is None:
        return model.zero_fext
    fext = np.asarray(fext, dtype=float)
    if fext.shape != (model.nbodies, 6) or not np.all(np.isfinite(fext)):
        raise ValueError(f"fext must be a finite array of shape ({model.nbodies}, 6), got {fext.shape}")
    return fext


def _raise_status(model, st, q, v, x, xname):
    """Turn a kernel status code into the detailed exception of the Python checks."""
    if st == BAD_Q:
        model.check_q(q)
    elif st == BAD_V:
        model.check_v(v)
    elif st == BAD_AT:
        model.check_v(x, xname)
    elif st == SINGULAR:
        n = model.nbodies
        oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
        fk_kernel(model.jint, model.jfloat, np.asarray(q, float), oR, op)
        raise model.singular_mass_matrix_error(op)
    raise RuntimeError(f"kernel failed with status {st}")  # pragma: no cover


def _vec(model, x, n, name):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{name} has shape {x.shape}, expected ({n},)")
    return x


def rnea(model, q, v, a, fext=None):
    """Inverse dynamics τ = M(q) a + C(q, v) v + g(q) − Σ Jᵀ fext (nv,).

    fext: optional (nbodies, 6) world-frame spatial forces (force, moment about the world origin)."""
    q, v, a = _vec(model, q, model.nq, "q"), _vec(model, v, model.nv, "v"), _vec(model, a, model.nv, "a")
    tau = np.empty(model.nv)
    st = rnea_kernel(model.jint, model.jfloat, model.armature, model.gravity, q, v, a, _fext(model, fext), tau)
    if st != OK:
        _raise_status(model, st, q, v, a, "a")
    return tau


def crba(model, q):
    """Joint-space inertia matrix M(q) (nv, nv), armature on the diagonal."""
    q = _vec(model, q, model.nq, "q")
    M = np.empty((model.nv, model.nv))
    st = crba_kernel(model.jint, model.jfloat, model.armature, q, M)
    if st != OK:
        _raise_status(model, st, q, None, None, "")
    return M


def aba(model, q, v, tau, fext=None):
    """Forward dynamics q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext) (nv,) by the articulated-body algorithm."""
    q, v, tau = _vec(model, q, model.nq, "q"), _vec(model, v, model.nv, "v"), _vec(model, tau, model.nv, "tau")
    qdd = np.empty(model.nv)
    st = aba_kernel(model.jint, model.jfloat, model.armature, model.gravity, q, v, tau, _fext(model, fext), qdd)
    if st != OK:
        _raise_status(model, st, q, v, tau, "tau")
    return qdd


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) (nv,)."""
    return rnea(model, q, v, np.zeros(model.nv))


def gravity_torques(model, q):
    """g(q) (nv,)."""
    return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))

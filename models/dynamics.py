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

from .kinematics import kinematics_kernel
from .spatial import crf, crm

_JIT = dict(cache=True)


@njit(cache=True, inline="always")
def _gravity_acc(gravity):
    a0 = np.zeros(6)
    a0[:3] = -gravity
    return a0


@njit(**_JIT)
def rnea_kernel(jint, jfloat, armature, gravity, q, v, a, fext, tau):
    """RNEA (Featherstone Table 5.1, world frame): τ = M(q) a + C(q, v) v + g(q) − Σ Jᵀ fext.

    fext (n, 6): external spatial forces on each body, world frame about the origin.
    """
    n, nv = jint.shape[0], v.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, H = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, H)
    vel, acc, f = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    a0 = _gravity_acc(gravity)
    for i in range(n):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        vJ = np.zeros(6)
        aJ = np.zeros(6)
        for k in range(iv, iv + nvi):
            vJ += S[:, k] * v[k]
            aJ += S[:, k] * a[k]
        if par >= 0:
            vel[i] = vel[par] + vJ
            acc[i] = acc[par] + aJ + crm(vel[i], vJ)
        else:
            vel[i] = vJ
            acc[i] = a0 + aJ + crm(vel[i], vJ)
        f[i] = H[i] @ acc[i] + crf(vel[i], H[i] @ vel[i]) - fext[i]
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        for k in range(iv, iv + nvi):
            tau[k] = S[:, k] @ f[i] + armature[k] * a[k]
        if par >= 0:
            f[par] += f[i]


@njit(**_JIT)
def crba_kernel(jint, jfloat, armature, q, M):
    """CRBA (Featherstone Table 6.2, world frame): composite inertias Hᶜᵢ = Hᵢ + Σ children,
    Mᵢⱼ = Sᵢᵀ Hᶜⱼ Sⱼ for i an ancestor of j. Fills the full symmetric M (nv, nv)."""
    n, nv = jint.shape[0], M.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, Hc = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, Hc)
    M[:, :] = 0.0
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        if nvi > 0:
            F = Hc[i] @ S[:, iv:iv + nvi]
            j = i
            while j >= 0:
                jv, nvj = jint[j, 3], jint[j, 5]
                if nvj > 0:
                    blk = S[:, jv:jv + nvj].T @ F
                    M[jv:jv + nvj, iv:iv + nvi] = blk
                    M[iv:iv + nvi, jv:jv + nvj] = blk.T
                j = jint[j, 0]
            for k in range(iv, iv + nvi):
                M[k, k] += armature[k]
        if par >= 0:
            Hc[par] += Hc[i]


@njit(**_JIT)
def crba_diagonal_kernel(jint, jfloat, armature, q, d):
    """Diagonal of M only: dₖ = Sₖᵀ Hᶜ Sₖ + armatureₖ (used to check every dof moves mass)."""
    n, nv = jint.shape[0], d.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, Hc = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, Hc)
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        for k in range(iv, iv + nvi):
            d[k] = S[:, k] @ (Hc[i] @ S[:, k]) + armature[k]
        if par >= 0:
            Hc[par] += Hc[i]


@njit(cache=True, inline="always")
def _small_inv(D, nvi):
    """Inverse of the SPD nvi×nvi block D (nvi ≤ 6) by Cholesky."""
    return np.linalg.inv(D[:nvi, :nvi])


@njit(**_JIT)
def aba_factor_kernel(jint, armature, S, H, IA, U, Dinv):
    """Backward pass of ABA without bias terms (paper 000 Alg. 2, lines 2–7): the articulated
    inertias Iᴬ (n, 6, 6), U = Iᴬ S (6, nv) and D⁻¹ (n, 6, 6; top-left nvᵢ×nvᵢ used).
    Depends on q only; reused by every `minv_kernel` call."""
    n = jint.shape[0]
    IA[:, :, :] = H
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        if nvi > 0:
            Ui = IA[i] @ S[:, iv:iv + nvi]
            U[:, iv:iv + nvi] = Ui
            D = S[:, iv:iv + nvi].T @ Ui
            for k in range(nvi):
                D[k, k] += armature[iv + k]
            Di = _small_inv(D, nvi)
            Dinv[i, :nvi, :nvi] = Di
            if par >= 0:
                IA[par] += IA[i] - Ui @ Di @ Ui.T
        elif par >= 0:
            IA[par] += IA[i]


@njit(**_JIT)
def minv_kernel(jint, S, U, Dinv, tau, fext, qdd, acc, pA):
    """q̈ = M⁻¹ (τ + Σᵢ Jᵢᵀ fextᵢ) by the bias-free ABA sweeps on cached U, D⁻¹
    (paper 000 Alg. 2; with fext from constraints this is Alg. 1–2 merged, Sec. IV-D).

    fext (n, 6) world forces on bodies; outputs q̈ (nv,) and body accelerations acc (n, 6).
    pA (n, 6) is workspace."""
    n = jint.shape[0]
    pA[:, :] = -fext
    u = np.empty_like(tau)
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        pa = pA[i].copy()
        if nvi > 0:
            for k in range(nvi):
                u[iv + k] = tau[iv + k] - S[:, iv + k] @ pA[i]
            Du = Dinv[i, :nvi, :nvi] @ u[iv:iv + nvi]
            pa += U[:, iv:iv + nvi] @ Du
        if par >= 0:
            pA[par] += pa
    for i in range(n):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        if par >= 0:
            acc[i] = acc[par]
        else:
            acc[i] = 0.0
        if nvi > 0:
            r = u[iv:iv + nvi] - U[:, iv:iv + nvi].T @ acc[i]
            qi = Dinv[i, :nvi, :nvi] @ r
            qdd[iv:iv + nvi] = qi
            acc[i] += S[:, iv:iv + nvi] @ qi


@njit(**_JIT)
def aba_kernel(jint, jfloat, armature, gravity, q, v, tau, fext, qdd):
    """ABA (Featherstone Table 7.1) in the world frame (paper 002, Sec. III):
    q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext). Three sweeps, O(n)."""
    n, nv = jint.shape[0], v.shape[0]
    oR, op = np.empty((n, 3, 3)), np.empty((n, 3))
    S, IA = np.empty((6, nv)), np.empty((n, 6, 6))
    kinematics_kernel(jint, jfloat, q, oR, op, S, IA)
    vel, c, pA = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    for i in range(n):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        vJ = np.zeros(6)
        for k in range(iv, iv + nvi):
            vJ += S[:, k] * v[k]
        vel[i] = vel[par] + vJ if par >= 0 else vJ
        c[i] = crm(vel[i], vJ)
        pA[i] = crf(vel[i], IA[i] @ vel[i]) - fext[i]
    U = np.empty((6, nv))
    Dinv = np.empty((n, 6, 6))
    u = np.empty(nv)
    for i in range(n - 1, -1, -1):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        Ia = IA[i].copy()
        pa = pA[i] + Ia @ c[i]
        if nvi > 0:
            Si = S[:, iv:iv + nvi]
            Ui = IA[i] @ Si
            U[:, iv:iv + nvi] = Ui
            D = Si.T @ Ui
            for k in range(nvi):
                D[k, k] += armature[iv + k]
            Di = _small_inv(D, nvi)
            Dinv[i, :nvi, :nvi] = Di
            ui = tau[iv:iv + nvi] - Si.T @ pA[i]
            u[iv:iv + nvi] = ui
            UD = Ui @ Di
            Ia -= UD @ Ui.T
            pa = pA[i] + Ia @ c[i] + UD @ ui
        if par >= 0:
            IA[par] += Ia
            pA[par] += pa
    acc = np.empty((n, 6))
    a0 = _gravity_acc(gravity)
    for i in range(n):
        par, iv, nvi = jint[i, 0], jint[i, 3], jint[i, 5]
        acc[i] = (acc[par] if par >= 0 else a0) + c[i]
        if nvi > 0:
            r = u[iv:iv + nvi] - U[:, iv:iv + nvi].T @ acc[i]
            qi = Dinv[i, :nvi, :nvi] @ r
            qdd[iv:iv + nvi] = qi
            acc[i] += S[:, iv:iv + nvi] @ qi


# ---------------------------------------------------------------------- Python API
def _fext(model, fext):
    if fext is None:
        return np.zeros((model.nbodies, 6))
    fext = np.asarray(fext, dtype=float)
    if fext.shape != (model.nbodies, 6) or not np.all(np.isfinite(fext)):
        raise ValueError(f"fext must be a finite array of shape ({model.nbodies}, 6), got {fext.shape}")
    return fext


def rnea(model, q, v, a, fext=None):
    """Inverse dynamics τ = M(q) a + C(q, v) v + g(q) − Σ Jᵀ fext (nv,).

    fext: optional (nbodies, 6) world-frame spatial forces (force, moment about the world origin)."""
    q, v, a = model.check_q(q), model.check_v(v), model.check_v(a, "a")
    tau = np.empty(model.nv)
    rnea_kernel(model.jint, model.jfloat, model.armature, model.gravity, q, v, a, _fext(model, fext), tau)
    return tau


def crba(model, q):
    """Joint-space inertia matrix M(q) (nv, nv), armature on the diagonal."""
    q = model.check_q(q)
    M = np.empty((model.nv, model.nv))
    crba_kernel(model.jint, model.jfloat, model.armature, q, M)
    return M


def aba(model, q, v, tau, fext=None):
    """Forward dynamics q̈ = M⁻¹ (τ − C v − g + Σ Jᵀ fext) (nv,) by the articulated-body algorithm."""
    q, v, tau = model.check_q(q), model.check_v(v), model.check_v(tau, "tau")
    qdd = np.empty(model.nv)
    aba_kernel(model.jint, model.jfloat, model.armature, model.gravity, q, v, tau, _fext(model, fext), qdd)
    return qdd


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) (nv,)."""
    return rnea(model, q, v, np.zeros(model.nv))


def gravity_torques(model, q):
    """g(q) (nv,)."""
    return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))

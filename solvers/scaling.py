"""Diagonal of the Delassus matrix G = J M⁻¹ Jᵀ without forming G, for the solver's scaling.

The ADMM converges in about ½ √κ ln(1/ε) iterations, and on robots the spread of G's diagonal
alone is large: a contact on a 0.1 kg wrist link and one on a 30 kg box differ by 10⁴ in
apparent inverse mass. Scaling the problem by S = diag(G)^(-1/2) (one scalar per contact, which
keeps the friction cone's shape) removes that spread (`solvers.admm`).

The diagonal comes from the links' apparent spatial inverse inertias ⁰Ωᵢ (world grounded), one
forward sweep over the articulated factorisation of ABA (Sathya, Decré, Swevers, "PV-OSIMr",
Eq. 18 with A(i) = π(i)):

    ⁰Ωᵢ = Sᵢ Dᵢ⁻¹ Sᵢᵀ + Pᵢᵀ ⁰Ω_π(i) Pᵢ,     Pᵢ = I − Uᵢ Dᵢ⁻¹ Sᵢᵀ,     ⁰Ω of the world = 0,

so a unit force f on link i accelerates it by ⁰Ωᵢ f. A link row k (world spatial row vectors kA
on link a, kB on link b) then has G_rr = kAᵀ Ω_a kA + kBᵀ Ω_b kB − 2 kAᵀ Ω_ab kB; the cross term
is zero when a and b are in different trees (box on box, robot on the floor or on a box) and is
dropped otherwise (self-collision, loops inside one robot): an estimate, which is all a
preconditioner needs. Joint rows: (M⁻¹)_dd = [Dᵢ⁻¹ + Dᵢ⁻¹ Uᵢᵀ Ω_π(i) Uᵢ Dᵢ⁻¹]_kk exactly.
O(n) for Ω plus O(m); every quantity is world-frame as in `models.dynamics`.
"""
from numba import njit

import models.scratch
from models.jitcache import drop_stale_cache
from models.layout import JI_IV, JI_NV, JI_PARENT
from models.scratch import stack_matrix, stack_vector

drop_stale_cache(__file__, [models.scratch.__file__])


@njit(cache=True, _nrt=False)
def inverse_inertia_kernel(jint, S, U, Dinv, Om):
    """⁰Ωᵢ (n, 6, 6) of every link from ABA's world-frame S, U = Iᴬ S (6, nv) and D⁻¹ (n, 6, 6)
    (module docstring). Links are ordered parents first."""
    n = jint.shape[0]
    SD = stack_matrix(6, 6)
    P = stack_matrix(6, 6)
    T = stack_matrix(6, 6)
    for i in range(n):
        par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
        for r in range(6):                  # S D⁻¹ (6 × nvᵢ)
            for k in range(nvi):
                t = 0.0
                for l in range(nvi):
                    t += S[r, iv + l] * Dinv[i, l, k]
                SD[r, k] = t
        for r in range(6):                  # S D⁻¹ Sᵀ
            for c in range(6):
                t = 0.0
                for k in range(nvi):
                    t += SD[r, k] * S[c, iv + k]
                Om[i, r, c] = t
        if par < 0:
            continue
        for r in range(6):                  # P = I − U D⁻¹ Sᵀ (D⁻¹ symmetric: (D⁻¹Sᵀ)[k, c] = SD[c, k])
            for c in range(6):
                t = 1.0 if r == c else 0.0
                for k in range(nvi):
                    t -= U[r, iv + k] * SD[c, k]
                P[r, c] = t
        for r in range(6):                  # T = Ω_π P
            for c in range(6):
                t = 0.0
                for k in range(6):
                    t += Om[par, r, k] * P[k, c]
                T[r, c] = t
        for r in range(6):                  # Ωᵢ += Pᵀ T
            for c in range(6):
                t = 0.0
                for k in range(6):
                    t += P[k, r] * T[k, c]
                Om[i, r, c] += t


@njit(cache=True, inline="always")
def _quad(Om, b, k0, k1, k2, k3, k4, k5):
    """kᵀ Ω_b k for the spatial row vector k."""
    t = 0.0
    for r in range(6):
        kr = k0 if r == 0 else k1 if r == 1 else k2 if r == 2 else k3 if r == 3 else k4 if r == 4 else k5
        s = Om[b, r, 0] * k0 + Om[b, r, 1] * k1 + Om[b, r, 2] * k2 + Om[b, r, 3] * k3 + Om[b, r, 4] * k4 + \
            Om[b, r, 5] * k5
        t += kr * s
    return t


@njit(cache=True, _nrt=False)
def _point_trace(Om, b, x, y, z):
    """trace of the 3×3 point block of link b at world point p: Σₐ kₐᵀ Ω_b kₐ, kₐ = (eₐ, p × eₐ)."""
    return _quad(Om, b, 1.0, 0.0, 0.0, 0.0, z, -y) + _quad(Om, b, 0.0, 1.0, 0.0, -z, 0.0, x) + \
        _quad(Om, b, 0.0, 0.0, 1.0, y, -x, 0.0)


@njit(cache=True, _nrt=False)
def delassus_diagonal_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, gen, crow, cbody, cf, Om, out):
    """out (m,) ≈ diag(G) (module docstring): contact rows get their contact's mean diagonal
    (trace/3 of its point block, frame-independent); gen are the rows that are not contact rows
    (link rows through kA, kB; joint rows where dof ≥ 0). Om (n, 6, 6) is workspace."""
    inverse_inertia_kernel(jint, S, U, Dinv, Om)
    for c in range(crow.shape[0]):
        b1, b2 = cbody[c, 0], cbody[c, 1]
        x, y, z = cf[c, 0], cf[c, 1], cf[c, 2]
        t = 0.0
        if b1 != b2:
            if b1 >= 0:
                t += _point_trace(Om, b1, x, y, z)
            if b2 >= 0:
                t += _point_trace(Om, b2, x, y, z)
        r0 = crow[c]
        out[r0] = out[r0 + 1] = out[r0 + 2] = t / 3.0
    w = stack_vector(6)
    for j in range(gen.shape[0]):
        r = gen[j]
        d = dof[r]
        if d >= 0:              # joint row: (M⁻¹)_dd
            i = 0
            while not (jint[i, JI_IV] <= d < jint[i, JI_IV] + jint[i, JI_NV]):
                i += 1
            par, iv, nvi = jint[i, JI_PARENT], jint[i, JI_IV], jint[i, JI_NV]
            k = d - iv
            for a in range(6):  # w = U D⁻¹ e_k
                t = 0.0
                for l in range(nvi):
                    t += U[a, iv + l] * Dinv[i, l, k]
                w[a] = t
            t = Dinv[i, k, k]
            if par >= 0:
                t += _quad(Om, par, w[0], w[1], w[2], w[3], w[4], w[5])
            out[r] = t
        else:                   # link row
            t = 0.0
            if la[r] >= 0:
                t += _quad(Om, la[r], kA[r, 0], kA[r, 1], kA[r, 2], kA[r, 3], kA[r, 4], kA[r, 5])
            if lb[r] >= 0:
                t += _quad(Om, lb[r], kB[r, 0], kB[r, 1], kB[r, 2], kB[r, 3], kB[r, 4], kB[r, 5])
            out[r] = t

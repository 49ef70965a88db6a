"""Projected Gauss–Seidel on an explicit Delassus matrix: the second baseline solver.

Per block b, with σ = (G + R_c) λ + g the current constraint velocity:
- cone (Coulomb): λ_n ← max(0, λ_n − σ_n / G_nn); then with σ_t refreshed,
  λ_t ← clip of λ_t − σ_t / λ_max(G_tt) to the disk of radius μ λ_n;
- free rows: λ_b ← λ_b − G_bb⁻¹ σ_b; orthant: λ ← max(0, λ − σ/G_rr); box: clip to [−f, f].
Sweeps until the largest change of λ is below tol (scaled by ‖λ‖∞) or max_iter.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from .cones import BOX, CONE, ORTHANT, ConeSet


@dataclass
class PGSResult:
    lam: np.ndarray
    iterations: int
    converged: bool
    max_change: float
    time: float


@njit(cache=True)
def pgs_kernel(G, g, kind, start, size, param, lam, max_iter, tol, over_relax):
    """In-place PGS sweeps on λ; returns (iterations, last max change)."""
    m = g.shape[0]
    sigma = G @ lam + g
    change = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        change, scale = 0.0, 1e-300
        for b in range(kind.shape[0]):
            s, k, nb = start[b], kind[b], size[b]
            if k == CONE:
                n = s + 2
                old_n = lam[n]
                new_n = max(0.0, old_n - over_relax * sigma[n] / G[n, n])
                d = new_n - old_n
                if d != 0.0:
                    lam[n] = new_n
                    for r in range(m):
                        sigma[r] += G[r, n] * d
                # scalar step 1/λ_max(G_tt): the fixed point has λ_t anti-parallel to σ_t in the
                # Euclidean sense (Coulomb's maximal dissipation); a G_tt⁻¹ step would not
                a, bb, c = G[s, s], G[s, s + 1], G[s + 1, s + 1]
                lmax = 0.5 * (a + c) + np.sqrt(0.25 * (a - c) ** 2 + bb * bb)
                t1 = lam[s] - over_relax * sigma[s] / lmax
                t2 = lam[s + 1] - over_relax * sigma[s + 1] / lmax
                rad = param[b] * lam[n]
                nt = np.sqrt(t1 * t1 + t2 * t2)
                if nt > rad:
                    f = rad / nt if nt > 0 else 0.0
                    t1 *= f
                    t2 *= f
                d1, d2 = t1 - lam[s], t2 - lam[s + 1]
                lam[s], lam[s + 1] = t1, t2
                for r in range(m):
                    sigma[r] += G[r, s] * d1 + G[r, s + 1] * d2
                change = max(change, abs(d), abs(d1), abs(d2))
            else:
                for r0 in range(s, s + nb):
                    old = lam[r0]
                    new = old - over_relax * sigma[r0] / G[r0, r0]
                    if k == ORTHANT:
                        new = max(new, 0.0)
                    elif k == BOX:
                        new = min(max(new, -param[b]), param[b])
                    d = new - old
                    if d != 0.0:
                        lam[r0] = new
                        for r in range(m):
                            sigma[r] += G[r, r0] * d
                    change = max(change, abs(d))
        for r in range(m):
            scale = max(scale, abs(lam[r]))
        if change <= tol * max(scale, 1.0):
            break
    return it, change


def explicit_matrix(matvec, m):
    """G (m, m) of a linear operator from its m products with the unit vectors."""
    return np.column_stack([matvec(e) for e in np.eye(m)]) if m else np.zeros((0, 0))


class PGSSolver:
    """``solve(G, g, cones, compliance=None, x0=None)`` on an explicit G (m, m), or
    ``solve(problem)`` on a step's problem (an object with op, g, cones, compliance, x0, such as
    `simstep.problem.ContactProblem`; G is formed from its operator)."""

    def __init__(self, max_iter=1000, tol=1e-10, over_relax=1.0):
        if not (max_iter >= 1 and tol > 0 and 0 < over_relax < 2):
            raise ValueError("PGS needs max_iter ≥ 1, tol > 0 and 0 < over_relax < 2")
        self.max_iter, self.tol, self.over_relax = int(max_iter), float(tol), float(over_relax)

    def solve(self, G, g=None, cones: ConeSet = None, compliance=None, x0=None):
        if g is None and cones is None:          # a step's problem
            p = G
            G = p.op.matrix() if hasattr(p.op, "matrix") else explicit_matrix(p.op.matvec, p.cones.m)
            return self.solve(G, p.g, p.cones, compliance=p.compliance, x0=p.x0)
        t0 = time.perf_counter()
        G = np.array(G, dtype=float)
        g = np.asarray(g, dtype=float)
        if compliance is not None:
            G[np.diag_indices_from(G)] += compliance
        lam = np.zeros(g.shape[0]) if x0 is None else cones.project(x0)
        kind, start, size, param = cones.arrays()
        it, change = pgs_kernel(G, g, kind, start, size, param, lam, self.max_iter, self.tol, self.over_relax)
        converged = change <= self.tol * max(np.abs(lam).max(initial=0.0), 1.0)
        return PGSResult(lam, it, bool(converged), float(change), time.perf_counter() - t0)


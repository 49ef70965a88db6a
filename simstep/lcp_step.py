"""`Simulator(world, contact_model="lcp")`: one step's contact solve with paper 004's model.

The simulator builds the constraint rows, the Delassus operator and the rows' velocities
u = J v_f + targets as for the ADMM (speculative distance, Baumgarte push-out, loop-closure
drift; no Newton restitution targets). This module then

  1. assembles Λ = J M⁻¹ Jᵀ from the operator's products (`solvers.polyhedral.delassus_matrix`);
  2. impacts (paper 004 Sec. 7): contacts that touch or close within the step
     (φ ≤ max(−v_n⁻, 0) dt, φ the distance with the slop band removed) while approaching
     faster than `restitution_threshold` with ε > 0 start an impact event: the compression
     and decompression LCPs over all those touching contacts at once (simultaneous impacts),
     from the velocities J v⁻ at the step's start; the impact impulse λ_imp shifts the
     step's velocities, u ← u + Λ λ_imp;
  3. the step's OS LCP (Eq. 53) with the polyhedral friction of n_f directions;

and returns λ = λ_imp + λ_step, which the simulator applies as v⁺ = v_f + M⁻¹ Jᵀ λ.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from solvers.polyhedral import delassus_matrix, friction_directions, impact_impulses, solve_os_lcp


class LCPStepInfo(NamedTuple):
    """The last step's LCPs: lcp_size (unknowns of the step's Eq. 53 LCP, independent bilateral
    rows only), pivots (all LCPs),
    rank (independent bilateral rows), impacts (contacts in an impact event), impact_lcp_size."""
    lcp_size: int = 0
    pivots: int = 0
    rank: int = 0
    impacts: int = 0
    impact_lcp_size: int = 0


class LCPContactModel:
    """Paper 004's contact model for a `Simulator` (module docstring); n_f friction directions
    (even, ≥ 4; default 4 as in the paper's Table 2). `last`: the last step's `LCPStepInfo`
    (zeros after a step without constraint rows)."""

    def __init__(self, sim, n_f=4):
        friction_directions(4 if n_f is None else n_f)           # checks n_f
        if sim.assembler.fric_dofs.size:
            raise ValueError("contact_model='lcp' does not model joint dry friction (the model has joint friction "
                             "on dofs " + str(sim.assembler.fric_dofs.tolist()) + "); use contact_model='ncp'")
        self.sim, self.n_f = sim, 4 if n_f is None else int(n_f)
        self._last, self._step = LCPStepInfo(), -1

    @property
    def last(self):
        return self._last if self._step == self.sim.steps - 1 else LCPStepInfo()

    def solve(self, op, g, cones, c, k, compliance):
        """Impulses λ (m,) of one step for the operator `op`, free velocities g (m,) with targets,
        `cones` (the rows' blocks), the detected contacts c (k of them), compliance (m,) or None."""
        sim = self.sim
        G = delassus_matrix(op)
        if compliance is not None:
            G[np.diag_indices_from(G)] += compliance
        blocks = cones.arrays()
        lam_imp, pivots, nimp, imp_size = None, 0, 0, 0
        if k and sim._any_restitution and c.restitution.any():
            from .problem import dead_band
            u_pre = op.J_apply(sim.v)
            vn = u_pre[2:3 * k:3]
            phi = np.array([dead_band(x, sim.contact_slop) for x in c.distance])
            touching = phi <= np.maximum(-vn, 0.0) * sim.dt + 1e-12
            impact = touching & (vn < -sim.restitution_threshold) & (c.restitution > 0)
            if impact.any():
                r = impact_impulses(G, u_pre, blocks, c.restitution, touching, self.n_f)
                lam_imp, pivots, nimp, imp_size = r.lam, r.pivots, int(touching.sum()), r.lcp_size
                g = g + G @ lam_imp
        s = solve_os_lcp(G, g, blocks, self.n_f)
        self._last, self._step = LCPStepInfo(s.lcp_size, pivots + s.pivots, s.rank, nimp, imp_size), sim.steps
        return s.lam if lam_imp is None else s.lam + lam_imp


def lcp_size(nb, ncontacts, n_f=4):
    """Unknowns of paper 004's OS LCP (Table 1): n_b + n_u (n_f + 2)."""
    return nb + ncontacts * (n_f + 2)


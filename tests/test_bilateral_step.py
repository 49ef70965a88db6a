"""`Simulator(bilateral="auto")`: steps whose rows are all loop closures go through
`simstep.bilateral_step` (constrainedABA / proxPV); checked per step against a dense oracle of
the same velocity-level problem and, over a short non-chaotic run, against the ADMM path.

Oracle per step: with the step's free velocity v_f and row corrections corr (from the
simulator's problem assembly), v⁺ = v_f + M⁻¹Jᵀ G⁺ (−J v_f − corr) with J from `models.body_jacobian`
(`test_delassus.oracle_J`), M from `models.crba`: the M-metric projection onto J v⁺ = −corr."""
import numpy as np
import pytest

import models
import scenes
import simstep
from bench.bench_closure import passive_four_bar
from simstep.bilateral_step import BilateralStep
from test_delassus import oracle_J

SCENES = {"passive_four_bar": passive_four_bar, "four_bar": scenes.four_bar, "slider_crank": scenes.slider_crank,
          "pendulum_maximal_3": lambda: scenes.pendulum_benchmark(3, "maximal")}


class Recorder(BilateralStep):
    """The bilateral step, keeping each step's inputs (the row corrections as the simulator's
    problem assembly computed them) and its v⁺ for the oracle."""
    def solve(self, q, v_free, cs, corr, st):
        dv, lam = super().solve(q, v_free, cs, corr, st)
        self.seen.append((q.copy(), v_free.copy(), corr.copy(), v_free + dv, list(cs.constraints)))
        return dv, lam


@pytest.mark.parametrize("name", sorted(SCENES))
def test_each_step_matches_the_dense_projection(name):
    sim = simstep.Simulator(SCENES[name]())
    sim.bilateral = rec = Recorder(sim)
    rec.seen = []
    sim.run(steps=30)
    assert len(rec.seen) == 30             # every step took the bilateral path (no contacts, no limits)
    for q, v_free, corr, v_next, cons in rec.seen[::7]:
        J = oracle_J(sim.model, q, cons)
        X = np.linalg.solve(models.crba(sim.model, q), J.T)
        ref = v_free + X @ np.linalg.lstsq(J @ X, -(J @ v_free + corr), rcond=1e-12)[0]
        assert np.max(np.abs(v_next - ref)) <= 1e-9 * max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("name", ["passive_four_bar", "slider_crank"])
def test_trajectory_agrees_with_the_admm_path(name):
    """0.2 s of a non-chaotic mechanism: the two paths differ by the ADMM's tolerance only."""
    world = SCENES[name]()
    a = simstep.Simulator(world, bilateral="auto")
    b = simstep.Simulator(world, bilateral="solver", eps_abs=1e-10, eps_rel=0.0)
    ta, tb = a.run(steps=200, record=True), b.run(steps=200, record=True)
    assert a.bilateral is not None and a.bilateral._cd is not None and b.bilateral is None
    assert np.max(np.abs(ta.q - tb.q)) < 1e-7 and np.max(np.abs(ta.v - tb.v)) < 1e-6


def test_large_coupled_sets_and_options_keep_the_solver():
    w = scenes.pendulum_benchmark(12, "maximal")          # 72 rows between moving bodies
    sim = simstep.Simulator(w)
    sim.step()
    assert sim.bilateral._cd is None                        # past PROXPV_MAX_ROWS: the ADMM kept the step
    assert simstep.Simulator(w, contact_model="lcp").bilateral is None
    with pytest.raises(ValueError, match="bilateral"):
        simstep.Simulator(w, bilateral="caba")

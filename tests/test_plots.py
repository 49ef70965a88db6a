"""simstep.plots: the sampled quantities against closed forms."""
import numpy as np
import pytest

import simstep
from simstep import plots


def box_world(z=1.0, ground=True):
    b = simstep.WorldBuilder()
    if ground:
        b.add_ground()
    b.add_box("box", half_extents=(0.1, 0.2, 0.05), mass=2.0, position=(0.3, 0, z))
    return b.build()


def test_energy_and_height_of_a_falling_box():
    w = box_world(ground=False)
    sim = simstep.Simulator(w, dt=1e-3)
    v0 = np.array([0.5, -0.2, 1.0, 0.3, -0.4, 0.7])              # body-frame [v, ω]
    sim.set_state(w.q0, v0)
    I = np.diag(2.0 / 12 * np.array([0.4 ** 2 + 0.1 ** 2, 0.2 ** 2 + 0.1 ** 2, 0.2 ** 2 + 0.4 ** 2]))
    E0 = 0.5 * 2.0 * v0[:3] @ v0[:3] + 0.5 * v0[3:] @ I @ v0[3:] + 2.0 * 9.81 * 1.0
    assert plots.energy(sim, w) == pytest.approx(E0, rel=1e-12)
    assert plots.base_height(sim, w) == 1.0
    sim.run(steps=10)
    assert plots.base_height(sim, w) == pytest.approx(sim.body_pose("box")[0][2], abs=0)


def test_contact_force_of_a_resting_box_is_its_weight():
    w = box_world(z=0.05)
    sim = simstep.Simulator(w, dt=1e-3)
    sim.run(steps=20)
    assert plots.contact_force(sim, w) == pytest.approx(2.0 * 9.81, rel=1e-6)


def test_tracking_error_is_the_rms_of_target_minus_position():
    import scenes
    w = scenes.pendulum_benchmark(n_links=3)
    sim = simstep.Simulator(w)
    j = w.model.joint_names
    targets = {j[0]: 0.3, j[1]: -0.2}
    sim.set_targets(targets, kp=5.0, kd=0.1)
    sim.run(steps=5)
    e = np.array([0.3, -0.2]) - sim.joint_positions(j[:2])
    assert plots.tracking_error(sim, w) == pytest.approx(np.sqrt(np.mean(e ** 2)), rel=1e-12)


def test_scenes_declare_known_quantities_and_unknown_are_refused():
    w = box_world()
    assert plots.scene_plots(w) == plots.DEFAULT_PLOTS
    w.plots = ("energy", "temperature")
    with pytest.raises(ValueError, match="temperature.*known: base_height"):
        plots.scene_plots(w)


def test_plot_run_writes_a_png(tmp_path):
    w = box_world(z=0.2)
    sim = simstep.Simulator(w, dt=1e-3)
    s = plots.Sampler(w, ("energy", "contact_force", "base_height"))
    for _ in range(5):
        sim.step()
        s.sample(sim)
    t = np.arange(1, 6) * 1e-3
    plots.plot_run(tmp_path / "r.png", "box", t, np.ones(5), np.zeros(5), np.zeros(5), max_iter=1000, samples=s)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

"""Physical quantities sampled during a run, and the run's figure (`python -m simstep run --plot`).

A scene declares what is worth plotting as ``world.plots`` (names of `QUANTITIES`); scenes
that declare nothing get `DEFAULT_PLOTS`. `Sampler` records the quantities after every step;
`plot_run` draws them under the solver's panels (iterations with the iteration cap marked,
contacts, penetration), every axis in its unit.
"""
from __future__ import annotations

import numpy as np

import models


def _free_roots(model):
    """Bodies on free joints whose parent is the world (robot bases, free objects)."""
    return [b for b in range(model.nbodies) if model.parent[b] == -1 and model.jtype[b] == models.FREE]


def base_height(sim, world):
    """Height (m) of the first free root body's frame origin (a robot's base)."""
    roots = _free_roots(sim.model)
    if not roots:
        return np.nan
    return float(sim.q[sim.model.idx_q[roots[0]] + 2])


def _pd_of(sim, world):
    """The joint PD acting on the simulation: `Simulator.set_targets`' or the scene's."""
    for pd in (getattr(sim, "_pd", None), getattr(world, "pd", None), getattr(world, "actuation", None)):
        if pd is not None and hasattr(pd, "iq") and callable(getattr(pd, "target", None)):
            return pd
    return None


def tracking_error(sim, world):
    """RMS over the PD-controlled joints of target − position (rad, m for prismatic joints)."""
    pd = _pd_of(sim, world)
    if pd is None or not len(pd.iq):
        return np.nan
    e = np.asarray(pd.target(sim.t), float) - sim.q[pd.iq]
    return float(np.sqrt(np.mean(e * e)))


def energy(sim, world):
    """Mechanical energy (J): kinetic ½ vᵀ M(q) v plus gravitational −Σ mᵢ g·cᵢ (cᵢ: the
    body's centre of mass in the world)."""
    m = sim.model
    if m.nv == 0:
        return 0.0
    kinetic = 0.5 * sim.v @ models.crba(m, sim.q) @ sim.v
    oR, op = models.forward_kinematics(m, sim.q)
    c = op + np.einsum("bij,bj->bi", oR, m.com)
    return float(kinetic - np.sum(m.mass * (c @ m.gravity)))


def contact_force(sim, world):
    """Magnitude (N) of the sum of the contact forces on the bodies over the last step."""
    f = sim.contacts.world_force
    return float(np.linalg.norm(f.sum(0))) if len(f) else 0.0


# name: (label, unit, function(sim, world) -> float)
QUANTITIES = {
    "base_height": ("base height", "m", base_height),
    "tracking_error": ("joint tracking error (RMS)", "rad", tracking_error),
    "energy": ("mechanical energy", "J", energy),
    "contact_force": ("total contact force", "N", contact_force),
}
DEFAULT_PLOTS = ("energy", "contact_force")


def scene_plots(world):
    """The quantities `world` declares (``world.plots``), else `DEFAULT_PLOTS`; unknown names
    raise ValueError naming the known ones."""
    names = tuple(getattr(world, "plots", None) or DEFAULT_PLOTS)
    bad = [n for n in names if n not in QUANTITIES]
    if bad:
        raise ValueError(f"unknown plot quantities {bad}; known: {', '.join(QUANTITIES)}")
    return names


class Sampler:
    """Samples `names` (default: the scene's) after each step: ``sample(sim)``; ``values``
    maps each name to its list of samples."""

    def __init__(self, world, names=None):
        self.world = world
        self.names = scene_plots(world) if names is None else tuple(names)
        self.values = {n: [] for n in self.names}

    def sample(self, sim):
        for n in self.names:
            self.values[n].append(QUANTITIES[n][2](sim, self.world))


def plot_run(path, title, t, iterations, contacts, penetration, max_iter=None, samples=None):
    """PNG of a run: ADMM iterations per step (the cap `max_iter` dashed), contacts, max
    penetration (mm), then one panel per sampled quantity with its unit; t in s."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    extra = [(n, v) for n, v in (samples.values.items() if samples is not None else ())
             if len(v) and np.any(np.isfinite(v))]
    rows = 3 + len(extra)
    fig, ax = plt.subplots(rows, 1, figsize=(8, 1.9 * rows + 1.2), sharex=True)
    ax[0].plot(t, iterations, lw=0.8)
    if max_iter is not None:
        ax[0].axhline(max_iter, color="red", ls="--", lw=0.8, label=f"iteration cap ({max_iter})")
        ax[0].legend(loc="upper right", fontsize=8)
    ax[0].set_ylabel("ADMM iterations")
    ax[0].set_title(title)
    ax[1].plot(t, contacts, lw=0.8)
    ax[1].set_ylabel("contacts")
    ax[2].plot(t, np.asarray(penetration) * 1e3, lw=0.8)
    ax[2].set_ylabel("max penetration (mm)")
    for a, (name, vals) in zip(ax[3:], extra):
        label, unit, _ = QUANTITIES[name]
        a.plot(t[:len(vals)], vals, lw=0.8, color="C2")
        a.set_ylabel(f"{label} ({unit})", fontsize=8)
    ax[-1].set_xlabel("t (s)")
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

"""Seeded fuzzing of the step on random worlds of primitives (issue 11): boxes, spheres,
capsules and cylinders on the ground, masses 0.01–100 kg, speeds up to 20 m/s and 50 rad/s,
initial overlaps, dt 1e-4 to 1e-2. Every world is deterministic (its seed). Checked every step:

* the step returns or raises `SimulationError`, nothing else; after a `SimulationError` the
  whole state is bit-identical;
* q and v finite;
* no energy gain beyond what the bounded push-out explains. Kinetic plus potential energy may
  rise by at most Σᵢ [½ mᵢ (2 v_b)² + mᵢ g (dᵢ + margin)] (+1e-9 relative): a penetration is
  corrected at a contact velocity of at most v_b (`max_depenetration_velocity`), a body pushed
  by a neighbour that is itself being pushed moves at most 2 v_b relative to the ground, and it
  is lifted by at most its initial depth dᵢ plus the margin;
* nothing below the ground: a body's lowest point is at most dᵢ + s·dt + margin + 5 mm deep,
  s the largest point speed seen (discrete detection: a point farther than the margin is not
  yet a contact and may travel s·dt into the ground in the step it arrives; afterwards it does
  not go deeper, so nothing passes through).

The quick profile (default run) covers a few tens of worlds; the long one (300) is `slow`.
"""
import numpy as np
import pytest

import simstep
from simstep import SimulationError

G = 9.81
KINDS = ("box", "sphere", "capsule", "cylinder")


def random_world(seed):
    """(World, dt, info) with info = (names, kinds, sizes, initial depths)."""
    rng = np.random.default_rng(seed)
    b = simstep.WorldBuilder(gravity=(0, 0, -G))
    b.add_ground(friction=rng.uniform(0.1, 1.0), restitution=rng.choice([0.0, 0.0, 0.5]))
    n = int(rng.integers(1, 6))
    names, kinds, sizes = [], [], []
    for i in range(n):
        kind = KINDS[rng.integers(4)]
        r = rng.uniform(0.02, 0.3)
        size = {"box": rng.uniform(0.01, 0.3, 3), "sphere": np.array([r]),
                "capsule": np.array([r, rng.uniform(0.02, 0.6)]), "cylinder": np.array([r, rng.uniform(0.02, 0.6)])}[kind]
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        # centres close together and near the ground: about half the worlds start overlapping
        pos = (rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(0.0, 0.8))
        lin = rng.normal(size=3)
        ang = rng.normal(size=3)
        vel = np.concatenate([lin / np.linalg.norm(lin) * rng.uniform(0, 20),
                              ang / np.linalg.norm(ang) * rng.uniform(0, 50)])
        mass = 10 ** rng.uniform(-2, 2)
        common = dict(mass=mass, position=pos, quaternion=tuple(quat), velocity=tuple(vel),
                      friction=rng.uniform(0.1, 1.0))
        name = f"{kind}{i}"
        if kind == "box":
            b.add_box(name, half_extents=tuple(size), **common)
        elif kind == "sphere":
            b.add_sphere(name, radius=size[0], **common)
        elif kind == "capsule":
            b.add_capsule(name, radius=size[0], length=size[1], **common)
        else:
            b.add_cylinder(name, radius=size[0], length=size[1], **common)
        names.append(name)
        kinds.append(kind)
        sizes.append(size)
    dt = 10 ** rng.uniform(-4, -2)
    return b.build(), dt, (names, kinds, sizes)


def lowest_point(kind, size, R, p):
    """World z of the lowest point of a primitive at (R, p); capsule/cylinder axes along local z
    with `size` = (radius, length)."""
    if kind == "box":
        return p[2] - np.abs(R[2]) @ size
    if kind == "sphere":
        return p[2] - size[0]
    a = abs(R[2, 2])
    if kind == "capsule":
        return p[2] - a * size[1] / 2 - size[0]
    return p[2] - a * size[1] / 2 - size[0] * np.sqrt(max(0.0, 1 - a * a))


def bounding_radius(kind, size):
    if kind == "box":
        return np.linalg.norm(size)
    if kind == "sphere":
        return size[0]
    return size[0] + size[1] / 2


def energy_terms(sim):
    """(kinetic + potential energy, per body lowest z, max point speed)."""
    m = sim.model
    E, low, speed = 0.0, [], 0.0
    for i, (kind, size) in enumerate(zip(*sim._fuzz_info[1:])):
        R, p = sim.data.oR[i], sim.data.op[i]
        iv = m.idx_v[i]
        v, w = sim.v[iv:iv + 3], sim.v[iv + 3:iv + 6]
        E += 0.5 * m.mass[i] * (v @ v) + 0.5 * w @ m.inertia[i] @ w + m.mass[i] * G * p[2]
        low.append(lowest_point(kind, size, R, p))
        speed = max(speed, np.linalg.norm(v) + np.linalg.norm(w) * bounding_radius(kind, size))
    return E, np.array(low), speed


def snapshot(sim):
    c = sim.contacts
    return [sim.q.copy(), sim.v.copy(), sim.t, sim.steps, sim._fext.copy(), sim.assembler.warm.keys.copy(),
            sim.assembler.warm.lam.copy(), sim.data.oR.copy(), sim.data.IA.copy(), c.position.copy(), c.impulse.copy(),
            dict(sim.stats.as_dict())]


def same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            if not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def run_world(seed, steps):
    """Simulate one random world; returns a list of failure messages (empty: passed) and
    the counters (SimulationErrors, capped ADMM steps, worst energy ratio)."""
    world, dt, info = random_world(seed)
    try:
        sim = simstep.Simulator(world, dt=dt)
    except SimulationError:
        return [], dict(errors=1, capped=0, ratio=0.0)
    sim._fuzz_info = info
    vb, margin = sim.max_depenetration_velocity, sim.margin
    masses = sim.model.mass
    E0, low0, s = energy_terms(sim)
    d0 = np.maximum(-low0, 0.0)
    allowance = np.sum(0.5 * masses * (2 * vb) ** 2 + masses * G * (d0 + margin))
    fails, counters = [], dict(errors=0, capped=0, ratio=0.0)
    for k in range(steps):
        before = snapshot(sim)
        try:
            st = sim.step()
        except SimulationError:
            counters["errors"] += 1
            if not same(before, snapshot(sim)):
                fails.append(f"seed {seed} step {k}: state changed by a failed step")
            break
        except Exception as e:      # noqa: BLE001 - the point of the test
            fails.append(f"seed {seed} step {k}: {type(e).__name__}: {e}")
            break
        counters["capped"] += not st.converged
        if not (np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))):
            fails.append(f"seed {seed} step {k}: non-finite state")
            break
        E, low, s_now = energy_terms(sim)
        s = max(s, s_now)
        counters["ratio"] = max(counters["ratio"], (E - E0) / allowance)
        if E > E0 + allowance + 1e-9 * abs(E0):
            fails.append(f"seed {seed} step {k}: energy {E:.6g} J > {E0:.6g} J + allowance {allowance:.3g} J")
            break
        if np.any(low < -(d0 + s * dt + margin + 5e-3)):
            fails.append(f"seed {seed} step {k}: below the ground (lowest point {low.min():.4g} m)")
            break
    return fails, counters


def fuzz(seeds, steps):
    fails, errors, capped = [], 0, 0
    for seed in seeds:
        f, c = run_world(seed, steps)
        fails += f
        errors += c["errors"]
        capped += c["capped"]
    assert not fails, "\n".join(fails)


def test_fuzz_quick():
    fuzz(range(60), steps=150)


@pytest.mark.slow
def test_fuzz_long():
    fuzz(range(1000, 1300), steps=400)

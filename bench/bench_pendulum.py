"""Paper 004 Sec. 8: the multi-link pendulum in minimal vs maximal coordinates (Table 2, Fig. 6).

For n = 3, 6, 12, 15, 24, 30 links, simulates `scenes.pendulum_benchmark(n, formulation)` for
both formulations in the same run (dt = 0.1 ms, the paper's scene) and reports the size of the
constraint problem (rows per step: 3 per contact, plus 6 per hinge in maximal coordinates; the
paper's LCP counts 24 for 4 contacts with 4 friction directions, plus 5 per hinge), the wall
time per simulated second of each formulation, and the speedup of minimal over maximal, beside
the paper's Table 2. Fig. 6: the height and vertical (floor-normal) velocity of the last
link's centre over time for the 12-link pendulum in both formulations, with their maximum
deviation; the maximal formulation's largest hinge closure error is reported too.

Writes bench/results/bench_pendulum.json and bench_pendulum.png.

    python bench/bench_pendulum.py [--duration 2.0] [--links 3 6 12 15 24 30] [--erp 1.0]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scenes  # noqa: E402
import simstep  # noqa: E402

# paper 004, Table 2: links -> (LCP size OS, NMC/OS, NMC; time OS, NMC/OS (s); speedup)
PAPER = {3: (24, 39, 57, 13.33, 47.79, 3.6), 6: (24, 54, 90, 10.50, 68.71, 6.5),
         12: (24, 84, 156, 19.06, 305.28, 16.1), 15: (24, 99, 189, 21.76, 558.10, 25.6),
         24: (24, 144, 288, 38.20, 1899.86, 49.7), 30: (24, 174, 354, 73.74, 4100.51, 55.6)}


def simulate(n, formulation, duration, erp, warmup_steps=20):
    """Run one formulation; returns a dict of series and statistics. The first
    `warmup_steps` (numba kernels loading, caches) run on a separate simulator and are
    not timed."""
    w = scenes.pendulum_benchmark(n, formulation)
    steps = int(round(duration / w.dt))
    warm = simstep.Simulator(w, dt=w.dt, erp=erp)
    warm.run(warmup_steps)
    sim = simstep.Simulator(w, dt=w.dt, erp=erp)
    t = np.empty(steps + 1)
    z = np.empty(steps + 1)
    vz = np.empty(steps + 1)
    rows = np.zeros(steps + 1, int)
    nc = np.zeros(steps + 1, int)
    its = np.zeros(steps + 1, int)
    conv = np.ones(steps + 1, bool)
    t[0] = 0.0
    z[0] = sim.body_pose(w.last_link)[0][2]
    vz[0] = sim.body_velocity(w.last_link)[0][2]
    loops = list(w.constraints)
    closure = 0.0
    t_loop_check = 0.0
    wall = 0.0
    for k in range(1, steps + 1):
        t0 = time.perf_counter()
        st = sim.step()
        wall += time.perf_counter() - t0
        t[k] = sim.t
        z[k] = sim.body_pose(w.last_link)[0][2]
        vz[k] = sim.body_velocity(w.last_link)[0][2]
        rows[k], nc[k], its[k], conv[k] = st.nrows, st.ncontacts, st.iterations, st.converged
        if loops:
            t1 = time.perf_counter()
            e = max(float(np.linalg.norm(sim._loop_errors(c))) for c in loops)
            closure = max(closure, e)
            t_loop_check += time.perf_counter() - t1
    return dict(links=n, formulation=formulation, nv=w.model.nv, steps=steps, dt=w.dt, t=t, z=z, vz=vz,
                rows_mean=float(rows[1:].mean()), rows_max=int(rows.max()), contacts_max=int(nc.max()),
                iterations_mean=float(its[1:].mean()), iterations_max=int(its.max()),
                not_converged=int((~conv).sum()), wall=wall, wall_per_sim_second=wall / duration,
                closure_max=closure)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds per run (default 2)")
    ap.add_argument("--links", type=int, nargs="+", default=[3, 6, 12, 15, 24, 30])
    ap.add_argument("--fig-links", type=int, default=12, help="pendulum of the Fig. 6 comparison")
    ap.add_argument("--erp", type=float, default=1.0,
                    help="Baumgarte factor for hinge drift and penetration (default 1: full correction per step)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    a = ap.parse_args()
    if a.duration <= 0 or any(n < 2 for n in a.links):
        ap.error("duration must be positive and every pendulum needs at least 2 links")
    links = sorted(set(a.links) | {a.fig_links})
    results = {}
    hdr = (f"{'links':>5s} | {'nv min/max':>10s} | {'rows mean/max min':>17s} {'rows mean/max max':>17s} | "
           f"{'paper OS NMC/OS':>15s} | {'s/sim-s min':>11s} {'s/sim-s max':>11s} {'speedup':>7s} | "
           f"{'paper min':>9s} {'paper max':>9s} {'paper spd':>9s} | {'iters min/max':>13s} {'closure':>8s}")
    print(f"pendulum benchmark, {a.duration:g} s simulated per run, dt = 0.1 ms, erp = {a.erp:g}")
    print(hdr)
    print("-" * len(hdr))
    for n in links:
        r = {f: simulate(n, f, a.duration, a.erp) for f in ("minimal", "maximal")}
        results[n] = r
        mi, ma = r["minimal"], r["maximal"]
        sp = ma["wall"] / mi["wall"]
        p = PAPER.get(n)
        ps = (f"{p[0]:>6d} {p[1]:>8d}" if p else f"{'-':>15s}")
        pt = (f"{p[3]:>9.2f} {p[4]:>9.2f} {p[5]:>9.1f}" if p else f"{'-':>9s} {'-':>9s} {'-':>9s}")
        print(f"{n:>5d} | {mi['nv']:>4d}/{ma['nv']:<5d} | {mi['rows_mean']:>8.1f}/{mi['rows_max']:<8d} "
              f"{ma['rows_mean']:>8.1f}/{ma['rows_max']:<8d} | {ps} | {mi['wall_per_sim_second']:>11.2f} "
              f"{ma['wall_per_sim_second']:>11.2f} {sp:>7.2f} | {pt} | "
              f"{mi['iterations_mean']:>5.1f}/{ma['iterations_mean']:<7.1f} {ma['closure_max']:>8.1e}", flush=True)
    # Fig. 6
    f = results[a.fig_links]
    zmi, zma = f["minimal"]["z"], f["maximal"]["z"]
    vmi, vma = f["minimal"]["vz"], f["maximal"]["vz"]
    t = f["minimal"]["t"]
    dz = np.abs(zmi - zma)
    dv = np.abs(vmi - vma)
    first = t <= 1.0 + 1e-12
    print(f"\nFig. 6 ({a.fig_links} links): last link height, max |minimal - maximal| = {dz.max() * 100:.3f} cm "
          f"(first second: {dz[first].max() * 100:.3f} cm, at t = {t[np.argmax(dz)]:.4f} s); "
          f"vertical velocity max deviation {dv.max():.3f} m/s; maximal closure error max "
          f"{f['maximal']['closure_max']:.2e} m")
    os.makedirs(a.out, exist_ok=True)
    table = []
    for n in links:
        mi, ma = results[n]["minimal"], results[n]["maximal"]
        row = {k: {kk: vv for kk, vv in res.items() if kk not in ("t", "z", "vz")} for k, res in
               (("minimal", mi), ("maximal", ma))}
        row["links"] = n
        row["speedup"] = ma["wall"] / mi["wall"]
        if n in PAPER:
            p = PAPER[n]
            row["paper"] = dict(lcp_os=p[0], lcp_nmc_os=p[1], lcp_nmc=p[2], time_os=p[3], time_nmc_os=p[4],
                                speedup=p[5])
        table.append(row)
    stride = max(1, len(t) // 4000)
    out = dict(duration=a.duration, dt=1e-4, erp=a.erp, machine=platform.platform(), python=platform.python_version(),
               table=table,
               fig6=dict(links=a.fig_links, t=t[::stride].tolist(), z_minimal=zmi[::stride].tolist(),
                         z_maximal=zma[::stride].tolist(), vz_minimal=vmi[::stride].tolist(),
                         vz_maximal=vma[::stride].tolist(), max_height_deviation=float(dz.max()),
                         max_height_deviation_first_second=float(dz[first].max()),
                         max_velocity_deviation=float(dv.max()),
                         closure_max=f["maximal"]["closure_max"]))
    path = os.path.join(a.out, "bench_pendulum.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {path}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(3, 1, figsize=(8, 9), sharex=False)
    ax[0].plot(t, zmi, "r-", lw=1.2, label="minimal (OS)")
    ax[0].plot(t, zma, "b--", lw=1.0, label="maximal (NMC/OS)")
    ax[0].set_ylabel("last link height (m)")
    ax[0].set_title(f"paper 004 Fig. 6: {a.fig_links}-link pendulum, max height deviation {dz.max() * 100:.2f} cm")
    ax[0].legend()
    ax[1].plot(t, vmi, "r-", lw=1.2, label="minimal")
    ax[1].plot(t, vma, "b--", lw=1.0, label="maximal")
    ax[1].set_ylabel("last link normal velocity (m/s)")
    ax[1].set_xlabel("t (s)")
    ns = np.array(links)
    ax[2].loglog(ns, [results[n]["minimal"]["wall_per_sim_second"] for n in links], "ro-", label="ours minimal")
    ax[2].loglog(ns, [results[n]["maximal"]["wall_per_sim_second"] for n in links], "bo-", label="ours maximal")
    pn = [n for n in links if n in PAPER]
    ax[2].loglog(pn, [PAPER[n][3] for n in pn], "r^:", label="paper OS (s, run length unstated)")
    ax[2].loglog(pn, [PAPER[n][4] for n in pn], "b^:", label="paper NMC/OS")
    ax[2].set_xlabel("links")
    ax[2].set_ylabel("wall time (s per simulated s)")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    png = os.path.join(a.out, "bench_pendulum.png")
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()

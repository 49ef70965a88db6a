"""Paper 004 Sec. 8: the multi-link pendulum, OS vs NMC/OS, LCP model vs ADMM (Table 2, Fig. 6).

For n = 3, 6, 12, 15, 24, 30 links, simulates `scenes.pendulum_benchmark(n, formulation)` in
minimal coordinates (the paper's OS formulation) and maximal coordinates (NMC/OS: free spheres,
hinges as bilateral rows), each with paper 004's contact model (`contact_model="lcp"`: friction
polyhedra n_f = 4, the OS mixed LCP by Lemke's method, compression/decompression impacts) and
with the exact-cone ADMM (`contact_model="ncp"`), dt = 0.1 ms. The four simulators of one n
advance in alternating blocks of steps (timings under the same machine load). Reported: the
LCP size (unknowns n_b + n_u (n_f + 2); "at 4 contacts" is the paper's count with our
independent hinge rows n_b), the constraint rows of the ADMM, wall time per simulated second,
the speed-up NMC/OS ÷ OS of each model beside the paper's Table 2. Fig. 6: height and vertical
(floor-normal) velocity of the last link of the 12-link pendulum, OS vs NMC/OS, LCP vs ADMM.

Writes bench/results/bench_pendulum.json and bench_pendulum.png.

    python bench/bench_pendulum.py [--duration 2.0] [--links 3 6 12 15 24 30] [--erp 1.0] [--quick]
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


CONFIGS = (("minimal", "lcp"), ("maximal", "lcp"), ("minimal", "ncp"), ("maximal", "ncp"))
LABEL = {("minimal", "lcp"): "OS LCP", ("maximal", "lcp"): "NMC/OS LCP", ("minimal", "ncp"): "OS ADMM",
         ("maximal", "ncp"): "NMC/OS ADMM"}
N_F = 4


class Run:
    """One simulator of the benchmark with its series and counters."""

    def __init__(self, n, formulation, model, duration, erp, warmup_steps=20):
        w = scenes.pendulum_benchmark(n, formulation)
        self.w, self.formulation, self.model = w, formulation, model
        self.steps = int(round(duration / w.dt))
        warm = simstep.Simulator(w, dt=w.dt, erp=erp, contact_model=model)   # kernels loaded, not timed
        warm.run(warmup_steps)
        self.sim = simstep.Simulator(w, dt=w.dt, erp=erp, contact_model=model)
        k = self.steps + 1
        self.t, self.z, self.vz = np.zeros(k), np.zeros(k), np.zeros(k)
        self.z[0] = self.sim.body_pose(w.last_link)[0][2]
        self.vz[0] = self.sim.body_velocity(w.last_link)[0][2]
        self.rows, self.nc, self.its, self.lcp = (np.zeros(k, int) for _ in range(4))
        self.rank, self.conv, self.impacts = 0, np.ones(k, bool), 0
        self.done, self.wall, self.closure = 0, 0.0, 0.0

    def advance(self, nsteps):
        sim, w = self.sim, self.w
        for _ in range(min(nsteps, self.steps - self.done)):
            t0 = time.perf_counter()
            st = sim.step()
            self.wall += time.perf_counter() - t0
            k = self.done = self.done + 1
            self.t[k] = sim.t
            self.z[k] = sim.body_pose(w.last_link)[0][2]
            self.vz[k] = sim.body_velocity(w.last_link)[0][2]
            self.rows[k], self.nc[k], self.its[k], self.conv[k] = st.nrows, st.ncontacts, st.iterations, st.converged
            if sim.lcp is not None:
                info = sim.lcp.last
                self.lcp[k], self.impacts = info.lcp_size, self.impacts + (info.impacts > 0)
                self.rank = max(self.rank, info.rank)
            if k % 100 == 0 and w.constraints:        # hinge drift, sampled (not timed)
                self.closure = max(self.closure, max(float(np.linalg.norm(sim.loop_error(c)))
                                                     for c in w.constraints))

    def summary(self, duration):
        lcp = self.lcp[1:][self.lcp[1:] > 0]
        return dict(formulation=self.formulation, contact_model=self.model, nv=self.w.model.nv, steps=self.steps,
                    rows_mean=float(self.rows[1:].mean()), rows_max=int(self.rows.max()),
                    contacts_max=int(self.nc.max()), lcp_size_mean=float(lcp.mean()) if lcp.size else 0.0,
                    lcp_size_max=int(self.lcp.max()), lcp_size_4_contacts=(self.rank + 4 * (N_F + 2))
                    if self.model == "lcp" else None, bilateral_rank=self.rank, impact_steps=self.impacts,
                    iterations_mean=float(self.its[1:].mean()), not_converged=int((~self.conv).sum()),
                    wall=self.wall, wall_per_sim_second=self.wall / duration, closure_max=self.closure)


def simulate(n, duration, erp, block=500):
    """The four configurations of an n-link pendulum in alternating blocks of `block` steps."""
    runs = {cfg: Run(n, cfg[0], cfg[1], duration, erp) for cfg in CONFIGS}
    while any(r.done < r.steps for r in runs.values()):
        for r in runs.values():
            r.advance(block)
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=None, help="simulated seconds per run (default 2; quick 0.5)")
    ap.add_argument("--links", type=int, nargs="+", default=None, help="default 3 6 12 15 24 30 (quick: 3 6 12)")
    ap.add_argument("--fig-links", type=int, default=12, help="pendulum of the Fig. 6 comparison")
    ap.add_argument("--erp", type=float, default=1.0,
                    help="Baumgarte factor for hinge drift and penetration (default 1: full correction per step)")
    ap.add_argument("--quick", action="store_true", help="3, 6, 12 links for 0.5 s (about a minute)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    a = ap.parse_args()
    a.duration = a.duration or (0.5 if a.quick else 2.0)
    a.links = a.links or ([3, 6, 12] if a.quick else [3, 6, 12, 15, 24, 30])
    if a.duration <= 0 or any(n < 2 for n in a.links):
        ap.error("duration must be positive and every pendulum needs at least 2 links")
    links = sorted(set(a.links) | {a.fig_links})
    results = {}
    hdr = (f"{'links':>5s} | {'LCP size OS':>11s} {'NMC/OS':>13s} {'@4 contacts':>11s} {'paper':>8s} | "
           f"{'s/sim-s OS LCP':>14s} {'NMC/OS LCP':>10s} {'OS ADMM':>8s} {'NMC/OS ADMM':>11s} | "
           f"{'speed-up LCP':>12s} {'ADMM':>6s} {'paper':>6s} | {'impacts':>7s} {'closure':>8s}")
    print(f"pendulum benchmark, {a.duration:g} s simulated per run, dt = 0.1 ms, erp = {a.erp:g}, n_f = {N_F}; "
          f"LCP size: mean/max over steps with contacts")
    print(hdr)
    print("-" * len(hdr))
    for n in links:
        runs = simulate(n, a.duration, a.erp)
        r = {cfg: run.summary(a.duration) for cfg, run in runs.items()}
        results[n] = (runs, r)
        ol, ml, oa, ma = (r[c] for c in CONFIGS)
        sp_l, sp_a = ml["wall"] / ol["wall"], ma["wall"] / oa["wall"]
        p = PAPER.get(n)
        print(f"{n:>5d} | {ol['lcp_size_mean']:>5.1f}/{ol['lcp_size_max']:<5d} {ml['lcp_size_mean']:>6.1f}/"
              f"{ml['lcp_size_max']:<6d} {ol['lcp_size_4_contacts']:>4d}/{ml['lcp_size_4_contacts']:<6d} "
              f"{(f'{p[0]}/{p[1]}' if p else '-'):>8s} | {ol['wall_per_sim_second']:>14.2f} "
              f"{ml['wall_per_sim_second']:>10.2f} {oa['wall_per_sim_second']:>8.2f} {ma['wall_per_sim_second']:>11.2f}"
              f" | {sp_l:>12.2f} {sp_a:>6.2f} {(f'{p[5]:.1f}' if p else '-'):>6s} | "
              f"{ol['impact_steps']:>3d}/{ml['impact_steps']:<3d} {ml['closure_max']:>8.1e}", flush=True)
    # Fig. 6
    runs = results[a.fig_links][0]
    t = runs[CONFIGS[0]].t
    z = {LABEL[c]: runs[c].z for c in CONFIGS}
    vz = {LABEL[c]: runs[c].vz for c in CONFIGS}
    first = t <= 1.0 + 1e-12
    dev = {}
    for x, y in (("OS LCP", "NMC/OS LCP"), ("OS ADMM", "NMC/OS ADMM"), ("OS LCP", "OS ADMM")):
        d = np.abs(z[x] - z[y])
        dev[f"{x} vs {y}"] = dict(max_height_deviation=float(d.max()),
                                  max_height_deviation_first_second=float(d[first].max()))
        print(f"Fig. 6 ({a.fig_links} links), last link height |{x} − {y}|: max {d.max() * 100:.3f} cm, "
              f"first second {d[first].max() * 100:.3f} cm")
    os.makedirs(a.out, exist_ok=True)
    table = []
    for n in links:
        r = results[n][1]
        row = {LABEL[c]: r[c] for c in CONFIGS}
        row["links"] = n
        row["speedup_lcp"] = r[CONFIGS[1]]["wall"] / r[CONFIGS[0]]["wall"]
        row["speedup_admm"] = r[CONFIGS[3]]["wall"] / r[CONFIGS[2]]["wall"]
        if n in PAPER:
            p = PAPER[n]
            row["paper"] = dict(lcp_os=p[0], lcp_nmc_os=p[1], lcp_nmc=p[2], time_os=p[3], time_nmc_os=p[4],
                                speedup=p[5])
        table.append(row)
    stride = max(1, len(t) // 1000)       # ~1000 samples per curve keep the JSON small
    rnd = lambda a: np.round(a[::stride], 5).tolist()  # noqa: E731
    out = dict(duration=a.duration, dt=1e-4, erp=a.erp, n_f=N_F, machine=platform.platform(),
               python=platform.python_version(), command=" ".join(sys.argv), table=table,
               fig6=dict(links=a.fig_links, t=rnd(t), deviations=dev, z={k: rnd(v) for k, v in z.items()},
                         vz={k: rnd(v) for k, v in vz.items()}))
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
    style = {"OS LCP": "r-", "NMC/OS LCP": "b--", "OS ADMM": "m:", "NMC/OS ADMM": "c-."}
    fig, ax = plt.subplots(3, 1, figsize=(8, 10))
    for k in z:
        ax[0].plot(t, z[k], style[k], lw=1.0, label=k)
        ax[1].plot(t, vz[k], style[k], lw=1.0, label=k)
    ax[0].set_ylabel("last link height (m)")
    ax[0].set_title(f"paper 004 Fig. 6: {a.fig_links}-link pendulum, OS vs NMC/OS, LCP (n_f = 4) vs ADMM")
    ax[0].legend(fontsize=8)
    ax[1].set_ylabel("last link normal velocity (m/s)")
    ax[1].set_xlabel("t (s)")
    ns = np.array(links)
    for c in CONFIGS:
        ax[2].loglog(ns, [results[n][1][c]["wall_per_sim_second"] for n in links], style[LABEL[c]][0] + "o-",
                     label=f"ours {LABEL[c]}")
    pn = [n for n in links if n in PAPER]
    ax[2].loglog(pn, [PAPER[n][3] for n in pn], "r^:", label="paper OS (s, run length unstated)")
    ax[2].loglog(pn, [PAPER[n][4] for n in pn], "b^:", label="paper NMC/OS")
    ax[2].set_xlabel("links")
    ax[2].set_ylabel("wall time (s per simulated s)")
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    png = os.path.join(a.out, "bench_pendulum.png")
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()

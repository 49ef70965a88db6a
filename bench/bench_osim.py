"""Explicit Delassus matrix and damped inverse: PV-OSIMr and cABA-OSIM against the dense and
matrix-free routes, same run.

Part 1, PV-OSIMr paper (Sathya, Decré, Swevers) Sec. IV-B scaling (Fig. 3–4), G = J M⁻¹ Jᵀ:
  - the branching mechanism (`bench.osim_scenarios.branching_mechanism(k)`): a stem of k links,
    a 7-link side branch on each, every tip welded (n = 8k, m = 6k);
  - a chain with a 6D weld on every link (`constrained_chain(n)`, m = 6n, every link branching).
  Routes: PV-OSIMr (`solvers.pv_osimr`, O(n + m²)), PV-OSIM (`solvers.pv_osim`, O(n + m² d)),
  dense LTL-style (`DenseDelassus(...).matrix()`: J, CRBA, Cholesky M = LLᵀ, G = (L⁻¹Jᵀ)ᵀ(L⁻¹Jᵀ))
  and our matrix-free operator applied to the m identity columns (`MatrixFreeDelassus.matvec`).
  Log-log slopes of time against k (resp. n) are printed (paper: PV-OSIMr quadratic in both),
  with a fit T ≈ a + b k + c k² of PV-OSIMr's medians and the share of its k² term: on the
  branching mechanism n = 8k links, and the O(n) work per link (Data, kinematics, the ABA pass,
  the segment sweep: about 0.4 µs a link) equals the O(m²) work (about 6 flops per pair of the
  m = 6k rows, 72 per row and branching ancestor: about 5 ns per entry of G) only near k ≈ 20.
  Measured: the k² term is 40% of the time at k = 16 and 76% at k = 64, so the slope over
  k = 16–64 is about 1.4; over k = 64–256 it is 2.0. The dense and matrix-free routes stop at
  k = 64 and PV-OSIM at k = 128 (seconds per call beyond).
Part 2, constrained articulated body paper (Sathya, Carpentier) Table III, Λ_μ = (G + dI)⁻¹:
  cABA-OSIMf, cABA-OSIM (`solvers.caba_osimf`, `caba_osim`), the dense Cholesky route
  (`DenseDelassus(..., damping=d)`: "LTL-chol", plus the explicit inverse: "LTL-inv") and, for
  context, our matrix-free Λ_R (construction + `update_damping` + one `solve`, never the matrix).
  Robots from example-robot-data (`bench.osim_scenarios.table3`); the paper's C++ timings beside.

Every route starts from q and a prebuilt ConstraintSet. Timing: alternating blocks (each
route runs a few calls in turn, several rounds), per-call CPU time of the process (the other
processes of a shared machine stay out of it), mean and p95 (and the
median, which the slopes are fitted to: robust to the shared machine's outliers); ratios are
of means from the same run. Writes bench/results/bench_osim.json and bench_osim.png.

    python bench/bench_osim.py [--quick] [--budget 0.4]
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
import scipy.linalg as sla  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.osim_scenarios import branching_mechanism, constrained_chain, table3  # noqa: E402
from solvers import (ConstraintSet, DenseDelassus, MatrixFreeDelassus, caba_osim, caba_osimf,  # noqa: E402
                     pv_osim, pv_osimr)
from solvers.elimination import StructureCache  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DAMPING = 1e-2


def alternating(funcs, budget, rounds=7):
    """{name: (mean µs, p95 µs, calls, median µs)} of each f() timed per call in `rounds` alternating blocks
    (each block runs every route in turn for about budget / rounds / len(funcs) seconds)."""
    per = {}
    for name, f in funcs.items():        # warm up (compilation, caches) and size the blocks
        f()
        t0 = time.process_time()
        f()
        one = max(time.process_time() - t0, 1e-7)
        per[name] = max(1, int(budget / rounds / len(funcs) / one))
    ts = {name: [] for name in funcs}
    for _ in range(rounds):
        for name, f in funcs.items():
            for _ in range(per[name]):
                t0 = time.process_time()
                f()
                ts[name].append(time.process_time() - t0)
    return {k: (float(np.mean(v)) * 1e6, float(np.percentile(v, 95)) * 1e6, len(v), float(np.median(v)) * 1e6)
            for k, v in ts.items()}


def delassus_routes(model, q, cs, size, limits):
    """The routes to G at this size: those whose size limit (`limits`, default no limit) allows it."""
    def matrix_free():
        F = MatrixFreeDelassus(model, q, cs)
        return np.column_stack([F.matvec(e) for e in np.eye(cs.m)])
    routes = {"PV-OSIMr": lambda: pv_osimr(model, q, cs), "PV-OSIM": lambda: pv_osim(model, q, cs),
              "dense LTL": lambda: DenseDelassus(model, q, cs).matrix(), "matrix-free": matrix_free}
    return {k: f for k, f in routes.items() if size <= limits.get(k, size)}


def slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def quadratic_split(x, y):
    """T(x) ≈ a + b x + c x² fitted to the medians (non-negative least squares, relative
    residuals): (a, b, c) and the share of c x² in the fitted time at each x."""
    from scipy.optimize import nnls
    A = np.stack([np.ones_like(x), x, x * x], 1) / y[:, None]
    coef = nnls(A, np.ones_like(y))[0]
    fit = coef[0] + coef[1] * x + coef[2] * x * x
    return coef, coef[2] * x * x / fit


def scaling(label, make, sizes, budget, limits=None):
    limits = limits or {}
    print(f"\n{label}: time (µs, mean / p95) of G = J M⁻¹ Jᵀ")
    rows = []
    names = list(delassus_routes(None, None, None, 0, {}))
    for k in sizes:
        model, q, cons = make(k)
        cs = ConstraintSet(model, cons)
        G = DenseDelassus(model, q, cs).matrix() if k <= limits.get("dense LTL", k) else pv_osim(model, q, cs)
        err = np.abs(pv_osimr(model, q, cs) - G).max() / np.abs(G).max()
        res = alternating(delassus_routes(model, q, cs, k, limits), budget)
        if not rows:
            print(f"{'size':>5s} {'n':>5s} {'m':>5s} " + " ".join(f"{n:>19s}" for n in names) + "  dense/PV-OSIMr")
        cell = {n: (f"{res[n][0]:9.1f} /{res[n][1]:9.1f}" if n in res else f"{'-':>19s}") for n in names}
        ratio = f"{res['dense LTL'][0] / res['PV-OSIMr'][0]:8.2f}" if "dense LTL" in res else ""
        print(f"{k:5d} {model.nbodies:5d} {cs.m:5d} " + " ".join(cell[n] for n in names) + "  " + ratio, flush=True)
        rows.append(dict(size=k, n=model.nbodies, nv=model.nv, m=cs.m, pv_osimr_rel_err=err,
                         **{n: dict(mean_us=v[0], p95_us=v[1], calls=v[2], median_us=v[3]) for n, v in res.items()}))
    slopes = {}
    for n in names:
        xs = np.array([r["size"] for r in rows if n in r], float)
        y = np.array([r[n]["median_us"] for r in rows if n in r])
        slopes[n] = dict(all=slope(xs, y), upper=slope(xs[-3:], y[-3:]), upper_sizes=[int(xs[-3]), int(xs[-1])])
    print("log-log slope of the median time (all sizes / largest three): " +
          ", ".join(f"{n} {s['all']:.2f} / {s['upper']:.2f} (size {s['upper_sizes'][0]}-{s['upper_sizes'][1]})"
                    for n, s in slopes.items()))
    x = np.array([r["size"] for r in rows], float)
    y = np.array([r["PV-OSIMr"]["median_us"] for r in rows])
    coef, share = quadratic_split(x, y)
    print(f"PV-OSIMr time ≈ {coef[0]:.3g} + {coef[1]:.3g}·x + {coef[2]:.3g}·x² µs (x = size); share of the x² term: "
          + ", ".join(f"{int(k)}: {s:.0%}" for k, s in zip(x, share)))
    print("  local slopes (consecutive triples): " + ", ".join(
        f"{int(x[i])}-{int(x[i + 2])}: {slope(x[i:i + 3], y[i:i + 3]):.2f}" for i in range(len(x) - 2)))
    if coef[2] > 0:
        print(f"  the linear and the quadratic terms are equal at size {coef[1] / coef[2]:.0f}: below it the O(n) "
              "sweeps (kinematics, the ABA pass, the segment sweep over every link) dominate and the slope is "
              "between 1 and 2; the O(m²) part (pairs at their closest common branching ancestor, rows carried "
              "up the 𝒩-tree) takes over above it, where the slope reaches 2.")
    return dict(label=label, rows=rows, slopes=slopes, pv_osimr_fit=dict(coef_us=coef.tolist(), x2_share=share.tolist()))


def damped_routes(model, q, cs, d):
    b = np.random.default_rng(0).normal(size=cs.m)
    eye = np.eye(cs.m)

    def ltl_inv():
        C = DenseDelassus(model, q, cs, damping=d).kernel_state()[1]
        return sla.cho_solve((C, True), eye, check_finite=False)

    sc = StructureCache(model)          # elimination orders kept between builds

    def mf():
        return MatrixFreeDelassus(model, q, cs, damping=d, structures=sc).solve(b)
    return {"cABA-OSIMf": lambda: caba_osimf(model, q, cs, d), "cABA-OSIM": lambda: caba_osim(model, q, cs, d),
            "LTL-chol": lambda: DenseDelassus(model, q, cs, damping=d), "LTL-inv": ltl_inv,
            "MF Λ_R solve": mf}


def table_iii(budget, quick):
    print(f"\nTable III: damped Delassus inverse (G + dI)⁻¹, d = {DAMPING:g}; µs mean (p95); "
          "paper: C++ on one core of another machine")
    names = ["cABA-OSIMf", "cABA-OSIM", "LTL-chol", "LTL-inv", "MF Λ_R solve"]
    print(f"{'system':36s} {'nv':>3s} {'m':>3s} " + " ".join(f"{n:>17s}" for n in names)
          + " | paper: cABA-f  cABA  LTL-chol LTL-inv | LTL-inv/cABA ours  paper")
    rows = []
    for label, model, q, cons, paper in (table3()[::3] if quick else table3()):
        cs = ConstraintSet(model, cons)
        G = DenseDelassus(model, q, cs).matrix()
        ref = np.linalg.inv(G + DAMPING * np.eye(cs.m))
        err = max(np.abs(f(model, q, cs, DAMPING) - ref).max() / np.abs(ref).max() for f in (caba_osim, caba_osimf))
        res = alternating(damped_routes(model, q, cs, DAMPING), budget)
        ours, theirs = res["LTL-inv"][0] / res["cABA-OSIM"][0], paper[3] / paper[1]
        print(f"{label:36s} {model.nv:3d} {cs.m:3d} " + " ".join(f"{res[n][0]:7.1f} ({res[n][1]:6.1f})" for n in names)
              + " | " + " ".join(f"{p:7.2f}" for p in paper) + f" | {ours:12.2f} {theirs:6.2f}")
        rows.append(dict(system=label, nv=model.nv, m=cs.m, caba_rel_err=err, paper_us=dict(zip(
            ["cABA-OSIMf", "cABA-OSIM", "LTL-chol", "LTL-inv"], paper)),
            **{n: dict(mean_us=v[0], p95_us=v[1], calls=v[2], median_us=v[3]) for n, v in res.items()}))
    return rows


def plot(parts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, part, xl in zip(axes[:2], parts["scaling"], ("branches k", "links n")):
        for name, s in part["slopes"].items():
            rs = [r for r in part["rows"] if name in r]
            ax.loglog([r["size"] for r in rs], [r[name]["median_us"] for r in rs], "o-",
                      label=f"{name} (slope {s['upper']:.2f})")
        ax.set_xlabel(xl)
        ax.set_ylabel("µs (median)")
        ax.set_title(part["label"])
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[2]
    t3 = parts["table3"]
    names = ["cABA-OSIMf", "cABA-OSIM", "LTL-chol", "LTL-inv", "MF Λ_R solve"]
    w = 0.16
    for j, name in enumerate(names):
        ax.bar(np.arange(len(t3)) + (j - 2) * w, [r[name]["mean_us"] for r in t3], w, label=name)
    ax.set_xticks(np.arange(len(t3)))
    ax.set_xticklabels([r["system"].split(" (")[0] for r in t3], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("µs (mean)")
    ax.set_title(f"Table III: (G + dI)⁻¹, d = {DAMPING:g}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and systems")
    ap.add_argument("--budget", type=float, default=0.4, help="seconds of timing per size and route set")
    a = ap.parse_args(argv)
    branch = [1, 2, 4, 8] if a.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    chain = [4, 8, 16, 32] if a.quick else [4, 8, 16, 32, 64, 128]
    # the dense and matrix-free routes take seconds per call past k = 64 (n = 512), PV-OSIM past 128
    limits = {"dense LTL": 64, "matrix-free": 64, "PV-OSIM": 128}
    parts = {"scaling": [scaling("branching mechanism (k branches of 7 links, tips welded)", branching_mechanism,
                                 branch, a.budget, limits),
                         scaling("chain with a 6D weld on every link", constrained_chain, chain, a.budget)],
             "table3": table_iii(a.budget, a.quick)}
    parts["machine"] = dict(python=platform.python_version(), processor=platform.processor(), quick=a.quick,
                            budget_s=a.budget, damping=DAMPING)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "bench_osim.json"), "w") as f:
        json.dump(parts, f, indent=1)
    plot(parts, os.path.join(RESULTS, "bench_osim.png"))
    print(f"\nwrote {RESULTS}/bench_osim.json and bench_osim.png")


if __name__ == "__main__":
    main()

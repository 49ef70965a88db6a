"""Swimmer scaling (paper 000 Fig. 2): matrix-free vs explicit Delassus operators, same run.

Planar floating base + (N-1) revolute joints about z, two point contacts with the ground per
link (3N contact rows), N = 3 … 200 links (nv = N + 2). Times (median, μs) from q:
matrix-free Λ⁻¹ (construction + one product) and Λ_R (construction + damping + one solve),
our dense baseline (J, CRBA, Cholesky, G; + Cholesky of G + dI), and Pinocchio 4.1's
ConstraintCholeskyDecomposition (compute + matrix(); compute + solve). Fits the log-log slopes
of time vs nv (all sizes, and nv ≥ 20 where fixed Python overhead no longer dominates),
writes bench/results/bench_swimmer.json and bench_swimmer.png.

    python bench/bench_swimmer.py [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_delassus import timeit  # noqa: E402
from bench.delassus_scenarios import pin_compute, pin_problem, swimmer  # noqa: E402
from solvers import ConstraintSet, DenseDelassus, MatrixFreeDelassus  # noqa: E402
from solvers.elimination import StructureCache  # noqa: E402


def slope(nv, t, nmin=0):
    nv, t = np.asarray(nv, float), np.asarray(t, float)
    k = (nv >= nmin) & np.isfinite(t)
    if k.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(nv[k]), np.log(t[k]), 1)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--damping", type=float, default=1e-4)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    a = ap.parse_args()
    sizes = [3, 5, 10, 20, 50, 100] if a.quick else [3, 5, 10, 20, 35, 50, 75, 100, 150, 200]
    budget = 0.05 if a.quick else 0.2
    d = a.damping
    rows = []
    print(f"{'links':>5s} {'nv':>4s} {'m':>4s} | {'MF Λ⁻¹':>8s} {'MF Λ_R':>8s} {'MF kB':>7s} | {'dense Λ⁻¹':>9s} "
          f"{'dense Λ_R':>9s} {'dense kB':>8s} | {'pin Λ⁻¹':>8s} {'pin Λ_R':>8s} | {'dense/MF Λ_R':>12s} {'pin/MF Λ_R':>10s}")
    for N in sizes:
        model, q, cons = swimmer(N)
        cs = ConstraintSet(model, cons)
        rng = np.random.default_rng(N)
        x = rng.normal(size=cs.m)
        r = dict(links=N, nv=model.nv, m=cs.m)
        sc = StructureCache(model)          # elimination orders kept between builds
        F = MatrixFreeDelassus(model, q, cs, damping=d, structures=sc)
        F.matvec(x)
        r["mf_kB"] = F.nbytes() / 1e3
        r["mf_inv"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, structures=sc).matvec(x), budget)
        r["mf_R"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, damping=d, structures=sc).solve(x), budget)
        r["dense_inv"] = timeit(lambda: DenseDelassus(model, q, cs).matvec(x), budget, min_reps=3)
        r["dense_R"] = timeit(lambda: DenseDelassus(model, q, cs, damping=d).solve(x), budget, min_reps=3)
        D = DenseDelassus(model, q, cs, damping=d)
        r["dense_kB"] = D.nbytes() / 1e3
        r["err_vs_dense"] = float(np.linalg.norm(F.solve(x) - D.solve(x)) / np.linalg.norm(D.solve(x)))
        try:
            import pinocchio as pin
            pm, pd, cms, cds = pin_problem(model, q, cons)
            pin_compute(pm, pd, cms, cds, q, d)
            chol = pin.ConstraintCholeskyDecomposition(pm, pd, cms, cds)

            def p_inv():
                chol.compute(pm, pd, cms, cds, 1e-12)
                return chol.getDelassusOperatorCholeskyExpression().matrix() @ x

            def p_R():
                chol.compute(pm, pd, cms, cds, d)
                return chol.getDelassusOperatorCholeskyExpression().solve(x)
            r["pin_inv"] = timeit(p_inv, budget, min_reps=3)
            r["pin_R"] = timeit(p_R, budget, min_reps=3)
        except Exception as e:
            r["pin_error"] = repr(e)
        rows.append(r)
        print(f"{N:5d} {r['nv']:4d} {r['m']:4d} | {r['mf_inv']:8.1f} {r['mf_R']:8.1f} {r['mf_kB']:7.1f} | "
              f"{r['dense_inv']:9.1f} {r['dense_R']:9.1f} {r['dense_kB']:8.1f} | {r.get('pin_inv', np.nan):8.1f} "
              f"{r.get('pin_R', np.nan):8.1f} | {r['dense_R'] / r['mf_R']:12.1f} "
              f"{r.get('pin_R', np.nan) / r['mf_R']:10.1f}", flush=True)
    nv = [r["nv"] for r in rows]
    slopes = {}
    for key in ("mf_inv", "mf_R", "dense_inv", "dense_R", "pin_inv", "pin_R", "mf_kB", "dense_kB"):
        t = [r.get(key, np.nan) for r in rows]
        slopes[key] = dict(all=slope(nv, t), nv_ge_20=slope(nv, t, 20))
    for key in slopes:
        t = np.array([r.get(key, np.nan) for r in rows], float)
        k = np.isfinite(t)
        b, a0 = np.polyfit(np.asarray(nv, float)[k], t[k], 1)
        slopes[key]["nv_ge_50"] = slope(nv, t, 50)
        slopes[key]["affine_fit"] = dict(constant=float(a0), per_dof=float(b))
    print("\nlog-log slopes of time (memory) vs nv, and the affine fit t ≈ a + b·nv:")
    for k, v in slopes.items():
        print(f"  {k:10s} all sizes {v['all']:5.2f}   nv >= 20 {v['nv_ge_20']:5.2f}   nv >= 50 {v['nv_ge_50']:5.2f}"
              f"   a = {v['affine_fit']['constant']:9.1f}  b = {v['affine_fit']['per_dof']:8.3f} per dof")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "bench_swimmer.json"), "w") as f:
        json.dump(dict(rows=rows, slopes=slopes, damping=d), f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        style = dict(mf_inv=("Matrix-free Λ⁻¹", "C0", "-o"), mf_R=("Matrix-free Λ_R", "C1", "-o"),
                     dense_inv=("Dense Λ⁻¹ (ours)", "C0", "--s"), dense_R=("Dense Λ_R (ours)", "C1", "--s"),
                     pin_inv=("Pinocchio Cholesky Λ⁻¹", "C0", ":^"), pin_R=("Pinocchio Cholesky Λ_R", "C1", ":^"))
        for key, (lab, c, ls) in style.items():
            t = [r.get(key, np.nan) for r in rows]
            ax.loglog(nv, t, ls, color=c, label=f"{lab} (slope {slopes[key]['nv_ge_20']:.2f})", ms=4)
        ax.set_xlabel("nv (degrees of freedom)")
        ax.set_ylabel("time [μs]")
        ax.set_title("Swimmer: 2 ground contacts per link (paper 000 Fig. 2)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "bench_swimmer.png"), dpi=120)
        print(f"wrote {os.path.join(a.out, 'bench_swimmer.png')}")
    except ImportError:
        print("matplotlib missing: no plot")
    print(f"wrote {os.path.join(a.out, 'bench_swimmer.json')}")


if __name__ == "__main__":
    main()

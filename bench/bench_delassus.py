"""Reproduce paper 000 Table I: matrix-free Delassus operators vs explicit baselines, same run.

Scenarios (`bench.delassus_scenarios.table1`, built from the scene functions): Go2
(`scenes.quadruped`) and G1 (`scenes.humanoid`) standing and fallen, Cassie standing
(`scenes.biped`: its 24 loop-closure rows are rows of every operator too; Pinocchio gets them
as point constraints at the closed configuration) (the "falling" scenes
simulated until they lie on the ground), with and without joint-friction rows; a stack of 30
boxes (`scenes.box_stack(30)`); the 30-box pyramid (`scenes.box_pyramid()`); three G1 on the
pyramid (`scenes.pyramid_with_robots()` after 1 s). Contacts are the simulator's collision
detection at q. Their sizes are printed beside the paper's. Times in μs (median of repeated
runs, everything from the configuration q and a prebuilt ConstraintSet):

  matrix-free (ours, `solvers.MatrixFreeDelassus`)
    Λ⁻¹    construction at q (kinematics, rows, ABA inertias) + one product
           (also given as "| data": from a models.Data already computed at q, as in a step)
    Λ_R    construction + damping + one solve
    re Λ⁻¹ / re Λ_R   applying the built operator to a new vector
    Λ'_R   new damping + one solve
  explicit: ours (`solvers.DenseDelassus`: J, CRBA, Cholesky, G = (L⁻¹Jᵀ)ᵀ(L⁻¹Jᵀ); Λ_R by a
    Cholesky of G + dI) and Pinocchio 4.1 `ConstraintCholeskyDecomposition`:
    Λ⁻¹ = compute + matrix(), Λ_R = compute + solve, Λ'_R = compute(new mu) + solve (from Python
    a new damping needs a new compute); "pin pre" is what compute needs first
    (computeJointJacobians, crba, each constraint's calc) and is *not* added to the pin columns.
  memory: bytes of each operator's state (kB); Pinocchio's is not accessible from Python.

Ratios are explicit / matrix-free from the same run. Paper values (Table I, C++, another
machine) are printed beside ours. Writes bench/results/bench_delassus.json.

    python bench/bench_delassus.py [--quick] [--damping 1e-4] [--only Cassie]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

# single-threaded BLAS: the matrix-free kernels and Pinocchio are single-threaded, and threaded
# BLAS on a shared 2-core machine makes the dense baseline's timings erratic
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.delassus_scenarios import SETTLE, pin_compute, pin_problem, table1  # noqa: E402
import models  # noqa: E402
from solvers import ConstraintSet, DenseDelassus, MatrixFreeDelassus  # noqa: E402
from solvers.elimination import StructureCache  # noqa: E402

# paper 000 Table I (μs; kB): MF Λ⁻¹, explicit Λ⁻¹, MF Λ_R, explicit Λ_R,
# re-evaluation MF Λ⁻¹, Λ_R, Λ'_R, explicit Λ⁻¹, Λ_R, Λ'_R; memory MF Λ⁻¹, Λ_R
PAPER = {
    "Go2 standing": dict(nc=4, ncon=12, mf_inv=1.55, ex_inv=3.11, mf_R=1.64, ex_R=3.65, re_mf_inv=0.369,
                         re_mf_R=0.389, re_mf_Rp=1.112, re_ex_inv=0.027, re_ex_R=0.135, re_ex_Rp=0.402, kB=29),
    "Go2 standing +JF": dict(nc=4, ncon=24, mf_inv=1.61, ex_inv=4.64, mf_R=1.63, ex_R=5.95, re_mf_inv=0.399,
                             re_mf_R=0.421, re_mf_Rp=1.171, re_ex_inv=0.052, re_ex_R=0.305, re_ex_Rp=1.3, kB=32),
    "Go2 fallen": dict(nc=9, ncon=27, mf_inv=1.74, ex_inv=5.89, mf_R=2.42, ex_R=7.63, re_mf_inv=0.515,
                       re_mf_R=0.591, re_mf_Rp=1.911, re_ex_inv=0.083, re_ex_R=0.371, re_ex_Rp=1.671, kB=42),
    "Go2 fallen +JF": dict(nc=10, ncon=42, mf_inv=1.77, ex_inv=8.10, mf_R=2.44, ex_R=12.00, re_mf_inv=0.567,
                           re_mf_R=0.62, re_mf_Rp=1.88, re_ex_inv=0.147, re_ex_R=0.601, re_ex_Rp=3.791, kB=49),
    # Cassie: the paper's n_con counts contact and joint-friction rows (24 = 8 contacts, 50 = 24 + 26
    # joint dofs); our rows add Cassie's loop closures, and its feet (cylinders) touch at 2 points each
    "Cassie standing": dict(nc=8, ncon=24, mf_inv=2.94, ex_inv=9.27, mf_R=4.26, ex_R=10.40, re_mf_inv=0.77,
                            re_mf_R=0.854, re_mf_Rp=3.444, re_ex_inv=0.052, re_ex_R=0.30, re_ex_Rp=1.34, kB=69),
    "Cassie standing +JF": dict(nc=8, ncon=50, mf_inv=3.07, ex_inv=16.00, mf_R=4.51, ex_R=21.72, re_mf_inv=0.805,
                                re_mf_R=0.894, re_mf_Rp=3.604, re_ex_inv=0.20, re_ex_R=0.718, re_ex_Rp=5.798,
                                kB=72),
    "G1 standing": dict(nc=8, ncon=24, mf_inv=3.66, ex_inv=9.37, mf_R=3.58, ex_R=10.60, re_mf_inv=0.919,
                        re_mf_R=0.906, re_mf_Rp=2.426, re_ex_inv=0.051, re_ex_R=0.297, re_ex_Rp=1.327, kB=110),
    "G1 standing +JF": dict(nc=8, ncon=53, mf_inv=3.96, ex_inv=18.53, mf_R=3.83, ex_R=25.00, re_mf_inv=1.01,
                            re_mf_R=1.00, re_mf_Rp=2.7, re_ex_inv=0.226, re_ex_R=0.796, re_ex_Rp=6.486, kB=117),
    "G1 fallen": dict(nc=23, ncon=69, mf_inv=4.27, ex_inv=25.98, mf_R=6.22, ex_R=37.88, re_mf_inv=1.43,
                      re_mf_R=1.46, re_mf_Rp=5.1, re_ex_inv=0.379, re_ex_R=1.08, re_ex_Rp=11.48, kB=62),
    "G1 fallen +JF": dict(nc=25, ncon=101, mf_inv=4.41, ex_inv=42.09, mf_R=7.33, ex_R=70.40, re_mf_inv=1.45,
                          re_mf_R=1.62, re_mf_Rp=6.06, re_ex_inv=0.89, re_ex_R=1.80, re_ex_Rp=29, kB=65),
    "Stack of boxes": dict(nc=120, ncon=360, mf_inv=9.47, ex_inv=1214, mf_R=31.38, ex_R=2482, re_mf_inv=5.22,
                           re_mf_R=7.58, re_mf_Rp=30.58, re_ex_inv=9.51, re_ex_R=14.1, re_ex_Rp=1257.1, kB=269),
    "Box pyramid": dict(nc=288, ncon=864, mf_inv=14.88, ex_inv=5925, mf_R=65.20, ex_R=23092, re_mf_inv=10.7,
                        re_mf_R=15.5, re_mf_Rp=64.7, re_ex_inv=94.9, re_ex_R=87.4, re_ex_Rp=16822.4, kB=826),
    "Pyramid + robots": dict(nc=108, ncon=324, mf_inv=20.34, ex_inv=1511, mf_R=37.12, ex_R=2430, re_mf_inv=6.84,
                             re_mf_R=8.72, re_mf_Rp=32.02, re_ex_inv=7.36, re_ex_R=12.6, re_ex_Rp=906.6, kB=730),
}


def timeit(f, budget=0.25, min_reps=5, max_reps=5000):
    """Median wall time (μs) of f() over repetitions filling about `budget` seconds."""
    f()
    t0 = time.perf_counter()
    f()
    one = time.perf_counter() - t0
    reps = int(min(max_reps, max(min_reps, budget / max(one, 1e-7))))
    ts = np.empty(reps)
    for k in range(reps):
        t0 = time.perf_counter()
        f()
        ts[k] = time.perf_counter() - t0
    return float(np.median(ts) * 1e6)


def print_sizes(scens):
    """Scenario sizes beside paper 000 Table I (the paper gives nv per platform in its caption)."""
    paper_nv = {"Go2": 18, "Cassie": 32, "G1": 35, "Stack": 180, "Box": 180, "Pyramid": 285}
    print("\nScenario sizes: ours (scene functions, contacts by collision detection) vs paper 000 Table I")
    print(f"{'scenario':18s} {'nv':>4s} {'nc':>4s} {'m':>4s} | {'paper nv':>8s} {'nc':>4s} {'m':>4s} | state")
    sizes = []
    for label, model, q, cons in scens:
        cs = ConstraintSet(model, cons)
        loops = int(sum(cs.cb_nrows[(cs.cb_kind == 1) | (cs.cb_kind == 2)]))
        if loops:
            label_state = f" ({loops} of the m rows are loop closures)"
        else:
            label_state = ""
        p = PAPER.get(label, {})
        base = label.replace(" +JF", "")
        state = f"after {SETTLE[base]:g} s of simulation" if base in SETTLE else "initial state"
        pnv = paper_nv.get(label.split()[0], 0)
        print(f"{label:18s} {model.nv:4d} {cs.ncontacts:4d} {cs.m:4d} | {pnv:8d} {p.get('nc', 0):4d} "
              f"{p.get('ncon', 0):4d} | {state}{label_state}")
        sizes.append(dict(scenario=label, nv=model.nv, nc=cs.ncontacts, ncon=cs.m, paper_nv=pnv,
                          paper_nc=p.get("nc"), paper_ncon=p.get("ncon"), state=state))
    return sizes


def bench_one(label, model, q, cons, d=1e-4, d2=2e-4, budget=0.25, pin_ok=True):
    cs = ConstraintSet(model, cons)
    m = cs.m
    rng = np.random.default_rng(0)
    x, b, b2 = rng.normal(size=m), rng.normal(size=m), rng.normal(size=m)
    r = dict(scenario=label, nv=model.nv, nbodies=model.nbodies, nc=cs.ncontacts, ncon=m)

    # ---- matrix-free
    t0 = time.perf_counter()
    sc = StructureCache(model)                                # elimination orders kept between builds
    F = MatrixFreeDelassus(model, q, cs, damping=d, structures=sc)   # first build: elimination order
    r["mf_ordering_first_us"] = (time.perf_counter() - t0) * 1e6
    r["mf_inv"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, structures=sc).matvec(x), budget)
    r["mf_R"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, damping=d, structures=sc).solve(b), budget)
    # the simulator's situation: kinematics and ABA inertias already in a models.Data at q
    data = models.Data(model).compute(q)
    r["mf_inv_data"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, data=data, structures=sc).matvec(x), budget)
    r["mf_R_data"] = timeit(lambda: MatrixFreeDelassus(model, q, cs, data=data, damping=d, structures=sc).solve(b), budget)
    F.matvec(x)
    r["re_mf_inv"] = timeit(lambda: F.matvec(b2), budget)
    r["re_mf_R"] = timeit(lambda: F.solve(b2), budget)

    r["re_mf_Rp"] = timeit(lambda: (F.update_damping(d2), F.solve(b2)), budget)
    r["mf_kB"] = F.nbytes() / 1e3
    el = F.elimination
    r["fill_blocks"] = int(el.fill)
    r["coupling_blocks"] = int(el.nslots)

    # ---- explicit, ours
    r["ex_inv"] = timeit(lambda: DenseDelassus(model, q, cs).matvec(x), budget, min_reps=3)
    r["ex_R"] = timeit(lambda: DenseDelassus(model, q, cs, damping=d).solve(b), budget, min_reps=3)
    D = DenseDelassus(model, q, cs, damping=d)
    r["re_ex_inv"] = timeit(lambda: D.matvec(b2), budget)
    r["re_ex_R"] = timeit(lambda: D.solve(b2), budget)
    r["re_ex_Rp"] = timeit(lambda: (D.update_damping(d2), D.solve(b2)), budget, min_reps=3)
    r["ex_kB"] = D.nbytes() / 1e3
    D.update_damping(d)
    F.update_damping(d)
    r["err_mf_vs_dense_R"] = float(np.linalg.norm(F.solve(b) - D.solve(b)) / np.linalg.norm(D.solve(b)))
    r["err_mf_vs_dense_inv"] = float(np.linalg.norm(F.matvec(x) - D.matvec(x)) / np.linalg.norm(D.matvec(x)))

    # ---- Pinocchio
    if pin_ok:
        try:
            import pinocchio as pin
            pm, pd, cms, cds = pin_problem(model, q, cons)
            pin_compute(pm, pd, cms, cds, q, d)
            chol = pin.ConstraintCholeskyDecomposition(pm, pd, cms, cds)
            r["pin_pre"] = timeit(lambda: pin_compute(pm, pd, cms, cds, q, d), budget, min_reps=3)

            def p_inv():
                chol.compute(pm, pd, cms, cds, 1e-12)
                E = chol.getDelassusOperatorCholeskyExpression()
                return E.matrix() @ x

            def p_R(mu=d, rhs=b):
                chol.compute(pm, pd, cms, cds, mu)
                return chol.getDelassusOperatorCholeskyExpression().solve(rhs)
            r["pin_inv"] = timeit(p_inv, budget, min_reps=3)
            r["pin_R"] = timeit(p_R, budget, min_reps=3)
            r["pin_compute"] = timeit(lambda: chol.compute(pm, pd, cms, cds, d), budget, min_reps=3)
            chol.compute(pm, pd, cms, cds, d)
            E = chol.getDelassusOperatorCholeskyExpression()
            r["re_pin_R"] = timeit(lambda: E.solve(b2), budget)
            r["re_pin_Rp"] = timeit(lambda: p_R(d2, b2), budget, min_reps=3)
            chol.compute(pm, pd, cms, cds, d)
            lam_p = chol.getDelassusOperatorCholeskyExpression().solve(b)
            r["err_mf_vs_pin_R"] = float(np.linalg.norm(F.solve(b) - lam_p) / np.linalg.norm(lam_p))
        except Exception as e:   # pinocchio missing or a constraint it cannot express
            r["pin_error"] = repr(e)
    return r


def fmt(v, w=8):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-".rjust(w)
    if v >= 1000:
        return f"{v:{w}.0f}"
    if v >= 10:
        return f"{v:{w}.1f}"
    return f"{v:{w}.2f}"


def print_tables(rows):
    hdr = (f"{'scenario':18s} {'nv':>4s} {'nc':>4s} {'m':>4s} | {'MF Λ⁻¹':>8s} {'MF Λ_R':>8s} {'re Λ⁻¹':>8s} "
           f"{'re Λ_R':>8s} {'Λ′_R':>8s} {'kB':>7s} | {'dense Λ⁻¹':>9s} {'dense Λ_R':>9s} {'d re Λ_R':>8s} "
           f"{'d Λ′_R':>8s} {'kB':>7s} | {'pin Λ⁻¹':>8s} {'pin Λ_R':>8s} {'pin Λ′_R':>8s} {'pin pre':>8s}")
    print("\nTimes in μs (median), memory in kB; this machine, same run")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['scenario']:18s} {r['nv']:4d} {r['nc']:4d} {r['ncon']:4d} | {fmt(r['mf_inv'])} {fmt(r['mf_R'])} "
              f"{fmt(r['re_mf_inv'])} {fmt(r['re_mf_R'])} {fmt(r['re_mf_Rp'])} {fmt(r['mf_kB'], 7)} | "
              f"{fmt(r['ex_inv'], 9)} {fmt(r['ex_R'], 9)} {fmt(r['re_ex_R'])} {fmt(r['re_ex_Rp'])} "
              f"{fmt(r['ex_kB'], 7)} | {fmt(r.get('pin_inv'))} {fmt(r.get('pin_R'))} {fmt(r.get('re_pin_Rp'))} "
              f"{fmt(r.get('pin_pre'))}")
    print("\nRatios explicit / matrix-free (same run); paper's ratio LTL-OSIM / matrix-free in brackets")
    hdr2 = (f"{'scenario':18s} | {'pin/MF Λ⁻¹':>11s} {'pin/MF Λ_R':>11s} {'pin/MF Λ′_R':>11s} | "
            f"{'dense/MF Λ⁻¹':>12s} {'dense/MF Λ_R':>12s} {'dense/MF Λ′_R':>13s} | "
            f"{'paper Λ⁻¹':>9s} {'paper Λ_R':>9s} {'paper Λ′_R':>10s}")
    print(hdr2)
    print("-" * len(hdr2))
    for r in rows:
        p = PAPER.get(r["scenario"], {})
        ratio = lambda a, b: (r[a] / r[b]) if (a in r and b in r) else None
        pr = lambda a, b: (p[a] / p[b]) if p else None
        print(f"{r['scenario']:18s} | {fmt(ratio('pin_inv', 'mf_inv'), 11)} {fmt(ratio('pin_R', 'mf_R'), 11)} "
              f"{fmt(ratio('re_pin_Rp', 're_mf_Rp'), 11)} | {fmt(ratio('ex_inv', 'mf_inv'), 12)} "
              f"{fmt(ratio('ex_R', 'mf_R'), 12)} {fmt(ratio('re_ex_Rp', 're_mf_Rp'), 13)} | "
              f"{fmt(pr('ex_inv', 'mf_inv'), 9)} {fmt(pr('ex_R', 'mf_R'), 9)} {fmt(pr('re_ex_Rp', 're_mf_Rp'), 10)}")
    print("\nMatrix-free construction when the step's models.Data (kinematics + ABA inertias) is given, μs:")
    for r in rows:
        print(f"{r['scenario']:18s} Λ⁻¹ {fmt(r['mf_inv_data'])}   Λ_R {fmt(r['mf_R_data'])}")
    print("\nPaper Table I (C++, Intel Ultra 7 165H) beside ours, μs: MF Λ⁻¹, MF Λ_R, re Λ⁻¹, re Λ_R, Λ′_R, kB")
    for r in rows:
        p = PAPER.get(r["scenario"])
        if not p:
            continue
        print(f"{r['scenario']:18s} paper nc={p['nc']:3d} m={p['ncon']:3d}: {fmt(p['mf_inv'])} {fmt(p['mf_R'])} "
              f"{fmt(p['re_mf_inv'])} {fmt(p['re_mf_R'])} {fmt(p['re_mf_Rp'])} {fmt(p['kB'], 7)}   "
              f"ours nc={r['nc']:3d} m={r['ncon']:3d}: {fmt(r['mf_inv'])} {fmt(r['mf_R'])} {fmt(r['re_mf_inv'])} "
              f"{fmt(r['re_mf_R'])} {fmt(r['re_mf_Rp'])} {fmt(r['mf_kB'], 7)}   "
              f"ours/paper Λ_R {r['mf_R'] / p['mf_R']:.1f}x")


def targets(rows):
    """Issue-3 acceptance ratios on the box pyramid."""
    r = next((x for x in rows if x["scenario"] == "Box pyramid"), None)
    if r is None:
        return {}
    t = {}
    if "pin_inv" in r:
        t["pin_compute+matrix / MF Λ⁻¹ (≥ 400)"] = r["pin_inv"] / r["mf_inv"]
        t["pin_compute+solve / MF Λ_R (≥ 400)"] = r["pin_R"] / r["mf_R"]
        t["pin_compute / MF Λ⁻¹ (≥ 400)"] = r["pin_compute"] / r["mf_inv"]
        t["pin_compute / MF Λ_R (≥ 400)"] = r["pin_compute"] / r["mf_R"]
    t["dense / MF Λ⁻¹ (≥ 100)"] = r["ex_inv"] / r["mf_inv"]
    t["dense / MF Λ⁻¹ given the step's Data (info)"] = r["ex_inv"] / r["mf_inv_data"]
    t["dense / MF Λ_R given the step's Data (info)"] = r["ex_R"] / r["mf_R_data"]
    t["dense / MF Λ_R (≥ 100)"] = r["ex_R"] / r["mf_R"]
    t["dense refactor+solve / MF Λ′_R (≥ 100)"] = r["re_ex_Rp"] / r["re_mf_Rp"]
    print("\nTargets on the box pyramid (ratios, same run):")
    for k, v in t.items():
        print(f"  {k:45s} {v:9.1f}")
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="robots and the pyramid only, short budgets")
    ap.add_argument("--damping", type=float, default=1e-4)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per timing")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--only", default=None, help="run the scenarios whose label contains this text "
                                                 "(e.g. Cassie); the JSON then goes to bench_delassus_<text>.json")
    a = ap.parse_args()
    budget = 0.05 if a.quick else a.budget
    rows = []
    scens = table1(a.quick, only=a.only)
    sizes = print_sizes(scens)
    for label, model, q, cons in scens:
        r = bench_one(label, model, q, cons, d=a.damping, d2=2 * a.damping, budget=budget)
        rows.append(r)
        print(f"  {label:18s} done (MF Λ_R {r['mf_R']:.1f} μs, err vs dense {r['err_mf_vs_dense_R']:.1e}"
              + (f", vs pin {r['err_mf_vs_pin_R']:.1e}" if "err_mf_vs_pin_R" in r else "") + ")", flush=True)
    print_tables(rows)
    t = targets(rows)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "bench_delassus.json" if not a.only else f"bench_delassus_{a.only.lower()}.json")
    with open(path, "w") as f:
        json.dump(dict(rows=rows, sizes=sizes, targets=t, damping=a.damping, paper=PAPER,
                       machine=dict(python=platform.python_version(), processor=platform.processor(),
                                    cpus=os.cpu_count())), f, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

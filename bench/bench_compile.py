"""Where a cold start's compile time goes: per numba kernel, by compiler stage.

Runs a `python -m simstep` command in this process under numba's compile events
(``numba.core.event``, "numba:compile" nests: a kernel's compile includes its callees') and,
with --stages, its pass events and timers on LLVM's stages. Prints the top kernels by their
exclusive CPU time (their own compile, callees excluded), their inclusive time and number of
signatures, the time per package and per stage, and the phase marks (first step started and
done). CPU times (process_time) stay meaningful on a loaded machine; wall times do not.

    NUMBA_CACHE_DIR=$(mktemp -d) python bench/bench_compile.py [--top 20] [--stages] -- run humanoid --duration 0.01 --no-progress
    NUMBA_CACHE_DIR=$(mktemp -d) python bench/bench_compile.py --worker humanoid

Use an empty NUMBA_CACHE_DIR (or a fresh clone) for a cold start. A worker process of
`simstep.warmup.start_compile_ahead` is not seen here: pass --serial to compile all in this
process, or --worker SCENE to profile what the worker compiles (in this process).
"""
import argparse
import os
import re
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# compiler stages grouped for the per-kernel columns (--stages)
_GROUP = {"nopython_type_inference": "typing", "inline_inlinables": "inline", "inline_overloads": "inline",
          "native_lowering": "lowering", "llvm parse IR": "llvm", "llvm function passes": "llvm",
          "llvm module passes": "llvm", "llvm machine code": "machine code"}
_COLUMNS = ("typing", "inline", "lowering", "llvm", "machine code")


class CompileProfile:
    """Exclusive and inclusive CPU seconds and signatures per kernel (module.qualname), and
    exclusive seconds per compiler stage (numba passes, LLVM function/module passes, machine code)."""

    def __init__(self, stages=False):
        from numba.core import event
        self.kernels = defaultdict(lambda: {"excl": 0.0, "incl": 0.0, "sigs": [], "stages": defaultdict(float)})
        self.stages = defaultdict(float)
        self.phase = "build"           # the phase of the run compiling: build, first step, later
        self.phases = defaultdict(lambda: defaultdict(float))   # phase -> package -> exclusive s
        self._stack = []       # [kind, name, t0, callee kernels' time, any nested frame's time, args]
        prof = self

        class Kernels(event.Listener):
            def on_start(self, ev):
                f = ev.data["dispatcher"].py_func
                prof._push("kernel", f"{getattr(f, '__module__', None)}.{f.__qualname__}", str(ev.data["args"]))

            def on_end(self, ev):
                prof._pop()

        class Passes(event.Listener):
            def on_start(self, ev):
                prof._push("stage", re.sub(r" \[.*\]$", "", ev.data["name"]), None)

            def on_end(self, ev):
                prof._pop()

        event.register("numba:compile", Kernels())
        if stages:
            event.register("numba:run_pass", Passes())
            self._time_llvm()

    def _push(self, kind, name, args):
        self._stack.append([kind, name, time.process_time(), 0.0, 0.0, args])

    def _pop(self):
        kind, name, t0, callees, nested, args = self._stack.pop()
        dt = time.process_time() - t0
        if kind == "kernel":
            k = self.kernels[name]
            k["excl"] += dt - callees
            k["incl"] += dt
            k["sigs"].append(args)
            self.phases[self.phase][name.split(".")[0]] += dt - callees
            for fr in reversed(self._stack):          # the calling kernel's callee time
                if fr[0] == "kernel":
                    fr[3] += dt
                    break
        else:
            self.stages[name] += dt - nested
            for fr in reversed(self._stack):          # the kernel this stage compiles
                if fr[0] == "kernel":
                    self.kernels[fr[1]]["stages"][_GROUP.get(name, "numba other")] += dt - nested
                    break
        if self._stack:
            self._stack[-1][4] += dt

    def _time_llvm(self):
        from numba.core import codegen
        prof = self
        for cls, meth, label in ((codegen.CPUCodeLibrary, "_optimize_functions", "llvm function passes"),
                                 (codegen.CPUCodeLibrary, "_optimize_final_module", "llvm module passes"),
                                 (codegen.JITCodeLibrary, "_finalize_specific", "llvm machine code"),
                                 (codegen.CPUCodeLibrary, "add_ir_module", "llvm parse IR")):
            orig = getattr(cls, meth)

            def timed(self, *a, _orig=orig, _label=label, **k):
                prof._push("stage", _label, None)
                try:
                    return _orig(self, *a, **k)
                finally:
                    prof._pop()
            setattr(cls, meth, timed)

    def report(self, top=20, out=sys.stdout):
        rows = sorted(self.kernels.items(), key=lambda kv: -kv[1]["excl"])
        total = sum(k["excl"] for k in self.kernels.values())
        print(f"{len(rows)} kernels, {sum(len(k['sigs']) for k in self.kernels.values())} compilations, "
              f"{total:.1f} s CPU compiling", file=out)
        cols = _COLUMNS if self.stages else ()
        print(f"{'kernel':64s} {'excl s':>7s} {'incl s':>7s} {'sigs':>5s} {'distinct':>8s}"
              + "".join(f" {c[:8]:>8s}" for c in cols), file=out)
        for name, k in rows[:top]:
            print(f"{name[:64]:64s} {k['excl']:7.2f} {k['incl']:7.2f} {len(k['sigs']):5d} {len(set(k['sigs'])):8d}"
                  + "".join(f" {k['stages'][c]:8.2f}" for c in cols), file=out)
        pkg = defaultdict(float)
        for name, k in self.kernels.items():
            pkg[name.split(".")[0]] += k["excl"]
        print("per package: " + ", ".join(f"{p} {s:.1f} s" for p, s in sorted(pkg.items(), key=lambda x: -x[1])),
              file=out)
        for ph, pk in self.phases.items():
            print(f"{ph}: {sum(pk.values()):.1f} s (" + ", ".join(f"{p} {v:.1f}" for p, v in
                                                             sorted(pk.items(), key=lambda x: -x[1])) + ")", file=out)
        if self.stages:
            st = sorted(self.stages.items(), key=lambda x: -x[1])[:10]
            print("per stage: " + ", ".join(f"{n} {s:.1f} s" for n, s in st), file=out)


def profile_worker(prof, scene, top):
    """The compile-ahead worker's compilation of `scene` (its default arguments) in this process:
    CPU until it reports ready (the run may step) and in all."""
    import simstep.warmup
    c0, marks = time.process_time(), {}
    prof.phase = "until ready"

    def ready():
        marks["ready"] = time.process_time() - c0
        prof.phase = "after ready"
    simstep.warmup.compile_ahead(scene, ready=ready)
    print(f"worker: ready after {marks.get('ready', float('nan')):.1f} s CPU, done after "
          f"{time.process_time() - c0:.1f} s CPU")
    prof.report(top)


def main():
    argv = sys.argv[1:]
    cmd = argv[argv.index("--") + 1:] if "--" in argv else ["run", "humanoid", "--duration", "0.01", "--no-progress"]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--stages", action="store_true", help="also time numba's passes and LLVM's stages")
    ap.add_argument("--serial", action="store_true", help="no compile-ahead worker process")
    ap.add_argument("--worker", metavar="SCENE", help="profile the compile-ahead worker's compilation for SCENE "
                    "(`simstep.warmup.compile_ahead`) instead of a command, with its ready mark")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    prof = CompileProfile(stages=args.stages)
    if args.worker:
        return profile_worker(prof, args.worker, args.top)
    import simstep.__main__ as cli
    import simstep.simulator
    import simstep.warmup
    if args.serial:
        simstep.warmup.start_compile_ahead = lambda *a, **k: None
    marks, step = {}, simstep.simulator.Simulator.step
    w0, c0 = time.perf_counter(), time.process_time()

    def marked(self, *a, **k):
        if "first step started" not in marks:
            marks["first step started"] = (time.perf_counter() - w0, time.process_time() - c0)
            prof.phase = "first step"
        r = step(self, *a, **k)
        if "first step done" not in marks:
            marks["first step done"] = (time.perf_counter() - w0, time.process_time() - c0)
            prof.phase = "later"
        return r
    simstep.simulator.Simulator.step = marked
    cli.main(cmd)
    print(" ".join(f"{k}: {w:.1f} s wall, {c:.1f} s CPU;" for k, (w, c) in marks.items()))
    prof.report(args.top)


if __name__ == "__main__":
    main()

"""Command line (issue 6): list, run with its summary and outputs, one-line errors."""
import os
import subprocess
import sys
import time

import pytest

import scenes
from simstep.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "simstep", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_list_names_every_scene(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in scenes.SCENES:
        assert name in out


def test_run_prints_summary_and_writes_replay_and_plot(tmp_path, capsys):
    html, png = tmp_path / "replay.html", tmp_path / "run.png"
    rc = main(["run", "four_bar", "--duration", "0.05", "--html", str(html), "--plot", str(png), "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "simulated 0.05 s" in out and "steps/s" in out
    assert "ADMM iterations: mean" in out and "max penetration" in out
    assert html.stat().st_size > 10_000 and html.read_text().lstrip().lower().startswith("<!doctype html")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_with_scene_arguments_and_dt(capsys):
    rc = main(["run", "pendulum", "--set", "n_links=3", "--set", "formulation=maximal", "--dt", "2e-4",
               "--duration", "0.002", "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "3 links, maximal" in out and "10 steps" in out


def test_progress_bar_goes_to_stderr(capsys):
    assert main(["run", "slider_crank", "--duration", "0.01"]) == 0
    err = capsys.readouterr().err
    assert "slider_crank" in err and "10/10" in err


@pytest.mark.parametrize("args, expect", [
    (["run", "no_such_scene"], "scenes: box_stack"),
    (["run", "box_stack", "--bogus"], "unrecognized arguments"),
    (["run", "box_stack", "--dt", "-1"], "--dt must be positive"),
    (["run", "box_stack", "--duration", "abc"], "--duration must be a number"),
    (["run", "box_stack", "--set", "size=3"], "its parameters: n, half"),
    (["run", "box_stack", "--set", "n"], "KEY=VALUE"),
    (["run", "pendulum", "--set", "formulation=cartesian"], "formulation must be one of"),
    (["run"], "scenes: box_stack"),
    (["frobnicate"], "commands: demo, list, run"),
])
def test_bad_input_exits_nonzero_with_one_line(args, expect, capsys):
    rc = main(args)
    assert rc != 0
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(lines) == 1, cap.err
    assert expect in lines[0]


def test_module_entry_point_exit_status():
    """The real `python -m simstep`: a missing scene exits non-zero with one line listing them."""
    p = _cli("run", "missing_scene")
    assert p.returncode != 0
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and all(name in lines[0] for name in scenes.SCENES)
    p = _cli("list")
    assert p.returncode == 0 and "pendulum_maximal" in p.stdout


def test_demo_still_works(capsys):
    assert main(["demo"]) == 0
    assert "ABA:" in capsys.readouterr().out


def test_warmup_compiles_once_then_nothing():
    """After warmup(), the same scenes step without a single compilation (numba's own
    compile events are the oracle: a kernel loaded from the cache is not one)."""
    from simstep.warmup import warmup
    few = (("box_stack", dict(n=2), 0.01, 3), ("four_bar", {}, 0.01, 2))
    warmup(few, verbose=False)
    assert warmup(few, verbose=False) == 0


def test_compilation_notice_printed_once_before_the_first_compilation(capsys):
    import numba

    from simstep import warmup as wu
    old = wu._announced[0], dict(wu._notice)
    wu._announced[0] = False
    try:
        wu.announce_compilation(message="NOTICE-1")
        wu.announce_compilation(message="NOTICE-1")   # a second call adds no second listener
        f = numba.njit(lambda x: x + 1)       # not cached: compiles on its first call
        g = numba.njit(lambda x: x * 2)
        assert f(1) == 2 and g(2) == 4
        err = capsys.readouterr().err
        assert err.count("NOTICE-1") == 1
    finally:
        wu._announced[0] = True
        wu._notice.update(old[1], listener=wu._notice["listener"])


def test_run_reports_first_step_and_no_bar_before_it(capsys):
    assert main(["run", "slider_crank", "--duration", "0.005"]) == 0
    err = capsys.readouterr().err
    assert "0/5" not in err and "5/5" in err          # the bar starts at step 1, after the first step


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed")
def test_run_writes_a_video_with_contact_arrows(tmp_path, capsys):
    import imageio.v3 as iio
    gif, html = tmp_path / "run.gif", tmp_path / "run.html"
    rc = main(["run", "box_stack", "--set", "n=2", "--duration", "0.1", "--video", str(gif), "--html", str(html),
               "--contacts", "--no-progress"])
    assert rc == 0
    assert "(4 frames)" in capsys.readouterr().out          # 30 fps over 0.1 s: 0, 1/30, 2/30, 3/30
    assert iio.imread(gif, index=None).shape[1:] == (480, 640, 3)
    import base64
    import re
    cmds = [base64.b64decode(c) for c in re.findall(r'^"([A-Za-z0-9+/=]+)",?$', html.read_text(), re.M)]
    assert any(b"simstep_contacts" in c and b"set_animation" in c for c in cmds)   # arrows animated in the replay


_AHEAD_CHECK = r"""
import sys, numba
from numba.core.registry import CPUDispatcher
def signatures():
    out = set()
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] in ("models", "solvers", "simstep", "collision"):
            for attr, f in vars(mod).items():
                if isinstance(f, CPUDispatcher):
                    out |= {(f"{f.py_func.__module__}.{f.__name__}", str(s)) for s in f.signatures}
    return out
import collision, scenes, simstep
from simstep.warmup import compile_ahead
compile_ahead("box_stack", dict(n=2), 0.01)
worker = signatures()
world = scenes.box_stack(n=2)
collision.CollisionDetector(world, margin=2e-3).detect(world.q0)
detection = signatures() - worker
sim = simstep.Simulator(world, dt=0.01)
sim.run(steps=3)
assert sim.stats.ncontacts > 1
rest = signatures() - worker - detection
print("WORKER", sorted({k for k, _ in worker}))
print("DETECTION", sorted({k for k, _ in detection}))
print("REST", sorted({k for k, _ in rest}))
"""


def test_compile_ahead_worker_uses_the_real_steps_signatures():
    """The first-start worker (`simstep.warmup.compile_ahead`: the scene stepped with synthetic
    contacts) calls the ADMM, operator, dynamics and integration kernels with every argument
    type a real run of the scene then uses, and no collision detection: in a fresh process,
    after the worker's steps and one collision detection, the real steps add no kernel
    signature at all."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _AHEAD_CHECK], cwd=root, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = {ln.split(" ", 1)[0]: eval(ln.split(" ", 1)[1]) for ln in out.stdout.splitlines()
             if ln.split(" ", 1)[0] in ("WORKER", "DETECTION", "REST")}
    assert "solvers.admm.admm_kernel" in lines["WORKER"] and "simstep.integrator.step_end_kernel" in lines["WORKER"]
    assert not [k for k in lines["WORKER"] if k.endswith(".detect_kernel")]
    assert [k for k in lines["DETECTION"] if k.endswith(".detect_kernel")]
    assert lines["REST"] == [], lines["REST"]


def test_newton_compiled_ahead_for_the_admms_own_argument_types():
    """`compile_newton_ahead` (the caller's share while the worker builds the scene) compiles
    the ADMM's semismooth Newton for exactly the argument types `_admm_iterate` passes it, made
    without an operator (`newton_types`): once an ADMM solve has compiled or loaded it, the
    kernel's on-disk cache index gains no entry."""
    import scenes
    import simstep
    from simstep.warmup import compile_newton_ahead, newton_types, synthetic_collision
    from solvers.admm import newton_try
    with synthetic_collision():
        simstep.Simulator(scenes.box_stack(n=2), dt=0.01).run(steps=2)
    assert newton_types() in newton_try.signatures
    before = set(newton_try._cache._cache_file._load_index())
    assert before
    compile_newton_ahead()
    assert set(newton_try._cache._cache_file._load_index()) == before


_INTEGRATION_CHECK = """
import sys
import collision.shapes, scenes, simstep, simstep.world
from simstep import integrator
from simstep.warmup import compile_integration_ahead
loaders = collision.shapes.load_convex_mesh, simstep.world.load_convex_mesh
fn = scenes.SCENES[sys.argv[1]][0]
compile_integration_ahead(fn, {}, None)
assert (collision.shapes.load_convex_mesh, simstep.world.load_convex_mesh) == loaders
kernels = (integrator.articulated_step_kernel, integrator.free_step_kernel, integrator.step_end_kernel,
           integrator.integrate_kernel)
before = [set(k.signatures) for k in kernels]
world = fn()
simstep.Simulator(world, dt=getattr(world, "dt", 1e-3), steady_steps=False).run(steps=3)
print("AHEAD", sum(map(len, before)), "ADDED", sum(len(set(k.signatures) - b) for k, b in zip(kernels, before)))
"""


@pytest.mark.parametrize("scene", ["four_bar", "pendulum", "box_stack", "quadruped"])
def test_integration_compiled_ahead_for_the_real_steps_argument_types(scene):
    """The run's share of a cold start besides the solver (`compile_integration_ahead`: the scene
    built with placeholder hulls and stepped without contacts or constraint rows) steps any scene
    (loop closures only, no contacts, boxes, a URDF robot of meshes) and compiles the free
    dynamics and the integration for the argument types of the real steps: in a fresh process,
    these then add no signature to those kernels. The hulls' loader is restored after."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _INTEGRATION_CHECK, scene], cwd=root, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    ahead, added = (int(x) for x in out.stdout.split()[1::2])
    assert ahead >= 1 and added == 0, out.stdout


def test_placeholder_hulls_have_the_real_hulls_types(tmp_path):
    """Within `placeholder_hulls` a collision mesh loads as a 2 cm cube's hull without reading
    the file, with a real hull's array types (what the worker's kernels are compiled for); the
    loader is the real one again after."""
    import numpy as np
    import trimesh
    from numba import typeof

    import collision.shapes
    from simstep.warmup import placeholder_hulls
    path = str(tmp_path / "box.stl")
    trimesh.creation.box(extents=(0.3, 0.2, 0.1)).export(path)
    real = collision.shapes.load_convex_mesh(path)
    with placeholder_hulls():
        verts, tris = collision.shapes.load_convex_mesh(str(tmp_path / "missing.stl"), (1.0, 1.0, 1.0))
    assert verts.shape == (8, 3) and tris.shape == (12, 3)
    assert np.allclose(np.ptp(verts, axis=0), 0.02)
    assert (typeof(verts), typeof(tris)) == (typeof(real[0]), typeof(real[1]))
    with pytest.raises(FileNotFoundError):
        collision.shapes.load_convex_mesh(str(tmp_path / "missing.stl"))


def test_wait_compile_ahead_for_the_build_then_ready():
    """The caller waits for the worker's BUILT line before its own build (returning at once if
    the worker is already past it), then for READY; a worker that ends releases both waits."""
    import subprocess
    import sys
    import time
    from simstep.warmup import BUILT, wait_compile_ahead
    code = ("import os, time; time.sleep(0.3); os.write(1, b'built\\n'); time.sleep(1.5); "
            "os.write(1, b'ready\\n'); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        wait_compile_ahead(proc, timeout=20, until=BUILT)
        t_built = time.monotonic() - t0
        wait_compile_ahead(proc, timeout=20, until=BUILT)        # seen: no wait
        assert time.monotonic() - t0 - t_built < 0.2
        wait_compile_ahead(proc, timeout=20)
        t_ready = time.monotonic() - t0
        assert 0.2 < t_built < 1.5 and t_ready >= t_built + 1.0
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    ended = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE)
    wait_compile_ahead(ended, timeout=20, until=BUILT)
    wait_compile_ahead(ended, timeout=20)
    ended.wait()
    ended.stdout.close()


def test_worker_gate_reads_the_cores_busy_now(monkeypatch):
    """The first-start worker starts when a second core is idle now (`simstep.warmup._core_free`):
    /proc/stat over a short window, not the 1-minute load average, which stays near 1 for a minute
    after `pip install` or another run on an idle machine. A process spinning on one core shows as
    about one busy core, and its own core (its affinity set to it) as busy; the gate's rule on 2
    cores, the load average where /proc/stat cannot be read, and no worker for a process
    confined to one core (taskset; the worker would share it)."""
    from simstep import warmup as wu
    cpus = wu._cores()
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(spin.pid, {cpus[0]})
            time.sleep(0.1)
        busy = wu._busy_cores()
        here = wu._busy_cores([cpus[0]])
    finally:
        spin.kill()
        spin.wait()
    if busy is None:
        pytest.skip("no /proc/stat on this system")
    assert 0.8 <= busy <= len(cpus) + 0.05
    assert here >= 0.8 or not hasattr(os, "sched_setaffinity"), here
    monkeypatch.setattr(wu, "_cores", lambda: [0, 1])
    for now, load, free in ((0.2, 1.5, True), (0.9, 0.1, False), (None, 0.5, True), (None, 1.2, False)):
        monkeypatch.setattr(wu, "_busy_cores", lambda cpus=None, now=now: now)
        monkeypatch.setattr(wu.os, "getloadavg", lambda load=load: (load, load, load))
        assert wu._core_free() is free, (now, load)
    monkeypatch.setattr(wu, "_cores", lambda: [0])
    assert wu._core_free() is False

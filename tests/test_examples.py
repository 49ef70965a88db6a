"""Every script in examples/ runs (short durations through SIMSTEP_EXAMPLE_DURATION) and
prints what it claims; numbers are checked where a closed form exists."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def run_example(name, tmp_path, duration=0.2):
    env = dict(os.environ, SIMSTEP_EXAMPLE_DURATION=str(duration), SIMSTEP_EXAMPLE_OUT=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"{name}.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_every_example_is_tested():
    scripts = {f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py") and not f.startswith("_")}
    assert scripts == {"boxes", "robot_pd", "contact_forces", "save_and_plot", "viewer_export", "operators"}


def test_boxes(tmp_path):
    out = run_example("boxes", tmp_path)
    assert "box2: position" in out and "201 samples" in out and "converged True" in out


def test_contact_forces_balance_the_weights(tmp_path):
    out = run_example("contact_forces", tmp_path, 0.3)
    f = [float(x) for x in re.search(r"contact force on 'bottom': \[([^\]]+)\]", out).group(1).split()]
    assert np.allclose(f, [0, 0, 2.0 * 9.81], atol=0.02)      # ground 3 g up, top box 1 g down (kg·m/s²)
    ft = [float(x) for x in re.search(r"sensor at 'top' \(its axes\): \[([^\]]+)\]", out).group(1).split()]
    assert np.allclose(ft, [0, 0, 9.81], atol=0.02)


def test_robot_pd_tracks_the_crouch(tmp_path):
    out = run_example("robot_pd", tmp_path, 0.3)
    err = [float(x) for x in re.search(r"knee tracking error \[([^\]]+)\]", out).group(1).split()]
    assert max(abs(e) for e in err) < 0.05                     # of the 0.25 rad step
    h0, h1 = (float(x) for x in re.search(r"pelvis height ([\d.]+) m -> ([\d.]+) m", out).groups())
    assert 0.0 < h0 - h1 < 0.1                                  # crouches, does not fall


def test_save_and_plot(tmp_path):
    import simstep
    out = run_example("save_and_plot", tmp_path, 0.3)
    assert "saved 301 samples" in out
    traj = simstep.load_trajectory(tmp_path / "g1_fall.npz")
    assert traj.q.shape[0] == 301 and len(traj.contacts) == 301
    assert (tmp_path / "g1_fall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_viewer_export(tmp_path):
    out = run_example("viewer_export", tmp_path, 0.2)
    assert (tmp_path / "four_bar.html").stat().st_size > 100_000
    if "four_bar.gif" in out:
        assert (tmp_path / "four_bar.gif").read_bytes()[:6] in (b"GIF89a", b"GIF87a")


def test_operators_agree_with_the_dense_baseline(tmp_path):
    out = run_example("operators", tmp_path)
    assert float(re.search(r"\|D x\| = ([\d.e+-]+)", out).group(1)) < 1e-12
    res = [float(x) for x in re.findall(r"y = x: ([\d.e+-]+)", out)]
    assert len(res) == 2 and res[0] < 1e-9 and res[1] < 1e-6


API_COMMAND = [sys.executable, "-m", "pdoc", "simstep", "models", "collision", "solvers", "scenes", "viewer"]


@pytest.mark.slow
def test_api_reference_builds(tmp_path):
    """The README's command for the API reference (pdoc, dev extra) runs and documents the
    public names."""
    pytest.importorskip("pdoc")
    r = subprocess.run(API_COMMAND + ["-o", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    page = (tmp_path / "simstep.html").read_text()
    for name in ("Simulator", "WorldBuilder", "load_trajectory"):
        assert name in page
    assert "record_video" in (tmp_path / "viewer.html").read_text()

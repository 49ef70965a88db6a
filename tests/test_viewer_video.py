"""viewer.record_video: a movie of a recorded trajectory through headless Chromium and imageio.

Oracles: the decoded file (imageio's ffmpeg/Pillow readers, independent of the writer's
settings) has the frame count of `frame_times`, the frame size asked for, and consecutive
frames differ while a box falls and not once it rests. Skipped without chromium, except
under CI (CI=true) where that is a failure, as in test_viewer_browser.py.
"""
import os

import numpy as np
import pytest

import simstep
from viewer.screenshot import find_chromium

if find_chromium() is None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("chromium is required under CI: apt-get install -y chromium", pytrace=False)
    pytestmark = pytest.mark.skip(reason="chromium not installed (apt-get install -y chromium)")

iio = pytest.importorskip("imageio.v3")


def _falling_box():
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    b.add_box("box", half_extents=(0.1, 0.1, 0.1), mass=1.0, position=(0, 0, 0.6))
    world = b.build()
    sim = simstep.Simulator(world, dt=2e-3)
    # falls 0.5 m in 0.32 s, then rests: 0.3 s of fall and 0.3 s of rest at 10 fps
    return world, sim.run(duration=0.8, record=True)


@pytest.fixture(scope="module")
def falling_box():
    return _falling_box()


@pytest.mark.parametrize("ext", [".mp4", ".gif"])
def test_movie_decodes_with_expected_frames_that_move(tmp_path, falling_box, ext):
    from viewer import record_video
    from viewer.video import frame_times
    world, traj = falling_box
    path = tmp_path / f"box{ext}"
    n = record_video(world, traj, path, fps=10, size=(160, 120), camera=((1.2, -1.6, 0.8), (0, 0, 0.3)))
    times = frame_times(traj, fps=10)
    assert n == len(times) == 9                              # 0.0, 0.1, ..., 0.8 s
    frames = iio.imread(path, index=None)
    if ext == ".gif":      # GIF stores a run of identical frames once, with their summed duration
        from PIL import Image
        with Image.open(path) as im:
            durations = [im.seek(i) or im.info["duration"] for i in range(im.n_frames)]
        assert sum(durations) == pytest.approx(n * 100, abs=n)   # ms: every frame shown for 1/fps
        frames = np.repeat(frames, np.round(np.array(durations) / 100).astype(int), axis=0)
    assert frames.shape[0] == n and frames.shape[1:3] == (120, 160)
    diff = [float(np.abs(frames[i + 1].astype(int) - frames[i].astype(int)).mean()) for i in range(n - 1)]
    falling = [d for d, t in zip(diff, times[1:]) if t <= 0.3]
    resting = [d for d, t in zip(diff, times[:-1]) if t >= 0.5]
    assert min(falling) > 0.1, diff                          # the box moves between frames while it falls
    assert max(resting) < 0.02, diff                         # and the picture stands still once it rests


def test_bad_arguments_are_refused_before_any_browser(tmp_path, falling_box):
    from viewer import record_video
    world, traj = falling_box
    with pytest.raises(ValueError, match=r"\.mp4 or \.gif"):
        record_video(world, traj, tmp_path / "x.avi")
    with pytest.raises(ValueError, match="fps"):
        record_video(world, traj, tmp_path / "x.mp4", fps=0)
    with pytest.raises(ValueError, match="even"):
        record_video(world, traj, tmp_path / "x.mp4", size=(161, 120))
    assert not list(tmp_path.iterdir())

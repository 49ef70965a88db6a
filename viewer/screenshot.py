"""Screenshots of viewer pages with headless Chromium (Debian's ``chromium`` package).

``python -m viewer.screenshot [--out docs]`` writes the README's pictures of the box
pyramid and of G1. `screenshot` also serves the browser tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

# headless, software WebGL, nothing fetched but the page itself
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--hide-scrollbars", "--disable-dev-shm-usage",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


def find_chromium():
    """Path of a Chromium binary ($SIMSTEP_CHROMIUM, /usr/bin/chromium, or on PATH), or None."""
    for c in (os.environ.get("SIMSTEP_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _run_group(cmd, timeout):
    """Run cmd in its own process group; on timeout end that group (chromium's helpers too)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         text=True, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)


def screenshot(url, png_path, size=(960, 720), budget_ms=3000, timeout=60, chromium=None, attempts=3):
    """Load `url` (http:// or file://) in headless Chromium with a fresh profile, let it run
    `budget_ms` of virtual time (scripts, websocket, WebGL frames), and save a PNG.

    A start that hangs (past `timeout` s) or writes nothing is retried with a fresh profile,
    up to `attempts` starts: headless Chromium now and then stalls at start-up on a loaded
    machine (seen once in CI on a page that otherwise renders in 4 s)."""
    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("chromium not found: install Debian's package (apt-get install -y chromium)")
    png_path = os.path.abspath(os.fspath(png_path))
    os.makedirs(os.path.dirname(png_path), exist_ok=True)
    if os.path.exists(png_path):
        os.remove(png_path)
    failures = []
    for _ in range(attempts):
        with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
            cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                   f"--virtual-time-budget={int(budget_ms)}", f"--screenshot={png_path}", url]
            out = _run_group(cmd, timeout)
        if os.path.isfile(png_path):
            return png_path
        if out is None:
            failures.append(f"did not finish within {timeout} s")
        else:
            tail = "\n".join((out.stderr or "").strip().splitlines()[-15:])
            failures.append(f"exit {out.returncode}, no file written:\n{tail}")
    raise RuntimeError(f"chromium wrote no screenshot of {url} in {attempts} starts: " + "; ".join(failures))


def screenshot_world(world, png_path, q=None, size=(960, 720), camera=None, budget_ms=3000, **viewer_options):
    """Picture of `world` at q (default world.q0) from its exported HTML page.
    camera: optional (position, target); viewer_options: as for `SceneRecorder`."""
    from .recording import SceneRecorder
    v = SceneRecorder(world, **viewer_options)
    if camera is not None:
        v.set_camera(*camera)
    if q is not None:
        v.set_pose(q)
    with tempfile.TemporaryDirectory(prefix="viewer-shot-") as d:
        page = v.export_html(os.path.join(d, "scene.html"))
        return screenshot("file://" + page, png_path, size=size, budget_ms=budget_ms)


def compress_png(path, colors=256):
    """Re-save a PNG with an adaptive palette (for small pictures in docs/)."""
    from PIL import Image
    img = Image.open(path).convert("RGB")
    img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


def _pyramid_world():
    import scenes
    if not hasattr(scenes, "box_pyramid"):
        raise RuntimeError("scenes.box_pyramid() is not available")
    return scenes.box_pyramid()


def _g1_world():
    import scenes
    if hasattr(scenes, "humanoid"):
        return scenes.humanoid("g1")
    import models
    import simstep
    urdf, package_dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_urdf("g1", urdf, package_dirs=package_dirs, position=(0, 0, 0.8))
    return b.build()


def main(argv=None):
    p = argparse.ArgumentParser(description="Screenshots of the viewer for the README (needs chromium).")
    p.add_argument("--out", default="docs", help="output folder (default: docs)")
    p.add_argument("--size", default="960x720", help="width x height in pixels")
    p.add_argument("which", nargs="*", help="box_pyramid and/or g1 (default: both)")
    a = p.parse_args(argv)
    a.which = a.which or ["box_pyramid", "g1"]
    bad = sorted(set(a.which) - {"box_pyramid", "g1"})
    if bad:
        p.error(f"unknown picture(s) {bad}; choose from box_pyramid, g1")
    w, h = (int(x) for x in a.size.lower().split("x"))
    makers = {"box_pyramid": _pyramid_world, "g1": _g1_world}
    for name in a.which:
        path = os.path.join(a.out, f"viewer_{name}.png")
        screenshot_world(makers[name](), path, size=(w, h))
        compress_png(path)
        print(f"{path}: {os.path.getsize(path) // 1024} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

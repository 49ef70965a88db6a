"""Movies of a recorded trajectory: `record_video(world, traj, "out.mp4")` (or ``.gif``).

The frames are the viewer's own pictures: the trajectory is exported as the self-contained
HTML replay (`SceneRecorder.export_html`), loaded once in headless Chromium, and for each
frame the page's animation is paused, moved to the frame's time and rendered; the canvas is
read back as PNG through the DevTools protocol (one browser for the whole movie, not one per
frame). imageio encodes them: MP4 (H.264) with the ffmpeg binary of the ``imageio-ffmpeg``
package, GIF with Pillow.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import subprocess
import tempfile
import time

import numpy as np

from .screenshot import CHROMIUM_FLAGS, find_chromium

VIDEO_FORMATS = (".mp4", ".gif")

# pause the replay, move it to time t (s from its start), render, return the canvas as PNG
_FRAME_JS = """(function (t) {
  var a = viewer.animator;
  if (!a.simstepActive) { a.play(); a.simstepActive = true; }   // activate the clips once
  a.pause();
  a.seek(t);
  viewer.render();
  return viewer.renderer.domElement.toDataURL("image/png");
})(%r)"""
_READY_JS = ("typeof viewer !== 'undefined' && viewer.animator !== undefined && "
             "viewer.animator.actions !== undefined && viewer.animator.actions.length > 0")


class _DevTools:
    """One headless Chromium page driven over the DevTools protocol (a websocket)."""

    def __init__(self, url, size, timeout, chromium=None):
        from websockets.sync.client import connect
        exe = chromium or find_chromium()
        if exe is None:
            raise FileNotFoundError("chromium not found: install Debian's package (apt-get install -y chromium)")
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile.name}", f"--window-size={size[0]},{size[1]}",
               "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                      text=True, start_new_session=True)
        self._id = 0
        self._ws = None
        try:
            ws_url = self._browser_url(timeout)
            self._stack = contextlib.ExitStack()
            self._ws = self._stack.enter_context(connect(ws_url, max_size=None, open_timeout=timeout))
            self._timeout = timeout
            target = self._call("Target.createTarget", url="about:blank")["targetId"]
            self._session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self._call("Emulation.setDeviceMetricsOverride", session=True, width=int(size[0]), height=int(size[1]),
                       deviceScaleFactor=1, mobile=False)
            self._call("Page.navigate", session=True, url=url)
        except BaseException:
            self.close()
            raise

    def _browser_url(self, timeout):
        t_end = time.monotonic() + timeout
        lines = []
        while time.monotonic() < t_end:
            line = self._proc.stderr.readline()
            if not line:
                if self._proc.poll() is not None:
                    break
                continue
            lines.append(line.rstrip())
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                return m.group(1)
        raise RuntimeError("headless chromium did not start its DevTools endpoint: " + " | ".join(lines[-5:]))

    def _call(self, method, session=False, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        self._ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self._ws.recv(timeout=self._timeout))
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"chromium {method}: {reply['error'].get('message')}")
                return reply.get("result", {})

    def evaluate(self, expression):
        res = self._call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails'].get('text')}: "
                               f"{res['exceptionDetails'].get('exception', {}).get('description')}")
        return res["result"].get("value")

    def wait_for(self, expression, timeout):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if self.evaluate(expression):
                return
            time.sleep(0.05)
        raise RuntimeError(f"the replay page did not load within {timeout} s")

    def close(self):
        if self._ws is not None:
            try:
                self._stack.close()
            except Exception:
                pass
            self._ws = None
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, 9)
            except ProcessLookupError:
                pass
            self._proc.wait()
        self._proc.stderr.close()
        self._profile.cleanup()


def frame_times(traj, fps=30.0, speed=1.0):
    """Times (s from the trajectory's start) of the frames of a movie at `fps` frames per
    second of video, `speed` simulated seconds per video second; the last sample included."""
    t = np.asarray(traj.t if hasattr(traj, "t") else traj[0], float)
    span = float(t[-1] - t[0])
    step = speed / fps
    n = int(np.floor(span / step + 1e-9)) + 1
    return np.arange(n) * step


def render_frames(world, traj, times, size=(640, 480), camera=None, chromium=None, timeout=60.0, **viewer_options):
    """Pictures (k, height, width, 3) uint8 of `traj` at `times` (s from its start), as the
    HTML replay draws them. camera: optional (position, target); viewer_options: as for
    `SceneRecorder` (contacts=True with recorded contacts draws the force arrows)."""
    from PIL import Image

    from .recording import SceneRecorder
    v = SceneRecorder(world, **viewer_options)
    if camera is not None:
        v.set_camera(*camera)
    frames = []
    with tempfile.TemporaryDirectory(prefix="viewer-video-") as d:
        page = v.export_html(os.path.join(d, "replay.html"), traj, autoplay=False)
        browser = _DevTools("file://" + page, size, timeout, chromium)
        try:
            browser.wait_for(_READY_JS, timeout)
            for t in times:
                url = browser.evaluate(_FRAME_JS % float(t))
                png = base64.b64decode(url.split(",", 1)[1])
                frames.append(np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))
        finally:
            browser.close()
    return np.stack(frames) if frames else np.zeros((0, size[1], size[0], 3), np.uint8)


def record_video(world, traj, path, fps=30.0, speed=1.0, size=(640, 480), camera=None, chromium=None,
                 timeout=60.0, **viewer_options):
    """Write a movie of `traj` (``traj.t``, ``traj.q``, e.g. from ``sim.run(record=True)``) to
    `path`: ``.mp4`` (H.264, ffmpeg from imageio-ffmpeg) or ``.gif``. fps: frames per second
    of video; speed: simulated seconds per video second (0.25: slow motion); size: (width,
    height) in pixels (even numbers for MP4); camera: (position, target), default framed
    automatically; viewer_options: as for `SceneRecorder` (e.g. ``contacts=True``). Returns
    the number of frames written. Needs Chromium (``apt-get install chromium``)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in VIDEO_FORMATS:
        raise ValueError(f"record_video writes {' or '.join(VIDEO_FORMATS)} files, got {path!r}")
    for name, x in (("fps", fps), ("speed", speed)):
        if not (isinstance(x, (int, float)) and np.isfinite(x) and x > 0):
            raise ValueError(f"{name} must be a positive number, got {x!r}")
    w, h = (int(s) for s in size)
    if w < 16 or h < 16 or (ext == ".mp4" and (w % 2 or h % 2)):
        raise ValueError(f"size must be (width, height) of at least 16 pixels, even for MP4, got {size!r}")
    import imageio.v2 as imageio
    times = frame_times(traj, fps, speed)
    frames = render_frames(world, traj, times, (w, h), camera, chromium, timeout, **viewer_options)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if ext == ".gif":
        imageio.mimsave(path, list(frames), duration=1000.0 / fps, loop=0)
    else:
        with imageio.get_writer(path, fps=fps, codec="libx264", quality=8, pixelformat="yuv420p",
                                macro_block_size=1) as writer:
            for f in frames:
                writer.append_data(f)
    return len(frames)

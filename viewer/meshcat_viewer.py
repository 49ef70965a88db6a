"""`MeshcatViewer`: the live meshcat session of a `World` (server, frame pacing, live poses and
contacts, animated playback). The scene itself, its recording and the HTML export are
`viewer.recording.SceneRecorder`'s, which this class extends with the connection."""
from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np

from .recording import LOOP_FOREVER, SceneRecorder, as_trajectory, contact_arrows, export_html  # noqa: F401 (re-exported)
from .transport import Channel, ViewerConnectionError, pack_transforms


class MeshcatViewer(SceneRecorder):
    """Draws a `simstep.World` in meshcat, live; everything it draws is also recorded
    (`SceneRecorder`: `export_html`, the scene and overlay options).

    zmq_url: connect to a running meshcat server; else, if `server`, start one (a subprocess
    on localhost, stopped by `close`); ``server=False`` draws nothing live (only `export_html`
    is useful then). fps: live frame rate of `update`. realtime: `update` with t sleeps so that
    the view does not run ahead of simulated time. open_browser: open the page. timeout (s):
    server start-up and explicit waits; `update` itself never waits for the server or a
    browser. The other options are `SceneRecorder`'s (geometry, contacts, force_scale,
    max_arrow, contact_radius, arrow_radius, mesh_colors, camera, root, grid, axes, anchors,
    shadows).
    """

    def __init__(self, world, zmq_url=None, server=True, fps=30.0, geometry="visual", contacts=False,
                 force_scale=0.01, max_arrow=0.6, contact_radius=0.012, arrow_radius=0.006,
                 mesh_colors=True, realtime=False, camera="auto", open_browser=False, timeout=10.0,
                 root="/meshcat/simstep", grid=True, axes=False, anchors=True, shadows=True):
        if not (np.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be positive, got {fps}")
        if not (np.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.fps = float(fps)
        self.realtime = bool(realtime)
        self.timeout = float(timeout)
        self.frames_sent = 0
        self._period = 1.0 / self.fps
        self._next_frame = -math.inf
        self._sync = None
        self._proc = None
        self._channel = None
        self.web_url = None
        self.zmq_url = None
        self._live = (zmq_url, bool(server))
        super().__init__(world, geometry=geometry, contacts=contacts, force_scale=force_scale, max_arrow=max_arrow,
                         contact_radius=contact_radius, arrow_radius=arrow_radius, mesh_colors=mesh_colors,
                         camera=camera, root=root, grid=grid, axes=axes, anchors=anchors, shadows=shadows)
        self._sent_T = np.full_like(self._T, np.nan)     # what the server has (NaN: nothing yet)
        self.display(world.q0)
        if open_browser and self.web_url:
            import webbrowser
            webbrowser.open(self.web_url, new=2)

    # ------------------------------------------------------------------ connection
    def _open_session(self):
        zmq_url, server = self._live
        if zmq_url is not None or server:
            self._connect(zmq_url)

    def _connect(self, zmq_url):
        if zmq_url is None:
            with warnings.catch_warnings():   # meshcat imports a deprecated pyzmq module
                warnings.simplefilter("ignore", DeprecationWarning)
                from meshcat.servers.zmqserver import start_zmq_server_as_subprocess
            self._proc, zmq_url, self.web_url = start_zmq_server_as_subprocess()
        self.zmq_url = zmq_url
        self._channel = Channel(zmq_url, timeout=self.timeout)
        if self.web_url is None:
            try:
                self.web_url = self._channel.request(b"url", timeout=self.timeout).decode()
            except ViewerConnectionError:
                self._channel.close()
                raise ViewerConnectionError(f"no meshcat server answers at {zmq_url} "
                                            f"(waited {self.timeout} s)") from None

    def url(self):
        """The web page of the live viewer (None without a server), as meshcat's ``Visualizer.url()``."""
        return self.web_url

    def _send(self, kind, path, data):
        if self._channel is not None:
            self._channel.send(kind, path, data, reliable=True)

    def _send_many(self, kind, paths, msgs):
        if self._channel is None:
            return True
        return self._channel.send_many(kind, [p.encode() for p in paths], msgs)

    # ------------------------------------------------------------------ live poses
    def flush(self, timeout=None):
        """Wait until the server has every command sent so far; False on timeout."""
        if self._channel is None:
            return True
        return self._channel.flush(self.timeout if timeout is None else timeout)

    def _send_pose(self, q, reliable=False):
        """Send the transforms of the bodies that moved since the last frame the server took."""
        T = self._body_transforms(q)
        self._last_q = np.array(q, dtype=float)
        if self._channel is not None and len(T):
            if self._proc is not None and self._proc.poll() is not None:
                self._server_gone()
                return
            moved = np.flatnonzero(~(np.abs(T - self._sent_T).reshape(len(T), 16).max(axis=1) <= 1e-9))  # NaN: never sent
            if len(moved):
                ok = self._channel.send_many("set_transform", [self._body_paths_b[i] for i in moved],
                                             pack_transforms([self._body_prefix[i] for i in moved], T[moved]),
                                             reliable=reliable)
                if not ok:
                    return
                self._sent_T[moved] = T[moved]
        self.frames_sent += 1

    @property
    def frames_dropped(self):
        """Live frames not sent because the server lagged (the simulation never waits)."""
        return 0 if self._channel is None else self._channel.dropped

    def _server_gone(self):
        warnings.warn(f"the meshcat server (pid {self._proc.pid}) has exited; the viewer stops sending",
                      RuntimeWarning, stacklevel=3)
        self._channel.close()
        self._channel = None

    def update(self, q, t=None, contacts=None, dt=None, force=False):
        """Live hook, cheap enough to call every simulation step: sends the pose only when a
        frame is due at `fps` (wall clock), else returns at once. Never waits for the
        browser or the server (with ``realtime=True`` it sleeps to keep pace with t).
        Returns True if a frame was due (sent, or dropped if the server lags). contacts: drawn if the viewer was made with
        ``contacts=True`` (formats: `contact_arrows`); dt turns impulses into forces."""
        now = time.perf_counter()
        if self.realtime and t is not None:
            if self._sync is None or t < self._sync[0]:    # first call, or the time was reset
                self._sync = (float(t), now)
            ahead = (float(t) - self._sync[0]) - (now - self._sync[1])
            if ahead > 2e-3:          # sleep in slices of a few ms, not every step
                time.sleep(ahead)
                now = time.perf_counter()
        if now < self._next_frame and not force:
            return False
        self._next_frame = now + self._period
        self._send_pose(q)
        if self.show_contacts and contacts is not None:
            self.draw_contacts(*contact_arrows(contacts, dt=dt))
        return True

    def display(self, q, contacts=None, dt=None):
        """Show configuration q (and contacts, if enabled) now, and wait for the server to take it."""
        q = self.model.check_q(q)
        self._send_pose(q, reliable=True)
        if self.show_contacts and contacts is not None:
            self.draw_contacts(*contact_arrows(contacts, dt=dt))
        if not self.flush():
            warnings.warn("the meshcat server did not acknowledge the pose in time", RuntimeWarning, stacklevel=2)

    # ------------------------------------------------------------------ playback
    def play(self, traj, contacts=None, dt=None, fps=60.0, repetitions=1):
        """Play a recorded trajectory (``traj.t``, ``traj.q``, or a (t, q) pair) as a meshcat
        animation at real time, with play/pause and a time slider in the page's Animations
        menu. contacts: one entry per sample (or ``traj.contacts``), drawn if the viewer has
        ``contacts=True``; dt turns impulses into forces."""
        anim, q_first = self._animation(traj, contacts, dt, fps, True, repetitions)
        self._send_pose(q_first, reliable=True)
        self._record.animation = anim
        if self._channel is not None:
            self._channel.send("set_animation", "", anim, reliable=True)
        self.flush()

    # ------------------------------------------------------------------ life cycle
    def serve_forever(self):
        """Print the URL and keep the server alive until Ctrl-C (for a command line's --view)."""
        if self.web_url is None:
            raise RuntimeError("this viewer has no server (made with server=False)")
        print(f"meshcat viewer: {self.web_url}  (Ctrl-C to stop)", file=sys.stderr, flush=True)
        try:
            while self._proc is None or self._proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self):
        """Stop talking to the server, and stop the server if this viewer started it."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"MeshcatViewer(url={self.web_url!r}, bodies={len(self._bodies)}, fps={self.fps:g})"

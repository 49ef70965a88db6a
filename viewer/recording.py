"""The scene of a `World` as recorded meshcat commands, and its export: `SceneRecorder` turns
geometry, poses, contact overlays, the camera and recorded trajectories (animations) into
meshcat's messages and keeps them, so that a self-contained HTML page (`export_html`) or a
video (`viewer.video`) can replay them without a server. The live session that also sends
them to a meshcat server is `viewer.MeshcatViewer`, a `SceneRecorder`."""
from __future__ import annotations

import math
import re

import numpy as np

import models
from models.spatial import matrices_to_quats_xyzw

from .scene import (SceneRecord, anchor_objects, arrow_object, geometry_objects, grid_object, load_mesh,
                    point_object, set_object_bytes, set_property_bytes, shadow_light_object, world_anchors,
                    write_html)
from .transport import pack, pack_floats32, pack_transforms, transform_prefix

INTERPOLATE_DISCRETE = 2300   # three.js InterpolateDiscrete
HIDDEN = np.diag([1e-9, 1e-9, 1e-9, 1.0])   # an overlay item shrunk out of sight
POINT_COLOR = (0.95, 0.1, 0.1, 1.0)
ARROW_COLOR = (1.0, 0.85, 0.1, 1.0)


def _segment(name):
    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", str(name))
    return s or "_"


def _node_path(name):
    """A meshcat path from a body or geometry name; '/' keeps nesting (robot/link)."""
    return "/".join(_segment(p) for p in str(name).split("/") if p) or "_"


def as_trajectory(traj, nq):
    """(t (k,), q (k, nq)) of a trajectory object with ``.t``/``.q`` or a ``(t, q)`` pair."""
    if hasattr(traj, "t") and hasattr(traj, "q"):
        t, q = traj.t, traj.q
    elif isinstance(traj, (tuple, list)) and len(traj) == 2:
        t, q = traj
    else:
        raise TypeError(f"a trajectory needs .t and .q (or is a (t, q) pair), got {type(traj).__name__}")
    t = np.asarray(t, dtype=float).reshape(-1)
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape != (len(t), nq):
        raise ValueError(f"trajectory q has shape {q.shape}, expected ({len(t)}, {nq}) to match t and the model")
    if len(t) == 0:
        raise ValueError("trajectory is empty")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ValueError("trajectory times must be finite and non-decreasing")
    return t, q


def contact_arrows(contacts, impulses=None, dt=None):
    """Positions (k, 3) and force vectors (k, 3) or None, from any contact description.

    Accepts None; a ``(positions, forces)`` pair of arrays; or a `collision`-style object
    with ``.position`` (k, 3) and ``.frame`` (k, 3, 3) whose columns are (t1, t2, n), and
    impulses (k, 3) in that frame (argument, or ``.impulses``/``.impulse`` attribute).
    Impulses become world vectors ``frame @ λ``, divided by `dt` if given (forces).
    """
    if contacts is None:
        return np.zeros((0, 3)), None
    if isinstance(contacts, (tuple, list)) and len(contacts) == 2 and not hasattr(contacts, "position"):
        P, F = contacts
    else:
        P = getattr(contacts, "position", getattr(contacts, "positions", None))
        if P is None:
            raise TypeError(f"contacts must be (positions, forces) or have .position, got {type(contacts).__name__}")
        frame = getattr(contacts, "frame", getattr(contacts, "frames", None))
        lam = impulses
        if lam is None:
            lam = getattr(contacts, "impulses", getattr(contacts, "impulse", None))
        F = None
        if lam is not None:
            if frame is None:
                raise ValueError("contact impulses need the contact frames (.frame) to draw forces")
            frame = np.asarray(frame, float)
            lam = np.asarray(lam, float)
            if frame.ndim != 3 or frame.shape[1:] != (3, 3) or lam.shape != (len(frame), 3):
                raise ValueError(f"contact frames {frame.shape} and impulses {lam.shape} must be (k, 3, 3) and (k, 3)")
            F = np.einsum("kij,kj->ki", frame, lam)
            if dt is not None:
                F = F / float(dt)
    P = np.asarray(P, float).reshape(-1, 3) if np.size(P) else np.zeros((0, 3))
    if not np.all(np.isfinite(P)):
        raise ValueError("contact positions contain NaN or inf")
    if F is not None:
        F = np.asarray(F, float)
        if F.shape != P.shape or not np.all(np.isfinite(F)):
            raise ValueError(f"contact forces must be finite with the shape of the positions {P.shape}, got {F.shape}")
    return P, F


def _frames_along(d):
    """Rotations (k, 3, 3) whose third column is the unit vector d (k, 3)."""
    k = len(d)
    e = np.tile([1.0, 0.0, 0.0], (k, 1))
    e[np.abs(d[:, 0]) > 0.9] = [0.0, 1.0, 0.0]
    a = np.cross(e, d)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = np.cross(d, a)
    return np.stack([a, b, d], axis=2)


LOOP_FOREVER = 2 ** 31 - 1     # repetitions of a looping replay (three.js counts them)


class SceneRecorder:
    """The meshcat scene of a `simstep.World`, recorded (no server; `MeshcatViewer` adds one).

    world: the built world. geometry: "visual", "collision" or "both" (collision translucent).
    contacts: draw contact points (red) and force arrows on body 1 (yellow) when contact data
    is given; force_scale (m per N), max_arrow (m), contact_radius, arrow_radius (m).
    mesh_colors: use colours stored in OBJ/DAE files. camera: "auto" frames the scene, None
    keeps meshcat's default. root: the meshcat path of the scene. grid: grid lines on the
    ground (z = 0, every 0.5 m); axes: meshcat's world axes; anchors: pins (and posts down to
    the floor) where joints and loop closures hold mechanisms to the world. shadows: a light
    from above casts the bodies' shadows on the ground (and on each other), so that feet and
    boxes are seen touching it (`scene.shadow_light_object`).
    """

    def __init__(self, world, geometry="visual", contacts=False, force_scale=0.01, max_arrow=0.6,
                 contact_radius=0.012, arrow_radius=0.006, mesh_colors=True, camera="auto",
                 root="/meshcat/simstep", grid=True, axes=False, anchors=True, shadows=True):
        if not hasattr(world, "model") or not hasattr(world, "q0"):
            raise TypeError(f"{type(self).__name__} needs a built simstep World, got {type(world).__name__}")
        if geometry not in ("visual", "collision", "both"):
            raise ValueError(f"geometry must be 'visual', 'collision' or 'both', got {geometry!r}")
        for nm, x in (("force_scale", force_scale), ("max_arrow", max_arrow),
                      ("contact_radius", contact_radius), ("arrow_radius", arrow_radius)):
            if not (np.isfinite(x) and x > 0):
                raise ValueError(f"{nm} must be positive, got {x}")
        if camera not in ("auto", None):
            raise ValueError(f"camera must be 'auto' or None, got {camera!r}; use set_camera() to place it")
        self.world = world
        self.model = world.model
        self.show_contacts = bool(contacts)
        self.force_scale, self.max_arrow = float(force_scale), float(max_arrow)
        self.contact_radius, self.arrow_radius = float(contact_radius), float(arrow_radius)
        self.root = "/" + root.strip("/")
        self._record = SceneRecord()
        self._last_q = np.array(world.q0, dtype=float)
        self._pool = {"points": 0, "forces": 0}
        self._shown = {"points": np.zeros(0, bool), "forces": np.zeros(0, bool)}
        self._pool_prefix = {"points": [], "forces": []}
        self._pool_path = {"points": [], "forces": []}
        self._camera = None
        self._camera_auto = False
        # build the geometry first: bad meshes fail before a live session starts
        self._objects = self._scene_objects(geometry, mesh_colors)
        self._open_session()
        self._emit_scene(grid, axes, anchors, shadows, camera)

    def _open_session(self):
        """Where a live session connects, between building the scene and emitting it: none here."""

    def _emit_scene(self, grid, axes, anchors, shadows, camera):
        """Every object of the scene, its static placements, lights and camera."""
        world = self.world
        self._send_delete(self.root)
        self._send_delete(self.root + "_contacts")
        for path, data in self._objects:
            self._emit_object(path, data)
        for path, data in self._static_transforms:
            self._emit_transform(path, data)
        self._emit_property("/Grid", "visible", False)       # meshcat's grid: invisible on a grey ground
        self._emit_property("/Axes", "visible", bool(axes))
        if grid:
            self._emit_object(self.root + "/grid", set_object_bytes(self.root + "/grid", grid_object()))
        if anchors:
            for suffix, obj, T in anchor_objects(self.model, world.q0, world_anchors(world)):
                p = f"{self.root}/anchors/{suffix}"
                self._emit_object(p, set_object_bytes(p, obj))
                self._emit_transform(p, pack_transforms([transform_prefix(p)], T[None])[0])
        if shadows:
            bounds = self._bounds()
            if bounds is not None:
                p = self.root + "/shadow_light"
                # the region that may move in a replay: 1 m beyond the initial scene's sphere
                self._emit_object(p, set_object_bytes(p, shadow_light_object(bounds[0], bounds[1] + 1.0)))
                for light in ("PointLightNegativeX", "PointLightPositiveX"):     # it replaces meshcat's
                    self._emit_property(f"/Lights/{light}/<object>", "intensity", 0.0)   # lights from above
        if camera == "auto":
            self._auto_camera()

    # ------------------------------------------------------------------ set-up
    def _scene_objects(self, geometry, mesh_colors):
        """Encode every geometry; remember which bodies carry geometry and the static placements."""
        sets = []
        if geometry in ("visual", "both"):
            sets.append(("", self.world.visuals, None))
        if geometry in ("collision", "both"):
            sets.append(("collision/" if geometry == "both" else "", self.world.geometries,
                         0.4 if geometry == "both" else None))
        objects, static_T = [], []
        bodies, used = [], set()
        self._extents = []     # (geometry, bounding radius) for framing the camera
        for prefix, geoms, opacity in sets:
            for g in geoms:
                b = int(g.body)
                base = (self.root + "/static") if b < 0 else (self.root + "/bodies/" + _node_path(self.model.body_names[b]))
                leaf = _segment(str(g.name).rsplit("/", 1)[-1])
                path = f"{base}/{prefix}{leaf}"
                k = 1
                while path in used:
                    k += 1
                    path = f"{base}/{prefix}{leaf}_{k}"
                used.add(path)
                for suffix, obj, T in geometry_objects(g, mesh_colors=mesh_colors, opacity=opacity):
                    p = f"{path}/{suffix}" if suffix else path
                    objects.append((p, set_object_bytes(p, obj)))
                    static_T.append((p, pack_transforms([transform_prefix(p)], T[None])[0]))
                if b >= 0 and b not in bodies:
                    bodies.append(b)
                self._extents.append((g, self._bounding_radius(g)))
        self._bodies = np.array(sorted(bodies), dtype=np.int64)
        self._body_paths = [self.root + "/bodies/" + _node_path(self.model.body_names[b]) for b in self._bodies]
        self._body_prefix = [transform_prefix(p) for p in self._body_paths]
        self._body_paths_b = [p.encode() for p in self._body_paths]
        self._T = np.tile(np.eye(4), (len(self._bodies), 1, 1))
        self._static_transforms = static_T
        return objects

    @staticmethod
    def _bounding_radius(g):
        s = np.asarray(g.size, float).reshape(-1)
        if g.kind == "box":
            return float(np.linalg.norm(s[:3]))
        if g.kind == "sphere":
            return float(s[0])
        if g.kind == "capsule":
            return float(s[0] + 0.5 * s[1])
        if g.kind == "cylinder":
            return float(math.hypot(s[0], 0.5 * s[1]))
        if g.kind == "mesh":
            parts = load_mesh(g.mesh)
            sc = np.asarray(g.scale, float)
            return float(max(np.linalg.norm(v * sc, axis=1).max() for v, _, _ in parts))
        return None   # planes do not count for framing

    # ------------------------------------------------------------------ emitting
    def _send(self, kind, path, data):
        """Hand one command to a live session: nothing here (`MeshcatViewer` sends it)."""

    def _send_many(self, kind, paths, msgs):
        """Hand a batch of transforms to a live session, all or nothing; True if taken."""
        return True

    def _emit_object(self, path, data):
        self._record.set_object(path, data)
        self._send("set_object", path, data)

    def _emit_property(self, path, key, value):
        data = set_property_bytes(path, key, value)
        self._record.set_property(path, key, data)
        self._send("set_property", path, data)

    def _emit_transform(self, path, data):
        self._record.set_transform(path, data)
        self._send("set_transform", path, data)

    def _send_delete(self, path):
        self._send("delete", path, pack({"type": "delete", "path": path}))

    # ------------------------------------------------------------------ poses
    def _body_transforms(self, q):
        oR, op = models.forward_kinematics(self.model, q)
        T = self._T
        if len(self._bodies):
            T[:, :3, :3] = oR[self._bodies]
            T[:, :3, 3] = op[self._bodies]
        return T

    def set_pose(self, q):
        """Record configuration q as the scene's current pose (what `export_html` shows without
        a trajectory); returns the body transforms (k, 4, 4)."""
        q = self.model.check_q(q)
        self._last_q = np.array(q, dtype=float)
        return self._body_transforms(q)

    # ------------------------------------------------------------------ overlays
    def _pool_object(self, kind, i):
        path = f"{self.root}_contacts/{kind}/{i}"
        obj = (point_object(self.contact_radius, POINT_COLOR) if kind == "points"
               else arrow_object(self.arrow_radius, ARROW_COLOR))
        return path, set_object_bytes(path, obj)

    def _grow_pool(self, kind, n):
        """Make sure `n` overlay objects of `kind` exist; new ones start hidden."""
        for i in range(self._pool[kind], n):
            path, data = self._pool_object(kind, i)
            self._emit_object(path, data)
            self._pool_prefix[kind].append(transform_prefix(path))
            self._pool_path[kind].append(path)
            self._record.set_transform(path, pack_transforms([transform_prefix(path)], HIDDEN[None])[0])
        if n > self._pool[kind]:
            self._shown[kind] = np.concatenate([self._shown[kind], np.zeros(n - self._pool[kind], bool)])
            self._pool[kind] = n

    def _arrow_transforms(self, P, F, scale=None):
        """Transforms (k, 4, 4) of the unit arrow stretched to the vectors F (length
        |f| scale, default force_scale, at most max_arrow), and the mask of non-zero ones."""
        v = F * (self.force_scale if scale is None else float(scale))
        L = np.linalg.norm(v, axis=1)
        ok = L > 1e-9
        d = np.zeros_like(v)
        d[ok] = v[ok] / L[ok, None]
        d[~ok] = [0.0, 0.0, 1.0]
        R = _frames_along(d)
        R[:, :, 2] *= np.minimum(L, self.max_arrow)[:, None]
        T = np.tile(np.eye(4), (len(P), 1, 1))
        T[:, :3, :3] = R
        T[:, :3, 3] = P
        return T, ok

    def _pool_frame(self, kind, T, want):
        """Send the transforms of the pool items to show (T, for items 0..k-1 where `want`)
        and shrink the ones shown before but not now, as one all-or-nothing batch that a
        lagging server may drop without leaving the view inconsistent."""
        n = self._pool[kind]
        w = np.zeros(n, bool)
        w[:len(want)] = want
        idx = np.flatnonzero(w | self._shown[kind])
        if len(idx) == 0:
            return
        Ts = np.tile(HIDDEN, (len(idx), 1, 1))
        on = w[idx]
        Ts[on] = T[idx[on]]
        msgs = pack_transforms([self._pool_prefix[kind][i] for i in idx], Ts)
        paths = [self._pool_path[kind][i] for i in idx]
        for p, m in zip(paths, msgs):
            self._record.set_transform(p, m)
        if self._send_many("set_transform", paths, msgs):
            self._shown[kind] = w

    def draw_contacts(self, positions, forces=None, scale=None):
        """Draw contact points (k, 3) and, if given, arrows for forces (k, 3) [N] on body 1
        (or any vectors, e.g. normals), replacing the previous ones. Arrow length =
        |f| scale (default force_scale m/N), at most max_arrow."""
        if scale is not None and not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be positive, got {scale}")
        P, F = contact_arrows((positions, forces))
        k = len(P)
        self._grow_pool("points", k)
        T = np.tile(np.eye(4), (k, 1, 1))
        T[:, :3, 3] = P
        self._pool_frame("points", T, np.ones(k, bool))
        if F is not None:
            self._grow_pool("forces", k)
            T, ok = self._arrow_transforms(P, F, scale)
            self._pool_frame("forces", T, ok)
        else:
            self._pool_frame("forces", np.zeros((0, 4, 4)), np.zeros(0, bool))

    def draw_collision_contacts(self, contacts, impulses=None, dt=None):
        """Draw `collision`-style contacts (.position (k,3), .frame (k,3,3)) with impulses
        (k, 3) in the contact frames (t1, t2, n); dt converts impulses to forces."""
        self.draw_contacts(*contact_arrows(contacts, impulses, dt))

    def clear_contacts(self):
        """Hide every contact point and arrow."""
        self.draw_contacts(np.zeros((0, 3)))

    # ------------------------------------------------------------------ camera
    def set_camera(self, position, target=(0.0, 0.0, 0.0)):
        """Place the camera at `position` (world, z up) looking at `target`. Exported pages
        honor the target; meshcat's live page (0.3.2) always orbits around the world origin."""
        self._place_camera(position, target, auto=False)

    def _place_camera(self, position, target, auto):
        p = np.asarray(position, float).reshape(3)
        c = np.asarray(target, float).reshape(3)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(c))) or np.linalg.norm(p - c) < 1e-9:
            raise ValueError(f"camera position {p} and target {c} must be finite and distinct")
        self._camera = (p, c)
        self._camera_auto = auto
        # live: the camera sits in a frame rotated so that its y is world z; it looks at the origin
        live = p if np.linalg.norm(c) < 1e-9 else c + (p - c) * (1.0 + np.linalg.norm(c) / np.linalg.norm(p - c))
        self._emit_property("/Cameras/default/rotated/<object>", "position",
                            [float(live[0]), float(live[2]), float(-live[1])])

    def _bounds(self, qs=None):
        """(center (3,), radius) m of the geometry (planes left out) at the configurations qs
        (default: q0), or None if there is none."""
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for q in (self.world.q0,) if qs is None else qs:
            oR, op = models.forward_kinematics(self.model, q)
            for g, r in self._extents:
                if r is None:
                    continue
                c = np.asarray(g.translation, float)
                if g.body >= 0:
                    c = oR[g.body] @ c + op[g.body]
                lo, hi = np.minimum(lo, c - r), np.maximum(hi, c + r)
        if not np.all(np.isfinite(lo)):
            return None
        return 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 0.05)

    def _auto_camera(self, qs=None):
        """Frame the geometry at the configurations qs (default: q0), seen from the front-right."""
        bounds = self._bounds(qs)
        if bounds is None:
            return
        center, radius = bounds
        direction = np.array([0.7, -1.0, 0.55])
        dist = 0.9 * radius / math.sin(math.radians(75.0 / 2))
        self._place_camera(center + dist * direction / np.linalg.norm(direction), center, auto=True)

    # ------------------------------------------------------------------ animation
    def _animation(self, traj, contacts=None, dt=None, fps=60.0, autoplay=True, repetitions=1):
        """Encode a trajectory as a meshcat animation; returns (bytes, first sampled q).
        Keys are sampled at `fps` of simulated time; times are seconds, so it plays at real time."""
        t, Q = as_trajectory(traj, self.model.nq)
        if not (np.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be positive, got {fps}")
        if contacts is None and self.show_contacts:
            contacts = getattr(traj, "contacts", None)
        if dt is None:
            dt = getattr(traj, "dt", None)       # a recorded Trajectory: impulses → forces (N)
        if contacts is not None and len(contacts) != len(t):
            raise ValueError(f"contacts has {len(contacts)} entries for a trajectory of {len(t)} samples")
        span = t[-1] - t[0]
        grid = t[0] + np.arange(0.0, span, 1.0 / fps) if span > 0 else t[:1]
        idx = np.unique(np.concatenate([np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1),
                                        [len(t) - 1]]))
        if self._camera_auto:     # frame the whole motion, not only its start
            self._auto_camera(Q[idx[np.linspace(0, len(idx) - 1, min(len(idx), 12)).astype(int)]])
        nb, n = len(self._bodies), len(idx)
        pos, rot = np.empty((nb, n, 3)), np.empty((nb, n, 3, 3))
        for j, i in enumerate(idx):
            oR, op = models.forward_kinematics(self.model, Q[i])
            pos[:, j], rot[:, j] = op[self._bodies], oR[self._bodies]
        times = pack_floats32(t[idx] - t[0])

        def track(name, kind, values, discrete=False):
            tr = {"name": name, "type": kind, "times": times, "values": pack_floats32(np.ravel(values))}
            if discrete:   # overlay items change identity between samples: no interpolation
                tr["interpolation"] = INTERPOLATE_DISCRETE
            return tr

        anims = [(self._body_paths[b], [track(".position", "vector3", pos[b]),
                                        track(".quaternion", "quaternion", matrices_to_quats_xyzw(rot[b]))]) for b in range(nb)]
        if contacts is not None and self.show_contacts:
            frames = [contact_arrows(contacts[i], dt=dt) for i in idx]
            K = max(len(P) for P, _ in frames)
            has_f = any(F is not None for _, F in frames)
            self._grow_pool("points", K)
            if has_f:
                self._grow_pool("forces", K)
            h = HIDDEN[0, 0]
            p_pos, p_scale = np.zeros((K, n, 3)), np.full((K, n, 3), h)
            f_quat, f_scale = np.tile([0.0, 0.0, 0.0, 1.0], (K, n, 1)), np.full((K, n, 3), h)
            for j, (P, F) in enumerate(frames):
                k = len(P)
                p_pos[:k, j], p_scale[:k, j] = P, 1.0
                if F is not None and k:
                    T, ok = self._arrow_transforms(P, F)
                    R = T[:, :3, :3].copy()
                    L = np.linalg.norm(R[:, :, 2], axis=1)
                    R[:, :, 2] /= np.where(L > 0, L, 1.0)[:, None]
                    f_quat[:k, j] = matrices_to_quats_xyzw(R)
                    f_scale[:k, j][ok] = np.stack([np.ones(k), np.ones(k), L], 1)[ok]
            for i in range(K):
                anims.append((self._pool_path["points"][i], [track(".position", "vector3", p_pos[i], True),
                                                             track(".scale", "vector3", p_scale[i], True)]))
                if has_f:
                    anims.append((self._pool_path["forces"][i], [track(".position", "vector3", p_pos[i], True),
                                                                 track(".quaternion", "quaternion", f_quat[i], True),
                                                                 track(".scale", "vector3", f_scale[i], True)]))
        cmd = {"type": "set_animation", "path": "",
               "animations": [{"path": p, "clip": {"fps": 1, "name": "default", "tracks": tr}} for p, tr in anims],
               "options": {"play": bool(autoplay), "repetitions": int(repetitions)}}
        return pack(cmd), Q[idx[0]]

    def export_html(self, path, traj=None, contacts=None, dt=None, fps=60.0, autoplay=True, title=None, loop=True):
        """Write a self-contained HTML page (meshcat's viewer inline, no server, works from
        file://): the replay of `traj`, looping unless loop=False, with a play/pause button and
        a time slider at the bottom of the page; or the current scene if traj is None."""
        q = self._last_q
        anim = None
        if traj is not None:
            anim, q = self._animation(traj, contacts, dt, fps, autoplay, LOOP_FOREVER if loop else 1)
        rec = self._record.copy()
        if anim is not None:
            rec.animation = anim
        T = self._body_transforms(q)
        for p, m in zip(self._body_paths, pack_transforms(self._body_prefix, T)):
            rec.set_transform(p, m)
        title = title or getattr(self.world, "description", None) or "simstep replay"
        return write_html(path, rec.commands(), title=str(title), camera=self._camera)

    def __repr__(self):
        return f"{type(self).__name__}(bodies={len(self._bodies)})"


def export_html(world, path, traj=None, contacts=None, dt=None, fps=60.0, autoplay=True, title=None, loop=True,
                **viewer_options):
    """Self-contained HTML replay of `traj` (or of world.q0) without starting a server.
    contacts: per-sample contact data (turns the overlays on); viewer_options: as for
    `SceneRecorder` (geometry, force_scale, ...)."""
    if contacts is not None:
        viewer_options["contacts"] = True
    v = SceneRecorder(world, **viewer_options)
    return v.export_html(path, traj, contacts=contacts, dt=dt, fps=fps, autoplay=autoplay, title=title, loop=loop)

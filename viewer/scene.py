"""World geometry as meshcat objects, the record of a scene, and its self-contained HTML.

Shapes become meshcat primitives (box, sphere, cylinder) or triangle meshes (capsule,
mesh files read with trimesh). A `SceneRecord` keeps the encoded commands that make the
scene (objects, properties, transforms, animation) so that the same bytes go to a live
server and into an exported HTML file.
"""
from __future__ import annotations

import base64
import functools
import html
import os
import uuid
import warnings

import numpy as np

with warnings.catch_warnings():   # meshcat imports a pyzmq module deprecated since pyzmq 17
    warnings.simplefilter("ignore", DeprecationWarning)
    import meshcat
    import meshcat.geometry as mg

from .transport import pack

# formats trimesh reads into triangles (DAE needs pycollada)
MESH_FORMATS = (".stl", ".obj", ".dae", ".ply", ".off", ".glb", ".gltf")
GROUND_HALF_SIZE = 10.0      # the ground is drawn as a 20 m x 20 m slab
GROUND_THICKNESS = 0.02
GROUND_GAP = 2e-3            # its top sits just under z = 0 so the grid stays visible


class MeshError(ValueError):
    """A mesh file that cannot be drawn (unsupported format, unreadable, no triangles)."""


def _rgba_hex(rgba):
    r, g, b = (int(round(255 * min(max(float(c), 0.0), 1.0))) for c in rgba[:3])
    return (r << 16) | (g << 8) | b


def material(rgba, vertex_colors=False):
    a = float(rgba[3]) if len(rgba) > 3 else 1.0
    return mg.MeshPhongMaterial(color=_rgba_hex(rgba), opacity=a, transparent=a < 1.0,
                                vertexColors=vertex_colors)


# ------------------------------------------------------------------ meshes
@functools.lru_cache(maxsize=256)
def _load_mesh_cached(path, mtime):
    import trimesh
    try:
        loaded = trimesh.load(path)
    except Exception as e:  # trimesh raises many exception types
        hint = " (reading DAE needs the pycollada package)" if path.lower().endswith(".dae") else ""
        raise MeshError(f"cannot read mesh file {path}: {type(e).__name__}: {e}{hint}") from None
    if isinstance(loaded, trimesh.Scene):
        parts = []
        for node in loaded.graph.nodes_geometry:
            T, name = loaded.graph[node]
            geom = loaded.geometry[name]
            if isinstance(geom, trimesh.Trimesh):
                parts.append(geom.copy().apply_transform(T))
    elif isinstance(loaded, trimesh.Trimesh):
        parts = [loaded]
    else:
        parts = []
    out = []
    for m in parts:
        if len(m.faces) == 0:
            continue
        out.append((np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.uint32), _mesh_colors(m)))
    if not out:
        raise MeshError(f"mesh file {path} has no triangles")
    return tuple(out)


def _mesh_colors(m):
    """Colors stored in the file: rgba (4,), or per-vertex rgb (n, 3), or None."""
    vis = m.visual
    kind = getattr(vis, "kind", None)
    if kind == "texture":
        mat = getattr(vis, "material", None)
        c = getattr(mat, "main_color", None)
        return None if c is None else np.asarray(c, float) / 255.0
    if kind in ("vertex", "face"):
        vc = np.asarray(vis.vertex_colors, float) / 255.0
        if len(vc) and np.allclose(vc, vc[0]):
            return vc[0]
        return vc[:, :3].astype(np.float32)
    return None


def load_mesh(path):
    """Triangles of a mesh file: tuple of (vertices (n,3) float32, faces (m,3) uint32, colors).

    Raises FileNotFoundError or MeshError, both naming the file."""
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mesh file not found: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in MESH_FORMATS:
        raise MeshError(f"unsupported mesh format '{ext or '(none)'}' of {path}; "
                        f"supported: {', '.join(e[1:].upper() for e in MESH_FORMATS)}")
    return _load_mesh_cached(path, os.path.getmtime(path))


# ------------------------------------------------------------------ shapes
def _rx90():
    T = np.eye(4)
    T[1:3, 1:3] = [[0.0, -1.0], [1.0, 0.0]]    # maps three.js' cylinder axis y onto z
    return T


@functools.lru_cache(maxsize=64)
def _capsule_mesh(radius, length):
    import trimesh
    m = trimesh.creation.capsule(height=length, radius=radius, count=[24, 24])
    return np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.uint32)


def geometry_objects(g, mesh_colors=True, opacity=None):
    """meshcat objects of one `models.Geometry`: list of (suffix, Object, T_local (4,4)).

    T_local is the geometry's placement in its body frame (times any fixed shape correction)."""
    rgba = tuple(g.color) if g.color is not None else (0.7, 0.7, 0.7, 1.0)
    if opacity is not None:
        rgba = rgba[:3] + (float(opacity),)
    T = np.eye(4)
    T[:3, :3] = np.asarray(g.rotation, float)
    T[:3, 3] = np.asarray(g.translation, float)
    size = np.asarray(g.size, float).reshape(-1)
    kind = g.kind
    if kind == "box":
        return [("", mg.Mesh(mg.Box(list(2.0 * size[:3])), material(rgba)), T)]
    if kind == "sphere":
        return [("", mg.Mesh(mg.Sphere(float(size[0])), material(rgba)), T)]
    if kind == "cylinder":
        return [("", mg.Mesh(mg.Cylinder(float(size[1]), float(size[0])), material(rgba)), T @ _rx90())]
    if kind == "capsule":
        v, f = _capsule_mesh(float(size[0]), float(size[1]))
        return [("", mg.Mesh(mg.TriangularMeshGeometry(v, f), material(rgba)), T)]
    if kind == "plane":
        box = mg.Box([2 * GROUND_HALF_SIZE, 2 * GROUND_HALF_SIZE, GROUND_THICKNESS])
        S = np.eye(4)
        S[2, 3] = -0.5 * GROUND_THICKNESS - GROUND_GAP
        return [("", mg.Mesh(box, material(rgba)), T @ S)]
    if kind == "mesh":
        if not g.mesh:
            raise MeshError(f"geometry '{g.name}' is a mesh without a file")
        try:
            parts = load_mesh(g.mesh)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"geometry '{g.name}': {e}") from None
        except MeshError as e:
            raise MeshError(f"geometry '{g.name}': {e}") from None
        scale = np.asarray(g.scale, np.float32).reshape(-1)
        out = []
        for i, (v, f, colors) in enumerate(parts):
            v = v * scale
            if mesh_colors and colors is not None and np.ndim(colors) == 2:
                geom = mg.TriangularMeshGeometry(v, f, color=colors)
                mat = material(rgba, vertex_colors=True)
                mat.color = 0xFFFFFF
            else:
                c = rgba
                if mesh_colors and colors is not None:
                    c = tuple(colors[:3]) + ((colors[3] if len(colors) > 3 else 1.0) * rgba[3],)
                geom, mat = mg.TriangularMeshGeometry(v, f), material(c)
            out.append(("" if len(parts) == 1 else f"part{i}", mg.Mesh(geom, mat), T))
        return out
    raise ValueError(f"geometry '{g.name}': unknown kind '{kind}'")


def grid_object(half_size=GROUND_HALF_SIZE, spacing=0.5, z=0.0, rgba=(0.35, 0.35, 0.38, 1.0)):
    """Grid lines on the plane z (m) every `spacing` m over [-half_size, half_size]²: a
    meshcat LineSegments object (world frame). Each line is cut into `spacing`-long
    segments: software WebGL (headless Chromium) drops a segment with an end behind the
    camera, which would erase the long lines near the viewer."""
    ticks = np.arange(-half_size, half_size + 0.5 * spacing, spacing)
    ends = np.stack([ticks[:-1], ticks[1:]], 1).ravel()              # a0, b0, a1, b1, ... along a line
    u, w = np.repeat(ticks, len(ends)), np.tile(ends, len(ticks))    # (line coordinate, along-line coordinate)
    zz = np.full(len(u), z)
    verts = np.concatenate([np.stack([w, u, zz]), np.stack([u, w, zz])], 1).astype(np.float32)
    return mg.LineSegments(mg.PointsGeometry(verts), mg.LineBasicMaterial(color=_rgba_hex(rgba)))


class _Raw:
    """A meshcat object given as its three.js JSON (what meshcat-python's classes `lower` to)."""

    def __init__(self, data):
        self.data = data

    def lower(self):
        return self.data


def shadow_light_object(center, radius, intensity=0.6, direction=(-0.4, -0.3, 1.0), map_size=2048):
    """A directional light that casts shadows on the ground (meshcat's page enables three.js
    shadow maps and makes every object it loads cast and receive shadows; its own lights do
    not cast any). center (3,) m, radius m: the region whose shadows are drawn. three.js aims
    a directional light at its target, the world origin here (the loader does not place
    targets): the light sits far along `direction` (towards the light, from the origin) and
    its orthographic shadow camera covers the sphere (center, radius) around that axis."""
    c = np.asarray(center, float).reshape(3)
    d = np.asarray(direction, float).reshape(3)
    d = d / np.linalg.norm(d)
    reach = float(radius) + float(np.linalg.norm(c))      # the region, seen from the origin
    dist = 4.0 * reach + 5.0                               # far enough that the rays are parallel
    M = np.eye(4)
    M[:3, 3] = dist * d
    half = reach * 1.05
    camera = {"uuid": str(uuid.uuid4()), "type": "OrthographicCamera", "left": -half, "right": half,
              "top": half, "bottom": -half, "near": max(dist - 1.05 * reach, 0.01), "far": dist + 1.05 * reach,
              "zoom": 1}
    light = {"uuid": str(uuid.uuid4()), "type": "DirectionalLight", "color": 0xFFFFFF, "intensity": float(intensity),
             "matrix": M.T.ravel().tolist(), "castShadow": True,
             "shadow": {"bias": -0.001, "normalBias": 0.01, "radius": 1.5, "mapSize": [map_size, map_size],
                        "camera": camera}}
    return _Raw({"metadata": {"version": 4.5, "type": "Object"}, "object": light})


PIVOT_RGBA = (0.25, 0.25, 0.28, 1.0)


def anchor_objects(model, q, anchors, pin_radius=0.02, post_radius=0.01, floor=0.0):
    """Where mechanisms hold on to the world: for each world anchor a pin (a short cylinder
    along its joint axis, or a ball when it has none) and, above the floor, a post down to
    it with a foot plate. anchors: list of (body, local point (3,), local axis (3,) or None);
    body -1 is the world (point and axis in world coordinates). Returns (suffix, Object,
    T (4, 4) world) triples."""
    import models
    oR, op = models.forward_kinematics(model, q)
    out = []
    for i, (b, point, axis) in enumerate(anchors):
        R, p = (np.eye(3), np.zeros(3)) if b < 0 else (oR[b], op[b])
        c = p + R @ np.asarray(point, float)
        T = np.eye(4)
        T[:3, 3] = c
        if axis is None:
            out.append((f"pivot{i}", mg.Mesh(mg.Sphere(1.4 * pin_radius), material(PIVOT_RGBA)), T))
        else:
            z = R @ np.asarray(axis, float)
            z = z / np.linalg.norm(z)
            x = np.cross(z, [1.0, 0, 0] if abs(z[0]) < 0.9 else [0, 1.0, 0])
            x /= np.linalg.norm(x)
            T[:3, :3] = np.stack([x, np.cross(z, x), z], 1)
            out.append((f"pivot{i}", mg.Mesh(mg.Cylinder(6 * pin_radius, pin_radius), material(PIVOT_RGBA)),
                        T @ _rx90()))
        h = c[2] - floor
        if h > 4 * pin_radius:       # a post from the floor up to the pivot, on a foot plate
            P = np.eye(4)
            P[:3, 3] = (c[0], c[1], floor + 0.5 * h)
            out.append((f"post{i}", mg.Mesh(mg.Cylinder(h, post_radius), material(PIVOT_RGBA)), P @ _rx90()))
            F = np.eye(4)
            F[:3, 3] = (c[0], c[1], floor + 0.01)
            out.append((f"foot{i}", mg.Mesh(mg.Box([0.12, 0.12, 0.02]), material(PIVOT_RGBA)), F))
    return out


def world_anchors(world):
    """Anchors of `anchor_objects`: revolute and prismatic joints to the world (their axis)
    and loop closures to the world (point closures: a ball; others: a pin along z)."""
    import models
    m = world.model
    out = []
    for b in range(m.nbodies):
        if m.parent[b] == -1 and m.jtype[b] in (models.REVOLUTE, models.PRISMATIC):
            axis = m.jfloat[b, 12:15]
            out.append((b, np.zeros(3), axis if m.jtype[b] == models.REVOLUTE else None))
    for c in getattr(world, "constraints", None) or ():
        for body, placement in ((getattr(c, "body1", None), getattr(c, "placement1", None)),
                                (getattr(c, "body2", None), getattr(c, "placement2", None))):
            if placement is not None and body in ("world", -1):
                kind = getattr(c, "kind", "point")
                out.append((-1, np.asarray(placement[0], float), None if kind == "point" else
                            np.asarray(placement[1], float)[:, 2]))
    return out


@functools.lru_cache(maxsize=8)
def _arrow_mesh(radius):
    """Unit arrow along +z from the origin: shaft to z = 0.78, cone head to z = 1."""
    import trimesh
    shaft = trimesh.creation.cylinder(radius=radius, segment=[[0, 0, 0], [0, 0, 0.78]], sections=16)
    head = trimesh.creation.cone(radius=2.5 * radius, height=0.22, sections=16)
    head.apply_translation([0, 0, 0.78])
    m = trimesh.util.concatenate([shaft, head])
    return np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.uint32)


def arrow_object(radius, rgba):
    v, f = _arrow_mesh(float(radius))
    return mg.Mesh(mg.TriangularMeshGeometry(v, f), material(rgba))


def point_object(radius, rgba):
    return mg.Mesh(mg.Sphere(float(radius)), material(rgba))


def set_object_bytes(path, obj):
    return pack({"type": "set_object", "object": obj.lower(), "path": path})


def set_property_bytes(path, key, value):
    return pack({"type": "set_property", "path": path, "property": key, "value": value})


# ------------------------------------------------------------------ record and HTML
class SceneRecord:
    """The encoded commands that rebuild a scene: per path its object, properties and
    transform (last one wins), in creation order, then an optional animation."""

    def __init__(self):
        self.nodes = {}
        self.animation = None

    def _node(self, path):
        return self.nodes.setdefault(path, {"object": None, "props": {}, "transform": None})

    def set_object(self, path, data):
        n = self._node(path)
        n["object"], n["props"] = data, {}

    def set_property(self, path, key, data):
        self._node(path)["props"][key] = data

    def set_transform(self, path, data):
        self._node(path)["transform"] = data

    def commands(self):
        """All commands in replay order (objects and properties, then transforms, then animation)."""
        out = []
        for n in self.nodes.values():
            if n["object"] is not None:
                out.append(n["object"])
            out.extend(n["props"].values())
        out.extend(n["transform"] for n in self.nodes.values() if n["transform"] is not None)
        if self.animation is not None:
            out.append(self.animation)
        return out

    def copy(self):
        r = SceneRecord()
        r.nodes = {p: {"object": n["object"], "props": dict(n["props"]), "transform": n["transform"]}
                   for p, n in self.nodes.items()}
        r.animation = self.animation
        return r


def viewer_js_path():
    """The meshcat viewer bundle shipped inside the meshcat Python package."""
    return os.path.join(os.path.dirname(meshcat.__file__), "viewer", "dist", "main.min.js")


def _camera_js(camera):
    """Camera position and orbit target. meshcat's camera lives in three.js' y-up world
    (the scene is rotated), where a z-up point (x, y, z) is (x, z, -y)."""
    if camera is None:
        return ""
    (px, py, pz), (tx, ty, tz) = (map(float, camera[0]), map(float, camera[1]))
    return f"""(function () {{
  viewer.camera.position.set({px!r}, {pz!r}, {-py!r});
  viewer.controls.target.set({tx!r}, {tz!r}, {-ty!r});
  viewer.controls.update();
  viewer.set_dirty();
}})();"""


# play/pause and a time slider over the replay, always visible (meshcat's own are in its
# closed "Animations" panel); shown only when the page has an animation
_CONTROLS = """<div id="simstep-controls" style="display:none; position:fixed; left:0; right:0; bottom:0;
  padding:6px 12px; background:rgba(30,30,35,0.75); color:#eee; font:13px sans-serif; align-items:center; gap:10px">
<button id="simstep-play" style="width:34px; font-size:15px">&#10074;&#10074;</button>
<input id="simstep-time" type="range" min="0" max="1" step="0.001" value="0" style="flex:1">
<span id="simstep-label" style="min-width:110px; text-align:right; font-variant-numeric:tabular-nums"></span>
</div>
<script>
(function () {
  var a = viewer.animator;
  if (!a || !a.actions || a.actions.length === 0) return;
  var duration = a.actions.reduce(function (m, x) { return Math.max(m, x.getClip().duration); }, 0);
  var bar = document.getElementById("simstep-controls"), button = document.getElementById("simstep-play");
  var slider = document.getElementById("simstep-time"), label = document.getElementById("simstep-label");
  bar.style.display = "flex";
  slider.max = duration;
  function now() { return a.actions.reduce(function (m, x) { return Math.max(m, x.time); }, 0); }
  function show() {
    var t = now();
    if (document.activeElement !== slider) slider.value = t;
    label.textContent = t.toFixed(2) + " / " + duration.toFixed(2) + " s";
    button.innerHTML = a.playing ? "&#10074;&#10074;" : "&#9654;";
    requestAnimationFrame(show);
  }
  button.onclick = function () {
    if (a.playing) { a.pause(); } else { a.play(); }
    button.blur();
  };
  slider.oninput = function () {
    if (!a.playing) { a.play(); a.pause(); }      // clips active, clock stopped
    a.seek(parseFloat(slider.value));
  };
  slider.onchange = function () { slider.blur(); };
  show();
})();
</script>"""


def write_html(path, commands, title="simstep replay", camera=None):
    """Write a self-contained page: meshcat's JS bundle inline and the scene commands as
    base64 msgpack, decoded in order when the page loads. Needs no server nor network.
    camera: optional (position, target) in world coordinates (z up)."""
    with open(viewer_js_path(), encoding="utf-8") as f:
        js = f.read()
    if "</script" in js.lower():
        raise RuntimeError("the meshcat bundle contains '</script' and cannot be inlined")
    encoded = ",\n".join('"' + base64.b64encode(c).decode("ascii") + '"' for c in commands)
    page = f"""<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ margin: 0; }}
#meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
</style>
</head>
<body>
<div id="meshcat-pane"></div>
<script>
{js}
</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
var sceneCommands = [
{encoded}
];
(function () {{
  for (var i = 0; i < sceneCommands.length; i++) {{
    var s = atob(sceneCommands[i]);
    var bytes = new Uint8Array(s.length);
    for (var j = 0; j < s.length; j++) bytes[j] = s.charCodeAt(j);
    viewer.handle_command_bytearray(bytes);
  }}
  sceneCommands = null;
}})();
{_camera_js(camera)}
</script>
{_CONTROLS}
</body>
</html>
"""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path

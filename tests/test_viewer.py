"""Viewer without a browser: encoding against meshcat's own encoder, geometry, meshes and
their errors, animations against forward kinematics, export, and a live server that never
has a browser (or stalls, or dies) without blocking the caller."""
import base64
import os
import re
import shutil
import signal
import time
import types

import numpy as np
import pytest
import umsgpack

import models
import scenes
import simstep
import viewer  # first: it imports meshcat quietly
import meshcat
import meshcat.commands
import meshcat.path
from viewer.meshcat_viewer import contact_arrows
from viewer.scene import geometry_objects, load_mesh
from viewer.transport import pack_transforms, transform_prefix

ROBOTS = os.path.join(os.path.dirname(models.robot_path("g1")[0]), "..", "..")


def robot_file(rel):
    p = os.path.normpath(os.path.join(ROBOTS, rel))
    if not os.path.isfile(p):
        pytest.skip(f"example-robot-data file missing: {rel}")
    return p


def box_world(ground=True):
    b = simstep.WorldBuilder()
    if ground:
        b.add_ground()
    b.add_box("red", half_extents=(0.2, 0.2, 0.2), position=(0, 0, 0.2), color=(0.9, 0.1, 0.1))
    b.add_sphere("ball", radius=0.1, position=(0.6, 0, 0.1))
    b.add_capsule("caps", radius=0.05, length=0.3, position=(-0.5, 0, 0.3),
                  quaternion=(np.sin(0.4), 0, 0, np.cos(0.4)))
    b.add_cylinder("cyl", radius=0.08, length=0.25, position=(0, 0.5, 0.2))
    return b.build()


def random_rotation(rng):
    u = rng.normal(size=4)
    return simstep.quat_to_matrix(u / np.linalg.norm(u))


def decode_commands(html):
    enc = re.search(r"var sceneCommands = \[(.*?)\];", html, re.S).group(1)
    return [umsgpack.unpackb(base64.b64decode(s.strip().strip('"'))) for s in enc.split(",") if s.strip()]


# ------------------------------------------------------------------ encoding
def test_transform_encoding_matches_meshcat():
    rng = np.random.default_rng(0)
    paths = ["/meshcat/a", "/meshcat/simstep/bodies/g1/pelvis", "/meshcat/x_y-z.1"]
    T = np.tile(np.eye(4), (3, 1, 1))
    for i in range(3):
        T[i, :3, :3] = random_rotation(rng)
        T[i, :3, 3] = rng.normal(size=3)
    ours = pack_transforms([transform_prefix(p) for p in paths], T)
    for p, m, Ti in zip(paths, ours, T):
        ref = meshcat.commands.SetTransform(Ti, meshcat.path.Path(tuple(p.strip("/").split("/")))).lower()
        assert umsgpack.unpackb(m) == ref
        assert m == umsgpack.packb(ref)


# ------------------------------------------------------------------ shapes and meshes
def test_primitive_shapes_and_placements():
    w = box_world()
    by_name = {g.name: g for g in w.visuals}
    (_, box, Tb), = geometry_objects(by_name["red"])
    d = box.lower()
    assert [d["geometries"][0][k] for k in ("width", "height", "depth")] == pytest.approx([0.4, 0.4, 0.4])
    assert d["materials"][0]["color"] == 0xE61A1A
    (_, cyl, Tc), = geometry_objects(by_name["cyl"])
    gd = cyl.lower()["geometries"][0]
    assert gd["type"] == "CylinderGeometry" and gd["height"] == pytest.approx(0.25)
    # three.js cylinders are along y: the placement must map y onto the body's z axis
    assert Tc[:3, :3] @ [0, 1, 0] == pytest.approx([0, 0, 1])
    (_, caps, _), = geometry_objects(by_name["caps"])
    v = caps.geometry.vertices
    assert v.min(axis=0) == pytest.approx([-0.05, -0.05, -0.2], abs=2e-3)
    assert v.max(axis=0) == pytest.approx([0.05, 0.05, 0.2], abs=2e-3)
    (_, ground, Tg), = geometry_objects(by_name["ground"])
    gd = ground.lower()["geometries"][0]
    top = Tg[2, 3] + gd["depth"] / 2
    assert -5e-3 < top < 0 and gd["width"] >= 10


def test_meshes_stl_obj_dae_load_with_trimesh():
    import trimesh
    stl = robot_file("g1_description/meshes/pelvis.STL")
    (v, f, c), = load_mesh(stl)
    ref = trimesh.load(stl)
    assert v.shape == ref.vertices.shape and f.shape == ref.faces.shape and c is None
    obj = robot_file("laikago_description/meshes/calf.obj")
    parts = load_mesh(obj)
    assert sum(len(p[1]) for p in parts) == len(trimesh.load(obj, force="mesh").faces)
    pytest.importorskip("collada", reason="DAE needs pycollada")
    dae = robot_file("go1_description/meshes/thigh.dae")
    parts = load_mesh(dae)
    ref = trimesh.load(dae)
    assert sum(len(p[1]) for p in parts) == sum(len(g.faces) for g in ref.dump())
    # the file's material colour is used
    assert parts[0][2] is not None and len(parts[0][2]) == 4


def test_urdf_robot_draws_every_visual_mesh_with_its_color():
    urdf, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_urdf("g1", urdf, package_dirs=dirs, position=(0, 0, 0.8))
    w = b.build()
    v = viewer.MeshcatViewer(w, server=False)
    objs = [umsgpack.unpackb(data) for _, data in v._objects]
    assert len(objs) == len(w.visuals)
    colors = {o["object"]["materials"][0]["color"] for o in objs}
    expect = {(int(round(255 * g.color[0])) << 16) | (int(round(255 * g.color[1])) << 8) | int(round(255 * g.color[2]))
              for g in w.visuals}
    assert colors == expect
    assert len(v._bodies) == len({g.body for g in w.visuals if g.body >= 0})


def test_collision_geometry_and_both():
    urdf, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_urdf("g1", urdf, package_dirs=dirs, position=(0, 0, 0.8))
    w = b.build()
    vc = viewer.MeshcatViewer(w, server=False, geometry="collision")
    assert len(vc._objects) == sum(1 if g.kind != "mesh" else len(load_mesh(g.mesh)) for g in w.geometries)
    vb = viewer.MeshcatViewer(w, server=False, geometry="both")
    paths = [p for p, _ in vb._objects]
    assert len(paths) == len(set(paths)) == len(vc._objects) + len(w.visuals)
    translucent = [umsgpack.unpackb(d)["object"]["materials"][0] for p, d in vb._objects if "/collision/" in p]
    assert len(translucent) == len(vc._objects) and all(m["transparent"] and m["opacity"] < 1 for m in translucent)


def test_missing_mesh_file_is_named(tmp_path):
    src = robot_file("g1_description/meshes/pelvis.STL")
    path = tmp_path / "part.stl"
    shutil.copy(src, path)
    b = simstep.WorldBuilder()
    b.add_mesh("part", path, position=(0, 0, 1))
    w = b.build()
    os.remove(path)
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        viewer.MeshcatViewer(w, server=False)


@pytest.mark.parametrize("name,content", [("part.3ds", b"\x4d\x4d" * 64), ("part", b"solid x\n")])
def test_unsupported_mesh_format_is_named(tmp_path, name, content):
    w = box_world(ground=False)
    bad = tmp_path / name
    bad.write_bytes(content)
    g = next(g for g in w.visuals if g.name == "red")
    g.kind, g.mesh = "mesh", str(bad)
    with pytest.raises(viewer.MeshError, match="unsupported mesh format.*" + re.escape(str(bad))):
        viewer.MeshcatViewer(w, server=False)


def test_corrupt_mesh_file_is_named(tmp_path):
    w = box_world(ground=False)
    bad = tmp_path / "broken.obj"
    bad.write_bytes(b"this is not an obj file\x00\x01")
    g = next(g for g in w.visuals if g.name == "red")
    g.kind, g.mesh = "mesh", str(bad)
    with pytest.raises(viewer.MeshError, match=re.escape(str(bad))):
        viewer.MeshcatViewer(w, server=False)


def test_bad_arguments():
    w = box_world()
    with pytest.raises(TypeError):
        viewer.MeshcatViewer(object(), server=False)
    with pytest.raises(ValueError, match="geometry"):
        viewer.MeshcatViewer(w, server=False, geometry="wire")
    with pytest.raises(ValueError, match="fps"):
        viewer.MeshcatViewer(w, server=False, fps=0)
    v = viewer.MeshcatViewer(w, server=False)
    with pytest.raises(ValueError, match="shape"):
        v.display(np.zeros(3))
    q = w.q0.copy()
    q[3:7] = [0, 0, 0, 2]
    with pytest.raises(ValueError, match="unit"):
        v.display(q)
    with pytest.raises(ValueError, match="shape"):
        v.play((np.arange(3.0), np.zeros((3, 2))))
    with pytest.raises(ValueError, match="non-decreasing"):
        v.play((np.array([0.0, 1.0, 0.5]), np.tile(w.q0, (3, 1))))
    with pytest.raises(TypeError, match="trajectory"):
        v.play(42)
    with pytest.raises(ValueError, match="positions"):
        v.draw_contacts(np.array([[np.nan, 0, 0]]))


# ------------------------------------------------------------------ animation and export
def falling_trajectory(w, k=120, T=2.0):
    t = np.linspace(0.0, T, k)
    Q = np.tile(w.q0, (k, 1))
    Q[:, 2] += 1.0 - 0.5 * 9.81 * np.minimum(t, 0.4) ** 2
    ang = 1.5 * t
    Q[:, 3:7] = np.stack([np.zeros(k), np.zeros(k), np.sin(ang / 2), np.cos(ang / 2)], 1)
    return types.SimpleNamespace(t=t, q=Q)


def test_animation_tracks_follow_forward_kinematics():
    w = box_world()
    v = viewer.MeshcatViewer(w, server=False)
    traj = falling_trajectory(w)
    data, _ = v._animation(traj, fps=30.0)
    cmd = umsgpack.unpackb(data)
    assert cmd["type"] == "set_animation"
    anims = {a["path"]: a["clip"] for a in cmd["animations"]}
    red = anims[v.root + "/bodies/red"]
    tracks = {tr["name"]: tr for tr in red["tracks"]}
    times = np.frombuffer(tracks[".position"]["times"].data, "<f4")
    assert times[0] == 0 and times[-1] == pytest.approx(2.0) and np.all(np.diff(times) > 0)
    assert np.diff(times).max() <= 1 / 30 + 0.02   # sampled at ≈ 30 fps of simulated time: real-time playback
    pos = np.frombuffer(tracks[".position"]["values"].data, "<f4").reshape(-1, 3)
    quat = np.frombuffer(tracks[".quaternion"]["values"].data, "<f4").reshape(-1, 4)
    b = w.model.body_index("red")
    for j, tj in enumerate(times):
        i = int(np.argmin(np.abs(traj.t - tj)))
        oR, op = models.forward_kinematics(w.model, traj.q[i])
        assert pos[j] == pytest.approx(op[b], abs=1e-5)
        assert simstep.quat_to_matrix(quat[j] / np.linalg.norm(quat[j])) == pytest.approx(oR[b], abs=1e-5)


def test_export_html_is_self_contained(tmp_path):
    w = box_world()
    v = viewer.MeshcatViewer(w, server=False)
    path = v.export_html(tmp_path / "replay.html", falling_trajectory(w))
    html = open(path, encoding="utf-8").read()
    with open(viewer.scene.viewer_js_path(), encoding="utf-8") as f:
        assert f.read() in html                      # meshcat's bundle inline
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert all(u.startswith("http://www.w3.org/") for u in urls), urls
    cmds = decode_commands(html)
    kinds = [c["type"] for c in cmds]
    geometry = [c for c in cmds if c["type"] == "set_object" and ("/bodies/" in c["path"] or "/static/" in c["path"])]
    assert len(geometry) == len(w.visuals)
    assert kinds[-1] == "set_animation"
    # the module function needs no viewer object
    p2 = viewer.export_html(w, tmp_path / "still.html")
    assert "set_animation" not in [c["type"] for c in decode_commands(open(p2).read())]


def without_uuids(cmds):
    """The commands as text, every uuid replaced by its order of first appearance (uuids are
    random) and msgpack extensions (typed arrays) by their type and bytes."""
    def plain(x):
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list):
            return [plain(v) for v in x]
        return (x.type, bytes(x.data)) if isinstance(x, umsgpack.Ext) else x
    seen = {}
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                  lambda m: str(seen.setdefault(m.group(0), len(seen))), repr(plain(cmds)))


def test_recorder_and_live_viewer_record_the_same_scene(tmp_path):
    """The live session (`MeshcatViewer`) records exactly what the recorder alone
    (`viewer.SceneRecorder`, no server) does: the same commands for a still scene at a pose,
    with contacts drawn, and for a replay; the recorder's pose is the forward kinematics."""
    w = box_world()
    traj = falling_trajectory(w)
    q = traj.q[len(traj.q) // 2]
    P, F = np.array([[0.1, 0.0, 0.0], [0.0, 0.2, 0.0]]), np.array([[0.0, 0.0, 5.0], [1.0, 0.0, 3.0]])
    rec = viewer.SceneRecorder(w, contacts=True)
    live = viewer.MeshcatViewer(w, server=False, contacts=True)
    T = rec.set_pose(q)
    oR, op = models.forward_kinematics(w.model, q)
    assert np.allclose(T[:, :3, :3], oR[rec._bodies]) and np.allclose(T[:, :3, 3], op[rec._bodies])
    live.display(q)
    for v in (rec, live):
        v.draw_contacts(P, F)
    still = [decode_commands(open(v.export_html(tmp_path / f"still{i}.html")).read()) for i, v in enumerate((rec, live))]
    assert without_uuids(still[0]) == without_uuids(still[1])
    assert sum(c["type"] == "set_object" and "_contacts/forces/" in c["path"] for c in still[0]) == 2
    replay = [open(v.export_html(tmp_path / f"replay{i}.html", traj)).read() for i, v in enumerate((rec, live))]
    assert without_uuids(decode_commands(replay[0])) == without_uuids(decode_commands(replay[1]))
    with pytest.raises(TypeError, match="SceneRecorder needs a built simstep World"):
        viewer.SceneRecorder(object())


def test_contact_arrows_from_collision_style_contacts():
    rng = np.random.default_rng(3)
    k = 4
    frames = np.stack([random_rotation(rng) for _ in range(k)])
    lam = rng.normal(size=(k, 3))
    c = types.SimpleNamespace(position=rng.normal(size=(k, 3)), frame=frames)
    P, F = contact_arrows(c, lam, dt=1e-3)
    for i in range(k):
        world = lam[i, 0] * frames[i, :, 0] + lam[i, 1] * frames[i, :, 1] + lam[i, 2] * frames[i, :, 2]
        assert F[i] == pytest.approx(world / 1e-3)
    assert P == pytest.approx(c.position)
    P2, F2 = contact_arrows(c)
    assert F2 is None and len(P2) == k


def test_contact_overlays_tip_at_force(tmp_path):
    w = box_world()
    v = viewer.MeshcatViewer(w, server=False, contacts=True, force_scale=0.01, max_arrow=1.0)
    P = np.array([[0.1, 0.2, 0.0], [0.3, -0.1, 0.0], [0.0, 0.0, 0.4]])
    F = np.array([[0.0, 0.0, 30.0], [5.0, 0.0, 20.0], [-10.0, 3.0, 0.0]])
    v.draw_contacts(P, F)
    for i in range(3):
        node = v._record.nodes[f"{v.root}_contacts/forces/{i}"]
        T = np.array(umsgpack.unpackb(node["transform"])["matrix"]).reshape(4, 4).T
        assert T @ [0, 0, 1, 1] == pytest.approx(np.r_[P[i] + 0.01 * F[i], 1])   # unit arrow tip
        assert T @ [0, 0, 0, 1] == pytest.approx(np.r_[P[i], 1])
    N = F / np.linalg.norm(F, axis=1, keepdims=True)      # unit normals drawn 5 cm long
    v.draw_contacts(P, N, scale=0.05)
    for i in range(3):
        node = v._record.nodes[f"{v.root}_contacts/forces/{i}"]
        T = np.array(umsgpack.unpackb(node["transform"])["matrix"]).reshape(4, 4).T
        assert T @ [0, 0, 1, 1] == pytest.approx(np.r_[P[i] + 0.05 * N[i], 1])
    v.draw_contacts(P[:1], F[:1])
    assert list(v._shown["points"]) == [True, False, False]
    assert list(v._shown["forces"]) == [True, False, False]
    for kind in ("points", "forces"):    # the others are shrunk out of sight
        node = v._record.nodes[f"{v.root}_contacts/{kind}/2"]
        T = np.array(umsgpack.unpackb(node["transform"])["matrix"]).reshape(4, 4).T
        assert np.abs(T[:3, :3]).max() < 1e-6
    # contacts in an animation: one entry per trajectory sample
    traj = falling_trajectory(w, k=30)
    contacts = [(P[: i % 4], F[: i % 4]) for i in range(30)]
    html = open(v.export_html(tmp_path / "c.html", traj, contacts=contacts, fps=15)).read()
    anim = decode_commands(html)[-1]
    paths = {a["path"] for a in anim["animations"]}
    assert {f"{v.root}_contacts/forces/{i}" for i in range(3)} <= paths


# ------------------------------------------------------------------ live server without a browser
@pytest.fixture
def live_viewer():
    v = viewer.MeshcatViewer(box_world(), fps=50.0)
    yield v
    v.close()


def test_live_update_is_throttled_and_acknowledged(live_viewer):
    v = live_viewer
    q = v.world.q0.copy()
    n0 = v.frames_sent
    t_end = time.perf_counter() + 0.5
    calls = 0
    while time.perf_counter() < t_end:
        q[2] = 0.2 + 0.1 * calls * 1e-5
        v.update(q, t=calls * 1e-3)
        calls += 1
    sent = v.frames_sent - n0
    assert calls > 20 * sent            # almost every call returned without sending
    assert 10 <= sent <= 30             # ≈ 0.5 s x 50 fps
    assert v.flush(5.0)                 # the server took every frame
    assert v._channel.errors == []
    # the server's own scene tree (what a browser connecting now receives) has the last pose
    html = v._channel.request(b"get_scene", timeout=10.0).decode()
    cmds = [umsgpack.unpackb(base64.b64decode(b))
            for b in re.findall(r'data:application/octet-binary;base64,([A-Za-z0-9+/=]+)', html)]
    tf = {c["path"]: np.array(c["matrix"]).reshape(4, 4).T for c in cmds if c["type"] == "set_transform"}
    oR, op = models.forward_kinematics(v.model, v._last_q)
    for name in ("red", "ball", "caps", "cyl"):
        b = v.model.body_index(name)
        T = tf[f"{v.root}/bodies/{name}"]
        assert T[:3, :3] == pytest.approx(oR[b]) and T[:3, 3] == pytest.approx(op[b])


@pytest.mark.filterwarnings("ignore:meshcat server.*not keeping up")
def test_viewer_without_browser_does_not_block(live_viewer):
    v = live_viewer
    q = v.world.q0.copy()
    t0 = time.perf_counter()
    for i in range(2000):
        q[0::7] = 1e-4 * i      # every box moves
        v.update(q, force=True)       # a frame every call, nobody watching
    assert time.perf_counter() - t0 < 20.0
    assert v.flush(10.0)


def test_stalled_server_does_not_block(live_viewer):
    v = live_viewer
    pid = v._proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        q = v.world.q0.copy()
        t0 = time.perf_counter()
        with pytest.warns(RuntimeWarning, match="not keeping up"):
            for i in range(3000):
                q[0::7] = 1e-4 * i      # every box moves
                v.update(q, force=True)
        assert time.perf_counter() - t0 < 20.0
        assert v.frames_dropped > 0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert v.flush(10.0)


def test_dead_server(live_viewer):
    v = live_viewer
    v._proc.kill()
    v._proc.wait()
    with pytest.warns(RuntimeWarning, match="exited"):
        assert v.update(v.world.q0, force=True)
    v.update(v.world.q0, force=True)   # silent no-op from now on
    with pytest.raises(viewer.ViewerConnectionError, match="tcp://127.0.0.1:1"):
        viewer.MeshcatViewer(box_world(), zmq_url="tcp://127.0.0.1:1", timeout=0.5)


def test_second_viewer_connects_to_running_server(live_viewer):
    v2 = viewer.MeshcatViewer(box_world(), zmq_url=live_viewer.zmq_url, timeout=5.0)
    try:
        assert v2.url() == live_viewer.url()
        v2.display(v2.world.q0)
    finally:
        v2.close()


def test_realtime_update_waits_for_simulated_time(live_viewer):
    v = live_viewer
    v.realtime = True
    t0 = time.perf_counter()
    for i in range(301):
        v.update(v.world.q0, t=i * 1e-3)
    assert time.perf_counter() - t0 >= 0.29


# ------------------------------------------------------------------ with the simulator
def test_simulator_run_live_play_and_contact_forces(live_viewer):
    v = live_viewer
    v.show_contacts = True
    w = v.world
    sim = simstep.Simulator(w, dt=1e-3)
    n0 = v.frames_sent
    sim.run(200, viewer=v)                       # the simulator's live hook
    assert v.frames_sent > n0
    v.update(sim.q, sim.t, contacts=sim.contacts, dt=sim.dt, force=True)
    c = sim.contacts
    assert len(c) > 0
    for i in range(len(c)):
        node = v._record.nodes[f"{v.root}_contacts/points/{i}"]
        T = np.array(umsgpack.unpackb(node["transform"])["matrix"]).reshape(4, 4).T
        assert T[:3, 3] == pytest.approx(c.position[i])
        f = c.frame[i] @ c.impulse[i] / sim.dt
        if v._shown["forces"][i]:
            node = v._record.nodes[f"{v.root}_contacts/forces/{i}"]
            T = np.array(umsgpack.unpackb(node["transform"])["matrix"]).reshape(4, 4).T
            tip = c.position[i] + min(np.linalg.norm(f) * v.force_scale, v.max_arrow) * f / np.linalg.norm(f)
            assert (T @ [0, 0, 1, 1])[:3] == pytest.approx(tip, abs=1e-9)
    traj = sim.run(100, record=True)
    v.play(traj)
    assert v.flush(5.0) and v._channel.errors == []
    anim = umsgpack.unpackb(v._record.animation)
    times = np.frombuffer(anim["animations"][0]["clip"]["tracks"][0]["times"].data, "<f4")
    assert times[-1] == pytest.approx(traj.t[-1] - traj.t[0], rel=1e-5)


def _fake_chromium(tmp_path, script):
    """An executable standing in for chromium: `script` is its shell body; $png is the
    --screenshot= path it was given, $count a file counting its starts."""
    exe = tmp_path / "chromium"
    exe.write_text("#!/bin/sh\ncount=%s\necho x >> $count\n"
                   "for a in \"$@\"; do case $a in --screenshot=*) png=${a#--screenshot=};; esac; done\n%s\n"
                   % (tmp_path / "starts", script))
    exe.chmod(0o755)
    return str(exe)


def test_screenshot_retries_a_chromium_start_that_hangs(tmp_path):
    from viewer.screenshot import screenshot
    # first start hangs past the timeout, the second writes the picture
    exe = _fake_chromium(tmp_path, '[ $(wc -l < $count) -ge 2 ] && echo png > "$png" && exit 0\nsleep 30')
    t = time.perf_counter()
    out = screenshot("file:///x.html", tmp_path / "a.png", chromium=exe, timeout=1.0)
    assert open(out).read() == "png\n"
    assert (tmp_path / "starts").read_text().count("x") == 2
    assert time.perf_counter() - t < 10   # the hung start's process group was ended


def test_screenshot_names_every_failed_start(tmp_path):
    from viewer.screenshot import screenshot
    exe = _fake_chromium(tmp_path, 'echo "GPU process died" >&2; exit 3')
    with pytest.raises(RuntimeError, match=r"(?s)in 3 starts: exit 3.*GPU process died"):
        screenshot("file:///x.html", tmp_path / "a.png", chromium=exe, timeout=5)
    assert (tmp_path / "starts").read_text().count("x") == 3


# ------------------------------------------------------------------ ground grid, axes, anchors, replay controls
def _matrix(cmd):
    return np.array(cmd["matrix"], float).reshape(4, 4).T        # meshcat: column-major


def test_grid_on_the_ground_and_no_world_axes_by_default(tmp_path):
    cmds = decode_commands(open(viewer.export_html(box_world(), tmp_path / "a.html")).read())
    props = {(c["path"], c["property"]): c["value"] for c in cmds if c["type"] == "set_property"}
    assert props[("/Axes", "visible")] is False and props[("/Grid", "visible")] is False
    grid = [c for c in cmds if c["type"] == "set_object" and c["path"].endswith("/grid")]
    assert len(grid) == 1 and grid[0]["object"]["object"]["type"] == "LineSegments"
    pos = grid[0]["object"]["geometries"][0]["data"]["attributes"]["position"]
    V = np.frombuffer(pos["array"].data, np.float32).reshape(-1, 3)
    assert np.all(V[:, 2] == 0.0)                                  # on the ground plane z = 0
    assert V[:, 0].min() == V[:, 1].min() == -10 and V[:, 0].max() == V[:, 1].max() == 10
    seg = V[1::2] - V[0::2]
    assert np.allclose(np.sort(np.abs(seg), 1), [0, 0, 0.5])       # axis-aligned 0.5 m pieces
    assert set(np.round(np.unique(V[:, :2]), 6)) == set(np.round(np.arange(-10, 10.25, 0.5), 6))
    cmds = decode_commands(open(viewer.export_html(box_world(), tmp_path / "b.html", axes=True, grid=False)).read())
    props = {(c["path"], c["property"]): c["value"] for c in cmds if c["type"] == "set_property"}
    assert props[("/Axes", "visible")] is True
    assert not [c for c in cmds if c["type"] == "set_object" and c["path"].endswith("/grid")]


def test_four_bar_is_held_by_pins_on_posts(tmp_path):
    """The crank's hinge to the world at (0, 0, height) and the rocker's loop closure to the
    world at (ground, 0, height) (the scene's own definition) get a pin, a post down to z = 0
    and a foot; the hinge pin lies along the joint axis (y)."""
    w = scenes.four_bar(ground=0.4, height=1.0)
    cmds = decode_commands(open(viewer.export_html(w, tmp_path / "fb.html")).read())
    T = {c["path"].rsplit("/", 1)[-1]: _matrix(c) for c in cmds
         if c["type"] == "set_transform" and "/anchors/" in c["path"]}
    assert sorted(T) == ["foot0", "foot1", "pivot0", "pivot1", "post0", "post1"]
    assert np.allclose(T["pivot0"][:3, 3], [0, 0, 1.0]) and np.allclose(T["pivot1"][:3, 3], [0.4, 0, 1.0])
    assert np.allclose(np.abs(T["pivot0"][:3, 1]), [0, 1, 0])     # three.js cylinders lie along their y
    for i, x in ((0, 0.0), (1, 0.4)):
        assert np.allclose(T[f"post{i}"][:3, 3], [x, 0, 0.5])       # half-way from the floor to the pin
        assert np.allclose(np.abs(T[f"post{i}"][:3, 1]), [0, 0, 1])
    heights = [c["object"]["geometries"][0]["height"] for c in cmds
               if c["type"] == "set_object" and "/anchors/post" in c["path"]]
    assert np.allclose(heights, [1.0, 1.0])
    none = decode_commands(open(viewer.export_html(w, tmp_path / "n.html", anchors=False)).read())
    assert not [c for c in none if "/anchors/" in c["path"]]


def test_replay_loops_and_has_visible_controls(tmp_path):
    w = box_world()
    traj = falling_trajectory(w)
    html = open(viewer.export_html(w, tmp_path / "loop.html", traj)).read()
    anim = [c for c in decode_commands(html) if c["type"] == "set_animation"][0]
    assert anim["options"]["repetitions"] == viewer.meshcat_viewer.LOOP_FOREVER
    assert 'id="simstep-play"' in html and 'id="simstep-time"' in html
    once = open(viewer.export_html(w, tmp_path / "once.html", traj, loop=False)).read()
    assert [c for c in decode_commands(once) if c["type"] == "set_animation"][0]["options"]["repetitions"] == 1


# ------------------------------------------------------------------ shadows
def test_shadow_light_frames_the_scene(tmp_path):
    """A shadow-casting directional light whose orthographic shadow camera (aimed at the world
    origin, three.js' default target) holds every geometry of the scene and 1 m around it
    within its near/far range and its square; meshcat's point lights from above are off.
    shadows=False: neither."""
    w = box_world()
    cmds = decode_commands(open(viewer.export_html(w, tmp_path / "s.html")).read())
    lights = [c for c in cmds if c["type"] == "set_object" and c["path"].endswith("/shadow_light")]
    assert len(lights) == 1
    L = lights[0]["object"]["object"]
    assert L["type"] == "DirectionalLight" and L["castShadow"] is True
    cam = L["shadow"]["camera"]
    assert cam["type"] == "OrthographicCamera" and cam["left"] == -cam["right"] and cam["bottom"] == -cam["top"]
    P = _matrix(L)[:3, 3]
    assert P[2] > 0                                           # from above
    axis = -P / np.linalg.norm(P)                             # towards the target (origin)
    # corners of every geometry's box (planes left out), widened by the 1 m a replay may move
    oR, op = models.forward_kinematics(w.model, w.q0)
    pts = []
    for g in w.geometries:
        if g.kind == "plane":
            continue
        c = oR[g.body] @ np.asarray(g.translation, float) + op[g.body]
        r = float(np.linalg.norm(np.asarray(g.size, float)))              # beyond the geometry's extent
        pts += [c + (r + 1.0) * e for e in np.vstack([np.eye(3), -np.eye(3)])]
    X = np.array(pts) - P
    depth = X @ axis
    lateral = np.linalg.norm(X - depth[:, None] * axis, axis=1)
    assert np.all(depth > cam["near"]) and np.all(depth < cam["far"])
    assert np.all(lateral < cam["right"])
    props = {(c["path"], c["property"]): c["value"] for c in cmds if c["type"] == "set_property"}
    assert props[("/Lights/PointLightNegativeX/<object>", "intensity")] == 0.0
    assert props[("/Lights/PointLightPositiveX/<object>", "intensity")] == 0.0
    off = decode_commands(open(viewer.export_html(w, tmp_path / "o.html", shadows=False)).read())
    assert not [c for c in off if c["path"].endswith("/shadow_light") or "PointLight" in c["path"]]

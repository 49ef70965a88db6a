"""The viewer in a real browser: Debian's chromium, headless, software WebGL.

Each test takes screenshots (kept in tests/artifacts/) and checks that the scene is drawn:
the picture differs from an empty scene's, and the objects' colours are present.
Skipped when chromium is missing, except under CI (CI=true) where that is a failure.
"""
import os
import types

import numpy as np
import pytest

import models
import simstep
import viewer
from viewer.screenshot import find_chromium, screenshot

ARTIFACTS = os.path.join(os.path.dirname(__file__), "artifacts")
RED = (0.9, 0.1, 0.1)
ARROW = (1.0, 0.85, 0.1)        # the viewer's force arrows
SIZE = (800, 600)

if find_chromium() is None:
    if os.environ.get("CI"):
        pytest.fail("chromium is required under CI: apt-get install -y chromium", pytrace=False)
    pytestmark = pytest.mark.skip(reason="chromium not installed (apt-get install -y chromium)")


def shot(url, name, budget_ms=3000):
    return screenshot(url, os.path.join(ARTIFACTS, name), size=SIZE, budget_ms=budget_ms)


def pixels(png):
    from PIL import Image
    return np.asarray(Image.open(png).convert("RGB"), dtype=float) / 255.0


def color_fraction(img, rgb, hue_tol=12.0):
    """Fraction of pixels with the hue of `rgb` (± hue_tol degrees), well saturated and lit:
    a shaded surface of that colour."""
    mx, mn = img.max(axis=2), img.min(axis=2)
    sat = np.where(mx > 0, (mx - mn) / np.maximum(mx, 1e-9), 0.0)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    d = np.maximum(mx - mn, 1e-9)
    hue = np.where(mx == r, (g - b) / d % 6, np.where(mx == g, (b - r) / d + 2, (r - g) / d + 4)) * 60.0
    R, G, B = rgb
    tmx, tmn = max(rgb), min(rgb)
    th = (((G - B) / (tmx - tmn)) % 6 if tmx == R else ((B - R) / (tmx - tmn) + 2 if tmx == G
                                                           else (R - G) / (tmx - tmn) + 4)) * 60.0
    ts = (tmx - tmn) / tmx
    dh = np.abs((hue - th + 180.0) % 360.0 - 180.0)
    return float(np.mean((dh < hue_tol) & (sat > 0.6 * ts) & (mx > 0.25)))


def red_box_world(empty=False):
    b = simstep.WorldBuilder()
    if not empty:
        b.add_ground()
        b.add_box("red", half_extents=(0.2, 0.2, 0.2), position=(0, 0, 0.2), color=RED + (1.0,))
        b.add_sphere("ball", radius=0.1, position=(0.5, 0.2, 0.1), color=(0.2, 0.5, 0.9, 1.0))
    return b.build()


def drop(w, k=90, T=1.5):
    t = np.linspace(0.0, T, k)
    Q = np.tile(w.q0, (k, 1))
    Q[:, 2] = 0.2 + 0.6 * np.maximum(0.0, 1.0 - t / 0.6) ** 2
    return types.SimpleNamespace(t=t, q=Q)


def assert_drawn(png, empty_png, rgb):
    a, e = pixels(png), pixels(empty_png)
    assert a.shape == e.shape
    changed = np.mean(np.abs(a - e).max(axis=2) > 0.1)
    assert changed > 0.05, f"{png} hardly differs from the empty scene ({changed:.3%} of pixels)"
    f, f0 = color_fraction(a, rgb), color_fraction(e, rgb)
    assert f > 0.01, f"colour {rgb} covers only {f:.3%} of {png}"
    assert f0 < 0.002, f"colour {rgb} already covers {f0:.3%} of the empty scene {empty_png}"


def test_exported_replay_renders_from_file_url(tmp_path):
    w = red_box_world()
    page = viewer.export_html(w, tmp_path / "replay.html", drop(w))
    empty = viewer.export_html(red_box_world(empty=True), tmp_path / "empty.html")
    png = shot("file://" + page, "viewer_export.png")
    png0 = shot("file://" + empty, "viewer_export_empty.png")
    assert_drawn(png, png0, RED)


def test_live_server_page_renders():
    v = viewer.MeshcatViewer(red_box_world())
    v0 = viewer.MeshcatViewer(red_box_world(empty=True))
    try:
        assert v.url().startswith("http://127.0.0.1:")
        q = v.world.q0.copy()
        q[2] = 0.5
        v.display(q)
        png = shot(v.url(), "viewer_live.png")
        png0 = shot(v0.url(), "viewer_live_empty.png")
        assert_drawn(png, png0, RED)
        # the live page follows the pose: a second shot after moving the box differs
        q[0] += 0.4
        v.display(q)
        png2 = shot(v.url(), "viewer_live_moved.png")
        assert np.mean(np.abs(pixels(png2) - pixels(png)).max(axis=2) > 0.1) > 0.005
    finally:
        v.close()
        v0.close()


def test_contact_force_arrows_render(tmp_path):
    w = red_box_world()
    P = np.array([[0.2, 0.2, 0.0], [-0.2, 0.2, 0.0], [0.2, -0.2, 0.0], [-0.2, -0.2, 0.0]])
    F = np.tile([0.0, 0.0, 60.0], (4, 1))
    v = viewer.MeshcatViewer(w, server=False, contacts=True, force_scale=0.01, arrow_radius=0.012)
    v.set_camera((1.6, 1.0, 1.0), (0.0, 0.0, 0.3))
    v.display(w.q0, contacts=(P + [0, 0, 0.4], F))
    with_arrows = shot("file://" + v.export_html(tmp_path / "arrows.html"), "viewer_contacts.png")
    v.clear_contacts()
    without = shot("file://" + v.export_html(tmp_path / "no_arrows.html"), "viewer_contacts_none.png")
    a, e = pixels(with_arrows), pixels(without)
    assert color_fraction(a, ARROW) > 0.002
    assert color_fraction(e, ARROW) < 0.0005


def test_g1_replay_renders(tmp_path):
    urdf, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_urdf("g1", urdf, package_dirs=dirs, position=(0, 0, 0.8))
    w = b.build()
    k = 40
    t = np.linspace(0, 1.0, k)
    Q = np.tile(w.q0, (k, 1))
    Q[:, w.model.joint_q_index("g1/left_shoulder_pitch_joint")] = -1.2 * t
    page = viewer.export_html(w, tmp_path / "g1.html", (t, Q))
    g = simstep.WorldBuilder()
    g.add_ground()
    ground = viewer.MeshcatViewer(g.build(), server=False)
    ground.set_camera(*viewer.MeshcatViewer(w, server=False)._camera)
    png = shot("file://" + page, "viewer_g1.png", budget_ms=4000)
    png0 = shot("file://" + ground.export_html(tmp_path / "ground.html"), "viewer_g1_ground_only.png")
    a, e = pixels(png), pixels(png0)
    assert np.mean(np.abs(a - e).max(axis=2) > 0.1) > 0.015
    def dark(im):   # G1's dark grey (0.2) links; the top rows hold meshcat's black "Open Controls" bar
        im = im[30:]
        return np.mean((im.max(axis=2) < 0.35) & (im.max(axis=2) - im.min(axis=2) < 0.08))
    assert dark(a) > 0.002 and dark(e) < 0.0005


def test_shadow_shows_whether_a_box_touches_the_ground(tmp_path):
    """The ground darkens where the box's shadow falls (against the same page without the box):
    for a box resting on the ground the shadow starts at the box's outline, for a box 0.3 m up
    a band of lit ground separates them."""
    from scipy import ndimage

    def page(name, z):
        b = simstep.WorldBuilder()
        b.add_ground()
        b.add_box("red", half_extents=(0.2, 0.2, 0.2), position=(0, 0, z), color=RED + (1.0,))
        v = viewer.MeshcatViewer(b.build(), server=False, grid=False)
        v.set_camera((1.6, -1.2, 1.4), (0.0, 0.0, 0.2))
        return pixels(shot("file://" + v.export_html(tmp_path / f"{name}.html"), f"viewer_shadow_{name}.png"))

    empty = page("empty", -5.0)[..., :3].max(axis=2)         # the box under the floor: the bare ground

    def gap(img):
        """(shadow pixels' share, their least distance in pixels from the box's outline)."""
        mx, mn = img.max(axis=2), img.min(axis=2)
        box = ndimage.binary_dilation((mx - mn > 0.5 * mx) & (img[..., 0] > 0.2), iterations=2)  # + its rim
        shadow = (empty - mx > 0.15) & ~box
        assert shadow.mean() > 0.001, f"no shadow on the ground ({shadow.mean():.3%} of pixels darker)"
        return shadow.mean(), ndimage.distance_transform_edt(~box)[shadow].min()

    rest, up = gap(page("rest", 0.2)), gap(page("up", 0.5))
    assert rest[1] <= 2.0, f"the resting box's shadow starts {rest[1]:.0f} px from it"
    assert up[1] >= 5.0, f"the raised box's shadow touches it ({up[1]:.0f} px)"

"""Collision kernels: the fast paths against plain references, and fingerprints of detect() on
fixed scenes recorded with the implementation from before the kernels were optimized (main at
7c60f14, whose contacts were bit-identical to the optimized ones on thousands of random
configurations). Any change of a native contact (count, order, pair, key, position, frame,
distance, material) fails `test_native_contacts_unchanged`: regenerate the fingerprints only
for an intended change of the contact model, never for a speed-up.
"""
from pathlib import Path

import numpy as np
import pytest
import trimesh

import collision
import models
import models.joints
from collision import kinds, midphase, narrow, support, workspace
import simstep
from collision import CollisionDetector, CollisionError
from collision.shapes import hull_graph


def rotq(rv):
    """Unit quaternion (x, y, z, w) of the rotation vector rv (no scipy: fixed arithmetic)."""
    rv = np.asarray(rv, dtype=float)
    th = float(np.sqrt(rv @ rv))
    if th == 0.0:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.concatenate([np.sin(th / 2) * rv / th, [np.cos(th / 2)]])


def rotm(rv):
    x, y, z, w = rotq(rv)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


# ---------------------------------------------------------------- fixed scenes
def triangle_scene():
    """bench_step's 10-box pyramid (half size 0.1 m, 4 mm gaps in a row), every box shifted by
    up to 1 mm, yawed by up to 0.05 rad (clipped face patches of up to 8 points, reduced to 4)
    and tilted by up to 1 mrad, pressed 0.5 mm into its support."""
    h, gap = 0.1, 4e-3
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.6)
    k = 0
    for level, n in enumerate((4, 3, 2, 1)):
        for i in range(n):
            c = np.array([(i - (n - 1) / 2) * (2 * h + gap), 0.0, h + 2 * h * level - 5e-4 * (level + 1)])
            c += 1e-3 * np.array([np.sin(1.7 * k), np.cos(2.3 * k), 0.0])
            rv = np.array([1e-3 * np.sin(k + 0.3), 1e-3 * np.cos(1.3 * k), 0.05 * np.sin(0.4 * k + 1.0)])
            b.add_box(f"box{k}", (h, h, h), position=c, quaternion=rotq(rv), friction=0.6)
            k += 1
    return b.build()


def box_pile_scene():
    """Eight boxes of different sizes turned every way in a small region: face, edge and vertex
    contacts between boxes and with the ground."""
    b = simstep.WorldBuilder()
    b.add_ground(friction=0.8)
    for i in range(8):
        half = np.array([0.05 + 0.03 * abs(np.sin(3.1 * i)), 0.04 + 0.03 * abs(np.cos(1.9 * i)),
                         0.03 + 0.04 * abs(np.sin(0.7 * i + 0.5))])
        p = np.array([0.09 * np.sin(2.0 * i), 0.09 * np.cos(2.7 * i), 0.05 + 0.035 * i])
        rv = np.array([np.sin(1.1 * i + 0.2), np.cos(0.8 * i), np.sin(2.3 * i)]) * (0.4 + 0.3 * i)
        b.add_box(f"b{i}", half, position=p, quaternion=rotq(rv), friction=0.3 + 0.05 * i,
                  restitution=0.1 * (i % 3))
    return b.build()


def mixed_scene(mesh_path):
    """Spheres, capsules, boxes, a cylinder and a convex mesh over the ground, overlapping."""
    b = simstep.WorldBuilder()
    b.add_ground()
    kinds = ["sphere", "capsule", "box", "sphere", "capsule", "mesh", "box", "sphere", "cylinder", "capsule"]
    for i, kind in enumerate(kinds):
        p = np.array([0.08 * np.sin(2.2 * i), 0.08 * np.cos(1.6 * i), 0.04 + 0.03 * i])
        q = rotq(np.array([np.cos(1.3 * i), np.sin(0.6 * i + 1.0), np.cos(2.9 * i)]) * (0.3 + 0.25 * i))
        r = 0.03 + 0.02 * abs(np.sin(1.4 * i))
        if kind == "sphere":
            b.add_sphere(f"o{i}", r, position=p, compliance=1e-6 * i)
        elif kind == "capsule":
            b.add_capsule(f"o{i}", r, 0.12, position=p, quaternion=q)
        elif kind == "box":
            b.add_box(f"o{i}", (r, 1.5 * r, 0.8 * r), position=p, quaternion=q)
        elif kind == "cylinder":
            b.add_cylinder(f"o{i}", r, 0.1, position=p, quaternion=q)
        else:
            b.add_mesh(f"o{i}", mesh_path, scale=0.07, position=p, quaternion=q)
    return b.build()


def fingerprint(contacts, world, native_only=True):
    """(count, keys in order, weighted sums of distance, position, frame, materials) of the
    contacts of natively solved pairs (library pairs are the backend's business)."""
    c = contacts
    keep = np.ones(len(c), bool)
    if native_only:
        kinds = {g.kind for g in world.geometries}
        kind = [g.kind for g in world.geometries]
        lib = {("box", "capsule"), ("box", "cylinder"), ("box", "mesh"), ("capsule", "cylinder"),
               ("capsule", "mesh"), ("cylinder", "cylinder"), ("cylinder", "mesh"), ("cylinder", "sphere"),
               ("mesh", "mesh"), ("mesh", "sphere")}
        assert kinds <= {"plane", "box", "sphere", "capsule", "cylinder", "mesh"}
        keep = np.array([tuple(sorted((kind[a], kind[b]))) not in lib for a, b in zip(c.geom1, c.geom2)], bool)
    idx = np.flatnonzero(keep)
    w = 1.0 + np.arange(len(idx)) / 7.0
    a, bb = np.array([1.0, np.sqrt(2.0), np.sqrt(3.0)]), np.array([1.0, 1 / 3, 1 / 7])
    F = c.frame[idx]
    sums = [w @ c.distance[idx], w @ (c.position[idx] @ a), w @ (F[:, :, 2] @ bb), w @ (F[:, :, 0] @ a),
            w @ (F[:, :, 1] @ bb), w @ c.friction[idx], w @ c.restitution[idx], w @ c.compliance[idx]]
    pairs = [int(x) for x in (c.geom1[idx] * 1000 + c.geom2[idx])]
    bodies = [int(x) for x in (c.body1[idx] * 1000 + c.body2[idx])]
    return len(idx), [int(x) for x in c.key[idx]], pairs, bodies, [float(s) for s in sums]


@pytest.fixture(scope="module")
def mesh_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("mesh") / "ico.stl"
    trimesh.creation.icosahedron().export(str(p))
    return str(p)


def scenes(mesh_path):
    return {"triangle": triangle_scene(), "box-pile": box_pile_scene(), "mixed": mixed_scene(mesh_path)}


# recorded with main at 7c60f14 (see the module docstring); box-pile re-recorded for issue 11: a box
# penetrating the ground now reports every penetrating vertex (an edge), not only the deepest
# triangle re-recorded when `patch.reduce_patch` came to prefer touching points: the same contacts,
# two of them swapped in three patches (the order the reduction picks them)
EXPECTED = {('triangle', 0.0): (64,
                      [65, 66, 67, 64, 110, 111, 108, 109, 254, 252, 255, 253, 112, 114, 113, 115, 393, 394, 395,
                       392, 299, 296, 297, 298, 439, 436, 437, 438, 158, 159, 156, 157, 302, 300, 303, 301, 160,
                       162, 161, 163, 347, 344, 345, 346, 207, 205, 206, 204, 4, 7, 6, 5, 8, 11, 10, 9, 12, 15, 14,
                       13, 16, 19, 18, 17],
                      [5001, 5001, 5001, 5001, 5002, 5002, 5002, 5002, 8005, 8005, 8005, 8005, 6002, 6002, 6002,
                       6002, 10008, 10008, 10008, 10008, 8006, 8006, 8006, 8006, 10009, 10009, 10009, 10009, 6003,
                       6003, 6003, 6003, 9006, 9006, 9006, 9006, 7003, 7003, 7003, 7003, 9007, 9007, 9007, 9007,
                       7004, 7004, 7004, 7004, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000, 3000, 3000, 3000,
                       3000, 4000, 4000, 4000, 4000],
                      [4000, 4000, 4000, 4000, 4001, 4001, 4001, 4001, 7004, 7004, 7004, 7004, 5001, 5001, 5001,
                       5001, 9007, 9007, 9007, 9007, 7005, 7005, 7005, 7005, 9008, 9008, 9008, 9008, 5002, 5002,
                       5002, 5002, 8005, 8005, 8005, 8005, 6002, 6002, 6002, 6002, 8006, 8006, 8006, 8006, 6003,
                       6003, 6003, 6003, -1, -1, -1, -1, 999, 999, 999, 999, 1999, 1999, 1999, 1999, 2999, 2999,
                       2999, 2999],
                      [-0.17526979733357778, 136.94463316126095, 50.24665012828195, 354.1207246516883,
                       115.60485201443623, 211.2, 0.0, 0.0]),
 ('triangle', 0.002): (66,
                        [65, 66, 67, 64, 110, 111, 108, 109, 254, 252, 255, 253, 112, 114, 113, 115, 393, 394, 395,
                         392, 299, 296, 297, 298, 439, 436, 437, 438, 158, 159, 156, 157, 302, 300, 303, 301, 292,
                         293, 160, 162, 161, 163, 347, 344, 345, 346, 207, 205, 206, 204, 4, 7, 6, 5, 8, 11, 10, 9,
                         12, 15, 14, 13, 16, 19, 18, 17],
                        [5001, 5001, 5001, 5001, 5002, 5002, 5002, 5002, 8005, 8005, 8005, 8005, 6002, 6002, 6002,
                         6002, 10008, 10008, 10008, 10008, 8006, 8006, 8006, 8006, 10009, 10009, 10009, 10009, 6003,
                         6003, 6003, 6003, 9006, 9006, 9006, 9006, 7006, 7006, 7003, 7003, 7003, 7003, 9007, 9007,
                         9007, 9007, 7004, 7004, 7004, 7004, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000, 3000,
                         3000, 3000, 3000, 4000, 4000, 4000, 4000],
                        [4000, 4000, 4000, 4000, 4001, 4001, 4001, 4001, 7004, 7004, 7004, 7004, 5001, 5001, 5001,
                         5001, 9007, 9007, 9007, 9007, 7005, 7005, 7005, 7005, 9008, 9008, 9008, 9008, 5002, 5002,
                         5002, 5002, 8005, 8005, 8005, 8005, 6005, 6005, 6002, 6002, 6002, 6002, 8006, 8006, 8006,
                         8006, 6003, 6003, 6003, 6003, -1, -1, -1, -1, 999, 999, 999, 999, 1999, 1999, 1999, 1999,
                         2999, 2999, 2999, 2999],
                        [-0.1726384959532849, 145.13154455784283, 63.843248973035365, 379.78633538228377,
                         119.93016380170162, 223.45714285714286, 0.0, 0.0]),
 ('triangle', 0.02): (78,
                       [65, 66, 67, 64, 52, 53, 110, 111, 108, 109, 254, 252, 255, 253, 244, 245, 112, 114, 113, 115,
                        103, 100, 101, 102, 393, 394, 395, 392, 299, 296, 297, 298, 388, 389, 439, 436, 437, 438,
                        158, 159, 156, 157, 302, 300, 303, 301, 292, 293, 160, 162, 161, 163, 148, 149, 347, 344,
                        345, 346, 207, 205, 206, 204, 4, 7, 6, 5, 8, 11, 10, 9, 12, 15, 14, 13, 16, 19, 18, 17],
                       [5001, 5001, 5001, 5001, 2001, 2001, 5002, 5002, 5002, 5002, 8005, 8005, 8005, 8005, 6005,
                        6005, 6002, 6002, 6002, 6002, 3002, 3002, 3002, 3002, 10008, 10008, 10008, 10008, 8006, 8006,
                        8006, 8006, 9008, 9008, 10009, 10009, 10009, 10009, 6003, 6003, 6003, 6003, 9006, 9006, 9006,
                        9006, 7006, 7006, 7003, 7003, 7003, 7003, 4003, 4003, 9007, 9007, 9007, 9007, 7004, 7004,
                        7004, 7004, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000, 3000, 3000, 3000, 3000, 4000,
                        4000, 4000, 4000],
                       [4000, 4000, 4000, 4000, 1000, 1000, 4001, 4001, 4001, 4001, 7004, 7004, 7004, 7004, 5004,
                        5004, 5001, 5001, 5001, 5001, 2001, 2001, 2001, 2001, 9007, 9007, 9007, 9007, 7005, 7005,
                        7005, 7005, 8007, 8007, 9008, 9008, 9008, 9008, 5002, 5002, 5002, 5002, 8005, 8005, 8005,
                        8005, 6005, 6005, 6002, 6002, 6002, 6002, 3002, 3002, 8006, 8006, 8006, 8006, 6003, 6003,
                        6003, 6003, -1, -1, -1, -1, 999, 999, 999, 999, 1999, 1999, 1999, 1999, 2999, 2999, 2999,
                        2999],
                       [-0.054300575940503804, 198.05641546144273, 132.19650973819375, 536.4027800588414,
                        153.9800086038917, 304.1999999999999, 0.0, 0.0]),
 ('box-pile', 0.0): (15, [132, 124, 48, 244, 172, 168, 248, 52, 88, 164, 92, 212, 4, 5, 8], [6003, 4003, 3001, 7006, 7004, 6004, 8006, 4001, 4002, 5004, 5002, 8005, 1000, 1000, 2000], [5002, 3002, 2000, 6005, 6003, 5003, 7005, 3000, 3001, 4003, 4001, 7004, -1, -1, 999], [-0.674523696380039, 7.868151521922514, 3.13968464959535, 32.63331926179762, -3.974500773464661, 14.467988471160405, 2.928571428571429, 0.0]),
 ('box-pile', 0.002): (15, [132, 124, 48, 244, 172, 168, 248, 52, 88, 164, 92, 212, 4, 5, 8], [6003, 4003, 3001, 7006, 7004, 6004, 8006, 4001, 4002, 5004, 5002, 8005, 1000, 1000, 2000], [5002, 3002, 2000, 6005, 6003, 5003, 7005, 3000, 3001, 4003, 4001, 7004, -1, -1, 999], [-0.674523696380039, 7.868151521922514, 3.13968464959535, 32.63331926179762, -3.974500773464661, 14.467988471160405, 2.928571428571429, 0.0]),
 ('box-pile', 0.02): (18, [132, 124, 48, 244, 172, 168, 248, 204, 52, 88, 164, 44, 92, 212, 4, 5, 8, 12], [6003, 4003, 3001, 7006, 7004, 6004, 8006, 6005, 4001, 4002, 5004, 2001, 5002, 8005, 1000, 1000, 2000, 3000], [5002, 3002, 2000, 6005, 6003, 5003, 7005, 5004, 3000, 3001, 4003, 1000, 4001, 7004, -1, -1, 999, 1999], [-0.5988001213837794, 9.434065439743408, 2.7586966326409286, 37.92652508508064, 1.3434462444742188, 19.18000766286438, 4.385714285714286, 0.0]),
 ('mixed', 0.0): (8, [52, 104, 392, 196, 204, 252, 340, 8], [2001, 4002, 10008, 5004, 7004, 8005, 8007, 2000],
                  [1000, 3001, 9007, 4003, 6003, 7004, 7006, 999],
                  [-0.21028852407315085, 3.752972752282797, -0.2259719905047789, 13.638564500236312,
                   0.5834720178911796, 6.0, 0.0, 4.642857142857142e-05]),
 ('mixed', 0.002): (8, [52, 104, 392, 196, 204, 252, 340, 8], [2001, 4002, 10008, 5004, 7004, 8005, 8007, 2000],
                    [1000, 3001, 9007, 4003, 6003, 7004, 7006, 999],
                    [-0.21028852407315085, 3.752972752282797, -0.2259719905047789, 13.638564500236312,
                     0.5834720178911796, 6.0, 0.0, 4.642857142857142e-05]),
 ('mixed', 0.02): (10, [52, 104, 108, 392, 196, 204, 252, 340, 4, 8],
                   [2001, 4002, 5002, 10008, 5004, 7004, 8005, 8007, 1000, 2000],
                   [1000, 3001, 4001, 9007, 4003, 6003, 7004, 7006, -1, 999],
                   [-0.18261593628193776, 4.791012955716296, -5.263711381320313e-05, 19.164852874361177,
                    1.5378245703167328, 8.214285714285714, 0.0, 5.0285714285714286e-05])}


@pytest.mark.parametrize("name,margin", [(n, m) for n in ("triangle", "box-pile", "mixed") for m in (0.0, 2e-3, 0.02)])
def test_native_contacts_unchanged(name, margin, mesh_path):
    w = scenes(mesh_path)[name]
    n, keys, pairs, bodies, sums = fingerprint(CollisionDetector(w, margin=margin).detect(w.q0), w)
    n0, keys0, pairs0, bodies0, sums0 = EXPECTED[(name, margin)]
    assert n == n0 and keys == keys0 and pairs == pairs0 and bodies == bodies0
    assert np.allclose(sums, sums0, rtol=0, atol=1e-9), (sums, sums0)


# ---------------------------------------------------------------- kernels against references
def axis_separations(size, R, p):
    """Separations of boxes 0 and 1 along their 15 SAT axes (numpy; degenerate axes skipped)."""
    axes = [R[0][:, i] for i in range(3)] + [R[1][:, j] for j in range(3)]
    axes += [np.cross(R[0][:, i], R[1][:, j]) for i in range(3) for j in range(3)]
    out = []
    for L in axes:
        n = np.linalg.norm(L)
        if n < 1e-6:
            continue
        L = L / n
        out.append(abs(L @ (p[1] - p[0])) - np.abs(R[0].T @ L) @ size[0, :3] - np.abs(R[1].T @ L) @ size[1, :3])
    return np.array(out)


def test_sat_early_out_matches_full_search():
    """_box_box stops once the best separation exceeds the margin: the pair is then rejected,
    and every pair within the margin gets the same axis, separation and kind as the full
    15-axis search. Margins are put between the separations of the axes, where an early stop
    on the wrong quantity would show (an edge axis only wins by a clear gap over the best
    face axis, so a later axis may exceed the margin while the final best does not)."""
    rng = np.random.default_rng(3)
    ng = 2
    checked = 0
    for trial in range(300):
        size = np.zeros((ng, 4))
        size[:, :3] = rng.uniform(0.02, 0.2, (ng, 3))
        R = np.stack([rotm(rng.normal(size=3) * rng.uniform(0, 3)) for _ in range(ng)])
        if trial % 4 == 0:  # exactly aligned boxes: face-axis ties and parallel edges
            R[1] = R[0]
        p = np.zeros((ng, 3))
        p[1] = rng.normal(size=3) * rng.uniform(0.02, 0.3)
        V1 = np.zeros((workspace.NV3, 3))
        s_full, e_full = narrow._box_box(size, R, p, 0, 1, V1, np.inf)
        seps = np.sort(axis_separations(size, R, p))
        margins = list(0.5 * (seps[1:] + seps[:-1])) + [s_full, s_full + 1e-12, s_full - 1e-12, 0.0, 2e-3]
        for margin in margins:
            V2 = np.zeros((workspace.NV3, 3))
            s, e = narrow._box_box(size, R, p, 0, 1, V2, margin)
            if s_full <= margin:
                assert s == s_full and e == e_full and np.array_equal(V1[workspace._VN], V2[workspace._VN]), (trial, margin)
                checked += 1
            else:
                assert margin < s <= s_full, (trial, margin)
    assert checked > 1000


def convex_support_reference(verts, R, p, d, tol):
    """Hull vertices within tol of the support height along d, in the world."""
    h = verts @ (R.T @ d)
    return verts[h >= h.max() - tol] @ R.T + p


@pytest.mark.parametrize("seed", range(3))
def test_convex_support_against_numpy(seed, mesh_path):
    """support_feature on a convex hull (unordered against planes, or at most 2 vertices; and
    the ordered face) selects the vertices numpy selects."""
    verts, tris = collision.load_convex_mesh(mesh_path, (0.1, 0.07, 0.05))
    rng = np.random.default_rng(seed)
    gR = rotm(rng.normal(size=3))[None].copy()
    gp = rng.normal(size=(1, 3))
    coff = np.array([0, len(verts)])
    hg = hull_graph(verts, coff, [tris])
    gsize = np.zeros((1, 4))
    axes = list(np.eye(3)) + [gR[0][:, 0], -gR[0][:, 2], (gR[0][:, 0] + gR[0][:, 1]) / np.sqrt(2)]
    for d in axes + list(rng.normal(size=(20, 3))):
        d = np.asarray(d, float) / np.linalg.norm(d)
        D = np.zeros((workspace.NV3, 3))
        D[0] = d
        for tol in (1e-9, 1e-3, 0.02):
            world = convex_support_reference(verts, gR[0], gp[0], d, tol)
            out = np.zeros((workspace.MAXF, 3))
            m = support.support_feature(kinds.CONVEX, 0, gsize, gR, gp, verts, coff, hg, D, 0, tol, out, False)
            assert m == len(world) and out[0] @ d >= np.max(world @ d) - 1e-12  # an extreme vertex first
            assert np.allclose(np.sort(out[:m], axis=0), np.sort(world, axis=0), atol=1e-12)
            out2 = np.zeros((workspace.MAXF, 3))
            m2 = support.support_feature(kinds.CONVEX, 0, gsize, gR, gp, verts, coff, hg, D, 0, tol, out2, True)
            if len(world) <= 2:
                assert m2 == m and np.array_equal(out2[:m2], out[:m])
            else:  # the ordered face: a subset of the selected vertices, their convex hull
                assert 3 <= m2 <= len(world)
                for x in out2[:m2]:
                    assert np.min(np.linalg.norm(world - x, axis=1)) < 1e-12


def test_q_checked_by_the_model():
    """q is checked by the model's one check (`models.Model.check_q`: finite, unit free-joint
    and spherical quaternions), with its message; nothing is computed for a rejected q."""
    w = triangle_scene()
    det = CollisionDetector(w, margin=2e-3)
    c0 = det.detect(w.q0)
    q = w.q0.copy()
    q[7 * 3 + 3:7 * 3 + 7] *= 1.0 + 2e-6
    with pytest.raises(CollisionError, match="not unit"):
        det.detect(q)
    q[7 * 3 + 3:7 * 3 + 7] *= 1.0 / (1.0 + 2e-6)
    det.detect(q)  # within 1e-6 of unit: accepted
    for bad in (np.nan, np.inf):
        q = w.q0.copy()
        q[5] = bad
        with pytest.raises(CollisionError, match="NaN or inf"):
            det.detect(q)
    c1 = det.detect(w.q0)
    assert np.array_equal(c0.position, c1.position) and np.array_equal(c0.key, c1.key)


def test_spherical_quaternion_checked():
    """A spherical (ball) joint's quaternion is checked too (the old kernel's own check missed
    it); the placements of the caller's kinematics give the same contacts as detect's own."""
    b = simstep.WorldBuilder()
    b.add_ground()
    b.add_mjcf("h", str(Path(__file__).parent / "data" / "mjcf" / "humanoid_tree.xml"), position=(0, 0, 0.05))
    w = b.build()
    m = w.model
    ball = [j for j in range(m.nbodies) if m.jtype[j] == models.joints.SPHERICAL]
    assert ball
    det = CollisionDetector(w, margin=2e-3)
    q = w.q0.copy()
    iq = m.idx_q[ball[0]]
    q[iq:iq + 4] = [0.1, 0.0, 0.0, 1.0]
    with pytest.raises(CollisionError, match="not unit"):
        det.detect(q)
    q[iq:iq + 4] /= np.linalg.norm(q[iq:iq + 4])
    c = det.detect(q)
    d = models.Data(m).compute(q)
    c2 = CollisionDetector(w, margin=2e-3).detect(q, placements=(d.oR, d.op))
    assert len(c) > 0 and np.array_equal(c.key, c2.key) and np.array_equal(c.position, c2.position)


def _primitive_points(kind, size, R, p, n=4000, rng=None):
    """Dense surface samples (world) of a sphere, capsule, cylinder or box, for brute-force
    support heights (their maximum along d is within a few 1e-6 of the exact one)."""
    rng = rng or np.random.default_rng(0)
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    r, h = size[0], size[1]
    if kind == kinds.SPHERE:
        x = r * u
    elif kind == kinds.CAPSULE:
        x = r * u + np.where(u[:, 2:3] > 0, 1.0, -1.0) * np.array([0, 0, h])
    elif kind == kinds.CYLINDER:
        th = np.linspace(0, 2 * np.pi, n, endpoint=False)
        x = np.concatenate([np.c_[r * np.cos(th), r * np.sin(th), np.full(n, h)],
                            np.c_[r * np.cos(th), r * np.sin(th), np.full(n, -h)]])
    else:
        x = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * size[:3]
    return x @ R.T + p


@pytest.mark.parametrize("kind", ["sphere", "capsule", "cylinder", "box", "mesh"])
def test_support_height_against_brute_force(kind, mesh_path):
    rng = np.random.default_rng(3)
    code = {"sphere": kinds.SPHERE, "capsule": kinds.CAPSULE, "cylinder": kinds.CYLINDER, "box": kinds.BOX, "mesh": kinds.CONVEX}[kind]
    size = np.array([[0.05, 0.12, 0.03, 0.0]])
    verts, tris = collision.load_convex_mesh(mesh_path, (0.1, 0.07, 0.05))
    coff = np.array([0, len(verts) if code == kinds.CONVEX else 0])
    hg = hull_graph(verts, coff, [tris if code == kinds.CONVEX else None])
    for _ in range(10):
        gR, gp = rotm(rng.normal(size=3))[None].copy(), rng.normal(size=(1, 3))
        pts = verts @ gR[0].T + gp[0] if code == kinds.CONVEX else _primitive_points(code, size[0], gR[0], gp[0], rng=rng)
        for d in rng.normal(size=(10, 3)) * rng.uniform(0.1, 3.0):
            h = support.support_height(code, 0, size, gR, gp, verts, coff, hg, d[0], d[1], d[2])
            brute = (pts @ d).max()
            # never below the surface's maximum (the cull's safety), and above it only by the
            # sampling's resolution (random points on the spheres' caps: ~5e-3 r |d|)
            assert h >= brute - 1e-12
            slack = {kinds.CONVEX: 1e-12, kinds.BOX: 1e-12, kinds.CYLINDER: 1e-7}.get(code, 5e-3 * 0.05 * np.linalg.norm(d))
            assert h <= brute + slack


def test_centre_axis_cull_only_drops_pairs_beyond_the_margin(mesh_path):
    """Random poses of two convex hulls (and a hull with a box): whenever the cull says
    'separated', coal's distance is above the margin; and it culls most far pairs."""
    import coal
    verts, tris = collision.load_convex_mesh(mesh_path, (0.1, 0.07, 0.05))
    cv = np.concatenate([verts, verts * [0.6, 1.3, 0.8]])
    coff = np.array([0, len(verts), 2 * len(verts), 2 * len(verts)])
    gkind = np.array([kinds.CONVEX, kinds.CONVEX, kinds.BOX])
    gsize = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0.04, 0.09, 0.02, 0]], float)
    lc = np.array([verts.mean(0) + 0.02, (verts * [0.6, 1.3, 0.8]).mean(0), np.zeros(3)])
    hg = hull_graph(cv, coff, [tris, tris, None])
    def shape(g):
        if gkind[g] == kinds.BOX:
            return coal.Box(*(2 * gsize[g, :3]))
        pts = coal.StdVec_Vec3s()
        pts.extend(list(cv[coff[g]:coff[g + 1]]))
        tt = coal.StdVec_Triangle()
        tt.extend([coal.Triangle(int(i), int(j), int(k)) for i, j, k in tris])   # scaling keeps the hull's faces
        return coal.Convex(pts, tt)
    shapes = [shape(g) for g in range(3)]
    rng = np.random.default_rng(5)
    margin = 2e-3
    culled = far = 0
    for _ in range(400):
        gR = np.array([rotm(rng.normal(size=3)) for _ in range(3)])
        gp = rng.normal(size=(3, 3)) * 0.12
        for a, b in ((0, 1), (0, 2)):
            cut = midphase.separated_along_centres(a, b, gkind, gsize, gR, gp, lc, cv, coff, hg, margin)[0]
            req, res = coal.DistanceRequest(), coal.DistanceResult()
            dist = coal.distance(shapes[a], coal.Transform3s(gR[a], gp[a]), shapes[b],
                                 coal.Transform3s(gR[b], gp[b]), req, res)
            if cut:
                assert dist > margin - 1e-9
                culled += 1
            far += dist > 0.02
    assert culled >= 0.6 * far


# ---------------------------------------------------------------- driver variants
def _fields(c):
    return [c.body1, c.body2, c.geom1, c.geom2, c.key, c.position, c.frame, c.distance, c.friction, c.restitution,
            c.compliance]


def test_nobox_driver_variant_bitwise_equal():
    """A detector without boxes (G1's hulls, spheres and cylinders on the ground, with
    self-collision) runs `driver.detect_nobox_kernel` (the narrow phase without the box-box
    and sphere-box kernels) and finds exactly the contacts of the full `detect_kernel`, along
    a fall; a scene with a box keeps the full kernel."""
    import scenes as scene_lib
    from collision import driver
    w = scene_lib.humanoid(pose="falling", height=0.02)
    sim = simstep.Simulator(w, dt=0.004)
    det = CollisionDetector(w, margin=2e-3)
    ref = CollisionDetector(w, margin=2e-3)
    det.detect(w.q0)
    ref._kernel_state()
    ref._kernel = driver.detect_kernel
    assert det._kernel is driver.detect_nobox_kernel
    total = 0
    for _ in range(40):
        sim.step()
        a, b = det.detect(sim.q), ref.detect(sim.q)
        total += len(a)
        for x, y in zip(_fields(a), _fields(b)):
            assert x.shape == y.shape and x.tobytes() == y.tobytes()
    assert total > 0
    boxes = simstep.WorldBuilder()
    boxes.add_ground()
    boxes.add_box("b", (0.1, 0.1, 0.1), position=(0, 0, 0.1))
    bw = boxes.build()
    bd = CollisionDetector(bw)
    bd.detect(bw.q0)
    assert bd._kernel is driver.detect_kernel

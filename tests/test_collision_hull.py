"""Hill-climbing support queries on convex hulls (`kernels.hull_climb`, `hull_support_set`,
and `support_feature` (ordered faces: `_hull_face`)/`support_height` built on them) against brute-force scans of all
vertices: G1's link hulls, random hulls, and hulls with many coplanar vertices (boxes and
cylinders sampled on a grid, where faces are triangulated and directions along the axes tie
whole faces)."""
import warnings

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from collision import hulls, kinds, support, workspace
import models
import simstep
from collision.shapes import ShapeTable, hull_graph


def _hull(points):
    """(vertices, outward triangles) of the convex hull of points."""
    h = ConvexHull(points)
    idx = np.asarray(h.vertices)
    remap = np.full(len(points), -1)
    remap[idx] = np.arange(len(idx))
    return np.ascontiguousarray(points[idx]), remap[h.simplices]


def _grid_box(n):
    """Points of a box surface on an n x n grid per face (coplanar vertices on every face)."""
    u = np.linspace(-1, 1, n)
    a, b = [x.ravel() for x in np.meshgrid(u, u)]
    one = np.ones_like(a)
    faces = [np.c_[s * one, a, b] for s in (-1, 1)] + [np.c_[a, s * one, b] for s in (-1, 1)] \
        + [np.c_[a, b, s * one] for s in (-1, 1)]
    return np.unique(np.concatenate(faces), axis=0) * [0.05, 0.03, 0.08]


def _cylinder(n):
    th = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.c_[0.04 * np.cos(th), 0.04 * np.sin(th)]
    return np.concatenate([np.c_[ring, np.full(n, 0.1)], np.c_[ring, np.full(n, -0.1)]])


def _random_hulls():
    rng = np.random.default_rng(11)
    clouds = [rng.normal(size=(n, 3)) * [0.1, 0.05, 0.2] for n in (5, 12, 40, 300)]
    clouds += [_grid_box(5), _grid_box(11), _cylinder(16), _cylinder(90)]
    return [_hull(c) for c in clouds]


def _g1_table():
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, package_dirs=dirs)
    return ShapeTable(b.build().geometries)


def _table(hulls):
    verts = np.concatenate([v for v, _ in hulls])
    coff = np.concatenate([[0], np.cumsum([len(v) for v, _ in hulls])])
    return verts, coff, hull_graph(verts, coff, [t for _, t in hulls])


def _directions(rng, n):
    """Random unit directions, the axes and the diagonals (ties on grid hulls)."""
    axes = np.concatenate([np.eye(3), -np.eye(3), K_DIAG])
    d = rng.normal(size=(n, 3))
    return np.concatenate([axes, d / np.linalg.norm(d, axis=1)[:, None]])


K_DIAG = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) / np.sqrt(3)


def _check_hulls(verts, coff, hg, gs, rng, ndir):
    for g in gs:
        V = verts[coff[g]:coff[g + 1]]
        for d in _directions(rng, ndir):
            h = V[:, 0] * d[0] + V[:, 1] * d[1] + V[:, 2] * d[2]    # the kernels' arithmetic
            v, hc = hulls.hull_climb(g, verts, hg, d[0], d[1], d[2], -1)
            assert coff[g] <= v < coff[g + 1] and hc == h[v - coff[g]] == h.max()
            for tol in (0.0, 1e-3, 1e-2):
                m, hm = hulls.hull_support_set(g, verts, hg, d[0], d[1], d[2], tol)
                assert hm == hc and np.array_equal(hg.queue[:m], coff[g] + np.flatnonzero(h >= hc - tol))


def test_climb_and_support_sets_on_g1_hulls():
    S = _g1_table()
    hulls = np.flatnonzero(S.kind == kinds.CONVEX)
    assert len(hulls) > 10 and max(S.coff[g + 1] - S.coff[g] for g in hulls) > 1000
    _check_hulls(S.cverts, S.coff, S.hull, hulls, np.random.default_rng(0), 60)


def test_climb_and_support_sets_on_random_and_coplanar_hulls():
    verts, coff, hg = _table(_random_hulls())
    _check_hulls(verts, coff, hg, range(len(coff) - 1), np.random.default_rng(1), 150)


def test_hull_graph_is_the_hull_edges():
    """Every vertex has ≥ 3 neighbours, the graph is symmetric and within its hull."""
    verts, coff, hg = _table(_random_hulls())
    deg = np.diff(hg.adj_off)
    assert deg.min() >= 3
    src = np.repeat(np.arange(len(verts)), deg)
    pairs = set(zip(src.tolist(), hg.adj.tolist()))
    assert all((b, a) in pairs for a, b in pairs)
    g_of = np.searchsorted(coff, np.arange(len(verts)), side="right") - 1
    assert np.array_equal(g_of[src], g_of[hg.adj])


def _support_reference(V, R, p, d, tol, cap):
    """support_feature of a hull by a scan (numpy, the kernels' arithmetic): the vertices
    within tol of the maximum of v · (Rᵀ d), the one highest in the world first, then the
    others in index order, at most cap."""
    dl = [R[0, k] * d[0] + R[1, k] * d[1] + R[2, k] * d[2] for k in range(3)]
    s = V[:, 0] * dl[0] + V[:, 1] * dl[1] + V[:, 2] * dl[2]
    sel = np.flatnonzero(s >= s.max() - tol)
    W = np.stack([p[k] + R[k, 0] * V[sel, 0] + R[k, 1] * V[sel, 1] + R[k, 2] * V[sel, 2] for k in range(3)], 1)
    hw = W[:, 0] * d[0] + W[:, 1] * d[1] + W[:, 2] * d[2]
    first = int(np.argmax(hw))
    order = [first] + [i for i in range(len(sel)) if i != first]
    return W[order[:cap]], len(sel)


def _check_ordered_face(F, full, d):
    """F is the support set `full`'s face ordered as a convex polygon, counter-clockwise seen
    from the tip of d: its points are support vertices, consecutive edges turn left, and it
    encloses the area of the set's 2-D convex hull (scipy)."""
    from scipy.spatial import QhullError
    t1 = np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(d / np.linalg.norm(d), t1)
    for x in F:
        assert np.min(np.linalg.norm(full - x, axis=1)) < 1e-12
    P, Q = full @ np.c_[t1, t2], F @ np.c_[t1, t2]
    try:
        area = ConvexHull(P).volume      # 2-D: the area
    except QhullError:      # collinear support set: a segment
        assert len(F) == 2
        return
    e = np.roll(Q, -1, axis=0) - Q
    assert np.all(e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0] >= -1e-14)
    if len(F) < workspace.MAXF:     # not truncated to the output buffer: the whole hull (same area)
        shoelace = 0.5 * np.sum(Q[:, 0] * np.roll(Q, -1, axis=0)[:, 1] - Q[:, 1] * np.roll(Q, -1, axis=0)[:, 0])
        assert abs(shoelace - area) <= 1e-7 * area + 1e-15, (shoelace, area)   # (near-collinear corners dropped)


@pytest.mark.parametrize("ordered", [False, True])
def test_support_feature_and_height_match_the_scan(ordered):
    """support_feature (climb and flood fill) gives a scan's output exactly, in the same
    order (the extreme vertex, then index order, truncated to MAXF points); support_height the
    scan's maximum; on G1's hulls in random world poses, along random directions and the
    hulls' own axes (ties on flat faces)."""
    S = _g1_table()
    rng = np.random.default_rng(2)
    gR = np.array([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(len(S))])
    gR *= np.sign(np.linalg.det(gR))[:, None, None]
    gp = rng.normal(size=(len(S), 3))
    out = np.zeros((workspace.MAXF, 3))
    D = np.zeros((workspace.NV3, 3))
    big = 0
    for g in np.flatnonzero(S.kind == kinds.CONVEX):
        V = S.convex_vertices(g)
        for d in _directions(rng, 20):
            D[0] = gR[g] @ d
            for tol in (1e-9, 1e-3, 2e-2):
                m = support.support_feature(kinds.CONVEX, g, S.size, gR, gp, S.cverts, S.coff, S.hull, D, 0, tol, out, ordered)
                ref, nsel = _support_reference(V, gR[g], gp[g], D[0], tol, workspace.MAXF)
                big += nsel > workspace.MAXF
                if ordered and nsel > 2:
                    _check_ordered_face(out[:m], *_support_reference(V, gR[g], gp[g], D[0], tol, nsel)[:1], D[0])
                else:
                    assert m == len(ref) and np.array_equal(out[:m], ref)
            h = support.support_height(kinds.CONVEX, g, S.size, gR, gp, S.cverts, S.coff, S.hull, *D[0])
            brute = (V @ gR[g].T + gp[g]) @ D[0]
            assert abs(h - brute.max()) <= 1e-12
    assert big > 0   # support sets larger than the output buffer were exercised


def _face_distance(points, hull_points):
    """The largest signed distance of points outside the face planes of hull_points' hull."""
    eq = ConvexHull(hull_points).equations
    return float((points @ eq[:, :3].T + eq[:, 3]).max(1).max())


def _rounded_box(n=4000, seed=3):
    """Points on a box of half extents (0.04, 0.03, 0.02) m with edges rounded at 5 mm: flat
    faces (dropped to their corners) and curved bands (kept at the tolerance's density)."""
    rng = np.random.default_rng(seed)
    core = np.array([0.035, 0.025, 0.015])
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return np.clip(d * 0.1, -core, core) + 0.005 * d


@pytest.mark.parametrize("tol", [1e-5, 1e-4, 1e-3])
def test_simplified_hull_is_within_its_tolerance(tol):
    """`simplify_hull` keeps hull vertices only (H' ⊆ H) and no vertex of the full hull lies more
    than tol outside a face plane of H'; a coarser tolerance keeps fewer vertices."""
    from collision.shapes import simplify_hull
    hv, _ = _hull(_rounded_box())
    idx = simplify_hull(hv, tol)
    assert np.array_equal(idx, np.unique(idx)) and idx.min() >= 0 and idx.max() < len(hv)
    assert 8 <= len(idx) < len(hv)
    assert _face_distance(hv, hv[idx]) <= tol
    # H' ⊆ H: along any direction its support is at most the full hull's, and within a few tol
    u = np.random.default_rng(0).normal(size=(500, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    gap = (hv @ u.T).max(0) - (hv[idx] @ u.T).max(0)
    assert gap.min() >= 0.0 and gap.max() <= 3 * tol
    if tol == 1e-3:
        assert len(idx) < 0.1 * len(hv)


def test_simplified_hull_keeps_the_corners_of_polytopes():
    """A tetrahedron and a box, whose vertices are all extreme along the seed directions, keep
    every vertex at any tolerance."""
    from collision.shapes import simplify_hull
    tet = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-2, 2) for z in (-3, 3)], float) * 0.01
    for v in (tet, box):
        assert np.array_equal(simplify_hull(v, 1e-3), np.arange(len(v)))


def test_mesh_hull_tolerance(tmp_path):
    """load_convex_mesh: tolerance 0 keeps every vertex of the hull, the default
    (HULL_TOLERANCE, 0.1 mm) fewer with the full hull within 0.1 mm of its face planes;
    a geometry's hull_tolerance reaches the detector; bad values are refused by name, before
    the builder changes."""
    import trimesh
    from collision import CollisionDetector, CollisionError, load_convex_mesh
    from collision.shapes import HULL_TOLERANCE
    path = tmp_path / "ball.obj"
    v, t = _hull(_rounded_box())
    trimesh.Trimesh(v, t).export(path)
    full, _ = load_convex_mesh(path, tolerance=0.0)
    kept, tris = load_convex_mesh(path)
    assert len(full) == len(v) and HULL_TOLERANCE == 1e-4
    assert len(kept) < 0.5 * len(full) and len(tris) == 2 * len(kept) - 4
    assert _face_distance(full, kept) <= HULL_TOLERANCE
    assert len(load_convex_mesh(path, tolerance=1e-3)[0]) < len(kept)
    for bad in (-1e-4, np.nan, np.inf, "x"):
        with pytest.raises(CollisionError, match="hull tolerance"):
            load_convex_mesh(path, tolerance=bad)
    sizes = {}
    for tol in (None, 0.0):
        b = simstep.WorldBuilder()
        b.add_ground()
        b.add_mesh("ball", path, position=(0, 0, 0.1), hull_tolerance=tol)
        w = b.build()
        assert w.geometries[-1].hull_tolerance == tol
        det = CollisionDetector(w)
        sizes[tol] = det.shapes.coff[-1] - det.shapes.coff[-2]
    assert sizes[0.0] == len(full) and sizes[None] == len(kept)
    b = simstep.WorldBuilder()
    with pytest.raises(ValueError, match="'ball'.*hull tolerance"):
        b.add_mesh("ball", path, hull_tolerance=-1.0)
    path_g1, dirs = models.robot_path("g1")
    with pytest.raises(ValueError, match="'g1'.*hull tolerance"):
        b.add_urdf("g1", path_g1, package_dirs=dirs, hull_tolerance=float("nan"))
    assert not b.build().model.nbodies

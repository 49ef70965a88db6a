"""Contact patches of convex hulls (issue 13): a support set that is the cap of a tessellated
curved surface collapses to one point (`collision.hulls.hull_patch_collapses`: its extreme
vertex, or the weighted mean of near-tied ones, `hull_tied_point`), or to two on a line; a face
of the hull keeps its patch.

Oracles: the sphere's closed form (an icosphere's vertices lie on its sphere, one straight
down), the hull's vertices by numpy (the lowest vertex, the band of the patch tolerance), the
widths of the hull along its face normals from scipy's qhull (not the detector's triangles).
"""
import warnings

import numpy as np
import pytest
import trimesh
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

import models
import simstep
from collision import CollisionDetector
from collision.hulls import PATCH_FACE_MIN, PATCH_PLANE_EPS

TOL = 1e-3      # the detector's default patch tolerance (m)


def _export(tmp_path, name, mesh):
    path = str(tmp_path / f"{name}.stl")
    mesh.export(path)
    return path


def _world(mesh_path, position, quaternion=(0, 0, 0, 1), under="ground"):
    """A free hull over the ground plane, a fixed box (top face at z = 0), or a fixed box-shaped
    hull (top at z = 0)."""
    b = simstep.WorldBuilder(gravity=(0, 0, 0))
    if under == "ground":
        b.add_ground()
    elif under == "box":
        b.add_box("table", (0.2, 0.2, 0.05), position=(0, 0, -0.05), fixed=True)
    else:
        b.add_mesh("table", under, position=(0, 0, -0.05), fixed=True, convex=True)
    b.add_mesh("hull", mesh_path, position=position, quaternion=quaternion, convex=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return b.build()


def _detect(w):
    return CollisionDetector(w, patch_tolerance=TOL).detect(w.q0)


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    d = tmp_path_factory.mktemp("patch")
    return {
        "ico3": _export(d, "ico3", trimesh.creation.icosphere(subdivisions=3, radius=0.05)),    # 7-vertex band
        "ico4": _export(d, "ico4", trimesh.creation.icosphere(subdivisions=4, radius=0.05)),    # 23
        "foot": _export(d, "foot", trimesh.creation.icosphere(subdivisions=3, radius=0.02)),    # 19: a Go2 foot's size
        "cube": _export(d, "cube", trimesh.creation.box((0.01, 0.01, 0.01))),
        "slab": _export(d, "slab", trimesh.creation.box((0.08, 0.05, 0.03))),
        "bar": _export(d, "bar", trimesh.creation.box((0.01, 0.01, 0.1))),
        "table": _export(d, "table", trimesh.creation.box((0.4, 0.4, 0.1))),
    }


@pytest.mark.parametrize("name", ["ico3", "ico4", "foot"])
@pytest.mark.parametrize("under", ["ground", "box", "hull"])
def test_sphere_hull_rests_on_one_point(meshes, name, under):
    """An icosphere (a vertex straight down) sunk 0.3 mm into the ground, a box or a box-shaped
    hull: one contact, at the sphere's lowest point, depth 0.3 mm (closed form: the centre
    R − 0.3 mm above the surface), normal +z from the support into the sphere; its 1 mm band
    holds 7 to 23 vertices (the old patch: 4 points)."""
    r = 0.05 if name != "foot" else 0.02
    v = trimesh.load(meshes[name]).vertices
    assert np.allclose(v[np.argmin(v[:, 2])], (0, 0, -r)) and np.sum(v[:, 2] <= -r + TOL) >= 7
    depth = 3e-4
    under_arg = meshes["table"] if under == "hull" else under
    w = _world(meshes[name], (0.01, -0.02, r - depth), under=under_arg)
    c = _detect(w)
    assert len(c) == 1
    assert np.isclose(c.distance[0], -depth, atol=1e-9)
    assert np.allclose(c.normal[0], (0, 0, 1), atol=1e-9)
    assert np.allclose(c.position[0], (0.01, -0.02, -0.5 * depth), atol=1e-9)
    assert w.model.body_names[c.body1[0]] == "hull"


def _tied_point(v):
    """The oracle of `hulls.hull_tied_point` for a hull with vertices v (n, 3) resting on the
    ground: the mean of the vertices within PATCH_PLANE_EPS patch tolerances of the lowest,
    weighted 1 at the lowest down to 0 at that band's top, at the lowest's height."""
    eps = PATCH_PLANE_EPS * TOL
    low = v[:, 2].min()
    w = np.clip((low + eps - v[:, 2]) / eps, 0.0, None)
    x = (w[:, None] * v).sum(0) / w.sum()
    return np.array([x[0], x[1], low])


@pytest.mark.parametrize("seed", range(6))
def test_tilted_sphere_hull_one_point_at_its_lowest_vertices(meshes, seed):
    """Random orientations of the icosphere on the ground, its lowest vertex (numpy over the
    hull's vertices) 0.2 mm deep: one contact, at that vertex, or where another vertex lies
    within PATCH_PLANE_EPS patch tolerances (10 µm) of its height (seed 4: 3.5 mm away, a level
    edge of the sphere's cap, not a line the sphere rests on), at the weighted mean of the two,
    as deep as the lowest (`hulls.hull_tied_point`)."""
    rng = np.random.default_rng(seed)
    R = Rotation.random(random_state=rng.integers(1 << 30))
    v = R.apply(trimesh.load(meshes["ico4"]).vertices)
    low = v[np.argmin(v[:, 2])]
    ntied = int(np.sum(v[:, 2] < low[2] + PATCH_PLANE_EPS * TOL))
    assert ntied == (2 if seed == 4 else 1)
    x = _tied_point(v)
    p = np.array([0.0, 0.0, -low[2] - 2e-4])
    w = _world(meshes["ico4"], p, R.as_quat())
    c = _detect(w)
    assert len(c) == 1
    assert np.isclose(c.distance[0], x[2] - low[2] - 2e-4, atol=1e-9)
    assert np.allclose(c.position[0], x + p - (0, 0, 0.5 * c.distance[0]), atol=1e-9)
    if ntied == 1:
        assert np.allclose(x, low)


def test_a_rolling_cap_moves_its_contact_continuously_along_a_level_edge(meshes):
    """A Go2-foot-sized icosphere (2 cm) tilted through the orientation where one of its cap's
    edges is level (the edge's midpoint straight down), by δ = −4 … 4 mrad about the level axis
    across the edge: one contact each time (the edge, 3 mm, spans a quarter of the 1 mm band's
    12 mm: not a line, `hulls.hull_tied_partner`), at the weighted mean of the near-tied vertices
    (numpy oracle), the edge's midpoint at δ = 0 and the lower end once the other is more than
    10 µm up, and between them it moves by less than the edge's length per step (the extreme
    vertex alone jumps from one end to the other)."""
    v0 = trimesh.load(meshes["foot"]).vertices
    hull = ConvexHull(v0)
    a = hull.vertices[np.argmin(v0[hull.vertices, 2])]
    edges = {tuple(sorted((s[i], s[j]))) for s in hull.simplices for i, j in ((0, 1), (1, 2), (0, 2))}
    b = min({j for i, j in edges if i == a} | {i for i, j in edges if j == a}, key=lambda j: v0[j, 2])
    mid = 0.5 * (v0[a] + v0[b])
    level = Rotation.align_vectors([[0.0, 0.0, -1.0]], [mid])[0]     # the edge's midpoint straight down
    e = level.apply(v0[b] - v0[a])
    across = Rotation.from_rotvec(np.cross(e, (0, 0, 1.0)) / np.linalg.norm(np.cross(e, (0, 0, 1.0))))
    pts = []
    for delta in np.linspace(-4e-3, 4e-3, 9):
        R = Rotation.from_rotvec(delta * across.as_rotvec()) * level
        v = R.apply(v0)
        x = _tied_point(v)
        p = np.array([0.0, 0.0, -v[:, 2].min() - 2e-4])
        c = _detect(_world(meshes["foot"], p, R.as_quat()))
        assert len(c) == 1
        assert np.allclose(c.position[0], x + p - (0, 0, 0.5 * c.distance[0]), atol=1e-9)
        pts.append(x)
        if delta == 0.0:     # (the STL's float32 vertices leave the two ends 1e-10 m apart in height)
            assert np.allclose(x, level.apply(mid), atol=1e-6)
        if abs(delta) * np.linalg.norm(e) > 1.01 * PATCH_PLANE_EPS * TOL:
            assert np.allclose(x, v[np.argmin(v[:, 2])])
    steps = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    assert np.linalg.norm(pts[-1] - pts[0]) > 0.9 * np.linalg.norm(e) and steps.max() < 0.5 * np.linalg.norm(e)


@pytest.mark.parametrize("xy", [(0.0, 0.0), (0.003, 0.001)])
@pytest.mark.parametrize("under", ["ground", "box", "hull"])
@pytest.mark.parametrize("name", ["cube", "slab"])
def test_box_hull_keeps_its_face(meshes, name, under, xy):
    """A 1 cm cube hull and a box-shaped hull (8 x 5 x 3 cm) resting 0.2 mm deep on a face: the
    4 corners of the face, each at the depth. (On the ground at the origin the old patch code
    gave 1 point: the face's corners in index order are a bow tie, whose Newell normal is 0.)"""
    v = trimesh.load(meshes[name]).vertices
    hz = v[:, 2].max()
    under_arg = meshes["table"] if under == "hull" else under
    w = _world(meshes[name], (xy[0], xy[1], hz - 2e-4), under=under_arg)
    c = _detect(w)
    assert len(c) == 4
    assert np.allclose(c.distance, -2e-4, atol=1e-9)
    corners = np.unique(np.round(v[v[:, 2] < 0][:, :2], 9), axis=0) + xy
    got = np.unique(np.round(c.position[:, :2], 9), axis=0)
    assert np.allclose(np.sort(got, axis=0), np.sort(corners, axis=0), atol=1e-9)


@pytest.mark.parametrize("tilt_deg, far", [(0.5, 2), (2.0, 2), (30.0, 0)])
def test_tilted_cube_hull_keeps_edge_and_band(meshes, tilt_deg, far):
    """The 1 cm cube hull tilted about one bottom edge (the y axis through it), that edge 0.1 mm
    deep: both ends of the edge at the depth; the far corners, tan(tilt) · 1 cm above, in the
    patch while within the 1 mm band (a face tilted any amount is still a face)."""
    R = Rotation.from_euler("y", tilt_deg, degrees=True)
    v = trimesh.load(meshes["cube"]).vertices
    edge = np.array([0.005, 0.0, -0.005])           # a point of the edge along y, body frame
    p = -(R.apply(edge)) + (0, 0, -1e-4)            # that edge 0.1 mm deep, at x = 0
    w = _world(meshes["cube"], p, R.as_quat())
    c = _detect(w)
    wv = R.apply(v) + p
    band = np.sum(wv[:, 2] <= wv[:, 2].min() + TOL)
    assert band == 2 + far
    assert len(c) == band
    assert np.sum(np.isclose(c.distance, -1e-4, atol=1e-9)) == 2


def test_standing_bar_keeps_its_end_face(meshes):
    """A 1 x 1 x 10 cm bar standing on its end: the 4 corners of that 1 cm face (a face small
    against the bar's length, not against its width)."""
    w = _world(meshes["bar"], (0, 0, 0.05 - 1e-4))
    c = _detect(w)
    assert len(c) == 4 and np.allclose(c.distance, -1e-4, atol=1e-9)


def _half_width(vertices):
    """Half the minimum width of a convex hull over its face normals (qhull's facets)."""
    hull = ConvexHull(vertices)
    h = vertices @ hull.equations[:, :3].T
    return 0.5 * np.min(h.max(0) - h.min(0))


def _frustum(top, base=0.05, height=0.1):
    """A square frustum: base half side `base` at z = 0, top half side `top` at z = height."""
    s = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]], dtype=float)
    v = np.vstack([np.c_[base * s, np.zeros(4)], np.c_[top * s, np.full(4, height)]])
    return trimesh.convex.convex_hull(v)


@pytest.mark.parametrize("ratio", [0.9, 1.1])
def test_threshold_small_flat_face(tmp_path, ratio):
    """A frustum resting upside down on its small top face (4 coplanar vertices, the rest 10 cm
    up): the face's patch is kept when its diagonal is PATCH_FACE_MIN · ratio hull half widths
    with ratio > 1, collapsed when < 1 to its extreme vertex and the tied vertex farthest from it,
    the opposite corner (`hulls.hull_tied_partner`) (half width: scipy's facets)."""
    lo, hi = 1e-3, 0.05                      # bisect the top half side for the ratio
    for _ in range(60):
        t = 0.5 * (lo + hi)
        r = 2 * np.sqrt(2) * t / (PATCH_FACE_MIN * _half_width(_frustum(t).vertices))
        lo, hi = (t, hi) if r < ratio else (lo, t)
    mesh = _frustum(t)
    path = _export(tmp_path, "frustum", mesh)
    flip = Rotation.from_euler("x", 180, degrees=True)
    w = _world(path, (0, 0, 0.1 - 1e-4), flip.as_quat())
    c = _detect(w)
    assert np.all(np.isclose(c.distance, -1e-4, atol=1e-9))
    assert len(c) == (4 if ratio > 1 else 2)


def test_g1_soles_keep_their_face_patches():
    """G1 in its neutral pose lowered until its feet touch the floor, the lowest sole vertex
    0.2 mm deep: each foot's sole (ankle roll link) keeps a patch of 4 points."""
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, position=(0, 0, 1.0), package_dirs=dirs)
        w = b.build()
    det = CollisionDetector(w, margin=0.5, self_collision=False, patch_tolerance=TOL)
    q = w.q0.copy()
    q[2] -= det.detect(q).distance.min() + 2e-4
    c = det.detect(q)
    names = w.model.body_names
    feet = [n for n in ("g1/left_ankle_roll_link", "g1/right_ankle_roll_link")]
    touching = {names[b1] for b1, d in zip(c.body1, c.distance) if d <= 0}
    assert touching & set(feet)
    for foot in feet:
        k = np.array([names[b1] == foot and d <= TOL for b1, d in zip(c.body1, c.distance)])
        assert k.sum() == 4, (foot, k.sum())


def _collapse_oracle(V, tris, v0, l, tol):
    """(collapses, ratio, near a rounding edge) of the rule by numpy for hull vertices V
    (triangles tris) at the apex v0 (an extreme vertex along the unit l, or one within
    PATCH_PLANE_EPS · tol of the extreme height): the face part of the tol band below the
    extreme height (within PATCH_PLANE_EPS · tol of the plane of the triangle at v0 most normal
    to l, outward normals by the cross product away from the centroid), its lateral extent over
    PATCH_FACE_MIN half widths (qhull's facets)."""
    a, b, c = V[tris[:, 0]], V[tris[:, 1]], V[tris[:, 2]]
    n = np.cross(b - a, c - a)
    n *= np.sign(np.einsum("ij,ij->i", n, a - V.mean(0)))[:, None]
    n /= np.linalg.norm(n, axis=1)[:, None]
    at = np.flatnonzero((tris == v0).any(1))
    nf = n[at[np.argmax(n[at] @ l)]]
    h = V @ l
    off = np.abs((V - V[v0]) @ nf)
    eps = PATCH_PLANE_EPS * tol
    band = h >= h.max() - tol
    face = np.flatnonzero(band & (off <= eps))
    near = np.any(np.abs(off[band] - eps) < 1e-12)
    W = V[face] - np.outer(V[face] @ l, l)
    ext = max((np.linalg.norm(W[i] - W[j]) for i in range(len(face)) for j in range(len(face))), default=0.0)
    ratio = ext / (PATCH_FACE_MIN * _half_width(V))
    return ratio < 1, ratio, near or abs(ratio - 1) < 1e-9


def _g1_shapes(hull_tolerance=None):
    """The `collision.shapes.ShapeTable` of G1's collision geometries (at q = 0), their hulls
    at `hull_tolerance` (m; None: the default)."""
    from collision.shapes import ShapeTable
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, package_dirs=dirs, hull_tolerance=hull_tolerance)
    return ShapeTable(b.build().geometries)


def test_support_feature_collapse_on_g1_hulls_matches_numpy():
    """support_feature with collapse=True on G1's link hulls in random poses, along random
    directions: either the band of collapse=False unchanged, or one extreme vertex, as the rule
    by numpy decides (`_collapse_oracle`); both outcomes occur."""
    from collision import kinds, support, workspace
    S = _g1_shapes()
    rng = np.random.default_rng(5)
    out, out2 = np.zeros((workspace.MAXF, 3)), np.zeros((workspace.MAXF, 3))
    D = np.zeros((workspace.NV3, 3))
    seen = {True: 0, False: 0}
    for g in np.flatnonzero(S.kind == kinds.CONVEX):
        V, tris = S.convex_vertices(g), S.ctris[g]
        R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
        gR = np.repeat(R[None], len(S), axis=0)
        gp = np.repeat(rng.normal(size=(1, 3)), len(S), axis=0)
        for _ in range(8):
            l = rng.normal(size=3)
            l /= np.linalg.norm(l)
            D[0] = R @ l
            for tol in (1e-3, 5e-3):
                m = support.support_feature(kinds.CONVEX, g, S.size, gR, gp, S.cverts, S.coff, S.hull, D, 0, tol, out,
                                            True, True)
                m2 = support.support_feature(kinds.CONVEX, g, S.size, gR, gp, S.cverts, S.coff, S.hull, D, 0, tol,
                                             out2, True, False)
                h = V @ l
                if np.sum(h >= h.max() - tol) == 1:
                    continue
                # the apexes: the extreme vertices and those within PATCH_PLANE_EPS · tol below
                apexes = np.flatnonzero(h >= h.max() - PATCH_PLANE_EPS * tol)
                verdicts = [_collapse_oracle(V, tris, int(v), l, tol) for v in apexes]
                if m == 1 and m2 > 1:     # collapsed: an extreme vertex, no face at any apex
                    v0 = int(np.argmin(np.linalg.norm(V @ R.T + gp[0] - out[0], axis=1)))
                    assert np.allclose(V[v0] @ R.T + gp[0], out[0], atol=1e-12) and h[v0] >= h.max() - 1e-12
                    assert all(c or e for c, _, e in verdicts), (S.names[g], [r for _, r, _ in verdicts])
                    seen[True] += 1
                else:                     # the band, as without the rule: a face at some apex
                    assert m == m2 and np.array_equal(out[:m], out2[:m])
                    assert any(not c or e for c, _, e in verdicts), (S.names[g], [r for _, r, _ in verdicts])
                    seen[False] += 1
    assert seen[True] > 20 and seen[False] > 20, seen


def test_near_tied_lowest_vertices_do_not_decide_the_patch():
    """G1's curved back plate (`logo_link`, 1214 vertices in the hull of all its vertices, hull
    tolerance 0) lying on the floor: its two lowest vertices (895, 949) are 0.5 µm apart along the floor's normal as a settled G1 lies on
    its back (the direction below, rounded), and the robot's sub-µm rocking makes either the
    lowest. The face test at 895 finds a face, at 949 not, so when only the climb's vertex
    decided, the patch flipped between 4 points and 1 every few steps (233 contact-set changes
    in 1000 steps of `bench_step`'s g1_on_back; 4 with every near-tied apex tested). Tilted so
    that each is the lowest by 0.34 µm, the patch is the face both times."""
    from collision.hulls import _face_at, hull_climb, hull_flood, hull_patch_collapses
    S = _g1_shapes(hull_tolerance=0.0)
    g = next(i for i, n in enumerate(S.names) if "logo_link" in n)
    off, V = S.coff[g], S.convex_vertices(g)
    l = np.array([-0.998077, -0.018359, -0.059203])       # the floor's direction in the plate's frame
    l /= np.linalg.norm(l)
    h = V @ l
    a, c = np.argsort(-h)[:2]
    assert (h[a] - h[c]) < 1e-6
    d = V[a] - V[c]
    tie = l - (d @ l) / (d @ d) * d                       # a and c exactly level
    faces = {}
    for top, other in ((a, c), (c, a)):
        e = V[top] - V[other]
        u = tie + 1e-5 * e / np.linalg.norm(e)           # top the lowest, by 0.34 µm
        u /= np.linalg.norm(u)
        v0, hmax = hull_climb(g, S.cverts, S.hull, u[0], u[1], u[2], -1)
        assert v0 == off + top
        m = hull_flood(S.cverts, S.hull, v0, hmax, u[0], u[1], u[2], 1e-3)
        faces[top] = _face_at(g, S.cverts, S.hull, v0, hmax, m, u[0], u[1], u[2], 1e-3)
        assert not hull_patch_collapses(g, S.cverts, S.hull, v0, hmax, m, u[0], u[1], u[2], 1e-3)
    assert sorted(faces.values()) == [False, True]        # the climb's vertex alone would flip the patch


@pytest.mark.parametrize("dz", [-2e-7, 0.0, 2e-7])
def test_a_hull_resting_on_two_vertices_keeps_both(tmp_path, dz):
    """A prism whose two lowest vertices A and C (4.87 cm apart) touch the floor, with four more
    vertices of its 1 mm band 0.5–0.6 mm up, two of them farther from A than C is and C inside
    their outline (as G1's wrist link lying on the floor): the patch holds both A and C at their
    depth, whichever is the deeper (C raised or lowered by 0.2 µm). Keeping the farthest band
    vertex instead left C out, and the load jumped between A and C every step."""
    bottom = np.array([[0.0, 0.0, 0.0], [0.0, -0.0487, dz], [-0.004, -0.0492, 6e-4], [0.004, -0.0492, 6e-4],
                       [0.01, -0.02, 5e-4], [-0.01, -0.02, 5e-4]])
    top = bottom * [1.0, 1.0, 0.0] + [0.0, 0.0, 0.03]
    pts = np.vstack([bottom, top])
    hull = ConvexHull(pts)
    assert set(range(6)) <= set(hull.vertices)
    path = _export(tmp_path, "prism", trimesh.Trimesh(pts, hull.simplices).convex_hull)
    c = _detect(_world(path, (0.0, 0.0, -1e-5)))
    assert len(c) == 4
    for k in (0, 1):                    # A, C: a contact at each, at its depth
        near = np.linalg.norm(c.position[:, :2] - bottom[k, :2], axis=1)
        j = int(np.argmin(near))
        assert near[j] < 1e-6 and abs(c.distance[j] - (bottom[k, 2] - 1e-5)) < 2e-8     # (STL: float32)


@pytest.mark.parametrize("dz", [-1e-7, 0.0, 1e-7])
def test_a_curved_cap_resting_on_two_tied_vertices_keeps_both(tmp_path, dz):
    """A rounded hull (6 × 4 × 5 cm) whose two lowest vertices A, C are 1.4 cm apart and level,
    or either the lower by 0.1 µm, the rest of its bottom 4–7 mm up: its cap collapses (the two
    span less than the hull's half width), and the patch holds both A and C, whichever is the
    lower (`hulls.hull_tied_partner`; with the extreme vertex alone, G1's hip link lying on the
    floor moved its one contact, 80 N, between two such vertices 1.4 cm apart every few steps)."""
    bottom = np.array([[-0.007, 0.0, 0.0], [0.007, 0.0, dz], [0.0, 0.02, 0.004], [0.0, -0.02, 0.004],
                       [0.03, 0.0, 0.006], [-0.03, 0.0, 0.006], [0.02, 0.015, 0.007], [-0.02, 0.015, 0.007],
                       [0.02, -0.015, 0.007], [-0.02, -0.015, 0.007]])
    pts = np.vstack([bottom, bottom * [1.0, 1.0, 0.0] + [0.0, 0.0, 0.05]])
    hull = ConvexHull(pts)
    assert set(range(len(bottom))) <= set(hull.vertices)
    path = _export(tmp_path, "cap", trimesh.Trimesh(pts, hull.simplices).convex_hull)
    c = _detect(_world(path, (0.0, 0.0, -1e-5)))
    assert len(c) == 2
    for k in (0, 1):
        near = np.linalg.norm(c.position[:, :2] - bottom[k, :2], axis=1)
        j = int(np.argmin(near))
        assert near[j] < 1e-6 and abs(c.distance[j] - (bottom[k, 2] - 1e-5)) < 2e-8     # (STL: float32)

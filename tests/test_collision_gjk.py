"""Native hull–hull and hull–primitive narrow phase (GJK/EPA, `collision.gjk`, then the
support-feature patch) against coal and python-fcl on random poses: separated, touching and
deep; the patch points lie on both surfaces."""
import warnings

import numpy as np
import pytest
import trimesh

import models
import simstep
from collision import CollisionDetector

MARGIN = 0.05       # m: separated pairs within it are reported with their distance
TOL = 1e-5          # m: patch tolerance (tight, so that patch points are on the faces)


def rotq(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def quat_to_R(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    """A random rock (40 points), an icosahedron, a box-like hull with coplanar faces, and
    G1's head (2167 hull vertices)."""
    d = tmp_path_factory.mktemp("gjk")
    rng = np.random.default_rng(4)
    rock = trimesh.convex.convex_hull(rng.normal(size=(40, 3)) * [0.06, 0.04, 0.05])
    rock.export(str(d / "rock.stl"))
    trimesh.creation.icosahedron().apply_scale(0.05).export(str(d / "ico.stl"))
    trimesh.creation.box((0.08, 0.05, 0.03)).export(str(d / "slab.stl"))
    path, dirs = models.robot_path("g1")
    head = f"{dirs[0]}/example-robot-data/robots/g1_description/meshes/head_link.STL"
    return {"rock": str(d / "rock.stl"), "ico": str(d / "ico.stl"), "slab": str(d / "slab.stl"), "head": head}


def add_shape(b, name, what, meshes):
    """A mesh of `meshes`, or a primitive: box, sphere, capsule, cylinder, disc (a flat cylinder)."""
    if what in meshes:
        b.add_mesh(name, meshes[what], convex=True)
    elif what == "box":
        b.add_box(name, (0.05, 0.03, 0.02))
    elif what == "sphere":
        b.add_sphere(name, 0.03)
    elif what == "capsule":
        b.add_capsule(name, 0.02, 0.08)
    elif what == "cylinder":
        b.add_cylinder(name, 0.03, 0.05)     # G1's shoulder cylinders: r 3 cm, length 3-5 cm
    elif what == "disc":
        b.add_cylinder(name, 0.04, 0.01)
    else:
        raise ValueError(what)


def pair_world(meshes, first, second):
    b = simstep.WorldBuilder(gravity=(0, 0, 0))
    add_shape(b, "a", first, meshes)
    add_shape(b, "b", second, meshes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return b.build()


def coal_distance(det, q):
    """coal's signed distance, normal (a → b) and nearest points of the two geometries."""
    import coal
    shapes = det._backend.shapes
    gR, gp = det.geometry_placements(q)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    d = coal.distance(shapes[0], coal.Transform3s(gR[0], gp[0]), shapes[1], coal.Transform3s(gR[1], gp[1]), req, res)
    return d, np.array(res.normal), np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())


def fcl_distance(det, q):
    """python-fcl's signed distance (its GJK/EPA) of the two geometries."""
    import fcl
    be = det._fcl
    gR, gp = det.geometry_placements(q)
    for g in (0, 1):
        be.objs[g].setTransform(fcl.Transform(gR[g], gp[g]))
    req = fcl.DistanceRequest(enable_nearest_points=True, enable_signed_distance=True)
    return fcl.distance(be.objs[0], be.objs[1], req, fcl.DistanceResult())


def support_gap(det, q, n):
    """max over a of x · n − min over b of x · n ... as −(separation along n), by brute force
    on the hull vertices / closed form (through the kernels' support_height)."""
    from collision import support
    S = det.shapes
    gR, gp = det.geometry_placements(q)
    ha = support.support_height(S.kind[0], 0, S.size, gR, gp, S.cverts, S.coff, S.hull, *n)
    hb = support.support_height(S.kind[1], 1, S.size, gR, gp, S.cverts, S.coff, S.hull, *(-n))
    return -hb - ha   # separation of b above a along n


def on_surface(det, q, g, x):
    """Signed distance of world point x to geometry g's surface (hull: face planes;
    primitives: closed form)."""
    from scipy.spatial import ConvexHull
    from collision import kinds
    S = det.shapes
    gR, gp = det.geometry_placements(q)
    xl = gR[g].T @ (x - gp[g])
    k, s = S.kind[g], S.size[g]
    if k == kinds.CONVEX:
        eq = ConvexHull(S.convex_vertices(g)).equations
        return np.max(eq[:, :3] @ xl + eq[:, 3])
    if k == kinds.BOX:
        e = np.abs(xl) - s[:3]
        return np.linalg.norm(np.maximum(e, 0)) + min(e.max(), 0)
    if k == kinds.SPHERE:
        return np.linalg.norm(xl) - s[0]
    if k == kinds.CAPSULE:
        return np.linalg.norm(xl - [0, 0, np.clip(xl[2], -s[1], s[1])]) - s[0]
    if k == kinds.CYLINDER:
        e = np.array([np.hypot(xl[0], xl[1]) - s[0], abs(xl[2]) - s[1]])
        return np.linalg.norm(np.maximum(e, 0)) + min(e.max(), 0)
    raise ValueError(k)


CASES = [("rock", "rock"), ("rock", "ico"), ("slab", "slab"), ("head", "rock"), ("rock", "box"),
         ("slab", "box"), ("ico", "sphere"), ("rock", "capsule"), ("head", "capsule"),
         # cylinders (G1's shoulders) against hulls, primitives and cylinders: GJK/EPA on the
         # closed-form support of the rim
         ("cylinder", "rock"), ("cylinder", "head"), ("cylinder", "box"), ("cylinder", "sphere"),
         ("cylinder", "capsule"), ("cylinder", "cylinder"), ("disc", "cylinder"), ("slab", "disc")]


@pytest.mark.parametrize("first,second", CASES)
def test_gjk_pairs_against_coal_and_fcl(meshes, first, second):
    from collision.backends import FclBackend
    w = pair_world(meshes, first, second)
    det = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
    lib = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL, native=False)
    det._fcl = FclBackend(det.shapes, 0.0, TOL)
    rng = np.random.default_rng(CASES.index((first, second)))
    counts = dict(separated=0, touching=0, deep=0)
    fallbacks = coal_failures = 0
    for trial in range(12):
        q = w.q0.copy()
        q[3:7], q[10:14] = rotq(rng), rotq(rng)
        q[0:3] = 0.0
        u = rng.normal(size=3)
        q[7:10] = 1.0 * u / np.linalg.norm(u)
        d0, n0, _, _ = coal_distance(lib, q)
        assert d0 > 0
        # separated (within the margin), touching, deep: b moved along coal's normal
        for kind, target in (("separated", 0.5 * MARGIN * rng.uniform(0.1, 1.0)), ("touching", 0.0),
                             ("deep", -rng.uniform(0.003, 0.012))):
            qq = q.copy()
            qq[7:10] -= (d0 - target) * n0
            dc, nc, _, _ = coal_distance(lib, qq)
            if kind == "touching" and not abs(dc) < 1.0:
                # coal's GJK/EPA can fail on exactly touching flat faces (it returned −DBL_MAX for
                # slab–box on one machine, depending on the last bits of the pose): fcl is the
                # oracle there, along the normal the pair was moved on
                coal_failures += 1
                dc, nc = fcl_distance(det, qq), n0
            assert abs(dc - target) < 2e-6 if kind != "deep" else dc < -1e-4
            c = det.detect(qq)
            # (exactly touching curved pairs where GJK stalls and EPA finds A − B flat at the origin
            # go to the library: rare, counted below)
            assert (det.stats["library_pairs"] == 0 or kind == "touching") and len(c) >= 1
            fallbacks += det.stats["library_pairs"]
            counts[kind] += 1
            n = c.frame[0][:, 2]
            assert np.allclose(c.frame[:, :, 2], n)            # one normal per patch
            sep = c.distance.min()
            assert abs(sep - dc) < 1e-5, (kind, sep, dc)       # distance / depth as coal's
            # exact oracle: the signed distance of two convex sets is the max over directions n of
            # the separation along n (closed-form / brute-force support heights): ours is the
            # separation along our normal, and that normal does at least as well as coal's
            gap = support_gap(det, qq, n)
            assert abs(gap - sep) < 2e-6, (kind, gap, sep)
            assert gap >= support_gap(det, qq, nc) - 2e-6, (kind, gap, support_gap(det, qq, nc))
            if kind == "deep":
                assert abs(fcl_distance(det, qq) - dc) < 1e-4   # fcl's EPA agrees (looser tolerance)
            # the normal: coal's, or (several directions of equal depth) one with the same separation
            if np.dot(n, nc) < 1 - 1e-6:
                assert abs(support_gap(det, qq, n) - dc) < 1e-5, (kind, n, nc)
            # body 1 is b (geometry 1), body 2 is a: n points from a into b
            assert np.all(c.geom1 == 1) and np.all(c.geom2 == 0)
            for p1, p2 in zip(c.point1(), c.point2()):
                assert abs(on_surface(det, qq, 1, p1)) < 1e-6 + TOL
                assert abs(on_surface(det, qq, 0, p2)) < 1e-6 + TOL
            # the patch and its keys are those of the library path up to the normal's choice
            cl = lib.detect(qq)
            assert abs(cl.distance.min() - sep) < 1e-5
    assert min(counts.values()) >= 12 and fallbacks <= 1 and coal_failures <= 1


def test_pair_cache_changes_time_not_contacts():
    """The separating axes remembered across calls (`PairCache`) only prove separation and the
    GJK simplices only start GJK: over a random walk of G1's joints with self-collision, a
    detector that remembers gives the same contacts (pairs, points, distances and frames up to
    round-off) as one that does not, skips most self pairs by the remembered axis and starts
    GJK from a kept simplex."""
    path, dirs = models.robot_path("g1")
    b = simstep.WorldBuilder()
    b.add_ground()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.add_urdf("g1", path, package_dirs=dirs, position=(0, 0, 0.75))
        w = b.build()
    cached = CollisionDetector(w, margin=2e-3)
    fresh = CollisionDetector(w, margin=2e-3)
    fresh._pair_cache.slot[:] = -1
    rng = np.random.default_rng(3)
    q = w.q0.copy()
    lo, hi = w.model.lower[6:], w.model.upper[6:]       # the revolute joints after the free base
    warm = 0
    for step in range(30):
        q[7:] = np.clip(q[7:] + rng.normal(size=len(q) - 7) * 0.08, lo, hi)
        c1, c0 = cached.detect(q), fresh.detect(q)
        assert np.array_equal(c1.key, c0.key) and np.array_equal(c1.geom1, c0.geom1)
        # round-off: the kept simplex's points are stored in the links' frames and placed again
        assert np.abs(c1.distance - c0.distance).max(initial=0) < 1e-13
        assert np.abs(c1.frame - c0.frame).max(initial=0) < 1e-11
        assert np.abs(c1.position - c0.position).max(initial=0) < 1e-13
        warm += int(np.count_nonzero(cached._pair_cache.nsimplex))
    assert np.any(cached._pair_cache.axis != 0) and warm > 100


def test_gjk_never_finds_the_origin_inside_a_flat_tetrahedron():
    """Four support points of two shapes in face contact lie on one supporting plane of the
    Minkowski difference, up to round-off; the side tests of such a tetrahedron's faces are
    rounding noise and once reported the origin inside it, sending touching links 0.2 mm apart
    to EPA, which returned a 2 cm penetration (a G1 knee against a hip link). Random planar
    quadrilaterals at a distance d from the origin, rotated so that their coordinates round:
    never inside, and the closest point at the distance from the origin to the quadrilateral
    (d when the origin's foot is inside it, else to its nearest edge)."""
    from scipy.spatial import Delaunay
    from scipy.spatial.transform import Rotation

    from collision.gjk import _closest_simplex, _point2, gjk_work
    ws = gjk_work()
    rng = np.random.default_rng(0)
    inside_foot = 0
    for trial in range(400):
        d = 10.0 ** rng.uniform(-6, -3)
        xy = rng.uniform(-0.1, 0.1, (4, 2))
        xy[0] = rng.uniform(-0.01, 0.01, 2)          # the foot of the origin's perpendicular near a vertex
        P = np.column_stack([xy, np.full(4, d)]) @ Rotation.random(random_state=rng).as_matrix().T
        if Delaunay(xy).find_simplex(np.zeros(2)) >= 0:
            planar = 0.0
            inside_foot += 1
        else:       # the foot outside: its distance to the nearest of the six segments (one is an edge)
            t = [np.clip(-(xy[i] @ (xy[j] - xy[i])) / ((xy[j] - xy[i]) @ (xy[j] - xy[i])), 0, 1)
                 for i in range(4) for j in range(i + 1, 4)]
            planar = min(np.linalg.norm(xy[i] + tk * (xy[j] - xy[i]))
                         for tk, (i, j) in zip(t, [(i, j) for i in range(4) for j in range(i + 1, 4)]))
        ws.W[:4] = P
        assert not _closest_simplex(ws, 4), f"trial {trial}: origin reported inside a flat tetrahedron"
        expected = np.hypot(d, planar)
        assert abs(np.sqrt(_point2(ws.W, ws.lam, 4)) - expected) < 1e-9 * max(expected, 1e-3)
    assert 50 < inside_foot < 350


def test_hulls_in_face_contact_warm_and_cold_gjk_agree_with_the_gap(meshes):
    """Two slab hulls with parallel faces, the upper one sliding over the lower at gaps from
    10 µm to 1 mm, at a random common orientation: the distance is the gap and the normal the
    faces' normal, for GJK started from the pair's last simplex (`PairCache`, kept across the
    calls) as for GJK started afresh (a detector without the cache), and the two agree to
    round-off; the later calls do start from a kept simplex."""
    w = pair_world(meshes, "slab", "slab")
    warm = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
    cold = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
    cold._pair_cache.slot[:] = -1
    za, zb = warm.shapes.convex_vertices(0)[:, 2], warm.shapes.convex_vertices(1)[:, 2]
    thickness = za.max() - zb.min()      # 3 cm in float32 (the STL file's)
    rng = np.random.default_rng(7)
    for trial in range(3):
        quat = rotq(rng)
        R = quat_to_R(quat)
        q = w.q0.copy()
        q[3:7] = q[10:14] = quat
        offset = np.zeros(2)
        for k in range(40):
            gap = 10.0 ** rng.uniform(-5, -3)
            offset = np.clip(offset + rng.normal(0.0, 0.002, 2), -0.02, 0.02)
            q[7:10] = R @ np.array([offset[0], offset[1], thickness + gap])
            cw, cc = warm.detect(q), cold.detect(q)
            assert abs(cw.distance.min() - gap) < 1e-10, (trial, k, cw.distance.min(), gap)
            assert np.allclose(np.abs(cw.frame[:, :, 2] @ R[:, 2]), 1.0, atol=1e-9)
            assert np.array_equal(cw.key, cc.key) and np.abs(cw.distance - cc.distance).max() < 1e-14
            assert np.abs(cw.position - cc.position).max() < 1e-12
        assert warm._pair_cache.nsimplex.max() > 0


def test_gjk_from_a_kept_simplex_takes_its_repeated_point_as_one(meshes):
    """A recorded case (from `test_gjk_pairs_against_coal_and_fcl[rock-box]`): the rock touching
    the box (distance 6e-12 m) after a pose apart along the same normal, whose GJK ended on the
    segment from the rock's vertex 2 to a box edge. Placed again from the geometry frames
    (`gjk.warm_simplex`), the segment's first point differs from the same vertices' fresh
    support point in the last bits. GJK once took the two as distinct points, EPA's blow-up met
    a triangle without a normal and called the Minkowski difference flat, and the pair went to
    the library: coal, whose answer at touching poses depends on its earlier calls in the
    process (its patch had a point 1.5 mm off the box after another test's coal calls). Now
    GJK stops at the repeated point (`gjk.SAME_POINT`): no library, the distance and normal of
    a cold start, and patch points on both surfaces."""
    w = pair_world(meshes, "rock", "box")
    q = np.array([0.0, 0.0, 0.0, -0.0632673813422806, -0.008780991390014163, 0.09555847845684082,
                  -0.9933723923299421, -0.05466892274483409, 0.1014478168851145, -0.13353682526625987,
                  -0.27125665865313037, -0.04473793118976783, 0.5879361192213839, 0.7607558493788249])
    kept = np.array([[[-0.0535233467817307, 0.031034873798489564, -0.1059029996395111],
                      [-0.049999999999999996, -0.029999999999999992, 0.01999999999999999]],
                     [[-0.0535233467817307, 0.031034873798489564, -0.1059029996395111],
                      [-0.04999999999999999, -0.029999999999999995, -0.020000000000000004]]])
    warm = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
    cold = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
    cold._pair_cache.slot[:] = -1
    pc = warm._pair_cache
    s = pc.slot[0, 1]
    assert np.abs(kept[0, 0] - warm.shapes.cverts[2]).max() < 1e-16      # the rock's vertex 2, rounded
    pc.local[s, :2], pc.verts[s, :2], pc.nsimplex[s] = kept, [[2, -1], [2, -1]], 2
    c, cc = warm.detect(q), cold.detect(q)
    assert warm.stats["library_pairs"] == 0 and cold.stats["library_pairs"] == 0
    sep = c.distance.min()
    assert abs(sep - cc.distance.min()) < 1e-10 and abs(sep) < 1e-10
    assert abs(support_gap(warm, q, c.frame[0][:, 2]) - sep) < 1e-10
    for p1, p2 in zip(c.point1(), c.point2()):
        assert abs(on_surface(warm, q, 1, p1)) < 1e-6 + TOL and abs(on_surface(warm, q, 0, p2)) < 1e-6 + TOL
    # EPA alone, from that simplex with the repeated point kept as a third row: its blow-up
    # takes the two as one point (`gjk._distinct`) and finds the contact, not a flat difference
    from collision import gjk
    S = warm.shapes
    gR, gp = warm.geometry_placements(q)
    ws = gjk.gjk_work()
    assert gjk.warm_simplex(0, 1, gR, gp, ws, kept[None], np.array([[[2, -1], [2, -1]]]), 0, 2) == 2
    v = ws.lam[:2] @ ws.W[:2]                                     # the segment's point closest to the origin
    gjk._support(0, 1, S.kind, S.size, gR, gp, S.cverts, S.hull, -v[0], -v[1], -v[2], ws, 2)
    assert 0 < np.abs(ws.W[2] - ws.W[0]).max() < 1e-15          # the first point again, up to rounding
    f = gjk.epa(0, 1, S.kind, S.size, gR, gp, S.cverts, S.hull, ws, 3)
    assert f >= 0 and abs(ws.FD[f]) < 1e-10


def test_cylinder_pairs_from_a_kept_simplex(meshes):
    """A shoulder-sized cylinder resting against a hull (G1's head, the rock), moved by µm and
    10 µrad from call to call, about 20 µm apart (G1's self-contacts rest at 10 µm), and every
    tenth call pushed 1–3 mm into it.
    GJK on a cylinder's smooth rim stops where rounding stops its progress, so a start from
    the kept simplex may end elsewhere than a fresh start: the normals then differ by less
    than 1e-4 rad and the distances by less than 2e-7 m, and the separation along the kept
    start's normal (the exact support heights) is never more than 1e-8 m short of the fresh
    start's (G1 drops: 4e-5 rad and 1e-7 m at most, the kept start the better one in 70% of
    the differing pairs). A pair found overlapping from a kept simplex is solved again from
    scratch (EPA's answer depends on its start polytope), so deep contacts are those of a
    fresh start, bit for bit; the touching calls do start from a kept simplex."""
    for other in ("head", "rock"):
        w = pair_world(meshes, "cylinder", other)
        warm = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
        cold = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL)
        lib = CollisionDetector(w, margin=MARGIN, patch_tolerance=TOL, native=False)
        cold._pair_cache.slot[:] = -1
        rng = np.random.default_rng(11)
        kept = 0
        for trial in range(4):
            q = w.q0.copy()
            q[3:7], q[10:14] = rotq(rng), rotq(rng)
            q[0:3] = 0.0
            u = rng.normal(size=3)
            q[7:10] = u / np.linalg.norm(u)
            d0, n0, _, _ = coal_distance(lib, q)
            q[7:10] -= (d0 - 2e-5) * n0
            for k in range(30):
                deep = k % 10 == 9
                qq = q.copy()
                qq[7:10] += rng.normal(0.0, 1e-6, 3) - (rng.uniform(1e-3, 3e-3) * n0 if deep else 0.0)
                qq[10:14] += rng.normal(0.0, 1e-5, 4)
                qq[10:14] /= np.linalg.norm(qq[10:14])
                cw, cc = warm.detect(qq), cold.detect(qq)
                assert np.array_equal(cw.key, cc.key) and len(cw) >= 1
                if deep:
                    assert cw.distance.min() < -1e-4
                    assert np.array_equal(cw.frame, cc.frame) and np.array_equal(cw.position, cc.position)
                    continue
                nw, nc = cw.frame[0][:, 2], cc.frame[0][:, 2]
                assert np.arccos(min(1.0, nw @ nc)) < 1e-4, (other, trial, k)
                assert np.abs(cw.distance - cc.distance).max() < 2e-7
                assert support_gap(warm, qq, -nw) >= support_gap(warm, qq, -nc) - 1e-8, (other, trial, k)
                kept += int(warm._pair_cache.nsimplex.max() > 0)
        assert kept >= 100, kept

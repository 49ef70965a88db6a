"""Collision shapes: validation of `models.Geometry` records, convex hulls of meshes, and
the flat per-geometry arrays that the numba kernels read.

Meshes collide through their convex hull (as MuJoCo does): a robot's link meshes are
replaced by the hull of their vertices, with the vertices that lie within `HULL_TOLERANCE`
(0.1 mm) of the hull of the others left out (`simplify_hull`; the curved parts of robot meshes
have hulls of up to 2000 vertices, which every support query climbs over), computed once per
(file, scale, tolerance) and cached. A static
mesh not marked convex gets a warning: non-convex triangle meshes are not supported yet.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from .hulls import NSEED, HullGraph
from .kinds import BOX, CAPSULE, CONVEX, CYLINDER, KIND_CODES, SPHERE


class CollisionError(ValueError):
    """Invalid collision input: shape sizes, mesh files, filter pairs, configurations."""


_HULLS = {}


_SEED_DIRS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]]
                      + [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


# m: the largest distance by which a mesh's collision hull may lie inside the convex hull of
# its vertices (`simplify_hull`); 0 keeps every vertex of the hull
HULL_TOLERANCE = 1e-4


def load_convex_mesh(path, scale=(1.0, 1.0, 1.0), name=None, tolerance=None):
    """Collision hull of a mesh file (STL, OBJ, DAE, ... via trimesh), scaled per axis
    (a negative factor mirrors, as in some URDFs): the convex hull of its vertices, reduced to
    the vertices `simplify_hull` keeps for `tolerance` (m; None: `HULL_TOLERANCE`, 0: the whole
    hull). Cached per (file, scale, tolerance).

    Returns (vertices (nv, 3) m, triangles (nt, 3) int) of the hull in the mesh frame.
    Raises FileNotFoundError for a missing file and CollisionError for a file that cannot
    be read, has no vertices, or whose hull encloses no volume (flat, a single triangle,
    collinear points), where a convex hull is needed, and for a tolerance that is not a finite
    number ≥ 0.
    """
    what = f"geometry '{name}': " if name else ""
    path = os.fspath(path)
    s = np.broadcast_to(np.asarray(scale, dtype=float), (3,)).copy()
    if not np.all(np.isfinite(s)) or np.any(s == 0):
        raise CollisionError(f"{what}mesh scale must be finite and non-zero (negative mirrors), "
                             f"got {tuple(float(x) for x in s)}")
    tol = hull_tolerance(tolerance, name)
    key = (os.path.abspath(path), tuple(s), tol)
    if key in _HULLS:
        return _HULLS[key]
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what}mesh file not found: {path}")
    import trimesh
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as e:  # trimesh raises many exception types
        raise CollisionError(f"{what}cannot read mesh {path}: {e}") from None
    verts = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
    if len(verts) == 0:
        raise CollisionError(f"{what}mesh {path} is empty (no vertices)")
    verts = verts * s
    ext = verts.max(0) - verts.min(0)
    size = float(np.max(ext))
    from scipy.spatial import ConvexHull
    hull = None
    if len(verts) >= 4 and size > 0:
        try:
            hull = ConvexHull(verts)
        except Exception:  # qhull raises on flat or collinear point sets
            hull = None
    if hull is None or hull.volume <= 1e-12 * size ** 3:
        closed = "watertight" if getattr(mesh, "is_watertight", False) else "non-watertight"
        raise CollisionError(f"{what}mesh {path} ({closed}, {len(verts)} vertices) is flat or degenerate: "
                             f"its convex hull encloses no volume, so it cannot be used as a collision "
                             f"shape")
    if tol > 0.0:
        hv = verts[hull.vertices]
        kept = hv[simplify_hull(hv, tol)]
        if len(kept) < len(hv):
            verts, hull = kept, ConvexHull(kept)
    out = _hull_arrays(verts, hull)
    _HULLS[key] = out
    return out


def hull_tolerance(tolerance, name=None):
    """The hull tolerance (m) a geometry asks for: `HULL_TOLERANCE` for None; else a finite
    number ≥ 0 (CollisionError naming the geometry otherwise)."""
    if tolerance is None:
        return HULL_TOLERANCE
    try:
        tol = float(tolerance)
    except (TypeError, ValueError):
        tol = np.nan
    if not (np.isfinite(tol) and tol >= 0.0):
        what = f"geometry '{name}': " if name else ""
        raise CollisionError(f"{what}hull tolerance must be a finite number ≥ 0 (m), got {tolerance!r}")
    return tol


def _hull_arrays(points, hull):
    """(vertices (nv, 3), outward-oriented triangles (nt, 3) int64 indexing them) of the scipy
    ConvexHull `hull` of points."""
    idx = np.asarray(hull.vertices)
    remap = np.full(len(points), -1, dtype=np.int64)
    remap[idx] = np.arange(len(idx))
    tris = remap[hull.simplices]
    hv = points[idx]
    e1 = hv[tris[:, 1]] - hv[tris[:, 0]]
    e2 = hv[tris[:, 2]] - hv[tris[:, 0]]
    flip = np.einsum("ij,ij->i", np.cross(e1, e2), hull.equations[:, :3]) < 0
    tris[flip] = tris[flip][:, [0, 2, 1]]
    return np.ascontiguousarray(hv, dtype=float), np.ascontiguousarray(tris, dtype=np.int64)


def simplify_hull(verts, tolerance):
    """Indices (sorted) of the vertices (nv, 3) of a convex hull H that span a hull H' ⊆ H with
    every vertex of H at most `tolerance` (m) outside each face plane of H'. Greedy refinement
    as in Quickhull (Barber, Dobkin and Huhdanpaa, "The Quickhull algorithm for convex hulls",
    ACM TOMS 1996), stopped at a distance: from the extreme vertices along 14 directions (the
    axes and the diagonals), each round adds, for every face of H', the vertex farthest outside
    it. A round tests the vertices that were outside in the last one; once none is, all are
    tested again. All indices when the extreme vertices span no volume."""
    from scipy.spatial import ConvexHull
    sel = np.unique(np.argmax(verts @ _SEED_DIRS.T, axis=0))
    test = np.arange(len(verts))
    while True:
        try:
            hull = ConvexHull(verts[sel])
        except Exception:   # qhull refuses flat or collinear sets
            return np.arange(len(verts))
        sel = sel[hull.vertices]
        D = verts[test] @ hull.equations[:, :3].T + hull.equations[:, 3]     # signed distances to the face planes
        face = np.argmax(D, axis=1)
        d = D[np.arange(len(test)), face]
        out = np.flatnonzero(d > tolerance)
        if out.size == 0:
            if len(test) == len(verts):
                return np.sort(sel)
            test = np.arange(len(verts))
            continue
        out = out[np.argsort(-d[out], kind="stable")]
        _, first = np.unique(face[out], return_index=True)    # the farthest vertex outside each face
        sel = np.union1d(sel, test[out[first]])
        test = test[out]


def hull_graph(cverts, coff, ctris):
    """`hulls.HullGraph` of the convex hulls: vertex adjacency from the hull triangles
    (ctris[g]: (nt, 3) local vertex indices of geometry g, None for other kinds) as CSR
    arrays over the global vertex indices of cverts, NSEED seed vertices per hull, the
    scratch of the support-set flood fill and of the ordered faces, the copies of the
    seeds' and the neighbours' coordinates the queries read, and for the patch collapse each
    directed edge's triangle normal and each hull's half width (`_hull_faces`)."""
    ng = len(ctris)
    nv = cverts.shape[0]
    edges = [np.zeros((0, 2), dtype=np.int64)]
    enorm = [np.zeros((0, 3))]
    seed = np.full((ng, NSEED), -1, dtype=np.int64)
    half_width = np.zeros(ng)
    for g, tris in enumerate(ctris):
        if tris is None:
            continue
        t, n, half_width[g] = _hull_faces(cverts[coff[g]:coff[g + 1]], np.asarray(tris, dtype=np.int64))
        t = t + coff[g]
        e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])   # directed edges of the triangles
        # each directed edge with its triangle's normal, then the reversed edges (the normal of
        # the triangle across; a directed edge found twice keeps its own triangle's)
        edges.append(np.concatenate([e, e[:, ::-1]]))
        enorm.append(np.concatenate([n, n, n, n, n, n]))
        seed[g] = coff[g] + np.argmax(cverts[coff[g]:coff[g + 1]] @ _SEED_DIRS.T, axis=0)
    e_all, n_all = np.concatenate(edges), np.concatenate(enorm)
    e, first = np.unique(e_all, axis=0, return_index=True)    # sorted by source vertex
    adj_off = np.zeros(nv + 1, dtype=np.int64)
    np.add.at(adj_off, e[:, 0] + 1, 1)
    adj = np.ascontiguousarray(e[:, 1])
    adjn = np.ascontiguousarray(n_all[first]).reshape(-1, 3)
    seedv = np.ascontiguousarray(cverts[np.where(seed >= 0, seed, 0)])     # (ng, NSEED, 3)
    return HullGraph(np.cumsum(adj_off), adj, seed, np.zeros(nv, dtype=np.int64),
                     np.zeros(nv + 1, dtype=np.int64), np.zeros(nv), np.zeros(nv), np.zeros(nv, dtype=np.int64),
                     np.zeros(2 * nv + 1, dtype=np.int64), seedv, np.ascontiguousarray(cverts[adj]), adjn, half_width)


def _hull_faces(verts, tris):
    """(triangles oriented outward (nt, 3), their unit outward normals (nt, 3), half the
    minimum width) of a convex hull (verts (nv, 3), triangles tris (nt, 3) in either
    orientation): outward is away from the vertex centroid (inside a convex hull). The width
    along a face normal is the extent of the vertices along it; a convex polytope's minimum
    width is attained along a face normal or an edge-edge direction (the half width here, over
    face normals only, is then an upper bound, exact for boxes and prisms). Degenerate (zero
    area) triangles get a zero normal and no width."""
    t = tris.copy()
    a, b, c = verts[t[:, 0]], verts[t[:, 1]], verts[t[:, 2]]
    n = np.cross(b - a, c - a)
    flip = np.einsum("ij,ij->i", n, a - verts.mean(0)) < 0
    t[flip] = t[flip][:, [0, 2, 1]]
    n[flip] = -n[flip]
    ln = np.linalg.norm(n, axis=1)
    ok = ln > 1e-300
    n[ok] /= ln[ok, None]
    n[~ok] = 0.0
    width = np.inf
    for i in range(0, len(t), 256):     # heights of every vertex along 256 normals at a time
        nn = n[i:i + 256][ok[i:i + 256]]
        if len(nn):
            h = verts @ nn.T
            width = min(width, float(np.min(h.max(0) - h.min(0))))
    return t, n, 0.5 * width if np.isfinite(width) else 0.0


def _positive(g, vals, what):
    vals = np.asarray(vals, dtype=float)
    if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise CollisionError(f"geometry '{g.name}' ({g.kind}): {what} must be positive and finite, "
                             f"got {tuple(np.atleast_1d(vals))}")
    return vals


class ShapeTable:
    """Flat arrays describing every collision geometry (index = position in the list).

    kind (ng,) int, body (ng,) int, size (ng, 4) (see `support`), Rl (ng, 3, 3) and pl (ng, 3)
    local placements, lc/le (ng, 3) local AABB center and half extents, cverts (NV, 3) with
    coff (ng+1,) offsets for convex hulls (ctris: list of hull triangles; hull: their
    `hulls.HullGraph` for hill-climbing support queries), friction,
    restitution, compliance (ng,), group, mask (ng,) uint32.
    """

    def __init__(self, geometries):
        ng = len(geometries)
        self.geometries = list(geometries)
        self.names = [g.name for g in geometries]
        self.kind = np.zeros(ng, dtype=np.int64)
        self.body = np.zeros(ng, dtype=np.int64)
        self.size = np.zeros((ng, 4))
        self.Rl = np.zeros((ng, 3, 3))
        self.pl = np.zeros((ng, 3))
        self.lc = np.zeros((ng, 3))
        self.le = np.zeros((ng, 3))
        self.friction = np.zeros(ng)
        self.restitution = np.zeros(ng)
        self.compliance = np.zeros(ng)
        self.group = np.zeros(ng, dtype=np.uint64)
        self.mask = np.zeros(ng, dtype=np.uint64)
        self.ctris = [None] * ng
        cv = []
        self.coff = np.zeros(ng + 1, dtype=np.int64)
        for i, g in enumerate(geometries):
            if g.kind not in KIND_CODES:
                raise CollisionError(f"geometry '{g.name}': unknown kind '{g.kind}'; expected one of "
                                     f"{sorted(KIND_CODES)}")
            k = KIND_CODES[g.kind]
            self.kind[i] = k
            self.body[i] = int(g.body)
            R = np.asarray(g.rotation, dtype=float)
            p = np.asarray(g.translation, dtype=float)
            if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
                raise CollisionError(f"geometry '{g.name}': rotation is not a rotation matrix")
            if p.shape != (3,) or not np.all(np.isfinite(p)):
                raise CollisionError(f"geometry '{g.name}': translation must be 3 finite numbers")
            self.Rl[i], self.pl[i] = R, p
            verts = np.zeros((0, 3))
            size = np.asarray(g.size, dtype=float).reshape(-1)
            if k == BOX:
                if size.shape != (3,):
                    raise CollisionError(f"geometry '{g.name}': a box needs 3 half extents, got {size}")
                h = _positive(g, size, "half extents")
                self.size[i, :3] = h
                self.le[i] = h
            elif k == SPHERE:
                if size.shape[0] < 1:
                    raise CollisionError(f"geometry '{g.name}': a sphere needs a radius")
                r = _positive(g, size[:1], "radius")[0]
                self.size[i, 0] = r
                self.le[i] = r
            elif k in (CAPSULE, CYLINDER):
                if size.shape[0] < 2:
                    raise CollisionError(f"geometry '{g.name}': a {g.kind} needs (radius, length)")
                r, L = _positive(g, size[:2], "radius and length")
                self.size[i, :2] = r, 0.5 * L
                self.le[i] = (r, r, 0.5 * L + (r if k == CAPSULE else 0.0))
            elif k == CONVEX:
                if not g.mesh:
                    raise CollisionError(f"geometry '{g.name}': mesh geometry without a mesh file")
                verts, tris = load_convex_mesh(g.mesh, g.scale, g.name, g.hull_tolerance)
                if int(g.body) < 0 and not g.convex and "/" not in g.name:  # not a robot link
                    warnings.warn(f"static mesh '{g.name}' is collided through its convex hull: "
                                  f"non-convex triangle meshes (terrain, bowls) are not supported yet",
                                  stacklevel=3)
                self.ctris[i] = tris
                lo, hi = verts.min(0), verts.max(0)
                self.lc[i], self.le[i] = 0.5 * (lo + hi), 0.5 * (hi - lo)
            else:  # plane
                self.le[i] = np.inf
            cv.append(verts)
            self.coff[i + 1] = self.coff[i] + len(verts)
            for attr in ("friction", "restitution", "compliance"):
                val = float(getattr(g, attr))
                if not np.isfinite(val) or val < 0:
                    raise CollisionError(f"geometry '{g.name}': {attr} must be ≥ 0, got {val}")
                getattr(self, attr)[i] = val
            self.group[i] = int(g.group) & 0xFFFFFFFF
            self.mask[i] = int(g.mask) & 0xFFFFFFFF
        self.cverts = np.ascontiguousarray(np.concatenate(cv) if cv else np.zeros((0, 3)))
        if self.cverts.shape[0] == 0:
            self.cverts = np.zeros((1, 3))  # numba needs a non-empty typed array
        self.hull = hull_graph(self.cverts, self.coff, self.ctris)

    def __len__(self):
        return len(self.kind)

    def convex_vertices(self, i):
        return self.cverts[self.coff[i]:self.coff[i + 1]]

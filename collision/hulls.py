"""Convex hulls' support queries by hill climbing on their vertex graph.

`HullGraph` holds every hull's vertex adjacency (built once with the shape table by
`shapes.hull_graph`); `hull_climb` finds a support vertex, `hull_support_set` (`hull_flood` from
that vertex) every vertex within a tolerance of the support height. Both visit a few dozen
vertices where a scan visits all of them (G1's hulls have up to 2167). `hull_patch_collapses`
tells a support set that is a face from the cap of a tessellated curved surface (whose contact
patch is one point: `hull_tied_point`, or two on a line, `hull_tied_partner`).
"""
import math
from collections import namedtuple

from numba import njit

from .jitopts import _NONRT, _NONRT_INLINE

HullGraph = namedtuple("HullGraph", "adj_off adj seed queue mark su sv order stack seedv adjv adjn half_width")
HullGraph.__doc__ = """Vertex adjacency of every convex hull, for hill-climbing support queries.

adj_off (NV+1,) int64, adj (E,) int64: CSR neighbour lists of the hull vertices (global
indices into ``cverts``; both directions of every hull edge). seed (ng, NSEED) int64: per
hull geometry the vertices extreme along the 14 directions ±x, ±y, ±z, (±1, ±1, ±1) of its
frame (starting points of the climb); -1 rows for the other geometries. Scratch of
`hull_support_set`: queue (NV,) int64, mark (NV+1,) int64 (visit stamps, the last entry
the current stamp). Scratch of the ordered faces (`support._hull_face`): projections su, sv
(NV,), sort order (NV,) int64, monotone-chain stack (2 NV + 1,) int64.

Copies of vertex coordinates laid out in the order the queries read them (a query then reads
a few contiguous cache lines instead of one line per vertex: the hull data of a robot, ~2 MB
for G1, does not stay in cache between two steps): seedv (ng, NSEED, 3) the seeds'
coordinates (``cverts[seed]``), adjv (E, 3) each neighbour's (``cverts[adj]``).

For the patch collapse (`hull_patch_collapses`): adjn (E, 3) the unit outward normal (geometry
frame) of the hull triangle holding the directed edge u → adj[e] (u the entry's source
vertex: the entries of u then cover each triangle at u once; zeros for a degenerate
triangle); half_width (ng,) m: half the hull's minimum width (over its face normals, the
extent of its vertices along the normal; 0 for the other geometries)."""
NSEED = 14
# patch collapse (`hull_patch_collapses`): a support set whose face part is narrower than
# PATCH_FACE_MIN half widths of its hull collapses to its extreme vertex; a vertex is on the
# face when within PATCH_PLANE_EPS patch tolerances of its plane
PATCH_FACE_MIN = 1.0
PATCH_PLANE_EPS = 0.01
# a collapsed cap's two near-tied vertices rest on a line when they span at least this fraction of
# the patch band along the line through them (`hull_tied_partner`)
LINE_SPAN = 0.5


@njit(**_NONRT_INLINE)
def hull_climb(g, cverts, hg, l0, l1, l2, start):
    """(vertex index, height) of a vertex of hull g maximizing v · l (l in the geometry frame):
    steepest ascent on the hull's edge graph from the best of the seeds and vertex `start` (a
    global index, e.g. the support vertex of a nearby direction: GJK's previous iterate, the
    last step's axis; −1: none). A vertex of a convex polytope that no neighbour beats
    is a global maximum (the simplex method's argument; the support mapping of Gilbert,
    Johnson and Keerthi, IEEE J. Robot. Autom. 1988, evaluated by hill climbing as in Cameron,
    ICRA 1997, "Enhancing GJK"), so the height does not depend on the start; on ties the
    vertex may."""
    sv = hg.seedv
    best = hg.seed[g, 0]
    hb = sv[g, 0, 0] * l0 + sv[g, 0, 1] * l1 + sv[g, 0, 2] * l2
    for j in range(1, NSEED):
        s = sv[g, j, 0] * l0 + sv[g, j, 1] * l1 + sv[g, j, 2] * l2
        if s > hb:
            best, hb = hg.seed[g, j], s
    if start >= 0:
        s = cverts[start, 0] * l0 + cverts[start, 1] * l1 + cverts[start, 2] * l2
        if s > hb:
            best, hb = start, s
    av = hg.adjv
    while True:
        nxt = best
        for e in range(hg.adj_off[best], hg.adj_off[best + 1]):
            s = av[e, 0] * l0 + av[e, 1] * l1 + av[e, 2] * l2
            if s > hb:
                nxt, hb = hg.adj[e], s
        if nxt == best:
            return best, hb
        best = nxt


@njit(**_NONRT)
def hull_support_set(g, cverts, hg, l0, l1, l2, tol):
    """Vertices of hull g with v · l ≥ max − tol (l in the geometry frame): `hull_flood` from
    the climb's maximum. Their global indices go to hg.queue[:m], ascending (as a scan in
    index order lists them). Returns (m, max height)."""
    v0, hmax = hull_climb(g, cverts, hg, l0, l1, l2, -1)
    return hull_flood(cverts, hg, v0, hmax, l0, l1, l2, tol), hmax


@njit(**_NONRT)
def hull_flood(cverts, hg, v0, hmax, l0, l1, l2, tol):
    """The superlevel set v · l ≥ hmax − tol of a hull by a flood fill over its edge graph
    from v0, a vertex of maximum height hmax (`hull_climb`; on a convex polytope such a set
    is connected): global indices into hg.queue[:m], ascending. Returns m.

    Only the vertices of the set are marked (a neighbour below the threshold is tested again
    from each of its neighbours in the set: its height is read from the contiguous adjv, where
    a mark would cost a cache line of its own)."""
    mark, queue, av = hg.mark, hg.queue, hg.adjv
    ns = mark.shape[0] - 1
    mark[ns] += 1
    stamp = mark[ns]
    thr = hmax - tol
    queue[0] = v0
    mark[v0] = stamp
    m = 1
    head = 0
    while head < m:
        u = queue[head]
        head += 1
        for e in range(hg.adj_off[u], hg.adj_off[u + 1]):
            if not av[e, 0] * l0 + av[e, 1] * l1 + av[e, 2] * l2 >= thr:   # (a nan height is not in the set)
                continue
            v = hg.adj[e]
            if mark[v] == stamp:
                continue
            mark[v] = stamp
            queue[m] = v
            m += 1
    gap = m // 2   # Shell sort (gaps halving): index order
    while gap > 0:
        for i in range(gap, m):
            x = queue[i]
            j = i
            while j >= gap and queue[j - gap] > x:
                queue[j] = queue[j - gap]
                j -= gap
            queue[j] = x
        gap //= 2
    return m


@njit(**_NONRT)
def hull_patch_collapses(g, cverts, hg, v0, hmax, m, l0, l1, l2, tol):
    """True if the support set hg.queue[:m] of hull g along the unit direction l (geometry
    frame; v0 a vertex of maximum height hmax, `hull_climb`) is a tessellated curved surface's
    cap rather than a face of the hull: the patch of such a set is its extreme vertex alone.

    The face part of the set at an apex vertex: the set's vertices within `tol` (m) of the
    support height (the patch band; a caller may have flooded a wider one) that lie within
    PATCH_PLANE_EPS · tol of the plane of the hull triangle at the apex whose outward normal is
    closest to l (a face's vertices lie on its plane whatever its tilt; on a curved cap the next
    ring of vertices lies measurably off the plane of any one facet). The set collapses when
    that part's lateral extent (largest distance between two of its vertices in the plane ⟂ l)
    is below PATCH_FACE_MIN times the hull's half width (hg.half_width[g]) at every apex: v0
    and the set's other vertices within PATCH_PLANE_EPS · tol of the support height. Which of
    near-tied extreme vertices the climb reached must not decide: G1's curved back plate
    (`logo_link`, 1214 vertices in the hull of all its vertices) lying on the floor has two
    lowest vertices 0.5 µm apart, the
    test at one of them found a face, at the other not, and its patch flipped between 4 points
    and 1 every few steps.

    Why one half width: any face or edge of a box is at least its smallest full extent long, so
    at least 2 half widths (a cube resting on a face: 2.8, on an edge: 2; a 1 x 1 x 10 cm bar
    standing on its end: 2.8; G1's soles and ankle edges: > 5; G1's flat back plate lying:
    1.9); a facet of a tessellated sphere is narrower than its radius. Measured on the robots'
    meshes: the Go2 foot standing (half width 12.9 mm; its 1 mm band is an 18-vertex cap 17.5 mm
    wide) has 7 vertices on the plane of its bottom facet spanning 8.9 mm: 0.69 half widths;
    G1's rounded links lying on the floor: 0.06 to 0.70. A bound by the hull's size (e.g. 5 %
    of its bounding radius) cannot tell these apart: the Go2 foot's band is 0.62 bounding radii
    wide, a standing bar's face 0.28. The points of a curved cap's band are up to `tol` above
    the surface: contacts that could touch only after a tilt that a rounded surface rolls
    through anyway (MuJoCo gives such a pair one point). Scratch: hg.order[:m]."""
    if m <= 1:
        return False
    thr = hmax - PATCH_PLANE_EPS * tol
    for j in range(m):
        va = hg.queue[j]
        if (va == v0 or cverts[va, 0] * l0 + cverts[va, 1] * l1 + cverts[va, 2] * l2 >= thr) and \
                _face_at(g, cverts, hg, va, hmax, m, l0, l1, l2, tol):
            return False
    return True


@njit(**_NONRT)
def hull_tied_partner(cverts, hg, v0, hmax, m, l0, l1, l2, tol):
    """For a support set hg.queue[:m] that collapses (`hull_patch_collapses`; v0 its extreme
    vertex, of height hmax along the unit l): the vertex w of the set within PATCH_PLANE_EPS · tol
    of hmax farthest from v0 across l, if farther than tol (m) and if the two span at least
    LINE_SPAN of the patch band (the set's vertices within tol of hmax) along the line through
    them; else −1. Such a pair rests on the plane along a line (a rounded link lying on a level
    edge, the rest of its cap millimetres up): both are kept, whichever the climb reached
    (`narrow._hull_plane`; with the extreme vertex alone, G1's hip link lying on the floor moved
    its one contact, 80 N, between two such vertices 1.4 cm apart every few steps). A pair
    inside a wider band is a level edge of a tessellated round cap, which rolls on one point
    (`hull_tied_point`): the Go2 foot's cap (band 17 mm wide) has level edges 4.2 mm long,
    and two contacts that close make the Delassus matrix nearly singular (eigenvalues 1e-6 of
    its largest) and the contact problem hard (`bench_step`'s trotting in place, 2000 steps: 15
    took 10 to 1000 ADMM iterations with both points, 3 took 10 to 12 with one)."""
    thr = hmax - PATCH_PLANE_EPS * tol
    x0, x1, x2 = cverts[v0, 0], cverts[v0, 1], cverts[v0, 2]
    best, w = tol * tol, -1
    for j in range(m):
        v = hg.queue[j]
        if cverts[v, 0] * l0 + cverts[v, 1] * l1 + cverts[v, 2] * l2 < thr:
            continue
        d0, d1, d2 = cverts[v, 0] - x0, cverts[v, 1] - x1, cverts[v, 2] - x2
        dl = d0 * l0 + d1 * l1 + d2 * l2
        s = d0 * d0 + d1 * d1 + d2 * d2 - dl * dl
        if s > best:
            best, w = s, v
    if w < 0:
        return -1
    # e: the lateral unit direction v0 → w; the band's extent along e
    d0, d1, d2 = cverts[w, 0] - x0, cverts[w, 1] - x1, cverts[w, 2] - x2
    dl = d0 * l0 + d1 * l1 + d2 * l2
    sep = math.sqrt(best)
    e0, e1, e2 = (d0 - dl * l0) / sep, (d1 - dl * l1) / sep, (d2 - dl * l2) / sep
    lo, hi = 0.0, 0.0
    band = hmax - tol
    for j in range(m):
        v = hg.queue[j]
        if cverts[v, 0] * l0 + cverts[v, 1] * l1 + cverts[v, 2] * l2 < band:
            continue
        a = (cverts[v, 0] - x0) * e0 + (cverts[v, 1] - x1) * e1 + (cverts[v, 2] - x2) * e2
        lo, hi = min(lo, a), max(hi, a)
    return w if sep >= LINE_SPAN * (hi - lo) else -1


@njit(**_NONRT)
def hull_tied_point(cverts, hg, hmax, m, l0, l1, l2, tol):
    """The one contact point of a collapsed cap without a line pair (`hull_tied_partner`): the
    mean of the support set's vertices within PATCH_PLANE_EPS · tol of hmax (the set
    hg.queue[:m] along the unit l), weighted 1 at hmax down to 0 at that band's edge, moved along
    l to the height hmax (at most PATCH_PLANE_EPS · tol: the contact's distance is the extreme
    vertex's, as MuJoCo's): its coordinates (geometry frame). Whichever of near-tied extreme
    vertices the climb reached, the point is the same, and it moves continuously as a vertex
    enters or leaves the band: a rolling cap's contact walks along its level edge instead of
    jumping from one end to the other."""
    eps = PATCH_PLANE_EPS * tol
    thr = hmax - eps
    sw, c0, c1, c2 = 0.0, 0.0, 0.0, 0.0
    for j in range(m):
        v = hg.queue[j]
        h = cverts[v, 0] * l0 + cverts[v, 1] * l1 + cverts[v, 2] * l2
        if h < thr:
            continue
        wt = (h - thr) / eps if eps > 0.0 else 1.0
        sw += wt
        c0 += wt * cverts[v, 0]
        c1 += wt * cverts[v, 1]
        c2 += wt * cverts[v, 2]
    c0, c1, c2 = c0 / sw, c1 / sw, c2 / sw
    up = hmax - (c0 * l0 + c1 * l1 + c2 * l2)
    return c0 + up * l0, c1 + up * l1, c2 + up * l2


@njit(**_NONRT)
def _face_at(g, cverts, hg, v0, hmax, m, l0, l1, l2, tol):
    """True if the support set hg.queue[:m] holds a face at apex v0 (`hull_patch_collapses`):
    its vertices within tol of hmax and on the plane of v0's triangle most normal to l span
    at least PATCH_FACE_MIN half widths across l. Scratch: hg.order[:m]."""
    an = hg.adjn
    # the plane of the triangle at v0 most normal to l (through v0)
    n0, n1, n2, best = 0.0, 0.0, 0.0, -2.0
    for e in range(hg.adj_off[v0], hg.adj_off[v0 + 1]):
        c = an[e, 0] * l0 + an[e, 1] * l1 + an[e, 2] * l2
        if c > best:
            best, n0, n1, n2 = c, an[e, 0], an[e, 1], an[e, 2]
    x0, x1, x2 = cverts[v0, 0], cverts[v0, 1], cverts[v0, 2]
    thr, eps = hmax - tol, PATCH_PLANE_EPS * tol
    face = hg.order
    k = 0
    for j in range(m):
        v = hg.queue[j]
        w0, w1, w2 = cverts[v, 0] - x0, cverts[v, 1] - x1, cverts[v, 2] - x2
        if cverts[v, 0] * l0 + cverts[v, 1] * l1 + cverts[v, 2] * l2 >= thr and abs(w0 * n0 + w1 * n1 + w2 * n2) <= eps:
            face[k] = v
            k += 1
    lim = PATCH_FACE_MIN * hg.half_width[g]
    lim2 = lim * lim
    for i in range(k):   # lateral extent: stop at the first pair as far apart as the limit
        a = face[i]
        for j in range(i + 1, k):
            b = face[j]
            w0, w1, w2 = cverts[b, 0] - cverts[a, 0], cverts[b, 1] - cverts[a, 1], cverts[b, 2] - cverts[a, 2]
            wl = w0 * l0 + w1 * l1 + w2 * l2
            if w0 * w0 + w1 * w1 + w2 * w2 - wl * wl >= lim2:
                return True
    return False

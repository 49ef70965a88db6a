"""`CollisionDetector`: cached collision state of a world, `detect(q)` into flat contact arrays.

Pipeline per call: the model's check of q and forward kinematics (skipped when the caller
passes the placements of its own kinematics, as the simulator does), then one numba kernel,
`driver.detect_kernel` (and the library for what it does not handle): geometry placements → AABBs (inflated by the margin) → broad phase (sweep and prune on x,
planes tested against every AABB, a precomputed filter matrix) → proofs of separation →
narrow phase by pair type (`narrow.pair_table`): planes against anything, spheres and
capsules by their cores, boxes by SAT, sphere–box in closed form, and every pair with a
convex hull (mesh) or a cylinder, and capsule–box, by GJK/EPA (`collision.gjk`) followed by
the support-feature patch. With ``native=False`` all pairs go to the backend: coal
(collision + ``ComputeContactPatch``) or python-fcl (collision or distance for the normal,
then the patch is built here by clipping the two support features).

Contact patches hold at most 4 points (deepest, farthest, largest triangle, largest quad).
Every patch point carries its own signed distance (coal's patches give all points the
pair's distance; they are lifted back onto both shapes here). Meshes collide through their
convex hull.

Allocation: the native path writes into preallocated flat buffers (grown, and the call
redone, only when they overflow); library pairs cost a few binding calls each and their
results go through one numba call per detection. `detect` returns fresh copies (a handful
of arrays per call, none per contact).

Combination rules of the two geometries' materials: friction ``sqrt(μ1 μ2)``, restitution
``max(e1, e2)``, compliance ``c1 + c2`` (springs in series).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from models import FREE
from models.jitcache import entry_point
from models.kinematics import fk_kernel, q_status_kernel

from . import driver
from .kinds import PLANE
from .midphase import PairCache
from .narrow import NOBOX_CODES, PAIR_GJK, PAIR_LIBRARY, pair_table
from .shapes import CollisionError, ShapeTable
from .state import make_state


class Contacts:
    """Contacts of one configuration as flat arrays (k points).

    body1, body2 (k,) int: bodies (-1 = world); n points from body 2 into body 1.
    geom1, geom2 (k,) int: geometry indices (into ``world.geometries``) of body 1 / body 2.
    position (k, 3) m: world point midway between the two surfaces.
    frame (k, 3, 3): world rotation, columns (t1, t2, n).
    distance (k,) m: signed distance along n (negative = penetration).
    friction, restitution, compliance (k,): combined material (see module docstring).
    key (k,) int64: stable id of the contact point, ``(g2 * ng + g1) * 4 + slot`` with the
    slot ranking the patch points by angle about the patch centre from a body-1-fixed axis.
    """

    def __init__(self, out_i, out_p, out_R, out_s, k):
        # the detector's buffers (see `patch.emit_patch`) hold each field's first k entries
        # contiguously: 4 contiguous copies; the 1-D fields are rows of two of them, key and
        # distance (read by every step) made here, the others on first use
        self._i = out_i[:, :k].copy()
        self._s = out_s[:, :k].copy()
        self.position = out_p[:k].copy()
        self.frame = out_R[:k].copy()
        self.key = self._i[4]
        self.distance = self._s[0]

    @classmethod
    def of_arrays(cls, i, s, position, frame):
        """Contacts over arrays of their own (no copies): i (5, k) int64 rows body1, body2,
        geom1, geom2, key; s (4, k) rows distance, friction, restitution, compliance; position
        (k, 3); frame (k, 3, 3) (`simstep.steady` copies them from the buffers itself)."""
        c = cls.__new__(cls)
        c._i, c._s, c.position, c.frame = i, s, position, frame
        c.key, c.distance = i[4], s[0]
        return c

    body1 = cached_property(lambda self: self._i[0])
    body2 = cached_property(lambda self: self._i[1])
    geom1 = cached_property(lambda self: self._i[2])
    geom2 = cached_property(lambda self: self._i[3])
    friction = cached_property(lambda self: self._s[1])
    restitution = cached_property(lambda self: self._s[2])
    compliance = cached_property(lambda self: self._s[3])

    @property
    def normal(self):
        """(k, 3) unit normals, from body 2 into body 1."""
        return self.frame[:, :, 2]

    def point1(self):
        """(k, 3) witness points on the surface of body 1."""
        return self.position + 0.5 * self.distance[:, None] * self.normal

    def point2(self):
        """(k, 3) witness points on the surface of body 2."""
        return self.position - 0.5 * self.distance[:, None] * self.normal

    def __len__(self):
        return self.key.shape[0]

    def __repr__(self):
        return f"Contacts(k={len(self)})"


class CollisionDetector:
    """Cached collision state of a world (or a `models.Model` with collision geometries).

    backend: "coal" (default) or "fcl" (python-fcl) for the pairs not handled natively.
    margin (m, ≥ 0): pairs closer than this are reported, with their positive distance.
    native: solve every pair with the numba kernels (`narrow.pair_table`; False: all pairs go to the
        backend, used to compare the backends and as the benchmark baseline).
    skip_adjacent: skip pairs of bodies joined by a (non-free) joint; a root body of a
        fixed-base robot is then also not tested against that robot's own static geometry.
    self_collision: test pairs of bodies of the same tree (robot); False skips them.
    exclude: iterable of pairs of body names/indices or geometry names never tested.
    exclude_at: a configuration q; pairs of bodies of the same tree that touch there are
        excluded (like an SRDF's disabled pairs: robot link hulls that overlap at rest).
    patch_tolerance (m): points within this distance of the support plane form the patch.
    Group/mask filter (MuJoCo's contype/conaffinity): a pair is tested if
    ``(group1 & mask2) or (group2 & mask1)``. Static–static pairs are never tested.

    The compiled state (`state.DetectState`, made once) references the detector's arrays: the
    filter ``allow`` (ng, ng) uint8 may be changed in place, not rebound.
    """

    def __init__(self, world, backend="coal", margin=0.0, native=True, skip_adjacent=True,
                 self_collision=True, exclude=(), exclude_at=None, patch_tolerance=1e-3):
        model = getattr(world, "model", world)
        geoms = getattr(world, "geometries", None)
        if geoms is None:
            geoms = model.collision_geometries
        if backend not in ("coal", "fcl"):
            raise CollisionError(f"unknown collision backend {backend!r}; use 'coal' or 'fcl'")
        margin = float(margin)
        if not np.isfinite(margin) or margin < 0:
            raise CollisionError(f"margin must be a finite number ≥ 0, got {margin}")
        tol = float(patch_tolerance)
        if not np.isfinite(tol) or tol < 0:
            raise CollisionError(f"patch_tolerance must be ≥ 0, got {patch_tolerance}")
        self.world, self.model = world, model
        self.backend_name, self.margin, self.native, self.tol = backend, margin, bool(native), tol
        self.shapes = S = ShapeTable(geoms)
        ng = len(S)
        for i in range(ng):
            if S.body[i] >= model.nbodies or S.body[i] < -1:
                raise CollisionError(f"geometry '{S.names[i]}' is attached to unknown body {S.body[i]}")
        self.allow = self._filter(model, skip_adjacent, self_collision, exclude)
        self.planes = np.flatnonzero(S.kind == PLANE).astype(np.int64)
        self.others = np.flatnonzero(S.kind != PLANE).astype(np.int64)
        self._order = np.arange(len(self.others), dtype=np.int64)   # the broad phase's sweep order
        self.pair_table = pair_table(self.native)    # pair type of each (kind, kind): `narrow`
        self._pair_cache = self._make_pair_cache()
        n = model.nbodies
        self._oR, self._op = np.zeros((max(n, 1), 3, 3)), np.zeros((max(n, 1), 3))
        self._gR, self._gp = np.zeros((ng, 3, 3)), np.zeros((ng, 3))
        self._lo, self._hi = np.zeros((ng, 3)), np.zeros((ng, 3))
        self._state = None
        self._entry = None         # (state, its kernel's entry point) of `run_placed`
        self._alloc_pairs(max(16, 4 * ng))
        self._alloc_out(max(64, 8 * ng))
        self.stats = dict(candidates=0, library_pairs=0, contacts=0)
        self._backend = None
        if backend == "coal":
            from .backends import CoalBackend
            self._backend = CoalBackend(S, margin, tol)
        else:
            from .backends import FclBackend
            self._backend = FclBackend(S, margin, tol)
        if exclude_at is not None:
            self._exclude_touching(exclude_at)

    # ------------------------------------------------------------------ setup
    def _make_pair_cache(self):
        """`midphase.PairCache` rows for the allowed pairs culled by support heights (every
        kind pair not solved by a closed-form kernel)."""
        S = self.shapes
        t = self.pair_table[S.kind[:, None], S.kind[None, :]]
        culled = ((t == PAIR_GJK) | (t == PAIR_LIBRARY)) & (self.allow != 0)
        a, b = np.nonzero(np.triu(culled, 1))
        slot = np.full((len(S), len(S)), -1, dtype=np.int64)
        slot[a, b] = np.arange(len(a))
        P = len(a) + 1
        return PairCache(slot, np.zeros((P, 3)), np.full((P, 2), -1, dtype=np.int64), np.zeros((P, 4, 2, 3)),
                         np.full((P, 4, 2), -1, dtype=np.int64), np.zeros(P, dtype=np.int64))

    def _alloc_pairs(self, cap):
        self._pairs = np.zeros((cap, 2), dtype=np.int64)
        self._lib = np.zeros(cap, dtype=np.int64)
        self._state = None

    def _alloc_out(self, cap, keep=0):
        """Output buffers for cap contacts (layout in `patch.emit_patch`), keeping the first
        `keep` contacts of the current ones."""
        out = (np.zeros((5, cap), dtype=np.int64), np.zeros((cap, 3)), np.zeros((cap, 3, 3)), np.zeros((4, cap)))
        if keep:
            oi, op, oR, os = self._out
            out[0][:, :keep], out[1][:keep], out[2][:keep], out[3][:, :keep] = \
                oi[:, :keep], op[:keep], oR[:keep], os[:, :keep]
        self._out = out
        self._state = None

    def _kernel_state(self):
        """The `state.DetectState` over the current buffers (made again after one grew), and
        the driver kernel for the pair types of the shapes' kinds (`driver.detect_nobox_kernel`
        when no box-box or sphere-box pair can occur)."""
        if self._state is None:
            kinds = np.unique(self.shapes.kind)
            codes = np.unique(self.pair_table[kinds[:, None], kinds[None, :]])
            self._kernel = driver.detect_nobox_kernel if np.isin(codes, NOBOX_CODES).all() else driver.detect_kernel
            self._state = make_state(self.shapes, self.allow, self.planes, self.others, self.pair_table,
                                     self.margin, self.tol, self._pair_cache, self._gR, self._gp, self._lo,
                                     self._hi, self._order, self._pairs, self._lib, self._out)
        return self._state

    def _filter(self, model, skip_adjacent, self_collision, exclude):
        S = self.shapes
        ng = len(S)
        body = S.body
        static = body < 0
        allow = np.ones((ng, ng), dtype=np.uint8)
        np.fill_diagonal(allow, 0)
        allow[np.ix_(static, static)] = 0
        same = body[:, None] == body[None, :]
        allow[same] = 0
        gm = ((S.group[:, None] & S.mask[None, :]) != 0) | ((S.group[None, :] & S.mask[:, None]) != 0)
        allow[~gm] = 0
        parent = np.asarray(model.parent) if model.nbodies else np.zeros(0, np.int64)
        jtype = np.asarray(model.jtype) if model.nbodies else np.zeros(0, np.int64)
        # root of each body's tree (for self_collision and fixed-base roots)
        root = np.arange(model.nbodies)
        for i in range(model.nbodies):
            if parent[i] >= 0:
                root[i] = root[parent[i]]
        if skip_adjacent and model.nbodies:
            bi = np.where(body >= 0, body, 0)
            par = np.where(body >= 0, parent[bi], -2)
            jt = np.where(body >= 0, jtype[bi], FREE)
            adj = (par[:, None] == body[None, :]) & (jt[:, None] != FREE) & (body[None, :] >= 0)
            allow[adj | adj.T] = 0
            # a fixed-base root link: skip the robot's own static geometry (same name prefix)
            for i in np.flatnonzero((body >= 0) & (par == -1) & (jt != FREE)):
                prefix = model.body_names[body[i]].split("/", 1)[0] + "/"
                if "/" not in model.body_names[body[i]]:
                    continue
                for j in np.flatnonzero(static):
                    if S.names[j].startswith(prefix):
                        allow[i, j] = allow[j, i] = 0
        if not self_collision and model.nbodies:
            r = np.where(body >= 0, root[np.where(body >= 0, body, 0)], -1)
            sametree = (r[:, None] == r[None, :]) & (r[:, None] >= 0)
            allow[sametree] = 0
        for pair in exclude:
            try:
                x, y = pair
            except (TypeError, ValueError):
                raise CollisionError(f"exclude entries must be pairs, got {pair!r}") from None
            gx, gy = self._geoms_of(x), self._geoms_of(y)
            allow[np.ix_(gx, gy)] = 0
            allow[np.ix_(gy, gx)] = 0
        return allow

    def _exclude_touching(self, q):
        model = self.model
        root = np.arange(model.nbodies)
        for i in range(model.nbodies):
            if model.parent[i] >= 0:
                root[i] = root[model.parent[i]]
        c = self.detect(q)
        for g1, g2, b1, b2 in zip(c.geom1, c.geom2, c.body1, c.body2):
            if b1 >= 0 and b2 >= 0 and root[b1] == root[b2]:
                self.allow[g1, g2] = self.allow[g2, g1] = 0

    def _geoms_of(self, x):
        S = self.shapes
        if isinstance(x, str) and x in S.names:
            return np.array([S.names.index(x)])
        try:
            b = self.world.body_index(x) if hasattr(self.world, "body_index") else self.model.body_index(x)
        except KeyError as e:
            raise CollisionError(f"exclude: {x!r} is neither a geometry nor a body ({e})") from None
        return np.flatnonzero(S.body == b)

    # ------------------------------------------------------------------ queries
    def _placements(self, q, placements):
        """Body placements (oR (n, 3, 3), op (n, 3)) at q as float64 C arrays: the caller's (the
        step's kinematics, `models.Data.oR`/`.op` at q), or forward kinematics here after the
        model's check of q (finite; unit free-joint and spherical quaternions, unit planar
        (cos, sin); as `models.Model.check_q`, whose message a rejected q gets)."""
        model = self.model
        if placements is not None:
            oR, op = placements
            if oR.shape != self._oR.shape or op.shape != self._op.shape:
                raise CollisionError(f"placements must be (oR {self._oR.shape}, op {self._op.shape}) arrays of the "
                                     f"bodies at q, got {oR.shape} and {op.shape}")
            return np.ascontiguousarray(oR, dtype=float), np.ascontiguousarray(op, dtype=float)
        q = np.asarray(q, dtype=float)
        if q.shape != (model.nq,):
            raise CollisionError(f"q has shape {q.shape}, expected ({model.nq},)")
        if model.nbodies:
            if q_status_kernel(model.jint, q, 1e-6) != -1:
                try:
                    model.check_q(q)
                except ValueError as e:
                    raise CollisionError(str(e)) from None
            fk_kernel(model.jint, model.jfloat, q, self._oR, self._op)
        return self._oR, self._op

    def _run_kernel(self, q, placements=None):
        return self.run_placed(*self._placements(q, placements))

    def run_placed(self, oR, op):
        """The detection kernel on body placements oR (n, 3, 3), op (n, 3) of the detector's
        model as float64 C arrays (`_placements`', or a `models.Data`'s: the simulator's step),
        unchecked, through its compiled entry point for the current state
        (`models.jitcache.entry_point`); the buffers grown and the kernel called again while
        they are too small. Returns (candidate pairs, library pairs, contacts) with the
        contacts in the buffers (`contacts_of` makes them `Contacts`)."""
        while True:
            st = self._state or self._kernel_state()
            e = self._entry
            if e is not None and e[0] is st:
                counts = e[1](st, oR, op)
            else:
                counts = self._kernel(st, oR, op)
                self._entry = (st, entry_point(self._kernel, (st, oR, op)) or self._kernel)
            if counts[0] > self._pairs.shape[0]:
                self._alloc_pairs(2 * counts[0])
            elif counts[2] > self._out[0].shape[1]:
                self._alloc_out(2 * counts[2])
            else:
                return counts

    def detect(self, q, placements=None):
        """Contacts (`Contacts`) of the world at configuration q (nq,).

        placements: the bodies' world placements at q, (oR (n, 3, 3), op (n, 3)), e.g.
        ``(data.oR, data.op)`` of a `models.Data` computed at q (the simulator's step): forward
        kinematics is then not run again, and q is not checked again."""
        return self.contacts_of(*self._run_kernel(q, placements))

    def contacts_of(self, npairs, nlib, k):
        """The `Contacts` of a detection run (`_run_kernel`, `run_placed`) that returned these
        counts: its buffers' contacts and the library's pairs solved after them."""
        if nlib:
            lib = self._pairs[self._lib[:nlib]]
            while True:
                k2 = self._backend.run(lib, self._gR, self._gp, self._out, k)
                if k2 <= self._out[0].shape[1]:
                    break
                self._alloc_out(2 * k2, keep=k)
            k = k2
        self.stats["candidates"], self.stats["library_pairs"], self.stats["contacts"] = npairs, nlib, k
        return Contacts(*self._out, k)

    def candidate_pairs(self, q):
        """(p, 2) geometry index pairs (a < b) that pass the filter and the broad phase."""
        npairs, _, _ = self._run_kernel(q)
        return self._pairs[:npairs].copy()

    def geometry_placements(self, q):
        """World placements of all geometries: (R (ng, 3, 3), p (ng, 3))."""
        self._run_kernel(q)
        return self._gR.copy(), self._gp.copy()

    def aabbs(self, q):
        """World AABBs (lo, hi) (ng, 3) of the geometries (not inflated; planes infinite)."""
        self._run_kernel(q)
        lo, hi = self._lo.copy(), self._hi.copy()
        fin = np.isfinite(lo[:, 0])
        lo[fin] += self.margin
        hi[fin] -= self.margin
        return lo, hi


def detect(world, q, backend="coal", margin=0.0, **options):
    """Contacts of `world` at configuration q (see `CollisionDetector` for the options).

    Convenience over a `CollisionDetector` per option set, kept in the world's
    ``collision_detectors`` (`simstep.World` declares it); any other world (a `models.Model`)
    gets a new detector per call: hold a `CollisionDetector` to reuse one.
    """
    cache = getattr(world, "collision_detectors", None)
    if cache is None:
        return CollisionDetector(world, backend=backend, margin=margin, **options).detect(q)
    key = (backend, float(margin), tuple(sorted((k, repr(v)) for k, v in options.items())))
    det = cache.get(key)
    if det is None:
        det = cache[key] = CollisionDetector(world, backend=backend, margin=margin, **options)
    return det.detect(q)

"""Library narrow phases: coal (contact patches computed by coal) and python-fcl (normal and
depth from fcl, patch built by clipping support features in `patch.build_patch`).

Both take the candidate pairs (a < b) left by the native kernels, with the geometries'
world placements, and append contacts to the detector's flat output buffers ``out`` (a tuple
(out_i, out_p, out_R, out_s), see `patch.emit_patch`).
"""
from __future__ import annotations

import numpy as np

from .kinds import BOX, CAPSULE, CYLINDER, PLANE, SPHERE
from .library import emit_points_batch, patch_from_normal_batch
from .support import NDISC
from .workspace import MAXF


class _Batch:
    """Per-call buffers of library results, handed to one numba call at the end."""

    def __init__(self):
        self.cap = 0

    def ensure(self, P):
        if P > self.cap:
            self.cap = max(P, 2 * self.cap, 16)
            self.pair = np.zeros((self.cap, 2), dtype=np.int64)
            self.n = np.zeros((self.cap, 3))
            self.wa = np.zeros((self.cap, 3))
            self.wb = np.zeros((self.cap, 3))
            self.cnt = np.zeros(self.cap, dtype=np.int64)
            self.PA = np.zeros((self.cap, MAXF, 3))
            self.PB = np.zeros((self.cap, MAXF, 3))


class CoalBackend:
    """coal: ``ComputeCollision`` (security margin = detection margin) then
    ``ComputeContactPatch``; the patch is reduced to ≤ 4 points by `patch.emit_patch`. A pair
    whose result coal could not compute (a non-finite normal or witness point: its GJK/EPA fails
    on some exactly touching flat faces) goes to `FclBackend` instead."""

    def __init__(self, shapes, margin, tol):
        import coal
        self.coal = coal
        self.S = shapes
        self.margin, self.tol = margin, tol
        self._fallback = None     # FclBackend, made on the first pair coal fails
        self.shapes = [self._shape(i) for i in range(len(shapes))]
        self.tf = [coal.Transform3s() for _ in range(len(shapes))]
        self.req = coal.CollisionRequest()
        self.req.num_max_contacts = 1
        self.req.security_margin = margin
        self.res = coal.CollisionResult()
        self.preq = coal.ContactPatchRequest(1, NDISC, max(tol, 1e-12))
        self.pres = coal.ContactPatchResult(self.preq)
        self.fun = {}
        self.batch = _Batch()

    def _shape(self, i):
        coal, S = self.coal, self.S
        k, s = S.kind[i], S.size[i]
        if k == BOX:
            return coal.Box(*(2.0 * s[:3]))
        if k == SPHERE:
            return coal.Sphere(s[0])
        if k == CAPSULE:
            return coal.Capsule(s[0], 2.0 * s[1])
        if k == CYLINDER:
            return coal.Cylinder(s[0], 2.0 * s[1])
        if k == PLANE:
            return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
        pts = coal.StdVec_Vec3s()
        pts.extend(list(S.convex_vertices(i)))
        tris = coal.StdVec_Triangle()
        tris.extend([coal.Triangle(int(a), int(b), int(c)) for a, b, c in S.ctris[i]])
        return coal.Convex(pts, tris)

    def run(self, pairs, gR, gp, out, k):
        S = self.S
        coal = self.coal
        B = self.batch
        B.ensure(len(pairs))
        seen = set()
        failed = []
        P = 0
        for a, b in pairs:
            for g in (a, b):
                if g not in seen:
                    self.tf[g].setRotation(gR[g])
                    self.tf[g].setTranslation(gp[g])
                    seen.add(g)
            f = self.fun.get((a, b))
            if f is None:
                f = self.fun[(a, b)] = (coal.ComputeCollision(self.shapes[a], self.shapes[b]),
                                        coal.ComputeContactPatch(self.shapes[a], self.shapes[b]))
            self.res.clear()
            if not f[0](self.tf[a], self.tf[b], self.req, self.res):
                continue
            self.pres.clear()
            f[1](self.tf[a], self.tf[b], self.res, self.preq, self.pres)
            c = self.res.getContact(0)
            B.pair[P] = a, b
            B.n[P] = c.normal  # from a to b
            B.wa[P], B.wb[P] = c.getNearestPoint1(), c.getNearestPoint2()
            if not (np.isfinite(B.n[P]).all() and np.isfinite(B.wa[P]).all() and np.isfinite(B.wb[P]).all()):
                failed.append((a, b))
                continue
            m = 0
            if self.pres.numContactPatches():
                patch = self.pres.getContactPatch(0)
                m = min(patch.size(), MAXF)
                for i in range(m):
                    B.PA[P, i] = patch.getPointShape1(i)
                    B.PB[P, i] = patch.getPointShape2(i)
            if m == 0:
                B.PA[P, 0], B.PB[P, 0] = B.wa[P], B.wb[P]
                m = 1
            B.cnt[P] = m
            P += 1
        if P:
            k = emit_points_batch(P, B.pair, B.n, B.PA, B.PB, B.cnt, B.wa, B.wb, S.kind, S.size, gR, gp,
                                  S.cverts, S.coff, S.hull, self.tol, S.body, S.friction, S.restitution,
                                  S.compliance, *out, k)
        if failed:
            if self._fallback is None:
                self._fallback = FclBackend(self.S, self.margin, self.tol)
            k = self._fallback.run(failed, gR, gp, out, k)
        return k


class FclBackend:
    """python-fcl: ``collide`` for the normal and depth (halfspaces shifted outward by the
    margin), ``distance`` for separated non-plane pairs within the margin (fcl's distance
    with halfspaces is not used: it crashes in python-fcl 0.7); the patch is built from the
    support features along the normal."""

    def __init__(self, shapes, margin, tol):
        import fcl
        self.fcl = fcl
        self.S = shapes
        self.margin, self.tol = margin, tol
        self.objs = [fcl.CollisionObject(self._shape(i), fcl.Transform()) for i in range(len(shapes))]
        self.req = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True)
        self.dreq = fcl.DistanceRequest(enable_nearest_points=True)
        self.batch = _Batch()

    def _shape(self, i):
        fcl, S = self.fcl, self.S
        k, s = S.kind[i], S.size[i]
        if k == BOX:
            return fcl.Box(*(2.0 * s[:3]))
        if k == SPHERE:
            return fcl.Sphere(s[0])
        if k == CAPSULE:
            return fcl.Capsule(s[0], 2.0 * s[1])
        if k == CYLINDER:
            return fcl.Cylinder(s[0], 2.0 * s[1])
        if k == PLANE:
            return fcl.Halfspace(np.array([0.0, 0.0, 1.0]), self.margin)
        tris = S.ctris[i]
        faces = np.hstack([np.full((len(tris), 1), 3), tris]).ravel()
        return fcl.Convex(S.convex_vertices(i).copy(), len(tris), faces)

    def run(self, pairs, gR, gp, out, k):
        fcl, S = self.fcl, self.S
        seen = set()
        kind = S.kind
        B = self.batch
        B.ensure(len(pairs))
        P = 0
        for a, b in pairs:
            for g in (a, b):
                if g not in seen:
                    self.objs[g].setTransform(fcl.Transform(gR[g], gp[g]))
                    seen.add(g)
            res = fcl.CollisionResult()
            plane_a, plane_b = kind[a] == PLANE, kind[b] == PLANE
            if fcl.collide(self.objs[a], self.objs[b], self.req, res) and res.contacts:
                c = res.contacts[0]
                n = np.asarray(c.normal, dtype=float)  # from a to b
                n = n / np.linalg.norm(n)
                depth = float(c.penetration_depth)
                pos = np.asarray(c.pos, dtype=float)
                pa = pos + 0.5 * depth * n
                pb = pos - 0.5 * depth * n
                if plane_a:  # true plane (fcl's one is shifted by the margin)
                    nP = gR[a][:, 2]
                    pa = pb - np.dot(pb - gp[a], nP) * nP
                elif plane_b:
                    nP = gR[b][:, 2]
                    pb = pa - np.dot(pa - gp[b], nP) * nP
                if np.dot(pb - pa, n) > self.margin:
                    continue
            elif self.margin > 0 and not (plane_a or plane_b):
                dres = fcl.DistanceResult()
                d = fcl.distance(self.objs[a], self.objs[b], self.dreq, dres)
                if not (0 < d <= self.margin):
                    continue
                pa = np.asarray(dres.nearest_points[0], dtype=float)
                pb = np.asarray(dres.nearest_points[1], dtype=float)
                n = (pb - pa) / np.linalg.norm(pb - pa)
            else:
                continue
            B.pair[P] = a, b
            B.n[P], B.wa[P], B.wb[P] = n, pa, pb
            P += 1
        if P == 0:
            return k
        return patch_from_normal_batch(P, B.pair, B.n, B.wa, B.wb, S.kind, S.size, gR, gp, S.cverts, S.coff, S.hull,
                                         self.tol, S.body, S.friction, S.restitution, S.compliance,
                                         *out, k)

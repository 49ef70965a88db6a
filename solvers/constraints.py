"""Constraints and their compiled, flat form (paper 000, Eq. 5c–5d).

User-facing records (re-exported by `simstep`):

- `Contact(body1, body2, position, frame, friction)`: 3 rows. `frame` is a world rotation
  with columns (t1, t2, n); n points from body 2 into body 1. Rows: Rᵀ (v₁(p) − v₂(p)), the
  velocity of body 1 relative to body 2 at the world point p, in contact axes. λ acts on
  body 1 (force R λ at p) and −λ on body 2.
- `ContactSet(body1, body2, position, frame, friction)`: k contacts given as arrays
  (k,), (k,), (k, 3), (k, 3, 3), (k,) — the same rows as k `Contact`s, built without a Python
  object per contact (what the simulator passes each step).
- `LoopClosure(body1, placement1, body2, placement2, kind="point" | "weld")`: placement =
  (position (3,), rotation (3, 3)) in each body's local frame; anchor i is the frame
  Fᵢ = body i ∘ placement i. "point": 3 rows, Rᶠ¹ᵀ (v₁(p₁) − v₂(p₂)), the relative velocity
  of the two anchor points in the axes of anchor frame 1 (Pinocchio's LOCAL convention for a
  point constraint). "weld": 6 rows, the relative twist of body 1 with respect to body 2 at
  p₁ in the axes of frame 1: (Rᶠ¹ᵀ (v₁(p₁) − v₂(p₁)), Rᶠ¹ᵀ (ω₁ − ω₂)).
- `JointLimit(joint, side)`: 1 row per dof, row = s q̇ (s = +1 for "lower", −1 for "upper"),
  so a non-negative impulse pushes the joint away from its limit.
- `JointFriction(joint, max_torque)`: 1 row per dof, row = q̇ (|λ| ≤ max_torque · dt is the
  solver's business).

Bodies are names or indices (-1 / "world" is the world); merged URDF links resolve to their
body with the fixed placement applied to local placements. World-given contact points need
no offset.

`ConstraintSet(model, constraints)` resolves names once and keeps flat arrays; at each q,
`rows_kernel` turns them into the link-level constraint rows of Eq. (5c): every row r has
up to two links (la[r], lb[r]) with spatial row vectors kA[r], kB[r] (world frame, about the
world origin, so a row of a point velocity along t at p is (t, p × t) and of an angular
velocity along t is (0, t)); joint-level rows (Eq. 5d) have dof[r] ≥ 0 and sign sg[r]:
    (J v)_r = kA[r] · V[la[r]] + kB[r] · V[lb[r]]          (link rows, V = body spatial velocities)
    (J v)_r = sg[r] v[dof[r]]                                (joint rows)
"""
from __future__ import annotations

import numpy as np
from numba import njit

# constraint block kinds (cb_kind)
CONTACT, POINT, WELD, JOINT_LIMIT, JOINT_FRICTION = 0, 1, 2, 3, 4
KIND_NAMES = ("contact", "point", "weld", "joint_limit", "joint_friction")


def _body(model, body):
    """(index, R, p) of a body/merged link given by name or index."""
    if isinstance(body, (int, np.integer)):
        return model.body_index(int(body)), np.eye(3), np.zeros(3)
    if body == "world":
        return -1, np.eye(3), np.zeros(3)
    return model.body_placement_offset(body)


def _vec3(x, what):
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be 3 finite numbers, got {x!r}")
    return a


def _rot(R, what):
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ValueError(f"{what} must be a finite 3x3 matrix")
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise ValueError(f"{what} is not a rotation matrix (columns must be orthonormal, det +1)")
    return R


@njit(cache=True)
def _frames_are_rotations(F, tol):
    """All F[k] (3×3) orthonormal with det +1 (within tol)."""
    for k in range(F.shape[0]):
        for i in range(3):
            for j in range(3):
                s = F[k, 0, i] * F[k, 0, j] + F[k, 1, i] * F[k, 1, j] + F[k, 2, i] * F[k, 2, j]
                if abs(s - (1.0 if i == j else 0.0)) > tol:
                    return False
        det = (F[k, 0, 0] * (F[k, 1, 1] * F[k, 2, 2] - F[k, 1, 2] * F[k, 2, 1])
               - F[k, 0, 1] * (F[k, 1, 0] * F[k, 2, 2] - F[k, 1, 2] * F[k, 2, 0])
               + F[k, 0, 2] * (F[k, 1, 0] * F[k, 2, 1] - F[k, 1, 1] * F[k, 2, 0]))
        if det < 0:
            return False
    return True


class Contact:
    """Point contact between body1 and body2 (3 rows, see module doc)."""
    nrows = 3
    kind = "contact"

    def __init__(self, body1, body2, position, frame=None, friction=0.5):
        self.body1, self.body2 = body1, body2
        self.position = _vec3(position, "contact position")
        self.frame = np.eye(3) if frame is None else _rot(frame, "contact frame")
        self.friction = float(friction)
        if not (np.isfinite(self.friction) and self.friction >= 0):
            raise ValueError(f"friction must be >= 0, got {friction}")

    def __repr__(self):
        return f"Contact({self.body1!r}, {self.body2!r}, position={self.position.tolist()}, mu={self.friction})"


class ContactSet:
    """k point contacts as arrays (no Python object per contact); 3k rows, contact order."""
    kind = "contact_set"

    def __init__(self, body1, body2, position, frame, friction=0.5):
        self.body1 = np.atleast_1d(np.asarray(body1))
        self.body2 = np.atleast_1d(np.asarray(body2))
        k = self.body1.shape[0]
        self.position = np.asarray(position, dtype=float).reshape(k, 3)
        self.frame = np.asarray(frame, dtype=float).reshape(k, 3, 3)
        self.friction = np.broadcast_to(np.asarray(friction, dtype=float), (k,)).copy()
        if self.body2.shape != (k,):
            raise ValueError("body1 and body2 must have the same length")
        if not (np.all(np.isfinite(self.position)) and np.all(np.isfinite(self.frame))):
            raise ValueError("contact positions and frames must be finite")
        if k and not _frames_are_rotations(self.frame, 1e-6):
            raise ValueError("contact frames must be rotation matrices (columns t1, t2, n)")
        if np.any(~(self.friction >= 0)):
            raise ValueError("friction coefficients must be >= 0")
        self.nrows = 3 * k

    def __len__(self):
        return self.body1.shape[0]


class LoopClosure:
    """Loop closure between anchor frames on two bodies: "point" (3 rows) or "weld" (6 rows)."""

    def __init__(self, body1, placement1, body2, placement2, kind="point"):
        if kind not in ("point", "weld"):
            raise ValueError(f"LoopClosure kind must be 'point' or 'weld', got {kind!r}")
        self.body1, self.body2, self.kind = body1, body2, kind
        self.placement1 = self._placement(placement1)
        self.placement2 = self._placement(placement2)
        self.nrows = 3 if kind == "point" else 6

    @staticmethod
    def _placement(pl):
        if pl is None:
            return np.zeros(3), np.eye(3)
        p, R = pl
        return _vec3(p, "placement position"), (np.eye(3) if R is None else _rot(R, "placement rotation"))

    def __repr__(self):
        return f"LoopClosure({self.body1!r}, {self.body2!r}, kind={self.kind!r})"


class JointLimit:
    """Unilateral joint limit: 1 row per dof of `joint`, row = s q̇ with s = +1 ("lower"), −1 ("upper")."""
    kind = "joint_limit"

    def __init__(self, joint, side="lower"):
        if side not in ("lower", "upper"):
            raise ValueError(f"JointLimit side must be 'lower' or 'upper', got {side!r}")
        self.joint, self.side = joint, side
        self.sign = 1.0 if side == "lower" else -1.0


class JointFriction:
    """Dry joint friction: 1 row per dof of `joint`, row = q̇, |τ| ≤ max_torque."""
    kind = "joint_friction"

    def __init__(self, joint, max_torque):
        self.joint = joint
        self.max_torque = float(max_torque)
        if not (np.isfinite(self.max_torque) and self.max_torque >= 0):
            raise ValueError(f"max_torque must be >= 0, got {max_torque}")


def _joint_dofs(model, joint):
    if isinstance(joint, (int, np.integer)):
        b = int(joint)
        if not 0 <= b < model.nbodies or model.nvs[b] == 0:
            raise KeyError(f"body index {joint} has no joint dofs")
    else:
        b = model.joint_body(joint)
    iv, nvi = int(model.idx_v[b]), int(model.nvs[b])
    return np.arange(iv, iv + nvi)


class ConstraintSet:
    """Constraints resolved against a model into flat arrays (the same for every q).

    Per constraint block c (in the given order): cb_kind[c], cb_row[c] (first row),
    cb_nrows[c], cb_body[c] = (body1, body2) (-1 world), cb_f[c] (24,) parameters:
    contact (p (3), R row-major (9)); loops (r₁ (3), R₁ (9), r₂ (3), R₂ (9)) local placements.
    Per row: dof (-1 for link rows), sg (sign of joint rows), row_block.
    Also: `mu` (ncontacts,) friction of each contact and `contact_row` (ncontacts,) its first
    row (rows t1, t2, n); `joint_friction_max` (m,) (nan except joint-friction rows);
    `row_kind` (m,) the block kind of each row.
    """

    def __init__(self, model, constraints):
        self.model = model
        if isinstance(constraints, (Contact, ContactSet, LoopClosure, JointLimit, JointFriction)):
            constraints = [constraints]
        self.constraints = list(constraints)
        kinds, rows, nrows, bodies, fpar, dofs, sgs = [], [], [], [], [], [], []
        mus, crow, jfmax = [], [], []
        m = 0
        for c in self.constraints:
            if isinstance(c, ContactSet):
                k = len(c)
                b1 = self._resolve_many(model, c.body1)
                b2 = self._resolve_many(model, c.body2)
                kinds.append(np.full(k, CONTACT))
                rows.append(m + 3 * np.arange(k))
                nrows.append(np.full(k, 3))
                bodies.append(np.stack([b1, b2], 1))
                f = np.zeros((k, 24))
                f[:, :3] = c.position
                f[:, 3:12] = c.frame.reshape(k, 9)
                fpar.append(f)
                dofs.append(np.full(3 * k, -1))
                sgs.append(np.zeros(3 * k))
                mus.append(c.friction)
                crow.append(m + 3 * np.arange(k))
                jfmax.append(np.full(3 * k, np.nan))
                m += 3 * k
                continue
            f = np.zeros((1, 24))
            if isinstance(c, Contact):
                b1, b2 = _body(model, c.body1)[0], _body(model, c.body2)[0]
                kind, nr = CONTACT, 3
                f[0, :3], f[0, 3:12] = c.position, c.frame.reshape(9)
                mus.append([c.friction])
                crow.append([m])
                dofs.append(np.full(3, -1)); sgs.append(np.zeros(3)); jfmax.append(np.full(3, np.nan))
            elif isinstance(c, LoopClosure):
                b1, R1, p1 = _body(model, c.body1)
                b2, R2, p2 = _body(model, c.body2)
                kind, nr = (POINT, 3) if c.kind == "point" else (WELD, 6)
                r1, Q1 = c.placement1
                r2, Q2 = c.placement2
                f[0, 0:3], f[0, 3:12] = R1 @ r1 + p1, (R1 @ Q1).reshape(9)
                f[0, 12:15], f[0, 15:24] = R2 @ r2 + p2, (R2 @ Q2).reshape(9)
                dofs.append(np.full(nr, -1)); sgs.append(np.zeros(nr)); jfmax.append(np.full(nr, np.nan))
            elif isinstance(c, (JointLimit, JointFriction)):
                d = _joint_dofs(model, c.joint)
                nr = len(d)
                b1, b2 = -1, -1
                if isinstance(c, JointLimit):
                    kind = JOINT_LIMIT
                    sgs.append(np.full(nr, c.sign)); jfmax.append(np.full(nr, np.nan))
                else:
                    kind = JOINT_FRICTION
                    sgs.append(np.ones(nr)); jfmax.append(np.full(nr, c.max_torque))
                dofs.append(d)
            else:
                raise TypeError(f"unknown constraint {c!r}")
            kinds.append([kind]); rows.append([m]); nrows.append([nr])
            bodies.append(np.array([[b1, b2]])); fpar.append(f)
            m += nr
        def cat(L, dt, shape):
            if not L:
                return np.zeros((0,) + shape, dt)
            if len(L) == 1:
                return np.asarray(L[0], dtype=dt).reshape((-1,) + shape)
            return np.concatenate([np.asarray(x, dtype=dt).reshape((-1,) + shape) for x in L])
        self.m = m
        self.cb_kind = cat(kinds, np.int64, ())
        self.cb_row = cat(rows, np.int64, ())
        self.cb_nrows = cat(nrows, np.int64, ())
        self.cb_body = cat(bodies, np.int64, (2,))
        self.cb_f = cat(fpar, np.float64, (24,))
        self.dof = cat(dofs, np.int64, ())
        self.sg = cat(sgs, np.float64, ())
        self.mu = cat(mus, np.float64, ())
        self.contact_row = cat(crow, np.int64, ())
        self.joint_friction_max = cat(jfmax, np.float64, ())
        self.row_block = np.repeat(np.arange(len(self.cb_kind)), self.cb_nrows) if m else np.zeros(0, np.int64)
        self.row_kind = self.cb_kind[self.row_block] if m else np.zeros(0, np.int64)
        self._init_derived()

    def _init_derived(self):
        """What is derived from the blocks on first use: the coupling pairs, graph key and joint
        dofs key, and `derived`, the structures that algorithms compute once per set (keyed by
        algorithm: PV-OSIMr's side ordering, the prepared constrained dynamics)."""
        self._pairs = None
        self._graph_key = None
        self._dofs_key = None
        self.derived = {}

    @staticmethod
    def _resolve_many(model, b):
        if b.dtype.kind in "iu":
            return ConstraintSet._check_idx(model, b)
        return np.array([_body(model, x)[0] for x in b], dtype=np.int64)

    @staticmethod
    def _check_idx(model, b):
        b = np.asarray(b, dtype=np.int64)
        if b.size and (b.min() < -1 or b.max() >= model.nbodies):
            raise KeyError(f"body indices must be in [-1, {model.nbodies})")
        return b

    @classmethod
    def with_contacts(cls, tail, body1, body2, position, frame, friction):
        """k contacts (body indices (k,), points (k, 3), frames (k, 3, 3), friction (k,), as a
        collision detector gives them, trusted) followed by the blocks of `tail`, a
        ConstraintSet without contacts; the same arrays as ``ConstraintSet(model,
        [ContactSet(...), *tail.constraints])``, built by one kernel with the coupling pairs
        (the simulator's per-step path)."""
        k = body1.shape[0]
        if tail.ncontacts:
            raise ValueError("with_contacts: the tail must not hold contacts")
        self = cls.__new__(cls)
        self.model = tail.model
        c0 = ContactSet.__new__(ContactSet)
        c0.body1, c0.body2, c0.position, c0.frame = body1, body2, position, frame
        c0.friction, c0.nrows = friction, 3 * k
        self.constraints = [c0] + tail.constraints
        nb, m = k + tail.cb_kind.shape[0], 3 * k + tail.m
        tgen = tail.contact_arrays()[0]
        self.m, self.mu = m, np.asarray(friction, float)
        self.cb_kind, self.cb_row, self.cb_nrows = np.empty(nb, np.int64), np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.cb_body, self.cb_f, self.cb_slot = np.empty((nb, 2), np.int64), np.empty((nb, 24)), np.empty(nb, np.int64)
        self.dof, self.sg, self.joint_friction_max = np.empty(m, np.int64), np.empty(m), np.empty(m)
        self.row_block, self.row_kind = np.empty(m, np.int64), np.empty(m, np.int64)
        self.contact_row, gen = np.empty(k, np.int64), np.empty(tgen.shape[0], np.int64)
        pairs = with_contacts_kernel(body1, body2, position, frame, tail.cb_kind, tail.cb_row, tail.cb_nrows,
                                     tail.cb_body, tail.cb_f, tail.dof, tail.sg, tail.joint_friction_max, tgen,
                                     self.model.nbodies, self.cb_kind, self.cb_row, self.cb_nrows, self.cb_body,
                                     self.cb_f, self.dof, self.sg, self.joint_friction_max, self.row_block,
                                     self.row_kind, self.contact_row, gen, self.cb_slot)
        self._init_derived()
        self._pairs, self._dofs_key = pairs, tail.joint_dofs_key()     # computed here, inherited
        # (gen, crow, cbody, cf) of `contact_arrays`: the contacts are the first k blocks
        self._contact_arrays = (gen, self.contact_row, self.cb_body[:k], self.cb_f[:k])
        return self

    @classmethod
    def with_joint_limits(cls, head, dof, sign, tail, records=None):
        """The blocks of `head`, then one joint-limit row per entry of dof (k,) with sign (k,)
        (+1 lower, −1 upper), then the blocks of `tail` (head and tail: contact-free sets of one
        model); the same arrays as ``ConstraintSet(model, [*head.constraints, JointLimit(joint of
        dof[i], side of sign[i]) …, *tail.constraints])`` for one-dof joints, built by one kernel
        (the simulator's active joint limits). records: the k `JointLimit` records to keep in
        `constraints` (default: made here, joints by body index)."""
        if head.ncontacts or tail.ncontacts or head.model is not tail.model:
            raise ValueError("with_joint_limits: head and tail must be contact-free sets of one model")
        model = head.model
        dof = np.ascontiguousarray(dof, dtype=np.int64)
        sign = np.ascontiguousarray(sign, dtype=float)
        k = dof.shape[0]
        if records is None:
            body = np.searchsorted(model.idx_v, dof, side="right") - 1
            records = [JointLimit(int(b), "lower" if s > 0 else "upper") for b, s in zip(body, sign)]
        self = cls.__new__(cls)
        self.model = model
        self.constraints = head.constraints + list(records) + tail.constraints
        nb = head.cb_kind.shape[0] + k + tail.cb_kind.shape[0]
        m = head.m + k + tail.m
        self.m = m
        self.cb_kind, self.cb_row, self.cb_nrows = np.empty(nb, np.int64), np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.cb_body, self.cb_f = np.empty((nb, 2), np.int64), np.empty((nb, 24))
        self.dof, self.sg, self.joint_friction_max = np.empty(m, np.int64), np.empty(m), np.empty(m)
        self.row_block, self.row_kind = np.empty(m, np.int64), np.empty(m, np.int64)
        self.mu, self.contact_row = np.zeros(0), np.zeros(0, np.int64)
        joint_limits_kernel(head.cb_kind, head.cb_row, head.cb_nrows, head.cb_body, head.cb_f, head.dof, head.sg,
                            head.joint_friction_max, dof, sign, tail.cb_kind, tail.cb_row, tail.cb_nrows,
                            tail.cb_body, tail.cb_f, tail.dof, tail.sg, tail.joint_friction_max, self.cb_kind,
                            self.cb_row, self.cb_nrows, self.cb_body, self.cb_f, self.dof, self.sg,
                            self.joint_friction_max, self.row_block, self.row_kind)
        self._init_derived()
        self._dofs_key = head.joint_dofs_key() + dof.tobytes() + tail.joint_dofs_key()
        self._contact_arrays = (np.arange(m, dtype=np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64),
                                np.zeros((0, 24)))
        return self

    def refresh_contacts(self, position, frame):
        """The same contacts (bodies, friction, order) at new points (k, 3) and frames (k, 3, 3):
        the rows' data is rewritten in place, so the coupling pairs, graph key and elimination
        structure cached on this set stay valid (a simulator step whose contacts come from the
        same geometry pairs in the same order). Only for a set built by `with_contacts`."""
        c0 = self.constraints[0]
        if position.shape != c0.position.shape or frame.shape != c0.frame.shape:
            raise ValueError("refresh_contacts: the number of contacts changed")
        c0.position, c0.frame = position, frame
        contact_points_kernel(position, frame, self.cb_f)
        return self

    @property
    def ncontacts(self):
        return int(self.mu.shape[0])

    def coupling_pairs(self):
        """Unique unordered pairs (a, b), a < b, of distinct moving bodies coupled by a constraint
        (the edges that LCABA adds to the spanning tree); (k, 2) int64. Also sets `cb_slot`,
        each block's index into these pairs (-1: no coupling)."""
        if self._pairs is None:
            self.cb_slot = np.empty(self.cb_kind.shape[0], np.int64)
            self._pairs = coupling_kernel(self.cb_body, self.model.nbodies, self.cb_slot)
        return self._pairs

    def contact_arrays(self):
        """(gen, crow, cbody, cf) for the kernels: rows that are not contact rows, and per contact
        its first row, (body1, body2) and parameters (p, R row-major); cached."""
        ca = getattr(self, "_contact_arrays", None)
        if ca is None:
            ci = np.flatnonzero(self.cb_kind == CONTACT)
            gen = np.flatnonzero(self.row_kind != CONTACT) if self.m else np.zeros(0, np.int64)
            ca = self._contact_arrays = (gen.astype(np.int64), np.ascontiguousarray(self.cb_row[ci]),
                                         np.ascontiguousarray(self.cb_body[ci]), np.ascontiguousarray(self.cb_f[ci]))
        return ca

    def joint_dofs_key(self):
        """The dofs of the joint rows in row order, as bytes (the key of `solvers.elimination.free_roots`); cached."""
        if self._dofs_key is None:
            self._dofs_key = self.dof[self.dof >= 0].tobytes()
        return self._dofs_key

    def graph_key(self):
        """Hashable key of the constraint graph (the coupling pairs): the elimination order cache key."""
        if self._graph_key is None:
            self._graph_key = (self.model.nbodies, self.coupling_pairs().tobytes())
        return self._graph_key

    def __len__(self):
        return len(self.cb_kind)


def as_constraint_set(model, constraints):
    if isinstance(constraints, ConstraintSet):
        if constraints.model is not model:
            raise ValueError("ConstraintSet was built for another model")
        return constraints
    return ConstraintSet(model, constraints)


@njit(cache=True)
def rows_kernel(cb_kind, cb_row, cb_nrows, cb_body, cb_f, oR, op, la, lb, kA, kB, contact_rows):
    """Link-level constraint rows K of paper 000 Eq. (5c) at the current placements oR, op.

    contact_rows=False skips the rows of contacts (kA, kB left as given, la/lb set): the
    matrix-free kernels use a contact's (p, R) directly and never read them.

    A velocity row along the world direction t of a point p on a link is k = (t, p × t) (the
    spatial force of a unit force along t at p, so kᵀ V = t · (v_O + ω × p)); an angular row is
    (0, t). Rows of body 2 carry the opposite sign. If both sides are the same link their rows
    are summed on that link; the world side (-1) is dropped. Joint rows are left to `dof`/`sg`.
    """
    nb = cb_kind.shape[0]
    for c in range(nb):
        kind, r0, nr = cb_kind[c], cb_row[c], cb_nrows[c]
        b1, b2 = cb_body[c, 0], cb_body[c, 1]
        f = cb_f[c]
        if kind >= 3:  # joint rows
            for r in range(r0, r0 + nr):
                la[r] = -1
                lb[r] = -1
                kA[r, :] = 0.0
                kB[r, :] = 0.0
            continue
        if kind == 0 and not contact_rows:
            for r in range(r0, r0 + nr):
                la[r] = b1 if b1 >= 0 else b2
                lb[r] = b2 if b1 >= 0 else -1
            continue
        # world anchors p₁, p₂ and the row frame R (columns = row directions), without allocating
        R00 = R01 = R02 = R10 = R11 = R12 = R20 = R21 = R22 = 0.0
        if kind == 0:
            x1, y1, z1 = f[0], f[1], f[2]
            x2, y2, z2 = x1, y1, z1
            R00, R01, R02, R10, R11, R12, R20, R21, R22 = f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11]
        else:
            if b1 >= 0:
                A = oR[b1]
                x1 = A[0, 0] * f[0] + A[0, 1] * f[1] + A[0, 2] * f[2] + op[b1, 0]
                y1 = A[1, 0] * f[0] + A[1, 1] * f[1] + A[1, 2] * f[2] + op[b1, 1]
                z1 = A[2, 0] * f[0] + A[2, 1] * f[1] + A[2, 2] * f[2] + op[b1, 2]
                R00 = A[0, 0] * f[3] + A[0, 1] * f[6] + A[0, 2] * f[9]
                R01 = A[0, 0] * f[4] + A[0, 1] * f[7] + A[0, 2] * f[10]
                R02 = A[0, 0] * f[5] + A[0, 1] * f[8] + A[0, 2] * f[11]
                R10 = A[1, 0] * f[3] + A[1, 1] * f[6] + A[1, 2] * f[9]
                R11 = A[1, 0] * f[4] + A[1, 1] * f[7] + A[1, 2] * f[10]
                R12 = A[1, 0] * f[5] + A[1, 1] * f[8] + A[1, 2] * f[11]
                R20 = A[2, 0] * f[3] + A[2, 1] * f[6] + A[2, 2] * f[9]
                R21 = A[2, 0] * f[4] + A[2, 1] * f[7] + A[2, 2] * f[10]
                R22 = A[2, 0] * f[5] + A[2, 1] * f[8] + A[2, 2] * f[11]
            else:
                x1, y1, z1 = f[0], f[1], f[2]
                R00, R01, R02, R10, R11, R12, R20, R21, R22 = f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11]
            if kind == 2:
                x2, y2, z2 = x1, y1, z1
            elif b2 >= 0:
                B = oR[b2]
                x2 = B[0, 0] * f[12] + B[0, 1] * f[13] + B[0, 2] * f[14] + op[b2, 0]
                y2 = B[1, 0] * f[12] + B[1, 1] * f[13] + B[1, 2] * f[14] + op[b2, 1]
                z2 = B[2, 0] * f[12] + B[2, 1] * f[13] + B[2, 2] * f[14] + op[b2, 2]
            else:
                x2, y2, z2 = f[12], f[13], f[14]
        for r in range(nr):
            row = r0 + r
            col = r % 3
            if col == 0:
                t0, t1, t2 = R00, R10, R20
            elif col == 1:
                t0, t1, t2 = R01, R11, R21
            else:
                t0, t1, t2 = R02, R12, R22
            if r < 3:   # point velocity rows: (t, p × t)
                a0, a1, a2 = t0, t1, t2
                a3, a4, a5 = y1 * t2 - z1 * t1, z1 * t0 - x1 * t2, x1 * t1 - y1 * t0
                c0, c1, c2 = -t0, -t1, -t2
                c3, c4, c5 = -(y2 * t2 - z2 * t1), -(z2 * t0 - x2 * t2), -(x2 * t1 - y2 * t0)
            else:       # angular rows: (0, t)
                a0 = a1 = a2 = 0.0
                a3, a4, a5 = t0, t1, t2
                c0 = c1 = c2 = 0.0
                c3, c4, c5 = -t0, -t1, -t2
            if b1 >= 0 and b1 == b2:
                la[row] = b1
                lb[row] = -1
                kA[row, 0] = a0 + c0; kA[row, 1] = a1 + c1; kA[row, 2] = a2 + c2
                kA[row, 3] = a3 + c3; kA[row, 4] = a4 + c4; kA[row, 5] = a5 + c5
                kB[row, :] = 0.0
            elif b1 >= 0:
                la[row] = b1
                lb[row] = b2
                kA[row, 0] = a0; kA[row, 1] = a1; kA[row, 2] = a2
                kA[row, 3] = a3; kA[row, 4] = a4; kA[row, 5] = a5
                if b2 >= 0:
                    kB[row, 0] = c0; kB[row, 1] = c1; kB[row, 2] = c2
                    kB[row, 3] = c3; kB[row, 4] = c4; kB[row, 5] = c5
                else:
                    kB[row, :] = 0.0
            else:
                la[row] = b2
                lb[row] = -1
                if b2 >= 0:
                    kA[row, 0] = c0; kA[row, 1] = c1; kA[row, 2] = c2
                    kA[row, 3] = c3; kA[row, 4] = c4; kA[row, 5] = c5
                else:
                    kA[row, :] = 0.0
                kB[row, :] = 0.0


@njit(cache=True, _nrt=False)
def contact_points_kernel(pos, frame, cb_f):
    """The parameters of the first k blocks (contacts): point (k, 3) and frame (k, 3, 3) row-major."""
    for i in range(pos.shape[0]):
        for a in range(3):
            cb_f[i, a] = pos[i, a]
            for b in range(3):
                cb_f[i, 3 + 3 * a + b] = frame[i, a, b]


@njit(cache=True)
def with_contacts_kernel(b1, b2, pos, frame, t_kind, t_row, t_nrows, t_body, t_f, t_dof, t_sg, t_jf, t_gen, nbodies,
                         cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind, crow, gen,
                         cb_slot):
    """Flat arrays of k contacts followed by a contact-free tail set (`ConstraintSet.with_contacts`):
    the blocks and rows, the contacts' first rows crow (k,), the other rows gen (the tail's t_gen
    shifted by 3k) and the coupling slots cb_slot; returns the coupling pairs (`coupling_kernel`)."""
    k = b1.shape[0]
    contact_points_kernel(pos, frame, cb_f)
    for i in range(k):
        cb_kind[i], cb_row[i], cb_nrows[i] = CONTACT, 3 * i, 3
        cb_body[i, 0], cb_body[i, 1] = b1[i], b2[i]
        crow[i] = 3 * i
        for a in range(12, 24):
            cb_f[i, a] = 0.0
        for r in range(3 * i, 3 * i + 3):
            dof[r], sg[r], jf[r], row_block[r], row_kind[r] = -1, 0.0, np.nan, i, CONTACT
    _append_blocks(t_kind, t_row, t_nrows, t_body, t_f, t_dof, t_sg, t_jf, k, 3 * k,
                   cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind)
    for e in range(t_gen.shape[0]):
        gen[e] = t_gen[e] + 3 * k
    return coupling_kernel(cb_body, nbodies, cb_slot)


@njit(cache=True)
def _append_blocks(t_kind, t_row, t_nrows, t_body, t_f, t_dof, t_sg, t_jf, b0, m0,
                   cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind):
    """Copy the blocks of a set (t_*) to blocks b0… and rows m0… of the output arrays."""
    for c in range(t_kind.shape[0]):
        i = b0 + c
        cb_kind[i], cb_row[i], cb_nrows[i] = t_kind[c], t_row[c] + m0, t_nrows[c]
        cb_body[i, 0], cb_body[i, 1] = t_body[c, 0], t_body[c, 1]
        cb_f[i, :] = t_f[c, :]
        for r in range(t_row[c], t_row[c] + t_nrows[c]):
            dof[m0 + r], sg[m0 + r], jf[m0 + r] = t_dof[r], t_sg[r], t_jf[r]
            row_block[m0 + r], row_kind[m0 + r] = i, t_kind[c]


@njit(cache=True)
def joint_limits_kernel(h_kind, h_row, h_nrows, h_body, h_f, h_dof, h_sg, h_jf, lim_dof, lim_sg,
                        t_kind, t_row, t_nrows, t_body, t_f, t_dof, t_sg, t_jf,
                        cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind):
    """Flat arrays of a head set, one joint-limit row per lim_dof (k,) with sign lim_sg (k,),
    then a tail set (`ConstraintSet.with_joint_limits`)."""
    nh, mh = h_kind.shape[0], 0
    for c in range(nh):
        mh += h_nrows[c]
    _append_blocks(h_kind, h_row, h_nrows, h_body, h_f, h_dof, h_sg, h_jf, 0, 0,
                   cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind)
    k = lim_dof.shape[0]
    for j in range(k):
        i, r = nh + j, mh + j
        cb_kind[i], cb_row[i], cb_nrows[i] = JOINT_LIMIT, r, 1
        cb_body[i, 0], cb_body[i, 1] = -1, -1
        cb_f[i, :] = 0.0
        dof[r], sg[r], jf[r], row_block[r], row_kind[r] = lim_dof[j], lim_sg[j], np.nan, i, JOINT_LIMIT
    _append_blocks(t_kind, t_row, t_nrows, t_body, t_f, t_dof, t_sg, t_jf, nh + k, mh + k,
                   cb_kind, cb_row, cb_nrows, cb_body, cb_f, dof, sg, jf, row_block, row_kind)


@njit(cache=True)
def coupling_kernel(cb_body, n, cb_slot):
    """Sorted unique pairs (a, b), a < b, (p, 2) of the moving bodies coupled by a block (sorted
    by a·n + b), and each block's index among them in cb_slot (-1: world, one body, or the same
    body twice)."""
    nb = cb_body.shape[0]
    keys = np.empty(nb, np.int64)
    cnt = 0
    for c in range(nb):
        a, b = cb_body[c, 0], cb_body[c, 1]
        if a >= 0 and b >= 0 and a != b:
            keys[cnt] = min(a, b) * n + max(a, b)
            cnt += 1
    keys = keys[:cnt].copy()
    order = np.argsort(keys)        # (not np.sort: numba compiles argsort for the warm start anyway)
    srt = np.empty(cnt, np.int64)
    for i in range(cnt):
        srt[i] = keys[order[i]]
    u = 0
    for i in range(cnt):
        if i == 0 or srt[i] != srt[i - 1]:
            srt[u] = srt[i]
            u += 1
    uniq = srt[:u].copy()
    for c in range(nb):
        a, b = cb_body[c, 0], cb_body[c, 1]
        if a >= 0 and b >= 0 and a != b:
            cb_slot[c] = np.searchsorted(uniq, min(a, b) * n + max(a, b))
        else:
            cb_slot[c] = -1
    pairs = np.empty((u, 2), np.int64)
    for i in range(u):
        pairs[i, 0], pairs[i, 1] = uniq[i] // n, uniq[i] % n
    return pairs

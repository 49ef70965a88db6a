"""The Delassus operators' compiled protocol: one boxed state per operator, and the operations
the compiled solvers call on it.

A compiled solver (`solvers.admm.admm_kernel`) needs an operator's arrays: the matrix-free
side's (geo, fac, ws) tuples (about 55 arrays, nested, `delassus_kernels`) or the explicit side's
dn = (G, C, d, t). Passed as tuples, numba unboxes every array at each call: about 250 ns an
array, 18 µs a call on the 10-box pyramid, where the whole warm-started solve computes in 6 µs.
An `OperatorState` (a numba structref) holds the same tuples and crosses the boundary as one
pointer. It references the arrays, it does not copy them: the operator keeps updating them in
place (rows, factors, workspaces, and the Data it reads), so one state serves as long as the
tuples hold the same array objects.

- Python side: ``op.compiled_state()`` of `MatrixFreeDelassus` and `DenseDelassus` (kept by
  the operator in a `StateCache`), `compiled_state(op, m)` for any operator (one offering only
  ``matvec`` gets its explicit matrix), ``op.mark_factored()`` after a compiled solver has
  refactored the damped operator in its storage.
- Compiled side: `op_matvec` (G x), `op_factor` (factor G + diag d), `op_refactor` (factor
  the ADMM's damping, scaled or not), `op_spare_factor` (a second factor storage), `op_solve`
  ((G + diag d)⁻¹ b), `op_diag` (diag G or its estimate), `op_jt_minv` (M⁻¹ Jᵀ λ) and
  `op_max_eigenvalue` (the one Lanczos), on either operator, selected by the state's ``dense``
  flag; `max_eigenvalue(op, m)` from Python.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

import models.dynamics
import models.joints
import models.kinematics
import models.spatial
from models.jitcache import drop_stale_cache

from . import delassus_kernels as _dk
from . import lcaba_kernels as _lk
from . import scaling as _scaling
from .delassus_kernels import (Blocks, EliminationArrays, Explicit, Factors, Geometry, Rows, Workspace, dense_factor,
                               dense_solve, j_apply_kernel, jt_minv_kernel, mf_matvec)
from .lcaba_kernels import mf_factor, mf_solve
from .scaling import delassus_diagonal_kernel

# the compiled operations here compile in the operator kernels and the `models` kernels they call
drop_stale_cache(__file__, [_dk.__file__, _lk.__file__, _scaling.__file__, models.dynamics.__file__,
                            models.kinematics.__file__, models.spatial.__file__, models.joints.__file__])


@structref.register
class OperatorStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class OperatorState(structref.StructRefProxy):
    """dense (int: 1 explicit, 0 matrix-free), geo, fac, ws (matrix-free tuples, placeholders on
    the explicit side), dn (explicit (G, C, d, t), placeholders on the matrix-free side)."""

    def __new__(cls, dense, geo, fac, ws, dn):
        return _new_state(dense, geo, fac, ws, dn)


structref.define_proxy(OperatorState, OperatorStateType, ["dense", "geo", "fac", "ws", "dn"])


@njit(cache=True)
def _new_state(dense, geo, fac, ws, dn):
    """The constructor compiled once and cached on disk (define_proxy's own is not cached)."""
    return OperatorState(dense, geo, fac, ws, dn)


@njit(cache=True)
def _state_with_data(state, S, H, U, Dinv):
    """A matrix-free state's copy whose geometry reads another Data's S, H, U, D⁻¹ (same types):
    one boxed state and four arrays to type instead of the ~55 arrays of the parts."""
    g = state.geo
    return OperatorState(state.dense, Geometry(g.jint, S, H, U, Dinv, g.armature, g.rows), state.fac, state.ws,
                         state.dn)


def matrix_free_state_like(parts, state, old):
    """`matrix_free_state(parts)` where `state` is the state of `old`, parts that differ from
    these only in the Data arrays of the geometry (the simulator's other Data buffer): built from
    `state` by `_state_with_data`, without typing every array of the parts again."""
    g, og = parts[0], old[0]
    if parts[1] is old[1] and parts[2] is old[2] and g.rows is og.rows and g.jint is og.jint and \
            g.armature is og.armature:
        return _state_with_data(state, g.S, g.H, g.U, g.Dinv)
    return matrix_free_state(parts)


@njit(cache=True)
def _flat_state(jint, S, H, U, Dinv, armature, la, lb, kA, kB, dof, sg, gen, crow, cbody, cf,
                cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, b_la, b_lb, b_kA, b_kB, b_dof,
                use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr,
                Pd, Po, Pj, Hd, Ho, Dj, L, Y, Rv, flag, fext, tau, qdd, acc, pA, g, w, y, G, C, d, t):
    """A matrix-free `OperatorState` from the leaves of its (geo, fac, ws) tuples and of the
    explicit placeholders (G, C, d, t), in the tuples' field order: 60 plain arrays to type,
    about three times faster than the same arrays in nested tuples."""
    rows = Rows(la, lb, kA, kB, dof, sg, gen, crow, cbody, cf)
    cs = Blocks(cb_kind, cb_row, cb_nrows, cb_body, cb_f, cb_slot, b_la, b_lb, b_kA, b_kB, b_dof)
    el = EliminationArrays(use_a, order, par, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr)
    return OperatorState(0, Geometry(jint, S, H, U, Dinv, armature, rows),
                         Factors(cs, el, Pd, Po, Pj, Hd, Ho, Dj, L, Y, Rv, flag),
                         Workspace(fext, tau, qdd, acc, pA, g, w, y), Explicit(G, C, d, t))


def matrix_free_state(parts):
    """`OperatorState` of a matrix-free operator's (geo, fac, ws) tuples (`delassus_kernels`)."""
    (geo, fac, ws), dn = parts, _placeholders()[1]
    return _flat_state(*geo[:6], *geo.rows, *fac.cs, *fac.el, *fac[2:], *ws, *dn)


def explicit_state(dn):
    """`OperatorState` of an explicit operator's dn = (G, C, d, t)."""
    mf = _placeholders()[0]
    return OperatorState(1, mf[0], mf[1], mf[2], dn)


def compiled_state(op, m):
    """The `OperatorState` the compiled solvers run on: the operator's own
    (``op.compiled_state()``, kept while its arrays are the same objects), or for an operator
    that only offers ``matvec``, its explicit m × m matrix built from m products."""
    if hasattr(op, "compiled_state"):
        return op.compiled_state()
    return _ExplicitOperator(op, m).compiled_state()


def operator_parts(op, m):
    """(dense, geo, fac, ws, dn) of an operator, for the kernels that take the parts."""
    mf, dn = _placeholders()
    ks = op.kernel_state() if hasattr(op, "kernel_state") else _ExplicitOperator(op, m).dn
    if len(ks) == 3:
        return 0, ks[0], ks[1], ks[2], dn
    return 1, mf[0], mf[1], mf[2], ks


class _ExplicitOperator:
    """G of an operator that only offers ``matvec``, for the compiled solvers' explicit side."""

    def __init__(self, op, m):
        from .pgs import explicit_matrix
        G = explicit_matrix(lambda x: np.asarray(op.matvec(x), float), m)
        G = np.ascontiguousarray(0.5 * (G + G.T))
        self.dn = Explicit(G, np.empty((m, m)), np.empty(m), np.empty(m))

    def compiled_state(self):
        return explicit_state(self.dn)


_PLACEHOLDER = {}


def _placeholders():
    """Tuples of the right types for the side of a state that is not used (one compiled
    specialisation of each solver kernel serves both operators): (geo, fac, ws), dn."""
    if not _PLACEHOLDER:
        import models
        from .constraints import ContactSet
        from .delassus import MatrixFreeDelassus
        b = models.ModelBuilder()
        b.add_body("b", -1, models.FREE, mass=1.0, inertia=np.eye(3))
        mdl = b.build()
        op = MatrixFreeDelassus(mdl, mdl.neutral(), [ContactSet(np.array([0]), np.array([-1]), np.zeros((1, 3)),
                                                                  np.eye(3)[None], np.ones(1))])
        _PLACEHOLDER["mf"] = op.kernel_state()
        _PLACEHOLDER["dn"] = Explicit(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0), np.zeros(0))
    return _PLACEHOLDER["mf"], _PLACEHOLDER["dn"]


class StateCache:
    """The last `keep` states of an operator, each kept while its parts are the same objects
    (the simulator's two Data buffers alternate, hence 2)."""

    def __init__(self, keep=2):
        self.keep, self.entries = keep, []

    def get(self, parts, build):
        for old, state in self.entries:
            if old is parts:
                return state
        state = build(parts)
        self.entries = [(parts, state)] + self.entries[:self.keep - 1]
        return state


# ---------------------------------------------------------------- the compiled operations
@njit(cache=True, inline="always")
def op_factor(dense, geo, fac, dn, dscal, dvec, vec):
    """Factor G + diag d (d = dvec if vec else the scalar dscal) in the operator's storage."""
    if dense:
        dense_factor(dn, dscal, dvec, vec)
    else:
        mf_factor(geo, fac, dscal, dvec, vec)


@njit(cache=True, inline="always")
def op_spare_factor(dense, fac, dn):
    """A second factor storage of the same operator, (fac, dn) with the state's types: the
    damping-dependent arrays new (matrix-free: Hd, Ho, Dj, L, Y, Rv; explicit: C, d), the rest
    (rows, elimination order, unit sums Σ KᵀK, G) shared. `op_factor` and `op_solve` on it
    leave the state's own factorisation untouched (the ADMM keeps its damping there while a
    polish factors another)."""
    if dense:
        f2 = fac
        dn2 = Explicit(dn.G, np.empty_like(dn.C), np.empty_like(dn.d), dn.t)
    else:
        f2 = Factors(fac.cs, fac.el, fac.Pd, fac.Po, fac.Pj, np.empty_like(fac.Hd), np.empty_like(fac.Ho),
                     np.empty_like(fac.Dj), np.empty_like(fac.L), np.empty_like(fac.Y), np.empty_like(fac.Rv),
                     fac.flag)
        dn2 = dn
    return f2, dn2


@njit(cache=True, _nrt=False)
def op_refactor(dense, geo, fac, dn, Rc, has_rc, d, sc, scaled, dvec):
    """Factor an ADMM's damping d I (d = μ_prox + τρ, units of G) in the iteration's variables:
    d on G (+ R_c), or on the scaled G̃ = S G S (S = diag(sc), `solvers.admm.scale_kernel`),
    d S⁻² (+ R_c) on G. dvec (m,) is workspace."""
    if scaled or has_rc:
        for r in range(dvec.shape[0]):
            dvec[r] = (d / (sc[r] * sc[r]) if scaled else d) + (Rc[r] if has_rc else 0.0)
    op_factor(dense, geo, fac, dn, d, dvec, scaled or has_rc)


@njit(cache=True, inline="always")
def op_matvec(dense, geo, ws, dn, x, out):
    """out = G x on either operator."""
    if dense:
        G = dn.G
        for r in range(x.shape[0]):
            acc = 0.0
            for c in range(x.shape[0]):
                acc += G[r, c] * x[c]
            out[r] = acc
    else:
        mf_matvec(geo, ws, x, out)


@njit(cache=True, inline="always")
def op_solve(dense, geo, fac, ws, dn, b, out):
    """out = (G + diag d)⁻¹ b with the last `op_factor`."""
    if dense:
        dense_solve(dn, b, out)
    else:
        mf_solve(geo, fac, ws, b, out)


@njit(cache=True, inline="always")
def op_diag(dense, geo, dn, out, blk):
    """out ≈ diag(G): the explicit operator's own, the matrix-free one's estimate (`solvers.scaling`;
    blk (n, 6, 6) workspace, n the operator's bodies)."""
    if dense:
        G = dn.G
        for r in range(out.shape[0]):
            out[r] = G[r, r]
    else:
        jint, S, H, U, Dinv, armature, rows = geo
        la, lb, kA, kB, dof, sg, gen, crow, cbody, cf = rows
        delassus_diagonal_kernel(jint, S, U, Dinv, la, lb, kA, kB, dof, gen, crow, cbody, cf, blk, out)


@njit(cache=True, _nrt=False)
def op_jt_minv(dense, geo, ws, lam, out):
    """out (nv,) = M⁻¹ Jᵀ λ, the joint velocity change of impulses λ, on the matrix-free side
    (paper 000 Alg. 1 merged into Alg. 2); returns False (out untouched) on the explicit side,
    which holds G but not M, or for an empty out."""
    if dense or out.shape[0] == 0:
        return False
    jint, S, H, U, Dinv, armature, rows = geo
    fext, tau, qdd, acc, pA, g, w, y = ws
    jt_minv_kernel(jint, S, U, Dinv, rows, lam, fext, tau, out, acc, pA)
    return True


@njit(cache=True, _nrt=False)
def state_j_apply(state, v, out):
    """out (m,) = J v (m/s) of joint velocities v (nv,) on a matrix-free `OperatorState`
    (`delassus_kernels.j_apply_kernel`, link velocities in the workspace's acc): one boxed
    argument instead of the rows' ten arrays."""
    geo = state.geo
    j_apply_kernel(geo.jint, geo.S, geo.rows, v, out, state.ws.acc)


@njit(cache=True, _nrt=False)
def _reorthogonalise(Q, j, w):
    """w ← w − Σ_{i ≤ j} (w · Q_i) Q_i, twice (full reorthogonalisation against the Lanczos
    vectors Q (k + 1, m) so far), compiled without numba's reference counting (an atomic pair
    per row view otherwise)."""
    m = w.shape[0]
    for _ in range(2):
        for i in range(j + 1):
            c = np.dot(w, Q[i])
            for r in range(m):
                w[r] -= c * Q[i, r]


@njit(cache=True, _nrt=True)     # it allocates (stated: `solvers.admm._admm_iterate` runs without the runtime)
def op_max_eigenvalue(dense, geo, ws, dn, sc, iters):
    """λ_max(S G S), S = diag(sc) (sc empty: S = I), by `iters` Lanczos steps with full
    reorthogonalisation (twice) from a fixed generic start vector, 1 + ½ sin(r + 1), which has a
    component on every eigenvector: deterministic, so every operator gives the same estimate up
    to round-off. The largest Ritz value: a lower bound that converges fast for the extreme
    eigenvalue (within 1e-6 relative after 20 steps on the tests' operators)."""
    m = dn.G.shape[0] if dense else geo.rows.la.shape[0]
    scaled = sc.shape[0] > 0
    k = min(iters, m)
    Q = np.zeros((k + 1, m))
    alpha, beta = np.zeros(k), np.zeros(k)
    for r in range(m):
        Q[0, r] = 1.0 + 0.5 * math.sin(r + 1.0)
    Q[0] /= np.sqrt(np.dot(Q[0], Q[0]))
    u, w = np.empty(m), np.empty(m)
    n = 0
    for j in range(k):
        for r in range(m):
            u[r] = sc[r] * Q[j, r] if scaled else Q[j, r]
        op_matvec(dense, geo, ws, dn, u, w)
        if scaled:
            for r in range(m):
                w[r] *= sc[r]
        alpha[j] = np.dot(w, Q[j])
        _reorthogonalise(Q, j, w)
        n = j + 1
        b = np.sqrt(np.dot(w, w))
        beta[j] = b
        if b <= 1e-12 * max(abs(alpha[j]), 1e-300):
            break
        for r in range(m):
            Q[j + 1, r] = w[r] / b
    T = np.zeros((n, n))
    for j in range(n):
        T[j, j] = alpha[j]
        if j + 1 < n:
            T[j, j + 1] = beta[j]
            T[j + 1, j] = beta[j]
    return np.linalg.eigvalsh(T)[-1]


@njit(cache=True)
def state_max_eigenvalue(state, iters):
    """λ_max(G) of an `OperatorState` (`op_max_eigenvalue`, unscaled)."""
    return op_max_eigenvalue(state.dense, state.geo, state.ws, state.dn, np.empty(0), iters)


def max_eigenvalue(op, m, iters=20):
    """λ_max(G) of any operator (`op_max_eigenvalue` on `compiled_state(op, m)`); 0 for m = 0."""
    if m == 0:
        return 0.0
    return float(state_max_eigenvalue(compiled_state(op, m), int(iters)))

"""Constraint sets of the contact problem and their projections.

A problem of m rows is cut into blocks, each a set K_b for its impulse λ_b:

========  ====  ==========================================  ===============================
kind      rows  set K_b                                     dual set K_b*
========  ====  ==========================================  ===============================
CONE      3     Coulomb cone ‖λ_t‖ ≤ μ λ_n, normal last     ‖σ_t‖ μ ≤ σ_n
FREE      any   the whole space (bilateral: loops, welds)   {0}
ORTHANT   any   λ ≥ 0 (joint limits)                        σ ≥ 0
BOX       1     |λ| ≤ f (joint friction)                    normal cone of the box
========  ====  ==========================================  ===============================

The arrays are flat: ``kind``, ``start``, ``size`` (int64) and ``param`` (float: μ for a
cone, f for a box) per block.
"""
import numpy as np
from numba import njit

CONE, FREE, ORTHANT, BOX = 0, 1, 2, 3
_KIND_NAMES = {"cone": CONE, "free": FREE, "orthant": ORTHANT, "box": BOX}


class ConeSet:
    """Blocks of a constraint problem (see module docstring). Build with `add` or `from_blocks`."""

    def __init__(self):
        self._kind, self._start, self._size, self._param = [], [], [], []
        self.m = 0
        self._frozen = None

    @classmethod
    def from_blocks(cls, blocks):
        """blocks: iterable of (kind name or code, size, param)."""
        cs = cls()
        for kind, size, param in blocks:
            cs.add(kind, size, param)
        return cs

    @classmethod
    def contacts(cls, mu):
        """n contact cones with friction coefficients mu (n,) (built as arrays, no per-cone work)."""
        mu = np.array(mu, dtype=float).reshape(-1)
        if not np.all(mu >= 0):     # also rejects NaN
            raise ValueError(f"friction coefficient must be ≥ 0, got {mu[~(mu >= 0)][0]}")
        k = mu.shape[0]
        cs = cls()
        cs._frozen = (np.zeros(k, np.int64), np.arange(0, 3 * k, 3, dtype=np.int64), np.full(k, 3, np.int64), mu)
        cs._kind, cs._start, cs._size, cs._param = None, None, None, None   # materialised on add()
        cs.m = 3 * k
        return cs

    @classmethod
    def with_contacts(cls, mu, tail):
        """Contact cones with friction mu (k,) (trusted: ≥ 0) followed by the blocks of `tail`."""
        k = mu.shape[0]
        tk, ts, tz, tp = tail.arrays()
        nb = k + tk.shape[0]
        cs = cls()
        cs._frozen = (np.empty(nb, np.int64), np.empty(nb, np.int64), np.empty(nb, np.int64), np.empty(nb))
        with_contacts_kernel(mu, tk, ts, tz, tp, *cs._frozen)
        cs._kind, cs._start, cs._size, cs._param = None, None, None, None
        cs.m = 3 * k + tail.m
        return cs

    def _lists(self):
        if self._kind is None:
            kind, start, size, param = self._frozen
            self._kind, self._start, self._size, self._param = list(kind), list(start), list(size), list(param)

    def add(self, kind, size=None, param=0.0):
        """Append a block; returns its first row."""
        self._lists()
        kind = _KIND_NAMES.get(kind, kind)
        if kind not in (CONE, FREE, ORTHANT, BOX):
            raise ValueError(f"unknown constraint set kind {kind!r}")
        size = 3 if kind == CONE and size is None else (1 if size is None else int(size))
        if kind == CONE and size != 3:
            raise ValueError("a friction cone block has 3 rows (t1, t2, n)")
        if kind == BOX and size != 1:
            raise ValueError("a box block has 1 row")
        if not (np.isfinite(param) and param >= 0):
            raise ValueError(f"cone friction / box bound must be ≥ 0, got {param}")
        self._kind.append(kind)
        self._start.append(self.m)
        self._size.append(size)
        self._param.append(float(param))
        self.m += size
        self._frozen = None
        return self.m - size

    def arrays(self):
        """(kind, start, size, param) as flat arrays (cached)."""
        if self._frozen is None:
            self._frozen = (np.asarray(self._kind, np.int64), np.asarray(self._start, np.int64),
                            np.asarray(self._size, np.int64), np.asarray(self._param, float))
        return self._frozen

    def __len__(self):
        return len(self.arrays()[0])

    def project(self, x):
        """Π_K(x) (m,)."""
        out = np.empty(self.m)
        project_kernel(*self.arrays(), np.asarray(x, float), out)
        return out


@njit(cache=True)
def with_contacts_kernel(mu, tk, ts, tz, tp, kind, start, size, param):
    """Blocks of k contact cones followed by a tail's blocks (`ConeSet.with_contacts`)."""
    k = mu.shape[0]
    for i in range(k):
        kind[i], start[i], size[i], param[i] = CONE, 3 * i, 3, mu[i]
    for b in range(tk.shape[0]):
        kind[k + b], start[k + b], size[k + b], param[k + b] = tk[b], ts[b] + 3 * k, tz[b], tp[b]


@njit(cache=True, inline="always")
def on_edge(mu, nt, n):
    """An impulse with normal part n > 0 and tangential norm nt is on its cone's boundary (a
    sliding contact): nt > 0 and nt ≥ μ n within a relative 1e-9."""
    return nt > 0.0 and nt >= mu * n * (1.0 - 1e-9)


@njit(cache=True, inline="always")
def project_cone(mu, t1, t2, n):
    """Projection of (t1, t2, n) on the cone ‖t‖ ≤ μ n (Euclidean)."""
    nt = np.sqrt(t1 * t1 + t2 * t2)
    if nt <= mu * n:
        return t1, t2, n
    if mu * nt <= -n:
        return 0.0, 0.0, 0.0
    # onto the boundary ray d = (μ t/‖t‖, 1)/√(1+μ²): (x·d) d
    a = (mu * nt + n) / (1.0 + mu * mu)
    if nt > 0:
        return mu * a * t1 / nt, mu * a * t2 / nt, a
    return 0.0, 0.0, max(n, 0.0)


@njit(cache=True, _nrt=False)
def project_kernel(kind, start, size, param, x, out):
    """out = Π_K(x) block by block."""
    for b in range(kind.shape[0]):
        s, k = start[b], kind[b]
        if k == CONE:
            out[s], out[s + 1], out[s + 2] = project_cone(param[b], x[s], x[s + 1], x[s + 2])
        elif k == FREE:
            for r in range(s, s + size[b]):
                out[r] = x[r]
        elif k == ORTHANT:
            for r in range(s, s + size[b]):
                out[r] = max(x[r], 0.0)
        else:
            out[s] = min(max(x[s], -param[b]), param[b])


@njit(cache=True, _nrt=False)
def desaxce_kernel(kind, start, param, sigma, s_out):
    """De Saxcé correction s(σ) = (0, 0, μ‖σ_t‖) on cone blocks, 0 elsewhere."""
    s_out[:] = 0.0
    for b in range(kind.shape[0]):
        if kind[b] == CONE:
            s = start[b]
            s_out[s + 2] = param[b] * np.sqrt(sigma[s] ** 2 + sigma[s + 1] ** 2)


@njit(cache=True, _nrt=False)
def velocity_residual_kernel(kind, start, size, param, lam, sigma):
    """Coulomb residual of impulses λ ∈ K (m,) with the velocities σ' = (G + R) λ + g + s(σ) they
    produce (m/s): the largest |σ' − z| over rows, where z is the velocity nearest to σ' that
    satisfies the contact law exactly with λ (the projection of σ' on the face of K* orthogonal
    to λ). Per block:

    - cone, λ_n = 0 (separated): z = Π_{K*}(σ'), so only approach (σ_n < 0) counts;
    - cone, λ strictly inside (sticking): z = 0, so slip and normal velocity count in full;
    - cone, λ on the boundary (sliding): z = β u on the ray u ∝ (−λ_t/‖λ_t‖, μ) of K* opposite
      to λ, so slip off the direction opposite to the friction force counts;
    - free rows: z = 0; orthant: z = 0 if λ > 0 else max(σ, 0); box: z = 0 inside, one-sided on
      a face.

    With the De Saxcé term, σ' = (σ_t, σ_n + μ‖σ_t‖). Returns (max residual, max |λ_b · σ'_b|)."""
    rv, rc = 0.0, 0.0
    for b in range(kind.shape[0]):
        s, k = start[b], kind[b]
        if k == CONE:
            mu = param[b]
            t1, t2, n = lam[s], lam[s + 1], lam[s + 2]
            a1, a2, a3 = sigma[s], sigma[s + 1], sigma[s + 2]
            nt = np.sqrt(t1 * t1 + t2 * t2)
            if n <= 0.0:
                if mu > 0:
                    z1, z2, z3 = project_cone(1.0 / mu, a1, a2, a3)
                else:
                    z1, z2, z3 = 0.0, 0.0, max(a3, 0.0)
            elif on_edge(mu, nt, n):
                c = 1.0 / np.sqrt(1.0 + mu * mu)
                u1, u2, u3 = -t1 / nt * c, -t2 / nt * c, mu * c
                beta = max(a1 * u1 + a2 * u2 + a3 * u3, 0.0)
                z1, z2, z3 = beta * u1, beta * u2, beta * u3
            else:
                z1, z2, z3 = 0.0, 0.0, 0.0
            rv = max(rv, max(abs(a1 - z1), max(abs(a2 - z2), abs(a3 - z3))))
            rc = max(rc, abs(t1 * a1 + t2 * a2 + n * a3))
        elif k == FREE:
            for r in range(s, s + size[b]):
                rv = max(rv, abs(sigma[r]))
        elif k == ORTHANT:
            for r in range(s, s + size[b]):
                z = 0.0 if lam[r] > 0.0 else max(sigma[r], 0.0)
                rv = max(rv, abs(sigma[r] - z))
                rc = max(rc, abs(lam[r] * sigma[r]))
        else:
            f = param[b]
            a = sigma[s]
            z = min(a, 0.0) if lam[s] >= f else (max(a, 0.0) if lam[s] <= -f else 0.0)
            rv = max(rv, abs(a - z))
    return rv, rc

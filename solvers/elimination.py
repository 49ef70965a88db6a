"""Elimination ordering of the link graph for LCABA (paper 000 Alg. 4, the ordering 𝒮ᴱ).

Nodes are links; edges are the spanning-tree joints plus coupling blocks from constraints
between two moving links. Eliminating link i (its joint acceleration q̈ᵢ, with
aᵢ = a_λ(i) + Sᵢ q̈ᵢ) couples all its remaining neighbours 𝒩ᵢ ∪ {λ(i)} (fill-in, Alg. 4
lines 17–21). A link can be eliminated once all its tree children are (its parent must still
be a variable). Among the links that can be eliminated we pick one of minimum current degree
(minimum-degree heuristic on the link graph): on a tree with unary constraints this is the
plain leaves-first ABA order with no fill-in; on a pile of free boxes it is a sparse block
Cholesky of 6×6 blocks in a minimum-degree order.

The result depends only on the model's tree and the set of coupled pairs, so it is cached by
(model, pairs). Everything the numeric kernels need is returned as flat int64 arrays.
"""
from __future__ import annotations

import heapq
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from models.joints import FREE

from .delassus_kernels import EliminationArrays


@dataclass
class Elimination:
    """Flat description of the block elimination (sizes: n steps, E neighbour entries, P pairs).

    order (n,): link eliminated at each step; par (n,): its tree parent (-1 world).
    nb_ptr (n+1,), nb_node (E,): neighbour list 𝒩ᵢ ∪ {λ(i)} of each step, the parent first
    when it is a link; nb_slot (E,): slot of the coupling block H_{i,k} (-1: none);
    nb_tr (E,): 1 if that slot stores H_{k,i} (so H_{i,k} is its transpose).
    pair_ptr (n+1,), pair_slot (P,), pair_tr (P,): for each step, the targets of the Schur
    complement updates of the pairs (e1 < e2) of its neighbour entries, in row-major order;
    pair_tr = 1 means the slot stores H_{l,k} for the pair (k, l) = (nb e1, nb e2).
    nslots: number of off-diagonal 6×6 blocks (initial couplings first, in the order of
    the sorted `pairs`, then fill-in). slot_pair (nslots, 2): (k, l), k < l; a slot
    stores the block B with energy term a_kᵀ B a_l.
    """
    order: np.ndarray
    par: np.ndarray
    nb_ptr: np.ndarray
    nb_node: np.ndarray
    nb_slot: np.ndarray
    nb_tr: np.ndarray
    pair_ptr: np.ndarray
    pair_slot: np.ndarray
    pair_tr: np.ndarray
    nslots: int
    ninit: int
    slot_pair: np.ndarray
    fill: int

    def nbytes(self):
        return sum(getattr(self, k).nbytes for k in ("order", "par", "nb_ptr", "nb_node", "nb_slot", "nb_tr",
                                                     "pair_ptr", "pair_slot", "pair_tr", "slot_pair"))


def elimination_order(parent, nvs, pairs):
    """Minimum-degree elimination respecting the tree (children before parents).

    parent (n,), nvs (n,) dofs per link, pairs (k, 2) sorted unique coupled pairs (a < b).
    Returns an `Elimination`.
    """
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.shape[0]
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return _tree_order(parent)
    adj = [set() for _ in range(n)]
    slot = {}
    for a, b in pairs.tolist():
        adj[a].add(b)
        adj[b].add(a)
        slot[(a, b)] = len(slot)
    ninit = len(slot)
    nchild = np.zeros(n, np.int64)
    for i in range(n):
        if parent[i] >= 0:
            nchild[parent[i]] += 1
    par = parent.tolist()
    nvl = np.asarray(nvs).tolist()

    def degree(i):
        p = par[i]
        return len(adj[i]) + (1 if p >= 0 and p not in adj[i] else 0)

    heap = [(degree(i), -i, i) for i in range(n) if nchild[i] == 0]
    heapq.heapify(heap)
    done = [False] * n
    order, nb_ptr, nb_node, nb_slot, nb_tr = [], [0], [], [], []
    pair_ptr, pair_slot, pair_tr = [0], [], []

    def get_slot(k, l):
        key = (k, l) if k < l else (l, k)
        s = slot.get(key)
        if s is None:
            s = slot[key] = len(slot)
        return s

    while heap:
        d, _, i = heapq.heappop(heap)
        if done[i]:
            continue
        if d != degree(i):
            heapq.heappush(heap, (degree(i), -i, i))
            continue
        done[i] = True
        order.append(i)
        p = par[i]
        nbrs = sorted(adj[i] - {p})
        full = ([p] if p >= 0 else []) + nbrs
        for k in full:
            if k in adj[i]:
                nb_slot.append(slot[(i, k) if i < k else (k, i)])
                nb_tr.append(1 if k < i else 0)
            else:
                nb_slot.append(-1)
                nb_tr.append(0)
            nb_node.append(k)
        nb_ptr.append(len(nb_node))
        for k in adj[i]:
            adj[k].discard(i)
        # fill-in: a fixed link (no dofs) only hands its couplings to its parent
        if nvl[i] == 0:
            if p >= 0:
                targets = [(0, e) for e in range(1, len(full))]
            else:
                targets = []
        else:
            targets = [(e1, e2) for e1 in range(len(full)) for e2 in range(e1 + 1, len(full))]
        for e1, e2 in targets:
            k, l = full[e1], full[e2]
            s = get_slot(k, l)
            pair_slot.append(s)
            pair_tr.append(1 if k > l else 0)
            if l not in adj[k]:
                adj[k].add(l)
                adj[l].add(k)
        if nvl[i] == 0 and p >= 0:
            pass
        pair_ptr.append(len(pair_slot))
        adj[i] = set()
        for k in full:
            if not done[k] and nchild[k] == 0:
                heapq.heappush(heap, (degree(k), -k, k))
        if p >= 0:
            nchild[p] -= 1
            if nchild[p] == 0:
                heapq.heappush(heap, (degree(p), -p, p))
    assert len(order) == n
    slot_pair = np.zeros((len(slot), 2), np.int64)
    for (a, b), s in slot.items():
        slot_pair[s] = (a, b)
    A = lambda x: np.asarray(x, dtype=np.int64)
    return Elimination(A(order), parent[A(order)] if n else A([]), A(nb_ptr), A(nb_node), A(nb_slot), A(nb_tr),
                       A(pair_ptr), A(pair_slot), A(pair_tr), len(slot), ninit, slot_pair, len(slot) - ninit)


def _tree_order(parent):
    """No couplings: reverse topological order (plain ABA), one neighbour entry (the parent)."""
    n = parent.shape[0]
    order = np.arange(n - 1, -1, -1, dtype=np.int64)
    par = parent[order]
    has = (par >= 0).astype(np.int64)
    nb_ptr = np.concatenate(([0], np.cumsum(has))).astype(np.int64)
    nb_node = par[par >= 0].astype(np.int64)
    z = np.zeros(nb_node.shape[0], np.int64)
    return Elimination(order, par, nb_ptr, nb_node, z - 1, z.copy(), np.zeros(n + 1, np.int64),
                       np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0, np.zeros((0, 2), np.int64), 0)



@njit(cache=True)
def _has(adj, deg, k, v):
    for e in range(deg[k]):
        if adj[k, e] == v:
            return True
    return False


@njit(cache=True)
def _remove(adj, deg, k, v):
    for e in range(deg[k]):
        if adj[k, e] == v:
            adj[k, e] = adj[k, deg[k] - 1]
            deg[k] -= 1
            return


@njit(cache=True)
def _add_edge(adj, deg, a, b):
    """Edge a–b into the fixed-capacity adjacency rows (n, cap), doubling the capacity when a
    row is full; returns the (possibly new) array."""
    for k, v in ((a, b), (b, a)):
        if deg[k] == adj.shape[1]:
            cap = 2 * adj.shape[1]
            new = np.full((adj.shape[0], cap), -1, np.int64)
            new[:, :cap // 2] = adj
            adj = new
        adj[k, deg[k]] = v
        deg[k] += 1
    return adj


@njit(cache=True)
def min_degree_kernel(parent, nvs, pairs):
    """Minimum-degree elimination respecting the tree (numba version of `elimination_order`,
    identical output). Adjacency in fixed-capacity rows, grown when full; heap with lazy
    entries keyed by (current degree, -index)."""
    n = parent.shape[0]
    adj = np.full((n, 8), -1, np.int64)     # grown by _add_edge
    deg = np.zeros(n, np.int64)
    slot = dict()
    slot[np.int64(-1)] = np.int64(-1)
    del slot[np.int64(-1)]
    nslot = 0
    for r in range(pairs.shape[0]):
        a, b = pairs[r, 0], pairs[r, 1]
        adj = _add_edge(adj, deg, a, b)
        slot[a * n + b] = nslot
        nslot += 1
    nchild = np.zeros(n, np.int64)
    for i in range(n):
        if parent[i] >= 0:
            nchild[parent[i]] += 1
    done = np.zeros(n, np.bool_)
    heap = [(np.int64(0), np.int64(0), np.int64(0))]
    heap.pop()
    for i in range(n):
        if nchild[i] == 0:
            p = parent[i]
            d = deg[i] + (1 if p >= 0 and not _has(adj, deg, i, p) else 0)
            heapq.heappush(heap, (d, -i, i))
    order = np.empty(n, np.int64)
    nb_ptr = np.zeros(n + 1, np.int64)
    pair_ptr = np.zeros(n + 1, np.int64)
    nb_node, nb_slot, nb_tr = [np.int64(0)], [np.int64(0)], [np.int64(0)]
    nb_node.pop(); nb_slot.pop(); nb_tr.pop()
    pr_slot, pr_tr = [np.int64(0)], [np.int64(0)]
    pr_slot.pop(); pr_tr.pop()
    full = np.empty(n + 1, np.int64)
    t = 0
    while len(heap) > 0:
        d, _, i = heapq.heappop(heap)
        if done[i]:
            continue
        p = parent[i]
        cur = deg[i] + (1 if p >= 0 and not _has(adj, deg, i, p) else 0)
        if d != cur:
            heapq.heappush(heap, (cur, -i, i))
            continue
        done[i] = True
        order[t] = i
        # neighbour list: parent first, then the other couplings in increasing order
        nf = 0
        if p >= 0:
            full[0] = p
            nf = 1
        rest = np.sort(adj[i, :deg[i]])
        for v in rest:
            if v != p:
                full[nf] = v
                nf += 1
        for e in range(nf):
            k = full[e]
            if _has(adj, deg, i, k):
                key = i * n + k if i < k else k * n + i
                nb_slot.append(slot[key])
                nb_tr.append(1 if k < i else 0)
            else:
                nb_slot.append(-1)
                nb_tr.append(0)
            nb_node.append(k)
        nb_ptr[t + 1] = len(nb_node)
        for e in range(deg[i]):
            _remove(adj, deg, adj[i, e], i)
        for e1 in range(nf):
            if nvs[i] == 0 and not (p >= 0 and e1 == 0):
                break
            e2start = e1 + 1
            for e2 in range(e2start, nf):
                k, l = full[e1], full[e2]
                key = k * n + l if k < l else l * n + k
                if key in slot:
                    s = slot[key]
                else:
                    s = nslot
                    slot[key] = s
                    nslot += 1
                pr_slot.append(s)
                pr_tr.append(1 if k > l else 0)
                if not _has(adj, deg, k, l):
                    adj = _add_edge(adj, deg, k, l)
            if nvs[i] == 0:
                break
        pair_ptr[t + 1] = len(pr_slot)
        deg[i] = 0
        for e in range(nf):
            k = full[e]
            if not done[k] and nchild[k] == 0:
                pk = parent[k]
                dk = deg[k] + (1 if pk >= 0 and not _has(adj, deg, k, pk) else 0)
                heapq.heappush(heap, (dk, -k, k))
        if p >= 0:
            nchild[p] -= 1
            if nchild[p] == 0:
                dp = deg[p] + (1 if parent[p] >= 0 and not _has(adj, deg, p, parent[p]) else 0)
                heapq.heappush(heap, (dp, -p, p))
        t += 1
    slot_pair = np.zeros((nslot, 2), np.int64)
    for key, s in slot.items():
        slot_pair[s, 0] = key // n
        slot_pair[s, 1] = key % n
    return (order[:t], nb_ptr, np.array(nb_node, dtype=np.int64), np.array(nb_slot, dtype=np.int64),
            np.array(nb_tr, dtype=np.int64), pair_ptr, np.array(pr_slot, dtype=np.int64),
            np.array(pr_tr, dtype=np.int64), slot_pair, t)


def elimination_order_fast(parent, nvs, pairs):
    """`elimination_order` computed by the numba kernel (same result)."""
    parent = np.asarray(parent, dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return _tree_order(parent)
    (order, nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr, slot_pair,
     t) = min_degree_kernel(parent, np.asarray(nvs, dtype=np.int64), pairs)
    assert t == parent.shape[0]
    ninit = pairs.shape[0]
    return Elimination(order, parent[order], nb_ptr, nb_node, nb_slot, nb_tr, pair_ptr, pair_slot, pair_tr,
                       slot_pair.shape[0], ninit, slot_pair, slot_pair.shape[0] - ninit)

LcabaStructure = namedtuple("LcabaStructure", "elimination cb_slot use_a arrays")
"""What LCABA needs of a constraint set besides its rows: the `Elimination`, each constraint
block's coupling slot (`ConstraintSet.cb_slot`), the free roots eliminated in link coordinates
(`free_roots`) and both as the kernels' `solvers.delassus_kernels.EliminationArrays`."""


def free_roots(model, dof):
    """(n,) int64: 1 for free-flyer roots with no joint rows (dof: the rows' dofs, -1 for link
    rows) or armature on their dofs (LCABA eliminates them in link coordinates)."""
    use_a = np.empty(model.nbodies, np.int64)
    free_roots_kernel(model.jtype, model.parent, model.idx_v, model.armature, dof, use_a)
    return use_a


@njit(cache=True)
def free_roots_kernel(jtype, parent, idx_v, armature, dof, use_a):
    """use_a[i] = 1 for the free-flyer roots i (jtype free, no parent) whose six dofs carry no
    joint row (dof ≥ 0 entries of the rows' dofs) and no armature, else 0."""
    has_row = np.zeros(armature.shape[0], np.bool_)
    for r in range(dof.shape[0]):
        if dof[r] >= 0:
            has_row[dof[r]] = True
    for i in range(jtype.shape[0]):
        use_a[i] = 0
        if jtype[i] == FREE and parent[i] < 0:
            use_a[i] = 1
            for k in range(idx_v[i], idx_v[i] + 6):
                if has_row[k] or armature[k] != 0:
                    use_a[i] = 0


class StructureCache:
    """LCABA's structure per constraint graph of one model: eliminations by coupling graph,
    free-root flags by joint rows, their kernel arrays by both (one object per elimination and
    flags, so operators on other joint rows with the same flags share it), at most `capacity`
    of each (the oldest dropped). Owned by whoever builds operators repeatedly and passed as
    ``MatrixFreeDelassus(..., structures=...)``: a simulator's
    `simstep.problem.ProblemAssembler`, the loop-closure projection, a benchmark; an operator
    built without one (and without ``reuse``) makes its own, so nothing is cached behind the
    caller's back."""

    def __init__(self, model, capacity=256):
        self.model, self.capacity = model, int(capacity)
        self._elim, self._roots, self._arrays, self._structs = {}, {}, {}, {}

    def lcaba(self, cs):
        """`LcabaStructure` of the `ConstraintSet` cs (of this cache's model)."""
        if cs.model is not self.model:
            raise ValueError("the constraint set was built for another model")
        key = (cs.graph_key()[1], cs.joint_dofs_key())
        hit = self._structs.get(key)
        if hit is None:
            model, pairs, dof = self.model, cs.coupling_pairs(), cs.dof
            el = self._get(self._elim, key[0], lambda: elimination_order_fast(model.parent, model.nvs, pairs))
            use_a = self._get(self._roots, key[1], lambda: free_roots(model, dof))
            # one kernel-arrays object per elimination and free-root flags (whatever joint rows gave them)
            elk = self._get(self._arrays, (key[0], use_a.tobytes()), lambda: EliminationArrays(
                use_a, el.order, el.par, el.nb_ptr, el.nb_node, el.nb_slot, el.nb_tr, el.pair_ptr, el.pair_slot,
                el.pair_tr))
            hit = self._get(self._structs, key, lambda: (el, elk.use_a, elk))
        return LcabaStructure(hit[0], cs.cb_slot, hit[1], hit[2])

    def _get(self, table, key, make):
        value = table.get(key)
        if value is None:
            if len(table) >= self.capacity:
                table.pop(next(iter(table)))
            value = table[key] = make()
        return value

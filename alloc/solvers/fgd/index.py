"""Incremental per-pod-kind index of node scores (the fast path of the online engine).

Placing one pod changes one node, so a policy's node scores for a given pod
kind (a pod's ``c, mem, k, m, types``: everything its score and feasibility
depend on) change only on the nodes changed since that kind last arrived.
`ScoreIndex` keeps, per pod kind, one integer per node and a maximum
(or a count) per block of ``B`` consecutive nodes, and brings a kind up to
date from the state's change log when the kind arrives.  A query is then an
argmax over ``N / B`` block maxima and one block, so the cost of a pod is
``O(changes + N / B + B)`` instead of ``O(N)``.

Value of node n for pod kind p (deterministic policies):

```python
v(n) = (score_p(n) + OFF) * SH + (SH - 1 - pos(n))   if n is feasible for p
     = -1                                           otherwise
```

with ``pos(n)`` the node's position in ascending (rank, index) order, so the
largest ``v`` is the highest score with ties to the smallest rank, exactly the
rule of `alloc.solvers.fgd.engine.ClusterState.pick`.  Nodes may be
split into *groups* (contiguous ranges of blocks, each sorted by rank) so that
a query can be restricted to some groups.  For the random policy the value is
1 for a feasible node (positions in node order) and a block keeps the count,
so the j-th feasible node in index order is found by a cumulative sum.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

OFF = 1 << 24          # score offset: scores are small integers, >= -OFF
SH = 1 << 24           # tie-break field: more than any node count
FEW = 32               # changed-node batches up to this size take `entry`'s ``few`` path


@dataclass
class Entry:
    """One pod kind's values (blocks x B), block maxima or counts, the GPU
    chosen per node (shared pods of per-GPU policies), and the change-log
    position it is up to date with."""
    val: np.ndarray
    agg: np.ndarray
    gpu: np.ndarray | None
    seen: int
    flat: np.ndarray = field(init=False)

    def __post_init__(self):
        self.flat = self.val.reshape(-1)


class ScoreIndex:
    """Per pod kind node values over one `ClusterState` (see the module notes).

    Parameters
    ----------
    state : ClusterState
        The state indexed; its change log (``log``, ``nlog``) says which nodes
        changed.
    count : bool
        False: values are scores (argmax queries, positions by rank).  True:
        values are feasibility (counting queries, positions by node index).
    groups : numpy.ndarray, optional
        (N,) group id per node (0..G-1); each group gets its own blocks.
    dedupe : int
        Changed-node batches longer than this are made unique first (worth it
        when scoring a node costs much more than sorting it).
    """

    def __init__(self, state, *, count: bool = False, groups: np.ndarray | None = None,
                 dedupe: int = 256):
        n = state.N
        self.dedupe = dedupe
        self.state, self.count, self.N = state, count, n
        self.B = B = 32 if n <= 2048 else 64
        order = np.arange(n) if count else np.argsort(state.rank, kind="stable")
        gpos = np.empty(n, dtype=np.int64)
        gpos[order] = np.arange(n)
        gid = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, np.int64)
        ng = int(gid.max()) + 1 if n else 1
        slot = np.empty(n, dtype=np.int64)
        node_at, self.group_blocks, b0 = [], [], 0
        for g in range(ng):
            members = order[gid[order] == g]
            nb = -(-len(members) // B)
            slot[members] = b0 * B + np.arange(len(members))
            pad = np.full(nb * B, -1, dtype=np.int64)
            pad[:len(members)] = members
            node_at.append(pad)
            self.group_blocks.append(np.arange(b0, b0 + nb))
            b0 += nb
        self.nblocks = b0
        self.slot = slot
        self.node_at = np.concatenate(node_at) if node_at else np.zeros(0, np.int64)
        self.tie = SH - 1 - gpos
        # the same as Python lists, for the few-node path (`entry`'s ``few``)
        self.slot_l, self.tie_l = slot.tolist(), self.tie.tolist()
        self.all = np.arange(n)
        # least recently used kinds are dropped beyond a memory budget (about
        # 2^26 values); a dropped kind that arrives again is rescored in full
        self.max_entries = max(8, (1 << 26) // max(1, self.nblocks * B))
        self.entries: OrderedDict = OrderedDict()

    # ------------------------------------------------------------ updates
    def entry(self, key, values, per_gpu: bool = False, few=None) -> Entry:
        """The up-to-date entry of pod kind ``key``; ``values(idx)`` gives
        (value per node of ``idx``, chosen GPU per node or None).

        ``few(nodes)``, when given, gives the same as two Python lists for a
        list of distinct nodes; it is used when at most `FEW` nodes changed
        since the kind last arrived (a pod's usual case in a loop, where the
        per-call cost of numpy on a handful of nodes dominates)."""
        st = self.state
        ent = self.entries.get(key)
        if ent is None:
            ent = Entry(np.full((max(1, self.nblocks), self.B), -1 if not self.count else 0,
                                dtype=np.int64),
                        np.full(max(1, self.nblocks), -1 if not self.count else 0,
                                dtype=np.int64),
                        np.zeros(max(1, self.nblocks) * self.B, dtype=np.int64)
                        if per_gpu else None, st.nlog)
            self.entries[key] = ent
            if len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)
            self._fill(ent, values, self.all, full=True)
            return ent
        self.entries.move_to_end(key)
        lo, hi = ent.seen, st.nlog
        if hi > lo:
            ent.seen = hi
            if hi - lo >= self.N:
                self._fill(ent, values, self.all, full=True)
            else:
                idx = st.log[lo:hi]
                if few is not None and hi - lo <= FEW and not self.count:
                    self._fill_few(ent, few, list(dict.fromkeys(idx.tolist())))
                    return ent
                if hi - lo > self.dedupe:
                    idx = np.unique(idx)
                self._fill(ent, values, idx)
        return ent

    def _fill(self, ent: Entry, values, idx: np.ndarray, full: bool = False) -> None:
        if not len(idx):
            return
        v, gpu = values(idx)
        s = self.slot[idx]
        ent.flat[s] = v
        if gpu is not None and ent.gpu is not None:
            ent.gpu[s] = gpu
        if full:
            ent.agg[:] = ent.val.sum(axis=1) if self.count else ent.val.max(axis=1)
            return
        b = s // self.B
        if len(b) > 256:
            b = np.unique(b)
        ent.agg[b] = ent.val[b].sum(axis=1) if self.count else ent.val[b].max(axis=1)

    def _fill_few(self, ent: Entry, few, nodes: list) -> None:
        """`_fill` of a few distinct nodes from Python lists: each value is
        written, and its block's maximum raised to it or, when the node held
        that maximum and its value fell, taken again over the block."""
        vals, gpus = few(nodes)
        flat, agg, val, gpu, B, slot = ent.flat, ent.agg, ent.val, ent.gpu, self.B, self.slot_l
        for n, v, g in zip(nodes, vals, gpus):
            s = slot[n]
            old = int(flat[s])
            flat[s] = v
            if gpu is not None and g is not None:
                gpu[s] = g
            b = s // B
            top = int(agg[b])
            if v >= top:
                agg[b] = v
            elif old == top:
                agg[b] = val[b].max()

    def encode(self, score: np.ndarray, feas: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Values of nodes ``idx`` from their scores and feasibility."""
        return np.where(feas, (score + OFF) * SH + self.tie[idx], -1)

    # ------------------------------------------------------------ queries
    def best(self, ent: Entry, groups=None):
        """(node, slot) of the largest value (None when every value is -1),
        over all nodes or over the listed groups."""
        agg = ent.agg
        if groups is None:
            b = int(agg.argmax())
        else:
            blocks = np.concatenate([self.group_blocks[g] for g in groups])
            if not len(blocks):
                return None
            b = int(blocks[int(agg[blocks].argmax())])
        if agg[b] < 0:
            return None
        s = b * self.B + int(ent.val[b].argmax())
        return int(self.node_at[s]), s

    def total(self, ent: Entry) -> int:
        """Number of feasible nodes (counting index)."""
        return int(ent.agg.sum())

    def nth(self, ent: Entry, j: int) -> int:
        """The j-th feasible node (0-based) in node-index order (counting index)."""
        cs = np.cumsum(ent.agg)
        b = int(np.searchsorted(cs, j, side="right"))
        k = j - (int(cs[b - 1]) if b else 0)
        s = b * self.B + int(np.flatnonzero(ent.val[b])[k])
        return int(self.node_at[s])


__all__ = ["ScoreIndex", "Entry", "OFF", "SH", "FEW"]

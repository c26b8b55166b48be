r"""Kueue's topology-aware descent over the operator's levels, on the greedy
state.

The domain tree of a problem has the levels above the servers (outermost
first) and then the servers themselves; each level's node ids are
`alloc.arrays.server_domain_ids` (a server's own index at ``server``).

**The descent** (`descend`), as Kueue's topology-aware scheduling places a
pod set (its ``BestFit`` profile, the default; kubernetes-sigs/kueue,
``pkg/cache/tas_flavor_snapshot.go``), with one pod per GPU:

1. *Counts.*  Every server's usable GPUs $u_s$ -- its whole free GPUs of a
   type the job allows, as many as its free CPU and memory cover at the
   job's per-GPU share $\lceil c/n \rceil$, $\lceil m/n \rceil$ -- summed up
   the tree: a domain's count is the sum over its servers.
2. *Fit level.*  At the requested level the domains sorted by count, most
   first (ties: lowest id).  If the first holds all ``n``, take the
   *best fit*: the domain with the smallest count that still holds ``n``.
   Otherwise a required request fails; a preferred one looks one level up;
   at the outermost level (or for a request without a level) several
   domains are taken, most first, the last one the best fit for what is
   left.
3. *Descent.*  From the chosen domains down to the servers, level by level:
   their children sorted by count, most first, taken greedily, the last one
   the best fit for what is left -- the fewest domains at every level.

`tas_assign` places a job on the greedy state by the descent (the ``tas``
family's solvers, and the state's spread of a job with a preferred level);
`preference_levels` lists the levels a preferred job may be spread within.
"""
from __future__ import annotations

import numpy as np

from ...arrays import outer_levels
from ...model import CLUSTER
from ...problem import Assign, Problem
from ...topology import is_outer


class DomainTree:
    """The levels above the servers and the servers, with each node's parent
    (see the module notes); cached on the problem's cluster arrays."""

    def __init__(self, p: Problem):
        arr = p.arrays
        self.levels = list(outer_levels(p.levels)) + ["server"]
        self.srv = [arr.srv_domain[lv] for lv in self.levels[:-1]] + [np.arange(p.S)]
        self.size = [int(d.max()) + 1 if len(d) else 0 for d in self.srv]
        #: parent[i][d]: the node of level i-1 above node d of level i
        self.parent: list[np.ndarray | None] = [None]
        for i in range(1, len(self.levels)):
            par = np.zeros(self.size[i], dtype=np.int64)
            par[self.srv[i]] = self.srv[i - 1]
            self.parent.append(par)

    def index(self, level: str) -> int:
        """The position of ``level`` (a level above the servers, or ``server``)."""
        return self.levels.index(level)


def domain_tree(p: Problem) -> DomainTree:
    """The `DomainTree` of the problem's cluster (cached)."""
    arr = p.arrays
    t = arr.__dict__.get("_domain_tree")
    if t is None:
        t = arr.__dict__["_domain_tree"] = DomainTree(p)
    return t


def _best_fit(cnt: np.ndarray, ids: np.ndarray, need: int) -> int | None:
    """Of the nodes ``ids``, the one with the smallest count that still
    holds ``need`` (the lowest id among equals), or None."""
    c = cnt[ids]
    ok = c >= need
    if not ok.any():
        return None
    sel, cs = ids[ok], c[ok]
    return int(sel[np.lexsort((sel, cs))[0]])


def _sorted(ids: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """The nodes ``ids`` with a positive count, most first (then lowest id)."""
    c = cnt[ids]
    keep = c > 0
    ids, c = ids[keep], c[keep]
    return ids[np.lexsort((ids, -c))]


def _take(order: np.ndarray, cnt: np.ndarray, need: int) -> dict[int, int] | None:
    """Kueue's ``updateCountsToMinimum``: nodes of ``order`` (most first)
    taken in turn, the last one the best fit for what is left;
    ``{node: count}``, or None when they hold too few."""
    out: dict[int, int] = {}
    left = need
    for k in range(len(order)):
        d = int(order[k])
        have = int(cnt[d])
        if have >= left:
            best = _best_fit(cnt, order[k:], left)
            assert best is not None
            out[best] = left
            return out
        out[d] = have
        left -= have
    return None


def descend(tree: DomainTree, u: np.ndarray, n: int, level: str | None,
            required: bool, top: int | None = None) -> dict[int, int] | None:
    """GPUs per server for ``n`` GPUs by the descent (see the module notes):
    ``level`` the requested level (None: no level -- servers taken most
    first), ``required`` whether one node of it must hold them all; a
    preferred request climbs up to level index ``top`` (None: to the
    outermost level, then several of its nodes) and no further."""
    counts: list[np.ndarray | None] = [None] * len(tree.levels)

    def count(i: int) -> np.ndarray:
        c = counts[i]
        if c is None:
            c = counts[i] = u.astype(np.int64) if i == len(tree.levels) - 1 else \
                np.bincount(tree.srv[i], weights=u, minlength=tree.size[i]).astype(np.int64)
        return c
    if level is None:
        i = len(tree.levels) - 1
        one = _best_fit(count(i), np.arange(tree.size[i]), n)
        chosen = {one: n} if one is not None else \
            _take(_sorted(np.arange(tree.size[i]), count(i)), count(i), n)
    else:
        i = tree.index(level)
        while True:
            one = _best_fit(count(i), np.arange(tree.size[i]), n)
            if one is not None:
                chosen = {one: n}
                break
            if required or (top is not None and i <= top):
                return None
            if i == 0:
                chosen = _take(_sorted(np.arange(tree.size[i]), count(i)), count(i), n)
                break
            i -= 1
    if chosen is None:
        return None
    while i + 1 < len(tree.levels):
        par = tree.parent[i + 1]
        assert par is not None
        kids = np.flatnonzero(np.isin(par, list(chosen)))
        i += 1
        chosen = _take(_sorted(kids, count(i)), count(i), n)
        if chosen is None:
            return None
    return chosen


def usable(st, j: int, option: int = 0, min_speed: float | None = None) -> np.ndarray:
    """Per server, job j's usable GPUs on the greedy state ``st`` (see the
    module notes); with ``min_speed``, only on GPU types at least that fast."""
    p = st.p
    job = p.jobs[j]
    opt = p.options[j][option]
    n = max(job.gpus, 1)
    arr = st.arrays()
    ok = allowed_servers(p, j, min_speed)
    pc, pm = -(-opt.cpu // n), -(-opt.mem // n)
    use = arr["whole"].copy()
    if pc:
        use = np.minimum(use, arr["cpu"] // pc)
    if pm:
        use = np.minimum(use, arr["mem"] // pm)
    return np.where(ok, np.maximum(use, 0), 0)


def allowed_servers(p: Problem, j: int, min_speed: float | None = None) -> np.ndarray:
    """Per server: GPUs of a type job j allows (and at least ``min_speed`` fast)."""
    job = p.jobs[j]
    prof = job.profile
    ok_t = np.array([job.allows(t) and (min_speed is None or prof is None
                                        or prof.speed(t) >= min_speed - 1e-12)
                     for t in p.types] + [False], dtype=bool)
    return ok_t[np.where(p.srv_type >= 0, p.srv_type, len(p.types))]


def tas_assign(st, j: int, option: int, level: str | None, required: bool,
               top: int | None = None) -> Assign | None:
    """Job j (whole GPUs) placed by the descent on the greedy state ``st``
    (`descend`'s ``level``, ``required`` and ``top``), or None (nothing
    placed in ``st``)."""
    p = st.p
    job = p.jobs[j]
    n = job.gpus
    per = descend(domain_tree(p), usable(st, j, option), n, level, required, top)
    if per is None:
        return None
    gpus: list[int] = []
    for s, k in sorted(per.items()):
        gpus += st.free_whole(s)[:k]
    if len(gpus) != n:
        return None
    a = p.make_assign(j, gpus, option)
    if all(st.cpu_l[s] >= c for s, c in a.cpu) and all(st.mem_l[s] >= m for s, m in a.mem):
        return a
    return None


def preference_levels(p: Problem, j: int) -> list[str]:
    """The levels job j may be spread within, innermost first: from its
    preferred level (or the innermost level above the servers) up to its
    locality level, or to the whole cluster."""
    job = p.jobs[j]
    outer = list(reversed(outer_levels(p.levels)))
    start = job.preferred if is_outer(job.preferred) else None
    lv = outer[outer.index(start):] if start in outer else outer
    if is_outer(job.locality):
        return lv[:lv.index(job.locality) + 1] if job.locality in lv else [job.locality]
    return lv + [CLUSTER]


__all__ = ["DomainTree", "allowed_servers", "descend", "domain_tree", "preference_levels",
           "tas_assign", "usable"]

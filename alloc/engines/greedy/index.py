r"""Indexed free capacity for the greedy heuristics: which servers can take a
job, in the order a placement rule prefers them, without a scan of every
server per job.

Layout.  Servers with the same capacities, GPU type and shape (GPUs, sockets,
switches per socket) form a *class* (`Layout`, built once per cluster).

Shapes.  What decides whether server ``s`` can take job ``j`` at option ``o``
alone is the job's *shape* (`Shape`): whole GPUs ``k``, share ``q``
(milli per GPU), CPU ``c``, memory ``m``, the inner locality level ``l``
(socket or switch, when declared) and the classes of the GPU types it may use.
With the server's free CPU ``C_s``, memory ``M_s``, whole free GPUs ``W_s``,
largest free share ``Q_s`` and whole free GPUs in its fullest node of level
``l``, ``W^l_s``, the test is

$$
\begin{aligned}
C_s \ge c \;\wedge\; M_s \ge m \;\wedge\;
\begin{cases} \text{true} & k = 0\\ Q_s \ge q & q < 1000\\
              W_s \ge k \;\wedge\; W^l_s \ge k & \text{otherwise.}\end{cases}
\end{aligned}
$$

Rules.  A `Finder` keeps, for one shape, the servers that pass the test
ordered by one rule's key (ties: lowest server index):

* ``first`` -- the server index (first fit);
* ``gpus`` -- the free milli-GPU $\sum_g f_g$ (fewest free GPUs first,
  Synergy's consolidation);
* ``whole`` -- the whole free GPUs $W_s$ (Synergy TUNE's reclaim targets);
* ``fit`` -- within one class, the free capacity
  $F_s = C_s/C + M_s/M + \sum_g f_g / (1000\,G)$ scaled to an integer
  (the best-fit leftover is $F_s$ minus the job's own use, a constant
  of the class, so the class minimum of $F_s$ is the best fit there;
  classes are compared exactly, see `leftover`).

A finder is a binary heap of integer keys ``key * S + s`` with lazy deletion,
built in one vectorised pass over the allowed classes.  Every change of a
server (a placement or a removal) is appended to the state's change log; a
finder catches up on the log before it answers, re-testing and re-keying
only the servers changed since its last query: a placement costs ``O(1)``
plus one log entry, and each finder in use re-tests it once
(``O(log S)``), when it is next asked.  ``first`` finders catch up only on
capacity *increases*: a placement never makes a server better for them, so a
server that stopped passing the test is dropped when it surfaces.

One pass.  A shape of a cluster with many server classes (servers drawn
from many CPU, memory and GPU sizes) would need one ``fit`` finder per
class, and jobs of many CPU and memory requests bring shapes that come
once: `fit_tops` answers what those finders would, every class at once, in
one vectorised pass over the allowed servers (`alloc.engines.greedy.rules`
chooses between them).

Spread.  A `SpreadFinder` orders, for one shape, the servers by the
whole GPUs they can give a spread job (most first, then index), kept the same
way; a spread takes servers off its top until the job has its GPUs.
"""
from __future__ import annotations

from fractions import Fraction
from heapq import heappop, heappush
from typing import Any, cast

import numpy as np

from ...model import MILLI
from ...problem import Problem

INNER_LEVELS = ("switch", "socket")  # innermost first

FIRST, GPUS, WHOLE, FIT = "first", "gpus", "whole", "fit"
RULES = (FIRST, GPUS, WHOLE, FIT)


class Layout:
    """Static per-cluster arrays the index works on (see the module notes).

    Attributes
    ----------
    S : int
        Servers.
    first, ngpu, cls : list of int
        Per server: global index of its first GPU, its GPU count, its class.
    members : list of list of int
        Servers of each class, ascending.
    cap : list of tuple
        Per class ``(C, M, G, type index)`` (type index -1: no GPUs).
    weights : list of tuple of int
        Per class the integer weights ``(a, b, g)`` of $F_s$ times the
        denominator ``D`` (``F_s D = a C_s + b M_s + g \\sum f``) and ``D``.
    levels : tuple of str
        Inner levels the cluster declares, innermost first.
    groups : dict
        ``groups[level][class]``: local GPU positions of each node of that
        level in a server of the class.
    """

    def __init__(self, problem: Problem):
        p = problem
        srv = p.cluster.servers
        self.S = p.S
        self.first = [int(x) for x in p.gpu_first]
        self.ngpu = [int(x) for x in p.srv_gpus]
        self.gpu_server = [int(x) for x in p.gpu_server]
        self.levels = tuple(lv for lv in INNER_LEVELS if lv in p.levels)
        keys: dict[tuple, int] = {}
        self.cls = []
        for s, sv in enumerate(srv):
            key = (sv.cpu, sv.mem, sv.gpus, int(p.srv_type[s]), sv.sockets,
                   sv.switches_per_socket)
            self.cls.append(keys.setdefault(key, len(keys)))
        self.members: list[list[int]] = [[] for _ in keys]
        for s, c in enumerate(self.cls):
            self.members[c].append(s)
        self.cap = [(k[0], k[1], k[2], k[3]) for k in keys]
        self.weights = []
        for C, M, G, _ in self.cap:
            C1, M1 = max(C, 1), max(M, 1)
            if G:
                self.weights.append((M1 * MILLI * G, C1 * MILLI * G, C1 * M1, C1 * M1 * MILLI * G))
            else:
                self.weights.append((M1, C1, 0, C1 * M1))
        self.groups: dict[str, list[list[list[int]]]] = {}
        for level in self.levels:
            dom = p.domain[level]
            per = []
            for members in self.members:
                s = members[0]
                a = self.first[s]
                ids: dict[int, list[int]] = {}
                for k in range(self.ngpu[s]):
                    ids.setdefault(int(dom[a + k]), []).append(k)
                per.append(list(ids.values()))
            self.groups[level] = per
        self.member_arrays = [np.array(m, dtype=np.int64) for m in self.members]
        self._cls_array: np.ndarray | None = None
        self._allowed: dict[tuple, np.ndarray] = {}
        #: per class ``(a, b, g)`` of `weights` as int64 arrays, for `fit_tops`;
        #: None when some class's keys could pass int64
        tops = [(a * C + b * M + g * MILLI * G + 1) * self.S
                for (a, b, g, _), (C, M, G, _) in zip(self.weights, self.cap)]
        self.fit_w = None if any(t >= 2 ** 62 for t in tops) else tuple(
            np.array([w[i] for w in self.weights], dtype=np.int64) for i in range(3))

    def allowed(self, ok: tuple) -> np.ndarray:
        """The servers (ascending) of the classes ``ok`` allows (one flag per
        class), cached per ``ok``."""
        idx = self._allowed.get(ok)
        if idx is None:
            idx = self._allowed[ok] = np.flatnonzero(np.asarray(ok, dtype=bool)[self.cls_array()])
        return idx

    def cls_array(self) -> np.ndarray:
        """Each server's class as a numpy array (built on first use)."""
        if self._cls_array is None:
            self._cls_array = np.asarray(self.cls, dtype=np.int64)
        return self._cls_array


def layout(problem: Problem) -> Layout:
    """The `Layout` of the problem's cluster (cached with its arrays)."""
    arr = problem.arrays
    lay = arr.__dict__.get("_heuristic_layout")
    if lay is None:
        lay = Layout(problem)
        arr.__dict__["_heuristic_layout"] = lay
    return lay


class Shape:
    """What a server must have free to take one job at one option alone (see
    the module notes).  ``ok`` lists per class whether its GPU type is allowed."""
    __slots__ = ("k", "q", "c", "m", "loc", "ok", "classes", "key", "finders", "scans")

    def __init__(self, k: int, q: int, c: int, m: int, loc: str | None, ok: tuple,
                 key: tuple):
        self.k, self.q, self.c, self.m, self.loc = k, q, c, m, loc
        self.ok = ok
        self.classes = tuple(i for i, x in enumerate(ok) if x)
        self.key = key
        #: finders of this shape by (rule, class): a `Finder`, or under
        #: ``("spread", None)`` a `SpreadFinder`
        self.finders: dict[tuple, Any] = {}
        #: the one-pass scans (`fit_tops`) made for it instead of finders
        self.scans = 0


def passing(st, sh: Shape, idx: np.ndarray) -> np.ndarray:
    """The servers of ``idx`` (an int64 array) passing shape ``sh``'s test
    now (see the module notes), as an array."""
    arrs = st.arrays()
    mask = (arrs["cpu"][idx] >= sh.c) & (arrs["mem"][idx] >= sh.m)
    if sh.k:
        if sh.q < MILLI:
            mask &= arrs["share"][idx] >= sh.q
        else:
            mask &= arrs["whole"][idx] >= sh.k
            if sh.loc is not None:
                mask &= arrs[sh.loc][idx] >= sh.k
    return idx[mask]


def _fit_free(st, sel: np.ndarray) -> np.ndarray:
    """The ``fit`` rule's free capacity $F_s D$ of the servers ``sel`` (its
    key without the index part; the layout's ``fit_w`` must be set)."""
    arrs, lay = st.arrays(), st.lay
    c = lay.cls_array()[sel]
    wa, wb, wg = lay.fit_w
    return wa[c] * arrs["cpu"][sel] + wb[c] * arrs["mem"][sel] + wg[c] * arrs["gsum"][sel]


def fit_tops(st, sh: Shape) -> list[tuple[int, int, int]] | None:
    """What the ``fit`` finders of shape ``sh`` would answer, for every
    allowed class at once, in one vectorised pass over the servers and
    without building them: ``[(F_s D, server, class)]``, the class's least
    key (ties: lowest index), in class order.  None when the layout's keys
    could pass int64 (the finders then use Python integers).

    A finder pays for its build only when its shape comes back: a shape
    placed once (jobs of distinct CPU and memory, say) on a cluster of many
    classes would build one finder per class for one query."""
    lay = st.lay
    if lay.fit_w is None:
        return None
    cls = lay.cls_array()
    sel = passing(st, sh, lay.allowed(sh.ok))
    if not len(sel):
        return []
    c = cls[sel]
    free = _fit_free(st, sel)
    order = np.lexsort((sel, free, c))
    cs = c[order]
    pick = order[np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])]
    return list(zip(free[pick].tolist(), sel[pick].tolist(), c[pick].tolist()))


class Finder:
    """Servers passing one shape's test, ordered by one rule (see the module
    notes); ``cls`` restricts it to one class (rule ``fit``), ``flag`` (a
    per-server list kept by the caller, changed only where the state logs a
    change) to the servers with ``flag[s] > 0``."""
    __slots__ = ("st", "shape", "rule", "cls", "flag", "heap", "live", "pos", "log",
                 "whole_test")

    def __init__(self, st, shape: Shape, rule: str, cls: int | None = None,
                 flag: list | None = None):
        self.st, self.shape, self.rule, self.cls, self.flag = st, shape, rule, cls, flag
        #: the change log it catches up from (the state's, cleared in place)
        self.log = st.rlog if rule == FIRST else st.log
        #: a ``gpus`` or ``whole`` finder whose test is CPU, memory and whole
        #: GPUs only: True when every class is allowed, else False; None otherwise
        simple = rule in (GPUS, WHOLE) and cls is None and flag is None and \
            shape.loc is None and (not shape.k or shape.q >= MILLI)
        self.whole_test = all(shape.ok) if simple else None
        self.build()

    # ------------------------------------------------------------- keys
    def key(self, s: int) -> int:
        """The rule's key of server s (its index in the low digits)."""
        st = self.st
        if self.rule == FIRST:
            return s
        if self.rule == GPUS:
            return st.gsum[s] * st.S + s
        if self.rule == WHOLE:
            return st.whole[s] * st.S + s
        a, b, g, _ = st.lay.weights[st.lay.cls[s]]
        return (a * st.cpu_l[s] + b * st.mem_l[s] + g * st.gsum[s]) * st.S + s

    def build(self) -> None:
        """Every server passing the test, keyed (a sorted list is a heap), in
        one vectorised pass over the allowed servers."""
        st, sh = self.st, self.shape
        lay = st.lay
        idx = lay.member_arrays[self.cls] if self.cls is not None else lay.allowed(sh.ok)
        sel = passing(st, sh, idx)
        if self.flag is not None:
            sel = sel[np.asarray(self.flag, dtype=np.int64)[sel] > 0]
        arrs = st.arrays()
        if self.rule == FIRST:
            keys = sel
        elif self.rule in (GPUS, WHOLE):
            keys = arrs["gsum" if self.rule == GPUS else "whole"][sel] * st.S + sel
        elif lay.fit_w is not None:
            keys = _fit_free(st, sel) * st.S + sel
        else:  # beyond int64: exact Python integers
            keys = np.array([self.key(int(s)) for s in sel], dtype=object)
        heap = sorted(keys.tolist())
        self.heap = heap
        S = st.S
        self.live = set(heap) if self.rule == FIRST else {k % S: k for k in heap}
        self.pos = len(self.log)

    # ------------------------------------------------------------- query
    def catch_up(self) -> None:
        """Re-test and re-key the servers changed since the last query."""
        log = self.log
        n, pos = len(log), self.pos
        if pos == n:
            return
        if not 0 <= pos <= n:  # the logs were dropped
            self.build()
            return
        chg = log[pos:n]
        self.pos = n
        if n - pos > 8:
            chg = set(chg)
            if len(chg) > len(self.live) + self.st.S // 8:
                self.build()
                return
        if self.whole_test is None:
            self._catch_up(chg)
            return
        st, sh = self.st, self.shape
        heap, live = self.heap, cast("dict[int, int]", self.live)   # rule gpus or whole
        c, m, k, S = sh.c, sh.m, sh.k, st.S
        cpu, mem, whole = st.cpu_l, st.mem_l, st.whole
        src = st.gsum if self.rule == GPUS else whole
        if not self.whole_test:  # servers of a class not allowed are never held
            ok, cls = sh.ok, st.lay.cls
            chg = [t for t in chg if ok[cls[t]]]
        for t in chg:
            if cpu[t] >= c and mem[t] >= m and whole[t] >= k:
                key = src[t] * S + t
                if live.get(t) != key:
                    live[t] = key
                    heappush(heap, key)
            else:
                live.pop(t, None)

    def _catch_up(self, chg) -> None:
        """`catch_up` over the changed servers ``chg``, any rule and test."""
        st = self.st
        heap, cls = self.heap, st.lay.cls
        live_set = cast("set[int]", self.live)          # rule first
        live = cast("dict[int, int]", self.live)        # the other rules
        sh, one, flag = self.shape, self.cls, self.flag
        ok, c, m, k, q, loc = sh.ok, sh.c, sh.m, sh.k, sh.q, sh.loc
        cpu, mem, whole, share = st.cpu_l, st.mem_l, st.whole, st.share
        dom = st.dmax[loc] if loc is not None else None
        rule = self.rule
        S, gsum = st.S, st.gsum
        wa, wb, wg, _ = st.lay.weights[one] if rule == FIT else (0, 0, 1, 0)
        if rule == WHOLE:
            gsum = whole
        for t in chg:
            ct = cls[t]
            if (ok[ct] if one is None else ct == one) and cpu[t] >= c and mem[t] >= m and (
                    not k or (share[t] >= q if q < MILLI else
                              (whole[t] >= k and (dom is None or dom[t] >= k)))) and (
                    flag is None or flag[t] > 0):
                if rule == FIRST:
                    if t not in live_set:
                        live_set.add(t)
                        heappush(heap, t)
                    continue
                key = (wa * cpu[t] + wb * mem[t] + wg * gsum[t]) * S + t
                if live.get(t) != key:
                    live[t] = key
                    heappush(heap, key)
            elif rule != FIRST:
                live.pop(t, None)

    def top(self) -> int | None:
        """The preferred server passing the test, or None."""
        if self.pos != len(self.log):
            self.catch_up()
        heap = self.heap
        if self.rule == FIRST:
            live_set = cast("set[int]", self.live)
            passes, sh = self.st.passes, self.shape
            while heap:
                s = heap[0]
                if s in live_set:
                    if passes(sh, s) and (self.flag is None or self.flag[s] > 0):
                        return s
                    live_set.discard(s)
                heappop(heap)
            return None
        live = cast("dict[int, int]", self.live)
        S = self.st.S
        while heap:
            k = heap[0]
            s = k % S
            if live.get(s) == k:
                return s
            heappop(heap)
        return None

    def ordered(self):
        """The servers passing the test in the rule's order, lazily: entries
        are taken off the heap while the caller iterates and put back when
        it stops (the caller must not change the state in ways that reorder
        the servers it has not reached yet)."""
        taken = []
        try:
            while True:
                s = self.top()
                if s is None:
                    return
                taken.append(heappop(self.heap))
                yield s
        finally:
            for k in taken:
                heappush(self.heap, k)


class SpreadFinder:
    r"""Servers that can give a spread job of one shape some GPUs, most
    *usable* GPUs first, then lowest index.  A server's usable GPUs are
    $\min(W_s, \lfloor C_s / \lceil c/k \rceil \rfloor,
    \lfloor M_s / \lceil m/k \rceil \rfloor)$ (its whole free GPUs, as many as
    its free CPU and memory cover at the job's per-GPU share); servers with
    no free CPU or memory are left out.  Kept like `Finder`."""
    __slots__ = ("st", "shape", "pc", "pm", "top_g", "heap", "live", "pos")

    def __init__(self, st, shape: Shape):
        self.st, self.shape = st, shape
        self.pc, self.pm = -(-shape.c // shape.k), -(-shape.m // shape.k)
        self.top_g = max((cap[2] for cap in st.lay.cap), default=0) + 1
        self.build()

    def build(self) -> None:
        """Every server of an allowed class with usable GPUs ``u > 0``, keyed
        ``(G + 1 - u) * S + s`` with ``G`` the most GPUs of any server class
        (a sorted list is a heap); the finder is then up to date with the log."""
        st, sh = self.st, self.shape
        arrs = st.arrays()
        lay = st.lay
        idx = lay.allowed(tuple(ok and cap[2] > 0 for ok, cap in zip(sh.ok, lay.cap)))
        cpu, mem, u = arrs["cpu"][idx], arrs["mem"][idx], arrs["whole"][idx]
        if self.pc:
            u = np.minimum(u, cpu // self.pc)
        if self.pm:
            u = np.minimum(u, mem // self.pm)
        mask = (cpu > 0) & (mem > 0) & (u > 0)
        keys = (self.top_g - u[mask]) * st.S + idx[mask]
        heap = sorted(keys.tolist())
        self.heap = heap
        self.live = {k % st.S: k for k in heap}
        self.pos = len(st.log)

    def catch_up(self) -> None:
        """Re-key the servers changed since the last query (dropping those with
        no usable GPU left); rebuild instead when the log was dropped or more
        servers changed than the heap holds plus one eighth of the cluster."""
        st = self.st
        log = st.log
        n = len(log)
        if self.pos == n:
            return
        if not 0 <= self.pos <= n:  # the logs were dropped
            self.build()
            return
        chg = set(log[self.pos:n])
        self.pos = n
        if len(chg) > len(self.live) + st.S // 8:
            self.build()
            return
        ok, cls = self.shape.ok, st.lay.cls
        cpu, mem, whole = st.cpu_l, st.mem_l, st.whole
        pc, pm, S, top, live, heap = self.pc, self.pm, st.S, self.top_g, self.live, self.heap
        for t in chg:
            if ok[cls[t]] and cpu[t] > 0 and mem[t] > 0:
                u = whole[t]
                if pc:
                    u = min(u, cpu[t] // pc)
                if pm:
                    u = min(u, mem[t] // pm)
                if u > 0:
                    k = (top - u) * S + t
                    if live.get(t) != k:
                        live[t] = k
                        heappush(heap, k)
                    continue
            live.pop(t, None)

    def ordered(self):
        """``(server, usable GPUs)`` in order, lazily (the state must not
        change while the caller iterates; entries are put back after)."""
        self.catch_up()
        heap, live, S, top = self.heap, self.live, self.st.S, self.top_g
        taken = []
        try:
            while heap:
                k = heap[0]
                s = k % S
                if live.get(s) != k:
                    heappop(heap)
                    continue
                taken.append(heappop(heap))
                yield s, top - k // S
        finally:
            for k in taken:
                heappush(heap, k)


def leftover(lay: Layout, s: int, free_key: int, shape: Shape) -> Fraction:
    r"""The best-fit leftover of server ``s`` after a job of ``shape``:
    $\sum_r (\mathrm{free}_r - \mathrm{use}_r) / \mathrm{cap}_r$, exact,
    from the server's integer free key (``fit`` rule, without the index part)."""
    c = lay.cls[s]
    a, b, g, D = lay.weights[c]
    use = a * shape.c + b * shape.m + g * shape.k * shape.q
    return Fraction(free_key - use, D)


__all__ = ["FIRST", "FIT", "Finder", "GPUS", "INNER_LEVELS", "Layout", "RULES", "Shape",
           "SpreadFinder", "WHOLE", "fit_tops", "layout", "leftover", "passing"]

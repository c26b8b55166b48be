r"""The exact goodput model: configurations per job, patterns per server.

A job's options are to wait, to *keep* exactly its current placement (a
running job) or to take a *configuration* $c = (t, N, K)$: ``K`` GPUs of type
``t`` on ``N`` distinct servers ($N \le K \le N R_t$).  Each option has a value
(the objective is separable: a sum over jobs, so a power mean of speedups
with $p < 0$ is handled exactly as $\sum_j -(S_j + \epsilon)^p$, and Sia's
rounded $-\min(G^p, 3000)$ likewise).

The placement space is every placement in which a server hosts at most one
job spanning several servers (Pollux's interference avoidance; Sia's
multi-server configurations take whole servers, so its space is inside).
A server's content is then a *pattern*: the size ``d`` of the one
multi-server piece it holds (0: none) and the multiset of single-server jobs'
sizes, summing to what the jobs kept there leave (patterns that leave GPUs
idle are dominated and left out).  With binaries $x_{jc}$ (job ``j`` takes
``c``), $k_j$ (keeps), integers $v_{jtd}$ (pieces of size ``d`` of job ``j``
on type ``t``), $u_{nq}$ (server ``n`` with running jobs has pattern ``q``,
which also says which of its running jobs are kept) and $w_{tp}$ (free
servers of type ``t`` with pattern ``p``), the integer program is

$$
\max \sum_j \Big(\sum_c V_{jc} x_{jc} + V^{keep}_j k_j + V^{0}_j
     \big(1 - \sum_c x_{jc} - k_j\big)\Big)
$$

subject to $\sum_c x_{jc} + k_j \le 1$;
$\sum_d v_{jtd} = \sum_{c \in t, N_c \ge 2} N_c x_{jc}$ and
$\sum_d d\,v_{jtd} = \sum_{c \in t, N_c \ge 2} K_c x_{jc}$ (a job's pieces);
$\sum_q u_{nq} = 1$; $\sum_p w_{tp} = F_t$ (free servers);
$\sum_{q \ni j} u_{nq} = k_j$ for each server ``n`` a running job ``j`` holds
(it is kept whole or not at all); and per type ``t`` and size ``s``: single
jobs of size ``s`` at most the slots of size ``s`` of the chosen patterns,
pieces of size ``d`` at most the patterns' pieces of size ``d``.  Slots of
one size are interchangeable and a server holds one piece, so a solution
decodes into servers exactly (a job's pieces land on distinct servers).

It is solved by HiGHS through alloc's kernel with the caller's deadline;
the kernel reports the status and a proven bound.

Examples
--------
>>> from alloc.goodput.patterns import patterns
>>> [p for p in patterns(2)]
[(0, (1, 1)), (0, (2,)), (1, (1,)), (2, ())]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..deadline import Deadline
from ..kernel import LinearModel, solve
from ..model import Status


def partitions(m: int, top: int | None = None) -> list[tuple[int, ...]]:
    """Partitions of ``m`` into parts at most ``top``, parts decreasing."""
    top = m if top is None else top
    if m == 0:
        return [()]
    out = []
    for first in range(min(m, top), 0, -1):
        for rest in partitions(m - first, first):
            out.append((first, *rest))
    return out


@lru_cache(maxsize=64)
def patterns(free: int, piece: bool = True) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Maximal patterns of a server with ``free`` GPUs: ``(d, singles)`` with
    ``d + sum(singles) == free`` (``d = 0`` only when ``piece`` is False)."""
    out = []
    for d in range(0, free + 1 if piece else 1):
        for part in sorted(partitions(free - d)):
            out.append((d, tuple(sorted(part))))
    return tuple(sorted(set(out)))


def prune(configs: np.ndarray, values: np.ndarray) -> np.ndarray:
    r"""Indices of the configurations no other one dominates.

    ``(t, N', K')`` dominates ``(t, N, K)`` when $N' \le N$,
    $N' \le K' \le K N'/N$ and its value is at least as high (strictly, or
    equal and smaller): a placement of ``(N, K)`` holds, on its ``N'``
    largest pieces, at least $K N'/N \ge K'$ GPUs, so ``(N', K')`` fits in
    what it frees and the optimum is unchanged without ``(N, K)``.

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.goodput.patterns import prune
    >>> cfg = np.array([[0, 1, 1], [0, 1, 2], [0, 2, 2], [0, 2, 4]])
    >>> prune(cfg, np.array([1.0, 1.5, 1.2, 1.4])).tolist()   # (1, 2) at 1.5 beats (2, 4)
    [0, 1, 2]
    """
    if len(configs) < 2:
        return np.arange(len(configs))
    t, n, k = configs[:, 0], configs[:, 1], configs[:, 2]
    v = np.asarray(values, dtype=float)
    # d[a, b]: a dominates b
    same_t = t[:, None] == t[None]
    fewer = n[:, None] <= n[None]
    fits = (k[:, None] >= n[:, None]) & (k[:, None] * n[None] <= k[None] * n[:, None])
    better = (v[:, None] > v[None]) | ((v[:, None] == v[None]) &
                                       ((k[:, None] < k[None]) | (n[:, None] < n[None])))
    dom = same_t & fewer & fits & better
    np.fill_diagonal(dom, False)
    return np.flatnonzero(~dom.any(axis=0))


@dataclass(frozen=True)
class TypeNodes:
    """The servers of one GPU type: ``capacity`` GPUs each, global indices ``nodes``."""
    name: str
    capacity: int
    nodes: tuple[int, ...]


@dataclass(frozen=True)
class JobOptions:
    """One job's options: configurations ``(t, N, K)`` (``t`` an index into
    the types) with values, the value of waiting, and for a running job its
    current pieces ``{server: GPUs}`` with the value of keeping them."""
    configs: np.ndarray
    values: np.ndarray
    none: float = 0.0
    keep: tuple[tuple[int, int], ...] | None = None
    keep_value: float = 0.0


@dataclass(frozen=True)
class ExactOutput:
    """The model's answer: per job ``None`` (waits), ``"keep"``, or ``(t,
    {server: GPUs})``; the objective, the proven bound and the status."""
    assign: list
    value: float
    bound: float | None
    status: Status
    stats: dict = field(default_factory=dict)


class _Model:
    """The integer program of the module notes, built part by part."""

    def __init__(self, types: list[TypeNodes], jobs: list[JobOptions]) -> None:
        self.m = LinearModel("goodput", maximize=True)
        self.types = types
        self.jobs = list(jobs)
        self.node_type = {n: ti for ti, tn in enumerate(types) for n in tn.nodes}
        self.const = float(sum(j.none for j in self.jobs))
        self.xs: list[list[int]] = []
        self.ks: list[int | None] = []
        self.pvars: list[dict[tuple[int, int], int]] = []
        self.obj: dict[int, float] = {}
        self.single: dict[tuple[int, int], dict[int, float]] = {}   # (t, s) -> {var: coef}
        self.pieces: dict[tuple[int, int], dict[int, float]] = {}   # (t, d) -> {var: coef}
        self.holders: dict[int, list[tuple[int, int, bool]]] = {}
        self.node_pats: dict[int, list[tuple[int, tuple, tuple]]] = {}
        self.free_pats: dict[int, list[tuple[int, tuple]]] = {}

    def add_jobs(self, required: tuple[int, ...]) -> None:
        """Each job's options, its one-option row and its pieces' rows."""
        m = self.m
        for j, opt in enumerate(self.jobs):
            if len(opt.configs) > 1:
                kept = prune(opt.configs, opt.values)
                if len(kept) < len(opt.configs):
                    opt = self.jobs[j] = JobOptions(opt.configs[kept], opt.values[kept],
                                                    opt.none, opt.keep, opt.keep_value)
            row: dict[int, float] = {}
            vj = []
            multi_rows: dict[int, tuple[dict, dict]] = {}
            for c, cfg in enumerate(opt.configs):
                v = m.add_var(0, 1, integer=True)
                vj.append(v)
                self.obj[v] = float(opt.values[c]) - opt.none
                row[v] = 1.0
                ti, n, k = int(cfg[0]), int(cfg[1]), int(cfg[2])
                if n == 1:
                    self.single.setdefault((ti, k), {})[v] = 1.0
                else:
                    cnt, tot = multi_rows.setdefault(ti, ({}, {}))
                    cnt[v], tot[v] = -float(n), -float(k)
            kv = None
            if opt.keep is not None:
                kv = m.add_var(0, 1, integer=True)
                self.obj[kv] = opt.keep_value - opt.none
                row[kv] = 1.0
            if row:
                m.add_row(row, lo=1.0 if j in required else 0.0, hi=1.0)
            self.xs.append(vj)
            self.ks.append(kv)
            self.pvars.append(self._pieces_of(multi_rows))

    def _pieces_of(self, multi_rows: dict) -> dict[tuple[int, int], int]:
        """A job's pieces per size on each type: their count is its nodes,
        their sizes sum to its GPUs."""
        pj = {}
        for ti, (cnt, tot) in multi_rows.items():
            for d in range(1, self.types[ti].capacity + 1):
                pv = self.m.add_var(0, len(self.types[ti].nodes), integer=True)
                pj[(ti, d)] = pv
                cnt[pv], tot[pv] = 1.0, float(d)
                self.pieces.setdefault((ti, d), {})[pv] = 1.0
            self.m.add_row(cnt, lo=0.0, hi=0.0)
            self.m.add_row(tot, lo=0.0, hi=0.0)
        return pj

    def add_holders(self) -> None:
        """Servers holding running jobs: one pattern per subset kept (or the
        compact rows), a kept job kept on all its servers."""
        m, ks = self.m, self.ks
        for j, opt in enumerate(self.jobs):
            if opt.keep is not None:
                for n, k in opt.keep:
                    self.holders.setdefault(n, []).append((j, k, len(opt.keep) > 1))
        keep_rows: dict[tuple[int, int], dict[int, float]] = {}
        for n, held in self.holders.items():
            ti = self.node_type[n]
            cap = self.types[ti].capacity
            if len(held) > SUBSETS_UP_TO:
                self.node_pats[n] = _compact_node(m, n, ti, cap, held, ks, self.single,
                                                  self.pieces)
                continue
            pats_n, rowsum = [], {}
            for mask in range(1 << len(held)):
                kept = [held[i] for i in range(len(held)) if mask >> i & 1]
                used = sum(c for _, c, _ in kept)
                n_multi = sum(1 for _, _, mu in kept if mu)
                if used > cap or n_multi > 1:
                    continue
                for d, sing in patterns(cap - used, piece=n_multi == 0):
                    u = m.add_var(0, 1, integer=True)
                    rowsum[u] = 1.0
                    pats_n.append((u, tuple(j for j, _, _ in kept), (d, sing)))
                    for j, _, _ in kept:
                        keep_rows.setdefault((j, n), {})[u] = 1.0
                    _supply(self.single, self.pieces, ti, d, sing, u, 1.0)
            m.add_row(rowsum, lo=1.0, hi=1.0)
            self.node_pats[n] = pats_n
        for (j, n), r in keep_rows.items():
            kj = ks[j]
            assert kj is not None
            m.add_row({**r, kj: -1.0}, lo=0.0, hi=0.0)
        for j, opt in enumerate(self.jobs):      # a kept job's servers all appear above
            kj = ks[j]
            if opt.keep is not None and kj is not None:
                for n, _ in opt.keep:
                    if (j, n) not in keep_rows and len(self.holders[n]) <= SUBSETS_UP_TO:
                        m.set_bounds(kj, 0, 0)

    def add_free(self) -> None:
        """Servers holding no running job, per type: how many take each pattern."""
        for ti, tn in enumerate(self.types):
            free = [n for n in tn.nodes if n not in self.holders]
            if not free:
                continue
            rowsum, lst = {}, []
            for d, sing in patterns(tn.capacity):
                w = self.m.add_var(0, len(free), integer=True)
                rowsum[w] = 1.0
                lst.append((w, (d, sing)))
                _supply(self.single, self.pieces, ti, d, sing, w, 1.0)
            self.m.add_row(rowsum, lo=float(len(free)), hi=float(len(free)))
            self.free_pats[ti] = lst

    def finish(self, max_moves: int | None) -> None:
        """Supply of slots and pieces, the move budget, the objective."""
        for srow in list(self.single.values()) + list(self.pieces.values()):
            self.m.add_row(srow, hi=0.0)
        if max_moves is not None:
            keeps = {v: 1.0 for v in self.ks if v is not None}
            if keeps:
                self.m.add_row(keeps, lo=float(len(keeps) - max_moves))
        self.m.set_objective(self.obj, self.const)


def solve_patterns(types: list[TypeNodes], jobs: list[JobOptions], deadline: Deadline, *,
                   engine: str = "highs", seed: int = 0, hint: list | None = None,
                   required: tuple[int, ...] = (), max_moves: int | None = None
                   ) -> ExactOutput:
    """Solve the model of the module notes.

    ``hint`` (per job: None, ``"keep"`` or a configuration index) is a
    feasible start the engine may use; jobs in ``required`` keep or take a
    configuration (never wait); ``max_moves`` caps the running jobs that
    do not keep their placement.
    """
    b = _Model(types, jobs)
    b.add_jobs(required)
    b.add_holders()
    b.add_free()
    b.finish(max_moves)
    m = b.m
    if hint is not None:
        m.hint = _hint(hint, b.xs, b.ks)
    res = solve(m, engine, deadline=deadline, seed=seed)
    stats = {"engine": engine, "vars": m.n, "rows": m.m, **{k: v for k, v in res.stats.items()
                                                            if k in ("wall", "nodes")}}
    if res.x is None:
        return ExactOutput([None] * len(b.jobs), b.const, res.bound, res.status, stats)
    x = np.round(res.x).astype(int)
    assign = _decode(types, b.jobs, x, b.xs, b.ks, b.pvars, b.node_pats, b.free_pats, b.holders)
    value = float(res.objective) if res.objective is not None else m.value(x.tolist())
    return ExactOutput(assign, value, res.bound, res.status, stats)


#: A server holding more running jobs than this gets the compact rows
#: (`_compact_node`) instead of one pattern per subset of them kept.
SUBSETS_UP_TO = 1


def _compact_node(m: LinearModel, n: int, ti: int, cap: int, held: list, ks: list,
                  single: dict, pieces: dict) -> list:
    """A server with several running jobs: one binary per pattern of new
    content (any size), its GPUs plus those of the jobs kept there at most
    the server's; a new multi-server piece only where no kept job spans
    several servers, and at most one such kept job."""
    rowsum: dict[int, float] = {}
    caprow: dict[int, float] = {}
    piece_vars: dict[int, float] = {}
    out = []
    for free in range(cap + 1):
        for d, sing in patterns(free):
            if d + sum(sing) != free:
                continue
            u = m.add_var(0, 1, integer=True)
            rowsum[u] = 1.0
            caprow[u] = float(free)
            if d:
                piece_vars[u] = 1.0
            out.append((u, (), (d, sing)))
            _supply(single, pieces, ti, d, sing, u, 1.0)
    m.add_row(rowsum, lo=1.0, hi=1.0)
    multi = []
    for j, k, mu in held:
        kj = ks[j]
        if kj is None:
            continue
        caprow[kj] = caprow.get(kj, 0.0) + float(k)
        if mu:
            multi.append(kj)
            if piece_vars:
                m.add_row({**piece_vars, kj: 1.0}, hi=1.0)
    m.add_row(caprow, hi=float(cap))
    if len(multi) > 1:
        m.add_row({v: 1.0 for v in multi}, hi=1.0)
    return out


def _supply(single: dict, pieces: dict, t: int, d: int, sing: tuple, var: int, coef: float
            ) -> None:
    if d:
        pieces.setdefault((t, d), {})[var] = pieces.get((t, d), {}).get(var, 0.0) - coef
    for s in set(sing):
        k = sing.count(s)
        single.setdefault((t, s), {})[var] = single.get((t, s), {}).get(var, 0.0) - coef * k


def _hint(hint: list, xs: list, ks: list) -> dict:
    out = {}
    for j, h in enumerate(hint):
        for v in xs[j]:
            out[v] = 0.0
        if ks[j] is not None:
            out[ks[j]] = 1.0 if h == "keep" else 0.0
        if isinstance(h, (int, np.integer)):
            out[xs[j][int(h)]] = 1.0
    return out


def _decode(types, jobs, x, xs, ks, pvars, node_pats, free_pats, holders) -> list:
    """Servers for every job from the chosen patterns (module notes)."""
    J = len(jobs)
    assign: list = [None] * J
    slots: dict[tuple[int, int], list[int]] = {}       # (t, s) -> servers with a slot
    piece_slots: dict[tuple[int, int], list[int]] = {}
    node_type = {n: ti for ti, t in enumerate(types) for n in t.nodes}
    for n, pats in node_pats.items():
        for u, kept, (d, sing) in pats:
            if x[u]:
                t = node_type[n]
                if d:
                    piece_slots.setdefault((t, d), []).append(n)
                for s in sing:
                    slots.setdefault((t, s), []).append(n)
    for ti, lst in free_pats.items():
        free = [n for n in types[ti].nodes if n not in holders]
        pos = 0
        for w, (d, sing) in lst:
            for _ in range(int(x[w])):
                n = free[pos]
                pos += 1
                if d:
                    piece_slots.setdefault((ti, d), []).append(n)
                for s in sing:
                    slots.setdefault((ti, s), []).append(n)
    for j, opt in enumerate(jobs):
        if ks[j] is not None and x[ks[j]]:
            assign[j] = "keep"
            continue
        for c, v in enumerate(xs[j]):
            if not x[v]:
                continue
            t, n_nodes, k = (int(a) for a in opt.configs[c])
            if n_nodes == 1:
                node = slots[(t, k)].pop()
                assign[j] = (t, {node: k})
            else:
                where = {}
                for (tt, d), pv in pvars[j].items():
                    if tt == t:
                        for _ in range(int(x[pv])):
                            where[piece_slots[(t, d)].pop()] = d
                assign[j] = (t, where)
            break
    return assign


__all__ = ["ExactOutput", "JobOptions", "TypeNodes", "partitions", "patterns", "solve_patterns"]

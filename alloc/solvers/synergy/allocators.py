"""Synergy's resource-sensitive allocators (Mohan et al., OSDI 2022).

Notation.  Servers ``s`` with capacities ``G_s`` (GPUs), ``C_s`` (milli-CPU),
``M_s`` (MiB).  Job ``j`` wants ``n_j`` GPUs; its *options* ``o`` are CPU /
memory points ``(c_jo, m_jo)`` (totals for the job) with speed ``b_jo`` from
its profile grid.  Option 0 is the job's request, its GPU-proportional share
``(n_j C/G, n_j M/G)`` with speed ``b_j0`` (1.0 on Synergy's grids).  Three
derived options per job:

* ``ideal(j)`` — the best case: ``argmax_o b_jo`` over the options that fit one
  server's per-GPU bound ``c_jo <= n_j * C_s / min(n_j, G_s)`` (same for
  memory), ties broken by the least ``c/C + m/M``;
* ``fair(j) = 0`` — the request;
* ``cap(j)`` — the best option inside the fair box
  ``{o : c_jo <= c_j0, m_jo <= m_j0, b_jo >= b_j0}`` (always non-empty: it holds 0).

Jobs arrive in the scheduler's priority order (``priority`` descending, then
input order); every allocation is one round, from scratch.

``synergy-greedy``
    For j in order: place j at ``ideal(j)`` (consolidated on the feasible
    server with the fewest free GPUs, else spread over the servers with the
    fewest free GPUs, CPU and memory split in proportion to GPUs); a job that
    does not fit is skipped.  Every placed job has ``b = max_o b_jo``.

``synergy-tune``
    Selection: walk the order and keep j while ``sum n_j * milli_j`` fits the
    free milli-GPUs (the scheduler's GPU-only admission).  Then, largest GPU
    demand first (stable):

    1. place at ``ideal(j)`` if it fits;
    2. else at ``fair(j)``;
    3. else pick target server(s) with free GPUs (one server with room, fewest
       free GPUs first; for a multi-GPU job also the cover of servers with the
       fewest free GPUs) and, on each, revert the jobs already placed there to
       ``cap(p)`` — least spread first, then most CPU per GPU, then most
       memory per GPU — until j's fair share fits; then place j at ``fair(j)``.

    Guarantee: every placed job's option satisfies ``b_jo >= b_j0`` (ideal,
    fair and cap all do), so it runs at least at its GPU-proportional speed
    on the GPUs it got.  Because each reverted job then holds at most its
    fair share, a server's free CPU/memory is at least the fair share of its
    free GPUs, so a GPU-admitted job always fits at step 3 on Synergy's grids.

``synergy-opt`` (exact)
    The joint problem with the fairness floor: keep only options with
    ``b_jo >= b_j0``; binary ``x_jos`` (job j at option o on server s, or
    spread), maximise ``sum_jos v_jos x_jos`` with ``v = weight * b * speed(type)
    * span`` subject to ``sum_os x_jos <= 1`` (``= 1`` with ``place_all``), and
    per server ``sum n_j x <= G_s``, ``sum c x <= C_s``, ``sum m x <= M_s``.
    Solved by the project's ``cpsat`` backend on the filtered problem when it
    is available (``backend="cpsat"``), else by an aggregated CP-SAT model
    (``backend="aggregated"``, the default when no backend is registered):
    identical jobs form types ``t`` with counts ``N_t``; integer
    ``y_tos`` = jobs of type t at option o consolidated on s; for spreadable
    multi-GPU types integer ``z_tos`` = GPU slices on s (each slice uses
    ``ceil(c_o / n)``, ``ceil(m_o / n)``) with ``sum_{s in type tau} z_tos =
    n_t w_{to tau}``; ``sum_o (sum_s y_tos + sum_tau w_{to tau}) <= N_t``;
    servers of one class are ordered by used CPU (symmetry breaking).
    Stats also report Synergy's *big-machine LP bound*: one machine with the
    summed capacities, ``max sum v_to x_to`` s.t. ``sum_o x_to <= N_t``,
    ``sum n_t x <= sum G``, ``sum c x <= sum C``, ``sum m x <= sum M``,
    ``x >= 0`` (continuous).
"""
from __future__ import annotations

import copy
import time
from bisect import insort
from collections import defaultdict
from math import ceil
from typing import Iterable, Sequence

from ...model import MILLI, Status
from ...problem import Assign, Option, Problem, Solution, split
from ...solve import register
from ..heuristics.greedy import State, job_order

CAPS = ("grid", "sharing", "spread")


# ------------------------------------------------------------------ options
def ideal_option(opts: Sequence[Option], n: int, caps: Iterable[tuple[int, int, int]]) -> int:
    """Index of the best-case option: maximum speed among the options that fit
    one server's per-GPU bound (``caps``: (gpus, cpu, mem) of candidate
    servers), ties broken by least normalised resources."""
    caps = list(caps)
    if not caps or n == 0:
        return 0
    ref_c = max(c for _, c, _ in caps) or 1
    ref_m = max(m for _, _, m in caps) or 1

    def fits(o: Option) -> bool:
        for g, c, m in caps:
            k = min(n, g) if g else n
            if k and o.cpu * k <= c * n and o.mem * k <= m * n:
                return True
        return False

    best, key = 0, None
    for i, o in enumerate(opts):
        if i and not fits(o):
            continue
        k = (-o.base, o.cpu / ref_c + o.mem / ref_m, i)
        if key is None or k < key:
            best, key = i, k
    return best


def capped_option(opts: Sequence[Option]) -> int:
    """Best option inside the fair box (CPU and memory at most the request's,
    speed at least the request's); 0 when nothing beats the request."""
    r = opts[0]
    best, key = 0, (-r.base, r.cpu + r.mem, 0)
    for i, o in enumerate(opts):
        if o.cpu <= r.cpu and o.mem <= r.mem and o.base >= r.base - 1e-12:
            k = (-o.base, o.cpu + o.mem, i)
            if k < key:
                best, key = i, k
    return best


def floor_options(opts: Sequence[Option]) -> tuple[Option, ...]:
    """The request plus every option at least as fast (the fairness floor)."""
    r = opts[0]
    return (r,) + tuple(o for o in opts[1:] if o.base >= r.base - 1e-12)


def floor_problem(problem: Problem) -> Problem:
    """A shallow copy of ``problem`` whose option lists keep only options with
    speed >= the request's (option 0 stays the request)."""
    p = copy.copy(problem)
    p.options = [floor_options(o) for o in problem.options]
    return p


# ------------------------------------------------------------------ packers
class ProblemPacker:
    """Packing state over a compiled :class:`Problem` (wraps the greedy
    :class:`State`; handles GPU types, sharing, CPU-only jobs)."""

    def __init__(self, problem: Problem):
        self.p = problem
        self.st = State(problem)
        self.opts = problem.options
        self._jobs_on: dict[int, set] = defaultdict(set)
        self._free_milli = int(problem.G) * MILLI

    # sizes
    def need(self, j: int) -> int:
        return self.p.jobs[j].milli_total

    def free_milli(self) -> int:
        return self._free_milli

    def n(self, j: int) -> int:
        return self.p.jobs[j].gpus

    def free(self, s: int) -> tuple[int, int]:
        return int(self.st.cpu[s]), int(self.st.mem[s])

    def option(self, j: int) -> int:
        return self.st.option[j]

    def jobs_on(self, s: int):
        return list(self._jobs_on[s])

    def servers_of(self, j: int) -> tuple[int, ...]:
        return tuple(s for s, _ in self.st.assign[j].cpu)

    def nservers(self, j: int) -> int:
        return len(self.st.assign[j].cpu)

    def server_caps(self, j: int):
        p = self.p
        return [(int(p.srv_gpus[s]), int(p.srv_cpu[s]), int(p.srv_mem[s]))
                for s in range(p.S) if p.allowed[j, s]]

    def free_gpus(self, s: int) -> int:
        return int((self.st.gfree[list(self.st.gpus_of(s))] == MILLI).sum())

    def room(self, j: int, s: int) -> bool:
        return self.st.gpus_on_server(j, s) is not None

    # placement
    def fit(self, j: int, o: int, servers: Iterable[int] | None = None, mode: str = "any"):
        """Consolidated on the feasible server with the fewest free GPUs
        (``mode`` "one" or "any"), else spread ("spread" or "any")."""
        st, p = self.st, self.p
        cand = list(range(p.S) if servers is None else servers)
        if mode == "spread":
            return st.try_spread(j, o, servers=cand)
        best, best_key = None, None
        for s in cand:
            a = st.try_server(j, s, o)
            if a is None:
                continue
            key = (int(st.gfree[list(st.gpus_of(s))].sum()), s)
            if best_key is None or key < best_key:
                best, best_key = a, key
        if best is not None or mode == "one":
            return best
        return st.try_spread(j, o, servers=cand)

    def place(self, j: int, o: int, a: Assign) -> None:
        self.st.place(j, a, o)
        for s, _ in a.cpu:
            self._jobs_on[s].add(j)
        self._free_milli -= sum(m for _, m in a.gpus)

    def remove(self, j: int) -> tuple[int, Assign]:
        o = self.st.option[j]
        a = self.st.remove(j)
        for s, _ in a.cpu:
            self._jobs_on[s].discard(j)
        self._free_milli += sum(m for _, m in a.gpus)
        return o, a

    def refit_same(self, j: int, o: int, old: Assign):
        """Job j (removed) on the same GPUs/server at option o, or None."""
        p, st = self.p, self.st
        if old.gpus:
            a = p.make_assign(j, [g for g, _ in old.gpus], o)
        else:
            a = p.make_cpu_assign(j, old.cpu[0][0], o)
        if all(st.cpu[s] >= c for s, c in a.cpu) and all(st.mem[s] >= m for s, m in a.mem):
            return a
        return None

    def per_gpu(self, j: int) -> tuple[float, float]:
        o = self.opts[j][self.st.option[j]]
        n = max(1, self.p.jobs[j].gpus)
        return o.cpu / n, o.mem / n

    def targets(self, j: int) -> list[list[tuple[int, int]]]:
        p = self.p
        n = max(1, p.jobs[j].gpus)
        singles = sorted((self.free_gpus(s), s) for s in range(p.S)
                         if p.allowed[j, s] and self.room(j, s))
        out = [[(s, n)] for _, s in singles]
        job = p.jobs[j]
        if job.gpus >= 2 and job.gpu_milli == MILLI and job.locality is None:
            cover = spread_cover(sorted((self.free_gpus(s), s) for s in range(p.S)
                                        if p.allowed[j, s]), job.gpus)
            if cover:
                out.append(cover)
        return out


def spread_cover(order, need: int) -> list[tuple[int, int]] | None:
    """Servers taken in the given ``(free GPUs, server)`` order (fewest free
    first) until ``need`` GPUs are covered: ``[(server, gpus taken)]``, or None
    when they hold too few."""
    cover = []
    for f, s in order:
        if f <= 0:
            continue
        k = min(f, need)
        cover.append((s, k))
        need -= k
        if need == 0:
            return cover
    return None


class FastPacker:
    """Packing state over identical-GPU servers with whole-GPU jobs only (the
    simulator's hot path).  Jobs are registered with :meth:`add_job`."""

    def __init__(self, gpus: Sequence[int], cpu: Sequence[int], mem: Sequence[int],
                 span: bool = True):
        self.G, self.C, self.M = list(gpus), list(cpu), list(mem)
        self.S = len(self.G)
        self.fg, self.fc, self.fm = list(self.G), list(self.C), list(self.M)
        self.opts: dict[int, Sequence[Option]] = {}
        self._n: dict[int, int] = {}
        self.parts: dict[int, tuple] = {}
        self.opt: dict[int, int] = {}
        self.on: list[set] = [set() for _ in range(self.S)]
        self._free_gpus = sum(self.G)
        # servers by free GPU count, each bucket in ascending server order
        self._maxg = max(self.G, default=0)
        self._buckets0 = [[s for s in range(self.S) if self.G[s] == g]
                          for g in range(self._maxg + 1)]
        self.bucket = [list(b) for b in self._buckets0]

    def reset(self) -> None:
        self.fg, self.fc, self.fm = list(self.G), list(self.C), list(self.M)
        self.parts.clear()
        self.opt.clear()
        self.on = [set() for _ in range(self.S)]
        self._free_gpus = sum(self.G)
        self.bucket = [list(b) for b in self._buckets0]

    def _move(self, s: int, old: int, new: int) -> None:
        b = self.bucket
        b[old].remove(s)
        insort(b[new], s)

    def add_job(self, j: int, n: int, opts: Sequence[Option]) -> None:
        self._n[j] = n
        self.opts[j] = opts

    def need(self, j: int) -> int:
        return self._n[j] * MILLI

    def free_milli(self) -> int:
        return self._free_gpus * MILLI

    def n(self, j: int) -> int:
        return self._n[j]

    def free(self, s: int) -> tuple[int, int]:
        return self.fc[s], self.fm[s]

    def option(self, j: int) -> int:
        return self.opt[j]

    def jobs_on(self, s: int):
        return list(self.on[s])

    def servers_of(self, j: int) -> tuple[int, ...]:
        return tuple(p[0] for p in self.parts[j])

    def nservers(self, j: int) -> int:
        return len(self.parts[j])

    def server_caps(self, j: int):
        return list({(g, c, m) for g, c, m in zip(self.G, self.C, self.M)})

    def fit(self, j: int, o: int, servers: Iterable[int] | None = None, mode: str = "any"):
        n = self._n[j]
        op = self.opts[j][o]
        c, m = op.cpu, op.mem
        fg, fc, fm = self.fg, self.fc, self.fm
        if servers is None and mode != "spread":
            # best fit: fewest free GPUs, then lowest index (as the scan below)
            b = self.bucket
            for g in range(n, self._maxg + 1):
                for s in b[g]:
                    if fc[s] >= c and fm[s] >= m:
                        return ((s, n, c, m),)
            if mode == "one":
                return None
        cand = range(self.S) if servers is None else servers
        if mode != "spread" and servers is not None:
            best = -1
            bg = 1 << 30
            for s in cand:
                g = fg[s]
                if n <= g < bg and fc[s] >= c and fm[s] >= m:
                    best, bg = s, g
            if best >= 0:
                return ((best, n, c, m),)
            if mode == "one":
                return None
        if n < 2:
            return None
        pc, pm = -(-c // n), -(-m // n)
        order = sorted((fg[s], s) for s in cand if fg[s] > 0)
        chosen, need = [], n
        for g, s in order:
            k = min(g, need, fc[s] // pc if pc else g, fm[s] // pm if pm else g)
            if k > 0:
                chosen.append((s, k))
                need -= k
                if need == 0:
                    break
        if need:
            return None
        ks = [k for _, k in chosen]
        cs, ms = split(c, ks), split(m, ks)
        parts = tuple((s, k, cc, mm) for (s, k), cc, mm in zip(chosen, cs, ms))
        for s, k, cc, mm in parts:
            if fc[s] < cc or fm[s] < mm:
                return None
        return parts

    def place(self, j: int, o: int, parts) -> None:
        fg, b = self.fg, self.bucket
        for s, k, c, m in parts:
            g = fg[s]
            b[g].remove(s)
            insort(b[g - k], s)
            fg[s] = g - k
            self.fc[s] -= c
            self.fm[s] -= m
            self.on[s].add(j)
            self._free_gpus -= k
        self.parts[j] = parts
        self.opt[j] = o

    def greedy(self, order: Iterable[int], choose) -> None:
        """:func:`greedy_core` on this packer (same result, fewer calls)."""
        n_of, opts, b, maxg = self._n, self.opts, self.bucket, self._maxg
        fc, fm = self.fc, self.fm
        for j in order:
            n = n_of[j]
            if self._free_gpus < n:
                continue
            o = choose(j)
            op = opts[j][o]
            c, m = op.cpu, op.mem
            h = None
            for g in range(n, maxg + 1):
                for s in b[g]:
                    if fc[s] >= c and fm[s] >= m:
                        h = ((s, n, c, m),)
                        break
                if h is not None:
                    break
            if h is None and n >= 2:
                h = self.fit(j, o, mode="spread")
            if h is not None:
                self.place(j, o, h)

    def remove(self, j: int):
        parts = self.parts.pop(j)
        o = self.opt.pop(j)
        for s, k, c, m in parts:
            self._move(s, self.fg[s], self.fg[s] + k)
            self.fg[s] += k
            self.fc[s] += c
            self.fm[s] += m
            self.on[s].discard(j)
            self._free_gpus += k
        return o, parts

    def refit_same(self, j: int, o: int, old):
        op = self.opts[j][o]
        ks = [k for _, k, _, _ in old]
        cs, ms = split(op.cpu, ks), split(op.mem, ks)
        parts = tuple((s, k, c, m) for (s, k, _, _), c, m in zip(old, cs, ms))
        for s, k, c, m in parts:
            if self.fc[s] < c or self.fm[s] < m:
                return None
        return parts

    def per_gpu(self, j: int) -> tuple[float, float]:
        op = self.opts[j][self.opt[j]]
        n = self._n[j]
        return op.cpu / n, op.mem / n

    def targets(self, j: int) -> list[list[tuple[int, int]]]:
        n = self._n[j]
        fg = self.fg
        order = sorted((fg[s], s) for s in range(self.S) if fg[s] > 0)
        out = [[(s, n)] for g, s in order if g >= n]
        if n >= 2:
            cover = spread_cover(order, n)
            if cover:
                out.append(cover)
        return out


# --------------------------------------------------------------- algorithms
def greedy_core(P, order: Iterable[int], choose) -> None:
    """Place each job at option ``choose(j)`` if it fits; skip it otherwise."""
    if isinstance(P, FastPacker):
        P.greedy(order, choose)
        return
    for j in order:
        if P.free_milli() < P.need(j):
            continue
        o = choose(j)
        h = P.fit(j, o, mode="one")
        if h is None and P.n(j) >= 2:
            h = P.fit(j, o, mode="spread")
        if h is not None:
            P.place(j, o, h)


def admit(P, order: Iterable[int]) -> list[int]:
    """The scheduler's GPU-only admission: jobs in order while their GPUs fit
    the free GPU total."""
    free = P.free_milli()
    out = []
    for j in order:
        nd = P.need(j)
        if nd <= free:
            out.append(j)
            free -= nd
            if free <= 0:
                break
    return out


def _reclaim(P, s: int, need_c: int, need_m: int, capped: dict, exclude: int) -> None:
    peers = [p for p in P.jobs_on(s) if p != exclude]
    peers.sort(key=lambda p: (len(P.servers_of(p)), -P.per_gpu(p)[0], -P.per_gpu(p)[1], p))
    for p in peers:
        fc, fm = P.free(s)
        if fc >= need_c and fm >= need_m:
            return
        o = P.option(p)
        cap = capped[p]
        if o == cap:
            continue
        cur, new = P.opts[p][o], P.opts[p][cap]
        if new.cpu >= cur.cpu and new.mem >= cur.mem:
            continue  # reverting would free nothing
        old_o, old = P.remove(p)
        h = P.refit_same(p, cap, old)
        if h is None:
            P.place(p, old_o, old)
        else:
            P.place(p, cap, h)


def _reclaim_and_fit(P, j: int, target, capped: dict, mode: str):
    fair = P.opts[j][0]
    ks = [k for _, k in target]
    cs, ms = split(fair.cpu, ks), split(fair.mem, ks)
    for (s, _), c, m in zip(target, cs, ms):
        _reclaim(P, s, c, m, capped, j)
    return P.fit(j, 0, servers=[s for s, _ in target], mode=mode)


def tune_core(P, order: Iterable[int], ideal: dict, capped: dict,
              sort_by_gpus: bool = True) -> dict:
    """Synergy-TUNE over a packer; returns counters of what happened.

    Consolidation comes first (the model files penalise spread jobs): ideal,
    fair, then fair after reclaiming on one server; only then, for a
    multi-GPU job, the same three steps spread over several servers."""
    stats = {"ideal": 0, "fair": 0, "reclaimed": 0, "spread": 0, "skipped": 0}
    sel = admit(P, order)
    if sort_by_gpus:
        sel.sort(key=lambda j: -P.need(j))
    fast = isinstance(P, FastPacker)
    for j in sel:
        o = ideal[j]
        if fast:  # the common case first: ideal on one server (same as below)
            h = P.fit(j, o, mode="one")
            if h is not None:
                P.place(j, o, h)
                stats["ideal"] += 1
                continue
        modes = ("one", "spread") if P.n(j) >= 2 else ("one",)
        done = False
        for mode in modes:
            h = P.fit(j, o, mode=mode)
            if h is not None:
                P.place(j, o, h)
                stats["ideal"] += 1
                done = True
                break
            if o != 0:
                h = P.fit(j, 0, mode=mode)
                if h is not None:
                    P.place(j, 0, h)
                    stats["fair"] += 1
                    done = True
                    break
            for target in P.targets(j):
                if (len(target) == 1) != (mode == "one"):
                    continue
                h = _reclaim_and_fit(P, j, target, capped, mode)
                if h is not None:
                    P.place(j, 0, h)
                    stats["reclaimed"] += 1
                    done = True
                    break
            if done:
                break
        if done and P.nservers(j) > 1:
            stats["spread"] += 1
        if not done:
            stats["skipped"] += 1
    return stats


# ------------------------------------------------------- registered solvers
def _choices(P: ProblemPacker) -> tuple[dict, dict]:
    p = P.p
    ideal, capped = {}, {}
    for j in range(p.J):
        ideal[j] = ideal_option(p.options[j], p.jobs[j].gpus, P.server_caps(j))
        capped[j] = capped_option(p.options[j])
    return ideal, capped


@register("synergy-greedy", capabilities=CAPS,
          description="Synergy GREEDY: each job at its best-case CPU/memory point or skipped")
def solve_greedy(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    P = ProblemPacker(problem)
    ideal, _ = _choices(P)
    greedy_core(P, job_order(problem), ideal.__getitem__)
    return P.st.solution()


@register("synergy-tune", capabilities=CAPS,
          description="Synergy TUNE: best case, else proportional, else reclaim peers' excess")
def solve_tune(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    P = ProblemPacker(problem)
    ideal, capped = _choices(P)
    stats = tune_core(P, job_order(problem), ideal, capped,
                      sort_by_gpus=options.get("sort_by_gpus", True))
    return P.st.solution(**stats)


# ---------------------------------------------------------------- opt model
def _span(prof, level: str) -> float:
    return prof.span_factor(level) if prof is not None else 1.0


def big_machine_lp(problem: Problem, place_all: bool = False) -> float | None:
    """Synergy's big-machine LP bound: every server merged into one, grid
    points chosen fractionally (fairness floor applied by the caller)."""
    try:
        from scipy.optimize import linprog
    except ImportError:  # pragma: no cover
        return None
    p = problem
    J = p.J
    if J == 0:
        return 0.0
    cols, c_obj = [], []
    for j in range(J):
        allowed = [s for s in range(p.S) if p.allowed[j, s]]
        if not allowed:
            continue
        for o in range(len(p.options[j])):
            v = max(p.coef(j, o, s) for s in allowed)
            cols.append((j, o))
            c_obj.append(-v)
    if not cols:
        return 0.0
    import numpy as np
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    rows_j = defaultdict(lambda: [0.0] * len(cols))
    gpu = [0.0] * len(cols)
    cpu = [0.0] * len(cols)
    mem = [0.0] * len(cols)
    for k, (j, o) in enumerate(cols):
        rows_j[j][k] = 1.0
        gpu[k] = p.jobs[j].milli_total
        cpu[k] = p.options[j][o].cpu
        mem[k] = p.options[j][o].mem
    for j, row in rows_j.items():
        (A_eq if place_all else A_ub).append(row)
        (b_eq if place_all else b_ub).append(1.0)
    A_ub += [gpu, cpu, mem]
    b_ub += [float(p.srv_gpus.sum() * MILLI), float(p.srv_cpu.sum()), float(p.srv_mem.sum())]
    res = linprog(np.array(c_obj), A_ub=np.array(A_ub), b_ub=np.array(b_ub),
                  A_eq=np.array(A_eq) if A_eq else None, b_eq=np.array(b_eq) if b_eq else None,
                  bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    return float(-res.fun)


SCALE = 10000  # objective coefficients are scaled to integers for CP-SAT


class _Model:
    """A small neutral integer model: variables with bounds, linear rows,
    an integer objective to maximise; solved by HiGHS (scipy) or CP-SAT."""

    def __init__(self):
        self.lb, self.ub, self.obj, self.names = [], [], [], []
        self.rows: list[tuple[dict, float, float]] = []

    def var(self, lo: int, hi: int, name: str = "", obj: int = 0) -> int:
        self.lb.append(lo)
        self.ub.append(hi)
        self.obj.append(obj)
        self.names.append(name)
        return len(self.lb) - 1

    def row(self, coefs: dict, lo: float, hi: float) -> None:
        self.rows.append((coefs, lo, hi))

    def solve_highs(self, time_limit):
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix
        n = len(self.lb)
        if n == 0:
            return "optimal", [], 0.0
        ri, ci, vv, lo, hi = [], [], [], [], []
        for r, (coefs, a, b) in enumerate(self.rows):
            for k, v in coefs.items():
                ri.append(r)
                ci.append(k)
                vv.append(v)
            lo.append(a)
            hi.append(b)
        cons = []
        if self.rows:
            A = coo_matrix((vv, (ri, ci)), shape=(len(self.rows), n)).tocsr()
            cons = [LinearConstraint(A, np.array(lo, float), np.array(hi, float))]
        opts = {"disp": False}
        if time_limit:
            opts["time_limit"] = float(time_limit)
        res = milp(-np.array(self.obj, float), constraints=cons, integrality=np.ones(n),
                   bounds=Bounds(np.array(self.lb, float), np.array(self.ub, float)),
                   options=opts)
        if res.x is None:
            return ("infeasible" if res.status == 2 else "unknown"), None, None
        vals = [int(round(x)) for x in res.x]
        bound = getattr(res, "mip_dual_bound", None)
        bound = -bound if bound is not None and np.isfinite(bound) else None
        return ("optimal" if res.status == 0 else "feasible"), vals, bound

    def solve_cpsat(self, time_limit, seed, workers):
        from ortools.sat.python import cp_model
        m = cp_model.CpModel()
        xs = [m.NewIntVar(int(a), int(b), nm) for a, b, nm in zip(self.lb, self.ub, self.names)]
        for coefs, a, b in self.rows:
            expr = sum(int(v) * xs[k] for k, v in coefs.items())
            if a == b:
                m.Add(expr == int(a))
            else:
                if a > -float("inf"):
                    m.Add(expr >= int(a))
                if b < float("inf"):
                    m.Add(expr <= int(b))
        m.Maximize(sum(c * x for c, x in zip(self.obj, xs) if c))
        solver = cp_model.CpSolver()
        if time_limit:
            solver.parameters.max_time_in_seconds = float(time_limit)
        solver.parameters.random_seed = int(seed)
        solver.parameters.num_workers = int(workers)
        st = solver.Solve(m)
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return ("infeasible" if st == cp_model.INFEASIBLE else "unknown"), None, None
        return (("optimal" if st == cp_model.OPTIMAL else "feasible"),
                [solver.Value(x) for x in xs], solver.BestObjectiveBound())


def _dominated(vals, k) -> bool:
    c, mm, v = vals[k]
    for i, (c2, m2, v2) in enumerate(vals):
        if i != k and c2 <= c and m2 <= mm and all(a >= b for a, b in zip(v2, v)) \
                and (c2, m2, v2) != (c, mm, v):
            return True
    return False


def _aggregated_opt(problem: Problem, *, time_limit, seed, place_all, engine="highs",
                    workers=None, symmetry=False):
    p = problem
    thr = p.objective == "throughput"
    types: dict[tuple, list[int]] = defaultdict(list)
    for j in job_order(p):
        job = p.jobs[j]
        spread = job.gpus >= 2 and job.gpu_milli == MILLI and job.locality is None
        vals = [(op.cpu, op.mem, tuple(round(p.coef(j, o, s) * SCALE) for s in range(p.S)))
                for o, op in enumerate(p.options[j])]
        prof = job.profile
        sp_in = _span(prof, "server") if thr and job.gpus > 1 else 1.0
        sp_out = max(_span(prof, "rack"), _span(prof, "cluster")) if thr and spread else 1.0
        key = (job.gpus, job.gpu_milli, spread, p.allowed[j].tobytes(), tuple(vals),
               sp_in, sp_out)
        types[key].append(j)
    M = _Model()
    S = p.S
    gpu_terms = [dict() for _ in range(S)]
    cpu_terms = [dict() for _ in range(S)]
    mem_terms = [dict() for _ in range(S)]
    ys, zs, ws, us = {}, {}, {}, {}
    share_on = defaultdict(list)
    tlist = list(types.items())
    for t, (key, members) in enumerate(tlist):
        n, milli, spread, _, vals, sp_in, sp_out = key
        N = len(members)
        allowed = [s for s in range(S) if p.allowed[members[0], s]]
        count = {}
        for o, (c, mm, v) in enumerate(vals):
            if _dominated(vals, o):
                continue
            for s in allowed:
                if (n and n > p.srv_gpus[s]) or c > p.srv_cpu[s] or mm > p.srv_mem[s]:
                    continue
                ub = N
                if n:
                    ub = min(ub, int(p.srv_gpus[s]) // n if milli == MILLI else
                             int(p.srv_gpus[s]) * (MILLI // milli))
                if c:
                    ub = min(ub, int(p.srv_cpu[s]) // c)
                if mm:
                    ub = min(ub, int(p.srv_mem[s]) // mm)
                if ub <= 0:
                    continue
                y = M.var(0, ub, f"y{t}_{o}_{s}", round(v[s] * sp_in))
                ys[t, o, s] = y
                count[y] = 1
                if n and milli == MILLI:
                    gpu_terms[s][y] = n
                elif n:
                    share_on[s].append((t, o, milli, y))
                cpu_terms[s][y] = c
                mem_terms[s][y] = mm
            if spread:
                pc, pm = -(-c // n), -(-mm // n)
                by_type = defaultdict(list)
                for s in allowed:
                    if p.srv_gpus[s] > 0:
                        by_type[int(p.srv_type[s])].append(s)
                for tau, srvs in by_type.items():
                    slices = {}
                    for s in srvs:
                        ub = min(int(p.srv_gpus[s]), n * N,
                                 int(p.srv_cpu[s]) // pc if pc else n * N,
                                 int(p.srv_mem[s]) // pm if pm else n * N)
                        if ub <= 0:
                            continue
                        z = M.var(0, ub, f"z{t}_{o}_{s}")
                        zs[t, o, s] = z
                        slices[z] = 1
                        gpu_terms[s][z] = 1
                        cpu_terms[s][z] = pc
                        mem_terms[s][z] = pm
                    if not slices:
                        continue
                    w = M.var(0, N, f"w{t}_{o}_{tau}", round(v[srvs[0]] * sp_out))
                    ws[t, o, tau] = w
                    slices[w] = -n
                    M.row(slices, 0, 0)
                    count[w] = 1
        if count:
            M.row(count, N if place_all else 0, N)
        elif place_all and N:
            return None
    for s, items in share_on.items():
        G = int(p.srv_gpus[s])
        hs = []
        for k in range(G):
            h = M.var(0, 1, f"h{s}_{k}")
            hs.append(h)
            row = {h: -MILLI}
            for (t, o, milli, y) in items:
                u = M.var(0, MILLI // milli, f"u{t}_{o}_{s}_{k}")
                us[t, o, s, k] = u
                row[u] = milli
            M.row(row, -float("inf"), 0)
            if k:
                M.row({hs[k - 1]: 1, h: -1}, 0, float("inf"))
        for (t, o, milli, y) in items:
            row = {y: 1}
            for k in range(G):
                row[us[t, o, s, k]] = -1
            M.row(row, 0, 0)
        for h in hs:
            gpu_terms[s][h] = 1
    for s in range(S):
        if gpu_terms[s]:
            M.row(gpu_terms[s], -float("inf"), int(p.srv_gpus[s]))
        if cpu_terms[s]:
            M.row(cpu_terms[s], -float("inf"), int(p.srv_cpu[s]))
        if mem_terms[s]:
            M.row(mem_terms[s], -float("inf"), int(p.srv_mem[s]))
    if symmetry and not share_on:
        for members in p.classes:
            for a, b in zip(members, members[1:]):
                row = dict(cpu_terms[a])
                for k, v in cpu_terms[b].items():
                    row[k] = row.get(k, 0) - v
                if row:
                    M.row(row, 0, float("inf"))
    if engine == "cpsat":
        import os
        status, vals, bound = M.solve_cpsat(time_limit, seed, workers or min(8, os.cpu_count() or 1))
    else:
        status, vals, bound = M.solve_highs(time_limit)
    if vals is None:
        st = Status.INFEASIBLE if status == "infeasible" else Status.UNKNOWN
        return Solution({}, st, None, (), {"mip_status": status})
    V = lambda k: vals[k]  # noqa: E731
    # ---- rebuild assignments
    gfree = {s: list(range(int(p.gpu_first[s]), int(p.gpu_first[s] + p.srv_gpus[s])))
             for s in range(S)}
    assign: dict[int, Assign] = {}
    pending = {t: list(members) for t, (key, members) in enumerate(tlist)}
    for s, items in share_on.items():
        G = int(p.srv_gpus[s])
        first = int(p.gpu_first[s])
        used_k = set()
        for k in range(G):
            for (t, o, milli, _) in items:
                for _ in range(V(us[t, o, s, k])):
                    j = pending[t].pop(0)
                    assign[j] = p.make_assign(j, [first + k], o)
                    used_k.add(k)
        gfree[s] = [g for g in gfree[s] if g - first not in used_k]
    for (t, o, s), y in ys.items():
        n, milli = tlist[t][0][0], tlist[t][0][1]
        if n and milli < MILLI:
            continue
        for _ in range(V(y)):
            j = pending[t].pop(0)
            if n == 0:
                assign[j] = p.make_cpu_assign(j, s, o)
            else:
                assign[j] = p.make_assign(j, gfree[s][:n], o)
                gfree[s] = gfree[s][n:]
    slices_by = defaultdict(list)
    for (t, o, s), z in zs.items():
        slices_by[t, o, int(p.srv_type[s])].extend([s] * V(z))
    for (t, o, tau), w in ws.items():
        n = tlist[t][0][0]
        sl = slices_by[t, o, tau]
        for i in range(V(w)):
            j = pending[t].pop(0)
            assign[j] = p.make_assign(j, [gfree[s].pop(0) for s in sl[i * n:(i + 1) * n]], o)
    objective = sum(c * x for c, x in zip(M.obj, vals)) / SCALE
    st = Status.OPTIMAL if status == "optimal" else Status.FEASIBLE
    if bound is not None:
        bound = bound / SCALE
    if st is Status.OPTIMAL:
        bound = objective if bound is None else max(objective, min(bound, objective))
    return Solution(assign, st, bound, (),
                    {"mip_status": status, "engine": engine, "types": len(tlist),
                     "variables": len(M.lb), "objective": objective})


@register("synergy-opt", exact=True, capabilities=CAPS, requires=("ortools",),
          restricts="fairness floor: only CPU/memory points at least as fast as the request",
          description="Synergy OPT: joint grid point and placement with the fairness floor (CP-SAT)")
def solve_opt(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    """Options: ``backend`` ("auto", "cpsat", "milp", "aggregated"),
    ``place_all`` (every job must be placed), ``lp_bound`` (compute the
    big-machine LP bound, default True), ``workers``."""
    t0 = time.perf_counter()
    fp = floor_problem(problem)
    backend = options.get("backend", "auto")
    place_all = bool(options.get("place_all", False))
    if backend == "auto":
        backend = "aggregated"
        if not place_all:
            from ...solve import solvers
            reg = solvers()
            if "cpsat" in reg and reg["cpsat"].available:
                backend = "cpsat"
    if backend in ("cpsat", "milp"):
        from ...solve import get_solver
        sol = get_solver(backend).solve(fp, time_limit=time_limit, seed=seed)
    elif backend == "aggregated":
        sol = _aggregated_opt(fp, time_limit=time_limit, seed=seed, place_all=place_all,
                              engine=options.get("engine", "highs"),
                              workers=options.get("workers"),
                              symmetry=options.get("symmetry", False))
        if sol is None:
            sol = Solution({}, Status.INFEASIBLE, None, (), {})
    else:
        raise ValueError(f"unknown backend {backend!r}; valid: auto, cpsat, milp, aggregated")
    stats = dict(sol.stats)
    stats["backend"] = backend
    if options.get("lp_bound", True):
        stats["big_machine_lp_bound"] = big_machine_lp(fp, place_all)
    stats["opt_wall_s"] = time.perf_counter() - t0
    return Solution(sol.assign, sol.status, sol.bound, sol.preempted, stats)


__all__ = ["FastPacker", "ProblemPacker", "admit", "big_machine_lp", "capped_option",
           "floor_options", "floor_problem", "greedy_core", "ideal_option", "solve_greedy",
           "solve_opt", "solve_tune", "tune_core"]

"""Value-aware heuristics: ``greedy-upgrade`` and ``local-search``.

``greedy-upgrade``
    1. Every job gets its *cheapest good option*: the CPU/memory point with the
       smallest footprint ``cpu / C_max + mem / M_max`` among those at least as
       fast as its request (a job whose profile is flat in memory or CPU gives
       the surplus back).
    2. Jobs are placed by priority, then by value density ``v_j / f_j`` (``f_j``
       the job's dominant share of a server: GPUs, CPU or memory), best fit on
       one server, spread over servers only when no server can take them.
    3. Upgrade: on every server the options of its jobs are re-chosen exactly
       (a multiple-choice knapsack over the server's free CPU and memory,
       solved by dynamic programming over Pareto states), which spends leftover
       CPU and memory where the marginal gain is largest.

``local-search``
    Starts from ``greedy-upgrade`` (or a given solution) and repeats, until no
    move helps or time runs out: *insert* an unplaced job on a server, re-choosing
    that server's options (the job may take them from its neighbours); *swap*
    an unplaced job with a placed one of lower value on a server.  Identical
    jobs are tried once per pass.  Deterministic for a given input and seed.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...deadline import Deadline
from ...model import MILLI, Status
from ...problem import Assign, Problem, Solution, job_order, job_types, option_of
from .greedy import State, leftover_score

BEAM = 300


def footprint(problem: Problem, j: int, o: int) -> float:
    job = problem.jobs[j]
    opt = problem.options[j][o]
    cmax = max(int(problem.srv_cpu.max()), 1)
    mmax = max(int(problem.srv_mem.max()), 1)
    return opt.cpu / cmax + opt.mem / mmax + 0.0 * job.gpus


def dominant(problem: Problem, j: int, o: int) -> float:
    job = problem.jobs[j]
    opt = problem.options[j][o]
    gmax = max(int(problem.srv_gpus.max()), 1)
    cmax = max(int(problem.srv_cpu.max()), 1)
    mmax = max(int(problem.srv_mem.max()), 1)
    return max(job.gpus * job.gpu_milli / (MILLI * gmax), opt.cpu / cmax, opt.mem / mmax, 1e-6)


def cheap_option(problem: Problem, j: int) -> int:
    opts = problem.options[j]
    req = opts[0].base
    cand = [o for o in range(len(opts)) if opts[o].base >= req - 1e-12]
    return min(cand, key=lambda o: (footprint(problem, j, o), o))


def best_value(problem: Problem, j: int, o: int) -> float:
    s_ok = np.flatnonzero(problem.allowed[j])
    if len(s_ok) == 0:
        return 0.0
    return max(problem.coef(j, o, int(s)) for s in s_ok)


class Local:
    """A greedy State plus the single-server jobs of every server."""

    def __init__(self, problem: Problem, assign: dict[int, Assign] | None = None):
        self.p = problem
        self.st = State(problem)
        self.on: list[set[int]] = [set() for _ in range(problem.S)]
        self.home: dict[int, int | None] = {}
        for j, a in sorted((assign or {}).items()):
            self.place(j, a, option_of(problem, j, a))

    def servers_of(self, a: Assign) -> set[int]:
        return {s for s, _ in a.cpu} | {int(self.p.gpu_server[g]) for g, _ in a.gpus}

    def place(self, j: int, a: Assign, o: int):
        self.st.place(j, a, o)
        ss = self.servers_of(a)
        if len(ss) == 1:
            s = next(iter(ss))
            self.on[s].add(j)
            self.home[j] = s
        else:
            self.home[j] = None

    def remove(self, j: int) -> Assign:
        s = self.home.pop(j, None)
        if s is not None:
            self.on[s].discard(j)
        return self.st.remove(j)

    def value(self, j: int, o: int, s: int) -> float:
        return self.p.coef(j, o, s)

    # ------------------------------------------------------------ options
    def reoptimize(self, s: int, jobs: Sequence[int], cpu_free: int, mem_free: int,
                   must: int | None = None):
        """Best options for ``jobs`` (all placed) on server s within the free
        CPU/memory: (value, {job: option}) or None."""
        p = self.p
        states = {(0, 0): (0.0, ())}
        for j in jobs:
            nxt: dict[tuple[int, int], tuple[float, tuple]] = {}
            for (c, m), (v, ch) in states.items():
                for o, opt in enumerate(p.options[j]):
                    c2, m2 = c + opt.cpu, m + opt.mem
                    if c2 > cpu_free or m2 > mem_free:
                        continue
                    v2 = v + p.coef(j, o, s)
                    old = nxt.get((c2, m2))
                    if old is None or v2 > old[0] + 1e-12:
                        nxt[(c2, m2)] = (v2, ch + (o,))
            if not nxt:
                return None
            states = _pareto(nxt)
        v, ch = max(states.values(), key=lambda t: (t[0], t[1]))
        return v, dict(zip(jobs, ch))

    def server_free(self, s: int, excluding: Sequence[int] = ()) -> tuple[int, int]:
        """Free CPU/memory of s if its single-server jobs ``excluding`` were gone."""
        c, m = int(self.st.cpu[s]), int(self.st.mem[s])
        for j in excluding:
            a = self.st.assign[j]
            c += sum(v for ss, v in a.cpu if ss == s)
            m += sum(v for ss, v in a.mem if ss == s)
        return c, m

    def upgrade_server(self, s: int) -> float:
        jobs = sorted(self.on[s])
        if not jobs:
            return 0.0
        cur = sum(self.value(j, self.st.option[j], s) for j in jobs)
        c, m = self.server_free(s, jobs)
        res = self.reoptimize(s, jobs, c, m)
        if res is None or res[0] <= cur + 1e-12:
            return 0.0
        # remove all first so the new options never overcommit mid-way
        gp = {j: [g for g, _ in self.st.assign[j].gpus] for j in jobs}
        for j in jobs:
            self.remove(j)
        for j in jobs:
            o = res[1][j]
            na = (self.p.make_cpu_assign(j, s, o) if self.p.jobs[j].gpus == 0
                  else self.p.make_assign(j, gp[j], o))
            self.place(j, na, o)
        return res[0] - cur

    def solution(self) -> dict[int, Assign]:
        return dict(self.st.assign)


def _pareto(states: dict) -> dict:
    """Drop states dominated in (cpu, mem, value); keep at most BEAM."""
    items = sorted(states.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[1][0]))
    kept: list = []
    for (c, m), (v, ch) in items:
        if any(m2 <= m and v2 >= v - 1e-12 for (c2, m2), (v2, _) in kept):
            continue
        kept.append(((c, m), (v, ch)))
    if len(kept) > BEAM:
        kept.sort(key=lambda kv: -kv[1][0])
        kept = kept[:BEAM]
    return dict(kept)


def greedy_upgrade(problem: Problem, deadline: Deadline | None = None) -> Local:
    """Cheapest good option, value-density order, best fit; then per-server
    option upgrades (see the module notes).  Stops placing at the deadline."""
    loc = Local(problem)
    st = loc.st
    opt = {j: cheap_option(problem, j) for j in problem.pending}
    dens = {j: best_value(problem, j, opt[j]) / dominant(problem, j, opt[j]) for j in opt}
    order = job_order(problem, key=lambda j: (-dens[j], -problem.jobs[j].gpus, j))
    for k, j in enumerate(order):
        if deadline is not None and k % 32 == 0 and deadline.expired():
            break
        best, best_sc = None, None
        for s in np.flatnonzero(problem.allowed[j]):
            s = int(s)
            a = st.try_server(j, s, opt[j])
            if a is None:
                continue
            sc = leftover_score(st, s, a) - 1e-3 * problem.coef(j, opt[j], s)
            if best_sc is None or sc < best_sc:
                best, best_sc = a, sc
        if best is None:
            best = st.try_spread(j, opt[j])
        if best is not None:
            loc.place(j, best, opt[j])
    upgrade_all(loc, deadline)
    return loc


def upgrade_all(loc: Local, deadline: Deadline | None) -> None:
    """:meth:`Local.upgrade_server` on every server that holds a placed job."""
    for k, s in enumerate(sorted(s for s in range(loc.p.S) if loc.on[s])):
        if deadline is not None and k % 16 == 0 and deadline.expired():
            return
        loc.upgrade_server(s)


def local_search(problem: Problem, start: dict[int, Assign] | None = None, *,
                 deadline: Deadline, seed: int = 0) -> dict[int, Assign]:
    """Insert/swap moves with per-server option re-optimisation, from
    ``greedy-upgrade`` or ``start``, until no move helps or the deadline."""
    loc = greedy_upgrade(problem, deadline) if start is None else Local(problem, start)
    if start is not None:
        upgrade_all(loc, deadline)
    type_of = {}
    for k, members in enumerate(job_types(problem)):
        for j in members:
            type_of[j] = k
    opt = {j: cheap_option(problem, j) for j in problem.pending}
    dens = {j: best_value(problem, j, opt[j]) / dominant(problem, j, opt[j]) for j in opt}
    improved = True
    while improved and not deadline.expired():
        improved = False
        failed: set[int] = set()
        unplaced = [j for j in job_order(problem, key=lambda j: (-dens[j], j))
                    if j not in loc.st.assign]
        for j in unplaced:
            if deadline.expired():
                break
            if type_of[j] in failed:
                continue
            if try_insert(loc, j) or try_swap(loc, j):
                improved = True
            else:
                failed.add(type_of[j])
    return loc.solution()


def _server_value(loc: Local, s: int, jobs) -> float:
    return sum(loc.value(k, loc.st.option[k], s) for k in jobs)


def try_insert(loc: Local, j: int) -> bool:
    p = loc.p
    best = None
    for s in np.flatnonzero(p.allowed[j]):
        s = int(s)
        gpus = loc.st.gpus_on_server(j, s)
        if gpus is None:
            continue
        jobs = sorted(loc.on[s])
        c, m = loc.server_free(s, jobs)
        res = loc.reoptimize(s, jobs + [j], c, m)
        if res is None:
            continue
        gain = res[0] - _server_value(loc, s, jobs)
        if gain > 1e-9 and (best is None or gain > best[0] + 1e-12):
            best = (gain, s, jobs, res[1], gpus)
    if best is None:
        return False
    _, s, jobs, choice, gpus = best
    _apply(loc, s, jobs, choice, {j: gpus})
    return True


def try_swap(loc: Local, j: int) -> bool:
    p = loc.p
    best = None
    vj = best_value(p, j, max(range(len(p.options[j])), key=lambda o: p.options[j][o].base))
    for s in np.flatnonzero(p.allowed[j]):
        s = int(s)
        jobs = sorted(loc.on[s])
        cur = _server_value(loc, s, jobs)
        for v in jobs:
            if loc.value(v, loc.st.option[v], s) >= vj - 1e-12:
                continue
            a = loc.remove(v)
            gpus = loc.st.gpus_on_server(j, s)
            rest = [k for k in jobs if k != v]
            res = None
            if gpus is not None:
                c, m = loc.server_free(s, rest)
                res = loc.reoptimize(s, rest + [j], c, m)
            loc.place(v, a, loc_option(loc, v, a))
            if res is None:
                continue
            gain = res[0] - cur
            if gain > 1e-9 and (best is None or gain > best[0] + 1e-12):
                best = (gain, s, v, rest, res[1], gpus)
    if best is None:
        return False
    _, s, v, rest, choice, gpus = best
    loc.remove(v)
    _apply(loc, s, rest, choice, {j: gpus})
    return True


def loc_option(loc: Local, j: int, a: Assign) -> int:
    return option_of(loc.p, j, a)


def _apply(loc: Local, s: int, jobs, choice, new_gpus):
    p = loc.p
    gp = {k: [g for g, _ in loc.st.assign[k].gpus] for k in jobs}
    gp.update(new_gpus)
    for k in jobs:
        loc.remove(k)
    for k, o in sorted(choice.items()):
        na = p.make_cpu_assign(k, s, o) if p.jobs[k].gpus == 0 else p.make_assign(k, gp[k], o)
        loc.place(k, na, o)


def solve_greedy_upgrade(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``greedy-upgrade`` (see the module notes)."""
    loc = greedy_upgrade(problem, deadline)
    return Solution(loc.solution(), Status.FEASIBLE)


def solve_local_search(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``local-search`` (see the module notes)."""
    return Solution(local_search(problem, deadline=deadline, seed=seed), Status.FEASIBLE)

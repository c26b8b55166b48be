"""Slow reference copies of the heuristics as they were before the server
index (one scan of every server per job), kept to test that the indexed
versions place every job exactly where these do.

Three edits: the tie-breaks the indexed versions use, and the swap rule:

* :func:`leftover_score` (and the ``greedy-upgrade`` score built on it)
  compares exactly (``Fraction``) instead of in floating point;
* :meth:`Local.reoptimize` (the per-server option knapsack) sees the jobs in
  a canonical order -- by their option lists and values, then index -- when
  :data:`CANONICAL` is true (set it to False for the job-index order of
  before);
* :func:`try_swap` never swaps out a job ranked above the one it brings in.
"""
from __future__ import annotations

import copy
from bisect import insort
from collections import defaultdict
from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np

from alloc.deadline import Deadline
from alloc.model import MILLI, Status
from alloc.problem import (Assign, GridPoint, Problem, Solution, job_order, job_types, option_of,
                           split)

#: the knapsack sees a server's jobs in canonical order (False: by index)
CANONICAL = True



# ----------------------------------------------------------- greedy.py
INNER_LEVELS = ("switch", "socket")  # innermost first


class State:
    """Mutable free capacities for a problem: server CPU/memory, GPU milli.

    It starts from the capacities left by the running jobs kept in place
    (:attr:`Problem.fixed`); :attr:`assign` holds only what is placed on top.
    """

    def __init__(self, problem: Problem):
        self.p = problem
        self.cpu = problem.free_cpu.copy()
        self.mem = problem.free_mem.copy()
        self.gfree = problem.gpu_free.copy()
        self.assign: dict[int, Assign] = {}
        self.option: dict[int, int] = {}

    # ---------------------------------------------------------------- basics
    def copy(self) -> "State":
        st = State.__new__(State)
        st.p = self.p
        st.cpu, st.mem, st.gfree = self.cpu.copy(), self.mem.copy(), self.gfree.copy()
        st.assign, st.option = dict(self.assign), dict(self.option)
        return st

    def gpus_of(self, s: int) -> range:
        first = int(self.p.gpu_first[s])
        return range(first, first + int(self.p.srv_gpus[s]))

    def free_whole(self, s: int) -> list[int]:
        r = self.gpus_of(s)
        return [g for g in r if self.gfree[g] == MILLI]

    def place(self, j: int, a: Assign, option: int = 0) -> None:
        for g, m in a.gpus:
            self.gfree[g] -= m
        for s, c in a.cpu:
            self.cpu[s] -= c
        for s, m in a.mem:
            self.mem[s] -= m
        self.assign[j] = a
        self.option[j] = option

    def remove(self, j: int) -> Assign:
        a = self.assign.pop(j)
        self.option.pop(j, None)
        for g, m in a.gpus:
            self.gfree[g] += m
        for s, c in a.cpu:
            self.cpu[s] += c
        for s, m in a.mem:
            self.mem[s] += m
        return a

    def solution(self, status: Status = Status.FEASIBLE, **stats) -> Solution:
        return Solution(dict(self.assign), status, None, (), dict(stats))

    def value(self) -> float:
        """Objective value of the current assignment (model coefficients)."""
        p = self.p
        tot = 0.0
        for j, a in self.assign.items():
            s = a.cpu[0][0] if a.cpu else None
            tot += p.coef(j, self.option.get(j, 0), s)
        return tot

    # ------------------------------------------------------------ GPU choice
    def gpus_on_server(self, j: int, s: int) -> list[int] | None:
        """GPUs for job j on server s alone (ignores CPU/memory), or None."""
        p = self.p
        job = p.jobs[j]
        if not p.allowed[j, s]:
            return None
        if job.gpus == 0:
            return []
        if job.gpus > p.srv_gpus[s]:
            return None
        if job.gpu_milli < MILLI:
            best, best_free = None, MILLI + 1
            for g in self.gpus_of(s):
                f = self.gfree[g]
                if job.gpu_milli <= f < best_free:
                    best, best_free = g, f
            return None if best is None else [best]
        free = self.free_whole(s)
        k = job.gpus
        if len(free) < k:
            return None
        loc = job.locality
        for level in INNER_LEVELS:
            if level not in p.levels:
                continue
            dom = p.domain[level]
            groups: dict[int, list[int]] = {}
            for g in free:
                groups.setdefault(int(dom[g]), []).append(g)
            fit = [gs for gs in groups.values() if len(gs) >= k]
            if fit:
                fit.sort(key=lambda gs: (len(gs), gs[0]))
                return fit[0][:k]
            if loc == level:
                return None
        return free[:k]

    def fits_cpu(self, s: int, cpu: int, mem: int) -> bool:
        return self.cpu[s] >= cpu and self.mem[s] >= mem

    def try_server(self, j: int, s: int, option: int = 0) -> Assign | None:
        """An assignment of job j on server s alone at the option, or None."""
        opt = self.p.options[j][option]
        if not self.fits_cpu(s, opt.cpu, opt.mem):
            return None
        gpus = self.gpus_on_server(j, s)
        if gpus is None:
            return None
        if self.p.jobs[j].gpus == 0:
            return self.p.make_cpu_assign(j, s, option)
        return self.p.make_assign(j, gpus, option)

    def try_spread(self, j: int, option: int = 0,
                   servers: Sequence[int] | None = None, fewest_first: bool = False
                   ) -> Assign | None:
        """Whole-GPU job j over several servers (most usable GPUs first;
        ``fewest_first``: fewest whole free GPUs first, as Synergy spreads), CPU
        and memory split in proportion to GPUs; honours a rack locality."""
        p = self.p
        job = p.jobs[j]
        if job.gpus < 2 or job.gpu_milli < MILLI or job.locality in ("server",) + INNER_LEVELS:
            return None
        opt = p.options[j][option]
        cand = [s for s in (range(p.S) if servers is None else servers)
                if p.allowed[j, s] and self.cpu[s] > 0 and self.mem[s] > 0]
        if job.locality == "rack" and "rack" in p.levels:
            groups: dict[str, list[int]] = {}
            for s in cand:
                groups.setdefault(p.cluster.servers[s].rack or "", []).append(s)
            pools = list(groups.values())
        else:
            pools = [cand]
        per_gpu_cpu = -(-opt.cpu // job.gpus)
        per_gpu_mem = -(-opt.mem // job.gpus)
        for pool in pools:
            frees = []
            for s in pool:
                fw = self.free_whole(s)
                usable = min(len(fw), int(self.cpu[s] // max(per_gpu_cpu, 1)) if per_gpu_cpu else len(fw),
                             int(self.mem[s] // max(per_gpu_mem, 1)) if per_gpu_mem else len(fw))
                if usable > 0:
                    frees.append((usable, s, fw))
            frees.sort(key=(lambda t: (len(t[2]), t[1])) if fewest_first else
                       (lambda t: (-t[0], t[1])))
            need, chosen = job.gpus, []
            for usable, s, fw in frees:
                take = min(usable, need)
                chosen.extend(fw[:take])
                need -= take
                if need == 0:
                    break
            if need:
                continue
            a = p.make_assign(j, chosen, option)
            if all(self.cpu[s] >= c for s, c in a.cpu) and all(self.mem[s] >= m for s, m in a.mem):
                return a
        return None


def first_fit(state: State, j: int, option: int = 0,
              servers: Iterable[int] | None = None) -> Assign | None:
    for s in (range(state.p.S) if servers is None else servers):
        a = state.try_server(j, s, option)
        if a is not None:
            return a
    return state.try_spread(j, option)


def leftover_score(state: State, s: int, a: Assign) -> Fraction:
    p = state.p
    c = sum(v for _, v in a.cpu)
    m = sum(v for _, v in a.mem)
    g = sum(v for _, v in a.gpus)
    score = (Fraction(int(state.cpu[s]) - c, max(int(p.srv_cpu[s]), 1))
             + Fraction(int(state.mem[s]) - m, max(int(p.srv_mem[s]), 1)))
    if p.srv_gpus[s]:
        score += Fraction(int(state.gfree[list(state.gpus_of(s))].sum()) - g,
                          MILLI * int(p.srv_gpus[s]))
    return score


def best_fit(state: State, j: int, option: int = 0) -> Assign | None:
    best, best_score = None, None
    for s in range(state.p.S):
        a = state.try_server(j, s, option)
        if a is None:
            continue
        sc = leftover_score(state, s, a)
        if best_score is None or sc < best_score:
            best, best_score = a, sc
    return best if best is not None else state.try_spread(j, option)


def place_in_order(st: State, order: Sequence[int], pick, deadline: Deadline) -> bool:
    """Place each job of ``order`` where ``pick(state, j)`` says (skip when
    None); stops at the deadline.  Returns False when it ran out of time."""
    for k, j in enumerate(order):
        if k % 64 == 0 and deadline.expired():
            return False
        a = pick(st, j)
        if a is not None:
            st.place(j, a, 0)
    return True


def solve_proportional(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Synergy's baseline: every job at its request, in rank order, first fit."""
    st = State(problem)
    done = place_in_order(st, job_order(problem), lambda s, j: first_fit(s, j, 0), deadline)
    return st.solution(**({} if done else {"stopped": "time limit"}))


def solve_best_fit(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Largest jobs first (within rank), each on the server left fullest."""
    st = State(problem)
    jobs = problem.jobs
    order = job_order(problem, key=lambda j: (-jobs[j].gpus * jobs[j].gpu_milli,
                                              -jobs[j].cpu, -jobs[j].mem, j))
    done = place_in_order(st, order, lambda s, j: best_fit(s, j, 0), deadline)
    return st.solution(**({} if done else {"stopped": "time limit"}))


# ---------------------------------------------------------- improve.py
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
        if CANONICAL:
            jobs = sorted(jobs, key=lambda j: (
                tuple((o.cpu, o.mem) for o in p.options[j]),
                tuple(p.coef(j, o, s) for o in range(len(p.options[j]))), j))
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
    opt = {j: cheap_option(problem, j) for j in problem.pending}
    dens = {j: best_value(problem, j, opt[j]) / dominant(problem, j, opt[j]) for j in opt}
    order = job_order(problem, key=lambda j: (-dens[j], -problem.jobs[j].gpus, j))
    for k, j in enumerate(order):
        if deadline is not None and k % 32 == 0 and deadline.expired():
            break
        place_any(loc, j, opt[j])
    while upgrade_all(loc, deadline):      # an upgrade freed room: the jobs left out again
        placed = False
        for k, j in enumerate([j for j in order if j not in loc.st.assign]):
            if deadline is not None and k % 32 == 0 and deadline.expired():
                break
            placed = place_any(loc, j, opt[j]) or placed
        if not placed:
            break
    return loc


def place_best(loc: Local, j: int, o: int) -> bool:
    """Job j at option o: best fit (least leftover less 1e-3 its value), else spread."""
    problem, st = loc.p, loc.st
    best, best_sc = None, None
    for s in np.flatnonzero(problem.allowed[j]):
        s = int(s)
        a = st.try_server(j, s, o)
        if a is None:
            continue
        sc = leftover_score(st, s, a) - Fraction(1e-3 * problem.coef(j, o, s))
        if best_sc is None or sc < best_sc:
            best, best_sc = a, sc
    if best is None:
        best = st.try_spread(j, o)
    if best is None:
        return False
    loc.place(j, best, o)
    return True


def place_any(loc: Local, j: int, o: int) -> bool:
    """At option o, else at the request (option 0)."""
    return place_best(loc, j, o) or (o != 0 and place_best(loc, j, 0))


def upgrade_all(loc: Local, deadline: Deadline | None) -> bool:
    """:meth:`Local.upgrade_server` on every server that holds a placed job;
    True when some server's free CPU or memory grew."""
    freed = False
    for k, s in enumerate(sorted(s for s in range(loc.p.S) if loc.on[s])):
        if deadline is not None and k % 16 == 0 and deadline.expired():
            break
        c, m = int(loc.st.cpu[s]), int(loc.st.mem[s])
        if loc.upgrade_server(s) and (int(loc.st.cpu[s]) > c or int(loc.st.mem[s]) > m):
            freed = True
    return freed


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
    for j in job_order(problem, key=lambda j: (-dens[j], j)):   # what fits what is left
        if j not in loc.st.assign and not deadline.expired():
            place_any(loc, j, opt[j])
    return loc.solution()


def _server_value(loc: Local, s: int, jobs) -> float:
    return sum(loc.value(k, loc.st.option[k], s) for k in jobs)


def _below(loc: Local, j: int, s: int) -> list[int]:
    """Server s's jobs ranked no higher than j: the only ones a move for j
    re-chooses or takes out."""
    return sorted(k for k in loc.on[s] if loc.p.prio_key[k] >= loc.p.prio_key[j])


def try_insert(loc: Local, j: int) -> bool:
    p = loc.p
    best = None
    for s in np.flatnonzero(p.allowed[j]):
        s = int(s)
        gpus = loc.st.gpus_on_server(j, s)
        if gpus is None:
            continue
        jobs = _below(loc, j, s)
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
        jobs = _below(loc, j, s)
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


# ---------------------------------------------------------- options.py
def ideal_option(opts: Sequence[GridPoint], n: int, caps: Iterable[tuple[int, int, int]]) -> int:
    """Index of the best-case option: maximum speed among the options that fit
    one server's per-GPU bound (``caps``: (gpus, cpu, mem) of candidate
    servers), ties broken by least normalised resources."""
    caps = list(caps)
    if not caps or n == 0:
        return 0
    ref_c = max(c for _, c, _ in caps) or 1
    ref_m = max(m for _, _, m in caps) or 1

    def fits(o: GridPoint) -> bool:
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


def capped_option(opts: Sequence[GridPoint]) -> int:
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


def floor_options(opts: Sequence[GridPoint]) -> tuple[GridPoint, ...]:
    """The request plus every option at least as fast (the fairness floor)."""
    r = opts[0]
    return (r,) + tuple(o for o in opts[1:] if o.base >= r.base - 1e-12)


def floor_problem(problem: Problem) -> Problem:
    """A shallow copy of ``problem`` whose option lists keep only options with
    speed >= the request's (option 0 stays the request)."""
    p = copy.copy(problem)
    p.options = [floor_options(o) for o in problem.options]
    return p


# ---------------------------------------------------------- packers.py
class ProblemPacker:
    """Packing state over a compiled :class:`Problem` (wraps the greedy
    :class:`State`; handles GPU types, sharing, CPU-only jobs)."""

    def __init__(self, problem: Problem):
        self.p = problem
        self.st = State(problem)
        self.opts = problem.options
        self._jobs_on: dict[int, set] = defaultdict(set)
        self._free_milli = int(problem.gpu_free.sum())

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
            return st.try_spread(j, o, servers=cand, fewest_first=True)
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
        return st.try_spread(j, o, servers=cand, fewest_first=True)

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
        self.opts: dict[int, Sequence[GridPoint]] = {}
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

    def add_job(self, j: int, n: int, opts: Sequence[GridPoint]) -> None:
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


# ------------------------------------------------------------- tune.py
def greedy_core(P, order: Iterable[int], choose, deadline: Deadline | None = None) -> None:
    """Place each job at option ``choose(j)`` if it fits; skip it otherwise
    (stops at the deadline)."""
    if isinstance(P, FastPacker):
        P.greedy(order, choose)
        return
    for k, j in enumerate(order):
        if deadline is not None and k % 64 == 0 and deadline.expired():
            return
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


def _reclaim(P, s: int, need_c: int, need_m: int, capped: dict, exclude: int,
             rank: dict) -> None:
    peers = [p for p in P.jobs_on(s) if p != exclude]
    peers.sort(key=lambda p: (len(P.servers_of(p)), -P.per_gpu(p)[0], -P.per_gpu(p)[1],
                              rank[p]))
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


def _reclaim_and_fit(P, j: int, target, capped: dict, mode: str, rank: dict):
    fair = P.opts[j][0]
    ks = [k for _, k in target]
    cs, ms = split(fair.cpu, ks), split(fair.mem, ks)
    for (s, _), c, m in zip(target, cs, ms):
        _reclaim(P, s, c, m, capped, j, rank)
    return P.fit(j, 0, servers=[s for s, _ in target], mode=mode)


def tune_core(P, order: Iterable[int], ideal: dict, capped: dict,
              sort_by_gpus: bool = True, deadline: Deadline | None = None) -> dict:
    """Synergy-TUNE over a packer; returns counters of what happened.

    Consolidation comes first (the model files penalise spread jobs): ideal,
    fair, then fair after reclaiming on one server; only then, for a
    multi-GPU job, the same three steps spread over several servers.  Stops
    at the deadline (the jobs left are skipped)."""
    stats = {"ideal": 0, "fair": 0, "reclaimed": 0, "spread": 0, "skipped": 0}
    sel = admit(P, order)
    rank = {j: k for k, j in enumerate(sel)}
    if sort_by_gpus:
        sel.sort(key=lambda j: -P.need(j))
    fast = isinstance(P, FastPacker)
    for k, j in enumerate(sel):
        if deadline is not None and k % 32 == 0 and deadline.expired():
            stats["skipped"] += len(sel) - k
            stats["stopped"] = "time limit"
            break
        how = _tune_one(P, j, ideal[j], capped, fast, rank)
        stats[how or "skipped"] += 1
        if how and P.nservers(j) > 1:
            stats["spread"] += 1
    return stats


def _tune_one(P, j: int, o: int, capped: dict, fast: bool, rank: dict) -> str | None:
    """Place one admitted job: ideal, fair, or fair after reclaiming; returns
    how (``"ideal"``, ``"fair"``, ``"reclaimed"``) or None."""
    if fast:  # the common case first: ideal on one server (same as below)
        h = P.fit(j, o, mode="one")
        if h is not None:
            P.place(j, o, h)
            return "ideal"
    for mode in (("one", "spread") if P.n(j) >= 2 else ("one",)):
        h = P.fit(j, o, mode=mode)
        if h is not None:
            P.place(j, o, h)
            return "ideal"
        if o != 0:
            h = P.fit(j, 0, mode=mode)
            if h is not None:
                P.place(j, 0, h)
                return "fair"
        for target in P.targets(j):
            if (len(target) == 1) != (mode == "one"):
                continue
            h = _reclaim_and_fit(P, j, target, capped, mode, rank)
            if h is not None:
                P.place(j, 0, h)
                return "reclaimed"
    return None


# ------------------------------------------------------- registered solvers
def _choices(P: ProblemPacker) -> tuple[dict, dict]:
    p = P.p
    ideal, capped = {}, {}
    for j in p.pending:
        ideal[j] = ideal_option(p.options[j], p.jobs[j].gpus, P.server_caps(j))
        capped[j] = capped_option(p.options[j])
    return ideal, capped


def solve_greedy(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``synergy-greedy`` (see the module notes)."""
    P = ProblemPacker(problem)
    ideal, _ = _choices(P)
    greedy_core(P, job_order(problem), ideal.__getitem__, deadline)
    return P.st.solution()


def solve_tune(problem: Problem, *, deadline: Deadline, seed: int = 0,
               sort_by_gpus: bool = True) -> Solution:
    """``synergy-tune`` (see the module notes)."""
    P = ProblemPacker(problem)
    ideal, capped = _choices(P)
    stats = tune_core(P, job_order(problem), ideal, capped, sort_by_gpus=sort_by_gpus,
                      deadline=deadline)
    return P.st.solution(**stats)



"""Greedy placement engine and the baseline heuristics.

:class:`State` tracks free CPU, memory and per-GPU milli while jobs are placed
one at a time; every heuristic in alloc builds on it.  GPUs inside a server are
chosen to consolidate: the innermost hierarchy node (switch, then socket) that
fits, best fit among those; a shared job takes the fullest GPU that still fits.

Registered heuristics:

* ``proportional`` — Synergy's baseline: every job gets its request (its
  GPU-proportional CPU and memory), jobs in order (priority first), first fit
  over servers; multi-GPU jobs without a locality level may spread.
* ``best-fit`` — jobs by decreasing size, each on the server that leaves the
  least normalised free capacity  sum_r (free_r - use_r) / cap_r.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ...deadline import Deadline
from ...model import MILLI, Status
from ...problem import Assign, Problem, Solution, job_order

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
                   servers: Sequence[int] | None = None) -> Assign | None:
        """Whole-GPU job j over several servers (most free GPUs first), CPU and
        memory split in proportion to GPUs; honours a rack locality."""
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
            frees.sort(key=lambda t: (-t[0], t[1]))
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


def leftover_score(state: State, s: int, a: Assign) -> float:
    p = state.p
    c = sum(v for _, v in a.cpu)
    m = sum(v for _, v in a.mem)
    g = sum(v for _, v in a.gpus)
    score = (state.cpu[s] - c) / max(p.srv_cpu[s], 1) + (state.mem[s] - m) / max(p.srv_mem[s], 1)
    if p.srv_gpus[s]:
        score += (state.gfree[list(state.gpus_of(s))].sum() - g) / (MILLI * p.srv_gpus[s])
    return float(score)


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

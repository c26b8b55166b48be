r"""The baseline heuristics, on the shared greedy state
(`alloc.engines.greedy.state`).

* ``proportional`` -- Synergy's baseline: every job gets its request (its
  GPU-proportional CPU and memory), jobs in order (priority first), first fit
  over servers; multi-GPU jobs without a locality level may spread.  When
  the call allows moves it re-places every job from scratch, as Synergy's
  rounds do (`alloc.engines.greedy.scratch`).
* ``best-fit`` -- jobs by decreasing size, each on the server that leaves the
  least normalised free capacity, the sum over resources r of
  ``(free_r - use_r) / cap_r``, compared exactly (ties: lowest index).

Both spread a job whose locality is a level above the servers inside one
of its domains, place a job with a preferred level by Kueue's descent when
no server holds it, and end by moving preferred jobs into one node of
their level where one holds them (`alloc.engines.greedy.descent`).
"""
from __future__ import annotations

from typing import Sequence

from ...deadline import Deadline
from ...problem import Problem, Solution
from ...engines.greedy.state import State
from ...engines.greedy.rules import best_fit, first_fit, rank_order
from ...engines.greedy.compact import compact
from ...engines.greedy.scratch import PLAYED, back, first_fit_all, from_scratch, kept


def _place_all(st: State, order: Sequence[int], pick, deadline: Deadline) -> dict:
    for k, j in enumerate(order):
        if k % 64 == 0 and deadline.expired():
            return {"stopped": "time limit"}
        a = pick(st, j, 0)
        if a is not None:
            st.place(j, a, 0)
    compact(st, deadline=deadline)
    return {}


def _proportional(p: Problem, deadline: Deadline) -> Solution:
    st = State(p)
    return st.solution(**_place_all(st, rank_order(p), first_fit, deadline))


def solve_proportional(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Synergy's baseline: every job at its request, in rank order, first
    fit; the running jobs where they run."""
    return _proportional(problem, deadline)


def solve_proportional_moving(problem: Problem, *, deadline: Deadline,
                              seed: int = 0) -> Solution:
    """``proportional`` (declares ``migration``): `solve_proportional` from
    scratch when the call allows any number of moves
    (`alloc.engines.greedy.scratch`: in a loop, the last round's answer
    reused where it must be the same, `first_fit_all`), else on the problem
    as given, its running jobs kept where they run
    (`alloc.engines.greedy.scratch.kept`)."""
    scratch = from_scratch(problem)
    if scratch is not None:
        carry = problem.carry
        st = State(scratch)
        stats, played = first_fit_all(st, rank_order(scratch), deadline,
                                      carry.take(PLAYED) if carry is not None else None)
        if not stats:
            compact(st, deadline=deadline)
        out = back(problem, scratch, st.solution(**stats))
        if played is not None and carry is not None:
            carry.keep(PLAYED, played)
        if out is not None:
            return out
    return kept(problem, _proportional(problem, deadline))


def solve_best_fit(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Largest jobs first (within rank), each on the server left fullest."""
    st = State(problem)
    jobs = problem.jobs

    def size(j: int) -> tuple:
        job = jobs[j]
        return -job.gpus * job.gpu_milli, -job.cpu, -job.mem, j
    order = rank_order(problem, size)
    return st.solution(**_place_all(st, order, best_fit, deadline))


__all__ = ["solve_best_fit", "solve_proportional", "solve_proportional_moving"]

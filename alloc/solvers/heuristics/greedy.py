r"""The baseline heuristics, on the shared greedy state
(`alloc.engines.greedy.state`).

* ``proportional`` -- Synergy's baseline: every job gets its request (its
  GPU-proportional CPU and memory), jobs in order (priority first), first fit
  over servers; multi-GPU jobs without a locality level may spread.
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


def _place_all(st: State, order: Sequence[int], pick, deadline: Deadline) -> dict:
    for k, j in enumerate(order):
        if k % 64 == 0 and deadline.expired():
            return {"stopped": "time limit"}
        a = pick(st, j, 0)
        if a is not None:
            st.place(j, a, 0)
    compact(st, deadline=deadline)
    return {}


def solve_proportional(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Synergy's baseline: every job at its request, in rank order, first fit."""
    st = State(problem)
    return st.solution(**_place_all(st, rank_order(problem), first_fit, deadline))


def solve_best_fit(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """Largest jobs first (within rank), each on the server left fullest."""
    st = State(problem)
    jobs = problem.jobs

    def size(j: int) -> tuple:
        job = jobs[j]
        return -job.gpus * job.gpu_milli, -job.cpu, -job.mem, j
    order = rank_order(problem, size)
    return st.solution(**_place_all(st, order, best_fit, deadline))


__all__ = ["solve_best_fit", "solve_proportional"]

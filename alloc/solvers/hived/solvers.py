"""The ``hived`` solver: one round of the buddy-cell engine
(`alloc.solvers.common.cells`, where the rules are written out) with the
call's options."""
from __future__ import annotations

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution
from ...tenancy import binding_keys
from ..common.cell_round import run


def solve_hived(problem: Problem, *, deadline: Deadline, seed: int = 0, preempt: bool = True,
                colocate: bool = True, grow: bool = True, gpu_mem_capacity=None) -> Solution:
    """``hived`` (see the module notes); moves under the call's allowance;
    out of time it returns the jobs placed so far."""
    eng, preempted, stats = run(problem, preempt=preempt, colocate=colocate, grow=grow,
                                gpu_mem_capacity=gpu_mem_capacity, deadline=deadline)
    stats["binding"] = binding_keys(eng.tree, eng.bound)
    stats["preemptions"] = len(preempted)
    if gpu_mem_capacity:
        stats["gpu_mem_capacity"] = dict(gpu_mem_capacity)
    return Solution(dict(eng.assign), Status.FEASIBLE, None, tuple(sorted(preempted)), stats)


__all__ = ["solve_hived"]

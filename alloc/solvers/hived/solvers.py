"""The ``hived`` solver: one round of the buddy-cell engine
(`alloc.engines.cells`, where the rules are written out) with the
call's options."""
from __future__ import annotations

from ...deadline import Deadline
from ...deprecation import warn_renamed_option
from ...model import Status
from ...problem import Problem, Solution
from ...tenancy import binding_keys
from ...engines.cells.round import run


def solve_hived(problem: Problem, *, deadline: Deadline, seed: int = 0,
                tenancy_preempt: bool = True, preempt: bool | None = None,
                colocate: bool = True, grow: bool = True, gpu_mem_capacity=None) -> Solution:
    """``hived`` (see the module notes); moves under the call's allowance;
    out of time it returns the jobs placed so far.  ``preempt`` is the
    deprecated name of ``tenancy_preempt`` (it wins when given)."""
    if preempt is not None:
        warn_renamed_option("solver 'hived'", "preempt", "tenancy_preempt")
        tenancy_preempt = preempt
    eng, preempted, stats = run(problem, preempt=tenancy_preempt, colocate=colocate, grow=grow,
                                gpu_mem_capacity=gpu_mem_capacity, deadline=deadline)
    stats["binding"] = binding_keys(eng.tree, eng.bound)
    stats["preemptions"] = len(preempted)
    if gpu_mem_capacity:
        stats["gpu_mem_capacity"] = dict(gpu_mem_capacity)
    return Solution(dict(eng.assign), Status.FEASIBLE, None, tuple(sorted(preempted)), stats)


__all__ = ["solve_hived"]

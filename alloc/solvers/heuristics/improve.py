"""The value-aware heuristics ``greedy-upgrade`` and ``local-search``, on the
shared machinery of `alloc.engines.greedy.improve` (the algorithm is
written out there: the exact family's warm start runs it too).  Both end by
moving preferred jobs into one node of their level where one holds them
(`alloc.engines.greedy.compact.compacted`)."""
from __future__ import annotations

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution
from ...engines.greedy.improve import greedy_upgrade, local_search
from ...engines.greedy.compact import compacted


def solve_greedy_upgrade(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``greedy-upgrade`` (see the module notes)."""
    loc = greedy_upgrade(problem, deadline)
    return Solution(compacted(problem, loc.solution(), deadline), Status.FEASIBLE)


def solve_local_search(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``local-search`` (see the module notes)."""
    return Solution(compacted(problem, local_search(problem, deadline=deadline, seed=seed),
                              deadline), Status.FEASIBLE)


__all__ = ["solve_greedy_upgrade", "solve_local_search"]

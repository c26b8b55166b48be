"""The configuration model on a whole problem, or on parts solved in parallel
when the problem is large (the exact family's solvers and ``synergy-opt``
call it)."""
from __future__ import annotations

import os

from ...deadline import Deadline
from ...problem import Problem, Solution
from .driver import solve_exact
from .backend import Backend
from .partition import solve_partitioned

#: ``parts=0`` (auto) partitions instances with at least this many servers...
AUTO_PARTITION_SERVERS = 1024
#: ... and at least this many server classes (the configuration model's size
#: grows with the classes, not with the servers: one class never gains).
AUTO_PARTITION_CLASSES = 64


def auto_parts(problem: Problem, parts: int) -> int:
    """The number of parts: ``parts`` when given (1 = whole), else one per core
    on large instances with many server classes, else one."""
    if parts:
        return parts
    if problem.S < AUTO_PARTITION_SERVERS:
        return 1
    from .aggregate import canonical_gpus
    shapes = {(int(problem.free_cpu[s]), int(problem.free_mem[s]), canonical_gpus(problem, s)[1])
              for s in range(problem.S)}
    return max(2, os.cpu_count() or 1) if len(shapes) >= AUTO_PARTITION_CLASSES else 1


def configuration(problem: Problem, engine: Backend, *, deadline: Deadline, seed: int = 0,
                  warm_share: float = 0.15, cg_share: float = 0.45, parts: int = 0,
                  executor: str = "process", ray_address: str | None = None) -> Solution:
    """The configuration-model driver on the whole problem or on ``parts`` parts."""
    k = auto_parts(problem, parts)
    if k > 1 and len(problem.pending) > k:
        return solve_partitioned(problem, engine, deadline=deadline, seed=seed, parts=k,
                                 executor=executor, ray_address=ray_address,
                                 warm_share=warm_share, cg_share=cg_share)
    return solve_exact(problem, engine, deadline=deadline, seed=seed, warm_share=warm_share,
                       cg_share=cg_share)


__all__ = ["AUTO_PARTITION_CLASSES", "AUTO_PARTITION_SERVERS", "auto_parts", "configuration"]

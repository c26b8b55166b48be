"""Deprecated: the conformance suite moved to `alloc.testing`.

The names of this module keep working for one release and warn
(``DeprecationWarning``):

* `check_solver(name, cluster, jobs, ...)` -- now
  `alloc.testing.solver_problems` (its problems are tagged with their check,
  ``"[violations] best-fit: ..."``); `alloc.testing.check_solver(name)` runs
  the whole suite on a solver in one call;
* `instances(...)` -- now `alloc.testing.strategies.instances`, which takes
  the capabilities to draw for (its old flags map onto them);
* `applicable_solvers`, `check_across`, `check_against_optimum` -- the same
  functions in `alloc.testing`.
"""
from __future__ import annotations

import warnings
from typing import Sequence

from .model import Allocation, Cluster, Job
from .testing.conformance import (applicable_solvers, check_across, check_against_optimum,
                                  order_preemption_problems)

_MOVED = "alloc.conformance.{} is deprecated; use alloc.testing.{}"


def check_solver(name: str, cluster: Cluster, jobs: Sequence[Job], *, objective="throughput",
                 seed: int = 0, time_limit: float = 5.0, max_moves: int | None = None,
                 move_cost: float | None = None, order: Sequence[str] | None = None,
                 preempt: str | None = None) -> tuple[list[str], Allocation | None]:
    """Deprecated: `alloc.testing.solver_problems` (the promised properties
    of `alloc.testing.PROMISES` are not checked here, as before)."""
    warnings.warn(_MOVED.format("check_solver", "solver_problems"), DeprecationWarning,
                  stacklevel=2)
    from .testing.conformance import solver_problems
    return solver_problems(name, cluster, jobs, objective=objective, seed=seed,
                           time_limit=time_limit, max_moves=max_moves, move_cost=move_cost,
                           order=order, preempt=preempt, promises=())


def instances(max_servers: int = 3, max_jobs: int = 6,
              models: Sequence[str] = ("res18", "bert", "alexnet", "res50"),
              tenancy: bool = False, running: bool = False, random_profiles: bool = False,
              elastic: bool = False):
    """Deprecated: `alloc.testing.strategies.instances` with the capabilities
    the flags name (sharing, locality and spread always; tenancy, elastic)."""
    warnings.warn(_MOVED.format("instances", "strategies.instances"), DeprecationWarning,
                  stacklevel=2)
    from .testing.strategies import instances as drawn
    caps = {"sharing", "locality", "spread"} | ({"tenancy"} if tenancy else set()) \
        | ({"elastic"} if elastic else set())
    return drawn(max_servers, max_jobs, capabilities=caps, running=running,
                 random_profiles=random_profiles, models=models)


__all__ = ["applicable_solvers", "check_across", "check_against_optimum", "check_solver",
           "instances", "order_preemption_problems"]

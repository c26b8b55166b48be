"""Fairness and safety properties as a public testing API.

Property checkers (plain functions; each returns one readable line per
breach, empty when the property holds; no hypothesis needed):

* on placements (`alloc.testing.placements`): `overcommit_problems`,
  `stability_problems` (running jobs), `sharing_safety_problems` (HiveD's
  safety), `guarantee_problems` (HiveD's guarantee: a tenant's guaranteed
  job is served while its cells have room), `order_problems` (the caller's
  order), `idle_room_problems`, `reason_problems` (every waiting job says
  why);
* DRF on placements, grouped by user (`alloc.testing.fairness`):
  `placement_envy_problems`, `placement_sharing_incentive_problems`,
  `placement_pareto_problems`, `placement_manipulation_gain`;
* DRF over divisible resources (`alloc.testing.drf`): `envy_problems`,
  `sharing_incentive_problems`, `pareto_problems`, `feasibility_problems`,
  `manipulation_gain`;
* time shares (`alloc.testing.shares`): `max_min_problems`,
  `water_filling_problems`, `finish_time_fairness_problems`;
* users (`alloc.testing.users`): `by_tenant`, `by_job`, `owners`,
  `dominant_shares`;
* the room a set of placements leaves and a sound one-job fit
  (`alloc.testing.room`): `room_left`, `place_one`;
* a simulated run (`alloc.testing.runs`): `run_problems` (every job once,
  time forward, no job faster than alone, capacity, a summary that agrees
  with its timeline), for any stack of policies.

The conformance suite: `solver_problems` (one solver, one call),
`check_across` (several solvers, one call), and -- with hypothesis, the
``test`` extra -- `check_solver` (one call runs the whole suite on a solver)
and `check_solvers` (every registered solver, with the cross-solver checks).

Hypothesis strategies (`alloc.testing.strategies`, the ``test`` extra):
`calls`, `instances`, `clusters`, `tenants`, `profiles`, `markets`,
`shares_problems`.

The names that need hypothesis are imported on first use, so
``import alloc.testing`` (and ``import alloc``) works without it.  The page
"Testing fairness and safety" (`docs/testing.md`) shows them at work.
"""
from __future__ import annotations

import importlib

from .conformance import (CHECKS, PROMISES, applicable_solvers, check_across,
                          check_against_optimum, solver_problems)
from .drf import (envy_problems, feasibility_problems, manipulation_gain, pareto_problems,
                  sharing_incentive_problems, tasks_with)
from .fairness import (placement_envy_problems, placement_manipulation_gain,
                       placement_pareto_problems, placement_sharing_incentive_problems)
from .placements import (guarantee_problems, idle_room_problems, order_problems,
                         overcommit_problems, ranks, reason_problems, sharing_safety_problems,
                         stability_problems)
from .room import Room, place_one, room_left
from .runs import run_problems
from .shares import finish_time_fairness_problems, max_min_problems, water_filling_problems
from .users import Owner, by_job, by_tenant, dominant_shares, owners, user_weights

#: Names that need hypothesis, and their modules.
_WITH_HYPOTHESIS = {
    "check_solver": "suite", "check_solvers": "suite", "SuiteReport": "suite",
    "calls": "strategies", "instances": "strategies", "clusters": "strategies",
    "tenants": "strategies", "profiles": "strategies", "markets": "strategies",
    "shares_problems": "strategies", "Call": "strategies",
}


def __getattr__(name: str):
    mod = _WITH_HYPOTHESIS.get(name)
    if mod is None:
        raise AttributeError(f"module 'alloc.testing' has no attribute {name!r}")
    try:
        return getattr(importlib.import_module(f"alloc.testing.{mod}"), name)
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise ImportError(f"alloc.testing.{name} needs hypothesis: pip install "
                          f"'alloc[test]'") from None


__all__ = ["CHECKS", "Owner", "PROMISES", "Room", "applicable_solvers", "by_job", "by_tenant",
           "check_across", "check_against_optimum", "dominant_shares", "envy_problems",
           "feasibility_problems", "finish_time_fairness_problems", "guarantee_problems",
           "idle_room_problems",
           "manipulation_gain", "max_min_problems", "order_problems", "overcommit_problems",
           "owners", "pareto_problems", "place_one", "placement_envy_problems",
           "placement_manipulation_gain", "placement_pareto_problems",
           "placement_sharing_incentive_problems", "ranks", "reason_problems", "room_left",
           "run_problems",
           "sharing_incentive_problems", "sharing_safety_problems", "solver_problems",
           "stability_problems", "tasks_with", "user_weights", "water_filling_problems",
           *_WITH_HYPOTHESIS]

"""Solver families, one package each, and the machinery they share.

Each family package declares its solvers in a ``SOLVERS`` tuple (see
`alloc.registry`); the solve functions live in its modules and are imported
on first use.  No family imports another: what two families share lives in
`alloc.solvers.common`, and a family that needs another family's solver asks
the registry for it by name.

* `alloc.solvers.common` -- shared machinery, not a family: the server index,
  the greedy state, value-aware local search, the buddy-cell engine, the
  configuration model;
* `alloc.solvers.heuristics` -- greedy baselines and value-aware local search;
* `alloc.solvers.exact` -- the aggregated configuration model and the tenancy
  model (CP-SAT, HiGHS, CBC);
* `alloc.solvers.synergy` -- Synergy's resource-sensitive allocators (OSDI'22);
* `alloc.solvers.fgd` -- online GPU-sharing policies and FGD (ATC'23);
* `alloc.solvers.hived` -- HiveD tenancy: buddy cells (OSDI'20);
* `alloc.solvers.drf` -- Dominant Resource Fairness by discrete progressive
  filling (NSDI'11);
* `alloc.solvers.antman`, `alloc.solvers.gandiva` -- AntMan's and Gandiva's
  schedulers.
"""

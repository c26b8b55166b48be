"""Solver families, one package each.

Each package declares its solvers in a ``SOLVERS`` tuple (see
:mod:`alloc.registry`); the solve functions live in its modules and are
imported on first use.

* :mod:`~alloc.solvers.heuristics` -- greedy baselines and value-aware local search;
* :mod:`~alloc.solvers.exact` -- the aggregated configuration model (CP-SAT, HiGHS, CBC);
* :mod:`~alloc.solvers.synergy` -- Synergy's resource-sensitive allocators (OSDI'22);
* :mod:`~alloc.solvers.fgd` -- online GPU-sharing policies and FGD (ATC'23);
* :mod:`~alloc.solvers.hived` -- HiveD tenancy: buddy cells and the tenancy model (OSDI'20);
* :mod:`~alloc.solvers.drf` -- Dominant Resource Fairness by discrete progressive filling
  (NSDI'11).
"""

"""Solver families, one package each, on the engines.

Each family package declares its solvers in a ``SOLVERS`` tuple (see
`alloc.registry`); the solve functions live in its modules and are imported
on first use.  What two families share is an engine (`alloc.engines`: the
buddy-cell engine, the configuration model, the greedy machinery), which a
family imports and names in its notes.  A family imports another family
only where `USES` declares it; a family that needs another family's
*solver* asks the registry for it by name (the exact family's warm start
runs every applicable built-in heuristic that way).

* `alloc.solvers.heuristics` -- greedy baselines and value-aware local search;
* `alloc.solvers.exact` -- the configuration model and the tenancy model
  (CP-SAT, HiGHS, CBC);
* `alloc.solvers.synergy` -- Synergy's resource-sensitive allocators (OSDI'22);
* `alloc.solvers.fgd` -- online GPU-sharing policies and FGD (ATC'23);
* `alloc.solvers.hived` -- HiveD tenancy: buddy cells (OSDI'20);
* `alloc.solvers.drf` -- Dominant Resource Fairness by discrete progressive
  filling (NSDI'11);
* `alloc.solvers.antman`, `alloc.solvers.gandiva` -- AntMan's and Gandiva's
  schedulers;
* `alloc.solvers.tiresias` -- the placements of the Tiresias experiment;
* `alloc.solvers.tas` -- Kueue's and Slurm's topology-aware placement.
"""

#: The other families each family may import (``{family: (family, ...)}``),
#: beside the engines and its own modules: none.  A family that runs another
#: family's solvers asks the registry for them by name, so that the families
#: stay apart and nothing is imported before it is used.  An entry here is the one
#: way to let a family import another; `tests/test_layout.py` holds every
#: import to it and keeps the declared edges free of cycles.
USES: dict[str, tuple[str, ...]] = {}

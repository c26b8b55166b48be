"""Greedy baselines and value-aware local search.

* ``proportional`` -- Synergy's baseline: the request (the GPU-proportional
  share), jobs in order, first fit (from scratch when moves are unlimited);
* ``best-fit`` -- largest jobs first, each on the server left fullest;
* ``greedy-upgrade`` -- cheapest good CPU/memory point, value-density order,
  then exact per-server option upgrades;
* ``local-search`` -- greedy-upgrade then insert/swap moves.

All four run on the greedy engine (`alloc.engines.greedy`): ``proportional``
and ``best-fit`` are its first-fit and best-fit rules in order
(`alloc.engines.greedy.rules`), ``greedy-upgrade`` and ``local-search`` its
value-aware greedy and local search (`alloc.engines.greedy.improve`, where
the algorithm is written out); a job with a preferred level ends compacted
into one node of it (`alloc.engines.greedy.compact`).
"""
from ...registry import declare

_BASE = ("sharing", "locality", "preferred", "spread", "even-spread", "order-preemption")

SOLVERS = (
    declare("proportional", "alloc.solvers.heuristics.greedy:solve_proportional_moving", objectives=(),
            capabilities=_BASE + ("migration",), ignores_unfit=True,
            description="GPU-proportional CPU/memory, first fit (Synergy's baseline)"),
    declare("best-fit", "alloc.solvers.heuristics.greedy:solve_best_fit", objectives=(), capabilities=_BASE,
            ignores_unfit=True, description="largest jobs first, each on the server left fullest"),
    declare("greedy-upgrade", "alloc.solvers.heuristics.improve:solve_greedy_upgrade",
            capabilities=_BASE + ("grid",),
            description="cheapest good CPU/memory point, value-density order, then "
                        "per-server exact option upgrades"),
    declare("local-search", "alloc.solvers.heuristics.improve:solve_local_search",
            capabilities=_BASE + ("grid",),
            description="greedy-upgrade followed by insert/swap moves with per-server "
                        "option re-optimisation"),
)

"""Greedy baselines and value-aware local search.

* ``proportional`` -- Synergy's baseline: the request (the GPU-proportional
  share), jobs in order, first fit (from scratch when moves are unlimited);
* ``best-fit`` -- largest jobs first, each on the server left fullest;
* ``greedy-upgrade`` -- cheapest good CPU/memory point, value-density order,
  then exact per-server option upgrades;
* ``local-search`` -- greedy-upgrade then insert/swap moves.
"""
from ...registry import declare

_BASE = ("sharing", "locality", "preferred", "spread", "order-preemption")

SOLVERS = (
    declare("proportional", "alloc.solvers.heuristics.greedy:solve_proportional", objectives=(),
            capabilities=_BASE + ("migration",),
            description="GPU-proportional CPU/memory, first fit (Synergy's baseline)"),
    declare("best-fit", "alloc.solvers.heuristics.greedy:solve_best_fit", objectives=(), capabilities=_BASE,
            description="largest jobs first, each on the server left fullest"),
    declare("greedy-upgrade", "alloc.solvers.heuristics.improve:solve_greedy_upgrade",
            capabilities=_BASE + ("grid",),
            description="cheapest good CPU/memory point, value-density order, then "
                        "per-server exact option upgrades"),
    declare("local-search", "alloc.solvers.heuristics.improve:solve_local_search",
            capabilities=_BASE + ("grid",),
            description="greedy-upgrade followed by insert/swap moves with per-server "
                        "option re-optimisation"),
)

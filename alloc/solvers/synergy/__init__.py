"""Synergy's resource-sensitive allocators (Mohan et al., OSDI'22).

* ``synergy-greedy`` -- each job at its best-case CPU/memory point or skipped;
* ``synergy-tune`` -- best case, else proportional, else reclaim peers' excess;
* ``synergy-opt`` -- the joint problem with the fairness floor, exact.

See `alloc.solvers.synergy.tune` and `alloc.solvers.synergy.opt`.  The
packers place on the greedy engine's state and server index
(`alloc.engines.greedy`); ``synergy-opt`` with the ``cpsat`` or ``milp``
backend is the configuration model (`alloc.engines.configuration`) on the
problem with the fairness floor.

The simulator's Synergy progress model uses `job_choices` (a job's
best-case and capped CPU/memory option), which imports nothing until called.
Its rounds go through the session like any other: GREEDY and TUNE re-place
every job from scratch when the call allows any number of moves
(`alloc.engines.greedy.scratch`).
"""
from __future__ import annotations

from ...options import Option
from ...registry import declare

_CAPS = ("grid", "sharing", "spread", "order-preemption")
#: GREEDY and TUNE re-place every job from scratch when the call allows moves.
_MOVING = _CAPS + ("migration",)

SOLVERS = (
    declare("synergy-greedy", "alloc.solvers.synergy.tune:solve_greedy_moving", objectives=(),
            capabilities=_MOVING,
            description="Synergy GREEDY: each job at its best-case CPU/memory point or skipped"),
    declare("synergy-tune", "alloc.solvers.synergy.tune:solve_tune_moving", objectives=(),
            capabilities=_MOVING, admission="gpus",
            options=(Option("sort_by_gpus", "bool", True,
                            "place the admitted jobs largest GPU demand first"),),
            description="Synergy TUNE: best case, else proportional, else reclaim peers' excess"),
    declare("synergy-opt", "alloc.solvers.synergy.opt:solve_opt", exact=True,
            capabilities=_CAPS, requires=("ortools",),
            options=(
                Option("backend", "str", "auto", "how the floor problem is solved",
                       choices=("auto", "cpsat", "milp", "aggregated")),
                Option("place_all", "bool", False, "every job must be placed"),
                Option("lp_bound", "bool", True, "also report Synergy's big-machine LP bound"),
                Option("engine", "str", "highs", "engine of the aggregated backend",
                       choices=("highs", "cpsat")),
                Option("symmetry", "bool", False,
                       "order identical servers by used CPU (aggregated backend)"),
            ),
            restricts="fairness floor: only CPU/memory points at least as fast as the request",
            description="Synergy OPT: joint grid point and placement with the fairness floor"),
)


def job_choices(opts, n: int, caps) -> tuple[int, int]:
    """The best-case option (its speed the highest among the options that fit
    one of the servers ``caps``, ``(gpus, cpu, mem)`` each) and the capped
    option (the best inside the request's CPU and memory) of a job of ``n``
    GPUs with options ``opts`` (`alloc.solvers.synergy.options`)."""
    from .options import capped_option, ideal_option
    return ideal_option(opts, n, caps), capped_option(opts)

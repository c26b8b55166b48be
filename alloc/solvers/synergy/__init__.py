"""Synergy's resource-sensitive allocators (Mohan et al., OSDI'22).

* ``synergy-greedy`` -- each job at its best-case CPU/memory point or skipped;
* ``synergy-tune`` -- best case, else proportional, else reclaim peers' excess;
* ``synergy-opt`` -- the joint problem with the fairness floor, exact.

See `alloc.solvers.synergy.tune` and `alloc.solvers.synergy.opt`.  The
packers place on the greedy engine's state and server index
(`alloc.engines.greedy`); ``synergy-opt`` with the ``cpsat`` or ``milp``
backend is the configuration model (`alloc.engines.configuration`) on the
problem with the fairness floor.

A round-based simulator uses the package's two public functions: `fast_round`
(one reusable round of ``proportional``, ``synergy-greedy`` or
``synergy-tune`` on identical servers, equal to `allocate()`) and
`job_choices` (a job's best-case and capped CPU/memory option).  Neither
imports anything until called.
"""
from __future__ import annotations

from typing import Sequence

from ...options import Option
from ...registry import declare

_CAPS = ("grid", "sharing", "spread", "order-preemption")

SOLVERS = (
    declare("synergy-greedy", "alloc.solvers.synergy.tune:solve_greedy", objectives=(), capabilities=_CAPS,
            description="Synergy GREEDY: each job at its best-case CPU/memory point or skipped"),
    declare("synergy-tune", "alloc.solvers.synergy.tune:solve_tune", objectives=(), capabilities=_CAPS,
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


def fast_round(solver: str, gpus: Sequence[int], cpu: Sequence[int], mem: Sequence[int]):
    """A reusable round of ``solver`` on servers with ``gpus`` GPUs, ``cpu``
    milli-cores and ``mem`` MiB each, proven equal to the registered solver
    (`alloc.solvers.synergy.rounds.FastRound`), or None when ``solver`` has
    none (the caller goes through `allocate()`)."""
    from .rounds import SOLVERS as FAST, FastRound
    return FastRound(solver, gpus, cpu, mem) if solver in FAST else None


def job_choices(opts, n: int, caps) -> tuple[int, int]:
    """The best-case option (its speed the highest among the options that fit
    one of the servers ``caps``, ``(gpus, cpu, mem)`` each) and the capped
    option (the best inside the request's CPU and memory) of a job of ``n``
    GPUs with options ``opts`` (`alloc.solvers.synergy.options`)."""
    from .options import capped_option, ideal_option
    return ideal_option(opts, n, caps), capped_option(opts)

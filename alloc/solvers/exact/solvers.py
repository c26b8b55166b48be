"""The exact family's registered solvers: one driver, three engines, the
partitioned driver for large instances, and the tenancy model for the inputs
the configuration model does not express.

Dispatch (:func:`run`):

* tenants, guaranteed or opportunistic jobs, elastic jobs, or running jobs
  the call lets move or a pending job may preempt (:func:`needs_tenancy_model`) go to the tenancy model
  (:func:`alloc.solvers.hived.exact.solve_tenancy`) with the same engine: it
  has the cells, preemption, migration and elastic sizes, and reports its
  restrictions against the instance itself;
* the rest goes to the configuration model, on the whole problem or on
  ``parts`` parts (:func:`auto_parts`).
"""
from __future__ import annotations

import os
from dataclasses import replace

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution
from .driver import solve_exact
from .engine import Engine
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


def needs_tenancy_model(problem: Problem) -> bool:
    """True when the input has what only the tenancy model expresses: tenants,
    guaranteed or tenant jobs, elastic jobs, or running jobs that may move or
    that a pending job may preempt (:attr:`Problem.preemption_possible`)."""
    if problem.cluster.tenants or problem.preemption_possible or \
            (problem.fixed and problem.moves_allowed):
        return True
    return any(j.tenant is not None or j.guaranteed or j.elastic for j in problem.jobs)


def run(problem: Problem, engine: Engine, *, deadline: Deadline, seed: int = 0,
        preemption_cost: float = 0.0, guaranteed_first: bool = True, **config) -> Solution:
    """The tenancy model or the configuration model (module notes); running
    jobs the configuration model keeps are part of its answer.  ``config``:
    the options of :func:`configuration`."""
    if needs_tenancy_model(problem):
        return tenancy(problem, engine, deadline=deadline, seed=seed,
                       preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                       warm_share=config.get("warm_share", 0.15))
    sol = configuration(problem, engine, deadline=deadline, seed=seed, **config)
    if problem.fixed:
        sol = replace(sol, assign={**problem.fixed, **sol.assign})
    return sol


def tenancy(problem: Problem, engine: Engine, *, deadline: Deadline, seed: int,
            preemption_cost: float, guaranteed_first: bool, warm_share: float) -> Solution:
    """The tenancy model, never below the applicable heuristics: on clusters
    without tenants' cells they run first (running jobs kept where they run,
    a feasible answer of the instance) within ``warm_share`` of the time,
    and the best of them is
    returned when it scores more than the model's answer (the score the call
    reports: value minus the move and preemption costs)."""
    from ..hived.exact import scorer, solve_tenancy
    from .driver import warm_start
    best, values = {}, {}
    if not problem.cluster.tenants:
        # without cells a heuristic's pending placements on what the running
        # jobs leave are an answer of the instance (warm_start checks capacity);
        # with cells the model's own warm start (hived) covers the heuristics
        best, _, _, values = warm_start(problem, deadline.share(warm_share), seed,
                                        floor=deadline.share(max(warm_share, 0.5)))
    # 5 % kept back: scoring both answers, and the model's own overrun on
    # very large models (87k columns at 1,024 servers)
    sol = solve_tenancy(problem, deadline=deadline.share(0.95), seed=seed, engine=engine.name,
                        preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                        workers=engine.workers)
    kept = {**problem.fixed, **best}
    # what the call reports: the objective less the move and preemption costs
    score = scorer(problem, problem.running, preemption_cost)
    if best and score(kept, ())[0][0] > score(sol.assign, sol.preempted)[0][0] + 1e-9:
        name = max(values, key=values.get)
        # the model's own answer is not returned: drop what describes it
        stats = {k: v for k, v in sol.stats.items()
                 if k not in ("binding", "moves", "preemptions", "raw_value")}
        stats.update(heuristics=values, source=f"heuristic {name}")
        return Solution(kept, Status.FEASIBLE, sol.bound, (), stats)
    return replace(sol, stats={**sol.stats, "heuristics": values}) if values else sol


def configuration(problem: Problem, engine: Engine, *, deadline: Deadline, seed: int = 0,
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


# The registered entry points: one engine each; the options (declared in the
# family's ``__init__``) are those of :func:`run` and :func:`configuration`.

def solve_cpsat(problem: Problem, *, deadline: Deadline, seed: int = 0, workers: int = 1,
                deterministic: bool = False, **options) -> Solution:
    """``cpsat``: the configuration model (or the tenancy model) with CP-SAT
    (``deterministic``: see `Engine`)."""
    engine = Engine("cpsat", 1, deterministic=True) if deterministic else Engine("cpsat", workers)
    return run(problem, engine, deadline=deadline, seed=seed, **options)


def solve_milp(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
    """``milp``: the configuration model (or the tenancy model) with HiGHS."""
    return run(problem, Engine("highs"), deadline=deadline, seed=seed, **options)


def solve_cbc(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
    """``milp-cbc``: the configuration model (or the tenancy model) with CBC."""
    return run(problem, Engine("cbc"), deadline=deadline, seed=seed, **options)


def solve_cpsat_tenancy(problem: Problem, *, deadline: Deadline, seed: int = 0,
                        preemption_cost: float = 0.0, guaranteed_first: bool = True,
                        workers: int | None = None) -> Solution:
    """``cpsat-tenancy``: :func:`tenancy` with CP-SAT on every input, the
    applicable heuristics included (cpsat sends only tenancy inputs there)."""
    return tenancy(problem, Engine("cpsat", workers or 1), deadline=deadline, seed=seed,
                   preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                   warm_share=0.15)

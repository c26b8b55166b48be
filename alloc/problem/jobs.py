"""Jobs by rank and by type: the pending jobs in rank order
([`job_order`][alloc.problem.job_order]) and the groups of interchangeable
jobs every solver may treat alike ([`job_type_key`][alloc.problem.job_type_key],
[`job_types`][alloc.problem.job_types]).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .core import Problem


def job_type_key(problem: Problem, j: int) -> tuple[Any, ...]:
    """What makes two jobs interchangeable for every solver: shape, options,
    allowed GPU types with their speeds, the span factors of the levels the
    job can span and its elastic sizes (only the factors the objective uses),
    weight, tenancy and preferred level."""
    from ..objectives import job_sizes
    from ..topology import reachable_levels
    job = problem.jobs[j]
    prof = job.profile
    f = problem.objective.factors
    opts = tuple((o.cpu, o.mem, round(o.base, 12) if "grid" in f else 0.0)
                 for o in problem.options[j])
    types = tuple(bool(x) for x in problem.type_ok[j])
    speeds = tuple(round(prof.speed(t), 12) for t in problem.types) \
        if prof is not None and "speed" in f else ()
    span: tuple[float, ...] = ()
    if prof is not None and "span" in f and (job.gpus > 1 or job.elastic):
        span = tuple(round(prof.span_factor(lv), 12)
                     for lv in reachable_levels(problem.cluster, job.locality))
    sizes: tuple[Any, ...] = ()
    if job.elastic:
        sizes = (tuple(job_sizes(job)),
                 tuple(sorted(prof.scaling.items())) if prof is not None and "scale" in f else ())
    weight = job.weight if "weight" in f else 1.0
    return (job.gpus, job.gpu_milli, job.locality, opts, weight, types, speeds, span, sizes,
            job.tenant, job.guaranteed, job.preferred, job.gpus_per_server)


def job_types(problem: Problem, jobs: Sequence[int] | None = None) -> list[list[int]]:
    """Groups of interchangeable jobs ([`job_type_key`][alloc.problem.job_type_key]), each in rank
order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for j in (problem.pending if jobs is None else jobs):
        groups.setdefault(job_type_key(problem, j), []).append(j)
    return [sorted(g, key=lambda j: problem.rank[j]) for g in groups.values()]


def job_order(problem: Problem, key: Callable[[int], Any] | None = None,
              jobs: Sequence[int] | None = None) -> list[int]:
    """The pending jobs (or ``jobs``) by rank: the explicit order, else priority
    (highest first) and then ``key`` (default: input order).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, job_order
    >>> from alloc.problem import compile_problem
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000), Job("b", 1, cpu=1000, mem=1000, priority=5)]
    >>> p = compile_problem(cluster, jobs)
    >>> [p.jobs[j].id for j in job_order(p)]
    ['b', 'a']
    """
    pk = problem.prio_key
    src = problem.pending if jobs is None else jobs
    return sorted(src, key=lambda j: (pk[j], key(j) if key else j))

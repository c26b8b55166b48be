"""Objectives and the throughput of a placement.

A job's throughput (1.0 = its speed at the GPU-proportional share on its
reference GPU type) is

    tput = base(c, m) * speed(type) * span(level) * scale(n)

with ``base`` the profile's grid value at c milli-cores and m MiB per GPU,
``speed`` the relative speed of the slowest GPU type it got, ``span`` the
factor for the innermost hierarchy level holding all its GPUs, and ``scale``
the speed with n GPUs relative to the requested count (elastic jobs).

Objectives, summed over placed jobs (an unplaced job adds 0):

* ``throughput``: weight * tput
* ``gpus``: allocated milli-GPU, n * gpu_milli
* ``jobs``: 1
"""
from __future__ import annotations

from typing import Iterable

from .model import CLUSTER, Cluster, Job, Placement, Profile

OBJECTIVES = ("throughput", "gpus", "jobs")


def check_objective(name: str) -> str:
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; valid objectives: {', '.join(OBJECTIVES)}")
    return name


def span_level(cluster: Cluster, gpu_ids: Iterable[str]) -> str | None:
    """Innermost declared level whose one node holds all the GPUs; ``"cluster"``
    when none does; ``None`` for no GPUs."""
    gids = list(gpu_ids)
    if not gids:
        return None
    idx = cluster.gpu_index
    srv = cluster.gpu_server
    for level in reversed(cluster.levels):
        names = set()
        for g in gids:
            s = cluster.servers[srv[idx[g]]]
            k = idx[g] - cluster_first_gpu(cluster)[srv[idx[g]]]
            names.add(s.gpu_domain(k, level))
            if len(names) > 1:
                break
        if len(names) == 1:
            return level
    return CLUSTER


def cluster_first_gpu(cluster: Cluster) -> tuple[int, ...]:
    cache = cluster.__dict__.get("_first_gpu")
    if cache is None:
        out, n = [], 0
        for s in cluster.servers:
            out.append(n)
            n += s.gpus
        cache = tuple(out)
        cluster.__dict__["_first_gpu"] = cache
    return cache


def scale_factor(profile: Profile | None, job: Job, n: int) -> float:
    """Speed with n GPUs relative to the requested count: the profile's
    speed-up curve ``scaling[n] / scaling[gpus]`` where both are given, else
    linear ``n / gpus``."""
    if n == job.gpus or job.gpus == 0:
        return 1.0
    if profile is not None and n in profile.scaling and job.gpus in profile.scaling:
        return float(profile.scaling[n]) / float(profile.scaling[job.gpus])
    return n / job.gpus


def throughput(cluster: Cluster, job: Job, gpu_ids, cpu: int, mem: int) -> float:
    """Speed of ``job`` on the given GPUs with ``cpu``/``mem`` in total."""
    gpu_ids = list(gpu_ids)
    prof = job.profile
    n = len(gpu_ids)
    if prof is None:
        return 1.0 * scale_factor(None, job, n) if n or job.gpus == 0 else 0.0
    per = max(n, 1)
    base = prof.grid_value(cpu / per, mem / per) if (prof.has_grid and n) else 1.0
    if not n:
        return base
    idx = cluster.gpu_index
    types = {cluster.servers[cluster.gpu_server[idx[g]]].gpu_type for g in gpu_ids}
    speed = min(prof.speed(t) for t in types)
    span = prof.span_factor(span_level(cluster, gpu_ids)) if n > 1 else 1.0
    return base * speed * span * scale_factor(prof, job, n)


def placement_value(objective: str, job: Job, p: Placement | None) -> float:
    if p is None:
        return 0.0
    if objective == "throughput":
        return job.weight * p.throughput
    if objective == "gpus":
        return float(sum(g.milli for g in p.gpus))
    if objective == "jobs":
        return 1.0
    raise ValueError(f"unknown objective {objective!r}; valid objectives: {', '.join(OBJECTIVES)}")


def allocation_value(objective: str, jobs, placements) -> float:
    by_id = {j.id: j for j in jobs}
    return float(sum(placement_value(objective, by_id[p.job], p) for p in placements))

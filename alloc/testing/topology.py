r"""Placement over the operator's levels, checked on an allocation.

* `required_problems` -- a job with a locality level never spans two nodes
  of that level (the same rule `alloc.violations` holds every answer to,
  stated on its own);
* `preferred_problems` -- a job with a preferred level placed now never
  spans several nodes of that level while one node could take it: its GPUs,
  CPU and memory, in what the allocation leaves free (its own share given
  back), on GPU types it allows and at least as fast as the slowest it got,
  at no lower value (`alloc.topology.one_domain` finds the node: the best
  fit).  Kueue's and Slurm's rule places a job that fits in one node of its
  preferred level in one node; what is free at the end is no more than what
  was free when the rule placed it, so an answer with this property uses no
  more domains than the greedy rule on every job that fits in one.

Running jobs (kept or moved), guaranteed jobs (their tenant's cells place them)
and jobs that declare GPU memory or compute are left out of the preferred
check.

Examples
--------
>>> from alloc import Cluster, Job, Server, allocate
>>> from alloc.testing.topology import preferred_problems, required_problems
>>> c = Cluster(tuple(Server(f"s{i}", 8000, 64000, 2, "V100", domains={"rack": f"r{i // 2}"})
...                   for i in range(4)), levels=("rack", "server", "gpu"))
>>> jobs = [Job("a", 4, cpu=1000, mem=1000, preferred="rack"),
...         Job("b", 3, cpu=1000, mem=1000, locality="rack")]
>>> a = allocate(c, jobs, solver="best-fit")
>>> preferred_problems(c, jobs, a), required_problems(c, jobs, a)
([], [])
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..arrays import cluster_arrays
from ..model import MILLI, Allocation, Cluster, Job
from ..objectives import throughput
from ..topology import climb, one_domain, usable_per_server


def _spanned(cluster: Cluster, level: str, gpus: Sequence[str]) -> set[int]:
    dom, idx = cluster_arrays(cluster).domain[level], cluster.gpu_index
    return {int(dom[idx[g]]) for g in gpus}


def required_problems(cluster: Cluster, jobs: Sequence[Job], a: Allocation) -> list[str]:
    """One line per placed job whose GPUs span two nodes of its locality level."""
    out = []
    for job in jobs:
        p = a.placement(job.id)
        if p is None or job.locality is None or len(p.gpus) < 2 or \
                job.locality not in cluster.levels:
            continue
        n = len(_spanned(cluster, job.locality, [g.gpu for g in p.gpus]))
        if n > 1:
            out.append(f"job {job.id!r} requires one {job.locality}: its GPUs span {n}")
    return out


def _free(cluster: Cluster, a: Allocation):
    """Free milli per GPU, CPU and memory per server after ``a``'s placements."""
    arr = cluster_arrays(cluster)
    free = np.full(arr.G, MILLI, dtype=np.int64)
    cpu, mem = arr.srv_cpu.copy(), arr.srv_mem.copy()
    gidx, sidx = cluster.gpu_index, cluster.server_index
    for p in a.placements:
        for g in p.gpus:
            free[gidx[g.gpu]] -= g.milli if g.milli else MILLI   # a zero-milli share holds memory
        for s, v in p.cpu.items():
            cpu[sidx[s]] -= v
        for s, v in p.mem.items():
            mem[sidx[s]] -= v
    return free, cpu, mem


def _fast_enough(cluster: Cluster, job: Job, ids: Sequence[str]) -> list[bool]:
    """Per server: GPUs of a type the job allows, at least as fast as the
    slowest of ``ids`` (its GPUs now)."""
    prof = job.profile
    if prof is None:
        return [s.gpus > 0 and job.allows(s.gpu_type) for s in cluster.servers]
    gidx = cluster.gpu_index
    slow = min(prof.speed(cluster.servers[cluster.gpu_server[gidx[g]]].gpu_type) for g in ids)
    return [s.gpus > 0 and job.allows(s.gpu_type) and prof.speed(s.gpu_type) >= slow - 1e-12
            for s in cluster.servers]


def preferred_problems(cluster: Cluster, jobs: Sequence[Job], a: Allocation,
                       objective: str = "throughput") -> list[str]:
    """One line per job placed now that spans several nodes of its preferred
    level while one node could take it (see the module notes).

    Parameters
    ----------
    cluster, jobs, a
        The call's cluster and jobs, and its answer.
    objective : str
        The objective the call maximised: under ``throughput`` a node counts
        only where the job's throughput there is no lower.
    """
    cand = [j for j in jobs if j.preferred is not None and j.gpu_milli >= MILLI
            and not j.guaranteed and j.gpu_mem is None and j.gpu_compute is None
            and j.preferred in cluster.levels]
    if not cand:
        return []
    free, cpu, mem = _free(cluster, a)
    gidx, sidx = cluster.gpu_index, cluster.server_index
    arr = cluster_arrays(cluster)
    out = []
    for job in cand:
        pref = job.preferred
        assert pref is not None
        p = a.placement(job.id)
        if p is None or len(p.gpus) < 2 or job.current is not None:
            continue
        if job.locality is not None and climb(cluster, pref, job.locality) == 0:
            continue
        ids = [g.gpu for g in p.gpus]
        k = len(_spanned(cluster, pref, ids))
        if k < 2:
            continue
        f, c, m = free.copy(), cpu.copy(), mem.copy()
        for g in p.gpus:
            f[gidx[g.gpu]] += g.milli
        for s, v in p.cpu.items():
            c[sidx[s]] += v
        for s, v in p.mem.items():
            m[sidx[s]] += v
        n = len(ids)
        tc, tm = sum(p.cpu.values()), sum(p.mem.values())
        ok = np.array(_fast_enough(cluster, job, ids), dtype=np.bool_)
        u = usable_per_server(cluster, f, c, m, -(-tc // n), -(-tm // n), ok)
        gpus = one_domain(cluster, pref, n, u, f)
        if gpus is None:
            continue
        if objective == "throughput":
            there = throughput(cluster, job, [cluster.gpu_ids[g] for g in gpus], tc, tm)
            if round(there, 9) < round(p.throughput, 9) - 1e-9:
                continue
        dom = arr.domain[pref][gpus[0]]
        out.append(f"job {job.id!r} prefers one {pref}: its {n} GPUs span {k} while "
                   f"one ({pref} #{int(dom)}) could take them")
    return out


__all__ = ["preferred_problems", "required_problems"]

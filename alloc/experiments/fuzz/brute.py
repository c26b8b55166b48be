"""The optimum of a tiny instance by exhaustive search, written apart from
every solver: the reference the fuzz campaign checks ``optimal`` claims and
bounds against.

Scope: no running jobs, no tenants, no elastic jobs, every job on one server
(a multi-GPU job has server locality: the tiny generator makes it so).  A
job is unplaced or placed on one server, on a set of its GPUs (whole GPUs:
any subset of the job's size; a shared job: any one GPU), at its request or
at any grid point of its profile with a positive speed (CPU and memory the
point's per-GPU amounts times the GPUs).  A choice fits when every server
keeps its CPU and memory and every GPU at most 1000 milli.  Its value is the
objective's value of the placement, throughput recomputed by
[alloc.objectives.throughput][].  On one server and one GPU set a point
that uses no less CPU and memory than another worth at least as much is
never needed, so those are dropped before the search.
"""
from __future__ import annotations

from itertools import combinations

from ...model import MILLI, Cluster, GpuShare, Job, Placement
from ...objectives import get_objective, throughput


def _points(job: Job) -> list[tuple[int, int]]:
    """The job's request and every positive grid point, as totals."""
    pts = {(job.cpu, job.mem)}
    prof, n = job.profile, job.gpus
    if prof is not None and prof.has_grid and n:
        for a, c in enumerate(prof.cpu_per_gpu):
            for b, m in enumerate(prof.mem_per_gpu):
                if (prof.tput[a][b] or 0) > 0:
                    pts.add((c * n, m * n))
    return sorted(pts)


def candidates(cluster: Cluster, job: Job, objective) -> list[tuple]:
    """``(server index, GPU indices, cpu, mem, value)`` for every way to place
    the job on one server (dominated points dropped)."""
    out = []
    for si, s in enumerate(cluster.servers):
        if job.gpus and (s.gpus == 0 or not job.allows(s.gpu_type)):
            continue
        first = cluster.gpu_first[si]
        k = job.gpus if job.gpu_milli == MILLI else 1
        sets = list(combinations(range(first, first + s.gpus), k)) if job.gpus else [()]
        for gs in sets:
            names = [cluster.gpu_ids[g] for g in gs]
            if job.locality and len(gs) > 1 and \
                    len({s.gpu_domain(g - first, job.locality) for g in gs}) > 1:
                continue
            opts = []
            for cpu, mem in _points(job):
                if cpu > s.cpu or mem > s.mem:
                    continue
                p = Placement.make(job.id, tuple(GpuShare(n, job.gpu_milli) for n in names),
                                   {s.id: cpu}, {s.id: mem},
                                   round(throughput(cluster, job, names, cpu, mem), 9))
                opts.append((cpu, mem, objective.value(job, p)))
            keep = [o for o in opts if not any(
                q != o and q[0] <= o[0] and q[1] <= o[1] and q[2] >= o[2] for q in opts)]
            out.extend((si, gs, cpu, mem, v) for cpu, mem, v in keep)
    return out


def brute_force(cluster: Cluster, jobs, objective: str) -> float:
    """The optimum of the objective over every placement (module notes)."""
    obj = get_objective(objective)
    cands = [sorted(candidates(cluster, j, obj), key=lambda c: -c[4]) for j in jobs]
    milli = [jobs[k].gpu_milli for k in range(len(jobs))]
    cpu = [s.cpu for s in cluster.servers]
    mem = [s.mem for s in cluster.servers]
    gpu = [0] * cluster.total_gpus
    best = [0.0]
    rest = [sum(max((c[4] for c in cs), default=0.0) for cs in cands[k:])
            for k in range(len(cands) + 1)]

    def search(k: int, value: float) -> None:
        if value + rest[k] <= best[0] + 1e-12:
            return
        if k == len(jobs):
            best[0] = value
            return
        for si, gs, c, m, v in cands[k]:
            if c > cpu[si] or m > mem[si] or any(gpu[g] + milli[k] > MILLI for g in gs):
                continue
            cpu[si] -= c
            mem[si] -= m
            for g in gs:
                gpu[g] += milli[k]
            search(k + 1, value + v)
            cpu[si] += c
            mem[si] += m
            for g in gs:
                gpu[g] -= milli[k]
        search(k + 1, value)
    search(0, 0.0)
    return best[0]


__all__ = ["brute_force", "candidates"]

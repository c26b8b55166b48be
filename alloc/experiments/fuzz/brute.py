"""The optimum of a tiny instance by exhaustive search, written apart from
every solver: the reference the fuzz campaign checks ``optimal`` claims and
bounds against.

Scope: no running jobs, no tenants, no level between the server and its
GPUs, every job on one server (a multi-GPU job has server locality: the
tiny generator makes it so).  A job is unplaced or placed on one server, on
GPUs of it (whole GPUs: as many as it asks -- an elastic job any count in
``[min_gpus, max_gpus]``, `alloc.objectives.job_sizes` -- each free; a
shared job: one GPU with room for its share), at its request or at any grid
point of its profile with a positive speed (CPU and memory the point's
per-GPU amounts times the GPUs it gets).  A choice fits when every server keeps its
CPU and memory and every GPU at most 1000 milli.  Its value is the
objective's value of the placement, throughput recomputed by
`alloc.objectives.throughput`.

Two reductions keep it exhaustive: the GPUs of one server are
interchangeable (no socket or switch level), so a whole-GPU job takes the
lowest free ones and a shared job tries one GPU per distinct amount used;
and on one server a point that uses no less CPU and memory than another
worth at least as much is never needed.
"""
from __future__ import annotations

from ...model import MILLI, Cluster, GpuShare, Job, Placement
from ...objectives import get_objective, job_sizes, throughput


def _points(job: Job, n: int) -> list[tuple[int, int]]:
    """The job's request and every positive grid point on ``n`` GPUs, as totals."""
    pts = {(job.cpu, job.mem)}
    prof = job.profile
    if prof is not None and prof.has_grid and n:
        for a, c in enumerate(prof.cpu_per_gpu):
            for b, m in enumerate(prof.mem_per_gpu):
                if (prof.tput[a][b] or 0) > 0:
                    pts.add((c * n, m * n))
    return sorted(pts)


def candidates(cluster: Cluster, job: Job, objective) -> list[tuple[int, int, int, float, int]]:
    """``(server index, cpu, mem, value, GPUs)`` for every server, size and
    point the job may take (dominated points of one size dropped)."""
    out: list[tuple[int, int, int, float, int]] = []
    for size in job_sizes(job):
        k = size if job.gpu_milli == MILLI else min(size, 1)
        for si, s in enumerate(cluster.servers):
            if job.gpus and (s.gpus < k or not job.allows(s.gpu_type)):
                continue
            first = cluster.gpu_first[si]
            names = [cluster.gpu_ids[g] for g in range(first, first + k)]
            opts = []
            for cpu, mem in _points(job, k):
                if cpu > s.cpu or mem > s.mem:
                    continue
                p = Placement.make(job.id, tuple(GpuShare(n, job.gpu_milli) for n in names),
                                   {s.id: cpu}, {s.id: mem},
                                   round(throughput(cluster, job, names, cpu, mem), 9))
                opts.append((cpu, mem, objective.value(job, p)))
            keep = [o for o in opts if not any(
                q != o and q[0] <= o[0] and q[1] <= o[1] and q[2] >= o[2] for q in opts)]
            out.extend((si, cpu, mem, v, k) for cpu, mem, v in keep)
    return out


def gpu_choices(cluster: Cluster, used: list[int], si: int, job: Job,
                size: int | None = None) -> list[tuple[int, ...]]:
    """GPU sets of server ``si`` the job may take at ``size`` GPUs (default
    its request), one per class of interchangeable choices."""
    first = cluster.gpu_first[si]
    gs = range(first, first + cluster.servers[si].gpus)
    n = job.gpus if size is None else size
    if not n:
        return [()]
    if job.gpu_milli == MILLI:
        free = [g for g in gs if used[g] == 0]
        return [tuple(free[:n])] if len(free) >= n else []
    seen: set[int] = set()
    out: list[tuple[int, ...]] = []
    for g in gs:
        if used[g] + job.gpu_milli <= MILLI and used[g] not in seen:
            seen.add(used[g])
            out.append((g,))
    return out


def brute_force(cluster: Cluster, jobs, objective: str) -> float:
    """The optimum of the objective over every placement (module notes)."""
    if any(lv not in ("rack", "server", "gpu") for lv in cluster.levels):
        raise ValueError("brute force: GPUs of a server must be interchangeable")
    obj = get_objective(objective)
    cands = [sorted(candidates(cluster, j, obj), key=lambda c: -c[3]) for j in jobs]
    cpu = [s.cpu for s in cluster.servers]
    mem = [s.mem for s in cluster.servers]
    used = [0] * cluster.total_gpus
    best = [0.0]
    rest = [sum(max((c[3] for c in cs), default=0.0) for cs in cands[k:])
            for k in range(len(cands) + 1)]

    def search(k: int, value: float) -> None:
        if value + rest[k] <= best[0] + 1e-12:
            return
        if k == len(jobs):
            best[0] = value
            return
        job = jobs[k]
        for si, c, m, v, size in cands[k]:
            if c > cpu[si] or m > mem[si]:
                continue
            for gs in gpu_choices(cluster, used, si, job, size):
                cpu[si] -= c
                mem[si] -= m
                for g in gs:
                    used[g] += job.gpu_milli
                search(k + 1, value + v)
                cpu[si] += c
                mem[si] += m
                for g in gs:
                    used[g] -= job.gpu_milli
        search(k + 1, value)
    search(0, 0.0)
    return best[0]


__all__ = ["brute_force", "candidates", "gpu_choices"]

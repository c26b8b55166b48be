"""Semantic validation of a cluster and its jobs (what a JSON Schema cannot
say): unique ids, level order, GPU types that exist, locality levels the
cluster has, gang and sharing rules, and jobs larger than any server.

Every problem is reported with its field path (``jobs[3].gpu_milli``) and what
was expected; :func:`validate_model` raises one :class:`InputError` holding all.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from .errors import InputError
from .model import KNOWN_LEVELS, MILLI, Cluster, Job

PRIORITY_RANGE = (-1000, 1000)


def cluster_problems(cluster: Cluster) -> list[str]:
    out = []
    lv = list(cluster.levels)
    if "server" not in lv or not lv or lv[-1] != "gpu":
        out.append(f"cluster.levels: expected a list containing 'server' and ending with 'gpu', got {lv}")
    unknown = [x for x in lv if x not in KNOWN_LEVELS]
    if unknown:
        out.append(f"cluster.levels: unknown level {unknown[0]!r}; expected some of {list(KNOWN_LEVELS)}")
    elif [x for x in KNOWN_LEVELS if x in lv] != lv:
        out.append(f"cluster.levels: expected outermost-to-innermost order {list(KNOWN_LEVELS)}, got {lv}")
    if not cluster.servers:
        out.append("cluster.servers: expected at least one server")
    dup = [k for k, n in Counter(s.id for s in cluster.servers).items() if n > 1]
    if dup:
        out.append(f"cluster.servers: duplicate server id {dup[0]!r}")
    for i, s in enumerate(cluster.servers):
        where = f"cluster.servers[{i}]"
        for name in ("cpu", "mem"):
            v = getattr(s, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                out.append(f"{where}.{name}: expected a positive integer, got {v!r}")
        if not isinstance(s.gpus, int) or s.gpus < 0:
            out.append(f"{where}.gpus: expected an integer >= 0, got {s.gpus!r}")
            continue
        if s.gpus and not s.gpu_type:
            out.append(f"{where}.gpu_type: expected a GPU type name for a server with GPUs")
        if "rack" in lv and not s.rack:
            out.append(f"{where}.rack: expected a rack name (cluster.levels has 'rack')")
        if s.sockets < 1 or s.switches_per_socket < 1:
            out.append(f"{where}.sockets: expected sockets and switches_per_socket >= 1")
        elif s.gpus and "socket" in lv and s.gpus % s.sockets:
            out.append(f"{where}.sockets: {s.gpus} GPUs do not split evenly over {s.sockets} sockets")
        elif s.gpus and "switch" in lv and (s.gpus // s.sockets) % s.switches_per_socket:
            out.append(f"{where}.switches_per_socket: {s.gpus // s.sockets} GPUs per socket do not "
                       f"split evenly over {s.switches_per_socket} switches")
    return out


def job_problems(cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    out = []
    dup = [k for k, n in Counter(j.id for j in jobs).items() if n > 1]
    if dup:
        out.append(f"jobs: duplicate job id {dup[0]!r}")
    types = set(cluster.gpu_types)
    servers = cluster.servers
    for i, j in enumerate(jobs):
        where = f"jobs[{i}]"
        for name in ("gpus", "cpu", "mem"):
            v = getattr(j, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                out.append(f"{where}.{name}: expected an integer >= 0, got {v!r}")
        if out and out[-1].startswith(where):
            continue
        if not isinstance(j.gpu_milli, int) or not 1 <= j.gpu_milli <= MILLI:
            out.append(f"{where}.gpu_milli: expected an integer in 1..1000, got {j.gpu_milli!r}")
            continue
        if j.gpu_milli < MILLI and j.gpus != 1:
            out.append(f"{where}.gpu_milli: a share below 1000 needs gpus == 1, job has {j.gpus}")
        if not j.weight >= 0:
            out.append(f"{where}.weight: expected a number >= 0, got {j.weight!r}")
        for t in j.gpu_types:
            if t not in types:
                out.append(f"{where}.gpu_types: unknown GPU type {t!r}; cluster has {sorted(types)}")
        if j.locality is not None and j.locality not in cluster.levels:
            out.append(f"{where}.locality: level {j.locality!r} is not in cluster.levels "
                       f"{list(cluster.levels)}")
        if j.guaranteed and j.tenant is None:
            out.append(f"{where}.guaranteed: a guaranteed job needs a tenant")
        if j.tenant is not None and cluster.tenants and j.tenant not in cluster.tenants:
            out.append(f"{where}.tenant: unknown tenant {j.tenant!r}; expected one of "
                       f"{sorted(cluster.tenants)}")
        if not PRIORITY_RANGE[0] <= j.priority <= PRIORITY_RANGE[1]:
            out.append(f"{where}.priority: expected an integer in {PRIORITY_RANGE[0]}.."
                       f"{PRIORITY_RANGE[1]}, got {j.priority}")
        if j.min_gpus is not None and not 1 <= j.min_gpus <= j.gpus:
            out.append(f"{where}.min_gpus: expected 1 <= min_gpus <= gpus ({j.gpus}), got {j.min_gpus}")
        if j.max_gpus is not None and j.max_gpus < j.gpus:
            out.append(f"{where}.max_gpus: expected max_gpus >= gpus ({j.gpus}), got {j.max_gpus}")
        if j.current is not None:
            bad = [g.gpu for g in j.current.gpus if g.gpu not in cluster.gpu_index]
            if bad:
                out.append(f"{where}.current.gpus: unknown GPU {bad[0]!r}")
            bad = [s for s in list(j.current.cpu) + list(j.current.mem) if s not in cluster.server_index]
            if bad:
                out.append(f"{where}.current.cpu: unknown server {bad[0]!r}")
        size = fits_somewhere(cluster, j)
        if size:
            out.append(f"{where}: job {j.id!r} is larger than any server: {size}")
    return out


def fits_somewhere(cluster: Cluster, j: Job) -> str | None:
    """None if the job fits an empty cluster (at its smallest option), else why not."""
    cpu, mem = j.cpu, j.mem
    n = j.min_gpus or j.gpus
    prof = j.profile
    if prof is not None and prof.has_grid and n:
        pts = [(c * n, m * n) for a, c in enumerate(prof.cpu_per_gpu)
               for b, m in enumerate(prof.mem_per_gpu) if (prof.tput[a][b] or 0) > 0]
        if pts:
            cpu = min(cpu, min(p[0] for p in pts))
            mem = min(mem, min(p[1] for p in pts))
    ok = [s for s in cluster.servers if j.allows(s.gpu_type) and (n == 0 or s.gpus > 0)]
    if not ok:
        return f"no server has an allowed GPU type {list(j.gpu_types)}"
    if n == 0:
        if not any(s.cpu >= cpu and s.mem >= mem for s in ok):
            return (f"needs {cpu} milli-CPU and {mem} MiB on one server; largest has "
                    f"{max(s.cpu for s in ok)} and {max(s.mem for s in ok)}")
        return None
    single = any(s.gpus >= n and s.cpu >= cpu and s.mem >= mem for s in ok)
    if single:
        return None
    can_spread = n > 1 and j.gpu_milli == MILLI and j.locality in (None, "rack")
    if can_spread:
        tot_g = sum(s.gpus for s in ok)
        if tot_g >= n and sum(s.cpu for s in ok) >= cpu and sum(s.mem for s in ok) >= mem:
            return None
        return f"needs {n} GPUs, {cpu} milli-CPU, {mem} MiB; allowed servers hold {tot_g} GPUs"
    best = max(ok, key=lambda s: s.gpus)
    return (f"needs {n} GPUs, {cpu} milli-CPU and {mem} MiB on one server; the largest allowed "
            f"has {best.gpus} GPUs, {best.cpu} milli-CPU, {best.mem} MiB")


def model_problems(cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    out = cluster_problems(cluster)
    if out:
        return out
    try:
        from .tenancy import tenant_problems
    except ModuleNotFoundError as exc:
        if exc.name != "alloc.tenancy":
            raise
    else:
        out.extend(tenant_problems(cluster))
    return out + job_problems(cluster, jobs)


def validate_model(cluster: Cluster, jobs: Sequence[Job], source: str | None = None) -> None:
    problems = model_problems(cluster, jobs)
    if problems:
        raise InputError(problems, source)

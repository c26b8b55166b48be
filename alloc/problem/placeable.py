"""Whether a job can be placed on the empty cluster now
([`placeable_reason`][alloc.problem.placeable_reason]): one pass over the
distinct server shapes and the per-domain totals, cached on the cluster; a
well-formed job that cannot gets one line saying why and waits.
"""
from __future__ import annotations

from typing import Any

from ..arrays import cluster_arrays
from ..model import MILLI, Cluster, Job, Server
from ..topology import is_outer


def _width(server: Server, locality: str | None) -> int:
    """GPUs one node of the job's locality level holds on ``server``."""
    if locality == "switch":
        return server.gpus // max(1, server.sockets) // max(1, server.switches_per_socket)
    if locality == "socket":
        return server.gpus // max(1, server.sockets)
    return server.gpus


def _shape_index(cluster: Cluster) -> dict[str, Any]:
    """Distinct server shapes per GPU type and per (rack, type) totals (cached
    on the cluster), so that placeability costs one pass over the shapes, not
    over the servers."""
    idx = cluster.__dict__.get("_shape_index")
    if idx is None:
        shapes: dict[Any, Any] = {}
        totals: dict[Any, Any] = {}
        outer = cluster_arrays(cluster).srv_domain
        ids = {lv: d.tolist() for lv, d in outer.items()}
        for i, s in enumerate(cluster.servers):
            t = s.gpu_type if s.gpus else None
            shapes.setdefault(t, set()).add(s)
            # the whole cluster once, and the server's domain at each level above it
            keys = (("cluster", t),) + tuple((lv, d[i], t) for lv, d in ids.items())
            for key in keys:
                g, c, m = totals.get(key, (0, 0, 0))
                totals[key] = (g + s.gpus, c + s.cpu, m + s.mem)
        uniq = {t: list({(v.gpus, v.sockets, v.switches_per_socket, v.cpu, v.mem): v
                         for v in ss}.values()) for t, ss in shapes.items()}
        idx = cluster.__dict__["_shape_index"] = {"shapes": uniq, "totals": totals}
    return idx


def _smallest_request(job: Job, n: int) -> tuple[int, int]:
    cpu, mem = job.cpu, job.mem
    prof = job.profile
    if prof is not None and prof.has_grid and n:
        pts = [(c * n, m * n) for a, c in enumerate(prof.cpu_per_gpu)
               for b, m in enumerate(prof.mem_per_gpu) if (prof.tput[a][b] or 0) > 0]
        if pts:
            cpu = min(cpu, min(p[0] for p in pts))
            mem = min(mem, min(p[1] for p in pts))
    return cpu, mem


def spread_width(job: Job, n: int) -> int | None:
    """The fewest GPUs job ``job``, of smallest size ``n``, takes spread over
    servers: ``n``, or two for an elastic job whose smallest size is one GPU
    when it may grow there; None when it may not spread (shares of a GPU, a
    locality at or below the server, or never two GPUs).  The rule of
    `placeable_reason` and of the waiting reasons (`alloc.waiting`).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.problem.placeable import spread_width
    >>> spread_width(Job("a", 4), 4), spread_width(Job("e", 1, min_gpus=1, max_gpus=4), 1)
    (4, 2)
    >>> spread_width(Job("one", 1), 1), spread_width(Job("s", 4, locality="server"), 4)
    (None, None)
    """
    wide = max(n, 2)
    if job.gpu_milli != MILLI or wide > (job.max_gpus or job.gpus) \
            or not (job.locality is None or is_outer(job.locality)):
        return None
    return wide


def placeable_reason(cluster: Cluster, job: Job) -> str | None:
    """None if the job fits the empty cluster (at its smallest option, inside
    one node of its locality level), else one line saying why it cannot be
    placed on this cluster now.

    A job of whole GPUs without a locality at or below the server may also
    spread over servers: at its smallest size of two GPUs or more (an
    elastic job whose smallest size is one GPU, at two when it may grow
    there), it fits when the servers it may use -- of one node of its
    locality level, or of the cluster -- hold as many GPUs, its CPU and its
    memory in all (a test that can say "fits" wrongly, never "does not").
    """
    n = job.min_gpus or job.gpus
    why = _goodput_reason(cluster, job)
    if why:
        return why
    cpu, mem = _smallest_request(job, n)
    idx = _shape_index(cluster)
    types = [t for t in idx["shapes"] if (n == 0 or (t is not None and job.allows(t)))]
    ok = [s for t in types for s in idx["shapes"][t] if n == 0 or s.gpus > 0]
    if not ok:
        return f"no server has an allowed GPU type {list(job.gpu_types)}"
    if n == 0:
        if not any(s.cpu >= cpu and s.mem >= mem for s in ok):
            return (f"needs {cpu} milli-CPU and {mem} MiB on one server; the largest has "
                    f"{max(s.cpu for s in ok)} and {max(s.mem for s in ok)}")
        return None
    if job.even_servers:
        return _even_reason(cluster, job, cpu, mem)
    if any(_width(s, job.locality) >= n and s.cpu >= cpu and s.mem >= mem for s in ok):
        return None
    wide = spread_width(job, n)
    if wide is not None:
        within = job.locality if job.locality is not None else "cluster"
        # a spread job may mix the allowed GPU types: sum them per scope
        scopes: dict[Any, Any] = {}
        for k, tot in idx["totals"].items():
            if k[0] == within and k[-1] in types:
                scopes[k[:-1]] = tuple(a + b for a, b in zip(scopes.get(k[:-1], (0, 0, 0)), tot))
        best = max(scopes.values(), default=(0, 0, 0))
        wc, wm = _smallest_request(job, wide) if wide > n else (cpu, mem)
        if any(g >= wide and c >= wc and m >= wm for g, c, m in scopes.values()):
            return None
        if wide == n:
            return (f"needs {n} GPUs, {cpu} milli-CPU and {mem} MiB; the allowed servers "
                    + (f"of one {job.locality} " if within != "cluster" else "")
                    + f"hold {best[0]} GPUs")
    best = max(ok, key=lambda s: (_width(s, job.locality), s.gpus))
    where = f" in one {job.locality}" if job.locality in ("socket", "switch") else ""
    return (f"needs {n} GPUs{where}, {cpu} milli-CPU and {mem} MiB on one server; the largest "
            f"allowed has {_width(best, job.locality)} GPUs{where}, {best.cpu} milli-CPU, "
            f"{best.mem} MiB")


def _even_reason(cluster: Cluster, job: Job, cpu: int, mem: int) -> str | None:
    """`placeable_reason` of an even spread: ``gpus // gpus_per_server``
    servers of allowed types, each with ``gpus_per_server`` GPUs and its
    share of CPU and memory (rounded up)."""
    k, parts = job.gpus_per_server or job.gpus, job.even_servers
    pc, pm = -(-cpu // parts), -(-mem // parts)
    have = sum(1 for s in cluster.servers if s.gpus >= k and job.allows(s.gpu_type)
               and s.cpu >= pc and s.mem >= pm)
    if have >= parts:
        return None
    return (f"needs {parts} servers with {k} GPUs, {pc} milli-CPU and {pm} MiB each "
            f"(gpus_per_server {k}); {have} of the servers it may use are that large")


def _goodput_reason(cluster: Cluster, job: Job) -> str | None:
    """Why a goodput job has no valid configuration on this cluster (None:
    it has one): a GPU type its profile models that the cluster has, and a
    GPU count in its range whose per-GPU batch range leaves a valid batch."""
    prof = job.profile
    if prof is None or prof.goodput is None or not job.gpus:
        return None
    g = prof.goodput
    have = {s.gpu_type for s in cluster.servers if s.gpus}
    types = [t for t in g.types if t in have and job.allows(t)]
    if not types:
        return (f"its goodput profile models GPU types {sorted(g.types)}, none of which the "
                f"cluster has and the job allows")
    lo = job.min_gpus or job.gpus
    if all(g.types[t].local_bsz[0] * lo > g.max_batch for t in types):
        t = types[0]
        return (f"no configuration is valid: {lo} GPU(s) at the smallest per-GPU batch "
                f"{g.types[t].local_bsz[0]} exceed its largest batch {g.max_batch}")
    return None

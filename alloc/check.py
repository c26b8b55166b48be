"""``violations(cluster, jobs, allocation)``: every hard constraint an
allocation breaks, one readable line each (empty list = valid).

Checked: each job exactly once in placements or unplaced; known GPUs and
servers; no server over its CPU or memory; no GPU over 1000 milli; gang (all of
a job's GPUs or none, each with its share); GPU type; locality level; CPU and
memory only on servers that hold the job's GPUs (one server for a CPU-only
job); CPU/memory equal to the request, or a feasible grid point of the job's
profile; reported throughput equal to the recomputed one; preempted jobs were
running and are not placed; tenancy and sharing safety (:mod:`alloc.tenancy`).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

from .model import MILLI, Allocation, Cluster, Job
from .objectives import throughput


def violations(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation) -> list[str]:
    out: list[str] = []
    by_id = {j.id: j for j in jobs}
    seen = Counter([p.job for p in allocation.placements] + list(allocation.unplaced))
    for jid, n in seen.items():
        if jid not in by_id:
            out.append(f"job {jid!r}: not in the instance")
        elif n > 1:
            out.append(f"job {jid!r}: appears {n} times in placements/unplaced")
    for jid in by_id:
        if jid not in seen:
            out.append(f"job {jid!r}: missing from both placements and unplaced")
    placed = {p.job for p in allocation.placements}
    for jid in allocation.preempted:
        if jid not in by_id:
            out.append(f"preempted job {jid!r}: not in the instance")
        elif by_id[jid].current is None:
            out.append(f"preempted job {jid!r}: was not running (no current placement)")
        elif jid in placed:
            out.append(f"preempted job {jid!r}: is also placed")

    gidx = cluster.gpu_index
    gpu_use: dict[str, int] = defaultdict(int)
    cpu_use: dict[str, int] = defaultdict(int)
    mem_use: dict[str, int] = defaultdict(int)
    for p in allocation.placements:
        job = by_id.get(p.job)
        if job is None:
            continue
        where = f"job {p.job!r}"
        gids = [g.gpu for g in p.gpus]
        bad = [g for g in gids if g not in gidx]
        if bad:
            out.append(f"{where}: unknown GPU {bad[0]!r}")
            continue
        if len(set(gids)) != len(gids):
            out.append(f"{where}: the same GPU listed twice")
        lo = job.min_gpus if job.min_gpus is not None else job.gpus
        hi = job.max_gpus if job.max_gpus is not None else job.gpus
        if not (lo <= len(gids) <= hi) or (job.gpus and not gids):
            out.append(f"{where}: got {len(gids)} GPUs, needs "
                       + (f"{job.gpus}" if lo == hi else f"{lo}..{hi}") + " (gang: all or none)")
        for g in p.gpus:
            if g.milli != job.gpu_milli:
                out.append(f"{where}: {g.gpu} share {g.milli} milli, job asks {job.gpu_milli}")
            gpu_use[g.gpu] += g.milli
        gsrv = {cluster.servers[cluster.gpu_server[gidx[g]]].id for g in gids}
        for g in gids:
            t = cluster.servers[cluster.gpu_server[gidx[g]]].gpu_type
            if not job.allows(t):
                out.append(f"{where}: GPU {g} is {t}, allowed {list(job.gpu_types)}")
                break
        if job.locality and len(gids) > 1:
            if job.locality not in cluster.levels:
                out.append(f"{where}: locality {job.locality!r} is not a level of the cluster")
            else:
                doms = set()
                for g in gids:
                    s = cluster.servers[cluster.gpu_server[gidx[g]]]
                    k = int(g.rsplit("gpu", 1)[1])
                    doms.add(s.gpu_domain(k, job.locality))
                if len(doms) > 1:
                    out.append(f"{where}: GPUs span {len(doms)} {job.locality} nodes, "
                               f"locality needs one")
        srv_ids = set(p.cpu) | set(p.mem)
        unknown = [s for s in srv_ids if s not in cluster.server_index]
        if unknown:
            out.append(f"{where}: unknown server {unknown[0]!r}")
            continue
        if gids:
            extra = srv_ids - gsrv
            if extra:
                out.append(f"{where}: CPU/memory on {sorted(extra)[0]} which holds none of its GPUs")
        elif len(srv_ids) != 1:
            out.append(f"{where}: a CPU-only job must use exactly one server, uses {len(srv_ids)}")
        if any(v < 0 for v in p.cpu.values()) or any(v < 0 for v in p.mem.values()):
            out.append(f"{where}: negative CPU or memory")
        for s, v in p.cpu.items():
            cpu_use[s] += v
        for s, v in p.mem.items():
            mem_use[s] += v
        tc, tm = p.total_cpu, p.total_mem
        prof = job.profile
        if prof is not None and prof.has_grid and gids:
            n = len(gids)
            if (tc, tm) != (job.cpu, job.mem) and prof.grid_value(tc / n, tm / n) <= 0:
                out.append(f"{where}: CPU {tc} / memory {tm} is no feasible point of "
                           f"profile {prof.name!r}")
        elif (tc, tm) != (job.cpu, job.mem):
            out.append(f"{where}: got CPU {tc} and memory {tm}, requested {job.cpu} and {job.mem}")
        tp = throughput(cluster, job, gids, tc, tm)
        if abs(tp - p.throughput) > 1e-6 * max(1.0, abs(tp)):
            out.append(f"{where}: reported throughput {p.throughput} but it is {tp:.6g}")
    for g, used in gpu_use.items():
        if used > MILLI:
            out.append(f"GPU {g}: {used} milli allocated, capacity {MILLI}")
    for s in cluster.servers:
        if cpu_use.get(s.id, 0) > s.cpu:
            out.append(f"server {s.id}: CPU {cpu_use[s.id]} allocated, capacity {s.cpu}")
        if mem_use.get(s.id, 0) > s.mem:
            out.append(f"server {s.id}: memory {mem_use[s.id]} allocated, capacity {s.mem}")
    try:
        from .tenancy import tenancy_violations
    except ModuleNotFoundError as exc:
        if exc.name != "alloc.tenancy":
            raise
    else:
        out.extend(tenancy_violations(cluster, jobs, allocation))
    return out

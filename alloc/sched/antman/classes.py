"""AntMan's job classes and upgrades (Xiao et al., OSDI'20, §3.2-§3.3).

* A job inside its tenant's quota is **resource-guaranteed**; anything else is
  **opportunistic** ([`job_class`][alloc.sched.antman.classes.job_class]).  A job whose estimated
  queueing
  delay is long runs as opportunistic at once instead of waiting.
* An opportunistic job is **upgraded** to guaranteed
  ([`upgrade`][alloc.sched.antman.classes.upgrade]) when
  its tenant's quota has room for all its GPUs and every instance is ready to
  be upgraded -- each of its GPUs has the job's milli free and, once the other
  riders there are shrunk to their least memory, its memory; a partial
  upgrade is never done (one slow worker slows the whole synchronous job).
  The upgraded job keeps its GPUs (no restart): its shares become held ones
  at its full memory and compute, and the riders beside it are capped at once.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ...model import MILLI, Cluster, GpuShare, Job
from ...resources import compute_demand, gpu_mem_caps, mem_demand, mem_floor, share_compute, \
    share_mem
from ...tenancy import quota_gpus


def guaranteed_held(cluster: Cluster, jobs: Sequence[Job], tenant: str) -> int:
    """GPUs the tenant's running guaranteed jobs hold."""
    return sum(len(j.current.gpus) for j in jobs
               if j.current is not None and j.guaranteed and j.tenant == tenant)


def quota(cluster: Cluster, tenant: str) -> int:
    """The tenant's quota in GPUs (over every GPU type)."""
    return sum(quota_gpus(cluster, tenant, t) for t in cluster.gpu_types)


def job_class(cluster: Cluster, jobs: Sequence[Job], job: Job, *,
              queue_estimate_s: float = 0.0, long_queue_s: float = float("inf")) -> bool:
    """True (guaranteed) when the job's tenant has quota for it now or the
    wait is short; False (opportunistic) when it has no tenant, no quota at
    all, or faces a queue longer than ``long_queue_s``."""
    if job.tenant is None or job.tenant not in cluster.tenants:
        return False
    room = quota(cluster, job.tenant) - guaranteed_held(cluster, jobs, job.tenant) >= job.gpus
    return room or queue_estimate_s <= long_queue_s and quota(cluster, job.tenant) >= job.gpus


def _share_on(job: Job, gpu: str) -> GpuShare:
    """Running job ``job``'s share of GPU ``gpu`` (one it holds)."""
    cur = job.current
    assert cur is not None, "a running job"
    return next(x for x in cur.gpus if x.gpu == gpu)


def upgrade(cluster: Cluster, jobs: Sequence[Job], job_id: str) -> tuple[Job, ...] | None:
    """``jobs`` with running opportunistic job ``job_id`` upgraded in place
    (module notes), or None when the quota or one of its GPUs has no room."""
    by_id = {j.id: j for j in jobs}
    job = by_id[job_id]
    cur = job.current
    if cur is None or job.guaranteed or job.tenant is None:
        return None
    if quota(cluster, job.tenant) - guaranteed_held(cluster, jobs, job.tenant) < len(cur.gpus):
        return None
    caps = gpu_mem_caps(cluster)
    gidx = cluster.gpu_index
    up = replace(job, guaranteed=True)
    changed: dict[str, dict[str, tuple]] = {}
    for sh in cur.gpus:
        g = gidx[sh.gpu]
        others = [j for j in jobs if j.id != job_id and j.current is not None
                  and any(x.gpu == sh.gpu for x in j.current.gpus)]
        shares = {o.id: _share_on(o, sh.gpu) for o in others}
        milli = sum(x.milli for x in shares.values())
        if MILLI - milli < up.gpu_milli:
            return None
        held = [o for o in others if shares[o.id].milli > 0]
        mem_held = sum(share_mem(o, shares[o.id], caps[g]) for o in held)
        comp_held = sum(share_compute(o, shares[o.id]) for o in held)
        riders = [o for o in others if shares[o.id].milli == 0]
        need = mem_demand(up, caps[g])
        room = caps[g] - mem_held - sum(mem_floor(r, caps[g]) for r in riders)
        if room < need or MILLI - comp_held < compute_demand(up):
            return None
        left_mem = room - need                  # above the riders' floors
        left_comp = MILLI - comp_held - compute_demand(up)
        for r in sorted(riders, key=lambda r: r.id):
            floor = mem_floor(r, caps[g])
            extra = min(share_mem(r, shares[r.id], caps[g]) - floor, left_mem)
            left_mem -= extra
            c = min(share_compute(r, shares[r.id]), left_comp)
            left_comp -= c
            changed.setdefault(r.id, {})[sh.gpu] = (floor + extra, c)
    out = []
    for j in jobs:
        if j.id == job_id:
            gs = tuple(GpuShare(x.gpu, up.gpu_milli) for x in cur.gpus)
            j = replace(up, current=replace(cur, gpus=gs))
        elif j.id in changed:
            jc = j.current
            assert jc is not None         # a job sharing a GPU with the promoted one
            gs = tuple(GpuShare(x.gpu, x.milli, *changed[j.id][x.gpu]) if x.gpu in changed[j.id]
                       else x for x in jc.gpus)
            j = replace(j, current=replace(jc, gpus=gs))
        out.append(j)
    return tuple(out)


__all__ = ["guaranteed_held", "job_class", "quota", "upgrade"]

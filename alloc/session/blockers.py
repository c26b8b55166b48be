"""Servers closed to new placements (drained, or failed but kept) as the core
sees them: *blocker* jobs holding what their running jobs leave free.

The core has no notion of a server that takes no new work.  A blocked server
``s`` is therefore shown to the solvers with running placeholder jobs
(weight 0, priority 1000, opportunistic, no GPU memory) that hold, at the start of a round,

* every whole GPU of ``s`` no running job uses, with the server's free CPU
  and memory (one job ``gpus = |F|``), else a CPU-only job with the free CPU
  and memory;
* the free share ``1000 - used`` of every partly used GPU (one job each).

Nothing is left for a pending job on ``s``, so a solver that keeps running
jobs in place cannot start anything there.  A solver that may stop or move
running jobs (``preemption`` for guaranteed jobs, ``migration`` under a move
budget) could displace a blocker, or a real job of a closed server, and use
the room; `breaches` finds such placements and the session solves the
round again without the jobs concerned (see
[`alloc.session.Session.step`][alloc.session.Session.step]).  Blockers never appear in what the
session returns: their placements are removed and their value (the
``jobs``/``gpus`` objectives count them) subtracted from value and bound.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from ..gpukey import gpu_key
from ..model import MILLI, Allocation, Cluster, GpuShare, Job, Placement
from ..validate import PRIORITY_RANGE
from .checks import RESERVED_PREFIX, placement_servers, server_usage


def blockers(cluster: Cluster, sid: str, running: Iterable[Job]) -> list[Job]:
    """Placeholder running jobs holding every free resource of server ``sid``."""
    out: list[Job]
    gpu, cpu, mem = server_usage(cluster, sid, running)
    srv = cluster.server(sid)
    free_cpu, free_mem = srv.cpu - cpu, srv.mem - mem
    whole = [gpu_key(sid, k) for k, used in enumerate(gpu) if used == 0]
    out = []

    def make(n, gids, milli, c, m):
        jid = f"{RESERVED_PREFIX}{sid}:{len(out)}"
        cur = Placement(jid, tuple(GpuShare(g, milli) for g in gids), {sid: c}, {sid: m})
        out.append(Job(jid, gpus=n, gpu_milli=milli, cpu=c, mem=m, weight=0.0,
                       priority=PRIORITY_RANGE[1], gpu_mem=0, current=cur))

    if whole or free_cpu or free_mem:
        make(len(whole), whole, MILLI, free_cpu, free_mem)
    for k, used in enumerate(gpu):
        if 0 < used < MILLI:
            make(1, [gpu_key(sid, k)], MILLI - used, 0, 0)
    return out


def is_blocker(job_id: str) -> bool:
    """True for the session's placeholder jobs."""
    return job_id.startswith(RESERVED_PREFIX)


def breaches(alloc: Allocation, jobs: Mapping[str, Job], blocked: set[str]
             ) -> tuple[list[str], bool]:
    """New placements on closed servers: the pending jobs ``alloc`` starts on a
    server of ``blocked``, and whether a running job moved onto one.

    Blockers hold only what is free at the start of the round; a solver that
    stops or moves running jobs (a blocker, or a real job on a closed server)
    frees room there, and this is where such a placement is caught."""
    pending, moved = [], False
    for p in alloc.placements:
        if is_blocker(p.job) or not (placement_servers(p) & blocked):
            continue
        cur = jobs[p.job].current
        if cur is None:
            pending.append(p.job)
        elif not p.same_as(cur):
            moved = True
    return pending, moved


def strip(alloc: Allocation, jobs: Mapping[str, Job], objective) -> Allocation:
    """``alloc`` without the blockers (their value taken off value and bound)."""
    gone = [p for p in alloc.placements if is_blocker(p.job)]
    if not gone and not any(is_blocker(j) for j in alloc.unplaced):
        return alloc
    extra = sum(objective.value(jobs[p.job], p) for p in gone)
    return replace(
        alloc, placements=tuple(p for p in alloc.placements if not is_blocker(p.job)),
        unplaced=tuple(j for j in alloc.unplaced if not is_blocker(j)),
        preempted=tuple(j for j in alloc.preempted if not is_blocker(j)),
        moved=tuple(j for j in alloc.moved if not is_blocker(j)),
        value=alloc.value - extra, bound=None if alloc.bound is None else alloc.bound - extra)


__all__ = ["blockers", "breaches", "is_blocker", "strip"]

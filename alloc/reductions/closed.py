r"""Closed servers (drained, or failed but kept) reduced out of a call.

A closed server takes no new work; its running jobs stay (until they finish
or fail).  The reduction removes it from what any solver sees, so that no
solver can start anything there, whatever it may stop or move:

* the cluster ``C`` becomes ``C' = C`` without the closed servers ``K``
  (same levels and tenants; built once per ``(C, K)`` and kept, so that a
  scheduler loop's carry keeps working across rounds);
* a running job held wholly by ``K`` leaves the call: ``J' = J \ R_K``;
* a running job ``r`` with a part on ``K`` and a part on open servers stays,
  *trimmed* to its open part: its current placement restricted to
  ``S \ K`` and its request set to what that part holds (GPUs, CPU,
  memory; not elastic), and it is pinned (no solver may move or stop it);
* the caller's order, restricted to ``J'``;
* the tenants' cells, lowered until the open servers can host them
  (`shrunk_tenants`; a guarantee cannot hold on servers that take no work).

Inverse.  With ``A'`` the allocation of the reduced call, ``invert`` gives
the allocation of the call as posed: every job of ``R_K`` placed where it
runs, every trimmed job on its whole current placement (a trimmed job a
solver stopped is stopped: a running job may always be preempted where the
rules allow it; a trimmed job a solver moved is a solver error), and

$$
v = v' + \sum_{r \in R_K} v_r(\text{cur}_r)
      + \sum_{r \text{ trimmed, kept}} (v_r(\text{cur}_r) - v'_r),\qquad
b = b' + \sum_{r \in R_K} v_r(\text{cur}_r)
      + \sum_{r \text{ trimmed}} \max(0, v_r(\text{cur}_r) - v'_r)
$$

for value and bound (``v_r`` the objective's value of job ``r``; ``v'_r``
that of its trimmed form).  A waiting job that only a closed server could
hold says so.

Examples
--------
>>> from alloc import Cluster, Job, Server
>>> from alloc.reductions import ClosedServers
>>> cl = Cluster((Server("s0", 8000, 64000, 2, "V100"), Server("s1", 8000, 64000, 2, "V100")))
>>> red = ClosedServers()
>>> call, inv = red.apply((cl, [Job("a", 1, cpu=1000, mem=1000)], None), frozenset({"s1"}))
>>> [s.id for s in call[0].servers]
['s0']
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Collection, Iterable, Sequence

from ..check import placement_servers
from ..errors import SolverError
from ..gpukey import server_of
from ..model import Allocation, Cluster, Job, Placement, Tenant
from ..objectives import get_objective
from ..problem import placeable_reason

#: What a call is for a reduction on it: the cluster, the jobs and the
#: caller's order (job ids, highest first; None: none).
Call = tuple[Cluster, Sequence[Job], "Sequence[str] | None"]


@dataclass(frozen=True)
class ClosedInverse:
    """What `ClosedServers.invert` needs: the call as posed, the jobs
    removed (held wholly by closed servers) and the trimmed ones (id -> the
    job as posed), the closed server ids and the reduced cluster."""
    cluster: Cluster
    jobs: tuple[Job, ...]
    removed: tuple[Job, ...]
    trimmed: dict[str, Job]
    closed: frozenset[str]
    reduced: Cluster


def trim(job: Job, closed: frozenset[str]) -> Job:
    """Running ``job`` restricted to its part on open servers: its current
    placement without the closed servers and its request what that part
    holds (not elastic).

    Examples
    --------
    >>> from alloc import GpuShare, Job, Placement
    >>> cur = Placement("g", (GpuShare("s0/gpu0", 1000), GpuShare("s1/gpu0", 1000)),
    ...                 {"s0": 500, "s1": 500},
    ...                 {"s0": 10, "s1": 10})
    >>> t = trim(Job("g", 2, cpu=1000, mem=20, current=cur), frozenset({"s1"}))
    >>> t.gpus, t.cpu, dict(t.current.cpu)
    (1, 500, {'s0': 500})
    """
    cur = job.current
    assert cur is not None, "a running job"
    gpus = tuple(g for g in cur.gpus if server_of(g.gpu) not in closed)
    cpu = {s: v for s, v in cur.cpu.items() if s not in closed}
    mem = {s: v for s, v in cur.mem.items() if s not in closed}
    part = Placement(job.id, gpus, cpu, mem)
    return replace(job, gpus=len(gpus), cpu=sum(cpu.values()), mem=sum(mem.values()),
                   min_gpus=None, max_gpus=None, current=part)


class ClosedServers:
    """The reduction of the module notes; it keeps the last reduced cluster
    (one per cluster and closed set) so that consecutive rounds see the same
    cluster object."""

    def __init__(self) -> None:
        self._last: tuple[Cluster, frozenset[str], Cluster] | None = None

    def _cluster(self, cluster: Cluster, closed: frozenset[str]) -> Cluster:
        last = self._last
        if last is not None and last[0] is cluster and last[1] == closed:
            return last[2]
        servers = tuple(s for s in cluster.servers if s.id not in closed)
        out = Cluster(servers, cluster.levels, cluster.tenants)
        if cluster.tenants and servers:
            out = Cluster(servers, cluster.levels, shrunk_tenants(out))
        self._last = (cluster, closed, out)
        return out

    def apply(self, call: Call, closed: frozenset[str],
              touching: Collection[str] | None = None) -> tuple[Call, ClosedInverse]:
        """The reduced call and the data to invert its answer (module notes);
        when every server is closed the reduced cluster has no server (the
        caller then runs no solver: nothing can start).  ``touching``: the
        ids of the running jobs with a part on a closed server, when the
        caller keeps that index (None: every job is looked at)."""
        cluster, jobs, order = call
        reduced = self._cluster(cluster, closed)
        removed: list[Job] = []
        trimmed: dict[str, Job] = {}
        parts: dict[str, Job] = {}
        for job in jobs:
            if job.current is None or (touching is not None and job.id not in touching):
                continue
            where = placement_servers(job.current)
            if where & closed:
                if where <= closed:
                    removed.append(job)
                else:
                    trimmed[job.id] = job
                    parts[job.id] = trim(job, closed)
        gone = {j.id for j in removed}
        kept = [parts.get(j.id, j) for j in jobs if j.id not in gone] if gone or parts \
            else list(jobs)
        if order is not None and gone:
            order = [j for j in order if j not in gone]
        inv = ClosedInverse(cluster, tuple(jobs), tuple(removed), trimmed, closed, reduced)
        return (reduced, kept, order), inv

    def invert(self, alloc: Allocation, inv: ClosedInverse) -> Allocation:
        """The allocation of the call as posed (module notes)."""
        obj = get_objective(alloc.objective)
        by_id = {j.id: j for j in inv.jobs} if alloc.unplaced else {}
        got = {p.job: p for p in alloc.placements}
        extra = 0.0
        bound_extra = 0.0
        for job in inv.removed:
            cur = recomputed(inv.cluster, job)
            got[job.id] = cur
            v = obj.value(job, cur)
            extra += v
            bound_extra += v
        for jid, job in inv.trimmed.items():
            cur = recomputed(inv.cluster, job)
            v = obj.value(job, cur)
            p = got.get(jid)
            if p is None:                          # stopped: the whole job stops
                bound_extra += v
                continue
            part = trim(job, inv.closed).current
            assert part is not None
            if not p.same_as(part):
                raise SolverError(f"solver {alloc.solver!r} moved job {jid!r}, which runs "
                                  f"partly on a closed server and was pinned")
            got[jid] = cur
            v_part = obj.value(trim(job, inv.closed), p)
            extra += v - v_part
            bound_extra += max(0.0, v - v_part)
        placements = tuple(got.values())   # the reduced answer's, then the restored ones
        reasons = dict(alloc.reasons)
        for jid, why in _closed_reasons(inv, (by_id[j] for j in alloc.unplaced
                                              if j in by_id and j not in alloc.preempted)):
            reasons[jid] = why
        stats = {**alloc.stats, "closed_servers": sorted(inv.closed)}
        return replace(alloc, placements=placements,
                       value=alloc.value + extra,
                       bound=None if alloc.bound is None else alloc.bound + bound_extra,
                       reasons=reasons, stats=stats)


def recomputed(cluster: Cluster, job: Job) -> Placement:
    """Running ``job``'s current placement as the answer reports it: its
    throughput (and a goodput job's batch) recomputed on ``cluster``, the
    ``current`` object itself when they are the reported ones.

    Examples
    --------
    >>> from alloc import GpuShare, Job, Placement, Server
    >>> c = Cluster((Server("s0", 8000, 64000, 1, "V100"),))
    >>> cur = Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 1000})
    >>> recomputed(c, Job("a", 1, cpu=1000, mem=1000, current=cur)).throughput
    1.0
    """
    from ..objectives import goodput_speed, throughput
    from ..memo import remembered
    cur = job.current
    assert cur is not None, "a running job"

    def make() -> Placement:
        gids = [g.gpu for g in cur.gpus]
        tp = round(throughput(cluster, job, gids, sum(cur.cpu.values()),
                              sum(cur.mem.values())), 9)
        batch, accum = cur.batch, cur.accum
        if job.profile is not None and job.profile.goodput is not None and gids:
            _, batch, accum = goodput_speed(cluster, job, gids)
        if (tp, batch, accum) == (cur.throughput, cur.batch, cur.accum):
            return cur
        return replace(cur, throughput=tp, batch=batch, accum=accum)
    out: Placement = remembered(cur, "closed", (cluster, job), make)
    return out


def shrunk_tenants(cluster: Cluster) -> dict[str, Tenant]:
    """The tenants' cells the cluster can host: while
    [`tenant_problems`][alloc.tenancy.tenant_problems] finds some, the
    largest cell count (ties: the first tenant and cell by name and place)
    is lowered by one.  A tenant's guarantee cannot hold on servers that
    take no work; this is the guarantee the open servers can keep.

    Examples
    --------
    >>> from alloc import Cell, Cluster, Server, Tenant
    >>> c = Cluster((Server("s0", 8000, 64000, 8, "V100"),),
    ...             tenants={"vc": Tenant("vc", (Cell("server", 2),))})
    >>> shrunk_tenants(c)["vc"].cells
    (Cell(level='server', count=1, gpu_type=None),)
    """
    from ..tenancy import tenant_problems
    tenants = dict(cluster.tenants)
    while tenant_problems(Cluster(cluster.servers, cluster.levels, tenants)):
        cells = [(-c.count, name, i) for name, ten in sorted(tenants.items())
                 for i, c in enumerate(ten.cells) if c.count > 0]
        if not cells:
            break
        _, name, i = min(cells)
        ten = tenants[name]
        cut = replace(ten.cells[i], count=ten.cells[i].count - 1)
        tenants[name] = replace(ten, cells=ten.cells[:i] + (cut,) + ten.cells[i + 1:])
    return tenants


def _closed_reasons(inv: ClosedInverse, waiting: Iterable[Job]) -> list[tuple[str, str]]:
    """``(job id, reason)`` of the waiting jobs that no open server could
    ever hold (alone on the empty open servers) but the whole cluster
    could: only a closed server has room for them."""
    out = []
    names = ", ".join(sorted(inv.closed))
    seen: dict[Any, bool] = {}
    for job in waiting:
        key = (id(job.profile), job.gpus, job.gpu_milli, job.cpu, job.mem, job.min_gpus,
               job.gpu_types, job.locality, job.gpus_per_server)
        hit = seen.get(key)
        if hit is None:
            hit = seen[key] = (not inv.reduced.servers
                               or placeable_reason(inv.reduced, job) is not None) \
                and placeable_reason(inv.cluster, job) is None
        if hit:
            out.append((job.id, f"only a closed server (drained or failed: {names}) could hold "
                                f"it now"))
    return out


__all__ = ["Call", "ClosedInverse", "ClosedServers", "recomputed", "shrunk_tenants", "trim"]

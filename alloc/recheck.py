"""The final check of a round that follows a checked one: only what changed.

[`violations`][alloc.check.violations] looks at every placement, every
job and every resource.  In a scheduler loop most of them are the very same
objects as in the last allocation that passed it (a
[`Checked`][alloc.recheck.Checked] record, kept in the loop's
[`Carry`][alloc.carry.Carry]); [`violations_since`][alloc.recheck.violations_since]
examines the rest and returns exactly what the full check returns:

* bookkeeping (every job once in ``placements`` or ``unplaced``, nothing
  else): set sizes and inclusions over all ids, linear and in C;
* each placement on its own
  ([`placement_problems`][alloc.check.placement_problems] and its
  throughput): only the pairs (job, placement) that were not a pair of the
  checked allocation.  A pair's result is a pure function of frozen
  objects on the same cluster that does not read the job's ``current``, so
  an old pair passes again, and so does an old placement with its job as
  it was when it started (the same fields but ``current``);
* capacities: the checked allocation's CPU, memory and milli-GPU per
  server and GPU, minus the placements gone, plus the new ones, compared
  with the capacity on every resource whose load changed (the others carry
  the checked load);
* GPU memory and compute, tenancy, and live state with moves or
  preemptions: the full checks whenever anything could matter to them (a
  job or placement declares GPU memory or compute, a tenant or a guaranteed
  job, a job moved or preempted now or in the checked allocation).  A
  running job is otherwise either placed where it runs as an old pair, or a
  new pair compared with its ``current`` placement;
* model names: only new jobs can name a model without a profile.

When this finds any problem, or the record does not apply (another
cluster object), the full check runs and its list is returned, so the
answer is the full check's in every case; a passing allocation becomes the
next record.  ``tests/test_recheck.py`` compares both on generated rounds,
corrupted ones included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from .deadline import Deadline
from .facts import facts
from .memo import same_but_current
from .model import MILLI, Allocation, Cluster, Job, Placement


@dataclass
class Checked:
    """An allocation that passed the final check, as the next check needs it.

    A record is updated in place by the next partial check; a check that
    does not pass leaves no record behind (the next one is full).

    Attributes
    ----------
    cluster : Cluster
        The cluster it was checked on.
    jobs, placements : dict of int to object
        The input jobs and the placements by ``id()`` (held, so that the
        ``id()`` stay unique while the record lives).
    by_id, placed : dict of str to object
        The jobs and the placements by job id.
    gpu, cpu, mem : dict of str to int
        Milli-GPU per GPU name, milli-cores and MiB per server id, summed over
        the placements.
    simple : bool
        Ids unique, nothing declared GPU memory or compute, no tenant, no
        guaranteed job, no model name without its profile, nothing moved or
        preempted (the conditions of the partial check).
    """
    cluster: Cluster
    jobs: dict[int, Job]
    placements: dict[int, Placement]
    by_id: dict[str, Job]
    placed: dict[str, Placement]
    gpu: dict[str, int]
    cpu: dict[str, int]
    mem: dict[str, int]
    simple: bool


def record(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation) -> Checked:
    """The record of an allocation that passed the full check."""
    gpu: dict[str, int] = {}
    cpu: dict[str, int] = {}
    mem: dict[str, int] = {}
    ps = allocation.placements
    _add(ps, 1, gpu, cpu, mem)
    jobs = tuple(jobs)
    by_id = {j.id: j for j in jobs}
    simple = (not _declares(jobs, ps) and not _tenancy(cluster, jobs) and not _unresolved(jobs)
              and len(by_id) == len(jobs) and not allocation.moved and not allocation.preempted)
    return Checked(cluster, dict(zip(map(id, jobs), jobs)), dict(zip(map(id, ps), ps)), by_id,
                   {p.job: p for p in ps}, gpu, cpu, mem, simple)


def violations_since(checked: Checked | None, cluster: Cluster, jobs: Sequence[Job],
                     allocation: Allocation, *, max_moves: int | None = 0,
                     deadline: Deadline | None = None, order: Sequence[str] | None = None,
                     preempt: str | None = None) -> tuple[list[str], Checked | None]:
    """[`violations`][alloc.check.violations], examining only what changed
    since ``checked`` (see the module notes); ``order`` and ``preempt`` as
    the full check takes them (they bear only on preempted jobs, which the
    partial check leaves to the full one).

    Returns
    -------
    list of str, Checked or None
        The full check's answer, and the record for the next round (None
        when the allocation did not pass).
    """
    from .check import violations
    jobs = tuple(jobs)
    if checked is not None and checked.cluster is cluster and checked.simple:
        if _partial(checked, cluster, jobs, allocation):
            return [], checked
    bad = violations(cluster, jobs, allocation, max_moves=max_moves, deadline=deadline,
                     order=order, preempt=preempt)
    return bad, (None if bad else record(cluster, jobs, allocation))


def _partial(rec: Checked, cluster: Cluster, jobs: tuple[Job, ...], allocation: Allocation
             ) -> bool:
    """Bring ``rec`` to this allocation; True when it passes, False when the
    full check must say (``rec`` is then spoilt)."""
    if allocation.moved or allocation.preempted:
        return False
    ps = allocation.placements
    jmap = dict(zip(map(id, jobs), jobs))
    pmap = dict(zip(map(id, ps), ps))
    if len(jmap) != len(jobs) or len(pmap) != len(ps):
        return False
    new_jobs = [jmap[k] for k in jmap.keys() - rec.jobs.keys()]
    gone_jobs: list[Job] = [rec.jobs[k] for k in rec.jobs.keys() - jmap.keys()]
    new = [pmap[k] for k in pmap.keys() - rec.placements.keys()]
    gone: list[Placement] = [rec.placements[k] for k in rec.placements.keys() - pmap.keys()]
    if _declares(new_jobs, new) or _tenancy(cluster, new_jobs) or _unresolved(new_jobs):
        return False
    by_id, placed = rec.by_id, rec.placed
    was = {j.id: by_id.get(j.id) for j in new_jobs}
    for j in gone_jobs:
        jid = j.id
        if by_id.get(jid) is j:
            del by_id[jid]
    for j in new_jobs:
        by_id[j.id] = j
    for p in gone:
        pid = p.job
        if placed.get(pid) is p:
            del placed[pid]
    for p in new:
        placed[p.job] = p
    if not _books(rec, jobs, ps, allocation.unplaced, gone_jobs, new):
        return False
    # the pairs (job, placement) not checked before
    fresh = {id(p): p for p in new}
    for jid in was:
        q = placed.get(jid)
        if q is not None:
            fresh[id(q)] = q
    for p in fresh.values():
        job = by_id[p.job]
        before = was.get(p.job)
        if id(p) in rec.placements and before is not None and same_but_current(job, before):
            continue                         # the pair passed with the job before it started
        bad, known = _own(cluster, job, p)          # once: the record keeps the pair
        if bad or not known:
            return False
        if job.current is not None and not p.same_as(job.current):
            return False                     # a move the allocation does not list
    dg: dict[str, int] = {}
    dc: dict[str, int] = {}
    dm: dict[str, int] = {}
    _add(gone, -1, dg, dc, dm)
    _add(new, 1, dg, dc, dm)
    if not _within(cluster, rec, dg, dc, dm):
        return False
    for delta, total in ((dg, rec.gpu), (dc, rec.cpu), (dm, rec.mem)):
        for k, v in delta.items():
            total[k] = total.get(k, 0) + v
    rec.jobs, rec.placements = jmap, pmap
    return True


def _books(rec: Checked, jobs: tuple[Job, ...], ps: tuple[Placement, ...],
           unplaced: tuple[str, ...], gone_jobs: list[Job], new: list[Placement]) -> bool:
    """Every job once in the placements or unplaced, nothing else, no running
    job dropped: the record held it, so only what changed is looked at."""
    by_id, placed = rec.by_id, rec.placed
    if len(by_id) != len(jobs) or len(placed) != len(ps):
        return False                         # an id twice
    if any(j.id not in by_id for j in gone_jobs if j.id in placed):
        return False                         # a placement for a job that left
    if any(p.job not in by_id for p in new):
        return False
    out = set(unplaced)
    if len(out) != len(unplaced) or len(out) + len(placed) != len(by_id):
        return False
    for jid in out:
        job = by_id.get(jid)
        if job is None or jid in placed or job.current is not None:
            return False                     # unknown, placed too, or a running job dropped
    return True


def _own(cluster: Cluster, job: Job, p: Placement) -> tuple[list[str], bool]:
    from .check import _own_problems
    return _own_problems(cluster, job, p)


def _within(cluster: Cluster, old: Checked, dg: dict[str, int], dc: dict[str, int],
            dm: dict[str, int]) -> bool:
    """Every GPU and server whose load changed within its capacity (the others
    carry the checked load, which was)."""
    gpu, cpu, mem = old.gpu, old.cpu, old.mem
    for k, v in dg.items():
        if v and gpu.get(k, 0) + v > MILLI:
            return False
    f = facts(cluster)                 # the check's own reading, never the model's caches
    servers, index = f.servers, f.server
    for k in dc.keys() | dm.keys():
        s = servers[index[k]]
        if cpu.get(k, 0) + dc.get(k, 0) > s.cpu or mem.get(k, 0) + dm.get(k, 0) > s.mem:
            return False
    return True


def _add(placements: Iterable[Placement], sign: int, gpu: dict[str, int], cpu: dict[str, int],
         mem: dict[str, int]) -> None:
    for p in placements:
        for g in p.gpus:
            gpu[g.gpu] = gpu.get(g.gpu, 0) + sign * g.milli
        for s, v in p.cpu.items():
            cpu[s] = cpu.get(s, 0) + sign * v
        for s, v in p.mem.items():
            mem[s] = mem.get(s, 0) + sign * v


def _declares(jobs: Iterable[Job], placements: Iterable[Placement]) -> bool:
    """Something declares GPU memory or compute (`alloc.resources`)."""
    return any(j.gpu_mem is not None or j.gpu_compute is not None for j in jobs) or any(
        g.mem is not None or g.compute is not None or g.milli == 0
        for p in placements for g in p.gpus)


def _tenancy(cluster: Cluster, jobs: Iterable[Job]) -> bool:
    return bool(cluster.tenants) or any(j.guaranteed for j in jobs)


def _unresolved(jobs: Iterable[Job]) -> bool:
    """A job names a model and carries no profile (the full check reads it)."""
    return any(j.profile is None and j.model for j in jobs)


__all__ = ["Checked", "record", "violations_since"]

"""The final check of a round that follows a checked one: only what changed.

[`violations`][alloc.check.violations] looks at every placement, every
job and every resource.  In a scheduler loop most of them are, by value, the
same as in the last allocation that passed it (a
[`Checked`][alloc.recheck.Checked] record, kept in the loop's
[`Carry`][alloc.carry.Carry]); [`violations_since`][alloc.recheck.violations_since]
examines the rest and returns exactly what the full check returns.  "The
same" is always a comparison of values (``==`` on the frozen objects, after
the free test ``is``), never a flag or a cache of the core, so a placement
rebuilt by a solver that re-places every round from scratch is known again
as long as it is equal to the one checked:

* bookkeeping (every job once in ``placements`` or ``unplaced``, nothing
  else): set sizes and inclusions over all ids, linear and in C;
* each placement on its own
  ([`placement_problems`][alloc.check.placement_problems] and its
  throughput): only where the placement, or its job in any field but
  ``current``, differs from the pair the record holds for that job id.  A
  pair's result is a pure function of frozen values on the same cluster
  that does not read the job's ``current`` (so a job that started keeps the
  verdict of the job that waited);
* capacities: the checked allocation's CPU, memory and milli-GPU per server
  and GPU, minus the placements that differ, plus the new ones, compared
  with the capacity (the check's own reading, `alloc.facts`) on every
  resource whose load changed (the others carry the checked load);
* live state (moves, their allowance, preemptions and who they were for):
  the full check's own [`live_state_problems`][alloc.check.live_state_problems]
  every round (linear; a running job not moved costs one identity test);
* GPU memory and compute, tenancy: the full check whenever anything could
  matter to them (a job or placement declares GPU memory or compute, an
  opportunistic share, a tenant or a guaranteed job);
* model names: only jobs that differ can name a model without a profile.

When this finds any problem, or the record does not apply (another
cluster), the full check runs and its list is returned, so the answer is the
full check's in every case; a passing allocation becomes the next record.
``tests/test_recheck.py`` compares both on generated rounds, corrupted ones
included.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
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
    by_id, placed : dict of str to object
        The input jobs and the placements by job id (each placement passed
        the per-placement check with the job ``by_id`` holds for its id).
    gpu, cpu, mem : dict of str to int
        Milli-GPU per GPU name, milli-cores and MiB per server id, summed over
        the placements.
    simple : bool
        Ids unique, nothing declared GPU memory or compute, no tenant, no
        guaranteed job, no model name without its profile (the conditions
        of the partial check).
    """
    cluster: Cluster
    by_id: dict[str, Job]
    placed: dict[str, Placement]
    gpu: dict[str, int]
    cpu: dict[str, int]
    mem: dict[str, int]
    simple: bool


def record(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation) -> Checked:
    """The record of an allocation that passed the full check.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> c = Cluster((Server("s0", 8000, 64000, 2),))
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000)]
    >>> rec = record(c, jobs, allocate(c, jobs))
    >>> rec.simple, rec.cpu
    (True, {'s0': 1000})
    """
    gpu: dict[str, int] = {}
    cpu: dict[str, int] = {}
    mem: dict[str, int] = {}
    ps = allocation.placements
    _add(ps, 1, gpu, cpu, mem)
    jobs = tuple(jobs)
    by_id = {j.id: j for j in jobs}
    simple = (not _declares(jobs, ps) and not _tenancy(cluster, jobs) and not _unresolved(jobs)
              and len(by_id) == len(jobs))
    return Checked(cluster, by_id, {p.job: p for p in ps}, gpu, cpu, mem, simple)


def violations_since(checked: Checked | None, cluster: Cluster, jobs: Sequence[Job],
                     allocation: Allocation, *, max_moves: int | None = 0,
                     deadline: Deadline | None = None, order: Sequence[str] | None = None,
                     preempt: str | None = None) -> tuple[list[str], Checked | None]:
    """[`violations`][alloc.check.violations], examining only what changed
    since ``checked`` (see the module notes); ``max_moves``, ``order`` and
    ``preempt`` as the full check takes them.

    Returns
    -------
    list of str, Checked or None
        The full check's answer, and the record for the next round (None
        when the allocation did not pass).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> c = Cluster((Server("s0", 8000, 64000, 2),))
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000)]
    >>> a = allocate(c, jobs)
    >>> bad, rec = violations_since(None, c, jobs, a)          # the full check
    >>> violations_since(rec, c, jobs, a)[0]                    # nothing changed
    []
    """
    from .check import violations
    jobs = tuple(jobs)
    if checked is not None and checked.simple and (checked.cluster is cluster
                                                   or checked.cluster == cluster):
        if _partial(checked, cluster, jobs, allocation, max_moves, order, preempt):
            return [], checked
    bad = violations(cluster, jobs, allocation, max_moves=max_moves, deadline=deadline,
                     order=order, preempt=preempt)
    return bad, (None if bad else record(cluster, jobs, allocation))


def _partial(rec: Checked, cluster: Cluster, jobs: tuple[Job, ...], allocation: Allocation,
             max_moves: int | None = 0, order: Sequence[str] | None = None,
             preempt: str | None = None) -> bool:
    """Bring ``rec`` to this allocation; True when it passes, False when the
    full check must say (``rec`` is then left as it was)."""
    from .check import live_state_problems
    ps = allocation.placements
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in ps}
    if not _books(by_id, placed, jobs, ps, allocation.unplaced):
        return False
    old_jobs, old_placed = rec.by_id, rec.placed
    get_job = old_jobs.get
    changed = [j for j in jobs if get_job(j.id) is not j and not _same_job(get_job(j.id), j)]
    if _declares(changed, ()) or _tenancy(cluster, changed) or _unresolved(changed):
        return False
    new: list[Placement] = []
    gone: list[Placement] = []
    for jid, p in placed.items():
        q = old_placed.get(jid)
        same = q is not None and (q is p or q == p)
        if same:
            job, old = by_id[jid], get_job(jid)
            if old is job or _same_job(old, job):
                continue                     # the pair passed as it is
        if not same:
            if _declares((), (p,)):
                return False
            new.append(p)
            if q is not None:
                gone.append(q)
        if not _passes(cluster, by_id[jid], p):
            return False
    gone += [q for jid, q in old_placed.items() if jid not in placed]
    dg: dict[str, int] = {}
    dc: dict[str, int] = {}
    dm: dict[str, int] = {}
    _add(gone, -1, dg, dc, dm)
    _add(new, 1, dg, dc, dm)
    if not _within(cluster, rec, dg, dc, dm):
        return False
    if live_state_problems(jobs, allocation, max_moves, order=order, preempt=preempt):
        return False
    for delta, total in ((dg, rec.gpu), (dc, rec.cpu), (dm, rec.mem)):
        for k, v in delta.items():
            total[k] = total.get(k, 0) + v
    rec.by_id, rec.placed = by_id, placed
    return True


def _same_job(old: Job | None, job: Job) -> bool:
    """``job`` equals ``old`` in every field but ``current`` (what the
    per-placement check reads of it)."""
    return old is not None and (old is job or same_but_current(old, job)
                                or _drop_current(old) == _drop_current(job))


#: The fields of a job but ``current``.
_BUT_CURRENT = tuple(f.name for f in fields(Job) if f.name != "current")


def _drop_current(job: Job) -> tuple[object, ...]:
    return tuple(getattr(job, f) for f in _BUT_CURRENT)


def _books(by_id: dict[str, Job], placed: dict[str, Placement], jobs: tuple[Job, ...],
           ps: tuple[Placement, ...], unplaced: tuple[str, ...]) -> bool:
    """Every job once in the placements or unplaced, nothing else (ids
    unique): set sizes and inclusions."""
    out = set(unplaced)
    return (len(by_id) == len(jobs) and len(placed) == len(ps) and len(out) == len(unplaced)
            and len(out) + len(placed) == len(by_id) and out.isdisjoint(placed)
            and by_id.keys() >= placed.keys() and by_id.keys() >= out)


def _own(cluster: Cluster, job: Job, p: Placement) -> tuple[list[str], bool]:
    """The full check's own problems of one placement, and whether its GPUs
    and servers are known."""
    from .check import _own_problems
    return _own_problems(cluster, job, p)


def _passes(cluster: Cluster, job: Job, p: Placement) -> bool:
    bad, known = _own(cluster, job, p)
    return known and not bad


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
    """Something declares GPU memory or compute, or holds an opportunistic
    share (`alloc.resources`)."""
    return any(j.gpu_mem is not None or j.gpu_compute is not None for j in jobs) or any(
        g.mem is not None or g.compute is not None or g.milli == 0
        for p in placements for g in p.gpus)


def _tenancy(cluster: Cluster, jobs: Iterable[Job]) -> bool:
    return bool(cluster.tenants) or any(j.guaranteed for j in jobs)


def _unresolved(jobs: Iterable[Job]) -> bool:
    """A job names a model and carries no profile (the full check reads it)."""
    return any(j.profile is None and j.model for j in jobs)


__all__ = ["Checked", "record", "violations_since"]

"""The final check of a round that follows a checked one: only what changed.

[`violations`][alloc.check.violations] looks at every placement, every
job and every resource.  In a scheduler loop most of them are the very
objects of the last allocation that passed it (a
[`Checked`][alloc.recheck.Checked] record, kept in the loop's
[`Carry`][alloc.carry.Carry]), or equal to them;
[`violations_since`][alloc.recheck.violations_since] examines the rest and
returns exactly what the full check returns:

* the identity difference first: the jobs and the placements new or gone by
  identity since the record (``id()`` maps and a symmetric set difference,
  in C; the record holds the old objects, so their ids cannot be taken by
  new ones), and the job ids they name (the *touched* ids).  An id not
  touched has the very job and placement (or none) it had when the record
  passed, so every verdict about it stands;
* bookkeeping (every job once in ``placements`` or ``unplaced``, nothing
  else): the by-id maps brought up to date from the touched objects, then
  set sizes and inclusions, in C;
* each touched placement on its own
  ([`placement_problems`][alloc.check.placement_problems] and its
  throughput): only where the placement, or its job in any field but
  ``current``, differs by value (``==`` on the frozen objects, after the
  free test ``is``) from the pair the record holds for that job id, so a
  placement rebuilt by a solver that re-places every round from scratch is
  known again as long as it is equal to the one checked.  A pair's result
  is a pure function of frozen values on the same cluster that does not read
  the job's ``current`` (so a job that started keeps the verdict of the job
  that waited);
* capacities: the checked allocation's CPU, memory and milli-GPU per server
  and GPU, minus the placements that differ, plus the new ones, compared
  with the capacity (the check's own reading, `alloc.facts`) on every
  resource whose load changed (the others carry the checked load);
* live state (moves, their allowance, preemptions): the record's moved and
  preempted jobs ([`Seen`][alloc.recheck.Seen]) with each touched id's status
  read again (a running job placed elsewhere than its ``current``, or not
  placed), which must be the allocation's ``moved`` and ``preempted``, the
  moves within the allowance; when the allocation preempts, the full
  check's own [`live_state_problems`][alloc.check.live_state_problems]
  (who each was stopped for);
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
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence

from .deadline import Deadline
from .facts import facts
from .memo import same_but_current
from .model import MILLI, Allocation, Cluster, Job, Placement


@dataclass(frozen=True)
class Seen:
    """The objects an allocation that passed the check was made of, by
    identity, and its live state: what lets the next check take the
    identity difference first (see the module notes).

    Attributes
    ----------
    jobs, placements : dict of int to object
        The input jobs and the placements by ``id()`` (the record holds them,
        so no other object can take their ids while it lives).
    moved, preempted : frozenset of str
        The running jobs placed elsewhere than they run, and those not
        placed (the allocation's ``moved`` and ``preempted``, as sets).
    """
    jobs: dict[int, Job]
    placements: dict[int, Placement]
    moved: frozenset[str]
    preempted: frozenset[str]


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
    seen : Seen or None
        The same objects by identity, with the live state (None, or sizes
        that differ from ``by_id`` and ``placed``, which a caller may extend
        with a job it checked itself: derived from them by the next check).
    """
    cluster: Cluster
    by_id: dict[str, Job]
    placed: dict[str, Placement]
    gpu: dict[str, int]
    cpu: dict[str, int]
    mem: dict[str, int]
    simple: bool
    seen: Seen | None = None


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
    seen = Seen(_by_object(jobs), _by_object(ps), frozenset(allocation.moved),
                frozenset(allocation.preempted))
    return Checked(cluster, by_id, {p.job: p for p in ps}, gpu, cpu, mem, simple, seen)


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
    seen = rec.seen
    if seen is None or len(seen.jobs) != len(rec.by_id) or \
            len(seen.placements) != len(rec.placed):
        seen = _seen_of(rec)                 # none, or the record grew without it
    jobs_now, ps_now = _by_object(jobs), _by_object(ps)
    if len(jobs_now) != len(jobs) or len(ps_now) != len(ps) or cluster.tenants:
        return False                         # an object listed twice: the full check's
    by_id, touched = _moved_keys(rec.by_id, seen.jobs, jobs_now, _JOB_ID)
    placed, more = _moved_keys(rec.placed, seen.placements, ps_now, _PLACED_ID)
    touched |= more
    if not _books(by_id, placed, len(jobs), len(ps), allocation.unplaced, touched):
        return False
    new: list[Placement] = []
    gone: list[Placement] = []
    moved, dropped = set(seen.moved - touched), set(seen.preempted - touched)
    old_jobs, old_placed = rec.by_id, rec.placed
    for jid in touched:                       # the rest is, by identity, what passed
        job, old = by_id.get(jid), old_jobs.get(jid)
        p, q = placed.get(jid), old_placed.get(jid)
        same_job = job is not None and (old is job or _same_job(old, job))
        if job is not None and not same_job and not _plain(job):
            return False
        if p is None:
            if q is not None:
                gone.append(q)
            if job is not None and job.current is not None:
                dropped.add(jid)
            continue
        assert job is not None, "the books: every placement's job is in the input"
        if job.current is not None and not p.same_as(job.current):
            moved.add(jid)
        same = q is not None and (q is p or q == p)
        if same and same_job:
            continue                          # the pair passed as it is
        if not same:
            if _declares((), (p,)):
                return False
            new.append(p)
            if q is not None:
                gone.append(q)
        if not _passes(cluster, job, p):
            return False
    dg: dict[str, int] = {}
    dc: dict[str, int] = {}
    dm: dict[str, int] = {}
    _add(gone, -1, dg, dc, dm)
    _add(new, 1, dg, dc, dm)
    if not _within(cluster, rec, dg, dc, dm):
        return False
    if allocation.preempted:                 # who each was stopped for: the full rule
        if live_state_problems(jobs, allocation, max_moves, order=order, preempt=preempt):
            return False
    if moved != set(allocation.moved) or dropped != set(allocation.preempted) or \
            (max_moves is not None and len(moved) > max_moves):
        return False
    for delta, total in ((dg, rec.gpu), (dc, rec.cpu), (dm, rec.mem)):
        for k, v in delta.items():
            total[k] = total.get(k, 0) + v
    rec.by_id, rec.placed = by_id, placed
    rec.seen = Seen(jobs_now, ps_now, frozenset(moved), frozenset(dropped))
    return True


_JOB_ID = attrgetter("id")
_PLACED_ID = attrgetter("job")


def _by_object(items: Iterable[Any]) -> dict[int, Any]:
    """``{id(x): x}`` (built in C)."""
    items = tuple(items)
    return dict(zip(map(id, items), items))


def _seen_of(rec: Checked) -> Seen:
    """The `Seen` of a record that has none: its own objects, and its live
    state read from them."""
    moved, dropped = set(), set()
    for jid, job in rec.by_id.items():
        if job.current is not None:
            p = rec.placed.get(jid)
            if p is None:
                dropped.add(jid)
            elif not p.same_as(job.current):
                moved.add(jid)
    return Seen(_by_object(rec.by_id.values()), _by_object(rec.placed.values()),
                frozenset(moved), frozenset(dropped))


def _moved_keys(by_key: dict[str, Any], before: dict[int, Any], now: dict[int, Any],
                key: Callable[[Any], str]) -> tuple[dict[str, Any], set[str]]:
    """``by_key`` (the objects ``before`` by their key) brought to the objects
    ``now``: the identity difference first (a set operation in C), then each
    object gone or new by identity; and the keys whose object is not the
    same object.  A key two objects now share leaves the map with fewer
    entries than objects (`_books` compares the sizes)."""
    diff = before.keys() ^ now.keys()
    if not diff:
        return by_key, set()
    out = dict(by_key)
    keys: set[str] = set()
    get = now.get
    for o in diff:
        x = get(o)
        if x is None:                         # gone: its key's entry, unless taken again
            x = before[o]
            k = key(x)
            if out.get(k) is x:
                del out[k]
        else:
            k = key(x)
            out[k] = x
        keys.add(k)
    return out, keys


def _same_job(old: Job | None, job: Job) -> bool:
    """``job`` equals ``old`` in every field but ``current`` (what the
    per-placement check reads of it)."""
    return old is not None and (old is job or same_but_current(old, job)
                                or _drop_current(old) == _drop_current(job))


#: The fields of a job but ``current``.
_BUT_CURRENT = tuple(f.name for f in fields(Job) if f.name != "current")


def _drop_current(job: Job) -> tuple[object, ...]:
    return tuple(getattr(job, f) for f in _BUT_CURRENT)


def _books(by_id: dict[str, Any], placed: dict[str, Any], jobs: int, placements: int,
           unplaced: tuple[str, ...], touched: set[str]) -> bool:
    """Every job once in the placements or unplaced, nothing else (ids
    unique: one entry per object, ``jobs`` and ``placements`` of them): set
    sizes and inclusions, those of the placements over the ``touched`` ids
    only (the others are the record's, whose books held)."""
    out = set(unplaced)
    return (len(by_id) == jobs and len(placed) == placements and len(out) == len(unplaced)
            and len(out) + len(placed) == jobs and placed.keys().isdisjoint(out)
            and by_id.keys() >= out and all(k in by_id for k in touched if k in placed))


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


def _plain(job: Job) -> bool:
    """The job declares no GPU memory or compute, is not guaranteed and names
    no model without its profile (`_declares`, `_tenancy` and `_unresolved`
    of one job, on a cluster without tenants)."""
    one = (job,)
    return not (_declares(one, ()) or job.guaranteed or _unresolved(one))


def _tenancy(cluster: Cluster, jobs: Iterable[Job]) -> bool:
    return bool(cluster.tenants) or any(j.guaranteed for j in jobs)


def _unresolved(jobs: Iterable[Job]) -> bool:
    """A job names a model and carries no profile (the full check reads it)."""
    return any(j.profile is None and j.model for j in jobs)


__all__ = ["Checked", "Seen", "record", "violations_since"]

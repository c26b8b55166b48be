r"""Gandiva's scheduler over time (Xiao et al., OSDI'18, section 4) on a
[Session][alloc.session.Session] whose rounds run the ``gandiva`` solver.

Every decision goes through the session: a job's arrival, departure and a
server's failure are session events, and every placement -- a start, a
resume, a packing, a migration, a resize -- is made by a round
(``Session.step``), i.e. by the ``gandiva`` solver on the core's compiled
problem, checked by ``violations()``.  The scheduler keeps what the core
does not: which server a suspended job is time-sliced on (the solver's
``bound`` option), the placements it plans for the next round (``plan``),
packed groups, virtual times and profiles.  The session holds the ``bound``
and ``plan`` dictionaries by reference as its solver options; the scheduler
updates them between rounds and the solver only reads them.  A suspension
is the session's stop event (``stop(job, requeue=True)``: the job
stops on purpose -- not a crash -- holds nothing and waits); a packing or its end submits the job again
with its new share (``finish`` then ``submit``, so the session's count of
finished jobs counts those too).

Reactive mode (events).

* Arrival: the round places the job by Algorithm 1
  ([alloc.solvers.gandiva.reactive][]); when no GPUs are free it is bound
  to a same-affinity server and waits, suspended, for its slice
  (over-subscription), else it is queued.
* Departure: the freed GPUs go first to jobs suspended on that server (in
  round-robin order); with migration, suspended jobs of other servers move
  onto GPUs still free (the cluster's height goes down) and spread jobs
  move onto one server; queued jobs are then placed by Algorithm 1.
* Server failure: its jobs lose their GPUs; packed groups there split, and
  they are all placed again by Algorithm 1.

Time-slicing (every ``slice_s`` seconds, 60 by default): every unit running
at the boundary has had a slice and its virtual time advances; then on each
server the
units (a job, or the jobs packed on one GPU) are chosen by weighted
round-robin ([alloc.solvers.gandiva.slicing][]); a running unit not chosen
is suspended -- the session's stop event: it stops and holds no GPU --
and a chosen suspended unit resumes on the server's free GPUs.  A
higher-priority job is never suspended for a lower one.

Introspective mode (at each slice boundary, after the rotation):

* Packing, only while some server is over-subscribed: suspended 1-GPU jobs
  that have been profiled (they ran alone for ``profile_s``), lowest GPU
  utilisation first, each onto the GPU of lowest utilisation on its server
  that runs fewer than ``pack_limit`` jobs, all profiled and of the job's
  priority (a packed unit has one priority), whose GPU memory
  (the jobs' ``gpu_mem``, MiB) fits the GPU's (the server's ``gpu_mem``,
  else ``gpu_mem_capacity`` by GPU type, else the library's table,
  [alloc.resources.gpu_mem_capacity][]); never a set of jobs whose packing was undone before.  Packed jobs
  share the GPU in equal milli-GPU shares (``1000 // k`` each for k jobs:
  the job is submitted again with that share, so the core's check holds
  them to the GPU's 1000 milli).  At the next boundary the packing is kept
  only if the jobs' measured rates, each over its rate alone, sum to more
  than 1 (what time-slicing gives them); otherwise it is undone (the first
  job keeps the GPU, the others are suspended).  When a server is no longer
  over-subscribed its packings split onto free GPUs.
* Migration (``migration=True``): defragmentation and locality moves
  ([alloc.solvers.gandiva.defrag][]), as planned moves of the running jobs.
* Grow-shrink (``grow_shrink=True``, elastic jobs): when nothing is queued
  or suspended and a server's GPUs have been free for ``grow_idle_s``, its
  elastic jobs grow, within the server, to the largest power of two their
  ``max_gpus`` and the free GPUs allow; a grown job shrinks back to its
  request as soon as an arriving job finds no free GPUs.

Each event returns a [Decision][alloc.solvers.gandiva.scheduler.Decision]
naming what changed; the caller charges the costs (suspend-resume,
migration) and reports measured rates back through ``tick``.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ...gpukey import server_of
from ...errors import InputError
from ...model import MILLI, Cluster, Job, Profile
from ...resources import server_gpu_mem
from ...session import Session
from .defrag import DEFRAG_THRESHOLD, defrag_moves, locality_moves
from .slicing import Unit, slice_choice

#: Default slice length (seconds): the paper's time-slicing interval.
SLICE_S = 60.0


@dataclass(frozen=True)
class Decision:
    """What one event changed.

    Attributes
    ----------
    time : float
    started : tuple of str
        Jobs that hold GPUs for the first time.
    resumed : tuple of str
        Jobs back on GPUs after a suspension (or a packing change).
    suspended : tuple of str
        Jobs that stopped and hold no GPU (time-slicing, undone packings).
    bound : mapping of str to str
        Jobs over-subscribed now: job id -> the server they are time-sliced on.
    queued : tuple of str
        Arriving jobs left waiting.
    migrated : tuple of str
        Jobs moved to another server (running or suspended).
    packed, undone, unpacked : tuple of tuple of str
        Packings made, undone (they lost to time-slicing), split (GPUs freed).
    resized : tuple of (str, int, int)
        Grow or shrink: job, GPUs before, GPUs after.
    lost : tuple of str
        Jobs whose server failed.
    steps : int
        Session rounds run.
    decide_s, step_s : float
        Seconds in the scheduler's own logic and in ``Session.step``.
    solver_s : float
        Seconds of ``step_s`` in the ``gandiva`` solver itself (the rest is
        the core's compile step, its final check and the session's update).
    """
    time: float
    started: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    suspended: tuple[str, ...] = ()
    bound: Mapping[str, str] = field(default_factory=dict)
    queued: tuple[str, ...] = ()
    migrated: tuple[str, ...] = ()
    packed: tuple[tuple[str, ...], ...] = ()
    undone: tuple[tuple[str, ...], ...] = ()
    unpacked: tuple[tuple[str, ...], ...] = ()
    resized: tuple[tuple[str, int, int], ...] = ()
    lost: tuple[str, ...] = ()
    steps: int = 0
    decide_s: float = 0.0
    step_s: float = 0.0
    solver_s: float = 0.0


class _Log:
    """Collects one event's changes into a `Decision`."""

    def __init__(self, now: float):
        self.now = now
        self.t0 = time.perf_counter()
        self.lists: dict[str, list[Any]] = {
            k: [] for k in ("started", "resumed", "suspended", "queued", "migrated", "packed",
                            "undone", "unpacked", "resized", "lost")}
        self.bound: dict[str, str] = {}
        self.steps = 0
        self.step_s = 0.0
        self.solver_s = 0.0

    def add(self, kind: str, item) -> None:
        self.lists[kind].append(item)

    def done(self) -> Decision:
        total = time.perf_counter() - self.t0
        return Decision(self.now, bound=self.bound, steps=self.steps,
                        decide_s=total - self.step_s, step_s=self.step_s, solver_s=self.solver_s,
                        **{k: tuple(v) for k, v in self.lists.items()})


@dataclass
class _Job:
    """The scheduler's record of one job."""
    base: Job
    seq: int
    util: float | None
    size: int
    vt: float = 0.0
    home: str | None = None
    group: str | None = None
    ran: bool = False
    profiled: bool = False
    alone_since: float | None = None


def _positive(name: str, v, *, integer: bool = False, allow_zero: bool = False) -> None:
    ok = (isinstance(v, int) if integer else isinstance(v, (int, float))) \
        and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        what = "an integer" if integer else "a number"
        raise InputError(f"{name}: expected {what} {'>= 0' if allow_zero else '> 0'}, got {v!r}")


class GandivaScheduler:
    """Gandiva's scheduler on a session (see the module notes).

    Parameters
    ----------
    cluster : Cluster
    slice_s : float
        Time-slice length (seconds, > 0).
    oversubscribe : bool
        Over-subscribe and time-slice (False: a job waits for free GPUs).
    packing : bool
        Introspective packing.
    pack_limit : int
        Most jobs packed on one GPU (>= 1; 1: no packing).
    migration : bool
        Migrations: defragmentation, locality, suspended jobs to free GPUs.
    grow_shrink : bool
        Grow elastic jobs when the cluster is idle, shrink them on demand.
    gpu_mem_capacity : mapping of str to int, optional
        GPU memory (MiB) per GPU type, the packing limit, for servers that
        do not declare their ``gpu_mem`` (a type missing here: the
        library's table, [alloc.resources.gpu_mem_capacity][]).
    profile_s : float, optional
        Seconds a job runs alone before it is profiled (default
        ``slice_s / 10``).
    grow_idle_s : float, optional
        Seconds a server's GPUs stay free before its jobs grow (default
        ``slice_s``).
    defrag_threshold : int
        Free GPUs at which a non-idle server is emptied.
    models : mapping of str to Profile, optional
        Inline models the jobs may name (as for a session).
    time_limit : float
        Seconds per session round.
    """

    def __init__(self, cluster: Cluster, *, slice_s: float = SLICE_S, oversubscribe: bool = True,
                 packing: bool = True, pack_limit: int = 2, migration: bool = False,
                 grow_shrink: bool = False, gpu_mem_capacity: Mapping[str, int] | None = None,
                 profile_s: float | None = None, grow_idle_s: float | None = None,
                 defrag_threshold: int = DEFRAG_THRESHOLD,
                 models: Mapping[str, Profile] | None = None, time_limit: float = 10.0):
        _positive("slice_s", slice_s)
        _positive("pack_limit", pack_limit, integer=True)
        _positive("defrag_threshold", defrag_threshold, integer=True)
        for name, v in (("profile_s", profile_s), ("grow_idle_s", grow_idle_s)):
            if v is not None:
                _positive(name, v, allow_zero=True)
        for t, v in (gpu_mem_capacity or {}).items():
            _positive(f"gpu_mem_capacity[{t!r}]", v, integer=True)
        self.slice_s = float(slice_s)
        self.packing = bool(packing) and pack_limit > 1
        self.pack_limit, self.migration, self.grow_shrink = pack_limit, migration, grow_shrink
        self.gpu_mem_capacity = dict(gpu_mem_capacity or {})
        self.profile_s = self.slice_s / 10 if profile_s is None else float(profile_s)
        self.grow_idle_s = self.slice_s if grow_idle_s is None else float(grow_idle_s)
        self.defrag_threshold = defrag_threshold
        self._bound: dict[str, str] = {}
        self._plan: dict[str, tuple[str, ...]] = {}
        moves = migration or grow_shrink
        self.session = Session(cluster, solver="gandiva", time_limit=time_limit,
                               options={"oversubscribe": oversubscribe, "bound": self._bound,
                                        "plan": self._plan},
                               max_moves=None if moves else 0,
                               move_cost=0.0 if moves else None, models=models, name="gandiva")
        self._jobs: dict[str, _Job] = {}
        self._on: dict[str, set[str]] = {s.id: set() for s in cluster.servers}
        self._spread: dict[str, dict[str, int]] = {}
        self._groups: dict[str, list[str]] = {}
        self._trials: dict[str, float] = {}
        self._failed: set[frozenset] = set()
        self._free_since: dict[str, float] = {}
        self._intent: dict[str, str] = {}
        self._seq = 0
        self._gid = 0
        self.counts: Counter = Counter()

    # ---------------------------------------------------------------- views
    @property
    def cluster(self) -> Cluster:
        """The cluster now (a failed server leaves it)."""
        return self.session.cluster

    def placement(self, job_id: str):
        """Where a job runs now (None: suspended or queued)."""
        return self.session.jobs[job_id].current

    @property
    def suspended(self) -> tuple[str, ...]:
        """Jobs time-sliced on a server and not holding GPUs now."""
        return tuple(self._bound)

    @property
    def queued(self) -> tuple[str, ...]:
        """Jobs waiting for GPUs, bound to no server."""
        return tuple(j for j in self.session.pending if j not in self._bound)

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Packed groups: id -> jobs sharing one GPU."""
        return {g: tuple(m) for g, m in self._groups.items()}

    def home(self, job_id: str) -> str | None:
        """The server a job is time-sliced on (None: queued or spread)."""
        return self._jobs[job_id].home

    def height(self, server_id: str) -> float:
        """Allocated GPUs (running and suspended jobs) over the server's GPUs."""
        srv = self.cluster.server(server_id)
        pinned = sum(self._spread_on(server_id).values())
        return (self._need(server_id) + pinned) / srv.gpus if srv.gpus else 0.0

    def units(self, server_id: str) -> list[Unit]:
        """The time-sliced units homed on a server."""
        seen: set[str] = set()
        out = []
        jobs = self.session.jobs
        for jid in sorted(self._on.get(server_id, ()), key=lambda x: self._jobs[x].seq):
            if jid in seen:
                continue
            info = self._jobs[jid]
            members = self._groups[info.group] if info.group else [jid]
            seen.update(members)
            out.append(Unit(tuple(members), 1 if info.group else info.size,
                            max(self._jobs[m].base.priority for m in members), info.vt,
                            min(self._jobs[m].seq for m in members),
                            all(jobs[m].current is not None for m in members)))
        return out

    def over_subscribed(self) -> list[str]:
        """Servers whose time-sliced units need more GPUs than they have."""
        return [s.id for s in self.cluster.servers if self._cap(s.id) < self._need(s.id)]

    def _need(self, sid: str) -> int:
        """GPUs the units homed on a server need (a packed unit: 1)."""
        groups, n = set(), 0
        for jid in self._on.get(sid, ()):
            info = self._jobs[jid]
            if info.group is None:
                n += info.size
            elif info.group not in groups:
                groups.add(info.group)
                n += 1
        return n

    # --------------------------------------------------------------- events
    def submit(self, job: Job, now: float, *, util: float | None = None) -> Decision:
        """A job arrives (``util``: its GPU utilisation alone, 0..1, known
        to the scheduler once the job is profiled).  A job with ``current``
        set runs there already and stays."""
        if util is not None and (isinstance(util, bool) or not isinstance(util, (int, float))
                                 or not 0.0 <= util <= 1.0):
            raise InputError(f"util: expected a number in 0..1, got {util!r}")
        log = _Log(now)
        self.session.submit(job)
        self._jobs[job.id] = _Job(replace(job, current=None), self._seq,
                                  None if util is None else float(util), job.gpus)
        self._seq += 1
        if job.current is not None:                   # it runs already: keep it there
            self._jobs[job.id].ran = True
            self._settle(job.id, _servers(job.current))
        if self.grow_shrink:
            self._shrink_for(job, log)
        self._step(log)
        if self.session.jobs[job.id].current is None and job.id not in self._bound:
            log.add("queued", job.id)
            self.counts["queued"] += 1
        return log.done()

    def finish(self, job_id: str, now: float) -> Decision:
        """A job departs: its GPUs go to suspended jobs, then queued ones."""
        log = _Log(now)
        info = self._jobs.get(job_id)
        self.session.finish(job_id)
        servers = set(self._forget(job_id))
        if info is not None and info.group:
            servers |= self._leave_group(job_id, info.group, log)
        self._fill(servers, log)
        if self.migration:
            self._rebalance(log)
        self._step(log)
        return log.done()

    def fail_server(self, server_id: str, now: float) -> Decision:
        """A server fails: its jobs lose their GPUs and are placed again."""
        log = _Log(now)
        lost = set(self.session.fail_server(server_id))
        lost |= {j for j in self._on.get(server_id, ()) if j in self._bound}
        for gid in {self._jobs[j].group for j in lost if self._jobs[j].group}:
            for m in self._groups.pop(gid):
                self._trials.pop(gid, None)
                self._jobs[m].group = None
                self._resubmit(m, self._jobs[m].base.gpu_milli)
                lost.add(m)
        for j in sorted(lost, key=lambda x: self._jobs[x].seq):
            self._forget(j, keep=True)
            log.add("lost", j)
        self._on.pop(server_id, None)
        self.counts["lost"] += len(lost)
        self._step(log)
        return log.done()

    def tick(self, now: float, measured: Mapping[str, float] | None = None) -> Decision:
        """A slice boundary: profile, judge packings (``measured``: each
        packed job's rate over its rate alone since the last boundary),
        rotate, pack or split, migrate, grow."""
        log = _Log(now)
        self._profile(now)
        self._charge()
        if self._trials and self._judge(measured or {}, log):
            self._step(log)
        if self._rotate(now, log):
            self._step(log)
        if self.packing and self._pack_or_split(now, log):
            self._step(log)
        if self.migration and self._rebalance(log, defrag=True):
            self._step(log)
        if self.grow_shrink and self._grow(now, log):
            self._step(log)
        return log.done()

    # -------------------------------------------------------------- rounds
    def _step(self, log: _Log) -> None:
        """One session round, then the scheduler's records brought in step."""
        t = time.perf_counter()
        res = self.session.step()
        log.step_s += time.perf_counter() - t
        log.steps += 1
        intent = dict(self._intent)
        self._plan.clear()
        self._intent = {}
        st = res.allocation.stats.get("gandiva", {})
        assert isinstance(st, Mapping), "the gandiva solver's stats"
        log.solver_s += st.get("solve_s", 0.0)
        self.counts["missed"] += len(st.get("missed", ()))
        for p in res.start:
            info = self._jobs[p.job]
            self._bound.pop(p.job, None)
            self._settle(p.job, _servers(p))
            kind = "resumed" if info.ran else "started"
            info.ran = True
            log.add(kind, p.job)
            self.counts[kind] += 1
            if p.job in intent:
                log.add("migrated", p.job)
                self.counts["migrations"] += 1
            info.alone_since = None if info.group else log.now
        for p in res.move:
            info = self._jobs[p.job]
            before = info.size
            self._settle(p.job, _servers(p))
            info.size = len(p.gpus)
            if intent.get(p.job) == "resize" or info.size != before:
                log.add("resized", (p.job, before, info.size))
                self.counts["resizes"] += 1
            else:
                log.add("migrated", p.job)
                self.counts["migrations"] += 1
        for jid, sid in st.get("bound", {}).items():
            self._bound[jid] = sid
            self._settle(jid, {sid})
            log.bound[jid] = sid
            self.counts["oversubscribed"] += 1

    def _settle(self, jid: str, servers: set[str]) -> None:
        """Record where a job now belongs: one server (its home), or spread."""
        info = self._jobs[jid]
        old = info.home
        if old is not None and (len(servers) != 1 or old not in servers):
            self._on.get(old, set()).discard(jid)
        self._spread.pop(jid, None)
        if len(servers) == 1:
            sid = next(iter(servers))
            if old != sid:
                others = [self._jobs[j].vt for j in self._on.get(sid, ()) if j != jid]
                info.vt = max(info.vt, min(others)) if others else info.vt
            info.home = sid
            self._on.setdefault(sid, set()).add(jid)
        else:
            info.home = None
            cur = self.session.jobs[jid].current
            per: dict[str, int] = {}
            for g in cur.gpus:
                s = server_of(g.gpu)
                per[s] = per.get(s, 0) + 1
            self._spread[jid] = per

    def _forget(self, jid: str, keep: bool = False) -> set[str]:
        """Drop a job from the server records (``keep``: it stays known,
        queued); returns the servers it was on."""
        info = self._jobs[jid]
        servers = set()
        if info.home is not None:
            self._on.get(info.home, set()).discard(jid)
            servers.add(info.home)
        servers |= set(self._spread.pop(jid, {}))
        self._bound.pop(jid, None)
        self._plan.pop(jid, None)
        info.home, info.alone_since = None, None
        if not keep:
            del self._jobs[jid]
        return servers

    def _resubmit(self, jid: str, milli: int) -> None:
        """The job again, pending, with a share of ``milli`` per GPU (a
        packing changes what it asks of its GPU)."""
        job = replace(self._jobs[jid].base, gpu_milli=milli, current=None)
        self.session.finish(jid)
        self.session.submit(job)

    def _suspend(self, jid: str, sid: str, log: _Log) -> None:
        """Stop a running job; it holds nothing and waits on its server."""
        self.session.stop(jid, requeue=True)
        self._bound[jid] = sid
        self._jobs[jid].alone_since = None
        log.add("suspended", jid)
        self.counts["suspensions"] += 1

    # ------------------------------------------------------------- servers
    def _spread_on(self, sid: str) -> dict[str, int]:
        return {j: per[sid] for j, per in self._spread.items() if sid in per}

    def _cap(self, sid: str) -> int:
        """GPUs of a server that time-sliced jobs may use (spread jobs' aside)."""
        return self.cluster.server(sid).gpus - sum(self._spread_on(sid).values())

    def _free_gpus(self, sid: str) -> list[str]:
        """GPU ids of a server that no running job holds and no plan of the
        next round takes, ascending."""
        jobs = self.session.jobs
        held = {g for gpus in self._plan.values() for g in gpus}
        for jid in list(self._on.get(sid, ())) + list(self._spread_on(sid)):
            cur = jobs[jid].current
            if cur is not None:
                held.update(g.gpu for g in cur.gpus)
        if sid not in self.cluster.server_index:
            return []
        return [g for g in self.cluster.server(sid).gpu_ids() if g not in held]

    def _start_unit(self, u: Unit, gpus: list[str]) -> None:
        """Plan a suspended unit onto ``gpus`` (a packed unit: all on one)."""
        for m in u.jobs:
            self._plan[m] = tuple(gpus[:1]) if len(u.jobs) > 1 else tuple(gpus[:u.need])

    def _charge(self) -> None:
        """Every unit running at a slice boundary has had a slice: its
        virtual time advances by 1 / weight (a packed unit: its largest)."""
        jobs = self.session.jobs
        done: set[str] = set()
        for jid, info in self._jobs.items():
            if info.home is None or jid in done or jobs[jid].current is None:
                continue
            members = self._groups[info.group] if info.group else (jid,)
            done.update(members)
            if all(jobs[m].current is not None for m in members):
                w = max(self._jobs[m].base.weight for m in members) or 1e-9
                for m in members:
                    self._jobs[m].vt = info.vt + 1.0 / w

    # --------------------------------------------------------- time-slicing
    def _rotate(self, now: float, log: _Log) -> bool:
        """Weighted round-robin on every server with suspended units."""
        changed = False
        waiting = {self._jobs[j].home for j in self._bound}
        for sid in [s for s in self._on if s in waiting]:
            units = self.units(sid)
            chosen = slice_choice(units, self._cap(sid))
            ids = {u.jobs for u in chosen}
            for u in units:
                if u.running and u.jobs not in ids:
                    for m in u.jobs:
                        self._suspend(m, sid, log)
            free = self._free_gpus(sid)
            for u in chosen:
                if not u.running:
                    self._start_unit(u, free[:u.need])
                    free = free[u.need:]
            changed = True
        return changed

    def _fill(self, servers, log: _Log) -> None:
        """Free GPUs of ``servers`` to their suspended units, round-robin order."""
        for sid in servers:
            if sid not in self._on:
                continue
            free = self._free_gpus(sid)
            floor = None
            for u in sorted((u for u in self.units(sid) if not u.running), key=lambda x: x.key):
                if floor is not None and u.priority < floor:
                    break
                if u.need <= len(free):
                    self._start_unit(u, free[:u.need])
                    free = free[u.need:]
                elif floor is None:
                    floor = u.priority

    def _profile(self, now: float) -> None:
        for info in self._jobs.values():
            if not info.profiled and info.alone_since is not None \
                    and now - info.alone_since >= self.profile_s:
                info.profiled = True

    # --------------------------------------------------------------- packing
    def _judge(self, measured: Mapping[str, float], log: _Log) -> bool:
        """Keep a packing whose jobs' rates over their rates alone sum to
        more than 1 (time-slicing's total); undo the others."""
        changed = False
        jobs = self.session.jobs
        for gid in list(self._trials):
            members = self._groups.get(gid)
            if not members or not all(jobs[m].current is not None for m in members) \
                    or any(m not in measured for m in members):
                continue
            del self._trials[gid]
            if sum(float(measured[m]) for m in members) > 1.0:
                self.counts["packings_kept"] += 1
                continue
            self._failed.add(frozenset(members))
            log.add("undone", tuple(members))
            self.counts["packings_undone"] += 1
            self._split(gid, log, undo=True)
            changed = True
        return changed

    def _split(self, gid: str, log: _Log, undo: bool) -> None:
        """A packed group apart: each job back to its own share; the first
        keeps the GPU; with ``undo`` the others are suspended, else they
        take free GPUs of the server while there are some."""
        members = self._groups.pop(gid)
        self._trials.pop(gid, None)
        cur = self.session.jobs[members[0]].current
        sid = self._jobs[members[0]].home
        gpu = cur.gpus[0].gpu if cur is not None else None
        for m in members:
            self._jobs[m].group = None
            self._resubmit(m, self._jobs[m].base.gpu_milli)
        if not undo:
            log.add("unpacked", tuple(members))
            self.counts["unpacked"] += 1
        if gpu is None:
            self._bound.update((m, sid) for m in members)
            return
        self._plan[members[0]] = (gpu,)
        free = self._free_gpus(sid)
        for m in members[1:]:
            if not undo and free:
                self._plan[m] = (free.pop(0),)
            else:
                self._bound[m] = sid
                if undo:
                    log.add("suspended", m)
                    self.counts["suspensions"] += 1

    def _leave_group(self, jid: str, gid: str, log: _Log) -> set[str]:
        """A packed job departs: the rest of its group shares its GPU anew."""
        members = self._groups[gid]
        members.remove(jid)
        self._trials.pop(gid, None)
        cur = self.session.jobs[members[0]].current
        if len(members) == 1:
            self._groups.pop(gid)
            self._jobs[members[0]].group = None
        for m in members:
            share = self._jobs[m].base.gpu_milli if len(members) == 1 else MILLI // len(members)
            self._resubmit(m, share)
            if cur is not None:
                self._plan[m] = (cur.gpus[0].gpu,)
            else:
                self._bound[m] = self._jobs[m].home
        home = self._jobs[members[0]].home
        return {home} if home is not None else set()

    def _packable(self, jid: str) -> bool:
        info = self._jobs[jid]
        b = info.base
        return (info.group is None and info.profiled and info.util is not None and b.gpus == 1
                and info.size == 1 and b.gpu_milli == MILLI and b.gpu_mem is not None
                and not (b.min_gpus or b.max_gpus))

    def _targets(self, sid: str) -> list[tuple[str, list[str]]]:
        """GPUs of a server running a unit that may take one more job:
        ``(gpu, jobs on it)``."""
        out = []
        jobs = self.session.jobs
        for u in self.units(sid):
            if not u.running or len(u.jobs) >= self.pack_limit:
                continue
            info = self._jobs[u.jobs[0]]
            if (info.group and info.group in self._trials) or not all(
                    self._packable(m) or self._jobs[m].group for m in u.jobs):
                continue
            out.append((jobs[u.jobs[0]].current.gpus[0].gpu, list(u.jobs)))
        return out

    def _pack_or_split(self, now: float, log: _Log) -> bool:
        """Split packings where GPUs are free again; pack during overload."""
        over = set(self.over_subscribed())
        changed = False
        for gid, members in list(self._groups.items()):
            sid = self._jobs[members[0]].home
            if sid not in over and gid not in self._trials and self._free_gpus(sid):
                self._split(gid, log, undo=False)
                changed = True
        if not over:
            return changed
        used: set[str] = set()
        cands = sorted((j for j in self._bound if self._packable(j)),
                       key=lambda j: (self._jobs[j].util, self._jobs[j].seq))
        targets = {sid: self._targets(sid) for sid in over}
        for c in cands:
            sid = self._jobs[c].home
            best = None
            prio = self._jobs[c].base.priority
            for gpu, members in targets.get(sid, ()):
                if gpu in used or frozenset(members + [c]) in self._failed \
                        or any(self._jobs[m].base.priority != prio for m in members) \
                        or not self._memory_fits(gpu, members + [c]):
                    continue
                u = sum(self._jobs[m].util for m in members)
                if best is None or u < best[0]:
                    best = (u, gpu, members)
            if best is not None:
                used.add(best[1])
                self._pack(best[2], c, best[1], now, log)
                changed = True
        return changed

    def _memory_fits(self, gpu: str, members: list[str]) -> bool:
        server = self.cluster.server(server_of(gpu))
        cap = server_gpu_mem(server, self.gpu_mem_capacity)
        return sum(self._jobs[m].base.gpu_mem for m in members) <= cap

    def _pack(self, members: list[str], guest: str, gpu: str, now: float, log: _Log) -> None:
        """Run ``guest`` on ``gpu`` beside ``members``, in equal shares."""
        gid = self._jobs[members[0]].group
        if gid is None:
            self._gid += 1
            gid = f"pack{self._gid}"
        new = members + [guest]
        self._groups[gid] = new
        self._bound.pop(guest, None)
        vt = self._jobs[members[0]].vt
        for m in new:
            info = self._jobs[m]
            info.group, info.alone_since, info.vt = gid, None, vt
            self._resubmit(m, MILLI // len(new))
            self._plan[m] = (gpu,)
        self._trials[gid] = now
        log.add("packed", tuple(new))
        self.counts["packings"] += 1

    # ------------------------------------------------------------- migration
    def _rebalance(self, log: _Log, defrag: bool = False) -> bool:
        """Suspended jobs onto GPUs free elsewhere, spread jobs onto one
        server, then (``defrag``) lightly used servers emptied."""
        free = {s.id: self._free_gpus(s.id) for s in self.cluster.servers}
        planned = set(self._plan)
        changed = self._migrate_suspended(free, planned)
        ids = [s.id for s in self.cluster.servers]
        index = {s: i for i, s in enumerate(ids)}
        jobs = self.session.jobs
        spread = [(j, len(jobs[j].current.gpus), {index[s]: n for s, n in per.items()})
                  for j, per in self._spread.items() if j not in planned]
        counts = [len(free[s]) for s in ids]
        for j, t in locality_moves(counts, spread, self._allowed(ids)):
            changed |= self._plan_move(j, ids[t], free)
        if not defrag:
            return changed
        on: dict[int, list[tuple[str, int]]] = {}
        blocked = set()
        for sid in ids:
            for u in self.units(sid):
                if len(u.jobs) > 1 or not u.running or u.jobs[0] in self._plan:
                    blocked.add(index[sid])
                else:
                    on.setdefault(index[sid], []).append((u.jobs[0], u.need))
        counts = [len(free[s]) for s in ids]
        for j, s, t in defrag_moves(counts, on, threshold=self.defrag_threshold,
                                    blocked=frozenset(blocked), allowed=self._allowed(ids)):
            changed |= self._plan_move(j, ids[t], free)
        return changed

    def _allowed(self, ids: list[str]):
        cl = self.cluster

        def ok(jid: str, t: int) -> bool:
            return self._jobs[jid].base.allows(cl.server(ids[t]).gpu_type)
        return ok

    def _plan_move(self, jid: str, to: str, free: dict[str, list[str]]) -> bool:
        cur = self.session.jobs[jid].current
        mine = [g.gpu for g in cur.gpus if g.gpu.startswith(to + "/")]
        need = len(cur.gpus) - len(mine)
        if len(free[to]) < need:
            return False
        gpus = mine + free[to][:need]
        free[to] = free[to][need:]
        for g in cur.gpus:
            s = server_of(g.gpu)
            if s != to:
                free[s].append(g.gpu)
        self._plan[jid] = tuple(gpus)
        self._intent[jid] = "migrate"
        return True

    def _migrate_suspended(self, free: dict[str, list[str]], planned: set) -> bool:
        """Suspended units of over-subscribed servers onto free GPUs of other
        servers (best fit), highest servers first."""
        changed = False
        for sid in sorted(self.over_subscribed(), key=lambda s: -self.height(s)):
            for u in sorted((u for u in self.units(sid) if not u.running), key=lambda x: x.key):
                if any(m in planned for m in u.jobs):
                    continue
                job = self._jobs[u.jobs[0]].base
                room = [t for t, f in free.items() if t != sid and len(f) >= u.need
                        and job.allows(self.cluster.server(t).gpu_type)]
                if not room:
                    continue
                t = min(room, key=lambda x: (len(free[x]), x))
                self._start_unit(u, free[t][:u.need])
                free[t] = free[t][u.need:]
                for m in u.jobs:
                    self._intent[m] = "migrate"
                planned.update(u.jobs)
                changed = True
        return changed

    # ----------------------------------------------------------- grow-shrink
    def _grow(self, now: float, log: _Log) -> bool:
        """Elastic jobs grow into GPUs idle for ``grow_idle_s`` (nothing
        queued or suspended), within their server, to a power of two."""
        if self._bound or self.queued:
            self._free_since.clear()
            return False
        changed = False
        for s in self.cluster.servers:
            free = self._free_gpus(s.id)
            if not free:
                self._free_since.pop(s.id, None)
                continue
            since = self._free_since.setdefault(s.id, now)
            if now - since < self.grow_idle_s:
                continue
            for u in sorted(self.units(s.id), key=lambda x: x.need):
                b = self._jobs[u.jobs[0]].base
                if len(u.jobs) > 1 or not u.running or not b.max_gpus or not free:
                    continue
                n = 1 << int(math.log2(min(b.max_gpus, u.need + len(free))))
                if n <= u.need:
                    continue
                cur = [g.gpu for g in self.session.jobs[u.jobs[0]].current.gpus]
                self._plan[u.jobs[0]] = tuple(cur + free[:n - u.need])
                self._intent[u.jobs[0]] = "resize"
                free = free[n - u.need:]
                changed = True
        return changed

    def _shrink_for(self, job: Job, log: _Log) -> None:
        """Grown jobs back to their request when ``job`` finds no free GPUs."""
        grown = [j for j, i in self._jobs.items() if i.size > i.base.gpus
                 and self.session.jobs[j].current is not None]
        if not grown:
            return
        free = {s.id: len(self._free_gpus(s.id)) for s in self.cluster.servers}
        for jid in sorted(grown, key=lambda j: self._jobs[j].base.gpus - self._jobs[j].size):
            if any(n >= job.gpus for n in free.values()):
                return
            info = self._jobs[jid]
            cur = [g.gpu for g in self.session.jobs[jid].current.gpus]
            self._plan[jid] = tuple(cur[:info.base.gpus])
            self._intent[jid] = "resize"
            free[info.home] = free.get(info.home, 0) + info.size - info.base.gpus


def _servers(p) -> set[str]:
    """The servers a placement uses."""
    return {server_of(g.gpu) for g in p.gpus} or set(p.cpu)


__all__ = ["Decision", "GandivaScheduler", "SLICE_S"]

"""The [`Session`][alloc.session.Session]: a scheduler loop's cluster and jobs across rounds."""
from __future__ import annotations

import time
from dataclasses import replace
from itertools import repeat
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence, cast

from ..gpukey import server_of
from ..deadline import Deadline, check_time_limit
from ..errors import InputError
from ..model import Allocation, Cluster, GpuShare, Job, Placement, Profile, Server, Status
from ..validate import PRIORITY_RANGE, even_normalised, short_repr
from .checks import (check_current, check_job, check_server, placement_servers,
                     resolve_profile)
from ..carry import Carry
from ..collector import paused
from ..memo import drop_all
from .ids import ID_PREFIX, GpuKeys, JobIds
from .journal import Journal
from ..reductions import ClosedServers
from .result import Reconciled, RoundResult
from .room import Room, admission_held_out, shape_key
from .fast import Mark, mark, one_job_round

#: Why a job the scheduler preempted waits this round.
HELD_REASON = "preempted by the scheduler; not placed again in the round that follows"


class Session:
    r"""A scheduler loop's state: the cluster and its jobs across rounds.

    Events change the state between rounds (each one, or each batch given to
    [`apply`][alloc.session.Session.apply], atomically: a bad event raises a one-line
    [`InputError`][alloc.errors.InputError] and changes nothing);
    [`step`][alloc.session.Session.step] runs
    one round through the core ([`alloc.problem.compile_problem`][alloc.problem.compile_problem],
    then
    [`alloc.solve.run_solver`][alloc.solve.run_solver], whose answer is checked by
    [`alloc.violations`][alloc.check.violations]) and makes the placed jobs running.

    Parameters
    ----------
    cluster : Cluster
        Servers (CPU in milli-cores, memory in MiB, GPUs), levels, tenants.
    jobs : sequence of Job, optional
        Jobs to start with (running ones have ``current``); validated once.
    solver, objective : str
        As for [`alloc.allocate`][alloc.solve.allocate] (objective None: the
        default, ``"throughput"``).  A solver that does not honour the
        objective asked for warns once, here (`InputWarning`).
    time_limit : float, optional
        Seconds per round (default `alloc.deadline.DEFAULT_TIME_LIMIT`).
    options : mapping, optional
        The solver's declared options.
    max_moves : int or None
        Running jobs one round may move (default 0: placements are stable;
        None: any number, with ``move_cost``).
    move_cost : float, optional
        Objective units per move.
    order : sequence, optional
        Ranked job ids, highest first (see `set_order`).
    preempt : {None, "order"}
        Who may stop a running job in a round, as for [allocate][alloc.solve.allocate]:
        the tenancy rules (None), or the order (a running job ranked below a
        waiting job that cannot otherwise be placed is stopped for it).
    preempt_packed : bool
        Under preemption by order, a gang that needs victims goes on one
        server whenever stopping jobs ranked below it can make room there,
        before it is spread over its victims' servers (as for
        [allocate][alloc.solve.allocate]; default False).
    gpu_keys : mapping or callable, optional
        The caller's key of each GPU (a mapping from the core's names
        ``"<server>/gpu<k>"``, or a function of the name): rounds report
        GPUs by these keys (`RoundResult.gpus`), and `placement` and
        `reconcile` take them.
    seed : int
        Seed of every round.
    name : str
        Recorded in each round's allocation.
    models : mapping of str to Profile, optional
        Inline models that jobs may name (before the ``models/`` directory).

    Notes
    -----
    Per round, the session hands the core the jobs it holds (running jobs
    with ``current``, pending ones without) and the cluster object it keeps
    (so the cluster's compiled arrays are reused); jobs are validated when
    they are submitted, never again.  What the compile step, the final check
    and the solver derived last round is carried to the next
    (`alloc.carry`), so a round's work follows what changed; its answer is
    the one a fresh call on the same input gives.  After the round
    ``current(j) = placement(j)`` for every placed job and
    ``current(j) = None`` for every preempted one.

    Job ids may be any hashable value (an integer, a tuple); what the session
    returns uses them (`RoundResult` `start`, `stop`, `unplaced`, ...),
    while `Job.id` inside the session and the round's `allocation` use
    the core's string names (the same when the ids are strings).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Session
    >>> s = Session(Cluster((Server("s0", cpu=24000, mem=512000, gpus=8),)), solver="best-fit")
    >>> s.submit(Job("a", 4, cpu=4000, mem=4000))
    >>> s.submit(Job("b", 8, cpu=4000, mem=4000))
    >>> r = s.step()
    >>> [p.job for p in r.start], r.unplaced
    (['b'], ('a',))
    >>> s.finish("b")
    >>> [p.job for p in s.step().start]
    ['a']
    """

    def __init__(self, cluster: Cluster, *, jobs: Sequence[Job] = (), solver: str = "best-fit",
                 objective: str | None = None, time_limit: float | None = None,
                 options: Mapping[str, Any] | None = None, max_moves: int | None = 0,
                 move_cost: float | None = None, order: Sequence[Any] | None = None,
                 preempt: str | None = None, gpu_keys: Any = None, seed: int = 0,
                 name: str = "session", models: Mapping[str, Profile] | None = None,
                 preempt_packed: bool = False) -> None:
        from ..call import call_input, call_settings
        # the one call path of `allocate()` (`alloc.call`): the same errors;
        # the session's own (its name, its job-id mapping and models) between
        # the settings and the input
        settings = call_settings(solver=solver, objective=objective, time_limit=time_limit,
                                 seed=seed, max_moves=max_moves, move_cost=move_cost,
                                 preempt=preempt, preempt_packed=preempt_packed,
                                 options=options)
        if not isinstance(name, str):
            raise InputError(f"name: expected a string, got {short_repr(name)}")
        self._models = dict(models or {})
        self._ids, self._gpus = JobIds(), GpuKeys(gpu_keys)
        self._journal = Journal()
        jobs = [self._core_job(resolve_profile(j, self._models, f"jobs[{i}]"), f"jobs[{i}]")
                if isinstance(j, Job) else j for i, j in enumerate(jobs)]
        call = call_input(settings, cluster, jobs)
        self._info, self._options, self._objective = call.info, call.options, call.objective
        cluster, jobs = call.cluster, list(call.jobs)
        preempt = call.preempt
        self.preempt_rule = preempt
        #: under preemption by order, a gang that needs victims on one server first
        self.preempt_packed = preempt_packed
        self.time_limit, self.max_moves, self.move_cost = time_limit, max_moves, move_cost
        self.seed, self.name = seed, name
        self._cluster = cluster
        self._jobs: dict[str, Job] = {}
        self._arrival: dict[str, int] = {}
        self._on_server: dict[str, set[str]] = {}
        self._drained: dict[str, None] = {}
        self._failed: dict[str, None] = {}
        self._order: dict[Any, int] | None = None
        self._held: dict[str, None] = {}
        #: drained and failed servers reduced out of each round's call
        self._closed = ClosedServers()
        self._counts = {"events": 0, "finished": 0, "failed": 0, "stopped": 0,
                        "preempted": 0}
        self._next_seq = 0
        self._round = 0
        self._last: RoundResult | None = None
        #: what the core and the solver derived last round (`alloc.carry`)
        self._carry = Carry()
        #: the waiting jobs by shape (None: those without one), and what the
        #: running jobs hold (`alloc.session.room`)
        self._waiting: dict[Any, dict[str, None]] = {}
        self._room: Room | None = None
        #: changes to the running jobs' placements, and the last round's mark
        #: (`alloc.session.fast`: a round with one new job and nothing else)
        self._rev = 0
        self._fast_mark: Mark | None = None
        for j in jobs:
            self._put(j if j.current is None or j.current.job == j.id
                      else replace(j, current=replace(j.current, job=j.id)))
        if order is not None:
            self._order = _ranks(order, "order")

    # ---------------------------------------------------------------- views
    @property
    def cluster(self) -> Cluster:
        """The cluster now (failed servers removed, added ones appended)."""
        return self._cluster

    @property
    def jobs(self) -> Mapping[Any, Any]:
        """Every job by the caller's id, in submission order (read-only view)."""
        if not self._ids.mapped:
            return MappingProxyType(self._jobs)
        return MappingProxyType({self._ids.caller(j): job for j, job in self._jobs.items()})

    @property
    def running(self) -> tuple[Any, ...]:
        """Ids of the running jobs (``current`` set)."""
        return tuple(self._ids.caller(j) for j, job in self._jobs.items()
                     if job.current is not None)

    @property
    def pending(self) -> tuple[Any, ...]:
        """Ids of the waiting jobs."""
        return tuple(self._ids.caller(j) for j, job in self._jobs.items() if job.current is None)

    @property
    def drained(self) -> tuple[str, ...]:
        """Servers that take no new placements."""
        return tuple(self._drained)

    @property
    def failed(self) -> tuple[str, ...]:
        """Failed servers kept in the cluster (closed) because the tenants'
        cells would not fit without them."""
        return tuple(self._failed)

    @property
    def closed(self) -> frozenset[str]:
        """Servers that take no new placements: the drained ones and the
        failed ones kept in the cluster."""
        return frozenset(self._drained) | frozenset(self._failed)

    @property
    def counts(self) -> Mapping[str, int]:
        """Events so far by kind: ``finished``, ``failed``, ``stopped``,
        ``preempted`` (by the scheduler's events and by rounds)."""
        return MappingProxyType({k: v for k, v in self._counts.items() if k != "events"})

    @property
    def order(self) -> tuple[Any, ...] | None:
        """The explicit job order, highest rank first (None: by priority)."""
        if self._order is None:
            return None
        return tuple(self._order)

    @property
    def round(self) -> int:
        """Rounds run so far."""
        return self._round

    @property
    def events(self) -> int:
        """Events applied so far."""
        return self._counts["events"]

    @property
    def last(self) -> RoundResult | None:
        """The last round's result."""
        return self._last

    @property
    def solver(self) -> str:
        """The solver of every round."""
        return self._info.name

    @property
    def objective(self) -> str:
        """The objective of every round."""
        return self._objective.name

    @property
    def options(self) -> Mapping[str, Any]:
        """The solver's options (declared defaults filled in)."""
        return MappingProxyType(self._options)

    # --------------------------------------------------------------- events
    def submit(self, job: Job, *, where: str | None = None) -> None:
        """Add a job (pending, or running when ``current`` is set: the
        placement must fit what the running jobs leave).

        Raises
        ------
        InputError
            A duplicate id, an invalid job, a capability the solver lacks.
        """
        where = where or "submit"
        if not isinstance(job, Job):
            raise InputError(f"{where}: expected a Job, got {short_repr(job)}")
        with self._journal.transaction(self._reorder):
            if self._ids.core(job.id) in self._jobs:
                raise InputError(f"{where}: job {short_repr(job.id)} already exists")
            job = self._core_job(resolve_profile(job, self._models, f"{where}.job"),
                                 f"{where}.job")
            check_job(job, self._cluster, self._info, f"{where}.job")
            job = even_normalised(job)
            if self.preempt_rule == "order" and (job.guaranteed or job.tenant is not None):
                raise InputError(f"{where}.job: a tenant's job in a session that preempts by "
                                 f"order (preemption by order is for clusters without "
                                 f"tenants' guarantees)")
            if job.current is not None:
                job = check_current(job, self._cluster, self._on_server, self._jobs,
                                    f"{where}.job")
                self._check_tenancy(job, where)
            self._put(job)
            self._bump("events")

    def finish(self, job_id: Any, *, where: str | None = None) -> None:
        """Remove a job that completed (its resources are free at once)."""
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where or "finish")
            self._drop(job.id)
            self._bump("finished")
            self._bump("events")

    def fail_job(self, job_id: Any, *, requeue: bool = False, where: str | None = None) -> None:
        """A job stopped abnormally (it crashed): it leaves the session
        (counted as failed), or with ``requeue=True`` waits again for a
        placement.  A job stopped on purpose is `stop` or `preempt`."""
        self._leave(job_id, requeue, "failed", where or "fail_job")

    def stop(self, job_id: Any, *, requeue: bool = False, hold: bool = False,
             where: str | None = None) -> None:
        """A job stopped on purpose, not a failure (cancelled, or suspended by
        the scheduler): it leaves the session (counted as stopped), or with
        ``requeue=True`` waits again for a placement (``hold=True``: not in
        the next round).  A waiting job may be stopped (cancelled) too."""
        where = where or "stop"
        with self._journal.transaction(self._reorder):
            if not isinstance(hold, bool) or (hold and requeue is not True):
                raise InputError(f"{where}.hold: expected true (with requeue) or false, "
                                 f"got {short_repr(hold)}")
            self._leave(job_id, requeue, "stopped", where)
            if hold:
                self._flag(self._held, self._known(job_id, where).id, True)

    def preempt(self, job_id: Any, *, where: str | None = None) -> None:
        """The scheduler preempted a running job by its own policy: it waits
        again (counted as preempted) and the next round does not place it
        (a job stopped to make room does not start again in the same step)."""
        where = where or "preempt"
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where)
            if job.current is None:
                raise InputError(f"{where}: job {short_repr(job_id)} is not running")
            self._put(replace(job, current=None))
            self._flag(self._held, job.id, True)
            self._bump("preempted")
            self._bump("events")

    def _leave(self, job_id: Any, requeue: Any, count: str, where: str) -> None:
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where)
            if not isinstance(requeue, bool):
                raise InputError(f"{where}.requeue: expected true or false, "
                                 f"got {short_repr(requeue)}")
            if requeue:
                if job.current is None:
                    raise InputError(f"{where}: job {short_repr(job_id)} is not running")
                self._put(replace(job, current=None))
            else:
                self._drop(job.id)
                self._bump(count)
            self._bump("events")

    def fail_server(self, server_id: str, *, where: str | None = None) -> tuple[str, ...]:
        """A server is gone: the jobs running on it are pending again (a job
        spread over it loses all its GPUs), and the server leaves the
        cluster -- unless the tenants' cells no longer fit without it, in
        which case it stays in the cluster, closed ([`failed`][alloc.session.Session.failed]).

        Returns
        -------
        tuple of str
            The jobs that lost their placement, in submission order.
        """
        where = where or "fail_server"
        with self._journal.transaction(self._reorder):
            self._server(server_id, where, open_only=True)
            lost: list[Any] = sorted(self._on_server.get(server_id, ()),
                                     key=self._arrival.__getitem__)
            for jid in lost:
                self._put(replace(self._jobs[jid], current=None))
            lost = [self._ids.caller(j) for j in lost]
            if server_id in self._drained:
                self._flag(self._drained, server_id, False)
            from ..tenancy import tenant_problems
            servers = tuple(s for s in self._cluster.servers if s.id != server_id)
            smaller = Cluster(servers, self._cluster.levels, self._cluster.tenants) \
                if servers else None
            if smaller is not None and not tenant_problems(smaller):
                self._set_cluster(smaller)
            else:
                self._flag(self._failed, server_id, True)
            self._bump("events")
        return tuple(lost)

    def drain_server(self, server_id: str, *, where: str | None = None) -> None:
        """No new placements on the server; its running jobs stay where they
        run until they finish, fail or are stopped (no solver sees the
        server: [`alloc.reductions.ClosedServers`][alloc.reductions.ClosedServers]).
        A job with a part on an open server is pinned there."""
        where = where or "drain_server"
        with self._journal.transaction(self._reorder):
            self._server(server_id, where, open_only=True)
            if server_id in self._drained:
                raise InputError(f"{where}: server {server_id!r} is already drained")
            self._flag(self._drained, server_id, True)
            self._bump("events")

    def undrain_server(self, server_id: str, *, where: str | None = None) -> None:
        """Open a drained server to new placements again."""
        where = where or "undrain_server"
        with self._journal.transaction(self._reorder):
            if server_id not in self._drained:
                raise InputError(f"{where}: server {short_repr(server_id)} is not drained")
            self._flag(self._drained, server_id, False)
            self._bump("events")

    def add_server(self, server: Server, *, where: str | None = None) -> None:
        """Add a server (or bring back a failed one kept in the cluster)."""
        where = where or "add_server"
        with self._journal.transaction(self._reorder):
            c = self._cluster
            if isinstance(server, Server) and server.id in self._failed:
                rest = Cluster(tuple(s for s in c.servers if s.id != server.id), c.levels,
                               c.tenants)
                server = check_server(server, rest, f"{where}.server")
                servers = tuple(server if s.id == server.id else s for s in c.servers)
                self._flag(self._failed, server.id, False)
            else:
                server = check_server(server, c, f"{where}.server")
                servers = c.servers + (server,)
            new = Cluster(servers, c.levels, c.tenants)
            from ..tenancy import tenant_problems
            bad = tenant_problems(new)
            if bad:
                raise InputError(f"{where}.server: {bad[0]}")
            self._set_cluster(new)
            self._bump("events")

    def set_priority(self, job_id: Any, priority: int, *, where: str | None = None) -> None:
        """Change a job's priority (-1000..1000; see [`set_order`][alloc.session.Session.set_order]
for ranks)."""
        where = where or "set_priority"
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where)
            lo, hi = PRIORITY_RANGE
            if isinstance(priority, bool) or not isinstance(priority, int) \
                    or not lo <= priority <= hi:
                raise InputError(f"{where}.priority: expected an integer in {lo}..{hi}, "
                                 f"got {short_repr(priority)}")
            self._put(replace(job, priority=priority))
            self._bump("events")

    def set_order(self, ranked: Sequence[Any] | None, *, where: str | None = None) -> None:
        """Rank jobs explicitly, highest first (as LAS, FIFO or Tiresias
        produce; any length, no cap).  Unlisted jobs come after, by priority;
        None goes back to priority order.

        The order may name jobs not submitted yet: each takes its place when
        it is submitted (a scheduler may rank its whole queue before handing
        the jobs over).  Finished jobs leave the order.  An id listed twice,
        or one that is not hashable, is an error."""
        where = where or "set_order"
        with self._journal.transaction(self._reorder):
            self._set_order(None if ranked is None else _ranks(ranked, f"{where}.order"))
            self._bump("events")

    def placement(self, job_id: Any, gpus: Any, *, where: str | None = None) -> Placement:
        """A placement of the job on ``gpus`` (the caller's GPU keys, or the
        core's GPU names; a CPU-only job: one server id), with its requested
        CPU and memory split over the servers in proportion to their GPUs --
        for `submit` with ``current`` and for `reconcile`."""
        where = where or "placement"
        job = self._known(job_id, where)
        return self._placement_of(job, gpus, where)

    def reconcile(self, running: Any, *, stopped: Any = None,
                  where: str | None = None) -> Reconciled:
        """State what runs, as the scheduler sees it; the session reports and
        fixes the difference (atomically).

        Parameters
        ----------
        running : mapping or iterable
            Every job the scheduler believes is running: a mapping from job
            id to where it runs (a `Placement`, a list of GPU keys, or None
            for "where the session has it"), or a list of job ids.  A
            `Placement` on the GPUs a job holds with other GPU memory or
            compute caps (an opportunistic job's, AntMan) changes them.  With
            ``stopped``: only the jobs that started or moved.
        stopped : iterable, optional
            A partial statement: the jobs that stopped since the scheduler's
            last one (each waits again; one the session has waiting already
            is left as it is).  Every job in neither ``running`` nor
            ``stopped`` keeps the session's state, so the call costs what
            changed, not what runs.  None (the default): ``running`` lists
            every running job and the session stops the others.

        Returns
        -------
        Reconciled
            ``started``: jobs the session had waiting, now running where the
            scheduler says; ``moved``: running jobs whose placement differed,
            now the scheduler's; ``stopped``: jobs the session had running
            that the scheduler does not list, now waiting.

        Raises
        ------
        InputError
            An unknown job, a waiting job given without its placement, a
            placement that does not fit what the other running jobs hold.
        """
        where = where or "reconcile"
        if isinstance(running, Mapping):
            items = list(running.items())
        elif isinstance(running, (str, bytes)) or not isinstance(running, Iterable):
            raise InputError(f"{where}: expected a mapping of job ids to placements or a "
                             f"list of job ids, got {short_repr(running)}")
        else:
            items = [(j, None) for j in running]
        if stopped is not None and (isinstance(stopped, (str, bytes, Mapping))
                                    or not isinstance(stopped, Iterable)):
            raise InputError(f"{where}.stopped: expected a list of job ids, got "
                             f"{short_repr(stopped)}")
        with self._journal.transaction(self._reorder):
            out = self._reconcile(items, where, None if stopped is None else list(stopped))
            self._bump("events")
        return out

    def apply(self, events: Iterable[Any]) -> list[Any]:
        """Apply a batch of events atomically: all of them or (on the first
        bad one, an [`InputError`][alloc.errors.InputError] naming it) none.

        Each event is a mapping ``{"type": NAME, ...}`` in the JSON form of
        `alloc.session.events` (``submit`` takes a [`Job`][alloc.model.Job] or a job
        object of the instance format).  Returns each event's result (the
        jobs ``fail_server`` requeued, else None)."""
        from .events import apply_event
        if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Iterable):
            raise InputError(f"events: expected a list of events, got {short_repr(events)}")
        out = []
        with self._journal.transaction(self._reorder):
            for k, ev in enumerate(events):
                out.append(apply_event(self, ev, f"events[{k}]"))
        return out

    # ---------------------------------------------------------------- round
    def step(self, *, time_limit: float | None = None) -> RoundResult:
        """Run one round: place pending jobs around the running ones.

        Parameters
        ----------
        time_limit : float, optional
            Seconds for this round (default: the session's).

        Returns
        -------
        RoundResult
            Jobs to start, move and preempt, the waiting ones with reasons,
            the checked allocation and the round's latency.

        Raises
        ------
        SolverError
            The solver broke a hard constraint (the state is unchanged).
        """
        t0 = time.perf_counter()
        limit = self.time_limit if time_limit is None else time_limit
        try:
            deadline = Deadline.after(check_time_limit(limit))
        except ValueError as exc:
            raise InputError(str(exc)) from None
        with paused(not self._info.exact):   # the collector's passes find nothing here
            fast = one_job_round(self, deadline)     # one new job, nothing else changed
            if fast is not None:
                res = self._commit(fast[0], fast[1], t0, start=[fast[2]] if fast[2] else [])
            else:
                alloc, timings, held = self._solve(deadline)
                res = self._commit(alloc, timings, t0, held)
            self._fast_mark = mark(self, res.allocation)
            return res

    def _solve(self, deadline: Deadline) -> tuple[Allocation, dict[str, Any], Any]:
        """One solve of the round's call: closed servers reduced out of it
        ([`ClosedServers`][alloc.reductions.ClosedServers]), the jobs the
        scheduler held back left out with their reason, and the waiting jobs
        that cannot fit held out (`alloc.session.room`; returned for the
        commit, which gives their reasons)."""
        from ..problem import compile_problem
        from ..solve import run_solver
        closed = self.closed
        t0 = time.perf_counter()
        parked = self._unfit(self._held) if not closed else {}
        out: Any = self._held
        if parked:
            out = set(self._held).union(*parked.values())
        self._carry.held_out = tuple((self._jobs[k], len(ids)) for k, ids in parked.items())
        waiting: list[str] = []            # the held-out jobs, in submission order
        if not parked:
            jobs = list(self._jobs.values()) if not out else \
                [j for k, j in self._jobs.items() if k not in out]
        else:
            jobs = []
            keep, wait, back = jobs.append, waiting.append, self._held
            for k, j in self._jobs.items():
                if k not in out:
                    keep(j)
                elif k not in back:
                    wait(k)
        held_s = time.perf_counter() - t0
        order = self._round_order()
        cluster: Cluster = self._cluster
        inverse = None
        if closed:
            on = self._on_server
            (cluster, kept, kept_order), inverse = self._closed.apply(
                (cluster, jobs, order), closed, {j for sid in closed for j in on.get(sid, ())})
            jobs = list(kept)
            order = None if kept_order is None else list(kept_order)
            if inverse.trimmed and self.preempt_rule == "order":
                # nobody outranks a job pinned on its open part
                order = list(dict.fromkeys([*inverse.trimmed, *(order or ())]))
        timings = {"compile_s": 0.0, "solve_s": 0.0, "attempts": 1,
                   "held_out": sum(len(ids) for ids in parked.values()), "held_out_s": held_s}
        t1 = time.perf_counter()
        problem = compile_problem(
            cluster, jobs, self._objective, self.name, order=order, max_moves=self.max_moves,
            move_cost=self.move_cost, preempt=self.preempt_rule, carry=self._carry,
            preempt_packed=self.preempt_packed,
            pinned=tuple(inverse.trimmed) if inverse is not None else ())
        t2 = time.perf_counter()
        if cluster.servers:
            alloc = run_solver(problem, self._info, deadline, seed=self.seed,
                               options=self._options, timings=timings)
        else:                     # every server closed: nothing can start, nothing moves
            alloc = _nothing(problem, self._info.name)
        timings["compile_s"] += t2 - t1
        timings["solve_s"] += time.perf_counter() - t2
        if inverse is not None:
            alloc = self._closed.invert(alloc, inverse)
        if self._held:
            held = dict.fromkeys(self._held, HELD_REASON)
            alloc = replace(alloc, unplaced=alloc.unplaced + tuple(held),
                            reasons={**alloc.reasons, **held})
        later = (problem, parked, waiting, tuple(self._held)) if parked else None
        return alloc, timings, later

    def _live_room(self) -> Room:
        """The room the running jobs leave (`alloc.session.room.Room`), built
        on the session's cluster when it has none or the cluster changed, then
        kept up to date as jobs start and stop."""
        room = self._room
        if room is None or room.cluster is not self._cluster:
            room = self._room = Room(self._cluster, (j.current for j in self._jobs.values()
                                                     if j.current is not None))
        return room

    def _unfit(self, excluded: Mapping[str, Any]) -> dict[str, list[str]]:
        """The waiting jobs this round holds out, by shape: those that cannot
        fit the room the running jobs leave, when the solver ignores them, or
        all but the admitted ones that may fit, when it admits by GPUs; and
        the round neither moves nor stops a running job (`alloc.session.room`).
        Each shape's first job names it."""
        info = self._info
        if not (self._waiting and (info.ignores_unfit or info.admission)
                and self.preempt_rule is None
                and self.max_moves == 0 and not self._cluster.tenants
                and not ("preemption" in info.capabilities and self._may_stop())):
            return {}
        from ..problem import pareto_options
        room = self._live_room()
        free = room.free()
        jobs = self._jobs
        resizes = "grid" in info.capabilities
        if info.admission:
            return admission_held_out(jobs, self._waiting, excluded, self._round_order(), free,
                                      resizes, room.reason, self._arrival)
        out: dict[str, list[str]] = {}
        for key, ids in self._waiting.items():
            if key is None:
                continue
            ids_out = [j for j in ids if j not in excluded] if excluded else list(ids)
            if not ids_out:
                continue
            job = jobs[ids_out[0]]
            opts = pareto_options(job)
            if free.cannot_fit(job, opts if resizes else opts[:1]) and room.reason(job) is None:
                out[ids_out[0]] = ids_out
        return out

    def _may_stop(self) -> bool:
        """Some waiting job outranks a running one (`alloc.tenancy.outranks`;
        without tenants: it has the higher priority), so that a solver with
        ``preemption`` may stop it."""
        prio = {(j.current is None, j.priority) for j in self._jobs.values()}
        waiting = [p for w, p in prio if w]
        running = [p for w, p in prio if not w]
        return bool(waiting and running) and max(waiting) > min(running)

    def _held_out(self, alloc: Allocation, problem: Any, parked: dict[str, list[str]],
                  waiting: list[str], tail: tuple[str, ...]) -> Allocation:
        """``alloc`` with the jobs held out of the round waiting, in submission
        order among the others (``waiting``: their ids in that order; the jobs
        held back by the scheduler, ``tail``, stay last), each with the line
        `alloc.waiting` gives its shape on the room the round's answer leaves
        (the session's room once the round's jobs started: the answer moved
        and stopped none)."""
        from ..waiting import outside_reasons
        room, jobs = self._room, self._jobs
        assert room is not None, "the room of the round's held-out jobs"
        free = room.free()
        lines = outside_reasons(problem, (free.gpu, free.C, free.M), [jobs[k] for k in parked],
                                self._info.capabilities, self._info.name)
        reasons = dict(alloc.reasons)
        for line, ids in zip(lines, parked.values()):
            reasons.update(zip(ids, repeat(line)))
        cut = set(tail)
        rest = [j for j in alloc.unplaced if j not in cut]
        if rest:                          # both in submission order: merged
            waiting = sorted(waiting + rest, key=self._arrival.__getitem__)
        return replace(alloc, unplaced=tuple(waiting) + tail, reasons=reasons)

    def _round_order(self) -> list[str] | None:
        """The core's job order: the caller's, its ids the core's (jobs not
        submitted yet left out)."""
        if self._order is None:
            return None
        core, jobs = self._ids.core, self._jobs
        if not self._ids.mapped:          # string ids: the core's own (in C)
            return list(filter(jobs.__contains__, self._order))
        return [c for c in map(core, self._order) if c in jobs]

    def _commit(self, alloc: Allocation, timings: dict[str, Any], t0: float,
                held: Any = None, start: list[Placement] | None = None) -> RoundResult:
        t1 = time.perf_counter()
        jobs = self._jobs
        if start is None:
            start = [p for p in alloc.placements if jobs[p.job].current is None]
        move = [_some(alloc.placement(j)) for j in alloc.moved]
        moved_from = {j: _some(self._jobs[j].current) for j in alloc.moved}
        preempt = [_some(self._jobs[j].current) for j in alloc.preempted]
        for p in start + move:
            self._put(_placed_at(self._jobs[p.job], p))
        for j in alloc.preempted:
            self._put(_placed_at(self._jobs[j], None))
        for j in cast(Sequence[str], alloc.stats.get("resized") or ()):
            self._recap(j, alloc.placement(j))
        self._counts["preempted"] += len(alloc.preempted)
        self._held.clear()
        self._round += 1
        timings["commit_s"] = time.perf_counter() - t1
        if held is not None:           # the jobs held out: reasons on the room left now
            t2 = time.perf_counter()
            alloc = self._held_out(alloc, *held)
            timings["held_out_s"] += time.perf_counter() - t2
        ext: Any = self._ids.caller
        gpus = {ext(p.job): tuple(self._gpus.caller(g.gpu) for g in p.gpus)
                for p in start + move}
        why = cast(Mapping[str, str], alloc.stats.get("preempted_for") or {})
        if self._ids.mapped:
            start, move, preempt = ([replace(p, job=ext(p.job)) for p in ps]
                                    for ps in (start, move, preempt))
            moved_from = {ext(j): replace(p, job=ext(j)) for j, p in moved_from.items()}
        mapped = self._ids.mapped        # else the caller's ids are the core's
        res = RoundResult(self._round, tuple(start), tuple(move), tuple(preempt), moved_from,
                          tuple(map(ext, alloc.unplaced)) if mapped else tuple(alloc.unplaced),
                          {ext(j): r for j, r in alloc.reasons.items()} if mapped
                          else dict(alloc.reasons), alloc,
                          time.perf_counter() - t0, timings, gpus,
                          {ext(v): ext(b) for v, b in why.items()})
        self._last = res
        return res

    # ---------------------------------------------------------------- state
    def to_dict(self, jobs: bool = True) -> dict[str, Any]:
        """The state as JSON-ready data (servers, closed servers, jobs with
        their ``current`` placements, order, settings, counts)."""
        from ..io import job_to_dict, server_to_dict
        out = {
            "name": self.name, "round": self._round, "events": self._counts["events"],
            "solver": self.solver, "objective": self.objective, "time_limit": self.time_limit,
            "options": {k: v for k, v in self._options.items()},
            "max_moves": self.max_moves, "move_cost": self.move_cost, "seed": self.seed,
            "levels": list(self._cluster.levels),
            "servers": [server_to_dict(s) for s in self._cluster.servers],
            "drained": list(self._drained), "failed": list(self._failed),
            "order": None if self._order is None else list(self._order),
            "preempt": self.preempt_rule,
            "counts": {"jobs": len(self._jobs), "running": len(self.running),
                       "pending": len(self._jobs) - len(self.running),
                       **{k: v for k, v in self._counts.items() if k != "events"}},
        }
        if jobs:
            out["jobs"] = [job_to_dict(j) for j in self._jobs.values()]
        return out

    # -------------------------------------------------------------- helpers
    def _known(self, job_id: Any, where: str) -> Job:
        cid = self._ids.core(job_id)
        job = self._jobs.get(cid) if cid is not None else None
        if job is None:
            raise InputError(f"{where}: unknown job {short_repr(job_id)} (never submitted, or "
                             f"already finished)")
        return job

    def _core_job(self, job: Job, where: str) -> Job:
        """``job`` named by its core id (a new internal name for an id that is
        not a string; its ``current`` renamed with it)."""
        if isinstance(job.id, str):
            if job.id.startswith(ID_PREFIX):
                raise InputError(f"{where}.id: ids starting with {ID_PREFIX!r} are reserved")
            return job
        cid = self._ids.add(job.id, where, self._journal.record)
        cur = job.current
        if cur is not None and cur.job in ("", job.id):
            cur = replace(cur, job=cid)
        return replace(job, id=cid, current=cur)

    def _placement_of(self, job: Job, gpus: Any, where: str) -> Placement:
        if isinstance(gpus, Placement):
            return replace(gpus, job=job.id)
        c = self._cluster
        if job.gpus == 0:
            if not isinstance(gpus, str) or gpus not in c.server_index:
                raise InputError(f"{where}: expected a server id for CPU-only job "
                                 f"{short_repr(self._ids.caller(job.id))}, got {short_repr(gpus)}")
            return Placement(job.id, (), {gpus: job.cpu}, {gpus: job.mem})
        if isinstance(gpus, (str, bytes, Mapping)) or not isinstance(gpus, Iterable):
            raise InputError(f"{where}: expected a list of GPUs, got {short_repr(gpus)}")
        names = [self._gpus.core(g, c.gpu_index, where) for g in gpus]
        counts: dict[str, int] = {}
        for g in names:
            sid = server_of(g)
            counts[sid] = counts.get(sid, 0) + 1
        from ..problem import split
        servers = sorted(counts)
        cpu = split(job.cpu, [counts[x] for x in servers])
        mem = split(job.mem, [counts[x] for x in servers])
        return Placement(job.id, tuple(GpuShare(g, job.gpu_milli) for g in names),
                         dict(zip(servers, cpu)), dict(zip(servers, mem)))

    def _recap(self, job_id: str, p: Placement | None) -> None:
        """A running job's caps changed in the round's answer (a solver lists
        such jobs in ``stats["resized"]``: the same GPUs and shares, other
        GPU memory or compute caps; no restart, no move): the session keeps
        the answer's placement."""
        job = self._jobs.get(job_id)
        if p is not None and job is not None and job.current is not None \
                and job.current.same_as(p):
            self._put(replace(job, current=p))

    def _reconcile(self, items: Iterable[tuple[Any, Any]], where: str,
                   ended: list[Any] | None = None) -> Reconciled:
        listed, changed = set(), []
        for jid, where_now in items:
            w = f"{where}[{short_repr(jid)}]"
            job = self._known(jid, w)
            if job.id in listed:
                raise InputError(f"{w}: listed twice")
            listed.add(job.id)
            if where_now is None:
                if job.current is None:
                    raise InputError(f"{w}: the session has it waiting; give where it runs")
                continue
            p = self._placement_of(job, where_now, w)
            if job.current is None or not p.same_as(job.current) \
                    or (isinstance(where_now, Placement) and _caps(p) != _caps(job.current)):
                changed.append((job, p, w))
        if ended is None:
            stopped = [cid for cid in list(self._jobs) if cid not in listed
                       and self._jobs[cid].current is not None]
        else:
            stopped, gone = [], set()
            for jid in ended:
                w = f"{where}.stopped[{short_repr(jid)}]"
                job = self._known(jid, w)
                if job.id in listed or job.id in gone:
                    raise InputError(f"{w}: listed twice" if job.id in gone
                                     else f"{w}: listed as running too")
                gone.add(job.id)
                if job.current is not None:
                    stopped.append(job.id)
        for cid in stopped:
            self._put(replace(self._jobs[cid], current=None))
        for job, _, _ in changed:
            self._put(replace(self._jobs[job.id], current=None))
        for job, p, w in changed:
            placed = check_current(replace(self._jobs[job.id], current=p), self._cluster,
                                   self._on_server, self._jobs, w)
            self._check_tenancy(placed, w)
            self._put(placed)
        ext = self._ids.caller
        return Reconciled(tuple(ext(j.id) for j, _, _ in changed if j.current is None),
                          tuple(ext(j.id) for j, _, _ in changed if j.current is not None),
                          tuple(ext(c) for c in stopped))

    def _server(self, server_id: Any, where: str, open_only: bool = False) -> Server:
        idx = self._cluster.server_index.get(server_id) if isinstance(server_id, str) else None
        if idx is None or (open_only and server_id in self._failed):
            raise InputError(f"{where}: unknown server {short_repr(server_id)}"
                             + (" (it has failed)" if idx is not None else ""))
        return self._cluster.servers[idx]

    def _check_tenancy(self, job: Job, where: str) -> None:
        if not (job.guaranteed and self._cluster.tenants):
            return
        from ..tenancy import tenancy_violations
        others = [j for j in self._jobs.values() if j.current is not None]
        alloc = Allocation(tuple(j.current for j in others + [job] if j.current is not None))
        bad = tenancy_violations(self._cluster, others + [job], alloc)
        if bad:
            raise InputError(f"{where}.job.current: breaks tenancy: {bad[0]}")

    # Every change goes through the functions below, which journal it.
    def _index(self, job: Job | None, add: bool) -> None:
        if job is None:
            return
        if job.current is None:
            key = shape_key(job)          # None: the jobs without a shape
            group = self._waiting.get(key)
            if add:
                if group is None:
                    group = self._waiting[key] = {}
                group[job.id] = None
            elif group is not None:
                group.pop(job.id, None)
                if not group:
                    del self._waiting[key]
            return
        self._rev += 1
        if self._room is not None:
            self._room.take(job.current, 1 if add else -1)
        for sid in placement_servers(job.current):
            s = self._on_server.setdefault(sid, set())
            if add:
                s.add(job.id)
            else:
                s.discard(job.id)
                if not s:
                    del self._on_server[sid]

    def _put(self, job: Job) -> None:
        jid = job.id
        old = self._jobs.get(jid)
        if old is None:
            self._arrival[jid] = self._next_seq
            self._next_seq += 1
        elif old.current is not None and old.current is not job.current:
            drop_all(old.current)           # no live job runs there: no cycle left behind
        self._index(old, False)
        self._jobs[jid] = job
        self._index(job, True)

        def undo() -> None:
            self._index(job, False)
            if old is None:
                del self._jobs[jid], self._arrival[jid]
                self._next_seq -= 1
            else:
                self._jobs[jid] = old
                self._index(old, True)
        self._journal.record(undo)

    def _drop(self, jid: str) -> None:
        old = self._jobs.pop(jid)
        seq = self._arrival.pop(jid)
        self._index(old, False)
        if old.current is not None:
            drop_all(old.current)
        ext = self._ids.caller(jid)
        rank = self._order.pop(ext, None) if self._order is not None else None
        held = self._held.pop(jid, 0)

        def undo() -> None:
            self._jobs[jid], self._arrival[jid] = old, seq
            self._index(old, True)
            if rank is not None and self._order is not None:
                self._order[ext] = rank
            if held is None:
                self._held[jid] = None
        self._journal.record(undo)
        self._ids.drop(jid, self._journal.record)

    def _reorder(self) -> None:
        """After a rollback: jobs back in submission order, the order by rank."""
        self._jobs = dict(sorted(self._jobs.items(), key=lambda kv: self._arrival[kv[0]]))
        if self._order is not None:
            self._order = dict(sorted(self._order.items(), key=lambda kv: kv[1]))

    def _set_cluster(self, cluster: Cluster) -> None:
        old, self._cluster = self._cluster, cluster
        self._room = None                     # rebuilt on the new cluster when needed
        self._journal.record(lambda: setattr(self, "_cluster", old))

    def _flag(self, flags: dict[str, None], sid: str, on: bool) -> None:
        if on:
            flags[sid] = None
            self._journal.record(lambda: flags.pop(sid, None))
        else:
            flags.pop(sid)
            self._journal.record(lambda: flags.__setitem__(sid, None))

    def _set_order(self, order: dict[Any, int] | None) -> None:
        old, self._order = self._order, order
        self._journal.record(lambda: setattr(self, "_order", old))

    def _bump(self, key: str) -> None:
        self._counts[key] += 1
        self._journal.record(lambda: self._counts.__setitem__(key, self._counts[key] - 1))

    def _consistent(self) -> bool:
        """The server index and the submission order match the jobs (for tests)."""
        want: dict[str, set[str]] = {}
        for j in self._jobs.values():
            if j.current is not None:
                for sid in placement_servers(j.current):
                    want.setdefault(sid, set()).add(j.id)
        ordered = list(self._jobs) == sorted(self._jobs, key=self._arrival.__getitem__)
        return want == self._on_server and ordered and set(self._arrival) == set(self._jobs)


def _placed_at(job: Job, current: Placement | None) -> Job:
    """``replace(job, current=current)`` for the round's commit: a `Job` is a
    frozen dataclass without ``__post_init__`` whose instance dictionary holds
    its fields alone, so the copy is that dictionary with ``current`` set
    (a seventh of `dataclasses.replace`'s cost; ``tests/test_session.py``
    compares the two)."""
    if type(job) is not Job:                  # a subclass: its own construction
        return replace(job, current=current)
    out = object.__new__(Job)
    d = out.__dict__
    d.update(job.__dict__)
    d["current"] = current
    return out


def _caps(p: Placement) -> list[tuple[Any, ...]]:
    """A placement's shares with their GPU memory and compute caps, by GPU."""
    return sorted((g.gpu, g.milli, g.mem, g.compute) for g in p.gpus)


def _some(p: Placement | None) -> Placement:
    """``p``, which the round's bookkeeping knows is there."""
    assert p is not None, "a placement the round reported"
    return p


def _ranks(order: Any, where: str) -> dict[Any, int]:
    """``{job id: rank}`` of a ranked list of distinct, hashable job ids
    (submitted or not)."""
    if isinstance(order, (str, bytes, Mapping)) or not isinstance(order, Iterable):
        raise InputError(f"{where}: expected a list of job ids, got {short_repr(order)}")
    order = list(order)
    try:
        fast = dict(zip(order, range(len(order))))      # in C; the loop below names a fault
    except TypeError:
        fast = {}
    if len(fast) == len(order):
        return fast
    out: dict[Any, int] = {}
    for k, jid in enumerate(order):
        try:
            dup = jid in out
        except TypeError:
            raise InputError(f"{where}[{k}]: expected a job id, got {short_repr(jid)}") from None
        if dup:
            raise InputError(f"{where}[{k}]: job {short_repr(jid)} listed twice")
        out[jid] = k
    return out


def _nothing(problem: Any, solver: str) -> Allocation:
    """The answer of a round on a call without servers: nothing placed,
    every job waiting with the compile step's reason."""
    jobs = problem.jobs
    return Allocation((), tuple(j.id for j in jobs), (), Status.FEASIBLE, 0.0, None, 0.0, solver,
                      problem.objective.name, problem.name, {}, (),
                      {jobs[j].id: why for j, why in problem.reasons.items()})


__all__ = ["Session"]

"""The :class:`Session`: a scheduler loop's cluster and jobs across rounds."""
from __future__ import annotations

import time
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from ..deadline import Deadline, check_time_limit
from ..errors import InputError, SolverUnavailable
from ..model import Allocation, Cluster, Job, Profile, Server
from ..validate import PRIORITY_RANGE, _short, check_call_settings
from .blockers import blockers, breaches, strip
from .checks import (check_current, check_job, check_server, placement_servers,
                     resolve_profile)
from ..carry import Carry
from .journal import Journal
from .result import RoundResult

#: Rounds solved again when a solver placed a job on a closed server.
MAX_RERUNS = 3
#: Why a job was held back from a round that would have put it on a blocked server.
BLOCKED_REASON = "only a drained or failed server had room for it this round"


class Session:
    r"""A scheduler loop's state: the cluster and its jobs across rounds.

    Events change the state between rounds (each one, or each batch given to
    :meth:`apply`, atomically: a bad event raises a one-line
    :class:`~alloc.errors.InputError` and changes nothing); :meth:`step` runs
    one round through the core (:func:`alloc.problem.compile_problem`, then
    :func:`alloc.solve.run_solver`, whose answer is checked by
    :func:`alloc.violations`) and makes the placed jobs running.

    Parameters
    ----------
    cluster : Cluster
        Servers (CPU in milli-cores, memory in MiB, GPUs), levels, tenants.
    jobs : sequence of Job, optional
        Jobs to start with (running ones have ``current``); validated once.
    solver, objective : str
        As for :func:`alloc.allocate`.
    time_limit : float, optional
        Seconds per round (default :data:`alloc.deadline.DEFAULT_TIME_LIMIT`).
    options : mapping, optional
        The solver's declared options.
    max_moves : int or None
        Running jobs one round may move (default 0: placements are stable;
        None: any number, with ``move_cost``).
    move_cost : float, optional
        Objective units per move.
    order : sequence of str, optional
        Ranked job ids, highest first (see :meth:`set_order`).
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
                 objective: str = "throughput", time_limit: float | None = None,
                 options: Mapping[str, Any] | None = None, max_moves: int | None = 0,
                 move_cost: float | None = None, order: Sequence[str] | None = None,
                 seed: int = 0, name: str = "session",
                 models: Mapping[str, Profile] | None = None):
        from ..objectives import get_objective
        from ..options import validate_options
        from ..registry import get_solver
        from ..solve import needed_capabilities
        from ..validate import prepare
        try:
            self._info = get_solver(solver)
            self._options = validate_options(f"solver {solver!r}", self._info.options,
                                             dict(options or {}))
            self._objective = get_objective(objective)
            if time_limit is not None:
                check_time_limit(time_limit)
        except InputError:
            raise
        except ValueError as exc:
            raise InputError(str(exc)) from None
        _check_settings(max_moves, move_cost, seed, name)
        why = self._info.unavailable_reason()
        if why:
            raise SolverUnavailable(f"solver {solver!r} is unavailable: {why}")
        self._models = dict(models or {})
        jobs = [resolve_profile(j, self._models, f"jobs[{i}]") if isinstance(j, Job) else j
                for i, j in enumerate(jobs)]
        cluster, jobs = prepare(cluster, jobs)
        missing = needed_capabilities(cluster, jobs) - self._info.capabilities
        if missing:
            raise InputError(f"solver {solver!r} does not support {', '.join(sorted(missing))} "
                             f"which this cluster or its jobs need")
        self.time_limit, self.max_moves, self.move_cost = time_limit, max_moves, move_cost
        self.seed, self.name = seed, name
        self._cluster = cluster
        self._jobs: dict[str, Job] = {}
        self._arrival: dict[str, int] = {}
        self._on_server: dict[str, set[str]] = {}
        self._drained: dict[str, None] = {}
        self._failed: dict[str, None] = {}
        self._order: dict[str, int] | None = None
        self._counts = {"events": 0, "finished": 0, "failed": 0}
        self._next_seq = 0
        self._round = 0
        self._last: RoundResult | None = None
        self._journal = Journal()
        #: what the core and the solver derived last round (`alloc.carry`)
        self._carry = Carry()
        for j in jobs:
            self._put(j if j.current is None or j.current.job == j.id
                      else replace(j, current=replace(j.current, job=j.id)))
        if order is not None:
            self._order = _ranks(order, self._jobs, "order")

    # ---------------------------------------------------------------- views
    @property
    def cluster(self) -> Cluster:
        """The cluster now (failed servers removed, added ones appended)."""
        return self._cluster

    @property
    def jobs(self) -> Mapping[str, Job]:
        """Every job by id, in submission order (read-only view)."""
        return MappingProxyType(self._jobs)

    @property
    def running(self) -> tuple[str, ...]:
        """Ids of the running jobs (``current`` set)."""
        return tuple(j for j, job in self._jobs.items() if job.current is not None)

    @property
    def pending(self) -> tuple[str, ...]:
        """Ids of the waiting jobs."""
        return tuple(j for j, job in self._jobs.items() if job.current is None)

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
    def order(self) -> tuple[str, ...] | None:
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
            raise InputError(f"{where}: expected a Job, got {_short(job)}")
        with self._journal.transaction(self._reorder):
            if isinstance(job.id, str) and job.id in self._jobs:
                raise InputError(f"{where}: job {job.id!r} already exists")
            job = resolve_profile(job, self._models, f"{where}.job")
            check_job(job, self._cluster, self._info.capabilities, self.solver, f"{where}.job")
            if job.current is not None:
                job = check_current(job, self._cluster, self._on_server, self._jobs,
                                    f"{where}.job")
                self._check_tenancy(job, where)
            self._put(job)
            self._bump("events")

    def finish(self, job_id: str, *, where: str | None = None) -> None:
        """Remove a job that completed (its resources are free at once)."""
        with self._journal.transaction(self._reorder):
            self._known(job_id, where or "finish")
            self._drop(job_id)
            self._bump("finished")
            self._bump("events")

    def fail_job(self, job_id: str, *, requeue: bool = False, where: str | None = None) -> None:
        """A job stopped abnormally: it leaves the session (counted as failed),
        or with ``requeue=True`` waits again for a placement."""
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where or "fail_job")
            if not isinstance(requeue, bool):
                raise InputError(f"{where or 'fail_job'}.requeue: expected true or false, "
                                 f"got {_short(requeue)}")
            if requeue:
                self._put(replace(job, current=None))
            else:
                self._drop(job_id)
                self._bump("failed")
            self._bump("events")

    def fail_server(self, server_id: str, *, where: str | None = None) -> tuple[str, ...]:
        """A server is gone: the jobs running on it are pending again (a job
        spread over it loses all its GPUs), and the server leaves the
        cluster -- unless the tenants' cells no longer fit without it, in
        which case it stays in the cluster, closed (:attr:`failed`).

        Returns
        -------
        tuple of str
            The jobs that lost their placement, in submission order.
        """
        where = where or "fail_server"
        with self._journal.transaction(self._reorder):
            self._server(server_id, where, open_only=True)
            lost = sorted(self._on_server.get(server_id, ()), key=self._arrival.__getitem__)
            for jid in lost:
                self._put(replace(self._jobs[jid], current=None))
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
        """No new placements on the server; its running jobs stay until they
        finish (or a round allowed to move them does)."""
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
                raise InputError(f"{where}: server {_short(server_id)} is not drained")
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

    def set_priority(self, job_id: str, priority: int, *, where: str | None = None) -> None:
        """Change a job's priority (-1000..1000; see :meth:`set_order` for ranks)."""
        where = where or "set_priority"
        with self._journal.transaction(self._reorder):
            job = self._known(job_id, where)
            lo, hi = PRIORITY_RANGE
            if isinstance(priority, bool) or not isinstance(priority, int) \
                    or not lo <= priority <= hi:
                raise InputError(f"{where}.priority: expected an integer in {lo}..{hi}, "
                                 f"got {_short(priority)}")
            self._put(replace(job, priority=priority))
            self._bump("events")

    def set_order(self, ranked: Sequence[str] | None, *, where: str | None = None) -> None:
        """Rank jobs explicitly, highest first (as LAS, FIFO or Tiresias
        produce; any length).  Unlisted jobs come after, by priority; None
        goes back to priority order.  Finished jobs leave the order."""
        where = where or "set_order"
        with self._journal.transaction(self._reorder):
            self._set_order(None if ranked is None else _ranks(ranked, self._jobs,
                                                              f"{where}.order"))
            self._bump("events")

    def apply(self, events: Iterable) -> list:
        """Apply a batch of events atomically: all of them or (on the first
        bad one, an :class:`InputError` naming it) none.

        Each event is a mapping ``{"type": NAME, ...}`` in the JSON form of
        :mod:`alloc.session.events` (``submit`` takes a :class:`Job` or a job
        object of the instance format).  Returns each event's result (the
        jobs ``fail_server`` requeued, else None)."""
        from .events import apply_event
        if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Iterable):
            raise InputError(f"events: expected a list of events, got {_short(events)}")
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
        alloc, timings = self._solve(deadline)
        return self._commit(alloc, timings, t0)

    def _solve(self, deadline: Deadline) -> tuple[Allocation, dict]:
        from ..problem import compile_problem
        from ..solve import run_solver
        blocked = set(self._drained) | set(self._failed)
        extra = [b for sid in blocked for b in blockers(
            self._cluster, sid, (self._jobs[j] for j in self._on_server.get(sid, ())))]
        excluded: dict[str, str] = {}
        no_moves = False
        timings = {"compile_s": 0.0, "solve_s": 0.0, "attempts": 0}
        order = list(self._order) if self._order is not None else None
        for attempt in range(MAX_RERUNS + 2):
            if attempt > MAX_RERUNS:  # last resort: start nothing, move nothing
                excluded.update((j, BLOCKED_REASON) for j, job in self._jobs.items()
                                if job.current is None)
                no_moves = True
            jobs = list(self._jobs.values()) if not excluded else \
                [j for j in self._jobs.values() if j.id not in excluded]
            t1 = time.perf_counter()
            problem = compile_problem(
                self._cluster, jobs + extra, self._objective, self.name, order=order,
                max_moves=0 if no_moves else self.max_moves,
                move_cost=None if no_moves else self.move_cost, carry=self._carry)
            t2 = time.perf_counter()
            alloc = run_solver(problem, self._info, deadline, seed=self.seed,
                               options=self._options, timings=timings)
            timings["compile_s"] += t2 - t1
            timings["solve_s"] += time.perf_counter() - t2
            timings["attempts"] += 1
            if not blocked:
                break
            started, moved = breaches(alloc, self._jobs, blocked)
            if not started and not moved:
                break
            excluded.update((j, BLOCKED_REASON) for j in started)
            no_moves = no_moves or moved
        if extra:
            alloc = strip(alloc, {b.id: b for b in extra}, self._objective)
        if excluded:
            alloc = replace(alloc, unplaced=alloc.unplaced + tuple(excluded),
                            reasons={**alloc.reasons, **excluded})
        return alloc, timings

    def _commit(self, alloc: Allocation, timings: dict, t0: float) -> RoundResult:
        t1 = time.perf_counter()
        jobs = self._jobs
        start = [p for p in alloc.placements if jobs[p.job].current is None]
        move = [alloc.placement(j) for j in alloc.moved]
        moved_from = {j: self._jobs[j].current for j in alloc.moved}
        preempt = [self._jobs[j].current for j in alloc.preempted]
        for p in start + move:
            self._put(replace(self._jobs[p.job], current=p))
        for j in alloc.preempted:
            self._put(replace(self._jobs[j], current=None))
        self._round += 1
        timings["commit_s"] = time.perf_counter() - t1
        now = time.perf_counter()
        res = RoundResult(self._round, tuple(start), tuple(move), tuple(preempt), moved_from,
                          alloc.unplaced, alloc.reasons, alloc, now - t0, timings)
        self._last = res
        return res

    # ---------------------------------------------------------------- state
    def to_dict(self, jobs: bool = True) -> dict:
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
            "counts": {"jobs": len(self._jobs), "running": len(self.running),
                       "pending": len(self._jobs) - len(self.running),
                       "finished": self._counts["finished"], "failed": self._counts["failed"]},
        }
        if jobs:
            out["jobs"] = [job_to_dict(j) for j in self._jobs.values()]
        return out

    # -------------------------------------------------------------- helpers
    def _known(self, job_id, where: str) -> Job:
        job = self._jobs.get(job_id) if isinstance(job_id, str) else None
        if job is None:
            raise InputError(f"{where}: unknown job {_short(job_id)} (never submitted, or "
                             f"already finished)")
        return job

    def _server(self, server_id, where: str, open_only: bool = False) -> Server:
        idx = self._cluster.server_index.get(server_id) if isinstance(server_id, str) else None
        if idx is None or (open_only and server_id in self._failed):
            raise InputError(f"{where}: unknown server {_short(server_id)}"
                             + (" (it has failed)" if idx is not None else ""))
        return self._cluster.servers[idx]

    def _check_tenancy(self, job: Job, where: str) -> None:
        if not (job.guaranteed and self._cluster.tenants):
            return
        from ..tenancy import tenancy_violations
        others = [j for j in self._jobs.values() if j.current is not None]
        alloc = Allocation(tuple(j.current for j in others + [job]))
        bad = tenancy_violations(self._cluster, others + [job], alloc)
        if bad:
            raise InputError(f"{where}.job.current: breaks tenancy: {bad[0]}")

    # Every change goes through the functions below, which journal it.
    def _index(self, job: Job | None, add: bool) -> None:
        if job is None or job.current is None:
            return
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
        self._index(old, False)
        self._jobs[jid] = job
        self._index(job, True)

        def undo():
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
        rank = self._order.pop(jid, None) if self._order is not None else None

        def undo():
            self._jobs[jid], self._arrival[jid] = old, seq
            self._index(old, True)
            if rank is not None:
                self._order[jid] = rank
        self._journal.record(undo)

    def _reorder(self) -> None:
        """After a rollback: jobs back in submission order, the order by rank."""
        self._jobs = dict(sorted(self._jobs.items(), key=lambda kv: self._arrival[kv[0]]))
        if self._order is not None:
            self._order = dict(sorted(self._order.items(), key=lambda kv: kv[1]))

    def _set_cluster(self, cluster: Cluster) -> None:
        old, self._cluster = self._cluster, cluster
        self._journal.record(lambda: setattr(self, "_cluster", old))

    def _flag(self, flags: dict, sid: str, on: bool) -> None:
        if on:
            flags[sid] = None
            self._journal.record(lambda: flags.pop(sid, None))
        else:
            flags.pop(sid)
            self._journal.record(lambda: flags.__setitem__(sid, None))

    def _set_order(self, order: dict | None) -> None:
        old, self._order = self._order, order
        self._journal.record(lambda: setattr(self, "_order", old))

    def _bump(self, key: str) -> None:
        self._counts[key] += 1
        self._journal.record(lambda: self._counts.__setitem__(key, self._counts[key] - 1))

    def _consistent(self) -> bool:
        """The server index and the submission order match the jobs (for tests)."""
        want: dict[str, set] = {}
        for j in self._jobs.values():
            if j.current is not None:
                for sid in placement_servers(j.current):
                    want.setdefault(sid, set()).add(j.id)
        ordered = list(self._jobs) == sorted(self._jobs, key=self._arrival.__getitem__)
        return want == self._on_server and ordered and set(self._arrival) == set(self._jobs)


def _ranks(order, jobs: Mapping[str, Job], where: str) -> dict[str, int]:
    """``{job id: rank}`` of a ranked list of known, distinct job ids."""
    if isinstance(order, (str, bytes, Mapping)) or not isinstance(order, Iterable):
        raise InputError(f"{where}: expected a list of job ids, got {_short(order)}")
    out: dict[str, int] = {}
    for k, jid in enumerate(order):
        if not isinstance(jid, str) or jid not in jobs:
            raise InputError(f"{where}[{k}]: unknown job {_short(jid)}")
        if jid in out:
            raise InputError(f"{where}[{k}]: job {jid!r} listed twice")
        out[jid] = k
    return out


def _check_settings(max_moves, move_cost, seed, name) -> None:
    check_call_settings(seed, max_moves, move_cost)
    if not isinstance(name, str):
        raise InputError(f"name: expected a string, got {_short(name)}")


__all__ = ["BLOCKED_REASON", "MAX_RERUNS", "Session"]

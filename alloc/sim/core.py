r"""The discrete-event simulator: a stack of policies over time on one
[`Session`][alloc.session.Session].

Events, in time order, and at one instant in this order: completions, server
events (failures, drains, restorations), arrivals, a mechanism's timers, then
the round.  A *round* is one decision:

1. **admission** (if any) lets arrived jobs into the queue (the others wait
   outside, with its reason, and are asked again at the next round);
2. **sizing** (if any) gives jobs new sizes; a running job given another
   size stops and waits for a placement at it (a restart, counted);
3. **shares** (if any) give each job a fraction of time on each GPU type,
   and Gavel's round mechanism ([`plan_round`][alloc.shares.rounds.plan_round])
   turns them into this round's runners, each on one type (jobs sharing GPUs
   in pairs where the shares say so); otherwise **order** ranks the jobs;
4. the round's *candidates* are taken in that order (``candidates="fit"``:
   the ranked jobs whose GPUs fit the cluster's, skipping those that do not,
   as Synergy's scheduler admits jobs; ``"all"``: every job), the
   **mechanisms**' ``before_step`` hooks run, and the session's round
   (``Session.step``: the **placement** solver, checked by
   ``violations()``) places them: running jobs stay where they run unless the
   order is preemptive (``preempt="order"``: a running job ranked below a
   waiting job that cannot otherwise be placed is stopped for it), or
   ``repack`` re-places every job from scratch each round (Synergy's and
   Gavel's rounds);
5. each job that starts, moves or stops is charged by the **progress model**
   (`alloc.sim.progress`): its rate from its placement and co-located
   neighbours, its delay on a restart, what it keeps of its progress when it
   stops.

With ``round_s`` rounds happen every ``round_s`` seconds (while jobs are
active; an arrival waits for the next boundary); without it (event-driven)
a round follows every instant with an arrival, a completion, a server
event, or a mechanism's ``decide()``.  A job finishes at the exact instant
its work is done and frees its GPUs at once.

A job may ask for no GPU (CPU and memory only, its ``fields``) or for a
share of one GPU (``gpu_milli``): both are offered to the rounds as any
other (a job that asks for no GPU fits whatever GPU is free).  After each
round, stepped or skipped, the mechanisms' ``after_round`` hooks run; a
mechanism may take a job out of the run (``Control.drop``: ``drop-unplaced``
drops a job its arrival's round does not start), reported as *dropped*.

*Keep-fit rounds*: when running jobs keep their GPUs (an order that does not
preempt, no repack) and the candidates are the ranked jobs that fit, with an
order of static keys (`alloc.sim.ranking`), a round's bookkeeping follows
what changed: the running jobs are a list kept as they start and stop (with
the milli-GPU they hold as a running sum), the waiting jobs the order's
sorted queue, the session's waiting jobs a set; whether the candidates are
the last step's is told from the jobs started since; the session's order
ranks the waiting candidates alone when the session may neither stop nor
move a running job (their rank then changes nothing).  A run whose jobs
never finish (the FGD experiment: ``hold``) then costs each round what
changed, not the jobs running, and the session answers a round with one new
job from its carried state (`alloc.session.fast`).

Every placement goes through the session: rounds through ``Session.step``,
a mechanism's actions through its checked events (``stop``, ``reconcile``).
A policy that raises ends the run with a `alloc.sched.PolicyError` naming it,
the round and the time.

The run stops when every measured job (``window``) has finished, when no
job is left to arrive or run, or at ``max_time_s`` (then at the first round
boundary at or after it); unfinished measured jobs are reported.
"""
from __future__ import annotations

import heapq
import math
import random
import time
from dataclasses import dataclass, replace
from itertools import count
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence, cast

from ..gpukey import gpu_key, server_of
from ..errors import InputError
from ..model import Cluster, GpuShare, Job, Placement
from ..sched.kinds import BaseMechanism, Context, Event, Size
from ..sched.registry import PolicyError
from .jobs import JOB_FIELDS, JobRecord, WorkloadJob
from .progress import Alone, Progress, Run
from .result import SimResult
from .stack import Slot, check_needs, resolve_all

#: The job of a ranked queue's ``(key, id, job)`` (`alloc.sim.ranking.Queue.ranked`).
_JOB = itemgetter(2)
#: A job record's position in the workload.
_INDEX = attrgetter("index")
#: Event priorities at one instant.
_FINISH, _SERVER, _TIMER = 0, 1, 3
#: What a server event may be.
SERVER_EVENTS = ("fail", "drain", "undrain", "restore")


@dataclass(frozen=True)
class ServerEvent:
    """A change of the cluster at a given time.

    Attributes
    ----------
    at_s : float
        When (s).
    kind : str
        ``fail`` (its jobs lose their GPUs and wait again, keeping what their
        progress model lets them keep), ``drain`` (no new placements there),
        ``undrain``, ``restore`` (a failed server is back).
    server : str
        The server's id.

    Examples
    --------
    >>> from alloc.sim import ServerEvent
    >>> ServerEvent(3600.0, "fail", "s0").kind
    'fail'
    """
    at_s: float
    kind: str
    server: str

    def __post_init__(self) -> None:
        if self.kind not in SERVER_EVENTS:
            raise InputError(f"server event: kind: expected one of {', '.join(SERVER_EVENTS)}, "
                             f"got {self.kind!r}")
        if not isinstance(self.at_s, (int, float)) or not self.at_s >= 0:
            raise InputError(f"server event: at_s: expected a number >= 0, got {self.at_s!r}")


class Simulator:
    """One run (see the module notes); `simulate` builds and runs one.

    Parameters
    ----------
    cluster : Cluster
    jobs : iterable of WorkloadJob
        Sorted by arrival (a list, or an endless iterator with ``window``).
    order, placement, admission, sizing, shares, mechanism
        The stack (`alloc.sim.stack`): names, ``(name, params)``, objects.
    progress : Progress or str, optional
        A progress model, or a built-in one's name (`alloc.sim.progress.builtin`);
        default `alloc.sim.progress.Alone`.
    round_s : float or None
        Seconds between rounds (None: event-driven).
    seed : int
        Seeds the policies' random source and every session round.
    window : (int, int), optional
        Positions in the workload (first and last, both included) whose jobs
        are measured; default every job.
    max_time_s : float, optional
        Stop there (see the module notes).
    repack : bool
        Re-place every job from scratch at each round (its placement is
        kept, not a move, when the round gives it the same one).
    candidates : {"fit", "all"}
        Which ranked jobs a round offers the solver.
    events : sequence of ServerEvent
        Failures, drains and restorations.
    time_limit : float, optional
        Seconds per session round.
    objective : str, optional
        The session's objective (default: the placement solver's own).
    name : str
    """

    def __init__(self, cluster: Cluster, jobs: Iterable[WorkloadJob], *,
                 order: Any = "fifo", placement: Any = "best-fit", admission: Any = None,
                 sizing: Any = None, shares: Any = None, mechanism: Any = None,
                 progress: Progress | str | None = None, round_s: float | None = None, seed: int = 0,
                 window: tuple[int, int] | None = None, max_time_s: float | None = None,
                 repack: bool = False, candidates: str = "fit",
                 events: Sequence[ServerEvent] = (), time_limit: float | None = None,
                 objective: str | None = None, name: str = "sim") -> None:
        if not isinstance(cluster, Cluster):
            raise InputError(f"cluster: expected an alloc.Cluster, got {type(cluster).__name__}")
        if round_s is not None and not (isinstance(round_s, (int, float)) and round_s > 0
                                        and math.isfinite(round_s)):
            raise InputError(f"round_s: expected a number > 0 (or None), got {round_s!r}")
        if candidates not in ("fit", "all"):
            raise InputError(f"candidates: expected 'fit' or 'all', got {candidates!r}")
        if max_time_s is not None and not (isinstance(max_time_s, (int, float)) and max_time_s > 0):
            raise InputError(f"max_time_s: expected a number > 0, got {max_time_s!r}")
        if window is not None and (len(window) != 2 or window[0] > window[1] or window[0] < 0):
            raise InputError(f"window: expected (first, last) with 0 <= first <= last, got {window!r}")
        self.cluster0 = cluster
        if isinstance(progress, str):
            from .progress import builtin
            progress = builtin(progress)
        self.progress: Progress = progress if progress is not None else Alone()
        self.round_s = None if round_s is None else float(round_s)
        self.seed = seed
        self.window = tuple(window) if window is not None else None
        self.max_time_s = max_time_s
        self.repack, self.candidates = repack, candidates
        self.events = sorted(events, key=lambda e: e.at_s)
        self.name = name
        self.time_limit = time_limit
        self.objective = objective
        self._jobs_src = jobs
        self.finite = isinstance(jobs, (list, tuple))
        if self.window is None and not self.finite:
            raise InputError("jobs: an endless workload needs a measurement window")
        self.slots: dict[str, tuple[Slot, ...]] = {
            "admission": resolve_all("admission", admission),
            "order": resolve_all("order", order if order is not None else "fifo"),
            "placement": resolve_all("placement", placement if placement is not None else
                                     "best-fit"),
            "sizing": resolve_all("sizing", sizing),
            "shares": resolve_all("shares", shares),
            "mechanism": resolve_all("mechanism", mechanism),
        }
        gives = frozenset(getattr(self.progress, "gives", frozenset()))
        check_needs([s for ss in self.slots.values() for s in ss], gives,
                    {"duration": "give each job's duration_s (or a progress model that knows it)",
                     "throughput": "use a progress model with throughput tables (gavel)",
                     "pairs": "use a progress model with pair throughputs (gavel)",
                     "profile": "use the synergy progress model",
                     "goodput": "use a goodput progress model"})
        #: the first slot that needs each job's duration (None: none does)
        self._needs_duration = next((x for ss in self.slots.values() for x in ss
                                     if "duration" in x.needs), None)
        self.order = self.slots["order"][0]
        self.place = self.slots["placement"][0]
        self.admission = self.slots["admission"][0] if self.slots["admission"] else None
        self.sizing = self.slots["sizing"][0] if self.slots["sizing"] else None
        self.shares = self.slots["shares"][0] if self.slots["shares"] else None
        self.mechanisms = self.slots["mechanism"]
        if self.shares is not None and self.round_s is None:
            raise InputError("shares: time shares need rounds (round_s)")
        if self.shares is not None:
            repack = self.repack = True
        preemptive = bool(getattr(self.order.obj, "preemptive", False))
        self.preempt = "order" if (preemptive and not repack and self.shares is None) else None
        self._build_session()
        self._set_up_rounds()
        # state
        self.now = 0.0
        self.rng = random.Random(seed)
        self.records: dict[str, JobRecord] = {}
        self.finished: list[JobRecord] = []
        self.unfinished: list[JobRecord] = []
        self.heap: list = []
        self._seq = count()
        self.round_no = 0
        self.steps = 0
        self.skipped = 0
        #: something a round's candidates do not show changed (a server event,
        #: a timer, a mechanism's action, a new size): the next round steps
        self._dirty = True
        #: a job arrived or finished since the last round (event-driven rounds)
        self._happened = False
        self._last_cands: list | None = None
        #: the last round was skipped (its candidates were the last step's)
        self._quiet_last = False
        self._gpu_jobs: dict[str, set[str]] = {}
        #: what each indexed running job adds to the held totals: (milli-GPU, CPU, memory)
        self._indexed: dict[str, tuple[int, int, int]] = {}
        self._stopped: set[str] = set()
        self._finished_by_id: dict[str, JobRecord] = {}
        self._held_milli = 0
        self._cpu_held = self._mem_held = 0
        self._cpu_area = self._mem_area = 0.0
        self._round_open: tuple | None = None
        self.round_util: list[tuple[float, float, float, float]] = []
        self._running_n = 0
        self._running: dict[str, JobRecord] = {}
        self._t_last = 0.0
        self._util_area = 0.0
        self._active = 0
        self._active_area = 0.0
        self._first_arrival: float | None = None
        self.samples: list[tuple[float, float, int, int]] = []
        self.counts = {"preemptions": 0, "restarts": 0, "moves": 0, "suspensions": 0,
                       "failures": 0, "resizes": 0, "dropped": 0}
        #: jobs that left the run without finishing (`alloc.sched.kinds.Control.drop`)
        self.dropped: list[JobRecord] = []
        self.timing = {"policies_s": 0.0, "session_s": 0.0, "step_s": 0.0, "progress_s": 0.0}
        self._servers = {s.id: s for s in cluster.servers}
        self._total_milli: int | None = None
        self._control = _Control(self)
        self._received: dict[str, dict[str, float]] = {}
        self._wants_decision = False
        self._cpu_per_gpu, self._mem_per_gpu = _proportional(cluster)

    # ------------------------------------------------------------ set-up
    def _build_session(self) -> None:
        from ..registry import get_solver
        from ..session import Session
        check = getattr(self.progress, "check_cluster", None)
        if check is not None:          # a progress model that cannot rate the cluster's GPUs
            check(self.cluster0)
        opts = dict(self.place.params)
        #: a mechanism may give the placement solver options (held by reference, so
        #: that it updates them between rounds) and ask that every waiting job be
        #: offered to it (``candidates = "all"``: a placement that binds jobs)
        given = []
        for m in self.mechanisms:
            choose = getattr(m.obj, "placement_options_for", None)
            more = choose(get_solver(self.place.obj).name) if choose is not None else \
                getattr(m.obj, "placement_options", None)
            if more:
                opts.update(more)
                given.append(m.label)
            if getattr(m.obj, "candidates", None) == "all":
                self.candidates = "all"
        #: repack through the solver: a solver that declares migration re-places
        #: every job from scratch when moves are unlimited (a move costs nothing)
        self.moving = self.repack and "migration" in get_solver(self.place.obj).capabilities
        moves: dict[str, Any] = {"max_moves": None, "move_cost": 0.0} if self.moving else {}
        try:
            self.session = Session(self.cluster0, solver=self.place.obj, options=opts,
                                   objective=self.objective, preempt=self.preempt,
                                   time_limit=self.time_limit,
                                   seed=self.seed, name=self.name, **moves)
        except InputError as exc:
            by = f" (options given by {', '.join(given)})" if given else ""
            raise InputError(f"placement: {exc}{by}") from None

    def _set_up_rounds(self) -> None:
        """The rounds' own state: which mechanism hooks act, the queue, the
        keep-fit bookkeeping (module notes)."""
        from .ranking import Queue, incremental
        #: the mechanisms whose hook does something, by hook (`BaseMechanism`'s
        #: no-ops are not called), and the round's result for ``after_round``
        self._hooks = {h: [m for m in self.mechanisms if _acts(m.obj, h)]
                       for h in ("on_event", "before_round", "before_step", "after_step",
                                 "after_round")}
        self._after_round = self._hooks["after_round"]
        self._result: Any = None
        #: running jobs keep their GPUs and the candidates are the ranked jobs that fit:
        #: a round then walks the waiting jobs and what changed (module notes)
        self._keep_fit = self.preempt is None and not self.repack and self.candidates == "fit"
        self._queue = Queue(self.order.obj, self._waits,
                            None if self._keep_fit else self._pooled) \
            if incremental(self.order.obj) else None
        #: a keep-fit round's running jobs in start order (None: built at the next
        #: round), their candidate keys, and a count of the list's changes other
        #: than a job appended (`_same_cands`)
        self._keep: list[JobRecord] | None = None
        self._keep_ids: list[tuple] = []
        self._keep_epoch = 0
        #: the last keep-fit step's candidates: (epoch, kept jobs, the other
        #: candidates' keys), and all their keys once the kept list changed
        self._last_keep: tuple | None = None
        self._last_full: list | None = None
        #: a mechanism acts before the session's step (the kept list may change then)
        self._acts_before = bool(self._hooks["before_step"])
        #: the jobs in the session that do not run, by id
        self._parked: dict[str, JobRecord] = {}
        #: active jobs that ask for no GPU
        self._cpu_only = 0

    @property
    def total_milli(self) -> int:
        """Milli-GPUs of the open servers (drained ones included); kept until a
        server event."""
        if self._total_milli is None:
            failed = set(self.session.failed)
            self._total_milli = sum(s.gpus for s in self.session.cluster.servers
                                    if s.id not in failed) * 1000
        return self._total_milli

    # ------------------------------------------------------------- calls
    def _call(self, slot: Slot, fn: Callable, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        except InputError as exc:
            if isinstance(exc, PolicyError):
                raise
            raise PolicyError(f"{slot.label} at round {self.round_no} (t={self.now:g} s): "
                              f"{exc}") from None
        except Exception as exc:
            raise PolicyError(f"{slot.label} raised at round {self.round_no} (t={self.now:g} s): "
                              f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.timing["policies_s"] += time.perf_counter() - t0

    def context(self) -> Context:
        """The moment as the policies see it."""
        jobs = cast(Mapping[str, Any], MappingProxyType(self.records))
        return Context(self.now, self.round_no, self.session.cluster, jobs, self.rng,
                       self.round_s, self.progress, self.session.closed)

    # ------------------------------------------------------------- time
    def _advance_to(self, t: float) -> None:
        dt = t - self._t_last
        if dt > 0:
            self._util_area += self._held_milli * dt
            self._cpu_area += self._cpu_held * dt
            self._mem_area += self._mem_held * dt
            self._active_area += self._active * dt
        self._t_last = t
        self.now = t

    def _push(self, t: float, prio: int, kind: str, payload: Any) -> None:
        heapq.heappush(self.heap, (t, prio, next(self._seq), kind, payload))

    # ------------------------------------------------------------- jobs
    def _settle(self, r: JobRecord) -> None:
        """Bring a running job's progress up to now."""
        if not r.running:
            return
        done = r.done_at(self.now)
        seconds = self.now - r.t_mark
        r.done, r.t_mark = min(done, r.work), self.now
        if seconds > 0 and r.run is not None:
            t0 = time.perf_counter()
            self.progress.advanced(r, r.run, seconds, r.done)
            self.timing["progress_s"] += time.perf_counter() - t0

    def _set_rate(self, r: JobRecord, force: bool = False) -> None:
        assert r.run is not None
        if r.t_mark < self.now:
            self._settle(r)
        t0 = time.perf_counter()
        rate = float(self.progress.rate(r, r.run))
        self.timing["progress_s"] += time.perf_counter() - t0
        if not (rate >= 0 and math.isfinite(rate)):
            raise PolicyError(f"progress model {getattr(self.progress, 'name', '?')!r} gave job "
                              f"{r.id!r} the rate {rate!r} (expected a number >= 0)")
        if rate == r.rate and not force:
            return
        r.rate = rate
        r.version += 1
        if rate > 0:
            start = r.blocked_until if r.blocked_until > self.now else self.now
            left = (r.work - r.done) / rate
            # float noise: work within 1e-9 of the whole counts as done (a finish that
            # close after a round boundary is taken at the boundary)
            self._push(start + left, _FINISH, "finish", (r.id, r.version, 1e-9 * r.work / rate))

    def _run_of(self, r: JobRecord, p: Placement, cause: str) -> Run:
        names = tuple(g.gpu for g in p.gpus)
        servers = tuple(sorted(p.servers)) if p.cpu or p.mem else \
            tuple(sorted({server_of(g) for g in names}))
        cl = self.session.cluster
        gpu_type = None
        if names:
            idx = cl.server_index.get(server_of(names[0]))
            gpu_type = cl.servers[idx].gpu_type if idx is not None else None
        milli = p.gpus[0].milli if p.gpus else 1000
        return Run(p, len(names), servers, gpu_type, milli, (), names, self.now, cause, r.size)

    def _begin(self, r: JobRecord, p: Placement, cause: str) -> None:
        """``r`` starts (or moves) to ``p``."""
        if r.running:
            self._unindex(r)
            self._settle(r)
        else:
            r.running = True
            self._running_n += 1
            self._running[r.id] = r
            if self._queue is not None:
                self._queue.touch(r)
            keep = self._keep
            if keep is not None and not r.held and _sized(r):
                keep.append(r)                  # kept last, as it started
                self._keep_ids.append(_cand_key(r))
            if self._keep_fit:
                self._parked.pop(r.id, None)
            r.held_since = self.now
            r.t_mark = self.now
            if r.start_s is None:
                r.start_s = self.now
                r.queued_s += self.now - r.arrival_s
            else:
                r.queued_s += self.now - (r.stopped_s if r.stopped_s is not None else self.now)
                if cause == "start":
                    cause = "restart"
            if cause in ("restart", "resume"):
                r.restarts += 1
                self.counts["restarts"] += 1
            r.intervals.append([self.now, None, len(p.gpus)])
        run = self._run_of(r, p, cause)
        r.where.append([self.now, list(run.servers)])
        t0 = time.perf_counter()
        delay = float(self.progress.delay_s(r, run, cause))
        self.timing["progress_s"] += time.perf_counter() - t0
        r.blocked_until = self.now + delay if delay > 0 else 0.0
        r.delay_total_s += delay
        r.run = run
        r.rate = -1.0          # forces a new completion
        self._index(r)
        self._set_rate(r, force=True)

    def _end(self, r: JobRecord, why: str) -> None:
        """``r`` stops holding GPUs: ``finish``, ``preempt``, ``suspend``, ``fail``, ``resize``."""
        if not r.running:
            return
        self._settle(r)
        held = self.now - r.held_since
        r._att_s += held
        r._att_gpu_s += held * r._held_gpus()
        self._unindex(r)
        r.running = False
        self._running_n -= 1
        del self._running[r.id]
        self._touch(r)
        if self._keep_fit:
            self._unkeep(r)
            self._sync(r)
        r.rate = 0.0
        r.version += 1
        r.stopped_s = self.now
        if r.intervals:
            r.intervals[-1][1] = self.now
        r.run = None
        r.blocked_until = 0.0
        if why != "finish":
            t0 = time.perf_counter()
            r.done = min(self.progress.resume(r, r.done), r.done)
            self.timing["progress_s"] += time.perf_counter() - t0
        if why in ("preempt", "suspend"):
            r.preemptions += 1
            self.counts["preemptions"] += 1
            if why == "suspend":
                self.counts["suspensions"] += 1

    def _unkeep(self, r: JobRecord) -> None:
        """``r`` no longer runs: out of the kept list."""
        keep = self._keep
        if keep is None:
            return
        try:
            i = keep.index(r)          # records compare by identity
        except ValueError:             # held when it started: never kept
            return
        self._keep_changed()
        del keep[i], self._keep_ids[i]

    def _recap(self, r: JobRecord, p: Placement | None) -> None:
        """Running job ``r`` holds its GPUs with other shares (GPU memory or
        compute caps): no restart, no move; its rate (and its neighbours')
        is asked again."""
        if p is None or r.run is None or not r.running:
            return
        self._unindex(r)
        self._settle(r)
        r.run = replace(self._run_of(r, p, r.run.cause), since_s=r.run.since_s)
        self._index(r)
        self._set_rate(r, force=True)

    def _index(self, r: JobRecord) -> None:
        run = r.run
        assert run is not None
        if r.id in self._indexed:
            return
        p = run.placement
        held = self._indexed[r.id] = (run.gpus * run.milli, p.total_cpu if p else 0,
                                      p.total_mem if p else 0)
        self._held_milli += held[0]
        self._cpu_held += held[1]
        self._mem_held += held[2]
        touched = set()
        for g in run.gpu_names:
            s = self._gpu_jobs.setdefault(g, set())
            touched |= s
            s.add(r.id)
        if touched:
            self._recolocate(touched | {r.id})

    def _unindex(self, r: JobRecord) -> None:
        run = r.run
        if run is None:
            return
        held = self._indexed.pop(r.id, None)
        if held is None:
            return
        self._held_milli -= held[0]
        self._cpu_held -= held[1]
        self._mem_held -= held[2]
        touched = set()
        for g in run.gpu_names:
            s = self._gpu_jobs.get(g)
            if s is None:
                continue
            s.discard(r.id)
            touched |= s
            if not s:
                del self._gpu_jobs[g]
        touched.discard(r.id)
        if touched:
            self._recolocate(touched)

    def _recolocate(self, ids: set[str]) -> None:
        for jid in ids:
            o = self.records.get(jid)
            if o is None or o.run is None:
                continue
            near = set()
            for g in o.run.gpu_names:
                near |= self._gpu_jobs.get(g, set())
            near.discard(jid)
            col = tuple(sorted(near))
            if col != o.run.colocated:
                o.run = replace(o.run, colocated=col)
                if o.rate >= 0:
                    self._set_rate(o)

    def _waits(self, r: JobRecord) -> bool:
        """``r`` waits in the queue: active, admitted, not held, not running."""
        return (not r.running and r.admitted and not r.held and _sized(r)
                and self.records.get(r.id) is r)

    def _pooled(self, r: JobRecord) -> bool:
        """``r`` is in the round's pool: active, admitted, not held, not sized out."""
        return r.admitted and not r.held and _sized(r) and self.records.get(r.id) is r

    def _touch(self, r: JobRecord) -> None:
        if self._queue is not None:
            self._queue.touch(r)
        if r.running and self._keep is not None:
            self._rekeep()

    def _rekeep(self) -> None:
        """A kept job may have changed: the kept list is built again at the next round."""
        if self._keep is not None:
            self._keep_changed()
            self._keep = None

    def _keep_changed(self) -> None:
        """The kept list changes otherwise than by an append: the last step's
        candidates are written out in full first, if they were not yet."""
        m = self._last_keep
        if m is not None and self._last_full is None and m[0] == self._keep_epoch:
            self._last_full = self._keep_ids[:m[1]] + m[2]
        self._keep_epoch += 1

    def _sync(self, r: JobRecord) -> None:
        """Keep ``_parked`` (the jobs in the session that do not run: keep-fit
        rounds only) up to date."""
        if not self._keep_fit:
            return
        if r.in_session and not r.running and self.records.get(r.id) is r:
            self._parked[r.id] = r
        else:
            self._parked.pop(r.id, None)

    # ------------------------------------------------------------ session
    def _session_job(self, r: JobRecord) -> Job:
        t0 = time.perf_counter()
        fields = dict(self.progress.job_fields(r, r.gpus))
        self.timing["progress_s"] += time.perf_counter() - t0
        frac = r.milli / 1000.0
        fields.setdefault("cpu", int(self._cpu_per_gpu * r.gpus * frac))
        fields.setdefault("mem", int(self._mem_per_gpu * r.gpus * frac))
        fields.update(r.fields)
        if isinstance(fields.get("gpu_types"), (list, str)):
            gt = fields["gpu_types"]
            fields["gpu_types"] = (gt,) if isinstance(gt, str) else tuple(gt)
        if r.gpu_type is not None:
            fields["gpu_types"] = (r.gpu_type,)
        prio = max(-1000, min(1000, int(fields.pop("priority", r.priority))))
        try:
            return Job(r.id, r.gpus, gpu_milli=r.milli, priority=prio, **fields)
        except TypeError as exc:
            raise InputError(f"job {r.id!r}: {exc}") from None

    def _submit(self, r: JobRecord) -> None:
        self.session.submit(self._session_job(r), where=f"job {r.id!r}")
        r.in_session = True
        if self._keep_fit:
            self._sync(r)

    def _remove(self, r: JobRecord) -> None:
        if r.in_session:
            self.session.stop(r.id)
            r.in_session = False
            if self._keep_fit:
                self._sync(r)
            if r.running:
                self._stopped.add(r.id)      # its run ends with the round (`_apply`)

    # ------------------------------------------------------------- rounds
    def _rank(self, pool: list[JobRecord], ctx: Context) -> list[JobRecord]:
        if self._queue is not None:           # a static key order: kept sorted
            return self._call(self.order, self._queue.rank, pool, ctx)
        ranked = self._call(self.order, self.order.obj.rank, pool, ctx)
        recs = self.records
        try:
            out = [recs[j] for j in ranked]
        except (KeyError, TypeError):
            raise PolicyError(f"{self.order.label} at round {self.round_no} (t={self.now:g} s): "
                              f"ranked an id that is not an active job") from None
        if len(out) != len(pool) or len({r.id for r in out}) != len(pool):
            raise PolicyError(f"{self.order.label} at round {self.round_no} (t={self.now:g} s): "
                              f"expected every job once, got {len(out)} ids for {len(pool)} jobs")
        return out

    def _kept(self) -> list[JobRecord]:
        """A keep-fit round's running jobs (those not held, in start order):
        the list kept up to date (built again after a change it cannot follow)."""
        keep = self._keep
        if keep is None:
            keep = self._keep = [r for r in self._running.values() if not r.held and _sized(r)]
            self._keep_ids = [_cand_key(r) for r in keep]
        return keep

    def _same_cands(self, picks: list[tuple]) -> bool:
        """The kept jobs then ``picks`` are the last step's candidates (the
        same keys in the same order), told from what changed since: while the
        kept list only grew, the jobs appended since then ``picks`` are the
        last step's other candidates."""
        m = self._last_keep
        if m is not None and m[0] == self._keep_epoch:
            return self._keep_ids[m[1]:] + picks == m[2]
        return self._keep_ids + picks == self._last_full

    def _kept_milli(self, kept: list[JobRecord]) -> int:
        """Milli-GPU the ``kept`` jobs hold (every running job's when all are kept)."""
        if len(kept) == self._running_n:
            return self._held_milli
        return sum(r.run.gpus * r.run.milli for r in kept if r.run is not None)

    def _fit(self, ranked: Iterable[JobRecord], budget: int) -> list[JobRecord]:
        """The waiting jobs of ``ranked`` (an iterator, read as far as needed)
        whose GPUs fit ``budget`` milli-GPU, in order, each taking its share
        of it; a job that asks for no GPU always fits."""
        out: list[JobRecord] = []
        take = out.append
        if self._cpu_only > 0:
            for r in ranked:
                need = r.gpus * r.milli
                if need <= budget or need == 0:
                    take(r)
                    budget -= need
        elif budget > 0:                     # every job asks for GPUs: stop once they are gone
            for r in ranked:
                need = r.gpus * r.milli
                if need <= budget:
                    take(r)
                    budget -= need
                    if budget <= 0:
                        break
        return out

    def _session_keep_fit(self, cands: list[JobRecord], kept: list[JobRecord],
                          back: list[JobRecord]) -> None:
        """The session's jobs for a keep-fit round: the waiting ones that are
        no candidate leave it, the candidates (``back``, kept jobs stopped
        just now, then ``cands``) join it; the order ranks ``kept`` then
        ``cands``, the kept jobs that run left out when the session may
        neither stop nor move a running job (their rank then changes
        nothing: they stay; and an order once given is not given again for
        one waiting candidate or none)."""
        sess = self.session
        pending = back + cands if back else cands
        want = {r.id for r in pending}
        for r in [x for x in self._parked.values() if x.id not in want]:
            self._remove(r)
        for r in pending:
            if not r.in_session:
                self._submit(r)
        if sess.max_moves == 0 and sess.preempt_rule is None and not sess.cluster.tenants:
            if len(pending) > 1 or sess.order is None:
                sess.set_order([r.id for r in pending])
        else:
            sess.set_order([r.id for r in kept] + [r.id for r in cands])

    def _pick(self, ranked: Iterable[JobRecord], running: list[JobRecord]) -> list[JobRecord]:
        """The round's candidates among the ranked jobs (an iterator, read as
        far as needed): ``"all"``, or the ranked jobs whose GPUs fit what the
        round can give, skipping those that do not (running jobs that keep
        their GPUs come first and count against it when the order cannot
        preempt them)."""
        if self.candidates == "all":
            return list(ranked)
        budget = self.total_milli
        if self.preempt is None and not self.repack:      # running jobs keep their GPUs
            budget -= sum(r.run.gpus * r.run.milli for r in running if r.run is not None)
            return list(running) + self._fit((r for r in ranked if not r.running), budget)
        out = self._fit(ranked, budget)
        if not self.repack:                   # running jobs stay in the session
            inside = {r.id for r in out}
            out += [r for r in running if r.id not in inside]
        return out

    def _apply_sizes(self, sizes: Mapping[str, Size]) -> None:
        for jid, size in sizes.items():
            r = self.records.get(jid)
            if r is None:
                raise PolicyError(f"{self.sizing.label if self.sizing else 'sizing'} at round "
                                  f"{self.round_no}: sized {jid!r}, not an active job")
            if not isinstance(size, Size):
                raise PolicyError(f"{self.sizing.label if self.sizing else 'sizing'} at round "
                                  f"{self.round_no}: expected a Size for {jid!r}, got {size!r}")
            self._resize(r, size)

    def _resize(self, r: JobRecord, size: Size) -> None:
        same = size.gpus == r.gpus and size.gpu_type == r.gpu_type
        r.size = size
        if same:
            return
        self._dirty = True
        self._touch(r)
        if r.running:
            self._end(r, "resize")
            self.counts["resizes"] += 1
        self._remove(r)
        r.gpus, r.gpu_type = size.gpus, size.gpu_type

    def _close_round(self) -> None:
        """The last round's allocated GPU, CPU and memory fractions,
        time-weighted over ``round_s`` (rounds only)."""
        if self._round_open is None or not self.round_s:
            return
        t0, g0, c0, m0 = self._round_open
        R, tot = self.round_s, self._totals
        self.round_util.append((t0, (self._util_area - g0) / (tot[0] * R),
                                (self._cpu_area - c0) / (tot[1] * R),
                                (self._mem_area - m0) / (tot[2] * R)))
        self._round_open = None

    def round(self) -> None:
        """One decision at ``now`` (see the module notes)."""
        self._close_round()
        if self.round_s:
            self._round_open = (self.now, self._util_area, self._cpu_area, self._mem_area)
        self.round_no += 1
        self._stopped = set()
        for m in self._hooks["before_round"]:
            self._call(m, m.obj.before_round, self._control)
        ctx = self.context()
        if self.admission is not None:
            adm = self.admission
            for r in self.records.values():
                if not r.admitted:
                    why = self._call(adm, adm.obj.admit, r, ctx)
                    r.admitted, r.reason = why is None, why
                    if r.admitted:
                        self._touch(r)
        if self.progress.dynamic:
            for r in list(self._running.values()):
                self._set_rate(r)
        if self._keep_fit and self._queue is not None and self.sizing is None \
                and self.shares is None:
            self._keep_fit_round(ctx)
        else:
            self._full_round(ctx)
        if self.shares is not None:
            from .sharing import note_runners
            note_runners(self)
        self._dirty = self._happened = False
        for m in self._after_round:
            self._call(m, m.obj.after_round, self._result, self._control)
        self._result = None
        self.samples.append((self.now, self._held_milli / self._max_milli,
                             self._active - self._running_n, self._running_n))

    def _full_round(self, ctx: Context) -> None:
        """A round's candidates from the whole pool, then its step (unless
        they are the last step's and nothing else changed)."""
        if self._quiet_last and self._quiet():
            self.skipped += 1
            return
        pairs: dict[str, str] = {}
        queue = self._queue
        if queue is not None and self.sizing is None and self.shares is None:
            # the running jobs (`_sized`, inline: every round), unless neither the
            # ranking (a frozen queue holds them) nor the pick (repacking) reads them
            running = [] if queue.frozen and self.repack else [
                r for r in self._running.values() if not r.held and (r.gpus > 0 or r.spec.gpus == 0)]
            merged = self._call(self.order, queue.ranked, running, ctx)
            cands = self._pick(map(_JOB, merged), running)
        else:
            pool = [r for r in self.records.values() if r.admitted]
            if self.sizing is not None:
                self._apply_sizes(self._call(self.sizing, self.sizing.obj.size, pool, ctx)
                                  or {})
            pool = [r for r in pool if not r.held and (r.gpus > 0 or r.spec.gpus == 0)]
            if self.shares is not None:
                from .sharing import share_round
                cands, pairs = share_round(self, pool, ctx)
            else:
                ranked = self._rank(pool, ctx)
                cands = self._pick(iter(ranked), [r for r in ranked if r.running])
        for m in self._hooks["before_step"]:
            self._call(m, m.obj.before_step, self._control)
        if self.mechanisms:        # a job a mechanism held just now is no candidate
            cands = [r for r in cands if not r.held]
        # the candidates' keys (`_cand_key`); without shares or sizing a job's
        # GPUs and share change only with `_dirty`, so the records themselves do
        ids = cands if not pairs and self.shares is None and self.sizing is None else \
            [(r.id, r.gpus, r.gpu_type, r.milli) for r in cands]
        if not self._dirty and ids == self._last_cands and not pairs:
            self.skipped += 1
            self._quiet_last = True
        else:
            self._quiet_last = False
            self._step(cands, pairs)
            self._last_cands = ids

    def _quiet(self) -> bool:
        """Nothing since the last round (skipped: its candidates were the last
        step's) can change the candidates: no job arrived, finished, changed
        size or was touched by a mechanism, timer or server event; the order's
        keys never change (a frozen queue: the ranking is the one kept sorted)
        and no waiting job started starving; no policy that reads the round
        (sizing, shares, mechanisms, a hook before the step) takes part."""
        q = self._queue
        return (not self._dirty and not self._happened and q is not None and q.frozen
                and not q.touched and not (q.starve and q.starve[0][0] < self.now)
                and self.sizing is None and self.shares is None and not self.mechanisms
                and not self._hooks["before_step"])

    def _keep_fit_round(self, ctx: Context) -> None:
        """`_full_round` when running jobs keep their GPUs and the candidates
        are the ranked jobs that fit (module notes): the kept jobs, then the
        waiting ones that fit what they leave; its cost follows what changed."""
        kept = self._kept()
        epoch, n_kept = self._keep_epoch, len(kept)
        snap = (list(kept), list(self._keep_ids)) if self._acts_before else None
        queue = self._queue
        assert queue is not None
        merged = self._call(self.order, queue.ranked, (), ctx)
        cands = self._fit(map(_JOB, merged), self.total_milli - self._kept_milli(kept))
        for m in self._hooks["before_step"]:
            self._call(m, m.obj.before_step, self._control)
        if self.mechanisms:
            cands = [r for r in cands if not r.held]
        picks = [_cand_key(r) for r in cands]
        if snap is not None and (self._keep is not kept or self._keep_epoch != epoch
                                 or len(kept) != n_kept):
            # a mechanism stopped or changed a kept job: the candidates as they
            # were, less those held now, against the last step's in full
            mk = self._last_keep
            last = snap[1][:mk[1]] + mk[2] if mk is not None and mk[0] == epoch \
                else self._last_full
            kept = [r for r in snap[0] if not r.held]
            ids = [_cand_key(r) for r in kept] + picks
            same, mark, full = ids == last, None, ids
            back = [r for r in kept if not r.running]     # stopped now: candidates again
        else:
            same = self._same_cands(picks)
            mark, full, back = (self._keep_epoch, len(kept), picks), None, []
        if not self._dirty and same:
            self.skipped += 1
        else:
            self._last_keep, self._last_full = mark, full
            self._step(cands, {}, (kept, back))

    def _step(self, cands: list[JobRecord], pairs: Mapping[str, str],
              kept: tuple[list[JobRecord], list[JobRecord]] | None = None) -> None:
        """One session round over ``cands`` (after ``kept``: a keep-fit
        round's kept jobs, and those of them a mechanism stopped just now)."""
        t0 = time.perf_counter()
        sess = self.session
        was: Mapping[str, JobRecord] = {}
        if kept is not None:
            self._session_keep_fit(cands, *kept)
        else:
            recs = self.records
            if self.repack:
                was = dict(self._running)          # the running jobs, as the round began
                if was and not self.moving:
                    sess.reconcile([])
            want = {r.id for r in cands}
            for jid in [j for j in sess.jobs if j not in want]:
                r = recs.get(jid)
                if r is not None and r.in_session and (self.repack or not r.running):
                    self._remove(r)
            for r in cands:
                if not r.in_session:
                    self._submit(r)
            sess.set_order([r.id for r in cands])
        t1 = time.perf_counter()
        res = sess.step()
        t2 = time.perf_counter()
        self.steps += 1
        if pairs:
            from .sharing import place_pairs
            res = place_pairs(self, res, pairs)
        self._apply(res, was)
        self._result = res
        t3 = time.perf_counter()
        self.timing["session_s"] += (t1 - t0) + (t3 - t2)
        self.timing["step_s"] += t2 - t1
        for m in self._hooks["after_step"]:
            self._call(m, m.obj.after_step, res, self._control)

    def _apply(self, res: Any, was: Mapping[str, JobRecord]) -> None:
        """Charge a round's result: stops first, then moves and starts (so
        that the GPUs' co-location index sees each GPU's final holders);
        ``was``: the jobs that ran as a repacking round began, by id."""
        recs = self.records
        placed = {p.job for p in res.start} | {p.job for p in res.move}
        for p in res.preempt:
            self._end(recs[p.job], "preempt")
        gone = [r for jid in (was.keys() - placed) if (r := was[jid]).running
                and (not self.moving or jid in self._stopped)]
        for r in sorted(gone, key=_INDEX) if len(gone) > 1 else gone:   # in arrival order
            self._end(r, "preempt")
        changes = [(recs[p.job], p, "migrate") for p in res.move]
        for p in res.start:
            r = recs[p.job]
            old = r.run.placement if r.running and r.id in was and r.run is not None else None
            if old is not None:
                if p.same_as(old) or (p.throughput == old.throughput and
                                      {g.gpu for g in p.gpus} == {g.gpu for g in old.gpus}):
                    continue                      # the same GPUs at the same speed: it runs on
                changes.append((r, p, "migrate"))
            else:
                changes.append((r, p, "start"))
        for r, _, _ in changes:
            if r.running:
                self._unindex(r)
        for r, p, cause in changes:
            if cause == "migrate":
                r.moves += 1
                self.counts["moves"] += 1
            self._begin(r, p, cause)
        for jid in res.allocation.stats.get("resized") or ():   # caps changed in place
            rec = recs.get(jid)
            if rec is not None and rec.running and rec.id not in placed:
                self._recap(rec, res.allocation.placement(jid))

    # ------------------------------------------------------------- events
    def _arrive(self, spec: WorkloadJob, index: int) -> None:
        if spec.id in self.records or spec.id in self._gone:
            raise InputError(f"workload row {index + 1}: job {spec.id!r}: id: duplicate id")
        prog = self.progress
        try:
            work = float(prog.work(spec))
            alone = prog.alone_s(spec)
        except InputError as exc:
            raise InputError(f"workload row {index + 1}: {exc}") from None
        if not (work > 0 and math.isfinite(work)):
            raise InputError(f"workload row {index + 1}: job {spec.id!r}: work: expected a "
                             f"number > 0, got {work!r}")
        if alone is None and self._needs_duration is not None:
            raise InputError(f"workload row {index + 1}: job {spec.id!r}: "
                             f"{self._needs_duration.label} needs duration (each job's run "
                             f"time alone), which this job does not give")
        r = JobRecord(spec, index, work, alone, self)
        self.records[spec.id] = r
        self._active += 1
        r.area0 = self._active_area
        if self._first_arrival is None:
            self._first_arrival = self.now
        self._cpu_only += spec.gpus == 0
        if self.admission is None:
            r.admitted = True
            self._touch(r)
        if spec.gpus * 1000 > self._max_milli:
            raise InputError(f"workload row {index + 1}: job {spec.id!r}: gpus: wants "
                             f"{spec.gpus} GPUs, the cluster has {self._max_milli // 1000}")
        self._happened = True
        if self._hooks["on_event"]:
            self._event(Event("arrival", self.now, job=spec.id))

    def _drop(self, r: JobRecord, reason: str) -> None:
        """``r`` leaves the run unfinished (`_Control.drop`)."""
        if r.running:
            self._end(r, "drop")
        if r.in_session:
            self.session.stop(r.id)
            r.in_session = False
        self._leave(r)
        r.dropped = reason
        self.dropped.append(r)
        self.counts["dropped"] += 1
        self._dirty = True

    def _leave(self, r: JobRecord) -> None:
        """``r`` (out of the session) is no longer active: finished or dropped."""
        del self.records[r.id]
        self._sync(r)
        self._cpu_only -= r.spec.gpus == 0
        self._touch(r)
        self._gone.add(r.id)
        self._active -= 1
        if self._measured(r.index):
            self._left -= 1

    def _finish(self, jid: str, version: int) -> None:
        r = self.records.get(jid)
        if r is None or r.version != version or not r.running:
            return
        last = getattr(self.progress, "finished", None)
        if last is not None and r.run is not None:  # the last stretch, to the model
            t0 = time.perf_counter()
            last(r, r.run, self.now)
            self.timing["progress_s"] += time.perf_counter() - t0
        r.done = r.work
        r.t_mark = self.now
        self._end(r, "finish")
        r.finish_s = self.now
        if r.in_session:
            self.session.finish(jid)
            r.in_session = False
        self._leave(r)
        r.area0 = (self._active_area - r.area0) / (self.now - r.arrival_s) \
            if self.now > r.arrival_s else 1.0
        self.finished.append(r)
        if self.shares is not None:
            self._finished_by_id[jid] = r
        self._happened = True
        self._event(Event("finish", self.now, job=jid))

    def _server_event(self, ev: ServerEvent) -> None:
        sess = self.session
        try:
            if ev.kind == "fail":
                lost = sess.fail_server(ev.server, where=f"server event at {ev.at_s:g} s")
                for jid in lost:
                    r = self.records[jid]
                    self._end(r, "fail")
                    self.counts["failures"] += 1
            elif ev.kind == "drain":
                sess.drain_server(ev.server, where=f"server event at {ev.at_s:g} s")
            elif ev.kind == "undrain":
                sess.undrain_server(ev.server, where=f"server event at {ev.at_s:g} s")
            else:
                server = self._servers.get(ev.server)
                if server is None:
                    raise InputError(f"server event at {ev.at_s:g} s: unknown server "
                                     f"{ev.server!r}")
                sess.add_server(server, where=f"server event at {ev.at_s:g} s")
        except InputError as exc:
            raise InputError(str(exc)) from None
        self._total_milli = None
        self._dirty = True
        self._event(Event(ev.kind if ev.kind != "restore" else "restore", self.now,
                          server=ev.server))

    def _event(self, ev: Event) -> None:
        for m in self._hooks["on_event"]:
            self._call(m, m.obj.on_event, ev, self._control)

    def _measured(self, index: int) -> bool:
        w = self.window
        return w is None or w[0] <= index <= w[1]

    # ---------------------------------------------------------------- run
    def run(self) -> SimResult:
        """Simulate until the stop rule (module notes) holds.

        The cyclic garbage collector is held off for the run (`alloc.collector`:
        the simulator and the session leave no reference cycles behind), unless
        the placement solver is exact (its models may).

        Returns
        -------
        SimResult
        """
        from ..collector import paused
        from ..registry import get_solver
        with paused(not get_solver(self.place.obj).exact):
            return self._run()

    def _run(self) -> SimResult:
        wall0 = time.perf_counter()
        self._gone: set[str] = set()
        self._max_milli = max(self.total_milli, 0)
        sv = self.cluster0.servers
        self._totals = (max(self._max_milli, 1), max(sum(x.cpu for x in sv), 1),
                        max(sum(x.mem for x in sv), 1))
        R = self.round_s
        src = iter(self._jobs_src)
        index = 0
        nxt = next(src, None)
        if self.window is not None:
            a, b = self.window
            n = len(self._jobs_src) if self.finite else b + 1  # type: ignore[arg-type]
            self._left = max(0, min(b, n - 1) - a + 1)
        else:
            self._left = len(self._jobs_src)  # type: ignore[arg-type]
        for ev in self.events:
            self._push(float(ev.at_s), _SERVER, "server", ev)
        for m in self.mechanisms:
            self._call(m, m.obj.start, self._control)
        stop_at = math.inf
        if self.max_time_s is not None:
            stop_at = math.ceil(self.max_time_s / R) * R if R else float(self.max_time_s)
        next_round: float | None = None
        last_arrival = -math.inf
        end = 0.0
        while self._left > 0:
            self._clean()
            cands = []
            if self.heap:
                cands.append(self.heap[0][0])
            if nxt is not None:
                cands.append(float(nxt.arrival_s))
            if R is not None and next_round is not None:
                cands.append(next_round)
            if not cands:
                break
            t = min(cands)
            if t >= stop_at:
                end = stop_at
                break
            self._advance_to(t)
            end = t
            self._finishes(t)
            while self.heap and self.heap[0][0] <= t and self.heap[0][1] == _SERVER:
                self._server_event(heapq.heappop(self.heap)[4])
            while nxt is not None and nxt.arrival_s <= t:
                if not isinstance(nxt, WorkloadJob):
                    raise InputError(f"workload row {index + 1}: expected a WorkloadJob, got "
                                     f"{type(nxt).__name__}")
                if nxt.arrival_s < last_arrival:
                    raise InputError(f"workload row {index + 1}: job {nxt.id!r}: arrival_s: "
                                     f"expected arrivals in time order")
                last_arrival = nxt.arrival_s
                self._arrive(nxt, index)
                index += 1
                nxt = next(src, None)
            while self.heap and self.heap[0][0] <= t and self.heap[0][1] == _TIMER:
                _, _, _, kind, ev = heapq.heappop(self.heap)
                if kind == "timer":        # a quiet timer calls for no round by itself
                    self._dirty = True
                self._event(ev)
            # completions found by the events above at this very instant
            self._finishes(t)
            if R is None:
                if (self._happened or self._dirty or self._wants_decision) and self.records:
                    self._wants_decision = False
                    self.round()
            else:
                if next_round is None and self.records:
                    next_round = math.ceil(t / R) * R
                if next_round is not None and t >= next_round:
                    if self.records:
                        self.round()
                        next_round += R
                    else:
                        next_round = None
                elif self._wants_decision and self.records:
                    self._wants_decision = False
                    self.round()
            if nxt is None and not self.records:
                break
        self._advance_to(max(end, self.now))
        self._close_round()
        self.unfinished = list(self.records.values())
        for r in self.unfinished:
            if r.running:
                self._settle(r)
        return SimResult.build(self, end, time.perf_counter() - wall0)


    def _finishes(self, t: float) -> None:
        """Every completion due at ``t`` (within its float-noise tolerance)."""
        heap = self.heap
        while heap and heap[0][1] == _FINISH and heap[0][0] - heap[0][4][2] <= t:
            _, _, _, _, (jid, ver, _) = heapq.heappop(heap)
            self._finish(jid, ver)
            self._clean()

    def _clean(self) -> None:
        """Drop stale completions from the top of the heap."""
        heap, recs = self.heap, self.records
        while heap and heap[0][1] == _FINISH:
            jid, ver, _ = heap[0][4]
            r = recs.get(jid)
            if r is not None and r.version == ver and r.running:
                return
            heapq.heappop(heap)


class _Control:
    """The `alloc.sched.kinds.Control` a run gives its mechanisms."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    @property
    def now_s(self) -> float:
        return self._sim.now

    @property
    def ctx(self) -> Context:
        return self._sim.context()

    @property
    def jobs(self) -> Mapping[str, JobRecord]:
        return MappingProxyType(self._sim.records)

    @property
    def cluster(self) -> Cluster:
        return self._sim.session.cluster

    @property
    def closed(self) -> frozenset[str]:
        return self._sim.session.closed

    @property
    def session(self):
        """The run's session (read it; act through the methods here)."""
        return self._sim.session

    def _rec(self, job_id: str, where: str) -> JobRecord:
        r = self._sim.records.get(job_id)
        if r is None:
            raise InputError(f"{where}: unknown job {job_id!r} (not active)")
        return r

    def timer(self, at_s: float, tag: Any = None, *, round: bool = True) -> None:
        sim = self._sim
        if not (isinstance(at_s, (int, float)) and at_s >= sim.now):
            raise InputError(f"timer: expected a time >= now ({sim.now:g}), got {at_s!r}")
        sim._push(float(at_s), _TIMER, "timer" if round else "quiet-timer",
                  Event("timer", float(at_s), tag=tag))

    def suspend(self, job_id: str, *, hold: bool = True, milli: int | None = None) -> None:
        sim = self._sim
        r = self._rec(job_id, "suspend")
        if milli is not None and (isinstance(milli, bool) or not isinstance(milli, int)
                                  or not 1 <= milli <= 1000):
            raise InputError(f"suspend {job_id!r}: milli: expected an integer in 1..1000, "
                             f"got {milli!r}")
        if r.running:
            sim._end(r, "suspend")
            sim.session.stop(job_id, requeue=True)
        if milli is not None and milli != r.milli:   # it waits for that share now
            r.milli = milli
            sim._remove(r)
        r.held = bool(hold)
        sim._touch(r)
        sim._dirty = True

    def resume(self, job_id: str) -> None:
        r = self._rec(job_id, "resume")
        if r.held:
            r.held = False
            self._sim._touch(r)
            self._sim._dirty = True

    def _open(self, r: JobRecord, servers: Iterable[str], where: str) -> None:
        """Refuse a server closed to new placements (drained or failed) that
        ``r`` does not run on already: a drain lets what runs there run on,
        and nothing else start or move there."""
        closed = self.closed
        if not closed:
            return
        held = {server_of(g) for g in r.run.gpu_names} if r.run is not None else set()
        for sid in servers:
            if sid in closed and sid not in held:
                state = "failed" if sid in self._sim.session.failed else "drained"
                raise InputError(f"{where}: server {sid!r} is {state}: it takes no new "
                                 f"placements")

    def place(self, job_id: str, gpus: Sequence[Any], *, milli: int | None = None) -> None:
        sim = self._sim
        r = self._rec(job_id, "place")
        shares = tuple(gpus) if gpus and all(isinstance(g, GpuShare) for g in gpus) else None
        gpus = [g.gpu for g in shares] if shares is not None else list(gpus)
        self._open(r, (server_of(str(g)) for g in gpus), f"place {job_id!r}")
        if milli is not None and (isinstance(milli, bool) or not isinstance(milli, int)
                                  or not 1 <= milli <= 1000):
            raise InputError(f"place {job_id!r}: milli: expected an integer in 1..1000, "
                             f"got {milli!r}")
        old = r.run.gpu_names if r.run is not None else None
        if (milli is not None and milli != r.milli) or len(gpus) != r.gpus:
            r.gpus = len(gpus)
            if milli is not None:
                r.milli = milli
            if r.in_session:
                sim.session.stop(job_id)
                r.in_session = False
        if not r.in_session:
            sim._submit(r)
        where: Any = gpus if shares is None else \
            replace(sim.session.placement(job_id, gpus, where=f"place {job_id!r}"), gpus=shares)
        sim.session.reconcile({job_id: where}, stopped=(), where=f"place {job_id!r}")
        p = sim.session.jobs[job_id].current
        if old is None:
            sim._begin(r, p, "resume" if r.start_s is not None else "start")
        elif set(old) != set(gpus):
            r.moves += 1
            sim.counts["moves"] += 1
            sim._begin(r, p, "migrate")
        else:                                   # a new share of the same GPUs
            sim._unindex(r)
            sim._settle(r)
            r.run = replace(sim._run_of(r, p, r.run.cause if r.run else "start"),
                            since_s=r.run.since_s if r.run else sim.now)
            sim._index(r)
            sim._set_rate(r, force=True)
        r.held = False
        if r.running:
            sim._rekeep()
        sim._dirty = True

    def reshare(self, job_id: str, shares: Sequence[GpuShare]) -> None:
        sim = self._sim
        r = self._rec(job_id, "reshare")
        old = r.run.placement if r.run is not None else None
        if not r.running or old is None:
            raise InputError(f"reshare: job {job_id!r} is not running")
        shares = tuple(shares)
        if sorted(g.gpu for g in shares) != sorted(g.gpu for g in old.gpus):
            raise InputError(f"reshare {job_id!r}: expected shares of the GPUs it holds "
                             f"({', '.join(g.gpu for g in old.gpus)})")
        sim.session.reconcile({job_id: replace(old, gpus=shares)}, stopped=[],
                              where=f"reshare {job_id!r}")
        sim._recap(r, sim.session.jobs[job_id].current)
        sim._dirty = True

    def migrate(self, job_id: str, gpus: Sequence[str] | Placement) -> None:
        sim = self._sim
        r = self._rec(job_id, "migrate")
        if not r.running:
            raise InputError(f"migrate: job {job_id!r} is not running")
        where = gpus if isinstance(gpus, Placement) else list(gpus)
        self._open(r, (server_of(str(getattr(g, "gpu", g))) for g in where)
                   if isinstance(where, list)
                   else [*(server_of(g.gpu) for g in where.gpus), *where.cpu],
                   f"migrate {job_id!r}")
        sim.session.reconcile({job_id: where}, stopped=(), where=f"migrate {job_id!r}")
        p = sim.session.jobs[job_id].current
        r.moves += 1
        sim.counts["moves"] += 1
        sim._begin(r, p, "migrate")
        sim._dirty = True

    def resize(self, job_id: str, size: Size) -> None:
        self._sim._resize(self._rec(job_id, "resize"), size)
        self._sim._dirty = True

    def set_fields(self, job_id: str, **fields: Any) -> None:
        sim = self._sim
        r = self._rec(job_id, "set_fields")
        bad = sorted(set(fields) - set(JOB_FIELDS) - {"priority"})
        if bad:
            raise InputError(f"set_fields: {bad[0]!r} is not a job field one may set; "
                             f"expected some of priority, {', '.join(JOB_FIELDS)}")
        new = {**r.fields, **fields}
        if new == r.fields:
            return
        if r.running:
            raise InputError(f"set_fields: job {job_id!r} is running (fields change while "
                             f"it waits)")
        r.fields = new
        if "priority" in fields:
            r.priority = int(fields["priority"])
        sim._remove(r)
        sim._touch(r)
        sim._dirty = True

    def placement(self, job_id: str):
        r = self._sim.records.get(job_id)
        return r.run.placement if r is not None and r.run is not None else None

    def free_gpus(self) -> Mapping[str, int]:
        sim = self._sim
        cl = sim.session.cluster
        closed = self.closed
        used: dict[str, int] = {}
        for r in sim.records.values():
            if r.run is not None and r.run.placement is not None:
                for g in r.run.placement.gpus:
                    used[g.gpu] = used.get(g.gpu, 0) + g.milli
        out = {}
        for s in cl.servers:
            if s.id in closed:
                continue
            for k in range(s.gpus):
                name = gpu_key(s.id, k)
                out[name] = 1000 - used.get(name, 0)
        return out

    def decide(self) -> None:
        self._sim._wants_decision = True

    def drop(self, job_id: str, reason: str) -> None:
        r = self._rec(job_id, "drop")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"drop {job_id!r}: reason: expected a non-empty string, "
                             f"got {reason!r}")
        self._sim._drop(r, reason)


def _acts(obj: Any, hook: str) -> bool:
    """``obj`` (a mechanism) has ``hook``, and not `BaseMechanism`'s no-op."""
    fn = getattr(obj, hook, None)
    return fn is not None and getattr(fn, "__func__", None) is not getattr(BaseMechanism, hook,
                                                                           None)


def _sized(r: JobRecord) -> bool:
    """``r`` has GPUs to run on, or asks for none (a sizing policy may give a
    GPU job 0 GPUs: it waits out the round)."""
    return r.gpus > 0 or r.spec.gpus == 0


def _cand_key(r: JobRecord) -> tuple:
    """What a round's candidate is to the session: id, GPUs, GPU type, share."""
    return (r.id, r.gpus, r.gpu_type, r.milli)


def _proportional(cluster: Cluster) -> tuple[float, float]:
    """CPU (milli-cores) and memory (MiB) per GPU: the smallest ratio over the
    servers with GPUs (so that a job's share fits every server)."""
    gs = [s for s in cluster.servers if s.gpus > 0]
    if not gs:
        return 0.0, 0.0
    return (min(s.cpu / s.gpus for s in gs), min(s.mem / s.gpus for s in gs))


def simulate(cluster: Cluster, jobs: Iterable[WorkloadJob], **kw: Any) -> SimResult:
    """Run one simulation: a cluster, a workload and a stack of policies.

    Parameters
    ----------
    cluster : Cluster
        Servers with GPUs (CPU in milli-cores, memory in MiB).
    jobs : iterable of WorkloadJob
        Sorted by arrival; a list, or an endless iterator with ``window``.
    **kw
        The stack (``order``, ``placement``, ``admission``, ``sizing``,
        ``shares``, ``mechanism``: names, ``(name, params)`` or objects),
        ``progress``, ``round_s``, ``seed``, ``window``, ``max_time_s``,
        ``repack``, ``candidates``, ``events``, ``time_limit``, ``name``: see
        `Simulator`.

    Returns
    -------
    SimResult
        Summary metrics (``summary()``) and the per-job timeline
        (``timeline()``).

    Raises
    ------
    InputError
        One line: a policy that is not registered or of another kind, a need
        the run cannot give, a bad workload row; `alloc.sched.PolicyError`
        when a policy raises during the run.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> from alloc.sim import WorkloadJob, simulate
    >>> cluster = Cluster((Server("s0", cpu=32000, mem=256000, gpus=4),))
    >>> jobs = [WorkloadJob("a", 0.0, 4, duration_s=100.0),
    ...         WorkloadJob("b", 10.0, 2, duration_s=50.0)]
    >>> res = simulate(cluster, jobs, order="fifo", placement="best-fit")
    >>> [(r["id"], r["start_s"], r["end_s"]) for r in res.timeline()]
    [('a', 0.0, 100.0), ('b', 100.0, 150.0)]
    >>> res.summary()["avg_jct_s"]
    120.0
    """
    return Simulator(cluster, jobs, **kw).run()


__all__ = ["SERVER_EVENTS", "ServerEvent", "Simulator", "simulate"]

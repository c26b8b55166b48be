r"""What each kind of scheduling policy is: the views it reads and what it returns.

A scheduler over time is a stack of policies, one slot per kind (after
Blox's split of a scheduler into admission, order and placement):

==============  ===============================================================
kind            decides
==============  ===============================================================
``admission``   which arrived jobs may enter the queue (`Admission`)
``order``       the ranking of the active jobs, highest first (`Order`)
``placement``   where the ranked jobs run: one of alloc's solvers, by name
``sizing``      elastic jobs' sizes: GPUs, GPU type, nodes, batch (`Sizing`)
``shares``      time fractions of each job on each GPU type (`Shares`)
``mechanism``   what happens over time beyond one round: time-slicing,
                migration, packing with undo, co-location, switching
==============  ===============================================================

Policies read jobs through `JobView` and the moment through `Context`; both
are read-only to them.  Their answers are plain data (ids, `Size`,
fractions), which the simulator (or an adapter) turns into a
[`Session`][alloc.session.Session] round: every decision a policy makes is
applied by ``Session.step`` and checked by ``violations()``.

Units: seconds, GPUs, GPU-seconds; a job's *work* is counted in seconds of
running alone on its requested GPUs (its ``duration_s``), unless its
progress model says otherwise (goodput: progress in M0-iterations).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..model import Cluster, frozen_map

#: The kinds of policy, with what each decides (`alloc policies` lists them).
KIND_MEANING: Mapping[str, str] = {
    "admission": "which arrived jobs may enter the queue",
    "order": "the ranking of the active jobs, highest first",
    "placement": "where the ranked jobs run (alloc's solvers)",
    "sizing": "elastic jobs' GPU counts, GPU types, nodes and batch sizes",
    "shares": "each job's fraction of time on each GPU type",
    "mechanism": "what happens over time beyond one round (time-slicing, migration, "
                 "packing, co-location, switching)",
}
#: The kind names, in the order of a stack's slots.
KINDS: tuple[str, ...] = tuple(KIND_MEANING)


@runtime_checkable
class JobView(Protocol):
    """One active job as a policy sees it (arrived, not finished).

    Attributes
    ----------
    id : str
        The job's id.
    arrival_s : float
        When it arrived (s).
    gpus : int
        GPUs it asks for now (its current size for an elastic job).
    model : str or None
        Its model's name.
    duration_s : float or None
        Run time alone on ``gpus`` GPUs (s): an oracle, None when the
        workload does not give it.
    remaining_s : float or None
        What is left of ``duration_s`` (s), None when unknown.
    attained_s : float
        Seconds it has held GPUs so far.
    attained_gpu_s : float
        GPU-seconds it has held so far (Tiresias' two-dimensional service).
    restarts : int
        Times it was started again after a preemption or a resize.
    running : bool
        It holds GPUs now.
    last_run_s : float
        When it last held GPUs (its arrival when it never has).
    priority : int
        The caller's priority (higher first; 0 by default).
    extra : mapping
        The workload's other columns (for example ``iterations``), read-only.
    min_gpus, max_gpus : int or None
        An elastic job's range of GPU counts (None: ``gpus`` only).
    """
    id: str
    arrival_s: float
    gpus: int
    model: str | None
    duration_s: float | None
    remaining_s: float | None
    attained_s: float
    attained_gpu_s: float
    restarts: int
    running: bool
    last_run_s: float
    priority: int
    extra: Mapping[str, Any]
    min_gpus: int | None
    max_gpus: int | None


@dataclass(frozen=True)
class Context:
    """The moment a policy decides at.

    Attributes
    ----------
    now_s : float
        Simulated (or wall) time, seconds.
    round : int
        Decisions made so far (1 for the first).
    cluster : Cluster
        The cluster as it is now (drained and failed servers included).
    jobs : mapping of str to JobView
        Every active job by id: running and waiting.
    rng : random.Random
        Seeded by the run's seed: the one source of randomness a policy may use.
    round_s : float or None
        Seconds to the next regular decision (None: event-driven).
    progress : object, optional
        The run's progress model (`alloc.sim.progress.Progress`), for the
        oracles it gives beyond `JobView` (a policy that declared the need
        reads, for example, ``ctx.progress.throughputs(job)``); None outside
        a simulation.
    closed : frozenset of str
        Servers of ``cluster`` that take no new placements (drained, or
        failed and kept): a job may run on there only if it runs there
        already.
    """
    now_s: float
    round: int
    cluster: Cluster
    jobs: Mapping[str, JobView] = field(default_factory=frozen_map)
    rng: random.Random = field(default_factory=lambda: random.Random(0), compare=False)
    round_s: float | None = None
    progress: Any = field(default=None, compare=False)
    closed: frozenset[str] = frozenset()

    @property
    def gpus_total(self) -> int:
        """GPUs of the cluster's servers."""
        return sum(s.gpus for s in self.cluster.servers)


@dataclass(frozen=True)
class Size:
    """What a sizing policy decides for one job.

    Attributes
    ----------
    gpus : int
        GPUs to run on (0: the job waits this round).
    gpu_type : str or None
        The GPU type to run on (None: any the job allows).
    nodes : int or None
        Servers to spread the GPUs over (None: the placement decides).
    batch : int or None
        Per-GPU batch size (goodput models; None: the job's own).
    accum : int
        Gradient-accumulation steps per update (0: none).

    Examples
    --------
    >>> from alloc.sched import Size
    >>> Size(4, gpu_type="T4", nodes=1).gpus
    4
    """
    gpus: int
    gpu_type: str | None = None
    nodes: int | None = None
    batch: int | None = None
    accum: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.gpus, int) or isinstance(self.gpus, bool) or self.gpus < 0:
            raise ValueError(f"Size.gpus: expected an integer >= 0, got {self.gpus!r}")
        if self.nodes is not None and (not isinstance(self.nodes, int) or self.nodes < 1):
            raise ValueError(f"Size.nodes: expected an integer >= 1 or None, got {self.nodes!r}")
        if self.accum < 0:
            raise ValueError(f"Size.accum: expected an integer >= 0, got {self.accum!r}")


class Admission(Protocol):
    """Decides which arrived jobs may enter the queue."""

    def admit(self, job: JobView, ctx: Context) -> str | None:
        """None to admit ``job``; else one line saying why it waits outside."""


class Order(Protocol):
    """Ranks the active jobs, highest first.

    Attributes
    ----------
    preemptive : bool
        True: a running job ranked below a waiting job that cannot otherwise
        be placed may be stopped for it (the core's ``preempt="order"``);
        False: running jobs keep running.
    """
    preemptive: bool

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """The ids of ``jobs``, highest first (every id once)."""


class KeyOrder:
    r"""An order given by a sort key (smallest first), the common case.

    Subclasses define ``key(job, ctx)``; ties go to the earlier arrival, then
    the lower id.  ``static`` declares that a waiting job's key does not
    change while it waits (it depends only on its own progress), so a
    simulator may keep the queue sorted incrementally; ``frozen`` that a
    job's key does not change while it runs either (it reads neither progress
    nor time: FIFO, priority), so a simulator keeps every job sorted.

    ``starvation_s`` (None: off) puts first every waiting job that has not
    held GPUs for more than that many seconds (since it last ran, or since it
    arrived), in the order's own key among themselves: the starvation rule of
    Synergy's schedulers (1000 h there).  A starving job's place is a
    function of the time, so a simulator re-keys it when it crosses the
    threshold (`starving_at`).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc.sched import Context, KeyOrder
    >>> from alloc import Cluster
    >>> class Fewest(KeyOrder):
    ...     def key(self, job, ctx):
    ...         return job.gpus
    >>> jobs = [J(id="a", gpus=4, arrival_s=0.0), J(id="b", gpus=1, arrival_s=5.0)]
    >>> Fewest().rank(jobs, Context(0.0, 1, Cluster(())))
    ['b', 'a']
    """
    preemptive: bool = True
    static: bool = False
    frozen: bool = False
    starvation_s: float | None = None

    def key(self, job: JobView, ctx: Context) -> Any:
        """The job's sort key (smallest runs first)."""
        raise NotImplementedError

    def full_key(self, job: JobView, ctx: Context) -> tuple:
        """``(not starving, key, arrival, id)``: the key `rank` sorts by."""
        starve = self.starvation_s
        ok = starve is None or job.running or ctx.now_s - job.last_run_s <= starve
        return (ok, self.key(job, ctx), job.arrival_s, job.id)

    def starving_at(self, job: JobView) -> float | None:
        """When a waiting job starts starving (None: never, or it runs)."""
        if self.starvation_s is None or job.running:
            return None
        return job.last_run_s + self.starvation_s

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """The ids sorted by (starving first, key, arrival, id)."""
        if self.starvation_s is not None:
            fk = self.full_key
            return [j.id for j in sorted(jobs, key=lambda j: fk(j, ctx))]
        key = self.key
        return [j.id for j in sorted(jobs, key=lambda j: (key(j, ctx), j.arrival_s, j.id))]


class Sizing(Protocol):
    """Decides elastic jobs' sizes each round."""

    def size(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Size]:
        """A `Size` for some of ``jobs`` (the others keep theirs)."""


class Shares(Protocol):
    """Decides each job's fraction of time on each GPU type."""

    def shares(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Mapping[str, float]]:
        """Job id -> GPU type -> fraction of wall-clock time in [0, 1]
        (a job's fractions sum to at most 1)."""


#: What an `Event` may be, with its meaning.
EVENT_KINDS: Mapping[str, str] = {
    "arrival": "a job arrived (``job``)",
    "finish": "a job's work is done (``job``); it has left the cluster",
    "fail": "a server failed (``server``); its jobs lost their GPUs",
    "drain": "a server takes no new placements (``server``)",
    "undrain": "a drained server is open again (``server``)",
    "restore": "a failed server is back (``server``)",
    "timer": "a timer a mechanism set fired (``tag``)",
}


@dataclass(frozen=True)
class Event:
    """Something that happened at one instant of a run, as a mechanism sees it.

    Attributes
    ----------
    kind : str
        One of `EVENT_KINDS`.
    at_s : float
        When (s).
    job : str or None
        The job concerned (arrival, finish).
    server : str or None
        The server concerned (fail, drain, undrain, restore).
    tag : object
        What the mechanism passed to `Control.timer` (timers only).

    Examples
    --------
    >>> from alloc.sched import Event
    >>> Event("timer", 60.0, tag="slice").kind
    'timer'
    """
    kind: str
    at_s: float
    job: str | None = None
    server: str | None = None
    tag: Any = None

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ValueError(f"Event.kind: expected one of {', '.join(EVENT_KINDS)}, "
                             f"got {self.kind!r}")


class Control(Protocol):
    r"""What a mechanism may read and do during a run (the simulator gives it).

    Every action is applied through the run's
    [`Session`][alloc.session.Session]: a suspension is the session's
    ``stop(requeue=True)``, a placement or a migration its ``reconcile``
    (checked against what the other running jobs hold), and the next round is
    ``Session.step`` (checked by ``violations()``).  A job a mechanism stops
    or moves is counted (``preemptions``, ``moves``) and pays its progress
    model's delay when it runs again.

    Attributes
    ----------
    now_s : float
        The instant (s).
    ctx : Context
        The moment as the policies see it.
    jobs : mapping of str to JobView
        Every active job (arrived, not finished), admitted or not.
    cluster : Cluster
        The cluster now (failed servers removed).
    closed : frozenset of str
        Its servers that take no new placements (`Context.closed`), read
        without building a `Context`.
    """
    now_s: float
    ctx: Context
    jobs: Mapping[str, JobView]
    cluster: Cluster
    closed: frozenset[str]

    def timer(self, at_s: float, tag: Any = None, *, round: bool = True) -> None:
        """Call the mechanism's ``on_event`` with ``Event("timer", at_s, tag=tag)``
        at ``at_s`` (>= now): slice boundaries, leases, profiling windows.
        With ``round=False`` the timer calls for no round by itself: one
        follows only if the mechanism acts (or asks, `decide`)."""

    def suspend(self, job_id: str, *, hold: bool = True, milli: int | None = None) -> None:
        """Stop a running job (it keeps its progress, as its progress model
        says) and, with ``hold``, keep it out of rounds until `resume`; with
        ``milli``, it waits for that share of each GPU from now on (a
        waiting job given ``milli`` only changes its share)."""

    def resume(self, job_id: str) -> None:
        """Let a held job be placed again (by the next round, or by `place`)."""

    def place(self, job_id: str, gpus: Sequence[Any], *, milli: int | None = None) -> None:
        """Run a job on ``gpus`` (the core's GPU names ``"<server>/gpu<k>"``)
        now, with ``milli`` milli-GPU of each (packing on a shared GPU; None:
        its share as it is).  A running job given the same GPUs keeps running
        with the new share (packing, or its undo); given other GPUs it moves.
        ``gpus`` may also be [`GpuShare`][alloc.model.GpuShare]s: the shares
        themselves (opportunistic ones, milli 0, with GPU memory and compute
        caps).  A server closed to new placements (``closed``) refuses
        a job that does not run there already (`InputError`)."""

    def migrate(self, job_id: str, gpus: Any) -> None:
        """Move a running job onto ``gpus`` (GPU names; or a
        [`Placement`][alloc.model.Placement], which a job without GPUs needs
        to name its server); it pays its migration delay.  A closed server
        refuses it, as `place` does."""

    def reshare(self, job_id: str, shares: Sequence[Any]) -> None:
        """Give a running job other shares of the GPUs it holds
        ([`GpuShare`][alloc.model.GpuShare]: milli, GPU memory and compute
        caps, as AntMan's coordinator moves an opportunistic job's): no
        restart, no move; its rate and its neighbours' are asked again."""

    def resize(self, job_id: str, size: Size) -> None:
        """Give a job another size (a running one restarts at it: counted)."""

    def set_fields(self, job_id: str, **fields: Any) -> None:
        """Give a waiting job other fields for the rounds to come: its
        ``priority``, ``tenant``, ``guaranteed`` (HiveD's guarantee),
        ``locality``, ``gpu_types``, ... (`alloc.sim.jobs.JOB_FIELDS`)."""

    def placement(self, job_id: str) -> Any:
        """Where a job runs (its [`Placement`][alloc.model.Placement]), None
        when it waits."""

    def free_gpus(self) -> Mapping[str, int]:
        """Free milli-GPU of every GPU of the open servers, by GPU name."""

    def decide(self) -> None:
        """Ask for a round at this instant (after the current events)."""

    def drop(self, job_id: str, reason: str) -> None:
        """Take a job out of the run unfinished (a job that fits nowhere, as a
        packing experiment drops it): it leaves the session (``stop``), frees
        what it held if it runs, and is reported as *dropped* with
        ``reason`` (one line): the summary's ``dropped`` count, its timeline
        row's ``dropped``."""


class Mechanism(Protocol):
    r"""What happens over time beyond one round: time-slicing, migration,
    packing with undo, co-location, switching.

    The simulator calls the hooks in this order: `start` once; at each
    instant, `on_event` for each event (finishes, server events, arrivals,
    then timers); at each round, `before_round` (first: it may change jobs'
    fields, holds and sizes before the policies look), `before_step` (after
    admission, sizing, shares and order have made the round's candidates)
    and `after_step` with the [`RoundResult`][alloc.session.RoundResult].  A hook acts through
    `Control`; what it returns is ignored.  `BaseMechanism` has a no-op for
    each hook, so that a mechanism writes only those it needs.

    One optional hook: ``after_round(result, ctl)``, called at the end of
    every round, after `after_step` when the round stepped, with its
    ``RoundResult``, or with None when the round was skipped (its candidates
    were those of the last step and nothing else changed) -- what a rule
    about every round's outcome needs (``drop-unplaced``,
    `alloc.sched.drop`).

    Two optional attributes, read once when the run is built: a mechanism's
    ``placement_options`` (a mapping) are added to the placement solver's
    options, held by reference (the mechanism may change their contents
    between rounds: Gandiva's jobs bound to a server), or those its method
    ``placement_options_for(solver)`` returns for the run's placement solver
    (by name: a mechanism that works with any placement); ``candidates = "all"``
    asks that every waiting job be offered to each round's placement (one
    that binds jobs it cannot place now).

    Examples
    --------
    A mechanism that suspends every running job for one second at each
    hour, then resumes it:

    >>> from alloc.sched import BaseMechanism
    >>> class Breather(BaseMechanism):
    ...     def start(self, ctl):
    ...         ctl.timer(3600.0, "pause")
    ...     def on_event(self, event, ctl):
    ...         if event.kind != "timer":
    ...             return
    ...         if event.tag == "pause":
    ...             for j in [j for j in ctl.jobs.values() if j.running]:
    ...                 ctl.suspend(j.id)
    ...             ctl.timer(event.at_s + 1.0, "resume")
    ...         else:
    ...             for j in ctl.jobs.values():
    ...                 ctl.resume(j.id)
    ...             ctl.decide()
    ...             ctl.timer(event.at_s + 3599.0, "pause")
    """

    def start(self, ctl: Control) -> None:
        """Once, before the first event."""

    def on_event(self, event: Event, ctl: Control) -> None:
        """Each event of the run, in time order."""

    def before_round(self, ctl: Control) -> None:
        """At the start of each round, before the policies."""

    def before_step(self, ctl: Control) -> None:
        """Before each round's ``Session.step``."""

    def after_step(self, result: Any, ctl: Control) -> None:
        """After each round, with its ``RoundResult``."""


class BaseMechanism:
    """A mechanism whose hooks do nothing (subclass it and write the ones you need)."""

    def start(self, ctl: Control) -> None:
        """Once, before the first event."""

    def on_event(self, event: Event, ctl: Control) -> None:
        """Each event of the run, in time order."""

    def before_round(self, ctl: Control) -> None:
        """At the start of each round, before the policies."""

    def before_step(self, ctl: Control) -> None:
        """Before each round's ``Session.step``."""

    def after_step(self, result: Any, ctl: Control) -> None:
        """After each round, with its ``RoundResult``."""


#: What a policy factory is: keyword parameters in, a policy object out.
Factory = Callable[..., Any]

__all__ = ["Admission", "BaseMechanism", "Context", "Control", "EVENT_KINDS", "Event", "Factory",
           "JobView", "KINDS", "KIND_MEANING", "KeyOrder", "Mechanism", "Order", "Shares", "Size",
           "Sizing"]

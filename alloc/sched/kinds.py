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
    """
    now_s: float
    round: int
    cluster: Cluster
    jobs: Mapping[str, JobView] = field(default_factory=frozen_map)
    rng: random.Random = field(default_factory=lambda: random.Random(0), compare=False)
    round_s: float | None = None

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
    """An order given by a sort key (smallest first), the common case.

    Subclasses define ``key(job, ctx)``; ties go to the earlier arrival, then
    the lower id.  ``static`` declares that a waiting job's key does not
    change while it waits (it depends only on its own progress), so a
    simulator may keep the queue sorted incrementally.

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

    def key(self, job: JobView, ctx: Context) -> Any:
        """The job's sort key (smallest runs first)."""
        raise NotImplementedError

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """The ids sorted by (key, arrival, id)."""
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


#: What a policy factory is: keyword parameters in, a policy object out.
Factory = Callable[..., Any]

__all__ = ["Admission", "Context", "Factory", "JobView", "KINDS", "KIND_MEANING", "KeyOrder",
           "Order", "Shares", "Size", "Sizing"]

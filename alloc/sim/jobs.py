"""The jobs of a simulation: what the workload gives (`WorkloadJob`) and
what the run keeps about each (`JobRecord`, the `alloc.sched.JobView` the
policies read)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, NoReturn

from ..errors import InputError
from ..model import frozen_map

if TYPE_CHECKING:  # pragma: no cover
    from ..sched.kinds import Size
    from .progress import Run


#: Fields of the session's `alloc.Job` a workload job (`WorkloadJob.fields`)
#: or a mechanism (`Control.set_fields`) may set.
JOB_FIELDS = ("cpu", "mem", "locality", "tenant", "guaranteed", "gpu_types", "gpu_mem",
              "gpu_compute", "gpu_mem_min", "weight")


@dataclass(frozen=True)
class WorkloadJob:
    """One job of a workload.

    Attributes
    ----------
    id : str
        Unique within the workload.
    arrival_s : float
        When it arrives (s, >= 0).
    gpus : int
        GPUs it asks for (>= 0; 0: a job that holds only CPU and memory,
        given in ``fields``).
    duration_s : float or None
        Its run time alone on ``gpus`` GPUs (s, > 0): the plain CSV's column.
        What "alone" means is the progress model's (Synergy: at the
        GPU-proportional CPU and memory).
    model : str or None
        Its model's name (a profile, a row of a throughput table).
    work : float or None
        Its work in the progress model's units, when not ``duration_s``
        (iterations, for example).
    priority : int
        Higher first where an order or a solver reads it (default 0).
    min_gpus, max_gpus : int or None
        Elastic jobs: the range a sizing policy may give it.
    extra : mapping
        The workload's other columns, read-only (policies see them as
        ``JobView.extra``); the simulator gives them no meaning.
    fields : mapping
        Fields of the job the session places, in `alloc.Job`'s units, some of
        `JOB_FIELDS`: ``cpu`` (milli-CPU) and ``mem`` (MiB) in place of the
        GPU-proportional share, ``locality``, ``tenant``, ``guaranteed``,
        ``gpu_types``, ``gpu_mem``, ``gpu_compute``, ``gpu_mem_min``,
        ``weight``.  They override the progress model's job fields.
    gpu_milli : int
        Its share of each GPU, milli-GPU (1..1000; below 1000 only with
        ``gpus == 1``: a fraction of one GPU, shared with other jobs).

    Examples
    --------
    >>> from alloc.sim.jobs import WorkloadJob
    >>> WorkloadJob("j1", 0.0, 2, duration_s=600.0, model="res18").gpus
    2
    >>> WorkloadJob("j2", 0.0, 1, duration_s=-5.0)
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: job 'j2': duration_s: expected a number > 0, got -5.0
    >>> WorkloadJob("j3", 0.0, 1, gpu_milli=250).gpu_milli   # a quarter of one GPU
    250
    >>> WorkloadJob("j4", 0.0, 0, fields={"cpu": 4000, "mem": 8192}).gpus   # CPU only
    0
    """
    id: str
    arrival_s: float
    gpus: int
    duration_s: float | None = None
    model: str | None = None
    work: float | None = None
    priority: int = 0
    min_gpus: int | None = None
    max_gpus: int | None = None
    extra: Mapping[str, Any] = field(default_factory=frozen_map)
    fields: Mapping[str, Any] = field(default_factory=frozen_map)
    gpu_milli: int = 1000

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"job {self.id!r}: id: expected a non-empty string")
        if not _number(self.arrival_s) or self.arrival_s < 0:
            self._bad("arrival_s", f"expected a number >= 0, got {self.arrival_s!r}")
        if not _int(self.gpus) or self.gpus < 0:
            self._bad("gpus", f"expected an integer >= 0, got {self.gpus!r}")
        if self.gpu_milli != 1000 or not _int(self.gpu_milli):
            if not _int(self.gpu_milli) or not 1 <= self.gpu_milli <= 1000:
                self._bad("gpu_milli", f"expected an integer in 1..1000, got {self.gpu_milli!r}")
            if self.gpus != 1:
                self._bad("gpu_milli", f"expected 1000 unless gpus is 1 (a share of one GPU), "
                                       f"got {self.gpu_milli} with gpus={self.gpus}")
        for name in ("duration_s", "work"):
            v = getattr(self, name)
            if v is not None and (not _number(v) or v <= 0):
                self._bad(name, f"expected a number > 0, got {v!r}")
        if not _int(self.priority):
            self._bad("priority", f"expected an integer, got {self.priority!r}")
        if self.min_gpus is not None or self.max_gpus is not None:
            self._check_range()
        if not isinstance(self.extra, Mapping):
            self._bad("extra", "expected a mapping")
        if not isinstance(self.fields, Mapping):
            self._bad("fields", "expected a mapping")
        if not _FIELDS.issuperset(self.fields):
            bad = sorted(set(self.fields) - _FIELDS)
            self._bad("fields", f"{bad[0]!r} is not a job field a workload may set; expected "
                                f"some of {', '.join(JOB_FIELDS)}")

    def _check_range(self) -> None:
        """An elastic job's ``min_gpus`` and ``max_gpus`` around ``gpus``."""
        for name in ("min_gpus", "max_gpus"):
            v = getattr(self, name)
            if v is not None and (not _int(v) or v < 1):
                self._bad(name, f"expected an integer >= 1, got {v!r}")
        if self.min_gpus is not None and self.min_gpus > self.gpus:
            self._bad("min_gpus", f"expected at most gpus ({self.gpus}), got {self.min_gpus}")
        if self.max_gpus is not None and self.max_gpus < self.gpus:
            self._bad("max_gpus", f"expected at least gpus ({self.gpus}), got {self.max_gpus}")

    def _bad(self, name: str, what: str) -> NoReturn:
        """Raise the one-line error on field ``name``."""
        raise InputError(f"job {self.id!r}: {name}: {what}")


#: `JOB_FIELDS` as a set.
_FIELDS = frozenset(JOB_FIELDS)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class JobRecord:
    """What a run knows about one job: the `alloc.sched.JobView` policies
    read, and the progress state the simulator keeps.

    Policies read it and never write it.  A progress model may keep its own
    per-job state in ``state`` (a dict).

    Attributes
    ----------
    id, arrival_s, gpus, model, duration_s, priority, extra
        As `alloc.sched.JobView` (``gpus`` is the job's size now).
    spec : WorkloadJob
        The workload's job.
    index : int
        Its position in the workload (arrival order).
    work : float
        Its total work in the progress model's units.
    done : float
        Work done as of ``t_mark`` (see `done_at`).
    rate : float
        Units per second of its current run (0 when waiting).
    run : Run or None
        Where it runs now.
    restarts, preemptions, moves : int
        Starts after a stop, stops by a round or a mechanism, moves.
    start_s, finish_s : float or None
        Its first start and its finish.
    dropped : str or None
        Why it left the run without finishing (`alloc.sched.kinds.Control.drop`).
    state : dict
        The progress model's per-job state.
    """
    __slots__ = ("id", "index", "spec", "arrival_s", "gpus", "model", "priority", "extra",
                 "duration_s", "work", "done", "t_mark", "rate", "blocked_until", "run",
                 "running", "held_since", "_att_s", "_att_gpu_s", "restarts", "preemptions",
                 "moves", "start_s", "finish_s", "stopped_s", "admitted", "held", "state",
                 "size", "version", "intervals", "where", "milli", "gpu_type", "in_session", "_sim",
                 "queued_s", "delay_total_s", "area0", "reason", "fields", "min_gpus",
                 "max_gpus", "dropped")

    def __init__(self, spec: WorkloadJob, index: int, work: float, duration_s: float | None,
                 sim: Any) -> None:
        self.id = spec.id
        self.index = index
        self.spec = spec
        self.arrival_s = float(spec.arrival_s)
        self.gpus = spec.gpus
        self.model = spec.model
        self.priority = spec.priority
        self.extra = spec.extra
        self.min_gpus = spec.min_gpus
        self.max_gpus = spec.max_gpus
        self.duration_s = duration_s
        self.work = work
        self.done = 0.0
        self.t_mark = self.arrival_s
        self.rate = 0.0
        self.blocked_until = 0.0
        self.run: Run | None = None
        self.running = False
        self.held_since = 0.0
        self._att_s = 0.0
        self._att_gpu_s = 0.0
        self.restarts = 0
        self.preemptions = 0
        self.moves = 0
        self.start_s: float | None = None
        self.finish_s: float | None = None
        self.stopped_s: float | None = None
        self.admitted = False
        self.held = False
        self.state: dict = {}
        self.size: Size | None = None
        self.version = 0
        self.intervals: list[list] = []
        self.where: list[list] = []
        self.milli = spec.gpu_milli
        self.gpu_type: str | None = None
        self.in_session = False
        self._sim = sim
        self.queued_s = 0.0
        self.delay_total_s = 0.0
        self.area0 = 0.0
        self.reason: str | None = None
        #: why the run dropped it (`alloc.sched.kinds.Control.drop`), None if not
        self.dropped: str | None = None
        #: fields of the session's job (the workload's `WorkloadJob.fields`,
        #: then a mechanism's `Control.set_fields`)
        self.fields: dict[str, Any] = dict(spec.fields)

    # ---------------------------------------------------------------- views
    def done_at(self, t: float) -> float:
        """Work done at time ``t`` (no later than the next event)."""
        if not self.running or self.rate <= 0.0:
            return self.done
        since = self.t_mark if self.t_mark > self.blocked_until else self.blocked_until
        return self.done + self.rate * (t - since) if t > since else self.done

    @property
    def remaining_s(self) -> float | None:
        """What is left of ``duration_s`` (s), in proportion to the work left."""
        d = self.duration_s
        if d is None:
            return None
        left = self.work - self.done_at(self._sim.now)
        if left <= 0:
            return 0.0
        return left if d == self.work else d * left / self.work

    @property
    def attained_s(self) -> float:
        """Seconds it has held GPUs so far."""
        if self.running:
            return self._att_s + (self._sim.now - self.held_since)
        return self._att_s

    @property
    def attained_gpu_s(self) -> float:
        """GPU-seconds it has held so far (GPUs times milli share, times seconds)."""
        if self.running:
            return self._att_gpu_s + (self._sim.now - self.held_since) * self._held_gpus()
        return self._att_gpu_s

    @property
    def last_run_s(self) -> float:
        """When it last held GPUs (now when it runs; its arrival when it never has)."""
        if self.running:
            return self._sim.now
        return self.stopped_s if self.stopped_s is not None else self.arrival_s

    @property
    def restarted(self) -> int:
        """Alias of ``restarts``."""
        return self.restarts

    def _held_gpus(self) -> float:
        run = self.run
        return 0.0 if run is None else run.gpus * run.milli / 1000.0

    def peer(self, job_id: str) -> "JobRecord | None":
        """Another active job of the run, by id (for co-location rates)."""
        return self._sim.records.get(job_id)

    def __repr__(self) -> str:
        return (f"JobRecord({self.id!r}, gpus={self.gpus}, running={self.running}, "
                f"done={self.done:g}/{self.work:g})")


__all__ = ["JOB_FIELDS", "JobRecord", "WorkloadJob"]

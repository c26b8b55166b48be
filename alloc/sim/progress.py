r"""Progress models: how fast each running job advances, given where it runs.

A job has *work* $W_j$ in its model's units (seconds alone on its requested
GPUs for `Alone`; seconds at the GPU-proportional share for
`SynergyProfiles`; iterations for `GavelTable`).  While it runs as `Run`
``r`` its progress grows at ``rate(job, r)`` units per second, after a delay
of ``delay_s(job, r, cause)`` seconds in which it holds its GPUs and makes no
progress (a restart, a resume, a migration, a resize).  Between two events of
the run the rate is constant, so the simulator finishes a job at the exact
instant

$$
t_\mathrm{end} = \max(t_0, t_\mathrm{blocked}) + \frac{W_j - w_j(t_0)}{\mathrm{rate}_j}
$$

where $w_j(t_0)$ is its progress at the last event.  When the job stops
(preempted, suspended, its server failed) it keeps ``resume(job, done)`` of
its progress (all of it by default; the last checkpoint with
``checkpoint`` set).  A model keeps per-job state in ``job.state`` (a dict
the simulator gives every job): a goodput model fitted online updates it in
`Progress.advanced`.

Writing one: subclass `ProgressModel` and override what differs; the
simulator calls ``rate`` again whenever a job's `Run` changes (a start, a
move, a new co-located neighbour) and, with ``dynamic = True``, at every
round.

Examples
--------
>>> from alloc.sim.progress import Alone, Run
>>> from alloc.sim.jobs import WorkloadJob
>>> m = Alone()
>>> j = WorkloadJob("a", 0.0, 4, duration_s=3600.0)
>>> m.work(j), m.alone_s(j)
(3600.0, 3600.0)
>>> m.rate(j, Run(gpus=2, milli=1000))   # half its GPUs: linear scaling
0.5
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from ..errors import InputError
from ..model import Placement

#: Why a job's run begins: its first start, a start after a stop, a move by
#: a round or a mechanism, a new size, a resume after a suspension.
CAUSES = ("start", "restart", "migrate", "resize", "resume")


@dataclass(frozen=True)
class Run:
    """Where and how a job runs now (what a progress model's rate depends on).

    Attributes
    ----------
    placement : Placement or None
        Its binding (GPUs with milli shares, CPU and memory per server).
    gpus : int
        GPUs it holds.
    servers : tuple of str
        Servers it spans.
    gpu_type : str or None
        The type of its GPUs (the first GPU's, for a mixed placement).
    milli : int
        Its share of each GPU (1000: whole GPUs).
    colocated : tuple of str
        Jobs sharing at least one of its GPUs, sorted.
    gpu_names : tuple of str
        Its GPUs' core names (``"<server>/gpu<k>"``).
    since_s : float
        When this run began (s).
    cause : str
        One of `CAUSES`.
    size : Size or None
        What the sizing policy gave the job (its batch size, accumulation
        steps), None without one.

    Examples
    --------
    >>> from alloc.sim.progress import Run
    >>> Run(gpus=1, milli=500).milli
    500
    """
    placement: Placement | None = None
    gpus: int = 0
    servers: tuple[str, ...] = ()
    gpu_type: str | None = None
    milli: int = 1000
    colocated: tuple[str, ...] = ()
    gpu_names: tuple[str, ...] = ()
    since_s: float = 0.0
    cause: str = "start"
    size: Any = None


class Progress(Protocol):
    r"""A progress model (see the module notes).

    Attributes
    ----------
    name : str
        How results name it.
    gives : frozenset of str
        The needs (`alloc.sched.registry.NEEDS`) it answers beyond
        attained service and priority, which every run gives: ``duration``
        when it knows each job's run time alone, ``throughput``, ``pairs``,
        ``profile``, ``goodput``, ``gpu-memory``.
    dynamic : bool
        True: rates change with the job's own progress (goodput), so the
        simulator asks again at every round.
    """
    name: str
    gives: frozenset
    dynamic: bool

    def work(self, job: Any) -> float:
        """A workload job's total work, in this model's units (> 0)."""

    def alone_s(self, job: Any) -> float | None:
        """Seconds it runs alone on its requested GPUs (None: unknown)."""

    def rate(self, job: Any, run: Run) -> float:
        """Units of work per second while it runs as ``run`` (>= 0)."""

    def delay_s(self, job: Any, run: Run, cause: str) -> float:
        """Seconds without progress at the start of ``run`` (``cause`` in `CAUSES`)."""

    def resume(self, job: Any, done: float) -> float:
        """The progress a job keeps when it stops, having done ``done``."""

    def advanced(self, job: Any, run: Run, seconds: float, done: float) -> None:
        """After ``seconds`` of running as ``run``, its progress is ``done``."""

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """Fields of the session's [`Job`][alloc.model.Job] beyond id, GPUs and
        priority (``model``/``profile`` for profiles, ``cpu``/``mem``)."""

    # optional: ``finished(job, run, now)``, called when a job's work is done,
    # before its run ends (a model that accounts for every second a job ran
    # sees the last stretch there; `advanced` is not called for it);
    # ``check_cluster(cluster)``, called once before the run: an InputError on
    # one line when the model cannot rate the cluster's GPUs


class ProgressModel:
    """Defaults for a `Progress` model: work is the job's ``work`` or
    ``duration_s``; rate 1 on its requested GPUs, scaled linearly with the
    GPUs it holds and its share of them; no delay (or ``restart_s`` on every
    start after the first); progress kept to the last multiple of
    ``checkpoint`` units (None: all of it).

    Parameters
    ----------
    restart_s : float
        Seconds without progress when a job starts again after a stop, a
        move or a resize (its first start costs nothing).
    checkpoint : float or None
        Progress is saved every ``checkpoint`` units; a stopped job resumes
        from the last save.
    """
    name = "progress"
    gives: frozenset = frozenset()
    dynamic = False

    def __init__(self, restart_s: float = 0.0, checkpoint: float | None = None) -> None:
        if not (isinstance(restart_s, (int, float)) and restart_s >= 0 and math.isfinite(restart_s)):
            raise InputError(f"progress: restart_s: expected a number >= 0, got {restart_s!r}")
        if checkpoint is not None and not (isinstance(checkpoint, (int, float)) and checkpoint > 0):
            raise InputError(f"progress: checkpoint: expected a number > 0, got {checkpoint!r}")
        self.restart_s = float(restart_s)
        self.checkpoint = checkpoint

    def work(self, job: Any) -> float:
        """``job.work``, else ``job.duration_s``."""
        w = job.work if job.work is not None else job.duration_s
        if w is None:
            raise InputError(f"job {job.id!r}: expected duration_s or work, got neither")
        return float(w)

    def alone_s(self, job: Any) -> float | None:
        """``job.duration_s``."""
        return job.duration_s

    def rate(self, job: Any, run: Run) -> float:
        """``(GPUs held / GPUs requested) * (milli held / milli requested)``
        (1 alone on its request; 1 for a job that asks for no GPU)."""
        spec = job.spec if hasattr(job, "spec") else job
        if spec.gpus <= 0:
            return 1.0
        return run.gpus / spec.gpus * run.milli / getattr(spec, "gpu_milli", 1000)

    def delay_s(self, job: Any, run: Run, cause: str) -> float:
        """``restart_s`` for every cause but the first start."""
        return 0.0 if cause == "start" else self.restart_s

    def resume(self, job: Any, done: float) -> float:
        """``done``, or its last checkpoint."""
        c = self.checkpoint
        return done if c is None else math.floor(done / c + 1e-9) * c

    def advanced(self, job: Any, run: Run, seconds: float, done: float) -> None:
        """Nothing (no state)."""

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """None (the simulator gives GPU-proportional CPU and memory)."""
        return {}


class Alone(ProgressModel):
    """Each job runs at its duration alone on its requested GPUs (the plain
    CSV: ``id,arrival_s,gpus,duration_s[,model]``): work = ``duration_s``
    seconds, rate 1 on its GPUs (linear in the GPUs it holds and in its share
    of them), wherever it is placed; a preempted job resumes where it stopped
    (``checkpoint``: from its last checkpoint), after ``restart_s``.

    Examples
    --------
    >>> from alloc.sim.progress import Alone
    >>> sorted(Alone().gives)
    ['duration']
    """
    name = "alone"
    gives = frozenset({"duration"})


class SynergyProfiles(ProgressModel):
    r"""Synergy's throughput profiles (Mohan et al., OSDI'22): a job's work is
    its run time at the GPU-proportional share of CPU and memory
    (``duration_s``); its rate is the throughput of its placement, the
    profile's speed at the CPU and memory it holds times the span factor of
    the servers it spans (the core's ``Placement.throughput``, 1.0 at the
    proportional share on one server).  The session's jobs carry the model's
    profile and the GPU-proportional CPU and memory, so the Synergy
    allocators choose their CPU/memory points.

    Parameters
    ----------
    cpu_per_gpu, mem_per_gpu : int
        The proportional share of one GPU (milli-cores, MiB); a job of ``n``
        GPUs asks for ``n`` times each.
    profiles : mapping or callable, optional
        A model's `Profile` by name (default: the shipped models).
    span : bool
        False: a spread job runs at its one-server speed (the span factor
        divided out).
    """
    name = "synergy"
    gives = frozenset({"duration", "profile"})

    def __init__(self, cpu_per_gpu: int, mem_per_gpu: int, profiles=None, span: bool = True,
                 restart_s: float = 0.0, checkpoint: float | None = None) -> None:
        super().__init__(restart_s, checkpoint)
        self.cpu_per_gpu, self.mem_per_gpu = int(cpu_per_gpu), int(mem_per_gpu)
        if profiles is None:
            from ..profiles import load_profile
            profiles = load_profile
        self._src = profiles
        self._profiles: dict[str, Any] = {}
        self._best: dict[tuple, tuple[int, int]] = {}
        self.span = span

    def profile(self, model: str):
        """The model's profile (cached); an unknown model is an InputError."""
        p = self._profiles.get(model)
        if p is None:
            src = self._src
            try:
                p = src(model) if callable(src) else src[model]
            except (KeyError, ValueError, InputError):
                raise InputError(f"unknown model {model!r} (no throughput profile)") from None
            self._profiles[model] = p
        return p

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """The model, its profile and ``gpus`` times the proportional CPU and memory."""
        if job.model is None:
            raise InputError(f"job {job.id!r}: model: expected a model name (Synergy's "
                             f"profiles), got none")
        return {"model": job.model, "profile": self.profile(job.model),
                "cpu": self.cpu_per_gpu * gpus, "mem": self.mem_per_gpu * gpus}

    def best_case(self, job: Any, cluster: Any) -> tuple[int, int]:
        """The CPU (milli-cores) and memory (MiB) of the job's fastest
        CPU/memory point that fits one of the cluster's servers (Synergy's
        best case; `alloc.solvers.synergy.job_choices`), cached by model and
        GPUs."""
        key = (job.model, job.gpus, id(cluster))
        hit = self._best.get(key)
        if hit is None:
            from ..model import Job
            from ..problem import pareto_options
            from ..solvers.synergy import job_choices
            n = job.gpus
            f = self.job_fields(job, n)
            proto = Job("proto", n, cpu=f["cpu"], mem=f["mem"], model=job.model,
                        profile=f["profile"])
            opts = pareto_options(proto)
            caps = sorted({(s.gpus, s.cpu, s.mem) for s in cluster.servers if s.gpus})
            ideal, _ = job_choices(opts, n, caps)
            hit = self._best[key] = (opts[ideal].cpu, opts[ideal].mem)
        return hit

    def rate(self, job: Any, run: Run) -> float:
        """The placement's throughput (span factor divided out with ``span=False``)."""
        p = run.placement
        if p is None:
            return 0.0
        r = p.throughput
        if not self.span and len(run.servers) > 1:
            r /= self.profile(job.model).span_factor("cluster")
        return r


class GavelTable(ProgressModel):
    r"""Gavel's measured throughputs (Narayanan et al., OSDI'20): a job's
    work is in iterations (``work``, else ``duration_s`` times its rate
    alone on the reference type); alone on a GPU of type $k$ it does
    $T_{mk}$ iterations per second, whatever its share of the GPU (a job
    whose pair partner left runs alone); sharing its GPU with one other job
    ``o`` (space sharing) it does the pair's measured rate, read with the
    earlier job's model first ($P_{mok}$, or the second rate of $P_{omk}$);
    sharing it otherwise (no measured pair, or more than one other job),
    $T_{mk} \cdot \mathrm{milli}/1000$.

    Parameters
    ----------
    table : ThroughputTable
        ``types``, ``models`` (configuration names), ``alone`` (M, k) and
        ``pair`` (M, M, k, 2) arrays (`alloc.sim.gavel.ThroughputTable`).
    reference : str, optional
        The GPU type a ``duration_s`` is measured on (default ``v100``, or
        the table's first type when it has no ``v100``).
    """
    name = "gavel"
    gives = frozenset({"duration", "throughput", "pairs"})

    def __init__(self, table, reference: str | None = None, restart_s: float = 0.0,
                 checkpoint: float | None = None) -> None:
        super().__init__(restart_s, checkpoint)
        self.table = table
        self.col = {t: c for c, t in enumerate(table.types)}
        self.row = {m: i for i, m in enumerate(table.models)}
        if reference is None:
            reference = "v100" if "v100" in self.col else table.types[0]
        if reference not in self.col:
            raise InputError(f"gavel progress: reference: expected a GPU type of the table "
                             f"({', '.join(self.col)}), got {reference!r}")
        self.ref = self.col[reference]

    def check_cluster(self, cluster: Any) -> None:
        """An InputError on one line when a server's GPU type is not in the
        table (a job placed there would never progress)."""
        for s in cluster.servers:
            if s.gpus and s.gpu_type not in self.col:
                raise InputError(f"gavel progress: server {s.id!r}: gpu_type: expected a type of "
                                 f"the throughput table ({', '.join(self.col)}), got "
                                 f"{s.gpu_type!r}")

    def model_row(self, job: Any) -> int:
        """The table row of a job's model (its name, or its row number)."""
        m = job.model
        if isinstance(m, int) or (isinstance(m, str) and m.isdigit()):
            k = int(m)
            if 0 <= k < len(self.table.models):
                return k
        if m in self.row:
            return self.row[m]
        raise InputError(f"job {job.id!r}: model: unknown model {m!r} (not in the throughput "
                         f"table)")

    def throughputs(self, job: Any) -> dict[str, float]:
        """Iterations per second alone on each GPU type."""
        r = self.model_row(job)
        return {t: float(self.table.alone[r, c]) for t, c in self.col.items()}

    def rows(self, jobs: Any) -> Any:
        """The table rows of ``jobs`` (an integer array)."""
        import numpy as np
        return np.array([self.model_row(j) for j in jobs], dtype=np.int64)

    def pair_array(self, rows: Any, a: Any, b: Any, types: Any) -> Any:
        """Iterations per second of the pairs ``(rows[a], rows[b])`` sharing a
        GPU of each of ``types``: an array ``(P, len(types), 2)``."""
        cols = [self.col.get(t, -1) for t in types]
        P = self.table.pair[rows[a], rows[b]]
        out = P[:, [max(c, 0) for c in cols], :]
        for k, c in enumerate(cols):
            if c < 0:
                out[:, k, :] = 0.0
        return out

    def pair_rates(self, a: Any, b: Any, gpu_type: str) -> tuple[float, float]:
        """Iterations per second of ``a`` and ``b`` sharing a GPU of ``gpu_type``."""
        P = self.table.pair[self.model_row(a), self.model_row(b), self.col[gpu_type]]
        return float(P[0]), float(P[1])

    def work(self, job: Any) -> float:
        """``work`` iterations, else ``duration_s`` times the rate alone on the reference type."""
        if job.work is not None:
            return float(job.work)
        if job.duration_s is None:
            raise InputError(f"job {job.id!r}: expected duration_s or work, got neither")
        return float(job.duration_s) * float(self.table.alone[self.model_row(job), self.ref])

    def alone_s(self, job: Any) -> float | None:
        """Seconds alone on the reference type."""
        return self.work(job) / float(self.table.alone[self.model_row(job), self.ref])

    def rate(self, job: Any, run: Run) -> float:
        """The table's rate on the run's type: alone, the pair's, or time-shared."""
        if run.gpu_type is None or run.gpu_type not in self.col:
            return 0.0
        c = self.col[run.gpu_type]
        r = self.model_row(job)
        others = run.colocated
        if len(others) == 1 and hasattr(job, "peer"):
            other = job.peer(others[0])
            if other is not None:        # the pair as measured: the earlier job's row first
                o = self.model_row(other)
                first = getattr(job, "index", 0) <= getattr(other, "index", 0)
                v = float(self.table.pair[r, o, c, 0] if first else self.table.pair[o, r, c, 1])
                if v > 0:
                    return v
        if not others:
            return float(self.table.alone[r, c])      # alone on its GPUs, whatever its share
        return float(self.table.alone[r, c]) * run.milli / 1000.0


class Hold(ProgressModel):
    """Jobs that hold what they are given until the run ends, as the pods of
    a packing experiment (FGD's, Weng et al., ATC'23) do: every job's work is
    one unit and its rate 0, so no job finishes; the run ends after the last
    arrival (or at ``max_time_s``), every started job still running.  No job
    needs a ``duration_s``, and no policy that needs one may run with it.

    Examples
    --------
    >>> from alloc.sim.progress import Hold, Run
    >>> from alloc.sim.jobs import WorkloadJob
    >>> j = WorkloadJob("pod", 0.0, 1, gpu_milli=500)
    >>> Hold().work(j), Hold().rate(j, Run(gpus=1, milli=500)), Hold().alone_s(j)
    (1.0, 0.0, None)
    """
    name = "hold"

    def work(self, job: Any) -> float:
        """One unit (never done)."""
        return 1.0

    def alone_s(self, job: Any) -> float | None:
        """None: a held job has no run time."""
        return None

    def rate(self, job: Any, run: Run) -> float:
        """0: it never finishes."""
        return 0.0


def builtin(name: str, **params: Any) -> ProgressModel:
    """A built-in progress model by name: ``alone``, ``synergy``, ``gavel``,
    ``hold``.

    Examples
    --------
    >>> from alloc.sim.progress import builtin
    >>> builtin("alone", restart_s=10.0).restart_s
    10.0
    """
    models = {"alone": Alone, "synergy": SynergyProfiles, "gavel": GavelTable, "hold": Hold}
    cls = models.get(name)
    if cls is None:
        raise InputError(f"unknown progress model {name!r}; valid: {', '.join(models)}")
    return cls(**params)


__all__ = ["Alone", "CAUSES", "GavelTable", "Hold", "Progress", "ProgressModel", "Run",
           "SynergyProfiles", "builtin"]


r"""Tiresias' orders (Gu et al., NSDI'19) and the baselines of its evaluation.

Discretised two-dimensional attained service (2DAS, §3.2).  A job's
two-dimensional attained service is $a_J = W_J t_J$: its GPUs times the
seconds it has run (``JobView.attained_gpu_s``, GPU-seconds).  There are K
queues $Q_1 \dots Q_K$ with ascending thresholds $T_1 < \dots < T_{K-1}$;
$Q_i$ holds the jobs with $T_{i-1} \le a_J < T_i$ ($T_0 = 0$,
$T_K = \infty$), so a job enters $Q_1$ and is demoted to $Q_{i+1}$ when
$a_J$ crosses $T_i$.  Queues are served in order, higher first; a job that
does not fit is skipped over (the placement places the ranked jobs that fit,
and a running job ranked below a waiting one that cannot otherwise be
placed is preempted: ``preemptive``).  Within a queue:

* ``tiresias-l`` (Discretised 2D-LAS): first come, first served, with the
  running jobs ahead of the waiting ones -- the paper's rule is "FIFO on
  start time rather than on submission, to avoid needless preemptions"
  (§3.2.3).  Two readings, a parameter ``fifo``:

  - ``"queue"`` (the default, the authors' simulator): each queue is a list;
    a job is appended when it arrives (to $Q_1$), is demoted or is promoted;
    after each decision the waiting jobs move behind the running ones, both
    keeping their relative order.  A waiting job thus never displaces a
    running job of its own queue.
  - ``"start"`` (the paper's text): by the time the job was *first*
    scheduled; jobs that never ran follow, by arrival.  A job preempted by a
    higher queue outranks the jobs of its queue that started after it.
* ``tiresias-g`` (Discretised 2D-Gittins index): in $Q_i$, $i < K$, by
  decreasing Gittins index $G(a_J, \Delta_i)$ with $\Delta_i = T_i$
  (`alloc.sched.tiresias.gittins`), ties by start time.  In the last
  queue $Q_K$ the paper's text sets $\Delta_K = \infty$ and schedules
  FIFO on start time, as 2D-LAS (``last_queue="fifo"``); the authors'
  simulator sorts every queue, the last included, by the index with one
  static quantum (``last_queue="index"``, the default: $G(a_J, T_{K-1})$),
  and its figures are the ones this library reproduces
  (bench/results/tiresias.md shows both).

Starvation (PROMOTEKNOB $P$, §3.2.3): a waiting job outside $Q_1$ whose
waiting time $\delta_J$ reaches $P\,t_J$ ($t_J$: seconds run) goes back to
$Q_1$, and both $t_J$ and $\delta_J$ restart from zero (its queue is then
decided by the service it receives after the promotion).  ``promote_knob``
None (the default, as in the testbed experiments) never promotes.

Baselines (§5.1, §5.3):

* ``yarn-cs``: YARN's capacity scheduler as run in production: FIFO on
  arrival, never preempts; it pairs with the consolidated placement
  ``yarn`` in strict mode (a job waits while the head of the queue cannot
  be consolidated: head-of-line blocking).
* ``best-effort``: the same FIFO, non-preemptive, with ``yarn`` placement
  allowed to skip (a later job may jump a head that does not fit).
* ``srsf``: shortest remaining *service* first, $W_J (d_J - w_J)$ GPU-seconds
  left (an oracle of the job's run time alone); ``srtf`` (shortest
  remaining time, $d_J - w_J$) is `alloc.sched.orders`.  Both preempt.

Every order here ranks ties by arrival, then id.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Sequence

from ...errors import InputError
from ..kinds import Context, JobView, KeyOrder
from .gittins import Distribution

INF = math.inf


def thresholds_of(queues: int, threshold: float,
                  thresholds: Sequence[float] | None = None) -> tuple[float, ...]:
    r"""The K - 1 ascending queue thresholds (GPU-seconds).

    ``thresholds`` when given (exactly ``queues - 1`` of them); otherwise
    $T_k = 2^{k-1} T_1$ with $T_1$ = ``threshold`` (the paper leaves the
    thresholds of K > 2 open; this doubling is alloc's choice).

    Examples
    --------
    >>> from alloc.sched.tiresias.orders import thresholds_of
    >>> thresholds_of(2, 3200), thresholds_of(3, 3200), thresholds_of(1, 3200)
    ((3200.0,), (3200.0, 6400.0), ())
    """
    if isinstance(queues, bool) or not isinstance(queues, int) or queues < 1:
        raise ValueError(f"queues: expected an integer >= 1, got {queues!r}")
    if thresholds is None:
        if not (isinstance(threshold, (int, float)) and threshold > 0 and math.isfinite(threshold)):
            raise ValueError(f"threshold: expected a number of GPU-seconds > 0, got {threshold!r}")
        return tuple(float(threshold) * 2 ** k for k in range(queues - 1))
    ts = tuple(float(t) for t in thresholds)
    if len(ts) != queues - 1:
        raise ValueError(f"thresholds: expected {queues - 1} numbers for {queues} queues, "
                         f"got {len(ts)}")
    if any(t <= 0 or not math.isfinite(t) for t in ts) or any(b <= a for a, b in zip(ts, ts[1:])):
        raise ValueError(f"thresholds: expected ascending numbers > 0, got {list(ts)}")
    return ts


def queue_of(attained_gpu_s: float, thresholds: Sequence[float]) -> int:
    r"""The queue (0-based) of a job with attained service $a$:
    $|\{k : T_k \le a\}|$.

    Examples
    --------
    >>> from alloc.sched.tiresias.orders import queue_of
    >>> [queue_of(a, (3200.0,)) for a in (0, 3199.9, 3200, 10**6)]
    [0, 0, 1, 1]
    """
    q = 0
    for t in thresholds:
        if attained_gpu_s >= t:
            q += 1
        else:
            break
    return q


class TiresiasL:
    r"""Discretised 2D-LAS: K queues on attained GPU-seconds, FIFO on start
    time within a queue (see the module notes for the rules).

    Parameters
    ----------
    queues : int
        K, the number of queues (default 2, as in the paper's experiments).
    threshold : float
        $T_1$ in GPU-seconds (default 3,200, the testbed's).
    thresholds : sequence of float, optional
        All K - 1 thresholds (overrides ``threshold``).
    promote_knob : float or None
        PROMOTEKNOB (None: never promote).
    preemptive : bool
        Whether a running job ranked below a waiting one that cannot
        otherwise be placed may be stopped for it (default True).
    fifo : {"queue", "start"}
        The order within a queue (module notes).

    Notes
    -----
    The order keeps state across calls: each queue's list, the start times
    (the time of the decision at which a job was first seen running, ties by
    its rank at that decision) and, after a promotion, the service, run time
    and waiting time at which $t_J$ and $\delta_J$ restarted.  It is
    therefore not ``static``.  `next_change_s` tells when the ranking next changes with no
    arrival or completion (a running job crossing its threshold, a waiting
    job reaching its promotion), for simulators that decide at such times.

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.tiresias.orders import TiresiasL
    >>> def job(id, arr, gpus, gpu_s, running):
    ...     return J(id=id, arrival_s=arr, gpus=gpus, attained_gpu_s=gpu_s,
    ...              attained_s=gpu_s / gpus, running=running)
    >>> o = TiresiasL()
    >>> o.rank([job("old", 0, 8, 4000, True), job("new", 50, 1, 0, False)],
    ...        Context(100.0, 1, Cluster(())))
    ['new', 'old']
    """
    static = False

    def __init__(self, queues: int = 2, threshold: float = 3200.0,
                 thresholds: Sequence[float] | None = None, promote_knob: float | None = None,
                 preemptive: bool = True, fifo: str = "queue") -> None:
        self.thresholds = thresholds_of(queues, threshold, thresholds)
        if fifo not in ("queue", "start"):
            raise ValueError(f"fifo: expected 'queue' or 'start', got {fifo!r}")
        self.fifo = fifo
        self._lists: list[list[str]] = [[] for _ in range(len(self.thresholds) + 1)]
        self._in: dict[str, int] = {}
        self._pos: dict[str, int] = {}
        self._svc: dict[str, float] = {}
        self.queues = queues
        if promote_knob is not None and not (isinstance(promote_knob, (int, float))
                                             and promote_knob > 0):
            raise ValueError(f"promote_knob: expected a number > 0 or None, got {promote_knob!r}")
        self.promote_knob = None if promote_knob is None or math.isinf(promote_knob) \
            else float(promote_knob)
        self.preemptive = preemptive
        self._start: dict[str, tuple[float, float]] = {}
        self._reset: dict[str, tuple[float, float, float]] = {}
        self._prev_now: float | None = None
        self._prev_pos: dict[str, int] = {}
        #: promotions made so far
        self.promotions = 0

    # ------------------------------------------------------------- per job
    def service(self, job: JobView) -> float:
        """$a_J$ since the last promotion (GPU-seconds)."""
        r = self._reset.get(job.id)
        return job.attained_gpu_s - (r[0] if r else 0.0)

    def queue(self, job: JobView) -> int:
        """The job's queue, 0 for $Q_1$."""
        return queue_of(self.service(job), self.thresholds)

    def _waited(self, job: JobView, now: float) -> tuple[float, float]:
        """($t_J$, $\\delta_J$) since the last promotion, seconds."""
        r = self._reset.get(job.id)
        run = job.attained_s - (r[1] if r else 0.0)
        wait = (now - job.arrival_s - job.attained_s) - (r[2] if r else 0.0)
        return run, wait

    def _observe(self, jobs: Sequence[JobView], ctx: Context) -> None:
        when = self._prev_now if self._prev_now is not None else ctx.now_s
        live = {j.id: j for j in jobs}
        lists, where = self._lists, self._in
        for lst in lists:       # after the last decision: the waiting behind the running
            keep = [i for i in lst if i in live]
            lst[:] = [i for i in keep if live[i].running] + \
                [i for i in keep if not live[i].running]
        for k in [k for k in where if k not in live]:
            del where[k]
        svc = self._svc = {}
        for j in sorted(jobs, key=lambda j: (j.arrival_s, j.id)):
            if j.id not in self._start and (j.running or j.attained_s > 0):
                self._start[j.id] = (when, self._prev_pos.get(j.id, INF))
            if (self.promote_knob is not None and not j.running and self.queue(j) > 0):
                run, wait = self._waited(j, ctx.now_s)
                if run > 0 and wait >= self.promote_knob * run:
                    self._reset[j.id] = (j.attained_gpu_s, j.attained_s,
                                         ctx.now_s - j.arrival_s - j.attained_s)
                    self.promotions += 1
            a = self.service(j)
            svc[j.id] = a
            q = queue_of(a, self.thresholds)
            old = where.get(j.id)
            if old != q:        # arrival, demotion or promotion: to the queue's end
                if old is not None:
                    lists[old].remove(j.id)
                lists[q].append(j.id)
                where[j.id] = q
        for d in (self._start, self._reset):
            for k in [k for k in d if k not in live]:
                del d[k]
        self._pos = {i: n for lst in lists for n, i in enumerate(lst)}

    def within(self, job: JobView, q: int) -> tuple:
        """The key within queue ``q``: the position in its list (``fifo="queue"``)
        or the start time (``"start"``; never started: last)."""
        if self.fifo == "queue":
            return (self._pos[job.id],)
        return self._start.get(job.id, (INF, INF))

    def key(self, job: JobView, ctx: Context) -> tuple:
        """(queue, key within the queue, arrival, id), smallest first."""
        q = self.queue(job)
        return (q, *self.within(job, q), job.arrival_s, job.id)

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """The ids, highest priority first (records start times and promotions):
        the queues in order, each in `within` order (the same as sorting by
        `key`, one queue at a time)."""
        self._observe(jobs, ctx)
        byid = {j.id: j for j in jobs}
        out: list[str] = []
        for q, lst in enumerate(self._lists):
            if lst:
                out.extend(self._order_queue(q, lst, byid))
        self._prev_now = ctx.now_s
        self._prev_pos = {jid: i for i, jid in enumerate(out)}
        return out

    def _order_queue(self, q: int, ids: list[str], byid: dict) -> list[str]:
        if self.fifo == "queue":
            return list(ids)
        start = self._start
        return sorted(ids, key=lambda i: (*start.get(i, (INF, INF)), byid[i].arrival_s, i))

    def next_change_s(self, jobs: Sequence[JobView], ctx: Context) -> float | None:
        """The earliest time (s) a running job crosses its queue's threshold or
        a waiting job reaches its promotion, with the jobs as they are; None
        when no such time exists."""
        best = INF
        for j in jobs:
            q = self.queue(j)
            if j.running and q < len(self.thresholds) and j.gpus > 0:
                best = min(best, ctx.now_s + (self.thresholds[q] - self.service(j)) / j.gpus)
            elif not j.running and q > 0 and self.promote_knob is not None:
                run, wait = self._waited(j, ctx.now_s)
                if run > 0:
                    best = min(best, ctx.now_s + max(0.0, self.promote_knob * run - wait))
        return None if math.isinf(best) else best


class TiresiasG(TiresiasL):
    r"""Discretised 2D-Gittins index: K queues as 2D-LAS; within $Q_i$
    ($i < K$) the highest Gittins index $G(a_J, T_i)$ first, in $Q_K$ FIFO on
    start time (see the module notes).

    Parameters
    ----------
    last_queue : {"index", "fifo"}
        The last queue's order: the Gittins index with the last threshold
        as its quantum (the authors' simulator), or FIFO on start time (the
        paper's text).
    samples : str
        The service distribution $D$: a CSV file with a header and a column
        ``gpu_s`` (or ``duration``) of jobs' total services in GPU-seconds;
        empty (the default): the services $W_J d_J$ of the jobs that have
        arrived so far (their GPUs times their run time alone, the
        workload's ``duration_s``: the distribution, not any one job's
        remaining time, is what the policy uses).
    queues, threshold, thresholds, promote_knob, preemptive, fifo
        As for `TiresiasL` (``fifo`` breaks ties of the index).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.tiresias.orders import TiresiasG
    >>> def job(id, arr, d, gpu_s):
    ...     return J(id=id, arrival_s=arr, gpus=1, duration_s=d, attained_gpu_s=gpu_s,
    ...              attained_s=gpu_s, running=False)
    >>> o = TiresiasG()
    >>> # most jobs are done by 100 GPU-s: the job at 90 is likelier to finish soon
    >>> o.rank([job("a", 0, 100, 10), job("b", 5, 100, 90), job("c", 9, 3000, 0)],
    ...        Context(9.0, 1, Cluster(())))
    ['b', 'a', 'c']
    """

    def __init__(self, samples: str = "", queues: int = 2, threshold: float = 3200.0,
                 thresholds: Sequence[float] | None = None, promote_knob: float | None = None,
                 preemptive: bool = True, last_queue: str = "index",
                 fifo: str = "queue") -> None:
        super().__init__(queues, threshold, thresholds, promote_knob, preemptive, fifo)
        if last_queue not in ("index", "fifo"):
            raise ValueError(f"last_queue: expected 'index' or 'fifo', got {last_queue!r}")
        self.last_queue = last_queue
        self.learn = not samples
        self.dist = Distribution(() if self.learn else read_samples(samples))
        self._seen: set[str] = set()

    def _observe(self, jobs: Sequence[JobView], ctx: Context) -> None:
        if self.learn:
            for j in jobs:
                if j.id not in self._seen:
                    self._seen.add(j.id)
                    d = j.duration_s
                    if d is not None and d > 0 and j.gpus > 0:
                        self.dist.add(d * j.gpus)
        super()._observe(jobs, ctx)

    def _order_queue(self, q: int, ids: list[str], byid: dict) -> list[str]:
        ts = self.thresholds
        if q >= len(ts) and (self.last_queue == "fifo" or not ts):
            return super()._order_queue(q, ids, byid)
        delta = ts[min(q, len(ts) - 1)]
        index, svc = self.dist.index, self._svc
        within = super().within
        keys = {i: (-index(svc[i], delta), *within(byid[i], q), byid[i].arrival_s, i)
                for i in ids}
        return sorted(ids, key=keys.__getitem__)

    def within(self, job: JobView, q: int) -> tuple:
        """The key within queue ``q``: the negated Gittins index (the last queue:
        as ``last_queue`` says), then 2D-LAS's key."""
        ts = self.thresholds
        if q >= len(ts):
            if self.last_queue == "fifo" or not ts:
                return (0.0, *super().within(job, q))
            return (-self.dist.index(self.service(job), ts[-1]), *super().within(job, q))
        return (-self.dist.index(self.service(job), ts[q]), *super().within(job, q))


def read_samples(path: str) -> list[float]:
    """Job services (GPU-seconds) from a CSV file's ``gpu_s`` (or ``duration``)
    column; one-line errors name the file and the row.

    Examples
    --------
    >>> import os, tempfile
    >>> from alloc.sched.tiresias.orders import read_samples
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
    ...     _ = fh.write("gpu_s\\n120\\n3600\\n")
    >>> read_samples(fh.name)
    [120.0, 3600.0]
    >>> os.unlink(fh.name)
    """
    p = Path(path)
    try:
        with p.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the service samples ({exc.strerror})") from None
    if not rows:
        raise InputError(f"{path}: expected a header and at least one row of service samples")
    col = "gpu_s" if "gpu_s" in rows[0] else "duration" if "duration" in rows[0] else None
    if col is None:
        raise InputError(f"{path}: expected a column 'gpu_s' (or 'duration') of GPU-seconds")
    out = []
    for i, r in enumerate(rows, start=2):
        try:
            x = float(r[col])
        except (TypeError, ValueError):
            x = -1.0
        if not (x > 0 and math.isfinite(x)):
            raise InputError(f"{path}: row {i}: {col}: expected a number > 0, got {r[col]!r}")
        out.append(x)
    return out


class _Fifo(KeyOrder):
    def __init__(self, preemptive: bool = False) -> None:
        self.preemptive = preemptive

    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """The arrival time."""
        return job.arrival_s


class YarnCs(_Fifo):
    """YARN-CS: FIFO on arrival, non-preemptive (with the strict ``yarn`` placement)."""


class BestEffort(_Fifo):
    """Best-effort: FIFO on arrival, non-preemptive (with ``yarn`` placement that skips)."""


class Srsf(KeyOrder):
    r"""Shortest remaining service first: $W_J (d_J - w_J)$ GPU-seconds left,
    smallest first (unknown durations last).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.tiresias.orders import Srsf
    >>> Srsf().rank([J(id="wide", gpus=8, remaining_s=100.0, arrival_s=0.0),
    ...              J(id="long", gpus=1, remaining_s=500.0, arrival_s=1.0)],
    ...             Context(0.0, 1, Cluster(())))
    ['long', 'wide']
    """
    static = True

    def __init__(self, preemptive: bool = True) -> None:
        self.preemptive = preemptive

    def key(self, job: JobView, ctx: Context) -> Any:
        """GPU-seconds left, ``remaining_s`` times GPUs (unknown: last)."""
        left = job.remaining_s
        return INF if left is None else left * job.gpus


__all__ = ["BestEffort", "Srsf", "TiresiasG", "TiresiasL", "YarnCs", "queue_of", "read_samples",
           "thresholds_of"]

r"""The decision rules of AlloX and its baselines: at one instant, which queued
jobs start, and on which kind of resource (and, for SRPT, which running jobs
stop).

The cluster is ``G`` GPU slots and ``C`` CPU-node slots (`View.slots`); a
job takes one slot of the kind it runs on for its processing time there.
Every rule reads only estimates $\hat p^{gpu}_j, \hat p^{cpu}_j$
(`FlexJob.estimate`).  Users' queues hold the jobs that are ready (profiled)
and not started, in arrival order.

``sjf``
    Shortest job first over both kinds: of every (queued job, kind) pair,
    in ascending $\hat p$, start the job on that kind if a slot of it is
    free and the job has not started yet.
``allox-plus``
    The AlloX simulator's online variant (its committed configuration): SJF
    in which the pairs of jobs that have waited at least ``timeout`` (500
    units) go first, shortest among them first: a starvation guard.
``srpt``
    Preemptive: every decision stops the running jobs and restarts, in
    ascending *remaining* estimated time $\hat p^k_j (1 - f_j)$ ($f_j$ its
    fraction of work done, kept across stops and across kinds), the
    (active job, kind) pairs that fit; a job restarted on the kind it ran
    on simply keeps running.
``drf``
    Dominant Resource Fairness between users over (cores, GPUs, memory) in
    use: the user with the smallest dominant share starts the head of its
    queue (shortest estimated time first) on the kind it runs faster on; if
    no slot of that kind is free, the decision ends (no backfilling).
``drf-fifo``
    DRF with first-in-first-out queues and every job on a GPU (and no
    profiling).
``drf-ext``
    DRF over an *exchange-rate* resource: cores and GPUs folded into virtual
    cores, $cpu + \beta\,gpu$, with $\beta$ the mean over jobs of
    $cpu_j p^{cpu}_j / (gpu_j p^{gpu}_j)$ (cores a GPU is worth), and
    memory; the chosen user starts its shortest-on-GPU job on a free GPU,
    else its shortest-on-CPU job on a free CPU node, else the decision ends.
``es``
    Equal shares, static: each of the ``N`` users owns ``G/N`` GPUs and
    ``C/N`` CPU nodes whatever the others do; it fills its GPUs with its
    shortest-on-GPU jobs, then its CPU nodes with its shortest-on-CPU jobs
    (a job takes a whole slot: with fewer slots of a kind than users, that
    kind is nobody's).
``allox``
    AlloX: the ``ceil(alpha * U)`` users (of the ``U`` with queued jobs)
    with the lowest fairness scores are considered; their queued jobs (at
    most ``max_jobs``, taking the shortest on GPU and the shortest on CPU in
    turn) are matched to (machine ``m``, position ``k``) slots by a min-cost
    bipartite matching (`alloc.sched.allox.matching`) with cost
    $(a_m - r_j) + k\,\hat p^{kind(m)}_j$, $a_m$ when machine ``m`` is
    free (now, or when its running job is estimated to end), $r_j$ the
    job's arrival and ``k`` the position counted from the end of the
    machine's sequence (a job at position ``k`` delays ``k`` completions).
    The job matched first on a free machine starts; then the scores are
    updated and the matching is solved again, until no free machine gets a
    job -- then ``alpha`` doubles (up to every user) before the decision
    ends.

A user's *fairness score* is the sum of its running jobs' fair values
(`fair_value`): the dominant share of what the job holds, counted in
units of the resource it runs faster on.

Every rule returns a `Decision`; the caller applies it (through the
simulator's session) and keeps the scores.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ...errors import InputError
from .jobs import FlexJob
from .matching import match

#: Trace units a job may wait before AlloX+ puts it first (the simulator's setting).
ALLOX_TIMEOUT = 500.0


@dataclass(frozen=True)
class Running:
    """A job that runs now.

    Attributes
    ----------
    job : FlexJob
    kind : str
        "gpu" or "cpu".
    start : float
        When this run began.
    done : float
        Fraction of its work done when this run began (0..1).
    """
    job: FlexJob
    kind: str
    start: float
    done: float = 0.0

    def done_at(self, now: float) -> float:
        """Fraction of its work done at ``now``."""
        return min(1.0, self.done + (now - self.start) / self.job.time(self.kind))

    def est_end(self, now: float) -> float:
        """When it is estimated to end (at least ``now``)."""
        left = (1.0 - self.done_at(now)) * self.job.estimate(self.kind)
        return now + max(left, 0.0)


@dataclass(frozen=True)
class View:
    """What a rule reads at one instant.

    Attributes
    ----------
    now : float
    slots : mapping
        Slots of each kind ("gpu", "cpu").
    free : mapping
        Free slots of each kind.
    queued : mapping of str to sequence of FlexJob
        Each user's ready, waiting jobs in arrival order.
    running : sequence of Running
        Regular jobs running now.
    users : sequence of str
        Every user, in a fixed order (ties go to the earlier).
    capacity : (float, float, float)
        Cores, GPUs and memory of the cluster.
    score : mapping
        Each user's fairness score.
    done : mapping
        Fraction of work done by each waiting job that ran before (SRPT).
    held : mapping
        Each user's (cores, GPUs, memory) held by work other than its jobs'
        runs (the profiling runs), counted in its usage.
    """
    now: float
    slots: Mapping[str, int]
    free: Mapping[str, int]
    queued: Mapping[str, Sequence[FlexJob]]
    running: Sequence[Running]
    users: Sequence[str]
    capacity: tuple[float, float, float]
    score: Mapping[str, float] = field(default_factory=dict)
    done: Mapping[str, float] = field(default_factory=dict)
    held: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """Jobs to start (``(job id, kind)``, in order) and running jobs to stop."""
    starts: tuple[tuple[str, str], ...] = ()
    stops: tuple[str, ...] = ()


def fair_value(job: FlexJob, kind: str, capacity: Sequence[float]) -> float:
    r"""A running job's contribution to its user's fairness score: the
    dominant share of its demand on the kind it runs faster on, scaled by
    the speed ratio when it runs on the other kind.

    With $s^{cpu} = \max(cpu/C_{cores}, mem/C_{mem})$ and
    $s^{gpu} = \max(gpu/C_{gpus}, gpu\_mem/C_{mem})$: a job faster on CPU
    counts $s^{cpu}$ on a CPU node and $(\hat p^{cpu}/\hat p^{gpu})
    s^{cpu}$ on a GPU; a job faster on GPU counts $s^{gpu}$ on a GPU and
    $(\hat p^{gpu}/\hat p^{cpu}) s^{gpu}$ on a CPU node.

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.rules import fair_value
    >>> j = FlexJob("a", "u", 0.0, cpu_s=100.0, gpu_s=50.0, gpu=1.0)
    >>> fair_value(j, "gpu", (640, 20, 2560)), fair_value(j, "cpu", (640, 20, 2560))
    (0.05, 0.025)
    """
    pc, pg = job.estimate("cpu"), job.estimate("gpu")
    cores, gpus, mem = capacity
    if pc < pg:
        base = max(job.cpu / cores, job.mem / mem)
        return base if kind == "cpu" else pc / pg * base
    base = max(job.gpu / gpus, job.gpu_mem / mem)
    return base if kind == "gpu" else pg / pc * base


# ------------------------------------------------------------------- SJF
class Sjf:
    """Shortest estimated (job, kind) first; ``timeout`` puts the jobs that
    have waited that long first (AlloX+).

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.rules import Sjf, View
    >>> a = FlexJob("a", "u", 0.0, cpu_s=90.0, gpu_s=30.0)
    >>> b = FlexJob("b", "u", 0.0, cpu_s=20.0, gpu_s=10.0)
    >>> v = View(5.0, {"gpu": 1, "cpu": 1}, {"gpu": 1, "cpu": 1}, {"u": [a, b]}, [], ["u"],
    ...          (32, 1, 100))
    >>> Sjf().decide(v).starts
    (('b', 'gpu'), ('a', 'cpu'))
    """

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout

    def decide(self, v: View) -> Decision:
        """Starts in ascending (starving first, estimate) order where slots allow."""
        to = self.timeout
        pairs = []
        for u in v.users:
            for j in v.queued.get(u, ()):
                late = to is not None and v.now - j.arrival >= to
                for kind in ("cpu", "gpu"):
                    pairs.append((not late, j.estimate(kind), j.arrival, j.id, kind, j))
        pairs.sort(key=lambda t: t[:5])
        return Decision(_greedy(pairs, dict(v.free)))


def _greedy(pairs, free) -> tuple[tuple[str, str], ...]:
    started: set[str] = set()
    out = []
    for *_, kind, j in pairs:
        if j.id in started or free.get(kind, 0) <= 0:
            continue
        started.add(j.id)
        free[kind] -= 1
        out.append((j.id, kind))
    return tuple(out)


class Srpt:
    """Preemptive shortest remaining estimated time first (see the module notes)."""

    def decide(self, v: View) -> Decision:
        """Stops and starts by ascending remaining estimated time."""
        pairs = []
        done = {r.job.id: r.done_at(v.now) for r in v.running}
        jobs = [r.job for r in v.running] + [j for u in v.users for j in v.queued.get(u, ())]
        for j in jobs:
            f = done.get(j.id, v.done.get(j.id, 0.0))
            for kind in ("cpu", "gpu"):
                pairs.append((j.estimate(kind) * (1.0 - f), j.arrival, j.id, kind, j))
        pairs.sort(key=lambda t: t[:4])
        room = dict(v.free)
        for r in v.running:
            room[r.kind] = room.get(r.kind, 0) + 1
        starts = _greedy(pairs, room)
        keep = {(r.job.id, r.kind) for r in v.running}
        new = tuple(s for s in starts if s not in keep)
        stops = tuple(r.job.id for r in v.running if (r.job.id, r.kind) not in set(starts))
        return Decision(new, stops)


# ------------------------------------------------------------------- DRF
def _usage(v: View) -> dict[str, list[float]]:
    """(cores, GPUs, memory) each user holds: its running jobs and `View.held`."""
    use = {u: list(v.held.get(u, (0.0, 0.0, 0.0))) for u in v.users}
    for r in v.running:
        for i, x in enumerate(r.job.usage(r.kind)):
            use.setdefault(r.job.user, [0.0, 0.0, 0.0])[i] += x
    return use


class Drf:
    """Dominant Resource Fairness between users (see the module notes).

    Parameters
    ----------
    fifo : bool
        Queues in arrival order (else shortest estimated time first).
    gpu_only : bool
        Every job on a GPU (else on the kind it runs faster on).
    """

    def __init__(self, fifo: bool = False, gpu_only: bool = False) -> None:
        self.fifo, self.gpu_only = fifo, gpu_only

    def share(self, use: Sequence[float], cap: Sequence[float]) -> float:
        """The dominant share of ``use``."""
        return max(x / c for x, c in zip(use, cap) if c > 0)

    def decide(self, v: View) -> Decision:
        """Progressive filling by dominant share, stopping at a blocked head."""
        use = _usage(v)
        active = [u for u in v.users if v.queued.get(u) or use[u] != [0.0, 0.0, 0.0]]
        queues = {u: (list(v.queued.get(u, ())) if self.fifo else
                      sorted(v.queued.get(u, ()), key=lambda j: (j.shortest, j.arrival, j.id)))
                  for u in active}
        ds = {u: self.share(use[u], v.capacity) for u in active}
        free = dict(v.free)
        out = []
        while True:
            cands = [u for u in active if ds[u] < math.inf]
            if not cands:
                break
            u = min(cands, key=lambda x: ds[x])
            if not queues[u]:
                ds[u] = math.inf
                continue
            j = queues[u][0]
            kind = "gpu" if self.gpu_only else j.faster
            if free.get(kind, 0) <= 0:
                break
            queues[u].pop(0)
            free[kind] -= 1
            out.append((j.id, kind))
            use[u] = [a + b for a, b in zip(use[u], j.usage(kind))]
            ds[u] = self.share(use[u], v.capacity)
        return Decision(tuple(out))


class DrfExt(Drf):
    """DRF over virtual cores ``cpu + beta * gpu`` and memory (see the module notes).

    Parameters
    ----------
    beta : float
        Cores one GPU is worth (> 0).
    """

    def __init__(self, beta: float) -> None:
        super().__init__()
        if not (isinstance(beta, (int, float)) and beta > 0 and math.isfinite(beta)):
            raise InputError(f"drf-ext: beta: expected a number > 0, got {beta!r}")
        self.beta = float(beta)

    def share(self, use: Sequence[float], cap: Sequence[float]) -> float:
        """The dominant share over virtual cores and memory."""
        b = self.beta
        return max((use[0] + b * use[1]) / (cap[0] + b * cap[1]), use[2] / cap[2])

    def decide(self, v: View) -> Decision:
        """Progressive filling: GPU first, a CPU node else, stopping when neither is free."""
        use = _usage(v)
        active = [u for u in v.users if v.queued.get(u) or use[u] != [0.0, 0.0, 0.0]]
        queues = {u: list(v.queued.get(u, ())) for u in active}
        ds = {u: self.share(use[u], v.capacity) for u in active}
        free = dict(v.free)
        out = []
        while True:
            cands = [u for u in active if ds[u] < math.inf]
            if not cands:
                break
            u = min(cands, key=lambda x: ds[x])
            q = queues[u]
            if not q:
                ds[u] = math.inf
                continue
            if free.get("gpu", 0) > 0:
                j, kind = min(q, key=lambda x: (x.estimate("gpu"), x.arrival, x.id)), "gpu"
            elif free.get("cpu", 0) > 0:
                j, kind = min(q, key=lambda x: (x.estimate("cpu"), x.arrival, x.id)), "cpu"
            else:
                break
            q.remove(j)
            free[kind] -= 1
            out.append((j.id, kind))
            use[u] = [a + b for a, b in zip(use[u], j.usage(kind))]
            ds[u] = self.share(use[u], v.capacity)
        return Decision(tuple(out))


def exchange_rate(jobs: Sequence[FlexJob]) -> float:
    r"""DRFExt's $\beta$: the mean over ``jobs`` of
    $cpu_j p^{cpu}_j / (gpu_j p^{gpu}_j)$, the cores a GPU is worth.

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.rules import exchange_rate
    >>> exchange_rate([FlexJob("a", "u", 0, cpu_s=100.0, gpu_s=50.0, cpu=32.0, gpu=1.0)])
    64.0
    """
    if not jobs:
        raise InputError("drf-ext: expected at least one job to set the exchange rate")
    return float(sum(j.cpu * j.cpu_s / (j.gpu * j.gpu_s) for j in jobs) / len(jobs))


class EqualShare:
    """Static equal shares of each kind per user (see the module notes).

    Parameters
    ----------
    vector : bool
        The AlloX simulator's reading of the rule: a user's share is the
        vector (cores, GPUs, memory)/N and a job fits when its demand is
        within what is left of it in *every* dimension, with the cores of the
        GPU pass set to 0 -- so while a user runs a job on CPUs, no GPU job
        of its fits (its cores left are negative) and the GPU pass starts
        nothing; the CPU pass then offers each job a GPU first, a CPU node
        else.  False (default): each kind's slots are shared on their own.
    """

    def __init__(self, vector: bool = False) -> None:
        self.vector = vector

    def decide(self, v: View) -> Decision:
        """Fill each user's share of GPUs, then of CPU nodes."""
        if self.vector:
            return self._vector(v)
        n = max(len(v.users), 1)
        share = {k: v.slots.get(k, 0) / n for k in ("gpu", "cpu")}
        held = {u: {"gpu": 0, "cpu": 0} for u in v.users}
        for r in v.running:
            held.setdefault(r.job.user, {"gpu": 0, "cpu": 0})[r.kind] += 1
        free = dict(v.free)
        out = []
        for u in v.users:
            left = list(v.queued.get(u, ()))
            for kind in ("gpu", "cpu"):
                left.sort(key=lambda j: (j.estimate(kind), j.arrival, j.id))
                while left and held[u][kind] + 1 <= share[kind] + 1e-9 and free.get(kind, 0) > 0:
                    j = left.pop(0)
                    held[u][kind] += 1
                    free[kind] -= 1
                    out.append((j.id, kind))
        return Decision(tuple(out))

    def _vector(self, v: View) -> Decision:
        n = max(len(v.users), 1)
        cores, gpus, mem = (c / n for c in v.capacity)
        use = _usage(v)
        free = dict(v.free)
        out = []

        def fits(d, share, u):
            return all(x <= s - h + 1e-9 for x, s, h in zip(d, share, use[u]))

        for u in v.users:
            left = list(v.queued.get(u, ()))
            first = (0.0, gpus, mem)
            for kind, share in (("gpu", first), ("cpu", None)):
                if share is None:       # the CPU pass: memory what the GPU pass left
                    share = (cores, gpus, first[2] - use[u][2])
                left.sort(key=lambda j: (j.estimate(kind), j.arrival, j.id))
                while left:
                    j = left[0]
                    k = ("gpu" if fits(j.usage("gpu"), share, u) else
                         "cpu" if fits(j.usage("cpu"), share, u) else None)
                    if k is None or free.get(k, 0) <= 0:
                        break
                    left.pop(0)
                    free[k] -= 1
                    use[u] = [a + b for a, b in zip(use[u], j.usage(k))]
                    out.append((j.id, k))
        return Decision(tuple(out))


# ------------------------------------------------------------------ AlloX
class Allox:
    """AlloX (see the module notes).

    Parameters
    ----------
    alpha : float
        Share of the users with queued jobs considered, lowest fairness
        score first (0 < alpha <= 1).
    max_jobs : int
        Jobs in one matching, at most.
    grow : bool
        Double ``alpha`` when the users considered have nothing to start.
    """

    def __init__(self, alpha: float = 0.1, max_jobs: int = 50, grow: bool = True) -> None:
        if not (isinstance(alpha, (int, float)) and 0 < alpha <= 1):
            raise InputError(f"allox: alpha: expected a number in (0, 1], got {alpha!r}")
        if not (isinstance(max_jobs, int) and max_jobs >= 1):
            raise InputError(f"allox: max_jobs: expected an integer >= 1, got {max_jobs!r}")
        self.alpha, self.max_jobs, self.grow = float(alpha), max_jobs, grow

    def decide(self, v: View) -> Decision:
        """Match, start the first job of a free machine, update the scores, repeat."""
        score = dict(v.score)
        queued = {u: list(v.queued.get(u, ())) for u in v.users}
        free = dict(v.free)
        # machines: each slot, available when its running job is estimated to end
        busy = {k: sorted(r.est_end(v.now) for r in v.running if r.kind == k) for k in ("gpu", "cpu")}
        avail: list[tuple[str, float]] = []
        for k in ("cpu", "gpu"):
            ends = busy[k][:max(v.slots.get(k, 0) - v.free.get(k, 0), 0)]
            avail += [(k, t) for t in ends] + [(k, v.now)] * v.free.get(k, 0)
        out = []
        alpha = self.alpha
        while free.get("gpu", 0) > 0 or free.get("cpu", 0) > 0:
            active = [u for u in v.users if queued[u]]
            if not active:
                break
            ranked = sorted(active, key=lambda u: (score.get(u, 0.0), v.users.index(u)))
            chosen = ranked[:min(len(ranked), math.ceil(alpha * len(ranked) - 1e-12))]
            jobs = _subset([j for u in chosen for j in queued[u]], self.max_jobs)
            first = match(jobs, avail, v.now)
            pick = next(((j, k) for (k, t), j in first if t <= v.now and free.get(k, 0) > 0),
                        None)
            if pick is None:
                if self.grow and alpha < 1.0:
                    alpha = min(1.0, alpha * 2)
                    continue
                break
            j, k = pick
            out.append((j.id, k))
            free[k] -= 1
            queued[j.user].remove(j)
            score[j.user] = score.get(j.user, 0.0) + fair_value(j, k, v.capacity)
            i = avail.index((k, v.now))
            avail[i] = (k, v.now + j.estimate(k))
        return Decision(tuple(out))


def _subset(jobs: list[FlexJob], n: int) -> list[FlexJob]:
    """At most ``n`` jobs: the shortest on GPU and the shortest on CPU in turn."""
    if len(jobs) <= n:
        return jobs
    by_g = sorted(jobs, key=lambda j: (j.estimate("gpu"), j.arrival, j.id))
    by_c = sorted(jobs, key=lambda j: (j.estimate("cpu"), j.arrival, j.id))
    seen: dict[str, FlexJob] = {}
    for a, b in zip(by_g, by_c):
        for j in (a, b):
            if len(seen) < n:
                seen.setdefault(j.id, j)
        if len(seen) >= n:
            break
    return list(seen.values())


__all__ = ["ALLOX_TIMEOUT", "Allox", "Decision", "Drf", "DrfExt", "EqualShare", "Running", "Sjf",
           "Srpt", "View", "exchange_rate", "fair_value"]

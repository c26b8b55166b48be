r"""The event-driven simulator of Gandiva and of its baseline.

Events, in time order (at one instant: departures, failures, arrivals, then
the slice boundary): a job arrives (the scheduler's ``submit``), a job's
work is done (``finish``), a server fails (``fail_server``), and every
``slice_s`` seconds a slice boundary (``tick``).  Each event goes to a
[GandivaScheduler][alloc.solvers.gandiva.scheduler.GandivaScheduler], whose
session rounds place every job through the core's checked path; the
simulator then reads where each job runs from the session and charges
nothing else:

* a job on $n$ GPUs runs at $r_m \cdot f$ mini-batches per second, $f$ the
  product of its packing factor (the interference rule of
  [alloc.sim.gandiva.data][]; 1 alone), its locality factor (its model's
  ``spread`` on the servers it spans) and, for a grown job, $n$ over its
  request (linear scaling);
* a job that starts holding GPUs it did not hold just before, having run
  before (a resume after suspension, a packing change), makes no progress
  for its model's ``suspend_resume_s``; a migrated or resized job for its
  ``migrate_s``; a job that lost its server restarts from its progress
  (checkpointed at suspension points) after ``migrate_s``;
* suspended and queued jobs make no progress and hold nothing;
* completions are exact: a job finishes at the instant its mini-batches are
  done, and the time it reaches its ``feedback_mb``-th mini-batch (100 by
  default, as the paper) is kept: early feedback.

GPU utilisation at time $t$ is $\sum_j n_j u_{m_j} f_j$ over the jobs
making progress, over the cluster's GPUs: the busy time that does the jobs'
work (Gandiva Fig. 15 reports the jobs' utilisation, not the share of GPUs
allocated).  It is kept in bins of ``bin_s`` seconds and averaged over
``window``.

With ``mode="baseline"`` the scheduler never over-subscribes and never
packs: the same placement rules as a bin-packer, jobs queued until GPUs are
free.
"""
from __future__ import annotations

import heapq
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ...gpukey import server_of
from ...errors import InputError
from ...model import Cluster, Job, Profile
from ...solvers.gandiva.scheduler import Decision, GandivaScheduler
from .data import ModelSet
from .workload import JOB_CPU_PER_GPU, JOB_MEM_PER_GPU, SimJob

#: Event order at one instant.
_ORDER = {"finish": 0, "failure": 1, "arrival": 2, "tick": 3}
#: Mini-batches whose time marks early feedback (Gandiva section 6.3).
FEEDBACK_MB = 100.0


@dataclass
class _State:
    spec: SimJob
    total: float
    rate_alone: float
    util: float
    done: float = 0.0
    rate: float = 0.0
    factor: float = 0.0
    gpus: tuple[str, ...] = ()
    last: float = 0.0
    blocked: float = 0.0
    t100: float | None = None
    finish: float | None = None
    ran: bool = False
    version: int = 0


@dataclass
class GandivaResult:
    """One run's figures.

    Attributes
    ----------
    summary : dict
        ``gpu_util`` (0..1, mean over ``window``), ``gpu_util_20_120``
        (20-120 min), ``time_to_100_minibatches_s``, ``mean_jct_s``,
        ``makespan_s``, ``migrations``, ``suspensions``, ``packings``,
        ``packings_undone``, ``unpacked``, ``resizes``, ``oversubscribed``,
        ``queued``, ``wall_s``, ``cpu_s``, decision latencies per event
        (``decision_ms_median``, ``decision_ms_p95``: the scheduler's logic
        and the ``gandiva`` solver; ``checked_ms_median``, ``checked_ms_p95``:
        the scheduler's logic and its whole session rounds -- compile,
        solver, final check, commit), ``events``, ``steps``.
    util : list of float
        GPU utilisation per bin.
    packings : list of (float, int)
        Cumulative packings kept (made minus undone) after each change.
    bin_s : float
    """
    summary: dict
    util: list[float]
    packings: list[tuple[float, int]] = field(default_factory=list)
    bin_s: float = 60.0


class GandivaSim:
    """One run (see the module notes).

    Parameters
    ----------
    jobs : sequence of SimJob
    models : ModelSet
    cluster : Cluster
    mode : {"gandiva", "baseline"}
    slice_s : float
    packing, migration, grow_shrink : bool
        Gandiva's introspective mechanisms (ignored by the baseline).
    pack_limit : int
    gpu_mem_capacity : mapping of str to int
        GPU memory per GPU type (MiB).
    failures : sequence of (float, str)
        Server failures: time, server id.
    window : (float, float)
        Seconds over which ``gpu_util`` is averaged.
    bin_s : float
    until : float, optional
        Stop at this time (jobs not done count as ``unfinished``).
    audit : callable, optional
        ``audit(sim, decision)`` after every event (tests check invariants
        there).
    feedback_mb : float
        The N of "time to the first N mini-batches" (early feedback).
    """

    def __init__(self, jobs: Sequence[SimJob], models: ModelSet, cluster: Cluster, *,
                 mode: str = "gandiva", slice_s: float = 60.0, packing: bool = True,
                 migration: bool = False, grow_shrink: bool = False, pack_limit: int = 2,
                 gpu_mem_capacity: Mapping[str, int] | None = None,
                 failures: Sequence[tuple[float, str]] = (),
                 window: tuple[float, float] = (1200.0, 12000.0), bin_s: float = 60.0,
                 until: float | None = None, audit: Callable | None = None,
                 feedback_mb: float = FEEDBACK_MB):
        if mode not in ("gandiva", "baseline"):
            raise InputError(f"mode: expected 'gandiva' or 'baseline', got {mode!r}")
        for j in jobs:
            if j.model not in models.models:
                raise InputError(f"jobs[{j.id!r}].model: unknown model {j.model!r}; expected "
                                 f"one of {', '.join(models.models)}")
        g = mode == "gandiva"
        self.models, self.mode, self.window, self.bin_s = models, mode, window, float(bin_s)
        self.slice_s = float(slice_s)
        self.until = math.inf if until is None else float(until)
        self.audit = audit
        if isinstance(feedback_mb, bool) or not isinstance(feedback_mb, (int, float)) \
                or not math.isfinite(feedback_mb) or feedback_mb <= 0:
            raise InputError(f"feedback_mb: expected a number > 0, got {feedback_mb!r}")
        self.feedback_mb = float(feedback_mb)
        self.sched = GandivaScheduler(
            cluster, slice_s=slice_s, oversubscribe=g, packing=g and packing,
            pack_limit=pack_limit, migration=g and migration, grow_shrink=g and grow_shrink,
            gpu_mem_capacity=gpu_mem_capacity,
            models={m: Profile(m) for m in models.models})
        self.jobs = list(jobs)
        self.failures = list(failures)
        self.total_gpus = cluster.total_gpus
        self.state: dict[str, _State] = {}
        self.running: set[str] = set()
        self.bins: list[float] = []
        self.kept: list[tuple[float, int]] = []
        self.latency: list[float] = []
        self.round_latency: list[float] = []
        self.steps = 0

    # ---------------------------------------------------------------- run
    def run(self) -> GandivaResult:
        """Simulate until every job has finished."""
        t0, c0 = time.perf_counter(), time.process_time()
        heap: list = []
        seq = 0
        for j in self.jobs:
            heap.append((j.arrival, _ORDER["arrival"], seq, "arrival", j))
            seq += 1
        for t, sid in self.failures:
            heap.append((float(t), _ORDER["failure"], seq, "failure", sid))
            seq += 1
        heapq.heapify(heap)
        if self.mode == "gandiva":
            heapq.heappush(heap, (self.slice_s, _ORDER["tick"], -1, "tick", None))
        left = len(self.jobs)
        now = 0.0
        while heap and left and heap[0][0] <= self.until:
            now, _, _, kind, data = heapq.heappop(heap)
            if kind == "finish":
                st = self.state[data[0]]
                if st.version != data[1] or st.finish is not None:
                    continue
                self._settle(st, now)
                st.finish = now
                left -= 1
                dec = self.sched.finish(st.spec.id, now)
                self.running.discard(st.spec.id)
                st.rate, st.gpus = 0.0, ()
            elif kind == "arrival":
                dec = self._arrive(data, now)
            elif kind == "failure":
                dec = self.sched.fail_server(data, now)
            else:
                dec = self.sched.tick(now, self._measured())
                heapq.heappush(heap, (now + self.slice_s, _ORDER["tick"], -1, "tick", None))
            seq = self._apply(dec, now, heap, seq)
            if self.audit is not None:
                self.audit(self, dec)
        for st in self.state.values():
            self._settle(st, now)
        return self._result(now, time.perf_counter() - t0, time.process_time() - c0)

    def _arrive(self, j: SimJob, now: float) -> Decision:
        spec = self.models.models[j.model]
        self.state[j.id] = _State(j, j.work_s * spec.rate_mbps, spec.rate_mbps, spec.gpu_util,
                                  last=now)
        job = Job(j.id, j.gpus, cpu=JOB_CPU_PER_GPU * j.gpus, mem=JOB_MEM_PER_GPU * j.gpus,
                  model=j.model, priority=j.priority, weight=j.weight, gpu_mem=spec.gpu_mem_mib,
                  min_gpus=j.gpus if j.max_gpus else None, max_gpus=j.max_gpus)
        return self.sched.submit(job, now, util=spec.gpu_util)

    def _measured(self) -> dict[str, float]:
        """Each packed job's speed over its speed alone (what profiling sees)."""
        packed = {m for members in self.sched.groups().values() for m in members}
        return {j: self.state[j].factor for j in packed & self.running}

    # ----------------------------------------------------------- accounting
    def _apply(self, dec: Decision, now: float, heap: list, seq: int) -> int:
        """Read the new placements, charge switch costs, re-predict finishes."""
        self.latency.append(dec.decide_s + dec.solver_s)
        self.round_latency.append(dec.decide_s + dec.step_s)
        self.steps += dec.steps
        named = set(dec.started) | set(dec.resumed) | set(dec.suspended) | set(dec.migrated) \
            | set(dec.lost) | {r[0] for r in dec.resized}
        for group in dec.packed + dec.undone + dec.unpacked:
            named.update(group)
        if not named:
            return seq
        cand = (self.running | named) - {j for j in named if self.state[j].finish is not None}
        jobs = self.sched.session.jobs
        held = {j: tuple(sorted(g.gpu for g in jobs[j].current.gpus))
                for j in cand if j in jobs and jobs[j].current is not None}
        on_gpu: dict[str, list[str]] = {}
        for j, gpus in held.items():
            if len(gpus) == 1:
                on_gpu.setdefault(gpus[0], []).append(j)
        cost = {j: "migrate" for j in dec.migrated}
        cost.update((r[0], "migrate") for r in dec.resized)
        cost.update((j, "migrate") for j in dec.lost)
        for j in cand:
            st = self.state[j]
            gpus = held.get(j, ())
            factor = self._factor(st, gpus, on_gpu)
            if gpus == st.gpus and abs(factor - st.factor) < 1e-12:
                continue
            self._settle(st, now)
            if gpus and gpus != st.gpus and st.ran:
                spec = self.models.models[st.spec.model]
                pay = spec.migrate_s if cost.get(j) == "migrate" else spec.suspend_resume_s
                st.blocked = max(st.blocked, now + pay)
            st.ran = st.ran or bool(gpus)
            st.gpus, st.factor, st.rate = gpus, factor, st.rate_alone * factor
            st.version += 1
            if gpus:
                self.running.add(j)
                left = max(0.0, st.total - st.done)
                heapq.heappush(heap, (max(now, st.blocked) + left / st.rate, _ORDER["finish"],
                                      seq, "finish", (j, st.version)))
                seq += 1
            else:
                self.running.discard(j)
        if dec.packed or dec.undone:
            last = self.kept[-1][1] if self.kept else 0
            self.kept.append((now, last + len(dec.packed) - len(dec.undone)))
        return seq

    def _factor(self, st: _State, gpus: tuple[str, ...], on_gpu: Mapping[str, list]) -> float:
        """Speed over speed alone: packing x locality x growth."""
        if not gpus:
            return 0.0
        spec = self.models.models[st.spec.model]
        if len(gpus) == 1:
            mates = on_gpu.get(gpus[0], [st.spec.id])
            models = [self.state[m].spec.model for m in mates]
            return self.models.factors(models)[mates.index(st.spec.id)]
        servers = len({server_of(g) for g in gpus})
        least = math.ceil(st.spec.gpus / self.sched.cluster.servers[0].gpus)
        return spec.spread_factor(servers, least) * len(gpus) / st.spec.gpus

    def _settle(self, st: _State, now: float) -> None:
        """Progress (and utilisation) of one job up to ``now``."""
        start = max(st.last, st.blocked)
        if st.rate > 0 and now > start:
            before = st.done
            st.done = min(st.total, before + st.rate * (now - start))
            if st.t100 is None and st.done >= self.feedback_mb:
                st.t100 = start + (self.feedback_mb - before) / st.rate
            self._busy(start, now, len(st.gpus) * st.util * st.factor)
        st.last = now

    def _busy(self, t0: float, t1: float, gpus: float) -> None:
        b = self.bin_s
        k = int(t0 // b)
        while t0 < t1:
            end = min(t1, (k + 1) * b)
            if k >= len(self.bins):
                self.bins.extend([0.0] * (k + 1 - len(self.bins)))
            self.bins[k] += gpus * (end - t0)
            t0, k = end, k + 1

    # --------------------------------------------------------------- result
    def _result(self, end: float, wall: float, cpu: float) -> GandivaResult:
        states = list(self.state.values())
        util = [v / (self.bin_s * self.total_gpus) for v in self.bins]
        c = self.sched.counts
        jct = [s.finish - s.spec.arrival for s in states if s.finish is not None]
        feedback = [s.t100 - s.spec.arrival for s in states if s.t100 is not None]
        first = min((s.spec.arrival for s in states), default=0.0)
        summary = {
            "gpu_util": _mean_over(util, self.bin_s, *self.window),
            "gpu_util_20_120": _mean_over(util, self.bin_s, 1200.0, 7200.0),
            "time_to_100_minibatches_s": statistics.fmean(feedback) if feedback else 0.0,
            "mean_jct_s": statistics.fmean(jct) if jct else 0.0,
            "makespan_s": (max(s.finish for s in states if s.finish is not None) - first)
            if jct else 0.0,
            "migrations": c["migrations"], "suspensions": c["suspensions"],
            "packings": c["packings"], "packings_undone": c["packings_undone"],
            "unpacked": c["unpacked"], "resizes": c["resizes"],
            "oversubscribed": c["oversubscribed"], "queued": c["queued"],
            "unfinished": sum(1 for s in states if s.finish is None),
            "events": len(self.latency), "steps": self.steps,
            "decision_ms_median": 1e3 * _median(self.latency),
            "decision_ms_p95": 1e3 * _quantile(self.latency, 0.95),
            "checked_ms_median": 1e3 * _median(self.round_latency),
            "checked_ms_p95": 1e3 * _quantile(self.round_latency, 0.95),
            "wall_s": wall, "cpu_s": cpu,
        }
        return GandivaResult(summary, util, self.kept, self.bin_s)


def _mean_over(util: Sequence[float], bin_s: float, t0: float, t1: float) -> float:
    lo, hi = int(t0 // bin_s), int(math.ceil(t1 / bin_s))
    vals = [util[k] if k < len(util) else 0.0 for k in range(lo, hi)]
    return statistics.fmean(vals) if vals else 0.0


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def _quantile(xs: Sequence[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def simulate(jobs: Sequence[SimJob], models: ModelSet, cluster: Cluster, **kw) -> GandivaResult:
    """Run one simulation (the keywords of [GandivaSim][alloc.sim.gandiva.engine.GandivaSim])."""
    return GandivaSim(jobs, models, cluster, **kw).run()


__all__ = ["FEEDBACK_MB", "GandivaResult", "GandivaSim", "simulate"]

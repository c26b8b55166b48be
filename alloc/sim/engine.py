"""The round-based, event-driven simulator.

Time advances in rounds of ``round_s`` seconds.  At the start of a round:

1. jobs that arrived by then join the runnable set (a job never starts before
   it arrives: it waits for the next round boundary);
2. the runnable jobs are sorted by the policy (`policies`);
3. the allocator re-places them from scratch on an empty cluster.  The
   Synergy allocators (``proportional``, ``synergy-greedy``,
   ``synergy-tune``) run on the Synergy package's fast round
   (`alloc.solvers.synergy.fast_round`), reused from round to round (jobs'
   options are compiled once per model and GPU count) and proven equal to
   [`allocate`][alloc.solve.allocate] round by round; ``synergy-opt`` and any
   other registered solver go through `allocate()` for the admitted jobs;
4. each placed job progresses at its throughput ``r = base * span`` (1.0 =
   its speed at the GPU-proportional share; ``span`` is the model's factor for
   a job spread over several servers) until the round ends or its remaining
   work is done, whichever is first: completions are exact, and a finished job
   releases its resources at once (they are re-allocated at the next round).

Fast path.  For ``proportional`` and ``synergy-tune`` a round depends only on
the jobs the GPU-only admission examines, in order, so with a ``STATIC`` order
(`policies`) the engine keeps that prefix with
`IncrementalOrder` instead of sorting every runnable job each
round, and reuses the last plan in a round with no completion in which the
prefix is unchanged.  This is exact (the rounds are the ones a full sort
gives), and keeps overloaded runs with thousands of waiting jobs fast.

A job's work is its duration at the proportional share.  JCT = finish -
arrival.  The run stops when every measured job (ids in ``window``, both ends
included) has finished.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..gpukey import gpu_key, server_of
from ..model import (MILLI, Allocation, Cluster, GpuShare, Job, Placement, Profile, Server,
                     Status)
from ..deadline import Deadline
from ..problem import pareto_options
from ..solvers.synergy import fast_round, job_choices
from .policies import ORDERS, STATIC, IncrementalOrder, order_jobs
from .workload import SimJob


@dataclass(frozen=True)
class ClusterSpec:
    """A homogeneous simulated cluster: servers x GPUs, CPU (milli-cores) and memory (MiB) per server."""
    servers: int = 16
    gpus_per_server: int = 8
    cpu_per_server: int = 24000      # milli-cores
    mem_per_server: int = 512000     # MiB
    gpu_type: str = "V100"

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return self.servers * self.gpus_per_server

    def fair(self, n: int) -> tuple[int, int]:
        """GPU-proportional CPU and memory for n GPUs."""
        return (self.cpu_per_server * n // self.gpus_per_server,
                self.mem_per_server * n // self.gpus_per_server)

    def cluster(self) -> Cluster:
        """The [`Cluster`][alloc.model.Cluster] of the spec."""
        return Cluster(tuple(Server(f"s{i:03d}", self.cpu_per_server, self.mem_per_server,
                                    self.gpus_per_server, self.gpu_type)
                             for i in range(self.servers)))


class JobState:
    """A simulated job's progress: work left, attained service, start and finish times."""
    __slots__ = ("id", "model", "gpus", "arrival", "work", "done", "attained", "start",
                 "finish", "last_run", "ideal_cpu", "ideal_mem", "opts", "ideal", "capped",
                 "profile", "_job", "_jobobj")

    def __init__(self, spec: SimJob, profile: Profile, kind: tuple):
        self.id, self.model, self.gpus = spec.id, spec.model, spec.gpus
        self.arrival, self.work = float(spec.arrival_s), float(spec.work_s)
        self.done = 0.0
        self.attained = 0.0
        self.start: float | None = None
        self.finish: float | None = None
        self.last_run = self.arrival
        self.opts, self.ideal, self.capped, self._job = kind
        self.ideal_cpu, self.ideal_mem = self.opts[self.ideal].cpu, self.opts[self.ideal].mem
        self.profile = profile
        self._jobobj: Job | None = None

    @property
    def job(self) -> Job:
        """The job as an [`Job`][alloc.model.Job] (its GPU-proportional request)."""
        if self._jobobj is None:
            self._jobobj = self._job(self.id)
        return self._jobobj


@dataclass
class SimResult:
    """What a simulation produced: jobs' times, rounds, utilisation, statistics."""
    jct: dict[int, float]                 # measured job id -> JCT (s)
    arrival: dict[int, float]
    finish: dict[int, float]
    start: dict[int, float]
    rounds: int
    end_time_s: float
    wall_time_s: float
    util: list[tuple[float, float, float, float]]  # (t, gpu, cpu, mem) allocated fractions
    stats: dict = field(default_factory=dict)
    pending: dict[int, float] = field(default_factory=dict)  # unfinished measured id -> arrival

    @property
    def makespan_s(self) -> float:
        """Time from the first arrival to the last completion, in seconds."""
        if not self.finish:
            return 0.0
        return max(self.finish.values()) - min(self.arrival.values())

    def summary(self) -> dict:
        """The result as JSON-ready figures (mean and p99 JCT, utilisation, ...)."""
        from .metrics import summarize
        return summarize(self)


class Simulator:
    """The round-based simulator (see the module notes)."""
    def __init__(self, cluster: ClusterSpec, jobs: Iterable[SimJob], *, order: str = "fifo",
                 allocator: str = "synergy-tune", round_s: float = 300.0,
                 window: Sequence[int] | None = None,
                 profiles: Mapping[str, Profile] | Callable[[str], Profile] | None = None,
                 span: bool = True, check: bool = False, progress: bool = False,
                 max_time_s: float | None = None, opt_time_limit: float = 10.0,
                 trace: Callable | None = None, incremental: bool = True):
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; valid: {', '.join(ORDERS)}")
        self.spec = cluster
        self.jobs = jobs
        self.order, self.allocator = order, allocator
        self.R = float(round_s)
        self.window = tuple(window) if window is not None else None
        if profiles is None:
            from ..profiles import load_profile
            profiles = load_profile
        self._profile_src = profiles
        self._profiles: dict[str, Profile] = {}
        self.span, self.check, self.progress = span, check, progress
        self.max_time_s = max_time_s
        self.opt_time_limit = opt_time_limit
        self.trace = trace  # called with (t, plan) each round (tests)
        self.incremental = incremental  # False: sort every runnable job each round
        self._kinds: dict[tuple, tuple] = {}
        self._cluster: Cluster | None = None
        # the last round's examined jobs and plan (reused while they stay the same)
        self._last_key: tuple | None = None
        self._last_plan: list = []
        sp = cluster
        #: the allocator's fast round (None: every round through allocate())
        self.fast = fast_round(allocator, [sp.gpus_per_server] * sp.servers,
                               [sp.cpu_per_server] * sp.servers,
                               [sp.mem_per_server] * sp.servers)
        self.totals = (sp.total_gpus, sp.cpu_per_server * sp.servers,
                       sp.mem_per_server * sp.servers)
        self.stats = {"cache_hits": 0, "allocations": 0, "ideal": 0, "fair": 0, "reclaimed": 0,
                      "spread": 0, "skipped": 0, "opt_optimal": 0, "opt_rounds": 0}

    # ----------------------------------------------------------- job kinds
    def profile(self, name: str) -> Profile:
        """The profile of a model (cached)."""
        p = self._profiles.get(name)
        if p is None:
            src = self._profile_src
            p = src(name) if callable(src) else src[name]
            self._profiles[name] = p
        return p

    @property
    def cluster(self) -> Cluster:
        """The simulated cluster (built once)."""
        if self._cluster is None:
            self._cluster = self.spec.cluster()
        return self._cluster

    def kind(self, model: str, n: int) -> tuple:
        """Options, ideal and capped option and a job factory for (model, GPUs) (cached)."""
        key = (model, n)
        k = self._kinds.get(key)
        if k is None:
            prof = self.profile(model)
            cpu, mem = self.spec.fair(n)
            proto = Job("proto", n, cpu=cpu, mem=mem, model=model, profile=prof)
            opts = pareto_options(proto)
            caps = [(self.spec.gpus_per_server, self.spec.cpu_per_server, self.spec.mem_per_server)]
            ideal, capped = job_choices(opts, n, caps)

            def make(jid, n=n, cpu=cpu, mem=mem, model=model, prof=prof):
                return Job(str(jid), n, cpu=cpu, mem=mem, model=model, profile=prof)
            k = (opts, ideal, capped, make)
            self._kinds[key] = k
        return k

    # ------------------------------------------------------------- rounds
    def _rate(self, st: JobState, base: float, nservers: int) -> float:
        if self.span and nservers > 1:
            return base * st.profile.span_factor("cluster")
        return base

    def _fast(self, ordered: list[JobState]):
        F = self.fast
        assert F is not None
        key = F.examined([s.id for s in ordered])
        if key == self._last_key:
            self.stats["cache_hits"] += 1
            return self._last_plan
        by_id = {s.id: s for s in ordered}

        def choices(j: int) -> tuple[int, int]:
            st = by_id[j]
            return st.ideal, st.capped
        for k2, v in F.run(key, choices, Deadline.never()).items():
            self.stats[k2] += v
        plan = []
        parts_of, option = F.placed()
        for j, parts in parts_of.items():
            st = by_id[j]
            op = st.opts[option[j]]
            plan.append((st, self._rate(st, op.base, len(parts)), parts, op.cpu, op.mem))
        self._last_key, self._last_plan = key, plan
        return plan

    def _admit(self, ordered: list[JobState]) -> list[JobState]:
        """The scheduler's GPU-only admission: jobs in order while their GPUs
        fit the cluster's."""
        free, out = self.spec.total_gpus, []
        for s in ordered:
            if s.gpus <= free:
                out.append(s)
                free -= s.gpus
                if free <= 0:
                    break
        return out

    def _solver(self, ordered: list[JobState]):
        """synergy-opt or any registered solver on the admitted jobs, through
        [`alloc.allocate`][alloc.solve.allocate] (validation, capabilities, honest status,
        check)."""
        from ..solve import allocate
        adm = sorted(self._admit(ordered), key=lambda s: (s.model, s.gpus, s.id))
        key = tuple((s.model, s.gpus) for s in adm)
        if key == self._last_key:
            self.stats["cache_hits"] += 1
            return [(st, r, parts, c, m) for st, (r, parts, c, m) in zip(adm, self._last_plan)]
        if not adm:
            self._last_key, self._last_plan = key, []
            return []
        cl = self.cluster
        jobs = [s.job for s in adm]
        opts: dict[str, Any] = ({"place_all": True, "lp_bound": False}
                                if self.allocator == "synergy-opt" else {})
        alloc = allocate(cl, jobs, solver=self.allocator, time_limit=self.opt_time_limit, **opts)
        if self.allocator == "synergy-opt":
            self.stats["opt_rounds"] += 1
            self.stats["opt_optimal"] += int(alloc.stats.get("mip_status") == "optimal")
        by_job = {p.job: p for p in alloc.placements}
        out: list[tuple] = []
        cached: list[tuple | None] = []
        sidx = cl.server_index
        for st in adm:
            pl = by_job.get(str(st.id))
            if pl is None:
                cached.append(None)
                continue
            cnt: dict[int, int] = {}
            for g in pl.gpus:
                s = sidx[server_of(g.gpu)]
                cnt[s] = cnt.get(s, 0) + 1
            cpu = {sidx[k]: v for k, v in pl.cpu.items()}
            mem = {sidx[k]: v for k, v in pl.mem.items()}
            parts = tuple((s, cnt.get(s, 0), cpu.get(s, 0), mem.get(s, 0)) for s in sorted(cpu))
            tc, tm = sum(cpu.values()), sum(mem.values())
            r = pl.throughput
            if not self.span and len(parts) > 1:
                r /= st.profile.span_factor("cluster")
            out.append((st, r, parts, tc, tm))
            cached.append((r, parts, tc, tm))
        self._last_key = key
        self._last_plan = [c for c in cached if c is not None] if all(cached) else cached
        if not all(cached):
            self._last_key = None
        return out

    def _verify(self, t: float, runnable: list[JobState], plan) -> None:
        from ..check import violations
        cl = self.cluster
        gps = self.spec.gpus_per_server
        nextg = [0] * self.spec.servers
        placements = []
        from ..objectives import throughput
        for st, r, parts, c, m in plan:
            gids = []
            for s, k, _, _ in parts:
                gids += [gpu_key(cl.servers[s].id, nextg[s] + i) for i in range(k)]
                nextg[s] += k
            cpu = {cl.servers[s].id: cc for s, _, cc, _ in parts}
            mem = {cl.servers[s].id: mm for s, _, _, mm in parts}
            tp = throughput(cl, st.job, gids, c, m)
            placements.append(Placement(str(st.id), tuple(GpuShare(g, 1000) for g in gids),
                                        cpu, mem, round(tp, 9)))
            if self.span:
                assert abs(tp - r) < 1e-6, (st.id, tp, r)
        placed = {p.job for p in placements}
        unplaced = tuple(str(s.id) for s in runnable if str(s.id) not in placed)
        alloc = Allocation(tuple(placements), unplaced, status=Status.FEASIBLE)
        bad = violations(cl, [s.job for s in runnable], alloc)
        if bad:
            raise AssertionError(f"round at t={t}: {bad[0]}")
        if any(v > gps for v in nextg):
            raise AssertionError(f"round at t={t}: GPUs over-committed")

    # ---------------------------------------------------------------- run
    def _progress_bar(self, total: int):
        """A tqdm bar on stderr over the ``total`` measured jobs, or None when
        progress is off or tqdm is not installed."""
        if not self.progress:
            return None
        try:
            from tqdm import tqdm
            import sys
            return tqdm(total=total, unit="job", file=sys.stderr, leave=False,
                        desc=f"{self.order}/{self.allocator}")
        except ImportError:  # pragma: no cover
            return None

    def _advance(self, plan, t: float, t1: float) -> tuple[list[JobState], tuple]:
        """Run the placed jobs of ``plan`` over the round [t, t1).

        A job at rate ``r`` with work ``w - done`` left finishes at
        ``t + (w - done) / r`` if that is by ``t1``; otherwise it gains ``r * R``
        of work.  Returns the jobs that finished in the round and the round's
        utilisation sample ``(t, gpu, cpu, mem)``: the allocated GPU, CPU and
        memory-seconds over the cluster's total times ``R``.
        """
        R = self.R
        G, C, M = self.totals
        gs = cs = ms = 0.0
        finished = []
        for st, rate, parts, c, m in plan:
            if st.start is None:
                st.start = t
            if rate <= 0:
                continue
            need = (st.work - st.done) / rate
            if t + need <= t1:
                dt = need
                st.done = st.work
                st.finish = t + need
                finished.append(st)
            else:
                dt = R
                st.done += rate * dt
            st.attained += st.gpus * dt
            st.last_run = t + dt
            gs += st.gpus * dt
            cs += c * dt
            ms += m * dt
        return finished, (t, gs / (G * R), cs / (C * R), ms / (M * R))

    def run(self) -> SimResult:
        """Simulate round by round until every measured job has finished.

        The run also stops when no job is runnable and none is left to arrive,
        or at the first round starting at or after ``max_time_s``.

        Returns
        -------
        SimResult
            Arrival, start, finish and JCT (seconds) of the measured jobs that
            finished, the number of rounds, the simulated end time and the wall
            time (seconds), one utilisation sample per round, the allocator's
            counters (``stats["unfinished"]`` is the number of measured jobs
            not finished) and the arrival of each unfinished measured job.

        Raises
        ------
        ValueError
            If the workload is not a list or tuple (an endless stream) and no
            measurement window was given.
        """
        wall0 = time.perf_counter()
        R = self.R
        src = iter(self.jobs)
        nxt = next(src, None)
        runnable: dict[int, JobState] = {}
        w = self.window
        finite = isinstance(self.jobs, (list, tuple))
        if w is None and not finite:
            raise ValueError("an endless workload needs a measurement window")

        def measured(jid: int) -> bool:
            return w is None or w[0] <= jid <= w[1]
        jobs = self.jobs
        left = (w[1] - w[0] + 1) if w is not None else \
            (len(jobs) if isinstance(jobs, (list, tuple)) else 0)
        if w is not None and finite:
            left = sum(1 for j in self.jobs if measured(j.id))
        bar = self._progress_bar(left)
        res_jct: dict[int, float] = {}
        res_arr: dict[int, float] = {}
        res_fin: dict[int, float] = {}
        res_start: dict[int, float] = {}
        util = []
        G = self.totals[0]
        self._last_key, self._last_plan = None, []
        t = 0.0
        rounds = 0
        F = self.fast
        fast = F is not None
        verified, verified_n = None, -1
        inc = None
        if (self.incremental and fast and self.allocator != "synergy-greedy"
                and self.order in STATIC):
            inc = IncrementalOrder(self.order, self.totals, G * MILLI,
                                   lambda s: s.gpus * MILLI)
        while left > 0:
            while nxt is not None and nxt.arrival_s <= t:
                prof = self.profile(nxt.model)
                st = JobState(nxt, prof, self.kind(nxt.model, nxt.gpus))
                runnable[st.id] = st
                if F is not None:
                    F.add_job(st.id, st.gpus, st.opts)
                if inc is not None:
                    inc.add(st, t)
                nxt = next(src, None)
            if not runnable:
                if nxt is None:
                    break
                t = math.ceil(nxt.arrival_s / R) * R
                continue
            if self.max_time_s is not None and t >= self.max_time_s:
                break
            if inc is not None:
                ordered, same = inc.step(t)
                if same and self._last_key is not None:
                    self.stats["cache_hits"] += 1
                    plan = self._last_plan
                else:
                    plan = self._fast(ordered)
            else:
                ordered = order_jobs(list(runnable.values()), self.order, t, self.totals)
                plan = self._fast(ordered) if fast else self._solver(ordered)
            self.stats["allocations"] += 1
            if self.check and (plan is not verified or len(runnable) != verified_n):
                # a reused plan object on the same jobs was verified already
                self._verify(t, list(runnable.values()), plan)
                verified, verified_n = plan, len(runnable)
            if self.trace is not None:
                self.trace(t, plan)
            t1 = t + R
            finished, sample = self._advance(plan, t, t1)
            util.append(sample)
            for st in finished:
                del runnable[st.id]
                if F is not None:
                    F.drop_job(st.id)
                if measured(st.id):
                    assert st.finish is not None and st.start is not None  # set by _advance
                    res_jct[st.id] = st.finish - st.arrival
                    res_arr[st.id] = st.arrival
                    res_fin[st.id] = st.finish
                    res_start[st.id] = st.start
                    left -= 1
                    if bar is not None:
                        bar.update(1)
            if finished:
                self._last_key = None  # plans refer to finished jobs
                if inc is not None:
                    inc.remove_finished()
            rounds += 1
            t = t1
        if bar is not None:
            bar.close()
        stats = dict(self.stats)
        stats["unfinished"] = left
        pending = {j: st.arrival for j, st in runnable.items() if measured(j)}
        return SimResult(res_jct, res_arr, res_fin, res_start, rounds, t,
                         time.perf_counter() - wall0, util, stats, pending)


def simulate(cluster: ClusterSpec, jobs: Iterable[SimJob], **kw) -> SimResult:
    """Run one simulation (keyword arguments as [`Simulator`][alloc.sim.Simulator])."""
    return Simulator(cluster, jobs, **kw).run()

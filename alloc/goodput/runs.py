r"""The two artifacts' experiments on alloc's simulator, one call each.

`run_pollux` runs a Pollux-simulator workload (16 x 4 T4 GPUs) under
``pollux`` (genetic search), ``exact`` (its fitness maximised exactly each
round), ``tiresias`` (Tiresias+TunedJobs) or ``optimus``
(Optimus+Oracle+TunedJobs); `run_sia` runs a Sia-simulator workload on its
heterogeneous cluster (6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080 Ti) under
``sia``, ``exact`` (Sia's objective over the exact model's configurations),
``gavel`` (Gavel+TunedJobs, 360 s rounds) or ``pollux`` (Pollux blind to
GPU types on virtual nodes, as the Sia paper runs it:
`alloc.sched.pollux.unaware`).  Both return
`RunResult`: the simulator's result and the figures of the benches.

Metrics (seconds): average JCT; p99 JCT = the sorted JCTs' entry
``int(0.99 n)`` (the Sia artifact's); makespan = last completion minus
first arrival; restarts per job as the artifacts count them (every
reallocation after a job's first start); GPU-hours per job; the policy's
time per round (median, milliseconds).

Examples
--------
>>> from alloc.goodput.runs import POLLUX_POLICIES, SIA_POLICIES
>>> POLLUX_POLICIES, SIA_POLICIES
(('pollux', 'tiresias', 'optimus', 'exact'), ('sia', 'gavel', 'pollux', 'exact'))
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .progress import GoodputProgress
from .workload import pollux_cluster, read_workload, sia_cluster

POLLUX_POLICIES = ("pollux", "tiresias", "optimus", "exact")
SIA_POLICIES = ("sia", "gavel", "pollux", "exact")
#: The Sia artifact's GPU types, in its cluster order.
SIA_TYPES = ("T4", "A100", "RTX2080Ti")


@dataclass
class RunResult:
    """One run: the figures (`metrics`), the simulator's result, the policy object."""
    metrics: dict
    result: Any = None
    policy: Any = None
    progress: Any = None
    extra: dict = field(default_factory=dict)


def metrics(res: Any, progress: GoodputProgress, times: list[float], wall: float) -> dict:
    """The benches' figures of a finished run (module notes)."""
    jct = res.jct()
    vals = sorted(jct.values())
    n = len(vals)
    recs = getattr(res, "records", [])
    for r in recs:                       # a finish does not advance the job's own clock
        if r.state.get("goodput") is not None and r.finish_s is not None:
            progress.state(r, r.finish_s)
    sims = [r.state.get("goodput") for r in recs]
    tl = {r["id"]: r for r in res.timeline()}
    first = min((r["arrival_s"] for r in tl.values()), default=0.0)
    last = max((r["end_s"] for r in tl.values() if r.get("end_s") is not None), default=first)
    restarts = [s.restarts or 0 for s in sims if s is not None]
    gpu_h = [s.attained_service / 3600.0 for s in sims if s is not None]
    return {
        "avg_jct_s": sum(vals) / n if n else None,
        "p99_jct_s": vals[int(0.99 * n)] if n else None,
        "makespan_s": last - first,
        "restarts_per_job": sum(restarts) / len(restarts) if restarts else None,
        "gpu_hours_per_job": sum(gpu_h) / len(gpu_h) if gpu_h else None,
        "policy_ms_median": 1000.0 * statistics.median(times) if times else None,
        "wall_s": wall,
        "jobs": n,
        "unfinished": res.summary().get("unfinished"),
    }


class _Timed:
    """Times each call of an order's ``rank`` or a sizing's ``size``."""

    def __init__(self, obj: Any, method: str) -> None:
        self._obj, self._method = obj, method
        self.times: list[float] = []
        setattr(self, method, self._call)
        for attr in ("preemptive", "static"):
            if hasattr(obj, attr):
                setattr(self, attr, getattr(obj, attr))

    def _call(self, *a: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return getattr(self._obj, self._method)(*a)
        finally:
            self.times.append(time.perf_counter() - t0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._obj, name)


def _records(sim: Any) -> list:
    return list(sim.finished) + list(sim.records.values()) + list(getattr(sim, "unfinished", []))


def _simulate(cluster: Any, jobs: list, kw: dict) -> tuple[Any, float, list]:
    from ..sim.core import Simulator
    t0 = time.perf_counter()
    sim = Simulator(cluster, jobs, **kw)
    res = sim.run()
    res.records = _records(sim)
    return res, time.perf_counter() - t0, res.records


def run_pollux(workload: str | Path, policy: str = "pollux", *, interval: float = 60.0,
               seed: int = 0, traces: str | Path | None = None,
               max_time_s: float | None = None) -> RunResult:
    """One Pollux-simulator run (module notes).

    Raises
    ------
    InputError
        An unknown policy, a bad workload file (one line: file, row, column).
    """
    if policy not in POLLUX_POLICIES:
        raise InputError(f"policy: expected one of {', '.join(POLLUX_POLICIES)}, got {policy!r}")
    jobs = read_workload(workload)
    cluster = pollux_cluster()
    tuned = policy in ("tiresias", "optimus")
    prog = GoodputProgress(interval, batch="tuned" if tuned else "goodput", traces=traces)
    kw: dict = dict(round_s=interval, seed=seed, progress=prog, placement="freest-first",
                    max_time_s=max_time_s, name=f"pollux-{policy}")
    if policy == "tiresias":
        from ..sched.pollux.orders import TiresiasTJ
        obj: Any = _Timed(TiresiasTJ(preemptive=False), "rank")
        kw.update(order=obj, mechanism=obj._obj, candidates="all")
    elif policy == "optimus":
        from ..sched.pollux.orders import FewestGpus, OptimusOracle
        obj = _Timed(OptimusOracle(), "size")
        kw.update(order=FewestGpus(), sizing=obj)
    else:
        from ..sched.pollux.policy import Pollux, PolluxExact
        obj = Pollux(seed=seed) if policy == "pollux" else PolluxExact()
        kw.update(order="fifo", sizing=obj, mechanism=obj)
    res, wall, _ = _simulate(cluster, jobs, kw)
    return RunResult(metrics(res, prog, obj.times, wall), res, obj, prog)


def sia_root(artifact: str | Path) -> Path:
    """The Sia simulator's folder inside a fetched copy of the artifact
    (``DIR`` itself or ``DIR/sia-simulator``).

    Raises
    ------
    InputError
        Neither holds ``traces/`` and ``workloads/``.
    """
    p = Path(artifact)
    for cand in (p, p / "sia-simulator"):
        if (cand / "traces").is_dir() and (cand / "workloads").is_dir():
            return cand
    raise InputError(f"artifact {str(artifact)!r}: no sia-simulator/traces and workloads "
                     f"(expected a copy of siasosp23/artifacts)")


def run_sia(artifact: str | Path, workload: str | Path, policy: str = "sia", *,
            seed: int = 0, max_time_s: float | None = None) -> RunResult:
    """One Sia-simulator run (module notes); ``workload`` relative to the
    artifact's ``workloads/`` (``saturn/workload-1.csv``) or a path."""
    if policy not in SIA_POLICIES:
        raise InputError(f"policy: expected one of {', '.join(SIA_POLICIES)}, got {policy!r}")
    root = sia_root(artifact)
    wl = Path(workload)
    if not wl.is_file():
        wl = root / "workloads" / workload
    jobs = read_workload(wl)
    cluster = sia_cluster()
    round_s = 360.0 if policy == "gavel" else 60.0
    prog = GoodputProgress(round_s, flavour="sia", batch="tuned" if policy == "gavel" else "goodput",
                           traces=root / "traces", gpu_types=SIA_TYPES,
                           profiles="merged" if policy == "pollux" else "per-type")
    kw: dict = dict(round_s=round_s, seed=seed, progress=prog, placement="freest-first",
                    order="fifo", max_time_s=max_time_s, name=f"sia-{policy}")
    if policy == "sia":
        from ..sched.sia.policy import Sia
        obj: Any = Sia()
    elif policy == "gavel":
        from ..sched.sia.gavel import GavelTJ
        obj = GavelTJ(interval=round_s)
    elif policy == "exact":
        from ..sched.sia.policy import SiaExact
        obj = SiaExact()
    else:
        from ..sched.pollux.unaware import PolluxUnaware
        obj = PolluxUnaware(seed=seed)
    kw.update(sizing=obj, mechanism=obj)
    res, wall, _ = _simulate(cluster, jobs, kw)
    return RunResult(metrics(res, prog, obj.times, wall), res, obj, prog)


__all__ = ["POLLUX_POLICIES", "RunResult", "SIA_POLICIES", "SIA_TYPES", "metrics", "run_pollux",
           "run_sia", "sia_root"]

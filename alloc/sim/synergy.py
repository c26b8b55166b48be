r"""Synergy's rounds (Mohan et al., OSDI'22) on the one simulator.

Synergy's scheduler, as its simulator (msr-fiddle/synergy) runs it:

* every ``round_s`` seconds (300 by default) the runnable jobs are ranked by
  the order (``fifo``, ``srtf``, ``las``, ``ftf``, ``drf``, ``tetris``,
  ``tiresias``; a waiting job that has not run for 1000 h goes first:
  ``starvation_s``) and the GPU-only admission takes them in that order
  while their GPUs fit the cluster's (the simulator's ``candidates="fit"``);
* the admitted jobs are re-placed from scratch by the allocator
  (``proportional``, ``synergy-greedy``, ``synergy-tune``, ``synergy-opt``
  or any registered solver): the session allows any number of moves at no
  cost, and an allocator that declares ``migration`` answers from scratch
  (`alloc.engines.greedy.scratch`); for one that does not, the simulator
  stops every job before the round (``repack``);
* a job progresses at the throughput of its placement (`SynergyProfiles`:
  1.0 at its GPU-proportional CPU and memory on one server, its profile's
  speed at the CPU and memory it got, times the span factor when spread) and
  finishes at the exact instant its work is done; moves cost nothing.

A job's work is its duration at the proportional share (``duration_s``).

Examples
--------
>>> from alloc.sim.synergy import cluster, simulate_synergy
>>> from alloc.sim.workload import SyntheticWorkload
>>> jobs = SyntheticWorkload(2.0, seed=0).take(30)
>>> res = simulate_synergy(cluster(2), jobs, order="fifo", allocator="synergy-tune",
...                        window=(5, 24))
>>> res.summary()["jobs"]
20
"""
from __future__ import annotations

from typing import Any, Iterable

from ..model import Cluster, Server
from .core import simulate
from .jobs import WorkloadJob
from .progress import SynergyProfiles
from .result import SimResult

#: Synergy's starvation threshold: 1000 hours without running.
STARVATION_S = 1000 * 3600.0
#: Seconds per round.
ROUND_S = 300.0


def cluster(servers: int = 16, gpus: int = 8, cpu: int = 24000, mem: int = 512000,
            gpu_type: str = "V100") -> Cluster:
    """``servers`` identical servers (``s000``, ...) of ``gpus`` GPUs, ``cpu``
    milli-cores and ``mem`` MiB (Synergy's: 8 V100s, 24 cores, 500 GB)."""
    return Cluster(tuple(Server(f"s{i:03d}", cpu, mem, gpus, gpu_type) for i in range(servers)))


def simulate_synergy(cl: Cluster, jobs: Iterable[WorkloadJob], *, order: str = "fifo",
                     allocator: str = "synergy-tune", round_s: float = ROUND_S,
                     window: tuple[int, int] | None = None, max_time_s: float | None = None,
                     span: bool = True, opt_time_limit: float = 10.0,
                     starvation_s: float | None = STARVATION_S, seed: int = 0,
                     profiles: Any = None) -> SimResult:
    """One Synergy run (module notes).

    Parameters
    ----------
    cl : Cluster
        Identical servers (the proportional share is one server's CPU and
        memory per GPU).
    jobs : iterable of WorkloadJob
        A list, or an endless stream with ``window``.
    order : str
        A registered order policy.
    allocator : str
        A registered solver (or ``"module:function"``).
    round_s, window, max_time_s, seed
        As `alloc.sim.simulate`.
    span : bool
        False: a spread job runs at its one-server speed.
    opt_time_limit : float
        Seconds per round for ``synergy-opt`` (and any solver's round).
    starvation_s : float or None
        Synergy's starvation rule (None: off).
    profiles : mapping or callable, optional
        Models' profiles (default: the shipped ones).

    Returns
    -------
    SimResult
    """
    s0 = cl.servers[0]
    prog = SynergyProfiles(s0.cpu // s0.gpus, s0.mem // s0.gpus, profiles=profiles, span=span)
    place: Any = allocator
    if allocator == "synergy-opt":
        place = ("synergy-opt", {"place_all": True, "lp_bound": False})
    return simulate(cl, jobs, order=(order, {"starvation_s": starvation_s, "preemptive": False}),
                    placement=place, progress=prog, round_s=round_s, repack=True,
                    candidates="fit", window=window, max_time_s=max_time_s, seed=seed,
                    time_limit=opt_time_limit, name=f"synergy-{order}-{allocator}")


def legacy_summary(res: SimResult) -> dict:
    """The summary keys of ``alloc simulate CONFIG.json`` (the design's
    contract): ``jobs_measured``, ``mean_jct_s``, ``p50_jct_s``,
    ``p99_jct_s``, ``p999_jct_s``, ``makespan_s``, ``rounds``,
    ``end_time_s``, ``wall_time_s``, ``mean_util`` (GPU, CPU and memory
    allocated, time-weighted within each round, averaged over rounds),
    ``unfinished``, ``censored_mean_jct_s`` and ``stats``."""
    from .result import percentile
    s = res.summary()
    jcts = list(res.jct().values())
    util = res.stats.get("round_util") or []

    def mean(k: int) -> float:
        return float(sum(u[k] for u in util) / len(util)) if util else 0.0
    return {"jobs_measured": s["jobs"], "mean_jct_s": s["avg_jct_s"],
            "p50_jct_s": s["p50_jct_s"], "p99_jct_s": s["p99_jct_s"],
            "p999_jct_s": percentile(jcts, 99.9), "makespan_s": s["makespan_s"],
            "rounds": s["rounds"], "end_time_s": s["end_time_s"],
            "wall_time_s": s["wall_time_s"],
            "mean_util": {"gpu": mean(1), "cpu": mean(2), "mem": mean(3)},
            "unfinished": s["unfinished"], "censored_mean_jct_s": s["censored_avg_jct_s"],
            "stats": {k: s[k] for k in ("steps", "skipped", "moves", "preemptions",
                                        "restarts")}}


__all__ = ["ROUND_S", "STARVATION_S", "cluster", "legacy_summary", "simulate_synergy"]

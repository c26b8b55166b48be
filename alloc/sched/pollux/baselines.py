r"""The Pollux paper's baselines, as its simulator runs them.

Both keep each job at its *TunedJobs* total batch (the workload's
``batch_size``, split over the replicas) and place on 4-GPU nodes by
"freest node first": a job's GPUs come from the node with the most free
GPUs (the lowest index on ties), then the next, until it has them all.

**Tiresias+TJ** (two-dimensional LAS, discretised; Gu et al., NSDI'19):
two queues; a job enters queue 0 and moves to queue 1 once its executed
time times its TunedJobs GPU count reaches 16 GPU-hours (57,600 GPU-s).
Each round the jobs of queue 0 then queue 1, each queue in arrival order
into it, run at exactly their TunedJobs size while GPUs remain (a job that
does not fit is skipped and later jobs may run: backfill); running jobs keep
their GPUs, a job that no longer fits is stopped.  Executed time counts the
wall-clock seconds a job was selected to run, at the decision times.

**Optimus+Oracle+TJ** (Peng et al., EuroSys'18, with the true step times):
every active job gets one GPU (arrival order, while GPUs remain); then, one
GPU at a time, the job with the largest

$$ \big(T(K) - T(K+1)\big)\cdot \mathrm{remaining\ iterations} $$

gets one more (up to ``Mtj / bLo`` GPUs; ncf 1), where ``T(K)`` is the true
time per update with ``K`` GPUs packed 4 per node, the TunedJobs batch split
as $s = \lceil M/K/b_{hi}\rceil - 1$ (at least 1 with one GPU) and
remaining iterations are counted at the TunedJobs batch to the last epoch.
A job whose GPU count is unchanged keeps its GPUs.

Examples
--------
>>> from alloc.sched.pollux.baselines import freest_first
>>> free = {0: 4, 1: 4, 2: 2}
>>> freest_first(free, 6), free
([0, 0, 0, 0, 1, 1], {0: 0, 1: 2, 2: 2})
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ...goodput.job import SimJob
from ...goodput.model import EPS

#: Tiresias' demotion threshold between its two queues (GPU-seconds).
QUEUE_THRESHOLD_GPU_S = 16 * 3600


def freest_first(free: dict, gpus: int) -> list:
    """Take ``gpus`` GPUs from ``free`` (node -> free GPUs, in node order),
    the freest node first (the first such node on ties); ``free`` is updated.

    Returns the node of each GPU taken, grouped by node."""
    out: list = []
    while len(out) < gpus:
        node = max(free, key=lambda n: free[n])
        take = min(free[node], gpus - len(out))
        if take <= 0:
            raise ValueError("not enough free GPUs")
        out.extend([node] * take)
        free[node] -= take
    return out


def _free(nodes: Mapping, allocations: Mapping[str, Sequence]) -> dict:
    used: dict = {}
    for alloc in allocations.values():
        for n in alloc:
            used[n] = used.get(n, 0) + 1
    return {n: c - used.get(n, 0) for n, c in nodes.items() if c - used.get(n, 0) > 0}


class TiresiasTJ:
    """Tiresias with TunedJobs sizes, as the Pollux simulator runs it (module notes).

    Examples
    --------
    >>> from alloc.sched.pollux.baselines import TiresiasTJ
    >>> from alloc.goodput.job import SimJob
    >>> jobs = {"a": SimJob("a", "cifar10", 0, target_batch=2048, target_replicas=6)}
    >>> TiresiasTJ().optimize(jobs, {0: 4, 1: 4}, {}, 60)
    {'a': [0, 0, 0, 0, 1, 1]}
    """

    def __init__(self, threshold_gpu_s: float = QUEUE_THRESHOLD_GPU_S) -> None:
        self.threshold = threshold_gpu_s
        self.queue0: list[str] = []
        self.queue1: list[str] = []
        self.status: dict[str, str] = {}
        self.last_check: dict[str, int] = {}
        self.executed: dict[str, int] = {}

    def optimize(self, jobs: Mapping[str, SimJob], nodes: Mapping, prev: Mapping[str, list],
                 now: float) -> dict[str, list]:
        """Node lists per job (one entry per GPU) for the active ``jobs``."""
        t = int(now)
        self.queue0 = [k for k in self.queue0 if k in jobs]
        self.queue1 = [k for k in self.queue1 if k in jobs]
        self.status = {k: v for k, v in self.status.items() if k in jobs}
        alloc = {k: list(v) for k, v in prev.items() if k in jobs}
        for k in jobs:
            if k not in self.status:
                self.status[k] = "PENDING"
                self.queue0.append(k)
        for k, job in jobs.items():
            if self.status[k] == "RUNNING":
                self.executed[k] = int(self.executed.get(k, 0) + (t - self.last_check.get(k, 0)))
                self.last_check[k] = t
                if k in self.queue0 and \
                        int(self.executed[k] * (job.target_replicas or 1)) >= self.threshold:
                    self.queue0.remove(k)
                    self.queue1.append(k)
            else:
                self.last_check[k] = t
        left = sum(nodes.values())
        for queue in (self.queue0, self.queue1):
            for k in queue:
                need = jobs[k].target_replicas or 1
                if need <= left:
                    self.status[k] = "RUNNING"
                    left -= need
                else:
                    self.status[k] = "PENDING"
                    alloc.pop(k, None)
        free = _free(nodes, alloc)
        for queue in (self.queue0, self.queue1):
            for k in queue:
                if self.status[k] == "RUNNING" and not alloc.get(k):
                    alloc[k] = freest_first(free, jobs[k].target_replicas or 1)
        return alloc


def packed(replicas: int, per_node: int = 4) -> tuple[int, ...]:
    """``replicas`` packed ``per_node`` to a node: ``(4, 4, 2)`` for 10."""
    out: tuple[int, ...] = ()
    while sum(out) < replicas:
        out = (*out, min(replicas - sum(out), per_node))
    return out


def tuned_step_time(job: SimJob, replicas: int, per_node: int = 4) -> float:
    """The true seconds per update of ``job`` at its TunedJobs batch on
    ``replicas`` GPUs packed ``per_node`` to a node (Optimus' oracle)."""
    truth = job.truth
    lim = truth.limits
    batch = job.target_batch or lim.init
    local = math.ceil(batch / replicas - EPS)
    accum = math.ceil(local / lim.local_hi - EPS) - 1
    if replicas == 1:
        accum = max(1, accum)
    b = math.ceil(local / (accum + 1) - EPS)
    b = min(b, int(lim.max / (replicas * (accum + 1))))
    step, sync = truth.step_sync(packed(replicas, per_node), b)
    return step + (step - sync) * accum


class OptimusOracle:
    """Optimus+Oracle with TunedJobs batches, as the Pollux simulator runs it.

    Examples
    --------
    >>> from alloc.sched.pollux.baselines import OptimusOracle
    >>> from alloc.goodput.job import SimJob
    >>> jobs = {"a": SimJob("a", "cifar10", 0, target_batch=2048)}
    >>> len(OptimusOracle().optimize(jobs, {0: 4, 1: 4}, {}, 60)["a"])
    8
    """

    def optimize(self, jobs: Mapping[str, SimJob], nodes: Mapping, prev: Mapping[str, list],
                 now: float) -> dict[str, list]:
        """Node lists per job (one entry per GPU) for the active ``jobs``."""
        per_node = max(nodes.values())
        alloc = {k: list(v) for k, v in prev.items() if k in jobs}
        remaining = {}
        for k, job in jobs.items():
            truth = job.truth
            batch = job.target_batch or truth.limits.init
            end = truth.completion_epoch
            remaining[k] = 1.0 if end <= job.epoch else \
                truth.iteration(batch, end) - truth.iteration(batch, job.epoch)
        left = sum(nodes.values())
        k_of: dict[str, int] = {}
        gain: dict[str, float] = {}

        def max_k(job: SimJob) -> int:
            if job.model == "ncf":
                return 1
            return (job.target_batch or job.truth.limits.init) // job.truth.limits.local_lo

        def gain_of(k: str) -> float:
            job = jobs[k]
            if k_of[k] + 1 > max_k(job) or left < 1:
                return 0.0
            return (tuned_step_time(job, k_of[k], per_node)
                    - tuned_step_time(job, k_of[k] + 1, per_node)) * remaining[k]

        for k in jobs:
            if left < 1:
                k_of[k], gain[k] = 0, 0.0
                continue
            k_of[k] = 1
            left -= 1
            gain[k] = gain_of(k)
        while left > 0 and gain and max(gain.values()) > 0:
            best = max(gain, key=lambda k: gain[k])
            k_of[best] += 1
            gain[best] = gain_of(best)
            left -= 1
        alloc = {k: v for k, v in alloc.items() if len(v) == k_of[k]}
        free = _free(nodes, alloc)
        for k in sorted(jobs, key=lambda k: k_of[k]):
            if k_of[k] > 0 and not alloc.get(k):
                alloc[k] = freest_first(free, k_of[k])
        return alloc


__all__ = ["OptimusOracle", "QUEUE_THRESHOLD_GPU_S", "TiresiasTJ", "freest_first", "packed",
           "tuned_step_time"]

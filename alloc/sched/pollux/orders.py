r"""The Pollux artifact's baselines as scheduling policies.

Both run jobs at their *TunedJobs* configuration (the workload's
``num_replicas`` and ``batch_size``) and place them freest-first
(`alloc.solvers.goodput.freest`).

**Tiresias+TJ** (order ``tiresias-tj``; Gu et al., NSDI'19, as the Pollux
simulator runs it): two queues; a job enters queue 0 and moves to queue 1
once its executed time (wall-clock seconds it was selected to run, counted
at the decisions) times its GPUs reaches 16 GPU-hours (57,600 GPU-s).  The
ranking is queue 0 then queue 1, each in the order jobs entered it; the
round runs the ranked jobs that fit the GPUs left, skipping those that do
not (the simulator's ``candidates="fit"``); the order is preemptive.

**Optimus+Oracle+TJ** (sizing ``optimus-oracle``; Peng et al., EuroSys'18,
with the true step times): every active job gets one GPU (arrival order,
while GPUs remain); then one GPU at a time goes to the job with the largest

$$ \big(T(K) - T(K+1)\big)\cdot \mathrm{remaining\ iterations}, $$

up to ``Mtj / bLo`` GPUs (ncf: 1), where ``T(K)`` is the true time per
update at the TunedJobs batch with ``K`` GPUs packed 4 per node
(`alloc.sched.pollux.baselines.tuned_step_time`) and the remaining
iterations are counted at that batch to the last epoch.  Jobs are placed in
order of fewest GPUs (order ``fewest-gpus``), a job whose size is unchanged
keeping its GPUs.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("order", "tiresias-tj").build().preemptive
True
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..kinds import BaseMechanism, Context, JobView, KeyOrder, Size
from .baselines import QUEUE_THRESHOLD_GPU_S, tuned_step_time


class TiresiasTJ(BaseMechanism):
    """Tiresias' two queues with TunedJobs sizes (module notes).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster, Server
    >>> from alloc.sched import Context
    >>> from alloc.sched.pollux.orders import TiresiasTJ
    >>> c = Cluster((Server("s0", 8000, 64000, 4),))
    >>> o = TiresiasTJ()
    >>> o.rank([J(id="a", gpus=4), J(id="b", gpus=2)], Context(60.0, 1, c))
    ['a', 'b']

    Given as the run's mechanism too (the same object), it stops, before
    each round's placement, every running job the budget left out -- the
    artifact's rule -- instead of the core's fewest victims (the order is
    then non-preemptive and the run offers every job, ``candidates="all"``).
    """
    preemptive = True

    def __init__(self, threshold_gpu_s: float = QUEUE_THRESHOLD_GPU_S,
                 preemptive: bool = True) -> None:
        self.threshold = float(threshold_gpu_s)
        self.preemptive = preemptive
        self.queue0: list[str] = []
        self.queue1: list[str] = []
        self.running: dict[str, bool] = {}
        self.last: dict[str, int] = {}
        self.executed: dict[str, int] = {}

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """Queue 0 then queue 1; updates the queues first (module notes)."""
        t = int(ctx.now_s)
        by = {j.id: j for j in jobs}
        self.queue0 = [k for k in self.queue0 if k in by]
        self.queue1 = [k for k in self.queue1 if k in by]
        self.running = {k: v for k, v in self.running.items() if k in by}
        for j in jobs:
            if j.id not in self.running:
                self.running[j.id] = False
                self.queue0.append(j.id)
        for j in jobs:
            if self.running[j.id]:
                self.executed[j.id] = int(self.executed.get(j.id, 0) + t - self.last.get(j.id, 0))
                if j.id in self.queue0 and self.executed[j.id] * j.gpus >= self.threshold:
                    self.queue0.remove(j.id)
                    self.queue1.append(j.id)
            self.last[j.id] = t
        left = ctx.gpus_total
        for k in self.queue0 + self.queue1:
            need = by[k].gpus
            self.running[k] = need <= left
            if need <= left:
                left -= need
        return self.queue0 + self.queue1

    def before_step(self, ctl: Any) -> None:
        """As a mechanism: stop the running jobs the budget left out."""
        for k, run in self.running.items():
            r = ctl.jobs.get(k)
            if r is not None and r.running and not run:
                ctl.suspend(k, hold=False)


class FewestGpus(KeyOrder):
    """The fewest GPUs first (then arrival): the order Optimus places in."""
    preemptive = False

    def key(self, job: JobView, ctx: Context) -> Any:
        """The job's GPUs now."""
        return job.gpus


class OptimusOracle:
    """Optimus' greedy sizes from the true step times (module notes).

    It reads the jobs' simulated truth through the run's goodput progress
    model (`alloc.goodput.progress.GoodputProgress`)."""

    def size(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Size]:
        """A `Size` for every active job."""
        prog = ctx.progress
        if prog is None or not hasattr(prog, "state"):
            raise ValueError("optimus-oracle reads the goodput progress model's truth; run it "
                             "with alloc.goodput.progress.GoodputProgress")
        sims = {j.id: prog.state(j, ctx.now_s) for j in jobs}
        per_node = max((s.gpus for s in ctx.cluster.servers), default=4)
        remaining, max_k = {}, {}
        for k, sj in sims.items():
            truth = sj.truth
            batch = sj.target_batch or truth.limits.init
            end = truth.completion_epoch
            remaining[k] = 1.0 if end <= sj.epoch else \
                truth.iteration(batch, end) - truth.iteration(batch, sj.epoch)
            max_k[k] = 1 if sj.model == "ncf" else batch // truth.limits.local_lo
        left = ctx.gpus_total
        size: dict[str, int] = {}
        gain: dict[str, float] = {}

        def gain_of(k: str) -> float:
            if size[k] + 1 > max_k[k] or left < 1:
                return 0.0
            sj = sims[k]
            return (tuned_step_time(sj, size[k], per_node)
                    - tuned_step_time(sj, size[k] + 1, per_node)) * remaining[k]

        for k in sims:
            if left < 1:
                size[k], gain[k] = 0, 0.0
                continue
            size[k] = 1
            left -= 1
            gain[k] = gain_of(k)
        while left > 0 and gain and max(gain.values()) > 0:
            best = max(gain, key=lambda k: gain[k])
            size[best] += 1
            gain[best] = gain_of(best)
            left -= 1
        return {k: Size(v) for k, v in size.items()}


__all__ = ["FewestGpus", "OptimusOracle", "TiresiasTJ"]

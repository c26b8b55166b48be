r"""Gandiva's data as a progress model of the one simulator: rates,
interference of packed jobs, locality, switch costs, GPU utilisation and
early feedback.

A job of model $m$ has work $W_j = d_j \, r_m$ mini-batches ($d_j$ its
``duration_s`` alone, $r_m$ its mini-batch rate alone).  Running on $n$
GPUs it does $r_m \cdot f$ mini-batches per second, $f$ (its speed over
its speed alone) the product of

* its packing factor on a shared GPU: the interference rule of
  `alloc.sim.gandiva.data` over the models of the jobs sharing its GPU
  (1 alone);
* its locality factor: its model's ``spread`` factor on the servers it
  spans, over the one on the fewest servers that hold its GPUs
  (``server_gpus`` GPUs per server);
* for a grown or shrunk job, $n$ over its request (linear scaling).

Delays without progress at the start of a run: none at a job's first
start, nor when a job stopped at this very instant starts again on the same
GPUs (a slice boundary that suspends a job and packs it where it ran: it
never left its GPU); else its model's ``suspend_resume_s`` on a resume after a suspension or a
packing change onto another GPU; its ``migrate_s`` after a migration, a
resize or a restart after its server failed (the mechanism marks which in
the job's ``state``, `alloc.sched.gandiva.mechanism.COST_KEY`).  A stopped
job keeps all its progress (checkpointed at suspension points).

GPU utilisation (Gandiva Fig. 15 reports the jobs' utilisation, not the
share of GPUs allocated): a job making progress at factor $f$ on $n$ GPUs
adds $n \, u_m \, f$ busy GPUs; the model keeps the busy GPU-seconds in
bins of ``bin_s`` seconds (`GandivaProgress.util`).  It also keeps the time
each job reaches its ``feedback_mb``-th mini-batch (100 by default, as the
paper: early feedback).

Units: seconds, mini-batches, GPUs.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Mapping, Sequence

from ...errors import InputError
from ..progress import ProgressModel, Run
from .data import ModelSet

#: Mini-batches whose time marks early feedback (Gandiva section 6.3).
FEEDBACK_MB = 100.0
#: The job ``state`` key the mechanism sets (`alloc.sched.gandiva.mechanism.COST_KEY`).
COST_KEY = "gandiva_cost"


class GandivaProgress(ProgressModel):
    """Gandiva's per-model data as a progress model (see the module notes).

    Parameters
    ----------
    models : ModelSet
        The model set (`alloc.sim.gandiva.data.load_models`).
    server_gpus : int
        GPUs per server (for the tightest placement of a job).
    bin_s : float
        Seconds per utilisation bin.
    feedback_mb : float
        The N of "time to the first N mini-batches".

    Examples
    --------
    >>> from alloc.sim.gandiva import GandivaProgress, load_models
    >>> from alloc.sim.jobs import WorkloadJob
    >>> p = GandivaProgress(load_models())
    >>> j = WorkloadJob("a", 0.0, 1, duration_s=60.0, model="LSTM")
    >>> round(p.work(j) / p.models.models["LSTM"].rate_mbps, 6)
    60.0
    """
    name = "gandiva"
    gives = frozenset({"duration", "gpu-memory"})

    def __init__(self, models: ModelSet, server_gpus: int = 4, bin_s: float = 60.0,
                 feedback_mb: float = FEEDBACK_MB) -> None:
        super().__init__()
        if isinstance(feedback_mb, bool) or not isinstance(feedback_mb, (int, float)) \
                or not math.isfinite(feedback_mb) or feedback_mb <= 0:
            raise InputError(f"feedback_mb: expected a number > 0, got {feedback_mb!r}")
        self.models = models
        self.server_gpus = int(server_gpus)
        self.bin_s = float(bin_s)
        self.feedback_mb = float(feedback_mb)
        self.bins: list[float] = []
        self.feedback: dict[str, float] = {}

    # ------------------------------------------------------------- the model
    def spec(self, job: Any):
        """The job's model data; an unknown model is an InputError."""
        s = self.models.models.get(job.model)
        if s is None:
            raise InputError(f"job {job.id!r}: model: unknown model {job.model!r}; expected "
                             f"one of {', '.join(self.models.models)}")
        return s

    def work(self, job: Any) -> float:
        """``duration_s`` times the model's mini-batch rate alone."""
        if job.duration_s is None:
            raise InputError(f"job {job.id!r}: expected duration_s, got none")
        return float(job.duration_s) * self.spec(job).rate_mbps

    def alone_s(self, job: Any) -> float | None:
        """``duration_s``."""
        return job.duration_s

    def alone_rate(self, job: Any) -> float:
        """Mini-batches per second alone on its requested GPUs."""
        return self.spec(job).rate_mbps

    def factor(self, job: Any, run: Run) -> float:
        """Speed over speed alone: packing x locality x growth."""
        names = run.gpu_names
        if not names:
            return 0.0
        spec = self.spec(job)
        want = job.spec.gpus if hasattr(job, "spec") else job.gpus
        if len(names) == 1:
            mates = [job.model]
            for o in run.colocated:
                other = job.peer(o) if hasattr(job, "peer") else None
                if other is not None and other.run is not None and other.run.gpus == 1:
                    mates.append(other.model)
            return self.models.factors(mates)[0] * len(names) / want
        least = math.ceil(want / self.server_gpus)
        return spec.spread_factor(len(run.servers), least) * len(names) / want

    def rate(self, job: Any, run: Run) -> float:
        """The model's rate alone times `factor` (remembered for the utilisation)."""
        f = self.factor(job, run)
        spec = self.spec(job)
        st = job.state
        st["rate"], st["busy"] = spec.rate_mbps * f, len(run.gpu_names) * spec.gpu_util * f
        st["gpus"] = run.gpu_names
        return spec.rate_mbps * f

    def delay_s(self, job: Any, run: Run, cause: str) -> float:
        """See the module notes."""
        mark = job.state.pop(COST_KEY, None)
        if cause == "start" or (job.stopped_s == run.since_s
                                and job.state.get("gpus") == run.gpu_names):
            return 0.0        # stopped and started on the same GPUs at one instant: it ran on
        spec = self.spec(job)
        if mark == "migrate" or (mark is None and cause in ("migrate", "resize", "restart")):
            return spec.migrate_s
        return spec.suspend_resume_s

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """Its model's GPU memory (MiB per GPU)."""
        return {"gpu_mem": self.spec(job).gpu_mem_mib}

    # ------------------------------------------------------------ accounting
    def advanced(self, job: Any, run: Run, seconds: float, done: float) -> None:
        """Busy GPU-seconds and early feedback of the stretch that ends now."""
        self._account(job, job.t_mark, done)

    def finished(self, job: Any, run: Run, now: float) -> None:
        """The last stretch of a job whose work is done."""
        self._account(job, now, job.work)

    def _account(self, job: Any, now: float, done: float) -> None:
        st = job.state
        before = st.get("done", 0.0)
        st["done"] = done
        rate = st.get("rate", 0.0)
        if done <= before or rate <= 0:
            return
        t0 = max(0.0, now - (done - before) / rate)      # (float noise at a run's start)
        if job.id not in self.feedback and done >= self.feedback_mb:
            self.feedback[job.id] = t0 + (self.feedback_mb - before) / rate - job.arrival_s
        self._busy(t0, now, st.get("busy", 0.0))

    def _busy(self, t0: float, t1: float, gpus: float) -> None:
        b = self.bin_s
        k = int(t0 // b)
        bins = self.bins
        while t0 < t1:
            end = min(t1, (k + 1) * b)
            if k >= len(bins):
                bins.extend([0.0] * (k + 1 - len(bins)))
            bins[k] += gpus * (end - t0)
            t0, k = end, k + 1

    def util(self, total_gpus: int) -> list[float]:
        """GPU utilisation per bin (0..1) of a cluster of ``total_gpus`` GPUs."""
        return [v / (self.bin_s * total_gpus) for v in self.bins]


def mean_over(util: Sequence[float], bin_s: float, t0: float, t1: float) -> float:
    """The mean of the bins over ``[t0, t1)`` (missing bins count 0).

    Examples
    --------
    >>> from alloc.sim.gandiva import mean_over
    >>> mean_over([0.5, 1.0], 60.0, 0.0, 180.0)
    0.5
    """
    lo, hi = int(t0 // bin_s), int(math.ceil(t1 / bin_s))
    vals = [util[k] if k < len(util) else 0.0 for k in range(lo, hi)]
    return statistics.fmean(vals) if vals else 0.0


__all__ = ["COST_KEY", "FEEDBACK_MB", "GandivaProgress", "mean_over"]

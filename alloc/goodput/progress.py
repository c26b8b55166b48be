r"""The goodput jobs' progress model for alloc's simulator (`alloc.sim`).

Each job of a run keeps a `alloc.goodput.job.SimJob` (in ``job.state``):
the simulated truth of the Pollux or Sia artifact (true step times and
gradient statistics from the traces, epochs, restart delays, the profile it
learns and the batch it chooses).  The simulator's view of the job follows
it exactly:

* **work** is the job's total progress in ``M0``-iterations (the progress
  at the end of its last epoch);
* its state is advanced, before anything else happens to it, up to the
  instant (the artifacts advance every job by whole rounds, then decide);
* a new placement (a start, a move, a resize) is a reallocation of the
  `SimJob` (its restart delay is part of its own clock, so the simulator's
  ``delay_s`` is 0); a stop gives its GPUs back;
* its **rate** over the next round is what a look-ahead copy of the job
  does until the next round boundary: the progress it makes there over the
  round's length, or, if it finishes first, what is left over the time to
  its finish -- so the simulator's finish event lands on the artifact's
  completion time (epoch ends rounded to whole seconds, as there), and its
  progress matches at every boundary.

``round_s`` must be the run's round length.  The per-job GPU order of a
placement is kept (the traces key a placement by its nodes' GPU counts in
order, up to rotation).

Examples
--------
>>> from alloc import Cluster, Server
>>> from alloc.goodput.progress import GoodputProgress
>>> from alloc.sim import WorkloadJob
>>> m = GoodputProgress(round_s=60)
>>> round(m.work(WorkloadJob("c0", 0.0, 1, model="cifar10")), 1)
39062.9
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..sim.progress import ProgressModel, Run
from .job import SimJob, placement_of
from .traces import DEFAULT_TYPE, SPECS
from .truth import Truth, truth_of

#: How a job's batch is chosen.
BATCH_MODES = ("goodput", "tuned")
#: What a job's throughput model is fitted over.
PROFILE_MODES = ("per-type", "merged")


class GoodputProgress(ProgressModel):
    """Goodput jobs in the Pollux or Sia artifact's truth (module notes).

    Parameters
    ----------
    round_s : float
        The run's round length (s).
    flavour : {"pollux", "sia"}
        Whose simulator's rules: restarts on any change of GPUs (Pollux) or
        of GPU type or shape (Sia); Sia's slowdowns and restart delays.
    batch : {"goodput", "tuned"}
        ``goodput``: each job picks its batch by goodput (ncf, as in the
        Pollux artifact, keeps 32768); ``tuned``: it splits its workload's
        ``batch_size`` (TunedJobs).
    traces : path, optional
        The traces folder (default: the shipped Pollux traces).
    gpu_types : sequence of str
        GPU types jobs may run on (their traces must exist).
    profiles : {"per-type", "merged"}
        A job learns one throughput model per GPU type (Sia) or one for
        all types together (the Sia artifact's type-unaware Pollux).
    """
    name = "goodput"
    gives = frozenset({"goodput"})
    dynamic = True

    def __init__(self, round_s: float = 60.0, flavour: str = "pollux", batch: str = "goodput",
                 traces: str | Path | None = None, gpu_types: Sequence[str] = (DEFAULT_TYPE,),
                 profiles: str = "per-type") -> None:
        super().__init__()
        if flavour not in ("pollux", "sia"):
            raise InputError(f"progress: flavour: expected 'pollux' or 'sia', got {flavour!r}")
        if batch not in BATCH_MODES:
            raise InputError(f"progress: batch: expected one of {', '.join(BATCH_MODES)}, "
                             f"got {batch!r}")
        if profiles not in PROFILE_MODES:
            raise InputError(f"progress: profiles: expected one of {', '.join(PROFILE_MODES)}, "
                             f"got {profiles!r}")
        if not (isinstance(round_s, (int, float)) and round_s > 0):
            raise InputError(f"progress: round_s: expected a number > 0, got {round_s!r}")
        self.round_s = float(round_s)
        self.flavour, self.batch = flavour, batch
        self.merged = profiles == "merged"
        self.root = str(traces) if traces is not None else None
        self.gpu_types = tuple(gpu_types)
        self._nodes: dict[str, int] = {}
        self._cluster: Any = None
        #: Per round (its start, s): job id -> (GPUs, its mean rate to the
        #: round's end as a fraction of its work per second), as last given.
        self.rounds: dict[float, dict[str, tuple[int, float]]] = {}

    # ------------------------------------------------------------ helpers
    def truths(self, model: str) -> dict[str, Truth]:
        """The model's truth on each GPU type."""
        return {t: truth_of(model, t, self.root, self.flavour) for t in self.gpu_types}

    def sim_job(self, job: Any) -> SimJob:
        """The job's `SimJob` (made on first use)."""
        st = job.state
        sj = st.get("goodput")
        if sj is None:
            model = job.model
            if model not in SPECS:
                raise InputError(f"job {job.id!r}: model: unknown model {model!r}; expected "
                                 f"one of {', '.join(SPECS)}")
            extra = job.extra
            tb = int(extra["batch_size"]) if "batch_size" in extra else None
            tr = int(extra["num_replicas"]) if "num_replicas" in extra else job.gpus
            if self.batch == "tuned":
                sj = SimJob(job.id, model, job.arrival_s, target_batch=tb, target_replicas=tr,
                            tune_batch=False, flavour=self.flavour, truths=self.truths(model),
                            merged=self.merged)
            else:
                fixed = model == "ncf" and self.flavour == "pollux"
                sj = SimJob(job.id, model, job.arrival_s, target_batch=32768 if fixed else tb,
                            target_replicas=tr, tune_batch=not fixed, flavour=self.flavour,
                            truths=self.truths(model), merged=self.merged)
            st["goodput"] = sj
        return sj

    def state(self, job: Any, now: float | None = None) -> SimJob:
        """The job's `SimJob`, advanced to ``now`` (default: the run's instant)."""
        sj = self.sim_job(job)
        self._sync(sj, job._sim.now if now is None else now)
        return sj

    def _sync(self, sj: SimJob, now: float) -> None:
        if now > sj.current_time + 1e-9:
            sj.advance(now - sj.current_time)

    def _node_of(self, job: Any, gpu: str) -> int:
        cl = job._sim.session.cluster
        if cl is not self._cluster:
            self._cluster = cl
            self._nodes = dict(cl.server_index)
        return self._nodes[gpu.rsplit("/", 1)[0]]

    def _layout(self, job: Any, run: Run) -> tuple[tuple[int, ...], dict[int, int]]:
        p = run.placement
        if p is None or not p.gpus:
            return (), {}
        nodes = [self._node_of(job, g.gpu) for g in p.gpus]
        counts: dict[int, int] = {}
        for n in nodes:
            counts[n] = counts.get(n, 0) + 1
        return placement_of(nodes), counts

    # --------------------------------------------------------- the model
    def work(self, job: Any) -> float:
        """The job's total progress (M0-iterations)."""
        if job.model not in SPECS:
            raise InputError(f"job {job.id!r}: model: unknown model {job.model!r}; expected one "
                             f"of {', '.join(SPECS)}")
        t = truth_of(job.model, self.gpu_types[0], self.root, self.flavour)
        return t.progress_at(t.traces.max_epochs)

    def alone_s(self, job: Any) -> float | None:
        """Unknown (the run time depends on the batch the job learns to use)."""
        return None

    def delay_s(self, job: Any, run: Run, cause: str) -> float:
        """0: the restart delay is part of the job's own clock (module notes)."""
        return 0.0

    def rate(self, job: Any, run: Run) -> float:
        """The job's rate over the next round (module notes)."""
        sj = self.sim_job(job)
        now = job._sim.now
        self._sync(sj, now)
        seq, counts = self._layout(job, run)
        prev = job.state.get("goodput_counts")
        if counts != prev or (run.gpu_type or DEFAULT_TYPE) != sj.gpu_type:
            sj.reallocate(seq, run.gpu_type or DEFAULT_TYPE)
            job.state["goodput_counts"] = counts
        if not sj.placement:
            return 0.0
        done = job.done_at(now)
        if sj.done:
            return max(job.work - done, 0.0) / 1e-9
        nxt = (math.floor(now / self.round_s + 1e-9) + 1) * self.round_s
        horizon = nxt - now
        peek = sj.clone()
        peek.advance(horizon)
        if peek.done:
            tau = max(peek.completion_time - now, 1e-9)
            r = max(job.work - done, 0.0) / tau
            mean = r * min(tau, horizon) / horizon
        else:
            r = mean = max(peek.progress - done, 0.0) / horizon
        start = nxt - self.round_s
        self.rounds.setdefault(start, {})[job.id] = (sum(counts.values()), mean / job.work)
        return r

    def resume(self, job: Any, done: float) -> float:
        """A stop: the job is advanced to now and gives its GPUs back."""
        sj = self.sim_job(job)
        self._sync(sj, job._sim.now)
        sj.reallocate(())
        job.state["goodput_counts"] = {}
        return done

    def advanced(self, job: Any, run: Run, seconds: float, done: float) -> None:
        """The job is advanced to now."""
        self._sync(self.sim_job(job), job._sim.now)

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """Nothing beyond the defaults (GPU-proportional CPU and memory)."""
        return {}


__all__ = ["BATCH_MODES", "GoodputProgress", "PROFILE_MODES"]

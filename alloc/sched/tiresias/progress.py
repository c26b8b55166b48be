r"""The progress model of the Tiresias experiment: each job runs at its
duration alone on its GPUs (the artifact's trace gives it), wherever it is
placed, and pays a delay when it starts again after a preemption.

* **Rate**: 1 (its ``duration_s`` of work per second) on its requested
  GPUs, as `alloc.sim.progress.Alone`: the artifact's simulator "cannot
  determine job training time with the dynamic cluster environment; it uses
  actual job completion times" (§3 of its README, §5.1 of the paper), so a
  spread job runs as fast as a consolidated one.
* **Restart**: ``restart_s`` seconds without progress each time a
  preempted job runs again (its GPUs held, its progress kept: the model is
  checkpointed when it is paused, §4).  The artifact charges nothing (the
  default 0); the paper's testbed measured 13,724 s over 221 preemptions
  under Tiresias-L, 62.1 s each (`alloc.sched.tiresias.models.PREEMPTION_S`).
* **Consolidation**: a job whose model's skew exceeds ``packlimit``
  (Table 6, `alloc.sched.tiresias.models.consolidate`) and that fits one
  server asks for ``locality="server"``, so every placement -- the
  scheduler's and a preemption's -- keeps its GPUs on one server; with
  ``packlimit`` 1 (the default) no job does (the artifact's GPU counting).
"""
from __future__ import annotations

from typing import Any, Mapping

from ...sim.progress import Alone
from .models import consolidate


class TiresiasProgress(Alone):
    """`alloc.sim.progress.Alone` with Tiresias' restart delay and the
    consolidation of skewed models (see the module notes).

    Parameters
    ----------
    restart_s : float
        Seconds without progress after each restart (default 0).
    packlimit : float
        Jobs whose model's skew exceeds it ask to be consolidated on one
        server when they fit one (default 1: none).
    server_gpus : int
        GPUs of a server (the largest one), for "fits one server".

    Examples
    --------
    >>> from alloc.sim.jobs import WorkloadJob
    >>> from alloc.sched.tiresias.progress import TiresiasProgress
    >>> m = TiresiasProgress(restart_s=60.0, packlimit=0.5, server_gpus=4)
    >>> m.job_fields(WorkloadJob("a", 0.0, 2, duration_s=9.0, model="vgg16"), 2)
    {'locality': 'server'}
    >>> m.job_fields(WorkloadJob("b", 0.0, 2, duration_s=9.0, model="resnet50"), 2)
    {}
    >>> m.delay_s(None, None, "restart"), m.delay_s(None, None, "start")
    (60.0, 0.0)
    """
    name = "tiresias"

    def __init__(self, restart_s: float = 0.0, packlimit: float = 1.0,
                 server_gpus: int = 4) -> None:
        super().__init__(restart_s=restart_s)
        self.packlimit = float(packlimit)
        self.server_gpus = int(server_gpus)

    def job_fields(self, job: Any, gpus: int) -> Mapping[str, Any]:
        """``locality="server"`` for a skewed model's job that fits one server."""
        if gpus <= self.server_gpus and consolidate(job.model, self.packlimit):
            return {"locality": "server"}
        return {}


__all__ = ["TiresiasProgress"]

"""The one simulator: a stack of scheduling policies over time on a
[`Session`][alloc.session.Session].

`simulate` runs a cluster, a workload of `WorkloadJob` and a stack of
policies (admission, order, placement, sizing, shares, mechanism: by name
from the one registry, with parameters, or as objects) under a progress
model (`alloc.sim.progress`: how fast each job advances where it runs), in
fixed rounds (``round_s``) or event-driven, and returns a `SimResult`:
summary metrics (average and p99 JCT, makespan, utilisation, preemptions,
restarts, queueing delay, finish-time fairness) and the per-job timeline.
Every placement goes through ``Session.step`` (checked by ``violations()``)
or a session event.  See `alloc.sim.core` for the rules of a run.

Examples
--------
>>> from alloc import Cluster, Server
>>> from alloc.sim import WorkloadJob, simulate
>>> cluster = Cluster((Server("s0", cpu=32000, mem=256000, gpus=4),))
>>> jobs = [WorkloadJob("long", 0.0, 4, duration_s=1000.0),
...         WorkloadJob("short", 10.0, 4, duration_s=10.0)]
>>> simulate(cluster, jobs, order="srtf", placement="best-fit").jct()
{'short': 10.0, 'long': 1010.0}
"""
from .core import SERVER_EVENTS, ServerEvent, Simulator, simulate
from .jobs import JobRecord, WorkloadJob
from .progress import Alone, GavelTable, Progress, ProgressModel, Run, SynergyProfiles
from .result import SimResult
from .workload import MODEL_CLASSES, SyntheticWorkload

_GAVEL = ("GAVEL_CLUSTER", "GavelJob", "GavelResult", "ThroughputTable", "gavel_workload",
          "simulate_gavel")


def __getattr__(name):
    # the heterogeneous (Gavel) simulator, loaded on first use
    if name in _GAVEL:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.gavel"), name)
    raise AttributeError(name)


__all__ = ["Alone", "GavelTable", "JobRecord", "MODEL_CLASSES", "Progress", "ProgressModel",
           "Run", "SERVER_EVENTS", "ServerEvent", "SimResult", "Simulator", "SynergyProfiles",
           "SyntheticWorkload", "WorkloadJob", "simulate", *_GAVEL]

"""A simulator of Gandiva (Xiao et al., OSDI'18) and of its baseline.

* [alloc.sim.gandiva.data][]: per-model data (Gandiva Tables 1 and 2, with
  sources) and the interference rule of packed jobs;
* [alloc.sim.gandiva.workload][]: the section 6.3 and 6.4 workloads and the
  cluster;
* [alloc.sim.gandiva.engine][]: the event-driven simulator over a
  [GandivaScheduler][alloc.solvers.gandiva.scheduler.GandivaScheduler].
"""
from .data import ModelSet, ModelSpec, gpu_memory, load_models
from .engine import GandivaResult, GandivaSim, simulate
from .workload import SimJob, gandiva_cluster, packing_workload, trace_workload

__all__ = ["GandivaResult", "GandivaSim", "ModelSet", "ModelSpec", "SimJob", "gandiva_cluster",
           "gpu_memory", "load_models", "packing_workload", "simulate", "trace_workload"]

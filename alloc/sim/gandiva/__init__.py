"""Gandiva's experiments (Xiao et al., OSDI'18) on the one simulator: the
paper's data, its workloads and its progress model.  Gandiva's scheduler over
time is the ``gandiva`` mechanism of the scheduling layer
(`alloc.sched.gandiva`), its placement the ``gandiva`` solver.

* [alloc.sim.gandiva.data][]: per-model data (Gandiva Tables 1 and 2, with
  sources) and the interference rule of packed jobs;
* [alloc.sim.gandiva.workload][]: the section 6.3 and 6.4 workloads and the
  cluster, and the jobs as the simulator's workload (`workload_jobs`);
* [alloc.sim.gandiva.progress][]: rates, interference, locality, switch
  costs, GPU utilisation and early feedback as a progress model.
"""
from .data import ModelSet, ModelSpec, gpu_memory, load_models
from .progress import FEEDBACK_MB, GandivaProgress, mean_over
from .workload import (SimJob, gandiva_cluster, packing_workload, trace_jobs, trace_workload,
                       workload_jobs)

__all__ = ["FEEDBACK_MB", "GandivaProgress", "ModelSet", "ModelSpec", "SimJob",
           "gandiva_cluster", "gpu_memory", "load_models", "mean_over", "packing_workload",
           "trace_jobs", "trace_workload", "workload_jobs"]

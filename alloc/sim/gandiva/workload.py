"""The Gandiva experiments' workloads and clusters (Xiao et al., OSDI'18).

* Section 6.3 (`packing_workload`): ``jobs`` jobs arriving uniformly at
  random over ``hours`` hours; the model drawn from the mix of Table 1
  (groups of models with their probabilities, each model of a group equally
  likely); the GPU count drawn from the model's list; the work making it
  run ``U(30, 45)`` minutes alone.
* Section 6.4 (`trace_workload`): the models of Table 2 in the
  trace's shares; Poisson arrivals of ``jobs`` jobs over ``days`` days (by
  default as many as make the offered load 1, `trace_jobs`: the paper
  says only that the cluster is in high load); GPU
  counts of Philly's mix as Gavel draws them
  (`alloc.sim.workload.gpu_demand`, ``multi``) and durations of
  Gavel's Philly-derived distribution
  (`alloc.sim.workload.gavel_work_s`): the paper's trace is
  internal.
* Clusters: servers of 4 GPUs, 12 cores and 448 GB (section 6), GPU types
  alternating P100 and P40 ("about an equal mix").

Every job asks for 1 core and 16 GiB of host memory per GPU (assumed: the
paper gives none; with them CPU and memory never bind, as in the paper's
experiments, even with several jobs packed per GPU).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ...model import Cluster, Server
from ..workload import GPU_MIX, gavel_mean_work_s, gavel_work_s, gpu_demand
from .data import ModelSet

#: Server shape of the Gandiva cluster (section 6): 12 cores, 448 GB, 4 GPUs.
SERVER_CPU, SERVER_MEM, SERVER_GPUS = 12000, 448 * 1024, 4
#: Host resources each job asks per GPU (assumed).
JOB_CPU_PER_GPU, JOB_MEM_PER_GPU = 1000, 16384


@dataclass(frozen=True)
class SimJob:
    """One job of a workload: its model, GPUs, arrival (s) and work (seconds
    of running alone on its GPUs)."""
    id: str
    model: str
    gpus: int
    arrival: float
    work_s: float
    priority: int = 0
    weight: float = 1.0
    max_gpus: int | None = None


def gandiva_cluster(servers: int = 45, types: tuple[str, ...] = ("P100", "P40")) -> Cluster:
    """``servers`` servers of 4 GPUs, types alternating over ``types``."""
    if isinstance(servers, bool) or not isinstance(servers, int) or servers < 1:
        from ...errors import InputError
        raise InputError(f"servers: expected an integer >= 1, got {servers!r}")
    return Cluster(tuple(Server(f"s{i:03d}", SERVER_CPU, SERVER_MEM, SERVER_GPUS,
                                types[i % len(types)]) for i in range(servers)))


def _model(rng: random.Random, models: ModelSet) -> str:
    u, acc = rng.random(), 0.0
    for names, p in models.groups:
        acc += p
        if u < acc:
            return rng.choice(names)
    return rng.choice(models.groups[-1][0])


def packing_workload(models: ModelSet, jobs: int = 1000, hours: float = 2.0, seed: int = 0,
                     minutes: tuple[float, float] = (30.0, 45.0)) -> list[SimJob]:
    """The section 6.3 workload (see the module notes), by arrival."""
    _check(jobs, hours)
    rng = random.Random(seed)
    out = []
    for i in range(jobs):
        m = _model(rng, models)
        out.append(SimJob(f"j{i:04d}", m, rng.choice(models.models[m].gpus),
                          rng.uniform(0.0, hours * 3600.0), 60.0 * rng.uniform(*minutes)))
    out.sort(key=lambda j: (j.arrival, j.id))
    return out


def trace_workload(models: ModelSet, jobs: int = 440, days: float = 9.0, seed: int = 0,
                   max_gpus: int = 8) -> list[SimJob]:
    """The section 6.4 workload (see the module notes), by arrival."""
    _check(jobs, days)
    rng = random.Random(seed)
    rate = jobs / (days * 86400.0)
    t, out = 0.0, []
    for i in range(jobs):
        t += -math.log(1.0 - rng.random()) / rate
        m = _model(rng, models)
        out.append(SimJob(f"j{i:04d}", m, min(max_gpus, gpu_demand(rng, "multi")), t,
                          gavel_work_s(rng)))
    return out


def trace_jobs(load: float, gpus: int, days: float, max_gpus: int = 8) -> int:
    """Jobs whose expected GPU-time is ``load`` times what ``gpus`` GPUs
    give over ``days`` days: ``load * gpus * days / (E[GPUs] E[duration])``
    with the means of the section 6.4 workload's distributions."""
    mean_gpus = sum(min(n, max_gpus) * p for n, p in GPU_MIX["multi"])
    return max(1, round(load * gpus * days * 86400.0 / (mean_gpus * gavel_mean_work_s())))


def workload_jobs(jobs, models: ModelSet) -> list:
    """The jobs as the simulator's `alloc.sim.jobs.WorkloadJob`: ``duration_s``
    their work alone, their model, priority and weight, 1 core and 16 GiB
    per GPU, their model's GPU memory, and its GPU utilisation alone as the
    ``util`` column (what Gandiva's profiling measures).

    Examples
    --------
    >>> from alloc.sim.gandiva import SimJob, load_models, workload_jobs
    >>> w = workload_jobs([SimJob("a", "LSTM", 1, 0.0, 600.0)], load_models())[0]
    >>> w.duration_s, w.fields["cpu"], w.extra["util"] > 0
    (600.0, 1000, True)
    """
    from ..jobs import WorkloadJob
    out = []
    for j in jobs:
        spec = models.models.get(j.model)
        if spec is None:
            from ...errors import InputError
            raise InputError(f"jobs[{j.id!r}].model: unknown model {j.model!r}; expected one "
                             f"of {', '.join(models.models)}")
        out.append(WorkloadJob(j.id, j.arrival, j.gpus, duration_s=j.work_s, model=j.model,
                               priority=j.priority,
                               min_gpus=j.gpus if j.max_gpus else None, max_gpus=j.max_gpus,
                               extra={"util": spec.gpu_util},
                               fields={"cpu": JOB_CPU_PER_GPU * j.gpus,
                                       "mem": JOB_MEM_PER_GPU * j.gpus,
                                       "gpu_mem": spec.gpu_mem_mib, "weight": j.weight}))
    return out


def _check(jobs, span) -> None:
    from ...errors import InputError
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs: expected an integer >= 1, got {jobs!r}")
    if isinstance(span, bool) or not isinstance(span, (int, float)) or not span > 0 \
            or not math.isfinite(span):
        raise InputError(f"arrival window: expected a number > 0, got {span!r}")


__all__ = ["JOB_CPU_PER_GPU", "JOB_MEM_PER_GPU", "SERVER_CPU", "SERVER_GPUS", "SERVER_MEM",
           "SimJob", "gandiva_cluster", "packing_workload", "trace_jobs", "trace_workload",
           "workload_jobs"]

r"""AlloX (Le et al., EuroSys'20): jobs that run on a GPU or on CPUs at
different speeds, scheduled by a min-cost matching of jobs to (machine,
position) slots among the users with the worst fairness scores; and the
baselines of its simulator.

* `alloc.sched.allox.jobs`: jobs with a time on each kind, the trace format.
* `alloc.sched.allox.matching`: the min-cost bipartite matching.
* `alloc.sched.allox.rules`: the decision rule of each policy.
* `alloc.sched.allox.sim`: the experiment on the simulator: the cluster of
  GPU and CPU-node slots, the profiling runs, the progress model and the
  sizing policies registered here (each gives the jobs it starts one device
  of the kind it chose, and ``Size(0)`` to the ones that wait).

The share policy ``allox`` of [`alloc.shares`][alloc.shares] is another
thing: Gavel's reading of AlloX's matching over GPU *types* (jobs matched to
(type, position) slots), kept for heterogeneous GPU clusters.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("sizing", "allox").kind
'sizing'
"""
from ...options import Option
from ..registry import declare

_PROF = Option("profiling", "bool", True, "jobs wait for their probe runs on both kinds")
_M = "alloc.sched.allox.sim"

POLICIES = (
    declare("sizing", "allox", f"{_M}:allox", params=(
        Option("alpha", "float", 0.1, "share of the users (lowest fairness score first) considered",
               minimum=1e-9, maximum=1.0),
        Option("max_jobs", "int", 50, "jobs in one matching, at most", minimum=1), _PROF),
        summary="AlloX: min-cost matching of the worst-served users' jobs to GPU and CPU slots"),
    declare("sizing", "allox-plus", f"{_M}:allox_plus", params=(
        Option("timeout", "float", 500.0, "waiting time after which a job goes first", minimum=0.0),
        _PROF), summary="AlloX+: shortest (job, GPU or CPU) first, starving jobs first"),
    declare("sizing", "allox-sjf", f"{_M}:sjf", params=(_PROF,),
            summary="shortest estimated (job, GPU or CPU) first"),
    declare("sizing", "allox-srpt", f"{_M}:srpt", params=(_PROF,),
            summary="preemptive shortest remaining estimated time first, GPU or CPU"),
    declare("sizing", "allox-drf", f"{_M}:drf", params=(_PROF,),
            summary="DRF between users, each job on the kind it runs faster on"),
    declare("sizing", "allox-drf-fifo", f"{_M}:drf_fifo", params=(
        Option("profiling", "bool", False, "jobs wait for their probe runs on both kinds"),),
        summary="DRF with FIFO queues, every job on a GPU"),
    declare("sizing", "allox-drf-ext", f"{_M}:drf_ext", params=(
        Option("beta", "float", 32.0, "cores one GPU is worth (the mean of cpu*p_cpu/(gpu*p_gpu))",
               minimum=1e-9), _PROF),
        summary="DRF over virtual cores (CPU + beta x GPU) and memory"),
    declare("sizing", "allox-es", f"{_M}:es", params=(
        Option("vector", "bool", True, "shares as (cores, GPUs, memory) vectors, as the AlloX "
               "simulator checks them"), _PROF),
        summary="static equal shares of GPUs and CPU nodes per user"),
)

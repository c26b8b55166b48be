"""Pollux (OSDI'21) and the baselines of its simulator, as policies.

* sizing ``pollux`` -- goodput-driven co-adaptive allocation: each round,
  every job's GPUs and nodes by Pollux's genetic search over the power mean
  of goodput speed-ups with restart factors (`alloc.sched.pollux.policy`);
* sizing ``pollux-exact`` -- the same fitness maximised exactly each round
  (`alloc.goodput.patterns`);
* sizing ``pollux-unaware`` -- Pollux blind to GPU types on a heterogeneous
  cluster, as the Sia paper runs it (`alloc.sched.pollux.unaware`);
* order ``tiresias-tj`` -- Tiresias' two queues at TunedJobs sizes;
* sizing ``optimus-oracle`` and order ``fewest-gpus`` -- Optimus' greedy
  sizes from the true step times (`alloc.sched.pollux.orders`).

``pollux`` and ``pollux-exact`` decide each job's exact GPUs: give the
built object as the run's sizing *and* its mechanism
(`alloc.sched.pollux.decide`; as a sizing alone, the run's placement solver
places the jobs at the sizes chosen).  All of them read the goodput
progress model's truth (`alloc.goodput.progress.GoodputProgress`).
"""
from ...options import Option
from ..registry import declare

POLICIES = (
    declare("sizing", "pollux", "alloc.sched.pollux.policy:Pollux", needs=("goodput",),
            params=(Option("seed", "int", None, "seed of the search (default: the run's)",
                           nullable=True),
                    Option("pop_size", "int", 100, "NSGA-II population"),
                    Option("generations", "int", 100, "NSGA-II generations")),
            summary="Pollux: GPUs, nodes and batch per job by goodput, genetic search of the "
                    "power mean of speed-ups with restart factors"),
    declare("sizing", "pollux-exact", "alloc.sched.pollux.policy:PolluxExact",
            needs=("goodput",),
            params=(Option("time_limit", "float", 10.0, "seconds per round's exact model"),
                    Option("engine", "str", "highs", "kernel engine",
                           choices=("highs", "cpsat", "cbc"))),
            summary="Pollux's fitness maximised exactly each round (pattern model, proven "
                    "bound): GPUs, nodes and batch per job"),
    declare("sizing", "pollux-unaware", "alloc.sched.pollux.unaware:PolluxUnaware",
            needs=("goodput",),
            params=(Option("seed", "int", None, "seed of the search (default: the run's)",
                           nullable=True),
                    Option("pop_size", "int", 100, "NSGA-II population"),
                    Option("generations", "int", 100, "NSGA-II generations"),
                    Option("reference_type", "str", "T4",
                           "GPU type whose batch limits the speed-ups use")),
            summary="Pollux blind to GPU types (the Sia paper's baseline): its search on "
                    "virtual nodes, each job kept to its majority type"),
    declare("order", "tiresias-tj", "alloc.sched.pollux.orders:TiresiasTJ",
            params=(Option("threshold_gpu_s", "float", 57600.0,
                           "GPU-seconds after which a job leaves the first queue"),
                    Option("preemptive", "bool", True, "running jobs below the budget stop")),
            summary="Tiresias (two queues, 16 GPU-h) at TunedJobs sizes, as Pollux's "
                    "simulator runs it"),
    declare("order", "fewest-gpus", "alloc.sched.pollux.orders:FewestGpus",
            summary="fewest GPUs first, then arrival (Optimus' placement order)"),
    declare("sizing", "optimus-oracle", "alloc.sched.pollux.orders:OptimusOracle",
            needs=("goodput",),
            summary="Optimus+Oracle: greedy GPUs by true step-time gain x remaining iterations, "
                    "TunedJobs batch"),
)

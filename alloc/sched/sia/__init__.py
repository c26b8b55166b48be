"""Sia (SOSP'23) and the baselines of its simulator, as policies.

* sizing ``sia`` -- heterogeneity-aware goodput allocation: each round
  an integer program picks one (GPU type, nodes, GPUs) configuration per
  job from its goodput matrix (projected onto types it has not run on),
  with restart factors; Sia's placement rule carries it out
  (`alloc.sched.sia.policy`);
* sizing ``gavel-tj`` -- Gavel's max-sum-throughput time shares at
  TunedJobs sizes, as the Sia simulator runs it (`alloc.sched.sia.gavel`).

Both decide each job's exact GPUs: give the built object as the run's
sizing and mechanism (`alloc.sched.pollux.decide`).  Both read the goodput
progress model's truth (`alloc.goodput.progress.GoodputProgress`).
"""
from ...options import Option
from ..registry import declare

POLICIES = (
    declare("sizing", "sia", "alloc.sched.sia.policy:Sia", needs=("goodput",),
            params=(Option("p", "float", -0.5, "fairness exponent of the goodput matrix"),
                    Option("lambda_n", "float", 1.1, "cost of a job left without GPUs"),
                    Option("engine", "str", "highs", "kernel engine for the program",
                           choices=("highs", "cpsat", "cbc"))),
            summary="Sia: one (GPU type, nodes, GPUs) configuration per job by an integer "
                    "program over its goodput matrix, restart factors, Sia's placement"),
    declare("sizing", "gavel-tj", "alloc.sched.sia.gavel:GavelTJ", needs=("goodput",),
            params=(Option("interval", "float", 360.0, "round length of its time accounting (s)"),
                    Option("engine", "str", "highs", "kernel engine for the linear program",
                           choices=("highs", "cpsat", "cbc"))),
            summary="Gavel's max-sum-throughput time shares at TunedJobs sizes, as the Sia "
                    "simulator runs it"),
)

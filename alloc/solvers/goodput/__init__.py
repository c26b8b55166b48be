"""Goodput-driven elastic placement (Pollux, OSDI'21; Sia, SOSP'23).

* ``goodput`` -- exact: every job's GPU type, GPU count, servers and batch
  maximising a power mean of goodput speed-ups with restart factors, over
  every placement in which a server hosts at most one multi-server job,
  with a proven bound (`alloc.solvers.goodput.exact`,
  `alloc.goodput.patterns`);
* ``freest-first`` -- the Pollux artifact's baselines' placement: a job's
  GPUs from the server with the most free GPUs first
  (`alloc.solvers.goodput.freest`);
* Pollux's genetic search (`alloc.goodput.ga`) is the search the
  ``pollux`` policy runs (`alloc.sched.pollux`).

The goodput model itself is `alloc.goodput`.
"""
from ...options import Option
from ...registry import declare

SOLVERS = (
    declare("goodput", "alloc.solvers.goodput.exact:solve", exact=True,
            # "preemption": inputs without goodput jobs are cpsat's, which may stop
            # running jobs; goodput inputs keep every running job (or move it)
            capabilities=("goodput", "elastic", "spread", "migration", "order-preemption",
                          "preemption"),
            options=(
                Option("p", "float", -1.0,
                       "fairness exponent of the power mean of speed-ups (1: the throughput "
                       "objective itself, proven; < 0 fairer, Pollux's -1)"),
                Option("engine", "str", "highs", "integer-programming engine (alloc.kernel)",
                       choices=("highs", "cpsat", "cbc")),
            ),
            description="Exact goodput placement: GPU type, count, servers and batch per job, "
                        "power-mean fairness and restart factors, proven bound"),
    declare("freest-first", "alloc.solvers.goodput.freest:solve", objectives=(),
            capabilities=("spread", "order-preemption"),
            description="each job's GPUs from the freest servers first, jobs in order (the "
                        "Pollux artifact's baselines' placement)"),
)

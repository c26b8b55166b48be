"""Tiresias (Gu et al., NSDI'19): discretised 2D-LAS and 2D-Gittins orders,
and the baselines of its evaluation (`alloc.sched.tiresias.orders`).

* ``tiresias-l`` -- Discretised 2D-LAS: K queues on attained GPU-seconds,
  FIFO on start time within a queue, optional starvation promotion;
* ``tiresias-g`` -- Discretised 2D-Gittins index: the same queues, within a
  queue the highest Gittins index of the job's service first;
* ``yarn-cs`` -- FIFO, non-preemptive (with the strict consolidated
  placement ``yarn``: head-of-line blocking);
* ``best-effort`` -- FIFO, non-preemptive (with ``yarn`` placement that
  lets later jobs jump);
* ``srsf`` -- shortest remaining service (GPU-seconds) first, an oracle.

The placements of the experiment are solvers (``yarn``, ``tiresias``:
`alloc.solvers.tiresias`); the models' skew and preemption costs are in
`alloc.sched.tiresias.models`.
"""
from ...options import Option
from ..registry import declare

_QUEUES = (
    Option("queues", "int", 2, "K, the number of priority queues", minimum=1),
    Option("threshold", "float", 3200.0,
           "the first queue's threshold on attained service, GPU-seconds (the next ones double)",
           minimum=0.0),
    Option("thresholds", "any", None,
           "all K - 1 ascending thresholds in GPU-seconds (overrides threshold)", nullable=True),
    Option("promote_knob", "float", None,
           "PROMOTEKNOB: a waiting job goes back to the first queue when its waiting time "
           "reaches this many times its run time (null: never)", minimum=0.0, nullable=True),
    Option("fifo", "str", "queue",
           "the order within a queue: 'queue' (the authors' simulator: the order jobs entered "
           "it, running jobs ahead of waiting ones) or 'start' (the paper: first start time)",
           choices=("queue", "start")),
)
_PREEMPTIVE = Option("preemptive", "bool", True,
                     "a running job ranked below a waiting one that cannot otherwise be placed "
                     "may be stopped for it")
_NON_PREEMPTIVE = Option("preemptive", "bool", False,
                         "a running job ranked below a waiting one that cannot otherwise be "
                         "placed may be stopped for it (false for YARN-CS and Best-effort)")

POLICIES = (
    declare("order", "tiresias-l", "alloc.sched.tiresias.orders:TiresiasL", needs=("attained",),
            params=_QUEUES + (_PREEMPTIVE,),
            summary="Tiresias discretised 2D-LAS: K queues on attained GPU-seconds, FIFO on "
                    "start time within a queue"),
    declare("order", "tiresias-g", "alloc.sched.tiresias.orders:TiresiasG",
            needs=("attained", "duration"),
            params=(Option("samples", "str", "",
                           "CSV of job services (column gpu_s or duration, GPU-seconds) for the "
                           "Gittins index; empty: the arrived jobs' GPUs x run time"),
                    Option("last_queue", "str", "index",
                           "the last queue's order: the Gittins index with the last threshold as "
                           "quantum (the authors' simulator) or FIFO on start time (the paper)",
                           choices=("index", "fifo")))
            + _QUEUES + (_PREEMPTIVE,),
            summary="Tiresias discretised 2D-Gittins index: K queues, the highest Gittins index "
                    "of attained GPU-seconds first within a queue"),
    declare("order", "yarn-cs", "alloc.sched.tiresias.orders:YarnCs", params=(_NON_PREEMPTIVE,),
            summary="YARN-CS: FIFO, non-preemptive (with the strict consolidated placement yarn)"),
    declare("order", "best-effort", "alloc.sched.tiresias.orders:BestEffort",
            params=(_NON_PREEMPTIVE,),
            summary="Best-effort: FIFO, non-preemptive (with placement yarn, skip=true)"),
    declare("order", "srsf", "alloc.sched.tiresias.orders:Srsf", needs=("duration",),
            params=(_PREEMPTIVE,),
            summary="shortest remaining service first: GPUs x remaining run time (an oracle)"),
)

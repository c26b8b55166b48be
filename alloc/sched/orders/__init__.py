"""Job orders that need no system of their own: arrival, remaining time,
attained service (`basic`), finish-time fairness, dominant share, Tetris'
packing score (`fairness`) and Tiresias' discretised two-dimensional LAS
(`queues`).  Each is a `alloc.sched.kinds.KeyOrder` (smallest key first;
ties to the earlier arrival, then the lower id)."""
from ...options import Option
from ..registry import declare

#: The parameter every order takes.
PREEMPTIVE = Option("preemptive", "bool", True,
                    "a running job ranked below a waiting one that cannot otherwise be placed "
                    "may be stopped for it")

#: Synergy's starvation rule, off by default.
STARVATION = Option("starvation_s", "float", None,
                    "a waiting job that has not run for this many seconds goes first (Synergy's "
                    "schedulers: 3600000, 1000 h)", minimum=0, nullable=True)

POLICIES = (
    declare("order", "fifo", "alloc.sched.orders.basic:Fifo", params=(PREEMPTIVE, STARVATION),
            summary="first in, first out: the earliest arrival first"),
    declare("order", "priority", "alloc.sched.orders.basic:Priority", needs=("priority",),
            params=(PREEMPTIVE, STARVATION),
            summary="the highest priority first, FIFO among equals"),
    declare("order", "srtf", "alloc.sched.orders.basic:Srtf", needs=("duration",),
            params=(PREEMPTIVE, STARVATION),
            summary="shortest remaining time first (an oracle of each job's run time)"),
    declare("order", "las", "alloc.sched.orders.basic:Las", needs=("attained",),
            params=(PREEMPTIVE, STARVATION,
                    Option("quantum_gpu_s", "float", None, "attained GPU-seconds counted in "
                           "steps of this many (ties within a step go by arrival)",
                           minimum=0, nullable=True)),
            summary="least attained service first, in GPU-seconds"),
    declare("order", "ftf", "alloc.sched.orders.fairness:Ftf", needs=("duration",),
            params=(PREEMPTIVE, STARVATION),
            summary="finish-time fairness: the job whose finish is most stretched against "
                    "running alone first (Themis' rho)"),
    declare("order", "drf", "alloc.sched.orders.fairness:Drf", needs=("profile",),
            params=(PREEMPTIVE, STARVATION),
            summary="smallest dominant share of the job's best-case GPU, CPU and memory first"),
    declare("order", "tetris", "alloc.sched.orders.fairness:Tetris",
            needs=("duration", "profile"), params=(PREEMPTIVE, STARVATION),
            summary="smallest remaining time times normalised best-case demand first "
                    "(Tetris' score, Synergy's baseline)"),
    declare("order", "tiresias", "alloc.sched.orders.queues:DiscretisedLas",
            needs=("attained",),
            params=(PREEMPTIVE, STARVATION,
                    Option("thresholds", "any", [3250.0], "ascending queue limits on attained "
                           "GPU-seconds (K-1 of them for K queues)"),
                    Option("promote_knob", "float", 8.0, "a job waiting longer than this many "
                           "times its executed time goes back to the first queue (inf: never)",
                           minimum=0)),
            summary="Tiresias' discretised 2D-LAS: queues of attained GPU-seconds, FIFO within "
                    "a queue, starving jobs promoted"),
)

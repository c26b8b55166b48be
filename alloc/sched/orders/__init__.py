"""Job orders that need no system of their own: arrival, remaining time,
attained service.  Each is a `alloc.sched.kinds.KeyOrder` (smallest key
first; ties to the earlier arrival, then the lower id)."""
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
    declare("order", "srtf", "alloc.sched.orders.basic:Srtf", needs=("duration",),
            params=(PREEMPTIVE, STARVATION),
            summary="shortest remaining time first (an oracle of each job's run time)"),
    declare("order", "las", "alloc.sched.orders.basic:Las", needs=("attained",),
            params=(PREEMPTIVE, STARVATION), summary="least attained service first, in GPU-seconds"),
)

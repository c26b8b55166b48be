r"""The three orders every scheduler compares against.

* ``fifo``: key $a_j$, the arrival time.
* ``srtf``: key $d_j - w_j$, the remaining run time alone (an oracle: the
  workload's duration less the work done); jobs whose duration is unknown
  go last.
* ``las``: key $\sum_t g_j(t)\,\Delta t$, the attained service in
  GPU-seconds (GPUs held times seconds held), so a wide job ages faster
  than a narrow one (Tiresias' two-dimensional attained service, without
  its discretisation into queues).

With ``starvation_s`` a waiting job that has not run for that long goes
first (`alloc.sched.kinds.KeyOrder`).  All three are preemptive by default (a running job ranked below a waiting
one that cannot otherwise be placed may be stopped for it); pass
``preemptive=False`` for the non-preemptive variant.
"""
from __future__ import annotations

import math
from typing import Any

from ..kinds import Context, JobView, KeyOrder


class _Order(KeyOrder):
    def __init__(self, preemptive: bool = True, starvation_s: float | None = None) -> None:
        self.preemptive = preemptive
        self.starvation_s = starvation_s


class Fifo(_Order):
    """The earliest arrival first.

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.orders.basic import Fifo
    >>> Fifo().rank([J(id="b", arrival_s=5.0), J(id="a", arrival_s=1.0)], Context(9.0, 1, Cluster(())))
    ['a', 'b']
    """
    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """Its arrival time (s)."""
        return job.arrival_s


class Srtf(_Order):
    """The shortest remaining run time first (unknown durations last)."""
    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """Its remaining run time alone (s); infinity when unknown."""
        left = job.remaining_s
        return math.inf if left is None else left


class Las(_Order):
    """The least attained service (GPU-seconds) first."""
    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """Its attained service (GPU-seconds)."""
        return job.attained_gpu_s

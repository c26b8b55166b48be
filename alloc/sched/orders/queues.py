r"""Tiresias' discretised two-dimensional LAS (Gu et al., NSDI'19, §3.2).

A job's 2D attained service is $a_j = \sum_t g_j(t)\,\Delta t$ (GPU-seconds);
its queue is $q_j = |\{k : T_k \le a_j\}|$ for ascending thresholds
$T_1 < \dots < T_{K-1}$ (queue 0 holds $a_j < T_1$).  Jobs go by queue,
then by arrival (FIFO within a queue), then by id.  Starvation: a job in a
lower queue whose waiting time since it last ran exceeds $P \cdot e_j$ is put
in queue 0, where the paper's $e_j$ is the job's last execution time; a
job's record keeps no run lengths, so $e_j$ is its executed seconds so far,
$a_j / g_j$, an upper bound of the last run: a job is promoted no earlier than
in the paper.  The paper also resets a promoted job's attained service; here
the key is a function of the job's state, so the promotion lasts while the job
waits, and once it runs it goes back to the queue of its attained service.
The key changes while a job waits, so the order is not static.

Defaults: two queues split at 3,250 GPU-s, the default of the GPU-time
discretised LAS in the authors' simulator (SymbioticLab/Tiresias,
``simulator/jobs.py``, ``queue_limit[0]``); $P = 8$ (the paper leaves
PROMOTEKNOB a knob; infinity disables promotion).  Tiresias-L/G, Gittins and
the paper's baselines are `alloc.sched.tiresias`' policies.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from typing import Any, Sequence

from ...errors import InputError
from ..kinds import Context, JobView, KeyOrder

#: Queue limits in GPU-seconds (two queues).
THRESHOLDS = (3250.0,)
#: PROMOTEKNOB.
PROMOTE_KNOB = 8.0


def queue(attained: float, thresholds: Sequence[float] = THRESHOLDS) -> int:
    """The queue of a job with ``attained`` GPU-seconds.

    Examples
    --------
    >>> from alloc.sched.orders.queues import queue
    >>> queue(0.0), queue(3249.0), queue(3250.0)
    (0, 0, 1)
    """
    return bisect_right(thresholds, attained)


class DiscretisedLas(KeyOrder):
    """Tiresias' discretised 2D-LAS (module notes).

    Parameters
    ----------
    preemptive : bool
    starvation_s : float or None
        Synergy's starvation rule on top (None: off).
    thresholds : sequence of float
        Ascending queue limits (GPU-seconds).
    promote_knob : float
        PROMOTEKNOB (``inf``: never promote).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.orders.queues import DiscretisedLas
    >>> old = J(id="old", arrival_s=0.0, attained_gpu_s=5000.0, gpus=1, running=True,
    ...         last_run_s=100.0)
    >>> new = J(id="new", arrival_s=50.0, attained_gpu_s=0.0, gpus=1, running=False,
    ...         last_run_s=50.0)
    >>> DiscretisedLas().rank([old, new], Context(100.0, 1, Cluster(())))
    ['new', 'old']
    """

    def __init__(self, preemptive: bool = True, starvation_s: float | None = None,
                 thresholds: Sequence[float] = THRESHOLDS,
                 promote_knob: float = PROMOTE_KNOB) -> None:
        try:
            t = tuple(float(x) for x in thresholds)
        except (TypeError, ValueError):
            raise InputError(f"thresholds: expected a list of numbers, got {thresholds!r}") \
                from None
        if any(b <= a for a, b in zip(t, t[1:])) or any(x < 0 or math.isnan(x) for x in t):
            raise InputError(f"thresholds: expected ascending numbers >= 0, got {list(t)}")
        if not promote_knob > 0:
            raise InputError(f"promote_knob: expected a number > 0, got {promote_knob!r}")
        self.preemptive, self.starvation_s = preemptive, starvation_s
        self.thresholds, self.promote_knob = t, float(promote_knob)

    def key(self, job: JobView, ctx: Context) -> Any:
        """The job's queue, 0 when it starves (module notes)."""
        a = job.attained_gpu_s
        q = bisect_right(self.thresholds, a)
        if q and ctx.now_s - job.last_run_s > self.promote_knob * (a / max(job.gpus, 1)):
            q = 0
        return q


__all__ = ["DiscretisedLas", "PROMOTE_KNOB", "THRESHOLDS", "queue"]

r"""Orders by fairness and packing, as Synergy's baselines rank jobs.

With $G, C, M$ the cluster's GPUs, milli-cores and MiB, and a job's
best-case demand $(g_j, c_j, m_j)$ (its GPUs and the CPU and memory of its
fastest CPU/memory point that fits a server: the progress model's
``best_case(job, cluster)``, Synergy's profiles):

* ``ftf``: key $-\rho_j$, $\rho_j = (t - a_j + r_j) / d_j$ with $r_j$ the
  remaining run time alone and $d_j$ the whole of it: the job whose finish
  is most stretched against running alone on its share goes first (Themis'
  finish-time fairness, Mahajan et al. NSDI'20).  The key changes with the
  time, so the order is not static.
* ``drf``: key $\max(g_j/G, c_j/C, m_j/M)$, the dominant share of the job's
  best-case demand (Ghodsi et al. NSDI'11), smallest first.
* ``tetris``: key $r_j \,(g_j/G + c_j/C + m_j/M)$, the remaining time
  weighted by the normalised demand (Grandl et al. SIGCOMM'14's
  SRTF-weighted packing score, as Synergy's Tetris baseline orders jobs).

All three are preemptive by default (``preemptive=False`` for the
non-preemptive variant) and take Synergy's starvation rule
(``starvation_s``).
"""
from __future__ import annotations

import math
from typing import Any

from ..kinds import Context, JobView, KeyOrder


def totals(ctx: Context) -> tuple[int, int, int]:
    """The cluster's GPUs, milli-cores and MiB."""
    key = id(ctx.cluster)
    if _TOTALS.get("key") != key:
        sv = ctx.cluster.servers
        _TOTALS.update(key=key, value=(max(sum(s.gpus for s in sv), 1),
                                       max(sum(s.cpu for s in sv), 1),
                                       max(sum(s.mem for s in sv), 1)))
    return _TOTALS["value"]


_TOTALS: dict[str, Any] = {}


def demand(job: JobView, ctx: Context) -> tuple[int, int, int]:
    """The job's best-case (GPUs, milli-cores, MiB): the progress model's
    ``best_case(job, cluster)``, else its GPUs and nothing else."""
    best = getattr(ctx.progress, "best_case", None)
    if best is None:
        return job.gpus, 0, 0
    c, m = best(job, ctx.cluster)
    return job.gpus, c, m


class _Order(KeyOrder):
    def __init__(self, preemptive: bool = True, starvation_s: float | None = None) -> None:
        self.preemptive = preemptive
        self.starvation_s = starvation_s


class Ftf(_Order):
    """The largest finish-time stretch first (module notes).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster
    >>> from alloc.sched import Context
    >>> from alloc.sched.orders.fairness import Ftf
    >>> a = J(id="a", arrival_s=0.0, duration_s=100.0, remaining_s=100.0)   # rho 2
    >>> b = J(id="b", arrival_s=90.0, duration_s=10.0, remaining_s=10.0)    # rho 2
    >>> c = J(id="c", arrival_s=50.0, duration_s=1000.0, remaining_s=500.0) # rho 0.55
    >>> Ftf().rank([c, b, a], Context(100.0, 1, Cluster(())))
    ['a', 'b', 'c']
    """

    def key(self, job: JobView, ctx: Context) -> Any:
        """``-rho`` (module notes); jobs of unknown duration last."""
        d, r = job.duration_s, job.remaining_s
        if d is None or r is None:
            return math.inf
        return -(ctx.now_s - job.arrival_s + r) / max(d, 1e-9)


class Drf(_Order):
    """The smallest dominant share of the best-case demand first."""
    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """``max(g/G, c/C, m/M)``."""
        G, C, M = totals(ctx)
        g, c, m = demand(job, ctx)
        return max(g / G, c / C, m / M)


class Tetris(_Order):
    """The smallest remaining time times normalised best-case demand first."""
    static = True

    def key(self, job: JobView, ctx: Context) -> Any:
        """``remaining * (g/G + c/C + m/M)``; jobs of unknown duration last."""
        r = job.remaining_s
        if r is None:
            return math.inf
        G, C, M = totals(ctx)
        g, c, m = demand(job, ctx)
        return r * (g / G + c / C + m / M)


__all__ = ["Drf", "Ftf", "Tetris", "demand", "totals"]

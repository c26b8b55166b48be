r"""Finish-time fairness (Themis, Mahajan et al., NSDI'20), as the policy
estimates it while jobs run.

For an app (here: a job) $j$ of $g_j$ GPUs that runs $d_j$ seconds alone on
them, in a cluster of $G$ GPUs shared on average by $\bar N_j$ active jobs
since $j$ arrived:

* $T^{id}_j = d_j \max(1, g_j \bar N_j / G)$ -- its finish time alone on a
  $1/\bar N_j$ share of the cluster (linear scaling; a job whose gang fits
  its share runs as fast as alone);
* $T^{sh}_j(t) = (t - a_j) + R_j(t) / r_j$ -- its finish time in the shared
  cluster if it goes on at rate $r_j$ ($R_j$: its remaining run time alone;
  $r_j = 1$ while it holds its gang, and for a waiting job the rate of its
  fair share, $\min(1, G / (g_j \bar N_j))$, the optimistic estimate);
* $\rho_j(t) = T^{sh}_j(t) / T^{id}_j$; $\rho_j \le 1$ means it finishes
  no later than on its fair share.

At completion $T^{sh}_j$ is the job's completion time, and $\rho_j$ the one
`alloc.sim` reports (``rho_avg``, ``rho_max``).  $\bar N_j$ is the
time average of the number of active jobs from $j$'s arrival, kept by
`Contention` from the decisions it sees.
"""
from __future__ import annotations

import math


class Contention:
    """The time-average number of active jobs seen since each job arrived.

    Examples
    --------
    >>> from alloc.sched.themis.fairness import Contention
    >>> c = Contention()
    >>> c.observe(0.0, ["a"]); c.observe(10.0, ["a", "b"]); c.observe(20.0, ["a", "b"])
    >>> c.average("a", 20.0), c.average("b", 20.0)
    (1.5, 2.0)
    """

    def __init__(self) -> None:
        self.area = 0.0
        self.t: float | None = None
        self.n = 0
        self.since: dict[str, tuple[float, float]] = {}

    def observe(self, now: float, active) -> None:
        """The active job ids at ``now`` (a decision)."""
        if self.t is not None and now > self.t:
            self.area += self.n * (now - self.t)
        self.t = now
        ids = list(active)
        self.n = len(ids)
        live = set(ids)
        for j in ids:
            if j not in self.since:
                self.since[j] = (now, self.area)
        for j in [j for j in self.since if j not in live]:
            del self.since[j]

    def average(self, job: str, now: float) -> float:
        r"""$\bar N_j$ at ``now`` (the current count before any time has passed)."""
        t0, a0 = self.since.get(job, (now, self.area))
        area = self.area + (self.n * (now - self.t) if self.t is not None and now > self.t else 0)
        return (area - a0) / (now - t0) if now > t0 else float(max(self.n, 1))


def ideal_s(duration_s: float, gpus: int, cluster_gpus: float, nbar: float) -> float:
    r"""$T^{id}$: ``duration_s`` $\max(1, g \bar N / G)$.

    Examples
    --------
    >>> from alloc.sched.themis.fairness import ideal_s
    >>> ideal_s(100.0, 8, 16, 4.0)     # a quarter of 16 GPUs is 4: twice as long
    200.0
    """
    return duration_s * max(1.0, gpus * max(nbar, 1.0) / max(cluster_gpus, 1e-9))


def rho(now: float, arrival_s: float, remaining_s: float | None, duration_s: float | None,
        gpus: int,
        cluster_gpus: float, nbar: float, running: bool) -> float:
    r"""$\rho_j(t)$ (module notes); ``math.inf`` for a job of unknown length.

    Examples
    --------
    >>> from alloc.sched.themis.fairness import rho
    >>> rho(50.0, 0.0, 100.0, 100.0, 1, 4, 2.0, False)    # waited 50 s, all of it left
    1.5
    """
    if not duration_s or duration_s <= 0 or remaining_s is None:
        return math.inf
    nbar = max(nbar, 1.0)
    rate = 1.0 if running else min(1.0, cluster_gpus / (gpus * nbar))
    return ((now - arrival_s) + remaining_s / max(rate, 1e-12)) / \
        ideal_s(duration_s, gpus, cluster_gpus, nbar)


__all__ = ["Contention", "ideal_s", "rho"]

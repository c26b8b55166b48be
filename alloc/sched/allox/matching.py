r"""AlloX's min-cost bipartite matching of jobs to (machine, position) slots.

With ``n`` jobs and machines ``m`` (GPUs and CPU nodes), each machine runs
a sequence of jobs; a job at position ``k`` *counted from the end* of its
machine's sequence delays ``k`` completions (its own and the ``k - 1``
after it), so the total completion time of a schedule is

$$
\sum_j \big[(a_{m(j)} - r_j) + k(j)\,\hat p^{kind(m(j))}_j\big]
$$

up to the waits of the jobs before it, $a_m$ being when machine ``m`` is
free and $r_j$ the job's arrival.  Minimising it is an assignment problem
on the bipartite graph of jobs and (machine, position) slots with exactly
that cost per edge (Hungarian algorithm: `scipy.optimize.linear_sum_assignment`).
An optimal assignment fills each machine's positions ``1..c_m`` (costs grow
with ``k``), and the job at its highest position runs first.

Examples
--------
>>> from alloc.sched.allox.jobs import FlexJob
>>> from alloc.sched.allox.matching import match
>>> jobs = [FlexJob("a", "u", 0.0, cpu_s=10.0, gpu_s=2.0), FlexJob("b", "u", 0.0, cpu_s=3.0, gpu_s=2.5)]
>>> [(m, j.id) for m, j in match(jobs, [("gpu", 0.0), ("cpu", 0.0)], 0.0)]
[(('gpu', 0.0), 'a'), (('cpu', 0.0), 'b')]
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .jobs import FlexJob


def cost_matrix(jobs: Sequence[FlexJob], machines: Sequence[tuple[str, float]]) -> np.ndarray:
    """Cost of job ``j`` at (machine ``m``, position ``k``): rows ``k * M + m``
    (``k`` from 1), one column per job."""
    n, M = len(jobs), len(machines)
    arrival = np.array([j.arrival for j in jobs])
    est = {kind: np.array([j.estimate(kind) for j in jobs]) for kind in ("gpu", "cpu")}
    wait = np.array([t for _, t in machines])[:, None] - arrival[None, :]        # (M, n)
    P = np.stack([est[kind] for kind, _ in machines])                           # (M, n)
    k = np.arange(1, n + 1)[:, None, None]                                      # (n, 1, 1)
    return (wait[None] + k * P[None]).reshape(n * M, n)


def match(jobs: Sequence[FlexJob], machines: Sequence[tuple[str, float]], now: float
          ) -> list[tuple[tuple[str, float], FlexJob]]:
    """The first job of each machine under the min-cost matching, in machine
    order (machines without a job are left out).

    Parameters
    ----------
    jobs : sequence of FlexJob
    machines : sequence of (kind, available time)
    now : float
        The decision instant (unused by the cost; kept for the caller's log).

    Returns
    -------
    list of ((kind, available time), FlexJob)
    """
    if not jobs or not machines:
        return []
    from scipy.optimize import linear_sum_assignment     # imported on first use: it is slow
    M = len(machines)
    rows, cols = linear_sum_assignment(cost_matrix(jobs, machines))
    first: dict[int, tuple[int, int]] = {}
    for r, c in zip(rows, cols):
        k, m = divmod(int(r), M)
        if m not in first or k > first[m][0]:
            first[m] = (k, int(c))
    return [(machines[m], jobs[first[m][1]]) for m in range(M) if m in first]


__all__ = ["cost_matrix", "match"]

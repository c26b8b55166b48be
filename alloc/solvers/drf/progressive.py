r"""``drf``: Dominant Resource Fairness by discrete progressive filling
(Ghodsi et al., NSDI'11, the scheduling loop of its Algorithm 1 applied to
whole jobs).

Users.  When any job names a tenant, the users are the tenants (a job
without a tenant is a user of its own); otherwise every job is its own user.
A user's weight is the ``weights`` option's entry for it (a tenant's name, or
the id of a job without a tenant), else 1 for a tenant and the job's
``weight`` for a job.

Dominant share.  Over the cluster's totals -- milli-GPUs
$G = 1000 \cdot \#\mathrm{GPUs}$, milli-cores $C$, MiB $M$
-- a user u holding $g_u$ milli-GPUs, $c_u$ milli-cores and
$m_u$ MiB (summed over its running and placed jobs) has the dominant
share and the weighted dominant share

$$
D_u = \max\Big(\frac{g_u}{G}, \frac{c_u}{C}, \frac{m_u}{M}\Big),
\qquad \frac{D_u}{w_u}
$$

(a resource the cluster has none of is left out; a user of weight 0 comes
after every other).

Loop.  Running jobs (`fixed`) stay exactly where
they run and are counted in their users' shares first.  Each user queues its
pending jobs in the problem's order (`rank`:
the caller's order, else priority then input order).  Repeatedly the user of
least $D_u / w_u$ takes its next job and places it at its request with
a best-fit placement.  Ties on $D_u / w_u$ go to the user whose share
after its next job, $(D_u + D(\mathrm{job})) / w_u$, is smaller -- the
job that continuous progressive filling would complete first, so that with
one job per user (every share 0 at the start) small jobs go before large
ones -- then to the earlier next job, then to the user's index.  A job that
does not fit is skipped and stays unplaced (free capacity only shrinks, so it
would not fit later either).  The loop ends when every queue is empty.  One
heap over the users: $O(J \log U)$ besides the placements.
Guaranteed jobs (tenancy) go through the loop first and opportunistic ones
after, with the shares carried over: HiveD lets a guaranteed job take the
GPUs of opportunistic ones, and this solver never stops a job, so it places
them in that order instead.

Placement.  Without tenancy, `alloc.engines.greedy.rules.best_fit`
on the heuristics' `alloc.engines.greedy.state.State` (the
server left fullest, GPUs consolidated, a spread over servers when none holds
the job and its locality allows).  With tenancy (tenants or guaranteed jobs),
HiveD's `alloc.engines.cells.engine.Engine` without preemption or
co-location: guaranteed jobs inside their tenant's cells (buddy binding,
sharing safety kept), opportunistic jobs on GPUs no guaranteed job holds; the
binding is reported in ``stats["binding"]``.

Time.  The deadline is checked every `CHECK_EVERY` turns; out of time
the jobs placed so far are returned (``stats["stopped"]``).
"""
from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import Mapping

import numpy as np

from ...deadline import Deadline
from ...errors import SolverError
from ...model import MILLI, Status
from ...problem import Assign, Problem, Solution
from ...engines.greedy.state import State
from ...engines.greedy.rules import best_fit, rank_order

#: Turns between two deadline checks.
CHECK_EVERY = 16


def usage(a: Assign) -> np.ndarray:
    """What an assignment holds: ``[milli-GPUs, milli-cores, MiB]``."""
    return np.array([sum(m for _, m in a.gpus), sum(v for _, v in a.cpu),
                     sum(v for _, v in a.mem)], dtype=float)


def request(problem: Problem, j: int) -> np.ndarray:
    """What job j asks for at its request: ``[milli-GPUs, milli-cores, MiB]``."""
    opt = problem.options[j][0]
    return np.array([problem.jobs[j].milli_total, opt.cpu, opt.mem], dtype=float)


def cluster_totals(problem: Problem) -> np.ndarray:
    """The cluster's ``[milli-GPUs, milli-cores, MiB]``."""
    return np.array([problem.G * MILLI, int(problem.srv_cpu.sum()), int(problem.srv_mem.sum())],
                    dtype=float)


def dominant_share(held: np.ndarray, totals: np.ndarray) -> float:
    r"""$D = \max_r \mathrm{held}_r / \mathrm{total}_r$ over the resources
    the cluster has (``total_r > 0``); 0 when it holds nothing."""
    pos = totals > 0
    return float((held[pos] / totals[pos]).max(initial=0.0))


def users_of(problem: Problem, weights: Mapping | None = None) -> tuple[list[str], list[int],
                                                                       list[float]]:
    """The DRF users of a problem (see the module notes).

    Parameters
    ----------
    problem : Problem
    weights : mapping of str to float, optional
        Weight per user name (a tenant, or a job id for a job without a
        tenant); names that are not users here are ignored.

    Returns
    -------
    names : list of str
        User names, in order of first appearance among the jobs.
    user : list of int
        Per job index, its user's index.
    weight : list of float
        Per user, $w_u \\ge 0$.

    Raises
    ------
    ValueError
        A weight that is not a finite number > 0.
    """
    weights = dict(weights or {})
    for k, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v <= 0:
            raise ValueError(f"weights[{k!r}]: expected a finite number > 0, got {v!r}")
    by_tenant = any(job.tenant is not None for job in problem.jobs)
    index: dict[tuple, int] = {}
    names: list[str] = []
    weight: list[float] = []
    user = []
    for job in problem.jobs:
        tenant_id = job.tenant if by_tenant else None
        tenant = tenant_id is not None
        key = ("tenant", tenant_id) if tenant_id is not None else ("job", job.id)
        u = index.get(key)
        if u is None:
            u = index[key] = len(names)
            names.append(key[1])
            weight.append(float(weights.get(key[1], 1.0 if tenant else job.weight)))
        user.append(u)
    return names, user, weight


class _StatePlacer:
    """Best fit on the heuristics' state (no tenancy)."""

    def __init__(self, problem: Problem, deadline: Deadline):
        self.st = State(problem)

    def place(self, j: int) -> Assign | None:
        a = best_fit(self.st, j, 0)
        if a is not None:
            self.st.place(j, a, 0)
        return a

    def solution(self, stats: dict) -> Solution:
        return self.st.solution(Status.FEASIBLE, **stats)


class _CellPlacer:
    """HiveD's engine without preemption or co-location (tenancy)."""

    def __init__(self, problem: Problem, deadline: Deadline):
        from ...engines.cells.engine import Engine, restore_running
        self.p = problem
        self.eng = Engine(problem, None, colocate=False)
        homeless = restore_running(self.eng, problem.running, deadline)
        if homeless:
            raise SolverError(f"drf: running job {problem.jobs[homeless[0]].id!r} cannot stay "
                              f"where it runs (no binding of its tenant's cells holds it)")

    def place(self, j: int) -> Assign | None:
        if self.eng.try_place(j, self.p.jobs[j].gpus, 0, set()):
            return self.eng.assign[j]
        return None

    def solution(self, stats: dict) -> Solution:
        from ...tenancy import binding_keys
        eng = self.eng
        assign = {j: a for j, a in eng.assign.items() if j not in self.p.fixed}
        stats["binding"] = binding_keys(eng.tree, eng.bound)
        return Solution(assign, Status.FEASIBLE, None, (), stats)


def _tenancy(problem: Problem) -> bool:
    return bool(problem.cluster.tenants) or any(j.tenant is not None or j.guaranteed
                                                 for j in problem.jobs)


def _key(held: np.ndarray, totals: np.ndarray, w: float) -> float:
    d = dominant_share(held, totals)
    return d / w if w > 0 else math.inf


def _fill(problem: Problem, placer, jobs: list[int], user: list[int], w: list[float],
          held: np.ndarray, totals: np.ndarray, deadline: Deadline) -> bool:
    """The DRF loop over ``jobs`` (in rank order), updating ``held``; False
    when the deadline stopped it."""
    queues: list[list[int]] = [[] for _ in w]
    for j in jobs:
        queues[user[j]].append(j)
    rank = problem.rank
    nxt = [0] * len(w)

    def entry(u: int) -> tuple:
        j = queues[u][nxt[u]]
        return (_key(held[u], totals, w[u]), _key(held[u] + request(problem, j), totals, w[u]),
                int(rank[j]), u)
    heap = sorted(entry(u) for u, q in enumerate(queues) if q)
    turns = 0
    while heap:
        if turns % CHECK_EVERY == 0 and deadline.expired():
            return False
        turns += 1
        u = heappop(heap)[-1]
        j = queues[u][nxt[u]]
        nxt[u] += 1
        a = placer.place(j)
        if a is not None:
            held[u] += usage(a)
        if nxt[u] < len(queues[u]):
            heappush(heap, entry(u))
    return True


def solve_drf(problem: Problem, *, deadline: Deadline, seed: int = 0,
              weights: Mapping | None = None) -> Solution:
    r"""Discrete weighted DRF (see the module notes).

    Parameters
    ----------
    problem : Problem
    deadline : Deadline
        Checked every `CHECK_EVERY` turns; out of time, the jobs placed
        so far are returned.
    seed : int
        Unused (the loop is deterministic).
    weights : mapping of str to float, optional
        $w_u$ per user name (see `users_of`).

    Returns
    -------
    Solution
        The placed pending jobs (running ones are kept by the caller),
        status ``feasible``; ``stats["dominant_shares"]``: $D_u$ per
        user name after the loop (at most 64 users listed), ``stats["users"]``.
    """
    names, user, w = users_of(problem, weights)
    totals = cluster_totals(problem)
    held = np.zeros((len(names), 3))
    for j, a in problem.fixed.items():
        held[user[j]] += usage(a)
    placer = (_CellPlacer if _tenancy(problem) else _StatePlacer)(problem, deadline)
    order = rank_order(problem)
    phases = [[j for j in order if problem.jobs[j].guaranteed],
              [j for j in order if not problem.jobs[j].guaranteed]]
    stats: dict = {"users": len(names)}
    for jobs in phases:
        if jobs and not _fill(problem, placer, jobs, user, w, held, totals, deadline):
            stats["stopped"] = "time limit"
            break
    if len(names) <= 64:
        stats["dominant_shares"] = {n: round(dominant_share(held[u], totals), 9)
                                    for u, n in enumerate(names)}
    return placer.solution(stats)


__all__ = ["CHECK_EVERY", "cluster_totals", "dominant_share", "request", "solve_drf", "usage",
           "users_of"]

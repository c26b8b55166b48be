r"""Dominant Resource Fairness over divisible resources (Ghodsi et al.,
NSDI'11, section 4), as checkers of an allocation of tasks.

A *market*: capacities ``C_r`` of resources ``r``, users ``i`` with the
demand ``d_i`` of one task, weights ``w_i`` and caps ``k_i`` (the most tasks
user i can use; None: no cap).  An allocation gives user i ``x_i >= 0``
tasks (fractional), holding ``x_i d_i``.  The tasks a bundle ``b`` runs for
a user of demand ``d`` are

$$
\mathrm{tasks}(b, d) = \min_{r : d_r > 0} b_r / d_r .
$$

Each checker takes ``(capacities, demands, weights, caps, x)`` -- the
arguments of `alloc.shares.drf_shares` and its answer -- and returns one
line per breach (empty: the property holds), within the relative
tolerance `REL`.  With divisible resources DRF keeps all of them exactly;
for indivisible jobs on servers see `alloc.testing.fairness`.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

#: Relative tolerance of every comparison.
REL = 1e-9

Market = Mapping[str, float]


def tasks_with(bundle: Mapping[str, float], demand: Mapping[str, float]) -> float:
    """Tasks a user of per-task ``demand`` runs with ``bundle`` (inf when it
    demands nothing).

    Examples
    --------
    >>> from alloc.testing import tasks_with
    >>> tasks_with({"cpu": 9, "mem": 18}, {"cpu": 1, "mem": 4})
    4.5
    """
    need = [(r, v) for r, v in demand.items() if v > 0]
    return min((bundle.get(r, 0.0) / v for r, v in need), default=math.inf)


def used(capacities: Market, demands: Sequence[Market], x: Sequence[float]) -> dict[str, float]:
    """``sum_i x_i d_ir`` per resource."""
    return {r: sum(xi * d.get(r, 0.0) for xi, d in zip(x, demands)) for r in capacities}


def _capped(x, caps, i) -> bool:
    return caps[i] is not None and x[i] >= caps[i] * (1 - REL)


def feasibility_problems(capacities: Market, demands: Sequence[Market], weights: Sequence[float],
                         caps: Sequence[float | None], x: Sequence[float]) -> list[str]:
    r"""Feasible: ``x_i >= 0``, ``x_i <= k_i`` and per resource
    ``sum_i x_i d_ir <= C_r``."""
    u = used(capacities, demands, x)
    out = [f"{r}: {u[r]} used of {c}" for r, c in capacities.items() if u[r] > c * (1 + REL) + REL]
    out += [f"user {i}: {x[i]} tasks above its cap {cap}" for i in range(len(x))
            if (cap := caps[i]) is not None and x[i] > cap * (1 + REL)]
    out += [f"user {i}: negative tasks" for i in range(len(x)) if x[i] < 0]
    return out


def sharing_incentive_problems(capacities: Market, demands: Sequence[Market],
                               weights: Sequence[float], caps: Sequence[float | None],
                               x: Sequence[float]) -> list[str]:
    r"""Sharing incentive: each user runs at least as many tasks as with its
    weighted static share of every resource, unless capped:

    $$
    x_i \ge \mathrm{tasks}\Big(\Big(\frac{w_i}{W} C_r\Big)_r, d_i\Big)
    \quad\text{or}\quad x_i = k_i, \qquad W = \sum_j w_j .
    $$

    Examples
    --------
    >>> from alloc.testing import sharing_incentive_problems
    >>> cap, dem = {"cpu": 9.0, "mem": 18.0}, [{"cpu": 1.0, "mem": 4.0}, {"cpu": 3.0, "mem": 1.0}]
    >>> sharing_incentive_problems(cap, dem, [1, 1], [None, None], [3.0, 2.0])
    []
    >>> sharing_incentive_problems(cap, dem, [1, 1], [None, None], [4.0, 1.0])
    ['user 1: 1.0 tasks < 1.5 of its weighted static share']
    """
    W = sum(weights)
    out = []
    for i, d in enumerate(demands):
        static = tasks_with({r: c * weights[i] / W for r, c in capacities.items()}, d)
        if x[i] < static * (1 - REL) - REL and not _capped(x, caps, i):
            out.append(f"user {i}: {x[i]} tasks < {static} of its weighted static share")
    return out


def envy_problems(capacities: Market, demands: Sequence[Market], weights: Sequence[float],
                  caps: Sequence[float | None], x: Sequence[float]) -> list[str]:
    r"""Envy-freeness: no user would run more tasks with another user's
    bundle scaled by their weights (up to its own cap):

    $$
    \min\Big(\mathrm{tasks}\big(\tfrac{w_i}{w_j} x_j d_j,\ d_i\big),\ k_i\Big) \le x_i
    \quad \forall i \ne j .
    $$

    Examples
    --------
    >>> from alloc.testing import envy_problems
    >>> cap, dem = {"cpu": 9.0, "mem": 18.0}, [{"cpu": 1.0, "mem": 4.0}, {"cpu": 3.0, "mem": 1.0}]
    >>> envy_problems(cap, dem, [1, 1], [None, None], [3.0, 2.0])
    []
    """
    out = []
    for i, di in enumerate(demands):
        for j, dj in enumerate(demands):
            if i == j:
                continue
            bundle = {r: x[j] * dj.get(r, 0.0) * weights[i] / weights[j] for r in capacities}
            want = tasks_with(bundle, di)
            cap = caps[i]
            if cap is not None:
                want = min(want, cap)
            if want > x[i] * (1 + REL) + REL:
                out.append(f"user {i} envies user {j}: {want} > {x[i]} tasks")
    return out


def pareto_problems(capacities: Market, demands: Sequence[Market], weights: Sequence[float],
                    caps: Sequence[float | None], x: Sequence[float]) -> list[str]:
    r"""Pareto efficiency: no user can run more tasks without another running
    fewer -- every user is capped or demands a resource that is full:

    $$
    x_i = k_i \ \vee\ \exists r: d_{ir} > 0 \wedge \sum_j x_j d_{jr} = C_r .
    $$
    """
    u = used(capacities, demands, x)
    full = {r for r, c in capacities.items() if u[r] >= c * (1 - REL)}
    out = []
    for i, d in enumerate(demands):
        if not _capped(x, caps, i) and not any(d.get(r, 0.0) > 0 for r in full):
            out.append(f"user {i} could grow: none of its resources is full")
    return out


def manipulation_gain(mechanism: Callable[[Sequence[Market]], Sequence[float]],
                      demands: Sequence[Market], i: int, lie: Market) -> float:
    r"""Relative gain in *true* tasks of user ``i`` when it reports ``lie``
    instead of its demand.

    ``mechanism(demands)`` gives tasks per user of the reported demands;
    with the lie user i holds ``x' lie`` and really runs
    ``tasks(x' lie, d_i)``.  Strategy-proofness: the gain
    ``(tasks(x' lie, d_i) - x_i) / max(x_i, 1)`` is never above 0.

    Examples
    --------
    >>> from alloc.shares import drf_shares
    >>> from alloc.testing import manipulation_gain
    >>> cap = {"cpu": 9.0, "mem": 18.0}
    >>> dem = [{"cpu": 1.0, "mem": 4.0}, {"cpu": 3.0, "mem": 1.0}]
    >>> manipulation_gain(lambda d: drf_shares(cap, d), dem, 0, {"cpu": 5.0, "mem": 20.0}) <= 0
    True
    """
    truth = mechanism(demands)[i]
    reported = list(demands)
    reported[i] = lie
    got = mechanism(reported)[i]
    real = tasks_with({r: got * v for r, v in lie.items()}, demands[i])
    return (real - truth) / max(truth, 1.0)


__all__ = ["REL", "envy_problems", "feasibility_problems", "manipulation_gain",
           "pareto_problems", "sharing_incentive_problems", "tasks_with", "used"]

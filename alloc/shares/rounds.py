r"""From time shares to placements: Gavel's round mechanism (Narayanan et al.,
OSDI'20, section 5).

A policy's shares ``X_ij`` say what fraction of wall-clock time job ``i``
should run on type ``j``; rounds of `ROUND_S` seconds realise them.
Each round every (job or pair, type) with a positive share gets the
priority

$$
\pi_{ij} = X_{ij} / R_{ij},
$$

``R_ij`` the fraction of time it has received on that type so far
(``inf`` when it has had none), and the entries are taken greedily by
decreasing priority (ties: larger share, then input order): a job (or pair)
runs on the type of its first entry that still has ``sf`` free GPUs, and at
most once per round.  Over many rounds each job's received fractions track
its shares.

The mechanism is work-conserving, as Gavel's is (its per-type queues hold
every job with a positive throughput, shares of zero included): GPUs the
shares leave free go to jobs that are not running this round, least time
received first (ties: input order), each alone on the type where it runs
fastest (``fill_rates``) among those with ``sf`` free GPUs, ties to the
type with more free GPUs.  So a job may receive more than its share, never
less because of it.

[`plan_round`][alloc.shares.rounds.plan_round] is that plain function;
[`place_round`][alloc.shares.rounds.place_round] turns a plan
into an ``alloc`` placement through [`alloc.allocate`][alloc.solve.allocate] (one ``alloc`` job
per runner, its scale factor in whole GPUs of the chosen type, consolidated
on one server where the profile rewards it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ..model import Allocation, Cluster, Job
from .check import pair_arrays
from .io import SharesProblem, SharesResult, pair_key

#: Seconds of one round (Gavel's default).
ROUND_S = 360.0


@dataclass(frozen=True)
class RoundPlan:
    """Which jobs run this round, on which GPU type.

    Attributes
    ----------
    jobs : dict of str to str
        Job id to GPU type, for jobs running alone.
    pairs : dict of str to str
        Pair key ``"a+b"`` to GPU type, for pairs sharing GPUs.
    priority : dict of str to float
        The priority each runner was picked with (``inf``: never ran there).
    free : dict of str to float
        GPUs of each type left idle.
    """
    jobs: Mapping[str, str]
    pairs: Mapping[str, str]
    priority: Mapping[str, float]
    free: Mapping[str, float]


def plan_round(problem: SharesProblem, shares: SharesResult | np.ndarray,
               received: np.ndarray | None = None, received_pairs: np.ndarray | None = None,
               pair_shares: np.ndarray | None = None, *, work_conserving: bool = True,
               fill_rates: np.ndarray | None = None) -> RoundPlan:
    r"""The runners of one round (see the module notes).

    Parameters
    ----------
    problem : SharesProblem
        The cluster (GPUs per type), scale factors and pairs.
    shares : SharesResult or ndarray (m, k)
        Target shares ``X``; a result also brings its pair shares.
    received : ndarray (m, k), optional
        Fraction of time each job has run alone on each type so far
        (default: nothing yet).
    received_pairs, pair_shares : ndarray (P, k), optional
        The same for the pairs.
    work_conserving : bool
        Give the GPUs the shares leave free to jobs not running (default
        True).
    fill_rates : ndarray (m, k), optional
        Rates the free GPUs are given by (default the problem's runnable
        throughputs; a heterogeneity-agnostic caller passes its own).

    Returns
    -------
    RoundPlan
    """
    X = shares.X if isinstance(shares, SharesResult) else np.asarray(shares, dtype=float)
    Y = shares.Y if isinstance(shares, SharesResult) else pair_shares
    m, k = problem.m, problem.k
    R = np.zeros((m, k)) if received is None else np.asarray(received, dtype=float)
    a, b, _ = pair_arrays(problem)
    P = len(a) if Y is not None else 0
    RP = np.zeros((P, k)) if received_pairs is None else np.asarray(received_pairs, dtype=float)
    share = np.concatenate([X.ravel(), Y.ravel()]) if P and Y is not None else X.ravel()
    got = np.concatenate([R.ravel(), RP.ravel()]) if P else R.ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        prio = np.where(got > 0, share / got, np.inf)
    entries = np.flatnonzero(share > 1e-9)
    entries = entries[np.lexsort((entries, -share[entries], -prio[entries]))]
    free = problem.capacity.astype(float).copy()
    busy = np.zeros(m, dtype=bool)
    jobs, pairs, priority = {}, {}, {}
    for e in entries:
        unit, j = divmod(int(e), k)
        members: tuple[int, ...]
        if unit < m:
            members, sf = (unit,), problem.scale_factor[unit]
        else:
            q = unit - m
            members, sf = (a[q], b[q]), problem.scale_factor[a[q]]
        if busy[list(members)].any() or free[j] < sf:
            continue
        busy[list(members)] = True
        free[j] -= sf
        if unit < m:
            jobs[problem.job_ids[unit]] = problem.gpu_types[j]
            priority[problem.job_ids[unit]] = float(prio[e])
        else:
            key = pair_key(problem, problem.pairs[unit - m])
            pairs[key] = problem.gpu_types[j]
            priority[key] = float(prio[e])
    if work_conserving:
        _fill(problem, R, busy, free, jobs, priority, _fill_rates(problem, fill_rates))
    return RoundPlan(jobs, pairs, priority, dict(zip(problem.gpu_types, free.tolist())))


def _fill_rates(problem: SharesProblem, fill_rates) -> np.ndarray:
    if fill_rates is None:
        return problem.runnable_throughput
    rates = np.asarray(fill_rates, dtype=float)
    if rates.shape != (problem.m, problem.k):
        raise ValueError(f"fill_rates: expected shape ({problem.m}, {problem.k}) (jobs x GPU types), "
                         f"got {rates.shape}")
    return rates


def _fill(problem: SharesProblem, R: np.ndarray, busy: np.ndarray, free: np.ndarray,
          jobs: dict, priority: dict, rates: np.ndarray) -> None:
    """Free GPUs to idle jobs, least time received first, each on its fastest
    type with room (in place)."""
    sf = problem.scale_factor
    order = np.lexsort((np.arange(problem.m), R.sum(axis=1)))
    smallest = sf.min() if problem.m else 0
    for i in order:
        if (free < smallest).all():
            break
        room = (free >= sf[i]) & (rates[i] > 0)
        if busy[i] or not room.any():
            continue
        j = int(np.lexsort((-free, -np.where(room, rates[i], -np.inf)))[0])
        busy[i] = True
        free[j] -= sf[i]
        jobs[problem.job_ids[i]] = problem.gpu_types[j]
        priority[problem.job_ids[i]] = 0.0


def place_round(cluster: Cluster, problem: SharesProblem, plan: RoundPlan, *,
                solver: str = "best-fit", consolidate: Callable[[str, int], bool] | None = None,
                type_names: Mapping[str, str] | None = None, cpu: Mapping[str, int] | None = None,
                mem: Mapping[str, int] | None = None, time_limit: float | None = None) -> Allocation:
    """Place a round's runners on ``cluster`` with [`alloc.allocate`][alloc.solve.allocate].

    Each runner (a job, or a pair sharing its GPUs) becomes one ``alloc``
    job of ``sf`` whole GPUs of its planned type.

    Parameters
    ----------
    cluster : alloc.Cluster
    problem : SharesProblem
    plan : RoundPlan
    solver : str
        An ``alloc`` solver (default ``"best-fit"``).
    consolidate : callable (runner id, GPUs) -> bool, optional
        Whether a runner must sit on one server (``locality="server"``);
        default: every multi-GPU runner, since the measured throughputs of
        spread multi-GPU jobs are lower (Gavel's consolidated profiles).
    type_names : mapping, optional
        Share GPU type name to the cluster's ``gpu_type`` (default: same).
    cpu, mem : mapping, optional
        CPU (milli-cores) and memory (MiB) per runner (default 0).
    time_limit : float, optional

    Returns
    -------
    alloc.Allocation
        Checked by ``alloc.allocate``; runners that do not fit are unplaced.
    """
    from ..solve import allocate
    names = type_names or {}
    consolidate = consolidate or (lambda runner, gpus: gpus > 1)
    sf = dict(zip(problem.job_ids, problem.scale_factor.astype(int).tolist()))
    jobs = []
    for runner, t in list(plan.jobs.items()) + list(plan.pairs.items()):
        g = sf[runner.split("+")[0]] if runner not in sf else sf[runner]
        jobs.append(Job(runner, gpus=g, cpu=(cpu or {}).get(runner, 0), mem=(mem or {}).get(runner, 0),
                        gpu_types=(names.get(t, t),),
                        locality="server" if consolidate(runner, g) else None))
    return allocate(cluster, jobs, solver=solver, objective="jobs", time_limit=time_limit)


__all__ = ["ROUND_S", "RoundPlan", "place_round", "plan_round"]

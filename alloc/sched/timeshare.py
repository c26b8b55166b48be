r"""Gavel's time-share policies (`alloc.shares.policies`) as policies of kind
``shares``.

Each round the active jobs become a [`SharesProblem`][alloc.shares.SharesProblem]
(`shares_problem`): the cluster's GPUs per type, each job's scale factor
(its GPUs), its throughput alone on each type and, with space sharing, the
measured throughputs of the pairs of jobs of equal scale factor (both from
the run's progress model: ``ctx.progress.throughputs(job)`` and
``ctx.progress.pair_rates(a, b, type)``), its steps left, the seconds since
it arrived and its *isolated time* $C_i$, the seconds its progress so far
would have taken on its isolated share (finish-time fairness needs it):

$$
C_i \mathrel{+}= \Delta s_i / \mathrm{iso}_i,\qquad
\mathrm{iso}_i = \sum_j T_{ij}\,X^{iso}_{ij},
$$

$\Delta s_i$ the steps it did since the last round and $X^{iso}$ the
isolated shares of the last round's problem
([`isolated_shares`][alloc.shares.check.isolated_shares]).  The policy's
shares $X_{ij}$ (and $Y_{qj}$ of the pairs) are returned as fractions by
job id (and by pair key ``"a+b"``); the simulator's round mechanism turns
them into placements ([`plan_round`][alloc.shares.rounds.plan_round]).

``weights="attained"`` weighs each job by the inverse of its attained
service (GPU-seconds, at least one round's worth), normalised to a largest
weight of 1: Tiresias' least attained service folded into Gavel's weights.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..options import Option

#: Parameters every shares policy takes besides its own options.
COMMON = (
    Option("time_limit", "float", 30.0, "seconds each solve may take", minimum=0.001),
    Option("weights", "str", "equal", "per-job priority weights", choices=("equal", "attained")),
)


def shares_problem(jobs: Sequence[Any], ctx: Any, *, pairs: bool = False,
                   weights: str = "equal", iso_time: Mapping[str, float] | None = None):
    """The `SharesProblem` of ``jobs`` at ``ctx`` (see the module notes); the
    GPU types in the order the cluster first lists them.

    Returns
    -------
    SharesProblem
    """
    from ..shares.io import Pair, SharesProblem
    prog = ctx.progress
    servers = [s for s in ctx.cluster.servers if s.gpus > 0]
    types = tuple(dict.fromkeys(s.gpu_type or "" for s in servers))   # as the cluster lists them
    cap = np.array([float(sum(s.gpus for s in servers if (s.gpu_type or "") == t))
                    for t in types])
    m, k = len(jobs), len(types)
    ids = tuple(j.id for j in jobs)
    sf = np.array([float(j.gpus) for j in jobs])
    T = np.ones((m, k))
    if prog is not None and hasattr(prog, "throughputs"):
        T = np.array([[prog.throughputs(j).get(t, 0.0) for t in types] for j in jobs]) \
            if m else np.zeros((0, k))
    now = ctx.now_s
    left = np.array([max(getattr(j, "work", 0.0) - j.done_at(now), 0.0)
                     if hasattr(j, "done_at") else 0.0 for j in jobs])
    elapsed = np.array([now - j.arrival_s for j in jobs])
    iso = np.array([(iso_time or {}).get(j.id, 0.0) for j in jobs])
    if weights == "attained":
        att = np.array([j.attained_gpu_s for j in jobs])
        w = 1.0 / np.maximum(att, ctx.round_s or 1.0)
        w = w / w.max() if m else w
    else:
        w = np.ones(m)
    plist: tuple = ()
    if pairs and m > 1 and prog is not None and hasattr(prog, "pair_rates"):
        plist = _pairs(jobs, types, prog, sf, Pair)
    return SharesProblem(types, cap, ids, sf, w, T, left, elapsed, iso, tuple([None] * m),
                         plist, {}, "sim")


def _pairs(jobs, types, prog, sf, Pair) -> tuple:
    rows = getattr(prog, "pair_table", None)
    m = len(jobs)
    a, b = np.triu_indices(m, 1)
    same = sf[a] == sf[b]
    a, b = a[same], b[same]
    if rows is not None:
        PT = rows([jobs[i] for i in a], [jobs[i] for i in b], types)
    else:
        PT = np.array([[prog.pair_rates(jobs[x], jobs[y], t) for t in types]
                       for x, y in zip(a, b)]).reshape(len(a), len(types), 2)
    ok = ((PT[..., 0] > 0) & (PT[..., 1] > 0)).any(axis=1)
    return tuple(Pair(int(x), int(y), P) for x, y, P in zip(a[ok], b[ok], PT[ok]))


class GavelShares:
    """A share policy of `alloc.shares.policies` over the run's active jobs.

    Parameters
    ----------
    policy : str
        Its name in `alloc.shares.policies.POLICIES`.
    time_limit : float
        Seconds each solve may take.
    weights : {"equal", "attained"}
    **options
        The policy's own options (``space_sharing``, ``within``).

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> p = get_policy("shares", "max-min").build(space_sharing=False)
    >>> p.policy, p.space_sharing
    ('max-min', False)
    """

    def __init__(self, policy: str, time_limit: float = 30.0, weights: str = "equal",
                 **options: Any) -> None:
        self.policy = policy
        self.time_limit = time_limit
        self.weights = weights
        self.options = dict(options)
        self.space_sharing = bool(options.get("space_sharing", False))
        self.agnostic = policy.endswith("-agnostic")
        self.last_problem: Any = None
        self.last_result: Any = None
        self._iso_time: dict[str, float] = {}
        self._iso_rate: dict[str, float] = {}
        self._done: dict[str, float] = {}

    def _isolated(self, jobs: Sequence[Any], now: float) -> None:
        """Credit each job's steps since the last round at its last isolated rate."""
        alive = set()
        for j in jobs:
            alive.add(j.id)
            d = j.done_at(now) if hasattr(j, "done_at") else 0.0
            before = self._done.get(j.id, 0.0)
            rate = self._iso_rate.get(j.id, 0.0)
            if d > before and rate > 0:
                self._iso_time[j.id] = self._iso_time.get(j.id, 0.0) + (d - before) / rate
            self._done[j.id] = d
        for store in (self._iso_time, self._iso_rate, self._done):
            for jid in [x for x in store if x not in alive]:
                del store[jid]

    def shares(self, jobs: Sequence[Any], ctx: Any) -> Mapping[str, Mapping[str, float]]:
        """Each job's (and pair's) fraction of time on each GPU type."""
        from ..shares.check import isolated_shares
        from ..shares.io import pair_key
        from ..shares.policies import solve_shares
        jobs = list(jobs)
        self._isolated(jobs, ctx.now_s)
        p = shares_problem(jobs, ctx, pairs=self.space_sharing, weights=self.weights,
                           iso_time=self._iso_time)
        if not jobs:
            self.last_problem, self.last_result = p, None
            return {}
        iso = (p.throughput * isolated_shares(p)).sum(axis=1)
        self._iso_rate = {jid: float(r) for jid, r in zip(p.job_ids, iso)}
        res = solve_shares(p, self.policy, time_limit=self.time_limit, seed=ctx.round,
                           **self.options)
        self.last_problem, self.last_result = p, res
        out: dict[str, dict[str, float]] = {}
        for i, jid in enumerate(p.job_ids):
            out[jid] = {t: float(res.X[i, c]) for c, t in enumerate(p.gpu_types)}
        if res.Y is not None:
            for q, pair in enumerate(p.pairs):
                out[pair_key(p, pair)] = {t: float(res.Y[q, c]) for c, t in enumerate(p.gpu_types)}
        return out


def factory(policy: str):
    """The factory of the shares policy ``policy`` (the registry's entry)."""
    def build(**params: Any) -> GavelShares:
        return GavelShares(policy, **params)
    build.__name__ = f"shares_{policy.replace('-', '_')}"
    return build


__all__ = ["COMMON", "GavelShares", "factory", "shares_problem"]

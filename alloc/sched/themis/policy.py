r"""Themis (Mahajan et al., NSDI'20) as an order: leases, finish-time
fairness and the partial-allocation auction among the worst-off jobs.

The NSDI'20 paper could not be read here (only its abstract and a secondary
summary): the rules below are the ones the reading list states -- finish-
time fairness $\rho$, leases, an auction among the apps with the worst
$\rho$ with a knob $f$, bids from each app's valuation of GPU sets -- made
concrete as follows, each choice alloc's own and written down; the tests
check the auction's properties (Pareto efficiency, envy-freeness) and
$\rho$ over time rather than figures of the paper.

At each decision (an arrival, a completion, or a round):

1. **Leases.**  A job that holds GPUs keeps them for ``lease_s`` seconds
   from the decision that started it (its lease); those jobs rank first, in
   the order their leases began, so that nothing preempts them.  The GPUs
   that are free or held under expired leases are *offered*.
2. **Finish-time fairness.**  Every active job's $\rho_j(t)$
   (`alloc.sched.themis.fairness`: its projected finish in the shared
   cluster over its finish alone on a $1/\bar N$ share).
3. **Bidders.**  The $\lceil (1 - f) n \rceil$ jobs with the largest $\rho$
   among the $n$ that do not hold an unexpired lease (``f`` = 0.8: the
   fifth worst off; $f \to 1$ favours fairness, $f = 0$ lets every job bid).
4. **Bids.**  A job's valuation of an offered GPU is the throughput it adds:
   $1/g_j$ of the job's speed alone on a GPU of a server whose offered GPUs
   can hold the job's gang there (all of it, or a whole server of it when it
   is wider than a server), and $\sigma_j / g_j$ on a GPU of a more
   fragmented server, where $\sigma_j$ is the slowdown of a spread job
   (``spread`` for models whose tensor-size skew calls for consolidation,
   Tiresias' Table 6, 1 otherwise).  GPUs of servers with the same number of
   offered GPUs are interchangeable: they form one class of the auction.
   The per-server view needs the jobs' placements (``run.gpu_names`` of
   the simulator's records); without them every offered GPU is one class.
5. **Auction.**  The partial-allocation auction
   (`alloc.sched.themis.auction`): the proportionally fair division of
   the offered GPUs among the bidders, of which each keeps the fraction
   $f_i$ its presence leaves the others.
6. **Order.**  After the lease holders, the bidders by the share of their
   gang they keep ($\sum_s$ kept $/ g_j$, largest first; ties: larger
   $\rho$), then every other job by decreasing $\rho$ (the leftovers go to
   the rest, work-conserving).  The placement places the ranked jobs that
   fit, whole gangs only; a job ranked below a waiting one that cannot
   otherwise be placed is preempted (``preemptive``), which only jobs whose
   lease expired can be.

``history`` keeps, per decision, the time, the largest and mean $\rho$ of
the active jobs, the bidders and the auction's kept fractions.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...gpukey import server_of
from ..kinds import Context, JobView
from .auction import partial_allocation
from .fairness import Contention, rho


class Themis:
    """The Themis order (module notes).

    Parameters
    ----------
    f : float
        The fairness knob, in [0, 1): the fraction of jobs left out of each
        auction (default 0.8).
    lease_s : float
        Seconds a started job keeps its GPUs (default 600).
    spread : float
        Throughput of a placement-sensitive job on GPUs it cannot gang on
        one server, relative to consolidated (default 0.6).
    packlimit : float
        The tensor-size skew above which a model is placement-sensitive
        (Tiresias' Table 6; default 0.5).
    preemptive : bool
        Jobs past their lease may be preempted (default True).

    Examples
    --------
    >>> from types import SimpleNamespace as J
    >>> from alloc import Cluster, Server
    >>> from alloc.sched import Context
    >>> from alloc.sched.themis.policy import Themis
    >>> c = Cluster(tuple(Server(f"s{i}", 8000, 8000, 4) for i in range(2)))
    >>> def job(id, arr, gpus, d):
    ...     return J(id=id, arrival_s=arr, gpus=gpus, duration_s=d, remaining_s=d,
    ...              running=False, model=None, attained_s=0.0)
    >>> t = Themis(f=0.0)
    >>> t.rank([job("a", 0, 4, 100.0), job("b", 0, 4, 900.0), job("c", 80, 4, 100.0)],
    ...        Context(100.0, 1, c))
    ['a', 'c', 'b']
    """
    static = False

    def __init__(self, f: float = 0.8, lease_s: float = 600.0, spread: float = 0.6,
                 packlimit: float = 0.5, preemptive: bool = True) -> None:
        if not (isinstance(f, (int, float)) and 0.0 <= f < 1.0):
            raise ValueError(f"f: expected a number in [0, 1), got {f!r}")
        if not (isinstance(lease_s, (int, float)) and lease_s > 0 and math.isfinite(lease_s)):
            raise ValueError(f"lease_s: expected seconds > 0, got {lease_s!r}")
        if not (isinstance(spread, (int, float)) and 0.0 < spread <= 1.0):
            raise ValueError(f"spread: expected a number in (0, 1], got {spread!r}")
        self.f, self.lease_s, self.spread = float(f), float(lease_s), float(spread)
        self.packlimit = float(packlimit)
        self.preemptive = preemptive
        self.contention = Contention()
        self._lease: dict[str, float] = {}
        self._prev_now: float | None = None
        self.history: list[dict] = []
        self.auctions = 0

    # ------------------------------------------------------------ helpers
    def _sigma(self, job: JobView) -> float:
        from ..tiresias.models import consolidate
        return self.spread if job.gpus > 1 and consolidate(job.model, self.packlimit) else 1.0

    def _offer(self, jobs: Sequence[JobView], keep: set, ctx: Context) -> dict[str, int]:
        """Offered GPUs per server: its GPUs less those held under a lease."""
        cap = {s.id: s.gpus for s in ctx.cluster.servers}
        known = True
        for j in jobs:
            if j.id not in keep:
                continue
            run = getattr(j, "run", None)
            names = getattr(run, "gpu_names", None)
            if not names:
                known = False
                break
            for g in names:
                sid = server_of(g)
                if sid in cap:
                    cap[sid] -= 1
        if not known:               # no placements: one pool of offered GPUs
            held = sum(j.gpus for j in jobs if j.id in keep)
            return {"*": max(0, sum(cap.values()) - held)}
        return cap

    def rank(self, jobs: Sequence[JobView], ctx: Context) -> list[str]:
        """Lease holders, then the auction's bidders, then the rest (module notes)."""
        now = ctx.now_s
        self.contention.observe(now, [j.id for j in jobs])
        started = self._prev_now if self._prev_now is not None else now
        for j in jobs:
            if j.running and j.id not in self._lease:
                self._lease[j.id] = started
            elif not j.running:
                self._lease.pop(j.id, None)
        live = {j.id for j in jobs}
        for k in [k for k in self._lease if k not in live]:
            del self._lease[k]
        G = float(sum(s.gpus for s in ctx.cluster.servers))
        r = {j.id: rho(now, j.arrival_s, j.remaining_s, j.duration_s, j.gpus, G,
                       self.contention.average(j.id, now), j.running) for j in jobs}
        keep = {j.id for j in jobs if j.running and now - self._lease[j.id] < self.lease_s}
        others = [j for j in jobs if j.id not in keep]
        n_bid = min(len(others), max(1, math.ceil((1.0 - self.f) * len(others)))) if others else 0
        by_rho = sorted(others, key=lambda j: (-r[j.id], j.arrival_s, j.id))
        bidders = by_rho[:n_bid]
        share = self._auction(bidders, jobs, keep, ctx) if bidders else {}
        head = sorted(keep, key=lambda i: (self._lease[i], i))
        bid = sorted(bidders, key=lambda j: (-share.get(j.id, 0.0), -r[j.id], j.arrival_s, j.id))
        rest = by_rho[n_bid:]
        out = head + [j.id for j in bid] + [j.id for j in rest]
        finite = [v for v in r.values() if math.isfinite(v)]
        self.history.append({"t": now, "rho_max": max(finite) if finite else None,
                             "rho_mean": float(np.mean(finite)) if finite else None,
                             "active": len(jobs), "bidders": [j.id for j in bidders],
                             "kept": {k: round(v, 6) for k, v in share.items()}})
        self._prev_now = now
        return out

    def _auction(self, bidders: Sequence[JobView], jobs: Sequence[JobView], keep: set,
                 ctx: Context) -> dict[str, float]:
        """Each bidder's kept GPUs over its gang, from one auction."""
        cap = self._offer(jobs, keep, ctx)
        size = {s.id: s.gpus for s in ctx.cluster.servers}
        biggest = max(size.values(), default=1)
        levels = sorted({c for c in cap.values() if c > 0})
        if not levels:
            return {}
        supply = np.array([sum(c for c in cap.values() if c == lv) for lv in levels], float)
        w = np.zeros((len(bidders), len(levels)))
        for i, j in enumerate(bidders):
            need = min(j.gpus, biggest)
            sig = self._sigma(j)
            for k, lv in enumerate(levels):
                pooled = len(cap) == 1 and "*" in cap
                w[i, k] = (1.0 if pooled or lv >= need else sig) / j.gpus
        res = partial_allocation(w, supply)
        self.auctions += 1
        kept = res.kept.sum(axis=1)
        return {j.id: float(kept[i]) / j.gpus for i, j in enumerate(bidders)}


__all__ = ["Themis"]

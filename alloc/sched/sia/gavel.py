r"""Gavel's max-sum-throughput policy at TunedJobs sizes, as the Sia
simulator runs it (its ``gavel.py``; Narayanan et al., OSDI'20).

Every round (the artifact: 360 s), with each job at its workload's GPU count
``sf`` and batch:

* **throughput** of job ``j`` on type ``t``: updates per second with ``sf``
  GPUs packed ``R_t`` to a node at the TunedJobs batch (split as
  $s = \lceil M/\mathrm{sf}/b^{max}\rceil - 1$, at least 1 with one GPU, the
  per-GPU cap of that placement's traces), divided by Sia's slowdown; 0.1
  when ``sf`` exceeds the type's largest configuration;
* **shares**: the linear program $\max \sum_{jt} T_{jt} x_{jt}$ s.t.
  $\sum_t x_{jt} \le 1$, $\sum_j \mathrm{sf}_j x_{jt} \le$ GPUs of ``t``,
  $x \ge 0$ (through alloc's kernel: HiGHS's interior-point method without
  crossover, as the artifact's ECOS, so that tied jobs get equal shares;
  rounded to 5 decimals);
* **priorities** $x_{jt} / f_{jt}$, $f_{jt}$ the job's share of the time
  given on ``t`` so far (each job starts with half a round on each type);
  (job, type) pairs by decreasing priority (then share) take the type's
  GPUs while ``sf`` fits, each job once;
* **workers**: per type, jobs by decreasing ``sf``; a job keeps its
  previous GPUs on the same type when none is taken yet, the others fill
  the servers in order.

Give it as the run's sizing and mechanism (`alloc.sched.pollux.decide`).

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("sizing", "gavel-tj").build().interval
360.0
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ...goodput.model import EPS
from ..pollux.baselines import packed
from ..pollux.decide import Decider


def tj_throughput(sj: Any, gpu_type: str, per_node: int, largest: int) -> float:
    """Updates per second of job ``sj`` at its TunedJobs size and batch on
    ``gpu_type`` (module notes)."""
    sf = sj.target_replicas or 1
    if sf > largest:
        return 0.1
    truth = sj.truths[gpu_type]
    lim = truth.limits
    place = packed(sf, per_node)
    batch = sj.target_batch or lim.init
    local = math.ceil(batch / sf - EPS)
    hi = truth.max_local_bsz(place)
    accum = math.ceil(local / hi - EPS) - 1
    if sf == 1:
        accum = max(1, accum)
    b = math.ceil(local / (accum + 1) - EPS)
    b = min(b, int(lim.max / (sf * (accum + 1))))
    step, sync = truth.step_sync(place, b)
    return 1.0 / (step + (step - sync) * accum) / sj.slowdown


class GavelTJ(Decider):
    """Gavel's max-sum-throughput time shares (module notes).

    Parameters
    ----------
    interval : float
        The round length its time accounting assumes (s; the run's ``round_s``).
    engine : str
        The kernel's engine for the linear program.
    """

    def __init__(self, interval: float = 360.0, engine: str = "highs") -> None:
        super().__init__()
        self.interval = float(interval)
        self.engine = engine
        self.job_time: dict[str, dict[str, float]] = {}
        self.cluster_time: dict[str, float] = {}
        self.assigned: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {}
        self.times: list[float] = []
        self._types: dict | None = None

    def _cluster(self, cluster: Any) -> None:
        if self._types is not None:
            return
        from .policy import TYPE_ORDER, configurations
        by: dict[str, list[int]] = {}
        per: dict[str, int] = {}
        for i, s in enumerate(cluster.servers):
            if s.gpus:
                by.setdefault(s.gpu_type, []).append(i)
                per[s.gpu_type] = s.gpus
        order = [t for t in TYPE_ORDER if t in by] + sorted(t for t in by if t not in TYPE_ORDER)
        self._types = {t: (len(by[t]), per[t]) for t in order}
        self._nodes = {t: by[t] for t in order}
        cfgs = configurations(self._types)
        self._largest = {t: max(k for tt, _, k in cfgs if tt == t) for t in order}
        self.cluster_time = {t: 0.0 for t in order}

    def decide(self, jobs: Any, ctx: Any) -> dict:
        """This round's runners on their GPUs (module notes)."""
        t0 = time.perf_counter()
        prog = self.progress(ctx)
        self._cluster(ctx.cluster)
        types = self._types or {}
        jobs = list(jobs)
        sims = {r.id: prog.state(r, ctx.now_s) for r in jobs}
        for r in jobs:
            if r.id not in self.job_time:
                self.job_time[r.id] = {t: self.interval / 2 for t in types}
                for t in types:
                    self.cluster_time[t] += self.interval / 2
        thr = {r.id: {t: tj_throughput(sims[r.id], t, types[t][1], self._largest[t])
                      for t in types} for r in jobs}
        sf = {r.id: sims[r.id].target_replicas or 1 for r in jobs}
        alloc = self._shares(thr, sf, {t: n * per for t, (n, per) in types.items()})
        entries = []
        for t in types:
            for r in jobs:
                a = alloc[r.id][t]
                frac = self.job_time[r.id][t] / self.cluster_time[t] if self.cluster_time[t] else 0
                prio = 0.0 if a == 0 else (a / frac if frac > 0 else a * 1e9)
                entries.append((r.id, t, prio, 0.0, a))
        entries.sort(key=lambda e: (e[2], e[3], e[4]), reverse=True)
        left = {t: n * per for t, (n, per) in types.items()}
        chosen: dict[str, list[tuple[str, int]]] = {t: [] for t in types}
        done: set[str] = set()
        for jid, t, *_ in entries:
            if left[t] == 0 or jid in done or sf[jid] > left[t]:
                continue
            left[t] -= sf[jid]
            done.add(jid)
            chosen[t].append((jid, sf[jid]))
        new = self._workers(chosen)
        for jid, (t, _) in new.items():
            self.job_time[jid][t] += self.interval
            self.cluster_time[t] += self.interval
        self.assigned = new
        servers = ctx.cluster.servers
        self.times.append(time.perf_counter() - t0)
        plan: dict[str, tuple[str | None, list[str]]] = {}
        for jid, (t, ws) in new.items():
            plan[jid] = (t, [f"{servers[w[0]].id}/gpu{w[1]}" for w in ws])
        return plan

    def _shares(self, thr: dict, sf: dict, gpus: dict) -> dict:
        from ...deadline import Deadline
        from ...kernel import LinearModel, solve
        ids = sorted(thr)
        types = sorted(gpus)
        m = LinearModel("gavel", maximize=True)
        x = {(j, t): m.add_var(0.0) for j in ids for t in types}
        m.set_objective({x[j, t]: thr[j][t] for j in ids for t in types})
        for t in types:
            m.add_row({x[j, t]: float(sf[j]) for j in ids}, hi=float(gpus[t]))
        for j in ids:
            m.add_row({x[j, t]: 1.0 for t in types}, hi=1.0)
        # an interior point of the optimal face (as the artifact's ECOS gives),
        # not a vertex: jobs tied in throughput share the types alike
        params: dict[str, Any] = {"solver": "ipm", "run_crossover": "off", "presolve": "off"} \
            if self.engine == "highs" else {}
        res = solve(m, self.engine, deadline=Deadline.after(60), **params)
        xv = np.zeros(m.n) if res.x is None else res.x
        return {j: {t: float(min(max(round(float(xv[x[j, t]]), 5), 0.0), 1.0)) for t in types}
                for j in ids}

    def _workers(self, chosen: dict) -> dict[str, tuple[str, tuple[tuple[int, int], ...]]]:
        out: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {}
        types = self._types or {}
        for t, lst in chosen.items():
            per = types[t][1]
            servers = [[(s, k) for k in range(per)] for s in self._nodes[t]]
            ptr = 0
            taken: set = set()
            lst = sorted(lst, key=lambda e: e[1], reverse=True)
            for size in sorted({e[1] for e in lst}, reverse=True):
                for jid, sz in lst:
                    if sz != size:
                        continue
                    prev = self.assigned.get(jid)
                    if prev is not None and prev[0] == t and not any(w in taken for w in prev[1]):
                        out[jid] = prev
                        taken.update(prev[1])
                for jid, sz in lst:
                    if sz != size:
                        continue
                    got = list(out[jid][1]) if jid in out else []
                    while len(got) < sz and ptr < len(servers):
                        if not servers[ptr]:
                            ptr += 1
                            continue
                        w = servers[ptr].pop(0)
                        if w not in taken:
                            got.append(w)
                            taken.add(w)
                    if len(got) != sz:
                        raise ValueError(f"gavel-tj: could not assign {sz} GPUs of {t} to {jid}")
                    out[jid] = (t, tuple(got))
        return out


__all__ = ["GavelTJ", "tj_throughput"]

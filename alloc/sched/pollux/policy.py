r"""Pollux's scheduling policy (Qiao et al., OSDI'21) on alloc's simulator.

Every round (the artifact: 60 s), with ``J`` active jobs ordered by attained
service (GPU-seconds, restart delays included) then arrival, on nodes of
``R`` GPUs (``G`` in all):

* each job's **speed-up table** $\mathrm{SP}_j(n, k) = G^*_j(n, k) / G^*_j(1,
  f)$, $f = \lceil G/J \rceil$ (its goodput over its fair share on one node;
  $k/f$ before it has a model), `alloc.goodput.speedup`;
* its **cap** $K_j \le \min(\max(2 k^{max}_j, 1), 64, \lfloor M_{max}/b_{lo}\rfloor)$
  ($k^{max}$ the most GPUs it has run on; ncf 1);
* its **restart factor** $r_j = \max(a_j - 30 R_j, 0) / (a_j + 30)$ (age
  $a_j$, restarts $R_j$), applied when its allocation changes, first start
  included;
* the fitness: the power mean ($p = -1$) of $\mathrm{SP}_j \cdot (1/G)\cdot N
  \cdot r_j^{[\text{changed}]}$, searched by the genetic algorithm of
  `alloc.solvers.goodput.ga` (seeded: the run's seed), or solved exactly by
  `alloc.solvers.goodput.patterns` (``pollux-exact``).

The decision is carried out through the simulator's control (every change
a checked session event): jobs whose allocation changes release their GPUs
and take the new ones (a restart), jobs given none wait (held out of the
rounds).  Each job then re-chooses its batch for its new allocation
(`alloc.goodput.job`).  Both mechanisms need the goodput progress model.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("mechanism", "pollux").build(seed=1).seed
1
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ...goodput.speedup import JobModel, speedup_tables
from ..kinds import BaseMechanism

#: Restart penalty of Pollux's fitness (s).
RESTART_PENALTY_S = 30.0
#: Largest GPU count a job may be given.
MAX_REPLICAS = 64


def max_replicas(sj: Any) -> int:
    """Pollux's cap on a job's GPUs (module notes)."""
    if sj.model == "ncf":
        return 1
    lim = sj.limits()
    return min(max(2 * sj.max_profiled_replicas(), 1), MAX_REPLICAS, lim.max // lim.local_lo)


def restart_factor(age: float, restarts: int, penalty: float = RESTART_PENALTY_S) -> float:
    """``max(age - R * penalty, 0) / (age + penalty)``."""
    return max(age - restarts * penalty, 0.0) / (age + penalty)


class RoundInput:
    """One round's inputs, from the simulator's jobs and their `SimJob`\\ s."""

    def __init__(self, ctl: Any, jobs: list, sims: dict) -> None:
        now = ctl.now_s
        cl = ctl.cluster
        self.servers = [s for s in cl.servers if s.gpus]
        self.index = {s.id: i for i, s in enumerate(self.servers)}
        self.order = sorted(jobs, key=lambda r: (sims[r.id].attained_service,
                                                  sims[r.id].arrival))
        J, S = len(self.order), len(self.servers)
        G = sum(s.gpus for s in self.servers)
        self.fair = math.ceil(G / J) if J else 1
        models, factors, caps = [], [], []
        for r in self.order:
            sj = sims[r.id]
            cap = max_replicas(sj)
            params = sj.perf_params() if sj.grad is not None else None
            models.append(JobModel(params, sj.grad, sj.limits(), cap))
            factors.append(restart_factor(now - sj.arrival, sj.restarts or 0))
            caps.append(cap)
        self.models = models
        self.restart = np.array(factors)
        self.caps = np.array(caps, dtype=int)
        self.capacity = np.array([s.gpus for s in self.servers], dtype=int)
        self.table = speedup_tables(models, S, MAX_REPLICAS, base=(1, self.fair))
        self.base = np.zeros((J, S), dtype=int)
        for i, r in enumerate(self.order):
            p = ctl.placement(r.id)
            if p is not None:
                for g in p.gpus:
                    self.base[i, self.index[g.gpu.rsplit("/", 1)[0]]] += 1


def apply_rows(ctl: Any, inp: RoundInput, rows: np.ndarray) -> int:
    """Carry out a decision ``rows[j, n]`` through the control; the number of
    jobs whose allocation changed."""
    changed = [i for i in range(len(inp.order)) if not np.array_equal(rows[i], inp.base[i])]
    for i in changed:
        r = inp.order[i]
        if r.running:
            ctl.suspend(r.id, hold=True)
    free: dict[str, list[str]] = {}
    for g, milli in ctl.free_gpus().items():
        if milli >= 1000:
            free.setdefault(g.rsplit("/", 1)[0], []).append(g)
    for lst in free.values():
        lst.sort(key=lambda g: int(g.rsplit("gpu", 1)[1]))
    for i, r in enumerate(inp.order):
        if rows[i].sum() == 0:
            if not r.held or r.running:
                ctl.suspend(r.id, hold=True)
            continue
        if i not in changed and r.running:
            continue
        gpus = []
        for n in np.flatnonzero(rows[i]):
            sid = inp.servers[n].id
            take = free[sid][:int(rows[i, n])]
            free[sid] = free[sid][int(rows[i, n]):]
            gpus += take
        ctl.place(r.id, gpus)
    return len(changed)


class Pollux(BaseMechanism):
    """Pollux's policy, searched by its genetic algorithm (module notes).

    Parameters
    ----------
    seed : int, optional
        Seeds the search (default: the run's seed).
    pop_size, generations : int
        NSGA-II's population and generations (the artifact: 100 and 100).
    """

    def __init__(self, seed: int | None = None, pop_size: int = 100,
                 generations: int = 100) -> None:
        self.seed = seed
        self.pop_size, self.generations = pop_size, generations
        self.rng: np.random.Generator | None = None
        self.front: np.ndarray | None = None
        self.front_jobs: list[str] = []
        self.times: list[float] = []
        self.fitness: list[tuple[float, float]] = []

    def _sims(self, ctl: Any) -> tuple[list, dict]:
        prog = ctl.ctx.progress
        if prog is None or not hasattr(prog, "state"):
            raise ValueError(f"{type(self).__name__} needs the goodput progress model "
                             f"(alloc.goodput.progress.GoodputProgress)")
        jobs = [r for r in ctl.jobs.values() if r.admitted]
        return jobs, {r.id: prog.state(r, ctl.now_s) for r in jobs}

    def before_step(self, ctl: Any) -> None:
        """Decide and carry out this round's allocation."""
        from ...solvers.goodput.ga import GaInput, adapt_seeds, search
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed if self.seed is not None
                                             else ctl.ctx.rng.randrange(2 ** 32))
        t0 = time.perf_counter()
        jobs, sims = self._sims(ctl)
        if not jobs:
            return
        inp = RoundInput(ctl, jobs, sims)
        ids = [r.id for r in inp.order]
        seeds = adapt_seeds(self.front, self.front_jobs, ids) if self.front is not None else None
        ga = GaInput(inp.table, inp.restart, inp.base, inp.caps, inp.capacity)
        out = search(ga, self.rng, seeds, pop_size=self.pop_size, generations=self.generations)
        self.front, self.front_jobs = out.front, ids
        self.times.append(time.perf_counter() - t0)
        self.fitness.append((ctl.now_s, out.fitness))
        apply_rows(ctl, inp, out.best)


__all__ = ["MAX_REPLICAS", "Pollux", "RESTART_PENALTY_S", "RoundInput", "apply_rows",
           "max_replicas", "restart_factor"]

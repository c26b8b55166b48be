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
  `alloc.goodput.ga` (seeded: the run's seed), or solved exactly by
  `alloc.goodput.patterns` (``pollux-exact``).

A server closed to new placements (drained) offers the search only the
GPUs its running jobs hold there.

Each policy is given as the run's sizing and mechanism
(`alloc.sched.pollux.decide`): jobs whose allocation changes release their
GPUs and take the new ones (a restart), jobs given none wait.  Each job
then re-chooses its batch for its new allocation (`alloc.goodput.job`).
Both need the goodput progress model.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("sizing", "pollux").build(seed=1).seed
1
"""
from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np

from ...goodput.speedup import JobModel, speedup_tables
from .decide import Decider

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

    def __init__(self, ctx: Any, jobs: list, sims: dict) -> None:
        now = ctx.now_s
        cl = ctx.cluster
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
            p = r.run.placement if r.running and r.run is not None else None
            if p is not None:
                for g in p.gpus:
                    self.base[i, self.index[g.gpu.rsplit("/", 1)[0]]] += 1
        for sid in ctx.closed:                  # drained: what runs there, no more
            n = self.index.get(sid)
            if n is not None:
                self.capacity[n] = self.base[:, n].sum()

    def plan(self, rows: np.ndarray) -> dict[str, tuple[str | None, list[str]]]:
        """GPU names of each job of a decision ``rows[j, n]``: a job whose row
        is unchanged keeps its GPUs; the others take free ones, in node order."""
        out: dict[str, tuple[str | None, list[str]]] = {}
        free = {s.id: set(range(s.gpus)) for s in self.servers}
        keep = [i for i in range(len(self.order)) if np.array_equal(rows[i], self.base[i])]
        for i in keep:
            r = self.order[i]
            p = r.run.placement if r.running and r.run is not None else None
            if p is not None:
                names = [g.gpu for g in p.gpus]
                for g in names:
                    sid, k = g.rsplit("/gpu", 1)
                    free[sid].discard(int(k))
                out[r.id] = (self.servers[0].gpu_type, names)
        for i, r in enumerate(self.order):
            if r.id in out or rows[i].sum() == 0:
                continue
            names = []
            for n in np.flatnonzero(rows[i]):
                s = self.servers[n]
                take = sorted(free[s.id])[:int(rows[i, n])]
                free[s.id] -= set(take)
                names += [f"{s.id}/gpu{k}" for k in take]
            out[r.id] = (self.servers[int(np.flatnonzero(rows[i])[0])].gpu_type, names)
        return out


class Pollux(Decider):
    """Pollux's policy, searched by its genetic algorithm (module notes).
    Give it as the run's sizing and mechanism (`alloc.sched.pollux.decide`).

    Parameters
    ----------
    seed : int, optional
        Seeds the search (default: the run's seed).
    pop_size, generations : int
        NSGA-II's population and generations (the artifact: 100 and 100).
    """

    def __init__(self, seed: int | None = None, pop_size: int = 100,
                 generations: int = 100, compare_every: int = 0,
                 compare_time_limit: float = 10.0) -> None:
        super().__init__()
        self.seed = seed
        self.pop_size, self.generations = pop_size, generations
        #: every this many rounds, also maximise the round's fitness exactly
        #: (`exact_options`) and record both in ``comparisons`` (0: never)
        self.compare_every = int(compare_every)
        self.compare_time_limit = float(compare_time_limit)
        self.comparisons: list[dict] = []
        self.rng: np.random.Generator | None = None
        self.front: np.ndarray | None = None
        self.front_jobs: list[str] = []
        self.times: list[float] = []
        self.fitness: list[tuple[float, float]] = []

    def _inputs(self, jobs: Sequence[Any], ctx: Any) -> RoundInput:
        prog = self.progress(ctx)
        sims = {r.id: prog.state(r, ctx.now_s) for r in jobs}
        return RoundInput(ctx, list(jobs), sims)

    def decide(self, jobs: Sequence[Any], ctx: Any) -> dict:
        """This round's allocation by the genetic search."""
        from ...goodput.ga import GaInput, adapt_seeds, search
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed if self.seed is not None
                                             else ctx.rng.randrange(2 ** 32))
        t0 = time.perf_counter()
        inp = self._inputs(jobs, ctx)
        ids = [r.id for r in inp.order]
        seeds = adapt_seeds(self.front, self.front_jobs, ids) if self.front is not None else None
        ga = GaInput(inp.table, inp.restart, inp.base, inp.caps, inp.capacity)
        out = search(ga, self.rng, seeds, pop_size=self.pop_size, generations=self.generations)
        self.front, self.front_jobs = out.front, ids
        self.times.append(time.perf_counter() - t0)
        self.fitness.append((ctx.now_s, out.fitness))
        if self.compare_every and len(self.times) % self.compare_every == 0:
            self.comparisons.append(dict(compare_round(inp, self.compare_time_limit),
                                         t=ctx.now_s, ga_fitness=out.fitness,
                                         ga_s=self.times[-1]))
        return inp.plan(out.best)


def exact_options(inp: RoundInput, p: float = -1.0, eps: float = 1e-3) -> tuple[list, list]:
    """The round as the exact pattern model's input
    (`alloc.goodput.patterns`): one type of ``R``-GPU nodes; per job
    every ``(N, K)`` with $K \\le K_j$, $\\lceil K/R\\rceil \\le N \\le \\min(K, 16)$,
    valued $-(\\mathrm{SP}_j(N,K)\\,c\\,r_j + \\epsilon)^p$; keeping its exact
    current allocation is valued without $r_j$; waiting $-\\epsilon^p$."""
    from ...goodput.patterns import JobOptions, TypeNodes
    J, S = inp.base.shape
    R = int(inp.capacity.max())
    c = S / max(1, int(inp.capacity.sum()))
    types = [TypeNodes("T", R, tuple(range(S)))]

    def u(x: np.ndarray | float) -> np.ndarray:
        return -np.power(np.asarray(x, dtype=float) + eps, p)

    jobs = []
    for j in range(J):
        cfg = [(0, n, k) for k in range(1, int(inp.caps[j]) + 1)
               for n in range(max(1, -(-k // R)), min(k, S, 16) + 1)]
        arr = np.array(cfg, dtype=int).reshape(-1, 3)
        sp = inp.table[j, arr[:, 1], arr[:, 2]] if len(arr) else np.zeros(0)
        vals = u(sp * c * inp.restart[j])
        keep, kv = None, 0.0
        if inp.base[j].sum():
            nodes = np.flatnonzero(inp.base[j])
            keep = tuple((int(n), int(inp.base[j, n])) for n in nodes)
            kv = float(u(inp.table[j, len(nodes), int(inp.base[j].sum())] * c))
        jobs.append(JobOptions(arr, np.asarray(vals, dtype=float), float(u(0.0)), keep, kv))
    return types, jobs


def exact_rows(inp: RoundInput, out: Any) -> np.ndarray:
    """The allocation matrix of the exact model's answer."""
    rows = np.zeros_like(inp.base)
    for j, a in enumerate(out.assign):
        if a == "keep":
            rows[j] = inp.base[j]
        elif a is not None:
            for n, k in a[1].items():
                rows[j, n] = k
    return rows


def compare_round(inp: RoundInput, time_limit: float = 10.0) -> dict:
    """The round's fitness maximised exactly: its value, the proven bound on
    it (as a power mean) and the solve time."""
    from ...deadline import Deadline
    from ...goodput.ga import GaInput, evaluate
    from ...goodput.patterns import solve_patterns
    t0 = time.perf_counter()
    types, opts = exact_options(inp)
    out = solve_patterns(types, opts, Deadline.after(time_limit))
    dt = time.perf_counter() - t0
    rows = exact_rows(inp, out)
    ga = GaInput(inp.table, inp.restart, inp.base, inp.caps, inp.capacity)
    fit = float(-evaluate(ga, rows[None].astype(np.int16))[0, 0])
    J = len(inp.order)
    # the model maximises -sum (S + eps)^-1; the power mean is J / sum (S + eps)^-1
    bound = J / -out.bound if out.bound is not None and out.bound < 0 else None
    return {"jobs": J, "exact_fitness": fit, "exact_bound": bound, "exact_s": dt,
            "status": out.status.value}


class PolluxExact(Pollux):
    """Pollux's policy with its fitness maximised exactly each round
    (`alloc.goodput.patterns`, through alloc's kernel), with a
    proven bound and gap per round (``rounds``).

    Parameters
    ----------
    time_limit : float
        Seconds per round's model (the best solution found is used when it
        runs out; its gap is recorded).
    engine : str
        The kernel's engine.
    """

    def __init__(self, time_limit: float = 10.0, engine: str = "highs") -> None:
        super().__init__()
        self.time_limit, self.engine = float(time_limit), engine
        self.rounds: list[dict] = []

    def decide(self, jobs: Sequence[Any], ctx: Any) -> dict:
        """This round's allocation, maximised exactly."""
        from ...deadline import Deadline
        from ...goodput.ga import GaInput, evaluate
        from ...goodput.patterns import solve_patterns
        t0 = time.perf_counter()
        inp = self._inputs(jobs, ctx)
        types, opts = exact_options(inp)
        out = solve_patterns(types, opts, Deadline.after(self.time_limit), engine=self.engine)
        rows = exact_rows(inp, out)
        ga = GaInput(inp.table, inp.restart, inp.base, inp.caps, inp.capacity)
        fit = float(-evaluate(ga, rows[None].astype(np.int16))[0, 0])
        self.times.append(time.perf_counter() - t0)
        self.fitness.append((ctx.now_s, fit))
        gap = None if out.bound is None else \
            abs(out.bound - out.value) / max(abs(out.bound), 1e-9)
        self.rounds.append({"t": ctx.now_s, "jobs": len(inp.order), "fitness": fit,
                            "status": out.status.value, "gap": gap})
        return inp.plan(rows)


__all__ = ["MAX_REPLICAS", "Pollux", "PolluxExact", "RESTART_PENALTY_S", "RoundInput",
           "compare_round", "exact_options", "exact_rows", "max_replicas", "restart_factor"]

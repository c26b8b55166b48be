r"""Sia's scheduling policy (Jayaram Subramanya et al., SOSP'23) on alloc's
simulator.

Every round (60 s) Sia picks, for each active job, at most one
*configuration* $c = (t, N, K)$ -- GPU type ``t``, ``N`` nodes, ``K`` GPUs:
on one node ``K`` in {1, 2, 4} (and 8 on 8-GPU nodes), on ``n >= 2`` nodes
all their GPUs (``K = n R_t``) -- by an integer program:

* **goodput matrix** $G_{jc} = G^*_{j,t}(N, K)$, the job's best goodput on
  type ``t`` (its model fitted on ``t``; the total batch capped at its
  workload's batch).  On a type it has not run on, the model of the first
  type it has one on (``T4``, ``A100``, ``RTX2080Ti`` order) is projected:
  $G^*_{j,u}(\lceil K/R_u\rceil, K)\cdot x_1(t)/x_1(u)$, with $x_1$ the
  largest per-GPU batch over the largest step time among the traces'
  one-GPU rows of the type.  A job with no model anywhere gets 1 on every
  one-GPU column.  Columns with ``K`` above the job's cap (the most over
  types of $\min(\max(2 k^{max}, 1), 64, \lfloor M_{max}/b_{lo}\rfloor)$) get
  $10^{-4}$; each row is divided by its smallest valid entry.
* **restart factor** $r_j = \max(a_j - R_j P_j, 0)/(a_j + P_j)$ ($r_j = 1$
  while $a_j < P_j$; ``P`` the model's restart penalty), on every column but
  the job's current configuration, for jobs that hold one.
* **program** (binary $x_{jc}$), $p = -0.5$, $\lambda_n = 1.1$:

  $$ \min \sum_{jc} a_{jc} x_{jc} + \lambda_n\Big(J - \sum_{jc} x_{jc}\Big),\quad
     a_{jc} = \min(\mathrm{round}(G_{jc}^p, 2), 3000) $$

  s.t. $\sum_c x_{jc} \le 1$, per type $\sum_{jc} K_c x_{jc} \le$ its GPUs,
  and $x_{j,\text{current}} = 1$ while ``j`` is in its restart delay;
  solved through alloc's kernel (HiGHS, or CP-SAT / CBC).
* **placement**, per type: jobs by GPU count, largest first; a job first
  takes whole free nodes for its ``floor(K/R)`` full nodes (from a pointer
  that rotates over the nodes), then its remaining GPUs first-fit from the
  pointer.  A job whose GPU type or GPUs-per-node shape changes restarts.

Give it as the run's sizing and mechanism (`alloc.sched.pollux.decide`).

Examples
--------
>>> from alloc.sched.sia.policy import configurations
>>> [(t, n, k) for t, n, k in configurations({"T4": (6, 4), "A100": (2, 8)})]
... # doctest: +NORMALIZE_WHITESPACE
[('T4', 1, 1), ('T4', 1, 2), ('T4', 1, 4), ('T4', 2, 8), ('T4', 3, 12), ('T4', 4, 16),
 ('T4', 5, 20), ('T4', 6, 24), ('A100', 1, 1), ('A100', 1, 2), ('A100', 1, 4),
 ('A100', 1, 8), ('A100', 2, 16)]
"""
from __future__ import annotations

import math
import time
from typing import Any, Mapping

import numpy as np

from ...goodput.model import best_batch_many
from ..pollux.decide import Decider

#: Goodput of an invalid configuration (before normalisation), and the floor after.
ZERO_ALLOC_GAIN = 1e-4
#: Cap on a normalised matrix entry raised to the power p.
CLIP = 3000.0
#: The projection order of GPU types (the artifact's cluster order).
TYPE_ORDER = ("T4", "A100", "RTX2080Ti")


def configurations(types: Mapping[str, tuple[int, int]]) -> list[tuple[str, int, int]]:
    """Sia's configurations per type, types in the given order (``{type:
    (nodes, GPUs per node)}``)."""
    out = []
    for t, (nodes, per) in types.items():
        singles = (1, 2, 4) + ((8,) if per == 8 else ())
        for k in singles:
            if k <= per:
                out.append((t, 1, k))
        for n in range(2, nodes + 1):
            out.append((t, n, n * per))
    return out


def restart_factor(age: float, restarts: int, penalty: float) -> float:
    """Sia's restart factor (module notes)."""
    if age < penalty:
        return 1.0
    return max(age - restarts * penalty, 0.0) / (age + penalty)


class SiaInput:
    """One round's goodput matrix, restart factors and pins (module notes)."""

    def __init__(self, ctx: Any, jobs: list, sims: dict, types: dict, configs: list,
                 prev: dict, p: float) -> None:
        now = ctx.now_s
        self.jobs = jobs
        self.configs = configs
        J, C = len(jobs), len(configs)
        ctypes = list(types)
        cfg_t = np.array([ctypes.index(t) for t, _, _ in configs])
        cfg_n = np.array([n for _, n, _ in configs])
        cfg_k = np.array([k for _, _, k in configs])
        mat = np.full((J, C), ZERO_ALLOC_GAIN, dtype=np.float32)
        nnz = np.zeros((J, len(ctypes)), bool)      # types without any model to use
        queries = []                                 # (row, col, theta, sq, var, lims, n, k, mult)
        self.factor = np.ones(J)
        self.scale = np.ones(J)
        self.server_index = {s.id: k for k, s in enumerate(ctx.cluster.servers)}
        self.pinned: dict[int, int] = {}
        for i, r in enumerate(jobs):
            sj = sims[r.id]
            cap = max(_cap(sj, t) for t in ctypes)
            fitted = {t: sj.perf_params(t) for t in ctypes
                      if sj.profiles[t].points and sj.grad is not None}
            src = next((t for t in TYPE_ORDER if t in fitted), None)
            for ti, t in enumerate(ctypes):
                valid = np.flatnonzero((cfg_t == ti) & (cfg_k <= cap))
                if t in fitted:
                    use, mult = t, 1.0
                elif src is not None:
                    use = src
                    mult = sj.truths[t].traces.one_gpu_rate() / \
                        sj.truths[src].traces.one_gpu_rate()
                else:
                    nnz[i, ti] = True
                    continue
                lim = sj.truths[use].limits
                top = sj.target_batch or lim.max
                theta = fitted[use].as_array()
                for c in valid:
                    n = cfg_n[c] if use == t else math.ceil(cfg_k[c] / types[use][1])
                    queries.append((i, c, theta, sj.grad.sqr, sj.grad.var,
                                    (lim.init, top, lim.local_lo, lim.local_hi), n, cfg_k[c],
                                    mult))
            age = now - sj.arrival
            self.factor[i] = restart_factor(age, sj.restarts or 0, sj.truth.traces.spec.sia_penalty_s)
            if sj.rescale_left > 0 and prev.get(r.id) is not None:
                self.pinned[i] = prev[r.id]
        if queries:
            rows = np.array([q[0] for q in queries])
            cols = np.array([q[1] for q in queries])
            lims = np.array([q[5] for q in queries], dtype=float)
            g, _, _ = best_batch_many(np.array([q[2] for q in queries]),
                                      np.array([q[3] for q in queries]),
                                      np.array([q[4] for q in queries]),
                                      lims[:, 0], lims[:, 1], lims[:, 2], lims[:, 3],
                                      np.array([q[6] for q in queries]),
                                      np.array([q[7] for q in queries]))
            mults = np.array([q[8] for q in queries])
            mat[rows, cols] = (g.astype(np.float32) * mults).astype(np.float32)
        for i in range(J):
            have = [ti for ti in range(len(ctypes)) if not nnz[i, ti]]
            mins = []
            for ti in have:
                row = mat[i, cfg_t == ti]
                pos = row[row > ZERO_ALLOC_GAIN]
                if pos.size:
                    mins.append(pos.min())
            low = min(mins) if mins else 1.0
            self.scale[i] = 1.0 / low
            mat[i] *= np.float32(1.0 / low)
            for ti in range(len(ctypes)):
                if nnz[i, ti]:
                    mat[i, (cfg_t == ti) & (cfg_k == 1)] = 1.0
            mat[i, mat[i] <= ZERO_ALLOC_GAIN] = ZERO_ALLOC_GAIN
        self.goodput = mat.copy()
        for i, r in enumerate(jobs):
            c0 = prev.get(r.id)
            if c0 is not None:
                keep = mat[i, c0]
                mat[i] *= np.float32(self.factor[i])
                mat[i, c0] = keep
        self.matrix = mat
        self.cfg_t, self.cfg_k = cfg_t, cfg_k
        a = np.round(np.power(mat.astype(np.float64), p), 2)
        self.cost = np.minimum(a, CLIP)


def _cap(sj: Any, t: str) -> int:
    lim = sj.truths[t].limits
    return min(max(2 * sj.max_profiled_replicas(t), 1), 64, lim.max // lim.local_lo)


def solve_ilp(inp: SiaInput, gpus: list[int], lambda_n: float, engine: str, deadline: Any,
              seed: int) -> tuple[list[int | None], float, dict]:
    """The integer program of the module notes: a configuration index (or
    None) per job, the objective and the engine's statistics."""
    from ...kernel import LinearModel, solve
    J, C = inp.cost.shape
    m = LinearModel("sia", maximize=False)
    x = np.array([[m.add_var(0, 1, integer=True) for _ in range(C)] for _ in range(J)]
                 ).reshape(J, C)
    obj = {int(x[j, c]): float(inp.cost[j, c]) - lambda_n for j in range(J) for c in range(C)}
    m.set_objective(obj, lambda_n * J)
    for j in range(J):
        m.add_row({int(v): 1.0 for v in x[j]}, hi=1.0)
    for t, cap in enumerate(gpus):
        cols = np.flatnonzero(inp.cfg_t == t)
        m.add_row({int(x[j, c]): float(inp.cfg_k[c]) for j in range(J) for c in cols},
                  hi=float(cap))
    for j, c in inp.pinned.items():
        m.set_bounds(int(x[j, c]), 1, 1)
    res = solve(m, engine, deadline=deadline, seed=seed)
    if res.x is None:
        raise ValueError(f"Sia's program has no solution ({res.status.value})")
    xv = np.round(res.x[x]).astype(int)
    out: list[int | None] = [int(np.argmax(xv[j])) if xv[j].sum() else None for j in range(J)]
    value = float(res.objective) if res.objective is not None else float("nan")
    return out, value, {"status": res.status.value, "bound": res.bound}


def place_type(allocs: list[tuple[str, int, int]], nodes: list[int], per: int
               ) -> dict[str, list[int]]:
    """Sia's placement on one type: ``allocs`` ``(job, N, K)`` in job order;
    the node index of each GPU of each job (module notes).

    Raises
    ------
    ValueError
        The jobs need more GPUs than the nodes hold (the program never asks it).

    Examples
    --------
    >>> place_type([("a", 1, 2), ("b", 2, 8), ("c", 1, 4)], [10, 11, 12, 13], 4)
    {'b': [10, 10, 10, 10, 11, 11, 11, 11], 'c': [12, 12, 12, 12], 'a': [13, 13]}
    """
    if sum(a[2] for a in allocs) > per * len(nodes):
        raise ValueError(f"place_type: {sum(a[2] for a in allocs)} GPUs asked of "
                         f"{per * len(nodes)}")
    remaining = [per] * len(nodes)
    out: dict[str, list[int]] = {}
    cur = 0
    total = len(nodes)
    for job, _, k in sorted(allocs, key=lambda a: a[2], reverse=True):
        node = cur
        full = k // per
        taken: list[int] = []
        if k == 0:
            out[job] = taken
            continue
        checked = 0
        while full > 0 and checked < total:
            if remaining[node] == per:
                remaining[node] -= per
                k -= per
                taken += [node] * per
                full -= 1
            node = (node + 1) % total
            checked += 1
        while k > 0:
            if remaining[node]:
                take = min(k, remaining[node])
                k -= take
                remaining[node] -= take
                taken += [node] * take
            node = (node + 1) % total
        out[job] = taken
        cur = node
    return {j: [nodes[i] for i in v] for j, v in out.items()}


class Sia(Decider):
    """Sia's policy (module notes).  Give it as the run's sizing and
    mechanism (`alloc.sched.pollux.decide`).

    Parameters
    ----------
    p : float
        The fairness exponent (the artifact's flag: -0.5).
    lambda_n : float
        The cost of leaving a job without GPUs (1.1).
    engine : str
        The kernel's engine for the program (``highs``, ``cpsat``, ``cbc``).
    """

    def __init__(self, p: float = -0.5, lambda_n: float = 1.1, engine: str = "highs",
                 compare_every: int = 0, compare_time_limit: float = 10.0) -> None:
        super().__init__()
        self.p, self.lambda_n, self.engine = float(p), float(lambda_n), engine
        #: every this many rounds, also solve the round exactly over every
        #: configuration (`sia_exact_options`) and record both objectives in
        #: ``comparisons`` (Sia's, to minimise; 0: never)
        self.compare_every = int(compare_every)
        self.compare_time_limit = float(compare_time_limit)
        self.comparisons: list[dict] = []
        self.prev: dict[str, int | None] = {}
        self.times: list[float] = []
        self.solver_times: list[float] = []
        self.rounds: list[dict] = []
        self._types: dict | None = None
        self.last: SiaInput | None = None

    def _cluster(self, cluster: Any) -> tuple[dict, list]:
        if self._types is None:
            by: dict[str, list[int]] = {}
            per: dict[str, int] = {}
            for i, s in enumerate(cluster.servers):
                if s.gpus:
                    by.setdefault(s.gpu_type, []).append(i)
                    per[s.gpu_type] = s.gpus
            order = [t for t in TYPE_ORDER if t in by] + sorted(t for t in by
                                                               if t not in TYPE_ORDER)
            self._types = {t: (len(by[t]), per[t]) for t in order}
            self._nodes = {t: by[t] for t in order}
            self._configs = configurations(self._types)
        return self._types, self._configs

    def decide(self, jobs: Any, ctx: Any) -> dict:
        """This round's configurations, placed (module notes)."""
        from ...deadline import Deadline
        t0 = time.perf_counter()
        prog = self.progress(ctx)
        jobs = list(jobs)
        sims = {r.id: prog.state(r, ctx.now_s) for r in jobs}
        types, configs = self._cluster(ctx.cluster)
        inp = SiaInput(ctx, jobs, sims, types, configs, self.prev, self.p)
        gpus = [n * per for n, per in types.values()]
        t1 = time.perf_counter()
        choice, value, stats = solve_ilp(inp, gpus, self.lambda_n, self.engine,
                                         Deadline.after(60), 0)
        self.solver_times.append(time.perf_counter() - t1)
        if self.compare_every and len(self.solver_times) % self.compare_every == 0:
            self.comparisons.append(self._compare(ctx, inp, jobs, sims, value,
                                                  self.solver_times[-1]))
        self.prev = {r.id: choice[i] for i, r in enumerate(jobs)}
        self.rounds.append({"t": ctx.now_s, "objective": value, "jobs": len(jobs),
                            "choice": list(choice), **stats})
        self.last = inp
        plan = self.placements(ctx.cluster, inp, choice)
        self.times.append(time.perf_counter() - t0)
        return plan

    def _compare(self, ctx: Any, inp: SiaInput, jobs: list, sims: dict, ilp: float,
                 ilp_s: float) -> dict:
        from ...deadline import Deadline
        from ...goodput.patterns import solve_patterns
        types = self._types or {}
        t0 = time.perf_counter()
        cur = current_configs(jobs, ctx.cluster.servers, types)
        tn, opts = sia_exact_options(inp, types, self._nodes, sims, self.prev, self.p,
                                     self.lambda_n, cur)
        out = solve_patterns(tn, opts, Deadline.after(self.compare_time_limit),
                             required=tuple(inp.pinned))
        J = len(jobs)
        exact = self.lambda_n * J - out.value
        bound = self.lambda_n * J - out.bound if out.bound is not None else None
        return {"t": ctx.now_s, "jobs": J, "sia_objective": ilp, "exact_objective": exact,
                "exact_bound": bound, "sia_s": ilp_s, "exact_s": time.perf_counter() - t0,
                "status": out.status.value}

    def placements(self, cluster: Any, inp: SiaInput, choice: list) -> dict:
        """The chosen configurations on GPUs by Sia's placement rule."""
        servers = cluster.servers
        ctypes = list(self._types or {})
        by_type: dict[str, list[tuple[str, int, int]]] = {t: [] for t in ctypes}
        for i, r in enumerate(inp.jobs):
            if choice[i] is not None:
                t, n, k = inp.configs[choice[i]]
                by_type[t].append((r.id, n, k))
        out: dict[str, tuple[str | None, list[str]]] = {}
        for t, allocs in by_type.items():
            per = (self._types or {})[t][1]
            used: dict[int, int] = {}
            for jid, nodes in place_type(allocs, self._nodes[t], per).items():
                names = []
                for s in nodes:
                    k = used.get(s, 0)
                    used[s] = k + 1
                    names.append(f"{servers[s].id}/gpu{k}")
                out[jid] = (t, names)
        return out


__all__ = ["CLIP", "Sia", "SiaInput", "TYPE_ORDER", "ZERO_ALLOC_GAIN", "configurations",
           "place_type", "restart_factor", "solve_ilp"]


def sia_exact_options(inp: SiaInput, types: dict, nodes: dict, sims: dict, prev: dict,
                      p: float, lambda_n: float, current: dict) -> tuple[list, list]:
    """Sia's objective over every configuration of the exact pattern model
    (`alloc.goodput.patterns`): each ``(t, N, K)`` with $K \\le$ the
    job's cap and $\\lceil K/R_t\\rceil \\le N \\le \\min(K, \\text{nodes}_t)$ is
    valued $\\lambda_n - \\min(\\mathrm{round}(G^p, 2), 3000)$ with ``G`` its
    goodput normalised as Sia's row (projected the same way) times the
    restart factor unless it is the job's current configuration; waiting is
    worth 0; a job in its restart delay keeps its GPUs.  Sia's own
    configurations are among them with their costs, so the optimum is at
    least Sia's."""
    from ...goodput.model import best_batch_many
    from ...goodput.patterns import JobOptions, TypeNodes
    ctypes = list(types)
    tnodes = [TypeNodes(t, types[t][1], tuple(nodes[t])) for t in ctypes]
    out = []
    for i, r in enumerate(inp.jobs):
        sj = sims[r.id]
        cap = max(_cap(sj, t) for t in ctypes)
        fitted = {t: sj.perf_params(t) for t in ctypes
                  if sj.profiles[t].points and sj.grad is not None}
        src = next((t for t in TYPE_ORDER if t in fitted), None)
        row_scale = inp.scale[i]
        cfg = []
        for ti, t in enumerate(ctypes):
            per, nn = types[t][1], types[t][0]
            for k in range(1, min(cap, per * nn) + 1):
                for n in range(max(1, -(-k // per)), min(k, nn) + 1):
                    cfg.append((ti, n, k))
        arr = np.array(cfg, dtype=int).reshape(-1, 3)
        g = np.full(len(arr), ZERO_ALLOC_GAIN, dtype=np.float64)
        if src is None:
            g[arr[:, 2] == 1] = 1.0
        else:
            sel = np.arange(len(arr))
            use = [ctypes[a] if ctypes[a] in fitted else src for a in arr[:, 0]]
            lims = np.array([[sj.truths[u].limits.init, sj.target_batch or sj.truths[u].limits.max,
                              sj.truths[u].limits.local_lo, sj.truths[u].limits.local_hi]
                             for u in use], dtype=float)
            nq = np.array([arr[q, 1] if use[q] == ctypes[arr[q, 0]] else
                           -(-arr[q, 2] // types[use[q]][1]) for q in sel])
            theta = np.array([fitted[u].as_array() for u in use])
            gg, _, _ = best_batch_many(theta, np.full(len(sel), sj.grad.sqr),
                                       np.full(len(sel), sj.grad.var), lims[:, 0], lims[:, 1],
                                       lims[:, 2], lims[:, 3], nq, arr[:, 2])
            mult = np.array([1.0 if u == ctypes[arr[q, 0]] else
                             sj.truths[ctypes[arr[q, 0]]].traces.one_gpu_rate()
                             / sj.truths[u].traces.one_gpu_rate() for q, u in enumerate(use)])
            g = gg.astype(np.float32).astype(np.float64) * mult * row_scale
        g = np.maximum(g, ZERO_ALLOC_GAIN)
        cur = current.get(r.id)
        if prev.get(r.id) is not None:
            same = np.array([(ctypes[a], n, k) == cur for a, n, k in arr]) if cur else \
                np.zeros(len(arr), bool)
            g = np.where(same, g, g * inp.factor[i])
        cost = np.minimum(np.round(np.power(g, p), 2), CLIP)
        keep, kv = None, 0.0
        if r.running and r.run is not None and r.run.placement is not None:
            where: dict[int, int] = {}
            for gp in r.run.placement.gpus:
                s = inp.server_index[gp.gpu.rsplit("/", 1)[0]]
                where[s] = where.get(s, 0) + 1
            keep = tuple(sorted(where.items()))
            c0 = prev.get(r.id)
            kv = lambda_n - float(inp.cost[i, c0]) if c0 is not None else 0.0
        if i in inp.pinned:
            arr, cost = arr[:0], cost[:0]
        out.append(JobOptions(arr, lambda_n - cost, 0.0, keep, kv))
    return tnodes, out


def current_configs(jobs: list, servers: Any, types: dict) -> dict:
    """Each running job's configuration ``(t, N, K)`` now."""
    out = {}
    for r in jobs:
        p = r.run.placement if r.running and r.run is not None else None
        if p is None or not p.gpus:
            continue
        sids = {g.gpu.rsplit("/", 1)[0] for g in p.gpus}
        t = r.run.gpu_type
        out[r.id] = (t, len(sids), len(p.gpus))
    return out


class SiaExact(Sia):
    """Sia's objective maximised over the exact model's configurations each
    round (`sia_exact_options`), decoded server by server; the round's
    value and Sia's program's on the same inputs are recorded in ``rounds``.

    Parameters
    ----------
    time_limit : float
        Seconds per round's exact model.
    """

    def __init__(self, p: float = -0.5, lambda_n: float = 1.1, engine: str = "highs",
                 time_limit: float = 10.0) -> None:
        super().__init__(p, lambda_n, engine)
        self.time_limit = float(time_limit)

    def decide(self, jobs: Any, ctx: Any) -> dict:
        """This round's placement, maximised exactly over every configuration."""
        from ...deadline import Deadline
        from ...goodput.patterns import solve_patterns
        t0 = time.perf_counter()
        prog = self.progress(ctx)
        jobs = list(jobs)
        sims = {r.id: prog.state(r, ctx.now_s) for r in jobs}
        types, configs = self._cluster(ctx.cluster)
        inp = SiaInput(ctx, jobs, sims, types, configs, self.prev, self.p)
        cur = current_configs(jobs, ctx.cluster.servers, types)
        tn, opts = sia_exact_options(inp, types, self._nodes, sims, self.prev, self.p,
                                     self.lambda_n, cur)
        out = solve_patterns(tn, opts, Deadline.after(self.time_limit), engine=self.engine,
                             required=tuple(inp.pinned))
        servers = ctx.cluster.servers
        plan: dict[str, tuple[str | None, list[str]]] = {}
        taken: dict[int, set] = {}
        for i, r in enumerate(jobs):
            if out.assign[i] == "keep":
                p = r.run.placement
                names = [g.gpu for g in p.gpus]
                plan[r.id] = (r.run.gpu_type, names)
                for g in names:
                    sid, k = g.rsplit("/gpu", 1)
                    taken.setdefault(inp.server_index[sid], set()).add(int(k))
        new_prev: dict[str, int | None] = {}
        ctypes = list(types)
        for i, r in enumerate(jobs):
            a = out.assign[i]
            if a is None or a == "keep":
                new_prev[r.id] = self.prev.get(r.id) if a == "keep" else None
                continue
            ti, where = a
            names = []
            for s, k in sorted(where.items()):
                used = taken.setdefault(s, set())
                free = [g for g in range(servers[s].gpus) if g not in used][:k]
                used.update(free)
                names += [f"{servers[s].id}/gpu{g}" for g in free]
            plan[r.id] = (ctypes[ti], names)
            n, k = len(where), sum(where.values())
            new_prev[r.id] = next((c for c, cfg in enumerate(configs)
                                   if cfg == (ctypes[ti], n, k)), None)
        self.prev = new_prev
        gap = None if out.bound is None else \
            abs(out.bound - out.value) / max(abs(out.bound), 1e-9)
        self.rounds.append({"t": ctx.now_s, "jobs": len(jobs), "objective": out.value,
                            "status": out.status.value, "gap": gap})
        self.last = inp
        self.times.append(time.perf_counter() - t0)
        return plan


__all__ += ["SiaExact", "current_configs", "sia_exact_options"]

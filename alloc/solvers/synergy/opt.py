r"""Synergy OPT (Mohan et al., OSDI'22): the joint problem with the fairness floor.

Keep only options at least as fast as the request (``b_jo >= b_j0``, the
*fairness floor*: every placed job runs at least at its GPU-proportional
speed); choose each job's option and place it to maximise the objective.

Backends (option ``backend``):

``"cpsat"`` / ``"milp"``
    The exact family's configuration model on the floor-restricted problem
    ([`alloc.solvers.exact`][alloc.solvers.exact]), the default when every job need not be placed.
``"aggregated"``
    A direct model (the default with ``place_all``): identical jobs form types
    ``t`` with counts ``N_t``; integer ``y_tos`` = jobs of type t at option o
    consolidated on server s; for spreadable multi-GPU types integer ``z_tos``
    = GPU slices on s (each uses ``ceil(c_o / n)`` CPU and ``ceil(m_o / n)``
    memory) with ``sum_{s of GPU type tau} z_tos = n_t w_{to tau}``;

    $$
    \max \sum v_{tos} y_{tos} + \sum v^{sp}_{to\tau} w_{to\tau}
    \ \text{s.t.}\ \sum_o \big(\sum_s y_{tos} + \sum_\tau w_{to\tau}\big) \le N_t
    \ (= N_t \text{ with place\_all}),
    $$

    per server GPUs, CPU and memory within capacity; shared jobs bin-packed
    into GPUs (``h_sk`` = GPU k of s holds shares, ``u_{tosk}`` shares of type t
    on it, ``sum milli u <= 1000 h``).  Optional symmetry breaking orders the
    servers of a class by used CPU.  Running jobs stay: capacities are what
    they leave (whole free GPUs only).  Solved by the kernel (HiGHS or CP-SAT).

Stats also report Synergy's *big-machine LP bound*: one machine with the
summed free capacities, ``max sum v_to x_to`` s.t. ``sum_o x_to <= 1``,
``sum n x <= GPUs``, ``sum c x <= CPU``, ``sum m x <= memory``, ``x >= 0``.

The floor restricts the problem: the result is ``optimal`` for the instance
only when the floor removes nothing (every option is at least as fast as the
request) and the backend's proof holds.
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from ...arrays import outer_levels
from ...deadline import Deadline
from ...kernel import INF, LinearModel, solve as solve_model
from ...model import MILLI, Status
from ...problem import Problem, Solution, job_order
from .options import floor_problem


def big_machine_lp(problem: Problem, place_all: bool = False, *,
                   deadline: Deadline) -> float | None:
    """Synergy's big-machine LP bound over the pending jobs and the free
    capacity (options as given: apply the floor first)."""
    p = problem
    m = LinearModel("synergy-big-machine")
    gpu, cpu, mem = {}, {}, {}
    for j in p.pending:
        row = {}
        for o, op in enumerate(p.options[j]):
            v = p.best_coef(j, o)
            x = m.add_var(0, INF, obj=v)
            row[x] = 1.0
            gpu[x], cpu[x], mem[x] = p.jobs[j].milli_total, op.cpu, op.mem
        m.add_row(row, 1.0 if place_all else -INF, 1.0)
    if not m.n:
        return 0.0
    m.add_row(gpu, hi=float(p.gpu_free.sum()))
    m.add_row(cpu, hi=float(p.free_cpu.sum()))
    m.add_row(mem, hi=float(p.free_mem.sum()))
    res = solve_model(m, "highs", deadline=deadline, relax=True)
    return res.objective if res.status is Status.OPTIMAL else None


def _span(prof, level: str) -> float:
    return prof.span_factor(level) if prof is not None else 1.0


def _dominated(vals, k) -> bool:
    c, mm, v = vals[k]
    for i, (c2, m2, v2) in enumerate(vals):
        if i != k and c2 <= c and m2 <= mm and all(a >= b for a, b in zip(v2, v)) \
                and (c2, m2, v2) != (c, mm, v):
            return True
    return False


def _types(p: Problem) -> list[tuple[tuple, list[int]]]:
    """Identical pending jobs grouped: (key, members in rank order)."""
    use_span = "span" in p.objective.factors
    types: dict[tuple, list[int]] = defaultdict(list)
    for j in job_order(p):
        job = p.jobs[j]
        spread = job.gpus >= 2 and job.gpu_milli == MILLI and job.locality is None
        vals = [(op.cpu, op.mem, tuple(round(p.coef(j, o, s), 9) for s in range(p.S)))
                for o, op in enumerate(p.options[j])]
        prof = job.profile
        sp_in = _span(prof, "server") if use_span and job.gpus > 1 else 1.0
        sp_out = max(_span(prof, lv) for lv in (*outer_levels(p.levels), "cluster")) \
            if use_span and spread else 1.0
        key = (job.gpus, job.gpu_milli, spread, p.allowed[j].tobytes(), tuple(vals),
               sp_in, sp_out)
        types[key].append(j)
    return list(types.items())


class _Build:
    """The aggregated model and its variable maps."""

    def __init__(self, p: Problem, tlist, place_all: bool):
        self.p, self.tlist = p, tlist
        self.m = LinearModel("synergy-opt")
        # variable index of each (type, option, server[, slot]) y / z / w / u term
        self.ys: dict[tuple, int] = {}
        self.zs: dict[tuple, int] = {}
        self.ws: dict[tuple, int] = {}
        self.us: dict[tuple, int] = {}
        self.share_on: defaultdict[int, list[tuple]] = defaultdict(list)
        S = p.S
        self.whole = np.array([int((p.gpu_free[p.gpu_first[s]:p.gpu_first[s] + p.srv_gpus[s]]
                                    == MILLI).sum()) for s in range(S)], dtype=np.int64)
        # per server, variable -> its GPU / CPU / memory coefficient
        self.gpu_t: list[dict[int, int]] = [{} for _ in range(S)]
        self.cpu_t: list[dict[int, int]] = [{} for _ in range(S)]
        self.mem_t: list[dict[int, int]] = [{} for _ in range(S)]
        self.feasible = True
        for t, (key, members) in enumerate(tlist):
            count = self._type(t, key, members)
            N = len(members)
            if count:
                self.m.add_row(count, N if place_all else -INF, N)
            elif place_all and N:
                self.feasible = False
        self._shares()
        for s in range(S):
            for terms, cap in ((self.gpu_t[s], self.whole[s]), (self.cpu_t[s], p.free_cpu[s]),
                               (self.mem_t[s], p.free_mem[s])):
                if terms:
                    self.m.add_row(terms, hi=int(cap))

    def _cap(self, s: int):
        return int(self.whole[s]), int(self.p.free_cpu[s]), int(self.p.free_mem[s])

    def _type(self, t: int, key, members) -> dict:
        p, m = self.p, self.m
        n, milli, spread, _, vals, sp_in, sp_out = key
        N = len(members)
        allowed = [int(s) for s in p.allowed_servers(members[0])]
        count = {}
        for o, (c, mm, v) in enumerate(vals):
            if _dominated(vals, o):
                continue
            for s in allowed:
                G, C, M = self._cap(s)
                ub = N
                if n:
                    ub = min(ub, G // n if milli == MILLI else G * (MILLI // milli))
                ub = min(ub, C // c if c else ub, M // mm if mm else ub)
                if ub <= 0:
                    continue
                y = m.add_var(0, ub, integer=True, obj=v[s] * sp_in)
                self.ys[t, o, s] = y
                count[y] = 1
                if n and milli == MILLI:
                    self.gpu_t[s][y] = n
                elif n:
                    self.share_on[s].append((t, o, milli, y))
                self.cpu_t[s][y], self.mem_t[s][y] = c, mm
            if spread:
                self._spread(t, o, n, N, c, mm, v, sp_out, allowed, count)
        return count

    def _spread(self, t, o, n, N, c, mm, v, sp_out, allowed, count) -> None:
        p, m = self.p, self.m
        pc, pm = -(-c // n), -(-mm // n)
        by_type = defaultdict(list)
        for s in allowed:
            if self.whole[s] > 0:
                by_type[int(p.srv_type[s])].append(s)
        for tau, srvs in by_type.items():
            slices = {}
            for s in srvs:
                G, C, M = self._cap(s)
                ub = min(G, n * N, C // pc if pc else n * N, M // pm if pm else n * N)
                if ub <= 0:
                    continue
                z = m.add_var(0, ub, integer=True)
                self.zs[t, o, s] = z
                slices[z] = 1
                self.gpu_t[s][z], self.cpu_t[s][z], self.mem_t[s][z] = 1, pc, pm
            if slices:
                w = m.add_var(0, N, integer=True, obj=v[srvs[0]] * sp_out)
                self.ws[t, o, tau] = w
                slices[w] = -n
                m.add_row(slices, 0, 0)
                count[w] = 1

    def _shares(self) -> None:
        m = self.m
        for s, items in self.share_on.items():
            hs = []
            for k in range(int(self.whole[s])):
                h = m.add_var(0, 1, integer=True)
                hs.append(h)
                row = {h: -MILLI}
                for (t, o, milli, y) in items:
                    u = m.add_var(0, MILLI // milli, integer=True)
                    self.us[t, o, s, k] = u
                    row[u] = milli
                m.add_row(row, hi=0)
                if k:
                    m.add_row({hs[k - 1]: 1, h: -1}, lo=0)
            for (t, o, milli, y) in items:
                row = {y: 1}
                for k in range(len(hs)):
                    row[self.us[t, o, s, k]] = -1
                m.add_row(row, 0, 0)
            for h in hs:
                self.gpu_t[s][h] = 1

    def symmetry(self) -> None:
        """Order the servers of a class (with no running job) by used CPU."""
        if self.share_on:
            return
        p = self.p
        for members in p.classes:
            free = [s for s in members if p.free_cpu[s] == p.srv_cpu[s]]
            for a, b in zip(free, free[1:]):
                row = dict(self.cpu_t[a])
                for k, v in self.cpu_t[b].items():
                    row[k] = row.get(k, 0) - v
                if row:
                    self.m.add_row(row, lo=0)

    def decode(self, x) -> dict:
        """Assignments from a solution ``x`` of the model."""
        p = self.p
        V = lambda k: int(round(x[k]))  # noqa: E731
        gfree = {s: [g for g in range(int(p.gpu_first[s]), int(p.gpu_first[s] + p.srv_gpus[s]))
                     if p.gpu_free[g] == MILLI] for s in range(p.S)}
        assign = {}
        queue = {t: list(members) for t, (key, members) in enumerate(self.tlist)}
        for s, items in self.share_on.items():
            used = set()
            for k in range(int(self.whole[s])):
                for (t, o, milli, _) in items:
                    for _ in range(V(self.us[t, o, s, k])):
                        j = queue[t].pop(0)
                        assign[j] = p.make_assign(j, [gfree[s][k]], o)
                        used.add(k)
            gfree[s] = [g for i, g in enumerate(gfree[s]) if i not in used]
        for (t, o, s), y in self.ys.items():
            n, milli = self.tlist[t][0][0], self.tlist[t][0][1]
            if n and milli < MILLI:
                continue
            for _ in range(V(y)):
                j = queue[t].pop(0)
                if n == 0:
                    assign[j] = p.make_cpu_assign(j, s, o)
                else:
                    assign[j] = p.make_assign(j, gfree[s][:n], o)
                    gfree[s] = gfree[s][n:]
        slices_by = defaultdict(list)
        for (t, o, s), z in self.zs.items():
            slices_by[t, o, int(p.srv_type[s])].extend([s] * V(z))
        for (t, o, tau), w in self.ws.items():
            n = self.tlist[t][0][0]
            sl = slices_by[t, o, tau]
            for i in range(V(w)):
                j = queue[t].pop(0)
                assign[j] = p.make_assign(j, [gfree[s].pop(0) for s in sl[i * n:(i + 1) * n]], o)
        return assign


def aggregated_opt(problem: Problem, *, deadline: Deadline, seed: int = 0,
                   place_all: bool = False, engine: str = "highs",
                   symmetry: bool = False) -> Solution:
    """The aggregated backend (see the module notes) on ``problem`` as given."""
    b = _Build(problem, _types(problem), place_all)
    if not b.feasible:
        return Solution({}, Status.INFEASIBLE, None, (), {"engine": engine})
    if symmetry:
        b.symmetry()
    res = solve_model(b.m, engine, deadline=deadline, seed=seed)
    stats: dict[str, object] = {"mip_status": res.status.value, "engine": engine,
                                "types": len(b.tlist), "variables": b.m.n}
    if res.x is None:
        st = Status.INFEASIBLE if res.status is Status.INFEASIBLE else Status.UNKNOWN
        return Solution({}, st, None, (), stats)
    stats["objective"] = res.objective
    st = Status.OPTIMAL if res.status is Status.OPTIMAL else Status.FEASIBLE
    return Solution(b.decode(res.x), st, res.bound, (), stats)


def _floor_is_vacuous(problem: Problem) -> bool:
    """True when the fairness floor removes no option of a pending job."""
    return all(o.base >= problem.options[j][0].base - 1e-12
               for j in problem.pending for o in problem.options[j])


#: Share of the time limit kept back for the big-machine LP bound (one LP
#: with a variable per job option and four rows: it needs far less).
BOUND_SHARE = 0.05


def solve_opt(problem: Problem, *, deadline: Deadline, seed: int = 0, backend: str = "auto",
              place_all: bool = False, lp_bound: bool = True, engine: str = "highs",
              symmetry: bool = False) -> Solution:
    """``synergy-opt`` (see the module notes); with ``lp_bound`` the solve
    leaves `BOUND_SHARE` of the time to the bound."""
    t0 = time.perf_counter()
    fp = floor_problem(problem)
    bound_deadline = deadline
    if lp_bound:
        deadline = deadline.reserve(BOUND_SHARE * deadline.left())
    if backend == "auto":
        backend = "aggregated" if place_all else "cpsat"
    if backend in ("cpsat", "milp"):
        # the configuration model itself: running jobs stay where they run
        from ...engines.configuration.backend import Backend
        from ...engines.configuration.solve import configuration
        sol = configuration(fp, Backend("cpsat" if backend == "cpsat" else "highs"),
                            deadline=deadline, seed=seed)
    else:
        sol = aggregated_opt(fp, deadline=deadline, seed=seed, place_all=place_all,
                             engine=engine, symmetry=symmetry)
    stats = dict(sol.stats)
    stats["backend"] = backend
    if "heuristics" in stats:
        # they ran on the floor problem, not on the instance: no promise to
        # be above the heuristics on the instance (which the floor may forbid)
        stats["floor_heuristics"] = stats.pop("heuristics")
    if lp_bound:
        stats["big_machine_lp_bound"] = big_machine_lp(fp, place_all, deadline=bound_deadline)
    stats["opt_wall_s"] = time.perf_counter() - t0
    # the floor and place_all restrict the instance; a proof covers it only
    # when they remove nothing (and the backend itself solves it as given)
    stats["covers_instance"] = (sol.status is Status.OPTIMAL and not place_all
                                and backend in ("cpsat", "milp") and _floor_is_vacuous(problem))
    return Solution(sol.assign, sol.status, sol.bound, sol.preempted, stats)


__all__ = ["aggregated_opt", "big_machine_lp", "solve_opt"]

r"""The tenancy model solved exactly: ``solve_tenancy`` (the ``cpsat-tenancy``
solver, and the exact family's solvers on tenancy input).

The model is `alloc.solvers.exact.tenancy.model` (one
[`LinearModel`][alloc.kernel.model.LinearModel]); every solve goes through
[`alloc.kernel.solve`][alloc.kernel.solve] with the engine the caller names (``"cpsat"``,
``"highs"`` or ``"cbc"``), and every phase takes its share of the caller's
[`Deadline`][alloc.deadline.Deadline]:

1. **Warm starts** (`alloc.solvers.exact.tenancy.warm.warm_starts`): ``hived``
   (up to 80 % of the time: it normally needs far less, and when it does not
   its answer is all there is time for) and two value-aware greedy variants
   (a quarter of what is left each); the best by the (penalised) objective is
   the answer if nothing better follows.
2. **Build** (`alloc.solvers.exact.tenancy.model.build_model`, up to 60 % of
   what is left): out of time, the best warm start is returned.
3. **Hint**: the greedy state read as model values
   (`alloc.solvers.exact.tenancy.warm.hint_values`), completed by the engine
   with those values fixed (`alloc.solvers.exact.tenancy.search.complete`).
4. **Phase 1** (``guaranteed_first``, default): maximise the GPUs of placed
   guaranteed jobs (HiveD's guarantee: a tenant's jobs within its cells are
   served, preempting opportunistic work) and fix the optimum as a floor.  It
   is proven without a solve when the hint reaches the trivial bound
   $\sum_v \min(\text{cell GPUs of } v, \text{guaranteed demand of } v)$.
5. **Bound**: the LP relaxation of the phase-2 model by the kernel's HiGHS
   ([`alloc.kernel.solve_lp`][alloc.kernel.solve_lp]; the floor row relaxed when phase 1 is not
   proven) and the engine's own bound; the smaller is reported.
6. **Phase 2**: maximise the objective (never below the hint's value).  On
   large models (more than 100 jobs, 8+ servers) a quarter of the time goes to
   the whole model and the rest to the large-neighbourhood search
   (`alloc.solvers.exact.tenancy.search.neighbourhood_search`), from the whole
   model's answer or, when it found none in its time, from the hint; the
   search's last four incumbents are decoded, best first.
7. **Decode** (`alloc.solvers.exact.tenancy.decode`): exact server by server,
   then the two replays; a decode whose binding fails the tenancy check or
   that stops a running job no fresh placement outranks is discarded.  The
   answer is the best of the decoded solutions and the warm starts, so it is
   never below ``hived``.

Status.  ``optimal`` only when the value meets a bound of the instance:
the model's own when it covers the instance (`restrictions` is empty, i.e.
no guaranteed-work floor, no job with a CPU/memory point other than its
request that the objective values or that asks less CPU or memory, spread
CPU/memory that divides by the GPUs, no running elastic job that may move),
else the LP of the relaxed model (`instance_bound`: every job at the
smallest CPU and memory of its points, worth the best of them, spread units
rounded down, no floor).  The restricted model's bound goes to
``stats["restricted_bound"]`` with the restrictions in
``stats["restrictions"]``; without a bound of the instance the solution
carries none and ``stats["no_bound"]`` says why (``stats["covers_instance"]``
is False).  A bound below the chosen answer's value is dropped
(``stats["dropped_bound"]``).  With preemption or migration costs the model
optimises the penalised objective: ``stats["penalised"]``,
``stats["penalised_bound"]`` and ``stats["raw_value"]`` report it and no
bound is given.

Preemption.  The score breaks ties by fewer preemptions, so a running job
is stopped only where the objective (less the preemption cost) gains.  The
caller may hand over the score of its best heuristic answer (``rival``):
when the answer under the guaranteed-work floor is below it, the floor is
dropped and the time left goes to the objective alone.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....deadline import Deadline
from ....kernel import ENGINES, INF, Result, solve, solve_lp
from ....model import Status
from ....objectives import tighten
from ....problem import Problem, Solution
from ....tenancy import binding_keys, quota_gpus
from .decode import binding_ok, decode_exact, decode_replay, polish, victims_ok
from ....engines.cells.engine import Engine, current_assign
from . import RESTRICTIONS
from .model import SCALE, OutOfTime, TenancyModel, build_model, restrictions
from .search import complete, neighbourhood_search
from .warm import hint_values, warm_starts

#: share of the time left that the model's build may take
BUILD_SHARE = 0.6
#: share of phase 2 on the whole model when a neighbourhood search follows
MAIN_SHARE = 0.25
#: engine parameters of every solve; ``GAP`` those of phase 2
PARAMS = {"cpsat": {"cp_model_probing_level": 0, "symmetry_level": 0}}
GAP = {"cpsat": {"relative_gap_limit": 1e-4}, "highs": {"mip_rel_gap": 1e-4}}
#: HiGHS's MIP presolve does not stop at its time limit on large models (it
#: took 8.5 s of a 1.5 s limit on the 64-server instance): off above this many columns
HIGHS_PRESOLVE_MAX = 4000


@dataclass
class Call:
    """One call's settings: the problem, the engine and its seed / workers,
    the preemption cost, lexicographic phases."""
    p: Problem
    engine: str
    seed: int
    workers: int | None
    pcost: float
    guaranteed_first: bool

    def solve(self, model, deadline, seed: int | None = None, gap: bool = False) -> Result:
        """``model`` solved by the call's engine before ``deadline``."""
        params: dict[str, Any] = dict(PARAMS.get(self.engine, {}))
        if gap:
            params.update(GAP.get(self.engine, {}))
        if self.engine == "highs" and model.n > HIGHS_PRESOLVE_MAX:
            params["presolve"] = "off"
        if self.engine == "cpsat":
            params["workers"] = int(self.workers or 1)
        return solve(model, self.engine, deadline=deadline,
                     seed=self.seed if seed is None else seed, **params)


class Clock:
    """Seconds spent in each phase (``stats["seconds"]``)."""

    def __init__(self):
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> dict:
        """Record the seconds since the previous lap (or the start) as phase
        ``name``, rounded to milliseconds; returns every lap so far."""
        now = time.perf_counter()
        self.laps[name] = round(now - self.t, 3)
        self.t = now
        return self.laps


@dataclass
class Chosen:
    """The answer so far: its source, engine state, preempted jobs, whether
    the model proved it, its score key and decode misses."""
    name: str
    eng: Engine
    preempted: set
    proven: bool
    key: tuple
    misses: int | None = None


def scorer(p: Problem, running, pcost: float):
    """``score(assign, preempted) -> (key, raw)``: the penalised objective
    (ties broken by fewer preemptions -- a running job is stopped only where
    the objective gains -- then by guaranteed work) and the raw value."""
    mcost = float(p.move_cost or 0.0)
    gwt = {j: (p.jobs[j].gpus or 1) if p.jobs[j].guaranteed else 0 for j in range(p.J)}
    cur = {r: current_assign(p, r) for r in running}

    def score(assign, preempted):
        raw = sum(p.value_of(j, a) for j, a in assign.items())
        moves = sum(1 for r in running if r in assign and not assign[r].same_as(cur[r]))
        pen = raw - pcost * len(preempted) - mcost * moves
        return (round(pen, 9), -len(preempted), sum(gwt[j] for j in assign)), raw
    return score


def solve_tenancy(problem: Problem, *, deadline: Deadline, seed: int = 0, engine: str = "cpsat",
                  preemption_cost: float = 0.0, guaranteed_first: bool = True,
                  workers: int | None = None, rival: tuple | None = None) -> Solution:
    """Allocation under HiveD tenancy by the tenancy model (module notes).

    Parameters
    ----------
    problem : Problem
        The compiled problem (moves under its ``max_moves`` / ``move_cost``).
    deadline : Deadline
        The caller's deadline; every phase takes its share.
    seed : int
        Seed of the engine and the neighbourhood search.
    engine : {"cpsat", "highs", "cbc"}
        The kernel engine that solves the model.
    preemption_cost : float
        Objective units per preempted running job.
    guaranteed_first : bool
        First maximise the GPUs of placed guaranteed jobs, then the objective.
    workers : int, optional
        CP-SAT workers (default 1: deterministic for a seed).
    rival : tuple, optional
        The score key (`scorer`) of the best answer the caller has
        from elsewhere (the applicable heuristics): when the answer under the
        guaranteed-work floor is below it, the time left goes to the
        objective without the floor.

    Returns
    -------
    Solution
        The best of the decoded model solutions and the warm starts; a bound
        only when the model covers the instance (``stats["covers_instance"]``).
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINES)}")
    p = problem
    call = Call(p, engine, seed, workers, float(preemption_cost or 0.0), guaranteed_first)
    running = [r for r in p.running if current_assign(p, r) is not None]
    score = scorer(p, running, call.pcost)
    clock = Clock()
    warm, late = warm_starts(p, running, p.pending, call.pcost, deadline)
    chosen = best_warm(warm, score)
    stats: dict = {"engine": engine, "warm": chosen.name, "seconds": clock.lap("warm")}
    try:
        if late:
            raise OutOfTime("warm starts")
        tm = build_model(p, call.pcost, deadline.share(BUILD_SHARE))
    except OutOfTime as exc:
        stats["timed_out"] = str(exc)
        return result(p, None, chosen, score, running, stats, None, None, call.pcost)
    stats["groups"], stats["columns"], stats["rows"] = tm.groups.K, tm.m.n, tm.m.m
    clock.lap("build")
    full = hint(call, tm, warm, score, deadline.share(0.1))
    clock.lap("hint")
    floor, phase1_proven, full = phase1(call, tm, full, deadline.share(1 / 3))
    stats["phase1_proven"], stats["guaranteed_floor"] = phase1_proven, floor
    phase2_model(tm, floor, full)
    clock.lap("phase1")
    lp = lp_bound(tm, relax_floor=not phase1_proven, deadline=deadline.share(0.15))
    stats["lp_bound"] = lp
    inst = instance_bound(call, tm, floor, deadline.share(0.15), stats)
    clock.lap("lp")
    reserve = decode_reserve(p, deadline)
    res, incumbents = search(call, tm, full, deadline, reserve, stats)
    clock.lap("search")
    cp_bound = None
    if res.bound is not None and (phase1_proven or floor is None):
        cp_bound = res.bound / SCALE + 0.5 * p.J / SCALE + tm.pref_slack
    if incumbents:
        stats["model_objective"] = max(o for _, o in incumbents) / SCALE
        chosen = decode_best(tm, incumbents, res.status is Status.OPTIMAL, chosen, score,
                             running, deadline, stats)
    clock.lap("decode")
    if floor is not None and rival is not None and rival > chosen.key and \
            deadline.left() > reserve + 0.05:
        # the floor's answer is below a heuristic's: the objective alone
        assert tm.floor_row is not None     # the floor's row, as a floor was set
        tm.m.set_row_bounds(tm.floor_row, lo=-INF)
        floor, stats["floor_dropped"] = None, "the floor's answer was below a heuristic's"
        x0 = incumbents[0][0] if incumbents else full
        res, incumbents = search(call, tm, x0, deadline, reserve, stats)
        lp = lp_bound(tm, relax_floor=False, deadline=deadline.share(0.1))
        cp_bound = res.bound / SCALE + 0.5 * p.J / SCALE + tm.pref_slack \
            if res.bound is not None else None
        if incumbents:
            chosen = decode_best(tm, incumbents, res.status is Status.OPTIMAL, chosen, score,
                                 running, deadline, stats)
        clock.lap("objective alone")
    bounds = [b for b in (lp, cp_bound) if b is not None]
    return result(p, tm, chosen, score, running, stats, min(bounds) if bounds else None, floor,
                  call.pcost, inst)


# ------------------------------------------------------------------ steps
def best_warm(warm, score) -> Chosen:
    """The best warm start by score (the first of equals)."""
    best = None
    for name, eng, pre in warm:
        key, _ = score(eng.assign, pre)
        if best is None or key > best.key:
            best = Chosen(name, eng, set(pre), False, key)
    assert best is not None, "hived's warm start is always among them"
    return best


def hint(call: Call, tm: TenancyModel, warm, score, deadline) -> np.ndarray | None:
    """A full hint: the best greedy state (else ``hived``) as model values,
    completed by the engine; None when no warm start fits the model in time.
    The model's hint is set (partial when none completes)."""
    greedy = sorted((w for w in warm if w[0] == "greedy"),
                    key=lambda w: score(w[1].assign, w[2])[0], reverse=True)
    order = greedy[:1] + [w for w in warm if w[0] == "hived"]
    first = None
    for _, eng, _ in order:
        if deadline.expired():
            break
        fixed = hint_values(tm, eng)
        first = first if first is not None else fixed
        full = complete(tm.m, fixed, call.engine, deadline, **PARAMS.get(call.engine, {}))
        if full is not None:
            tm.m.hint = {k: float(v) for k, v in enumerate(full)}
            return full
    tm.m.hint = dict(first or {})
    return None


def trivial_work_bound(tm: TenancyModel) -> int:
    """Phase 1's trivial bound: per tenant min(its cell GPUs, its guaranteed
    GPU demand), plus the CPU-only guaranteed jobs."""
    p = tm.p
    jobs = p.jobs
    modelled = {j for (k, _) in list(tm.x) + list(tm.y) for j in tm.groups.members[k]}
    modelled |= set(tm.running)
    dem: dict[str, int] = defaultdict(int)
    cpu_only = 0
    for j in modelled:
        if jobs[j].guaranteed:
            if jobs[j].gpus:
                dem[jobs[j].tenant] += min(jobs[j].min_gpus or jobs[j].gpus, jobs[j].gpus)
            else:
                cpu_only += 1
    return cpu_only + sum(min(d, sum(quota_gpus(p.cluster, v, t) for t in tm.tenant_types(v)))
                          for v, d in dem.items())


def phase1(call: Call, tm: TenancyModel, full, deadline):
    """(floor, proven, hint): the most guaranteed GPUs (module notes)."""
    work = {c: v for c, v in tm.work.items() if v}
    if not call.guaranteed_first or not work:
        return None, True, full
    ub = trivial_work_bound(tm)
    if full is not None and sum(v * full[c] for c, v in work.items()) >= ub - 1e-9:
        return int(round(sum(v * full[c] for c, v in work.items()))), True, full
    m = tm.m.copy()
    m.set_objective(work)
    res = call.solve(m, deadline)
    x, obj = res.x, res.objective
    if x is None:           # no solution
        return None, res.status is not Status.UNKNOWN, full
    assert obj is not None
    floor = int(round(obj))
    tm.m.hint = {k: float(v) for k, v in enumerate(x)}
    return floor, res.status is Status.OPTIMAL, x


def phase2_model(tm: TenancyModel, floor, full) -> None:
    """The floor row (guaranteed work >= phase 1's optimum) and the row
    keeping phase 2 at or above the hint's objective."""
    if floor is not None:
        tm.floor_row = tm.m.add_row({c: v for c, v in tm.work.items() if v}, lo=floor)
    if full is not None:
        tm.m.add_row(dict(tm.m.obj), lo=tm.m.value(full) - tm.m.obj_const)


def lp_bound(tm: TenancyModel, relax_floor: bool, deadline) -> float | None:
    """The LP relaxation's bound of the phase-2 model (the floor row relaxed
    when asked), in objective units, or None."""
    m = tm.m
    if relax_floor and tm.floor_row is not None:
        m = m.copy()
        m.set_row_bounds(tm.floor_row, lo=-INF)
    res = solve_lp(m, deadline=deadline)
    if res.status is not Status.OPTIMAL or res.objective is None:
        return None
    # plus the most the preferred-level terms take off: a bound of the objective
    val = res.objective / SCALE + 0.5 * tm.p.J / SCALE + tm.pref_slack
    return val + 1e-6 * max(1.0, abs(val))


def instance_bound(call: Call, tm: TenancyModel, floor, deadline, stats: dict) -> float | None:
    """A bound of the instance itself where the model restricts it (None
    where the model's own bound is the instance's, or none can be had; the
    reason then goes to ``stats["no_instance_bound"]``): with only the
    guaranteed-work floor, the model's LP without it; with a CPU/memory point
    or spread units the model restricts, the LP of the relaxed model
    (`alloc.solvers.exact.tenancy.model.build_model`); a running elastic job
    that may move keeps its size in both, so it has none."""
    applied = restrictions(tm, floor is not None)
    if not applied:
        return None
    if RESTRICTIONS[3] in applied:
        stats["no_instance_bound"] = f"the model keeps this restriction: {RESTRICTIONS[3]}"
        return None
    if applied == [RESTRICTIONS[0]]:
        b = lp_bound(tm, relax_floor=True, deadline=deadline)
    else:
        try:
            relaxed = build_model(call.p, call.pcost, deadline.share(0.7), relaxed=True)
        except OutOfTime:
            stats["no_instance_bound"] = "the relaxed model was not built in time"
            return None
        b = lp_bound(relaxed, relax_floor=True, deadline=deadline)
    if b is None:
        stats["no_instance_bound"] = "the relaxation's LP was not solved in time"
    return b


def decode_reserve(p: Problem, deadline) -> float:
    """Seconds kept for decoding and comparing at the end."""
    left = deadline.left()
    if p.J > 100:
        return 0.1 * left + min(1.0, 0.1 * left)
    return min(0.2, 0.25 * left)


def search(call: Call, tm: TenancyModel, full, deadline, reserve: float, stats: dict):
    """Phase 2 on the whole model, then (large models) the neighbourhood
    search from its answer -- or from the hint when the whole model gave
    none in its time; returns the whole-model result and the incumbents to
    decode, best first."""
    p = tm.p
    lns = p.J > 100 and p.S >= 8
    left = max(0.0, deadline.left() - reserve)
    res = call.solve(tm.m, deadline.within(left * (MAIN_SHARE if lns else 1.0)), gap=True)
    stats["model_status"] = res.status.value
    x0 = res.x if res.has_solution else full
    if x0 is None:
        return res, []
    incumbents = [(x0, tm.m.value(x0))]
    if lns and res.status is not Status.OPTIMAL:
        found = neighbourhood_search(tm, x0, lambda m, dl, sd: call.solve(m, dl, seed=sd),
                                     deadline.reserve(reserve), call.seed)
        stats["lns_improvements"] = len(found) - 1
        incumbents = list(reversed(found[-4:]))
    return res, incumbents


def decode_best(tm: TenancyModel, incumbents, model_proven: bool, chosen: Chosen, score,
                running, deadline, stats: dict) -> Chosen:
    """Decode the incumbents (exact, then the replays) and keep the best
    valid one that is at least ``chosen``."""
    p = tm.p
    best = None
    for x, obj in incumbents:
        if deadline.expired() or (best is not None and best.key[0] >= obj / SCALE - 1e-9):
            break           # no decode of this incumbent can beat the best one
        for mode in ("exact", "cells", "buddy"):
            if deadline.expired():
                break
            r = decode_exact(tm, x, deadline) if mode == "exact" else \
                decode_replay(tm, x, mode, deadline)
            if r is None:
                continue
            eng, lost = r
            polish(eng, deadline)
            if not binding_ok(p, eng) or not victims_ok(p, eng, running):
                continue
            pre = {r for r in running if r not in eng.assign}
            key, _ = score(eng.assign, pre)
            if key >= chosen.key and (best is None or key > best.key):
                best = Chosen("model", eng, pre, lost == 0 and model_proven, key, lost)
            if lost == 0:
                break
    if best is None:
        return chosen
    stats["decode_misses"] = best.misses
    return best


def result(p: Problem, tm: TenancyModel | None, chosen: Chosen, score, running, stats: dict,
           bound: float | None, floor, pcost: float, inst: float | None = None) -> Solution:
    """The [`Solution`][alloc.problem.Solution] of the chosen answer (module
    notes: status, bound, restrictions, penalties).  ``inst``: a bound of
    the instance where the model restricts it (`instance_bound`)."""
    eng = chosen.eng
    key, raw = score(eng.assign, chosen.preempted)
    penalised = bool(p.move_cost) or pcost > 0
    step = p.objective.step(p.cluster, [p.jobs[j] for j in range(p.J) if j not in p.reasons])
    bound, inst = tighten(bound, step), tighten(inst, step)
    applied = restrictions(tm, floor is not None) if tm is not None else ["no model in time"]
    covers = not applied
    if not covers and inst is not None:
        stats["restricted_bound"], stats["bound_source"] = bound, "relaxation"
        bound, covers = inst, True
    if bound is not None and not penalised and raw > bound + 1e-6 * max(1.0, abs(bound)):
        # a bound below an answer of the instance bounds nothing: dropped
        stats["dropped_bound"] = bound
        bound, covers = None, False
        applied = applied or ["a bound below the answer (dropped)"]
    proven = not penalised and covers and bound is not None and (
        (chosen.proven and not applied) or raw >= bound - 1e-6 * max(1.0, abs(bound)))
    stats.update({"binding": binding_keys(eng.tree, eng.bound), "source": chosen.name,
                  "moves": sum(1 for r in running if r in eng.assign
                                and not eng.assign[r].same_as(current_assign(p, r))),
                  "preemptions": len(chosen.preempted), "raw_value": raw,
                  "covers_instance": covers, "restrictions": applied})
    if penalised:
        stats["penalised"], stats["penalised_bound"] = key[0], bound
        stats["no_bound"] = ("the model maximises the value less the preemption and move "
                             "costs; its bound is that objective's")
        bound = None
    elif not covers:
        stats.setdefault("restricted_bound", bound)
        stats["no_bound"] = "the model restricts the instance: " + "; ".join(applied) + (
            f" ({stats['no_instance_bound']})" if "no_instance_bound" in stats else "")
        bound = None
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    return Solution(dict(eng.assign), status, bound, tuple(sorted(chosen.preempted)), stats)

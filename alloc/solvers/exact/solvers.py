"""The exact family's registered solvers: one driver, three engines, the
partitioned driver for large instances, and the tenancy model for the inputs
the configuration model does not express.

Dispatch (`run`):

* tenants, guaranteed or opportunistic jobs, elastic jobs, pending even
  spreads, or running jobs
  the call lets move or a pending job may preempt (`needs_tenancy_model`) go to the tenancy model
  (`alloc.solvers.exact.tenancy.solve.solve_tenancy`) with the same engine: it
  has the cells, preemption, migration and elastic sizes, and reports its
  restrictions against the instance itself;
* the rest goes to the configuration model, on the whole problem or on
  ``parts`` parts (`alloc.engines.configuration.solve.auto_parts`).
"""
from __future__ import annotations

from dataclasses import replace

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution
from ...engines.configuration.backend import Backend
from ...engines.configuration.solve import configuration


def needs_tenancy_model(problem: Problem) -> bool:
    """True when the input has what only the tenancy model expresses: tenants,
    guaranteed or tenant jobs, elastic jobs, pending even spreads
    (``gpus_per_server``), or running jobs that may move or
    that a pending job may preempt
    ([`Problem.preemption_possible`][alloc.problem.Problem.preemption_possible])."""
    if problem.cluster.tenants or problem.preemption_possible or \
            (problem.fixed and problem.moves_allowed):
        return True
    if any(problem.jobs[j].even_servers for j in problem.pending):
        return True
    return any(j.tenant is not None or j.guaranteed or j.elastic for j in problem.jobs)


def run(problem: Problem, engine: Backend, *, deadline: Deadline, seed: int = 0,
        preemption_cost: float = 0.0, guaranteed_first: bool = True, **config) -> Solution:
    """The tenancy model or the configuration model (module notes); running
    jobs the configuration model keeps are part of its answer.  ``config``:
    the options of `configuration`."""
    if needs_tenancy_model(problem):
        return tenancy(problem, engine, deadline=deadline, seed=seed,
                       preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                       warm_share=config.get("warm_share", 0.15))
    sol = configuration(problem, engine, deadline=deadline, seed=seed, **config)
    if problem.fixed:
        sol = replace(sol, assign={**problem.fixed, **sol.assign})
    return sol


#: the statistics that describe the model's own answer, left out when a
#: heuristic's answer is returned instead
MODEL_STATS = ("binding", "moves", "preemptions", "raw_value")


def tenancy(problem: Problem, engine: Backend, *, deadline: Deadline, seed: int,
            preemption_cost: float, guaranteed_first: bool, warm_share: float) -> Solution:
    """The tenancy model, never below the applicable heuristics: they run
    first within ``warm_share`` of the time (running jobs kept where they
    run), the best whose answer passes the instance's check (capacity, and
    with tenants' cells the tenancy rules) is handed to the model as the
    answer to beat, and it is returned when it scores at least as much as
    the model's answer (the score the call reports: value minus the move and
    preemption costs; on a tie the answer that stops fewer running jobs)."""
    from .tenancy.solve import scorer, solve_tenancy
    from ...engines.configuration.driver import warm_start
    best, _, sols, values = warm_start(problem, deadline.share(warm_share), seed,
                                       floor=deadline.share(max(warm_share, 0.5)))
    score = scorer(problem, problem.running, preemption_cost)
    name, kept, binding, rejected = best_valid(problem, dict(zip(values, sols)), score,
                                               deadline.share(warm_share))
    kept = ordered(problem, kept)
    values = {n: v for n, v in values.items() if n not in rejected}
    extra: dict = {"heuristics_rejected": sorted(rejected)} if rejected else {}
    rival = score(kept, ())[0] if kept else None
    movers = moving_rivals(problem, deadline.share(warm_share), seed, score)
    # 5 % kept back: scoring both answers, and the model's own overrun on
    # very large models (87k columns at 1,024 servers)
    sol = solve_tenancy(problem, deadline=deadline.share(0.95), seed=seed, engine=engine.name,
                        preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                        workers=engine.workers, rival=rival)
    sol = replace(sol, assign=ordered(problem, sol.assign))
    broken = "over-commits GPU memory" if memory_broken(problem, sol.assign) else \
        cells_broken(problem, sol, deadline.share(0.5))
    if broken:
        # the model does not see GPU memory, and its decoded answer can break
        # the cells' guarantee: its answer is then a relaxation's (its bound
        # stands), returned only where the instance's check holds it
        extra["model_answer_dropped"] = broken
        sol = replace(sol, assign=dict(problem.fixed), status=Status.FEASIBLE, preempted=())
        rescue = preempting_rival(problem, deadline, seed)
        if rescue is not None:
            rescue = replace(rescue, assign=ordered(problem, rescue.assign))
        if rescue is not None and score(rescue.assign, rescue.preempted)[0] > \
                score(sol.assign, sol.preempted)[0]:
            sol = _beaten_by(sol, "hived", rescue, extra)
    if movers and movers[0][0] > score(sol.assign, sol.preempted)[0]:
        _, mover, moved = movers[0]
        sol = _beaten_by(sol, mover, moved, extra)
    if kept and not problem.cluster.tenants and rival <= score(sol.assign, sol.preempted)[0]:
        # the rest of the time: local search from the heuristics' best
        name, kept = polish(problem, name, kept, score, deadline.share(0.5), seed)
        rival = score(kept, ())[0]
    sol = _compacted(problem, sol, deadline)
    if kept and rival > score(sol.assign, sol.preempted)[0]:
        # the model's own answer is not returned: drop what describes it
        stats = {k: v for k, v in sol.stats.items() if k not in MODEL_STATS}
        stats.update(heuristics=values, source=f"heuristic {name}", **extra)
        if binding is not None:
            stats["binding"] = binding
        value, b = score(kept, ())[1], sol.bound
        proven = b is not None and value >= b - 1e-6 * max(1.0, abs(b))
        kept = _compacted(problem, Solution(kept, Status.FEASIBLE), deadline).assign
        return Solution(kept, Status.OPTIMAL if proven else Status.FEASIBLE, b, (), stats)
    return replace(sol, stats={**sol.stats, "heuristics": values, **extra}) \
        if values or extra else sol


def moving_rivals(problem: Problem, deadline: Deadline, seed: int, score) -> list:
    """Where the call lets running jobs move (no tenants, no job the core
    pinned), the answers of the applicable heuristics that may move them
    (``migration``), each as it answers alone, that pass the instance's
    check, as ``(score key, name, Solution)``, best first: the warm
    start keeps every running job where it runs, and the model places jobs
    at their request, so neither sees a heuristic that moves a running job
    onto another CPU/memory point of its profile."""
    if not (problem.fixed and problem.moves_allowed) or problem.pinned or problem.cluster.tenants:
        return []
    from ...check import violations
    from ...reductions import KeptRunning
    from ...registry import get_solver
    from ...solve import finish
    from ...engines.configuration.driver import warm_heuristics
    first, rest = warm_heuristics(problem, problem.needs)
    names = [n for n in first + rest if "migration" in get_solver(n).capabilities]
    out = []
    for k, name in enumerate(names):
        dl = deadline.share(1.0 / (len(names) - k))
        if dl.expired():
            break
        info = get_solver(name)
        try:
            sol = info.solve(problem, deadline=dl, seed=seed)
        except Exception:  # a heuristic failing must not sink the exact solver
            continue
        kept_running = KeptRunning(info.capabilities)
        _, data = kept_running.apply(problem)
        full = sol if data is None else kept_running.invert(sol, data)
        alloc = finish(problem, full, info, 0.0)
        if not alloc.moved or violations(problem.cluster, problem.jobs, alloc,
                                         max_moves=problem.max_moves, deadline=dl):
            continue
        stopped = tuple(j for j in problem.running if j not in full.assign)
        full = replace(full, preempted=stopped)
        out.append((score(full.assign, stopped)[0], name, full))
    return sorted(out, key=lambda x: x[0], reverse=True)


def _beaten_by(sol: Solution, name: str, other: Solution, extra: dict) -> Solution:
    """Heuristic ``name``'s answer ``other`` in place of the model's ``sol``:
    feasible, under the model's bound (`alloc.solve.honest_status` drops it
    where it is below the answer's value), the statistics that describe the
    model's own answer left out (the heuristic's binding of the cells in
    their place)."""
    stats = {k: v for k, v in sol.stats.items() if k not in MODEL_STATS}
    if "binding" in other.stats:
        stats["binding"] = other.stats["binding"]
    extra["source"] = f"heuristic {name}"
    return replace(other, status=Status.FEASIBLE, bound=sol.bound, stats=stats)


def _compacted(problem: Problem, sol: Solution, deadline: Deadline) -> Solution:
    """``sol`` with its preferred jobs moved into one node of their level
    where one holds them (`alloc.engines.greedy.compact.compacted`)."""
    from ...engines.greedy.compact import compacted
    assign = compacted(problem, sol.assign, deadline)
    return sol if assign is sol.assign else replace(sol, assign=assign)


def ordered(problem: Problem, assign: dict) -> dict:
    """Under the order's promise (``preempt="order"``) ``assign`` -- every
    running job it keeps listed, one it leaves out stopped -- walked down the
    ranks (`alloc.preempt.kept_order`: unchanged when it keeps the order);
    else ``assign``."""
    if not problem.keeps_order or not assign:
        return assign
    from ...preempt import kept_order
    return kept_order(problem, assign, stops=True)


def memory_broken(problem: Problem, assign: dict) -> bool:
    """True when ``assign`` over-commits some GPU's memory or compute
    (`alloc.resources.capacity_problems`), which the tenancy model leaves out."""
    from ...resources import capacity_problems
    placements = [problem.placement(j, a) for j, a in sorted(assign.items())]
    return bool(capacity_problems(problem.cluster, problem.jobs, placements))


def draft_allocation(problem: Problem, sol: Solution):
    """``sol`` as an `Allocation` the checks can read (placements, the jobs
    it leaves out, the running jobs it stops, the binding it reports); its
    value is not computed."""
    from ...model import Allocation
    jobs = problem.jobs
    placements = tuple(problem.placement(j, a) for j, a in sorted(sol.assign.items()))
    placed = {p.job for p in placements}
    stats = {"binding": sol.stats["binding"]} if "binding" in sol.stats else {}
    return Allocation(placements, tuple(j.id for j in jobs if j.id not in placed),
                      tuple(jobs[j].id for j in sol.preempted), Status.FEASIBLE, 0.0, None,
                      0.0, "", problem.objective.name, problem.name, stats)


def cells_broken(problem: Problem, sol: Solution, deadline: Deadline) -> str:
    """Why ``sol`` breaks the tenants' cells -- a tenant's guaranteed jobs
    holding more GPUs of a type than its cells guarantee, or a GPU type it
    has no cell of (`alloc.tenancy.tenancy_violations`) -- or ``""``."""
    from ...tenancy import tenancy_violations
    c, jobs = problem.cluster, problem.jobs
    if not (c.tenants or any(j.guaranteed for j in jobs)):
        return ""
    alloc = draft_allocation(problem, sol)
    # the quota and GPU-type rules only: a binding search cut by the clock
    # says nothing about the answer
    bad = [x for x in tenancy_violations(c, jobs, alloc, deadline=deadline)
           if "guaranteed jobs hold" in x or "guaranteed job on" in x]
    return f"breaks the cells: {bad[0]}" if bad else ""


def preempting_rival(problem: Problem, deadline: Deadline, seed: int) -> Solution | None:
    """``hived``'s answer (run through the registry; it may stop running jobs
    by the tenancy rules, which the warm start's answers may not) when hived
    covers the input and its answer passes the instance's check, else None."""
    from ...check import violations
    from ...registry import solvers
    from ...engines.configuration.driver import need_ok
    info = solvers().get("hived")
    if info is None or not info.available or not need_ok(problem, info.capabilities) or \
            deadline.left() < 0.05:
        return None
    sol = info.solve(problem, deadline=deadline.share(0.5), seed=seed)
    c, jobs = problem.cluster, problem.jobs
    alloc = draft_allocation(problem, sol)
    if violations(c, jobs, alloc, max_moves=problem.max_moves, deadline=deadline):
        return None
    return sol


def polish(problem: Problem, name: str, kept: dict, score, deadline: Deadline, seed: int):
    """``(name, assign)``: local search from ``kept`` (its pending part; the
    running jobs stay) within ``deadline`` when that scores more."""
    from ...registry import get_solver
    from ...engines.greedy.improve import local_search
    from ...engines.configuration.columns import check_assign
    from ...engines.configuration.driver import need_ok
    if deadline.left() < 0.05 or not need_ok(problem, get_solver("local-search").capabilities):
        return name, kept
    start = {j: a for j, a in kept.items() if j not in problem.fixed}
    ls = local_search(problem, start, deadline=deadline, seed=seed)
    cand = ordered(problem, {**problem.fixed, **ls})
    ls = {j: a for j, a in cand.items() if j not in problem.fixed}
    if check_assign(problem, ls) and score(cand, ())[0] > score(kept, ())[0] and \
            instance_ok(problem, cand, deadline)[0]:
        return f"local-search from {name}", cand
    return name, kept


def best_valid(problem: Problem, sols: dict, score, deadline: Deadline):
    """The best heuristic answer ``(name, assign, binding, rejected)`` -- its pending
    placements, the running jobs kept where they run -- that is an answer of
    the instance, checked as the answer will be (a heuristic's placements of
    pending jobs may rely on the running jobs it stopped, or break rules it
    does not know: tenants' cells, elastic sizes), with the binding of the
    tenants' cells that holds it; ``rejected`` names the better ones that
    failed."""
    ranked = sorted(((n, {**problem.fixed, **a}) for n, a in sols.items()),
                    key=lambda na: score(na[1], ())[0], reverse=True)
    rejected: set[str] = set()
    for name, a in ranked:
        ok, binding = instance_ok(problem, a, deadline)
        if ok:
            return name, a, binding, rejected
        rejected.add(name)
    return "", {}, None, rejected


def instance_ok(problem: Problem, assign: dict, deadline: Deadline):
    """``(ok, binding)``: ``assign`` (every running job kept) passes the
    instance's check with the binding of the tenants' cells found for it
    (None without tenancy; the search stops at ``deadline``: inconclusive is
    a failure)."""
    from ...check import violations
    from ...model import Allocation
    from ...tenancy import binding_keys, cell_tree, guaranteed_usage, infer_binding
    c = problem.cluster
    placements = tuple(problem.placement(j, a) for j, a in sorted(assign.items()))
    binding = None
    if c.tenants or any(j.guaranteed for j in problem.jobs):
        b = infer_binding(c, guaranteed_usage(c, problem.jobs, placements), deadline=deadline)
        if b is None:
            return False, None
        binding = binding_keys(cell_tree(c), b)
    placed = {p.job for p in placements}
    alloc = Allocation(placements, tuple(j.id for j in problem.jobs if j.id not in placed), (),
                       Status.FEASIBLE, 0.0, None, 0.0, "", problem.objective.name, problem.name,
                       {"binding": binding} if binding is not None else {})
    return not violations(c, problem.jobs, alloc, max_moves=0, deadline=deadline), binding


# The registered entry points: one engine each; the options (declared in the
# family's ``__init__``) are those of `run` and `configuration`.

def solve_cpsat(problem: Problem, *, deadline: Deadline, seed: int = 0, workers: int = 1,
                deterministic: bool = False, **options) -> Solution:
    """``cpsat``: the configuration model (or the tenancy model) with CP-SAT
    (``deterministic``: see `Backend`)."""
    engine = Backend("cpsat", 1, deterministic=True) if deterministic else Backend("cpsat", workers)
    return run(problem, engine, deadline=deadline, seed=seed, **options)


def solve_milp(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
    """``milp``: the configuration model (or the tenancy model) with HiGHS."""
    return run(problem, Backend("highs"), deadline=deadline, seed=seed, **options)


def solve_cbc(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
    """``milp-cbc``: the configuration model (or the tenancy model) with CBC."""
    return run(problem, Backend("cbc"), deadline=deadline, seed=seed, **options)


def solve_cpsat_tenancy(problem: Problem, *, deadline: Deadline, seed: int = 0,
                        preemption_cost: float = 0.0, guaranteed_first: bool = True,
                        workers: int | None = None) -> Solution:
    """``cpsat-tenancy``: `tenancy` with CP-SAT on every input the
    tenancy model is needed for (`needs_tenancy_model`), the
    applicable heuristics included; elsewhere the configuration model with
    CP-SAT, as ``cpsat`` (its proof covers the instance: the tenancy model
    would only restrict it, placing every job at its request).  Where GPU
    memory can bind (the ``gpu-memory`` capability) the tenancy path runs:
    neither model sees GPU memory, and that path returns the model's answer
    only where the GPUs' memory holds it, else the best heuristic's that
    passes the instance's check (the model's bound stands: a relaxation)."""
    from ...resources import needs
    if not needs_tenancy_model(problem) and "gpu-memory" not in needs(problem.cluster,
                                                                      problem.jobs):
        sol = run(problem, Backend("cpsat", workers or 1), deadline=deadline, seed=seed)
        return replace(sol, stats={**sol.stats, "covers_instance": True,
                                   "model": "configuration (no tenancy input)"})
    return tenancy(problem, Backend("cpsat", workers or 1), deadline=deadline, seed=seed,
                   preemption_cost=preemption_cost, guaranteed_first=guaranteed_first,
                   warm_share=0.15)

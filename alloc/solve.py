"""``allocate()``: the one checked path from input to answer.

The chain (each step one function, every caller -- the CLI, the simulator, the
online runner, sessions -- goes through it):

1. [`alloc.call`][alloc.call] -- the settings and the input validated once,
   by the code a [`Session`][alloc.session.Session] runs too (the same bad
   input, the same error): the solver and its declared options, the
   objective, the time limit and the other settings, the cluster and the
   jobs ([`alloc.validate.prepare`][alloc.validate.prepare], model names
   resolved to profiles), and the capabilities the input needs
   ([`needed_capabilities`][alloc.needs.needed_capabilities]), computed once
   and carried in the call and the problem, against the solver's;
2. the job order (ids of the input, each once);
3. [`Problem`][alloc.problem.Problem] -- the one compile step: running jobs fixed,
   unplaceable jobs set aside with a reason, ranks from the job order;
4. the core's reductions ([`alloc.reductions`][alloc.reductions], one chain):
   preemption by the caller's order, then a tenant's guarantee for a solver
   that does not serve it -- victims out of the problem, the jobs placed
   for them pinned; the answer is inverted through the same chain after 5
   (where the guarantee's pins bind an exact solver, the answer of a
   heuristic that serves the guarantee itself -- hived, AntMan -- to the
   problem as posed, found first, is returned instead when it is worth
   more: an exact solver is never below a heuristic that applies);
5. the solver runs against one [`Deadline`][alloc.deadline.Deadline] (a share is
   kept back for the final check, and under ``preempt="order"`` one for
   the order's repair of the answer, [alloc.preempt.kept_order][]);
6. [`finish`][alloc.solve.finish] -- running jobs the solver may not touch are put back, the
   value is recomputed from the placements, ``moved`` / ``preempted`` /
   ``reasons`` are filled in, and the status is kept honest
   ([`honest_status`][alloc.solve.honest_status]);
7. [`alloc.check.violations`][alloc.check.violations] -- a solver bug surfaces as a
   [`SolverError`][alloc.errors.SolverError], never as an over-committed cluster.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

from .call import (call_input, call_settings, check_capabilities, check_preempt,  # noqa: F401
                   make_call, needed_capabilities, solver_call, warn_ignored_objective)
from .collector import paused
from .deadline import Deadline, check_time_limit, watched
from .errors import InputError, SolverError, SolverUnavailable
from .model import Allocation, Cluster, Job, Status
from .registry import (SolverInfo, exact_solvers, get_solver, heuristic_solvers,
                       register, solvers)


def check_reserve(problem) -> float:
    """Seconds kept back from the solver for the answer's placements and the
    final check: linear in the size; in a scheduler loop whose last answer
    passed the check on this cluster (the check then examines what changed,
    `alloc.recheck`) linear in the jobs (their placements, one lookup each)
    plus what changed (the pending jobs and the running ones started,
    moved or gone since), which keeps 0.15 s of a 1 s round at 1,000 x 8
    GPUs instead of 0.27 s (the two phases took 0.05-0.11 s there)."""
    carry, tenants = problem.carry, problem.cluster.tenants
    checked = carry.checked if carry is not None else None
    if checked is not None and checked.cluster is problem.cluster and not tenants:
        ch = problem.changes
        changed = len(ch.added) + len(ch.removed) if ch is not None else problem.J
        return 0.02 + 3e-5 * problem.J + 1e-4 * (len(problem.pending) + changed)
    base = 0.02 + 2e-5 * (problem.J + problem.G + problem.S)
    if tenants:
        base += 0.1 + 1e-4 * problem.G
    return base


def repair_reserve(problem) -> float:
    """Seconds kept back from the solver, under ``preempt="order"``, for the
    order's repair of its answer (`alloc.preempt.kept_order`: up to three
    walks down the ranks and one walk of the order's victims), linear in the
    size."""
    return 0.02 + 3e-5 * (problem.J + problem.G + problem.S)


def allocate(cluster: Cluster, jobs: Sequence[Job], *, solver: str = "best-fit",
             objective: str | None = None, time_limit: float | None = None, seed: int = 0,
             instance: str = "", check: bool = True, order: Sequence[str] | None = None,
             max_moves: int | None = None, move_cost: float | None = None, strict: bool = False,
             preempt: str | None = None, preempt_packed: bool = False,
             **options) -> Allocation:
    """Decide which jobs run where.

    Parameters
    ----------
    cluster : Cluster
        Servers (CPU in milli-cores, memory in MiB, GPUs), hierarchy levels, tenants.
    jobs : sequence of Job
        Pending jobs and running ones (``current`` set).  A running job stays
        exactly where it runs (same GPUs, shares, CPU and memory) unless the
        call allows moves and the solver can make them, or the tenancy rules
        allow stopping it and the solver can preempt.
    solver : str
        A registered solver (``alloc.solvers()``; a bad name raises
        ``ValueError`` listing them).
    objective : {"throughput", "gpus", "jobs"}, optional
        What to maximise ([`alloc.objectives`][alloc.objectives]); None (the
        default) is ``"throughput"``.  Asking a solver that does not honour
        the objective (`SolverInfo.objectives`, `alloc solvers`) for one
        warns (`InputWarning`, naming the solvers that do); the default
        does not.
    time_limit : float, optional
        Seconds for the whole call, final check included (default
        `alloc.deadline.DEFAULT_TIME_LIMIT`, 60); the call returns within
        ``time_limit * 1.1 + 0.5`` s.  A heuristic out of time returns what it
        has (status ``feasible``).
    seed : int
        The random seed.  Heuristics give the same answer for the same input
        and seed.  A solver stopped by the clock may not: an exact solver's
        phases end at the time limit, so the same call can prove ``optimal``
        once and stop at ``feasible`` the next time on a busier machine; cpsat
        with ``deterministic=True`` repeats its searches exactly (see "Same
        input, same answer" in the solvers page).
    instance : str
        Name recorded in the allocation.
    check : bool
        Run [`violations`][alloc.check.violations] on the answer (default True).
    order : sequence of str, optional
        Job ids, highest rank first: solvers place in this order, and a
        heuristic never displaces a job for one ranked below it.
    preempt : {None, "order"}
        Who may stop a running job.  None (default): the tenancy rules, for
        solvers that declare ``preemption`` (a guaranteed job over
        opportunistic ones, a higher priority over a lower one).
        ``"order"``: a running job ranked below a waiting job that cannot
        otherwise be placed is stopped for it -- the lowest-ranked first, as
        few as possible, never placed again in the same call, the waiting job
        placed on a server the stopped ones held ([alloc.preempt][]; the same
        decision for every solver).  Jobs the order does not list rank below
        every listed one and stop no one.  Not for inputs with tenants or
        guaranteed jobs.  (A solver's own option called ``preempt`` -- hived's
        true/false -- is passed to it as before.)
    preempt_packed : bool
        Under ``preempt="order"``: a gang that may spread over servers and
        needs victims is placed on one server whenever stopping jobs ranked
        below it can make room there, and spread over its victims' servers
        only when no server can hold it (default False: the first placement
        the lowest-ranked victims allow, spread or not; [alloc.preempt][]).
    max_moves : int, optional
        Running jobs that may move (default: none, or any number when
        ``move_cost`` is given).
    move_cost : float, optional
        Objective units per move (subtracted from the value).
    strict : bool
        Refuse (``InputError``) jobs that cannot be placed on this cluster
        now instead of leaving them unplaced with a reason.
    **options
        The solver's declared options (``alloc solvers --json`` lists them).

    Returns
    -------
    Allocation
        The answer, checked against every hard constraint (``check=True``):

        * ``placements``: one [`Placement`][alloc.model.Placement] per placed
          job (its GPUs with their milli shares, CPU and memory per server,
          throughput), running jobs kept in place included;
        * ``unplaced``: every other job; ``reasons[job]`` says why for each
          (a GPU type no server has, wider than any server; the room it
          needs against the most there is now; its tenant's full cells; the
          job it was stopped for: `alloc.waiting`);
        * ``preempted`` and ``moved``: running jobs stopped or placed elsewhere
          (only where the call and the tenancy rules allow it);
        * ``status``: ``optimal`` only when proven for this input, ``feasible``
          otherwise (every heuristic), ``infeasible`` or ``unknown``;
        * ``value``: the objective recomputed from the placements (minus move
          costs); ``bound`` a proven upper bound (exact solvers, else None),
          ``value <= bound``, and ``gap`` their relative difference;
        * ``wall_time_s``, ``solver``, ``objective``, ``instance`` and the
          solver's ``stats``.

    Raises
    ------
    InputError
        Bad input, a capability the solver lacks, an unknown option (also a
        ``ValueError``).
    SolverUnavailable
        The solver's backend is not installed.
    SolverError
        The solver failed or broke a hard constraint.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> cluster = Cluster((Server("s0", cpu=24000, mem=512000, gpus=8, gpu_type="V100"),))
    >>> jobs = [Job("a", gpus=4, cpu=8000, mem=64000), Job("b", gpus=8, cpu=8000, mem=64000)]
    >>> a = allocate(cluster, jobs, solver="best-fit", objective="gpus")
    >>> [p.job for p in a.placements], a.unplaced, a.status.value
    (['b'], ('a',), 'feasible')
    >>> e = allocate(cluster, jobs, solver="cpsat", objective="gpus", time_limit=10)
    >>> e.status.value, e.value, e.bound
    ('optimal', 8000.0, 8000.0)
    """
    t0 = time.perf_counter()
    settings = call_settings(solver=solver, objective=objective, time_limit=time_limit,
                             seed=seed, max_moves=max_moves, move_cost=move_cost,
                             preempt=preempt, preempt_packed=preempt_packed, options=options)
    deadline = Deadline(t0, t0 + check_time_limit(time_limit))
    info = settings.info
    with paused(not info.exact):     # the collector's passes find nothing of the call's
        call = call_input(settings, cluster, jobs)     # the one call path (`alloc.call`)
        cluster, jobs = call.cluster, call.jobs
        _check_order(jobs, order)
        from .problem import compile_problem
        problem = compile_problem(cluster, jobs, call.objective, instance, order=order,
                                  max_moves=max_moves, move_cost=move_cost, preempt=call.preempt,
                                  preempt_packed=preempt_packed, needs=call.needs)
        if strict and problem.reasons:
            j, why = next(iter(problem.reasons.items()))
            raise InputError(f"jobs[{j}]: job {jobs[j].id!r} cannot be placed on this cluster "
                             f"now: {why}")
        return run_solver(problem, info, deadline, seed=seed, options=call.options, check=check)


def _check_order(jobs: Sequence[Job], order) -> None:
    if order is None:
        return
    if isinstance(order, str) or not all(isinstance(x, str) for x in order):
        raise InputError(f"order: expected a list of job ids, got {order!r:.60}")
    ids = {j.id for j in jobs}
    seen = set()
    for k, x in enumerate(order):
        if x not in ids:
            raise InputError(f"order[{k}]: unknown job {x!r}")
        if x in seen:
            raise InputError(f"order[{k}]: job {x!r} listed twice")
        seen.add(x)


def run_solver(problem, info: SolverInfo, deadline: Deadline, *, seed: int = 0,
               options: dict | None = None, check: bool = True,
               timings: dict | None = None) -> Allocation:
    """Steps 4-7 of the chain on a compiled problem (see the module notes).

    ``timings``, when given, gets the seconds of each step added to its
    ``solver_s``, ``finish_s`` and ``check_s``."""
    t0 = time.perf_counter()
    problem.reserve_s = check_reserve(problem)
    inner = deadline.reserve(problem.reserve_s)
    with watched() as cut:
        from .reductions import Chain, GuaranteePins, OrderPreemption
        chain = Chain((OrderPreemption(inner),
                       GuaranteePins(inner, "guarantee" in info.capabilities)))
        solved, data = chain.apply(problem)
        rivals = _rivals(problem, info, data[1], inner, seed)
        # under the order's preemption, time kept back for the order's repair
        # (`alloc.preempt.kept_order`) too
        own = inner.reserve(repair_reserve(problem)) if problem.preempt == "order" else inner
        try:
            sol = info.solve(solved, deadline=own, seed=seed, **(options or {}))
        except (InputError, SolverError, SolverUnavailable):
            raise
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if problem.preempt == "order":
            sol = _kept_order(solved, sol, info, inner)
    if cut[0]:
        sol = replace(sol, stats={**sol.stats, "clock_cut": True})
    t1 = time.perf_counter()
    alloc = chain.invert(finish(solved, sol, info, t1 - t0), data)
    if rivals:
        alloc = _not_below(problem, alloc, rivals, deadline)
    t2 = time.perf_counter()
    if check:
        bad = _violations(problem, alloc, deadline)
        if bad:
            raise SolverError(f"solver {info.name!r} returned an allocation with "
                              f"{len(bad)} violation(s): {bad[0]}")
    t3 = time.perf_counter()
    if timings is not None:
        for key, dt in (("solver_s", t1 - t0), ("finish_s", t2 - t1), ("check_s", t3 - t2)):
            timings[key] = timings.get(key, 0.0) + dt
    return replace(alloc, wall_time_s=t3 - t0)


#: the heuristics that serve a tenant's guarantee themselves, the rivals of an
#: exact solver whose guaranteed jobs the core pinned (`_rivals`)
GUARANTEE_RIVALS = ("hived", "antman")


def _rivals(problem, info: SolverInfo, pinned, deadline: Deadline, seed: int) -> list:
    """For an exact solver whose problem's guaranteed jobs the core pinned
    (`alloc.reductions.GuaranteePins`, ``pinned`` its data: the guaranteed
    jobs where the guarantee's walk put them, an elastic one at the size it
    gave, none of which the solver may move or grow), the answers of the
    heuristics that serve the guarantee themselves (`GUARANTEE_RIVALS`) to
    the problem as posed, as ``(name, Solution)``, found before the solver
    runs within a quarter of the time (a few milliseconds each); else none."""
    if pinned is None or not info.exact:
        return []
    out = []
    names = [n for n in GUARANTEE_RIVALS if n in heuristic_solvers()]
    for k, name in enumerate(names):
        hv = get_solver(name)
        if not problem.needs <= hv.capabilities:
            continue
        try:
            out.append((name, hv.solve(problem, deadline=deadline.share(0.25 / (len(names) - k)),
                                       seed=seed)))
        except (InputError, SolverError, SolverUnavailable):
            continue
    return out


def _not_below(problem, alloc: Allocation, rivals: list, deadline: Deadline) -> Allocation:
    """The best of the rivals' answers (`_rivals`) in place of the exact
    solver's when it is worth more, places every job the core pinned for
    the guarantee (``stats["guarantee_pinned"]``: the guarantee served no
    less) and passes the check: an exact solver is never below a heuristic
    that applies.  It is then feasible, under the exact solver's bound where
    that bound holds it (else `honest_status` drops the bound)."""
    from .check import violations
    pinned = alloc.stats.get("guarantee_pinned") or ()
    best, name = alloc, None
    for n, sol in rivals:
        other = finish(problem, sol, get_solver(n), 0.0)
        placed = {p.job for p in other.placements}
        if all(j in placed for j in pinned) and \
                other.value > best.value + 1e-9 * max(1.0, abs(best.value)) and not violations(
                problem.cluster, problem.jobs, other, max_moves=problem.max_moves,
                deadline=deadline, order=problem.order_rank, preempt=problem.preempt):
            best, name = other, n
    if name is None:
        return alloc
    stats = {**best.stats, "source": f"heuristic {name}", "model_value": alloc.value,
             "guarantee_pinned": list(pinned)}
    return honest_status(replace(best, solver=alloc.solver, status=Status.FEASIBLE,
                                 bound=alloc.bound, stats=stats), exact=True)


def _kept_order(problem, sol, info: SolverInfo, deadline: Deadline):
    """Under ``preempt="order"``: the solver's answer walked down the ranks
    so that no job waits for lower-ranked work beyond the backfill rule
    ([alloc.preempt.kept_order][]; an answer that keeps it is unchanged)."""
    from .preempt import kept_order
    caps = info.capabilities
    # a running job the answer leaves out is stopped only by a solver that
    # stops them; finish puts any other one back (`KeptRunning`)
    stops = "preemption" in caps
    assign = kept_order(problem, sol.assign, spread="spread" in caps, stops=stops,
                        deadline=deadline)
    fixed = problem.fixed
    changed = sum(1 for j, a in assign.items() if sol.assign.get(j, fixed.get(j)) is not a) \
        + sum(1 for j in sol.assign if j not in assign)
    if not changed:
        return sol
    if not stops:
        assign = {j: a for j, a in assign.items() if j not in fixed or j in sol.assign}
    return replace(sol, assign=assign, stats={**sol.stats, "order_kept": changed})


def _violations(problem, alloc: Allocation, deadline: Deadline) -> list[str]:
    """The final check; in a scheduler loop (a problem compiled with a carry)
    the one that examines what changed since the last checked round
    (`alloc.recheck`), whose answer is the full check's."""
    carry = problem.carry
    kw = dict(max_moves=problem.max_moves, deadline=deadline, order=problem.order_rank,
              preempt=problem.preempt)
    if carry is None:
        from .check import violations
        return violations(problem.cluster, problem.jobs, alloc, **kw)
    from .recheck import violations_since
    bad, carry.checked = violations_since(carry.checked, problem.cluster, problem.jobs, alloc,
                                          **kw)
    return bad


#: the restriction of a solver that keeps running jobs in place where the call
#: allows moves or the tenancy rules allow preemption
KEPT_IN_PLACE = ("running jobs kept where they run (the call allows moves, or the tenancy "
                 "rules let a pending job preempt one)")


def finish(problem, sol, info: SolverInfo, wall: float) -> Allocation:
    """The [`Allocation`][alloc.model.Allocation] of a solver's
[`Solution`][alloc.problem.Solution]."""
    caps = info.capabilities
    from .reductions import KeptRunning
    kept_running = KeptRunning(caps)
    _, data = kept_running.apply(problem)
    assign = dict(sol.assign) if data is None else kept_running.invert(sol, data).assign
    jobs = problem.jobs
    order = sorted(assign)
    placements, moved = problem.placements(order, assign)
    stopped = set(problem.running).difference(assign)         # in C: usually none
    preempted = tuple(jobs[j].id for j in problem.running if j in stopped) if stopped else ()
    unplaced = tuple(job.id for j, job in enumerate(jobs) if j not in assign) \
        if len(assign) < len(jobs) else ()
    # the compile step's reasons, for the jobs the solver did leave out
    reasons = {jobs[j].id: why for j, why in problem.reasons.items() if j not in assign}
    if len(placements) + len(reasons) < len(jobs):
        from .waiting import waiting_reasons       # every waiting job says why
        reasons.update((jobs[j].id, why) for j, why in waiting_reasons(
            problem, assign, caps, info.name, sol.stats).items())
    of = problem.objective.value
    value = float(sum(map(of, map(jobs.__getitem__, order), placements))) \
        - (problem.move_cost or 0.0) * len(moved)
    stats = dict(sol.stats)
    alloc = Allocation(tuple(placements), unplaced, preempted, sol.status, value, sol.bound,
                       wall, info.name, problem.objective.name, problem.name, stats,
                       tuple(moved), reasons)
    restricts = info.restricts
    if (problem.moves_allowed and problem.fixed and "migration" not in caps) or \
            (problem.preemption_possible and "preemption" not in caps):
        # its proof covers the problem with the running jobs pinned, not this one
        restricts = "; ".join(x for x in (restricts, KEPT_IN_PLACE) if x)
        alloc = replace(alloc, stats={**alloc.stats, "covers_instance": False})
    # the running jobs' value, for the comparison with the heuristics an exact solver ran
    kept = sum(problem.value_of(j, a) for j, a in problem.fixed.items()) \
        if info.exact and sol.stats.get("heuristics") else 0.0
    return honest_status(alloc, exact=info.exact, restricts=restricts, fixed_value=kept)


#: relative float noise tolerated between a value and a bound (far below any
#: objective step: values are sums of products of decimal factors)
TOL = 1e-6


def honest_status(alloc: Allocation, *, exact: bool, restricts: str = "",
                  fixed_value: float = 0.0) -> Allocation:
    """The status, bound and statistics an answer may honestly claim.

    * Heuristics never claim OPTIMAL or INFEASIBLE.
    * A solver that restricts the problem keeps OPTIMAL (and its bound) only
      when its solution says the proof covers the instance
      (``stats["covers_instance"]``); otherwise it reports FEASIBLE with the
      restriction named in ``stats["restriction"]`` and its own bound in
      ``stats["restricted_bound"]``.
    * A bound below the recomputed value (beyond float noise, `TOL`) bounds
      nothing: it is dropped, kept in ``stats["bound_dropped"]`` with the
      reason in ``stats["bound_dropped_reason"]``, and the status is
      downgraded.
    * OPTIMAL only when the recomputed value meets the bound.
    * An exact solver's answer below the best applicable heuristic it ran
      (``stats["heuristics"]``: each one's value on the pending jobs, the
      running ones kept, worth ``fixed_value``) is named in
      ``stats["below_heuristic"]`` and never OPTIMAL; a bound below that
      heuristic's value is dropped too.
    """
    st, bound, stats = alloc.status, alloc.bound, dict(alloc.stats)
    if not exact and st in (Status.OPTIMAL, Status.INFEASIBLE):
        st = Status.FEASIBLE
    if exact and restricts and not stats.get("covers_instance"):
        stats["restriction"] = restricts
        if bound is not None:
            stats["restricted_bound"] = bound
        bound = None
        if st in (Status.OPTIMAL, Status.INFEASIBLE):
            st = Status.FEASIBLE if alloc.placements or st is Status.OPTIMAL else Status.UNKNOWN
    if bound is not None and alloc.value > bound + TOL * max(1.0, abs(bound)):
        stats["bound_dropped"] = bound
        stats["bound_dropped_reason"] = f"below the value {alloc.value!r} of the answer"
        bound = None
        if st is Status.INFEASIBLE:
            st = Status.FEASIBLE
    if st is Status.OPTIMAL:
        if bound is None or alloc.value < bound - TOL * max(1.0, abs(bound)):
            st = Status.FEASIBLE
    heur = stats.get("heuristics") if exact else None
    if heur:
        name = max(heur, key=heur.get)
        best = heur[name] + fixed_value
        if alloc.value < best - TOL * max(1.0, abs(best)):
            stats["below_heuristic"] = {name: best}
            if st is Status.OPTIMAL:
                st = Status.FEASIBLE
        if bound is not None and best > bound + TOL * max(1.0, abs(bound)):
            stats["bound_dropped"] = bound
            stats["bound_dropped_reason"] = f"below the value {best!r} of heuristic {name!r}"
            bound = None
    if st is Status.UNKNOWN and alloc.placements:
        st = Status.FEASIBLE
    if (st, bound, stats) == (alloc.status, alloc.bound, dict(alloc.stats)):
        return alloc
    return replace(alloc, status=st, bound=bound, stats=stats)


__all__ = ["allocate", "check_preempt", "exact_solvers", "finish", "get_solver", "heuristic_solvers",
           "honest_status", "needed_capabilities", "register", "run_solver", "solvers"]

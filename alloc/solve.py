"""``allocate()``: the one checked path from input to answer.

The chain (each step one function, every caller -- the CLI, the simulator, the
online runner, sessions -- goes through it):

1. :func:`alloc.validate.prepare` -- validate the input once, resolve model
   names to profiles (:class:`~alloc.errors.InputError` for any problem);
2. the solver's declared options are checked (:func:`alloc.options.validate_options`)
   and its capabilities against what the input needs (:func:`needed_capabilities`);
3. :class:`~alloc.problem.Problem` -- the one compile step: running jobs fixed,
   unplaceable jobs set aside with a reason, ranks from the job order;
4. the solver runs against one :class:`~alloc.deadline.Deadline` (a share is
   kept back for the final check);
5. :func:`finish` -- running jobs the solver may not touch are put back, the
   value is recomputed from the placements, ``moved`` / ``preempted`` /
   ``reasons`` are filled in, and the status is kept honest
   (:func:`honest_status`);
6. :func:`alloc.check.violations` -- a solver bug surfaces as a
   :class:`~alloc.errors.SolverError`, never as an over-committed cluster.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

from .deadline import Deadline, check_time_limit
from .errors import InputError, SolverError, SolverUnavailable, UnsupportedInput
from .model import Allocation, Cluster, Job, Status
from .objectives import get_objective
from .options import validate_options
from .registry import (SolverInfo, exact_solvers, get_solver, heuristic_solvers, register,
                       solvers)


def needed_capabilities(cluster: Cluster, jobs: Sequence[Job]) -> frozenset:
    """Capabilities a solver must have to handle this input correctly."""
    need = set()
    inner = {"socket", "switch", "rack"}
    for j in jobs:
        if j.gpus == 1 and j.gpu_milli < 1000:
            need.add("sharing")
        if j.locality in inner:
            need.add("locality")
        if j.tenant is not None or j.guaranteed:
            need.add("tenancy")
        if j.elastic:
            need.add("elastic")
    if cluster.tenants:
        need.add("tenancy")
    from .resources import needs
    need |= needs(cluster, jobs)
    return frozenset(need)


def check_reserve(problem) -> float:
    """Seconds kept back from the solver for the final check (linear in the size)."""
    base = 0.02 + 2e-5 * (problem.J + problem.G + problem.S)
    if problem.cluster.tenants:
        base += 0.1 + 1e-4 * problem.G
    return base


def allocate(cluster: Cluster, jobs: Sequence[Job], *, solver: str = "best-fit",
             objective: str = "throughput", time_limit: float | None = None, seed: int = 0,
             instance: str = "", check: bool = True, order: Sequence[str] | None = None,
             max_moves: int | None = None, move_cost: float | None = None, strict: bool = False,
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
    objective : {"throughput", "gpus", "jobs"}
        What to maximise ([`alloc.objectives`][alloc.objectives]).
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
        * ``unplaced``: every other job; ``reasons[job]`` says why for the
          ones that cannot be placed on this cluster now (a GPU type no server
          has, wider than any server), the others wait for room;
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
    deadline = Deadline.after(check_time_limit(time_limit))
    info = get_solver(solver)
    opts = validate_options(f"solver {solver!r}", info.options, options)
    obj = get_objective(objective)
    from .validate import check_call_settings
    check_call_settings(seed, max_moves, move_cost)
    reason = info.unavailable_reason()
    if reason:
        raise SolverUnavailable(f"solver {solver!r} is unavailable: {reason}")
    cluster, jobs = _prepare(cluster, jobs)
    _check_order(jobs, order)
    missing = needed_capabilities(cluster, jobs) - info.capabilities
    if missing:
        able = [n for n, s in solvers().items() if missing <= s.capabilities]
        raise UnsupportedInput(f"solver {solver!r} does not support {', '.join(sorted(missing))} "
                         f"which this input needs; solvers that do: {', '.join(able) or 'none'}")
    from .problem import compile_problem
    problem = compile_problem(cluster, jobs, obj, instance, order=order, max_moves=max_moves,
                              move_cost=move_cost)
    if strict and problem.reasons:
        j, why = next(iter(problem.reasons.items()))
        raise InputError(f"jobs[{j}]: job {jobs[j].id!r} cannot be placed on this cluster "
                         f"now: {why}")
    return run_solver(problem, info, deadline, seed=seed, options=opts, check=check)


def _prepare(cluster, jobs):
    from .validate import prepare
    return prepare(cluster, jobs)


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
    """Steps 4-6 of the chain on a compiled problem (see the module notes).

    ``timings``, when given, gets the seconds of each step added to its
    ``solver_s``, ``finish_s`` and ``check_s``."""
    t0 = time.perf_counter()
    inner = deadline.reserve(check_reserve(problem))
    try:
        sol = info.solve(problem, deadline=inner, seed=seed, **(options or {}))
    except (InputError, SolverError, SolverUnavailable):
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    t1 = time.perf_counter()
    alloc = finish(problem, sol, info, t1 - t0)
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


def _violations(problem, alloc: Allocation, deadline: Deadline) -> list[str]:
    """The final check; in a scheduler loop (a problem compiled with a carry)
    the one that examines what changed since the last checked round
    (`alloc.recheck`), whose answer is the full check's."""
    carry = problem.carry
    if carry is None:
        from .check import violations
        return violations(problem.cluster, problem.jobs, alloc, max_moves=problem.max_moves,
                          deadline=deadline)
    from .recheck import violations_since
    bad, carry.checked = violations_since(carry.checked, problem.cluster, problem.jobs, alloc,
                                          max_moves=problem.max_moves, deadline=deadline)
    return bad


#: the restriction of a solver that keeps running jobs in place where the call
#: allows moves or the tenancy rules allow preemption
KEPT_IN_PLACE = ("running jobs kept where they run (the call allows moves, or the tenancy "
                 "rules let a pending job preempt one)")


def finish(problem, sol, info: SolverInfo, wall: float) -> Allocation:
    """The :class:`Allocation` of a solver's :class:`~alloc.problem.Solution`."""
    caps = info.capabilities
    assign = dict(sol.assign)
    touches_running = "preemption" in caps or ("migration" in caps and problem.moves_allowed)
    if not touches_running:
        assign.update(problem.fixed)
    else:
        for j in problem.fixed:
            if j not in assign and "preemption" not in caps:
                assign[j] = problem.fixed[j]
    jobs = problem.jobs
    order = sorted(assign)
    placement, placements, moved = problem.placement, [], []
    for j in order:
        p = placement(j, assign[j])
        placements.append(p)
        cur = jobs[j].current
        if cur is not None and not p.same_as(cur):
            moved.append(p.job)
    placements, moved = tuple(placements), tuple(moved)
    preempted = tuple(jobs[j].id for j in problem.running if j not in assign)
    unplaced = tuple(job.id for j, job in enumerate(jobs) if j not in assign)
    reasons = {jobs[j].id: why for j, why in problem.reasons.items()}
    of = problem.objective.value
    value = float(sum(of(jobs[j], p) for j, p in zip(order, placements))) \
        - (problem.move_cost or 0.0) * len(moved)
    stats = dict(sol.stats)
    alloc = Allocation(placements, unplaced, preempted, sol.status, value, sol.bound, wall,
                       info.name, problem.objective.name, problem.name, stats, moved, reasons)
    restricts = info.restricts
    if (problem.moves_allowed and problem.fixed and "migration" not in caps) or \
            (problem.preemption_possible and "preemption" not in caps):
        # its proof covers the problem with the running jobs pinned, not this one
        restricts = "; ".join(x for x in (restricts, KEPT_IN_PLACE) if x)
        alloc = replace(alloc, stats={**alloc.stats, "covers_instance": False})
    return honest_status(alloc, exact=info.exact, restricts=restricts)


def honest_status(alloc: Allocation, *, exact: bool, restricts: str = "") -> Allocation:
    """Heuristics never claim OPTIMAL or INFEASIBLE; an exact solver claims
    OPTIMAL only when the recomputed value meets its bound; a solver that
    restricts the problem keeps OPTIMAL (and its bound) only when its solution
    says the proof covers the instance (``stats["covers_instance"]``), else it
    reports FEASIBLE with the restriction named in ``stats["restriction"]`` and
    its own bound in ``stats["restricted_bound"]``."""
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
    if st is Status.OPTIMAL:
        if bound is None or alloc.value < bound - 1e-6 * max(1.0, abs(bound)):
            st = Status.FEASIBLE
    if st is Status.UNKNOWN and alloc.placements:
        st = Status.FEASIBLE
    if (st, bound, stats) == (alloc.status, alloc.bound, dict(alloc.stats)):
        return alloc
    return replace(alloc, status=st, bound=bound, stats=stats)


__all__ = ["allocate", "exact_solvers", "finish", "get_solver", "heuristic_solvers",
           "honest_status", "needed_capabilities", "register", "run_solver", "solvers"]

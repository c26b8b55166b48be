r"""The conformance checks of one solver on one input, and of several
solvers on the same input.

`solver_problems` runs solver ``name`` on one call and returns what it got
wrong (empty list: it conforms), each line tagged with its check:

* ``runs`` -- it answers input within its declared capabilities (no error);
* ``deadline`` -- the call returns within ``time_limit * 1.1 + 0.5`` s;
* ``input`` -- the cluster and the jobs are not mutated;
* ``violations`` -- every hard constraint (`alloc.violations`: no
  over-commitment, gangs, GPU types, locality, tenancy and HiveD's sharing
  safety, running jobs kept unless the call's move budget allows);
* ``value`` -- the value is the objective recomputed from the placements,
  less the moves' cost;
* ``status`` -- a heuristic never claims ``optimal`` or ``infeasible``;
  ``optimal`` only with a bound;
* ``bound`` -- ``value <= bound``;
* ``preferred`` -- for a solver that declares ``preferred``: no job placed
  now spans several nodes of its preferred level while one could take it
  (`alloc.testing.topology.preferred_problems`);
* ``determinism`` -- the same input and seed give the same placements (an
  exact solver stopped by the clock short of ``optimal``, or one whose
  phases ran out of their time, ``stats["clock_cut"]``, is exempt);
* ``options`` -- an unknown option is refused with a ``ValueError`` naming
  it;
* ``reasons`` -- every job left waiting says why (`reason_problems`);
* ``guarantee`` -- on inputs with tenants' cells, a solver that handles
  tenancy serves the guarantee: a waiting guaranteed job has no room in its
  tenant's cells, and its reason names them (`guarantee_problems`);
* ``order`` under ``preempt="order"``, for every solver: no job waits for
  lower-ranked work beyond the backfill rule (`order_problems`: it does not
  fit in what the jobs ranked above it and the running jobs it may not stop
  leave: a running job the order ranks below it counts as stopped,
  `order_preemption_rule`; likewise ``order-per-user`` where promised);
* the properties the solver *promises* (`PROMISES`): ``order``
  (`order_problems`), ``order-per-user`` (the same within each user),
  ``maximal`` (`idle_room_problems`), ``drf`` (envy-freeness and
  sharing incentive up to one job, `alloc.testing.fairness`).

`check_across` compares the answers of several solvers to one input: exact
solvers agree on a proven optimum and nobody beats it, no value exceeds a
reported bound, and an exact solver (solving the problem as given) is never
below a heuristic that applies -- among answers to the same problem: where
the core placed the guaranteed jobs for one solver (`alloc.guarantee`) and
another served the guarantee by rules of its own, they solved two.
"""
from __future__ import annotations

import copy
import time
from typing import Any, Iterable, Mapping, Sequence, cast

from ..check import violations
from ..deadline import allowance
from ..errors import InputError, SolverError
from ..model import MILLI, Allocation, Cluster, Job, Status
from ..objectives import allocation_value
from ..registry import get_solver, solvers
from ..solve import allocate, needed_capabilities
from .placements import guarantee_problems, reason_problems

TOL = 1e-6

#: Properties beyond the invariants that built-in solvers promise.
#: ``order``: a job is never displaced by jobs ranked below it;
#: ``order-per-user``: the same among each user's jobs; ``maximal``: no job is
#: left out that fits in what is free; ``drf``: envy-freeness and sharing
#: incentive up to one job.  synergy-greedy and synergy-tune promise none of
#: them: a job waits unless it fits at its best-case CPU and memory point, and
#: TUNE admits jobs by total GPU demand first (Synergy, OSDI'22, section 4).
PROMISES: dict[str, frozenset] = {
    **{n: frozenset({"order", "maximal"}) for n in (
        "antman", "best-fit", "dotprod", "fgd", "fgd-lookahead", "gpu-clustering",
        "gpu-packing", "greedy-upgrade", "hived", "local-search", "openb-best-fit",
        "proportional", "random")},
    "drf": frozenset({"order-per-user", "maximal", "drf"}),
}
#: Every check, in the order they run (the last four are promises).
CHECKS = ("runs", "deadline", "input", "violations", "order-preemption", "value", "status",
          "bound", "preferred", "determinism", "options", "reasons", "guarantee", "order",
          "order-per-user", "maximal", "drf")
#: The checks a solver may promise (`PROMISES`).
PROMISABLE = CHECKS[CHECKS.index("order"):]


def applicable_solvers(cluster: Cluster, jobs: Sequence[Job], *, exact: bool | None = None,
                       names: Iterable[str] | None = None,
                       preempt: str | None = None) -> list[str]:
    """Available solvers (of ``names``, default all) whose declared
    capabilities cover the input and the preemption rule ``preempt``
    (``exact``: only exact solvers, or only heuristics)."""
    need = needed_capabilities(cluster, jobs, preempt)
    reg = solvers()
    pick = reg if names is None else {n: reg[n] for n in names if n in reg}
    return [n for n, s in pick.items()
            if s.available and need <= s.capabilities and (exact is None or s.exact == exact)]


def _allowed_moves(max_moves, move_cost):
    return None if (max_moves is None and move_cost is not None) else (max_moves or 0)


def solver_problems(name: str, cluster: Cluster, jobs: Sequence[Job], *,
                    objective: str = "throughput", seed: int = 0, time_limit: float = 5.0,
                    max_moves: int | None = None, move_cost: float | None = None,
                    order: Sequence[str] | None = None, preempt: str | None = None,
                    promises: Iterable[str] | None = None,
                    skip: Iterable[str] = ()) -> tuple[list[str], Allocation | None]:
    """What solver ``name`` gets wrong on one call, and its allocation.

    Parameters
    ----------
    name : str
        A registered solver.
    cluster, jobs, objective, seed, time_limit, max_moves, move_cost, order, preempt
        The call (as `allocate` takes them).
    promises : iterable of str, optional
        Properties the solver promises (default `PROMISES` of its name;
        none for a solver not listed there).
    skip : iterable of str
        Checks (`CHECKS`) not to run.

    Returns
    -------
    problems : list of str
        ``"[check] name: what is wrong"``, one per problem.
    allocation : Allocation or None
        The answer (None when the call failed).

    Examples
    --------
    >>> from alloc import load_instance
    >>> from alloc.testing import solver_problems
    >>> inst = load_instance("tiny-share")
    >>> problems, a = solver_problems("best-fit", inst.cluster, inst.jobs)
    >>> problems, a.status.value
    ([], 'feasible')
    """
    info = get_solver(name)
    jobs = list(jobs)
    ranked = list(order) if order else None
    kw: dict[str, Any] = dict(solver=name, objective=objective, seed=seed, time_limit=time_limit,
                              max_moves=max_moves, move_cost=move_cost, order=ranked,
                              preempt=preempt)
    before = (copy.deepcopy(cluster), copy.deepcopy(jobs))
    t0 = time.perf_counter()
    try:
        a = allocate(cluster, jobs, check=False, **kw)
    except (SolverError, InputError) as exc:
        return [f"[runs] {name}: raised {type(exc).__name__}: {exc}"], None
    wall = time.perf_counter() - t0
    skip = set(skip)
    out: list[str] = []

    def add(check: str, lines: Iterable[str]) -> None:
        if check not in skip:
            out.extend(f"[{check}] {name}: {x}" for x in lines)

    add("deadline", [f"took {wall:.2f} s for a time limit of {time_limit} s"]
        if wall > allowance(time_limit) else [])
    add("input", ["mutated its input"] if (cluster, jobs) != before else [])
    add("violations", violations(cluster, jobs, a, max_moves=_allowed_moves(max_moves, move_cost),
                                 order=ranked, preempt=preempt))
    if preempt == "order":
        add("order-preemption", order_preemption_problems(jobs, a, ranked))
    moves = (move_cost or 0.0) * len(a.moved)
    value = allocation_value(objective, jobs, a.placements) - moves
    add("value", [f"value {a.value} is not the placement's value {value}"]
        if abs(value - a.value) > TOL * max(1, abs(a.value)) else [])
    add("status", status_problems(info.exact, a))
    add("bound", bound_problems(a))
    if "preferred" in info.capabilities:
        from .topology import preferred_problems
        add("preferred", preferred_problems(cluster, jobs, a, objective))
    if "determinism" not in skip:
        again = allocate(cluster, jobs, check=False, **kw)
        clocked = a.status is not Status.OPTIMAL or "clock_cut" in a.stats \
            or "clock_cut" in again.stats
        if placement_key(again) != placement_key(a) and not (info.exact and clocked):
            add("determinism", [f"not deterministic for seed {seed}"])
    if "options" not in skip:
        add("options", option_problems(name, cluster, jobs))
    add("reasons", reason_problems(jobs, a))
    if "tenancy" in info.capabilities:
        # a solver without migration moves nothing, whatever the call allows
        moves = _allowed_moves(max_moves, move_cost) if "migration" in info.capabilities else 0
        add("guarantee", guarantee_problems(cluster, jobs, a, order=ranked, max_moves=moves))
    if preempt == "order":
        promises = {"order"} | set(PROMISES.get(name, frozenset()) if promises is None
                                   else promises)
    add_promises(add, name, cluster, jobs, a, ranked, promises, preempt=preempt)
    return out, a


def option_problems(name: str, cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    """An unknown option must be refused with a ``ValueError`` naming it."""
    try:
        allocate(cluster, jobs, check=False, solver=name, time_limit=1.0, no_such_option_=1)
    except ValueError as exc:
        if "no_such_option_" not in str(exc):
            return [f"unknown option refused without naming it: {exc}"]
        return []
    return ["accepted an unknown option"]


def add_promises(add, name: str, cluster: Cluster, jobs: Sequence[Job], a: Allocation, order,
                 promises: Iterable[str] | None, *, preempt: str | None = None) -> None:
    """Run the promised property checks of solver ``name`` (see `PROMISES`).
    Under ``preempt="order"`` the order checks count a running job that a
    waiting job may stop (`order_preemption_rule`) as stopped: that job must
    not wait where it fits once such jobs are stopped."""
    from .fairness import placement_envy_problems, placement_sharing_incentive_problems
    from .placements import idle_room_problems, order_preemption_rule, order_problems
    from .users import by_tenant
    want = PROMISES.get(name, frozenset()) if promises is None else frozenset(promises)
    unknown = want - set(PROMISABLE)
    if unknown:
        raise ValueError(f"promises: unknown {sorted(unknown)}; valid: {list(PROMISABLE)}")
    spread = "spread" in get_solver(name).capabilities
    may = order_preemption_rule(order) if preempt == "order" else None
    if "order" in want:
        add("order", order_problems(cluster, jobs, a, order, spread=spread, may_preempt=may))
    if "order-per-user" in want:
        add("order-per-user", order_problems(cluster, jobs, a, order, owner=by_tenant,
                                             spread=spread, may_preempt=may))
    if "maximal" in want:
        add("maximal", idle_room_problems(cluster, jobs, a, spread=spread))
    if "drf" in want:
        add("drf", placement_envy_problems(cluster, jobs, a, spread=spread)
            + placement_sharing_incentive_problems(cluster, jobs, a, spread=spread))


def status_problems(exact: bool, a: Allocation) -> list[str]:
    """Honest status: a heuristic never claims ``optimal`` or ``infeasible``;
    ``optimal`` only with a bound that the value meets."""
    out = []
    if not exact and a.status in (Status.OPTIMAL, Status.INFEASIBLE):
        out.append(f"a heuristic claimed {a.status.value}")
    if a.status is Status.OPTIMAL and a.bound is None:
        out.append("claims optimal without a bound")
    if a.status is Status.OPTIMAL and a.bound is not None and \
            a.value < a.bound - TOL * max(1, abs(a.bound)):
        out.append(f"claims optimal {a.value} below its bound {a.bound}")
    return out


def order_preemption_problems(jobs: Sequence[Job], a: Allocation, order) -> list[str]:
    """What preemption by order got wrong beyond `alloc.violations`
    (``stats["preempted_for"]`` names the job each victim was stopped for):
    a victim stopped for a job the order does not rank above it or that is
    not placed, and -- the lowest-ranked go first -- a victim stopped for a
    one-GPU job while a job ranked below the victim, on the same servers and
    holding at least as many whole GPUs, CPU and memory, kept running."""
    rank = {j: k for k, j in enumerate(order or ())}
    low = len(rank)
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in a.placements}
    out = []
    for v, b in cast(Mapping, a.stats.get("preempted_for") or {}).items():
        if rank.get(b, low) >= rank.get(v, low):
            out.append(f"job {v!r} stopped for {b!r}, which the order does not rank above it")
        if b not in placed:
            out.append(f"job {v!r} stopped for {b!r}, which is not placed")
        if by_id[b].gpus == 1 and by_id[b].gpu_milli == MILLI:
            out += [f"job {v!r} stopped for {b!r} while {k!r}, ranked lower on the same "
                    f"server, kept running"
                    for k in _kept_below(by_id, placed, rank, v)]
    return out


def _kept_below(by_id, placed, rank, v):
    """Running jobs ranked below ``v`` that kept their place on ``v``'s
    servers with at least its whole GPUs, CPU and memory."""
    from ..check import placement_servers
    low = len(rank)
    cur = by_id[v].current
    for k, p in placed.items():
        o = by_id[k]
        if o.current is None or not p.same_as(o.current) or rank.get(k, low) <= rank.get(v, low):
            continue
        if placement_servers(p) == placement_servers(cur) and p.gpus and cur.gpus and \
                len(p.gpus) >= len(cur.gpus) and o.gpu_milli == MILLI and \
                p.total_cpu >= cur.total_cpu and p.total_mem >= cur.total_mem:
            yield k


def bound_problems(a: Allocation) -> list[str]:
    """``value <= bound`` (relative tolerance `TOL`)."""
    if a.bound is not None and a.value > a.bound + TOL * max(1, abs(a.bound)):
        return [f"value {a.value} above its bound {a.bound}"]
    return []


def placement_key(a: Allocation):
    """The placements and status of an answer, comparable across calls."""
    return (sorted((p.job, tuple(sorted((g.gpu, g.milli) for g in p.gpus)),
                    tuple(sorted(p.cpu.items())), tuple(sorted(p.mem.items())))
                   for p in a.placements), a.status)


def same_problem(a: Allocation, b: Allocation) -> bool:
    """Two answers to one call solved the same problem: not when the core
    placed the guaranteed jobs for one (``stats["guarantee_pinned"]``,
    `alloc.guarantee`) and the other served the guarantee itself (a solver
    that declares ``guarantee``, with rules of its own).

    Examples
    --------
    >>> from alloc import Allocation
    >>> from alloc.testing.conformance import same_problem
    >>> core = Allocation(solver="cpsat", stats={"guarantee_pinned": ["g"]})
    >>> same_problem(core, Allocation(solver="hived")), same_problem(core, Allocation(solver="drf"))
    (False, True)
    """
    return bool(a.stats.get("guarantee_pinned")) == bool(b.stats.get("guarantee_pinned")) or \
        not (_serves_guarantee(a) or _serves_guarantee(b))


def _serves_guarantee(a: Allocation) -> bool:
    info = solvers().get(a.solver)
    return info is not None and "guarantee" in info.capabilities


def check_against_optimum(results: dict[str, Allocation], exact_names: Sequence[str]) -> list[str]:
    """Exact solvers that proved optimality agree; nobody beats a proven
    optimum (of the same problem, `same_problem`)."""
    out = []
    proven = {n: a.value for n, a in results.items()
              if n in exact_names and a.status is Status.OPTIMAL}
    if proven:
        ref_name, ref = max(proven.items(), key=lambda kv: kv[1])
        for n, v in proven.items():
            if abs(v - ref) > 1e-5 * max(1, abs(ref)):
                out.append(f"{n} proved {v} optimal but {ref_name} proved {ref}")
        for n, a in results.items():
            if a.value > ref + 1e-5 * max(1, abs(ref)) and same_problem(a, results[ref_name]):
                out.append(f"{n} found {a.value}, above the proven optimum {ref}")
    return out


def check_across(results: dict[str, Allocation]) -> list[str]:
    """The cross-solver checks on one input (see the module notes)."""
    reg = solvers()
    exact = [n for n in results if reg[n].solves_problem_as_given]
    out = check_against_optimum(results, exact)
    for n, a in results.items():
        if a.bound is None:
            continue
        for m, b in results.items():
            if b.value > a.bound + 1e-5 * max(1.0, abs(a.bound)) and same_problem(a, b):
                out.append(f"{m} found {b.value}, above {n}'s bound {a.bound}")
    heur = {n: a for n, a in results.items() if not reg[n].exact}
    # exact solvers that say which heuristics they ran promise to be above them
    exact = exact + [n for n, a in results.items() if reg[n].exact and n not in exact
                     and "heuristics" in a.stats]
    for n in exact:
        for m, b in heur.items():
            if not same_problem(results[n], b):
                continue
            if results[n].value < b.value - 1e-5 * max(1.0, abs(b.value)):
                out.append(f"exact {n} returned {results[n].value}, below heuristic {m}'s "
                           f"{b.value}")
    return out


__all__ = ["CHECKS", "PROMISES", "add_promises", "applicable_solvers", "bound_problems",
           "check_across",
           "check_against_optimum", "option_problems", "order_preemption_problems", "placement_key",
           "same_problem", "solver_problems", "status_problems"]

r"""A tenant's guarantee, kept by the core for every solver: which waiting
guaranteed jobs are placed now, and which running jobs stop for them.

HiveD (Zhao et al., OSDI'20, sections 3.1-3.3) promises each tenant its
virtual cluster: a guaranteed job of tenant ``v`` gets ``v``'s cells
whenever they have room for it, at the cost of opportunistic work.  The
core decides it once, before the solver runs, the same way for every
solver that handles tenancy (``preempt`` unset), with HiveD's buddy-cell
engine ([`alloc.engines.cells.engine`][alloc.engines.cells.engine], where
the rules are written out):

1. the running jobs are put back where they run and their tenants' cells
   bound (`alloc.tenancy.infer_binding`);
2. the waiting guaranteed jobs, by rank (the caller's order, else priority
   then input order), each at its smallest size first: first without
   stopping anyone (the tenant's free bound GPUs, then a new cell of the
   tenant by buddy allocation, sharing safety kept); then -- only when no
   size fits so -- stopping running jobs it outranks
   ([`alloc.tenancy.outranks`][alloc.tenancy.outranks]): opportunistic jobs
   inside the tenant's cells (or a new cell), then the tenant's own
   guaranteed jobs of lower priority; on each GPU the lowest priority
   first and no more than it needs, on the server that needs the fewest;
   a running job stopped for one job that the jobs after it did not need
   stopped is spared (`alloc.engines.cells.spare`);
3. a guaranteed job that does not fit even so waits: its tenant's cells are
   full (`alloc.tenancy.guarantee_reasons` names them).

The jobs placed in step 2 are *pinned*: the solver gets the problem with
them running where the engine put them (it may neither move nor stop them)
and without the running jobs they stopped
([`Problem.reduced`][alloc.problem.Problem.reduced], priorities kept);
everything else -- the opportunistic jobs, and any guaranteed job step 2
could not place -- is the solver's.  Ties of the solver's objective
therefore never decide against the guarantee, and every solver makes the
same preemptions for it.

Solvers that serve the guarantee with the same engine themselves (``hived``,
which also offers options that change the rules) declare the capability
``guarantee`` and get the problem as given.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .deadline import Deadline
from .problem import Problem


@dataclass(frozen=True)
class Plan:
    """What the core decided: ``victims`` (running job index -> the index of
    the guaranteed job it is stopped for), ``pinned`` (guaranteed job index
    -> its assignment) and ``binding`` (the cells' binding the engine
    holds, ``{tenant: ["level:node", ...]}``)."""
    victims: dict = field(default_factory=dict)
    pinned: dict = field(default_factory=dict)
    binding: dict = field(default_factory=dict)


def applies(problem: Problem) -> bool:
    """True when the step has work: tenants' cells, the tenancy rules
    (``preempt`` unset) and a waiting guaranteed job.

    Examples
    --------
    >>> from alloc import Cell, Cluster, Job, Server, Tenant
    >>> from alloc.problem import compile_problem
    >>> from alloc.guarantee import applies
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> applies(compile_problem(c, [Job("g", 2, cpu=1, mem=1, tenant="a", guaranteed=True)]))
    True
    >>> applies(compile_problem(c, [Job("o", 2, cpu=1, mem=1)]))
    False
    """
    if problem.preempt is not None or not problem.cluster.tenants:
        return False
    return any(problem.jobs[j].guaranteed for j in problem.pending)


def plan(problem: Problem, deadline: Deadline) -> Plan | None:
    """Steps 1-3 of the module notes on a compiled problem; None when the
    running jobs cannot all be put back (a state no binding explains: the
    solver decides then).  Out of time it returns what it decided so far.

    Examples
    --------
    >>> from alloc import Cell, Cluster, Job, Server, Tenant, Placement, GpuShare
    >>> from alloc.deadline import Deadline
    >>> from alloc.problem import compile_problem
    >>> from alloc.guarantee import plan
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> opp = Placement("o", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
    ...                 {"s0": 100}, {"s0": 100})
    >>> jobs = [Job("o", 2, cpu=100, mem=100, current=opp),
    ...         Job("g", 2, cpu=100, mem=100, tenant="a", guaranteed=True)]
    >>> d = plan(compile_problem(c, jobs), Deadline.after(5))
    >>> d.victims, sorted(d.pinned), d.binding
    ({0: 1}, [1], {'a': ['server:s0']})
    """
    from .engines.cells.engine import Engine, restore_running
    from .engines.cells.spare import fewest_stops
    from .tenancy import binding_keys
    p = problem
    jobs = p.jobs
    eng = Engine(p)
    if restore_running(eng, p.running, deadline):
        return None
    waiting = sorted((j for j in p.pending if jobs[j].guaranteed),
                     key=lambda j: (p.prio_key[j], j))
    victims: dict[int, int] = {}

    def place() -> set[int]:
        victims.clear()
        stopped: set[int] = set()
        for j in waiting:
            if deadline.expired():
                break
            for level in (0, 2):
                before = set(stopped)
                if any(eng.try_place(j, n, level, stopped) for n in eng.sizes(j)):
                    victims.update(dict.fromkeys((r for r in stopped - before if r in p.fixed), j))
                    break
        return set(victims)

    fewest_stops(eng, place, lambda: set(victims.values()), deadline)
    pinned = {j: eng.assign[j] for j in waiting if j in eng.assign}
    return Plan(victims, pinned, binding_keys(eng.tree, eng.bound))


def reason(problem: Problem, victim: int, job: int) -> str:
    """The line of a running job stopped for guaranteed job ``job``.

    Examples
    --------
    >>> from alloc import Cell, Cluster, Job, Server, Tenant
    >>> from alloc.problem import compile_problem
    >>> from alloc.guarantee import reason
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> p = compile_problem(c, [Job("o", 2, cpu=1, mem=1),
    ...                         Job("g", 2, cpu=1, mem=1, tenant="a", guaranteed=True)])
    >>> reason(p, 0, 1)
    "preempted: stopped for guaranteed job 'g' of tenant 'a', whose cells had no other room for it"
    """
    j = problem.jobs[job]
    return (f"preempted: stopped for guaranteed job {j.id!r} of tenant {j.tenant!r}, whose "
            f"cells had no other room for it")


__all__ = ["Plan", "applies", "plan", "reason"]

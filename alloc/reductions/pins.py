r"""The core's decisions made before the solver runs, as reductions on a
compiled problem: jobs the core stops (victims) leave the problem, jobs it
places are pinned there (running for the solver: never moved or stopped).

``apply(P) = (P', plan)`` with ``P' = P.reduced(victims, pinned)``
([`Problem.reduced`][alloc.problem.Problem.reduced]): the victims' room
given back to the free capacities, the pinned jobs' taken.  ``invert(A',
plan)`` ([alloc.preempt.lifted][]) tells the answer for ``P``: the victims
preempted with their reason, the pinned jobs started (not moved), the value
the same (the placements are the same).

* [`OrderPreemption`][alloc.reductions.OrderPreemption] -- under
  ``preempt="order"``: the order's walk ([alloc.preempt][]) decides the
  victims and the jobs they are stopped for; priorities are set aside (the
  order ranks the jobs).
* [`KeptRunning`][alloc.reductions.KeptRunning] -- the running jobs a solver
  may not move or stop, put back where they run after it answers
  (`alloc.solve.finish` inverts it);
* [`GuaranteePins`][alloc.reductions.GuaranteePins] -- with tenants' cells
  and a waiting guaranteed job, for a solver that does not declare
  ``guarantee``: HiveD's rules (`alloc.guarantee`) place the guaranteed
  jobs and stop the opportunistic ones they need; priorities stay.

Examples
--------
>>> from alloc import Cluster, Job, Server
>>> from alloc.deadline import Deadline
>>> from alloc.problem import compile_problem
>>> from alloc.reductions import OrderPreemption
>>> cl = Cluster((Server("s0", 8000, 64000, 1, "V100"),))
>>> from alloc.model import GpuShare, Placement
>>> run = Placement("low", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 1000})
>>> jobs = [Job("low", 1, cpu=1000, mem=1000, current=run), Job("hot", 1, cpu=1000, mem=1000)]
>>> p = compile_problem(cl, jobs, order=["hot", "low"], preempt="order")
>>> q, plan = OrderPreemption(Deadline.after(5)).apply(p)
>>> [q.jobs[j].id for j in q.pinned], [p.jobs[v].id for v in plan.victims]
(['hot'], ['low'])
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..deadline import Deadline
from ..model import Allocation
from ..problem import Problem, Solution


class OrderPreemption:
    """Preemption by the caller's order as a reduction (module notes)."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.problem: Problem | None = None

    def apply(self, problem: Problem) -> tuple[Problem, Any]:
        """``(P', plan)``, or ``(P, None)`` when the rule is not the order's
        or nothing is to be stopped and no priority is to be set aside (then
        ``P.reserved`` is the room the walk set aside, as on ``P'``)."""
        if problem.preempt != "order":
            return problem, None
        from ..preempt import plan, reduced
        decided = plan(problem, self.deadline.share(0.25))
        if not decided.victims and not any(j.priority for j in problem.jobs):
            problem.reserved = decided.reserved     # for `alloc.preempt.kept_order`
            return problem, None
        self.problem = problem
        return reduced(problem, decided), decided

    def invert(self, alloc: Allocation, plan: Any) -> Allocation:
        """The answer for the problem as posed ([alloc.preempt.lifted][])."""
        from ..preempt import lifted
        assert self.problem is not None
        return lifted(self.problem, plan, alloc)


class GuaranteePins:
    """A tenant's guarantee kept for every solver as a reduction (module
    notes); ``serves_itself``: the solver declares ``guarantee``."""

    def __init__(self, deadline: Deadline, serves_itself: bool) -> None:
        self.deadline = deadline
        self.serves_itself = serves_itself
        self.problem: Problem | None = None

    def apply(self, problem: Problem) -> tuple[Problem, Any]:
        """``(P', plan)``, or ``(P, None)`` when the step has nothing to do."""
        from ..guarantee import applies, plan
        if self.serves_itself or problem.keeps_order or not applies(problem):
            return problem, None
        decided = plan(problem, self.deadline.share(0.25))
        if decided is None or not decided.pinned:
            return problem, None
        self.problem = problem
        return problem.reduced(set(decided.victims), decided.pinned, keep_priority=True), \
            decided

    def invert(self, alloc: Allocation, plan: Any) -> Allocation:
        """The answer for the problem as posed: the victims preempted for
        the guaranteed jobs (`alloc.guarantee.reason`), which ones the core
        placed in ``stats["guarantee_pinned"]``."""
        from ..guarantee import reason
        from ..preempt import lifted
        p = self.problem
        assert p is not None
        alloc = lifted(p, plan, alloc, reason)
        return replace(alloc, stats={**alloc.stats, "guarantee_pinned": sorted(
            p.jobs[j].id for j in plan.pinned)})


class KeptRunning:
    """Running jobs a solver may not move or stop, as a reduction: the
    solver sees them running (`Problem.fixed`, their room taken from the
    free capacities) and need not list them; the inverse puts them back.

    A solver that declares neither ``preemption`` nor (when the call allows
    moves) ``migration`` keeps every running job where it runs: the inverse
    sets ``assign[r] = fixed[r]`` for every running ``r``.  One that may move
    but not stop them has each running job it leaves out put back where it
    runs.  One that may stop them answers for them (a running job it leaves
    out is stopped), except for the jobs the core pinned (`OrderPreemption`,
    `GuaranteePins`), which are never stopped: each one it leaves out is put
    back.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.model import GpuShare, Placement
    >>> from alloc.problem import Solution, compile_problem
    >>> cl = Cluster((Server("s0", 8000, 64000, 1, "V100"),))
    >>> run = Placement("r", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 1000})
    >>> p = compile_problem(cl, [Job("r", 1, cpu=1000, mem=1000, current=run)])
    >>> red = KeptRunning(frozenset())
    >>> q, data = red.apply(p)
    >>> red.invert(Solution(), data).assign == p.fixed
    True
    """

    def __init__(self, capabilities: frozenset[str]) -> None:
        self.capabilities = capabilities

    def apply(self, problem: Problem) -> tuple[Problem, Any]:
        """``(P, (every, fixed))``: the problem unchanged, and which running
        jobs go back (``every``: all of ``fixed``, else those of it left
        out); ``(P, None)`` when nothing runs or the solver answers for all
        of them."""
        caps = self.capabilities
        if not problem.fixed:
            return problem, None
        if "preemption" in caps:
            pinned = {j: problem.fixed[j] for j in problem.pinned if j in problem.fixed}
            return problem, ((False, pinned) if pinned else None)
        touches = "migration" in caps and problem.moves_allowed
        return problem, (not touches, problem.fixed)

    def invert(self, sol: Solution, data: Any) -> Solution:
        """``sol`` with the running jobs put back (see the class notes)."""
        every, fixed = data
        assign = dict(sol.assign)
        if every:
            assign.update(fixed)
        else:
            for j, a in fixed.items():
                assign.setdefault(j, a)
        return replace(sol, assign=assign)


__all__ = ["GuaranteePins", "KeptRunning", "OrderPreemption"]

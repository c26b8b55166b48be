"""What a scheduler loop carries from one round to the next.

Round after round a scheduler loop hands the core mostly the same objects:
the same [`Cluster`][alloc.model.Cluster], the same [`Job`][alloc.model.Job]
objects for the jobs that did not change (running ones with the same
``current`` placement object), and a few new ones (arrivals, jobs that just
started or moved).  A [`Carry`][alloc.carry.Carry] keeps what the last round
derived, so that the next one does work in proportion to what changed:

* the last compiled problem: the next compile
  ([`Problem`][alloc.problem.Problem] with ``carry``) takes every job that is
  the very same object on the very same cluster as it was, and finds the
  capacities the running jobs leave from the old ones and the difference
  ([`Changes`][alloc.carry.Changes]: running jobs gone, running jobs new);
* the last allocation that passed the final check
  ([`alloc.recheck`][alloc.recheck]): the next check examines the placements
  and jobs that differ from it by value, and the capacity they take or give
  back;
* the placements the last round reported for its running jobs kept where
  they run (`Problem.placements`):
  a job that is the very same object, at the very same assignment
  ([`Changes`][alloc.carry.Changes] ``kept``), has the very same placement;
* per solver, the state a solver keeps across rounds (an engine of free
  lists, scores per server), taken out at the start of a call
  ([`take`][alloc.carry.Carry.take]) and kept again when the call succeeds
  ([`keep`][alloc.carry.Carry.keep]), tagged with the problem it reflects
  ([`Problem.stamp`][alloc.problem.Problem]).

Preemption by order ([`alloc.preempt`][alloc.preempt]) hands the solver a
reduced problem (the victims gone, the jobs they are stopped for pinned
where they run).  Its stamp is its own and its `changes` are told against
the same problem as the compiled one's; the carry notes the reduction
([`Reduction`][alloc.carry.Reduction]), and the next compile tells its
changes against the reduced problem, the one the solver's state reflects
([`rebase`][alloc.carry.rebase]).

Identity, never equality (but for the final check's record, which
compares values, and a from-scratch round's run, whose inputs are value
keys): a kept value is used only while the objects it was derived from are
the same objects, so a changed job, a new cluster
(a server failed, drained servers' placeholder jobs, a server added) or a
rolled-back event simply finds nothing to reuse.  What the carry derives is
equal to what a fresh computation gives (the tests compare a session's
rounds with fresh [`allocate`][alloc.solve.allocate] calls on deep copies).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

from .model import Job

_STAMPS = count(1)


def next_stamp() -> int:
    """A fresh problem stamp (unique in the process)."""
    return next(_STAMPS)


@dataclass(frozen=True)
class Changes:
    """How a problem's running jobs differ from the previous problem's.

    Attributes
    ----------
    since : int
        The ``stamp`` of the problem they are told against: the previous one
        compiled with the carry, or the reduced problem the solver saw in its
        place (`rebase`).
    added : tuple of int
        Indices (in the new problem) of the running jobs that were not running
        there as the same job object: started or moved since, submitted
        running, or changed (any field).
    removed : tuple of (int, Job, Assign)
        Previous index, job object and assignment of the running jobs of the
        previous problem that are not running now as the same object.
    kept : dict of int to int
        New index -> previous index of every other running job.
    """
    since: int
    added: tuple[int, ...] = ()
    removed: tuple[tuple[int, Job, Any], ...] = ()
    kept: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Reduction:
    """A compiled problem ``full`` (its stamp) that the solver saw reduced
    (`alloc.problem.Problem.reduced`): ``problem`` is the reduced one,
    ``index`` maps a job index of ``full`` to the reduced problem's (victims
    absent), ``pinned`` lists the indices in ``full`` of the jobs pinned."""
    full: int
    problem: Any
    index: dict
    pinned: frozenset


def reduced_changes(ch: Changes, full, drop, pin, index: dict) -> Changes:
    """``ch`` (the changes of problem ``full``) told for ``full`` without the
    jobs ``drop`` and with the jobs of ``pin`` running (``index``: job index of
    ``full`` -> the reduced problem's), against the same problem as ``ch``."""
    added = sorted([index[j] for j in ch.added if j not in drop] + [index[j] for j in pin])
    kept = {index[j]: k for j, k in ch.kept.items() if j not in drop}
    gone = tuple((k, full.jobs[j], full.fixed[j]) for j, k in ch.kept.items() if j in drop)
    return Changes(ch.since, tuple(added), ch.removed + gone, kept)


def rebase(ch: Changes, red: Reduction) -> Changes:
    """``ch`` (told against problem ``red.full``) told against the reduced
    problem of ``red`` instead: its victims were not running there, its
    pinned jobs were (taken out here, and put back where they run now if they
    run)."""
    rp, index = red.problem, red.index
    removed = [(index[k], rp.jobs[index[k]], rp.fixed[index[k]])
               for k, _, _ in ch.removed if k in index]
    removed += [(index[k], rp.jobs[index[k]], rp.fixed[index[k]]) for k in sorted(red.pinned)]
    added, kept = list(ch.added), {}
    for j, k in ch.kept.items():
        if k in index:
            kept[j] = index[k]
        else:
            added.append(j)              # a victim that runs on as it ran
    return Changes(rp.stamp, tuple(sorted(added)), tuple(removed), kept)


class Carry:
    """The state one scheduler loop keeps between rounds (see the module notes).

    One carry serves one sequence of calls (a session); it is never shared
    between threads.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.carry import Carry
    >>> from alloc.problem import compile_problem
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> carry = Carry()
    >>> p1 = compile_problem(cl, [Job("a", 1, cpu=1000, mem=1000)], carry=carry)
    >>> p1.changes is None, carry.previous(cl) is p1
    (True, True)
    >>> p2 = compile_problem(cl, list(p1.jobs) + [Job("b", 1, cpu=1000, mem=1000)], carry=carry)
    >>> p2.changes.since == p1.stamp, p2.changes.added
    (True, ())
    """

    def __init__(self) -> None:
        self.problem = None
        #: the last allocation that passed the final check (`alloc.recheck.Checked`)
        self.checked = None
        #: the last compiled problem's reduction, if the solver saw it reduced
        self.reduction: Reduction | None = None
        #: the waiting jobs the session holds out of this round's problem
        #: (`alloc.session.room`), by shape: (a job of the shape, how many);
        #: for a solver whose rule reads the whole queue (fgd's target workload)
        self.held_out: tuple[tuple[Job, int], ...] = ()
        self._states: dict[Any, Any] = {}

    def previous(self, cluster):
        """The last problem compiled with this carry, if it is on ``cluster``
        (the very same object), else None."""
        p = self.problem
        return p if p is not None and p.cluster is cluster else None

    def compiled(self, problem) -> None:
        """``problem`` was just compiled with this carry: it becomes the last
        problem, and its changes, if told against a problem the solver saw
        reduced, are told against the reduced one (`rebase`)."""
        red, self.reduction = self.reduction, None
        ch = problem.changes
        if red is not None and ch is not None and ch.since == red.full:
            problem.changes = rebase(ch, red)
        self.problem = problem

    def reduced(self, full, problem, index: dict, pin) -> None:
        """The solver gets ``problem``, compiled problem ``full`` reduced
        (`Reduction`)."""
        self.reduction = Reduction(full.stamp, problem, index, frozenset(pin))

    def take(self, key) -> Any:
        """Remove and return the state kept under ``key`` (None when none):
        a call that fails midway leaves nothing half-changed behind."""
        return self._states.pop(key, None)

    def keep(self, key, state) -> None:
        """Keep ``state`` under ``key`` for the next call."""
        self._states[key] = state

    def clear(self) -> None:
        """Forget everything (the next round starts afresh)."""
        self.problem = None
        self.checked = None
        self.reduction = None
        self.held_out = ()
        self._states.clear()


__all__ = ["Carry", "Changes", "Reduction", "next_stamp", "rebase", "reduced_changes"]

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
  and jobs that are not the very same objects, and the capacity they take
  or give back;
* per solver, the state a solver keeps across rounds (an engine of free
  lists, scores per server), taken out at the start of a call
  ([`take`][alloc.carry.Carry.take]) and kept again when the call succeeds
  ([`keep`][alloc.carry.Carry.keep]), tagged with the problem it reflects
  ([`Problem.stamp`][alloc.problem.Problem]).

Identity, never equality: a kept value is used only while the objects it
was derived from are the same objects, so a changed job, a new cluster
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
        The previous problem's ``stamp``.
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

    def __init__(self):
        self.problem = None
        #: the last allocation that passed the final check (`alloc.recheck.Checked`)
        self.checked = None
        self._states: dict[Any, Any] = {}

    def previous(self, cluster):
        """The last problem compiled with this carry, if it is on ``cluster``
        (the very same object), else None."""
        p = self.problem
        return p if p is not None and p.cluster is cluster else None

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
        self._states.clear()


__all__ = ["Carry", "Changes", "next_stamp"]

r"""Dropping the jobs that fit nowhere when they arrive: the mechanism
``drop-unplaced``, the online rule of packing experiments (FGD's, Weng et
al., ATC'23: a pod that no node can take when it arrives is dropped, never
queued).

The rule: at the end of each round, every job that arrived since the round
before and does not run leaves the run, *dropped*
(`alloc.sched.kinds.Control.drop`), with the reason the round gave for it
(the session's line for a job it could not place), or, for a job the round
did not offer the placement, that its GPUs exceed what the cluster has free
(or why it waits: admission's line, a hold).  A job that started stays; jobs
that arrived earlier are never dropped later (a job stopped after it ran
waits again as usual).  Dropped jobs count in the summary's ``dropped`` and
carry their reason in their timeline row.

Examples
--------
>>> from alloc import Cluster, Server
>>> from alloc.sim import WorkloadJob, simulate
>>> cl = Cluster((Server("s0", cpu=8000, mem=8192, gpus=1),))
>>> jobs = [WorkloadJob("a", 0.0, 1, duration_s=10.0),
...         WorkloadJob("b", 1.0, 1, duration_s=10.0)]
>>> res = simulate(cl, jobs, mechanism="drop-unplaced")
>>> res.summary()["dropped"], [r["dropped"] is None for r in res.timeline()]
(1, [True, False])
"""
from __future__ import annotations

from typing import Any

from .kinds import BaseMechanism, Control, Event
from .registry import declare

#: The reason of a job the round did not offer the placement.
NOT_OFFERED = "fits nowhere: it asks for more GPU than the cluster has free"


class DropUnplaced(BaseMechanism):
    """The mechanism ``drop-unplaced`` (module notes)."""

    def __init__(self) -> None:
        self._new: list[str] = []

    def on_event(self, event: Event, ctl: Control) -> None:
        """Note each arrival: the next round decides it."""
        if event.kind == "arrival" and event.job is not None:
            self._new.append(event.job)

    def after_round(self, result: Any, ctl: Control) -> None:
        """Drop the jobs that arrived for this round and do not run."""
        new, self._new = self._new, []
        jobs = ctl.jobs
        reasons = result.reasons if result is not None else {}
        for jid in new:
            job = jobs.get(jid)
            if job is None or job.running:
                continue
            ctl.drop(jid, _reason(job, reasons.get(jid)))


def _reason(job: Any, given: str | None) -> str:
    """Why ``job`` is dropped: the round's line for it, else why it was not offered."""
    if given:
        return f"fits nowhere: {given}"
    if getattr(job, "reason", None):
        return f"not admitted: {job.reason}"
    if getattr(job, "held", False):
        return "held when it arrived"
    return NOT_OFFERED


def drop_unplaced() -> DropUnplaced:
    """A new ``drop-unplaced`` mechanism."""
    return DropUnplaced()


POLICIES = (
    declare("mechanism", "drop-unplaced", "alloc.sched.drop:drop_unplaced",
            summary="a job that its arrival's round does not start is dropped, with its "
                    "reason (packing experiments' online rule)"),
)

__all__ = ["DropUnplaced", "NOT_OFFERED", "POLICIES", "drop_unplaced"]

"""What one round of a [`Session`][alloc.session.Session] returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..model import Allocation, Placement, frozen_map


@dataclass(frozen=True)
class RoundResult:
    """The changes one round asks the scheduler to make.

    Every binding is a [`Placement`][alloc.model.Placement]: the job id, its GPUs
    with their milli-GPU shares, and CPU (milli-cores) and memory (MiB) per
    server.

    Attributes
    ----------
    round : int
        1 for the first round.
    start : tuple of Placement
        Pending jobs to start, where.
    move : tuple of Placement
        Running jobs to move, their new binding (``moved_from`` holds the old one).
    preempt : tuple of Placement
        Running jobs to stop, the binding they release; they are pending again.
    moved_from : mapping of str to Placement
        Old binding of each moved job.
    unplaced : tuple of str
        Pending jobs left waiting (preempted ones included).
    reasons : mapping of str to str
        Why some waiting jobs cannot be placed on this cluster now.
    allocation : Allocation
        The whole answer (every running job), checked by
        [`alloc.violations`][alloc.check.violations] against the jobs as they were before the
        round.
    latency_s : float
        Wall time of the round (seconds).
    timings : mapping of str to float
        Where the round's time went: ``compile_s`` (the core's compile step),
        ``solve_s`` (solver, finish and the final check; split into
        ``solver_s``, ``finish_s`` and ``check_s``), ``commit_s`` (the
        session's update), ``attempts`` (solves: always 1; drained and
        failed servers are reduced out of the call, never solved again).
    gpus : mapping
        GPUs of each started and moved job by the caller's keys (the
        session's ``gpu_keys``; the core's names without them), in the
        placement's order.
    preempted_for : mapping
        Under preemption by order: each preempted job -> the job it was
        stopped for.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Session
    >>> s = Session(Cluster((Server("s0", cpu=24000, mem=512000, gpus=8),)))
    >>> s.submit(Job("a", 2, cpu=4000, mem=4000))
    >>> r = s.step()
    >>> r.round, [p.job for p in r.start], r.stop, r.allocation.status.value
    (1, ['a'], (), 'feasible')
    """
    round: int
    start: tuple[Placement, ...] = ()
    move: tuple[Placement, ...] = ()
    preempt: tuple[Placement, ...] = ()
    moved_from: Mapping[str, Placement] = field(default_factory=frozen_map)
    unplaced: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=frozen_map)
    allocation: Allocation = field(default_factory=Allocation)
    latency_s: float = 0.0
    timings: Mapping[str, float] = field(default_factory=frozen_map)
    gpus: Mapping = field(default_factory=frozen_map)
    preempted_for: Mapping = field(default_factory=frozen_map)

    @property
    def stop(self) -> tuple:
        """Ids of the jobs to stop (the preempted ones)."""
        return tuple(p.job for p in self.preempt)

    def __bool__(self) -> bool:
        return bool(self.start or self.move or self.preempt)

    def to_dict(self, allocation: bool = False) -> dict:
        """JSON-ready form (``allocation=True`` adds the whole
        ``alloc.allocation/1`` document)."""
        from ..io import allocation_to_dict, placement_to_dict
        a = self.allocation
        out = {
            "round": self.round, "status": a.status.value, "value": a.value, "bound": a.bound,
            "start": [placement_to_dict(p) for p in self.start],
            "move": [dict(placement_to_dict(p), **{"from": placement_to_dict(
                self.moved_from[p.job], with_job=False)}) for p in self.move],
            "preempt": [placement_to_dict(p) for p in self.preempt],
            "unplaced": list(self.unplaced), "reasons": dict(self.reasons),
            "preempted_for": dict(self.preempted_for),
            "running": len(a.placements), "latency_s": round(self.latency_s, 6),
        }
        if allocation:
            out["allocation"] = allocation_to_dict(a)
        return out


@dataclass(frozen=True)
class Reconciled:
    """What [Session.reconcile][alloc.session.Session.reconcile] found and fixed.

    Attributes
    ----------
    started : tuple
        Jobs the session had waiting that run (now running where the scheduler says).
    moved : tuple
        Running jobs the scheduler has elsewhere (now placed as it says).
    stopped : tuple
        Jobs the session had running that the scheduler does not list (now waiting).
    """
    started: tuple = ()
    moved: tuple = ()
    stopped: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.started or self.moved or self.stopped)


__all__ = ["Reconciled", "RoundResult"]

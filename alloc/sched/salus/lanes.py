r"""Salus's GPU lanes: GPU memory shared between jobs.

A *lane* is a slice of GPU memory with its own stream of execution: jobs in
one lane run one iteration at a time, jobs in different lanes run at the
same time.  A job holds its persistent memory $P_j$ for its whole life and
needs its ephemeral memory $E_j$ only while one of its iterations runs, so
the jobs of a lane need

$$
\sum_{j \in \ell} P_j + \max_{j \in \ell} E_j \;\le\; S_\ell ,
$$

the lane's size, and the lanes together $\sum_\ell S_\ell \le M$, the
GPU's memory.  A job asks for a lane (Salus's lane manager, in our words):

1. if the GPU has $P_j + E_j$ free, a new lane of that size is opened for
   it (a lane of its own: the most concurrency);
2. otherwise it joins an existing lane where it fits (the condition above
   with it added), the fullest such lane first (best fit);
3. otherwise it waits.

A lane closes when its last job leaves and its memory is free again.

Units: MB.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError


@dataclass
class Lane:
    """One lane: its size and its jobs' ``(persistent, ephemeral)`` memory."""
    id: int
    size: float
    holders: dict[str, tuple[float, float]] = field(default_factory=dict)

    def need(self, extra: tuple[float, float] | None = None) -> float:
        """Memory its jobs need (with ``extra`` added)."""
        hs = list(self.holders.values()) + ([extra] if extra else [])
        return sum(p for p, _ in hs) + max((e for _, e in hs), default=0.0)

    def fits(self, p: float, e: float) -> bool:
        """Whether a job of ``(p, e)`` fits in it."""
        return self.need((p, e)) <= self.size + 1e-9


class LaneManager:
    """Lanes on one GPU of ``memory_mb`` (see the module notes).

    Examples
    --------
    >>> from alloc.sched.salus.lanes import LaneManager
    >>> lm = LaneManager(10.0)
    >>> lm.admit("a", 2.0, 4.0), lm.admit("b", 1.0, 3.0), lm.admit("c", 1.0, 2.0)
    (0, 1, None)
    >>> lm.release("a"); lm.admit("c", 1.0, 2.0)
    2
    """

    def __init__(self, memory_mb: float) -> None:
        if not memory_mb > 0:
            raise InputError(f"lanes: memory_mb: expected a number > 0, got {memory_mb!r}")
        self.memory = float(memory_mb)
        self.lanes: dict[int, Lane] = {}
        self.lane_of: dict[str, int] = {}
        self._next = 0

    @property
    def free(self) -> float:
        """GPU memory no lane holds."""
        return self.memory - sum(lane.size for lane in self.lanes.values())

    def admit(self, job: str, p: float, e: float, share: bool = True) -> int | None:
        """The lane ``job`` joins (opened if needed), or None when it must wait.

        Parameters
        ----------
        job : str
        p, e : float
            Its persistent and ephemeral memory.
        share : bool
            Allow joining an existing lane (step 2).
        """
        if job in self.lane_of:
            raise InputError(f"lanes: job {job!r} already holds a lane")
        if p + e > self.memory + 1e-9:
            raise InputError(f"lanes: job {job!r} needs {p + e:.0f} MB, the GPU has "
                             f"{self.memory:.0f}")
        if self.free >= p + e - 1e-9:
            lane = Lane(self._next, p + e)
            self._next += 1
            self.lanes[lane.id] = lane
        else:
            fit = [ln for ln in self.lanes.values() if share and ln.fits(p, e)]
            if not fit:
                return None
            lane = min(fit, key=lambda ln: (ln.size - ln.need((p, e)), ln.id))
        lane.holders[job] = (p, e)
        self.lane_of[job] = lane.id
        return lane.id

    def release(self, job: str) -> None:
        """``job`` leaves its lane (closed when empty)."""
        lid = self.lane_of.pop(job, None)
        if lid is None:
            return
        lane = self.lanes[lid]
        del lane.holders[job]
        if not lane.holders:
            del self.lanes[lid]

    def check(self) -> list[str]:
        """Every rule the lanes break, one line each (empty when sound)."""
        out = []
        if sum(ln.size for ln in self.lanes.values()) > self.memory + 1e-6:
            out.append("lanes hold more memory than the GPU has")
        for ln in self.lanes.values():
            if ln.need() > ln.size + 1e-6:
                out.append(f"lane {ln.id}: its jobs need {ln.need():.0f} MB > {ln.size:.0f}")
        return out


__all__ = ["Lane", "LaneManager"]

r"""Gandiva's time-slicing: weighted round-robin on one server (section 4.2.1).

The jobs homed on a server form *units*: a job alone, or the jobs packed on
one GPU.  A unit needs $n_u$ GPUs (a packed unit: 1) and has a priority
$p_u$, a weight $w_u$ and a virtual time $v_u$.

At every slice boundary (60 s by default) the server runs the units chosen
greedily in the order (priority highest first, virtual time lowest first,
arrival first) while their GPUs fit what the server has for time-sliced jobs.
Once a unit of priority $p$ does not fit, no unit of lower priority is
taken: a higher-priority job is never suspended to make room for a lower one.
Each unit that runs a slice advances its virtual time by $1 / w_u$, so
over a busy period every unit of one priority gets slices in proportion to
its weight (stride scheduling); a unit joining a server starts at the
smallest virtual time among the units already there, at the tail of the
round.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """What time-slicing schedules as one: a job, or the jobs packed on a GPU.

    Attributes
    ----------
    jobs : tuple of str
    need : int
        GPUs it holds when it runs.
    priority : int
    vt : float
        Virtual time (slices received over weight).
    seq : int
        Arrival order (the earliest member's).
    running : bool
        Every member holds its GPUs now.
    """
    jobs: tuple[str, ...]
    need: int
    priority: int
    vt: float
    seq: int
    running: bool

    @property
    def key(self) -> tuple:
        """The round-robin order: priority first, then virtual time, then arrival."""
        return (-self.priority, self.vt, self.seq)


def slice_choice(units, gpus: int) -> list[Unit]:
    """The units that run the next slice on a server with ``gpus`` GPUs for
    time-sliced jobs (see the module notes), in the round-robin order."""
    chosen: list[Unit] = []
    left = gpus
    floor = None
    for u in sorted(units, key=lambda x: x.key):
        if floor is not None and u.priority < floor:
            break
        if u.need <= left:
            chosen.append(u)
            left -= u.need
        elif floor is None:
            floor = u.priority
    return chosen


__all__ = ["Unit", "slice_choice"]

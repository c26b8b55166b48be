"""One round of a Synergy allocator on identical servers, for a simulator.

A round-based simulator re-places its runnable jobs on an empty cluster every
round.  Through `allocate()` that is a validation, a compiled problem and a
check per round; `FastRound` packs the same jobs on a `FastPacker` reused
from round to round (each job's CPU/memory options registered once) and gives
the same answer as the registered solver:

* ``proportional``: the GPU-only admission (jobs in order while their GPUs
  fit the cluster's), each admitted job at its request (option 0) on the
  feasible server with the fewest free GPUs, else spread;
* ``synergy-greedy``: every job in order at its best-case option, skipped
  when it does not fit (`alloc.solvers.synergy.tune`);
* ``synergy-tune``: the admission, then TUNE (best case, request, request
  after reverting peers to their capped option).

Equal means the same jobs run, each at the same CPU and memory on the same
number of servers; `tests/test_sim_fast_path.py` compares every round of
generated runs with `allocate()` for the three solvers.  The jobs are
whole-GPU jobs on servers of one GPU type, with no running job kept in place.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from ...deadline import Deadline
from ...model import MILLI
from ...problem import GridPoint
from .packers import FastPacker
from .tune import admit, greedy_core, tune_core

#: The solvers `FastRound` reproduces.
SOLVERS = ("proportional", "synergy-greedy", "synergy-tune")


class FastRound:
    """A reusable round of ``solver`` (one of `SOLVERS`) on servers with
    ``gpus`` GPUs, ``cpu`` milli-cores and ``mem`` MiB each.

    Examples
    --------
    >>> from alloc.problem import GridPoint
    >>> r = FastRound("synergy-tune", [8, 8], [24000, 24000], [512000, 512000])
    >>> opts = (GridPoint(3000, 64000, 1.0), GridPoint(6000, 64000, 1.2))
    >>> r.add_job(7, 1, opts)
    >>> r.examined([7])
    (7,)
    >>> stats = r.run((7,), lambda j: (1, 0), Deadline.never())
    >>> parts, option = r.placed()
    >>> parts[7], option[7]
    (((0, 1, 6000, 64000),), 1)
    """

    def __init__(self, solver: str, gpus: Sequence[int], cpu: Sequence[int],
                 mem: Sequence[int]):
        if solver not in SOLVERS:
            raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {solver!r}")
        self.solver = solver
        self.packer = FastPacker(gpus, cpu, mem)
        self._total = sum(gpus) * MILLI

    def add_job(self, j: int, n: int, opts: Sequence[GridPoint]) -> None:
        """Register job ``j``: ``n`` whole GPUs, its options (CPU milli-cores and
        memory MiB totals)."""
        self.packer.add_job(j, n, opts)

    def drop_job(self, j: int) -> None:
        """Forget job ``j`` (it finished)."""
        self.packer.opts.pop(j, None)

    def examined(self, order: Iterable[int]) -> tuple[int, ...]:
        """The jobs the round's answer depends on, in order: every job for
        ``synergy-greedy``, the GPU-admitted prefix otherwise.  Two rounds with
        the same examined jobs give the same answer."""
        if self.solver == "synergy-greedy":
            return tuple(order)
        return tuple(admit(self.packer, order, self._total))

    def run(self, order: Sequence[int], choices: Callable[[int], tuple[int, int]],
            deadline: Deadline) -> dict:
        """Pack ``order`` (the examined jobs, `examined`) on the empty cluster;
        ``choices(j)`` is job j's best-case and capped option
        (`alloc.solvers.synergy.job_choices`).  Returns TUNE's counters (empty
        for the other two); `placed` lists the answer."""
        P = self.packer
        P.reset()
        if self.solver == "proportional":
            greedy_core(P, order, lambda j: 0, deadline)
            return {}
        if self.solver == "synergy-greedy":
            greedy_core(P, order, lambda j: choices(j)[0], deadline)
            return {}
        both = {j: choices(j) for j in order}
        ideal = {j: c[0] for j, c in both.items()}
        capped = {j: c[1] for j, c in both.items()}
        return tune_core(P, order, ideal, capped, deadline=deadline)

    def placed(self) -> tuple[Mapping[int, tuple], Mapping[int, int]]:
        """The last run's placed jobs: their parts, each ``(server, GPUs, CPU
        milli-cores, memory MiB)``, and their options, by job (read-only views,
        valid until the next run)."""
        P = self.packer
        return P.parts, P.opt


__all__ = ["SOLVERS", "FastRound"]

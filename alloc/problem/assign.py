"""The index form a solver reads and writes: a job's CPU/memory points
([`GridPoint`][alloc.problem.GridPoint]), an assignment
([`Assign`][alloc.problem.Assign]: GPUs by global index with their milli-GPU
shares, CPU in milli-cores and memory in MiB per server index), what a solve
function returns ([`Solution`][alloc.problem.Solution]), and the two pieces
of arithmetic on them (`add_assign`, `split`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..model import Status


@dataclass(frozen=True)
class GridPoint:
    """A CPU/memory point of a job's profile grid that a solver may give it:
    totals for the whole job (milli-cores, MiB) and its grid speed ``base``
    (before type, span and scale factors); ``request`` marks the job's own
    request.  (Formerly `Option`, which also named a solver option.)

    Examples
    --------
    >>> from alloc.problem import GridPoint
    >>> GridPoint(cpu=4000, mem=8000, base=1.0, request=True).cpu
    4000
    """
    cpu: int
    mem: int
    base: float
    request: bool = False


@dataclass(frozen=True, slots=True)
class Assign:
    """A job's assignment in index form: GPUs ``(global index, milli)``, CPU /
    memory per server index and, aligned with ``gpus`` (or empty: none), the
    GPU memory and compute caps ``(mem, compute)`` of each share
    (`alloc.resources`).

    Examples
    --------
    >>> from alloc import Assign
    >>> a = Assign(gpus=((0, 1000), (1, 1000)), cpu=((0, 4000),), mem=((0, 8000),))
    >>> a.servers
    (0,)
    """
    gpus: tuple[tuple[int, int], ...] = ()
    cpu: tuple[tuple[int, int], ...] = ()
    mem: tuple[tuple[int, int], ...] = ()
    caps: tuple[tuple[int | None, int | None], ...] = ()

    @property
    def servers(self) -> tuple[int, ...]:
        """Server indices it uses, ascending."""
        return tuple(sorted({s for s, _ in self.cpu} | {s for s, _ in self.mem}))

    def same_as(self, other: "Assign | None") -> bool:
        """Same GPUs with the same shares and the same non-zero CPU and
        memory on the same servers: the index form of
        [Placement.same_as][alloc.model.Placement.same_as], so a running job
        whose assignment is not `same_as` its current one has moved.

        Examples
        --------
        >>> from alloc import Assign
        >>> Assign(cpu=((0, 500),)).same_as(Assign(cpu=((1, 500),)))
        False
        >>> Assign(cpu=((0, 500), (1, 0))).same_as(Assign(cpu=((0, 500),)))
        True
        """
        if other is None:
            return False
        if other is self:
            return True
        return (sorted(self.gpus) == sorted(other.gpus)
                and sorted(x for x in self.cpu if x[1]) == sorted(x for x in other.cpu if x[1])
                and sorted(x for x in self.mem if x[1]) == sorted(x for x in other.mem if x[1]))


@dataclass
class Solution:
    """What a solve function returns.

    Attributes
    ----------
    assign : dict of int to Assign
        Job index -> where the job runs, for every job the solver places.
        Pending jobs it leaves out stay unplaced.  Running jobs
        (`Problem.fixed`) need not be listed: unless the solver declares
        `migration` or `preemption`, `finish()` puts each back where it runs.
    status : Status
        `feasible` (default), or for an exact solver `optimal` (proven:
        `finish()` keeps it only when the value recomputed from the placement
        meets `bound`), `infeasible` (proven) or `unknown`.  A heuristic's
        `optimal` and `infeasible` become `feasible`.
    bound : float or None
        An upper bound of the objective over every feasible answer to the
        problem as given (exact solvers; None: no bound).
    preempted : tuple of int
        Indices of the running jobs it stopped (`preemption` capability).
    stats : dict
        Anything worth reporting (JSON values); `covers_instance` (bool) says
        that a solver which declares `restricts` proved its bound for the
        instance as given.

    Examples
    --------
    >>> from alloc import Assign, Solution
    >>> sol = Solution({0: Assign(gpus=((0, 1000),), cpu=((0, 1000),), mem=((0, 1000),))})
    >>> sol.status.value, sol.bound
    ('feasible', None)
    """
    assign: dict[int, Assign] = field(default_factory=dict)
    status: Status = Status.FEASIBLE
    bound: float | None = None
    preempted: tuple[int, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)


def add_assign(a: Assign, gpu: Any, cpu: Any, mem: Any, sign: int = 1) -> None:
    """Add (``sign=1``) or take (``-1``) an assignment's milli-GPU, CPU and
    memory to / from free-capacity arrays indexed by GPU and server."""
    for g, m in a.gpus:
        gpu[g] += sign * m
    for s, v in a.cpu:
        cpu[s] += sign * v
    for s, v in a.mem:
        mem[s] += sign * v


def split(total: int, counts: Sequence[int]) -> list[int]:
    """Split ``total`` over parts in proportion to ``counts`` (largest
    remainder; parts sum to ``total``)."""
    n = sum(counts)
    if n == 0:
        return [total] + [0] * (len(counts) - 1)
    raw = [total * c // n for c in counts]
    rest = total - sum(raw)
    order = sorted(range(len(counts)), key=lambda i: -((total * counts[i]) % n))
    for i in order[:rest]:
        raw[i] += 1
    return raw

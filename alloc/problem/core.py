"""The compiled problem: [`Problem`][alloc.problem.Problem] assembled from
its parts (the index, the live state, the ranks, the evaluation and the
placements, a module each) and
[`compile_problem`][alloc.problem.compile_problem].
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any, Sequence

from ..arrays import cluster_arrays
from ..memo import keep
from ..model import Cluster, Job
from ..objectives import Objective, get_objective
from .assign import Assign, add_assign
from .build import Building
from .ranks import order_ranks


class Problem(Building):
    """Integer-indexed view of (cluster, jobs, objective) -- see the module notes.

    What a solve function receives.  Servers are `s = 0..S-1` in the
    cluster's order, GPUs `g = 0..G-1` server by server (GPU `k` of server
    `s` is `gpu_first[s] + k`), jobs `j = 0..J-1` in input order.  CPU in
    milli-cores, memory in MiB, GPU shares in milli-GPU (1000 = one GPU).
    Treat every attribute as read-only: copy an array before changing it.

    Parameters
    ----------
    cluster : Cluster
    jobs : sequence of Job
        Validated jobs (profiles resolved).
    objective : str or Objective
    name : str
        The instance's name (reported in the allocation).
    order : sequence of str, optional
        Job ids, highest rank first (an explicit job order).
    max_moves : int or None
        Running jobs a solver may move (0: none; None: no limit when
        `move_cost` is given, else none).
    move_cost : float or None
        Objective units subtracted per move (None: moves are free within the budget).
    preempt : {None, "order"}
        Who may stop a running job: the tenancy rules (None) or the order.
    preempt_packed : bool
        Under ``preempt="order"``: a gang that needs victims is placed on one
        server when any server can hold it so, before it is spread over its
        victims' servers ([alloc.preempt][]).
    pinned : iterable of str
        Running jobs no solver may move or stop (placed by the core this call).
    carry : Carry, optional
        What a scheduler loop keeps between rounds (`alloc.carry`): the jobs
        that are the very same objects as in the last problem compiled with
        it, on the very same cluster, are taken as they were, and the
        capacities the running jobs leave follow from the old ones and the
        difference (`changes`).

    Attributes
    ----------
    cluster : Cluster
        The cluster (servers, levels, tenants).
    jobs : tuple of Job
        Every job, pending and running, in input order.
    objective : Objective
        What to maximise; use `coef`, `value_of`, `upper_coef`.
    name : str
        The instance's name.
    S, G, J : int
        Numbers of servers, GPUs and jobs.
    srv_cpu, srv_mem, srv_gpus : numpy.ndarray of int64
        Per server: CPU, memory and GPUs in all (running jobs included).
    free_cpu, free_mem : numpy.ndarray of int64
        Per server: CPU and memory left after the running jobs.
    gpu_free : numpy.ndarray of int64
        Per GPU: milli-GPU left after the running jobs.
    types : tuple of str
        The cluster's GPU types; `srv_type[s]` indexes it (-1: no GPUs).
    gpu_first, gpu_server : numpy.ndarray of int64
        Index of each server's first GPU; the server of each GPU.
    levels : tuple of str
        Hierarchy levels, outermost first (`rack`, `server`, `socket`,
        `switch`, `gpu`).
    domain : dict of str to numpy.ndarray
        Per level, the id of the node above each GPU: a job whose
        `locality` is `L` needs GPUs of one `domain[L]` value.
    classes : list of list of int
        Groups of identical servers; `server_class[s]` is the group of `s`.
    job_index : dict of str to int
        Job id -> job index.
    options : list of tuple of GridPoint
        Per job, its CPU/memory choices: option 0 is the request; the others
        are the grid points of its profile (for solvers with `grid`).
    pending : tuple of int
        The jobs to place: not running and placeable on this cluster now.
    running, fixed : tuple of int, dict of int to Assign
        The running jobs and where each runs now.
    reasons : dict of int to str
        Jobs that cannot be placed on this cluster now, with why (neither
        pending nor running; they stay unplaced).
    rank : numpy.ndarray of int64
        Each job's rank, 0 first: the caller's order, else priority (highest
        first) then input order; `job_order` sorts by it.
    explicit_order : bool
        True when the caller gave an order.
    prio_key : list of int
        The sort key behind `rank` (smaller first).
    max_moves : int or None
        Running jobs that may move (None: any number); `moves_allowed`.
    move_cost : float or None
        Objective units charged per move.
    carry : Carry or None
        The carry it was compiled with (solvers keep their state in it).
    stamp : int
        Unique per compiled problem (solver states name the problem they reflect).
    changes : Changes or None
        With a carry whose last problem is on this cluster: the running jobs
        gone and new since that problem (`alloc.carry.Changes`); else None.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.problem import compile_problem
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> p = compile_problem(cluster, [Job("a", 1, cpu=1000, mem=1000)])
    >>> p.S, p.G, p.J, list(p.pending)
    (1, 2, 1, [0])
    """

    def __init__(self, cluster: Cluster, jobs: Sequence[Job], objective: str | Objective = "throughput",
                 name: str = "", *, order: Sequence[str] | None = None,
                 max_moves: int | None = None, move_cost: float | None = None,
                 preempt: str | None = None, pinned: Sequence[str] = (), carry: Any = None,
                 preempt_packed: bool = False, needs: frozenset[str] | None = None) -> None:
        from ..carry import next_stamp
        if needs is not None:          # the call's (`alloc.call.Call.needs`), computed once
            self.__dict__["needs"] = needs - {"order-preemption"}
        self.cluster = cluster
        self.jobs = tuple(jobs)
        self.objective = get_objective(objective)
        self.name = name
        arr = cluster_arrays(cluster)
        self.arrays = arr
        self.S, self.G, self.J = arr.S, arr.G, len(self.jobs)
        self.srv_cpu, self.srv_mem, self.srv_gpus = arr.srv_cpu, arr.srv_mem, arr.srv_gpus
        self.types, self.srv_type = arr.types, arr.srv_type
        self.gpu_first, self.gpu_server = arr.gpu_first, arr.gpu_server
        self.levels, self.domain = cluster.levels, arr.domain
        self.classes, self.server_class = arr.classes, arr.server_class
        self.job_index = {j.id: i for i, j in enumerate(self.jobs)}
        self.request_option = [0] * self.J
        #: running jobs that may move (None: any number)
        self.max_moves = (None if move_cost is not None else 0) if max_moves is None \
            else int(max_moves)
        self.move_cost = move_cost
        self.preempt = preempt
        #: the order is a promise (``preempt="order"``; the reduced problem keeps it)
        self.keeps_order = preempt == "order"
        #: under ``preempt="order"``, a gang that needs victims on one server first
        self.preempt_packed = bool(preempt_packed)
        #: ``{job id: position}`` of the jobs the caller's order lists (None: no order)
        self.order_rank = order_ranks(order)
        self.carry, self.stamp = carry, next_stamp()
        previous = carry.previous(cluster) if carry is not None else None
        self._set_rank(order)
        self._set_live_state(previous)
        idx = self.job_index
        #: indices of running jobs no solver may move or stop
        self.pinned = frozenset(idx[j] for j in pinned)
        if carry is not None:
            carry.compiled(self)

    def reduced(self, drop: Collection[int], pin: dict[int, Assign],
                keep_priority: bool = False) -> "Problem":
        """This problem without the jobs ``drop`` (indices), with the jobs of
        ``pin`` (index -> `Assign`) running there and pinned, priorities set
        aside (the order ranks the jobs) and no preemption rule -- what
        [alloc.preempt][] hands the solver; with ``keep_priority`` the
        priorities and the ranks stay as they are (what [alloc.guarantee][]
        hands the solver: the tenancy rules still apply to the rest).  Built
        from this problem's arrays, not compiled again.

        It has a stamp of its own; with a carry, its `changes` tell its
        running jobs (the victims gone, the pinned ones new) against the
        problem this one's are told against, and the carry notes the
        reduction, so that the next compile tells its changes against the
        problem the solver saw (`alloc.carry.Carry.compiled`)."""
        from dataclasses import replace
        from ..carry import next_stamp, reduced_changes
        kept = [j for j in range(self.J) if j not in drop]
        new = {j: k for k, j in enumerate(kept)}
        out = object.__new__(Problem)
        out.__dict__.update({k: v for k, v in self.__dict__.items()
                             if k not in ("type_ok", "allowed", "preemption_possible",
                                          "needs")})
        jobs = []
        for j in kept:
            job = self.jobs[j]
            if j in pin:
                cur = self.placement(j, pin[j])
                keep(cur, "assign", (self.cluster,), pin[j])
                job = replace(job, current=cur, priority=job.priority if keep_priority else 0)
            elif job.priority and not keep_priority:
                job = replace(job, priority=0)
            jobs.append(job)
        out.jobs, out.J = tuple(jobs), len(jobs)
        out.job_index = {job.id: k for k, job in enumerate(jobs)}
        out.options = [self.options[j] for j in kept]
        out.request_option = [self.request_option[j] for j in kept]
        out.prio_key = [self.prio_key[j] for j in kept]
        out.rank = self.rank[kept]
        out.preempt = None
        out.explicit_order = self.explicit_order if keep_priority else True
        out.fixed = {new[j]: a for j, a in self.fixed.items() if j not in drop}
        out.fixed.update((new[j], a) for j, a in pin.items())
        out.reasons = {new[j]: r for j, r in self.reasons.items() if j not in drop}
        out.running = tuple(sorted(out.fixed))
        out.pending = tuple(new[j] for j in self.pending if j not in pin and j not in drop)
        out.free_cpu, out.free_mem = self.free_cpu.copy(), self.free_mem.copy()
        out.gpu_free = self.gpu_free.copy()
        for j in drop:
            if j in self.fixed:
                add_assign(self.fixed[j], out.gpu_free, out.free_cpu, out.free_mem)
        for a in pin.values():
            add_assign(a, out.gpu_free, out.free_cpu, out.free_mem, -1)
        out.pinned = frozenset(new[j] for j in pin) | frozenset(
            new[j] for j in self.pinned if j not in drop)
        out.stamp = next_stamp()
        out.changes = None if self.changes is None else \
            reduced_changes(self.changes, self, drop, pin, new)
        if self.carry is not None:
            self.carry.reduced(self, out, new, pin)
        return out

    @cached_property
    def needs(self) -> frozenset[str]:
        """The capabilities a solver needs for this problem's input
        ([`needed_capabilities`][alloc.needs.needed_capabilities], the call's
        preemption rule aside: the core applies it): the call's when it was
        compiled from one, else computed once here."""
        from ..needs import needed_capabilities
        return needed_capabilities(self.cluster, self.jobs)

    #: seconds the call keeps back from the solver for the answer's placements
    #: and the final check (`alloc.solve.check_reserve`), set by the core
    #: before the solver runs (0 for a problem solved outside the core)
    reserve_s: float = 0.0
    #: under ``preempt="order"``, the room the order's walk set aside for
    #: pending jobs that fit without stopping anyone (job index -> `Assign`,
    #: `alloc.preempt.Plan`), set on the problem the solver gets; empty else
    reserved: Mapping[int, Assign] = MappingProxyType({})


def compile_problem(cluster: Cluster, jobs: Sequence[Job], objective: str | Objective = "throughput",
                    name: str = "", **kw: Any) -> Problem:
    """The [`Problem`][alloc.problem.Problem] of validated input (see
[`Problem`][alloc.problem.Problem])."""
    return Problem(cluster, jobs, objective, name, **kw)

r"""Safety properties of one allocation, as checkers: each returns a list of
readable lines, one per breach (empty: the property holds).

Notation: ``P`` the placements, ``J`` the jobs, ``cur(j)`` the placement a
running job ``j`` has now (``Job.current``), ``rank(j)`` its rank (`ranks`:
the caller's order, else priority then input order; 0 first).

* `overcommit_problems` -- no over-commitment;
* `stability_problems` -- running jobs stay where they run unless the call
  allows otherwise;
* `sharing_safety_problems` -- HiveD's sharing safety;
* `order_problems` -- the caller's order is kept: no job is displaced by one
  ranked below it;
* `idle_room_problems` -- no job is left out that fits in what is free
  (the necessary condition of Pareto efficiency for indivisible jobs).

The last two ask whether a job *fits* somewhere: they use
[`place_one`][alloc.testing.room.place_one], which is sound but not complete,
so they report only breaches they can show (with a witness placement).
A job that would run at throughput 0 there (its request below every point of
its profile's grid) is not counted: a solver gains nothing by placing it.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..check import capacity_problems, live_state_problems
from ..model import Allocation, Cluster, Job
from ..objectives import throughput
from ..resources import capacity_problems as gpu_capacity_problems
from .room import place_one, room_left
from .users import Owner


def ranks(jobs: Sequence[Job], order: Sequence[str] | None = None) -> dict[str, int]:
    """Each job's rank, 0 first, as the solvers read it
    (`alloc.problem.Problem.prio_key`): with the caller's ``order``, the
    listed ids in that order and then the others by priority (highest first)
    and input order, every rank distinct; without one, the priority alone
    (jobs of equal priority share a rank, and a solver may take them in any
    order -- largest first, say).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.testing import ranks
    >>> jobs = [Job("a"), Job("b", priority=5), Job("c")]
    >>> ranks(jobs), ranks(jobs, order=["c"])
    ({'a': 1, 'b': 0, 'c': 1}, {'a': 2, 'b': 1, 'c': 0})
    """
    if order is None:
        levels = sorted({-j.priority for j in jobs})
        return {j.id: levels.index(-j.priority) for j in jobs}
    pos = {jid: k for k, jid in enumerate(order)}
    base = sorted(range(len(jobs)), key=lambda i: (-jobs[i].priority, i))
    listed = sorted((i for i in base if jobs[i].id in pos), key=lambda i: pos[jobs[i].id])
    ranked = listed + [i for i in base if jobs[i].id not in pos]
    rank = {i: k for k, i in enumerate(ranked)}
    return {j.id: rank[i] for i, j in enumerate(jobs)}


def overcommit_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation
                        ) -> list[str]:
    r"""No over-commitment.

    For every server ``s`` and GPU ``g``

    $$
    \sum_{p \in P} p.\mathrm{cpu}_s \le C_s, \quad
    \sum_{p \in P} p.\mathrm{mem}_s \le M_s, \quad
    \sum_{p \in P} p.\mathrm{milli}_g \le 1000,
    $$

    $$
    \sum_{p \in P} \mathrm{mem}(p, g) \le \mathrm{cap}_g, \quad
    \sum_{p \in P} \mathrm{comp}(p, g) \le 1000
    $$

    (GPU memory and compute of each share as `alloc.resources` defines
    them).

    Examples
    --------
    >>> from alloc import Allocation, Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.testing import overcommit_problems
    >>> c = Cluster((Server("s0", cpu=4000, mem=8000, gpus=1, gpu_type="V100"),))
    >>> jobs = [Job("a", 1, cpu=3000, mem=1000), Job("b", 1, cpu=3000, mem=1000)]
    >>> both = tuple(Placement(j.id, (GpuShare("s0/gpu0", 1000),), {"s0": 3000}, {"s0": 1000})
    ...              for j in jobs)
    >>> overcommit_problems(c, jobs, Allocation(both))
    ['GPU s0/gpu0: 2000 milli allocated, capacity 1000', 'server s0: CPU 6000 allocated, capacity 4000']
    """
    caps = allocation.stats.get("gpu_mem_capacity") if allocation.stats else None
    return capacity_problems(cluster, allocation.placements) + gpu_capacity_problems(
        cluster, jobs, allocation.placements, caps if isinstance(caps, dict) else None)


def stability_problems(jobs: Sequence[Job], allocation: Allocation, *,
                       max_moves: int | None = 0, move_cost: float | None = None) -> list[str]:
    r"""Running-job stability.

    With ``R`` the running jobs, ``moved = {j in R : P(j) != cur(j)}`` and
    ``stopped = {j in R : j unplaced}``:

    $$
    \mathrm{moved} = \text{allocation.moved}, \quad
    |\mathrm{moved}| \le \text{max\_moves}, \quad
    \mathrm{stopped} = \text{allocation.preempted},
    $$

    and every stopped job ``v`` is outranked by some job placed now that was
    not already running there (`alloc.tenancy.outranks`).  ``max_moves``
    is the call's budget: 0 (the default) when the call allows no move,
    ``None`` for any number (a ``move_cost`` without ``max_moves``).

    Preemption by the caller's order is a separate rule
    (``allocate(..., preempt="order")``); pass the matching ``max_moves``
    and check its victims with the library's own check.

    Examples
    --------
    >>> from alloc import Allocation, GpuShare, Job, Placement
    >>> from alloc.testing import stability_problems
    >>> here = Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 1000})
    >>> there = Placement("a", (GpuShare("s0/gpu1", 1000),), {"s0": 1000}, {"s0": 1000})
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000, current=here)]
    >>> stability_problems(jobs, Allocation((there,), moved=("a",)))
    ["1 running job(s) moved, the call allows 0 (first: 'a')"]
    """
    if max_moves is None and move_cost is None:
        max_moves = 0
    return live_state_problems(jobs, allocation, max_moves)


def sharing_safety_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation
                            ) -> list[str]:
    r"""HiveD's sharing safety (Zhao et al., OSDI'20, section 3.2).

    There is a binding ``B`` of the tenants' virtual cells to pairwise
    disjoint physical cells such that every GPU a guaranteed job of tenant
    ``v`` holds lies in a cell bound to ``v``, and the cells left unbound can
    still be bound: per GPU type, top-down over the levels,

    $$
    ns_{top} = free_{top} - unused_{top}, \qquad
    ns_l = ns_{l+1} \cdot fanout_{l+1} + free_l - unused_l \ \ge 0,
    $$

    with ``free_l`` the maximal physical cells at level ``l`` holding no
    bound GPU and ``unused_l`` the virtual cells not yet bound
    (`alloc.tenancy.safety`).  Also: a guaranteed job runs only on GPU
    types its tenant has cells of, its tenant's guaranteed jobs hold at most
    the tenant's quota, and guaranteed jobs of two tenants never share a GPU.

    Examples
    --------
    >>> from alloc import Allocation, Cell, Cluster, GpuShare, Job, Placement, Server, Tenant
    >>> from alloc.testing import sharing_safety_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("gpu", 1),))})
    >>> j = Job("x", 2, cpu=100, mem=100, tenant="a", guaranteed=True)
    >>> p = Placement("x", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
    ...               {"s0": 100}, {"s0": 100})
    >>> sharing_safety_problems(c, [j], Allocation((p,)))
    ["tenant 'a': guaranteed jobs hold 2 V100 GPUs, its cells guarantee 1"]
    """
    from ..tenancy import tenancy_violations
    return tenancy_violations(cluster, jobs, allocation)


def _pending(jobs: Sequence[Job], allocation: Allocation) -> list[Job]:
    """Jobs that were not running, are unplaced and could be placed on this
    cluster at all (no reason given), not guaranteed."""
    placed = {p.job for p in allocation.placements}
    return [j for j in jobs if j.current is None and j.id not in placed
            and j.id not in allocation.reasons and not j.guaranteed]


def _witness(cluster: Cluster, x: Job, room, spread: bool) -> str | None:
    """Where ``x`` fits in ``room`` at a throughput above 0 (GPU ids, or the
    server of a CPU-only job), or None."""
    w = place_one(cluster, x, room, spread=spread)
    if w is None or throughput(cluster, x, [g.gpu for g in w.gpus], x.cpu, x.mem) <= 0:
        return None
    return ", ".join(g.gpu for g in w.gpus) or next(iter(w.cpu))


def order_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation,
                   order: Sequence[str] | None = None, *, owner: Owner | None = None,
                   spread: bool = True,
                   may_preempt: Callable[[Job, Job], bool] | None = None) -> list[str]:
    r"""Order-keeping: no job is displaced by jobs ranked below it.

    For every pending job ``x`` left unplaced, with ``H(x)`` the placements
    of the running jobs, of the jobs ranked at or above ``x`` (``rank(j) <=
    rank(x)``) and, for an ``x`` that is not guaranteed, of the guaranteed
    jobs (under tenancy a guaranteed job comes first: it may even preempt
    ``x``),

    $$
    x \text{ does not fit in the room } H(x) \text{ leaves.}
    $$

    Otherwise only jobs ranked below ``x`` (``rank(j) > rank(x)``) hold the
    room it needed.  (A job that fits in the room left by *every* placement
    is not displaced but left out: `idle_room_problems` reports it.)  A
    solver that places in rank order and places each job where it fits keeps
    this; an exact solver, which maximises its objective, need not.

    Parameters
    ----------
    cluster, jobs, allocation
        The input and the answer.
    order : sequence of str, optional
        The caller's order (`ranks`).
    owner : Owner, optional
        Keep the order *within each user* only: jobs of other users count in
        ``H(x)`` whatever their rank (a fair-share solver such as `drf`
        orders users by share, and each user's jobs by rank).
    spread : bool
        The solver may spread a job over servers (its ``spread`` capability).
    may_preempt : callable, optional
        ``may_preempt(x, r)``: x may stop running job r (preemption by the
        caller's order): such running jobs do not count in ``H(x)``.  The hook
        for ``allocate(..., preempt="order")``; None (default): running jobs
        always hold their room.

    Returns
    -------
    list of str
        One line per displaced job, naming where it fits.

    Examples
    --------
    >>> from alloc import Allocation, Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.testing import order_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 1, "V100"),))
    >>> jobs = [Job("first", 1, cpu=100, mem=100), Job("second", 1, cpu=100, mem=100)]
    >>> p = Placement("second", (GpuShare("s0/gpu0", 1000),), {"s0": 100}, {"s0": 100})
    >>> order_problems(c, jobs, Allocation((p,), unplaced=("first",)), order=["first", "second"])
    ["job 'first' (rank 0) is unplaced but fits in the room that running jobs and jobs ranked at or above it leave (on s0/gpu0), held by 'second' ranked below it"]
    """
    rank = ranks(jobs, order)
    by_id = {j.id: j for j in jobs}
    everything = room_left(cluster, jobs, allocation.placements)
    out = []
    for x in _pending(jobs, allocation):
        if _witness(cluster, x, everything, spread) is not None:
            continue                     # room is free: idle_room_problems' case
        keep, below = [], []
        for p in allocation.placements:
            j = by_id.get(p.job)
            if j is None:
                continue
            runs = j.current is not None and p.same_as(j.current)
            if runs and not (may_preempt and may_preempt(x, j)):
                keep.append(p)
            elif rank[j.id] <= rank[x.id] or (j.guaranteed and not x.guaranteed) \
                    or (owner is not None and owner(j) != owner(x)):
                keep.append(p)
            else:
                below.append(j.id)
        where = _witness(cluster, x, room_left(cluster, jobs, keep), spread)
        if where is not None:
            out.append(f"job {x.id!r} (rank {rank[x.id]}) is unplaced but fits in the room "
                       f"that running jobs and jobs ranked at or above it leave (on {where}), "
                       f"held by " + ", ".join(map(repr, below[:3])) + " ranked below it")
    return out


def idle_room_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
                       spread: bool = True) -> list[str]:
    r"""No job is left out that fits in what is free.

    For every pending job ``x`` left unplaced,

    $$
    x \text{ does not fit in the room } P \text{ leaves.}
    $$

    If it did, placing it would make its owner better off and nobody worse:
    the allocation would not be Pareto efficient.  (Full Pareto efficiency
    of indivisible placements -- could any repacking raise someone without
    lowering anyone? -- is a hard combinatorial question; this is its
    necessary condition, the relaxed form for placements.)  A solver
    maximising ``throughput`` may leave out a job that would run at
    throughput 0.

    Examples
    --------
    >>> from alloc import Allocation, Cluster, Job, Server
    >>> from alloc.testing import idle_room_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 1, "V100"),))
    >>> idle_room_problems(c, [Job("a", 1, cpu=100, mem=100)], Allocation(unplaced=("a",)))
    ["job 'a' is unplaced but fits in the room left (on s0/gpu0)"]
    """
    room = room_left(cluster, jobs, allocation.placements)
    out = []
    for x in _pending(jobs, allocation):
        where = _witness(cluster, x, room, spread)
        if where is not None:
            out.append(f"job {x.id!r} is unplaced but fits in the room left (on {where})")
    return out


__all__ = ["idle_room_problems", "order_problems", "overcommit_problems", "ranks",
           "sharing_safety_problems", "stability_problems"]

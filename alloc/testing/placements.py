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

from typing import Callable, Collection, Sequence

from ..check import capacity_problems, live_state_problems, placement_problems
from ..model import Allocation, Cluster, GpuShare, Job, Placement
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


def _placeable(cluster: Cluster, job: Job) -> bool:
    """The job could be placed on this cluster at all (the compile step's
    test: a job that cannot waits with that reason)."""
    from ..problem import placeable_reason
    return placeable_reason(cluster, job) is None


def _pending(jobs: Sequence[Job], allocation: Allocation, cluster: Cluster | None = None
             ) -> list[Job]:
    """Jobs that were not running, are unplaced and could be placed on this
    cluster at all, not guaranteed (without ``cluster``: those without a
    reason)."""
    placed = {p.job for p in allocation.placements}
    return [j for j in jobs if j.current is None and j.id not in placed and not j.guaranteed
            and (_placeable(cluster, j) if cluster is not None
                 else j.id not in allocation.reasons)]


def reason_problems(jobs: Sequence[Job], allocation: Allocation) -> list[str]:
    r"""Every waiting job says why: for every job left unplaced,

    $$
    \mathrm{reasons}(x) \ne \text{""}
    $$

    (the instance format's promise; `alloc.waiting`).

    Examples
    --------
    >>> from alloc import Allocation, Job
    >>> from alloc.testing import reason_problems
    >>> reason_problems([Job("a", 1, cpu=1, mem=1)], Allocation(unplaced=("a",)))
    ["job 'a' waits without a reason"]
    """
    placed = {p.job for p in allocation.placements}
    return [f"job {j.id!r} waits without a reason" for j in jobs
            if j.id not in placed and not allocation.reasons.get(j.id)]


def guarantee_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
                       deadline: float = 5.0, order: Sequence[str] | None = None,
                       max_moves: int | None = 0) -> list[str]:
    r"""A tenant's guarantee is served (HiveD, Zhao et al., OSDI'20, section 3).

    For every guaranteed job ``x`` of tenant ``v`` left unplaced (waiting,
    or stopped) that could be placed on this cluster at all, with ``K(x)``
    the placements of every guaranteed job (the opportunistic ones it may
    stop, `alloc.tenancy.outranks`) and ``R(x)`` the GPUs reserved for
    guaranteed jobs of ``v`` ranked at or above ``x`` --

    $$
    x \text{ does not fit in the room } K(x) \text{ and } R(x)
    \text{ leave inside } v \text{'s cells,}
    $$

    (its GPUs all in cells a binding of every tenant's cells gives ``v``,
    sharing safety kept: `alloc.tenancy.infer_binding`), and its reason
    names the tenant whose cells are full.  (GPUs that a job it may not stop
    shares are not offered: sound, not complete.)  Otherwise a guaranteed job
    waits while its tenant's cells have room for it -- at the cost of
    opportunistic work, which the guarantee allows.  (HiveD also lets a
    guaranteed job stop its tenant's guaranteed jobs of lower priority; the
    promise checked here is the one every tenancy solver keeps.)

    ``R(x)``: the answer's ``stats["reserved"]`` (job id -> GPU ids), as
    AntMan's rule 4 keeps them (Xiao et al., OSDI'20, section 3.3: a gang
    that does not fit reserves GPUs, which no other guaranteed job takes, so
    that the jobs behind it do not starve it): the GPUs of each entry for a
    guaranteed job ``y`` of ``v``, unplaced, with ``rank(y) <= rank(x)``
    (`ranks`) and no more GPUs listed than ``y`` asks.  Such room serves
    ``v``'s guarantee to a job ahead of ``x``; any other reservation (for
    another tenant's job, one ranked below ``x``, one placed, or larger
    than its job) holds nothing here, and a solver that reports none is
    checked as without this term.

    A running guaranteed job the answer stopped when the call allows no
    further move (``max_moves`` reached; None: moves unlimited) could only
    have been kept where it runs: its witness is its own GPUs (a start
    elsewhere would be a move).

    The room is counted in cells, as HiveD's buddy rule does: ``x`` and
    every guaranteed job of ``v`` that stays each lie inside one of ``v``'s
    bound cells (two 1-GPU cells are no room for a 2-GPU job).

    The witness search is sound, not complete: one server per job (no
    spread), its request's CPU and memory, its fewest GPUs, GPUs held only
    by jobs it may stop, the consolidated choice of each server first inside
    the tenant's bound cells, the binding the search finds.  A breach
    reported is a real one.

    Parameters
    ----------
    cluster, jobs, allocation
        The input and the answer.
    deadline : float
        Seconds each binding search may take.
    order : sequence of str, optional
        The caller's order, which ranks the jobs (`ranks`).
    max_moves : int or None
        The running jobs the call lets move (as in `alloc.violations`).

    Returns
    -------
    list of str
        One line per guaranteed job left waiting with room in its cells (with
        where), or without a reason naming its tenant.

    Examples
    --------
    >>> from alloc import Allocation, Cell, Cluster, GpuShare, Job, Placement, Server, Tenant
    >>> from alloc.testing import guarantee_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> opp = Placement("o", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
    ...                 {"s0": 100}, {"s0": 100})
    >>> jobs = [Job("o", 2, cpu=100, mem=100, current=opp),
    ...         Job("g", 2, cpu=100, mem=100, tenant="a", guaranteed=True)]
    >>> guarantee_problems(c, jobs, Allocation((opp,), unplaced=("g",)))
    ["guaranteed job 'g' of tenant 'a' waits though its tenant's cells have room for it (on s0/gpu0, s0/gpu1; held by 'o', which it may stop)", "guaranteed job 'g' waits without a reason naming tenant 'a'"]
    """
    from ..validate import check_call_settings
    check_call_settings(0, max_moves, None)         # the call's max_moves, as allocate reads it
    if not cluster.tenants:
        return []
    from ..deadline import Deadline
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in allocation.placements}
    rank = ranks(jobs, order)
    out = []
    for x in jobs:
        if not x.guaranteed or x.id in placed or x.tenant not in cluster.tenants \
                or not _placeable(cluster, x):
            continue
        ahead = _reserved_ahead(by_id, placed, rank, allocation.stats, x)
        stay = None if x.current is None or max_moves is None \
            or len(allocation.moved) < max_moves else {g.gpu for g in x.current.gpus}
        where = _guarantee_witness(cluster, by_id, placed, x, Deadline.after(deadline), ahead,
                                   stay)
        if where is not None:
            gpus, stop = where
            out.append(f"guaranteed job {x.id!r} of tenant {x.tenant!r} waits though its "
                       f"tenant's cells have room for it (on {', '.join(gpus)}"
                       + (f"; held by {', '.join(map(repr, stop[:3]))}, which it may stop"
                          if stop else "") + ")")
        why = allocation.reasons.get(x.id, "")
        if repr(x.tenant) not in why and f"tenant {x.tenant}" not in why:
            out.append(f"guaranteed job {x.id!r} waits without a reason naming tenant "
                       f"{x.tenant!r}")
    return out


def _reserved_ahead(by_id, placed, rank: dict[str, int], stats, x: Job) -> set[str]:
    """``R(x)`` of `guarantee_problems`: the GPU ids ``stats["reserved"]``
    keeps for unplaced guaranteed jobs of ``x``'s tenant ranked at or above
    it, each entry no larger than its job."""
    held = stats.get("reserved") if stats else None
    out: set[str] = set()
    if not isinstance(held, dict):
        return out
    for jid, gpus in held.items():
        y = by_id.get(jid)
        if y is None or y is x or not y.guaranteed or y.tenant != x.tenant or jid in placed \
                or rank[jid] > rank[x.id] or len(set(gpus)) > y.gpus:
            continue
        out.update(gpus)
    return out


def _guarantee_witness(cluster: Cluster, by_id, placed, x: Job, deadline,
                       reserved: Collection[str] = (), stay: Collection[str] | None = None):
    """``(GPU ids, the jobs on them it would stop)`` where guaranteed job
    ``x`` fits its tenant's cells off the GPUs ``reserved`` (and on the
    GPUs ``stay`` only, when given; see `guarantee_problems`), or None."""
    from collections import defaultdict
    from ..tenancy import cell_tree, check_binding, guaranteed_usage, infer_binding, quotas
    from ..resources import gpu_mem_caps, share_mem
    v = x.tenant or ""
    tree = cell_tree(cluster)
    q = quotas(cluster).get(v, {})
    types = {t for (t, _), k in q.items() if k and x.allows(t)}
    n = x.min_gpus if x.elastic and x.min_gpus is not None else x.gpus
    if not types or n == 0:
        return None

    def may_stop(j: Job) -> bool:
        return not j.guaranteed
    keep = [p for jid, p in placed.items() if jid in by_id and not may_stop(by_id[jid])]
    stoppable = {jid for jid in placed if jid in by_id and may_stop(by_id[jid])}
    kept_jobs = [by_id[p.job] for p in keep]
    used = guaranteed_usage(cluster, kept_jobs, keep)
    gidx = cluster.gpu_index
    held_milli: dict[str, int] = defaultdict(int)
    cpu: dict[str, int] = defaultdict(int)
    mem: dict[str, int] = defaultdict(int)
    for p in keep:
        for g in p.gpus:
            held_milli[g.gpu] += g.milli or 1        # an opportunistic share kept holds memory
        for sid, val in p.cpu.items():
            cpu[sid] += val
        for sid, val in p.mem.items():
            mem[sid] += val
    base = infer_binding(cluster, used, deadline=deadline)
    if base is None:
        return None
    # the GPUs of each guaranteed job of the tenant that stays
    mine_jobs = [{gidx[g.gpu] for g in p.gpus if g.gpu in gidx} for p in keep
                 if by_id[p.job].tenant == v]
    mine = {g for nd in base.get(v, ()) for g in tree.gpus[nd]}
    caps = gpu_mem_caps(cluster)
    inner = x.locality if x.locality in ("socket", "switch") else None
    for s in cluster.servers:
        if not s.gpus or s.gpu_type not in types or n > s.gpus:
            continue
        if cpu[s.id] + x.cpu > s.cpu or mem[s.id] + x.mem > s.mem:
            continue
        free = [g for g in s.gpu_ids() if not held_milli[g] and g not in reserved
                and (stay is None or g in stay)
                and share_mem(x, GpuShare(g, x.gpu_milli), caps[gidx[g]]) <= caps[gidx[g]]]
        groups: dict[str, list[str]] = defaultdict(list)
        for g in sorted(free, key=lambda g: (gidx[g] not in mine, gidx[g])):
            k = int(g.rsplit("gpu", 1)[1])
            groups[s.gpu_domain(k, inner) if inner else s.id].append(g)
        for group in groups.values():
            if len(group) < n:
                continue
            gpus = group[:n]
            trial = {**{t: set(gs) for t, gs in used.items()}}
            trial.setdefault(v, set()).update(gidx[g] for g in gpus)
            b = infer_binding(cluster, trial, deadline=deadline)
            if b is None or check_binding(cluster, b, trial) or not _each_in_one_cell(
                    tree, b.get(v, ()), [*mine_jobs, {gidx[g] for g in gpus}]):
                continue
            w = Placement(x.id, tuple(GpuShare(g, x.gpu_milli) for g in gpus), {s.id: x.cpu},
                          {s.id: x.mem})
            if placement_problems(cluster, x, w, "witness"):
                continue
            return gpus, sorted(jid for jid in stoppable if s.id in placed[jid].cpu
                                or any(g.gpu in gpus for g in placed[jid].gpus))
    return None


def _each_in_one_cell(tree, nodes, jobs) -> bool:
    """HiveD's buddy rule (Zhao et al., OSDI'20, section 3.2): a job of k
    GPUs takes one cell of at least k GPUs, split from a larger one where it
    must, never two smaller cells together.  True when the GPUs of each job
    of ``jobs`` (sets of global GPU indices) lie inside one of the cells
    ``nodes`` (a binding's cells of their tenant)."""
    cells = [set(tree.gpus[nd]) for nd in nodes]
    return all(any(gs <= c for c in cells) for gs in jobs if len(gs) > 1)


def _witness(cluster: Cluster, x: Job, room, spread: bool) -> str | None:
    """Where ``x`` fits in ``room`` at a throughput above 0 (GPU ids, or the
    server of a CPU-only job), or None."""
    w = place_one(cluster, x, room, spread=spread)
    if w is None or throughput(cluster, x, [g.gpu for g in w.gpus], x.cpu, x.mem) <= 0:
        return None
    return ", ".join(g.gpu for g in w.gpus) or next(iter(w.cpu))


def order_preemption_rule(order: Sequence[str] | None) -> Callable[[Job, Job], bool]:
    """``may_preempt(x, r)`` of ``allocate(..., order=order, preempt="order")``,
    for `order_problems`: pending job ``x`` may stop running job ``r`` when
    the order lists ``x`` above ``r`` (a job the order does not list stops
    no one, and every listed job may stop it) -- the rule the order's walk
    applies (`alloc.preempt`) and `alloc.violations` checks
    (`alloc.tenancy.outranks` with the order).  That input has no
    guaranteed jobs (`allocate` refuses them there).  Without an order
    nobody may stop anyone.

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.testing.placements import order_preemption_rule
    >>> may = order_preemption_rule(["a", "r", "b"])
    >>> a, r, b, c = Job("a"), Job("r"), Job("b"), Job("c")
    >>> may(a, r), may(b, r), may(b, c), may(c, r)
    (True, False, True, False)
    """
    from ..problem import order_ranks
    from ..tenancy import outranks
    rank = order_ranks(order)

    def may_preempt(x: Job, r: Job) -> bool:
        return rank is not None and outranks(x, r, rank)
    return may_preempt


def order_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation,
                   order: Sequence[str] | None = None, *, owner: Owner | None = None,
                   spread: bool = True,
                   may_preempt: Callable[[Job, Job], bool] | None = None) -> list[str]:
    r"""Order-keeping: no job is displaced by jobs ranked below it.

    For every pending job ``x`` left unplaced, with ``H(x)`` the placements
    of the running jobs (but those ``x`` may stop, ``may_preempt``), of the
    jobs ranked at or above ``x`` (``rank(j) <= rank(x)``) and, for an
    ``x`` that is not guaranteed, of the guaranteed
    jobs (under tenancy a guaranteed job comes first: it may even preempt
    ``x``) -- a running job ranked below ``x`` that moved counted where it
    ran (the answer could have kept it there; its new place is lower-ranked
    work), or where it went when the work above took its old place --

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
        caller's order): such running jobs do not count in ``H(x)``, whatever
        their user, wherever the answer put them.  The hook for
        ``allocate(..., preempt="order")`` is `order_preemption_rule`: there a
        job the order lists above a running job, and which fits once that job
        is stopped, does not wait.  None (default): running jobs always hold
        their room.

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
    held = "running jobs" if may_preempt is None else "running jobs it may not stop"
    out = []
    for x in _pending(jobs, allocation, cluster):
        if _witness(cluster, x, everything, spread) is not None:
            continue                     # room is free: idle_room_problems' case
        keep, below, moved = [], [], []
        for p in allocation.placements:
            j = by_id.get(p.job)
            if j is None:
                continue
            cur = j.current
            if cur is not None and may_preempt is not None and may_preempt(x, j):
                below.append(j.id)       # x may stop it: it holds no room against x
                continue
            if cur is not None and p.same_as(cur):
                keep.append(p)
            elif rank[j.id] <= rank[x.id] or (j.guaranteed and not x.guaranteed) \
                    or (owner is not None and owner(j) != owner(x)):
                keep.append(p)
            elif cur is not None:
                moved.append((cur, p))
                below.append(j.id)
            else:
                below.append(j.id)
        for cur, p in moved:             # where it ran, unless higher-ranked work took that
            keep.append(cur if room_left(cluster, jobs, keep).holds(cur) else p)
        where = _witness(cluster, x, room_left(cluster, jobs, keep), spread)
        if where is not None:
            out.append(f"job {x.id!r} (rank {rank[x.id]}) is unplaced but fits in the room "
                       f"that {held} and jobs ranked at or above it leave (on {where}), "
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
    for x in _pending(jobs, allocation, cluster):
        where = _witness(cluster, x, room, spread)
        if where is not None:
            out.append(f"job {x.id!r} is unplaced but fits in the room left (on {where})")
    return out


__all__ = ["guarantee_problems", "idle_room_problems", "order_preemption_rule", "order_problems",
           "overcommit_problems", "ranks", "reason_problems", "sharing_safety_problems",
           "stability_problems"]

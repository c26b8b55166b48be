r"""Dominant Resource Fairness on placements: the properties of Ghodsi et al.
(NSDI'11, section 4) for indivisible jobs, grouped by user.

Notation (`alloc.testing.users`): users ``u`` (a job's owner), weights
``w_u``, ``W`` their sum, ``A_u`` what u's placed jobs hold, ``D(A)`` the
dominant share of a holding, ``room(Q)`` the room a set of placements ``Q``
leaves (`alloc.testing.room`), ``P`` the allocation's placements.  ``N_v``
are v's jobs placed *now* (not running before) of the same class as the job
compared with -- guaranteed or not: a guaranteed job goes first under
tenancy, so the two classes are filled one after the other.

With jobs of one size per user and divisible resources DRF is envy-free,
sharing-incentive, Pareto-efficient and strategy-proof.  With indivisible
jobs on servers none of the four holds exactly:

* **envy-freeness** fails on one server: two users each wanting one 3-GPU
  job on 4 GPUs -- one of them gets nothing and envies the other;
  `placement_envy_problems` with ``up_to=1`` checks *envy-freeness up to
  one job*, which progressive filling keeps;
* **sharing incentive** fails likewise (three users each wanting one 2-GPU
  job on 4 GPUs: one gets 0 < 1/3); `placement_sharing_incentive_problems`
  checks it up to one job;
* **Pareto efficiency** of a packing is a hard question (could some
  repacking raise one user and lower nobody?); `placement_pareto_problems`
  checks its necessary condition, that no job is left out that fits in what
  is free;
* **strategy-proofness**: `placement_manipulation_gain` measures what a user
  gains by over-stating its jobs' CPU and memory.

Each checker returns readable lines, one per breach (empty: it holds).
Jobs are compared with the sound fit search of `alloc.testing.room`: a job
"fits" only where a witness placement exists, so a reported breach is real.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Sequence

from ..model import Allocation, Cluster, Job, Placement
from .placements import _pending, _witness, idle_room_problems
from .room import room_left
from .users import Owner, by_tenant, dominant_share, held, totals, user_weights, weighted


class _Users:
    """Users, their weights, holdings and newly placed jobs of an allocation."""

    def __init__(self, cluster: Cluster, jobs: Sequence[Job], allocation: Allocation,
                 owner: Owner, weights: Mapping[str, float] | None):
        self.cluster, self.jobs, self.allocation = cluster, list(jobs), allocation
        self.owner = owner
        self.total = totals(cluster)
        self.w = user_weights(jobs, owner, weights)
        by_id = {j.id: j for j in jobs}
        self.by_id = by_id
        self.vec: dict[str, dict[str, tuple]] = {u: {} for u in self.w}
        self.new: dict[str, list[Placement]] = {u: [] for u in self.w}
        for p in allocation.placements:
            j = by_id.get(p.job)
            if j is None:
                continue
            u = owner(j)
            self.vec[u][p.job] = held(p)
            if j.current is None or not p.same_as(j.current):
                self.new[u].append(p)

    def key(self, u: str, without: str | None = None) -> float:
        """``D(A_u - without) / w_u``."""
        vs = [v for jid, v in self.vec[u].items() if jid != without]
        return weighted(dominant_share(vs, self.total), self.w[u])

    def fits_without(self, x: Job, drop: Sequence[Placement], spread: bool) -> str | None:
        """Where x fits once ``drop`` is taken out of the allocation, or None."""
        gone = {p.job for p in drop}
        keep = [p for p in self.allocation.placements if p.job not in gone]
        return _witness(self.cluster, x, room_left(self.cluster, self.jobs, keep), spread)

    def same_class(self, v: str, x: Job) -> list[Placement]:
        return [p for p in self.new[v] if self.by_id[p.job].guaranteed == x.guaranteed]


def _blockers(us: _Users, x: Job, v: str, floor: float, spread: bool) -> str | None:
    """Where x fits once any one of v's new jobs is gone, when for every such
    job y ``D(A_v - y) / w_v > floor``; None otherwise."""
    ys = us.same_class(v, x)
    if not ys:
        return None
    where = None
    for y in ys:
        if us.key(v, without=y.job) <= floor:
            return None
        where = us.fits_without(x, [y], spread)
        if where is None:
            return None
    return where


def placement_envy_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
                            owner: Owner = by_tenant, weights: Mapping[str, float] | None = None,
                            up_to: int = 1, spread: bool = True) -> list[str]:
    r"""Envy-freeness of users, up to one job (``up_to=1``) or exactly (``up_to=0``).

    User ``u`` *envies* ``v`` when u has an unplaced job ``x`` that would
    fit were v's new jobs gone while v is better off:

    $$
    x \text{ fits in } room(P \setminus N_v) \ \wedge\
    \frac{D(A_v)}{w_v} > \frac{D(A_u)}{w_u}.
    $$

    *Up to one job*: u envies v even after any one of v's new jobs is taken
    away -- for every ``y`` in ``N_v`` (non-empty)

    $$
    x \text{ fits in } room(P \setminus \{y\}) \ \wedge\
    \frac{D(A_v - y)}{w_v} > \frac{D(A_u)}{w_u}.
    $$

    Discrete progressive filling keeps the relaxed form: when v placed its
    last job y, v had the least weighted share of the users still waiting;
    had x fitted then (in ``room(P \ {y})`` or more) u was still waiting,
    so ``D(A_v - y)/w_v <= D(A_u)/w_u``.  The exact form fails for
    indivisible jobs (see the module notes).

    Parameters
    ----------
    cluster, jobs, allocation
        The input and the answer.
    owner : Owner
        Who owns each job (default `by_tenant`, the users of `drf`).
    weights : mapping, optional
        User weights (default: `user_weights`).
    up_to : {1, 0}
        Jobs of v that may be taken away before u's envy counts.
    spread : bool
        The solver may spread a job over servers.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Tenant, allocate
    >>> from alloc.testing import placement_envy_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 4, "V100"),),
    ...             tenants={"a": Tenant("a"), "b": Tenant("b")})
    >>> jobs = [Job("a0", 3, cpu=100, mem=100, tenant="a"),
    ...         Job("b0", 3, cpu=100, mem=100, tenant="b")]
    >>> a = allocate(c, jobs, solver="drf")
    >>> placement_envy_problems(c, jobs, a)
    []
    >>> placement_envy_problems(c, jobs, a, up_to=0)   # doctest: +ELLIPSIS
    ["user 'b' envies user 'a': its job 'b0' fits in ..."]
    """
    if up_to not in (0, 1):
        raise ValueError(f"up_to: expected 0 or 1, got {up_to!r}")
    us = _Users(cluster, jobs, allocation, owner, weights)
    out = []
    for x in _pending(jobs, allocation, cluster):
        u = owner(x)
        mine = us.key(u)
        for v in us.w:
            if v == u:
                continue
            if up_to == 0:
                ys = us.same_class(v, x)
                where = us.fits_without(x, ys, spread) if ys and us.key(v) > mine else None
            else:
                where = _blockers(us, x, v, mine, spread)
            if where is not None:
                out.append(f"user {u!r} envies user {v!r}: its job {x.id!r} fits in "
                           f"{'' if up_to == 0 else 'any one of '}{v!r}'s room (on {where}) "
                           f"and {v!r}'s weighted dominant share "
                           f"{us.key(v):.4g} is above {u!r}'s {mine:.4g}")
    return out


def placement_sharing_incentive_problems(cluster: Cluster, jobs: Sequence[Job],
                                         allocation: Allocation, *, owner: Owner = by_tenant,
                                         weights: Mapping[str, float] | None = None,
                                         spread: bool = True) -> list[str]:
    r"""Sharing incentive up to one job.

    Every user ``u`` with an unplaced job ``x`` below its weighted share of
    the cluster, ``D(A_u)/w_u < 1/W``, is short for a reason: no user ``v``
    holds room x needs while staying above *its* weighted share without any
    one of its new jobs -- there is no ``v`` with, for every ``y`` in ``N_v``
    (non-empty),

    $$
    x \text{ fits in } room(P \setminus \{y\}) \ \wedge\
    \frac{D(A_v - y)}{w_v} > \frac{1}{W}.
    $$

    Envy-freeness up to one job implies it.  The exact form
    ``D(A_u)/w_u >= 1/W`` fails for indivisible jobs (see the module notes).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Tenant, allocate
    >>> from alloc.testing import placement_sharing_incentive_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 4, "V100"),), tenants={"a": Tenant("a")})
    >>> jobs = ([Job(f"a{k}", 1, cpu=100, mem=100, tenant="a") for k in range(4)]
    ...         + [Job("b", 1, cpu=100, mem=100)])
    >>> a = allocate(c, jobs, solver="drf")
    >>> placement_sharing_incentive_problems(c, jobs, a)
    []
    """
    us = _Users(cluster, jobs, allocation, owner, weights)
    share = 1.0 / sum(us.w.values()) if sum(us.w.values()) > 0 else 0.0
    out = []
    for x in _pending(jobs, allocation, cluster):
        u = owner(x)
        if us.key(u) >= share:
            continue
        for v in us.w:
            where = None if v == u else _blockers(us, x, v, share, spread)
            if where is not None:
                out.append(f"user {u!r} is below its weighted share ({us.key(u):.4g} < "
                           f"{share:.4g}) while its job {x.id!r} fits in any one of {v!r}'s "
                           f"room (on {where}) and {v!r} stays above its share")
                break
    return out


def placement_pareto_problems(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
                              spread: bool = True) -> list[str]:
    r"""Pareto efficiency for indivisible jobs, its necessary condition: no
    unplaced job ``x`` fits in ``room(P)`` (placing it would raise its owner
    and lower nobody).  The same check as `idle_room_problems`.

    Examples
    --------
    >>> from alloc import Allocation, Cluster, Job, Server
    >>> from alloc.testing import placement_pareto_problems
    >>> c = Cluster((Server("s0", 8000, 8000, 1, "V100"),))
    >>> placement_pareto_problems(c, [Job("a", 1, cpu=1, mem=1)], Allocation(unplaced=("a",)))
    ["job 'a' is unplaced but fits in the room left (on s0/gpu0)"]
    """
    return idle_room_problems(cluster, jobs, allocation, spread=spread)


def placement_manipulation_gain(solve: Callable[[Cluster, Sequence[Job]], Allocation],
                                cluster: Cluster, jobs: Sequence[Job], user: str,
                                lie: Callable[[Job], Job], *,
                                owner: Owner = by_tenant) -> float:
    r"""What ``user`` gains by reporting ``lie(job)`` for each of its jobs.

    Only over-statement is meaningful for placements (a job given less than
    it needs does not run), so ``lie`` must ask at least the true CPU and
    memory.  A lying job's placement runs the true job; the user's utility
    is the dominant share of its jobs' *true* requests over the placed ones,

    $$
    U = \max_r \frac{\sum_{x \text{ placed}} d_{x,r}}{T_r},
    \qquad \mathrm{gain} = U_{lie} - U_{truth}.
    $$

    Strategy-proofness: ``gain <= 0`` for every lie.

    Parameters
    ----------
    solve : callable
        ``solve(cluster, jobs) -> Allocation`` (e.g. ``allocate`` with
        ``solver="drf"`` bound).
    cluster, jobs
        The input.
    user : str
        The user who lies.
    lie : callable
        Its reported job for each of its true jobs.
    owner : Owner
        Who owns each job.

    Raises
    ------
    ValueError
        A lie asks less CPU or memory than the truth, or changes anything
        but CPU and memory.
    """
    reported = []
    for j in jobs:
        if owner(j) == user:
            r = lie(j)
            if r.cpu < j.cpu or r.mem < j.mem or replace(r, cpu=j.cpu, mem=j.mem) != j:
                raise ValueError(f"lie for job {j.id!r}: expected the same job asking at least "
                                 f"its CPU and memory")
            j = r
        reported.append(j)
    total = totals(cluster)
    mine = {j.id: (float(j.milli_total), float(j.cpu), float(j.mem))
            for j in jobs if owner(j) == user}

    def utility(a: Allocation) -> float:
        return dominant_share([mine[p.job] for p in a.placements if p.job in mine], total)

    return utility(solve(cluster, reported)) - utility(solve(cluster, list(jobs)))


__all__ = ["placement_envy_problems", "placement_manipulation_gain", "placement_pareto_problems",
           "placement_sharing_incentive_problems"]

r"""One compile step shared by every solver.

[`Problem`][alloc.problem.Problem] turns a cluster and its jobs into integer-indexed arrays:
servers ``s = 0..S-1`` (capacities ``C_s``, ``M_s``, ``G_s``, GPU type ``t_s``),
GPUs ``g = 0..G-1`` (server, domain id at each hierarchy level), jobs
``j = 0..J-1`` with their *options* (CPU/memory points: the request, or any
Pareto-optimal cell of the profile's grid) and the objective's coefficient of
job ``j`` at option ``o`` on a server of type ``t`` ([`Problem.coef`][alloc.problem.Problem.coef]).

Live state.  A job with ``current`` is *running*: it is in `Problem.fixed`
(its current assignment) and stays there unless the solver declares the
capability to move or stop it and the call allows it.  The capacities left
after the fixed jobs are `free_cpu`, `free_mem` (per server) and
`gpu_free` (milli per GPU).  `pending` lists the jobs a solver
places: not running and placeable on this cluster now; a well-formed job that
is not (its GPU type absent, wider than any server) is in `reasons`
with one line saying why, and stays unplaced.

Order.  `rank` orders the jobs: the caller's explicit ``order`` (a ranked
list of job ids, as LAS/FIFO/Tiresias schedulers produce), else priority
(highest first) then input order.  [`job_order`][alloc.problem.job_order] sorts by it.

Preemption.  ``preempt=None`` (the default): a solver that declares
``preemption`` may stop a running job where the tenancy rules allow it
([outranks][alloc.tenancy.outranks]).  ``preempt="order"``: the caller's order
decides instead (`order_rank`); the core stops the victims and places the
jobs they are stopped for before the solver runs ([alloc.preempt][]), and
those placements are `pinned` -- running for the solver, never moved or
stopped by it.

Solvers return a [`Solution`][alloc.problem.Solution] (job index ->
[`Assign`][alloc.problem.Assign]);
[`alloc.solve.allocate`][alloc.solve.allocate] turns it into an
[`Allocation`][alloc.model.Allocation],
recomputing throughput and value from the placement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Collection, Iterable, Sequence

import numpy as np

from .deprecation import renamed
from .model import CLUSTER, MILLI, Cluster, GpuShare, Job, Placement, Profile, Server, Status
from .arrays import ClusterArrays, cluster_arrays
from .memo import forget, keep, recall, recall2, same_but_current
from .objectives import Objective, get_objective, rate, throughput
from .topology import is_outer


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


_OPTIONS_CACHE: dict[tuple[int, int, int, int], tuple[Profile | None, tuple[GridPoint, ...]]] = {}


def pareto_options(job: Job) -> tuple[GridPoint, ...]:
    """The job's request plus every grid cell not dominated by another (less or
    equal CPU and memory with at least the same speed)."""
    prof = job.profile
    key = (id(prof), job.gpus, job.cpu, job.mem)
    hit = _OPTIONS_CACHE.get(key)
    if hit is not None and hit[0] is prof:
        return hit[1]
    out = _pareto(job)
    if len(_OPTIONS_CACHE) > 4096:
        _OPTIONS_CACHE.clear()
    _OPTIONS_CACHE[key] = (prof, out)
    return out


def _pareto(job: Job) -> tuple[GridPoint, ...]:
    prof = job.profile
    n = job.gpus
    req_base = (prof.grid_value(job.cpu / n, job.mem / n)
                if prof is not None and prof.has_grid and n else 1.0)
    opts = [GridPoint(job.cpu, job.mem, req_base, True)]
    if prof is not None and prof.has_grid and n:
        cells = []
        for i, c in enumerate(prof.cpu_per_gpu):
            for k, m in enumerate(prof.mem_per_gpu):
                v = prof.tput[i][k]
                if v is not None and v > 0:
                    cells.append(GridPoint(c * n, m * n, float(v)))
        for o in cells:
            dominated = any(
                (p.cpu <= o.cpu and p.mem <= o.mem and p.base >= o.base)
                and (p.cpu, p.mem, -p.base) != (o.cpu, o.mem, -o.base)
                for p in cells + opts[:1])
            if not dominated:
                opts.append(o)
    seen, out = set(), []
    for o in opts:
        key = (o.cpu, o.mem)
        if key not in seen:
            seen.add(key)
            out.append(o)
    return tuple(out)


def _width(server: Server, locality: str | None) -> int:
    """GPUs one node of the job's locality level holds on ``server``."""
    if locality == "switch":
        return server.gpus // max(1, server.sockets) // max(1, server.switches_per_socket)
    if locality == "socket":
        return server.gpus // max(1, server.sockets)
    return server.gpus


def _shape_index(cluster: Cluster) -> dict[str, Any]:
    """Distinct server shapes per GPU type and per (rack, type) totals (cached
    on the cluster), so that placeability costs one pass over the shapes, not
    over the servers."""
    idx = cluster.__dict__.get("_shape_index")
    if idx is None:
        shapes: dict[Any, Any] = {}
        totals: dict[Any, Any] = {}
        outer = cluster_arrays(cluster).srv_domain
        ids = {lv: d.tolist() for lv, d in outer.items()}
        for i, s in enumerate(cluster.servers):
            t = s.gpu_type if s.gpus else None
            shapes.setdefault(t, set()).add(s)
            # the whole cluster once, and the server's domain at each level above it
            keys = (("cluster", t),) + tuple((lv, d[i], t) for lv, d in ids.items())
            for key in keys:
                g, c, m = totals.get(key, (0, 0, 0))
                totals[key] = (g + s.gpus, c + s.cpu, m + s.mem)
        uniq = {t: list({(v.gpus, v.sockets, v.switches_per_socket, v.cpu, v.mem): v
                         for v in ss}.values()) for t, ss in shapes.items()}
        idx = cluster.__dict__["_shape_index"] = {"shapes": uniq, "totals": totals}
    return idx


def _smallest_request(job: Job, n: int) -> tuple[int, int]:
    cpu, mem = job.cpu, job.mem
    prof = job.profile
    if prof is not None and prof.has_grid and n:
        pts = [(c * n, m * n) for a, c in enumerate(prof.cpu_per_gpu)
               for b, m in enumerate(prof.mem_per_gpu) if (prof.tput[a][b] or 0) > 0]
        if pts:
            cpu = min(cpu, min(p[0] for p in pts))
            mem = min(mem, min(p[1] for p in pts))
    return cpu, mem


def placeable_reason(cluster: Cluster, job: Job) -> str | None:
    """None if the job fits the empty cluster (at its smallest option, inside
    one node of its locality level), else one line saying why it cannot be
    placed on this cluster now."""
    n = job.min_gpus or job.gpus
    why = _goodput_reason(cluster, job)
    if why:
        return why
    cpu, mem = _smallest_request(job, n)
    idx = _shape_index(cluster)
    types = [t for t in idx["shapes"] if (n == 0 or (t is not None and job.allows(t)))]
    ok = [s for t in types for s in idx["shapes"][t] if n == 0 or s.gpus > 0]
    if not ok:
        return f"no server has an allowed GPU type {list(job.gpu_types)}"
    if n == 0:
        if not any(s.cpu >= cpu and s.mem >= mem for s in ok):
            return (f"needs {cpu} milli-CPU and {mem} MiB on one server; the largest has "
                    f"{max(s.cpu for s in ok)} and {max(s.mem for s in ok)}")
        return None
    if job.even_servers:
        return _even_reason(cluster, job, cpu, mem)
    if any(_width(s, job.locality) >= n and s.cpu >= cpu and s.mem >= mem for s in ok):
        return None
    if n > 1 and job.gpu_milli == MILLI and (job.locality is None or is_outer(job.locality)):
        within = job.locality if job.locality is not None else "cluster"
        # a spread job may mix the allowed GPU types: sum them per scope
        scopes: dict[Any, Any] = {}
        for k, tot in idx["totals"].items():
            if k[0] == within and k[-1] in types:
                scopes[k[:-1]] = tuple(a + b for a, b in zip(scopes.get(k[:-1], (0, 0, 0)), tot))
        best = max(scopes.values(), default=(0, 0, 0))
        if any(g >= n and c >= cpu and m >= mem for g, c, m in scopes.values()):
            return None
        return (f"needs {n} GPUs, {cpu} milli-CPU and {mem} MiB; the allowed servers "
                + (f"of one {job.locality} " if within != "cluster" else "")
                + f"hold {best[0]} GPUs")
    best = max(ok, key=lambda s: (_width(s, job.locality), s.gpus))
    where = f" in one {job.locality}" if job.locality in ("socket", "switch") else ""
    return (f"needs {n} GPUs{where}, {cpu} milli-CPU and {mem} MiB on one server; the largest "
            f"allowed has {_width(best, job.locality)} GPUs{where}, {best.cpu} milli-CPU, "
            f"{best.mem} MiB")


def _even_reason(cluster: Cluster, job: Job, cpu: int, mem: int) -> str | None:
    """`placeable_reason` of an even spread: ``gpus // gpus_per_server``
    servers of allowed types, each with ``gpus_per_server`` GPUs and its
    share of CPU and memory (rounded up)."""
    k, parts = job.gpus_per_server or job.gpus, job.even_servers
    pc, pm = -(-cpu // parts), -(-mem // parts)
    have = sum(1 for s in cluster.servers if s.gpus >= k and job.allows(s.gpu_type)
               and s.cpu >= pc and s.mem >= pm)
    if have >= parts:
        return None
    return (f"needs {parts} servers with {k} GPUs, {pc} milli-CPU and {pm} MiB each "
            f"(gpus_per_server {k}); {have} of the servers it may use are that large")


def _goodput_reason(cluster: Cluster, job: Job) -> str | None:
    """Why a goodput job has no valid configuration on this cluster (None:
    it has one): a GPU type its profile models that the cluster has, and a
    GPU count in its range whose per-GPU batch range leaves a valid batch."""
    prof = job.profile
    if prof is None or prof.goodput is None or not job.gpus:
        return None
    g = prof.goodput
    have = {s.gpu_type for s in cluster.servers if s.gpus}
    types = [t for t in g.types if t in have and job.allows(t)]
    if not types:
        return (f"its goodput profile models GPU types {sorted(g.types)}, none of which the "
                f"cluster has and the job allows")
    lo = job.min_gpus or job.gpus
    if all(g.types[t].local_bsz[0] * lo > g.max_batch for t in types):
        t = types[0]
        return (f"no configuration is valid: {lo} GPU(s) at the smallest per-GPU batch "
                f"{g.types[t].local_bsz[0]} exceed its largest batch {g.max_batch}")
    return None


def _take(problem: "Problem", assigns: Iterable[Assign], sign: int) -> None:
    """Add ``sign`` times the assignments' GPU shares, CPU and memory to the
    problem's free capacities (vectorised; -1 takes, +1 gives back)."""
    gi, gv, ci, cv, mi, mv = [], [], [], [], [], []
    for a in assigns:
        for g, m in a.gpus:
            gi.append(g)
            gv.append(m)
        for s, v in a.cpu:
            ci.append(s)
            cv.append(v)
        for s, v in a.mem:
            mi.append(s)
            mv.append(v)
    for arr, idx, val in ((problem.gpu_free, gi, gv), (problem.free_cpu, ci, cv),
                          (problem.free_mem, mi, mv)):
        if idx:
            np.add.at(arr, np.asarray(idx, dtype=np.int64), sign * np.asarray(val, dtype=np.int64))



class Problem:
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
        from .carry import next_stamp
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

    # ------------------------------------------------------------ live state
    def _set_rank(self, order: Sequence[str] | None) -> None:
        jobs = self.jobs
        neg = [-j.priority for j in jobs]
        # a stable sort keeps input order among equal priorities
        base = list(range(self.J)) if not neg or min(neg) == max(neg) else \
            sorted(range(self.J), key=neg.__getitem__)
        if order is None:
            self.explicit_order = False
            self.prio_key = neg
            ranked = base
        else:
            self.explicit_order = True
            pos = self.order_rank
            assert pos is not None          # an order was given
            listed = sorted((j for j in range(self.J) if jobs[j].id in pos),
                            key=lambda j: pos[jobs[j].id])
            ranked = listed + [j for j in base if jobs[j].id not in pos]
            self.prio_key = [0] * self.J
            for k, j in enumerate(ranked):
                self.prio_key[j] = k
        self.rank = np.empty(self.J, dtype=np.int64)
        self.rank[np.asarray(ranked, dtype=np.int64)] = np.arange(self.J, dtype=np.int64)

    def _set_live_state(self, previous: "Problem | None" = None) -> None:
        """Options, running jobs fixed, pending jobs and reasons, free capacities.

        With ``previous`` (the last problem compiled with the carry, on this
        cluster) a job that is the very same object as there keeps what was
        derived for it, and the free capacities are the old ones with the
        running jobs gone given back and the new ones taken
        (`alloc.carry.Changes`); the result equals a fresh compile."""
        jobs, cluster = self.jobs, self.cluster
        self.fixed: dict[int, Assign] = {}
        self.reasons: dict[int, str] = {}
        self.options: list[tuple[GridPoint, ...]] = []
        fixed, reasons, options = self.fixed, self.reasons, self.options
        pending: list[int] = []
        added: list[int] = []
        kept: dict[int, int] = {}
        seen = cluster.__dict__.setdefault("_placeable", {})   # shape -> (profile, reason)
        if len(seen) > 4096:
            seen.clear()
        pidx = previous.job_index if previous is not None else {}
        pjobs = previous.jobs if previous is not None else ()
        pfixed = previous.fixed if previous is not None else {}
        preasons = previous.reasons if previous is not None else {}
        popts = previous.options if previous is not None else ()
        get_k, get_a, get_why = pidx.get, pfixed.get, preasons.get
        add_option, add_pending, current = options.append, pending.append, self.current_assign
        for j, job in enumerate(jobs):
            k = get_k(job.id)
            if k is not None and pjobs[k] is job:        # the very same job: what it had
                add_option(popts[k])
                if job.current is None:
                    why = get_why(k)
                else:
                    a = get_a(k)
                    if a is None:
                        fixed[j] = current(j)
                        added.append(j)
                    else:
                        fixed[j] = a
                        kept[j] = k
                    continue
            else:
                add_option(pareto_options(job))
                if job.current is not None:
                    fixed[j] = current(j)
                    added.append(j)
                    continue
                key = (id(job.profile), job.gpus, job.gpu_milli, job.cpu, job.mem, job.min_gpus,
                       job.gpu_types, job.locality)
                hit = seen.get(key)
                if hit is None or hit[0] is not job.profile:
                    hit = seen[key] = (job.profile, placeable_reason(cluster, job))
                why = hit[1]
            if why is None:
                add_pending(j)
            else:
                reasons[j] = why
        self.running = tuple(fixed)     # ascending: fixed is filled in job order
        self.pending = tuple(pending)
        if previous is None:
            self.changes = None
            self.free_cpu = self.srv_cpu.copy()
            self.free_mem = self.srv_mem.copy()
            self.gpu_free = np.full(self.G, MILLI, dtype=np.int64)
            _take(self, fixed.values(), -1)
            return
        gone = pfixed.keys() - kept.values() if len(kept) < len(pfixed) else ()
        removed = tuple((k, pjobs[k], pfixed[k]) for k in sorted(gone))
        from .carry import Changes
        self.changes = Changes(previous.stamp, tuple(added), removed, kept)
        self.free_cpu = previous.free_cpu.copy()
        self.free_mem = previous.free_mem.copy()
        self.gpu_free = previous.gpu_free.copy()
        _take(self, [a for _, _, a in removed], 1)
        _take(self, [fixed[j] for j in added], -1)

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
        from .carry import next_stamp, reduced_changes
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
        out.pinned = frozenset(new[j] for j in pin)
        out.stamp = next_stamp()
        out.changes = None if self.changes is None else \
            reduced_changes(self.changes, self, drop, pin, new)
        if self.carry is not None:
            self.carry.reduced(self, out, new, pin)
        return out

    def current_assign(self, j: int) -> Assign:
        """The running job ``j``'s current placement in index form."""
        c = self.cluster
        cur = self.jobs[j].current
        assert cur is not None, "a running job"
        a: Assign | None = recall(cur, "assign", (c,))
        if a is None:
            caps = tuple((g.mem, g.compute) for g in cur.gpus)
            a = Assign(tuple((c.gpu_index[g.gpu], g.milli) for g in cur.gpus),
                       tuple(sorted((c.server_index[s], v) for s, v in cur.cpu.items())),
                       tuple(sorted((c.server_index[s], v) for s, v in cur.mem.items())),
                       caps if any(x != (None, None) for x in caps) else ())
            keep(cur, "assign", (c,), a)
        return a

    @property
    def moves_allowed(self) -> bool:
        """True when the call lets running jobs move."""
        return self.max_moves is None or self.max_moves > 0

    def outranks(self, a: int, b: int) -> bool:
        """May job ``a`` stop running job ``b`` under this call's rule
        ([outranks][alloc.tenancy.outranks], by the order under ``preempt="order"``)?"""
        from .tenancy import outranks
        rank = self.order_rank if self.preempt == "order" else None
        return outranks(self.jobs[a], self.jobs[b], rank)

    def servers_of(self, a: Assign) -> set[int]:
        """Server indices an assignment uses (its GPUs', CPU's and memory's)."""
        out = {s for s, _ in a.cpu} | {s for s, _ in a.mem}
        out.update(int(self.gpu_server[g]) for g, _ in a.gpus)
        return out

    def stopped_for(self, r: int, assign: dict[int, Assign], fresh: Iterable[int]) -> bool:
        """Running job ``r`` may be stopped: a job of ``fresh`` outranks it
        (`outranks`) and is placed (``assign[i]``) on a server ``r`` held --
        the rule [violations][alloc.check.violations] checks."""
        held = None
        for i in fresh:
            if i == r or not self.outranks(i, r):
                continue
            if held is None:
                held = self.servers_of(self.current_assign(r))
            if held & self.servers_of(assign[i]):
                return True
        return False

    @cached_property
    def needs(self) -> frozenset[str]:
        """The capabilities a solver needs for this problem's input
        ([`needed_capabilities`][alloc.needs.needed_capabilities], the call's
        preemption rule aside: the core applies it): the call's when it was
        compiled from one, else computed once here."""
        from .needs import needed_capabilities
        return needed_capabilities(self.cluster, self.jobs)

    #: seconds the call keeps back from the solver for the answer's placements
    #: and the final check (`alloc.solve.check_reserve`), set by the core
    #: before the solver runs (0 for a problem solved outside the core)
    reserve_s: float = 0.0

    @cached_property
    def preemption_possible(self) -> bool:
        """True when the tenancy rules let some pending job stop a running one
        ([`alloc.tenancy.outranks`][alloc.tenancy.outranks]: a guaranteed job over an opportunistic
        one or over a lower-priority guaranteed job of its tenant; an
        opportunistic job over a lower-priority opportunistic one).  Linear in
        the jobs: the highest pending priority of each kind against the lowest
        running one."""
        if not self.running:
            return False
        pk = self.prio_key
        if min(pk) == max(pk) and not any(self.jobs[j].guaranteed for j in self.pending):
            return False        # one priority and nothing guaranteed waits: nobody outranks
        low_opp: int | None = None
        low_gua: dict[str | None, int] = {}
        for r in self.running:
            job = self.jobs[r]
            if job.guaranteed:
                low_gua[job.tenant] = min(low_gua.get(job.tenant, job.priority), job.priority)
            else:
                low_opp = job.priority if low_opp is None else min(low_opp, job.priority)
        for j in self.pending:
            job = self.jobs[j]
            if job.guaranteed and (low_opp is not None or job.priority > low_gua.get(
                    job.tenant, job.priority)):
                return True
            if not job.guaranteed and low_opp is not None and job.priority > low_opp:
                return True
        return False

    # ----------------------------------------------------------------- masks
    @cached_property
    def type_ok(self) -> np.ndarray:
        """``type_ok[j, t]``: job j may use GPU type t (last column: no GPUs)."""
        out = np.zeros((self.J, len(self.types) + 1), dtype=bool)
        for j, job in enumerate(self.jobs):
            out[j, :-1] = [job.allows(t) for t in self.types]
            out[j, -1] = job.gpus == 0
        return out

    @cached_property
    def allowed(self) -> np.ndarray:
        """``allowed[j, s]``: server s has a GPU type job j allows (any server
        for a CPU-only job).  J x S booleans: large solvers use
        [`allowed_servers`][alloc.problem.Problem.allowed_servers]."""
        tix = np.where(self.srv_type >= 0, self.srv_type, len(self.types))
        out = self.type_ok[:, tix].copy()
        cpu_only = np.array([job.gpus == 0 for job in self.jobs], dtype=bool)
        out[cpu_only, :] = True
        return out

    def allowed_servers(self, j: int) -> np.ndarray:
        """Indices of the servers job j may use."""
        if self.jobs[j].gpus == 0:
            return np.arange(self.S)
        tix = np.where(self.srv_type >= 0, self.srv_type, len(self.types))
        return np.flatnonzero(self.type_ok[j, tix])

    # ---------------------------------------------------------------- values
    def speed(self, j: int, s: int) -> float:
        """Relative speed of job j on server s's GPU type."""
        prof = self.jobs[j].profile
        return prof.speed(self.cluster.servers[s].gpu_type) if prof is not None else 1.0

    def coef(self, j: int, o: int, s: int | None = None, *, span: float = 1.0,
             n: int | None = None) -> float:
        """The objective's value of job j at option o on server s (GPU-type
        speed of s; ``span`` factor; ``n`` GPUs for an elastic size)."""
        job = self.jobs[j]
        speed = self.speed(j, s) if (s is not None and job.gpus) else 1.0
        scale = 1.0
        if n is not None and n != job.gpus:
            from .objectives import scale_factor
            scale = scale_factor(job.profile, job, n)
        return self.objective.coef(job, self.options[j][o].base, speed=speed, span=span,
                                   scale=scale, gpus=n)

    def best_coef(self, j: int, o: int) -> float:
        """The best value of job j at option o over the GPU types it may use
        (in-server span factor 1)."""
        job = self.jobs[j]
        prof = job.profile
        speeds = [prof.speed(t) if prof is not None else 1.0
                  for t, ok in zip(self.types, self.type_ok[j]) if ok] if job.gpus else [1.0]
        return self.objective.coef(job, self.options[j][o].base, speed=max(speeds, default=1.0))

    def upper_coef(self, j: int) -> float:
        """An upper bound of job j's value over every option, server, span
        level and size (valid for every profile the API accepts)."""
        job = self.jobs[j]
        types = [self.types[t] for t in range(len(self.types)) if self.type_ok[j, t]]
        return self.objective.upper(self.cluster, job, [o.base for o in self.options[j]],
                                    types or [None])

    # ----------------------------------------------------------- assignments
    def make_assign(self, j: int, gpus: Sequence[int], option: int) -> Assign:
        """Job j on the given global GPU indices at an option, CPU and memory
        split over the servers in proportion to their GPUs."""
        job = self.jobs[j]
        opt = self.options[j][option]
        gpus = sorted(int(g) for g in gpus)
        per_server: dict[int, int] = {}
        for g in gpus:
            s = int(self.gpu_server[g])
            per_server[s] = per_server.get(s, 0) + 1
        servers = sorted(per_server)
        counts = [per_server[s] for s in servers]
        cpu = split(opt.cpu, counts)
        mem = split(opt.mem, counts)
        return Assign(tuple((g, job.gpu_milli) for g in gpus),
                      tuple(zip(servers, cpu)), tuple(zip(servers, mem)))

    def make_cpu_assign(self, j: int, server: int, option: int = 0) -> Assign:
        """A CPU-only job j on one server at an option."""
        opt = self.options[j][option]
        return Assign((), ((server, opt.cpu),), ((server, opt.mem),))

    def placement(self, j: int, a: Assign) -> Placement:
        """The [`Placement`][alloc.model.Placement] of job j, throughput recomputed
        (a running job kept where it runs: its ``current`` object itself when
        that is what the rebuilt placement equals, remembered on it)."""
        job = self.jobs[j]
        cur = job.current
        if cur is not None and (a is self.fixed.get(j) or a == self.current_assign(j)):
            p: Placement | None = recall2(cur, "placement", self.cluster, job)
            if p is None:
                p = self._rebuilt(job, cur, a)
                keep(cur, "placement", (self.cluster, job), p)
            return p
        p = self._build_placement(job, a)
        keep(p, "built", (self.cluster,), (job, a))
        return p

    def placements(self, order: Sequence[int], assign: dict[int, Assign]
                   ) -> tuple[list[Placement], list[str]]:
        """The placements of the jobs ``order`` at ``assign`` (each one's
        [`placement`][alloc.problem.Problem.placement]), and the ids of the
        running jobs among them placed elsewhere than they run (moved).

        A running job whose assignment is its ``fixed`` one (the very
        object) is where it runs: its ``fixed`` assignment is its current
        placement in index form, so the placement built from it has the same
        GPUs, shares, CPU and memory (``same_as`` holds) and is not compared
        again; its placement is the one kept on its ``current`` placement
        (`alloc.memo`) -- one lookup per running job and round.
        """
        jobs, fixed, cluster = self.jobs, self.fixed, self.cluster
        placement, out, moved = self.placement, [], []
        for j in order:
            a = assign[j]
            if a is fixed.get(j):
                job = jobs[j]
                p = recall2(job.current, "placement", cluster, job)
                out.append(placement(j, a) if p is None else p)
                continue
            p = placement(j, a)
            out.append(p)
            cur = jobs[j].current
            if cur is not None and not p.same_as(cur):
                moved.append(p.job)
        return out, moved

    def _rebuilt(self, job: Job, cur: Placement, a: Assign) -> Placement:
        """The placement of running ``job`` on ``a`` (its current one in index
        form): ``cur`` itself when equal.  A placement this core built for
        the job while it waited (equal but for ``current``) from an equal
        assignment is what a rebuild gives, without rebuilding."""
        made = recall(cur, "built", (self.cluster,))
        if made is not None:
            forget(cur, "built")
            if made[1] == a and same_but_current(job, made[0]):
                return cur
        if cur.job == job.id:
            # ``a`` is ``cur`` in index form (`current_assign`): the placement
            # built from it has ``cur``'s GPUs in ``cur``'s order, its shares
            # and caps, CPU and memory, so it equals ``cur`` exactly when the
            # throughput recomputed from the same inputs is the reported one
            c = self.cluster
            tp = throughput(c, job, [g.gpu for g in cur.gpus], sum(cur.cpu.values()),
                            sum(cur.mem.values()))
            same = round(tp, 9) == cur.throughput
            if same and job.profile is not None and job.profile.goodput is not None:
                from .objectives import goodput_speed
                same = goodput_speed(c, job, [g.gpu for g in cur.gpus])[1:] == \
                    (cur.batch, cur.accum)
            if same:
                return cur
        return self._build_placement(job, a)

    def _build_placement(self, job: Job, a: Assign) -> Placement:
        c = self.cluster
        ids, sids, shares = c.gpu_ids, self.arrays.server_ids, self.arrays.shares
        gids = [ids[g] for g, _ in a.gpus]
        cpu = {sids[s]: v for s, v in a.cpu}
        mem = {sids[s]: v for s, v in a.mem}
        tp = throughput(c, job, gids, sum(cpu.values()), sum(mem.values()))
        batch, accum = None, 0
        if job.profile is not None and job.profile.goodput is not None and gids:
            from .objectives import goodput_speed
            _, batch, accum = goodput_speed(c, job, gids)
        gs = []
        for k, (g, m) in enumerate(a.gpus):
            if a.caps and a.caps[k] != (None, None):
                gs.append(GpuShare(ids[g], m, *a.caps[k]))
                continue
            sh = shares.get((g, m))
            if sh is None:
                sh = shares[(g, m)] = GpuShare(ids[g], m)
            gs.append(sh)
        return Placement.make(job.id, tuple(gs), cpu, mem, round(tp, 9), batch, accum)

    def value_of(self, j: int, a: Assign) -> float:
        """The objective's real value of job j placed as ``a`` -- the value of
        its [`placement`][alloc.problem.Problem.placement], computed on indices (no strings, no
        objects)."""
        job = self.jobs[j]
        obj = self.objective
        if "grid" not in obj.factors and "speed" not in obj.factors:
            if obj.factors:                                   # milli-GPU
                return float(sum(m for _, m in a.gpus))
            return 1.0
        v = job.weight * round(self.throughput_of(j, a), 9)
        prof = job.profile
        if prof is not None and prof.goodput is not None and job.current is not None \
                and prof.goodput.restart_factor < 1.0 and not a.same_as(self.current_assign(j)):
            v *= prof.goodput.restart_factor
        return v

    def throughput_of(self, j: int, a: Assign) -> float:
        """[`alloc.objectives.throughput`][alloc.objectives.throughput] of job j placed as ``a``,
on indices: the one formula ([`alloc.objectives.rate`][alloc.objectives.rate]) on the GPU
        types, the span level and the number of servers read from the index arrays."""
        job = self.jobs[j]
        n = len(a.gpus)
        cpu = sum(v for _, v in a.cpu)
        mem = sum(v for _, v in a.mem)
        if not n:
            return rate(job, 0, cpu, mem, (), None, servers=0)
        servers, gs = self.cluster.servers, self.gpu_server
        where = [gs[g] for g, _ in a.gpus]
        types = [servers[s].gpu_type for s in where]
        held = len(set(where)) if job.profile is not None and job.profile.goodput is not None \
            else None                                 # only a goodput job's speed reads it
        return rate(job, n, cpu, mem, types, self.span_level_of(a) if n > 1 else None,
                    servers=held)

    def span_level_of(self, a: Assign) -> str:
        """The innermost level one node of which holds all of ``a``'s GPUs."""
        gpus = [g for g, _ in a.gpus]
        for level in reversed(self.levels):
            dom = self.domain[level]
            d0 = dom[gpus[0]]
            if all(dom[g] == d0 for g in gpus[1:]):
                return level
        return CLUSTER


def order_ranks(order: Sequence[str] | None) -> dict[str, int] | None:
    """``{job id: position}`` of a ranked list of job ids (highest first), or None."""
    if order is None:
        return None
    return {jid: k for k, jid in enumerate(order)}


def option_of(problem: Problem, j: int, a: Assign) -> int:
    """Index of the option whose CPU and memory ``a`` gives job j (0 if none)."""
    cpu = sum(v for _, v in a.cpu)
    mem = sum(v for _, v in a.mem)
    for o, opt in enumerate(problem.options[j]):
        if opt.cpu == cpu and opt.mem == mem:
            return o
    return 0


def job_type_key(problem: Problem, j: int) -> tuple[Any, ...]:
    """What makes two jobs interchangeable for every solver: shape, options,
    allowed GPU types with their speeds, the span factors of the levels the
    job can span and its elastic sizes (only the factors the objective uses),
    weight, tenancy and preferred level."""
    from .objectives import job_sizes
    from .topology import reachable_levels
    job = problem.jobs[j]
    prof = job.profile
    f = problem.objective.factors
    opts = tuple((o.cpu, o.mem, round(o.base, 12) if "grid" in f else 0.0)
                 for o in problem.options[j])
    types = tuple(bool(x) for x in problem.type_ok[j])
    speeds = tuple(round(prof.speed(t), 12) for t in problem.types) \
        if prof is not None and "speed" in f else ()
    span: tuple[float, ...] = ()
    if prof is not None and "span" in f and (job.gpus > 1 or job.elastic):
        span = tuple(round(prof.span_factor(lv), 12)
                     for lv in reachable_levels(problem.cluster, job.locality))
    sizes: tuple[Any, ...] = ()
    if job.elastic:
        sizes = (tuple(job_sizes(job)),
                 tuple(sorted(prof.scaling.items())) if prof is not None and "scale" in f else ())
    weight = job.weight if "weight" in f else 1.0
    return (job.gpus, job.gpu_milli, job.locality, opts, weight, types, speeds, span, sizes,
            job.tenant, job.guaranteed, job.preferred, job.gpus_per_server)


def job_types(problem: Problem, jobs: Sequence[int] | None = None) -> list[list[int]]:
    """Groups of interchangeable jobs ([`job_type_key`][alloc.problem.job_type_key]), each in rank
order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for j in (problem.pending if jobs is None else jobs):
        groups.setdefault(job_type_key(problem, j), []).append(j)
    return [sorted(g, key=lambda j: problem.rank[j]) for g in groups.values()]


def job_order(problem: Problem, key: Callable[[int], Any] | None = None,
              jobs: Sequence[int] | None = None) -> list[int]:
    """The pending jobs (or ``jobs``) by rank: the explicit order, else priority
    (highest first) and then ``key`` (default: input order).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, job_order
    >>> from alloc.problem import compile_problem
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000), Job("b", 1, cpu=1000, mem=1000, priority=5)]
    >>> p = compile_problem(cluster, jobs)
    >>> [p.jobs[j].id for j in job_order(p)]
    ['b', 'a']
    """
    pk = problem.prio_key
    src = problem.pending if jobs is None else jobs
    return sorted(src, key=lambda j: (pk[j], key(j) if key else j))


def compile_problem(cluster: Cluster, jobs: Sequence[Job], objective: str | Objective = "throughput",
                    name: str = "", **kw: Any) -> Problem:
    """The [`Problem`][alloc.problem.Problem] of validated input (see
[`Problem`][alloc.problem.Problem])."""
    return Problem(cluster, jobs, objective, name, **kw)


__all__ = ["Assign", "ClusterArrays", "add_assign", "GridPoint", "Problem", "Solution", "cluster_arrays",
           "compile_problem", "job_order", "job_type_key", "order_ranks", "job_types", "option_of", "pareto_options", "placeable_reason", "split", "MILLI"]


__getattr__ = renamed(__name__, {"Option": "GridPoint"}, globals())

r"""Why each waiting job waits: one line for every job an answer leaves
unplaced (the instance format promises it).

The compile step gives the reason of a job that cannot be placed on this
cluster now (`alloc.problem.placeable_reason`).  For every other job left
unplaced, `waiting_reasons` says why from the answer itself:

* a running job stopped: the job(s) placed now that it was stopped for
  (`alloc.tenancy.outranks`, on a server it held);
* a guaranteed job: its tenant's cells and what fills them
  (`alloc.tenancy.guarantee_reason`) -- or, when they have room for it,
  the GPUs of it reserved (``stats["reserved"]``: job id -> GPU ids, as
  AntMan's rule 4 keeps them) for pending guaranteed jobs of its tenant
  ranked above it;
* any other job: the room the answer leaves against what the job needs.
  With ``F_s`` the whole GPUs left free on server ``s`` (milli left on its
  fullest GPU for a shared job; where GPU memory or compute may bind, only
  the GPUs with one share of the job's left count), ``C_s``, ``M_s`` its
  free CPU and memory,
  and the job's smallest size ``n`` (``min_gpus`` when elastic) at its
  smallest CPU ``c`` and memory ``m`` (over its grid points when the solver
  may re-size it), the job *fits the room* when some allowed server has
  ``F_s >= n``, ``C_s >= c`` and ``M_s >= m`` (inside one node of its
  locality level), or -- for a solver that spreads a gang -- when the
  allowed servers' usable GPUs ``min(F_s, C_s / ceil(c / n), M_s / ceil(m /
  n))`` add up to ``n`` (in one rack for rack locality; an elastic job
  whose smallest size is one GPU spreads at ``n = 2`` when it may grow
  there).  A job that does not fit waits for room, with the most the
  cluster offers now; one that fits was left out by the solver's own rule
  (a solver that does not spread says so).

A job that declares GPU memory (``gpu_mem``; ``gpu_mem_min`` when it may
spill to host memory) and that too few of the GPUs it may use can hold --
on one server, for a job that must sit on one or a solver that does not
spread -- however empty they are, is told so instead: it waits for no room
(the GPUs' memory capacities are read off the cluster, so the test holds for
`outside_reasons` too, which has no account of the memory in use).

Jobs of one shape share one line, computed once (a vector test over the
servers), so a round with thousands of waiting jobs of a few shapes costs a
few tests.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .model import MILLI
from .problem.placeable import spread_width
from .topology import is_outer

#: the locality levels inside a server (a gang then fits one node of it)
INNER = ("socket", "switch")


class _Room:
    """What an answer leaves free, as arrays over the problem's servers and
    GPUs (built once per answer, on first need)."""

    def __init__(self, problem, assign: dict | None, free: tuple | None = None):
        p = self.p = problem
        if free is not None:              # the room itself: (GPU milli, CPU, memory)
            gf, cf, mf = free
        else:
            gf, cf, mf = p.gpu_free.copy(), p.free_cpu.copy(), p.free_mem.copy()
            from .problem import add_assign
            fixed = p.fixed
            for j, a in (assign or {}).items():
                old = fixed.get(j)
                if a is old:
                    continue
                add_assign(a, gf, cf, mf, -1)
                if old is not None:
                    add_assign(old, gf, cf, mf, 1)
            for j, a in fixed.items():
                if assign is None or j not in assign:
                    add_assign(a, gf, cf, mf, 1)
        self.gfree, self.cfree, self.mfree = gf, cf, mf
        srv = p.gpu_server
        self.whole = np.bincount(srv[gf >= MILLI], minlength=p.S)
        top = np.full(p.S, -1, dtype=np.int64)
        if p.G:
            np.maximum.at(top, srv, gf)
        self.top = top
        self._masks: dict = {}
        #: GPU memory and compute left per GPU with ``assign`` holding, where they
        #: may bind (`alloc.preempt`'s account of them)
        self.left = None
        if free is None and p.needs & {"gpu-memory", "gpu-compute"}:
            from .preempt import GpuLeft
            self.left = GpuLeft(p, assign or {})
        self._fits: dict = {}

    def gpus_for(self, job) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(gfree, whole, top)`` for the job: free milli per GPU, whole free
        GPUs and the most free milli on one GPU per server, counting only the
        GPUs with one share of its GPU memory and compute left (where they
        may bind; one test per memory and compute demand)."""
        if self.left is None:
            return self.gfree, self.whole, self.top
        key = (job.gpu_mem, job.gpu_compute, job.gpu_milli)
        hit = self._fits.get(key)
        if hit is None:
            p = self.p
            self.left.need_of(job)
            gf = np.where(self.left.room(), self.gfree, -1)
            top = np.full(p.S, -1, dtype=np.int64)
            if p.G:
                np.maximum.at(top, p.gpu_server, gf)
            hit = self._fits[key] = (gf, np.bincount(p.gpu_server[gf >= MILLI], minlength=p.S),
                                     top)
        return hit

    def allowed(self, job) -> np.ndarray:
        """Per server: it has a GPU type the job may use (any server for a
        CPU-only job); one mask per set of types."""
        key = job.gpu_types if job.gpus else None
        hit = self._masks.get(key)
        if hit is None:
            p = self.p
            if key is None:
                hit = np.ones(p.S, dtype=bool)
            else:
                ok = np.array([job.allows(t) for t in p.types] + [False], dtype=bool)
                hit = ok[np.where(p.srv_type >= 0, p.srv_type, len(p.types))]
            self._masks[key] = hit
        return hit

    def best_server(self, vals: np.ndarray, mask: np.ndarray) -> tuple[int, int]:
        """(value, server) of the largest ``vals`` among ``mask`` (-1, -1: none)."""
        cand = np.flatnonzero(mask)
        if not len(cand):
            return -1, -1
        k = int(cand[np.argmax(vals[cand])])
        return int(vals[k]), k


def _smallest(job, options, resizes: bool) -> tuple[int, int, int]:
    """The job's fewest GPUs and its least CPU and memory (over its grid
    points ``options`` when the solver re-sizes jobs; an elastic job asks its
    CPU and memory whatever its size)."""
    n = job.min_gpus if job.elastic and job.min_gpus is not None else job.gpus
    opts = options if resizes else options[:1]
    return n, min(o.cpu for o in opts), min(o.mem for o in opts)


def _fit(room: _Room, problem, job, shape, spreads: bool) -> tuple[bool, str]:
    """(fits the room, the line saying what the job needs and the most there
    is) -- see the module notes."""
    p = problem
    n, c, m = shape
    servers = p.cluster.servers
    allowed = room.allowed(job)
    ok_cm = allowed & (room.cfree >= c) & (room.mfree >= m)
    if n == 0:
        fits = bool(ok_cm.any())
        _, s = room.best_server(np.minimum(room.cfree * max(1, m), room.mfree * max(1, c)),
                                allowed)
        most = "" if s < 0 else (f"; the most free on one server: {int(room.cfree[s])} "
                                 f"milli-CPU and {int(room.mfree[s])} MiB ({servers[s].id})")
        return fits, f"needs {c} milli-CPU and {m} MiB on one server{most}"
    gfree, whole, top = room.gpus_for(job)
    vram = f" with {job.gpu_mem} MiB of GPU memory" \
        if room.left is not None and job.gpu_mem is not None else ""
    if job.gpu_milli < MILLI:
        fits = bool((ok_cm & (top >= job.gpu_milli)).any())
        v, s = room.best_server(top, allowed & ok_cm) if ok_cm.any() else \
            room.best_server(top, allowed)
        most = "" if s < 0 else f"; the most free on one GPU: {v} milli ({servers[s].id})"
        return fits, (f"needs {job.gpu_milli} milli of one GPU{vram}, {c} milli-CPU and {m} MiB on "
                      f"its server{most}")
    loc = job.locality
    if loc in INNER and loc in p.domain:
        dom = p.domain[loc]
        free = gfree >= MILLI
        cnt = np.bincount(dom[free], minlength=int(dom.max()) + 1 if len(dom) else 0)
        per_gpu = cnt[dom] if len(dom) else cnt
        best = np.zeros(p.S, dtype=np.int64)
        if p.G:
            np.maximum.at(best, p.gpu_server, np.where(free, per_gpu, 0))
        where = f" in one {loc}"
    else:
        best, where = whole, ""
    fits = bool((ok_cm & (best >= n)).any())
    v, s = room.best_server(best, allowed & ok_cm) if ok_cm.any() else \
        room.best_server(best, allowed)
    most = "" if s < 0 else f"; the most free{where} on one allowed server: {v} ({servers[s].id})"
    line = f"needs {n} GPU{'s' if n != 1 else ''}{vram}{where}, {c} milli-CPU and {m} MiB on one server{most}"
    wide = spread_width(job, n)
    if wide is None:
        return fits, line
    cper, mper = -(-c // wide), -(-m // wide)
    use = np.minimum(whole, room.cfree // cper if cper else whole)
    use = np.where(allowed, np.minimum(use, room.mfree // mper if mper else use), 0)
    if is_outer(loc):
        total = int(np.bincount(p.arrays.srv_domain[loc], use).max()) if p.S else 0
        scope = f"one {loc}"
    else:
        total, scope = int(use.sum()), "the cluster"
    spread_fits = total >= wide
    at = f" at {wide} GPUs" if wide > n else ""
    line += f"; spread over servers{at}, {scope} has {total} usable"
    if spread_fits and not spreads and not fits:
        return False, line + " (this solver does not spread a job over servers)"
    return fits or (spreads and spread_fits), line


def _gpu_mem_line(room: _Room, p, job, n: int, spreads: bool) -> str | None:
    """The line of a job that declares GPU memory when too few of the GPUs
    it may use can hold it, however empty (module notes); None when enough
    can.  ``n``: its fewest GPUs."""
    from .resources import gpu_mem_caps, mem_floor
    need = mem_floor(job, 0)
    caps = np.asarray(gpu_mem_caps(p.cluster), dtype=np.int64)
    mine = room.allowed(job)[p.gpu_server]
    big = mine & (caps >= need)
    per = np.bincount(p.gpu_server[big], minlength=p.S)
    most = int(per.max()) if p.S else 0
    if most >= n:
        return None
    what = f"needs {n} GPU{'s' if n != 1 else ''} with {need} MiB of GPU memory"
    if not most:
        largest = int(caps[mine].max()) if mine.any() else 0
        return f"{what}; the largest GPU it may use has {largest} MiB"
    loc = job.locality
    one = job.gpu_milli < MILLI or not (loc is None or is_outer(loc))
    where = (f"{what} on one server; the most such GPUs on one server it may use: {most} "
             f"({p.cluster.servers[int(np.argmax(per))].id})")
    if one:
        return where
    if is_outer(loc):
        total, scope = int(np.bincount(p.arrays.srv_domain[loc], per).max()), f"one {loc}"
    else:
        total, scope = int(per.sum()), "the cluster"
    if total < n:
        return f"{what}; {scope} has {total} such GPUs it may use"
    if spreads or job.even_servers:
        return None
    return where + " (this solver does not spread a job over servers)"


def waiting_reasons(problem, assign: dict, capabilities: Iterable[str], solver: str = "",
                    stats=None) -> dict[int, str]:
    """One line per job left unplaced without a compile-time reason (job
    index -> why; module notes).

    Parameters
    ----------
    problem : Problem
        The compiled problem.
    assign : dict
        The answer: job index -> assignment (running jobs kept included).
    capabilities : iterable of str
        The solver's capabilities (``spread``, ``grid``).
    solver : str
        Its name, for the line of a job it left out though it fits.
    stats : mapping, optional
        The answer's statistics (``binding`` of the tenants' cells).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.problem import compile_problem
    >>> from alloc.waiting import waiting_reasons
    >>> c = Cluster((Server("s0", cpu=8000, mem=64000, gpus=4, gpu_type="V100"),))
    >>> p = compile_problem(c, [Job("a", 3, cpu=1000, mem=1000), Job("b", 2, cpu=1000, mem=1000)])
    >>> a = {0: p.make_assign(0, [0, 1, 2], 0)}
    >>> waiting_reasons(p, a, {"spread"})
    {1: 'waits for room: needs 2 GPUs, 1000 milli-CPU and 1000 MiB on one server; the most free on one allowed server: 1 (s0); spread over servers, the cluster has 1 usable'}
    """
    p = problem
    waiting = [j for j in range(p.J) if j not in assign and j not in p.reasons]
    if not waiting:
        return {}
    caps = frozenset(capabilities)
    out: dict[int, str] = {}
    room: _Room | None = None
    lines: dict[tuple, Any] = {}
    stopped = [j for j in waiting if j in p.fixed]
    if stopped:
        out.update(_stopped_reasons(p, assign, stopped))
    guaranteed = [j for j in waiting if j not in out and p.jobs[j].guaranteed]
    if guaranteed:
        from .tenancy import guarantee_reasons
        out.update(guarantee_reasons(p, assign, guaranteed, stats or {}))
        out.update(_reserved_reasons(p, assign, guaranteed, stats or {}))
    jobs, options, get = p.jobs, p.options, lines.get
    for j in waiting:
        if out and j in out:
            continue
        job, opts = jobs[j], options[j]
        hit = get((id(opts), job.gpus, job.gpu_milli, job.min_gpus, job.max_gpus,
                   job.gpu_types, job.locality, job.gpu_mem, job.gpu_mem_min,
                   job.gpu_compute))   # `_line`'s first lookup, inline
        if hit is not None and hit[0] is opts:
            out[j] = hit[1]
            continue
        if room is None:
            room = _Room(p, assign)
        out[j] = _line(room, p, job, opts, caps, solver, lines)
    return out


def _reserved_reasons(p, assign: dict, waiting: list[int], stats) -> dict[int, str]:
    """The line of each waiting guaranteed job (of ``waiting``) whose
    tenant's cells have room for its GPUs, some of it reserved for pending
    guaranteed jobs of its tenant ranked above it (``stats["reserved"]``)."""
    held = stats.get("reserved") if stats else None
    if not held or not isinstance(held, dict):
        return {}
    from .tenancy import quota_gpus, quotas
    c, jobs, idx = p.cluster, p.jobs, p.cluster.gpu_index
    kind = [c.servers[int(s)].gpu_type for s in p.gpu_server]
    gangs = sorted((k for k in map(p.job_index.get, held) if k is not None and k not in assign
                    and k not in p.fixed and jobs[k].guaranteed), key=lambda k: int(p.rank[k]))
    out: dict[int, str] = {}
    for j in waiting:
        job, v = jobs[j], jobs[j].tenant
        ahead = [k for k in gangs if jobs[k].tenant == v and int(p.rank[k]) < int(p.rank[j])]
        types = sorted({t for (t, _), q in quotas(c).get(v, {}).items() if q and job.allows(t)})
        gpus = sorted({g for k in ahead for g in held[jobs[k].id]
                       if g in idx and kind[idx[g]] in types}, key=idx.__getitem__)
        if not gpus or not job.gpus:
            continue
        quota = sum(quota_gpus(c, v, t) for t in types)
        taken = len({g for i, a in assign.items() if jobs[i].guaranteed and jobs[i].tenant == v
                     for g, _ in a.gpus if kind[g] in types})
        n = job.min_gpus if job.elastic and job.min_gpus is not None else job.gpus
        if quota - taken < max(n, 1):
            continue                          # its cells are full: that line stands
        names = ", ".join(repr(jobs[k].id) for k in ahead[:3]) + \
            (f" and {len(ahead) - 3} more" if len(ahead) > 3 else "")
        whom = "a gang" if len(ahead) == 1 else "gangs"
        some = "all" if len(gpus) >= quota - taken else f"{len(gpus)} of them"
        rest = "" if some == "all" else \
            f", and no room for {n} GPUs with its CPU and memory in the rest"
        out[j] = (f"tenant {v!r}'s cells have {quota - taken} of {quota} {'/'.join(types)} "
                  f"GPUs not held by its guaranteed jobs, {some} reserved for {names}, {whom} "
                  f"of its tenant ranked above it ({', '.join(gpus[:4])}"
                  + (f" and {len(gpus) - 4} more" if len(gpus) > 4 else "") + f"){rest}")
    return out


def _line(room: _Room, p, job, options, caps: frozenset, solver: str, lines: dict) -> str:
    """The line of a waiting job that is neither stopped nor guaranteed
    (``lines``: the lines found so far, by shape, and by the very options
    object and the fields the shape is made of: jobs of one shape share
    their options, so most jobs cost one lookup)."""
    fast = (id(options), job.gpus, job.gpu_milli, job.min_gpus, job.max_gpus, job.gpu_types,
            job.locality, job.gpu_mem, job.gpu_mem_min, job.gpu_compute)
    hit = lines.get(fast)
    if hit is not None and hit[0] is options:      # the options object kept alive in it
        return hit[1]
    shape = _smallest(job, options, "grid" in caps)
    key = (shape, job.gpu_milli if job.gpus else 0, job.gpu_types, job.locality,
           (job.gpu_mem, job.gpu_mem_min, job.gpu_compute) if job.gpus else None)
    line = lines.get(key)
    if line is None:
        never = _gpu_mem_line(room, p, job, shape[0], "spread" in caps) \
            if job.gpus and job.gpu_mem is not None else None
        if never is not None:
            line = lines[key] = never
        else:
            fits, what = _fit(room, p, job, shape, "spread" in caps)
            line = lines[key] = (f"left waiting by {solver or 'the solver'}'s rule though it "
                                 f"fits the room left: {what}") if fits else \
                f"waits for room: {what}"
    lines[fast] = (options, line)
    return line


def outside_reasons(problem, free: tuple, jobs, capabilities: Iterable[str],
                    solver: str = "") -> list[str]:
    """The line `waiting_reasons` would give each of ``jobs``, waiting jobs
    held out of the problem (neither running, guaranteed nor a tenant's), had
    the problem held them and the answer left them waiting: one test per
    shape against ``free``, the room the answer leaves (milli-GPU per GPU,
    CPU and memory per server, arrays over the problem's GPUs and servers).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.problem import compile_problem
    >>> from alloc.waiting import outside_reasons
    >>> c = Cluster((Server("s0", cpu=8000, mem=64000, gpus=4, gpu_type="V100"),))
    >>> p = compile_problem(c, [Job("a", 3, cpu=1000, mem=1000)])
    >>> free = (np.array([0, 0, 0, 1000]), np.array([7000]), np.array([63000]))
    >>> outside_reasons(p, free, [Job("b", 2, cpu=1000)], ())
    ['waits for room: needs 2 GPUs, 1000 milli-CPU and 0 MiB on one server; the most free on one allowed server: 1 (s0); spread over servers, the cluster has 1 usable']
    """
    from .problem import pareto_options
    caps = frozenset(capabilities)
    room = _Room(problem, None, free)
    lines: dict[tuple, Any] = {}
    return [_line(room, problem, job, pareto_options(job), caps, solver, lines) for job in jobs]


def _stopped_reasons(p, assign: dict, stopped: list[int]) -> dict[int, str]:
    """Each stopped running job: the jobs placed now that it was stopped for
    (fresh placements that outrank it on a server it held)."""
    fresh = [i for i, a in assign.items() if p.fixed.get(i) is not a and
             (i not in p.fixed or not a.same_as(p.fixed[i]))]
    out = {}
    for r in stopped:
        held = p.servers_of(p.fixed[r])
        by = [p.jobs[i].id for i in fresh if i != r and p.outranks(i, r)
              and held & p.servers_of(assign[i])]
        job = p.jobs[r]
        mine = f" (tenant {job.tenant!r}'s cells had no room for both)" if job.guaranteed else ""
        out[r] = ("preempted: stopped for " + ", ".join(map(repr, by[:3]))
                  + (f" and {len(by) - 3} more" if len(by) > 3 else "")
                  + (", which outranks it" if len(by) == 1 else ", which outrank it")
                  + f", on servers it held{mine}") if by else \
            f"preempted: stopped by the solver{mine}"
    return out


__all__ = ["outside_reasons", "waiting_reasons"]

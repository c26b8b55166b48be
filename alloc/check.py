"""``violations(cluster, jobs, allocation)``: every hard constraint an
allocation breaks, one readable line each (empty list = valid).

Checked:

* each job exactly once in ``placements`` or ``unplaced``;
* per placement ([`placement_problems`][alloc.check.placement_problems], shared with the validation
  of
  running jobs' ``current``): known GPUs and servers, gang (all of a job's GPUs
  or none, each with its share), GPU type, locality level, an even spread's
  ``gpus_per_server`` GPUs (and an even share of CPU and memory) on each of
  its servers, CPU and memory only
  on servers that hold the job's GPUs (one server for a CPU-only job), CPU and
  memory equal to the request or a feasible grid point of its profile;
* capacities: no server over its CPU or memory, no GPU over 1000 milli, nor
  over its memory or compute (`alloc.resources`: a share's memory and compute
  caps within the job's demand, opportunistic shares only where allowed);
* the reported throughput equals the recomputed one (and a goodput job's
  batch and accumulation steps the ones its goodput model chooses);
* live state: a running job (``current``) placed elsewhere is listed in
  ``moved`` and the moves fit the call's allowance (``max_moves``; a move is a
  change of GPUs, shares, CPU or memory); a running job not placed is listed in
  ``preempted``, and only for a job that outranks it (the tenancy rules, or
  the caller's order under ``preempt="order"``: [outranks][alloc.tenancy.outranks])
  and is placed now, not already running there, on a server the stopped job
  held; ``moved`` and ``preempted`` list nothing else;
* tenancy: guaranteed jobs inside their tenants' cells with sharing safety,
  co-location limits ([`alloc.tenancy`][alloc.tenancy]).

Every fact is recomputed from the cluster, the jobs and the allocation: what
the check needs of the cluster (GPU names, types, the node of every level
above each GPU, GPU memory, the cell forest) it reads itself
([`alloc.facts`][alloc.facts]), and the throughput is the one formula
([`alloc.objectives.rate`][alloc.objectives.rate]) on those facts.  Nothing
validation, the compile step, a solver or a scheduler loop keeps (on the
cluster, a profile, a placement or in a loop's carry) is read: caches make
the solve fast, never the check (``tests/test_check_independent.py``
corrupts each of them and shows the check still finds the fault).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Mapping, Sequence

from .deadline import Deadline
from .errors import InputError
from .facts import Facts, facts, grid_value
from .gpukey import server_of
from .model import MILLI, Allocation, Cluster, FrozenMap, Job, Placement, Server
from .objectives import goodput_rate, rate
from .profiles import resolve_models
from .resources import capacity_problems as gpu_resource_problems, share_problems


def _d(m: Mapping[str, int]) -> dict[str, int]:
    return m._d if isinstance(m, FrozenMap) else dict(m)


def placement_problems(cluster: Cluster, job: Job, p: Placement, where: str) -> list[str]:
    """What is wrong with one job's placement on its own (capacities aside).

    Parameters
    ----------
    cluster, job, p
        The cluster, the job and its placement.
    where : str
        Prefix of each message (``"job 'j3'"``, ``"jobs[3].current"``).
    """
    f = facts(cluster)
    if _fine(f, job, p):
        return []
    out: list[str] = []
    rows: list[Server] = []
    servers, gpu_server = f.servers, f.gpu_server
    for g in p.gpus:
        k = f.gpu.get(g.gpu)
        if k is None:
            return [f"{where}: unknown GPU {g.gpu!r}"]
        rows.append(servers[gpu_server[k]])
        if g.milli != job.gpu_milli and g.milli != 0 and not out:
            out.append(f"{where}: {g.gpu} share {g.milli} milli, job asks {job.gpu_milli}")
    n = len(rows)
    if n > 1 and len({g.gpu for g in p.gpus}) != n:
        out.append(f"{where}: the same GPU listed twice")
    lo = job.min_gpus if job.min_gpus is not None else job.gpus
    hi = job.max_gpus if job.max_gpus is not None else job.gpus
    if not (lo <= n <= hi) or (job.gpus and not n):
        out.append(f"{where}: got {n} GPUs, needs "
                   + (f"{job.gpus}" if lo == hi else f"{lo}..{hi}") + " (gang: all or none)")
    if job.gpu_types:
        for g, s in zip(p.gpus, rows):
            if s.gpu_type not in job.gpu_types:
                out.append(f"{where}: GPU {g.gpu} is {s.gpu_type}, allowed {list(job.gpu_types)}")
                break
    if job.locality and n > 1:
        if job.locality not in cluster.levels:
            out.append(f"{where}: locality {job.locality!r} is not a level of the cluster")
        else:
            doms = f.nodes(job.locality, [f.gpu[g.gpu] for g in p.gpus])
            if len(doms) > 1:
                out.append(f"{where}: GPUs span {len(doms)} {job.locality} nodes, "
                           f"locality needs one")
    k = job.gpus_per_server
    if k is not None and n:
        per: dict[str, int] = {}
        for s in rows:
            per[s.id] = per.get(s.id, 0) + 1
        if set(per.values()) != {k}:
            out.append(f"{where}: {k} GPUs on each server expected (gpus_per_server), got "
                       + ", ".join(f"{c} on {sid}" for sid, c in sorted(per.items())))
        for name, share in (("CPU", _d(p.cpu)), ("memory", _d(p.mem))):
            got = [share.get(sid, 0) for sid in per]
            if max(got) - min(got) > 1:
                out.append(f"{where}: {name} split {sorted(got)} over its servers; an even "
                           f"spread splits it evenly (gpus_per_server)")
    out += share_problems(cluster, job, p, where, gpu_index=f.gpu, caps=f.gpu_mem)
    return out + _cpu_mem_problems(f, job, p, where, {s.id for s in rows})


def _fine(f: Facts, job: Job, p: Placement) -> bool:
    """True only where [`placement_problems`][alloc.check.placement_problems]
    finds nothing: the common placement (known GPUs each with the job's
    share, no memory or compute caps, the requested CPU and memory on the
    GPUs' servers) tested without building a message.  False means "not
    this common case": the full test decides."""
    m = job.gpu_milli
    if type(m) is not int or m <= 0:
        return False
    rows: list[Server] = []
    names = set()
    gpu, gpu_server, servers = f.gpu, f.gpu_server, f.servers
    idx = []
    for g in p.gpus:
        k = gpu.get(g.gpu)
        if k is None or g.milli != m or g.mem is not None or g.compute is not None:
            return False
        rows.append(servers[gpu_server[k]])
        idx.append(k)
        names.add(g.gpu)
    n = len(rows)
    if len(names) != n or n != job.gpus or job.min_gpus is not None or job.max_gpus is not None \
            or job.gpus_per_server is not None:
        return False
    types = job.gpu_types
    if types and any(s.gpu_type not in types for s in rows):
        return False
    srv = {s.id for s in rows}
    if job.locality and n > 1 and not (job.locality == "server" and len(srv) == 1
                                       and "server" in f.domain) \
            and not f.one_node(job.locality, idx):
        return False                    # not in one node of its level: the full test's
    cpu, mem = _d(p.cpu), _d(p.mem)
    used = cpu.keys() | mem.keys()
    if n:
        if not used <= srv:
            return False
    elif len(used) != 1 or next(iter(used)) not in f.server:
        return False
    return (sum(cpu.values()), sum(mem.values())) == (job.cpu, job.mem) \
        and min(cpu.values(), default=0) >= 0 and min(mem.values(), default=0) >= 0


def _cpu_mem_problems(f: Facts, job: Job, p: Placement, where: str,
                      gsrv: set[str]) -> list[str]:
    out = []
    cpu, mem = _d(p.cpu), _d(p.mem)
    srv_ids = cpu.keys() | mem.keys()
    index = f.server
    for s in srv_ids:
        if s not in index:
            return [f"{where}: unknown server {s!r}"]
    if p.gpus:
        extra = srv_ids - gsrv
        if extra:
            out.append(f"{where}: CPU/memory on {sorted(extra)[0]} which holds none of its GPUs")
    elif len(srv_ids) != 1:
        out.append(f"{where}: a CPU-only job must use exactly one server, uses {len(srv_ids)}")
    tc, tm = sum(cpu.values()), sum(mem.values())
    if min(cpu.values(), default=0) < 0 or min(mem.values(), default=0) < 0:
        out.append(f"{where}: negative CPU or memory")
    prof = job.profile
    n = len(p.gpus)
    if (tc, tm) != (job.cpu, job.mem):
        if prof is not None and prof.has_grid and n:
            if grid_value(prof, tc / n, tm / n) <= 0:
                out.append(f"{where}: CPU {tc} / memory {tm} is no feasible point of "
                           f"profile {prof.name!r}")
        else:
            out.append(f"{where}: got CPU {tc} and memory {tm}, requested {job.cpu} and {job.mem}")
    return out


def capacity_problems(cluster: Cluster, placements: Sequence[Placement]) -> list[str]:
    """Servers over their CPU or memory and GPUs over 1000 milli."""
    gpu_use: dict[str, int] = defaultdict(int)
    cpu_use: dict[str, int] = defaultdict(int)
    mem_use: dict[str, int] = defaultdict(int)
    for p in placements:
        for g in p.gpus:
            gpu_use[g.gpu] += g.milli
        for s, v in _d(p.cpu).items():
            cpu_use[s] += v
        for s, v in _d(p.mem).items():
            mem_use[s] += v
    out = [f"GPU {g}: {used} milli allocated, capacity {MILLI}"
           for g, used in gpu_use.items() if used > MILLI]
    for srv in cluster.servers:
        if cpu_use.get(srv.id, 0) > srv.cpu:
            out.append(f"server {srv.id}: CPU {cpu_use[srv.id]} allocated, capacity {srv.cpu}")
        if mem_use.get(srv.id, 0) > srv.mem:
            out.append(f"server {srv.id}: memory {mem_use[srv.id]} allocated, capacity {srv.mem}")
    return out


def placement_servers(p: Placement) -> set[str]:
    """Ids of the servers a placement uses (its GPUs', its CPU's and memory's)."""
    out = set(_d(p.cpu)) | set(_d(p.mem))
    out.update(server_of(g.gpu) for g in p.gpus)
    return out


def live_state_problems(jobs: Sequence[Job], allocation: Allocation,
                        max_moves: int | None = 0, *, order: Sequence[str] | None = None,
                        preempt: str | None = None) -> list[str]:
    """Running jobs moved without allowance, dropped without being listed, or
    preempted but not for a job that outranks them and is placed now on a
    server they held; ``moved``/``preempted`` listing anything else
    (``max_moves=None``: moves unlimited; ``order`` and ``preempt`` as given
    to [allocate][alloc.solve.allocate])."""
    from .problem import order_ranks
    rank = order_ranks(order) if preempt == "order" else None
    out: list[str] = []
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in allocation.placements}
    moved_listed, pre_listed = set(allocation.moved), set(allocation.preempted)
    moved = set()
    for j in jobs:
        if j.current is None:
            continue
        p = placed.get(j.id)
        if p is not None and not p.same_as(j.current):
            moved.add(j.id)
            if j.id not in moved_listed:
                out.append(f"job {j.id!r}: running job moved but not listed in moved")
        elif p is None and j.id not in pre_listed:
            out.append(f"job {j.id!r}: running job dropped but not listed in preempted")
    for jid in sorted(moved_listed - moved):
        out.append(f"moved job {jid!r}: " + ("is not placed elsewhere than where it runs"
                                             if jid in by_id else "not in the instance"))
    if max_moves is not None and len(moved) > max_moves:
        out.append(f"{len(moved)} running job(s) moved, the call allows {max_moves}"
                   + (f" (first: {sorted(moved)[0]!r})" if moved else ""))
    fresh = _fresh_by_server(by_id, placed) if allocation.preempted else {}
    for jid in allocation.preempted:
        v = by_id.get(jid)
        if v is None:
            out.append(f"preempted job {jid!r}: not in the instance")
        elif v.current is None:
            out.append(f"preempted job {jid!r}: was not running (no current placement)")
        elif jid in placed:
            out.append(f"preempted job {jid!r}: is also placed")
        elif not _stopped_for(v, fresh, placed, rank):
            kind = (f"guaranteed job of tenant {v.tenant!r} (priority {v.priority})"
                    if v.guaranteed else f"job of priority {v.priority}" if rank is None
                    else "job ranked " + (f"{rank[v.id] + 1}" if v.id in rank else "last")
                    + " in the order")
            out.append(f"preempted job {jid!r}: a {kind} may only be preempted for a job "
                       f"that outranks it placed now on a server it held, and none is")
    return out


def _fresh_by_server(by_id: dict[str, Job], placed: dict[str, Placement]
                     ) -> dict[str, list[Job]]:
    """The jobs placed now and not already running there, by server id."""
    out: dict[str, list[Job]] = defaultdict(list)
    for jid, p in placed.items():
        a = by_id.get(jid)
        if a is not None and not p.same_as(a.current):
            for s in placement_servers(p):
                out[s].append(a)
    return out


def _stopped_for(v: Job, fresh: dict[str, list[Job]], placed: dict[str, Placement],
                 rank: Mapping[str, int] | None) -> bool:
    """Some job placed now on a server ``v`` held outranks ``v``."""
    from .tenancy import outranks
    if v.current is None:
        return False
    return any(a.id != v.id and outranks(a, v, rank)
               for s in placement_servers(v.current) for a in fresh.get(s, ()))


def _own_problems(cluster: Cluster, job: Job, p: Placement) -> tuple[list[str], bool]:
    """[`placement_problems`][alloc.check.placement_problems] of a placed job and its reported
    throughput against the one recomputed here (`throughput_of`); whether
    its GPUs and servers are known (it then counts in the capacities)."""
    where = f"job {p.job!r}"
    bad = placement_problems(cluster, job, p, where)
    if bad and any("unknown" in b for b in bad):
        return bad, False
    f = facts(cluster)
    tp = throughput_of(f, job, p)
    if abs(tp - p.throughput) > 1e-6 * max(1.0, abs(tp)):
        bad = bad + [f"{where}: reported throughput {p.throughput} but it is {tp:.6g}"]
    prof = job.profile
    if prof is not None and prof.goodput is not None and p.gpus:
        _, b, s = goodput_of(f, job, p)
        if (p.batch, p.accum) != (b, s):
            bad = bad + [f"{where}: reported per-GPU batch {p.batch} with {p.accum} "
                         f"accumulation steps but its goodput's best is {b} with {s}"]
    return bad, True


def throughput_of(f: Facts, job: Job, p: Placement) -> float:
    """The throughput ``job`` earns placed as ``p`` (known GPUs), recomputed
    by the check: the one formula ([`alloc.objectives.rate`][alloc.objectives.rate])
    on the GPU types, the span level, the number of servers and the grid
    value the check reads itself (`alloc.facts`)."""
    gpus = [f.gpu[g.gpu] for g in p.gpus]
    where = [f.gpu_server[g] for g in gpus]
    types = [f.gpu_type[g] for g in gpus]
    level = f.span_level(gpus) if len(gpus) > 1 else None
    return rate(job, len(gpus), sum(_d(p.cpu).values()), sum(_d(p.mem).values()), types, level,
                grid=grid_value, servers=len(set(where)))


def goodput_of(f: Facts, job: Job, p: Placement) -> tuple[float, int, int]:
    """``(throughput, batch, accum)`` a goodput job earns placed as ``p``
    (known GPUs), recomputed by the check
    ([`alloc.objectives.goodput_rate`][alloc.objectives.goodput_rate] on the
    GPU types and the number of servers the check reads itself)."""
    gpus = [f.gpu[g.gpu] for g in p.gpus]
    where = [f.gpu_server[g] for g in gpus]
    return goodput_rate(job, len(gpus), [f.gpu_type[g] for g in gpus], len(set(where)))


def violations(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
               max_moves: int | None = 0, deadline: Deadline | None = None,
               order: Sequence[str] | None = None,
               preempt: str | None = None) -> list[str]:
    """Every hard constraint ``allocation`` breaks (see the module notes).

    Parameters
    ----------
    cluster, jobs, allocation
        The input and the answer to check.
    max_moves : int or None
        Running jobs the call allowed to move (None: any number).
    deadline : Deadline, optional
        Bounds the tenancy binding search (the only part that is not linear).
    order, preempt
        The call's job order and preemption rule (``preempt="order"``: a
        running job may be stopped for a job the order ranks above it).

    Returns
    -------
    list of str
        One line per violation; empty when the allocation is valid.

    Raises
    ------
    InputError
        A job names a model that ``models/`` does not have (jobs that name a
        model without a profile are read with its profile, as
        [`alloc.allocate`][alloc.solve.allocate] reads them).

    Examples
    --------
    >>> from dataclasses import replace
    >>> from alloc import Cluster, GpuShare, Job, Server, allocate, violations
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> jobs = [Job("a", 1, cpu=1000, mem=1000), Job("b", 1, cpu=1000, mem=1000)]
    >>> a = allocate(cluster, jobs)
    >>> violations(cluster, jobs, a)
    []
    >>> same_gpu = tuple(replace(p, gpus=(GpuShare("s0/gpu0", 1000),)) for p in a.placements)
    >>> violations(cluster, jobs, replace(a, placements=same_gpu))
    ['GPU s0/gpu0: 2000 milli allocated, capacity 1000']
    """
    jobs, unknown = resolve_models(tuple(jobs))     # model names, as allocate() reads them
    if unknown:
        raise InputError(unknown)
    out: list[str] = []
    by_id = {j.id: j for j in jobs}
    seen = Counter([p.job for p in allocation.placements] + list(allocation.unplaced))
    for jid, n in seen.items():
        if jid not in by_id:
            out.append(f"job {jid!r}: not in the instance")
        elif n > 1:
            out.append(f"job {jid!r}: appears {n} times in placements/unplaced")
    out += [f"job {jid!r}: missing from both placements and unplaced"
            for jid in by_id if jid not in seen]
    good = []
    for p in allocation.placements:
        job = by_id.get(p.job)
        if job is None:
            continue
        bad, known = _own_problems(cluster, job, p)
        out += bad
        if known:
            good.append(p)
    out += capacity_problems(cluster, good)
    caps = allocation.stats.get("gpu_mem_capacity") if allocation.stats else None
    f = facts(cluster)
    out += gpu_resource_problems(cluster, jobs, good, caps if isinstance(caps, Mapping) else None,
                                 gpu_index=f.gpu)
    out += live_state_problems(jobs, allocation, max_moves, order=order, preempt=preempt)
    if cluster.tenants or any(j.guaranteed for j in jobs):
        from .tenancy import tenancy_violations
        out.extend(tenancy_violations(cluster, jobs, allocation, deadline=deadline,
                                      gpu_index=f.gpu, tree=f.tree))
    return out


__all__ = ["capacity_problems", "live_state_problems", "placement_problems",
           "placement_servers", "throughput_of", "violations"]

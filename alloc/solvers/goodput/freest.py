r"""``freest-first``: the placement of the Pollux artifact's baselines.

Pending jobs in the caller's order (then priority, then input order); each
takes its GPUs from the server with the most free GPUs of a type it allows
(the lowest index on ties), then the next freest, until it has them all
(a job with ``locality="server"``: the freest server that holds all of
them).  CPU and memory are split over its servers in proportion to its GPUs;
when a split does not fit, the job takes the first server that holds it
whole, else it waits.  The GPUs keep the order they were taken in (the
Pollux simulator's traces key a placement by its nodes in that order).
Running jobs stay where they run.

Examples
--------
>>> from alloc import Cluster, Job, Server, allocate
>>> c = Cluster((Server("s0", 8000, 64000, 4), Server("s1", 8000, 64000, 4)))
>>> a = allocate(c, [Job("a", 2, cpu=100, mem=100), Job("b", 4, cpu=100, mem=100)],
...              solver="freest-first")
>>> [(p.job, sorted({g.gpu.split("/")[0] for g in p.gpus})) for p in a.placements]
[('a', ['s0']), ('b', ['s1'])]
"""
from __future__ import annotations

from ...model import MILLI
from ...problem import Assign, Problem, Solution, split


def solve(problem: Problem, *, deadline, seed: int = 0, **options: object) -> Solution:
    """Place the pending jobs freest-first (module notes)."""
    cl = problem.cluster
    first = problem.gpu_first
    free = {s: [int(first[s]) + k for k in range(srv.gpus)
                if problem.gpu_free[int(first[s]) + k] == MILLI]
            for s, srv in enumerate(cl.servers)}
    cpu = [int(x) for x in problem.free_cpu]
    mem = [int(x) for x in problem.free_mem]
    assign: dict[int, Assign] = {}
    order = sorted(problem.pending, key=lambda j: problem.rank[j])
    allowed: dict[tuple, tuple[list[int], set[int]]] = {}   # the servers of a job's GPU types
    avail = {s for s, gs in free.items() if gs}     # servers with a free GPU (only shrinks)
    for j in order:
        if deadline.expired():
            break
        job = problem.jobs[j]
        opt = problem.options[j][problem.request_option[j]]
        key = (not job.gpus, job.gpu_types)
        hit = allowed.get(key)
        if hit is None:
            ok = [s for s, srv in enumerate(cl.servers) if job.allows(srv.gpu_type) or not job.gpus]
            hit = allowed[key] = (ok, set(ok))
        ok, ok_set = hit
        a = _freest(job.gpus, job.locality, opt.cpu, opt.mem, avail & ok_set, free, cpu, mem) \
            or _whole(job.gpus, opt.cpu, opt.mem, ok, free, cpu, mem)
        if a is None:
            continue
        assign[j] = a
        for g, _ in a.gpus:
            s = int(problem.gpu_server[g])
            free[s].remove(g)
            if not free[s]:
                avail.discard(s)
        for s, v in a.cpu:
            cpu[s] -= v
        for s, v in a.mem:
            mem[s] -= v
    return Solution(assign)


def _freest(n: int, locality, c: int, m: int, ok: set[int], free: dict, cpu: list, mem: list
            ) -> Assign | None:
    """``ok``: the allowed servers with a free GPU (the choice below breaks
    every tie by index, so their order does not matter)."""
    if n == 0:
        return None
    left = {s: len(free[s]) for s in ok}
    if locality is not None:
        fits = [s for s in left if left[s] >= n]
        if not fits:
            return None
        left = {max(fits, key=lambda s: (left[s], -s)): n}
    taken: list[tuple[int, int]] = []
    servers: list[int] = []
    while len(taken) < n and left:
        s = max(left, key=lambda s: (left[s], -s))
        k = min(left.pop(s), n - len(taken))
        taken += [(g, MILLI) for g in free[s][:k]]
        servers.append(s)
    if len(taken) < n:
        return None
    counts = [sum(1 for g, _ in taken if g in free[s]) for s in servers]
    cs, ms = split(c, counts), split(m, counts)
    if any(cs[i] > cpu[s] or ms[i] > mem[s] for i, s in enumerate(servers)):
        return None
    return Assign(tuple(taken), tuple(zip(servers, cs)), tuple(zip(servers, ms)))


def _whole(n: int, c: int, m: int, ok: list[int], free: dict, cpu: list, mem: list
           ) -> Assign | None:
    for s in ok:
        if len(free[s]) >= n and cpu[s] >= c and mem[s] >= m:
            return Assign(tuple((g, MILLI) for g in free[s][:n]), ((s, c),), ((s, m),))
    return None


__all__ = ["solve"]

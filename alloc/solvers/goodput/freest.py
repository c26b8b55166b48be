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

from heapq import heapify, heappop, heappush

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
    allowed: dict[tuple, list[int]] = {}            # the servers of a job's GPU types
    heaps = _Heaps(free)
    for j in order:
        if deadline.expired():
            break
        job = problem.jobs[j]
        opt = problem.options[j][problem.request_option[j]]
        key = (not job.gpus, job.gpu_types)
        ok = allowed.get(key)
        if ok is None:
            ok = allowed[key] = [s for s, srv in enumerate(cl.servers)
                                 if job.allows(srv.gpu_type) or not job.gpus]
        a = _freest(job.gpus, job.locality, opt.cpu, opt.mem, heaps.of(key, ok), free, cpu,
                    mem) or _whole(job.gpus, opt.cpu, opt.mem, ok, free, cpu, mem)
        if a is None:
            continue
        assign[j] = a
        touched = set()
        for g, _ in a.gpus:
            s = int(problem.gpu_server[g])
            free[s].remove(g)
            touched.add(s)
        for s in touched:
            heaps.changed(s)
        for s, v in a.cpu:
            cpu[s] -= v
        for s, v in a.mem:
            mem[s] -= v
    return Solution(assign)


class _Heaps:
    """The allowed servers with a free GPU, freest first (ties: the lowest
    index), as one heap of ``(-free GPUs, server)`` per set of allowed
    servers.  An entry is stale once its server's free count changed (it
    only falls during a call); a server's new count is pushed on `changed`."""

    def __init__(self, free: dict) -> None:
        self.free = free
        self.heaps: dict[tuple, tuple[set[int], list]] = {}

    def of(self, key: tuple, ok: list[int]) -> list:
        """The heap of the servers ``ok`` (kept under ``key``)."""
        hit = self.heaps.get(key)
        if hit is None:
            h = [(-len(self.free[s]), s) for s in ok if self.free[s]]
            heapify(h)
            hit = self.heaps[key] = (set(ok), h)
        return hit[1]

    def changed(self, s: int) -> None:
        """Server s's free count changed."""
        k = len(self.free[s])
        if k:
            for ok, h in self.heaps.values():
                if s in ok:
                    heappush(h, (-k, s))


def _pop(h: list, free: dict) -> tuple[int, int] | None:
    """The freest server of heap ``h`` and its free count, taken off (stale
    entries dropped); None when it is empty."""
    while h:
        k, s = heappop(h)
        if -k == len(free[s]):
            return s, -k
    return None


def _freest(n: int, locality, c: int, m: int, h: list, free: dict, cpu: list, mem: list
            ) -> Assign | None:
    """``h``: the heap of the allowed servers (`_Heaps`); the servers taken
    off it are put back, as they were, before returning."""
    if n == 0:
        return None
    popped: list[tuple[int, int]] = []       # (server, free GPUs), freest first
    got = 0
    while got < n:
        top = _pop(h, free)
        if top is None:
            break
        popped.append(top)
        got += top[1]
        if locality is not None:             # the freest server holds it all, or none does
            break
    for s, k in popped:
        heappush(h, (-k, s))
    if locality is not None and (not popped or popped[0][1] < n):
        return None
    taken: list[tuple[int, int]] = []
    servers: list[int] = []
    for s, k in popped:
        take = min(k, n - len(taken))
        taken += [(g, MILLI) for g in free[s][:take]]
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

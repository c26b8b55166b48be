r"""What a set of placements leaves free, and whether one more job fits there.

The placement checkers ask one question again and again: *could job* ``x``
*be placed on what these placements leave?*  `room_left` computes the room
(per server: free milli-cores and MiB; per GPU: free milli, free GPU memory,
free compute) and `place_one` answers with a witness: a placement of ``x``
inside that room that passes the per-placement rules of
[`placement_problems`][alloc.check.placement_problems], or None.

With ``P`` the placements, per server ``s`` and GPU ``g``

$$
\mathrm{cpu}_s = C_s - \sum_{p \in P} p.\mathrm{cpu}_s, \qquad
\mathrm{milli}_g = 1000 - \sum_{p \in P} p.\mathrm{milli}_g,
$$

and likewise memory, GPU memory and compute (`alloc.resources`).

The search is *sound, not complete*: a witness it returns is a valid
placement in the room (so a checker that reports "fits" is never wrong), but
it looks only at

* the job's request of CPU and memory (no other point of its grid);
* its fewest GPUs (``min_gpus`` for an elastic job);
* one server, or -- when ``spread`` is allowed and the job has no locality
  below the server -- a greedy spread over the servers that can take the
  most of its GPUs, CPU and memory split as the solvers split them (in
  proportion to the GPUs on each server); an even spread
  (``gpus_per_server``) on the first servers that each hold one part;
* GPUs no guaranteed job holds, for a job that is not guaranteed (co-location
  is a solver's choice);
* never a guaranteed job (whether it fits depends on its tenant's cell
  binding): `place_one` returns None for one.

So a job it finds no room for may still fit some other way; checkers built on
it report only what is certainly wrong.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..check import placement_problems
from ..model import MILLI, Cluster, GpuShare, Job, Placement
from ..problem import split
from ..resources import gpu_mem_caps, share_compute, share_mem
from ..topology import is_outer, server_domains


@dataclass(frozen=True)
class Room:
    """Free resources left by some placements.

    Attributes
    ----------
    cpu, mem : mapping of server id to int
        Free milli-cores and MiB per server.
    milli, gpu_mem, compute : mapping of GPU id to int
        Free milli-GPU, GPU memory (MiB) and compute (milli) per GPU.
    guaranteed : frozenset of str
        GPUs on which a guaranteed job holds a share.
    """
    cpu: Mapping[str, int]
    mem: Mapping[str, int]
    milli: Mapping[str, int]
    gpu_mem: Mapping[str, int]
    compute: Mapping[str, int]
    guaranteed: frozenset

    def holds(self, p: Placement) -> bool:
        """Placement ``p`` fits this room (its CPU, memory and milli-GPU)."""
        return all(self.cpu.get(s, 0) >= v for s, v in p.cpu.items()) and \
            all(self.mem.get(s, 0) >= v for s, v in p.mem.items()) and \
            all(self.milli.get(g.gpu, 0) >= g.milli for g in p.gpus)


def room_left(cluster: Cluster, jobs: Sequence[Job], placements: Sequence[Placement]) -> Room:
    """The room ``placements`` leave on ``cluster`` (see the module notes).

    Examples
    --------
    >>> from alloc import Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.testing import room_left
    >>> c = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> p = Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 3000}, {"s0": 1000})
    >>> r = room_left(c, [Job("a", 1, cpu=3000, mem=1000)], [p])
    >>> r.cpu["s0"], r.milli["s0/gpu0"], r.milli["s0/gpu1"]
    (5000, 0, 1000)
    """
    by_id = {j.id: j for j in jobs}
    caps = gpu_mem_caps(cluster)
    gidx = cluster.gpu_index
    cpu = {s.id: s.cpu for s in cluster.servers}
    mem = {s.id: s.mem for s in cluster.servers}
    milli = {g: MILLI for g in cluster.gpu_ids}
    gmem = {g: caps[k] for g, k in gidx.items()}
    comp = {g: MILLI for g in cluster.gpu_ids}
    held = set()
    for p in placements:
        job = by_id.get(p.job)
        for s, v in p.cpu.items():
            cpu[s] = cpu.get(s, 0) - v
        for s, v in p.mem.items():
            mem[s] = mem.get(s, 0) - v
        for g in p.gpus:
            if g.gpu not in gidx:
                continue
            milli[g.gpu] -= g.milli
            if job is not None:
                gmem[g.gpu] -= share_mem(job, g, caps[gidx[g.gpu]])
                comp[g.gpu] -= share_compute(job, g)
                if job.guaranteed and g.milli:
                    held.add(g.gpu)
    return Room(cpu, mem, milli, gmem, comp, frozenset(held))


def _usable(cluster: Cluster, job: Job, room: Room) -> dict[str, list[str]]:
    """GPUs of each server that can take one share of ``job`` (server id -> GPU ids)."""
    caps = gpu_mem_caps(cluster)
    gidx = cluster.gpu_index
    out: dict[str, list[str]] = defaultdict(list)
    for s in cluster.servers:
        if not s.gpus or not job.allows(s.gpu_type):
            continue
        for g in s.gpu_ids():
            share = GpuShare(g, job.gpu_milli)
            if room.milli[g] < job.gpu_milli or (g in room.guaranteed and not job.guaranteed):
                continue
            if room.gpu_mem[g] < share_mem(job, share, caps[gidx[g]]) \
                    or room.compute[g] < share_compute(job, share):
                continue
            out[s.id].append(g)
    return out


def _on_one_server(cluster: Cluster, job: Job, room: Room, usable, n: int) -> Placement | None:
    inner = job.locality if job.locality in ("socket", "switch") else None
    for s in cluster.servers:
        gs = usable.get(s.id, ())
        if len(gs) < n or room.cpu[s.id] < job.cpu or room.mem[s.id] < job.mem:
            continue
        groups: dict[str, list[str]] = defaultdict(list)
        for g in gs:
            k = int(g.rsplit("gpu", 1)[1])
            groups[s.gpu_domain(k, inner) if inner else s.id].append(g)
        for group in groups.values():
            if len(group) >= n:
                return Placement(job.id, tuple(GpuShare(g, job.gpu_milli) for g in group[:n]),
                                 {s.id: job.cpu}, {s.id: job.mem})
    return None


def _most(room_v: int, total: int, n: int) -> int:
    """Most of ``n`` GPUs a server can take when it gets their share of
    ``total`` (rounded up at most) and has ``room_v`` free."""
    return n if total <= 0 else max(0, room_v * n // total)


def _spread(cluster: Cluster, job: Job, room: Room, usable, n: int) -> Placement | None:
    pools: dict[int, list] = defaultdict(list)
    dom = server_domains(cluster, job.locality) if is_outer(job.locality) else None
    for i, s in enumerate(cluster.servers):
        if usable.get(s.id):
            pools[dom[i] if dom is not None else -1].append(s)
    for servers in pools.values():
        cap = {s.id: min(len(usable[s.id]), _most(room.cpu[s.id], job.cpu, n),
                         _most(room.mem[s.id], job.mem, n)) for s in servers}
        take, left = {}, n
        for s in sorted(servers, key=lambda s: (-cap[s.id], cluster.server_index[s.id])):
            if left == 0 or cap[s.id] == 0:
                break
            take[s.id] = min(left, cap[s.id])
            left -= take[s.id]
        if left:
            continue
        order = sorted(take, key=cluster.server_index.__getitem__)
        counts = [take[s] for s in order]
        cpu, mem = split(job.cpu, counts), split(job.mem, counts)
        if all(room.cpu[s] >= c and room.mem[s] >= m for s, c, m in zip(order, cpu, mem)):
            gpus = tuple(GpuShare(g, job.gpu_milli) for s in order for g in usable[s][:take[s]])
            return Placement(job.id, gpus, dict(zip(order, cpu)), dict(zip(order, mem)))
    return None


def _even(cluster: Cluster, job: Job, room: Room, usable) -> Placement | None:
    """An even spread on the first servers (in order) that each hold one part:
    ``gpus_per_server`` usable GPUs and their share of CPU and memory."""
    k, n = job.gpus_per_server or job.gpus, job.even_servers
    pc, pm = -(-job.cpu // n), -(-job.mem // n)
    order = [s.id for s in cluster.servers if len(usable.get(s.id, ())) >= k
             and room.cpu[s.id] >= pc and room.mem[s.id] >= pm][:n]
    if len(order) < n:
        return None
    cpu, mem = split(job.cpu, [k] * n), split(job.mem, [k] * n)
    gpus = tuple(GpuShare(g, job.gpu_milli) for s in order for g in usable[s][:k])
    return Placement(job.id, gpus, dict(zip(order, cpu)), dict(zip(order, mem)))


def place_one(cluster: Cluster, job: Job, room: Room, *, spread: bool = True) -> Placement | None:
    """A placement of ``job`` inside ``room``, or None (see the module notes:
    a witness is always valid; None does not prove that none exists).

    Parameters
    ----------
    cluster : Cluster
    job : Job
        The job to place (a guaranteed job always gives None).
    room : Room
        What is free (`room_left`).
    spread : bool
        Also try spreading a job without a locality below the server over
        several servers (for solvers that declare ``spread``).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.testing import place_one, room_left
    >>> c = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> w = place_one(c, Job("b", 2, cpu=2000, mem=1000), room_left(c, [], []))
    >>> [g.gpu for g in w.gpus], dict(w.cpu)
    (['s0/gpu0', 's0/gpu1'], {'s0': 2000})
    >>> place_one(c, Job("c", 3, cpu=2000, mem=1000), room_left(c, [], [])) is None
    True
    """
    if job.guaranteed:
        return None
    if job.gpus == 0:
        for s in cluster.servers:
            if room.cpu[s.id] >= job.cpu and room.mem[s.id] >= job.mem:
                return Placement(job.id, (), {s.id: job.cpu}, {s.id: job.mem})
        return None
    n = job.min_gpus if job.min_gpus is not None else job.gpus
    usable = _usable(cluster, job, room)
    if job.even_servers:
        w = _even(cluster, job, room, usable) if spread else None
    else:
        w = _on_one_server(cluster, job, room, usable, n)
        if w is None and spread and n > 1 and (job.locality is None or is_outer(job.locality)):
            w = _spread(cluster, job, room, usable, n)
    if w is not None and placement_problems(cluster, job, w, "witness"):
        return None
    return w


__all__ = ["Room", "place_one", "room_left"]

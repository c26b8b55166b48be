r"""What the running jobs leave free, kept as they start and stop, and the
test that holds a waiting job out of a round it cannot fit.

A session at the CPU limit of its cluster may keep thousands of jobs
waiting.  A round in which none of them can fit should cost what a round
without them costs.  The session therefore keeps the room the running jobs
leave (`Room`, updated with every job that starts, stops or leaves, in
proportion to what changed) and groups its waiting jobs by shape
(`shape_key`).  At the start of a round, with the room ``F_s`` (whole GPUs
free on server ``s``), ``T_s`` (milli left on its emptiest GPU), ``C_s`` and
``M_s`` (free milli-cores and MiB), a job of ``n`` GPUs of ``g`` milli each,
whose least CPU and memory over its request and its grid points (its
request alone for a solver that does not re-size jobs, as in `alloc.waiting`)
are ``c`` and ``m``, **cannot fit** (`cannot_fit`) when

* ``n = 0``: no server has ``C_s >= c`` and ``M_s >= m``;
* ``g < 1000``: no server has ``T_s >= g``, ``C_s >= c`` and ``M_s >= m``;
* otherwise: :math:`\sum_s \min(F_s, \lfloor C_s / \lfloor c/n \rfloor \rfloor,
  \lfloor M_s / \lfloor m/n \rfloor \rfloor) < n` (a term without its divisor
  when that is 0).

A server holding ``k >= 1`` of the job's GPUs gets at least
:math:`\lfloor c k / n \rfloor \ge k \lfloor c/n \rfloor` milli-cores when
the job's CPU is split in proportion to its GPUs (likewise memory), so the
sum bounds the GPUs any placement of that kind can get; GPU types, locality
and the solver's own rules only take room away.  Within a round without
moves, preemption or closed servers the room only shrinks, so a job that
cannot fit at the start fits nowhere in the round: a solver that declares
``ignores_unfit`` (its answer is the same with or without such a job) never
sees it, and the job waits with the line `alloc.waiting` gives it on the
round's answer -- the answer, the waiting jobs, their order and their
reasons are those of a round that saw it.
"""
from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from ..arrays import cluster_arrays
from ..model import MILLI, Cluster, Job, Placement
from ..problem import pareto_options


def shape_key(job: Job) -> Hashable | None:
    """The key of the jobs that fit or do not fit together (None: a job the
    test does not cover -- elastic, goodput, gang spread evenly, GPU memory
    or compute caps, a tenant's job).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.session.room import shape_key
    >>> shape_key(Job("a", 2, cpu=6000, mem=128000)) == shape_key(Job("b", 2, cpu=6000, mem=128000))
    True
    >>> shape_key(Job("c", 2, cpu=6000, mem=128000, min_gpus=1, max_gpus=4)) is None
    True
    """
    if (job.tenant is not None or job.guaranteed or job.min_gpus is not None
            or job.max_gpus is not None or job.gpu_mem is not None
            or job.gpu_compute is not None or job.gpus_per_server is not None
            or (job.profile is not None and job.profile.goodput is not None)):
        return None
    return (id(job.profile), job.gpus, job.gpu_milli, job.cpu, job.mem, job.gpu_types,
            job.locality, job.preferred, job.gpu_mem_min)


class Room:
    """The CPU, memory and milli-GPU the running jobs hold on one cluster
    (arrays over its servers and GPUs), updated per placement.

    Examples
    --------
    >>> from alloc import Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.session.room import Room
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> room = Room(cl)
    >>> room.take(Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 7000}, {"s0": 1000}), 1)
    >>> room.cannot_fit(Job("b", 1, cpu=2000, mem=1000)), room.cannot_fit(Job("c", 1, cpu=1000))
    (True, False)
    """

    def __init__(self, cluster: Cluster, running: Any = ()) -> None:
        self.cluster = cluster
        arr = cluster_arrays(cluster)
        self._arr = arr
        self.cpu = np.zeros(arr.S, dtype=np.int64)
        self.mem = np.zeros(arr.S, dtype=np.int64)
        self.gpu = np.zeros(arr.G, dtype=np.int64)
        self._sidx, self._gidx = cluster.server_index, cluster.gpu_index
        for p in running:
            self.take(p, 1)

    def take(self, p: Placement, sign: int) -> None:
        """Add (``sign=1``) or give back (``-1``) what placement ``p`` holds."""
        gidx, sidx = self._gidx, self._sidx
        for g in p.gpus:
            self.gpu[gidx[g.gpu]] += sign * g.milli
        for s, v in p.cpu.items():
            self.cpu[sidx[s]] += sign * v
        for s, v in p.mem.items():
            self.mem[sidx[s]] += sign * v

    def free(self) -> "Free":
        """The room now (copies of the free arrays and their summaries)."""
        return Free(self)

    def cannot_fit(self, job: Job, resizes: bool = True) -> bool:
        """`Free.cannot_fit` on the room now."""
        return self.free().cannot_fit(job, resizes)


class Free:
    """The free room of a `Room` at one moment: per server free CPU ``C``,
    memory ``M``, whole free GPUs ``F`` and the milli left on its emptiest
    GPU ``T`` (the module notes); per GPU the milli left, ``gpu``."""

    def __init__(self, room: Room) -> None:
        arr = room._arr
        self.C = arr.srv_cpu - room.cpu
        self.M = arr.srv_mem - room.mem
        gf = self.gpu = MILLI - room.gpu
        srv = arr.gpu_server
        self.F = np.bincount(srv[gf >= MILLI], minlength=arr.S)
        self._gf, self._srv, self._S = gf, srv, arr.S
        self._T: np.ndarray | None = None

    @property
    def T(self) -> np.ndarray:
        """Milli left on each server's emptiest GPU (-1: no GPUs)."""
        if self._T is None:
            top = np.full(self._S, -1, dtype=np.int64)
            if len(self._gf):
                np.maximum.at(top, self._srv, self._gf)
            self._T = top
        return self._T

    def cannot_fit(self, job: Job, resizes: bool = True) -> bool:
        """True when no placement that splits the job's CPU and memory in
        proportion to its GPUs fits the room (the module notes); False when
        one may.  ``resizes``: the solver may give the job any point of its
        grid (capability ``grid``), else only its request."""
        opts = pareto_options(job) if resizes else pareto_options(job)[:1]
        c, m, n = min(o.cpu for o in opts), min(o.mem for o in opts), job.gpus
        C, M = self.C, self.M
        if n == 0:
            return not bool(((C >= c) & (M >= m)).any())
        if job.gpu_milli < MILLI:
            return not bool(((self.T >= job.gpu_milli) & (C >= c) & (M >= m)).any())
        use = self.F
        cper, mper = c // n, m // n
        if cper:
            use = np.minimum(use, np.maximum(C, 0) // cper)
        if mper:
            use = np.minimum(use, np.maximum(M, 0) // mper)
        return int(use.sum()) < n


__all__ = ["Free", "Room", "shape_key"]

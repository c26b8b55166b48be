r"""What the running jobs of a session leave free, kept as they start and
stop, and its waiting jobs grouped by the shape that fits or not.

A session at the CPU limit of its cluster may keep thousands of jobs
waiting.  A round in which none of them can fit should cost what a round
without them costs.  The session therefore keeps the room the running jobs
leave (`Room`, updated with every job that starts, stops or leaves, in
proportion to what changed) and groups its waiting jobs by shape
(`shape_key`).  At the start of a round a shape that cannot fit the room
(`alloc.room.Free.cannot_fit`: no set of servers holds its GPUs with its
least CPU and memory split in proportion to them; over its grid points for
a solver that re-sizes jobs, as in `alloc.waiting`) fits nowhere in a round
that neither moves nor stops running jobs and has no closed servers.  A
solver that declares ``ignores_unfit`` (its answer is the same with or
without such a job) then never sees it, and the job waits with the line
`alloc.waiting` gives its shape on the room the answer leaves: the answer,
the waiting jobs, their order and their reasons are those of a round that
saw it.
"""
from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from ..arrays import cluster_arrays
from ..model import MILLI, Cluster, Job, Placement
from ..problem import pareto_options
from ..room import Free


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

    def free(self) -> Free:
        """The room now (`alloc.room.Free`)."""
        arr = self._arr
        return Free(arr.srv_cpu - self.cpu, arr.srv_mem - self.mem, MILLI - self.gpu,
                    arr.gpu_server)

    def cannot_fit(self, job: Job, resizes: bool = True) -> bool:
        """`alloc.room.Free.cannot_fit` on the room now, over the job's
        request and (``resizes``: the solver may re-size it) its grid points."""
        opts = pareto_options(job)
        return self.free().cannot_fit(job, opts if resizes else opts[:1])


__all__ = ["Room", "shape_key"]

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

A solver that declares ``admission="gpus"`` (Synergy's TUNE) admits jobs by
GPUs alone before it places any (`alloc.room.admit`).  The session walks
its waiting jobs in the rank the problem gives them (the caller's order,
then priority, highest first, then submission order; jobs with a
compile-time reason take no part) until the admission stops
(`admission_held_out`); the round then holds out every waiting job except
the admitted ones that may fit the room (and those with a compile-time
reason, which the problem gives): the solver admits exactly those again
and places them as it would have (`alloc.room`).
"""
from __future__ import annotations

from typing import Any, Callable, Container, Hashable, Mapping, Sequence

import numpy as np

from ..arrays import cluster_arrays
from ..model import MILLI, Cluster, Job, Placement
from ..problem import pareto_options, placeable_reason
from ..room import Free, admit


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
        self._reasons: dict[Hashable, str | None] = {}
        for p in running:
            self.take(p, 1)

    def reason(self, job: Job) -> str | None:
        """The job's compile-time reason on this cluster
        (`alloc.problem.placeable_reason`), kept per `shape_key`: it
        depends on the cluster and the job's shape alone."""
        key = shape_key(job)
        if key is None:
            return placeable_reason(self.cluster, job)
        if key not in self._reasons:
            self._reasons[key] = placeable_reason(self.cluster, job)
        return self._reasons[key]

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


def ranked(jobs: Mapping[str, Job], waiting: list[str],
           order: Sequence[str] | None) -> list[str]:
    """``waiting`` (ids in submission order) in the rank the problem gives
    them (`alloc.problem.ranks`): those of ``order`` by position, then the
    others by priority, highest first, then submission order.

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.session.room import ranked
    >>> jobs = {k: Job(k, 1, priority=p) for k, p in (("a", 0), ("b", 2), ("c", 0))}
    >>> ranked(jobs, ["a", "b", "c"], None), ranked(jobs, ["a", "b", "c"], ["c"])
    (['b', 'a', 'c'], ['c', 'b', 'a'])
    """
    rest = waiting
    listed: list[str] = []
    if order is not None:
        pos = {k: i for i, k in enumerate(order)}
        listed = sorted((k for k in waiting if k in pos), key=pos.__getitem__)
        if listed:
            rest = [k for k in waiting if k not in pos]
    prio = [jobs[k].priority for k in rest]
    if prio and min(prio) != max(prio):
        key = dict(zip(rest, prio))
        rest = sorted(rest, key=lambda k: -key[k])       # stable: submission order
    return listed + rest if listed else rest


def admission_held_out(jobs: Mapping[str, Job], groups: Mapping[Any, Mapping[str, None]],
                       excluded: Container[str], order: Sequence[str] | None, free: Free,
                       resizes: bool, reason: Callable[[Job], str | None],
                       arrival: Mapping[str, int] | None = None) -> dict[str, list[str]]:
    """The waiting jobs a round of a solver with Synergy's admission holds
    out (the module notes), by shape (each list's first job names it; a job
    without a shape alone).

    Parameters
    ----------
    jobs : mapping
        The session's jobs by id, in submission order.
    groups : mapping
        The waiting jobs' ids by `shape_key` (None: the jobs without a
        shape), each in submission order.
    excluded : container
        Ids left out of the round already (the scheduler's held jobs).
    order : sequence of str, optional
        The caller's order (ids).
    free : Free
        The room the running jobs leave.
    resizes : bool
        The solver may re-size a job (its grid points count).
    reason : callable
        A job's compile-time reason, or None.
    arrival : mapping, optional
        Each job's place in submission order (the order of ``jobs``): a few
        waiting jobs are then ranked without a pass over every job.

    Examples
    --------
    >>> from alloc import Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.problem import placeable_reason
    >>> from alloc.session.room import Room, admission_held_out, shape_key
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=4, gpu_type="V100"),))
    >>> run = Placement("r", (GpuShare("s0/gpu0", 1000),), {"s0": 6000}, {"s0": 1000})
    >>> room = Room(cl, [run])
    >>> jobs = {"a": Job("a", 2, cpu=4000), "b": Job("b", 1, cpu=1000),
    ...         "c": Job("c", 1, cpu=1000)}
    >>> groups = {shape_key(j): {} for j in jobs.values()}
    >>> for j in jobs.values():
    ...     groups[shape_key(j)][j.id] = None
    >>> admission_held_out(jobs, groups, (), None, room.free(), False,
    ...                    lambda j: placeable_reason(cl, j), {"a": 0, "b": 1, "c": 2})
    {'a': ['a'], 'c': ['c']}
    """
    count = sum(len(ids) for ids in groups.values())
    if arrival is not None and 4 * count < len(jobs):   # few waiting: by submission
        waiting = sorted((k for ids in groups.values() for k in ids if k not in excluded),
                         key=arrival.__getitem__)
    else:
        waiting = [k for k, j in jobs.items() if j.current is None and k not in excluded]
    # the shapes: their compile-time reason and their ids (held jobs aside)
    shapes = []
    for key, ids in groups.items():
        live = [k for k in ids if k not in excluded] if excluded else list(ids)
        if live and key is not None:
            shapes.append((jobs[live[0]], live, reason(jobs[live[0]])))
    loose = [k for k in groups.get(None, ()) if k not in excluded]   # without a shape
    skip = {k for _, live, why in shapes if why is not None for k in live}
    skip.update(k for k in loose if reason(jobs[k]) is not None)
    rank = ranked(jobs, waiting, order)
    admitted = set(admit(((k, jobs[k].milli_total) for k in rank if k not in skip)
                         if skip else ((k, jobs[k].milli_total) for k in rank),
                         int(free.gpu.sum())))
    # kept: the admitted jobs that may fit (a job without a shape is not tested)
    keep = {k for k in loose if k in admitted}
    for job, live, why in shapes:
        if why is None and not admitted.isdisjoint(live):
            opts = pareto_options(job)
            if not free.cannot_fit(job, opts if resizes else opts[:1]):
                keep.update(k for k in live if k in admitted)
    out: dict[str, list[str]] = {}
    for _, live, why in shapes:
        if why is not None:
            continue                     # the problem gives their reason
        ids_out = [k for k in live if k not in keep] if keep else live
        if ids_out:
            out[ids_out[0]] = ids_out
    for k in loose:
        if k not in keep and k not in skip:
            out[k] = [k]
    return out


__all__ = ["Room", "admission_held_out", "ranked", "shape_key"]

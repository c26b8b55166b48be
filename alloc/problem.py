"""One compile step shared by every backend.

:func:`compile_problem` turns a cluster and its jobs into integer-indexed
arrays: servers ``s = 0..S-1`` (capacities ``C_s``, ``M_s``, ``G_s``, GPU type
``t_s``), GPUs ``g = 0..G-1`` (server, domain id at each hierarchy level), jobs
``j = 0..J-1`` with their *options* (CPU/memory points: the request, or any
Pareto-optimal cell of the profile's grid) and, for the objective, the value
coefficient of job ``j`` at option ``o`` on a server of type ``t``:

    v[j, o, t] = weight_j * base_j(o) * speed_j(t)     (throughput)
    v[j, o, t] = n_j * milli_j                         (gpus)
    v[j, o, t] = 1                                     (jobs)

Identical servers are grouped into classes (same capacities, type, shape and
rack) so that exact backends can aggregate them.  Solvers return a
:class:`Solution` (job index -> :class:`Assign`); :meth:`Problem.to_allocation`
turns it into an :class:`~alloc.model.Allocation`, recomputing throughput and
value from the placement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .model import (MILLI, Allocation, Cluster, GpuShare, Job, Placement, Status)
from .objectives import allocation_value, check_objective, cluster_first_gpu, throughput


@dataclass(frozen=True)
class Option:
    """A CPU/memory choice for a job: totals for the whole job."""
    cpu: int
    mem: int
    base: float           # profile grid value (speed before type/span factors)
    request: bool = False  # True for the job's own request


@dataclass(frozen=True)
class Assign:
    """A job's assignment in index form: GPUs (global index, milli) and CPU /
    memory per server index."""
    gpus: tuple[tuple[int, int], ...] = ()
    cpu: tuple[tuple[int, int], ...] = ()
    mem: tuple[tuple[int, int], ...] = ()


@dataclass
class Solution:
    assign: dict[int, Assign] = field(default_factory=dict)
    status: Status = Status.FEASIBLE
    bound: float | None = None
    preempted: tuple[int, ...] = ()
    stats: dict = field(default_factory=dict)


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


def pareto_options(job: Job) -> tuple[Option, ...]:
    """The job's request plus every grid cell not dominated by another (less or
    equal CPU and memory with at least the same speed)."""
    prof = job.profile
    n = job.gpus
    req_base = (prof.grid_value(job.cpu / n, job.mem / n)
                if prof is not None and prof.has_grid and n else 1.0)
    opts = [Option(job.cpu, job.mem, req_base, True)]
    if prof is not None and prof.has_grid and n:
        cells = []
        for i, c in enumerate(prof.cpu_per_gpu):
            for k, m in enumerate(prof.mem_per_gpu):
                v = prof.tput[i][k]
                if v is not None and v > 0:
                    cells.append(Option(c * n, m * n, float(v)))
        for o in cells:
            dominated = any(
                (p.cpu <= o.cpu and p.mem <= o.mem and p.base >= o.base)
                and (p.cpu, p.mem, -p.base) != (o.cpu, o.mem, -o.base)
                for p in cells + opts[:1])
            if not dominated:
                opts.append(o)
    # drop exact duplicates of the request
    seen, out = set(), []
    for o in opts:
        key = (o.cpu, o.mem)
        if key in seen:
            continue
        seen.add(key)
        out.append(o)
    return tuple(out)


class Problem:
    """Integer-indexed view of (cluster, jobs, objective)."""

    def __init__(self, cluster: Cluster, jobs: Sequence[Job], objective: str = "throughput",
                 name: str = ""):
        self.cluster = cluster
        self.jobs = tuple(jobs)
        self.objective = check_objective(objective)
        self.name = name
        srv = cluster.servers
        self.S, self.G, self.J = len(srv), cluster.total_gpus, len(self.jobs)
        self.srv_cpu = np.array([s.cpu for s in srv], dtype=np.int64)
        self.srv_mem = np.array([s.mem for s in srv], dtype=np.int64)
        self.srv_gpus = np.array([s.gpus for s in srv], dtype=np.int64)
        self.types = cluster.gpu_types
        tix = {t: i for i, t in enumerate(self.types)}
        self.srv_type = np.array([tix.get(s.gpu_type, -1) if s.gpus else -1 for s in srv],
                                 dtype=np.int64)
        self.gpu_first = np.array(cluster_first_gpu(cluster), dtype=np.int64)
        self.gpu_server = np.array(cluster.gpu_server, dtype=np.int64)
        self.levels = cluster.levels
        # domain[level][g]: integer id of the node of `level` holding GPU g
        self.domain: dict[str, np.ndarray] = {}
        for level in cluster.levels:
            names: dict[str, int] = {}
            ids = []
            for si, s in enumerate(srv):
                for k in range(s.gpus):
                    ids.append(names.setdefault(s.gpu_domain(k, level), len(names)))
            self.domain[level] = np.array(ids, dtype=np.int64)
        self.job_index = {j.id: i for i, j in enumerate(self.jobs)}
        self.options: list[tuple[Option, ...]] = [pareto_options(j) for j in self.jobs]
        self.request_option = [0] * self.J
        # allowed[j, s]: GPU type allowed and server big enough for one share
        allowed = np.zeros((self.J, self.S), dtype=bool)
        for j, job in enumerate(self.jobs):
            for s, sv in enumerate(srv):
                if job.gpus == 0:
                    allowed[j, s] = True
                else:
                    allowed[j, s] = sv.gpus > 0 and job.allows(sv.gpu_type)
        self.allowed = allowed
        # server classes: identical servers (capacity, type, shape, rack)
        classes: dict[tuple, list[int]] = {}
        for s, sv in enumerate(srv):
            key = (sv.cpu, sv.mem, sv.gpus, sv.gpu_type, sv.sockets, sv.switches_per_socket,
                   sv.rack if "rack" in cluster.levels else None)
            classes.setdefault(key, []).append(s)
        self.classes: list[list[int]] = list(classes.values())
        self.server_class = np.zeros(self.S, dtype=np.int64)
        for c, members in enumerate(self.classes):
            self.server_class[members] = c

    # ----------------------------------------------------------------- values
    def speed(self, j: int, s: int) -> float:
        prof = self.jobs[j].profile
        return prof.speed(self.cluster.servers[s].gpu_type) if prof is not None else 1.0

    def coef(self, j: int, o: int, s: int | None = None) -> float:
        """Objective value of job j at option o on server s (the best span
        factor is assumed; the placement's real value is recomputed)."""
        job = self.jobs[j]
        if self.objective == "jobs":
            return 1.0
        if self.objective == "gpus":
            return float(job.gpus * job.gpu_milli)
        v = job.weight * self.options[j][o].base
        if s is not None and job.gpus:
            v *= self.speed(j, s)
        return v

    def upper_coef(self, j: int) -> float:
        """An upper bound on job j's value over every option and server."""
        best = 0.0
        for o in range(len(self.options[j])):
            for s in np.flatnonzero(self.allowed[j]):
                best = max(best, self.coef(j, o, int(s)))
        return best

    # ------------------------------------------------------------ assignments
    def make_assign(self, j: int, gpus: Sequence[int], option: int) -> Assign:
        """Assignment of job j to the given global GPU indices (or, for a
        CPU-only job, to the server index given as the single element of
        ``gpus``... use :meth:`make_cpu_assign`), CPU/memory split over the
        servers in proportion to their GPUs."""
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
        opt = self.options[j][option]
        return Assign((), ((server, opt.cpu),), ((server, opt.mem),))

    def placement(self, j: int, a: Assign) -> Placement:
        c = self.cluster
        job = self.jobs[j]
        gids = [c.gpu_ids[g] for g, _ in a.gpus]
        cpu = {c.servers[s].id: v for s, v in a.cpu}
        mem = {c.servers[s].id: v for s, v in a.mem}
        tp = throughput(c, job, gids, sum(cpu.values()), sum(mem.values()))
        return Placement(job.id, tuple(GpuShare(g, m) for g, (_, m) in zip(gids, a.gpus)),
                         cpu, mem, round(tp, 9))

    def to_allocation(self, sol: Solution, *, solver: str, wall_time_s: float) -> Allocation:
        placements = tuple(self.placement(j, sol.assign[j]) for j in sorted(sol.assign))
        placed = {p.job for p in placements}
        unplaced = tuple(job.id for job in self.jobs if job.id not in placed)
        preempted = tuple(self.jobs[j].id for j in sorted(sol.preempted))
        value = allocation_value(self.objective, self.jobs, placements)
        return Allocation(placements, unplaced, preempted, sol.status, value, sol.bound,
                          wall_time_s, solver, self.objective, self.name, dict(sol.stats))


def compile_problem(cluster: Cluster, jobs: Sequence[Job], objective: str = "throughput",
                    name: str = "") -> Problem:
    return Problem(cluster, jobs, objective, name)


__all__ = ["Assign", "Option", "Problem", "Solution", "compile_problem", "split", "MILLI"]

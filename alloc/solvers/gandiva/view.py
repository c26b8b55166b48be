r"""Gandiva's view of the servers during one call: free GPUs, height, affinity.

For server $s$ with $N_s$ GPUs, the *allocated* GPUs
$M_s$ count every job that belongs to the server: running jobs (the
milli-GPU they hold there, over 1000) and jobs time-sliced on it but
suspended (the ``bound`` jobs, their whole demand).  Its *height* is
$M_s / N_s$ (above 1: over-subscribed) and its *affinity* the GPU count
of the jobs on it: 0 when none, else the count most of its jobs have (ties:
the larger).  A job spread over several servers counts in each server's
$M_s$ for the GPUs it holds there but in no affinity.

The view also keeps what is free after the running jobs: milli-GPU per GPU,
milli-cores and MiB per server; `ServerView.take` and
`ServerView.give` keep every figure in step when a job is placed,
moved or bound.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

from ...model import MILLI
from ...problem import Assign, Problem


class ServerView:
    """Free capacity, height and affinity of every server (see the module notes).

    Parameters
    ----------
    problem : Problem
        Running jobs are `Problem.fixed`; capacities left after them
        are ``free_cpu``, ``free_mem`` and ``gpu_free``.
    bound : mapping of int to int
        Job index to server index: pending jobs time-sliced on a server
        (suspended), counted in its height and affinity.
    """

    def __init__(self, problem: Problem, bound: Mapping[int, int]):
        p = self.p = problem
        self.S = p.S
        self.total = p.srv_gpus.tolist()
        self.first = p.gpu_first.tolist()
        self.gsrv = p.gpu_server.tolist()
        self.gfree = p.gpu_free.tolist()
        self.cpu = p.free_cpu.tolist()
        self.mem = p.free_mem.tolist()
        self.load = [0.0] * p.S
        self.sizes: list[Counter[int]] = [Counter() for _ in range(p.S)]
        #: each server's affinity, kept in step with ``sizes`` (read per job
        #: and server by Algorithm 1)
        self.aff = [0] * p.S
        self.whole = [sum(1 for g in range(self.first[s], self.first[s] + self.total[s])
                          if self.gfree[g] == MILLI) for s in range(p.S)]
        for j, a in p.fixed.items():
            self._count(j, a, 1)
        for j, s in bound.items():
            self.bind(j, s)

    # ----------------------------------------------------------------- views
    def height(self, s: int) -> float:
        """Allocated GPUs over GPUs (0 for a server without GPUs)."""
        return self.load[s] / self.total[s] if self.total[s] else 0.0

    def affinity(self, s: int) -> int:
        """The GPU count of the jobs on server s (0: none)."""
        return self.aff[s]

    def _set_affinity(self, s: int) -> None:
        c = self.sizes[s]
        self.aff[s] = max(c.items(), key=lambda kv: (kv[1], kv[0]))[0] if c else 0

    def idle(self, s: int) -> bool:
        """No job belongs to server s (running, spread onto it or suspended)."""
        return self.load[s] <= 0.0 and not self.sizes[s]

    def free_whole(self, s: int) -> list[int]:
        """Server s's whole free GPUs (global indices, ascending)."""
        a = self.first[s]
        gf = self.gfree
        return [g for g in range(a, a + self.total[s]) if gf[g] == MILLI]

    def fits(self, a: Assign) -> bool:
        """The assignment fits what is free."""
        gf = self.gfree
        need: dict[int, int] = {}
        for g, m in a.gpus:
            need[g] = need.get(g, 0) + m
        if any(gf[g] < m for g, m in need.items()):
            return False
        return all(self.cpu[s] >= v for s, v in a.cpu) and all(self.mem[s] >= v for s, v in a.mem)

    # --------------------------------------------------------------- updates
    def take(self, j: int, a: Assign) -> None:
        """Job j now holds ``a``."""
        self._use(a, -1)
        self._count(j, a, 1)

    def give(self, j: int, a: Assign) -> None:
        """Job j no longer holds ``a``."""
        self._use(a, 1)
        self._count(j, a, -1)

    def bind(self, j: int, s: int) -> None:
        """Job j is time-sliced on server s (suspended: holds nothing)."""
        job = self.p.jobs[j]
        self.load[s] += job.gpus * job.gpu_milli / MILLI
        self.sizes[s][job.gpus] += 1
        self._set_affinity(s)

    def _use(self, a: Assign, sign: int) -> None:
        gf, first, total, gsrv = self.gfree, self.first, self.total, self.gsrv
        touched = set()
        for g, m in a.gpus:
            gf[g] += sign * m
            touched.add(gsrv[g])
        for s, v in a.cpu:
            self.cpu[s] += sign * v
        for s, v in a.mem:
            self.mem[s] += sign * v
        for s in touched:
            self.whole[s] = sum(1 for g in range(first[s], first[s] + total[s])
                                if gf[g] == MILLI)

    def _count(self, j: int, a: Assign, sign: int) -> None:
        per: dict[int, int] = {}
        gsrv = self.gsrv
        for g, m in a.gpus:
            s = gsrv[g]
            per[s] = per.get(s, 0) + m
        for s, m in per.items():
            self.load[s] += sign * m / MILLI
        job = self.p.jobs[j]
        if len(per) == 1:
            s = next(iter(per))
            c = self.sizes[s]
            c[job.gpus] += sign
            if c[job.gpus] <= 0:
                del c[job.gpus]
            self._set_affinity(s)


__all__ = ["ServerView"]

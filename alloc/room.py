r"""The room the running jobs leave, and the test of a job that cannot fit it.

With the room ``F_s`` (whole GPUs free on server ``s``), ``T_s`` (milli left
on its emptiest GPU), ``C_s`` and ``M_s`` (free milli-cores and MiB), a job
of ``n`` GPUs of ``g`` milli each, whose least CPU and memory over the
options considered (its request, and its grid points for a solver that
re-sizes jobs) are ``c`` and ``m``, **cannot fit** (`Free.cannot_fit`) when

* ``n = 0``: no server has ``C_s >= c`` and ``M_s >= m``;
* ``g < 1000``: no server has ``T_s >= g``, ``C_s >= c`` and ``M_s >= m``;
* otherwise: :math:`\sum_s \min(F_s, \lfloor C_s / \lfloor c/n \rfloor \rfloor,
  \lfloor M_s / \lfloor m/n \rfloor \rfloor) < n` (a term without its divisor
  when that is 0).

A server holding ``k >= 1`` of the job's GPUs gets at least
:math:`\lfloor c k / n \rfloor \ge k \lfloor c/n \rfloor` milli-cores when
the job's CPU is split in proportion to its GPUs (likewise memory), so the
sum bounds the GPUs any placement of that kind can get; GPU types, locality
and a solver's own rules only take room away.  Placing jobs only shrinks the
room, so a job that cannot fit the room at the start of a call fits nowhere
during it unless running jobs move or stop.  The session holds such jobs out
of its rounds (`alloc.session.room`); Synergy's TUNE skips them
(`alloc.solvers.synergy.tune`).

Synergy's scheduler admits jobs by GPUs alone (`admit`): with ``F`` the free
milli-GPU of the cluster, it walks the jobs in rank order and admits job
``j`` (``n_j g_j`` milli-GPU) when :math:`n_j g_j \le F`, then
:math:`F \leftarrow F - n_j g_j`, and stops once :math:`F \le 0`.  A job it
does not admit is never placed, and leaving it out changes no other
admission (it took nothing from ``F``).  Leaving out admitted jobs too only
raises ``F`` at every later point, so each of the others is still admitted;
with every job that was not admitted left out as well, the admitted set is
the one kept.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Sequence, TypeVar

import numpy as np

from .model import MILLI, Job


class Free:
    """A room: free CPU ``C`` and memory ``M`` per server, milli-GPU left per
    GPU ``gpu``, and their summaries ``F`` (whole free GPUs per server) and
    ``T`` (milli left on each server's emptiest GPU, on first use).

    Parameters
    ----------
    cpu, mem : numpy.ndarray
        Free milli-cores and MiB per server.
    gpu : numpy.ndarray
        Milli-GPU left per GPU.
    gpu_server : numpy.ndarray
        The server of each GPU.

    Examples
    --------
    >>> import numpy as np
    >>> from alloc import Job
    >>> from alloc.problem import pareto_options
    >>> from alloc.room import Free
    >>> free = Free(np.array([4000, 4000]), np.array([64000, 64000]),
    ...             np.array([1000, 1000, 0, 1000]), np.array([0, 0, 1, 1]))
    >>> job = Job("a", 2, cpu=6000, mem=2000)
    >>> free.cannot_fit(job, pareto_options(job))      # one GPU on each server
    False
    >>> job = Job("b", 2, cpu=10000, mem=2000)
    >>> free.cannot_fit(job, pareto_options(job))      # 5 cores per GPU: nowhere
    True
    """

    def __init__(self, cpu: np.ndarray, mem: np.ndarray, gpu: np.ndarray,
                 gpu_server: np.ndarray) -> None:
        self.C, self.M, self.gpu = cpu, mem, gpu
        self._srv, self._S = gpu_server, len(cpu)
        self.F = np.bincount(gpu_server[gpu >= MILLI], minlength=self._S)
        self._T: np.ndarray | None = None

    @classmethod
    def of_problem(cls, problem) -> "Free":
        """The room a compiled problem's running jobs leave."""
        return cls(problem.free_cpu, problem.free_mem, problem.gpu_free, problem.gpu_server)

    @property
    def T(self) -> np.ndarray:
        """Milli left on each server's emptiest GPU (-1: no GPUs)."""
        if self._T is None:
            top = np.full(self._S, -1, dtype=np.int64)
            if len(self.gpu):
                np.maximum.at(top, self._srv, self.gpu)
            self._T = top
        return self._T

    def cannot_fit(self, job: Job, options: Sequence) -> bool:
        """True when no placement that splits the job's CPU and memory in
        proportion to its GPUs fits the room at any of ``options`` (points
        with ``cpu`` and ``mem``: the job's totals); False when one may (the
        module notes)."""
        c, m, n = min(o.cpu for o in options), min(o.mem for o in options), job.gpus
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


K = TypeVar("K", bound=Hashable)


def admit(needs: Iterable[tuple[K, int]], free: int) -> list[K]:
    """Synergy's GPU-only admission (the module notes): the keys of
    ``needs`` (key, milli-GPU asked), in their order, admitted while their
    milli-GPU fits ``free``; stops once nothing is left (the rest of
    ``needs`` is not read).

    Examples
    --------
    >>> from alloc.room import admit
    >>> admit([("a", 3000), ("b", 4000), ("c", 1000), ("d", 1000)], 4000)
    ['a', 'c']
    >>> admit([("a", 5000), ("b", 2000)], 4000)
    ['b']
    """
    out = []
    for k, nd in needs:
        if nd <= free:
            out.append(k)
            free -= nd
            if free <= 0:
                break
    return out


__all__ = ["Free", "admit"]

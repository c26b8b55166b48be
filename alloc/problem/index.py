"""The cluster's index as a problem holds it: the attributes every part of
[`Problem`][alloc.problem.Problem] reads (declared once here, with their
types), the index arrays shared with `alloc.arrays` (built once per cluster)
and the per-job masks over GPU types and servers.

Servers ``s = 0..S-1`` in the cluster's order, GPUs ``g = 0..G-1`` server by
server (GPU ``k`` of server ``s`` is ``gpu_first[s] + k``), jobs
``j = 0..J-1`` in input order.  CPU in milli-cores, memory in MiB, GPU shares
in milli-GPU (1000 = one GPU).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ..arrays import ClusterArrays
from ..model import Cluster, Job
from ..objectives import Objective
from .assign import Assign, GridPoint


class ProblemIndex:
    """The attributes of a compiled problem (see
    [`Problem`][alloc.problem.Problem] for their meaning) and the masks
    derived from them."""

    cluster: Cluster
    jobs: tuple[Job, ...]
    objective: Objective
    name: str
    arrays: ClusterArrays
    S: int
    G: int
    J: int
    srv_cpu: np.ndarray
    srv_mem: np.ndarray
    srv_gpus: np.ndarray
    types: tuple[str, ...]
    srv_type: np.ndarray
    gpu_first: np.ndarray
    gpu_server: np.ndarray
    levels: tuple[str, ...]
    domain: dict[str, np.ndarray]
    classes: list[list[int]]
    server_class: np.ndarray
    job_index: dict[str, int]
    request_option: list[int]
    max_moves: int | None
    move_cost: float | None
    preempt: str | None
    keeps_order: bool
    preempt_packed: bool
    order_rank: dict[str, int] | None
    carry: Any
    stamp: int
    pinned: frozenset[int]
    explicit_order: bool
    prio_key: list[int]
    rank: np.ndarray
    fixed: dict[int, Assign]
    reasons: dict[int, str]
    options: list[tuple[GridPoint, ...]]
    running: tuple[int, ...]
    pending: tuple[int, ...]
    changes: Any
    free_cpu: np.ndarray
    free_mem: np.ndarray
    gpu_free: np.ndarray

    @cached_property
    def type_ok(self) -> np.ndarray:
        """``type_ok[j, t]``: job j may use GPU type t (last column: no GPUs)."""
        out = np.zeros((self.J, len(self.types) + 1), dtype=bool)
        for j, job in enumerate(self.jobs):
            out[j, :-1] = [job.allows(t) for t in self.types]
            out[j, -1] = job.gpus == 0
        return out

    @cached_property
    def allowed(self) -> np.ndarray:
        """``allowed[j, s]``: server s has a GPU type job j allows (any server
        for a CPU-only job).  J x S booleans: large solvers use
        [`allowed_servers`][alloc.problem.Problem.allowed_servers]."""
        tix = np.where(self.srv_type >= 0, self.srv_type, len(self.types))
        out = self.type_ok[:, tix].copy()
        cpu_only = np.array([job.gpus == 0 for job in self.jobs], dtype=bool)
        out[cpu_only, :] = True
        return out

    def allowed_servers(self, j: int) -> np.ndarray:
        """Indices of the servers job j may use."""
        if self.jobs[j].gpus == 0:
            return np.arange(self.S)
        tix = np.where(self.srv_type >= 0, self.srv_type, len(self.types))
        return np.flatnonzero(self.type_ok[j, tix])

"""What the final check knows of a cluster, read by the check itself.

The final check ([`alloc.check.violations`][alloc.check.violations]) asserts
facts about an allocation: GPUs exist, a job's GPUs sit in one node of its
locality level, capacities hold, the reported throughput is the one its
placement earns.  It recomputes each of them from the cluster, the jobs and
the allocation alone.  What it needs of the cluster -- which server and type
each GPU name belongs to, the node of every level that holds each GPU, the
memory of each GPU, the tenants' cell forest -- it reads here, from the
cluster's servers, with pure functions: never from what the compile step,
validation, a solver or the model's own ``cached_property`` values keep on the
cluster object (those make the *solve* fast; a wrong one must not make the
check pass).

A cluster's facts are kept by this module alone (never written by any other
code), for the last few cluster objects it was asked about, each held so
that its ``id()`` stays unique while its facts live.

Examples
--------
>>> from alloc import Cluster, Server
>>> from alloc.facts import facts
>>> f = facts(Cluster((Server("s0", 8000, 64000, 2, "V100"), Server("s1", 8000, 64000, 2, "K80"))))
>>> f.gpu["s1/gpu1"], f.gpu_type[3], f.span_level([0, 1]), f.span_level([1, 2])
(3, 'K80', 'server', 'cluster')
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Iterable

from .arrays import _domain_ids, server_domain_ids
from .gpukey import gpu_key
from .model import CLUSTER, Cluster, Profile, Server

if TYPE_CHECKING:
    from .tenancy import CellTree

#: Clusters whose facts are kept at once.
KEPT = 4


class Facts:
    """A cluster as the final check reads it (see the module notes).

    Attributes
    ----------
    cluster : Cluster
        The cluster read (held).
    servers : tuple of Server
        Its servers, in order.
    server : dict of str to int
        Server id -> position.
    gpu : dict of str to int
        GPU name -> global index (servers in order, then index on the server).
    gpu_server : list of int
        Global GPU index -> server position.
    gpu_type : list of str or None
        Global GPU index -> its server's GPU type.
    domain : dict of str to list of int
        Per level of the cluster, the id of the node above each GPU.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        servers: tuple[Server, ...] = tuple(cluster.servers)
        self.servers = servers
        self.server = {s.id: i for i, s in enumerate(servers)}
        self.gpu: dict[str, int] = {}
        self.gpu_server: list[int] = []
        self.gpu_type: list[str | None] = []
        for i, s in enumerate(servers):
            for k in range(s.gpus):
                self.gpu[gpu_key(s.id, k)] = len(self.gpu_server)
                self.gpu_server.append(i)
                self.gpu_type.append(s.gpu_type)
        outer = server_domain_ids(servers, cluster.levels)
        self.domain: dict[str, list[int]] = {
            lv: _domain_ids(servers, lv, outer).tolist() for lv in cluster.levels}
        self._inner_first = [(lv, self.domain[lv]) for lv in reversed(cluster.levels)]
        self._mem: list[int] | None = None
        self._tree: CellTree | None = None

    def span_level(self, gpus: list[int]) -> str:
        """The innermost level one node of which holds all the GPUs (global
        indices, at least one); ``"cluster"`` when none does."""
        k0, rest = gpus[0], gpus[1:]
        for level, dom in self._inner_first:
            d0 = dom[k0]
            if all(dom[k] == d0 for k in rest):
                return level
        return CLUSTER

    def one_node(self, level: str, gpus: Iterable[int]) -> bool:
        """All the GPUs under one node of ``level`` (False for a level the
        cluster lacks)."""
        dom = self.domain.get(level)
        if dom is None:
            return False
        return len({dom[g] for g in gpus}) <= 1

    def nodes(self, level: str, gpus: Iterable[int]) -> set[int]:
        """The ids of the nodes of ``level`` that hold the GPUs."""
        dom = self.domain[level]
        return {dom[g] for g in gpus}

    @property
    def gpu_mem(self) -> list[int]:
        """Memory (MiB) of every GPU by global index (`alloc.resources`:
        the server's ``gpu_mem``, else its type's)."""
        if self._mem is None:
            from .resources import server_gpu_mem
            self._mem = [server_gpu_mem(s) for s in self.servers for _ in range(s.gpus)]
        return self._mem

    @property
    def tree(self) -> "CellTree":
        """The tenants' cell forest ([`alloc.tenancy.CellTree`][alloc.tenancy.CellTree]),
        built for the check."""
        if self._tree is None:
            from .tenancy import build_cell_tree
            self._tree = build_cell_tree(self.cluster)
        return self._tree


_KEPT: OrderedDict[int, Facts] = OrderedDict()


def facts(cluster: Cluster) -> Facts:
    """The [`Facts`][alloc.facts.Facts] of ``cluster`` (kept for the last
    `KEPT` clusters, by identity)."""
    key = id(cluster)
    hit = _KEPT.get(key)
    if hit is not None and hit.cluster is cluster:
        _KEPT.move_to_end(key)
        return hit
    out = Facts(cluster)
    _KEPT[key] = out
    while len(_KEPT) > KEPT:
        _KEPT.popitem(last=False)
    return out


def grid_value(profile: Profile, cpu_per_gpu: float, mem_per_gpu: float) -> float:
    """A profile's grid speed at a point, computed from its table (never
    from a value kept on the profile)."""
    if not profile.tput:
        return 1.0
    return profile._grid_value(cpu_per_gpu, mem_per_gpu)


__all__ = ["Facts", "KEPT", "facts", "grid_value"]

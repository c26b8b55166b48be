"""A cluster's integer-indexed arrays, built once per cluster and cached on
it: capacities per server, GPU type indices, the first GPU of each server,
each GPU's server, each GPU's node id at every hierarchy level (and each
server's domain id at every level above it), and the classes of identical
servers.  The compile step ([Problem][alloc.problem.Problem])
and the span rules (`alloc.topology`) read them.

Units: CPU in milli-cores, memory in MiB.
"""
from __future__ import annotations

import numpy as np

from .model import SERVER_LEVELS, Cluster, GpuShare


def outer_levels(levels) -> tuple[str, ...]:
    """The levels above ``server`` (the operator's own), outermost first.

    Examples
    --------
    >>> outer_levels(("zone", "block", "rack", "server", "gpu"))
    ('zone', 'block', 'rack')
    """
    return tuple(lv for lv in levels if lv not in SERVER_LEVELS)


def server_domain_ids(servers, levels) -> dict[str, np.ndarray]:
    """Per level above ``server``, each server's domain id (0, 1, ... in
    order of first appearance).  A domain is its id with the ids of the
    domains above it: the id at a level is looked up under the server's id
    one level up, so equal names under different parents are different
    domains."""
    out: dict[str, np.ndarray] = {}
    prev = [0] * len(servers)
    for lv in outer_levels(levels):
        ids: dict[tuple, int] = {}
        cur = [ids.setdefault((prev[i], s.domains.get(lv) or ""), len(ids))
               for i, s in enumerate(servers)]
        out[lv] = np.asarray(cur, dtype=np.int64)
        prev = cur
    return out


def _domain_ids(servers, level: str, outer: dict | None = None) -> np.ndarray:
    """Per GPU, the id of its node at ``level``: ids in order of first
    appearance of `Server.gpu_domain`'s names along the GPUs (above the
    server: `server_domain_ids`, repeated over each server's GPUs).  Inside a
    server the names follow from its shape (a server id prefix), so the
    pattern is worked out once per shape."""
    if outer is not None and level in outer:
        return np.repeat(outer[level], [s.gpus for s in servers]).astype(np.int64)
    if level == "server":
        nz = [s.gpus for s in servers if s.gpus]
        return np.repeat(np.arange(len(nz), dtype=np.int64), nz)
    if level == "gpu":
        return np.arange(sum(s.gpus for s in servers), dtype=np.int64)
    shapes: dict[tuple, tuple[list[int], int]] = {}
    out, base = [], 0
    for s in servers:
        key = (s.gpus, s.sockets, s.switches_per_socket)
        hit = shapes.get(key)
        if hit is None:
            local: dict[str, int] = {}
            pat = [local.setdefault(s.gpu_domain(k, level), len(local)) for k in range(s.gpus)]
            hit = shapes[key] = (pat, len(local))
        out.append(np.asarray(hit[0], dtype=np.int64) + base)
        base += hit[1]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


class ClusterArrays:
    """Integer-indexed arrays of a cluster (cached on the cluster: built once
    per cluster, shared by every call on it)."""

    def __init__(self, cluster: Cluster):
        srv = cluster.servers
        self.S, self.G = len(srv), cluster.total_gpus
        self.srv_cpu = np.array([s.cpu for s in srv], dtype=np.int64)
        self.srv_mem = np.array([s.mem for s in srv], dtype=np.int64)
        self.srv_gpus = np.array([s.gpus for s in srv], dtype=np.int64)
        self.types = cluster.gpu_types
        tix = {t: i for i, t in enumerate(self.types)}
        self.srv_type = np.array([tix.get(s.gpu_type or "", -1) if s.gpus else -1 for s in srv],
                                 dtype=np.int64)
        self.gpu_first = np.array(cluster.gpu_first, dtype=np.int64)
        self.gpu_server = np.array(cluster.gpu_server, dtype=np.int64)
        #: per level above the server, each server's domain id
        self.srv_domain = server_domain_ids(srv, cluster.levels)
        self.domain: dict[str, np.ndarray] = {level: _domain_ids(srv, level, self.srv_domain)
                                              for level in cluster.levels}
        classes: dict[tuple, list[int]] = {}
        # identical servers in different domains are not interchangeable: the
        # innermost domain above the server names all those above it
        inner = outer_levels(cluster.levels)[-1:]
        place = self.srv_domain[inner[0]].tolist() if inner else [0] * self.S
        for s, sv in enumerate(srv):
            key = (sv.cpu, sv.mem, sv.gpus, sv.gpu_type, sv.sockets, sv.switches_per_socket,
                   place[s])
            classes.setdefault(key, []).append(s)
        self.classes = list(classes.values())
        self.server_ids = [s.id for s in srv]
        self.shares: dict[tuple[int, int], GpuShare] = {}
        self.server_class = np.zeros(self.S, dtype=np.int64)
        for c, members in enumerate(self.classes):
            self.server_class[members] = c


def cluster_arrays(cluster: Cluster) -> ClusterArrays:
    """The [`ClusterArrays`][alloc.problem.ClusterArrays] of ``cluster`` (cached on it)."""
    arr = cluster.__dict__.get("_arrays")
    if arr is None:
        arr = ClusterArrays(cluster)
        cluster.__dict__["_arrays"] = arr
    return arr


__all__ = ["ClusterArrays", "cluster_arrays", "outer_levels", "server_domain_ids"]

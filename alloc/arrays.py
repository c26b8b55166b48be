"""A cluster's integer-indexed arrays, built once per cluster and cached on
it: capacities per server, GPU type indices, the first GPU of each server,
each GPU's server, each GPU's node id at every hierarchy level, and the
classes of identical servers.  The compile step ([Problem][alloc.problem.Problem])
and the span rules (`alloc.topology`) read them.

Units: CPU in milli-cores, memory in MiB.
"""
from __future__ import annotations

import numpy as np

from .model import Cluster, GpuShare


def _domain_ids(servers, level: str) -> np.ndarray:
    """Per GPU, the id of its node at ``level``: ids in order of first
    appearance of `Server.gpu_domain`'s names along the GPUs.  Inside a
    server the names follow from its shape (a server id prefix, or its rack),
    so the pattern is worked out once per shape."""
    if level == "rack":
        racks: dict[str, int] = {}
        per = [racks.setdefault(s.rack or "", len(racks)) if s.gpus else 0 for s in servers]
        return np.repeat(np.asarray(per, dtype=np.int64),
                         [s.gpus for s in servers]).astype(np.int64)
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
        self.domain: dict[str, np.ndarray] = {level: _domain_ids(srv, level)
                                              for level in cluster.levels}
        classes: dict[tuple, list[int]] = {}
        for s, sv in enumerate(srv):
            key = (sv.cpu, sv.mem, sv.gpus, sv.gpu_type, sv.sockets, sv.switches_per_socket,
                   sv.rack if "rack" in cluster.levels else None)
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


__all__ = ["ClusterArrays", "cluster_arrays"]

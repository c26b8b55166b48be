"""The cluster hierarchy as a networkx graph, and functions over it.

`hierarchy_graph` builds a directed tree: a root ``"cluster"`` node, then
one node per declared level (rack -> server -> socket -> switch -> gpu), edges
from parent to child.  Every node carries ``level``; servers carry ``cpu``,
``mem`` and ``gpu_type``; GPU leaves carry ``server``, ``gpu_type`` and
``milli`` (1000).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from .arrays import cluster_arrays
from .model import CLUSTER, MILLI, Cluster


def hierarchy_graph(cluster: Cluster):
    """The hierarchy of ``cluster`` as a ``networkx.DiGraph`` (see the module notes)."""
    import networkx as nx
    g = nx.DiGraph()
    g.add_node(CLUSTER, level=CLUSTER)
    levels = cluster.levels
    for s in cluster.servers:
        parent = CLUSTER
        for k in range(max(s.gpus, 1)):
            parent = CLUSTER
            for level in levels:
                if level == "gpu" and s.gpus == 0:
                    break
                name = s.gpu_domain(k, level) if s.gpus else (s.rack if level == "rack" else s.id)
                if level in ("socket", "switch") and s.gpus == 0:
                    continue
                if name not in g:
                    attrs = {"level": level}
                    if level == "server":
                        attrs.update(cpu=s.cpu, mem=s.mem, gpu_type=s.gpu_type, gpus=s.gpus)
                    if level == "gpu":
                        attrs.update(server=s.id, gpu_type=s.gpu_type, milli=MILLI)
                    g.add_node(name, **attrs)
                    g.add_edge(parent, name)
                parent = name
    return g


def nodes_at(graph, level: str) -> list[str]:
    """Nodes of ``graph`` at ``level``."""
    return [n for n, d in graph.nodes(data=True) if d["level"] == level]


def gpus_under(graph, node: str) -> list[str]:
    """GPU leaves below ``node`` in index order."""
    import networkx as nx
    return sorted((n for n in nx.descendants(graph, node) | {node}
                   if graph.nodes[n]["level"] == "gpu"), key=_gpu_key)


def _gpu_key(name: str):
    srv, k = name.rsplit("/gpu", 1)
    return srv, int(k)


def span_level(cluster: Cluster, gpu_ids: Iterable[str]) -> str | None:
    """The innermost declared level one node of which holds all the GPUs.

    Parameters
    ----------
    cluster : Cluster
    gpu_ids : iterable of str
        GPU leaf names (``"<server>/gpu<k>"``).

    Returns
    -------
    str or None
        A level of ``cluster.levels``; ``"cluster"`` when no node of any
        declared level holds them all; None for no GPUs.
    """
    gids = list(gpu_ids)
    if not gids:
        return None
    idx = cluster.gpu_index
    ks = [idx[g] for g in gids]
    k0, rest = ks[0], ks[1:]
    for level, dom in _domains(cluster):
        d0 = dom[k0]
        if all(dom[k] == d0 for k in rest):
            return level
    return CLUSTER


def _domains(cluster: Cluster) -> list:
    """``(level, node id of each GPU)`` innermost level first (the compile
    step's arrays: one id per node name of `Server.gpu_domain`), cached."""
    hit = cluster.__dict__.get("_span_domains")
    if hit is None:
        dom = cluster_arrays(cluster).domain
        hit = cluster.__dict__["_span_domains"] = [(lv, dom[lv].tolist())
                                                   for lv in reversed(cluster.levels)]
    return hit


def reachable_levels(cluster: Cluster, locality: str | None) -> list[str]:
    """Levels a multi-GPU job's GPUs may span: its locality level and the
    levels inside it; every level and ``"cluster"`` without a locality."""
    levels = list(cluster.levels)
    if locality in levels:
        return levels[levels.index(locality):]
    return levels + [CLUSTER]


lowest_common_level = span_level


def fanout(cluster: Cluster) -> dict[str, dict[str, int]]:
    """Children count per node, grouped by level: ``{level: {node: n}}``."""
    g = hierarchy_graph(cluster)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for n, d in g.nodes(data=True):
        out[d["level"]][n] = g.out_degree(n)
    return dict(out)

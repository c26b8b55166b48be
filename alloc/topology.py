"""The cluster hierarchy as a networkx graph, and functions over it.

:func:`hierarchy_graph` builds a directed tree: a root ``"cluster"`` node, then
one node per declared level (rack -> server -> socket -> switch -> gpu), edges
from parent to child.  Every node carries ``level``; servers carry ``cpu``,
``mem`` and ``gpu_type``; GPU leaves carry ``server``, ``gpu_type`` and
``milli`` (1000).
"""
from __future__ import annotations

from collections import defaultdict

import networkx as nx

from .model import CLUSTER, MILLI, Cluster


def hierarchy_graph(cluster: Cluster) -> nx.DiGraph:
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


def nodes_at(graph: nx.DiGraph, level: str) -> list[str]:
    return [n for n, d in graph.nodes(data=True) if d["level"] == level]


def gpus_under(graph: nx.DiGraph, node: str) -> list[str]:
    """GPU leaves below ``node`` in index order."""
    return sorted((n for n in nx.descendants(graph, node) | {node}
                   if graph.nodes[n]["level"] == "gpu"), key=_gpu_key)


def _gpu_key(name: str):
    srv, k = name.rsplit("/gpu", 1)
    return srv, int(k)


def lowest_common_level(cluster: Cluster, gpu_ids) -> str | None:
    """The innermost level one node of which holds all the GPUs (see
    :func:`alloc.objectives.span_level`)."""
    from .objectives import span_level
    return span_level(cluster, gpu_ids)


def fanout(cluster: Cluster) -> dict[str, dict[str, int]]:
    """Children count per node, grouped by level: ``{level: {node: n}}``."""
    g = hierarchy_graph(cluster)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for n, d in g.nodes(data=True):
        out[d["level"]][n] = g.out_degree(n)
    return dict(out)

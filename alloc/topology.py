r"""The cluster's hierarchy: the operator's graph, its levels and domains.

A cluster's hierarchy is a tree.  Its root is the cluster; below it come the
levels the operator names (``zone``, ``block``, ``rack``, an NVLink domain
``nvl72``, the leaf switches of Slurm's ``topology.conf`` ...), each of whose
nodes -- a *domain* -- may hold many servers; then the servers; then, inside
a server, the levels whose meaning alloc fixes: CPU ``socket``, PCIe
``switch`` and ``gpu`` (each optional).  `Cluster.levels` lists the levels
outermost first; each server names its domain at every level above it in
`Server.domains` (``Server.rack`` is the short form of ``domains["rack"]``).
The first instance files' five names (``rack``, ``server``, ``socket``,
``switch``, ``gpu``) are the special case with one level, ``rack``, above
the servers.

A domain is named by its id together with the ids above it (Kubernetes'
topology-aware schedulers do the same): two racks ``r1`` in two blocks are
two racks.  `alloc.arrays.server_domain_ids` numbers them; the compile step's
``domain[level]`` gives each GPU's node id at every level.

Three ways in, one way out:

* a ``networkx.DiGraph`` tree: [`Cluster.from_graph`][alloc.model.Cluster.from_graph]
  (`alloc.graph_tree` reads it), and `hierarchy_graph` writes it back (the
  same graph, up to the names of the nodes inside a server, which follow
  alloc's rule ``<server>/socket<k>/switch<m>``, ``<server>/gpu<k>``);
* levels with each server's domains (the form of Kubernetes' node labels);
* Slurm's ``topology.conf`` (`alloc.adapters.slurm.read_topology`).

Placement rules over the hierarchy:

* **Required** (``Job.locality = L``): all the job's GPUs under one node of
  level ``L`` (the check, `alloc.check`, refuses anything else).
* **Preferred** (``Job.preferred = P``): a soft rule after the objective.
  With $\ell(j)$ the innermost level one node of which holds all of job
  $j$'s GPUs (`span_level`; ``"cluster"`` above every level), the job
  *climbs*

  $$ \mathrm{climb}_P(j) = \max(0,\ \mathrm{pos}(P) - \mathrm{pos}(\ell(j))) $$

  levels, ``pos`` counting from the innermost level (the cluster is one
  above the outermost): 0 when one domain of ``P`` holds it, 1 when one
  domain of the level above does, and so on (`climb`).  Among answers of
  equal value, the fewest levels climbed in all, lowest levels first
  (the lexicographic rule Kueue's and Slurm's placement follow: fit one
  domain at the preferred level, else at the next level up, ...).  Solvers
  that honour it declare the capability ``preferred``; the exact ones
  model it with a weight below the objective's step (`preferred_weight`),
  so that it never trades against the objective.
* **Span factors** (`Profile.span`): a profile's throughput factor by the
  level a job's GPUs span, any level name included.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, TypeGuard

from .gpukey import GpuKey
from .arrays import cluster_arrays, outer_levels
from .model import CLUSTER, MILLI, SERVER_LEVELS, Cluster

#: Levels inside a server whose meaning alloc fixes, outermost first.
INSIDE_LEVELS = ("socket", "switch", "gpu")


# ------------------------------------------------------------------- levels
def level_problems(levels: Any) -> list[str]:
    """Problems of a ``cluster.levels`` value, one line each (empty: fine).

    The operator's names first (any, none of ``cluster``, ``server``,
    ``socket``, ``switch``, ``gpu``), then ``server``, then those of
    ``socket``, ``switch``, ``gpu`` that apply, in that order (``socket`` and
    ``switch`` only with ``gpu``); no name twice.

    Examples
    --------
    >>> level_problems(("zone", "block", "rack", "server", "gpu"))
    []
    >>> level_problems(("rack", "server", "rack", "gpu"))
    ["cluster.levels: level 'rack' listed twice (a level appears once on every path)"]
    """
    if not isinstance(levels, (tuple, list)) or not all(isinstance(x, str) and x for x in levels):
        return [f"cluster.levels: expected a list of level names, got {levels!r:.60}"]
    lv = list(levels)
    seen: set[str] = set()
    for x in lv:
        if x in seen:
            return [f"cluster.levels: level {x!r} listed twice (a level appears once on every "
                    f"path)"]
        seen.add(x)
    if "server" not in lv:
        return [f"cluster.levels: expected a list containing 'server', got {lv}"]
    if CLUSTER in lv:
        return ["cluster.levels: 'cluster' names the root, not a level"]
    k = lv.index("server")
    above, below = lv[:k], lv[k + 1:]
    fixed = [x for x in above if x in INSIDE_LEVELS]
    if fixed:
        return [f"cluster.levels: level {fixed[0]!r} is inside a server: list it after "
                f"'server', got {lv}"]
    if [x for x in INSIDE_LEVELS if x in below] != below:
        return [f"cluster.levels: after 'server' expected some of {list(INSIDE_LEVELS)} in "
                f"that order, got {below}"]
    if below and below[-1] != "gpu":
        return [f"cluster.levels: {below[-1]!r} needs the 'gpu' level after it (its GPUs are "
                f"its leaves), got {lv}"]
    if any(len(x) > 256 for x in lv):
        return ["cluster.levels: a level name is longer than 256 characters"]
    return []


def is_outer(level: str | None) -> TypeGuard[str]:
    """True for a level above the servers (an operator's name).

    Examples
    --------
    >>> is_outer("block"), is_outer("server"), is_outer(None)
    (True, False, False)
    """
    return level is not None and level not in SERVER_LEVELS and level != CLUSTER


def levels_from(cluster: Cluster, level: str) -> list[str]:
    """``level`` and the levels above it, innermost first, then ``"cluster"``
    (the levels a job preferring ``level`` may climb to).

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> c = Cluster((Server("s0", 8000, 64000, 8, "V100", domains={"zone": "z", "rack": "r"}),),
    ...             levels=("zone", "rack", "server", "gpu"))
    >>> levels_from(c, "rack")
    ['rack', 'zone', 'cluster']
    """
    lv = list(cluster.levels)
    k = lv.index(level)
    return list(reversed(lv[:k + 1])) + [CLUSTER]


# ---------------------------------------------------------------- domains
def domain_names(cluster: Cluster) -> dict[str, list[str]]:
    """Per level above the servers, the name of each domain id (the ids of
    `alloc.arrays.server_domain_ids`): its own id when that names one node of
    the hierarchy, else the ids from the outermost level down joined by
    ``/`` (prefixed ``level:`` if that too is taken).  Cached on the cluster.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> srv = tuple(Server(f"s{i}", 8000, 64000, 8, "V100",
    ...                    domains={"block": f"b{i // 2}", "rack": "r1"}) for i in range(4))
    >>> domain_names(Cluster(srv, levels=("block", "rack", "server", "gpu")))
    {'block': ['b0', 'b1'], 'rack': ['b0/r1', 'b1/r1']}
    """
    hit = cluster.__dict__.get("_domain_names")
    if hit is not None:
        return hit
    out = name_domains(cluster, cluster_arrays(cluster).srv_domain)
    cluster.__dict__["_domain_names"] = out
    return out


def name_domains(cluster: Cluster, srv_domain) -> dict[str, list[str]]:
    """`domain_names` from each server's domain ids ``srv_domain`` (level ->
    ids, `alloc.arrays.server_domain_ids`), computed afresh (nothing kept)."""
    outer = outer_levels(cluster.levels)
    paths: dict[str, list[tuple]] = {}
    for lv in outer:
        ids = [int(x) for x in srv_domain[lv]]
        per: list[tuple | None] = [None] * (max(ids) + 1 if ids else 0)
        for s, d in zip(cluster.servers, ids):
            if per[d] is None:
                per[d] = tuple(s.domains.get(x) or "" for x in outer[:outer.index(lv) + 1])
        paths[lv] = [p or ("",) for p in per]
    taken: dict[str, int] = defaultdict(int)
    for s in cluster.servers:
        taken[s.id] += 1
    taken[CLUSTER] += 1
    for lv in outer:
        for p in paths[lv]:
            taken[p[-1]] += 1
    out: dict[str, list[str]] = {}
    used = set(taken)
    for lv in outer:
        names = []
        for p in paths[lv]:
            name = p[-1]
            if taken[name] > 1:
                name = "/".join(p)
                if name in used and name != p[-1]:
                    name = f"{lv}:{name}"
                used.add(name)
            names.append(name)
        out[lv] = names
    return out


def server_domains(cluster: Cluster, level: str) -> list[int]:
    """Each server's domain id at ``level`` (a level above the servers; the
    server's own index at ``server``)."""
    if level == "server":
        return list(range(len(cluster.servers)))
    return cluster_arrays(cluster).srv_domain[level].tolist()


# ------------------------------------------------------------------ graphs
def hierarchy_graph(cluster: Cluster):
    """The hierarchy of ``cluster`` as a ``networkx.DiGraph`` tree, edges
    from parent to child: the root ``"cluster"`` (``level="cluster"``), a node
    per domain of each level above the servers (named by `domain_names`),
    the servers (their fields as attributes: ``cpu``, ``mem``, ``gpus``,
    ``gpu_type``, and ``sockets``, ``switches_per_socket``, ``gpu_mem`` when
    not the defaults) and, for the levels inside a server the cluster
    declares, ``<server>/socket<k>``, ``<server>/socket<k>/switch<m>`` and
    the GPU leaves ``<server>/gpu<k>`` (``server``, ``gpu_type``,
    ``milli``).  Every node carries ``level``.
    [`Cluster.from_graph`][alloc.model.Cluster.from_graph] reads it back.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> from alloc.topology import hierarchy_graph
    >>> c = Cluster((Server("s0", 8000, 64000, 2, "V100", domains={"block": "b0"}),),
    ...             levels=("block", "server", "gpu"))
    >>> g = hierarchy_graph(c)
    >>> sorted(g.successors("b0")), g.nodes["s0/gpu1"]["level"]
    (['s0'], 'gpu')
    >>> Cluster.from_graph(g) == c
    True
    """
    import networkx as nx
    g = nx.DiGraph()
    g.add_node(CLUSTER, level=CLUSTER)
    levels = cluster.levels
    outer = outer_levels(levels)
    inside = [lv for lv in INSIDE_LEVELS if lv in levels]
    names = domain_names(cluster) if outer else {}
    arr = cluster_arrays(cluster)
    ids = {lv: arr.srv_domain[lv].tolist() for lv in outer}
    for i, s in enumerate(cluster.servers):
        parent = CLUSTER
        for lv in outer:
            name = names[lv][ids[lv][i]]
            if name not in g:
                g.add_node(name, level=lv)
                g.add_edge(parent, name)
            parent = name
        g.add_node(s.id, **_server_attrs(s))
        g.add_edge(parent, s.id)
        if not inside or not s.gpus:
            continue
        for k in range(s.gpus):
            up = s.id
            for lv in inside:
                name = s.gpu_domain(k, lv)
                if name not in g:
                    attrs: dict[str, Any] = {"level": lv}
                    if lv == "gpu":
                        attrs.update(server=s.id, gpu_type=s.gpu_type, milli=MILLI)
                    g.add_node(name, **attrs)
                    g.add_edge(up, name)
                up = name
    return g


def _server_attrs(s) -> dict[str, Any]:
    d: dict[str, Any] = {"level": "server", "cpu": s.cpu, "mem": s.mem, "gpus": s.gpus}
    if s.gpu_type is not None:
        d["gpu_type"] = s.gpu_type
    if s.sockets != 1:
        d["sockets"] = s.sockets
    if s.switches_per_socket != 1:
        d["switches_per_socket"] = s.switches_per_socket
    if s.gpu_mem is not None:
        d["gpu_mem"] = s.gpu_mem
    return d


def cluster_from_graph(graph, tenants=None) -> Cluster:
    """[`Cluster.from_graph`][alloc.model.Cluster.from_graph] (the inverse of `hierarchy_graph`)."""
    return Cluster.from_graph(graph, tenants)


def nodes_at(graph, level: str) -> list[str]:
    """Nodes of ``graph`` at ``level``."""
    return [n for n, d in graph.nodes(data=True) if d["level"] == level]


def gpus_under(graph, node: str) -> list[str]:
    """GPU leaves below ``node`` in index order."""
    import networkx as nx
    return sorted((n for n in nx.descendants(graph, node) | {node}
                   if graph.nodes[n]["level"] == "gpu"), key=_gpu_key)


def _gpu_key(name: str) -> GpuKey:
    return GpuKey.parse(name)


def fanout(cluster: Cluster) -> dict[str, dict[str, int]]:
    """Children count per node, grouped by level: ``{level: {node: n}}``."""
    g = hierarchy_graph(cluster)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for n, d in g.nodes(data=True):
        out[d["level"]][n] = g.out_degree(n)
    return dict(out)


# ------------------------------------------------------------------- spans
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

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> c = Cluster(tuple(Server(f"s{i}", 8000, 64000, 2, "V100", domains={"rack": f"r{i // 2}"})
    ...                   for i in range(4)), levels=("rack", "server", "gpu"))
    >>> span_level(c, ["s0/gpu0", "s1/gpu1"]), span_level(c, ["s0/gpu0", "s2/gpu0"])
    ('rack', 'cluster')
    """
    gids = list(gpu_ids)
    if not gids:
        return None
    idx = cluster.gpu_index
    return span_level_of(cluster, [idx[g] for g in gids])


def span_level_of(cluster: Cluster, gpus: list[int]) -> str:
    """`span_level` of global GPU indices (at least one)."""
    k0, rest = gpus[0], gpus[1:]
    for level, dom in _domains(cluster):
        d0 = dom[k0]
        if all(dom[k] == d0 for k in rest):
            return level
    return CLUSTER


def _domains(cluster: Cluster) -> list:
    """``(level, node id of each GPU)`` innermost level first (the compile
    step's arrays: one id per node of the hierarchy), cached."""
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


def climb(cluster: Cluster, preferred: str | None, level: str | None) -> int:
    r"""Levels climbed above ``preferred`` by a job whose GPUs span ``level``
    (its `span_level`): 0 when ``level`` is ``preferred`` or inside it, else
    how many levels up ``level`` is (``"cluster"`` one above the outermost).

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> c = Cluster((Server("s0", 8000, 64000, 8, "V100", domains={"zone": "z", "rack": "r"}),),
    ...             levels=("zone", "rack", "server", "gpu"))
    >>> climb(c, "rack", "server"), climb(c, "rack", "zone"), climb(c, "rack", "cluster")
    (0, 1, 2)
    """
    if preferred is None or level is None:
        return 0
    order = [CLUSTER] + list(cluster.levels)
    return max(0, order.index(preferred) - order.index(level))


def job_climb(cluster: Cluster, job, gpu_ids: Iterable[str]) -> int:
    """`climb` of ``job`` placed on ``gpu_ids`` (0 without ``preferred``)."""
    pref = getattr(job, "preferred", None)
    if pref is None:
        return 0
    ids = list(gpu_ids)
    if len(ids) < 2:
        return 0
    return climb(cluster, pref, span_level(cluster, ids))


def usable_per_server(cluster: Cluster, gpu_free, cpu_free, mem_free, per_cpu: int,
                      per_mem: int, allowed=None):
    """Per server, the whole free GPUs (1000 milli free) that its free CPU and
    memory cover at ``per_cpu`` milli-cores and ``per_mem`` MiB a GPU (numpy
    int64; 0 where ``allowed``, a boolean per server, is False)."""
    import numpy as np
    arr = cluster_arrays(cluster)
    whole = np.bincount(arr.gpu_server, weights=(np.asarray(gpu_free) >= MILLI),
                        minlength=arr.S).astype(np.int64)
    use = whole
    if per_cpu:
        use = np.minimum(use, np.asarray(cpu_free, dtype=np.int64) // per_cpu)
    if per_mem:
        use = np.minimum(use, np.asarray(mem_free, dtype=np.int64) // per_mem)
    if allowed is not None:
        use = np.where(allowed, use, 0)
    return np.maximum(use, 0)


def one_domain(cluster: Cluster, level: str, n: int, usable, gpu_free) -> list[int] | None:
    r"""``n`` whole free GPUs under one node of ``level``, or None.

    The node is the best fit: of the nodes whose usable GPUs ($u_s$ from
    `usable_per_server`, summed over a domain's servers) reach ``n``, the
    one with the fewest (ties: the lowest id); inside it the servers with
    the most usable GPUs first, each server's free GPUs in index order.
    At ``socket`` and ``switch``: one server's fullest node of that level
    that holds ``n`` whole free GPUs (CPU and memory covering them).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc import Cluster, Server
    >>> c = Cluster(tuple(Server(f"s{i}", 8000, 64000, 2, "V100", domains={"rack": f"r{i // 2}"})
    ...                   for i in range(4)), levels=("rack", "server", "gpu"))
    >>> free = np.array([1000, 0, 1000, 1000, 1000, 1000, 1000, 1000])
    >>> u = usable_per_server(c, free, np.full(4, 8000), np.full(4, 64000), 0, 0)
    >>> one_domain(c, "rack", 3, u, free)          # rack r0 has 3, r1 has 4: best fit r0
    [0, 2, 3]
    """
    import numpy as np
    arr = cluster_arrays(cluster)
    u = np.asarray(usable, dtype=np.int64)
    free = np.asarray(gpu_free)
    first, ngpu = arr.gpu_first, arr.srv_gpus
    if level in ("socket", "switch", "gpu"):
        dom = arr.domain.get(level)
        if dom is None:
            return None
        for s in np.flatnonzero(u >= n).tolist():
            a = int(first[s])
            gs = [a + k for k in range(int(ngpu[s])) if free[a + k] >= MILLI]
            groups: dict[int, list[int]] = {}
            for g in gs:
                groups.setdefault(int(dom[g]), []).append(g)
            best = sorted((v for v in groups.values() if len(v) >= n), key=len)
            if best:
                return best[0][:n]
        return None
    if level == "server":
        ok = np.flatnonzero(u >= n)
        if not len(ok):
            return None
        s = int(ok[np.argmin(u[ok])])
        servers = [s]
    elif level == CLUSTER:
        servers = np.flatnonzero(u > 0).tolist()
        if int(u.sum()) < n:
            return None
    else:
        sd = arr.srv_domain[level]
        tot = np.bincount(sd, weights=u, minlength=int(sd.max()) + 1 if len(sd) else 0)
        ok = np.flatnonzero(tot >= n)
        if not len(ok):
            return None
        d = int(ok[np.argmin(tot[ok])])
        servers = np.flatnonzero((sd == d) & (u > 0)).tolist()
    servers.sort(key=lambda s: (-int(u[s]), s))
    out: list[int] = []
    for s in servers:
        a = int(first[s])
        take = [a + k for k in range(int(ngpu[s])) if free[a + k] >= MILLI][:min(int(u[s]),
                                                                                   n - len(out))]
        out += take
        if len(out) >= n:
            return sorted(out)
    return None


def preferred_weight(step: float | None, jobs: int, levels: int) -> float:
    r"""The weight of one level climbed in an exact model: below the
    objective's step divided by the most levels all preferred jobs can
    climb, so that no number of climbs outweighs one step of the objective
    (the lexicographic rule).  Without a step, $10^{-6}$ of that figure
    with a unit step (the rule then holds up to that tolerance).

    Parameters
    ----------
    step : float or None
        The objective's step (`alloc.objectives.Objective.step`).
    jobs : int
        Preferred jobs that may climb.
    levels : int
        The most levels one of them can climb.

    Examples
    --------
    >>> preferred_weight(1.0, 10, 3)        # 1 / 31, one significant digit down
    0.03
    """
    total = max(1, jobs * levels)
    base = step if step else 1e-6
    w = base / (total + 1)
    # a decimal weight keeps a decimal objective decimal (CP-SAT scales it exactly)
    digits = 0
    while w < 1.0 and digits < 12:
        w *= 10
        digits += 1
    return float(int(w)) / 10 ** digits if int(w) else base / (total + 1)


__all__ = ["INSIDE_LEVELS", "climb", "one_domain", "usable_per_server", "cluster_from_graph", "domain_names", "fanout",
           "gpus_under", "hierarchy_graph", "is_outer", "job_climb", "level_problems",
           "levels_from", "lowest_common_level", "nodes_at", "preferred_weight",
           "reachable_levels", "server_domains", "span_level", "span_level_of"]

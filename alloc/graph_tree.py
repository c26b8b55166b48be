"""Reading a hierarchy graph: a networkx tree into levels and server rows.

The graph is a ``networkx.DiGraph`` with edges from parent to child:

* one root, the cluster (any name; its ``level``, if any, is ``"cluster"``);
* inner nodes above the servers, each with a ``level`` attribute naming an
  operator's level (``"zone"``, ``"block"``, ``"nvl72"``, ...);
* server nodes, ``level="server"``, carrying the `alloc.model.Server` fields
  (``cpu``, ``mem``, ``gpus``, ``gpu_type``, ``sockets``,
  ``switches_per_socket``, ``gpu_mem``; the node's name is the id);
* optionally, below a server, ``socket`` and ``switch`` nodes and ``gpu``
  leaves: the server's GPU count, sockets and switches per socket are then
  read from their shape (they must split evenly, as everywhere in alloc).

Every root-to-server path names the same levels in the same order, and no
level twice; the levels of the cluster are those, then ``"server"``, then
the levels found below the servers.  A server's domains are the names of its
ancestors, by level; the servers come in the order the graph holds its nodes
(the order they were added).  This module makes plain rows (no model objects), so
that [`Cluster.from_graph`][alloc.model.Cluster.from_graph] can use it
without an import cycle.

Each problem is one line naming the node.
"""
from __future__ import annotations

from typing import Any

from .errors import InputError

#: The server's own fields a server node may carry, with their defaults.
SERVER_FIELDS = {"cpu": None, "mem": None, "gpus": None, "gpu_type": None, "sockets": None,
                 "switches_per_socket": None, "gpu_mem": None}
#: Attributes a server node may carry besides its fields.
SERVER_EXTRA = ("level", "rack", "domains")
#: Levels inside a server, outermost first.
INSIDE = ("socket", "switch", "gpu")
CLUSTER = "cluster"


def _bad(msg: str) -> InputError:
    return InputError(f"graph: {msg}")


def _name(n: Any) -> str:
    return repr(n) if not isinstance(n, str) else f"{n!r}"


def _adjacency(graph: Any) -> tuple[dict, dict, dict]:
    """(successors, predecessors, attributes) dicts of a DiGraph."""
    try:
        import networkx as nx
    except ImportError:      # pragma: no cover - networkx is a dependency
        nx = None
    if nx is not None and not isinstance(graph, nx.DiGraph) or \
            nx is not None and isinstance(graph, nx.MultiDiGraph):
        raise _bad(f"expected a networkx.DiGraph (edges from parent to child), "
                   f"got {type(graph).__name__}")
    return graph._succ, graph._pred, graph._node


def _root(succ: dict, pred: dict) -> Any:
    if not succ:
        raise _bad("expected a tree, got an empty graph")
    roots = []
    for n, ps in pred.items():
        if len(ps) > 1:
            a, b = list(ps)[:2]
            raise _bad(f"node {_name(n)} has two parents, {_name(a)} and {_name(b)}: "
                       "not a tree")
        if not ps:
            roots.append(n)
            if len(roots) > 1:
                raise _bad(f"nodes {_name(roots[0])} and {_name(roots[1])} have no parent: "
                           "not a tree (one root, the cluster, expected)")
    if not roots:
        raise _bad("every node has a parent: not a tree (a cycle)")
    return roots[0]


def read_tree(graph: Any) -> tuple[tuple[str, ...], list[dict]]:
    """The levels (outermost first) and one row per server (its fields and
    ``domains``) of a hierarchy graph (see the module notes).

    Raises
    ------
    InputError
        One line naming the node.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([("cluster", "r0"), ("r0", "s0")])
    >>> g.nodes["r0"]["level"] = "rack"
    >>> g.nodes["s0"].update(level="server", cpu=8000, mem=64000, gpus=2, gpu_type="V100")
    >>> levels, rows = read_tree(g)
    >>> levels, rows[0]["domains"]
    (('rack', 'server'), {'rack': 'r0'})
    """
    succ, pred, attrs = _adjacency(graph)
    root = _root(succ, pred)
    rl = attrs[root].get("level", CLUSTER)
    if rl != CLUSTER:
        raise _bad(f"root {_name(root)} has level {rl!r}; the root is the cluster "
                   f"(level 'cluster' or none)")
    outer: tuple[str, ...] | None = None
    first_server = None
    rows: list[dict] = []
    inside_seen: tuple[str, ...] | None = None
    seen = 1
    # (node, ((level, ancestor), ...), the levels of that path)
    stack: list[tuple[Any, tuple, tuple]] = [(c, (), ()) for c in reversed(list(succ[root]))]
    while stack:
        n, path, pl = stack.pop()
        seen += 1
        level = attrs[n].get("level")
        if level.__class__ is not str or not level:
            raise _bad(f"node {_name(n)}: expected a 'level' attribute naming its level, "
                       f"got {level!r}")
        if level == "server":
            if outer is None:
                outer, first_server = pl, n
            elif pl is not outer and pl != outer:
                raise _bad(f"node {_name(n)}: the levels above it {list(pl)} differ from "
                           f"{list(outer)} above {_name(first_server)}")
            row, below = _server(n, attrs[n], succ, attrs, path)
            seen += below["nodes"]
            if below["levels"] is not None:
                if inside_seen is None:
                    inside_seen = below["levels"]
                elif below["levels"] != inside_seen:
                    raise _bad(f"node {_name(n)}: levels {list(below['levels'])} below it "
                               f"differ from {list(inside_seen)} below another server")
            rows.append(row)
            continue
        if level in INSIDE or level in ("server", CLUSTER):
            raise _bad(f"node {_name(n)}: level {level!r} above a server (levels above the "
                       f"servers are the operator's own names)")
        for lv, anc in path:
            if lv == level:
                raise _bad(f"node {_name(n)}: level {level!r} twice on one path (also at "
                           f"{_name(anc)})")
        kids = succ[n]
        if not kids:
            raise _bad(f"node {_name(n)}: a leaf must be a server or a GPU, got level {level!r}")
        if not isinstance(n, str) or not n:
            raise _bad(f"node {_name(n)}: a domain's name must be a non-empty string")
        child = path + ((level, n),)
        cl = pl + (level,)
        if outer is not None and cl == outer:
            cl = outer                      # one object: the servers' test is an identity
        stack.extend((c, child, cl) for c in reversed(list(kids)))
    if seen != len(succ):
        lost = next(n for n in succ if n != root and not _reached(n, pred, root))
        raise _bad(f"node {_name(lost)} is not reachable from the root {_name(root)}: "
                   f"not a tree (a cycle)")
    if not rows:
        raise _bad("no server node (level 'server')")
    has_gpus = any(r["gpus"] for r in rows)
    if inside_seen is None and has_gpus and any(r["_leaves"] for r in rows):
        inside_seen = ("gpu",)
    for r in rows:
        if r["gpus"] and inside_seen is not None and not r["_leaves"]:
            raise _bad(f"node {_name(r['id'])}: {r['gpus']} GPUs and no GPU node below it, "
                       f"while other servers have theirs")
        del r["_leaves"]
    inner = tuple(x for x in INSIDE if x in (inside_seen or ()))
    # the servers in the graph's node order (the order they were added)
    pos = {n: k for k, n in enumerate(attrs)}
    rows.sort(key=lambda r: pos[r["id"]])
    return tuple(outer or ()) + ("server",) + inner, rows


def _reached(n: Any, pred: dict, root: Any) -> bool:
    seen = set()
    while pred[n]:
        if n in seen:
            return False
        seen.add(n)
        n = next(iter(pred[n]))
    return n == root


def _int_field(n: Any, a: dict, key: str, default: Any) -> Any:
    v = a.get(key, default)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise _bad(f"node {_name(n)}: {key}: expected an integer, got {v!r}")
    return v


_KNOWN = frozenset(SERVER_FIELDS) | frozenset(SERVER_EXTRA)
_LEAF: dict[str, Any] = {"levels": None, "gpus": 0, "shape": (1, 1), "nodes": 0}


def _server(n: Any, a: dict, succ: dict, attrs: dict, path: tuple) -> tuple[dict, dict]:
    """The row of server node ``n`` and what lies below it."""
    if n.__class__ is not str or not n:
        raise _bad(f"node {_name(n)}: a server's name (its id) must be a non-empty string")
    if not _KNOWN.issuperset(a):
        extra = sorted(k for k in a if k not in _KNOWN)
        raise _bad(f"node {_name(n)}: unknown attribute {extra[0]!r}; a server node carries "
                   f"{sorted(SERVER_FIELDS)}")
    if "cpu" not in a or "mem" not in a:
        raise _bad(f"node {_name(n)}: missing attribute {'cpu' if 'cpu' not in a else 'mem'!r}")
    domains = dict(path)
    if "rack" in a or "domains" in a:
        given = dict(a.get("domains") or {})
        if a.get("rack") is not None:
            given["rack"] = a["rack"]
        for lv, v in given.items():
            if domains.get(lv, v) != v:
                raise _bad(f"node {_name(n)}: {lv} {v!r} in its attributes, under "
                           f"{_name(domains[lv])} in the graph: a server in two domains of "
                           f"one level")
    gpus = _int_field(n, a, "gpus", None)
    sockets = _int_field(n, a, "sockets", None) if "sockets" in a else None
    switches = _int_field(n, a, "switches_per_socket", None) \
        if "switches_per_socket" in a else None
    below: dict[str, Any] = _below(n, succ, attrs) if succ[n] else _LEAF
    if below["levels"] is not None:
        shape = below["shape"]
        for key, have, want in (("gpus", gpus, below["gpus"]), ("sockets", sockets, shape[0]),
                                ("switches_per_socket", switches, shape[1])):
            if have is not None and have != want:
                raise _bad(f"node {_name(n)}: {key} {have} in its attributes, {want} in the "
                           f"graph below it")
        gpus, sockets, switches = below["gpus"], shape[0], shape[1]
    gpu_type = a.get("gpu_type")
    row = {"id": n, "cpu": a["cpu"], "mem": a["mem"], "gpus": gpus or 0,
           "gpu_type": gpu_type if gpu_type is not None else ("gpu" if gpus else None),
           "sockets": sockets or 1, "switches_per_socket": switches or 1,
           "gpu_mem": a.get("gpu_mem"), "domains": domains,
           "_leaves": below["levels"] is not None}
    return row, below


def _below(server: Any, succ: dict, attrs: dict) -> dict:
    """The levels, GPU count and (sockets, switches per socket) below a
    server node (levels None: a leaf server)."""
    kids = succ[server]
    if not kids:
        return {"levels": None, "gpus": 0, "shape": (1, 1), "nodes": 0}
    nodes = 0
    levels: tuple | None = None
    counts: dict[Any, list] = {}    # node -> child counts by level

    def walk(n, path):
        nonlocal nodes, levels
        nodes += 1
        lv = attrs[n].get("level")
        if lv not in INSIDE:
            raise _bad(f"node {_name(n)}: level {lv!r} below server {_name(server)} (expected "
                       f"socket, switch or gpu)")
        here = path + (lv,)
        if [x for x in INSIDE if x in here] != list(here) or len(set(here)) != len(here):
            raise _bad(f"node {_name(n)}: levels {list(here)} below server {_name(server)} "
                       f"out of order (socket, switch, gpu)")
        ks = succ[n]
        if lv == "gpu":
            if ks:
                raise _bad(f"node {_name(n)}: a GPU node has children")
            if levels is None:
                levels = here
            elif here != levels:
                raise _bad(f"node {_name(n)}: levels {list(here)} below server "
                           f"{_name(server)} differ from {list(levels)} on another path")
            return 1
        if not ks:
            raise _bad(f"node {_name(n)}: a leaf must be a server or a GPU, got level {lv!r}")
        sub = [walk(c, here) for c in ks]
        counts[n] = sub
        if len(set(sub)) > 1:
            raise _bad(f"node {_name(n)}: its children hold {sorted(set(sub))} GPUs: a "
                       f"server's GPUs split evenly over sockets and switches")
        return sum(sub)

    per = [walk(c, ()) for c in kids]
    if len(set(per)) > 1:
        raise _bad(f"node {_name(server)}: its children hold {sorted(set(per))} GPUs: a "
                   f"server's GPUs split evenly over sockets and switches")
    total = sum(per)
    assert levels is not None
    sockets = len(kids) if "socket" in levels else 1
    if "switch" in levels:
        top = list(kids)
        per_socket = len(succ[top[0]]) if "socket" in levels else len(top)
        if "socket" in levels and len({len(succ[s]) for s in top}) > 1:
            raise _bad(f"node {_name(server)}: its sockets hold different numbers of switches")
        switches = per_socket
    else:
        switches = 1
    return {"levels": levels, "gpus": total, "shape": (sockets, switches), "nodes": nodes}


__all__ = ["read_tree"]

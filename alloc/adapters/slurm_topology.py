r"""Slurm's ``topology.conf`` as alloc's levels and each node's domains.

Two forms (``topology.conf(5)``; parameter names are case-insensitive, ``#``
starts a comment, node and switch lists use Slurm's host-list syntax):

* **tree** (``TopologyPlugin=topology/tree``): ``SwitchName=S Nodes=...``
  lines are leaf switches, ``SwitchName=S Switches=...`` lines the switches
  above them (``LinkSpeed`` is read and not used, as in Slurm).  Each switch
  is a domain; its level is its height above the nodes: ``leaf`` (1),
  ``spine`` (2), ``core`` (3), then ``tier4``, ``tier5``, ...  A switch
  whose parent is more than one level above it stands for itself on the
  levels in between (a domain of its own nodes only), and so does a top
  switch below the highest level, so that every node has a domain at every
  level and no domain reaches beyond its switch.  Switches without a common parent are several
  top-level domains: the whole cluster is above them (Slurm runs no job
  across them unless ``TopologyParam=TopoOptional``).
* **block** (``TopologyPlugin=topology/block``, Slurm 23.11 and later):
  ``BlockName=B Nodes=...`` lines are the base blocks, in file order;
  ``BlockSizes=s0,s1,...`` the planning base block size (nodes) and the
  larger blocks Slurm enforces, each a power of two times the one before.
  The base blocks are the level ``block``; a size ``s_i = 2^k s_0`` is the
  level ``block<2^k>`` whose domains are runs of ``2^k`` consecutive base
  blocks (``block4``: blocks 1-4, 5-8, ...; a last run may be shorter).
  Without ``BlockSizes``, every power of two of base blocks below their
  number is a level.  A block with fewer nodes than ``s_0`` is an error
  (Slurm leaves such a block unused).

The levels come outermost first and end with ``server`` and ``gpu``, ready
for ``Cluster(servers, levels)``; a node's domains are
``{level: switch or block}`` (``Server.domains``).

Bad input is one line naming the file and the line: an unknown keyword, a
switch listed twice, a child switch no line defines, a node under two
switches or in two blocks (a server in two domains of one level), a switch
above itself, a node the cluster does not have (when the nodes are given),
both forms in one file, ``BlockSizes`` that are not a power of two apart.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "topology.conf"
>>> _ = p.write_text("\n".join(["SwitchName=s0 Nodes=dev[0-5]", "SwitchName=s1 Nodes=dev[6-11]",
...                             "SwitchName=s2 Nodes=dev[12-17]", "SwitchName=s3 Switches=s[0-2]"]))
>>> topo = read_topology_conf(p)
>>> topo.levels, topo.domains["dev7"]
(('spine', 'leaf', 'server', 'gpu'), {'spine': 's3', 'leaf': 's1'})
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, NamedTuple

from ..errors import InputError
from .scontrol import hostnames

#: Names of the tree's levels by height above the nodes (then ``tier<h>``).
TREE_LEVELS = ("leaf", "spine", "core")
#: Keywords of each form (lower case).
TREE_KEYS = ("switchname", "switches", "nodes", "linkspeed")
BLOCK_KEYS = ("blockname", "nodes", "blocksizes")


class SlurmTopology(NamedTuple):
    """What a ``topology.conf`` says: ``levels`` (outermost first, then
    ``server`` and ``gpu``), ``domains`` (node -> {level: domain}) and
    ``form`` (``"tree"`` or ``"block"``)."""
    levels: tuple[str, ...]
    domains: dict[str, dict[str, str]]
    form: str


def _fields(path, no: int, line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one line, keys lower-cased."""
    out: dict[str, str] = {}
    for tok in line.split():
        key, eq, val = tok.partition("=")
        if not eq or not key:
            raise InputError(f"{path}: line {no}: expected Key=Value pairs, got {tok!r}")
        k = key.lower()
        if k in out:
            raise InputError(f"{path}: line {no}: {key} given twice")
        out[k] = val
    return out


def _lines(path) -> list[tuple[int, dict[str, str]]]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such topology.conf") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read topology.conf ({type(exc).__name__})") from None
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            out.append((no, _fields(path, no, line)))
    return out


def read_topology_conf(path, nodes: Iterable[str] | None = None) -> SlurmTopology:
    """The levels and each node's domains of a ``topology.conf`` (see the
    module notes); ``nodes``, when given, are the cluster's node names (a
    line naming another node is an error).

    Raises
    ------
    InputError
        One line naming the file and the line.
    """
    rows = _lines(path)
    known = set(nodes) if nodes is not None else None
    kinds = set()
    for no, f in rows:
        if "switchname" in f:
            kinds.add("tree")
        elif "blockname" in f or "blocksizes" in f:
            kinds.add("block")
        else:
            raise InputError(f"{path}: line {no}: expected SwitchName=, BlockName= or "
                             f"BlockSizes=, got {next(iter(f))}=")
    if len(kinds) > 1:
        raise InputError(f"{path}: both SwitchName= (topology/tree) and BlockName= "
                         f"(topology/block) lines: one form per file")
    if not rows:
        return SlurmTopology(("server", "gpu"), {}, "tree")
    if "block" in kinds:
        return _block(path, rows, known)
    return _tree(path, rows, known)


def _node_list(path, no: int, expr: str, known) -> list[str]:
    try:
        names = hostnames(expr)
    except (ValueError, AttributeError):
        raise InputError(f"{path}: line {no}: cannot read the host list {expr!r}") from None
    if known is not None:
        for n in names:
            if n not in known:
                raise InputError(f"{path}: line {no}: unknown node {n!r} (not a node of the "
                                 f"cluster)")
    return names


def _tree(path, rows, known) -> SlurmTopology:
    switches: dict[str, tuple[int, list[str], list[str]]] = {}   # name -> (line, nodes, kids)
    for no, f in rows:
        bad = sorted(set(f) - set(TREE_KEYS))
        if bad:
            raise InputError(f"{path}: line {no}: unknown keyword {bad[0]!r} on a SwitchName "
                             f"line; expected Switches=, Nodes=, LinkSpeed=")
        name = f["switchname"]
        if not name:
            raise InputError(f"{path}: line {no}: SwitchName= needs a name")
        if name in switches:
            raise InputError(f"{path}: line {no}: switch {name!r} already defined on line "
                             f"{switches[name][0]}")
        if "nodes" in f and "switches" in f:
            raise InputError(f"{path}: line {no}: switch {name!r} lists both Nodes= and "
                             f"Switches= (a leaf switch lists nodes, the others switches)")
        ns = _node_list(path, no, f.get("nodes", ""), known)
        try:
            kids = hostnames(f.get("switches", ""))
        except (ValueError, AttributeError):
            raise InputError(f"{path}: line {no}: cannot read the switch list "
                             f"{f.get('switches')!r}") from None
        switches[name] = (no, ns, kids)
    parent: dict[str, str] = {}
    owner: dict[str, str] = {}
    for name, (no, ns, kids) in switches.items():
        for k in kids:
            if k not in switches:
                raise InputError(f"{path}: line {no}: switch {name!r} names switch {k!r}, "
                                 f"which no SwitchName= line defines")
            if k in parent:
                raise InputError(f"{path}: line {no}: switch {k!r} is under both {parent[k]!r} "
                                 f"and {name!r}: alloc's hierarchy is a tree (list one parent "
                                 f"per switch)")
            parent[k] = name
        for n in ns:
            if n in owner:
                raise InputError(f"{path}: line {no}: node {n!r} is under both switch "
                                 f"{owner[n]!r} and {name!r}: a server in two domains of one "
                                 f"level")
            owner[n] = name
    height: dict[str, int] = {}

    def h(s: str, seen: tuple = ()) -> int:
        if s in seen:
            raise InputError(f"{path}: line {switches[s][0]}: switch {s!r} is above itself "
                             f"(a cycle of Switches=)")
        if s not in height:
            kids = switches[s][2]
            height[s] = 1 + max((h(k, seen + (s,)) for k in kids), default=0)
        return height[s]
    for s in switches:
        h(s)
    top = max(height.values())
    names = [TREE_LEVELS[i] if i < len(TREE_LEVELS) else f"tier{i + 1}" for i in range(top)]
    levels = tuple(reversed(names))
    domains: dict[str, dict[str, str]] = {}
    for n, leaf in owner.items():
        chain: dict[str, str] = {}
        sw: str | None = leaf
        while sw is not None:
            up = parent.get(sw)
            # a switch stands for itself from its own level up to just below its parent's
            for lk in range(height[sw] - 1, height[up] - 1 if up is not None else top):
                chain[names[lk]] = sw
            sw = up
        domains[n] = {lv: chain[lv] for lv in levels}
    return SlurmTopology(levels + ("server", "gpu"), domains, "tree")


def _block(path, rows, known) -> SlurmTopology:
    blocks: list[tuple[int, str, list[str]]] = []
    sizes: list[int] | None = None
    seen: dict[str, str] = {}
    for no, f in rows:
        bad = sorted(set(f) - set(BLOCK_KEYS))
        if bad:
            raise InputError(f"{path}: line {no}: unknown keyword {bad[0]!r}; expected "
                             f"BlockName= Nodes= or BlockSizes=")
        if "blocksizes" in f:
            if sizes is not None:
                raise InputError(f"{path}: line {no}: BlockSizes= given twice")
            try:
                sizes = [int(x) for x in f["blocksizes"].split(",")]
            except ValueError:
                raise InputError(f"{path}: line {no}: BlockSizes: expected node counts "
                                 f"separated by commas, got {f['blocksizes']!r}") from None
            if "blockname" not in f:
                continue
        name = f.get("blockname", "")
        if not name:
            raise InputError(f"{path}: line {no}: BlockName= needs a name")
        if any(b[1] == name for b in blocks):
            raise InputError(f"{path}: line {no}: block {name!r} already defined")
        ns = _node_list(path, no, f.get("nodes", ""), known)
        for n in ns:
            if n in seen:
                raise InputError(f"{path}: line {no}: node {n!r} is in both block {seen[n]!r} "
                                 f"and {name!r}: a server in two domains of one level")
            seen[n] = name
        blocks.append((no, name, ns))
    if not blocks:
        raise InputError(f"{path}: BlockSizes= without any BlockName= line")
    base = min(len(ns) for _, _, ns in blocks)
    if sizes is not None:
        if not sizes or any(s <= 0 for s in sizes):
            raise InputError(f"{path}: BlockSizes: expected positive node counts, got {sizes}")
        base = sizes[0]
        for no, name, ns in blocks:
            if len(ns) < base:
                raise InputError(f"{path}: line {no}: block {name!r} has {len(ns)} nodes, "
                                 f"fewer than the planning base block size {base}")
        mults: list[int] = []
        for s in sizes[1:]:
            m = s // base
            if s % base or m < 2 or m & (m - 1) or (mults and m <= mults[-1]):
                raise InputError(f"{path}: BlockSizes: {s} is not a power of two times the "
                                 f"base block size {base}, larger than the one before")
            mults.append(m)
    else:
        mults = []
        m = 2
        while m < len(blocks):
            mults.append(m)
            m *= 2
    names = [f"block{m}" for m in mults]
    levels = tuple(reversed(names)) + ("block",)
    domains: dict[str, dict[str, str]] = {}
    for i, (_, name, ns) in enumerate(blocks):
        d = {"block": name}
        for m, lv in zip(mults, names):
            run = blocks[(i // m) * m:(i // m + 1) * m]
            d[lv] = f"{run[0][1]}-{run[-1][1]}" if len(run) > 1 else run[0][1]
        for n in ns:
            domains[n] = {lv: d[lv] for lv in levels}
    return SlurmTopology(levels + ("server", "gpu"), domains, "block")


__all__ = ["BLOCK_KEYS", "SlurmTopology", "TREE_KEYS", "TREE_LEVELS", "read_topology_conf"]

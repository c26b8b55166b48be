"""Tenancy: HiveD cells, virtual-to-physical binding, sharing safety, preemption
rules and AntMan-style co-location limits.

Cells
-----
For every GPU type ``t`` the physical cluster is a forest of *cells*, one per
node of the declared levels (any levels above the servers, e.g. zone -> block
-> rack, then server -> socket -> switch -> gpu) whose GPUs are all of type
``t``.  A domain above the servers (a rack, a block, an NVLink domain) is a
cell only when all its GPU servers share one type (a mixed domain is not a
cell; the cells below it are roots of their type's forest).  The GPU level
is always there: a cluster whose levels end above the GPUs gets it added.  A cell at level
``l`` splits into its children at the next declared level; ``fanout(l)`` is
their number (uniform when all servers of a type have the same shape).

A tenant (virtual cluster) ``v`` owns ``c[v, t, l]`` *virtual* cells.  A
*binding* maps some of them to pairwise disjoint physical cells of the same
type and level.  The tenancy invariant is

    there is a binding B such that every GPU held by a guaranteed job of v lies
    in a physical cell bound to v (no GPU in two bound cells), and the cells
    left unbound are safe:

**Sharing safety** (HiveD, OSDI'20 §3.2).  With ``free[l]`` the number of
maximal physical cells at level l containing no bound GPU, and
``unused[l] = sum_v c[v,t,l] - |B_v at l|`` the virtual cells not yet bound,
top-down over a type's levels

    ns[top] = free[top] - unused[top]
    ns[l]   = ns[l+1] * fanout(l+1) + free[l] - unused[l]      must be >= 0.

[`safety`][alloc.tenancy.safety] evaluates it by splitting cells explicitly (the pool of level-l
cells is the children of the level-(l+1) cells left over plus the maximal
free level-l cells; the ``unused[l]`` smallest are consumed).  With uniform
fanout this is exactly the formula above; for irregular shapes it builds a
witness, so it is a sufficient condition.

Cell sizes: one rule.  A tenant's cells at (GPU type t, level l) all have the
size ``z[t,l]`` of the physical cells there ([`cell_size`][alloc.tenancy.cell_size]);
[`tenant_problems`][alloc.tenancy.tenant_problems] refuses cells at a (type, level) whose physical
cells
differ in size (e.g. servers of 16 and 8 P100 GPUs: cells at the server level
are refused, cells at the GPU level are fine).  Quotas in GPUs
([`quota_gpus`][alloc.tenancy.quota_gpus]), ``hived``'s buddy cells, the tenancy model and the
checks all use that one size.

Where the binding comes from: a solver reports its binding in
``allocation.stats["binding"]`` (``{tenant: ["level:node", ...]}``); the check
verifies it.  Without one (or when it fails), [`infer_binding`][alloc.tenancy.infer_binding]
searches
one: a greedy minimal cover (smallest cells first, merging the densest groups
of used GPUs into bigger cells when the small ones run out), then, if that
fails, the exact cell-placing model ([`cell_placement_model`][alloc.tenancy.cell_placement_model],
solved by
[`alloc.kernel.solve`][alloc.kernel.solve])

    y[v,n] in {0,1}  (tenant v's virtual cell bound to physical cell n)
    sum_{n at (t,l)} y[v,n] = c[v,t,l]                (bind every cell, WLOG)
    sum_v sum_{n contains g} y[v,n] <= 1   for every GPU g   (disjoint)
    sum_{n contains g} y[v,n] >= 1   for every GPU g held by v's guaranteed jobs

Binding every virtual cell loses nothing: a safe remainder can always be bound.
A binding found for a set of used GPUs is remembered on the cluster object
(the validation of running jobs and the solvers ask for the same one).

Preemption
----------
A job listed in ``allocation.preempted`` was running and is stopped.  It is a
legal victim only if some job placed now that was not already running there
(new or moved) outranks it (`outranks`) *and* is placed on a server the
victim held: a guaranteed job outranks every opportunistic job; a guaranteed
job outranks a guaranteed job of the *same* tenant with lower priority; an
opportunistic job outranks an opportunistic job of lower priority -- or, under
preemption by order (``preempt="order"``), one the caller's order ranks below
it.  A guaranteed job is never preempted for another tenant.  A running
guaranteed job must be placed or listed as preempted.

Co-location (AntMan, OSDI'20)
-----------------------------
A guaranteed job's ``gpu_milli`` is the share reserved for it on its GPU
(below 1000 only for one-GPU jobs).  Opportunistic jobs may co-run on the same
GPU in the remainder ``1000 - sum(guaranteed milli)`` (the core check keeps
``sum milli <= 1000``), or on opportunistic shares (milli 0) under memory and
compute caps.  GPU memory and compute are resources of every GPU, checked by
`alloc.resources` for every allocation (override a type's memory with
``stats["gpu_mem_capacity"]``).  Guaranteed jobs of two tenants never share a
GPU (their cells are disjoint).

Failures
--------
[`fail_server`][alloc.tenancy.fail_server] models a failed server as a new
[`Cluster`][alloc.model.Cluster] without
it: the jobs that ran there lose their ``current`` placement (they were killed
and are pending again).  If the tenants' cells no longer fit the smaller
cluster, [`tenant_problems`][alloc.tenancy.tenant_problems] reports it and the failure raises
[`InputError`][alloc.errors.InputError] (quotas must be renegotiated).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from .deadline import Deadline
from .model import Allocation, Cluster, Job
from .topology import is_outer

from .resources import DEFAULT_GPU_MEM, GPU_MEM_MIB, gpu_mem_capacity  # noqa: F401 (re-exported)
from .resources import mem_demand

if TYPE_CHECKING:
    from .kernel import LinearModel


def job_gpu_mem(job: Job, cap: int) -> int:
    """Per-GPU memory of a job: declared, or its milli share of the GPU
    (`alloc.resources.mem_demand`)."""
    return mem_demand(job, cap)


# --------------------------------------------------------------- cell forest
@dataclass
class CellTree:
    """Physical cells of a cluster, per GPU type (see the module notes).

    Node ``n``: ``key[n]`` ("level:name"), ``level[n]`` (index into
    ``levels``), ``gtype[n]``, ``parent[n]`` (-1 for a root), ``children[n]``,
    ``gpus[n]`` (global GPU indices, ascending).  ``anc[g]`` lists the nodes
    holding GPU g from the outermost to g's leaf.
    """
    levels: tuple[str, ...]
    key: list[str] = field(default_factory=list)
    level: list[int] = field(default_factory=list)
    gtype: list[str] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    children: list[list[int]] = field(default_factory=list)
    gpus: list[list[int]] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    anc: list[list[int]] = field(default_factory=list)
    gpu_type: list[str] = field(default_factory=list)
    by_type_level: dict[tuple[str | None, int], list[int]] = field(default_factory=dict)
    server: list[int] = field(default_factory=list)   # server index of a node (-1 for racks)

    @property
    def N(self) -> int:
        """Number of nodes (cells of every type and level) in the forest."""
        return len(self.key)

    def size(self, n: int) -> int:
        """GPUs in node ``n``."""
        return len(self.gpus[n])

    def node_at(self, g: int, lvl: int) -> int:
        """The node of level index ``lvl`` holding GPU g, or -1."""
        for n in self.anc[g]:
            if self.level[n] == lvl:
                return n
        return -1

    def type_levels(self, t: str) -> list[int]:
        """Level indices at which GPU type ``t`` has cells, outermost first."""
        return sorted({lv for (tt, lv) in self.by_type_level if tt == t})

    def fanout(self, t: str, lvl: int) -> int | None:
        """Children per cell of (t, lvl) when uniform, else None."""
        fs = {len(self.children[n]) for n in self.by_type_level.get((t, lvl), [])}
        return fs.pop() if len(fs) == 1 else None


def cell_tree(cluster: Cluster) -> CellTree:
    """The cell forest of ``cluster`` (cached on the cluster object)."""
    cached = cluster.__dict__.get("_cell_tree")
    if cached is not None:
        return cached
    tree = build_cell_tree(cluster)
    cluster.__dict__["_cell_tree"] = tree
    return tree


def build_cell_tree(cluster: Cluster) -> CellTree:
    """The cell forest of ``cluster``, built afresh from its servers (nothing
    kept on the cluster is read or written: the final check's own copy)."""
    levels = tuple(cluster.levels) + (() if "gpu" in cluster.levels else ("gpu",))
    tree = CellTree(levels)
    # a domain above the servers is a cell when all its GPU servers share one type
    from .arrays import server_domain_ids
    from .topology import name_domains
    outer = [lv for lv in levels if is_outer(lv)]
    srv_domain = server_domain_ids(cluster.servers, cluster.levels)
    names = name_domains(cluster, srv_domain) if outer else {}
    dom = {lv: srv_domain[lv].tolist() for lv in outer}
    dom_types: dict[tuple[str, int], set] = defaultdict(set)
    for si, s in enumerate(cluster.servers):
        if s.gpus:
            for lv in outer:
                dom_types[(lv, dom[lv][si])].add(s.gpu_type)
    g = 0
    for si, s in enumerate(cluster.servers):
        for k in range(s.gpus):
            chain = []
            parent = -1
            for li, lv in enumerate(levels):
                if lv in dom:
                    d = dom[lv][si]
                    if len(dom_types[(lv, d)]) != 1:
                        continue
                    key = f"{lv}:{names[lv][d]}"
                else:
                    key = f"{lv}:{s.gpu_domain(k, lv)}"
                n = tree.index.get(key)
                if n is None:
                    n = len(tree.key)
                    tree.index[key] = n
                    tree.key.append(key)
                    tree.level.append(li)
                    tree.gtype.append(s.gpu_type)
                    tree.parent.append(parent)
                    tree.children.append([])
                    tree.gpus.append([])
                    tree.server.append(-1 if lv in dom else si)
                    tree.by_type_level.setdefault((s.gpu_type, li), []).append(n)
                    if parent >= 0:
                        tree.children[parent].append(n)
                tree.gpus[n].append(g)
                chain.append(n)
                parent = n
            tree.anc.append(chain)
            tree.gpu_type.append(s.gpu_type)
            g += 1
    return tree


def resolve_type(cluster: Cluster, cell_type: str | None) -> str | None:
    """A cell's GPU type: its own, or the only type of the cluster."""
    if cell_type is not None:
        return cell_type
    types = cluster.gpu_types
    return types[0] if len(types) == 1 else None


def quotas(cluster: Cluster) -> dict[str, dict[tuple[str, int], int]]:
    """``{tenant: {(gpu_type, level index): cells}}`` (valid tenants assumed)."""
    lv = {x: i for i, x in enumerate(cluster.levels)}
    out: dict[str, dict[tuple[str, int], int]] = {}
    for name, ten in cluster.tenants.items():
        q: dict[tuple[str, int], int] = defaultdict(int)
        for c in ten.cells:
            t = resolve_type(cluster, c.gpu_type)
            if t is not None and c.level in lv:
                q[(t, lv[c.level])] += int(c.count)
        out[name] = dict(q)
    return out


def cell_size(tree: CellTree, gpu_type: str, lvl: int) -> int:
    """GPUs in a cell of ``gpu_type`` at level index ``lvl`` (0 when there is
    none).  Valid tenant input has one size per (type, level) holding cells
    ([`tenant_problems`][alloc.tenancy.tenant_problems]); where physical sizes differ the smallest
    is
    returned (no tenant cell can sit there)."""
    nodes = tree.by_type_level.get((gpu_type, lvl))
    if not nodes:
        return 0
    sizes = tree.__dict__.setdefault("_cell_sizes", {})
    z = sizes.get((gpu_type, lvl))
    if z is None:
        z = sizes[(gpu_type, lvl)] = min(len(tree.gpus[n]) for n in nodes)
    return z


def quota_gpus(cluster: Cluster, tenant: str, gpu_type: str,
               tree: CellTree | None = None) -> int:
    """GPUs guaranteed to a tenant of one type: sum over its cells of
    ``count * cell_size(type, level)`` (on ``tree``, default the cluster's)."""
    tree = cell_tree(cluster) if tree is None else tree
    return sum(c * cell_size(tree, t, lvl)
               for (t, lvl), c in quotas(cluster).get(tenant, {}).items()
               if t == gpu_type and c)


# ------------------------------------------------------------------- safety
@dataclass
class SafetyResult:
    """Outcome of `safety`.

    ``ok`` is true when every unbound virtual cell can still be bound;
    ``splittable[(type, level)]`` is ``ns[l]``, the cells of that level left
    over after the unbound ones are taken (computed down to the first failing
    level); ``failure`` names the first (type, level) that falls short and by
    how many cells.
    """
    ok: bool
    #: num_splittable per (gpu_type, level name); negative where it fails
    splittable: dict[tuple[str, str], int]
    failure: tuple[str, str, int] | None = None   # (type, level, shortfall)


def safety(tree: CellTree, bound_gpu: Sequence[bool] | set,
           unused: Mapping[tuple[str, int], int]) -> SafetyResult:
    """Sharing safety of the unbound virtual cells ``unused[(type, level)]`` on
    the physical cells holding no bound GPU (``bound_gpu[g]`` true)."""
    isbound = (lambda g: g in bound_gpu) if isinstance(bound_gpu, set) else (lambda g: bound_gpu[g])
    free = [not any(isbound(g) for g in tree.gpus[n]) for n in range(tree.N)]
    split: dict[tuple[str, str], int] = {}
    types = sorted({t for (t, _), c in unused.items() if c > 0})
    for t in types:
        lvls = tree.type_levels(t)
        deepest = max(lv for (tt, lv), c in unused.items() if tt == t and c > 0)
        carried: list[int] = []
        for lvl in lvls:
            if lvl > deepest:
                break
            pool = [c for n in carried for c in tree.children[n]]
            pool += [n for n in tree.by_type_level.get((t, lvl), [])
                     if free[n] and (tree.parent[n] < 0 or not free[tree.parent[n]])]
            need = unused.get((t, lvl), 0)
            ns = len(pool) - need
            split[(t, tree.levels[lvl])] = ns
            if ns < 0:
                return SafetyResult(False, split, (t, tree.levels[lvl], -ns))
            if need:
                pool.sort(key=lambda n: (len(tree.gpus[n]), n))
                pool = pool[need:]
            carried = pool
        for (tt, lv), c in unused.items():
            if tt == t and c > 0 and lv not in lvls:
                return SafetyResult(False, split, (t, tree.levels[lv], c))
    return SafetyResult(True, split)


# ------------------------------------------------------------------- binding
def binding_from_keys(tree: CellTree, binding: Mapping[str, Iterable[str]]) -> dict[str, list[int]]:
    """Translate a reported binding ``{tenant: ["level:node", ...]}`` into node
    ids of ``tree`` (keys naming no node of the tree are dropped)."""
    out = {}
    for v, keys in binding.items():
        out[v] = [tree.index[k] for k in keys if k in tree.index]
    return out


def check_binding(cluster: Cluster, binding: Mapping[str, Sequence[int]],
                  used: Mapping[str, set], tree: CellTree | None = None) -> list[str]:
    """Problems with a binding (node ids per tenant) covering ``used[v]``
    (GPUs of v's guaranteed jobs); empty when it proves the invariant (on
    ``tree``, default the cluster's)."""
    tree = cell_tree(cluster) if tree is None else tree
    q = quotas(cluster)
    out = []
    owner: dict[int, str] = {}
    for v, nodes in binding.items():
        cnt: dict[tuple[str, int], int] = defaultdict(int)
        for n in nodes:
            cnt[(tree.gtype[n], tree.level[n])] += 1
            for g in tree.gpus[n]:
                if g in owner:
                    out.append(f"tenant {v!r}: cell {tree.key[n]} overlaps a cell of tenant "
                               f"{owner[g]!r}")
                    break
                owner[g] = v
        for k, c in cnt.items():
            if c > q.get(v, {}).get(k, 0):
                out.append(f"tenant {v!r}: {c} {tree.levels[k[1]]} cells of {k[0]} bound, "
                           f"quota {q.get(v, {}).get(k, 0)}")
    if out:
        return out
    for v, gs in used.items():
        outside = [g for g in gs if owner.get(g) != v]
        if outside:
            out.append(f"tenant {v!r}: guaranteed job on GPU {_gpu_name(tree, outside[0])} "
                       f"outside its bound cells")
    if out:
        return out
    unused: dict[tuple[str, int], int] = defaultdict(int)
    for v, qv in q.items():
        bound_cnt: dict[tuple[str, int], int] = defaultdict(int)
        for n in binding.get(v, ()):
            bound_cnt[(tree.gtype[n], tree.level[n])] += 1
        for k, c in qv.items():
            unused[k] += c - bound_cnt.get(k, 0)
    res = safety(tree, set(owner), unused)
    if not res.ok and res.failure is not None:
        t, lv, short = res.failure
        out.append(f"sharing safety fails for {t} at level {lv}: {short} unused guaranteed "
                   f"cell(s) cannot be bound")
    return out


def _gpu_name(tree: CellTree, g: int) -> str:
    """The name of global GPU ``g`` (its leaf cell's)."""
    return tree.key[tree.anc[g][-1]].partition(":")[2]


def greedy_binding(cluster: Cluster, used: Mapping[str, set],
                   tree: CellTree | None = None) -> dict[str, list[int]] | None:
    """Minimal cover of each tenant's used GPUs by its cells, or None."""
    tree = cell_tree(cluster) if tree is None else tree
    q = quotas(cluster)
    gowner = {g: v for v, gs in used.items() for g in gs}
    out: dict[str, list[int]] = {}
    for v in sorted(used):
        by_type: dict[str, set] = defaultdict(set)
        for g in used[v]:
            by_type[tree.gpu_type[g]].add(g)
        chosen: list[int] = []
        for t, gs in sorted(by_type.items()):
            lvls = sorted((lv for (tt, lv), c in q.get(v, {}).items() if tt == t and c > 0),
                          reverse=True)   # innermost first
            if not lvls:
                return None
            remaining = set(gs)
            for i, lvl in enumerate(lvls):
                cnt = q[v][(t, lvl)]
                groups: dict[int, set] = defaultdict(set)
                for g in remaining:
                    n = tree.node_at(g, lvl)
                    if n < 0:
                        return None
                    groups[n].add(g)
                pure = {n for n in groups
                        if all(gowner.get(x, v) == v for x in tree.gpus[n])}
                last = i == len(lvls) - 1
                if len(groups) <= cnt:
                    if len(pure) < len(groups) and last:
                        return None
                    take = sorted(pure)
                else:
                    if last:
                        return None
                    # leave whole groups under the densest bigger cells for the next level
                    nxt = lvls[i + 1]
                    parents: dict[int, list[int]] = defaultdict(list)
                    for n in groups:
                        parents[tree.node_at(tree.gpus[n][0], nxt)].append(n)
                    leave: set[int] = set()
                    left = len(groups)
                    for par in sorted(parents, key=lambda x: (-len(parents[x]), x)):
                        if left <= cnt:
                            break
                        leave.update(parents[par])
                        left -= len(parents[par])
                    take = sorted(n for n in pure if n not in leave)[:cnt]
                chosen.extend(take)
                for n in take:
                    remaining -= groups[n]
                if not remaining:
                    break
            if remaining:
                return None
        out[v] = chosen
    return out


@dataclass(frozen=True)
class CellRequest:
    """``count`` cells of ``tenant`` to bind among the physical cells ``nodes``."""
    tenant: str
    nodes: tuple[int, ...]
    count: int


@dataclass
class CellModel:
    """A cell-placing model: ``model`` (an
[`alloc.kernel.LinearModel`][alloc.kernel.model.LinearModel]),
    ``y[(tenant, node)]`` its 0/1 columns and ``own[(gpu, tenant)]`` the
    columns of the tenant's candidate cells holding that GPU."""
    model: LinearModel
    y: dict
    own: dict


def cell_placement_model(tree: CellTree, requests: Sequence[CellRequest],
                         cover: Mapping[int, str] | None = None,
                         fixed: Mapping[int, str] | None = None, model=None,
                         name: str = "cells") -> CellModel | None:
    r"""The one model that places tenants' cells on physical cells.

    $$
    y_{v,n} \in \{0,1\},\qquad
    \sum_{n \in N_r} y_{v_r,n} = c_r \ \ (\text{request } r),\qquad
    \sum_{v}\sum_{n \ni g} y_{v,n} \le 1 \ \ (\text{GPU } g),\qquad
    \sum_{n \ni g} y_{\mathrm{cover}(g),n} \ge 1
    $$

    A candidate cell holding a GPU that must belong to another tenant
    (``cover[g]``: a guaranteed job of that tenant runs there; ``fixed[g]``: a
    cell already bound to that tenant) is left out, and so is one holding a
    GPU of ``fixed`` at all (that GPU is taken).  ``model`` extends an existing
    [`LinearModel`][alloc.kernel.model.LinearModel] (callers add their own columns and
    rows: the decoders put jobs in the cells).

    Returns
    -------
    CellModel or None
        None when a request has fewer candidates than cells or a covered GPU
        has no candidate cell of its tenant (infeasible without solving).
    """
    from .kernel import LinearModel
    cover = cover or {}
    fixed = fixed or {}
    m = model if model is not None else LinearModel(name)
    y: dict[tuple[str, int], int] = {}
    per_gpu: dict[int, list[int]] = defaultdict(list)
    own: dict[tuple[int, str], list[int]] = defaultdict(list)
    for req in requests:
        v, cols = req.tenant, []
        for n in req.nodes:
            gs = tree.gpus[n]
            if any(cover.get(g, v) != v or g in fixed for g in gs):
                continue
            col = y.get((v, n))
            if col is None:
                col = y[(v, n)] = m.add_var(0, 1, integer=True)
                for g in gs:
                    per_gpu[g].append(col)
                    own[(g, v)].append(col)
            cols.append(col)
        if len(cols) < req.count:
            return None
        m.add_row({c: 1 for c in cols}, req.count, req.count)
    for g, cols in per_gpu.items():
        if len(cols) > 1:
            m.add_row({c: 1 for c in cols}, hi=1)
    for g, v in cover.items():
        if g in fixed:
            if fixed[g] != v:
                return None
            continue
        if not own.get((g, v)):
            return None
        m.add_row({c: 1 for c in own[(g, v)]}, lo=1)
    return CellModel(m, y, dict(own))


def feasibility_engine() -> str:
    """The engine that answers the cell-placing models: CP-SAT when OR-Tools
    is installed, else HiGHS."""
    try:
        import ortools  # noqa: F401
        return "cpsat"
    except ImportError:  # pragma: no cover - depends on the machine
        return "highs"


def exact_binding(cluster: Cluster, used: Mapping[str, set], *,
                  deadline: Deadline, tree: CellTree | None = None
                  ) -> dict[str, list[int]] | None:
    """A full binding covering ``used``
    ([`cell_placement_model`][alloc.tenancy.cell_placement_model] with every
    tenant's cells requested), or None (none exists, or none found before
    ``deadline``)."""
    from .kernel import solve
    tree = cell_tree(cluster) if tree is None else tree
    q = quotas(cluster)
    cover = {g: v for v, gs in used.items() for g in gs}
    reqs = [CellRequest(v, tuple(tree.by_type_level.get((t, lvl), [])), c)
            for v, qv in sorted(q.items()) for (t, lvl), c in sorted(qv.items()) if c]
    cm = cell_placement_model(tree, reqs, cover, name="binding")
    if cm is None:
        return None
    res = solve(cm.model, feasibility_engine(), deadline=deadline)
    x = res.x
    if not res.has_solution or x is None:
        return None
    out: dict[str, list[int]] = defaultdict(list)
    for (v, n), col in cm.y.items():
        if x[col] > 0.5:
            out[v].append(n)
    return dict(out)


#: seconds the exact binding search may take when the caller gives no deadline
EXACT_BINDING_SECONDS = 10.0


def infer_binding(cluster: Cluster, used: Mapping[str, set], exact: bool = True,
                  deadline: Deadline | None = None, tree: CellTree | None = None
                  ) -> dict[str, list[int]] | None:
    """A binding proving the tenancy invariant for ``used``, or None.

    The greedy cover first, then (``exact``) [`exact_binding`][alloc.tenancy.exact_binding] before
    ``deadline`` (at most `EXACT_BINDING_SECONDS` without one).  A
    binding found is remembered on the cluster for the same ``used``; one
    remembered is a witness, checked again (`check_binding`, on ``tree``
    when given: the final check's own) before it is given back."""
    key = frozenset((v, frozenset(gs)) for v, gs in used.items() if gs)
    cache = cluster.__dict__.setdefault("_bindings", {})
    hit = cache.get(key)
    if hit is not None:
        found = {v: list(ns) for v, ns in hit.items()}
        if not _binding_problems(cluster, found, used, tree):
            return found
        del cache[key]
    b = greedy_binding(cluster, used, tree)
    if b is None or check_binding(cluster, b, used, tree):
        b = None
        if exact:
            dl = Deadline.after(EXACT_BINDING_SECONDS) if deadline is None else deadline
            b = exact_binding(cluster, used, deadline=dl, tree=tree)
            if b is not None and check_binding(cluster, b, used, tree):
                b = None
    if b is not None:
        if len(cache) >= 64:
            cache.pop(next(iter(cache)))
        cache[key] = {v: tuple(ns) for v, ns in b.items()}
    return b


def _binding_problems(cluster: Cluster, binding: Mapping[str, Sequence[int]],
                      used: Mapping[str, set], tree: CellTree | None) -> list[str]:
    """`check_binding`, or the line of a node id the tree does not have."""
    t = cell_tree(cluster) if tree is None else tree
    if any(not 0 <= n < t.N for ns in binding.values() for n in ns):
        return ["a remembered binding names a cell the cluster does not have"]
    return check_binding(cluster, binding, used, t)


def binding_keys(tree: CellTree, binding: Mapping[str, Iterable[int]]) -> dict[str, list[str]]:
    """The inverse of [`binding_from_keys`][alloc.tenancy.binding_from_keys]: node ids per tenant
as sorted
    ``"level:node"`` keys, the form reported in ``allocation.stats["binding"]``
    (tenants with no bound cell are left out)."""
    return {v: sorted(tree.key[n] for n in ns) for v, ns in binding.items() if ns}


# ------------------------------------------------------------ input checks
def tenant_problems(cluster: Cluster) -> list[str]:
    """Tenant cells the cluster cannot host: unknown level or GPU type, a bad
    count, more cells than exist, or cells that together fail sharing safety on
    the empty cluster (the infeasible-quota case)."""
    if not cluster.tenants:
        return []
    out = []
    lv = {x: i for i, x in enumerate(cluster.levels)}
    types = cluster.gpu_types
    tree = cell_tree(cluster)
    demand: dict[tuple[str, int], int] = defaultdict(int)
    last_field: dict[tuple[str, int], str] = {}
    for name, ten in cluster.tenants.items():
        for i, c in enumerate(ten.cells):
            where = f"tenants.{name}.cells[{i}]"
            if c.level not in lv:
                out.append(f"{where}.level: level {c.level!r} is not in cluster.levels "
                           f"{list(cluster.levels)}")
                continue
            if not isinstance(c.count, int) or isinstance(c.count, bool) or c.count < 0:
                out.append(f"{where}.count: expected an integer >= 0, got {c.count!r}")
                continue
            if c.gpu_type is not None and c.gpu_type not in types:
                out.append(f"{where}.gpu_type: unknown GPU type {c.gpu_type!r}; cluster has "
                           f"{list(types)}")
                continue
            t = resolve_type(cluster, c.gpu_type)
            if t is None:
                out.append(f"{where}.gpu_type: expected a GPU type (the cluster has several: "
                           f"{list(types)})")
                continue
            have = len(tree.by_type_level.get((t, lv[c.level]), []))
            if have == 0 and c.count:
                out.append(f"{where}.level: the cluster has no {c.level} cell of {t} GPUs"
                           + (" (racks mix GPU types)" if c.level == "rack" else
                              f" (its {c.level} domains mix GPU types)" if is_outer(c.level)
                              else ""))
                continue
            if c.count > have:
                out.append(f"{where}.count: {c.count} {c.level} cells of {t} exceed the "
                           f"physical cluster, which has {have}")
                continue
            sizes = sorted({tree.size(n) for n in tree.by_type_level.get((t, lv[c.level]), [])})
            if len(sizes) > 1:
                out.append(f"{where}.level: {c.level} cells of {t} differ in size ({sizes[0]} "
                           f"to {sizes[-1]} GPUs); a guaranteed cell needs one size per GPU "
                           f"type and level (declare the cells at a level where they agree)")
                continue
            demand[(t, lv[c.level])] += c.count
            if c.count:
                last_field[(t, lv[c.level])] = f"{where}.count"
    if out:
        return out
    res = safety(tree, set(), demand)
    if not res.ok and res.failure is not None:
        t, level, short = res.failure
        k = (t, lv[level])
        fld = last_field.get(k) or next(iter(last_field.values()), "tenants")
        out.append(f"{fld}: the tenants' {t} cells exceed the physical cluster (sharing safety "
                   f"fails at level {level}: {short} cell(s) short)")
    return out


# ---------------------------------------------------------------- violations
def outranks(a: Job, b: Job, rank: Mapping | None = None) -> bool:
    """May ``a`` preempt ``b``?  The one rule of who may stop whom.

    A guaranteed job outranks every opportunistic job, and a guaranteed job
    of its own tenant of lower priority; a guaranteed job is never stopped
    for another tenant.  Between opportunistic jobs, ``a`` outranks ``b``
    when it has the higher priority -- or, under preemption by order
    (``rank`` given: ``{job id: position}``, highest rank first), when the
    order lists ``a`` above ``b`` (a job the order does not list outranks no
    one, and every listed job outranks it).

    Outranking is necessary, not sufficient: a stopped job must also have
    been stopped *for* a job placed now on a server it held
    ([live_state_problems][alloc.check.live_state_problems]).
    """
    if a.guaranteed and not b.guaranteed:
        return True
    if a.guaranteed and b.guaranteed:
        return a.tenant == b.tenant and a.priority > b.priority
    if not a.guaranteed and not b.guaranteed:
        if rank is None:
            return a.priority > b.priority
        ra = rank.get(a.id)
        if ra is None:
            return False
        rb = rank.get(b.id)
        return rb is None or ra < rb
    return False


def guaranteed_usage(cluster: Cluster, jobs: Sequence[Job], placements,
                     gpu_index: Mapping[str, int] | None = None) -> dict[str, set]:
    """GPUs held by each tenant's guaranteed jobs.

    Parameters
    ----------
    cluster : Cluster
        The cluster; GPU ids are mapped to its global GPU indices.
    jobs : sequence of Job
        The jobs the placements refer to (by id).
    placements : iterable of Placement
        Placements to read; those of opportunistic jobs, of jobs without a
        tenant and of unknown jobs are ignored, as are unknown GPU ids.

    Returns
    -------
    dict
        ``{tenant: set of global GPU indices}``, the ``used`` argument of
        [`check_binding`][alloc.tenancy.check_binding] and
        [`infer_binding`][alloc.tenancy.infer_binding].
    """
    by_id = {j.id: j for j in jobs}
    gidx = cluster.gpu_index if gpu_index is None else gpu_index
    used: dict[str, set] = defaultdict(set)
    for p in placements:
        j = by_id.get(p.job)
        if j is None or not j.guaranteed or j.tenant is None:
            continue
        for gs in p.gpus:
            if gs.gpu in gidx:
                used[j.tenant].add(gidx[gs.gpu])
    return dict(used)


def tenancy_violations(cluster: Cluster, jobs: Sequence[Job], allocation: Allocation, *,
                       deadline: Deadline | None = None,
                       gpu_index: Mapping[str, int] | None = None,
                       tree: CellTree | None = None) -> list[str]:
    """Tenancy invariants an allocation breaks (see the module notes); the
    binding search stops at ``deadline`` (an inconclusive search is reported).
    With ``gpu_index`` and ``tree`` (the final check's own reading of the
    cluster, `alloc.facts`) nothing kept on the cluster object is trusted: the
    GPU index and the cell forest are the check's, and a remembered binding is
    verified again."""
    out: list[str] = []
    tenancy = bool(cluster.tenants) or any(j.guaranteed for j in jobs)
    if not tenancy:
        return out
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in allocation.placements}

    # guaranteed jobs inside their cells, and sharing safety
    q = quotas(cluster)
    gidx = cluster.gpu_index if gpu_index is None else gpu_index
    tree = cell_tree(cluster) if tree is None else tree
    for jid, p in placed.items():
        j = by_id.get(jid)
        if j is None or not j.guaranteed:
            continue
        cells = q.get(j.tenant, {}) if j.tenant is not None else {}
        for gs in p.gpus:
            if gs.gpu not in gidx:
                continue
            t = tree.gpu_type[gidx[gs.gpu]]
            if not any(tt == t and c for (tt, _), c in cells.items()):
                out.append(f"job {jid!r}: guaranteed job on {t} GPU {gs.gpu} but tenant "
                           f"{j.tenant!r} has no {t} cells")
                break
    if out:
        return out
    used = guaranteed_usage(cluster, jobs, allocation.placements, gidx)
    for v, held in used.items():
        per_t: dict[str, int] = defaultdict(int)
        for g in held:
            per_t[tree.gpu_type[g]] += 1
        for t, n in per_t.items():
            cap = quota_gpus(cluster, v, t, tree)
            if n > cap:
                out.append(f"tenant {v!r}: guaranteed jobs hold {n} {t} GPUs, its cells "
                           f"guarantee {cap}")
    if out:
        return out
    witness = allocation.stats.get("binding") if allocation.stats else None
    ok = False
    if isinstance(witness, Mapping):
        try:
            b = binding_from_keys(tree, witness)
        except Exception:
            b = None
        if b is not None and not check_binding(cluster, b, used, tree):
            ok = True
    if not ok and infer_binding(cluster, used, deadline=deadline, tree=tree) is None:
        b = greedy_binding(cluster, used, tree)
        why = check_binding(cluster, b, used, tree) if b is not None else []
        out.append(why[0] if why else
                   "tenancy: no binding of the tenants' cells holds every guaranteed job "
                   "with sharing safety")

    # co-location: guaranteed jobs of two tenants never share a GPU (memory
    # and compute are checked for every GPU by alloc.resources)
    on_gpu: dict[str, list[Job]] = defaultdict(list)
    for jid, p in placed.items():
        j = by_id.get(jid)
        if j is None:
            continue
        for gs in p.gpus:
            on_gpu[gs.gpu].append(j)
    for g, js in on_gpu.items():
        if len(js) < 2 or not any(j.guaranteed for j in js) or g not in gidx:
            continue
        tens = {j.tenant for j in js if j.guaranteed}
        if len(tens) > 1:
            out.append(f"GPU {g}: guaranteed jobs of tenants {sorted(map(str, tens))} share it")
    return out


# ------------------------------------------------------------------ failures
def fail_server(cluster: Cluster, jobs: Sequence[Job], server_id: str
                ) -> tuple[Cluster, tuple[Job, ...]]:
    """The cluster without ``server_id`` and the jobs with ``current`` cleared
    for those that ran on it.  Raises InputError if the tenants' cells no
    longer fit (see module notes)."""
    from .errors import InputError
    servers = tuple(s for s in cluster.servers if s.id != server_id)
    if len(servers) == len(cluster.servers):
        raise InputError(f"fail_server: unknown server {server_id!r}")
    new = Cluster(servers, cluster.levels, cluster.tenants)
    probs = tenant_problems(new)
    if probs:
        raise InputError(probs)
    prefix = server_id + "/"
    out = []
    for j in jobs:
        cur = j.current
        if cur is not None and (server_id in cur.cpu or server_id in cur.mem
                                or any(g.gpu.startswith(prefix) for g in cur.gpus)):
            j = replace(j, current=None)
        out.append(j)
    return new, tuple(out)


__all__ = ["CellModel", "CellRequest", "CellTree", "GPU_MEM_MIB", "SafetyResult",
           "cell_placement_model", "cell_size", "cell_tree", "check_binding",
           "exact_binding", "fail_server", "feasibility_engine", "gpu_mem_capacity",
           "greedy_binding",
           "infer_binding", "job_gpu_mem", "outranks", "quotas", "safety", "tenant_problems",
           "tenancy_violations", "with_current", "guarantee_reasons"]


def with_current(jobs: Sequence[Job], allocation: Allocation,
                 drop: Iterable[str] = ()) -> tuple[Job, ...]:
    """The jobs after an allocation: placed jobs run there (``current``),
    others are pending; ``drop`` removes finished jobs (every job is pending
    unless placed: see `Allocation.advance`)."""
    placed = {p.job for p in allocation.placements}
    unplaced = tuple(j.id for j in jobs if j.id not in placed)
    return replace(allocation, unplaced=unplaced).advance(jobs, drop)


# ------------------------------------------------------------ waiting jobs
def guarantee_reasons(problem, assign: Mapping, waiting: Sequence[int], stats: Mapping
                      ) -> dict[int, str]:
    """Why each waiting guaranteed job (indices ``waiting`` of ``problem``)
    is not placed by the answer ``assign``, naming its tenant's cells and
    what fills them: the GPUs of the tenant's cells (of the GPU types the job
    may use) against those its guaranteed jobs hold.  ``stats["binding"]`` (the
    answer's binding) names the cells when valid; else one is inferred.

    Examples
    --------
    >>> from alloc import Cell, Cluster, Job, Server, Tenant
    >>> from alloc.problem import compile_problem
    >>> from alloc.tenancy import guarantee_reasons
    >>> c = Cluster((Server("s0", 8000, 8000, 2, "V100"), Server("s1", 8000, 8000, 2, "V100")),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> jobs = [Job(k, 2, cpu=1, mem=1, tenant="a", guaranteed=True) for k in "xy"]
    >>> p = compile_problem(c, jobs)
    >>> guarantee_reasons(p, {0: p.make_assign(0, [0, 1], 0)}, [1], {"binding": {"a": ["server:s0"]}})
    {1: "tenant 'a''s cells are full: its guaranteed jobs hold 2 of the 2 V100 GPUs of its cells (server:s0: 2/2); the job needs 2"}
    """
    p = problem
    c = p.cluster
    tree = cell_tree(c)
    q = quotas(c)
    jobs = p.jobs
    binding = None
    wit = stats.get("binding") if stats else None
    used: dict[str, set] = defaultdict(set)
    for j, a in assign.items():
        if jobs[j].guaranteed and jobs[j].tenant is not None:
            used[jobs[j].tenant].update(g for g, _ in a.gpus)
    if isinstance(wit, Mapping):
        b = binding_from_keys(tree, wit)
        if not check_binding(c, b, used):
            binding = b
    if binding is None:
        binding = infer_binding(c, used, exact=False) or {}
    out: dict[int, str] = {}
    for j in waiting:
        job = jobs[j]
        v = job.tenant
        n = job.min_gpus if job.elastic and job.min_gpus is not None else job.gpus
        types = sorted({t for (t, _), k in q.get(v, {}).items() if k and job.allows(t)})
        if not types:
            out[j] = (f"tenant {v!r} has no cells of a GPU type the job may use "
                      f"({list(job.gpu_types) or 'any'})")
            continue
        quota = sum(quota_gpus(c, v, t) for t in types)
        held: dict[int, int] = {}
        for i, a in assign.items():
            o = jobs[i]
            if o.guaranteed and o.tenant == v:
                for g, _ in a.gpus:
                    held[g] = 1
        nodes = [x for x in binding.get(v, ()) if tree.gtype[x] in types]
        taken = sum(1 for g in held if tree.gpu_type[g] in types)
        cells = ", ".join(f"{tree.key[x]}: {sum(1 for g in tree.gpus[x] if g in held)}/"
                          f"{len(tree.gpus[x])}" for x in nodes[:4]) + \
            (f" and {len(nodes) - 4} more" if len(nodes) > 4 else "")
        unbound = sum(k for (t, lvl), k in q.get(v, {}).items() if t in types) - len(nodes)
        where = f" ({cells}" + (f"; {unbound} not bound" if unbound > 0 else "") + ")" \
            if cells else (f" ({unbound} not bound)" if unbound > 0 else "")
        kind = "/".join(types)
        if quota - taken < max(n, 1):
            out[j] = (f"tenant {v!r}'s cells are full: its guaranteed jobs hold {taken} of "
                      f"the {quota} {kind} GPUs of its cells{where}; the job needs {n}")
        else:
            out[j] = (f"tenant {v!r}'s cells have {quota - taken} of {quota} {kind} GPUs not "
                      f"held by its guaranteed jobs{where}, but no room for {n} GPUs with its "
                      f"CPU and memory inside them (the cells' shapes, or sharing safety for "
                      f"the cells not yet bound)")
    return out

"""Offline upper bound on the GPU milli any placement of a pod set can allocate.

Used for the FGD experiment: the pods arrived by a given x (% of GPU capacity)
are given; an *offline* scheduler may choose any subset and any placement
(respecting every hard constraint of the online protocol), so the best it can
allocate bounds every online policy's allocation at that x.

Model (an integer programme solved with HiGHS; its LP relaxation or the MIP
dual bound is reported when the solve stops early, both valid upper bounds):

* Nodes are grouped into *shapes* s = (cpu, mem, G, model) with ``N_s`` nodes.
* GPU pods are grouped into *types* t = (c, mem, k, m, allowed models) with
  ``n_t`` arrived copies.  CPU-only pods allocate no GPU milli; dropping them
  never hurts, so they are left out.
* ``y[s,t]`` (integer) = pods of type t placed on shape s; allowed only when
  the node model is allowed, ``k_t <= G_s``, ``c_t <= cpu_s``, ``mem_t <= mem_s``.
  ``sum_s y[s,t] <= n_t``.
* GPU sharing per shape is an *arc-flow* model over GPU fill levels: each GPU
  used for shared pods is a unit of flow from level 0 through arcs ``l -> l+m``
  (one shared pod of share m on it) and stops at some level ``<= 1000``.
  ``a[s,l,m]`` (integer) = GPUs of shape s with a share-m pod starting at fill
  l; ``z_s`` = GPUs of shape s holding shared pods.  Every multiset of shares
  on one GPU with sum ``<= 1000`` is such a path, so the flow counts exactly the
  GPUs' share patterns.  ``sum_{t: m_t = m} y[s,t] <= sum_l a[s,l,m]``.
* Whole GPUs: ``sum_{t whole} k_t y[s,t] + z_s <= N_s G_s`` (a GPU holding
  shares can't hold a whole-GPU pod).
* CPU and memory: ``sum_t c_t y[s,t] <= N_s cpu_s`` and the same for memory.
* Objective: maximise ``sum k_t m_t y[s,t]``.

Relaxations (why this is an upper bound and not the optimum): CPU and memory
are pooled over the ``N_s`` nodes of a shape instead of checked per node, and a
multi-GPU pod's k GPUs and the shares' GPUs are not tied to one node (only
``k_t <= G_s``).  The pod-count limit (1001 per node, never reached) is
dropped.  Every feasible placement maps to a feasible point (count pods per
shape, GPUs per share pattern), so the optimum is ``>=`` any placement's
allocation.  With one node per shape the model is exact.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..deadline import Deadline
from ..solvers.fgd import MILLI, Pod


@dataclass
class BoundResult:
    """Outcome of `upper_bound`.

    Attributes
    ----------
    bound : float
        Upper bound on the allocatable GPU milli: the MIP's dual bound (at
        most the LP value), the LP relaxation value when the MIP was not run,
        or ``min(demand, GPU capacity)`` when the time ran out first.
    value : float
        Best integer solution of the model found (milli-GPU; a lower bound on
        the model's optimum, not a placement), NaN when the MIP was not run.
    lp : float
        LP relaxation value (milli-GPU).
    status : str
        Status of the last solve (an [`Status`][alloc.model.Status] value such
        as ``"optimal"`` or ``"feasible"``), or ``"time limit"`` when the time
        ran out before the LP relaxation was solved.
    seconds : float
        Wall time of the whole computation.
    demand : int
        GPU milli asked by the GPU pods given.
    shapes : int
        Node shapes with GPUs (distinct ``(cpu, mem, GPUs, model)``).
    types : int
        Distinct GPU pod types.
    """
    bound: float          # upper bound on allocatable milli (MIP dual bound or LP)
    value: float          # best integer solution found (a lower bound on the model optimum)
    lp: float             # LP relaxation value
    status: str
    seconds: float
    demand: int           # GPU milli of the pods given
    shapes: int
    types: int


def _levels(shares: Sequence[int]) -> list[int]:
    """Fill levels reachable by sums of shares (<= 1000), ascending."""
    reach = {0}
    frontier = [0]
    while frontier:
        nxt = []
        for lv in frontier:
            for m in shares:
                v = lv + m
                if v <= MILLI and v not in reach:
                    reach.add(v)
                    nxt.append(v)
        frontier = nxt
    return sorted(reach)


def upper_bound(pods: Sequence[Pod], cpu, mem, ngpu, models: Sequence[str], *,
                deadline: Deadline, integer: bool = True, threads: int = 1,
                mip_gap: float = 1e-6) -> BoundResult:
    """Upper bound on the GPU milli allocatable by placing a subset of ``pods``
    on the nodes (``cpu``, ``mem``, ``ngpu``, ``models`` per node); see the
    module docstring for the model and its relaxations.

    Everything (building the model, its LP relaxation, then the MIP on the time
    left) stops by ``deadline``.  A relaxation that did not finish proves nothing; the bound is then
    the trivial ``min(demand, GPU capacity)`` and ``status`` says why."""
    import time

    from ..kernel import INF, LinearModel, solve, solve_lp
    from ..model import Status

    t0 = time.perf_counter()
    dl = deadline
    shape_count = Counter(zip((int(x) for x in cpu), (int(x) for x in mem),
                              (int(x) for x in ngpu), (str(x) for x in models)))
    shapes = [s for s in shape_count if s[2] > 0]
    tcount = Counter((p.c, p.mem, p.k, p.m, tuple(p.types)) for p in pods if p.k and p.m)
    types = sorted(tcount)
    demand = sum(k * m * n for (_, _, k, m, _), n in tcount.items())
    shares = sorted({t[3] for t in types if t[2] == 1 and t[3] < MILLI})
    levels = _levels(shares)

    lpm = LinearModel("openb-bound")
    inf = INF

    def col(c, hi):
        return lpm.add_var(0, float(hi), integer=True, obj=float(c))

    rows = []          # (lower, upper, {col: coef})
    y_of_type = defaultdict(list)
    for si, (scpu, smem, G, model) in enumerate(shapes):
        if dl.expired():
            t = float(min(demand, sum(int(g) for g in ngpu) * MILLI))
            return BoundResult(t, float("nan"), t, "time limit", time.perf_counter() - t0,
                               demand, len(shapes), len(types))
        Ns = shape_count[(scpu, smem, G, model)]
        ys = []
        for (c, pm, k, m, ts) in types:
            if k > G or c > scpu or pm > smem or (ts and model not in ts):
                continue
            hi = min(tcount[(c, pm, k, m, ts)], Ns * (G // k))
            j = col(k * m, hi)
            ys.append((j, c, pm, k, m))
            y_of_type[(c, pm, k, m, ts)].append(j)
        if not ys:
            continue
        # arc flow over fill levels for the GPUs holding shares
        lvset = set(levels)
        arcs = defaultdict(list)     # level -> [(col, m)] leaving
        into = defaultdict(list)     # level -> [col] entering
        arcs_of_m = defaultdict(list)
        used_m = {m for (_, _, _, k, m) in ys if k == 1 and m < MILLI}
        for lv in levels:
            for m in used_m:
                if lv + m <= MILLI and lv + m in lvset:
                    j = col(0, Ns * G)
                    arcs[lv].append(j)
                    into[lv + m].append(j)
                    arcs_of_m[m].append(j)
        z = col(0, Ns * G)
        # source: flow out of level 0 = z ; other levels: in >= out
        rows.append((0.0, 0.0, {**{j: 1.0 for j in arcs[0]}, z: -1.0}))
        for lv in levels[1:]:
            if arcs[lv]:
                coefs = {j: 1.0 for j in into[lv]}
                for j in arcs[lv]:
                    coefs[j] = coefs.get(j, 0.0) - 1.0
                rows.append((0.0, inf, coefs))
        for m in used_m:
            coefs = {j: -1.0 for j in arcs_of_m[m]}
            for (j, c, pm, k, mm) in ys:
                if k == 1 and mm == m:
                    coefs[j] = 1.0
            rows.append((-inf, 0.0, coefs))
        whole = {j: float(k) for (j, c, pm, k, m) in ys if m >= MILLI}
        whole[z] = 1.0
        rows.append((-inf, float(Ns * G), whole))
        rows.append((-inf, float(Ns * scpu), {j: float(c) for (j, c, pm, k, m) in ys}))
        rows.append((-inf, float(Ns * smem), {j: float(pm) for (j, c, pm, k, m) in ys}))
    for ty, js in y_of_type.items():
        rows.append((-inf, float(tcount[ty]), {j: 1.0 for j in js}))

    for row_lo, row_hi, coefs in rows:
        lpm.add_row(coefs, row_lo, row_hi)
    trivial = float(min(demand, sum(int(g) for g in ngpu) * MILLI))
    relax = solve_lp(lpm, deadline=dl)
    if relax.status is Status.OPTIMAL and relax.objective is not None:
        lp_val = float(relax.objective)
    else:
        lp_val = trivial
    if not integer or dl.expired():
        status = relax.status.value if relax.status is Status.OPTIMAL else "time limit"
        return BoundResult(lp_val, float("nan"), lp_val, status,
                           time.perf_counter() - t0, demand, len(shapes), len(types))
    res = solve(lpm, "highs", deadline=dl, mip_rel_gap=mip_gap)
    bound = res.bound if res.bound is not None else lp_val
    bound = min(bound, lp_val)
    val = float(res.objective) if res.objective is not None else float("nan")
    return BoundResult(bound, val, lp_val, res.status.value, time.perf_counter() - t0, demand,
                       len(shapes), len(types))


def arrived_prefix(pods: Sequence[Pod], capacity: int, x: int = 100) -> int:
    """Number of arrivals whose arrived-ratio bin is ``<= x``: the pods that
    can contribute to the allocation recorded in column x (protocol section 2)."""
    unit = capacity / 100.0
    arrived = 0
    n = 0
    for p in pods:
        arrived += p.g
        if round(arrived / unit) > x:
            break
        n += 1
    return n


def openb_bound(pods_table, nodes, seed: int, *, deadline: Deadline, x: int = 100,
                tune: float = 1.3, seq: Sequence[Pod] | None = None, **kw) -> BoundResult:
    """Bound for one openb workload and seed at column x (``seq``: the seed's
    arrivals when already built), before ``deadline`` (`upper_bound`, which
    takes the other keywords)."""
    if seq is None:
        from .openb import build_workload
        seq = build_workload(pods_table, nodes, seed, tune).arrivals()
    cap = int(nodes.gpus.sum()) * MILLI
    n = arrived_prefix(seq, cap, x)
    return upper_bound(seq[:n], nodes.cpu, nodes.mem, nodes.gpus, nodes.model, deadline=deadline,
                       **kw)


def min_share_gpus(shares: Sequence[int]) -> int:
    """A lower bound on the GPUs needed to hold every share in ``shares``
    (milli, each < 1000), one-dimensional bin packing: the ceiling of the
    arc-flow LP relaxation (as strong as the Gilmore-Gomory bound)

        min z  s.t.  flow conservation over fill levels 0..1000, z units
        leaving level 0, ``sum_l a[l,m] >= count(m)`` for every share m,

    with arcs ``l -> l+m`` for a share and ``l -> l'`` (next level) for waste.
    """
    from scipy.sparse import coo_matrix

    from ..kernel import INF, LinearModel, solve_lp
    from ..model import Status
    cnt = Counter(int(m) for m in shares)
    if not cnt:
        return 0
    sizes = sorted(cnt)
    levels = _levels(sizes)
    pos = {lv: i for i, lv in enumerate(levels)}
    arcs = [(lv, lv + m, m) for m in sizes for lv in levels if lv + m in pos]
    arcs += [(levels[i], levels[i + 1], 0) for i in range(len(levels) - 1)]
    L, A = len(levels), len(arcs)
    rows, cols, vals = [], [], []
    for a, (u, v, _m) in enumerate(arcs):        # conservation: in - out = 0 inside
        rows += [pos[u], pos[v]]
        cols += [a, a]
        vals += [1.0, -1.0]
    # z enters at level 0 and leaves at the last level
    rows += [0, L - 1]
    cols += [A, A]
    vals += [-1.0, 1.0]
    lp = LinearModel("share-bin-packing", maximize=False)
    lp.add_vars(A + 1)
    lp.set_objective({A: 1.0})
    lp.add_rows(coo_matrix((vals, (rows, cols)), shape=(L, A + 1)), 0.0, 0.0)
    r2, c2 = [], []
    for a, (_u, _v, m) in enumerate(arcs):
        if m:
            r2.append(sizes.index(m))
            c2.append(a)
    lp.add_rows(coo_matrix(([1.0] * len(r2), (r2, c2)), shape=(len(sizes), A + 1)),
                [float(cnt[m]) for m in sizes], INF)
    res = solve_lp(lp)
    if res.status is not Status.OPTIMAL or res.objective is None:
        raise RuntimeError(f"bin-packing LP failed: {res.status.value}")
    return int(np.ceil(res.objective - 1e-6))


def saturation(pods: Sequence[Pod], total_gpus: int) -> int:
    """Length of the longest arrival prefix that passes the GPU-count test
    ``whole(prefix) + min_share_gpus(shares(prefix)) <= total_gpus``.

    The test is necessary for placing every pod of the prefix (CPU, memory
    and GPU models only make placing harder), so with ``n`` returned no
    placement of the first ``n + 1`` arrivals exists: under the online
    protocol (every pod that fits is placed) every policy's first failure
    comes at or before arrival ``n + 1``.  The count is monotone in the
    prefix, so a binary search finds ``n``."""
    def ok(n: int) -> bool:
        head = pods[:n]
        whole = sum(p.k for p in head if p.k and not p.shared)
        return whole + min_share_gpus([p.m for p in head if p.shared]) <= total_gpus
    lo, hi = 0, len(pods) + 1          # ok(lo) holds, ok(hi) fails (or hi past the end)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


__all__ = ["BoundResult", "upper_bound", "arrived_prefix", "openb_bound", "min_share_gpus",
           "saturation"]

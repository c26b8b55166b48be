r"""The proof: reduced-cost enumeration against descending targets.

With the duals ``y`` of a converged column generation and its Lagrangian
bound ``L`` (= the LP), any integer solution has

$$
\mathrm{value} = y^\top A z + \sum_p rc_p z_p
\le L - y^\top \mathrm{slack} + \sum_{rc_p < 0} rc_p z_p,
$$

so a solution worth ``>= T`` uses only patterns with ``rc_p >= T - L``, at
most ``(L - T) / -rc_p`` copies of each, and leaves row slack at most
``(L - T) / y_r``.  A depth-first search (O(1) fractional-knapsack pruning)
lists every such pattern; the master over them with these bounds and the cut
``value >= T`` is then exact: feasible means its optimum is the optimum,
infeasible means ``T - delta`` bounds the optimum (``delta`` the objective's
step).  Targets start at the rounded bound and go down by ``delta``,
``2 delta``, ``4 delta``, ... until the incumbent.  When an enumeration is
cut short, the best listed patterns by reduced cost still enrich the pool.
"""
from __future__ import annotations

import math
from typing import Any

from ...deadline import Deadline
from ...model import MILLI, Status
from .aggregate import Aggregate
from .backend import Backend
from .bounds import rounded
from .master import CGResult, Master, hint_from, solve_master_ip
from .patterns import make_pattern

INF = math.inf


def _suffix_bound(cf, size, ub):
    """O(1) optimistic value of the items from k on, given the capacity left:
    the positive items' total at their bounds, or their best value per unit of
    each resource times what is left (items sorted by coefficient)."""
    n = len(cf)
    npos = sum(1 for v in cf if v > 0)
    suf_tot = [0.0] * (n + 1)
    suf_ratio = [[0.0, 0.0, 0.0] for _ in range(n + 1)]
    for q in range(npos - 1, -1, -1):
        suf_tot[q] = suf_tot[q + 1] + cf[q] * ub[q]
        suf_ratio[q] = [max(suf_ratio[q + 1][r], cf[q] / size[q][r]) if size[q][r] else INF
                        for r in range(3)]

    def optimistic(k: int, rem) -> float:
        if k >= npos:
            return 0.0
        r = suf_ratio[k]
        return min(suf_tot[k], r[0] * rem[0], r[1] * rem[1], r[2] * rem[2])
    return optimistic


def enumerate_patterns(agg: Aggregate, master: Master, c: int, duals: dict, gap: float,
                       deadline: Deadline, limit: int):
    """Every item multiset of class ``c`` within the CPU, memory and GPU
    capacity whose reduced cost is ``>= -gap``.  Returns (list of count
    dicts, complete)."""
    items = agg.items[c]
    C, M, _ = agg.cap[c]
    caps = (C, M, agg.shared_capacity(c))
    coef = [master.item_coef(c, duals, i) for i in range(len(items))]
    order = [i for i in sorted(range(len(items)), key=lambda i: (-coef[i], i))
             if agg.item_ub(c, i) > 0]
    size = [(items[i].cpu, items[i].mem, items[i].gpus * MILLI + items[i].milli) for i in order]
    cf = [coef[i] for i in order]
    ub = [agg.item_ub(c, i) for i in order]
    n = len(order)
    base = -duals.get(("class", c), 0.0)
    if n == 0:
        return [{}], True
    optimistic = _suffix_bound(cf, size, ub)
    lim = -gap - 1e-9

    def choices(k: int, val: float, rem):
        sz = size[k]
        top = ub[k]
        for r in range(3):
            if sz[r]:
                top = min(top, rem[r] // sz[r])
        c_k = cf[k]
        steps = range(0, top + 1) if c_k <= 0 else range(top, -1, -1)
        for a in steps:
            v = val + c_k * a
            r2 = (rem[0] - a * sz[0], rem[1] - a * sz[1], rem[2] - a * sz[2])
            if c_k <= 0:
                if v < lim:
                    return       # only non-positive items left: more copies only lower it
            elif v + optimistic(k + 1, r2) < lim:
                continue
            yield a, v, r2

    out: list[dict[int, int]] = []
    counts = [0] * n
    stack = [(0, choices(0, base, caps))]
    nodes = 0
    while stack:
        k, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            counts[k] = 0
            stack.pop()
            continue
        a, v, r2 = nxt
        counts[k] = a
        nodes += 1
        if nodes % 4096 == 0 and deadline.expired():
            return out, False
        if k + 1 == n:
            out.append({order[q]: counts[q] for q in range(n) if counts[q]})
            if len(out) > limit:
                return out, False
        else:
            stack.append((k + 1, choices(k + 1, v, r2)))
    return out, True


def _reduced_cost(master: Master, c: int, duals: dict, counts) -> float:
    return sum(master.item_coef(c, duals, i) * n for i, n in counts)


def _sub_master(master: Master, engine: Backend, cg: CGResult, gap: float, deadline: Deadline,
                limit: int, keep: int, stats: dict):
    """The master over the pool's and the enumerated patterns with reduced
    cost ``>= -gap``: (sub-master, complete), or None when out of time."""
    agg = master.agg
    sub = Master(agg)
    for c in range(agg.K):
        for pat in master.pool[c]:
            if _reduced_cost(master, c, cg.duals, pat.counts) \
                    - cg.duals.get(("class", c), 0.0) >= -gap:
                sub.add(pat)
    complete_all, n_enum = True, 0
    for c in range(agg.K):
        left = deadline.left()
        if left < 0.05:
            return None
        pats, complete = enumerate_patterns(agg, master, c, cg.duals, gap,
                                            deadline.within(0.4 * left / (agg.K - c)), limit)
        n_enum += len(pats)
        complete_all &= complete
        if not complete:
            pats = sorted(pats, key=lambda d: -_reduced_cost(master, c, cg.duals, d.items()))[:keep]
        for counts in pats:
            key = tuple(sorted(counts.items()))
            if not counts or key in sub.keys[c]:
                continue
            if key in master.keys[c]:
                pat = next(q for q in master.pool[c] if q.counts == key)
            else:
                made = make_pattern(agg, c, counts, engine=engine, deadline=deadline)
                if made is None:    # resources fit but GPUs do not
                    continue
                pat = made
                master.add(pat)
            sub.add(pat)
    stats["enumerated"] = stats.get("enumerated", 0) + n_enum
    stats["enumeration"] = "complete" if complete_all else "incomplete"
    stats["columns"] = master.size
    return sub, complete_all


def enumerate_and_solve(master: Master, engine: Backend, cg: CGResult, incumbent: float,
                        deadline: Deadline, seed: int, stats: dict, *, limit: int = 20000,
                        keep: int = 3000, hint=None, delta: float | None = None,
                        top: float | None = None, ip_deadline: Deadline):
    """Reduced-cost enumeration with descending targets (see the module notes).

    Returns (z, x, value, pool, bound): the best master solution over the
    pool ``pool`` (None when none was solved) and the proven bound (None when
    no target was settled)."""
    lp = cg.bound if cg.bound is not None else (cg.lp or 0.0)
    tol = 1e-6 * max(1.0, abs(incumbent))
    T = min(top if top is not None else rounded(lp, delta), rounded(lp, delta)) if delta \
        else incumbent + tol
    best: tuple[Any, Any, float, Any] = (None, None, incumbent, None)   # z, x, value, pool
    step, proven, rounds = delta or 0.0, None, 0
    while T > best[2] + 0.5 * (delta or tol) and deadline.left() > 0.05:
        rounds += 1
        built = _sub_master(master, engine, cg, max(lp - T, 0.0) + tol, deadline, limit, keep,
                            stats)
        if built is None or deadline.left() < 0.05:
            break
        sub, complete = built
        ip_dl = ip_deadline if ip_deadline.end > deadline.end else deadline
        if not complete:
            # no proof possible: the master over the enriched pool (price-and-branch)
            hz, hx = hint_from(master, hint) if hint else (None, None)
            st, z, x, obj, _, _ = solve_master_ip(master, engine, ip_dl, seed, hz, hx)
            stats["enum_master_status"] = st.value
            if z is not None and obj > best[2] + 1e-9:
                best = (z, x, obj, master.pool)
                stats["enum_value"] = obj
            break
        st, z, x, obj = solve_target_ip(sub, engine, cg.duals, lp, T - tol, ip_dl, seed)
        stats["enum_master_status"] = st.value
        stats["enum_rounds"] = rounds
        if z is not None:
            if obj > best[2] + 1e-9:
                best = (z, x, obj, sub.pool)
                stats["enum_value"] = obj
            if st is Status.OPTIMAL:
                proven = obj            # every solution >= T is in sub: the optimum
            break
        if st is not Status.INFEASIBLE:
            break                       # out of time: no proof
        if not delta:                   # nothing reaches T
            proven = max(T, best[2])
            break
        proven = T - delta
        if proven <= best[2] + 0.5 * delta:
            proven = max(proven, best[2])
            break
        # geometric steps: a feasible round is the optimum, so overshooting
        # costs one larger enumeration, not a wrong answer
        T = max(rounded(T - step, delta), best[2] + delta)
        step *= 2
    stats["enum_rounds"] = rounds
    if proven is not None:
        stats["enum_bound"] = proven
    z, x, val, pool = best
    return z, x, val, pool, proven


def solve_target_ip(sub: Master, engine: Backend, duals: dict, lp: float, target: float,
                    deadline: Deadline, seed: int):
    """The master over ``sub`` restricted to solutions worth ``>= target``,
    with reduced-cost tightening from the LP duals (optimum ``lp``): a solution
    worth ``>= target`` has ``z_v <= gap / -rc_v`` for ``rc_v < 0`` and
    ``slack_r <= gap / y_r`` for ``y_r > 0`` (``gap = lp - target``).
    Returns (status, z, x, value)."""
    m, zv, xv, rows = sub.build(integer=True)
    gap = max(lp - target, 0.0) + 1e-9 * max(1.0, abs(lp))
    y = [0.0] * m.m
    for key, r in rows.items():
        y[r] = duals.get(key, 0.0)
    rc = dict(m.obj)
    for r, (coefs, lo, hi) in enumerate(m.rows()):
        if y[r]:
            for v, a in coefs.items():
                rc[v] = rc.get(v, 0.0) - y[r] * a
    for v, r_ in rc.items():
        if r_ < -1e-12 and m.ub[v] < INF:
            m.ub[v] = min(m.ub[v], math.floor(gap / -r_ + 1e-9))
    for key, r in rows.items():
        if y[r] > 1e-12 and m.row_hi[r] < INF:
            hi = m.row_hi[r]
            m.set_row_bounds(r, lo=max(m.row_lo[r], hi - math.floor(gap / y[r] + 1e-9)))
    m.add_row(dict(m.obj), lo=target - m.obj_const)
    res = engine.solve(m, deadline, seed)
    if res.x is None:
        return res.status, None, None, None
    z = {k: int(round(res.x[v])) for k, v in zv.items() if round(res.x[v]) > 0}
    x = {k: int(round(res.x[v])) for k, v in xv.items() if round(res.x[v]) > 0}
    return res.status, z, x, res.objective


__all__ = ["enumerate_and_solve", "enumerate_patterns", "solve_target_ip"]

r"""Patterns: which item multisets fit one server of a class, and where.

Feasibility rows (`server_rows`, used by pricing and exact layouts) for
item counts ``a_i`` on a server of class ``c`` with free CPU ``C``, memory
``M``, ``G`` full GPUs and partial GPUs ``q`` with ``f_q`` milli free:

$$
\begin{aligned}
\sum_i cpu_i a_i \le C,\quad \sum_i mem_i a_i \le M,\quad
\sum_{i\ whole} g_i a_i + \sum_k u_k \le G,\\
\sum_i milli_i b_{ik} \le 1000 u_k\ \ (k \text{ a full GPU used for shares}),\quad
\sum_i milli_i b_{iq} \le f_q,\quad \sum_k b_{ik} + \sum_q b_{iq} = a_i\ (i\ shared),
\end{aligned}
$$

and, for items whose locality is a switch or a socket, per-node counts
``r_{id}`` with ``sum_d r_id = a_i`` and ``sum_i g_i r_id <= full GPUs of d``
(switch rows roll up into their socket's).  Since items of a level may use any
full GPU of their node and shares any GPU left, these rows are necessary and
sufficient.  A *layout* gives each item its canonical GPU offsets
(first-fit-decreasing along the hierarchy, an exact model when that fails).
"""
from __future__ import annotations

from ...deadline import Deadline
from ...kernel import LinearModel
from ...model import MILLI, Status
from .aggregate import Aggregate, Pattern
from .backend import Backend

#: Seconds an exact layout may take at most.
LAYOUT_TIME = 2.0


def server_rows(agg: Aggregate, model: LinearModel, c: int, a: dict[int, int],
                aux: bool = True) -> dict:
    """Add to ``model`` the rows saying the items ``a`` (item -> variable) fit
    one server of class ``c`` (``aux=False``: the resource rows only, a
    relaxation).  Returns the auxiliary variables."""
    C, M, G = agg.cap[c]
    items = agg.items[c]
    model.add_row({v: items[i].cpu for i, v in a.items()}, hi=C)
    model.add_row({v: items[i].mem for i, v in a.items()}, hi=M)
    whole = {v: items[i].gpus for i, v in a.items() if items[i].gpus}
    shared = [i for i in a if items[i].milli]
    info: dict = {"slots": [], "pslots": [], "sw": {}, "so": {}}
    if not aux:
        row = {v: g * MILLI for v, g in whole.items()}
        for i in shared:
            row[a[i]] = items[i].milli
        model.add_row(row, hi=agg.shared_capacity(c))
        return info
    us = _shared_slots(agg, model, c, a, shared, info)
    row = dict(whole)
    for u in us:
        row[u] = 1
    model.add_row(row, hi=G)
    _locality_rows(agg, model, c, a, info)
    return info


def _shared_slots(agg: Aggregate, model: LinearModel, c: int, a, shared, info) -> list[int]:
    """Shared items bin-packed into full GPUs (slots k, ``u_k`` = in use) and
    into the partial GPUs; returns the ``u_k``."""
    items = agg.items[c]
    G = agg.cap[c][2]
    K = min(G, sum(agg.item_ub(c, i) for i in shared)) if shared else 0
    us = []
    for k in range(K):
        u = model.add_var(0, 1, integer=True)
        us.append(u)
        row = {u: -MILLI}
        for i in shared:
            b = model.add_var(0, agg.item_ub(c, i), integer=True)
            info["slots"].append((i, k, b))
            row[b] = items[i].milli
        model.add_row(row, hi=0)
        if k:
            model.add_row({us[k - 1]: 1, u: -1}, lo=0)
    for q, f in (agg.partial[c] if shared else ()):
        row = {}
        for i in shared:
            if items[i].milli <= f:
                b = model.add_var(0, f // items[i].milli, integer=True)
                info["pslots"].append((i, q, b))
                row[b] = items[i].milli
        if row:
            model.add_row(row, hi=f)
    for i in shared:
        row = {a[i]: -1}
        for (ii, _, b) in info["slots"] + info["pslots"]:
            if ii == i:
                row[b] = 1
        model.add_row(row, lo=0, hi=0)
    return us


def _locality_rows(agg: Aggregate, model: LinearModel, c: int, a, info) -> None:
    items = agg.items[c]
    sw_items = [i for i in a if items[i].gpus and items[i].level == "switch"]
    so_items = [i for i in a if items[i].gpus and items[i].level == "socket"]
    if not (sw_items or so_items):
        return
    so_rows: list[dict[int, int]] = [dict() for _ in range(agg.n_so[c])]
    for i in sw_items:
        row = {a[i]: -1}
        for d in range(agg.n_sw[c]):
            r = model.add_var(0, agg.item_ub(c, i), integer=True)
            info["sw"][(i, d)] = r
            row[r] = 1
        model.add_row(row, lo=0, hi=0)
    for d in range(agg.n_sw[c]):
        row = {info["sw"][(i, d)]: items[i].gpus for i in sw_items}
        if row:
            model.add_row(row, hi=agg.sw_cap[c][d])
        for i in sw_items:
            so_rows[agg.sw_socket[c][d]][info["sw"][(i, d)]] = items[i].gpus
    for i in so_items:
        row = {a[i]: -1}
        for s_ in range(agg.n_so[c]):
            q = model.add_var(0, agg.item_ub(c, i), integer=True)
            info["so"][(i, s_)] = q
            row[q] = 1
            so_rows[s_][q] = items[i].gpus
        model.add_row(row, lo=0, hi=0)
    for s_ in range(agg.n_so[c]):
        if so_rows[s_]:
            model.add_row(so_rows[s_], hi=agg.so_cap[c][s_])


# ----------------------------------------------------------------- layouts
def layout(agg: Aggregate, c: int, counts: dict[int, int], engine: Backend | None = None,
           *, deadline: Deadline) -> tuple | None:
    """Canonical GPU offsets for ``counts`` on a server of class ``c`` (None
    when they do not fit): first fit decreasing, else, with an ``engine``,
    an exact layout model solved before ``deadline`` (at most `LAYOUT_TIME`)."""
    items = agg.items[c]
    C, M, _ = agg.cap[c]
    if sum(items[i].cpu * n for i, n in counts.items()) > C:
        return None
    if sum(items[i].mem * n for i, n in counts.items()) > M:
        return None
    lay = layout_ffd(agg, c, counts)
    if lay is None and engine is not None:
        lay = _layout_exact(agg, c, counts, engine, deadline=deadline)
    return lay


def _best_group(free: list[bool], doms, k: int):
    by: dict[int, list[int]] = {}
    for g, ok in enumerate(free):
        if ok:
            by.setdefault(doms[g], []).append(g)
    fit = sorted((len(v), v[0], v) for v in by.values() if len(v) >= k)
    return fit[0][2][:k] if fit else None


def _whole_gpus(agg: Aggregate, c: int, free: list[bool], level: str, k: int):
    """Offsets for k whole GPUs at an item's level (consolidated)."""
    sw_of, so_of = agg.sw_of[c], agg.so_of[c]
    if level == "switch":
        return _best_group(free, sw_of, k)
    if level == "socket":
        return _best_group(free, so_of, k)
    for dom in (sw_of, so_of):
        chosen = _best_group(free, dom, k)
        if chosen is not None:
            return chosen
    fr = [g for g, ok in enumerate(free) if ok]
    return fr[:k] if len(fr) >= k else None


def layout_ffd(agg: Aggregate, c: int, counts: dict[int, int]):
    """First-fit-decreasing layout (switch items, then socket items, then the
    rest; shares best fit, on partial GPUs first)."""
    items = agg.items[c]
    free = [f >= MILLI for f in agg.free[c]]
    load = {q: MILLI - f for q, f in agg.partial[c]}
    out: list[tuple[int, tuple[int, ...]]] = []
    seq = sorted(((i, n) for i, n in counts.items() if n > 0),
                 key=lambda t: ({"switch": 0, "socket": 1, "server": 2}[items[t[0]].level],
                                items[t[0]].milli > 0, -items[t[0]].gpus, -items[t[0]].milli, t[0]))
    for i, n in seq:
        it = items[i]
        for _ in range(n):
            if it.gpus == 0 and it.milli == 0:
                out.append((i, ()))
                continue
            if it.milli:
                cand = [(MILLI - ld, g) for g, ld in load.items() if ld + it.milli <= MILLI]
                if cand:
                    g = min(cand)[1]
                else:
                    fr = [g for g, ok in enumerate(free) if ok]
                    if not fr:
                        return None
                    g = fr[-1]   # shared GPUs from the top, keep low offsets whole
                    free[g] = False
                    load[g] = 0
                load[g] += it.milli
                out.append((i, (g,)))
                continue
            chosen = _whole_gpus(agg, c, free, it.level, it.gpus)
            if chosen is None:
                return None
            for g in chosen:
                free[g] = False
            out.append((i, tuple(chosen)))
    return tuple(out)


def _layout_exact(agg: Aggregate, c: int, counts: dict[int, int], engine: Backend,
                  *, deadline: Deadline):
    m = LinearModel("layout")
    a = {i: m.add_var(n, n, integer=True) for i, n in counts.items() if n}
    info = server_rows(agg, m, c, a)
    res = engine.solve(m, deadline.within(LAYOUT_TIME))
    if res.x is None or res.status is Status.INFEASIBLE:
        return None
    x = [int(round(v)) for v in res.x]
    return _layout_from(agg, c, counts, info, x)


def _layout_from(agg: Aggregate, c: int, counts, info, x):
    items = agg.items[c]
    free = [f >= MILLI for f in agg.free[c]]
    out = []
    for key, dom_of in (("sw", agg.sw_of[c]), ("so", agg.so_of[c])):
        for (i, d), r in sorted(info[key].items()):
            for _ in range(x[r]):
                gs = [g for g, ok in enumerate(free) if ok and dom_of[g] == d][:items[i].gpus]
                if len(gs) < items[i].gpus:
                    return None
                for g in gs:
                    free[g] = False
                out.append((i, tuple(gs)))
    slot_gpu: dict[int, int] = {}
    for (i, k, b) in info["slots"]:
        for _ in range(x[b]):
            if k not in slot_gpu:
                fr = [g for g, ok in enumerate(free) if ok]
                if not fr:
                    return None
                slot_gpu[k] = fr[-1]
                free[fr[-1]] = False
            out.append((i, (slot_gpu[k],)))
    for (i, q, b) in info["pslots"]:
        out.extend((i, (q,)) for _ in range(x[b]))
    for i, n in counts.items():
        it = items[i]
        if it.milli or (it.gpus and it.level != "server"):
            continue
        for _ in range(n):
            fr = [g for g, ok in enumerate(free) if ok][:it.gpus]
            if len(fr) < it.gpus:
                return None
            for g in fr:
                free[g] = False
            out.append((i, tuple(fr)))
    return tuple(out)


def make_pattern(agg: Aggregate, c: int, counts: dict[int, int],
                 engine: Backend | None = None, *, deadline: Deadline) -> Pattern | None:
    """The `Pattern` of ``counts`` with a layout found by `layout` (None
    when the items do not fit)."""
    counts = {i: n for i, n in counts.items() if n > 0}
    lay = layout(agg, c, counts, engine, deadline=deadline)
    return None if lay is None else laid_pattern(agg, c, counts, lay)


def laid_pattern(agg: Aggregate, c: int, counts: dict[int, int], lay) -> Pattern:
    """The `Pattern` of ``counts`` on a server of class ``c`` at the layout
    ``lay`` given (``(item, GPU offsets)`` per unit)."""
    counts = {i: n for i, n in counts.items() if n > 0}
    val = sum(agg.items[c][i].value * n for i, n in counts.items())
    return Pattern(c, tuple(sorted(counts.items())), tuple(lay), val)


__all__ = ["laid_pattern", "layout", "layout_ffd", "make_pattern", "server_rows"]

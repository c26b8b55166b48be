r"""The big-machine LP bound: servers pooled into machines, jobs fractional.

Each server class (or, with ``pool="all"``, the whole cluster -- Synergy's
big machine) becomes one machine with the summed free capacity of its
``n_c`` servers; item variables ``y_i >= 0`` are continuous:

$$
\begin{aligned}
\max \sum_i v_i y_i + \sum_{tok} v^{sp}_{tok} x_{tok}
\quad\text{s.t.}\quad
\sum_i cpu_i y_i \le n_c C_c,\ \sum_i mem_i y_i \le n_c M_c,\
\sum_{i\ whole} g_i y_i + \sum_{units} y \le n_c G_c,\\
\sum_i (1000 g_i + milli_i) y_i \le n_c (1000 G_c + \textstyle\sum_q f_q),\
\sum_{o,c} y_{(t,o),c} + \sum x_{to\cdot} \le N_t\ (= N_t \text{ with place\_all}),\
g_t x_{tok} \le \sum_{c\in k} y_{unit(t,o),c}
\end{aligned}
$$

Spread GPUs use their exact fractional share of CPU and memory.  Every
placement maps to a feasible point (count items per class), so the optimum is
an upper bound of every placement's value.
"""
from __future__ import annotations

from ....deadline import Deadline
from ....kernel import INF, LinearModel, solve_lp
from ....model import MILLI, Status
from .aggregate import Aggregate


def _class_rows(agg: Aggregate, m: LinearModel, cls, type_rows, link) -> None:
    rc, rm, rg, rmilli = {}, {}, {}, {}
    for c in cls:
        for i, it in enumerate(agg.items[c]):
            t = agg.types[it.t]
            if it.kind == "whole":
                v = m.add_var(0, min(t.count, agg.item_ub(c, i) * agg.n_c[c]), obj=it.value)
                type_rows[it.t][v] = 1
                rc[v], rm[v] = it.cpu, it.mem
                if it.gpus:
                    rg[v] = it.gpus
                rmilli[v] = it.gpus * MILLI + it.milli
            else:
                v = m.add_var(0, t.count * t.gpus)
                opt = t.options[it.o]
                rc[v], rm[v], rg[v], rmilli[v] = opt.cpu / t.gpus, opt.mem / t.gpus, 1, MILLI
                link.setdefault((it.t, it.o, it.group), {})[v] = -1
    m.add_row(rc, hi=sum(agg.cap[c][0] * agg.n_c[c] for c in cls))
    m.add_row(rm, hi=sum(agg.cap[c][1] * agg.n_c[c] for c in cls))
    m.add_row(rg, hi=sum(agg.cap[c][2] * agg.n_c[c] for c in cls))
    m.add_row(rmilli, hi=sum(agg.shared_capacity(c) * agg.n_c[c] for c in cls))


def big_machine_bound(agg: Aggregate, *, pool: str = "class", place_all: bool = False,
                      deadline: Deadline) -> float | None:
    """The LP bound of the module notes (None when the LP is not solved in time).

    Parameters
    ----------
    agg : Aggregate
    pool : {"class", "all"}
        One machine per server class, or one for the whole cluster.
    place_all : bool
        Every job must be placed (``= N_t``).
    deadline : Deadline, optional
    """
    m = LinearModel("big-machine")
    type_rows: dict[int, dict[int, float]] = {t.index: {} for t in agg.types}
    link: dict[tuple[int, int, int], dict[int, float]] = {}
    groups = [[c] for c in range(agg.K)] if pool == "class" else [list(range(agg.K))]
    for cls in groups:
        if deadline is not None and deadline.expired():
            return None
        _class_rows(agg, m, cls, type_rows, link)
    for (t, o, gid, val) in agg.spread_vars:
        v = m.add_var(0, agg.types[t].count, obj=val)
        type_rows[t][v] = 1
        link.setdefault((t, o, gid), {})[v] = agg.types[t].gpus
    for t, row in type_rows.items():
        n = agg.types[t].count
        if row:
            m.add_row(row, n if place_all else -INF, n)
        elif place_all and n:
            return None
    for row in link.values():
        m.add_row(row, hi=0)
    res = solve_lp(m, deadline=deadline)
    return res.objective if res.status is Status.OPTIMAL else None


__all__ = ["big_machine_bound"]

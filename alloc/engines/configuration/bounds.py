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

import numpy as np

from ...deadline import Deadline
from ...kernel import INF, LinearModel, solve
from ...model import MILLI, Status
from ...objectives import tighten
from .aggregate import Aggregate


class _Block:
    """The LP's columns (bounds, objective) and coefficients as triplets,
    added to the model in one block (a model built row by row and column by
    column cost 0.1-0.3 s at 10,000 items: a tenth of a scheduler round)."""

    def __init__(self):
        self.ub: list[float] = []
        self.obj: list[float] = []
        self.ri: list[int] = []
        self.ci: list[int] = []
        self.v: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def col(self, ub: float, obj: float = 0.0) -> int:
        """A new column ``0 <= y <= ub``; its index."""
        self.ub.append(ub)
        self.obj.append(obj)
        return len(self.ub) - 1

    def row(self, lo: float = -INF, hi: float = INF) -> int:
        """A new row (coefficients added with `put`); its index."""
        self.lo.append(lo)
        self.hi.append(hi)
        return len(self.lo) - 1

    def put(self, r: int, k: int, coef: float) -> None:
        """Coefficient ``coef`` of column ``k`` in row ``r``."""
        if coef:
            self.ri.append(r)
            self.ci.append(k)
            self.v.append(coef)

    def put_col(self, k: int, rows: tuple, coefs: tuple) -> None:
        """Coefficients of column ``k`` in ``rows`` (zeros are harmless)."""
        self.ri.extend(rows)
        self.ci.extend([k] * len(rows))
        self.v.extend(coefs)

    def model(self) -> LinearModel:
        """The LP (maximise)."""
        from scipy import sparse
        m = LinearModel("big-machine")
        n = len(self.ub)
        m.add_vars(n, lb=0.0, ub=np.asarray(self.ub, dtype=float),
                   obj=np.asarray(self.obj, dtype=float))
        A = sparse.coo_matrix((np.asarray(self.v, dtype=float),
                               (np.asarray(self.ri, dtype=np.int64),
                                np.asarray(self.ci, dtype=np.int64))), shape=(len(self.lo), n))
        m.add_rows(A, np.asarray(self.lo, dtype=float), np.asarray(self.hi, dtype=float))
        return m


def _class_rows(agg: Aggregate, b: _Block, cls, type_row: dict, link: dict) -> None:
    """One pooled machine of the classes ``cls``: its items' columns and its
    four capacity rows (CPU, memory, whole GPUs, milli)."""
    rows = [b.row(hi=sum(agg.cap[c][k] * agg.n_c[c] for c in cls)) for k in range(3)]
    rows.append(b.row(hi=sum(agg.shared_capacity(c) * agg.n_c[c] for c in cls)))
    for c in cls:
        for i, it in enumerate(agg.items[c]):
            t = agg.types[it.t]
            if it.kind == "whole":
                v = b.col(min(t.count, agg.item_ub(c, i) * agg.n_c[c]), it.value)
                b.put_col(v, (type_row[it.t], *rows),
                          (1, it.cpu, it.mem, it.gpus, it.gpus * MILLI + it.milli))
            else:
                v = b.col(t.count * t.gpus)
                opt = t.options[it.o]
                b.put_col(v, (_link_row(b, link, (it.t, it.o, it.group)), *rows),
                          (-1, opt.cpu / t.gpus, opt.mem / t.gpus, 1, MILLI))


def _link_row(b: _Block, link: dict, key) -> int:
    """The row ``g_t x_tok - sum units <= 0`` of spread group ``key``."""
    if key not in link:
        link[key] = b.row(hi=0)
    return link[key]


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
    b = _Block()
    type_row: dict[int, int] = {}
    for jt in agg.types:
        type_row[jt.index] = b.row(jt.count if place_all else -INF, jt.count)
    link: dict[tuple[int, int, int], int] = {}
    groups = [[c] for c in range(agg.K)] if pool == "class" else [list(range(agg.K))]
    for cls in groups:
        if deadline is not None and deadline.expired():
            return None
        _class_rows(agg, b, cls, type_row, link)
    for (t, o, gid, val) in agg.spread_vars:
        v = b.col(agg.types[t].count, val)
        b.put(type_row[t], v, 1)
        b.put(_link_row(b, link, (t, o, gid)), v, agg.types[t].gpus)
    if place_all and not {r for r in type_row.values()} <= set(b.ri) | {
            type_row[t.index] for t in agg.types if not t.count}:
        return None     # a job to place that no machine can hold
    # HiGHS's presolve takes longer than the simplex on these LPs (0.05 s of
    # 0.11 s at 10,000 items)
    res = solve(b.model(), "highs", deadline=deadline, relax=True, presolve="off")
    return res.objective if res.status is Status.OPTIMAL else None


def item_bound(agg: Aggregate) -> float:
    r"""A bound without an LP, for when the big-machine LP is not solved in
    time: the big-machine LP with every class pooled into one machine, its
    CPU and memory rows dropped, and each job type's items merged into one
    at the type's best value and least GPU use.

    With ``b_t`` the largest value of an item or spread variable of type t
    (0 when no server can hold its jobs), ``w_t`` the least milli of GPU
    one of its jobs takes (``1000 g_i + milli_i`` over its items, ``1000
    g_t`` spread) and ``W`` the milli free on all servers
    (``sum_c n_c (1000 G_c + sum_q f_q)``):

    $$
    \max \sum_t b_t Y_t \quad\text{s.t.}\quad \sum_t w_t Y_t \le W,\ 0 \le Y_t \le N_t,
    $$

    a fractional knapsack (types by ``b_t / w_t``).  Each relaxation step
    only enlarges the LP's feasible set or its objective, so this is at or
    above the big-machine bound and a bound of every placement; it is also
    at or below the sum of the jobs' values at their best item.  One pass
    over the items."""
    best = [0.0] * len(agg.types)
    use = [float("inf")] * len(agg.types)
    for items in agg.items:
        for it in items:
            if it.kind == "whole":
                best[it.t] = max(best[it.t], it.value)
                use[it.t] = min(use[it.t], it.gpus * MILLI + it.milli)
    for (t, _, _, val) in agg.spread_vars:
        best[t] = max(best[t], val)
        use[t] = min(use[t], agg.types[t].gpus * MILLI)
    room = float(sum(agg.shared_capacity(c) * agg.n_c[c] for c in range(agg.K)))
    total = 0.0
    ranked = sorted((t for t in range(len(best)) if best[t] > 0),
                    key=lambda t: -best[t] / use[t] if use[t] else -float("inf"))
    for t in ranked:
        n = agg.types[t].count
        take = n if not use[t] else min(n, room / use[t])
        total += best[t] * take
        room -= use[t] * take
        if room <= 0 and use[t]:
            break
    return total


def rounded(bound: float, step: float | None) -> float:
    """A bound rounded down to a multiple of the objective's ``step``
    (`alloc.objectives.tighten` of a bound that is a number).

    Examples
    --------
    >>> rounded(10.37, 0.25)
    10.25
    """
    out = tighten(bound, step)
    assert out is not None
    return out


__all__ = ["big_machine_bound", "item_bound", "rounded"]

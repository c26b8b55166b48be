r"""The pattern master and column generation.

Integer master over a pool of patterns (``z_cp`` servers of class ``c`` loaded
with pattern ``p``; ``x_tok`` jobs of type ``t`` at option ``o`` spread over
group ``k``):

$$
\begin{aligned}
\max\ & \sum_{c,p} val_p\, z_{cp} + \sum_{t,o,k} v^{sp}_{tok}\, x_{tok} \\
\text{s.t. } & \sum_p z_{cp} \le n_c                    && (\mu_c)\\
& \sum_{c,p,o} a_{p,(t,o)}\, z_{cp} + \sum_{o,k} x_{tok} \le N_t   && (\pi_t)\\
& g_t\, x_{tok} - \sum_{c \in k, p} a_{p,unit(t,o)}\, z_{cp} \le 0  && (\rho_{tok})\\
& z_{cp}, x_{tok} \in \mathbb{Z}_{\ge 0}
\end{aligned}
$$

Column generation solves the LP relaxation over the pool and prices new
patterns per class with a small integer program (the pattern rows of
`alloc.engines.configuration.patterns` with objective
``sum_i (v_i - pi_t(i) - rho(i)) a_i - mu_c``).  At every round the
Lagrangian bound ``LP + sum_c n_c max(0, rc*_c)`` (``rc*_c`` = the proven
upper bound of the class's pricing problem) is a valid upper bound; at
convergence it equals the Gilmore-Gomory LP bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...deadline import Deadline
from ...kernel import INF, LinearModel, solve_lp
from ...model import Status
from .aggregate import Aggregate, Pattern
from .backend import Backend
from .patterns import make_pattern, server_rows

EPS = 1e-7
#: Seconds one pricing problem may take at most.
PRICING_TIME = 10.0
#: Greedy patterns a round of column generation tries, over all classes
#: (`greedy_patterns`), and the most for one class: heterogeneous 8k GPUs (3
#: classes, 158 job types, 10 s, load average 4.5) ended 1.55 % from its
#: bound without them, 0.65-0.84 % with 4 a class and 0.49 % with 12.
GREEDY_PER_ROUND = 48
GREEDY_COLUMNS = 12


class Master:
    """The pattern master over a column pool, with residual capacities (the
    dive fixes patterns and shrinks them)."""

    def __init__(self, agg: Aggregate):
        self.agg = agg
        self.pool: list[list[Pattern]] = [[] for _ in range(agg.K)]
        self.keys: list[set] = [set() for _ in range(agg.K)]
        self.n_cap = list(agg.n_c)
        self.t_cap = [t.count for t in agg.types]
        self.link_cap: dict[tuple[int, int, int], int] = {}

    def copies_ub(self, c: int, pat: Pattern) -> int:
        """Copies of ``pat`` the residual capacities admit."""
        ub = self.n_cap[c]
        for i, n in pat.counts:
            it = self.agg.items[c][i]
            if it.kind == "whole":
                ub = min(ub, self.t_cap[it.t] // n)
        return max(ub, 0)

    def add(self, pat: Pattern | None) -> bool:
        """Add a pattern to the pool (False when it is None or already there)."""
        if pat is None or pat.counts in self.keys[pat.cls]:
            return False
        self.keys[pat.cls].add(pat.counts)
        self.pool[pat.cls].append(pat)
        return True

    @property
    def size(self) -> int:
        """Number of patterns in the pool."""
        return sum(len(x) for x in self.pool)

    def build(self, integer: bool) -> tuple[LinearModel, dict, dict, dict]:
        """The master over the pool: (model, z vars, x vars, rows by key)."""
        agg = self.agg
        m = LinearModel("master")
        zv: dict[tuple[int, int], int] = {}
        xv: dict[tuple[int, int, int], int] = {}
        rows: dict[tuple, int] = {}
        type_row: dict[int, dict[int, float]] = {t.index: {} for t in agg.types}
        link: dict[tuple[int, int, int], dict[int, float]] = {}
        for c in range(agg.K):
            crow = {}
            for pi, pat in enumerate(self.pool[c]):
                # a pattern the residual jobs cannot fill is dropped; in the LP
                # other bounds are left to the rows (duals on variable bounds
                # would hide columns from the pricing, which knows only rows)
                fits = self.copies_ub(c, pat) > 0
                if integer and not fits:
                    continue    # fixed at zero: left out of the integer model
                ub = (self.n_cap[c] if integer else INF) if fits else 0
                v = m.add_var(0, ub, integer, obj=pat.value)
                zv[(c, pi)] = v
                crow[v] = 1
                for i, n in pat.counts:
                    it = agg.items[c][i]
                    if it.kind == "whole":
                        type_row[it.t][v] = type_row[it.t].get(v, 0) + n
                    else:
                        r = link.setdefault((it.t, it.o, it.group), {})
                        r[v] = r.get(v, 0) - n
            if crow:
                rows[("class", c)] = m.add_row(crow, hi=self.n_cap[c])
        for (t, o, gid, val) in agg.spread_vars:
            v = m.add_var(0, self.t_cap[t] if integer else INF, integer, obj=val)
            xv[(t, o, gid)] = v
            type_row[t][v] = 1
            link.setdefault((t, o, gid), {})[v] = agg.types[t].gpus
        for t, row in type_row.items():
            if row:
                rows[("type", t)] = m.add_row(row, hi=self.t_cap[t])
        for key, row in link.items():
            rows[("link",) + key] = m.add_row(row, hi=self.link_cap.get(key, 0))
        return m, zv, xv, rows

    def item_coef(self, c: int, duals: dict, i: int) -> float:
        """Reduced-cost coefficient of item i of class c under ``duals``."""
        it = self.agg.items[c][i]
        if it.kind == "whole":
            return it.value - duals.get(("type", it.t), 0.0)
        return duals.get(("link", it.t, it.o, it.group), 0.0)

    def pricing_model(self, c: int, duals: dict, min_coef: float = EPS):
        """Pricing problem of class ``c``: (model, item -> var), model None
        when no item has a coefficient above ``min_coef``."""
        agg = self.agg
        m = LinearModel(f"pricing{c}")
        a = {}
        for i, it in enumerate(agg.items[c]):
            coef = self.item_coef(c, duals, i)
            ub = min(agg.item_ub(c, i), self.t_cap[it.t] * (1 if it.kind == "whole"
                                                              else agg.types[it.t].gpus))
            if coef > min_coef and ub > 0:
                a[i] = m.add_var(0, ub, integer=True, obj=coef)
        if not a:
            return None, a
        m.obj_const = -duals.get(("class", c), 0.0)
        return m, a


@dataclass
class CGResult:
    """What column generation reached."""
    lp: float | None = None
    bound: float | None = None       # Lagrangian bound (valid if agg.exact_units)
    rounds: int = 0
    converged: bool = False
    duals: dict = field(default_factory=dict)
    pricing_calls: int = 0
    primal: list = field(default_factory=list)
    zv: dict = field(default_factory=dict)
    xv: dict = field(default_factory=dict)


def lp_duals(master: Master, deadline: Deadline):
    """The master LP: (value, primal, duals by row key, zv, xv) or None."""
    m, zv, xv, rows = master.build(integer=False)
    res = solve_lp(m, deadline=deadline)
    if res.status is not Status.OPTIMAL:
        return None
    d, x = res.duals, res.x
    assert x is not None      # an optimal LP has a solution; duals when it has rows
    duals = {k: float(d[r]) for k, r in rows.items()} if d is not None else {}
    return res.objective, list(x), duals, zv, xv


def _price_class(master: Master, engine: Backend, c: int, duals: dict, deadline: Deadline):
    """Price class c: (proven bound of its reduced cost or None, new pattern or None)."""
    agg = master.agg
    pm, a = master.pricing_model(c, duals)
    if pm is None:
        return 0.0, None
    server_rows(agg, pm, c, a)
    r = engine.solve(pm, deadline.within(PRICING_TIME))
    pat = None
    if r.x is not None and (r.objective or 0) > 1e-6:
        counts = {i: int(round(r.x[v])) for i, v in a.items()}
        pat = make_pattern(agg, c, counts, engine=engine, deadline=deadline)
    return r.bound, pat


def greedy_patterns(master: Master, c: int, duals: dict, deadline: Deadline,
                    limit: int = GREEDY_COLUMNS) -> list[Pattern]:
    """Patterns of class ``c`` with a positive reduced cost under ``duals``,
    built greedily beside the exact pricing's one (a round of column
    generation then adds up to ``1 + limit`` columns a class, not one: with
    a few classes and hundreds of job types one column a round leaves the
    master far from converged after 25 rounds).

    Each of the ``limit`` items of the largest coefficient seeds one
    pattern: as many copies of it as fit, then the other items of positive
    coefficient by coefficient per share of the server's scarcest resource
    (whole GPUs, CPU, memory), each at as many copies as still fit.  Shared
    (milli) items are left to the exact pricing.  A pattern is kept when its
    reduced cost is positive and `make_pattern` lays it out (first fit
    decreasing)."""
    agg = master.agg
    items = agg.items[c]
    C, M, G = agg.cap[c]
    cand = [(master.item_coef(c, duals, i), i) for i, it in enumerate(items) if not it.milli]
    cand = [(coef, i) for coef, i in cand if coef > EPS]
    if not cand:
        return []

    def size(i: int) -> float:
        it = items[i]
        return max(it.gpus / G if G else 0.0, it.cpu / C if C else 0.0,
                   it.mem / M if M else 0.0, 1e-9)
    order = sorted(cand, key=lambda ci: ci[0] / size(ci[1]), reverse=True)
    out = []
    for coef0, first in sorted(cand, reverse=True)[:limit]:
        counts: dict[int, int] = {}
        used = [0, 0, 0]
        rc = -duals.get(("class", c), 0.0)
        for coef, i in [(coef0, first)] + order:
            it = items[i]
            n = min(agg.item_ub(c, i), master.t_cap[it.t] * (
                1 if it.kind == "whole" else agg.types[it.t].gpus)) - counts.get(i, 0)
            for k, need in enumerate((it.cpu, it.mem, it.gpus)):
                if need:
                    n = min(n, (agg.cap[c][k] - used[k]) // need)
            if n <= 0:
                continue
            counts[i] = counts.get(i, 0) + n
            used = [used[0] + n * it.cpu, used[1] + n * it.mem, used[2] + n * it.gpus]
            rc += n * coef
        if rc > 1e-6 and not deadline.expired():
            pat = make_pattern(agg, c, counts, None, deadline=deadline)
            if pat is not None:
                out.append(pat)
    return out


def column_generation(master: Master, engine: Backend, deadline: Deadline,
                      max_rounds: int = 10000) -> CGResult:
    """Column generation until no column prices out or the deadline."""
    agg = master.agg
    out = CGResult()
    greedy = max(1, min(GREEDY_COLUMNS, GREEDY_PER_ROUND // max(1, agg.K)))
    while out.rounds < max_rounds and not deadline.expired():
        out.rounds += 1
        lp = lp_duals(master, deadline)
        if lp is None:
            break
        out.lp, out.primal, out.duals, out.zv, out.xv = lp
        added, lag, lag_ok = 0, out.lp, True
        for c in range(agg.K):
            if deadline.expired():
                lag_ok = False
                break
            bnd, pat = _price_class(master, engine, c, out.duals, deadline)
            out.pricing_calls += 1
            if bnd is None:
                lag_ok = False
            else:
                lag += master.n_cap[c] * max(0.0, bnd)
            if master.add(pat):
                added += 1
                added += sum(master.add(q) for q in greedy_patterns(
                    master, c, out.duals, deadline, limit=greedy))
        if lag_ok and (out.bound is None or lag < out.bound):
            out.bound = lag
        if added == 0:
            out.converged = lag_ok
            break
    return out


def solve_master_ip(master: Master, engine: Backend, deadline: Deadline, seed: int,
                    hint_z: dict | None = None, hint_x: dict | None = None):
    """Integer master over the pool: (status, z, x, value, bound, stats)."""
    m, zv, xv, _ = master.build(integer=True)
    if hint_z is not None:
        m.hint = {v: 0 for v in range(m.n)}
        for k, n in hint_z.items():
            if k in zv:
                m.hint[zv[k]] = n
        for k, n in (hint_x or {}).items():
            if k in xv:
                m.hint[xv[k]] = n
    res = engine.solve(m, deadline, seed)
    if res.x is None:
        return res.status, None, None, None, res.bound, res.stats
    z = {k: int(round(res.x[v])) for k, v in zv.items() if round(res.x[v]) > 0}
    x = {k: int(round(res.x[v])) for k, v in xv.items() if round(res.x[v]) > 0}
    return res.status, z, x, res.objective, res.bound, res.stats


def hint_from(master: Master, cols) -> tuple[dict, dict]:
    """Pool indices of a converted heuristic solution."""
    pats, xcount = cols
    index = {(q.cls, q.counts): (c, pi) for c, pool in enumerate(master.pool)
             for pi, q in enumerate(pool)}
    z: dict[tuple[int, int], int] = {}
    for pat in pats.values():
        key = index.get((pat.cls, pat.counts))
        if key is not None:
            z[key] = z.get(key, 0) + 1
    return z, dict(xcount)


__all__ = ["CGResult", "Master", "column_generation", "greedy_patterns", "hint_from", "lp_duals",
           "solve_master_ip"]

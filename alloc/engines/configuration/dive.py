"""Price-and-dive: a primal heuristic for when the proof is out of reach.

Solve the restricted LP by column generation, fix (round up) one copy of a
pattern the LP uses, shrink the residual problem (servers per class, jobs per
type, unit slots per spread group) and repeat until the LP is integral.  The
children of a node fix one copy of each of its ``width`` patterns with the
largest LP values (depth first, largest first).  A node whose LP bound,
rounded down to the objective step, is below the target (raised to the best
dive value plus a step as solutions are found) is cut off.  The search stops
at the deadline or when a solution reaches ``goal`` (the rounded bound).  New
columns stay in the pool; the residual capacities are restored at the end.

Rounding down (`round_down`) is the one-step dive for masters whose classes
hold thousands of servers, where fixing one copy per node cannot finish:
every column of the restricted LP's solution ``(z*, x*)`` is fixed at
``floor(z*_cp)`` copies at once (rounding down keeps every row of the master
satisfied: class and type rows lose load, a spread group's unit slots stay
in the residual link capacity), and the residual integer master -- at most
one server per fractional column left per class, the jobs the fixed copies
do not take -- is solved over the whole pool, spread jobs included.  The
answer ``floor(z*) + z_res`` loses at most the value of the fractional
columns' servers against the LP, which is small beside thousands of copies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from ...deadline import Deadline
from ...objectives import tighten
from .backend import Backend
from .master import Master, column_generation, solve_master_ip


@dataclass
class DiveResult:
    """An integral solution found by diving."""
    z: dict                 # (c, pool index) -> copies
    x: dict                 # (t, o, group) -> spread jobs
    value: float            # master value of (z, x)
    steps: int = 0
    complete: bool = False  # every LP column integral at the end


def _snapshot(master: Master):
    return list(master.n_cap), list(master.t_cap), dict(master.link_cap)


def _restore(master: Master, snap) -> None:
    master.n_cap, master.t_cap, master.link_cap = list(snap[0]), list(snap[1]), dict(snap[2])


def _apply(master: Master, c: int, pi: int, n: int) -> None:
    """Fix ``n`` copies of pattern ``pi`` of class ``c`` (residual capacities shrink)."""
    agg = master.agg
    master.n_cap[c] -= n
    for i, q in master.pool[c][pi].counts:
        it = agg.items[c][i]
        if it.kind == "whole":
            master.t_cap[it.t] -= n * q
        else:
            key = (it.t, it.o, it.group)
            master.link_cap[key] = master.link_cap.get(key, 0) + n * q


class _Search:
    def __init__(self, master, engine, deadline, target, delta, goal, width):
        self.master, self.engine, self.deadline = master, engine, deadline
        self.target, self.delta, self.goal, self.width = target, delta, goal, width
        self.best: DiveResult | None = None
        self.nodes = 0
        self.stop = False
        self.spread_value = {(t, o, g): v for (t, o, g, v) in master.agg.spread_vars}

    def expand(self, fixed: dict, fixed_value: float) -> list | None:
        """Column generation at a node: the patterns to branch on, or None
        (pruned, integral or out of time)."""
        if self.deadline.expired():
            self.stop = True
            return None
        self.nodes += 1
        cg = column_generation(self.master, self.engine, self.deadline)
        if cg.lp is None or not cg.primal:
            return None
        tgt = self.target
        if tgt is not None and tighten(fixed_value + cg.lp, self.delta) < tgt - 1e-9 * max(1.0, abs(tgt)):
            return None
        zs = {k: cg.primal[v] for k, v in cg.zv.items() if cg.primal[v] > 1e-6}
        if any(abs(v - round(v)) > 1e-6 for v in zs.values()):
            return sorted(zs, key=lambda k: (-zs[k], k))[:self.width]
        self._record(fixed, zs, cg)
        return None

    def _record(self, fixed: dict, zs: dict, cg) -> None:
        z = dict(fixed)
        for k, v in zs.items():
            z[k] = z.get(k, 0) + int(round(v))
        x = {k: int(math.floor(cg.primal[v] + 1e-6)) for k, v in cg.xv.items()
             if cg.primal[v] > 1e-6}
        x = {k: n for k, n in x.items() if n > 0}
        val = sum(self.master.pool[c][pi].value * n for (c, pi), n in z.items())
        val += sum(self.spread_value[k] * n for k, n in x.items())
        if self.best is None or val > self.best.value + 1e-9 * max(1.0, abs(val)):
            self.best = DiveResult(z, x, val, self.nodes, True)
            step = self.delta or 1e-6 * max(1.0, abs(val))
            self.target = max(self.target if self.target is not None else -math.inf, val + step)
            if self.goal is not None and val >= self.goal - 1e-6 * max(1.0, abs(self.goal)):
                self.stop = True


def dive(master: Master, engine: Backend, deadline: Deadline, target: float | None = None,
         delta: float | None = None, stats: dict | None = None, goal: float | None = None,
         width: int = 3) -> DiveResult | None:
    """Depth-first price-and-dive (see the module notes); the best integral
    LP solution found, or None."""
    saved = _snapshot(master)
    srch = _Search(master, engine, deadline, target, delta, goal, width)
    try:
        children = srch.expand({}, 0.0)
        stack: list[tuple[dict, float, tuple, Iterator]] = \
            [({}, 0.0, _snapshot(master), iter(children))] if children else []
        while stack and not srch.stop:
            fixed, fval, snap, it = stack[-1]
            key = next(it, None)
            if key is None:
                stack.pop()
                continue
            _restore(master, snap)
            c, pi = key
            pat = master.pool[c][pi]
            if master.copies_ub(c, pat) <= 0:
                continue
            _apply(master, c, pi, 1)
            f2 = dict(fixed)
            f2[key] = f2.get(key, 0) + 1
            kids = srch.expand(f2, fval + pat.value)
            if kids:
                stack.append((f2, fval + pat.value, _snapshot(master), iter(kids)))
    finally:
        _restore(master, saved)
    if stats is not None:
        stats["dive_nodes"] = stats.get("dive_nodes", 0) + srch.nodes
    return srch.best


def round_down(master: Master, engine: Backend, cg, deadline: Deadline,
               seed: int = 0, stats: dict | None = None) -> DiveResult | None:
    """Fix the floors of the restricted LP's columns (``cg``: the column
    generation result whose primal is read), solve the residual integer master
    within ``deadline``, and return both together (see the module notes), or
    None when the LP fixes nothing and the residual master finds nothing."""
    if not cg.primal:
        return None
    saved = _snapshot(master)
    fixed: dict = {}
    try:
        for (c, pi), v in cg.zv.items():
            n = min(int(math.floor(cg.primal[v] + 1e-6)), master.copies_ub(c, master.pool[c][pi]))
            if n > 0:
                _apply(master, c, pi, n)
                fixed[(c, pi)] = n
        left = sum(master.n_cap)
        # hinted with the empty residual (feasible): CP-SAT then starts from a
        # solution instead of searching for a first one
        _, z, x, _, _, _ = solve_master_ip(master, engine, deadline, seed, {}, {})
    finally:
        _restore(master, saved)
    z, x = z or {}, x or {}
    if not fixed and not z:
        return None
    for k, n in z.items():
        fixed[k] = fixed.get(k, 0) + n
    val = sum(master.pool[c][pi].value * n for (c, pi), n in fixed.items())
    spread = {(t, o, g): v for (t, o, g, v) in master.agg.spread_vars}
    val += sum(spread[k] * n for k, n in x.items())
    if stats is not None:
        stats.update(round_residual_servers=left,
                     round_residual_found=bool(z or x))
    return DiveResult(fixed, x, val, 1, True)


__all__ = ["DiveResult", "dive", "round_down"]

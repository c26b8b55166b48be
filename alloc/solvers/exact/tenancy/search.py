r"""Search on the tenancy model through [`alloc.kernel`][alloc.kernel]: fixing variables
on a copy of a model, completing a partial hint, and the large-neighbourhood
search.

Fixing.  `restrict` returns the model with some columns fixed at given
values as a smaller [`LinearModel`][alloc.kernel.model.LinearModel] over the free columns
only: each row's bounds are shifted by the fixed part,

$$
\ell - A_F x_F \le A_R x_R \le u - A_F x_F ,
$$

rows without a free column are checked and dropped, and the objective keeps
the fixed part as a constant.  (Solving it is the same as solving the whole
model with those variables' bounds fixed; only the small model is handed to
the engine.)

Large-neighbourhood search (`neighbourhood_search`).  From the
incumbent, the columns of all but k servers (placements, kept jobs, moves,
units, cell counts and auxiliary columns on them; rack cells always) are
fixed, the rest is re-solved by the engine (at most 2 s, from the incumbent)
and an improvement becomes the incumbent.  The k servers are random; or (a
third of the time, when tenants own rack cells) whole random racks, whose
rack cells are freed too (otherwise they never move); or (a third, when there
are tenants) half of them among the servers where one random tenant holds
cells, so that its cells can move.  k starts at ``min(8, S/4)``; it shrinks
by `GROW` after a neighbourhood not proven in time and grows back (to
the start at most) after one proven within a quarter of its time.  The
search's bounds are never reported (they hold only for the neighbourhood).
"""
from __future__ import annotations

import random
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ....kernel import INF, LinearModel, Result, solve
from ....model import Status
from .model import TenancyModel

#: longest single neighbourhood solve (seconds)
STEP_SECONDS = 2.0
#: factor by which a neighbourhood shrinks after a solve not proven in time (and grows back)
GROW = 1.15
#: shares of the neighbourhoods made of whole racks (when tenants own rack
#: cells) and of one tenant's servers (when there are tenants)
RACK_SHARE, TENANT_SHARE = 1 / 3, 1 / 3


@dataclass(frozen=True)
class Restricted:
    """A restricted model and how to read its solutions back: ``free`` (the
    original columns of its variables) and ``base`` (the fixed values, a full
    vector)."""
    model: LinearModel
    free: np.ndarray
    base: np.ndarray

    def expand(self, x) -> np.ndarray:
        """A full solution from a solution of the restricted model."""
        out = self.base.copy()
        out[self.free] = x
        return out


def restrict(model: LinearModel, fixed: dict[int, float], tol: float = 1e-6, csc=None
             ) -> Restricted | None:
    """``model`` with the columns of ``fixed`` fixed (module notes), or None
    when a row without free columns is violated or a value is outside its
    column's bounds (``csc``: the model's matrix in CSC form, when the caller
    keeps one)."""
    n = model.n
    base = np.zeros(n)
    mask = np.ones(n, dtype=bool)
    lb, ub = np.asarray(model.lb), np.asarray(model.ub)
    for c, v in fixed.items():
        if v < lb[c] - tol or v > ub[c] + tol:
            return None
        base[c] = v
        mask[c] = False
    free = np.flatnonzero(mask)
    A = model.matrix()
    shift = A @ base if model.m else np.zeros(0)
    lo = np.asarray(model.row_lo, dtype=float) - shift
    hi = np.asarray(model.row_hi, dtype=float) - shift
    Af = (A.tocsc() if csc is None else csc)[:, free].tocsr() if model.m else A
    live = np.diff(Af.indptr) > 0 if model.m else np.zeros(0, dtype=bool)
    dead = ~live
    if dead.any():
        slack = tol * np.maximum(1.0, np.abs(shift[dead]))
        if (lo[dead] > slack).any() or (hi[dead] < -slack).any():
            return None
    sub = LinearModel(model.name + "-restricted", model.maximize)
    sub.lb = lb[free].tolist()
    sub.ub = ub[free].tolist()
    sub.integer = [model.integer[c] for c in free]
    sub.names = [""] * len(free)
    pos = {int(c): k for k, c in enumerate(free)}
    sub.obj = {pos[c]: v for c, v in model.obj.items() if c in pos}
    sub.obj_const = model.obj_const + sum(v * base[c] for c, v in model.obj.items()
                                          if c not in pos)
    sub.hint = {pos[c]: v for c, v in model.hint.items() if c in pos}
    if live.any():
        sub.add_rows(Af[live], np.where(np.isfinite(lo[live]), lo[live], -INF),
                     np.where(np.isfinite(hi[live]), hi[live], INF))
    return Restricted(sub, free, base)


def complete(model: LinearModel, fixed: dict[int, float], engine: str, deadline,
             **params) -> np.ndarray | None:
    """A full solution of ``model`` agreeing with ``fixed`` (the engine
    completes the other columns), or None."""
    r = restrict(model, fixed)
    if r is None:
        return None
    r.model.set_objective({})          # any completion will do: stop at the first
    res = solve(r.model, engine, deadline=deadline, **params)
    if not res.has_solution:
        return None
    return r.expand(res.x)


def server_columns(tm: TenancyModel) -> tuple[dict[int, list[int]], dict[int, list[int]], set[int]]:
    """Columns that belong to each server (placements, kept jobs, moves,
    units, cell counts, auxiliary columns), the rack cells' columns of each
    rack's servers, and every fixable column."""
    p = tm.p
    per: dict[int, list[int]] = defaultdict(list)
    for (k, s), c in tm.x.items():
        per[s].append(c)
    for r, c in tm.keep.items():
        for s, _ in p.current_assign(r).cpu:
            per[s].append(c)
    for (r, s), c in tm.mv.items():
        per[s].append(c)
    for (key, s), c in tm.units.items():
        per[s].append(c)
    for s, cols in tm.aux.items():
        per[s].extend(cols)
    racks: dict[int, list[int]] = defaultdict(list)     # rack node -> its cell columns
    fixable: set[int] = set()
    for (v, lvl, where), c in tm.cells.items():
        if lvl in tm.outer_lvls:
            racks[where].append(c)
            fixable.add(c)
        else:
            per[where].append(c)
    for cols in per.values():
        fixable.update(cols)
    return dict(per), dict(racks), fixable


def pick_neighbourhood(tm: TenancyModel, rng: random.Random, servers: list[int], size: int,
                       per: dict, racks: dict, x: np.ndarray) -> set[int]:
    """Free columns of one neighbourhood (module notes): ``size`` random
    servers; or whole random racks with their rack cells; or half the
    servers where one random tenant holds cells in ``x`` and half others."""
    kind = rng.random()
    if racks and kind < RACK_SHARE:
        free: set[int] = set()
        tree = tm.tree
        chosen: set[int] = set()
        for q in rng.sample(sorted(racks), len(racks)):
            srv = {tree.server[n] for n in tree.children[q]} & set(per)
            if chosen and len(chosen) + len(srv) > size:
                continue
            chosen |= srv
            free.update(racks[q])
        if chosen:
            return free.union(*(per[s] for s in chosen))
    chosen = set()
    if tm.tenants and kind > 1 - TENANT_SHARE:
        v = rng.choice(tm.tenants)
        mine = sorted({where for (u, lvl, where), c in tm.cells.items()
                       if u == v and lvl not in tm.outer_lvls and x[c] > 0.5} & set(per))
        chosen = set(rng.sample(mine, min(len(mine), max(1, size // 2))))
    rest = [s for s in servers if s not in chosen]
    chosen.update(rng.sample(rest, min(max(0, size - len(chosen)), len(rest))))
    return set().union(*(per[s] for s in chosen))


def neighbourhood_search(tm: TenancyModel, x0: np.ndarray, solver, until, seed: int
                         ) -> list[tuple[np.ndarray, float]]:
    """The large-neighbourhood search from ``x0`` (module notes) until the
    deadline ``until``; ``solver(model, deadline, seed) -> Result``.  Returns
    the incumbents ``[(x, objective)]``, the first one ``x0``."""
    m = tm.m
    best, best_obj = x0, m.value(x0)
    found = [(best, best_obj)]
    per, racks, fixable_set = server_columns(tm)
    servers = sorted(per)
    if not servers:
        return found
    rng = random.Random(seed)
    size = first = float(max(2, min(len(servers) // 4, 8)))
    fixable = sorted(fixable_set)
    csc = m.matrix().tocsc()
    while until.left() > 0.3:
        free = pick_neighbourhood(tm, rng, servers, int(size), per, racks, best)
        fixed = {c: float(best[c]) for c in fixable if c not in free}
        r = restrict(m, fixed, csc=csc)
        if r is None:
            break
        r.model.hint = {k: float(best[c]) for k, c in enumerate(r.free)}
        t0 = time.perf_counter()
        res: Result = solver(r.model, until.within(STEP_SECONDS), rng.randrange(1 << 30))
        # neighbourhoods shrink while they are not solved in time, and grow
        # back (to the first size at most) while they are solved fast
        if res.status is Status.OPTIMAL and time.perf_counter() - t0 < STEP_SECONDS / 4:
            size = min(first, size * GROW)
        elif res.status is not Status.OPTIMAL:
            size = max(2.0, size / GROW)
        if not res.has_solution:
            continue
        x = r.expand(res.x)
        obj = m.value(x)
        if obj > best_obj + 0.5:
            best, best_obj = x, obj
            found.append((best, best_obj))
    return found

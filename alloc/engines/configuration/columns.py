"""Between concrete assignments and the aggregate: a solution's columns, and
the assignments of a master solution.

`decode` lays ``z_cp`` copies of each pattern on the servers of class
``c`` in index order (canonical offsets mapped to each server's GPUs); whole
items take their type's jobs in rank order; the unit slots of a spread group
are cut into runs of ``g_t`` (same server first) for the ``x_tok`` spread jobs.
"""
from __future__ import annotations

from collections import deque

from ...arrays import outer_levels
from ...model import CLUSTER
from ...problem import Assign, Problem, option_of
from .aggregate import Aggregate, Pattern
from .patterns import laid_pattern


def _server_parts(agg: Aggregate, j: int, a: Assign, t: int, o: int, per_server, lay, xcount):
    """Record job j's items on its servers; False when they do not map."""
    p = agg.p
    servers = sorted({s for s, _ in a.cpu} | {int(p.gpu_server[g]) for g, _ in a.gpus})
    if len(servers) == 1:
        s = servers[0]
        i = agg.item_index[agg.class_of[s]].get(("whole", t, o))
        if i is None:
            return False
        per_server.setdefault(s, {})
        per_server[s][i] = per_server[s].get(i, 0) + 1
        lay.setdefault(s, []).append((i, tuple(agg.offset_of(s, g) for g, _ in a.gpus)))
        return True
    m = _mode_of(agg, t, a)
    if m is None:
        return False
    key = ("unit", t, o) if not m else ("unit", t, o, m)
    units = []
    for g, _ in a.gpus:
        s = int(p.gpu_server[g])
        i = agg.item_index[agg.class_of[s]].get(key)
        if i is None:
            return False
        units.append((s, i, agg.offset_of(s, g)))
    gid = agg.items[agg.class_of[units[0][0]]][units[0][1]].group
    if any(agg.items[agg.class_of[s]][i].group != gid for s, i, _ in units):
        return False
    for s, i, off in units:
        per_server.setdefault(s, {})
        per_server[s][i] = per_server[s].get(i, 0) + 1
        lay.setdefault(s, []).append((i, (off,)))
    xcount[(t, o, gid)] = xcount.get((t, o, gid), 0) + 1
    return True


def _mode_of(agg: Aggregate, t: int, a: Assign) -> int | None:
    """The innermost mode of type t one domain of whose level holds all of
    ``a``'s GPUs (None: none does)."""
    p = agg.p
    gs = [g for g, _ in a.gpus]
    for m, lv in enumerate(agg.types[t].modes):
        if lv == CLUSTER:
            return m
        dom = p.domain[lv]
        if len({int(dom[g]) for g in gs}) == 1:
            return m
    return None


def solution_to_columns(agg: Aggregate, assign: dict[int, Assign]):
    """Per-server patterns (with the solution's own layout) and spread counts
    of a concrete solution over the pending jobs: ``(patterns by server,
    x counts)``, or None when the solution cannot be expressed (rounded spread
    shares)."""
    per_server: dict[int, dict[int, int]] = {}
    lay: dict[int, list] = {}
    xcount: dict[tuple[int, int, int], int] = {}
    for j, a in assign.items():
        t = agg.type_of.get(j)
        if t is None:
            continue
        _server_parts(agg, j, a, t, option_of(agg.p, j, a), per_server, lay, xcount)
    pats: dict[int, Pattern] = {}
    for s, counts in per_server.items():
        c = agg.class_of[s]
        C, M, _ = agg.cap[c]
        items = agg.items[c]
        if (sum(items[i].cpu * n for i, n in counts.items()) > C
                or sum(items[i].mem * n for i, n in counts.items()) > M):
            return None
        pats[s] = laid_pattern(agg, c, counts, tuple(lay[s]))
    return pats, xcount


def decode(agg: Aggregate, z: dict[tuple[int, int], int], pool: list[list[Pattern]],
           x: dict[tuple[int, int, int], int]) -> dict[int, Assign]:
    """Assignments from pattern counts ``z[(c, p)]`` and spread job counts
    ``x[(t, o, group)]`` (see the module notes)."""
    p = agg.p
    queue = {t.index: deque(t.jobs) for t in agg.types}
    out: dict[int, Assign] = {}
    units: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for c in range(agg.K):
        servers = iter(agg.classes[c])
        for pi in sorted(k for (cc, k) in z if cc == c):
            for _ in range(z[(c, pi)]):
                s = next(servers, None)
                if s is None:
                    raise ValueError("more patterns than servers")
                for i, offs in pool[c][pi].layout:
                    it = agg.items[c][i]
                    if it.kind == "unit":
                        units.setdefault((it.t, it.o, it.group), []).append(
                            (s, agg.gpu_of(s, offs[0])))
                        continue
                    if not queue[it.t]:
                        continue
                    j = queue[it.t].popleft()
                    if p.jobs[j].gpus == 0:
                        out[j] = p.make_cpu_assign(j, s, it.o)
                    else:
                        out[j] = p.make_assign(j, [agg.gpu_of(s, k) for k in offs], it.o)
    place = [p.arrays.srv_domain[lv] for lv in outer_levels(p.levels)]
    for (t, o, gid), n in sorted(x.items()):
        # the slots of one domain of each level next to each other: runs of
        # g_t slots span the fewest domains
        slots = sorted(units.get((t, o, gid), []),
                       key=lambda u: tuple(int(d[u[0]]) for d in place) + u)
        g = agg.types[t].gpus
        for run in _runs(agg, t, slots, g)[:n]:
            if not queue[t]:
                break
            j = queue[t].popleft()
            out[j] = p.make_assign(j, run, o)
    return out


def _runs(agg: Aggregate, t: int, slots: list, g: int) -> list[list[int]]:
    """The slots cut into runs of g GPUs, in order; for a type the model
    relaxed (`Aggregate.relaxed`), each run inside one domain of its
    locality level."""
    lv = agg.types[t].relaxed
    if lv is None:
        return [[gg for _, gg in slots[r * g:(r + 1) * g]] for r in range(len(slots) // g)]
    dom = agg.p.arrays.srv_domain[lv]
    by: dict[int, list[int]] = {}
    for s, gg in slots:
        by.setdefault(int(dom[s]), []).append(gg)
    return [gs[r * g:(r + 1) * g] for gs in by.values() for r in range(len(gs) // g)]


def check_assign(problem: Problem, assign: dict[int, Assign]) -> bool:
    """Capacities left by the running jobs hold (CPU and memory per server,
    milli per GPU)."""
    cpu = problem.free_cpu.copy()
    mem = problem.free_mem.copy()
    gfree = problem.gpu_free.copy()
    for a in assign.values():
        for s, v in a.cpu:
            cpu[s] -= v
        for s, v in a.mem:
            mem[s] -= v
        for g, m in a.gpus:
            gfree[g] -= m
    return bool((cpu >= 0).all() and (mem >= 0).all() and (gfree >= 0).all())


def true_value(problem: Problem, assign: dict[int, Assign]) -> float:
    """The objective recomputed from the placements (as ``allocate`` does)."""
    return float(sum(problem.value_of(j, a) for j, a in assign.items()))


__all__ = ["check_assign", "decode", "solution_to_columns", "true_value"]


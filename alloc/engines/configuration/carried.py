"""Patterns carried from one scheduler-loop round to the next.

A loop's rounds differ by a few percent of their jobs and servers, and job
types and server classes recur: the same free shape of a server, the same
job shape.  At the end of a round the driver keeps its pool's patterns in
the loop's carry by *keys that survive the round*: the class's key (free
CPU, free memory, GPU type, domain, canonical GPU shape: `Aggregate.class_keys`)
and each item's kind, job type key
([`alloc.problem.job_type_key`][alloc.problem.job_type_key]), option and,
for a unit, its mode and its spread group's domain.  The next round maps them back onto its
own classes and items; a pattern whose class or items are gone is dropped.
One that maps keeps its layout (canonical GPU offsets: the class key holds
the canonical shape, the item key the item's CPU, memory, GPUs and level, so
the same offsets fit) and takes this round's item values (`laid_pattern`):
a carried pattern is a column like any other, it changes which columns the
restricted LP starts with, never what is feasible or what a bound says.
"""
from __future__ import annotations

from ...problem import job_type_key
from .aggregate import Aggregate, Pattern
from .patterns import laid_pattern

#: The carry's key for the kept patterns.
POOL = "exact: patterns"
#: The most patterns kept from a round (those of the final LP's solution
#: first): 1,000 made the next round's first LP too slow for a 1 s round at
#: 1,000 servers on a loaded machine (0 column generation rounds in 4 of 60).
KEEP = 300


def _type_keys(agg: Aggregate) -> list:
    return [job_type_key(agg.p, t.rep) for t in agg.types]


def _group_rack(agg: Aggregate, gid: int):
    """Where a spread group lies: (mode level, domain id), the domain None
    for the whole cluster (the cluster is the same object across the
    rounds a pattern is carried over, so domain ids keep their meaning)."""
    _, lv, d = agg.group_place[gid]
    return (lv, d)


def keep_patterns(agg: Aggregate, pool: list[list[Pattern]], first=()) -> None:
    """Keep ``pool``'s patterns (those in ``first`` -- ``(class, pool
    index)`` pairs -- ahead of the rest, at most `KEEP`) in the problem's
    carry for the next round."""
    carry = agg.p.carry
    if carry is None:
        return
    tkeys = _type_keys(agg)
    order = list(dict.fromkeys(list(first) + [(c, k) for c in range(agg.K)
                                              for k in range(len(pool[c]))]))[:KEEP]
    keys: dict[tuple[int, int], tuple] = {}
    kept = []
    for c, k in order:
        out = []
        for i, n in pool[c][k].counts:
            key = keys.get((c, i))
            if key is None:
                it = agg.items[c][i]
                rack = _group_rack(agg, it.group) if it.kind == "unit" else None
                key = keys[(c, i)] = (it.kind, tkeys[it.t], it.o, rack, it.mode)
            out.append((i, key, n))
        kept.append((agg.class_keys[c], tuple(out), pool[c][k].layout))
    carry.keep(POOL, (agg.p.cluster, agg.p.objective.name, kept))


def carried_patterns(agg: Aggregate, deadline) -> list[Pattern]:
    """The last round's patterns that map onto this round's classes and
    items (see the module notes), laid out afresh; none without a carry or
    when the cluster or the objective changed."""
    carry = agg.p.carry
    kept = carry.take(POOL) if carry is not None else None
    if kept is None or kept[0] is not agg.p.cluster or kept[1] != agg.p.objective.name:
        return []
    cls = {key: c for c, key in enumerate(agg.class_keys)}
    types = {key: t for t, key in enumerate(_type_keys(agg))}
    out = []
    for ckey, counts, lay in kept[2]:
        c = cls.get(ckey)
        if c is None or deadline.expired():
            continue
        new, index = {}, {}
        for old, (kind, tkey, o, rack, mode), n in counts:
            t = types.get(tkey)
            i = None if t is None else agg.item_index[c].get(
                (kind, t, o) if not mode else (kind, t, o, mode))
            if i is None or (kind == "unit" and _group_rack(agg, agg.items[c][i].group) != rack):
                break
            new[i], index[old] = n, i
        else:
            out.append(laid_pattern(agg, c, new, tuple((index[i], g) for i, g in lay)))
    return out


__all__ = ["KEEP", "POOL", "carried_patterns", "keep_patterns"]

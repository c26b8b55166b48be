r"""Compaction of preferred jobs: the fewest levels climbed above a job's
preferred level, at no loss of value.

A placed preferred job whose GPUs span several nodes of its preferred level
moves into one node of that level
(`alloc.topology.one_domain`: best fit) when one holds it at no loss of
value -- GPUs of types it allows and at least as fast as the slowest it has.
Repeated until nothing moves (each move lowers the levels climbed), so the
answer has the property `alloc.testing.topology` checks: no preferred job
spans several nodes of its level while one node could take it.

`compact` does it on a greedy state; `compacted` on a solver's answer (its
pending jobs on a greedy state over the running jobs) -- the last step of
every solver that declares ``preferred``.  `climbs` counts the levels an
answer's jobs climb above their preferred level (the exact driver compares
answers of equal value by it).
"""
from __future__ import annotations

from typing import Sequence

from ...model import MILLI
from ...problem import Assign, Problem, option_of
from ...topology import climb, one_domain, span_level_of, usable_per_server
from .descent import allowed_servers
from .state import State


def spans(p: Problem, a: Assign, level: str) -> int:
    """Nodes of ``level`` that assignment ``a``'s GPUs lie under."""
    dom = p.domain.get(level)
    if dom is None:
        return 1
    return len({int(dom[g]) for g, _ in a.gpus})


def preferred_jobs(p: Problem, jobs: Sequence[int]) -> list[int]:
    """Those of ``jobs`` with a preferred level that can span several of its nodes."""
    out = []
    for j in jobs:
        job = p.jobs[j]
        pref = job.preferred
        if pref is None or job.gpu_milli < MILLI or not job.gpus and not job.elastic:
            continue
        if job.guaranteed or job.gpu_mem is not None or job.gpu_compute is not None:
            continue      # its tenant's cells place it / its GPU memory or compute binds
        if job.locality is not None and climb(p.cluster, pref, job.locality) == 0:
            continue      # its locality is its preferred level or lies inside it
        out.append(j)
    return out


def relocate(st, j: int, level: str, blocked: Sequence[int] = ()) -> Assign | None:
    """Job j (placed in ``st``) inside one node of ``level`` at no loss of
    value, or None; ``st`` unchanged either way.  ``blocked``: GPUs it may
    not take (those holding a zero-milli share: their memory is in use)."""
    p = st.p
    old = st.assign[j]
    o = st.option.get(j, 0)
    n = len(old.gpus)
    prof = p.jobs[j].profile
    slow = min((prof.speed(p.cluster.servers[int(p.gpu_server[g])].gpu_type)
                for g, _ in old.gpus), default=None) if prof is not None else None
    st.remove(j)
    try:
        opt = p.options[j][o]
        per_c, per_m = -(-opt.cpu // n), -(-opt.mem // n)
        free = st.gfree
        if len(blocked):
            free = free.copy()
            free[list(blocked)] = 0
        u = usable_per_server(p.cluster, free, st.cpu, st.mem, per_c, per_m,
                              allowed_servers(p, j, slow))
        gpus = one_domain(p.cluster, level, n, u, free)
        new = None
        if gpus is not None:
            a = p.make_assign(j, gpus, o)
            if all(st.cpu_l[s] >= c for s, c in a.cpu) and \
                    all(st.mem_l[s] >= m for s, m in a.mem) and \
                    p.value_of(j, a) >= p.value_of(j, old) - 1e-12:
                new = a
    finally:
        st.place(j, old, o)
    return new


def compact(st, jobs: Sequence[int] | None = None, deadline=None) -> int:
    """Move placed preferred jobs into one node of their preferred level
    where one holds them at no loss of value, until none moves (see the
    module notes); returns the moves made.  ``jobs``: the jobs it may move
    (default: every job placed in ``st``)."""
    p = st.p
    cand = preferred_jobs(p, list(st.assign) if jobs is None else
                          [j for j in jobs if j in st.assign])
    if not cand:
        return 0
    blocked: list[int] | None = None
    moved = 0
    changed = True
    while changed:
        changed = False
        for j in cand:
            if deadline is not None and deadline.expired():
                return moved
            a = st.assign.get(j)
            pref = p.jobs[j].preferred
            if a is None or len(a.gpus) < 2 or spans(p, a, pref) < 2:
                continue
            if blocked is None:       # GPUs holding a zero-milli share, found once
                blocked = sorted({g for x in list(p.fixed.values()) + list(st.assign.values())
                                  for g, m in x.gpus if m == 0})
            new = relocate(st, j, pref, blocked)
            if new is not None:
                o = st.option.get(j, 0)
                st.remove(j)
                st.place(j, new, o)
                moved += 1
                changed = True
    return moved


def climbs(p: Problem, assign: dict) -> int:
    """Levels climbed above their preferred level by the jobs of ``assign``, in all."""
    tot = 0
    for j, a in assign.items():
        pref = p.jobs[j].preferred
        if pref is not None and len(a.gpus) > 1:
            tot += climb(p.cluster, pref, span_level_of(p.cluster, [g for g, _ in a.gpus]))
    return tot


def compacted(p: Problem, assign: dict, deadline=None) -> dict:
    """``assign`` (the pending jobs' assignments) after `compact`, on a greedy
    state over the running jobs; ``assign`` itself when no job prefers a level."""
    movable = [j for j in preferred_jobs(p, list(assign)) if j not in p.fixed]
    if not movable:
        return assign
    st = State(p)
    kept = {}
    for j, a in assign.items():
        fixed = p.fixed.get(j)
        if fixed is not None:
            if a is fixed or a == fixed:
                kept[j] = a
                continue
            st._apply(fixed, 1)       # a running job moved: its old place is free
        st.place(j, a, option_of(p, j, a))
    if compact(st, movable, deadline=deadline):
        return {**kept, **st.assign}
    return assign


__all__ = ["climbs", "compact", "compacted", "preferred_jobs", "relocate", "spans"]

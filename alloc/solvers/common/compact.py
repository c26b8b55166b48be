"""Compaction of a solver's answer: its preferred jobs moved into one node
of their preferred level where one holds them at no loss of value
(`alloc.solvers.common.topo.compact`), on a greedy state over the running
jobs -- the last step of every solver that declares ``preferred``."""
from __future__ import annotations

from ...problem import Problem, option_of
from .greedy import State
from .topo import compact, preferred_jobs


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


__all__ = ["compacted"]

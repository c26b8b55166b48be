r"""Fewest stops across the jobs of one pass: a running job stopped for one
job that the pass did not need to stop is spared.

The cell engine picks each job's victims alone, as few as that job needs
([`Engine.fewer_victims`][alloc.engines.cells.engine.Engine.fewer_victims]),
in the order the jobs come.  Across jobs that can waste work: a guaranteed
job of one GPU stops a one-GPU job ``a`` of its tenant (the smallest
victim), the next one needs a GPU too and stops a two-GPU job ``b``; one of
``b``'s GPUs then stays free (or goes to opportunistic work) while ``a``,
which fitted beside them, waits.  Stopping ``b`` alone served both.

The pass is run again with one victim spared at a time -- the victim last
in the engine's `stop_order` (the one that should stop last) first, only
victims whose GPUs the pass left over could hold: with ``F`` the GPUs its
victims held and ``U`` those the jobs placed over victims now use, victim
``r`` is tried when $|F \setminus U| \ge$ ``r``'s GPUs.  The spare is
kept when the pass, with ``r`` off the victims, places every guaranteed
job it placed before and stops only jobs it stopped before (not ``r``):
the guarantee first, and a running job kept rather than an opportunistic
one started in its room (HiveD's order of work).  Otherwise the pass is
run as it was.  Each try is a rollback of the engine's journal and
one pass; the tries stop when the deadline leaves less than twice the
first pass's time.
"""
from __future__ import annotations

import time
from typing import Callable, Collection

from ...deadline import Deadline
from .engine import Engine


def fewest_stops(eng: Engine, place: Callable[[], Collection[int]],
                 served: Callable[[], Collection[int]], deadline: Deadline) -> set[int]:
    """Run ``place`` (one pass placing jobs on ``eng``; returns the running
    jobs it stopped) and spare the victims it did not need (module notes).

    Parameters
    ----------
    eng : Engine
        The engine, in the state the pass starts from; left in the state of
        the pass kept.
    place : callable
        The pass: places jobs on ``eng``, honouring ``eng.spared`` (jobs no
        job may stop), and returns the running jobs it stopped.  Deterministic
        for the same state and ``eng.spared``.
    served : callable
        The jobs the last pass placed over victims.
    deadline : Deadline
        The caller's deadline.

    Returns
    -------
    set of int
        The running jobs the kept pass stopped.

    Examples
    --------
    Tenant a's one server of 3 GPUs runs its guaranteed jobs a (1 GPU) and b
    (2 GPUs); x and y (1 GPU, higher priority) arrive.  Stopping b serves
    both (x alone would stop a, the smallest victim, and y then b):

    >>> from alloc import Cell, Cluster, Job, Server, Tenant, Placement, GpuShare, allocate
    >>> c = Cluster((Server("s0", 8000, 8000, 3, "V100"),),
    ...             tenants={"a": Tenant("a", (Cell("server", 1),))})
    >>> on = lambda j, *g: Placement(j, tuple(GpuShare(f"s0/gpu{k}", 1000) for k in g),
    ...                              {"s0": 1}, {"s0": 1})
    >>> kw = dict(cpu=1, mem=1, tenant="a", guaranteed=True)
    >>> jobs = [Job("a", 1, current=on("a", 0), **kw), Job("b", 2, current=on("b", 1, 2), **kw),
    ...         Job("x", 1, priority=1, **kw), Job("y", 1, priority=1, **kw)]
    >>> r = allocate(c, jobs, solver="hived")
    >>> r.preempted, sorted(p.job for p in r.placements)
    (('b',), ['a', 'x', 'y'])
    """
    t0 = time.perf_counter()
    mark = eng.checkpoint()
    victims = set(place())
    took = time.perf_counter() - t0
    spared: set[int] = set()
    for r in _candidates(eng, victims, served()):
        if deadline.left() < 2 * took:
            break
        placed = {j for j in eng.assign if eng.job(j).guaranteed} | {r}
        eng.rollback(mark)
        mark = eng.checkpoint()
        eng.spared = spared | {r}
        again = set(place())
        if placed <= eng.assign.keys() and again <= victims - {r}:
            spared.add(r)
            victims = again
            continue
        eng.rollback(mark)
        mark = eng.checkpoint()
        eng.spared = set(spared)
        victims = set(place())
    eng.keep(mark)
    eng.spared = set()
    return victims


def _candidates(eng: Engine, victims: Collection[int], served: Collection[int]) -> list[int]:
    """The victims the pass may not have needed, the last in `stop_order`
    first (module notes)."""
    if len(victims) < 2:
        return []
    p = eng.p
    freed = {g for r in victims for g, _ in p.fixed[r].gpus}
    used = {g for j in served if j in eng.assign for g, _ in eng.assign[j].gpus}
    left = len(freed - used)
    return [r for r in sorted(victims, key=eng.stop_order, reverse=True)
            if len(p.fixed[r].gpus) <= left]


__all__ = ["fewest_stops"]

"""The hived engine kept across the rounds of a scheduler loop.

A round of ``hived`` starts from an [`Engine`][alloc.solvers.common.cells.Engine]
holding the running jobs where they run, with their tenants' cells bound
([`restore_running`][alloc.solvers.common.cells.restore_running]).  In a
scheduler loop (a problem compiled with a carry, `alloc.carry`) the engine of
the last round is kept instead of rebuilt:

1. every change the last round made after its start (placements,
   preemptions, moves, cells bound and released) was journalled
   ([`Engine.checkpoint`][alloc.solvers.common.cells.Engine.checkpoint]) and
   is rolled back: the engine holds the last problem's running jobs again;
2. the running jobs gone since (`Changes.removed`: finished, stopped,
   moved, failed, changed) are taken out, the engine's job indices move to
   the new problem (`Changes.kept`), and the new running jobs
   (`Changes.added`) are put where they run;
3. when a guaranteed job came or went, the binding is inferred again from
   the guaranteed GPUs in use and the cells bound afresh
   ([`rebind`][alloc.solvers.common.cells.rebind]), as `restore_running`
   does.

The engine then holds what `restore_running` builds from the running jobs:
the same free milli, CPU, memory and GPU memory, the same jobs on each GPU,
the same bound cells, buddy free lists and unbound virtual cells, so the
round decides the same.  What it cannot apply -- a running job that does not
fit, no binding found, other settings, a problem that does not follow the
kept one -- falls back to the rebuild.
"""
from __future__ import annotations

from ...deadline import Deadline
from ...problem import Problem
from ...tenancy import infer_binding
from .cells import Engine, _guaranteed_gpus, current_assign, rebind, restore_running

#: where the engine is kept in the carry
KEY = "hived-engine"


class Kept:
    """An engine holding the running jobs of problem ``stamp`` plus the
    journalled changes of that problem's round; ``settings`` are the options
    it was built with (GPU memory capacities, co-location)."""
    __slots__ = ("stamp", "engine", "settings")

    def __init__(self, stamp: int, engine: Engine, settings: tuple):
        self.stamp, self.engine, self.settings = stamp, engine, settings


def start(p: Problem, settings: tuple, deadline: Deadline) -> tuple[Engine, list[int]]:
    """The engine holding ``p``'s running jobs and the running jobs that
    could not stay (see the module notes); ``settings`` is
    ``(gpu_mem_capacity, colocate)``."""
    carry, ch = p.carry, p.changes
    kept = carry.take(KEY) if carry is not None else None
    if kept is not None and ch is not None and kept.stamp == ch.since \
            and kept.settings == settings and type(kept.engine) is Engine:
        eng = kept.engine
        eng.rollback(0)
        if _advance(eng, p, deadline):
            return eng, []
    eng = Engine(p, settings[0], settings[1])
    return eng, restore_running(eng, p.running, deadline)


def keep(p: Problem, eng: Engine, settings: tuple) -> None:
    """Keep the engine of ``p``'s round for the next one: it must hold ``p``'s
    running jobs (none homeless) and the round's changes journalled since a
    checkpoint opened on them (mark 0)."""
    if p.carry is not None:
        p.carry.keep(KEY, Kept(p.stamp, eng, settings))


def _advance(eng: Engine, p: Problem, deadline: Deadline) -> bool:
    """Move the engine from the last problem's running jobs to ``p``'s; False
    when it cannot (the engine is then left to be dropped)."""
    ch = p.changes
    assert ch is not None            # a problem compiled with a carry
    old = eng.p
    churn = False
    for k, job, _ in ch.removed:
        if k not in eng.assign:
            return False
        churn = churn or job.guaranteed
        eng.remove(k, release=False)
    to_new = {k: j for j, k in ch.kept.items()}
    if len(to_new) != len(eng.assign) or not all(k in eng.assign for k in to_new):
        return False
    eng.assign = {to_new[k]: a for k, a in eng.assign.items()}
    eng.size = {to_new[k]: n for k, n in eng.size.items()}
    eng.p = p
    del old
    for j in ch.added:
        a = current_assign(p, j)
        if a is None or any(eng.gfree[g] < m for g, m in a.gpus) or \
                any(eng.cpu[s] < v for s, v in a.cpu) or any(eng.mem[s] < v for s, v in a.mem):
            return False
        churn = churn or p.jobs[j].guaranteed
        eng.place(j, a)
    if churn:
        used = _guaranteed_gpus(eng)
        binding = infer_binding(p.cluster, used, deadline=deadline) if used else {}
        if binding is None:
            return False
        rebind(eng, binding)
    return True


__all__ = ["KEY", "Kept", "keep", "start"]

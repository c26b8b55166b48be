"""The hived engine kept across the rounds of a scheduler loop.

A round of ``hived`` starts from an [`Engine`][alloc.engines.cells.engine.Engine]
holding the running jobs where they run, with their tenants' cells bound
([`restore_running`][alloc.engines.cells.engine.restore_running]).  In a
scheduler loop (a problem compiled with a carry, `alloc.carry`) the engine of
the last round is kept instead of rebuilt:

1. every change the last round made after its start (placements,
   preemptions, moves, cells bound and released) was journalled
   ([`Engine.checkpoint`][alloc.engines.cells.engine.Engine.checkpoint]).
   When it bound or released a cell it is rolled back: the engine holds
   the last problem's running jobs again.  Otherwise only the jobs the
   round touched are settled (`settle`): a job it placed that now runs
   there (`Changes.added`, the same assignment) stays, a running job it
   moved or stopped that still runs (`Changes.kept`) goes back where it
   ran, every other job it placed is taken out -- the same state as the
   rollback followed by step 2, without undoing and redoing the round's
   placements;
2. the running jobs gone since (`Changes.removed`: finished, stopped,
   moved, failed, changed) are taken out, the engine's job indices move to
   the new problem (`Changes.kept`), and the new running jobs
   (`Changes.added`) not settled in place are put where they run;
3. when a guaranteed job came or went, the binding is inferred again from
   the guaranteed GPUs in use and the cells bound afresh
   ([`rebind`][alloc.engines.cells.engine.rebind]), as `restore_running`
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
from ...problem import Assign, Problem
from ...tenancy import infer_binding
from .engine import Engine, _guaranteed_gpus, current_assign, rebind, restore_running

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


def settle(eng: Engine, p: Problem) -> tuple[dict[int, int], set[int]]:
    """Close the last round's journal (see the module notes, step 1):
    rolled back when the round bound or released a cell, else its jobs
    settled.  Returns the jobs of ``p.changes.added`` left where they run
    (new index -> the last problem's index) and the last problem's indices
    settled (taken out or put back where they ran)."""
    log = eng._log if eng._log is not None else []
    if any(op[0] != "place" and op[0] != "remove" for op in log):
        eng.rollback(0)
        return {}, set()
    eng._log, eng._marks = None, 0
    ran: dict[int, Assign | None] = {}   # the touched jobs: the last problem's placement, or None
    for op in log:
        if op[1] not in ran:
            ran[op[1]] = op[2] if op[0] == "remove" else None
    if not ran:
        return {}, set()
    ch = p.changes
    assert ch is not None            # settle follows a round's changes
    old_jobs, index, kept, added = eng.p.jobs, p.job_index, ch.kept, set(ch.added)
    held: dict[int, int] = {}
    for k, was in ran.items():
        now = eng.assign.get(k)
        j = index.get(old_jobs[k].id)
        if j is not None and kept.get(j) == k:
            want, j = was, None              # still running where it ran
        elif j is not None and j in added:
            want = current_assign(p, j)
        else:
            want = j = None
        if now is not None and want is not None and now == want:
            if j is not None:
                eng.assign[k] = want         # the problem's own object
                held[j] = k
            continue
        if now is not None:
            eng.remove(k, release=False)
        if j is None and want is not None:
            eng.place(k, want)
    return held, set(ran)


def _advance(eng: Engine, p: Problem, deadline: Deadline) -> bool:
    """Move the engine from the last problem's running jobs and its round's
    changes (`settle`) to ``p``'s; False when it cannot (the engine is then
    left to be dropped)."""
    ch = p.changes
    assert ch is not None            # a problem compiled with a carry
    held, done = settle(eng, p)
    old = eng.p
    churn = False
    for k, job, _ in ch.removed:
        churn = churn or job.guaranteed
        if k in done:
            continue
        if k not in eng.assign:
            return False
        eng.remove(k, release=False)
    # the job indices move to p (every held job named once: a bijection)
    was = eng.assign
    if len(ch.kept) + len(held) != len(was):
        return False
    try:
        eng.assign = {j: was[k] for j, k in ch.kept.items()}
        eng.assign.update((j, was[k]) for j, k in held.items())
    except KeyError:
        eng.assign = was
        return False
    if len(eng.assign) != len(was):
        return False
    eng.p = p
    del old
    for j in ch.added:
        if j in held:
            churn = churn or p.jobs[j].guaranteed
            continue
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


__all__ = ["KEY", "Kept", "keep", "settle", "start"]

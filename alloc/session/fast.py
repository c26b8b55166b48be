r"""The one-new-job round: place a lone pending job without rebuilding the round.

A [`Session`][alloc.session.Session] round compiles every job it holds,
runs the solver, builds every placement and checks them all: its cost grows
with the running jobs.  When a round's input differs from the last round's
answer by one pending job alone, a solver that declares it can answer from
the state it carried out of that round (`alloc.carry`): the round then costs
what placing one job costs.

The round is *eligible* when, since the last round committed,

* the running jobs are exactly those it left running (the session counts
  every change to a running job's placement: a completion, a stop, a
  preemption, a failure, a job submitted running -- any of them makes the
  next round a full one);
* the cluster is the same object (no server added or failed), no server is
  drained now or was in the last round, no job is held back by the scheduler;
* exactly one job waits (the last submitted);
* the round may neither move nor stop a running job (``max_moves == 0``,
  no preemption rule, no tenants);
* the last round's answer passed the final check with nothing declared that
  its partial form leaves to the full one (`alloc.recheck.Checked.simple`);
* the solver's function carries ``one_job(problem, carry, *, deadline,
  seed, **options)``, which returns the answer the full round gives for a
  problem of that one job on the cluster, the carried state standing for the
  running jobs -- or None when it cannot (nothing carried).

The answer is then the last round's placements plus the job's
(`alloc.problem.Problem.placement` on a one-job problem: the same code
builds it), or the job unplaced with the line `alloc.waiting` gives it on
the room the running jobs leave; the value is the last value plus the job's.
It passes the final check in its incremental form
(`alloc.recheck`): the new placement's own problems, and the load of every
GPU and server it touches against capacity, on top of the checked loads; the
job's id must be new to the record.  Everything else is the very state the
last check passed.  Any doubt (a check that fails, a placement on no GPU of a
GPU job) falls back to the full round, which raises as usual.

``tests/test_session_fast.py`` runs random sequences of rounds through both
paths and compares every answer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..deadline import Deadline
from ..model import Allocation, Cluster


@dataclass(frozen=True)
class Mark:
    """What the last committed round left: its round number, the session's
    count of running-job changes then, the cluster object, and how many jobs
    run."""
    round: int
    rev: int
    cluster: Cluster
    running: int


def mark(session: Any, alloc: Allocation) -> Mark | None:
    """The mark of the round that just committed ``alloc``; None when it ran
    with servers closed (the solver then saw a reduced cluster, and what it
    carried is told in the reduced one's terms)."""
    if session._drained or session._failed:
        return None
    return Mark(session._round, session._rev, session._cluster, len(alloc.placements))


def _pending(session: Any) -> Any:
    """The lone waiting job when the round is eligible (module notes), else None."""
    m: Mark | None = session._fast_mark
    last = session._last
    if (m is None or last is None or m.round != session._round or m.rev != session._rev
            or m.cluster is not session._cluster or session._drained or session._failed
            or session._held or session.max_moves != 0 or session.preempt_rule is not None
            or session._cluster.tenants or len(session._jobs) != m.running + 1):
        return None
    job = session._jobs[next(reversed(session._jobs))]
    if job.current is not None or job.guaranteed or job.tenant is not None:
        return None
    return job


def one_job_round(session: Any, deadline: Deadline) -> tuple[Allocation, dict, Any] | None:
    """The answer of an eligible round (module notes) as ``(allocation,
    timings, started placement or None)``, or None for a full round.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Session
    >>> s = Session(Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),)), solver="fgd")
    >>> s.submit(Job("a", 1, cpu=1000, mem=1000))
    >>> s.step().timings.get("one_job")       # the first round is a full one
    >>> s.submit(Job("b", 1, cpu=1000, mem=1000))
    >>> r = s.step()
    >>> r.timings["one_job"], [p.job for p in r.start], len(r.allocation.placements)
    (True, ['b'], 2)
    """
    job = _pending(session)
    if job is None:
        return None
    info = session._info
    hook = getattr(info.solve, "one_job", None)
    carry = session._carry
    rec = carry.checked
    cluster = session._cluster
    if hook is None or rec is None or not rec.simple or rec.cluster is not cluster \
            or job.id in rec.by_id:
        return None
    from ..problem import compile_problem
    from ..recheck import _declares, _unresolved
    if _declares((job,), ()) or _unresolved((job,)):
        return None
    t0 = time.perf_counter()
    problem = compile_problem(cluster, [job], session._objective, session.name)
    t1 = time.perf_counter()
    sol = None
    if 0 not in problem.reasons:
        sol = hook(problem, carry, deadline=deadline, seed=session.seed, **session._options)
        if sol is None:
            return None
    t2 = time.perf_counter()
    last = session._last.allocation
    a = sol.assign.get(0) if sol is not None else None
    stats = dict(sol.stats) if sol is not None else {}
    unplaced: tuple[str, ...] = ()
    reasons: dict[str, str] = {}
    if a is None:
        placement = None
        why = problem.reasons.get(0)
        if why is None:
            why = _reason(session, problem, job)
        placements, unplaced, reasons, value = last.placements, (job.id,), {job.id: why}, \
            last.value
    else:
        placement = problem.placement(0, a)
        placements = last.placements + (placement,)
        value = last.value + problem.objective.value(job, placement)
    if not _check(rec, cluster, job, placement):
        return None
    t3 = time.perf_counter()
    timings = {"one_job": True, "compile_s": t1 - t0, "solve_s": t2 - t1, "check_s": t3 - t2,
               "attempts": 1, "held_out": 0, "held_out_s": 0.0}
    alloc = replace(last, placements=placements, unplaced=unplaced, moved=(), preempted=(),
                    reasons=reasons, value=value, stats=stats, wall_time_s=t3 - t0)
    return alloc, timings, placement


def _reason(session: Any, problem: Any, job: Any) -> str:
    """The line `alloc.waiting` gives ``job`` on the room the running jobs leave."""
    from ..waiting import outside_reasons
    free = session._live_room().free()
    info = session._info
    return outside_reasons(problem, (free.gpu, free.C, free.M), [job], info.capabilities,
                           info.name)[0]


def _check(rec: Any, cluster: Cluster, job: Any, p: Any) -> bool:
    """The incremental final check of the answer that adds ``p`` (or nothing)
    for the new ``job`` to the checked record ``rec``; True when it passes
    (``rec`` then holds the answer), False (``rec`` unchanged) when the full
    round must say."""
    from ..recheck import _add, _own, _within
    if p is not None:
        if p.job != job.id or p.job in rec.placed:
            return False
        bad, known = _own(cluster, job, p)
        if bad or not known:
            return False
        dg: dict[str, int] = {}
        dc: dict[str, int] = {}
        dm: dict[str, int] = {}
        _add((p,), 1, dg, dc, dm)
        if not _within(cluster, rec, dg, dc, dm):
            return False
        for delta, total in ((dg, rec.gpu), (dc, rec.cpu), (dm, rec.mem)):
            for k, v in delta.items():
                total[k] = total.get(k, 0) + v
        rec.placed[p.job] = p
    rec.by_id[job.id] = job
    return True


__all__ = ["Mark", "mark", "one_job_round"]

r"""``gandiva``: Gandiva's reactive placement (Xiao et al., OSDI'18, section
4.2.1 and Algorithm 1) as a solver, plus the placements its scheduler plans.

Server *height* and *affinity* are those of
[ServerView][alloc.solvers.gandiva.view.ServerView]: allocated GPUs (running
jobs and jobs time-sliced there but suspended) over GPUs, and the GPU count
of the jobs on the server.

Reactive placement of a pending job needing $g$ GPUs (Algorithm 1),
in the problem's rank order (the caller's order, else priority then input
order), on servers of a GPU type the job allows whose free milli-cores and
MiB hold its request:

1. a server of affinity $g$ with $g$ whole free GPUs, least
   loaded (lowest height) first -- *same affinity*;
2. else an idle server (nothing on it, affinity 0) with $g$ free GPUs,
   lowest index first -- *unallocated*;
3. else any server with $g$ free GPUs, least loaded first -- *relaxed*;
   for a multi-GPU job without a locality level that no server holds, the
   servers with the most free GPUs together (fewest servers) -- *spread*,
   the fragmented placement that migration can later undo;
4. else, with ``oversubscribe``, the least loaded server of affinity
   $g$ with at least $g$ GPUs: the job is bound to it and
   time-sliced there (it holds nothing until its slice; the binding is in
   ``stats["gandiva"]["bound"]``) -- *over-subscribed*;
5. else it stays queued.

Within a server a job takes its lowest-index whole free GPUs; a job with a
milli-GPU share first takes the fullest GPU whose free share holds it.  A
CPU-only job goes to the least loaded server whose CPU and memory hold it.

What Gandiva's scheduler over time (the ``gandiva`` mechanisms of
`alloc.sched.gandiva`) decides, the solver carries out first:

* ``plan`` (job id -> GPU ids): running jobs move there when the call allows
  moves (migration, grow, shrink), then pending jobs start there (resumes
  of time-sliced jobs, packings), in rank order, before any job is placed
  by Algorithm 1; an entry whose GPUs are not free is left undone and named
  in ``stats["gandiva"]["missed"]``;
* ``bound`` (job id -> server id): pending jobs time-sliced on a server;
  they count in its height and affinity and stay suspended unless planned.

Running jobs not planned stay where they run.  Each step is linear in the
jobs plus one pass over the servers per job placed by Algorithm 1.
"""
from __future__ import annotations

import time
from typing import Any, Mapping

from ...deadline import Deadline
from ...model import MILLI, Status
from ...problem import Assign, Problem, Solution
from .view import ServerView

#: Jobs between two deadline checks.
CHECK_EVERY = 32
#: The rules of Algorithm 1, in order, as reported in ``stats``.
RULES = ("same-affinity", "unallocated", "relaxed", "spread", "over-subscribed", "queued")


def _indices(problem: Problem, bound, plan) -> tuple[dict[int, int], dict[int, list[int]]]:
    """``bound`` and ``plan`` over indices; unknown job ids are ignored (a
    loop's tables may name jobs already gone), unknown servers or GPUs raise."""
    jidx, c = problem.job_index, problem.cluster
    b: dict[int, int] = {}
    for jid, sid in (bound or {}).items():
        j = jidx.get(jid)
        if sid not in c.server_index:
            raise ValueError(f"bound[{jid!r}]: unknown server {sid!r}")
        if j is not None and problem.jobs[j].current is None and problem.jobs[j].gpus:
            b[j] = c.server_index[sid]
    pl: dict[int, list[int]] = {}
    for jid, gpus in (plan or {}).items():
        j = jidx.get(jid)
        if isinstance(gpus, str) or not all(isinstance(g, str) for g in gpus):
            raise ValueError(f"plan[{jid!r}]: expected a list of GPU ids, got {gpus!r}")
        bad = [g for g in gpus if g not in c.gpu_index]
        if bad:
            raise ValueError(f"plan[{jid!r}]: unknown GPU {bad[0]!r}")
        if j is not None:
            pl[j] = [c.gpu_index[g] for g in gpus]
    return b, pl


def _allowed(problem: Problem, j: int) -> list[int]:
    """Servers with a GPU type job j allows, ascending (kept on the cluster
    per set of allowed types, so scheduler loops compute it once)."""
    job = problem.jobs[j]
    c = problem.cluster
    memo = c.__dict__.setdefault("_gandiva_allowed", {})
    key = (job.gpus > 0, job.gpu_types)
    got = memo.get(key)
    if got is None:
        got = [s for s, srv in enumerate(c.servers)
               if not job.gpus or (srv.gpus and job.allows(srv.gpu_type))]
        memo[key] = (got, set(got).__contains__)
        return got
    return got[0]


def _types_ok(problem: Problem, j: int):
    """``ok(s)``: server s has a GPU type job j allows."""
    _allowed(problem, j)
    job = problem.jobs[j]
    return problem.cluster.__dict__["_gandiva_allowed"][(job.gpus > 0, job.gpu_types)][1]


def planned(problem: Problem, view: ServerView, j: int, gpus: list[int]) -> Assign | None:
    """Job j on exactly ``gpus`` (its share each, CPU and memory split), or
    None when they do not hold it or break its GPU count, type or locality."""
    job = problem.jobs[j]
    lo = job.min_gpus if job.min_gpus is not None else job.gpus
    hi = job.max_gpus if job.max_gpus is not None else job.gpus
    if not gpus or len(set(gpus)) != len(gpus) or not lo <= len(gpus) <= hi:
        return None
    ok = _types_ok(problem, j)
    servers = {view.gsrv[g] for g in gpus}
    if not all(ok(s) for s in servers) or (job.locality == "server" and len(servers) > 1):
        return None
    a = problem.make_assign(j, gpus, 0)
    return a if view.fits(a) else None


def _room(view: ServerView, servers, g: int, cpu: int, mem: int) -> list[int]:
    """The servers with ``g`` whole free GPUs, ``cpu`` and ``mem`` free."""
    whole, free_cpu, free_mem = view.whole, view.cpu, view.mem
    return [s for s in servers if whole[s] >= g and free_cpu[s] >= cpu and free_mem[s] >= mem]


def _least_loaded(view: ServerView, servers) -> int | None:
    return min(servers, key=lambda s: (view.height(s), s), default=None)


def _spread(problem: Problem, view: ServerView, j: int, servers: list[int]) -> Assign | None:
    """The servers with the most free GPUs together, fewest first."""
    g = problem.jobs[j].gpus
    if sum(view.whole[s] for s in servers) < g:
        return None
    gpus: list[int] = []
    for s in sorted(servers, key=lambda x: (-view.whole[x], x)):
        if view.whole[s]:
            gpus += view.free_whole(s)[:g - len(gpus)]
        if len(gpus) == g:
            break
    a = problem.make_assign(j, gpus, 0)
    return a if view.fits(a) else None


def algorithm1(problem: Problem, view: ServerView, j: int, oversubscribe: bool
               ) -> tuple[str, Assign | None, int | None]:
    """Algorithm 1 for one whole-GPU job (see the module notes).

    Returns
    -------
    (rule, assignment, server)
        The rule that decided; the assignment when placed; the server it is
        bound to when over-subscribed.
    """
    job = problem.jobs[j]
    g = job.gpus
    opt = problem.options[j][0]
    ok = _allowed(problem, j)
    if g > max(view.whole, default=0) and (g == 1 or job.locality is not None
                                           or sum(view.whole) < g):
        room = []          # no server, nor servers together, has g free GPUs
    else:
        room = _room(view, ok, g, opt.cpu, opt.mem)
    aff = view.aff
    same = [s for s in room if aff[s] == g]
    if same:
        s, rule = _least_loaded(view, same), RULES[0]
    else:
        empty = [s for s in room if view.idle(s)]
        if empty:
            s, rule = min(empty), RULES[1]
        elif room:
            s, rule = _least_loaded(view, room), RULES[2]
        else:
            s, rule = None, RULES[3]
    if s is not None:
        return rule, problem.make_assign(j, view.free_whole(s)[:g], 0), None
    if g > 1 and job.locality is None and sum(view.whole) >= g:
        a = _spread(problem, view, j, [s for s in ok if view.whole[s]])
        if a is not None:
            return RULES[3], a, None
    if oversubscribe:
        over = [s for s in ok if aff[s] == g and view.total[s] >= g]
        s = _least_loaded(view, over)
        if s is not None:
            return RULES[4], None, s
    return RULES[5], None, None


def _shared(problem: Problem, view: ServerView, j: int, oversubscribe: bool
            ) -> tuple[str, Assign | None, int | None]:
    """A milli-GPU job: the fullest GPU whose free share holds it, else
    Algorithm 1 as a 1-GPU job."""
    job = problem.jobs[j]
    opt = problem.options[j][0]
    ok = _types_ok(problem, j)
    best = None
    for g, f in enumerate(view.gfree):
        s = view.gsrv[g]
        if job.gpu_milli <= f < MILLI and ok(s) and view.cpu[s] >= opt.cpu \
                and view.mem[s] >= opt.mem and (best is None or f < view.gfree[best]):
            best = g
    if best is not None:
        return RULES[0], problem.make_assign(j, [best], 0), None
    return algorithm1(problem, view, j, oversubscribe)


def _cpu_only(problem: Problem, view: ServerView, j: int) -> tuple[str, Assign | None, None]:
    opt = problem.options[j][0]
    room = [s for s in range(view.S) if view.cpu[s] >= opt.cpu and view.mem[s] >= opt.mem]
    s = _least_loaded(view, room)
    if s is None:
        return RULES[5], None, None
    return RULES[2], problem.make_cpu_assign(j, s, 0), None


def _moves(problem: Problem, view: ServerView, plan: dict, assign: dict, stats: dict) -> None:
    """Planned moves of running jobs (the call allows moves)."""
    for j in sorted(plan):
        if j not in problem.fixed:
            continue
        cur = problem.fixed[j]
        view.give(j, cur)
        a = planned(problem, view, j, plan[j])
        if a is None:
            view.take(j, cur)
            stats["missed"].append(problem.jobs[j].id)
            continue
        view.take(j, a)
        assign[j] = a


def solve_gandiva(problem: Problem, *, deadline: Deadline, seed: int = 0,
                  oversubscribe: bool = True, bound: Mapping | None = None,
                  plan: Mapping | None = None) -> Solution:
    """Gandiva's reactive placement (see the module notes).

    Parameters
    ----------
    problem : Problem
    deadline : Deadline
        Checked every `CHECK_EVERY` pending jobs; out of time the jobs
        placed so far are returned (``stats["stopped"]``).
    seed : int
        Unused (the rules are deterministic).
    oversubscribe : bool
        Step 4 of Algorithm 1 (False: a bin-packer that never
        over-subscribes).
    bound : mapping of str to str, optional
        Pending jobs time-sliced on a server (job id -> server id).
    plan : mapping of str to list of str, optional
        Placements decided by the scheduler (job id -> GPU ids).

    Returns
    -------
    Solution
        Placed pending jobs and moved running ones, status ``feasible``;
        ``stats["gandiva"]``: ``bound`` (job id -> server id of the jobs
        over-subscribed now), ``rules`` (count per rule), ``missed`` (planned
        jobs whose GPUs were not free), ``moves`` (0: moves are the
        scheduler's, planned), ``solve_s`` (seconds in this function).
    """
    t0 = time.perf_counter()
    bidx, pidx = _indices(problem, bound, plan)
    view = ServerView(problem, bidx)
    assign: dict[int, Assign] = {}
    stats: dict = {"bound": {}, "rules": dict.fromkeys(RULES, 0), "missed": [], "moves": 0}
    if problem.moves_allowed:
        _moves(problem, view, pidx, assign, stats)
    else:
        stats["missed"] += [problem.jobs[j].id for j in pidx if j in problem.fixed]
    out: dict[str, Any] = {"gandiva": stats}
    ids = problem.cluster.servers
    order = sorted(problem.pending, key=problem.rank.__getitem__)
    for j in order:
        if j in pidx:
            a = planned(problem, view, j, pidx[j])
            if a is None:
                stats["missed"].append(problem.jobs[j].id)
            else:
                view.take(j, a)
                assign[j] = a
    most, free = max(view.whole, default=0), sum(view.whole)
    for k, j in enumerate(order):
        if k % CHECK_EVERY == 0 and deadline.expired():
            out["stopped"] = "time limit"
            break
        if j in pidx or j in bidx:
            continue
        job = problem.jobs[j]
        if not oversubscribe and job.gpu_milli == MILLI and job.gpus > most \
                and (job.gpus == 1 or job.locality is not None or job.gpus > free):
            stats["rules"][RULES[5]] += 1        # no GPUs for it anywhere: queued
            continue
        if job.gpus == 0:
            rule, a, s = _cpu_only(problem, view, j)
        elif job.gpu_milli < MILLI:
            rule, a, s = _shared(problem, view, j, oversubscribe)
        else:
            rule, a, s = algorithm1(problem, view, j, oversubscribe)
        stats["rules"][rule] += 1
        if s is not None:
            view.bind(j, s)
            stats["bound"][job.id] = ids[s].id
        if a is not None:
            view.take(j, a)
            assign[j] = a
            most, free = max(view.whole, default=0), sum(view.whole)
    stats["solve_s"] = time.perf_counter() - t0
    return Solution(assign, Status.FEASIBLE, None, (), out)


__all__ = ["CHECK_EVERY", "RULES", "algorithm1", "planned", "solve_gandiva"]

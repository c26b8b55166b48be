r"""Re-placing every job from scratch, for round-based schedulers whose
rounds start from an empty cluster (Synergy's, Gavel's).

A solver that declares ``migration`` may move running jobs when the call
allows any number of moves (``max_moves=None``, with a ``move_cost``).
`from_scratch` gives such a solver the problem it would see on an empty
cluster: the same jobs in the same order, every running job pending (built
from the problem's arrays, not compiled again) but the pinned ones
(`Problem.pinned`), which stay where they run.

`back` turns the solver's answer into an answer to the problem as given.
Identical servers are interchangeable (`Problem.server_class`: same
capacities, GPU type and, where the cluster has racks, rack), and so are the
GPUs of a server without inner levels (sockets, switches): the answer is
relabelled, server class by server class, so that as many running jobs as
possible stay exactly where they run (a greedy matching of the answer's
servers to the servers holding their running jobs, then of GPUs within
each server).  Every job keeps its GPUs per server, its CPU and memory, and
the levels its servers span, so its throughput is the one the solver chose;
the relabelling only removes moves that change nothing.  An answer that
leaves a running job out is not used (the solver answers the problem as
given: running jobs kept in place), so a from-scratch round never stops a
running job; the final check verifies every placement.

`first_fit_all` is first fit over a from-scratch problem's jobs in order,
reusing the last round's answer where it must be the same
([`Played`][alloc.engines.greedy.scratch.Played], kept in a loop's carry):
from the same empty cluster (the same cluster, the same free capacities by
value), the $k$-th job is placed by first fit on a state that depends only
on the shapes of the jobs before it (`State.shape`: GPUs, share, CPU,
memory, locality, allowed server classes) and on their assignments, so as
long as the shapes in order are the ones of the last round and each was
placed by the server index alone (no spread), each one's assignment is the
one of the last round -- put in place without searching.  The first shape
that differs (or a job the last round spread) ends the reuse; first fit
goes on from there.

Examples
--------
>>> from alloc import Cluster, Job, Server, Session
>>> cl = Cluster(tuple(Server(f"s{i}", cpu=24000, mem=512000, gpus=8) for i in range(2)))
>>> s = Session(cl, solver="proportional", max_moves=None, move_cost=0.0)
>>> s.submit(Job("a", 2, cpu=6000, mem=128000)); _ = s.step()
>>> s.submit(Job("b", 8, cpu=24000, mem=512000)); r = s.step()
>>> [p.job for p in r.start], [p.job for p in r.move]    # a stays, b takes the other server
(['b'], [])
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ...deadline import Deadline
from ...model import MILLI
from ...problem import Assign, Problem, Solution, add_assign
from .index import FIRST
from .state import State, new_assign

#: The carry's key of the last round's `Played`.
PLAYED = "greedy.scratch.first-fit"


def from_scratch(problem: Problem) -> Problem | None:
    """The problem on an empty cluster (module notes), or None unless the call
    allows any number of moves (``max_moves=None``) and something runs."""
    if problem.max_moves is not None or not problem.fixed:
        return None
    from ...carry import next_stamp
    pinned = problem.pinned
    keep = {j: a for j, a in problem.fixed.items() if j in pinned}
    if len(keep) == len(problem.fixed):
        return None
    out = object.__new__(Problem)
    out.__dict__.update({k: v for k, v in problem.__dict__.items()
                         if k not in ("type_ok", "allowed", "preemption_possible")})
    out.fixed = keep
    out.running = tuple(sorted(keep))
    out.pending = tuple(sorted(set(problem.pending) | (set(problem.fixed) - set(keep))))
    out.free_cpu = problem.srv_cpu.copy()
    out.free_mem = problem.srv_mem.copy()
    out.gpu_free = np.full(problem.G, MILLI, dtype=np.int64)
    for a in keep.values():
        add_assign(a, out.gpu_free, out.free_cpu, out.free_mem, -1)
    out.max_moves, out.move_cost, out.preempt = 0, None, None
    out.pinned, out.changes, out.carry = frozenset(keep), None, None
    out.stamp = next_stamp()
    return out


def kept(problem: Problem, sol: Solution) -> Solution:
    """``sol`` with every running job it leaves out kept where it runs: a
    solver that declares ``migration`` answers for the running jobs too (the
    core reads a running job missing from its answer as stopped).

    Examples
    --------
    >>> from alloc import Cluster, Job, Placement, Server, allocate
    >>> cl = Cluster((Server("s0", 8000, 65536, 2, "V100"),))
    >>> cur = Placement("j0", (), {"s0": 1000}, {"s0": 16384}, 0.0)
    >>> jobs = [Job("j0", 0, cpu=1000, mem=16384, current=cur)] + [
    ...     Job(f"j{i}", 0, cpu=1000, mem=16384) for i in range(1, 5)]
    >>> a = allocate(cl, jobs, solver="proportional", max_moves=1, order=["j0"], preempt="order")
    >>> sorted(p.job for p in a.placements)          # j0 kept, three more fit
    ['j0', 'j1', 'j2', 'j3']
    """
    missing = {j: a for j, a in problem.fixed.items() if j not in sol.assign}
    if not missing:
        return sol
    return replace(sol, assign={**missing, **sol.assign})


def back(problem: Problem, scratch: Problem, sol: Solution) -> Solution | None:
    """The from-scratch answer for ``problem``, relabelled to keep running
    jobs where they run (module notes); None when it leaves a running job out."""
    if any(j not in sol.assign and j not in scratch.fixed for j in problem.fixed):
        return None
    held = {t for a in scratch.fixed.values() for t in a.servers}
    assign = _relabel(problem, dict(sol.assign), held)
    for j, a in assign.items():
        cur = problem.fixed.get(j)
        if cur is not None and a is not cur and a == cur:
            assign[j] = cur                  # the very object: where it runs
    return replace(sol, assign=assign, stats={**sol.stats, "from_scratch": True})


def _inner_levels(problem: Problem) -> bool:
    levels = tuple(problem.levels)
    if "server" not in levels:
        return True
    return any(lv != "gpu" for lv in levels[levels.index("server") + 1:])


def _lists(problem: Problem) -> tuple[list[int], list[int], list[int]]:
    """Each server's class, each server's first GPU and each GPU's server, as
    lists (kept with the cluster's arrays)."""
    arr = problem.arrays
    out = arr.__dict__.get("_relabel_lists")
    if out is None:
        out = arr.__dict__["_relabel_lists"] = (problem.server_class.tolist(),
                                                problem.gpu_first.tolist(),
                                                problem.gpu_server.tolist())
    return out


def _votes(assign: dict[int, Assign], fixed: dict[int, Assign], cls: list[int],
           held: set[int]) -> tuple[dict[tuple[int, int], int], list[tuple[int, Assign, Assign]]]:
    """Per (answer's server, running job's server) of one class, neither in
    ``held``: how many running jobs the answer puts on the one and run on the
    other; and the (job, answer, where it runs) pairs of the running jobs."""
    votes: dict[tuple[int, int], int] = {}
    pairs: list[tuple[int, Assign, Assign]] = []      # (job, its answer, where it runs)
    get, vote, add = fixed.get, votes.get, pairs.append
    for j, a in assign.items():
        cur = get(j)
        if cur is None or a is cur:
            continue
        ac, cc = a.cpu, cur.cpu
        if len(ac) != len(cc):
            continue
        add((j, a, cur))
        if len(ac) == 1:
            s, t = ac[0][0], cc[0][0]
            if cls[s] == cls[t] and s not in held and t not in held:
                votes[s, t] = vote((s, t), 0) + 1
            continue
        for (s, _), (t, _) in zip(sorted(ac), sorted(cc)):
            if cls[s] == cls[t] and s not in held and t not in held:
                votes[s, t] = vote((s, t), 0) + 1
    return votes, pairs


def _relabel(problem: Problem, assign: dict[int, Assign], held: set[int]) -> dict[int, Assign]:
    """Servers permuted within each class (those in ``held``, where what
    stays in place runs, left as they are), and GPUs within each server (when
    it has no inner levels), to keep running jobs where they run."""
    fixed = problem.fixed
    cls, first, gsrv = _lists(problem)
    votes, pairs = _votes(assign, fixed, cls, held)
    if not votes:
        return assign
    pi: dict[int, int] = {}
    taken: set[int] = set()
    for (s, t), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if s not in pi and t not in taken:
            pi[s] = t
            taken.add(t)
    for s in held:
        pi[s] = s
    for members in problem.classes:            # the rest: a bijection within the class
        if all(s in pi for s in members):
            continue
        free = [t for t in members if t not in taken and t not in held]
        for s in members:
            if s not in pi:
                pi[s] = free.pop(0)
    gmap = {} if _inner_levels(problem) else _gpu_maps(problem, pairs, pi, first, gsrv)
    out = dict(assign)
    get, to = fixed.get, pi.get
    for j, a in assign.items():
        cur = get(j)
        if a is cur:
            continue
        ag, ac, am = a.gpus, a.cpu, a.mem
        if len(ag) == 1:                     # the common one-GPU job, without the lists
            g, m = ag[0]
            s = gsrv[g]
            t = to(s, s)
            local = g - first[s]
            mt = gmap.get(t)
            if mt is not None:
                local = mt.get(local, local)
            g = first[t] + local
            if len(ac) == 1 and len(am) == 1 and cur is not None and not a.caps \
                    and not cur.caps and len(cur.gpus) == 1 and len(cur.cpu) == 1 \
                    and len(cur.mem) == 1:   # where it runs? compared without the tuples
                (s, c), (s2, v) = ac[0], am[0]
                (h, n), (t1, c1), (t2, v1) = cur.gpus[0], cur.cpu[0], cur.mem[0]
                if h == g and n == m and t1 == to(s, s) and c1 == c and t2 == to(s2, s2) \
                        and v1 == v:
                    out[j] = cur             # the very object: where it runs
                    continue
            gpus: tuple[tuple[int, int], ...] = ((g, m),)
        else:
            gl = []
            for g, m in ag:
                s = gsrv[g]
                t = to(s, s)
                local = g - first[s]
                mt = gmap.get(t)
                if mt is not None:
                    local = mt.get(local, local)
                gl.append((first[t] + local, m))
            gpus = tuple(gl)
        if len(ac) == 1 and len(am) == 1:
            (s, c), (s2, v) = ac[0], am[0]
            cpu: tuple[tuple[int, int], ...] = ((to(s, s), c),)
            mem: tuple[tuple[int, int], ...] = ((to(s2, s2), v),)
        else:
            cpu = tuple((to(s, s), c) for s, c in ac)
            mem = tuple((to(s, s), v) for s, v in am)
        if cur is not None and gpus == cur.gpus and cpu == cur.cpu and mem == cur.mem \
                and a.caps == cur.caps:
            out[j] = cur                     # the very object: where it runs
        elif a.caps:
            out[j] = Assign(gpus, cpu, mem, a.caps)
        else:
            out[j] = new_assign(gpus, cpu, mem)
    return out


def _gpu_maps(problem: Problem, pairs: list, pi: dict[int, int], first: list, gsrv: list
              ) -> dict[int, dict[int, int]]:
    """Per target server, a permutation of its local GPUs that gives running
    jobs their current GPUs where it can."""
    maps: dict[int, dict[int, int]] = {}
    used: dict[int, set[int]] = {}
    for _, a, cur in pairs:
        ag, cg = a.gpus, cur.gpus
        if len(ag) != len(cg):
            continue
        if len(ag) == 1:                     # one GPU: the pair itself, without sorting
            g, h = ag[0][0], cg[0][0]
            s, t2 = gsrv[g], gsrv[h]
            t = pi.get(s, s)
            if t != t2:
                continue
            x, y = g - first[s], h - first[t2]
            m = maps.get(t)
            if m is not None and (m.get(x, y) != y or (y in used[t] and m.get(x) != y)):
                continue
            maps.setdefault(t, {})[x] = y
            used.setdefault(t, set()).add(y)
            continue
        new = sorted((pi.get(gsrv[g], gsrv[g]), g - first[gsrv[g]]) for g, _ in ag)
        old = sorted((gsrv[g], g - first[gsrv[g]]) for g, _ in cg)
        ok = True
        for (t, x), (t2, y) in zip(new, old):
            if t != t2:
                ok = False
                break
            m = maps.get(t)
            if m is not None and (m.get(x, y) != y or (y in used[t] and m.get(x) != y)):
                ok = False
                break
        if not ok:
            continue
        for (t, x), (_, y) in zip(new, old):
            maps.setdefault(t, {})[x] = y
            used.setdefault(t, set()).add(y)
    srv_gpus = problem.srv_gpus
    for t, m in maps.items():                 # complete each map to a permutation
        rest = [y for y in range(int(srv_gpus[t])) if y not in used[t]]
        for x in range(int(srv_gpus[t])):
            if x not in m:
                m[x] = rest.pop(0)
    return maps


@dataclass(frozen=True)
class Played:
    """A from-scratch first-fit round, as the next one reuses it.

    Attributes
    ----------
    base : tuple
        The empty cluster it started from: the cluster, and the free CPU,
        memory and milli-GPU arrays as bytes (compared by value).
    steps : tuple of (tuple, int, tuple, tuple, tuple)
        Per job in order, as long as the server index alone placed them: the
        job's shape key (`alloc.engines.greedy.index.Shape`), its option and
        its assignment's GPUs, CPU and memory.
    """
    base: tuple[Any, ...]
    steps: tuple[tuple[Any, ...], ...]


def base_of(problem: Problem) -> tuple[Any, ...]:
    """What a `Played` round started from: the cluster and the free CPU,
    memory and milli-GPU arrays as bytes."""
    return (problem.cluster, problem.free_cpu.tobytes(), problem.free_mem.tobytes(),
            problem.gpu_free.tobytes())


def same_base(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Two `base_of` values equal (the clusters by value)."""
    return (a[0] is b[0] or a[0] == b[0]) and a[1:] == b[1:]


def first_fit_all(st: State, order: Sequence[int], deadline: Deadline,
                  before: Played | None = None) -> tuple[dict[str, Any], Played | None]:
    """First fit (`alloc.engines.greedy.rules.first_fit`) of the jobs
    ``order`` on ``st`` in turn, stopping at the deadline (checked every 64
    jobs), the last round's answer ``before`` reused where it must be the
    same (module notes).

    Returns
    -------
    dict, Played or None
        ``{"stopped": "time limit"}`` when stopped, else ``{}``; what the
        next round may reuse (None when stopped).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.deadline import Deadline
    >>> from alloc.problem import compile_problem
    >>> cl = Cluster(tuple(Server(f"s{i}", 8000, 64000, 2, "V100") for i in range(2)))
    >>> p = compile_problem(cl, [Job(f"j{i}", 1, cpu=1000, mem=1000) for i in range(3)])
    >>> _, played = first_fit_all(State(p), [0, 1, 2], Deadline.never())
    >>> st = State(p)
    >>> _ = first_fit_all(st, [2, 0], Deadline.never(), played)    # the same shapes: reused
    >>> sorted((j, a.gpus) for j, a in st.assign.items())
    [(0, ((1, 1000),)), (2, ((0, 1000),))]
    """
    p = st.p
    base = base_of(p)
    steps: list[tuple[Any, ...]] = []
    k, n = 0, len(order)
    shape, place = st.shape, st.place
    if before is not None and not st.assign and st.version == 0 and \
            same_base(before.base, base):
        old = before.steps
        m = min(len(old), n)
        while k < m:
            if k % 64 == 0 and deadline.expired():
                return {"stopped": "time limit"}, None
            if old[k][1] != 0 or shape(order[k], 0).key != old[k][0]:
                break
            k += 1
        if k:
            st.put_all([(j, new_assign(g, c, m), 0) for j, (_, _, g, c, m) in zip(order, old[:k])])
            steps += old[:k]
    run = len(steps) == k
    while k < n:
        if k % 64 == 0 and deadline.expired():
            return {"stopped": "time limit"}, None
        j = order[k]
        sh = shape(j, 0)
        f = sh.finders.get((FIRST, None)) or st.finder(sh, FIRST)
        top = f.top()
        if top is not None:
            a = st.assign_on(j, top, sh)
            place(j, a, 0)
            if run:
                steps.append((sh.key, 0, a.gpus, a.cpu, a.mem))
        else:
            run = False
            spread = st.try_spread(j, 0)
            if spread is not None:
                place(j, spread, 0)
        k += 1
    return {}, Played(base, tuple(steps))


__all__ = ["PLAYED", "Played", "back", "base_of", "first_fit_all", "from_scratch", "kept",
           "same_base"]

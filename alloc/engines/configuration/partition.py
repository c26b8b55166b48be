r"""Partitioned exact solving with a bound on the whole problem.

Large instances are split, as POP does (Narayanan et al., SOSP'21), into ``k``
sub-problems that are solved independently -- in parallel processes, or as Ray
tasks on a cluster -- and then joined:

1. **Split.**  Servers joined by a running job that spans them stay together.
   With many server classes (the configuration model's size grows with them),
   whole classes are dealt to the parts, largest first to the part with the
   least capacity, so each part prices fewer classes; with few large classes,
   each class's servers are dealt round-robin (seeded).  Pending jobs of each
   type are dealt round-robin (in rank order, seeded start) in proportion to
   the parts' GPU capacity.
2. **Solve** each part with the exact driver (`alloc.engines.configuration.driver`)
   within 60 % of the time; running jobs stay on their servers.  The driver
   waits for a part (processes or Ray tasks) a grace period past that and no
   longer: a part still running is left out (``stats["parts_timed_out"]``)
   and its jobs are placed by the repair and the heuristics below.
3. **Join and repair.**  The parts' placements are joined; jobs left unplaced
   in their part are placed on what any part left (best fit), then the joined
   solution is improved by local search with the time left.  The applicable
   heuristics then run on the whole problem, and the best of them replaces
   the joined solution when it is better, so the answer is never below them.
4. **Bound.**  The bound is that of the *whole* problem, never of the parts:
   the sum of honest upper coefficients, the big-machine LP over every server
   class, and, when time allows, column generation on the whole problem seeded
   with the joined solution's patterns (its Lagrangian bound).  So the reported
   gap is against the problem as given.

POP itself reports no bound; its answer is the joined solution alone.
"""
from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from dataclasses import dataclass

from ...deadline import Deadline
from ...model import Cluster, Status
from ...problem import Assign, Problem, Solution, compile_problem, job_types
from .aggregate import Aggregate, OutOfTime, canonical_gpus
from .bounds import big_machine_bound, rounded
from .columns import check_assign, solution_to_columns, true_value
from .backend import Backend
from .master import Master, column_generation
from ..greedy.compact import compacted

#: Executors that run the parts.
EXECUTORS = ("process", "serial", "ray")


@dataclass(frozen=True)
class Part:
    """Servers (indices of the whole problem) and the pending jobs dealt to them."""
    servers: tuple[int, ...]
    jobs: tuple[int, ...]


def _server_groups(problem: Problem) -> list[list[int]]:
    """Servers that must stay together (a running job spans them)."""
    parent = list(range(problem.S))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a in problem.fixed.values():
        srv = a.servers
        for s in srv[1:]:
            parent[find(s)] = find(srv[0])
    groups: dict[int, list[int]] = defaultdict(list)
    for s in range(problem.S):
        groups[find(s)].append(s)
    return list(groups.values())


def split_problem(problem: Problem, k: int, seed: int = 0) -> list[Part]:
    """Deal servers and pending jobs to ``k`` parts (see the module notes)."""
    rng = random.Random(seed)
    classes: dict[tuple, list[list[int]]] = defaultdict(list)
    for grp in _server_groups(problem):
        key = tuple(sorted((int(problem.free_cpu[s]), int(problem.free_mem[s]),
                            canonical_gpus(problem, s)[1]) for s in grp))
        classes[key].append(grp)
    parts: list[list[int]] = [[] for _ in range(k)]
    cap = [0] * k

    def gpus(grp):
        return sum(int((problem.gpu_free[problem.gpu_first[s]:problem.gpu_first[s]
                                         + problem.srv_gpus[s]] > 0).sum()) + 1 for s in grp)
    if len(classes) >= 4 * k:
        for grps in sorted(classes.values(), key=lambda g: -sum(map(gpus, g))):
            i = min(range(k), key=lambda q: (cap[q], q))
            for grp in grps:
                parts[i].extend(grp)
                cap[i] += gpus(grp)
    else:
        for grps in classes.values():
            start = rng.randrange(k)
            for n, grp in enumerate(grps):
                i = (start + n) % k
                parts[i].extend(grp)
                cap[i] += gpus(grp)
    total = max(1, sum(cap))
    jobs: list[list[int]] = [[] for _ in range(k)]
    for members in job_types(problem):
        credit = [0.0] * k
        for j in members:
            for q in range(k):
                credit[q] += cap[q] / total
            i = max(range(k), key=lambda q: (credit[q], -q))
            credit[i] -= 1.0
            jobs[i].append(j)
    return [Part(tuple(sorted(s)), tuple(sorted(js))) for s, js in zip(parts, jobs) if s]


def sub_instance(problem: Problem, part: Part) -> tuple[Cluster, list, list[str]]:
    """The cluster, jobs (the part's pending jobs and the running jobs on its
    servers) and job order of one part."""
    c = problem.cluster
    servers = tuple(c.servers[s] for s in part.servers)
    sub = Cluster(servers, c.levels, c.tenants)
    own = set(part.servers)
    running = [j for j, a in problem.fixed.items() if set(a.servers) <= own]
    picked = sorted(list(part.jobs) + running, key=lambda j: problem.rank[j])
    return sub, [problem.jobs[j] for j in picked], [problem.jobs[j].id for j in picked]


def solve_part(args) -> tuple[dict, dict]:
    """Solve one part (runs in a worker): ``({job id: (GPU ids, cpu, mem)}, stats)``."""
    cluster, jobs, order, objective, engine, seconds, seed, shares = args
    from .driver import solve_exact
    p = compile_problem(cluster, jobs, objective, order=order)
    sol = solve_exact(p, engine, deadline=Deadline.after(max(seconds, 1e-3)), seed=seed,
                      warm_share=shares[0], cg_share=shares[1])
    c = p.cluster
    out = {}
    for j, a in sol.assign.items():
        out[p.jobs[j].id] = (tuple((c.gpu_ids[g], m) for g, m in a.gpus),
                             tuple((c.servers[s].id, v) for s, v in a.cpu),
                             tuple((c.servers[s].id, v) for s, v in a.mem))
    stats = {k: sol.stats.get(k) for k in ("source", "classes", "types", "gap", "warm_start")}
    stats["status"] = sol.status.value
    return out, stats


#: Seconds a part may run past its own limit (at least; 10 % of the call's
#: limit when more) before the driver stops waiting for it: its answer is
#: then left out, and the repair and the heuristics place its jobs.
PART_GRACE = 0.5

#: The answer of a part that did not come back in time.
LATE: tuple[dict, dict] = ({}, {"status": "timed out"})


def _run(tasks, executor: str, ray_address: str | None, timeout: float):
    """The parts' answers, in the order of ``tasks``; a part still running
    ``timeout`` seconds from now answers `LATE`."""
    if executor == "serial" or len(tasks) == 1:
        return [solve_part(t) for t in tasks]
    if executor == "ray":
        import ray
        if not ray.is_initialized():
            ray.init(address=ray_address, ignore_reinit_error=True, log_to_driver=False)
        remote = ray.remote(solve_part)
        refs = [remote.remote(t) for t in tasks]
        ready, late = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, timeout))
        for ref in late:
            ray.cancel(ref, force=True)
        done = dict(zip(ready, ray.get(ready))) if ready else {}
        return [done.get(ref, LATE) for ref in refs]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, wait
    workers = min(len(tasks), os.cpu_count() or 1)
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
    futures: list = []
    try:
        futures = [ex.submit(solve_part, t) for t in tasks]
        wait(futures, timeout=max(0.0, timeout))
        return [f.result() if f.done() else LATE for f in futures]
    finally:
        # a late part is not waited for: the call keeps its deadline
        ex.shutdown(wait=all(f.done() for f in futures), cancel_futures=True)


def _join(problem: Problem, results) -> dict[int, Assign]:
    c = problem.cluster
    gi, si = c.gpu_index, c.server_index
    out: dict[int, Assign] = {}
    for placed, _ in results:
        for jid, (gpus, cpu, mem) in placed.items():
            j = problem.job_index[jid]
            if j in problem.fixed:
                continue
            out[j] = Assign(tuple((gi[g], m) for g, m in gpus), tuple((si[s], v) for s, v in cpu),
                            tuple((si[s], v) for s, v in mem))
    return out


def _repair(problem: Problem, assign: dict, deadline: Deadline) -> dict:
    """Place the jobs left unplaced on what the parts left (best fit, rank order)."""
    from ...problem import job_order
    from ..greedy.rules import best_fit
    from ..greedy.state import State
    st = State(problem)
    for j, a in assign.items():
        st.place(j, a, 0)
    for k, j in enumerate(job_order(problem)):
        if j in st.assign:
            continue
        if k % 64 == 0 and deadline.expired():
            break
        a = best_fit(st, j, 0)
        if a is not None:
            st.place(j, a, 0)
    return dict(st.assign)


def whole_bound(problem: Problem, engine: Backend, deadline: Deadline, assign: dict,
                stats: dict) -> float | None:
    """A bound of the whole problem's pending part (see the module notes)."""
    bounds = [sum(problem.upper_coef(j) for j in problem.pending)]
    try:
        agg = Aggregate(problem, deadline=deadline)
    except OutOfTime:
        stats["bound_timed_out"] = "aggregate"
        return bounds[0]
    bm = big_machine_bound(agg, deadline=deadline.share(0.3))
    if bm is not None:
        bm += agg.pref_slack        # the most the preferred-level terms take off
        bounds.append(bm)
        stats["lp_bound"] = bm
    if deadline.left() > 0.2 and agg.exact_units:
        master = Master(agg)
        cols = solution_to_columns(agg, assign)
        if cols is not None:
            for pat in cols[0].values():
                master.add(pat)
        cg = column_generation(master, engine, deadline)
        stats.update(cg_rounds=cg.rounds, cg_converged=cg.converged)
        if cg.bound is not None:
            bounds.append(cg.bound + agg.pref_slack)
            stats["cg_bound"] = cg.bound + agg.pref_slack
    return min(bounds)


def solve_partitioned(problem: Problem, engine: Backend, *, deadline: Deadline, seed: int = 0,
                      parts: int = 2, executor: str = "process", ray_address: str | None = None,
                      warm_share: float = 0.15, cg_share: float = 0.45) -> Solution:
    """The partitioned solver (see the module notes)."""
    from .driver import in_order, warm_start
    t0 = time.perf_counter()
    total = deadline.left()
    split = split_problem(problem, parts, seed)
    stats: dict = {"engine": engine.name, "parts": len(split), "executor": executor}
    solve_for = max(1e-3, 0.6 * total - (time.perf_counter() - t0))
    tasks = []
    for n, part in enumerate(split):
        cl, jobs, order = sub_instance(problem, part)
        tasks.append((cl, jobs, order, problem.objective, engine, solve_for, seed + n,
                      (warm_share, cg_share)))
    results = _run(tasks, executor, ray_address,
                   min(solve_for + max(PART_GRACE, 0.1 * total), deadline.left() - 0.1 * total))
    stats["part_stats"] = [s for _, s in results]
    if any(r is LATE for r in results):
        stats["parts_timed_out"] = sum(r is LATE for r in results)
    assign = in_order(problem, _repair(problem, _join(problem, results), deadline.share(0.3)))
    stats["t_parts"] = time.perf_counter() - t0
    if not check_assign(problem, assign):       # pragma: no cover - a join bug
        raise RuntimeError("partitioned solution over-commits the cluster")
    value = true_value(problem, assign)
    stats["joined_value"] = value
    # the applicable heuristics on the whole problem: the answer is never below them
    warm, _, _, warm_values = warm_start(problem, deadline.share(0.4), seed,
                                         floor=deadline.reserve(0.1 * total))
    stats["heuristics"] = warm_values
    warm_v = true_value(problem, warm) if warm and check_assign(problem, warm) else None
    if warm_v is not None and warm_v > value + 1e-9:
        assign, value = dict(warm), warm_v
        stats["source"] = f"heuristic {max(warm_values, key=warm_values.get)}"
    if deadline.left() > 0.1:
        from ..greedy.improve import local_search
        better = in_order(problem, local_search(problem, assign, deadline=deadline.share(0.4),
                                                seed=seed))
        if check_assign(problem, better) and true_value(problem, better) > value + 1e-9:
            assign, value = better, true_value(problem, better)
    assign = compacted(problem, assign, deadline)
    value = true_value(problem, assign)
    # the bound leaves 5 % of the time to the caller's final check
    bound = whole_bound(problem, engine, deadline.reserve(0.05 * total), assign, stats)
    step = problem.objective.step(problem.cluster, [problem.jobs[j] for j in problem.pending])
    fixed = sum(problem.value_of(j, a) for j, a in problem.fixed.items())
    status = Status.FEASIBLE
    if bound is not None:
        bound = rounded(bound, step)
        if value >= bound - 1e-6 * max(1.0, abs(bound)):
            status, bound = Status.OPTIMAL, max(bound, value)
        stats["gap"] = max(0.0, (bound - value) / max(abs(bound), 1e-9))
        bound += fixed
    stats["time_s"] = time.perf_counter() - t0
    return Solution(assign, status, bound, (), stats)


__all__ = ["EXECUTORS", "Part", "solve_partitioned", "split_problem", "sub_instance",
           "whole_bound"]


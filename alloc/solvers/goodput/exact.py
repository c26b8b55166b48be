r"""``goodput``: the exact goodput solver behind `allocate()`.

For jobs with a goodput profile ([`Goodput`][alloc.model.Goodput]) it picks
each job's GPU type, GPU count (in its ``[min_gpus, max_gpus]``), servers and
GPUs per server -- and with them its per-GPU batch and accumulation, the
best for that placement (`alloc.goodput.value`) -- maximising

$$ \sum_j w_j\, u_p\big(S_j \cdot r_j^{[\text{moved}]}\big), \qquad
   u_p(S) = \begin{cases} S & p = 1\\ -(S + \epsilon)^p & p < 0 \\
   \log(S + \epsilon) & p = 0 \\ (S + \epsilon)^p & 0 < p < 1\end{cases} $$

(``S_j`` the job's speed-up, its throughput in alloc's units; ``r_j`` its
``restart_factor``, charged when a running job's placement changes;
$\epsilon = 10^{-3}$; a waiting job counts $u_p(0)$): for $p = 1$ this is
the core's ``throughput`` objective, and the answer's ``bound`` is proven
for it; for $p < 0$ (the default, $p = -1$: Pollux's power mean, which is a
monotone function of this sum) the proof is on the power mean, reported in
``stats["fairness"]`` with its own bound and gap, and the core's status is
``feasible``.  The model is `alloc.goodput.patterns` (every
placement in which a server hosts at most one multi-server job).

Running jobs stay unless moving pays (and the call allows moves:
``max_moves`` / ``move_cost``, charged per move); they are never stopped.
Inputs without goodput jobs are the ``cpsat`` solver's (the registry's,
by name); goodput and other jobs are not mixed in one call.

Examples
--------
>>> from alloc import Cluster, Goodput, GoodputType, Job, Profile, Server, allocate
>>> theta = (0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
>>> g = Goodput(128, 4096, {"T4": GoodputType((32, 1024), theta)}, grad=(1.0, 4.0))
>>> c = Cluster(tuple(Server(f"s{i}", 8000, 64000, 4, "T4") for i in range(2)))
>>> jobs = [Job(f"j{i}", 1, min_gpus=1, max_gpus=8, profile=Profile(f"m{i}", goodput=g))
...         for i in range(3)]
>>> a = allocate(c, jobs, solver="goodput", time_limit=10)
>>> sorted(len(p.gpus) for p in a.placements), a.stats["fairness"]["status"]
([2, 2, 4], 'optimal')
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from ...errors import InputError
from ...model import Status
from ...objectives import job_sizes
from ...problem import Assign, Problem, Solution
from ...goodput.patterns import JobOptions, TypeNodes, solve_patterns

#: Added to every speed-up in the fairness utility.
EPS = 1e-3


def utility(s: float | np.ndarray, p: float) -> float | np.ndarray:
    """``u_p(S)`` of the module notes."""
    if p == 1:
        return s
    if p == 0:
        return np.log(np.asarray(s) + EPS)
    if p < 0:
        return -(np.asarray(s) + EPS) ** p
    return (np.asarray(s) + EPS) ** p


def _groups(problem: Problem) -> tuple[list[TypeNodes], dict[int, int]]:
    """Servers with GPUs grouped by (GPU type, GPUs per server)."""
    by: dict[tuple, list[int]] = defaultdict(list)
    for s, srv in enumerate(problem.cluster.servers):
        if srv.gpus:
            by[(srv.gpu_type, srv.gpus)].append(s)
    groups, of = [], {}
    for gi, ((t, cap), servers) in enumerate(sorted(by.items(), key=lambda kv: str(kv[0]))):
        groups.append(TypeNodes(str(t), cap, tuple(servers)))
        for s in servers:
            of[s] = gi
    return groups, of


def _options(problem: Problem, j: int, groups: list[TypeNodes], p: float, moves: bool
             ) -> JobOptions:
    from ...goodput.value import speed
    job = problem.jobs[j]
    prof = job.profile
    assert prof is not None and prof.goodput is not None
    g = prof.goodput
    w = job.weight
    running = job.current is not None
    r = g.restart_factor if running else 1.0
    cost = (problem.move_cost or 0.0) if running else 0.0
    cfg, val = [], []
    if not running or moves:
        for gi, grp in enumerate(groups):
            if grp.name not in g.types or not job.allows(grp.name):
                continue
            for k in job_sizes(job):
                lo = max(1, -(-k // grp.capacity))
                hi = 1 if job.locality is not None else min(k, len(grp.nodes))
                for n in range(lo, hi + 1):
                    s = speed(g, prof.reference_gpu, job.gpus, grp.name, n, k)[0]
                    cfg.append((gi, n, k))
                    val.append(w * float(utility(s * r, p)) - cost)
    keep, kv = None, 0.0
    if running:
        a = problem.fixed[j]
        per: dict[int, int] = defaultdict(int)
        for gidx, _ in a.gpus:
            per[int(problem.gpu_server[gidx])] += 1
        keep = tuple(sorted(per.items()))
        kv = w * float(utility(problem.throughput_of(j, a), p))
    none = w * float(utility(0.0, p))
    return JobOptions(np.array(cfg, dtype=int).reshape(-1, 3), np.array(val, dtype=float),
                      none, keep, kv)


def solve(problem: Problem, *, deadline, seed: int = 0, p: float = -1.0, engine: str = "highs",
          **_: object) -> Solution:
    """Solve a goodput input exactly (module notes)."""
    jobs = problem.jobs
    good = [j for j in range(problem.J) if _goodput(jobs[j])]
    if not good:
        from ...registry import get_solver
        return get_solver("cpsat").solve(problem, deadline=deadline, seed=seed)
    if len(good) < problem.J:
        other = next(jobs[j].id for j in range(problem.J) if j not in set(good))
        raise InputError(f"solver 'goodput': job {other!r} has no goodput profile; goodput jobs "
                         f"and other jobs are not solved together")
    if not math.isfinite(p) or p > 1:
        raise InputError(f"solver 'goodput': p: expected a number <= 1, got {p!r}")
    _check_resources(problem, good)
    groups = _groups(problem)[0]
    moves = problem.moves_allowed
    pinned = problem.pinned
    opts = []
    for j in range(problem.J):
        if j in problem.reasons:
            opts.append(JobOptions(np.zeros((0, 3), int), np.zeros(0), 0.0))
            continue
        opts.append(_options(problem, j, groups, p, moves and j not in pinned))
    out = solve_patterns(groups, opts, deadline, engine=engine, seed=seed,
                         required=tuple(problem.running),
                         max_moves=problem.max_moves if moves else 0)
    assign: dict[int, Assign] = {}
    taken: set[int] = set()
    for j in problem.running:
        if out.assign[j] == "keep" or out.assign[j] is None:
            a = problem.fixed[j]
            assign[j] = a
            taken.update(g for g, _ in a.gpus)
    for j, choice in enumerate(out.assign):
        if choice is None or choice == "keep":
            continue
        _, where = choice
        gpus = []
        for s, k in sorted(where.items()):
            first = int(problem.gpu_first[s])
            free = [first + i for i in range(problem.cluster.servers[s].gpus)
                    if first + i not in taken][:k]
            if len(free) < k:
                raise InputError(f"solver 'goodput': decoding left server {s} short of GPUs")
            gpus += free
            taken.update(free)
        assign[j] = problem.make_assign(j, gpus, problem.request_option[j])
    stats: dict = dict(out.stats)
    gap = None
    if out.bound is not None and out.assign:
        gap = abs(out.bound - out.value) / max(abs(out.bound), 1e-9)
    stats["fairness"] = {"p": p, "value": out.value, "bound": out.bound,
                         "status": out.status.value, "gap": gap}
    if p == 1:
        return Solution(assign, out.status, out.bound, stats=stats)
    status = Status.FEASIBLE if out.status in (Status.OPTIMAL, Status.FEASIBLE) else out.status
    return Solution(assign, status, None, stats=stats)


def _goodput(job) -> bool:
    return job.profile is not None and job.profile.goodput is not None


def _check_resources(problem: Problem, good: list[int]) -> None:
    """Goodput jobs take CPU and memory per GPU; every server must hold its
    GPUs' worth at the largest per-GPU request (then they never bind)."""
    cpu = max((math.ceil(problem.jobs[j].cpu / max(1, problem.jobs[j].gpus)) for j in good),
              default=0)
    mem = max((math.ceil(problem.jobs[j].mem / max(1, problem.jobs[j].gpus)) for j in good),
              default=0)
    for s, srv in enumerate(problem.cluster.servers):
        if srv.gpus and (srv.cpu < cpu * srv.gpus or srv.mem < mem * srv.gpus):
            raise InputError(f"solver 'goodput': server {srv.id!r} cannot give each of its "
                             f"{srv.gpus} GPUs {cpu} milli-CPU and {mem} MiB (goodput jobs take "
                             f"CPU and memory per GPU)")


__all__ = ["EPS", "solve", "utility"]

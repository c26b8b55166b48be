"""Online GPU-sharing policies (the FGD experiment) as batch solvers.

Each solver starts from the cluster as the running jobs leave it (they stay
where they run), then places the pending jobs one by one in rank order, each
at its own request (option 0), with the node-scoring policy of
:mod:`alloc.solvers.fgd.engine`; a job that fits nowhere stays unplaced.
Multi-GPU jobs take whole free GPUs of one server; CPU-only jobs take CPU and
memory on one server.  Node ties go to the lowest server index.  FGD's target
workload (typical pods) is built from the pending jobs.  Stops at the deadline
(checked before every job) with what it has placed.
"""
from __future__ import annotations

from collections import defaultdict

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution, job_order
from .engine import ClusterState, FragModel, Pod, make_policy, place


def _pod(problem: Problem, j: int) -> Pod:
    job = problem.jobs[j]
    opt = problem.options[j][0]
    k = int(job.gpus)
    return Pod(int(opt.cpu), int(opt.mem), k, int(job.gpu_milli) if k else 0,
               tuple(job.gpu_types) if k else ())


def _apply_running(problem: Problem, state: ClusterState) -> None:
    """Put the running jobs kept in place into the state, server by server."""
    first = problem.gpu_first
    for j, a in problem.fixed.items():
        parts: dict[int, list] = defaultdict(lambda: [0, 0, []])
        for s, v in a.cpu:
            parts[s][0] += v
        for s, v in a.mem:
            parts[s][1] += v
        milli = problem.jobs[j].gpu_milli
        for g, _ in a.gpus:
            s = int(problem.gpu_server[g])
            parts[s][2].append(int(g - first[s]))
        for s, (c, m, gpus) in sorted(parts.items()):
            state.apply(s, gpus, Pod(int(c), int(m), len(gpus), milli if gpus else 0))


def run_online(problem: Problem, policy: str, seed: int = 0,
               deadline: Deadline | None = None, **policy_options) -> Solution:
    """Place the pending jobs of ``problem`` in rank order with the named policy."""
    servers = problem.cluster.servers
    order = job_order(problem)
    pods = {j: _pod(problem, j) for j in order}
    fm = FragModel.from_pods(list(pods.values())) if pods else None
    state = ClusterState([s.cpu for s in servers], [s.mem for s in servers],
                         [s.gpus for s in servers],
                         [(s.gpu_type or "") if s.gpus else "" for s in servers],
                         max_pods=1 << 62, frag_model=fm)
    _apply_running(problem, state)
    pol = make_policy(policy, seed, **policy_options)
    if fm is not None and hasattr(pol, "prices"):
        pol.prices(fm, deadline)     # fgd-lookahead's share prices, under the deadline
    sol = Solution(status=Status.FEASIBLE)
    for j in order:
        # one check per job: a pod kind's first arrival scores every server
        if deadline is not None and deadline.expired():
            sol.stats["stopped"] = "time limit"
            break
        pod = pods[j]
        r = place(state, pol, pod)
        if r is None:
            continue
        n, gpus = r
        if pod.k:
            first = int(problem.gpu_first[n])
            sol.assign[j] = problem.make_assign(j, [first + int(i) for i in gpus], 0)
        else:
            sol.assign[j] = problem.make_cpu_assign(j, n, 0)
    sol.stats.update(policy=policy, placed=len(sol.assign), jobs=len(order))
    return sol


def _make(name: str, policy: str):
    def solve(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
        return run_online(problem, policy, seed, deadline, **options)
    solve.__name__ = "solve_" + name.replace("-", "_")
    solve.__doc__ = f"The ``{policy}`` online policy over the pending jobs (see the module notes)."
    return solve


solve_random = _make("random", "random")
solve_dotprod = _make("dotprod", "dotprod")
solve_gpu_clustering = _make("gpu-clustering", "gpu-clustering")
solve_gpu_packing = _make("gpu-packing", "gpu-packing")
solve_openb_best_fit = _make("openb-best-fit", "best-fit")
solve_fgd = _make("fgd", "fgd")
solve_fgd_lookahead = _make("fgd-lookahead", "fgd-lookahead")

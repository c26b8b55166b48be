"""Online GPU-sharing policies (FGD experiment) as batch solvers.

Each solver places the problem's jobs one by one in input order, with the
job's own request (option 0), using the engine of :mod:`alloc.solvers.fgd.engine`; a job
that fits nowhere stays unplaced.  Multi-GPU jobs take whole free GPUs of one
server; CPU-only jobs take CPU and memory on one server.  Node ties go to the
lowest server index.  FGD's target workload (typical pods) is built from the
problem's own jobs.  See :mod:`alloc.solvers.fgd.engine` for each policy's score.
"""
from __future__ import annotations

from .engine import ClusterState, FragModel, Pod, make_policy, place
from ...problem import Problem, Solution
from ...solve import register
from ...model import Status


def _pods(problem: Problem) -> list[Pod]:
    out = []
    for j, job in enumerate(problem.jobs):
        opt = problem.options[j][0]
        k = int(job.gpus)
        out.append(Pod(int(opt.cpu), int(opt.mem), k, int(job.gpu_milli) if k else 0,
                       tuple(job.gpu_types) if k else ()))
    return out


def run_online(problem: Problem, policy: str, seed: int = 0, **policy_options) -> Solution:
    """Place every job of ``problem`` in order with the named online policy."""
    servers = problem.cluster.servers
    pods = _pods(problem)
    fm = FragModel.from_pods(pods) if pods else None
    state = ClusterState([s.cpu for s in servers], [s.mem for s in servers],
                         [s.gpus for s in servers],
                         [(s.gpu_type or "") if s.gpus else "" for s in servers],
                         max_pods=1 << 62, frag_model=fm)
    pol = make_policy(policy, seed, **policy_options)
    sol = Solution(status=Status.FEASIBLE)
    for j, pod in enumerate(pods):
        r = place(state, pol, pod)
        if r is None:
            continue
        n, gpus = r
        if pod.k:
            first = int(problem.gpu_first[n])
            sol.assign[j] = problem.make_assign(j, [first + int(i) for i in gpus], 0)
        else:
            sol.assign[j] = problem.make_cpu_assign(j, n, 0)
    sol.stats = {"policy": policy, "placed": len(sol.assign), "jobs": problem.J}
    return sol


def _make(name: str, policy: str, doc: str):
    @register(name, exact=False, capabilities=("sharing",), description=doc)
    def solve(problem: Problem, *, time_limit=None, seed: int = 0, **options) -> Solution:
        return run_online(problem, policy, seed, **options)
    solve.__name__ = "solve_" + name.replace("-", "_")
    solve.__doc__ = doc
    return solve


solve_random = _make("random", "random", "Online: uniformly random feasible server (FGD paper baseline)")
solve_dotprod = _make("dotprod", "dotprod", "Online: smallest dot product of free and requested CPU/GPU")
solve_gpu_clustering = _make("gpu-clustering", "gpu-clustering",
                             "Online: cluster GPU jobs of the same kind on a server")
solve_gpu_packing = _make("gpu-packing", "gpu-packing",
                          "Online: pack onto partly used GPUs, then used servers")
solve_openb_best_fit = _make("openb-best-fit", "best-fit",
                             "Online: least CPU+GPU left over on the server (FGD paper's BestFit)")
solve_fgd = _make("fgd", "fgd", "Online: fragmentation gradient descent (Weng et al., ATC'23)")
solve_fgd_lookahead = _make("fgd-lookahead", "fgd-lookahead",
                            "Online: FGD plus a CPU-stranding look-ahead term, finer scores for shared pods")

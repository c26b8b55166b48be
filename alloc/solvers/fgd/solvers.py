"""Online GPU-sharing policies (the FGD experiment) as batch solvers.

Each solver starts from the cluster as the running jobs leave it (they stay
where they run), then places the pending jobs one by one in rank order, each
at its own request (option 0), with the node-scoring policy of
`alloc.solvers.fgd.engine`; a job that fits nowhere stays unplaced.
Multi-GPU jobs take whole free GPUs of one server; CPU-only jobs take CPU and
memory on one server.  Node ties go to the lowest server index.  FGD's target
workload (typical pods) is the caller's (option ``target``, `target_model`),
else built from the pending jobs, those a session holds out of the round
included (`counted_target`).  ``random`` draws each job's server from a
generator of its own, seeded by the seed and the job's id (`job_rng`).  Stops
at the deadline (checked before every job) with what it has placed.

In a session, a round whose only change is one new job is answered by
`one_job` from the state carried out of the last round
(`alloc.session.fast`), with the same answer.

In a scheduler loop (a problem compiled with a carry, `alloc.carry`) the
cluster state is kept between rounds: the next round takes back the pods it
placed, gives back the running jobs gone and takes the new ones
(`alloc.carry.Changes`), so that its cost follows what changed; the per-node
fragmentation counts of each typical pod type are kept with it
(`ClusterState.set_frag_model`).  The state then equals the one built
from the running jobs (tags of GPU pods included), and so do the answers.
"""
from __future__ import annotations

import zlib
from collections import defaultdict
from typing import Iterable

import numpy as np

from ...deadline import Deadline
from ...model import Status
from ...problem import Problem, Solution, job_order, pareto_options
from .engine import (BestFitPolicy, ClusterState, DotProdPolicy, FGDLookaheadPolicy, FGDPolicy,
                     FragModel, GpuClusteringPolicy, GpuPackingPolicy, Pod, Policy, RandomPolicy,
                     place)

#: Each solver's algorithm: its node-scoring policy class, by the solver's
#: registered name (`alloc.solvers.fgd.SOLVERS`).
ALGORITHM: dict[str, type[Policy]] = {
    "random": RandomPolicy,
    "dotprod": DotProdPolicy,
    "gpu-clustering": GpuClusteringPolicy,
    "gpu-packing": GpuPackingPolicy,
    "openb-best-fit": BestFitPolicy,
    "fgd": FGDPolicy,
    "fgd-lookahead": FGDLookaheadPolicy,
}


def new_policy(solver: str, seed: int = 0, **options) -> Policy:
    """A new node-scoring policy of the solver named ``solver`` (`ALGORITHM`).

    Parameters
    ----------
    solver : str
        A solver of the family: ``random``, ``dotprod``, ``gpu-clustering``,
        ``gpu-packing``, ``openb-best-fit``, ``fgd``, ``fgd-lookahead``.
    seed : int
        Seed of the policy's random generator (used by ``random``).
    **options
        Options of the policy's constructor (``fgd-lookahead``: ``lam``,
        ``rho``, ``share_res``, ``cpu_pods``, ``reserve``, ``mu``).

    Raises
    ------
    ValueError
        Not a solver of the family, or an ``fgd-lookahead`` option out of range.

    Examples
    --------
    >>> new_policy("openb-best-fit").name
    'best-fit'
    """
    try:
        cls = ALGORITHM[solver]
    except KeyError:
        raise ValueError(f"unknown online policy {solver!r}; valid: {', '.join(ALGORITHM)}") \
            from None
    return cls(seed, **options)


def _pod(problem: Problem, j: int) -> Pod:
    job = problem.jobs[j]
    opt = problem.options[j][0]
    k = int(job.gpus)
    return Pod(int(opt.cpu), int(opt.mem), k, int(job.gpu_milli) if k else 0,
               tuple(job.gpu_types) if k else ())


def _pod_key(pod: Pod) -> tuple:
    """The key typical pods are counted by (`FragModel.from_pods`: CPU, milli
    per GPU, GPUs, model list; memory ignored)."""
    return (pod.c, pod.m, pod.k, "|".join(pod.types) if pod.k else "")


def counted_target(pods: Iterable[Pod], held: Iterable[tuple[Pod, int]] = (),
                   threshold: float = 0.95) -> FragModel | None:
    """FGD's target workload from the pending jobs' pods and ``held``, the
    pods of the waiting jobs a session holds out of the round, by shape
    (``(pod, how many)``): the model `FragModel.from_pods` gives all those
    pods, counted by key -- its rule (count per key, keys by count then key,
    descending, kept until their count reaches ``threshold`` of all pods,
    popularities normalised; each GPU model list's share of the GPU milli
    asked) read off the counts, so ``n`` held-out pods of one shape cost one
    step.  None when there is no pod.

    Examples
    --------
    >>> from alloc.solvers.fgd.engine import FragModel, Pod
    >>> from alloc.solvers.fgd.solvers import counted_target
    >>> a, b = Pod(4000, 8000, 1, 1000, ("V100",)), Pod(2000, 4000, 2, 1000)
    >>> fm = counted_target([a, b], [(a, 20), (b, 3)])
    >>> want = FragModel.from_pods([a] * 21 + [b] * 4)
    >>> fm.p.tolist() == want.p.tolist(), fm.typed_demand == want.typed_demand
    (True, True)
    """
    counts: dict[tuple, int] = {}
    typed: dict[tuple, int] = {}
    gtot = 0
    for pod, n in [*((p, 1) for p in pods), *held]:
        if n <= 0:
            continue
        g = pod.g * n
        if pod.k and pod.types:
            typed[pod.types] = typed.get(pod.types, 0) + g
        key = _pod_key(pod)
        counts[key] = counts.get(key, 0) + n
        gtot += g
    if not counts:
        return None
    total = sum(counts.values())
    kept, acc = [], 0
    for key, n in sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True):
        kept.append((key, n))
        acc += n
        if acc >= threshold * total:
            break
    tot = sum(n for _, n in kept) or 1
    gtot = gtot or 1
    return FragModel([k[0] for k, _ in kept], [k[1] for k, _ in kept], [k[2] for k, _ in kept],
                     [tuple(t for t in k[3].split("|") if t) for k, _ in kept],
                     [n / tot for _, n in kept], {t: g / gtot for t, g in typed.items()})


def _pending_target(problem: Problem, pods: list) -> FragModel | None:
    """FGD's target workload from the pending jobs' pods (``(job, pod)``
    pairs) and the waiting jobs the session holds out of the round."""
    held = _held_pods(problem)
    if held:
        return counted_target((pod for _, pod in pods), held)
    return FragModel.from_pods([pod for _, pod in pods]) if pods else None


def _held_pods(problem: Problem) -> list[tuple[Pod, int]]:
    """The pods of the waiting jobs the session holds out of this round
    (`alloc.carry.Carry.held_out`), by shape, at their requests."""
    carry = problem.carry
    held = carry.held_out if carry is not None else ()
    out = []
    for job, n in held:
        k, opt = int(job.gpus), pareto_options(job)[0]
        out.append((Pod(int(opt.cpu), int(opt.mem), k, int(job.gpu_milli) if k else 0,
                        tuple(job.gpu_types) if k else ()), n))
    return out


def _parts(problem: Problem, job, a) -> list[tuple[int, list[int], Pod]]:
    """A running job's pods, one per server it uses: (server, GPU slots, pod)."""
    first = problem.gpu_first
    if len(a.cpu) == 1 and len(a.mem) == 1 and a.mem[0][0] == a.cpu[0][0]:
        s = a.cpu[0][0]              # one server (the usual case), if its GPUs are there
        lo, w = int(first[s]), problem.cluster.servers[s].gpus
        gpus = [int(g) - lo for g, _ in a.gpus]
        if all(0 <= i < w for i in gpus):
            return [(s, gpus, Pod(int(a.cpu[0][1]), int(a.mem[0][1]), len(gpus),
                                  job.gpu_milli if gpus else 0))]
    parts: dict[int, list] = defaultdict(lambda: [0, 0, []])
    for s, v in a.cpu:
        parts[s][0] += v
    for s, v in a.mem:
        parts[s][1] += v
    for g, _ in a.gpus:
        s = int(problem.gpu_server[g])
        parts[s][2].append(int(g - first[s]))
    milli = job.gpu_milli
    return [(s, gpus, Pod(int(c), int(m), len(gpus), milli if gpus else 0))
            for s, (c, m, gpus) in sorted(parts.items())]


def _apply_running(problem: Problem, state: ClusterState, jobs=None) -> None:
    """Put the running jobs kept in place (or those of ``jobs``) into the
    state, server by server."""
    fixed = problem.fixed
    for j in (fixed if jobs is None else jobs):
        for s, gpus, pod in _parts(problem, problem.jobs[j], fixed[j]):
            state.apply(s, gpus, pod)


class _Kept:
    """The state carried to the next round: the cluster state with the
    running jobs of problem ``stamp`` and the pods placed on top of it
    (``(job id, server, GPU slots, pod)`` each), and the policy that placed
    them with what it was made from (``(name, seed, options, target
    workload)``), which a one-job round may use again (`one_job`)."""
    __slots__ = ("stamp", "state", "placed", "policy", "made")

    def __init__(self, stamp: int, state: ClusterState, placed: list, policy=None, made=None):
        self.stamp, self.state, self.placed = stamp, state, placed
        self.policy, self.made = policy, made


def _state(problem: Problem) -> ClusterState:
    """The cluster state as the running jobs leave it: the carried one with
    what changed applied, else a new one."""
    carry, ch = problem.carry, problem.changes
    kept = carry.take(_KEY) if carry is not None else None
    if kept is not None and ch is not None and ch.since == kept.stamp:
        st = kept.state
        # a pod placed last round that now runs as placed stays as it is
        own = {jid: (n, gpus, pod) for jid, n, gpus, pod in kept.placed}
        added = []
        for j in ch.added:
            job = problem.jobs[j]
            parts = _parts(problem, job, problem.fixed[j])
            if len(parts) == 1 and own.get(job.id) == parts[0]:
                del own[job.id]
            else:
                added.extend(parts)
        for n, gpus, pod in own.values():
            st.remove(n, gpus, pod, untag=True)
        for _, job, a in ch.removed:
            for n, gpus, pod in _parts(problem, job, a):
                st.remove(n, gpus, pod, untag=True)
        for n, gpus, pod in added:       # as `_apply_running`, in the same order
            st.apply(n, gpus, pod)
        st.restart_log()
        return st
    servers = problem.cluster.servers
    st = ClusterState([s.cpu for s in servers], [s.mem for s in servers],
                      [s.gpus for s in servers],
                      [(s.gpu_type or "") if s.gpus else "" for s in servers], max_pods=1 << 62)
    _apply_running(problem, st)
    return st


_KEY = "fgd-cluster-state"


def target_model(target) -> FragModel:
    """The target workload given by the ``target`` option as a `FragModel`.

    ``target`` maps ``c`` (milli-CPU), ``m`` (milli-GPU per GPU), ``k``
    (GPUs), ``types`` (lists of GPU models, empty: any) and ``p``
    (popularities, summing to 1) to one list each, one entry per typical pod
    type, and optionally ``typed_demand`` to ``[models, share]`` pairs (the
    share of the GPU demand restricted to those models).  The same mapping
    object gives the same model (kept while it lives).

    Examples
    --------
    >>> fm = target_model({"c": [4000], "m": [500], "k": [1], "types": [[]], "p": [1.0]})
    >>> fm.T, int(fm.m[0])
    (1, 500)
    """
    hit = _TARGETS.get(id(target))
    if hit is not None and hit[0] is target:
        return hit[1]
    try:
        cols = [list(target[key]) for key in ("c", "m", "k", "types", "p")]
        if len({len(c) for c in cols}) != 1 or not cols[0]:
            raise ValueError("c, m, k, types and p: expected lists of one equal, non-zero "
                             "length")
        demand = {tuple(t): float(v) for t, v in target.get("typed_demand") or ()}
        fm = FragModel([int(x) for x in cols[0]], [int(x) for x in cols[1]],
                       [int(x) for x in cols[2]], [tuple(t) for t in cols[3]],
                       [float(x) for x in cols[4]], demand)
    except KeyError as exc:
        raise ValueError(f"option 'target': expected the key {exc} (c, m, k, types and p "
                         "are required)") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"option 'target': {exc}") from None
    if len(_TARGETS) > 64:
        _TARGETS.clear()
    _TARGETS[id(target)] = (target, fm)
    return fm


#: target mappings seen -> (the mapping, its model)
_TARGETS: dict[int, tuple] = {}


def target_option(fm: FragModel) -> dict:
    """The ``target`` option that gives ``fm`` (`target_model`'s inverse)."""
    return {"c": fm.c.tolist(), "m": fm.m.tolist(), "k": fm.k.tolist(),
            "types": [list(t) for t in fm.types], "p": fm.p.tolist(),
            "typed_demand": [[list(t), v] for t, v in fm.typed_demand.items()]}


def run_online(problem: Problem, policy: str, seed: int = 0, *,
               deadline: Deadline, target=None, **policy_options) -> Solution:
    """Place the pending jobs of ``problem`` in rank order with the policy of
    the solver named ``policy`` (`new_policy`), fragmentation measured
    against ``target`` (`target_model`) or the pending jobs."""
    pods = [(j, _pod(problem, j)) for j in job_order(problem)]
    state = _state(problem)
    fm = target_model(target) if target is not None else _pending_target(problem, pods)
    pol = _policy(policy, seed, policy_options, fm, deadline)
    sol, placed = _place(problem, pods, state, pol, fm, policy, seed, deadline)
    if problem.carry is not None:
        problem.carry.keep(_KEY, _Kept(problem.stamp, state, placed, pol,
                                       (policy, seed, policy_options, fm)))
    return sol


def _policy(policy: str, seed: int, options: dict, fm: FragModel | None, deadline: Deadline):
    """A new node-scoring policy (its share prices set against ``fm``)."""
    pol = new_policy(policy, seed, **options)
    if fm is not None and hasattr(pol, "prices"):
        pol.prices(fm, deadline)  # fgd-lookahead's share prices
    return pol


def _place(problem: Problem, pods: list, state: ClusterState, pol, fm: FragModel | None,
           policy: str, seed: int, deadline: Deadline) -> tuple[Solution, list]:
    """Place ``pods`` (``(job index, pod)`` in rank order) on ``state`` with
    ``pol``, fragmentation measured against ``fm``: the solution and the pods
    placed, ``(job id, server, GPU slots, pod)`` each.  ``random`` draws
    each job's server from its own generator (`job_rng`)."""
    if fm is not None and state.fm is not fm and pol.reads_frag:
        state.set_frag_model(fm)     # FGD's scores read it; the others' do not
    sol = Solution(status=Status.FEASIBLE)
    placed = []
    draws = pol.name == "random"
    for j, pod in pods:
        # one check per job: a pod kind's first arrival scores every server
        if deadline.expired():
            sol.stats["stopped"] = "time limit"
            break
        if draws:
            pol.rng = job_rng(seed, problem.jobs[j].id)
        r = place(state, pol, pod)
        if r is None:
            continue
        n, gpus = r
        placed.append((problem.jobs[j].id, n, list(gpus), pod))
        if pod.k:
            first = int(problem.gpu_first[n])
            sol.assign[j] = problem.make_assign(j, [first + int(i) for i in gpus], 0)
        else:
            sol.assign[j] = problem.make_cpu_assign(j, n, 0)
    sol.stats.update(policy=pol.name, placed=len(sol.assign), jobs=len(pods))
    return sol, placed


def job_rng(seed: int, job_id: str) -> np.random.Generator:
    """The random policy's generator for one job: seeded by the call's seed
    and the job's id (CRC-32 of its UTF-8 bytes), so that a job's draw is
    the same whichever round places it and whichever jobs wait beside it.

    Examples
    --------
    >>> int(job_rng(42, "p7").integers(100)) == int(job_rng(42, "p7").integers(100))
    True
    """
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(str(job_id).encode())])


def one_job(problem: Problem, carry, policy: str, seed: int = 0, *, deadline: Deadline,
            target=None, **policy_options) -> Solution | None:
    """The answer of a full round whose one pending job is ``problem``'s only
    job, the running jobs those of the last round (nothing changed since):
    the pod placed on the cluster state carried from that round
    (`alloc.session.fast`), which keeps it.  None when no state was
    carried (a full round is needed).

    ``problem`` is compiled on the session's cluster with that one job and no
    running job; the carried state stands for the running jobs.  The policy
    carried with it scores the pod when it was made from the same name, seed,
    options and target workload (its score index is a cache of the node
    scores, brought up to date from the state's change log; ``random`` draws
    from the job's own generator, `job_rng`); otherwise a new one does, as in
    the full round.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> from alloc.carry import Carry
    >>> from alloc.deadline import Deadline
    >>> from alloc.problem import compile_problem
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> p = compile_problem(cl, [Job("a", 1, cpu=1000, mem=1000)])
    >>> one_job(p, Carry(), "fgd", deadline=Deadline.never()) is None
    True
    """
    kept = carry.take(_KEY)
    if kept is None:
        return None
    try:
        pod = _pod(problem, 0)
        fm = target_model(target) if target is not None else FragModel.from_pods([pod])
        made = kept.made
        if (kept.policy is not None and made is not None
                and made[0] == policy and made[1] == seed and made[2] == policy_options
                and made[3] is fm):
            pol = kept.policy
        else:
            kept.state.restart_log()
            pol = _policy(policy, seed, policy_options, fm, deadline)
            kept.policy, kept.made = pol, (policy, seed, policy_options, fm)
        sol, placed = _place(problem, [(0, pod)], kept.state, pol, fm, policy, seed, deadline)
        kept.placed.extend(placed)
    except BaseException:
        kept.policy = kept.made = None
        raise
    finally:
        carry.keep(_KEY, kept)
    return sol


def _make(policy: str):
    def solve(problem: Problem, *, deadline: Deadline, seed: int = 0, **options) -> Solution:
        return run_online(problem, policy, seed, deadline=deadline, **options)

    def one(problem: Problem, carry, *, deadline: Deadline, seed: int = 0, **options):
        return one_job(problem, carry, policy, seed, deadline=deadline, **options)
    solve.one_job = one  # type: ignore[attr-defined]  # the one-new-job round (alloc.session.fast)
    solve.__name__ = "solve_" + policy.replace("-", "_")
    solve.__doc__ = (f"The ``{policy}`` solver's online policy over the pending jobs "
                     "(see the module notes).")
    return solve


solve_random = _make("random")
solve_dotprod = _make("dotprod")
solve_gpu_clustering = _make("gpu-clustering")
solve_gpu_packing = _make("gpu-packing")
solve_openb_best_fit = _make("openb-best-fit")
solve_fgd = _make("fgd")
solve_fgd_lookahead = _make("fgd-lookahead")

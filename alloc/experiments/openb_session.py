"""The FGD experiment's online protocol through a [Session][alloc.session.Session].

The FGD protocol (Weng et al., ATC'23) places pods one at a time, in arrival
order, never moving a placed pod and dropping a pod that fits nowhere.
`SessionPolicy` runs it with any solver the registry knows -- the FGD
family's (`alloc.solvers.fgd`), another built-in one, a plug-in from an entry
point, or a ``"module:function"`` -- through a session over the nodes:

* arrival of pod ``i``: the session gets the job ``p<i>`` and runs one round
  (`Session.step`) with no moves allowed, so the pods already placed stay
  where they are (the checked path holds every round to the invariants);
* placed: the job's server and GPU indices become the node and the GPU slots
  the experiment applies to its state (allocation and fragmentation are then
  measured on it);
* not placed: the job is cancelled (`Session.stop`), as the protocol drops it.

Each round has one new job and nothing else changed, so a solver that
carries its state between rounds answers it without rebuilding the round
(`alloc.session.fast`: the FGD family's solvers); any other solver's round
costs a call over every pod placed so far.  The session asks for the
objective ``"gpus"`` (allocated GPU, what the experiment measures) from a
solver that honours it, and none from a solver placing by its own rule.
"""
from __future__ import annotations

from typing import Sequence

from ..gpukey import GpuKey, server_of
from ..errors import InputError
from ..model import Cluster, Job
from ..solvers.fgd import ClusterState, Pod


class SessionPolicy:
    """A registered solver placing one pod per round (see the module notes).

    Parameters
    ----------
    solver : str
        A solver name the registry resolves (`alloc.registry.use`).
    cluster : Cluster
        The nodes as a cluster (`alloc.experiments.openb.to_cluster`), in
        the order the solver breaks ties in (the lowest index wins).
    seed : int
        The session's seed.
    nodes : sequence of str, optional
        The node ids in the order of the experiment's state (default: the
        cluster's order): `select` returns an index into it.
    time_limit : float
        Seconds per round (one pod).
    options : dict
        The solver's options.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> from alloc.solvers.fgd import Pod
    >>> pol = SessionPolicy("best-fit", Cluster((Server("n0", 8000, 65536, 2, "V100"),)))
    >>> pol.select(None, Pod(c=1000, mem=1024, k=1, m=500))
    (0, [0])
    """
    name = "session"

    def __init__(self, solver: str, cluster: Cluster, seed: int = 0, *,
                 nodes: Sequence[str] | None = None, time_limit: float = 10.0, **options):
        from ..registry import get_solver, use
        from ..session import Session
        try:
            use(solver)
            info = get_solver(solver)
        except ValueError as exc:
            raise InputError(f"--policy: {exc}") from None
        self.name = solver
        # a solver placing by its own rule is asked for no objective
        objective = "gpus" if info.honours("gpus") else None
        self.session = Session(cluster, solver=solver, objective=objective, seed=seed,
                               time_limit=time_limit, options=options, max_moves=0)
        names = [s.id for s in cluster.servers] if nodes is None else list(nodes)
        self.node = {sid: n for n, sid in enumerate(names)}
        self.count = 0

    def select(self, state: ClusterState | None, pod: Pod):
        """Place ``pod`` by one session round: ``(node, gpu slots)`` or None
        (the pod is then cancelled).  ``state`` is not read: the session
        holds the same placements."""
        jid = f"p{self.count}"
        self.count += 1
        self.session.submit(Job(jid, gpus=pod.k, gpu_milli=pod.m if pod.k else 1000,
                                cpu=pod.c, mem=pod.mem, gpu_types=pod.types if pod.k else ()))
        r = self.session.step()
        if r.move or r.preempt:
            raise InputError(f"--policy {self.name}: moved or stopped placed pods, which the "
                             "FGD protocol forbids")
        placed = next((p for p in r.start if p.job == jid), None)
        if placed is None:
            self.session.stop(jid)
            return None
        servers = {server_of(g.gpu) for g in placed.gpus} or set(placed.cpu)
        if len(servers) != 1:
            raise InputError(f"--policy {self.name}: spread a pod over {len(servers)} nodes, "
                             "which the FGD protocol forbids")
        sid = servers.pop()
        slots = sorted(GpuKey.parse(g.gpu).gpu for g in placed.gpus)
        return self.node[sid], slots


def simulate_session(state: ClusterState, policy: SessionPolicy, pods: Sequence[Pod], *,
                     progress=None):
    """Every pod of ``pods`` attempted once in order by ``policy``, each
    placement applied to ``state``: (placements, used, frag), with
    ``placements[i]`` the node and GPU slots of pod ``i`` or None (dropped)
    and ``used``/``frag`` the allocated milli-GPU and the cluster
    fragmentation after each attempt."""
    import numpy as np
    out = []
    used = np.zeros(len(pods), dtype=np.int64)
    frag = np.zeros(len(pods))
    for i, pod in enumerate(pods):
        r = policy.select(state, pod)
        if r is not None:
            state.apply(r[0], r[1], pod)
        out.append(r)
        used[i] = state.used
        frag[i] = state.frag.sum()
        if progress is not None:
            progress(1)
    return out, used, frag


__all__ = ["SessionPolicy", "simulate_session"]

r"""Pollux on a heterogeneous cluster, blind to GPU types, as the Sia paper
runs it as a baseline (Jayaram Subramanya et al., SOSP'23, Table 3: the Sia
artifact's ``multi_simulator_unaware.py --policy=pollux --interval=60
--policy_p_val=-1``).

Pollux has no notion of GPU types; the Sia artifact runs it unchanged on a
cluster cut into **virtual nodes** and repairs its answer:

* every server of ``R`` GPUs is cut into $R / R_{min}$ virtual nodes of
  $R_{min}$ GPUs (the smallest GPUs per server; Sia's cluster: 6 x 4 T4,
  2 x 8 A100 and 3 x 8 RTX 2080 Ti make 16 nodes of 4), in server order;
  virtual node ``v`` of a server holds its GPUs $[vR_{min}, (v+1)R_{min})$;
* each job learns **one** throughput model for all types (a point
  ``(N, K, b)`` is kept as first measured, whatever the type,
  `alloc.goodput.job.SimJob` with ``merged``), and its speed-ups, batch
  limits and cap are those of the reference type (the artifact's ``aws``:
  T4): $K_j \le \min(\max(2 k^{max}_j, 1), K^{cl}, \lfloor M_{max}/b_{lo}
  \rfloor)$, with $K^{cl}$ the fewest GPUs of any one type (16 on Sia's
  cluster; ncf 1);
* Pollux's round (`alloc.sched.pollux.policy`: fitness, repair, genetic
  search over the virtual nodes, restart factor with 30 s) decides every
  job's GPUs per virtual node;
* a job whose GPUs span several types keeps only those of its **majority
  type** (a tie between the two most common types, in the order their
  nodes come, goes to the one first in A100, RTX 2080 Ti, T4); the
  others stay idle this round.  The repaired allocation is the next
  round's current one.

Each job then runs on its GPUs, listed by server: its placement (replicas per
server) and type decide, in the Sia artifact's way, whether it restarts (a new
type or a new placement) and how it picks its batch (on the type it runs on,
with the one model).

Examples
--------
>>> from alloc.goodput.workload import sia_cluster
>>> from alloc.sched.pollux.unaware import virtual_nodes
>>> v = virtual_nodes(sia_cluster().servers)
>>> len(v), v[6].server, v[6].gpus, v[7].gpus, v[6].gpu_type
(16, 6, (0, 1, 2, 3), (4, 5, 6, 7), 'A100')
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...goodput.speedup import JobModel, speedup_tables
from .policy import MAX_REPLICAS, Pollux, restart_factor

#: The reference GPU type whose batch limits the speed-ups use (the
#: artifact's ``aws``).
REFERENCE_TYPE = "T4"
#: Which type a job spread evenly over two keeps, best first (the artifact's
#: ``prio_order``: dgx-ext, rtx, aws).
TYPE_PRIORITY = ("A100", "RTX2080Ti", "T4")


@dataclass(frozen=True)
class VirtualNode:
    """A virtual node: ``gpus`` (indices) of server ``server`` (its index
    in the cluster), all of type ``gpu_type``."""
    server: int
    gpus: tuple[int, ...]
    gpu_type: str


def virtual_nodes(servers: Sequence[Any]) -> list[VirtualNode]:
    """The servers with GPUs cut into virtual nodes of the smallest
    server's GPUs (module notes), in server order.

    Raises
    ------
    ValueError
        A server whose GPUs are not a multiple of the smallest server's.
    """
    sizes = [s.gpus for s in servers if s.gpus]
    if not sizes:
        return []
    per = min(sizes)
    out = []
    for i, s in enumerate(servers):
        if not s.gpus:
            continue
        if s.gpus % per:
            raise ValueError(f"server {s.id!r}: {s.gpus} GPUs are not a multiple of {per} "
                             f"(virtual nodes of the smallest server)")
        for b in range(s.gpus // per):
            out.append(VirtualNode(i, tuple(range(b * per, (b + 1) * per)), str(s.gpu_type)))
    return out


def keep_majority(row: np.ndarray, types: Sequence[str],
                  priority: Sequence[str] = TYPE_PRIORITY) -> np.ndarray:
    """A job's row over virtual nodes with only its majority type's GPUs
    (module notes).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.pollux.unaware import keep_majority
    >>> keep_majority(np.array([2, 0, 4, 4]), ["T4", "T4", "A100", "A100"]).tolist()
    [0, 0, 4, 4]
    >>> keep_majority(np.array([4, 0, 4, 0]), ["T4", "T4", "A100", "A100"]).tolist()
    [0, 0, 4, 0]
    """
    gpus = [types[int(v)] for v in np.flatnonzero(row) for _ in range(int(row[v]))]
    counts = Counter(gpus).most_common()
    if len(counts) <= 1:
        return row
    rank = {t: i for i, t in enumerate(priority)}
    chosen = counts[0][0]
    if counts[0][1] == counts[1][1] and \
            rank.get(counts[1][0], len(rank)) < rank.get(chosen, len(rank)):
        chosen = counts[1][0]
    return np.where(np.array([t == chosen for t in types]), row, 0)


class PolluxUnaware(Pollux):
    """Pollux blind to GPU types on virtual nodes (module notes).  Give it
    as the run's sizing and mechanism, with a progress model whose jobs
    learn one model for all types (``GoodputProgress(profiles="merged")``).

    Parameters
    ----------
    seed, pop_size, generations
        As `Pollux`.
    reference_type : str
        The GPU type whose batch limits the speed-ups use (``T4``).
    """

    def __init__(self, seed: int | None = None, pop_size: int = 100, generations: int = 100,
                 reference_type: str = REFERENCE_TYPE) -> None:
        super().__init__(seed, pop_size, generations)
        self.reference_type = reference_type
        #: job id -> its GPUs per virtual node (the repaired decision)
        self.rows: dict[str, np.ndarray] = {}
        self._vnodes: list[VirtualNode] | None = None
        self._cluster: Any = None

    def vnodes(self, cluster: Any) -> list[VirtualNode]:
        """The cluster's virtual nodes (computed once per cluster)."""
        if self._vnodes is None or cluster is not self._cluster:
            self._vnodes, self._cluster = virtual_nodes(cluster.servers), cluster
        return self._vnodes

    def decide(self, jobs: Sequence[Any], ctx: Any) -> dict:
        """This round's allocation by the genetic search on virtual nodes,
        each job then kept to its majority type."""
        from ...goodput.ga import GaInput, adapt_seeds, search
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed if self.seed is not None
                                             else ctx.rng.randrange(2 ** 32))
        t0 = time.perf_counter()
        prog = self.progress(ctx)
        sims = {r.id: prog.state(r, ctx.now_s) for r in jobs}
        vn = self.vnodes(ctx.cluster)
        order = sorted(jobs, key=lambda r: (sims[r.id].attained_service, sims[r.id].arrival))
        ids = [r.id for r in order]
        J, V = len(order), len(vn)
        total = sum(len(v.gpus) for v in vn)
        per_type: dict[str, int] = {}
        for v in vn:
            per_type[v.gpu_type] = per_type.get(v.gpu_type, 0) + len(v.gpus)
        cluster_cap = min(per_type.values()) if per_type else 0
        fair = math.ceil(total / J) if J else 1
        models, factors, caps = [], [], []
        for r in order:
            sj = sims[r.id]
            ref = self.reference_type if self.reference_type in sj.truths else \
                next(iter(sj.truths))
            lim = sj.limits(ref)
            cap = 1 if sj.model == "ncf" else min(max(2 * sj.max_profiled_replicas(), 1),
                                                   cluster_cap, lim.max // lim.local_lo)
            params = sj.perf_params(ref) if sj.grad is not None else None
            models.append(JobModel(params, sj.grad, lim, cap))
            factors.append(restart_factor(ctx.now_s - sj.arrival, sj.restarts or 0))
            caps.append(cap)
        table = speedup_tables(models, V, MAX_REPLICAS, base=(1, fair))
        base = np.zeros((J, V), dtype=int)
        for i, jid in enumerate(ids):
            row = self.rows.get(jid)
            if row is not None:
                base[i] = row
        capacity = np.array([len(v.gpus) for v in vn], dtype=int)
        seeds = adapt_seeds(self.front, self.front_jobs, ids) if self.front is not None else None
        ga = GaInput(table, np.array(factors), base, np.array(caps, dtype=int), capacity)
        out = search(ga, self.rng, seeds, pop_size=self.pop_size, generations=self.generations)
        self.front, self.front_jobs = out.front, ids
        types = [v.gpu_type for v in vn]
        rows = np.array([keep_majority(out.best[i], types) for i in range(J)]).reshape(J, V)
        plan = self._plan(ctx, order, rows, base)
        self.rows = {jid: rows[i] for i, jid in enumerate(ids)}
        self.times.append(time.perf_counter() - t0)
        self.fitness.append((ctx.now_s, out.fitness))
        return plan

    def _plan(self, ctx: Any, order: list, rows: np.ndarray, base: np.ndarray
              ) -> dict[str, tuple[str | None, list[str]]]:
        """GPU names per job: a job whose row is unchanged keeps its GPUs;
        the others take free GPUs of their virtual nodes, listed by server."""
        vn = self.vnodes(ctx.cluster)
        servers = ctx.cluster.servers
        free = [list(v.gpus) for v in vn]
        where = {(v.server, g): i for i, v in enumerate(vn) for g in v.gpus}
        index = {s.id: i for i, s in enumerate(servers)}
        out: dict[str, tuple[str | None, list[str]]] = {}
        for i, r in enumerate(order):
            p = r.run.placement if r.running and r.run is not None else None
            if p is None or not rows[i].any() or not np.array_equal(rows[i], base[i]):
                continue
            names = [g.gpu for g in p.gpus]
            for g in names:
                sid, k = g.rsplit("/gpu", 1)
                free[where[(index[sid], int(k))]].remove(int(k))
            out[r.id] = (r.run.gpu_type, names)
        for i, r in enumerate(order):
            if r.id in out or not rows[i].any():
                continue
            names = []
            for v in np.flatnonzero(rows[i]):
                take, free[v] = free[v][:int(rows[i, v])], free[v][int(rows[i, v]):]
                names += [f"{servers[vn[v].server].id}/gpu{g}" for g in take]
            out[r.id] = (vn[int(np.flatnonzero(rows[i])[0])].gpu_type, names)
        return out


__all__ = ["PolluxUnaware", "REFERENCE_TYPE", "TYPE_PRIORITY", "VirtualNode", "keep_majority",
           "virtual_nodes"]

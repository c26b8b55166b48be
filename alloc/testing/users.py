r"""Users: who owns a job, what each user holds, and its dominant share.

Fairness is about users, not jobs.  An *owner* is a function from a job to
the name of its user; the fairness checkers group jobs by it.

* `by_tenant` (the default): the job's tenant, else the job itself -- the
  users of the `drf` solver.  A tenant without cells is a plain user: declare
  `Tenant("alice")` in the cluster and give her jobs `tenant="alice"`
  (not guaranteed).
* `by_job`: every job is a user of its own.
* `owners(mapping)`: an explicit job id -> user table (jobs it does not
  list fall back to `by_tenant`).

What a user holds is the sum over its placed jobs of the vector
``(milli-GPU, milli-cores, MiB)``; with the cluster's totals
``T = (1000 * #GPUs, sum of CPU, sum of memory)`` its **dominant share** is

$$
D_u = \max_{r \,:\, T_r > 0} \frac{A_{u,r}}{T_r},
$$

and its *weighted* dominant share is ``D_u / w_u`` (the quantity Dominant
Resource Fairness equalises; Ghodsi et al., NSDI'11, section 4).
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Mapping, Sequence

from ..model import Cluster, Job, Placement

#: A job's owner: a function from a job to its user's name.
Owner = Callable[[Job], str]


def by_tenant(job: Job) -> str:
    """The job's tenant, else the job's own id (the users of `drf`).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.testing import by_tenant
    >>> by_tenant(Job("j1", tenant="alice")), by_tenant(Job("j2"))
    ('alice', 'j2')
    """
    return job.tenant if job.tenant is not None else job.id


def by_job(job: Job) -> str:
    """Every job is a user of its own."""
    return job.id


def owners(table: Mapping[str, str], default: Owner = by_tenant) -> Owner:
    """An owner from a job id -> user table (unlisted jobs: ``default``).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.testing import owners
    >>> owner = owners({"a": "alice", "b": "alice"})
    >>> owner(Job("a")), owner(Job("b")), owner(Job("c"))
    ('alice', 'alice', 'c')
    """
    table = dict(table)
    return lambda job: table.get(job.id) or default(job)


def user_weights(jobs: Sequence[Job], owner: Owner = by_tenant,
                 weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Each user's weight: ``weights[user]`` when given, else 1 for a user
    that owns several jobs or a tenant, else its one job's ``weight`` (the
    `drf` solver's rule)."""
    out: dict[str, float] = {}
    for j in jobs:
        u = owner(j)
        if weights and u in weights:
            out[u] = float(weights[u])
        elif u in out or j.tenant is not None or u != j.id:
            out[u] = 1.0
        else:
            out[u] = float(j.weight)
    return out


def totals(cluster: Cluster) -> tuple[float, float, float]:
    """The cluster's totals ``(milli-GPU, milli-cores, MiB)``."""
    return (1000.0 * cluster.total_gpus, float(sum(s.cpu for s in cluster.servers)),
            float(sum(s.mem for s in cluster.servers)))


def held(p: Placement) -> tuple[float, float, float]:
    """What one placement holds: ``(milli-GPU, milli-cores, MiB)``."""
    return (float(sum(g.milli for g in p.gpus)), float(sum(p.cpu.values())),
            float(sum(p.mem.values())))


def dominant_share(vectors: Iterable[tuple[float, float, float]],
                   total: tuple[float, float, float]) -> float:
    """``max_r sum(v_r) / T_r`` over the resources the cluster has."""
    s = [0.0, 0.0, 0.0]
    for v in vectors:
        for r in range(3):
            s[r] += v[r]
    return max((s[r] / total[r] for r in range(3) if total[r] > 0), default=0.0)


def weighted(share: float, weight: float) -> float:
    """``share / weight``; a user of weight 0 comes after every other (inf
    unless it holds nothing)."""
    if weight > 0:
        return share / weight
    return math.inf if share > 0 else 0.0


def dominant_shares(cluster: Cluster, jobs: Sequence[Job], placements: Sequence[Placement],
                    owner: Owner = by_tenant) -> dict[str, float]:
    """Each user's dominant share under ``placements`` (users without a
    placed job at 0).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, Tenant, allocate
    >>> from alloc.testing import dominant_shares
    >>> c = Cluster((Server("s0", cpu=9000, mem=18432, gpus=0),),
    ...             tenants={"A": Tenant("A"), "B": Tenant("B")})
    >>> jobs = ([Job(f"A{k}", cpu=1000, mem=4096, tenant="A") for k in range(6)]
    ...         + [Job(f"B{k}", cpu=3000, mem=1024, tenant="B") for k in range(6)])
    >>> a = allocate(c, jobs, solver="drf")
    >>> {u: round(d, 3) for u, d in dominant_shares(c, jobs, a.placements).items()}
    {'A': 0.667, 'B': 0.667}
    """
    by_id = {j.id: j for j in jobs}
    total = totals(cluster)
    vec: dict[str, list] = {owner(j): [] for j in jobs}
    for p in placements:
        if p.job in by_id:
            vec[owner(by_id[p.job])].append(held(p))
    return {u: dominant_share(v, total) for u, v in vec.items()}


__all__ = ["Owner", "by_job", "by_tenant", "dominant_share", "dominant_shares", "held", "owners",
           "totals", "user_weights", "weighted"]

"""The capabilities an input needs of a solver (`SolverInfo.capabilities`).

Computed once per call ([`alloc.call.make_call`][alloc.call.make_call]) and per
compiled problem ([`Problem.needs`][alloc.problem.Problem.needs]), and carried
from there: solvers that pick other solvers by capability (the exact family's
warm start) read the problem's, never compute them again.
"""
from __future__ import annotations

from typing import Sequence

from .model import Cluster, Job
from .resources import needs as resource_needs


def needed_capabilities(cluster: Cluster, jobs: Sequence[Job],
                        preempt: str | None = None) -> frozenset[str]:
    """Capabilities a solver must have to handle this input correctly (and
    the call's preemption rule).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> sorted(needed_capabilities(cl, [Job("a", 2, cpu=1, mem=1, locality="socket")], "order"))
    ['locality', 'order-preemption']
    """
    need = {"order-preemption"} if preempt == "order" else set()
    for j in jobs:
        if j.gpus == 1 and j.gpu_milli < 1000:
            need.add("sharing")
        if j.locality is not None and j.locality not in ("server", "gpu"):
            need.add("locality")
        if j.preferred is not None and (j.gpus > 1 or (j.max_gpus or 0) > 1):
            need.add("preferred")
        if j.tenant is not None or j.guaranteed:
            need.add("tenancy")
        if j.elastic:
            need.add("elastic")
        if j.even_servers:
            need.add("even-spread")
        if j.profile is not None and j.profile.goodput is not None:
            need.add("goodput")
    if cluster.tenants:
        need.add("tenancy")
    need |= resource_needs(cluster, jobs)
    return frozenset(need)


__all__ = ["needed_capabilities"]

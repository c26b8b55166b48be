r"""PipeSwitch's allocation decision: which inference services share GPUs
with which training jobs (Bai et al., OSDI'20, sections 2.2 and 3).

Model.  Every GPU runs at most one training job (single-GPU training, as in
the paper) and any number of inference services.  Time is cut in cycles of
$T$ seconds.  In each cycle a GPU switches to each of its services in turn
-- a switch to service $i$ costs $s_i$ (the mechanism's Table 3 figure for
its model on the GPU's type) -- serves it for its window
$w_i = \rho_i T$, where $\rho_i = \lambda_i t_i$ is the share of GPU time its
load needs ($\lambda_i$ batches per second, $t_i$ seconds per batch: the
ready model's time, or under MPS the contended one), then switches back to
the training job ($s_\mathrm{train}$, the figure of the training model)
which runs for the rest of the cycle.  Per GPU and cycle

$$
\sum_{i \in g} (w_i + s_i) + [\text{training and services on } g]\, s_\mathrm{train} \le T .
$$

A request that arrives just after its service's window waits for the rest
of the cycle, so its latency is at most $L_i = T - w_i + s_i + t_i$: a
service *can share* a GPU with training only if $L_i$ is within its SLO and
$w_i + s_i + s_\mathrm{train} \le T$.

Decision.

1. Training jobs take one GPU each, in the given order (the rest wait).
2. Services that cannot share get a GPU of their own (no switching: they
   answer in $t_i$); when none is free, the last training job placed gives
   its GPU up -- inference preempts training.
3. The other services, largest $w_i + s_i$ first, go best fit: onto the
   GPU whose cycle has the least time left that still holds them, GPUs
   without training counted before those with (a service there costs
   training nothing).  A service that fits nowhere is treated as in step 2.

The result is checked by the core: each service holds the milli-GPU share
$\lceil 1000 (w_i + s_i) / T \rceil$ of its GPU (1000 alone on its GPU), the
training job the share left, and [allocate][alloc.solve.allocate] with every job
running where decided must return it unchanged and pass ``violations()``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..gpukey import server_of
from ..errors import InputError
from ..model import MILLI, Allocation, Cluster, GpuShare, Job, Placement
from .costs import SwitchCosts, check_mechanism, load_costs


@dataclass(frozen=True)
class Service:
    """An inference service: model, load (batches per second), SLO (ms)."""
    id: str
    model: str
    rate: float
    slo_ms: float


@dataclass(frozen=True)
class Training:
    """A single-GPU training job."""
    id: str
    model: str


@dataclass(frozen=True)
class ServicePlan:
    """Where a service runs and what it sees (seconds, milliseconds).

    Attributes
    ----------
    gpu : str
    window_s, switch_s, batch_s : float
        Its window per cycle, one switch to it, one batch.
    worst_ms : float
        The latency of a lone request that arrives just after its window,
        $T - w + s + t$ (a GPU of its own: $t$); requests queued behind
        others wait longer.
    shared : bool
        It shares the GPU with a training job.
    """
    gpu: str
    window_s: float
    switch_s: float
    batch_s: float
    worst_ms: float
    shared: bool


@dataclass(frozen=True)
class GpuPlan:
    """One GPU's cycle: its training job, its services, the seconds per
    cycle spent on inference windows and on switches (``train_switch_s`` of
    them back to training), the training share."""
    gpu: str
    training: str | None
    services: tuple[str, ...]
    inference_s: float
    switch_s: float
    train_switch_s: float
    training_share: float


@dataclass(frozen=True)
class ShareDecision:
    """The decision and its checked allocation."""
    cycle_s: float
    mechanism: str
    gpus: tuple[GpuPlan, ...]
    services: Mapping[str, ServicePlan]
    waiting: tuple[str, ...]
    allocation: Allocation
    jobs: tuple[Job, ...]

    @property
    def lost_share(self) -> float:
        """GPU time lost to switching, over all GPUs' time."""
        return sum(g.switch_s for g in self.gpus) / (self.cycle_s * max(1, len(self.gpus)))

    @property
    def training_share(self) -> float:
        """GPU time left to training, over all GPUs' time."""
        return sum(g.training_share for g in self.gpus) / max(1, len(self.gpus))


class _Gpu:
    def __init__(self, gid: str, gtype: str, training: Training | None):
        self.id, self.type, self.training = gid, gtype, training
        self.services: list[tuple[Service, float, float, float]] = []   # (svc, w, s, t)
        self.train_s = 0.0
        self.dedicated = False

    def used(self) -> float:
        return sum(w + s for _, w, s, _ in self.services) + (
            self.train_s if self.training and self.services else 0.0)


def _check_inputs(trainings, services, cycle_s) -> None:
    if isinstance(cycle_s, bool) or not isinstance(cycle_s, (int, float)) \
            or not math.isfinite(cycle_s) or cycle_s <= 0:
        raise InputError(f"cycle_s: expected a number > 0 (seconds), got {cycle_s!r}")
    seen = set()
    for where, items in (("trainings", trainings), ("services", services)):
        for k, x in enumerate(items):
            if x.id in seen:
                raise InputError(f"{where}[{k}].id: {x.id!r} is used twice")
            seen.add(x.id)
    for k, s in enumerate(services):
        for f in ("rate", "slo_ms"):
            v = getattr(s, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                raise InputError(f"services[{k}].{f}: expected a number > 0, got {v!r}")


def _sizes(svc: Service, k: int, gtype: str, cycle_s: float, mech: str, costs: SwitchCosts):
    t = costs.batch_s(gtype, svc.model, mech, where=f"services[{k}].model")
    s = costs.switch_s(gtype, svc.model, mech, where=f"services[{k}].model")
    if cycle_s <= s:
        raise InputError(f"cycle_s: {cycle_s:g} s is not longer than the switch cost of "
                         f"{svc.model!r} on {gtype} with {mech} ({s * 1e3:g} ms)")
    return svc.rate * t * cycle_s, s, t


def share_gpus(cluster: Cluster, trainings: Sequence[Training], services: Sequence[Service], *,
               cycle_s: float, mechanism: str = "pipeswitch",
               costs: SwitchCosts | None = None) -> ShareDecision:
    """The decision of the module notes on ``cluster``'s GPUs.

    Raises
    ------
    InputError
        A bad cycle or load, an unknown model, a cycle no longer than a switch.
    """
    check_mechanism(mechanism)
    _check_inputs(trainings, services, cycle_s)
    costs = costs or load_costs()
    gpus = [_Gpu(g, s.gpu_type, None) for s in cluster.servers for g in s.gpu_ids()]
    types = sorted({g.type for g in gpus})
    if not gpus:
        raise InputError("cluster: expected at least one GPU")
    for k, tr in enumerate(trainings):
        for t in types:
            s = costs.switch_s(t, tr.model, mechanism, where=f"trainings[{k}].model")
            if cycle_s <= s:
                raise InputError(f"cycle_s: {cycle_s:g} s is not longer than the switch cost "
                                 f"of {tr.model!r} on {t} with {mechanism} ({s * 1e3:g} ms)")
    for g, tr in zip(gpus, trainings):
        g.training = tr
        g.train_s = costs.switch_s(g.type, tr.model, mechanism)
    sizes = {(svc.id, t): _sizes(svc, k, t, cycle_s, mechanism, costs)
             for k, svc in enumerate(services) for t in types}
    alone: list[Service] = []
    share: list[Service] = []
    for svc in services:
        w, s, t = sizes[(svc.id, types[0])]
        ok = cycle_s - w + s + t <= svc.slo_ms / 1e3 and w + s + max(
            (g.train_s for g in gpus if g.training), default=0.0) <= cycle_s
        (share if ok else alone).append(svc)
    for svc in sorted(alone, key=lambda x: -sizes[(x.id, types[0])][0]):
        _dedicated(svc, gpus, sizes, cycle_s)
    for svc in sorted(share, key=lambda x: -sum(sizes[(x.id, types[0])][:2])):
        if not _best_fit(svc, gpus, sizes, cycle_s):
            _dedicated(svc, gpus, sizes, cycle_s)
    return _decision(cluster, gpus, trainings, cycle_s, mechanism)


def _dedicated(svc: Service, gpus: list[_Gpu], sizes, cycle_s: float) -> None:
    """A GPU of its own: a free one, else one taken from the last training job."""
    free = [g for g in gpus if g.training is None and not g.services and not g.dedicated]
    if not free:
        trained = [g for g in gpus if g.training is not None and not g.services] \
            or [g for g in gpus if g.training is not None and len(g.services) == 0]
        if not trained:
            raise InputError(f"services: no GPU left for service {svc.id!r} (each GPU already "
                             f"serves a service that cannot share)")
        trained[-1].training = None
        free = [trained[-1]]
    g = free[0]
    g.dedicated = True
    g.services.append((svc, *sizes[(svc.id, g.type)]))


def _best_fit(svc: Service, gpus: list[_Gpu], sizes, cycle_s: float) -> bool:
    best = None
    for rank, g in enumerate(gpus):
        if g.dedicated:
            continue
        w, s, t = sizes[(svc.id, g.type)]
        extra = w + s + (g.train_s if g.training and not g.services else 0.0)
        if g.used() + extra > cycle_s + 1e-12:
            continue
        key = (g.training is not None, cycle_s - g.used() - extra, rank)
        if best is None or key < best[0]:
            best = (key, g)
    if best is None:
        return False
    g = best[1]
    g.services.append((svc, *sizes[(svc.id, g.type)]))
    return True


def _decision(cluster: Cluster, gpus: list[_Gpu], trainings, cycle_s: float,
              mechanism: str) -> ShareDecision:
    plans, svc_plans, jobs = [], {}, []
    for g in gpus:
        solo = g.training is None and len(g.services) == 1
        back = g.train_s if g.training and g.services else 0.0
        sw = 0.0 if solo else sum(s for _, _, s, _ in g.services) + back
        inf = sum(w for _, w, _, _ in g.services)
        share = max(0.0, (cycle_s - inf - sw) / cycle_s) if g.training else 0.0
        plans.append(GpuPlan(g.id, g.training.id if g.training else None,
                             tuple(x[0].id for x in g.services), inf, sw, back, share))
        used = 0
        for svc, w, s, t in g.services:
            worst = t if solo else cycle_s - w + s + t
            svc_plans[svc.id] = ServicePlan(g.id, w, 0.0 if solo else s, t, worst * 1e3,
                                            g.training is not None)
            milli = MILLI if solo else min(MILLI, max(1, math.ceil(MILLI * (w + s) / cycle_s)))
            used += milli
            jobs.append(_running(cluster, svc.id, g.id, milli))
        if g.training is not None and MILLI - used - math.ceil(MILLI * g.train_s / cycle_s) > 0:
            jobs.append(_running(cluster, g.training.id, g.id,
                                 MILLI - used - math.ceil(MILLI * g.train_s / cycle_s)))
    placed = {p.training for p in plans}
    waiting = tuple(t.id for t in trainings if t.id not in placed)
    from ..solve import allocate
    alloc = allocate(cluster, jobs, solver="best-fit", instance="pipeswitch")
    return ShareDecision(cycle_s, mechanism, tuple(plans), svc_plans, waiting, alloc,
                         tuple(jobs))


def _running(cluster: Cluster, jid: str, gpu: str, milli: int) -> Job:
    sid = server_of(gpu)
    return Job(jid, 1, gpu_milli=milli,
               current=Placement(jid, (GpuShare(gpu, milli),), {sid: 0}, {sid: 0}, 1.0))


__all__ = ["GpuPlan", "Service", "ServicePlan", "ShareDecision", "Training", "share_gpus"]

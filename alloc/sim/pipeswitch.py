r"""A simulator of GPUs shared over time by training and inference
(PipeSwitch, Bai et al., OSDI'20).

Scheduling-cycle experiment ([cycle_run][alloc.sim.pipeswitch.cycle_run],
the paper's Fig. 6).  One GPU alternates every $T$ seconds between a
training task and an inference task of the same model; during the
inference half a closed-loop client sends one batch after another and
counts those answered within the $T$ seconds.  Under PipeSwitch and
stop-and-start the first batch of a half waits for the switch ($s$, Table 3)
and then runs in the ready model's time $t$; the next ones take $t$ each.
Under MPS the training task never stops: the first batch takes $t$ plus the
MPS overhead of Table 3, the next ones the contended latency (80 ms for
ResNet152 on a V100).  The ready model (no training task) answers every
batch in $t$: the upper bound.  Throughput is batches answered per second
of the inference half (times the paper's eight instances), GPU utilisation
the paper's: throughput over the upper bound.  The GPU time lost to
switching is the part of the inference half before the first batch starts
computing (all of it when the switch outlasts the half).

Shared-cluster run ([shared_run][alloc.sim.pipeswitch.shared_run]) of a
[ShareDecision][alloc.pipeswitch.decide.ShareDecision]: each service's
requests (one batch each) arrive as a Poisson process at its rate.  At each
cycle boundary a GPU visits its services with waiting requests in turn:
a switch $s_i$ (none on a GPU of its own), then it serves that queue until
it is empty (requests arriving meanwhile included); then, if it served
any, it switches back to its training job ($s_\mathrm{train}$), which runs
until the next boundary.  A GPU of its own serves each request at once.
Measured: each request's latency (arrival to answer), the GPU time spent
switching, on inference and left to training.
"""
from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Mapping

from ..errors import InputError
from ..pipeswitch.costs import SwitchCosts, check_mechanism, load_costs
from ..pipeswitch.decide import ShareDecision

#: The paper's Fig. 6 setup: eight p3.2xlarge instances.
INSTANCES = 8


@dataclass(frozen=True)
class CyclePoint:
    """One mechanism at one cycle length (Fig. 6)."""
    mechanism: str
    cycle_s: float
    throughput: float
    upper_bound: float
    utilisation: float
    mean_latency_ms: float
    first_latency_ms: float
    lost_share: float


def _window(cycle_s: float, first: float, later: float, start: float) -> tuple[list[float], float]:
    """Latencies of the batches a closed-loop client gets answered within
    one half of ``cycle_s``; and the seconds before computing starts."""
    lat, t = [], 0.0
    step = first
    while t + step < cycle_s:
        t += step
        lat.append(step)
        step = later
    return lat, min(start, cycle_s)


def cycle_run(mechanism: str, cycle_s: float, *, model: str = "ResNet152",
              gpu_type: str = "V100", costs: SwitchCosts | None = None,
              instances: int = INSTANCES) -> CyclePoint:
    """The scheduling-cycle experiment at one cycle (see the module notes).

    Raises
    ------
    InputError
        An unknown mechanism or model, a cycle that is not a positive number.
    """
    check_mechanism(mechanism)
    if isinstance(cycle_s, bool) or not isinstance(cycle_s, (int, float)) \
            or not math.isfinite(cycle_s) or cycle_s <= 0:
        raise InputError(f"cycle_s: expected a number > 0 (seconds), got {cycle_s!r}")
    costs = costs or load_costs()
    t = costs.batch_s(gpu_type, model)
    s = costs.switch_s(gpu_type, model, mechanism)
    if mechanism == "mps":
        lat, lost = _window(cycle_s, t + s, costs.batch_s(gpu_type, model, "mps"), 0.0)
    else:
        lat, lost = _window(cycle_s, s + t, t, s)
    ready, _ = _window(cycle_s, t, t, 0.0)
    n = len(lat)
    return CyclePoint(mechanism, float(cycle_s), instances * n / cycle_s,
                      instances * len(ready) / cycle_s, n / len(ready) if ready else 0.0,
                      1e3 * statistics.fmean(lat) if lat else math.inf,
                      1e3 * lat[0] if lat else math.inf, lost / cycle_s)


@dataclass(frozen=True)
class ServiceStats:
    """What one service saw: requests answered, latency mean / p99 / max (ms)."""
    requests: int
    mean_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True)
class SharedResult:
    """A shared-cluster run: per service, and the GPU time's split."""
    services: Mapping[str, ServiceStats]
    switch_share: float
    inference_share: float
    training_share: float


def _arrivals(rng: random.Random, rate: float, horizon: float) -> list[float]:
    out: list[float] = []
    t = 0.0
    while True:
        t += -math.log(1.0 - rng.random()) / rate
        if t >= horizon:
            return out
        out.append(t)


def _gpu(plan, decision: ShareDecision, rates: Mapping[str, float], horizon: float, rng: random.Random, lat: dict) -> tuple[float, float, float]:
    """One GPU over ``horizon`` seconds: (switch, inference, training) seconds."""
    svcs = [decision.services[s] for s in plan.services]
    arr = {s: _arrivals(rng, rates[s], horizon) for s in plan.services}
    if not svcs:
        return 0.0, 0.0, (horizon if plan.training else 0.0)
    if plan.training is None and len(svcs) == 1:
        sid, sp = plan.services[0], svcs[0]
        free = 0.0
        for a in arr[sid]:
            free = max(free, a) + sp.batch_s
            lat[sid].append(free - a)
        return 0.0, len(arr[sid]) * sp.batch_s, 0.0
    T = decision.cycle_s
    head = {s: 0 for s in plan.services}
    switch = busy = train = 0.0
    now = 0.0
    while now < horizon:
        boundary = now + T
        served = False
        for sid, sp in zip(plan.services, svcs):
            q = arr[sid]
            if head[sid] >= len(q) or q[head[sid]] > now:
                continue
            now += sp.switch_s
            switch += sp.switch_s
            served = True
            while head[sid] < len(q) and q[head[sid]] <= now:
                now += sp.batch_s
                busy += sp.batch_s
                lat[sid].append(now - q[head[sid]])
                head[sid] += 1
        if served and plan.training is not None:
            now += plan.train_switch_s
            switch += plan.train_switch_s
        if plan.training is not None and boundary > now:
            train += boundary - now
        now = max(now, boundary)
    return switch, busy, train


def shared_run(decision: ShareDecision, rates: Mapping[str, float], *, horizon_s: float = 600.0,
               seed: int = 0) -> SharedResult:
    """Run a decision (see the module notes); ``rates``: each service's
    batches per second (usually the rates it was decided for)."""
    if isinstance(horizon_s, bool) or not isinstance(horizon_s, (int, float)) \
            or not math.isfinite(horizon_s) or horizon_s <= 0:
        raise InputError(f"horizon_s: expected a number > 0, got {horizon_s!r}")
    for s in decision.services:
        r = rates.get(s)
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not r > 0:
            raise InputError(f"rates[{s!r}]: expected a number > 0, got {r!r}")
    rng = random.Random(seed)
    lat: dict[str, list[float]] = {s: [] for s in decision.services}
    tot = [0.0, 0.0, 0.0]
    for plan in decision.gpus:
        for k, v in enumerate(_gpu(plan, decision, rates, horizon_s, rng, lat)):
            tot[k] += v
    gpu_time = horizon_s * max(1, len(decision.gpus))
    stats = {}
    for s, xs in lat.items():
        xs = sorted(xs)
        stats[s] = ServiceStats(len(xs), 1e3 * statistics.fmean(xs) if xs else 0.0,
                                1e3 * xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else 0.0,
                                1e3 * xs[-1] if xs else 0.0)
    return SharedResult(stats, tot[0] / gpu_time, tot[1] / gpu_time, tot[2] / gpu_time)


__all__ = ["CyclePoint", "INSTANCES", "ServiceStats", "SharedResult", "cycle_run", "shared_run"]

r"""PipeSwitch's experiments (Bai et al., OSDI'20): GPUs shared over time by
training and inference.

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
[ShareDecision][alloc.pipeswitch.decide.ShareDecision] on the one simulator
(`alloc.sim.core`): each service's requests (one batch each) arrive as a
Poisson process at its rate, jobs of one GPU whose duration is one batch;
the decision's training jobs run from the start.  The mechanism
``switching`` (`alloc.sched.pipeswitch.switching`) places every job through
the run's session: at each cycle boundary a GPU visits its services with
waiting requests in turn -- a switch $s_i$ (none on a GPU of its own), then
it serves that queue until it is empty (requests arriving meanwhile
included); then, if it served any, it switches back to its training job
($s_\mathrm{train}$), which runs until the next boundary.  A GPU of its own
serves each request at once.  Measured: each request's latency (arrival to
answer, the simulator's timeline), the GPU time spent switching, on
inference and left to training (the mechanism's account).
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


def shared_run(decision: ShareDecision, rates: Mapping[str, float], *, horizon_s: float = 600.0,
               seed: int = 0) -> SharedResult:
    """Run a decision on the simulator (see the module notes); ``rates``:
    each service's batches per second (usually the rates it was decided for).

    Examples
    --------
    >>> from alloc.model import Cluster, Server
    >>> from alloc.pipeswitch import Service, Training, share_gpus
    >>> from alloc.sim.pipeswitch import shared_run
    >>> cl = Cluster((Server("p3-0", 8000, 62464, 1, "V100"),))
    >>> d = share_gpus(cl, [Training("t", "ResNet152")], [Service("a", "ResNet152", 2.0, 800.0)],
    ...                cycle_s=0.5)
    >>> r = shared_run(d, {"a": 2.0}, horizon_s=30.0)
    >>> r.services["a"].requests > 30 and r.training_share > 0.8
    True
    """
    if isinstance(horizon_s, bool) or not isinstance(horizon_s, (int, float)) \
            or not math.isfinite(horizon_s) or horizon_s <= 0:
        raise InputError(f"horizon_s: expected a number > 0, got {horizon_s!r}")
    for s in decision.services:
        r = rates.get(s)
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not r > 0:
            raise InputError(f"rates[{s!r}]: expected a number > 0, got {r!r}")
    from ..model import Cluster, Server
    from ..gpukey import server_of
    from ..sched.pipeswitch.switching import Switching
    from .core import simulate
    from .jobs import WorkloadJob
    rng = random.Random(seed)
    requests = []
    for plan in decision.gpus:                 # the draws in the decision's order
        for sid in plan.services:
            sp = decision.services[sid]
            requests += [WorkloadJob(f"{sid}#{k}", a, 1, duration_s=sp.batch_s,
                                     extra={"service": sid})
                         for k, a in enumerate(_arrivals(rng, rates[sid], horizon_s))]
    trainings = [WorkloadJob(p.training, 0.0, 1, duration_s=1e3 * horizon_s + 1.0)
                 for p in decision.gpus if p.training is not None]
    per: dict[str, int] = {}
    for p in decision.gpus:
        per[server_of(p.gpu)] = max(per.get(server_of(p.gpu), 0), int(p.gpu.rsplit("gpu", 1)[1]) + 1)
    cluster = Cluster(tuple(Server(sid, 8000 * n, 62464 * n, n) for sid, n in per.items()))
    jobs = sorted(trainings, key=lambda j: j.id) + sorted(requests, key=lambda j: (j.arrival_s, j.id))
    mech = Switching(decision, horizon_s)
    lat: dict[str, list[float]] = {s: [] for s in decision.services}
    if cluster.servers:
        # the mechanism places every job itself, at its events (checked by the
        # session's reconcile); one round, at the start, is all the rounds do
        end = 2.0 * horizon_s + 60.0
        res = simulate(cluster, jobs, order=("fifo", {"preemptive": False}), mechanism=mech,
                       progress=mech.progress, round_s=end, max_time_s=end,
                       window=(len(trainings), len(jobs) - 1) if requests else None,
                       name="pipeswitch")
        for row in res.timeline():
            sid = row["id"].rpartition("#")[0]
            if sid in lat and row["end_s"] is not None:
                lat[sid].append(row["end_s"] - row["arrival_s"])
    switch, inference, training = mech.shares()
    stats = {}
    for s, xs in lat.items():
        xs = sorted(xs)
        stats[s] = ServiceStats(len(xs), 1e3 * statistics.fmean(xs) if xs else 0.0,
                                1e3 * xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else 0.0,
                                1e3 * xs[-1] if xs else 0.0)
    return SharedResult(stats, switch, inference, training)


__all__ = ["CyclePoint", "INSTANCES", "ServiceStats", "SharedResult", "cycle_run", "shared_run"]

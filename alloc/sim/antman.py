r"""AntMan's experiments (Xiao et al., OSDI'20, §5) on the one simulator: the
two-job case of Table 2 and the 64-GPU trace experiment of Fig. 13.

The performance model (memory sensitivity, coordinated and uncoordinated
interference) and every parameter's source are in
`alloc.sched.antman.model`; the policies are registered mechanisms of the
scheduling layer (`alloc.sched.antman`): ``antman`` (the local coordinators
after each round of the placement solver ``antman``, AntMan's global
scheduler), ``antman-yarn-cs``, ``antman-yarn-cs-preempt`` and
``antman-packing``.  Every placement goes through the run's session
(``Session.step`` and its checked events).

Table 2
-------
One 32 GB GPU; job A (GCN, 3.5 GB, 43.0 min alone, opportunistic) from t = 0,
job B (ResNet-50, 30 GB, 91.1 min alone, guaranteed) from t = 26 min.  A's
utilisation is not published: the median of Fig. 1's production CDF.
Policies:

* *FIFO* (B waits): the simulator with ``antman-yarn-cs`` (B is the
  guaranteed tenant's, exclusive GPUs, no preemption);
* *Preempt* (A killed): the simulator with ``antman-yarn-cs-preempt``; A is
  stopped at B's arrival and loses its work, which the paper counts as a
  failure (``None``);
* *AntMan*: the simulator with the placement ``antman`` (which caps A at
  B's arrival) and the mechanism ``antman`` in 10 s windows (the
  coordinator raises A's caps window by window);
* *Pack* (B gets what A leaves, 28.5 GB, and fails at its start) and
  *UMem* (B runs with 1.5 GB in host memory, no coordination, its limit
  never raised): closed forms of their rules (a job that fails at start,
  and two constant-speed phases of the uncoordinated model), since neither
  is a placement the session accepts: Pack over-commits GPU memory and
  UMem's host memory is outside the cluster model.

Trace experiment
----------------
See [`simulate_cluster`][alloc.sim.antman.simulate_cluster].
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Any

from ..model import Cell, Cluster, Server, Tenant
from ..sched.antman.model import (AntManProgress, Share, cdf_draw, coordinated_speeds,
                                  coordination, curve, data, mem_factor, packed_speeds)

WINDOW_S = 10.0          # the coordinator's window (AntMan §3.3: "the past 10 seconds")

# ------------------------------------------------------------------ Table 2
TABLE2_POLICIES = ("Preempt", "FIFO", "Pack", "UMem", "AntMan")


def table2(policy: str, *, window_s: float = WINDOW_S) -> tuple[float | None, float | None]:
    """JCT in minutes of jobs A and B under one policy (None: the job fails).

    Examples
    --------
    >>> from alloc.sim.antman import table2
    >>> table2("FIFO")
    (43.0, 108.1)
    """
    d = data()
    a, b = d["table1"]["A"], d["table1"]["B"]
    cap = d["gpu"]["mem_mib"]
    ua = _median_util()
    ub = d["utilisation"]["ResNet-50"]["value"]
    ta, tb, arr = a["alone_min"], b["alone_min"], b["arrival_min"]
    if policy == "Pack":
        return ta, None            # B is granted cap - 3.5 GB < 30 GB and fails at start
    if policy == "UMem":
        hb = curve("ResNet")
        fb = (cap - a["gpu_mem_mib"]) / b["gpu_mem_mib"]
        s = packed_speeds([Share(ua, 1.0), Share(ub, mem_factor(hb, fb))])
        return _two_phase(ta, tb, arr, s, (1.0, mem_factor(hb, fb)))
    stacks = {"FIFO": "antman-yarn-cs", "Preempt": "antman-yarn-cs-preempt", "AntMan": "antman"}
    if policy not in stacks:
        raise ValueError(f"unknown policy {policy!r}; expected one of "
                         f"{', '.join(TABLE2_POLICIES)}")
    quota = policy == "AntMan"
    tenants = {"tenant-a": Tenant("tenant-a", (Cell("gpu", 1),))} if quota else {}
    cluster = Cluster((Server("s0", 96000, 736000, 1, "V100", gpu_mem=cap),), tenants=tenants)
    jobs = [_table2_job("A", a, ua, "median", False, quota),
            _table2_job("B", b, ub, "ResNet", True, quota)]
    res = _run(cluster, jobs, stacks[policy], window_s=window_s)
    rows = {r["id"]: r for r in res.timeline()}
    out = []
    for jid in ("A", "B"):
        r = rows[jid]
        failed = r["end_s"] is None or r["preemptions"] > 0
        out.append(None if failed else round((r["end_s"] - r["arrival_s"]) / 60.0, 9))
    return out[0], out[1]


def _table2_job(jid: str, spec: dict, u: float, curve_name: str, guaranteed: bool,
                quota: bool) -> Any:
    from .jobs import WorkloadJob
    fields: dict[str, Any] = {"cpu": 1000, "mem": 1000}
    if quota:
        fields["gpu_mem"] = int(spec["gpu_mem_mib"])
        fields["gpu_compute"] = max(1, round(u * 1000))
        if guaranteed:
            fields.update(tenant="tenant-a", guaranteed=True)
        else:
            fields["gpu_mem_min"] = 0
    return WorkloadJob(jid, spec["arrival_min"] * 60.0, 1, duration_s=spec["alone_min"] * 60.0,
                       model=spec["model"], extra={"u": u, "mem_mib": int(spec["gpu_mem_mib"]),
                                                   "curve": curve_name,
                                                   "tenant": "A" if guaranteed else "B"},
                       fields=fields)


def _median_util() -> float:
    pts = data()["production_cdf"]["util"]
    for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
        if f1 >= 0.5:
            return (x0 + (x1 - x0) * (0.5 - f0) / (f1 - f0)) / 100
    return 0.5


def _two_phase(ta, tb, arr, both, b_after) -> tuple[float, float]:
    """A alone until B arrives, both at ``both`` speeds, then the survivor at
    its own speed (B at ``b_after[1]``)."""
    left_a = ta - arr
    left_b = tb
    t_a_end = arr + left_a / both[0]
    left_b -= (t_a_end - arr) * both[1]
    if left_b <= 0:
        raise ValueError("B finished before A")
    return t_a_end, t_a_end - arr + left_b / b_after[1]


# ---------------------------------------------------------- trace experiment
#: The trace experiment's policies: registered mechanisms (`alloc.sched.antman`).
MECHANISMS = ("antman", "antman-yarn-cs", "antman-yarn-cs-preempt", "antman-packing")
GPU_COUNTS = ((1, 0.5), (2, 0.2), (4, 0.2), (8, 0.1))
RUNTIME_MIN = (1.0, 1000.0)
RIDER_FLOOR = 0.10


@dataclass
class TraceJob:
    """A job of the trace: tenant ``"A"`` (guaranteed) or ``"B"``
    (opportunistic), GPUs, utilisation, GPU memory (MiB), memory-sensitivity
    curve, work (minutes alone) and arrival (minutes)."""
    id: str
    model: str
    tenant: str
    gpus: int
    u: float
    mem: int
    curve: str
    work_min: float
    arrival_min: float


def trace(n_jobs: int = 100, load: float = 1.0, seed: int = 0, gpus: int = 64) -> list[TraceJob]:
    """A synthetic trace in the paper's setup (module notes of
    [`simulate_cluster`][alloc.sim.antman.simulate_cluster]).

    Examples
    --------
    >>> from alloc.sim.antman import trace
    >>> len(trace(10, 2.0, seed=1))
    10
    """
    d = data()
    rng = random.Random(seed)
    domains = [v for k, v in d["models"].items() if k != "source"]
    jobs = []
    for k in range(n_jobs):
        model, cv = rng.choice(rng.choice(domains))
        g = rng.choices([c for c, _ in GPU_COUNTS], [w for _, w in GPU_COUNTS])[0]
        lo, hi = RUNTIME_MIN
        work = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        u = max(0.01, cdf_draw(d["production_cdf"]["util"], rng))
        mem = max(0.01, cdf_draw(d["production_cdf"]["mem"], rng)) * d["gpu"]["mem_mib"]
        u = (d["utilisation"].get(model) or {}).get("value") or u
        mem = (d["gpu_memory"].get(model) or {}).get("mib") or mem
        jobs.append(TraceJob(f"j{k:04d}", model, rng.choice("AB"), g, u, int(mem), cv, work, 0.0))
    mean_gpu_min = sum(j.gpus * j.work_min for j in jobs) / n_jobs
    rate = load * gpus / mean_gpu_min            # jobs per minute at this offered load
    t = 0.0
    for j in jobs:
        j.arrival_min = t
        t += rng.expovariate(rate)
    return jobs


@dataclass
class ClusterResult:
    """What one policy produced on a trace (times in minutes)."""
    policy: str
    jct: dict
    arrival: dict
    finish: dict
    preemptions: int
    preempted_jobs: int
    wall_s: float
    guaranteed: set
    result: Any = None

    @property
    def mean_jct_min(self) -> float:
        """Mean JCT over all jobs."""
        return sum(self.jct.values()) / len(self.jct)

    @property
    def makespan_min(self) -> float:
        """First arrival to last completion."""
        return max(self.finish.values()) - min(self.arrival.values())

    @property
    def guaranteed_mean_jct_min(self) -> float:
        """Mean JCT of tenant A's (guaranteed) jobs."""
        v = [self.jct[j] for j in self.guaranteed]
        return sum(v) / len(v) if v else 0.0


def workload(jobs: list[TraceJob], mechanism: str) -> list:
    """The trace as the simulator's workload for ``mechanism`` (seconds): the
    model's columns in ``extra``; the session's fields (1 core and 8 GiB per
    GPU, one server for a gang; where GPUs are shared the GPU memory, and for
    ``antman`` the compute demand, tenant A's guarantee and B's least
    memory).

    Examples
    --------
    >>> from alloc.sim.antman import trace, workload
    >>> w = workload(trace(3, 1.0), "antman")[0]
    >>> sorted(w.extra)
    ['curve', 'mem_mib', 'tenant', 'u']
    """
    from .jobs import WorkloadJob
    out = []
    for t in sorted(jobs, key=lambda j: (j.arrival_min, j.id)):
        fields: dict[str, Any] = {"cpu": 1000 * t.gpus, "mem": 8192 * t.gpus}
        if mechanism in ("antman", "antman-packing"):      # GPUs shared: memory checked
            fields["gpu_mem"] = t.mem
            fields["gpu_compute"] = max(1, min(1000, round(t.u * 1000)))
        if t.gpus > 1:
            fields["locality"] = "server"
        if mechanism == "antman":
            if t.tenant == "A":
                fields.update(tenant="A", guaranteed=True)
            else:
                fields["gpu_mem_min"] = int(math.ceil(RIDER_FLOOR * t.mem))
        out.append(WorkloadJob(t.id, t.arrival_min * 60.0, t.gpus, duration_s=t.work_min * 60.0,
                               model=t.model, extra={"u": t.u, "mem_mib": t.mem,
                                                     "curve": t.curve, "tenant": t.tenant},
                               fields=fields))
    return out


def _run(cluster: Cluster, jobs: list, mechanism: str, *, alpha: float | None = None,
         window_s: float | None = None) -> Any:
    """One run of ``jobs`` under a registered mechanism of `alloc.sched.antman`."""
    from ..sched import get_policy
    from .core import simulate
    mech = get_policy("mechanism", mechanism).build(
        **({"window_s": window_s} if mechanism == "antman" else {}))
    placement: Any = "best-fit"
    if mechanism in ("antman", "antman-packing"):
        # AntMan's global scheduler; for the packing, a solver that reads GPU
        # memory, so that the session checks the packing against each GPU's
        # memory (it places nothing: the mechanism holds every job and places
        # it itself)
        placement = "antman"
    return simulate(cluster, jobs, order=("fifo", {"preemptive": False}), placement=placement,
                    mechanism=mech,
                    progress=AntManProgress(mech.mode, alpha),
                    time_limit=30.0, name=mechanism)


def simulate_cluster(jobs: list[TraceJob], policy: str, *, servers: int = 8,
                     gpus_per_server: int = 8, alpha: float | None = None) -> ClusterResult:
    r"""AntMan Fig. 13: a trace on ``servers x gpus_per_server`` V100 GPUs (32 GB)
    under one of `MECHANISMS`, on the simulator (event-driven).

    Tenant A's quota covers the cluster, so its jobs are guaranteed; tenant
    B has no quota, so its jobs are opportunistic.  Multi-GPU jobs run inside
    one server (NVLink).  Speeds follow the performance model
    (`alloc.sched.antman.model`) and change at events (arrivals, completions,
    cap changes):

    * ``antman-yarn-cs``, ``antman-yarn-cs-preempt``, ``antman-packing``:
      the baselines (`alloc.sched.antman.baselines`), exclusive GPUs and
      uncoordinated speeds;
    * ``antman`` -- the placement solver ``antman`` at every event on the
      live state (running jobs with their caps, reservations kept by the
      session, the utilisation measured now), then each GPU's local
      coordinator settled at once (`alloc.sched.antman.coordinate`);
      coordinated speeds.  Riders may shrink to 10 % of their memory demand
      (the lowest limit Fig. 10 measures).

    ``alpha``: the uncoordinated interference (default ``packing.alpha`` of
    the data file, 1.0).

    Examples
    --------
    >>> from alloc.sim.antman import simulate_cluster, trace
    >>> r = simulate_cluster(trace(6, 1.0), "antman-yarn-cs", servers=1)
    >>> len(r.jct)
    6
    """
    if policy not in MECHANISMS:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(MECHANISMS)}")
    t0 = time.perf_counter()
    cap = int(data()["gpu"]["mem_mib"])
    g = servers * gpus_per_server
    tenants = {"A": Tenant("A", (Cell("gpu", g),))} if policy == "antman" else {}
    cluster = Cluster(tuple(Server(f"s{s}", 96000, 736000, gpus_per_server, "V100", gpu_mem=cap)
                            for s in range(servers)), tenants=tenants)
    res = _run(cluster, workload(jobs, policy), policy, alpha=alpha)
    rows = res.timeline()
    unfinished = [r["id"] for r in rows if r["end_s"] is None]
    if unfinished:
        raise RuntimeError(f"{policy}: jobs never finished: {', '.join(unfinished[:5])}")
    arrival = {r["id"]: r["arrival_s"] / 60.0 for r in rows}
    finish = {r["id"]: r["end_s"] / 60.0 for r in rows}
    return ClusterResult(policy, {j: finish[j] - arrival[j] for j in finish}, arrival, finish,
                         sum(r["preemptions"] for r in rows),
                         sum(1 for r in rows if r["preemptions"]), time.perf_counter() - t0,
                         {j.id for j in jobs if j.tenant == "A"}, res)


__all__ = ["ClusterResult", "MECHANISMS", "Share", "TABLE2_POLICIES", "TraceJob",
           "coordinated_speeds", "coordination", "curve", "data", "mem_factor",
           "packed_speeds", "simulate_cluster", "table2", "trace", "workload"]

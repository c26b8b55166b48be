r"""AntMan's experiments (Xiao et al., OSDI'20, §5): the two-job case of
Table 2 and the 64-GPU trace experiment of Fig. 13.

Performance model
-----------------
A job ``i`` alone has GPU utilisation ``u_i`` (the share of time its kernels
occupy the SMs) and needs ``D_i`` MiB of GPU memory.  With a memory cap
``M_i`` its speed is multiplied by ``h_i(M_i / D_i)``, the memory-sensitivity
curve of AntMan Fig. 10 (piecewise linear; its models without a published
curve use the pointwise median of the three).  On a shared GPU the SM time of
the others stretches a job's GPU phase:

* **uncoordinated** (packing as in Gandiva, and UMem): every job is equal,

      speed_i = h_i / ((1 - u_i) + u_i (1 + alpha sum_{k != i} x_k)),   x_k = u_k speed_k

  (a fixed point, iterated; ``alpha = 1`` by default: no free parameter);
* **coordinated** (AntMan): the guaranteed job ``G`` keeps priority (the
  GpuOpManager delays the riders' kernels), slowed only by the residual
  ``kappa * X`` of the riders' SM use ``X``; a rider ``r`` gets at most its
  compute cap of the SM time the guaranteed job leaves:

      speed_G = h_G / ((1 - u_G) + u_G (1 + kappa X)),
      speed_r = h_r * min(1, min(cap_r, 1 - u_G speed_G) / u_r),   X = sum_r u_r speed_r.

``kappa = 0.425`` and the coordinator's tolerance ``tau = 0.035`` come from
§5.1 and Fig. 12 (see ``data/antman.json``, which also gives the ``alpha``
that §5.1's uncoordinated 5.23x slowdown would need: 42.7).  A gang runs at the speed of its slowest GPU.
A job needing more GPU memory than it is granted without universal memory
fails (Pack); with it (UMem) the rest lives in host memory at ``h``.

Table 2
-------
One 32 GB GPU; job A (GCN, 3.5 GB, 43.0 min alone, opportunistic) from t = 0,
job B (ResNet-50, 30 GB, 91.1 min alone, guaranteed) from t = 26 min.  A's
utilisation is not published: the median of Fig. 1's production CDF.
Policies: *Preempt* (A killed), *FIFO* (B waits), *Pack* (B gets what A
leaves: 28.5 GB, fails), *UMem* (B runs with 1.5 GB in host memory, no
coordination, its limit never raised), *AntMan* (the global scheduler through
`alloc.allocate` caps A at B's arrival; the local coordinator then raises A's
caps window by window, 10 s windows).

Trace experiment
----------------
See [`simulate_cluster`][alloc.sim.antman.simulate_cluster].
"""
from __future__ import annotations

import bisect
import json
import math
import random
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources as ir
from typing import Mapping, cast

from ..model import Cell, Cluster, GpuShare, Job, Server, Tenant

WINDOW_S = 10.0          # the coordinator's window (AntMan §3.3: "the past 10 seconds")


@lru_cache(maxsize=None)
def data() -> dict:
    """The published figures the experiments use (``alloc/sim/data/antman.json``)."""
    return json.loads(ir.files("alloc").joinpath("sim/data/antman.json").read_text())


def curve(name: str) -> list[tuple[float, float]]:
    """A memory-sensitivity curve of Fig. 10 as (fraction, speed) points;
    ``"median"``: the pointwise median of the three."""
    ms = data()["memory_sensitivity"]
    if name != "median":
        return [(x / 100, y) for x, y in ms[name]]
    cs = [ms[k] for k in ("ResNet", "VGG", "SR")]
    return [(cs[0][k][0] / 100, sorted(c[k][1] for c in cs)[1]) for k in range(len(cs[0]))]


def mem_factor(points: list[tuple[float, float]], f: float) -> float:
    """``h(f)``: speed with a fraction ``f`` of the job's memory on the GPU."""
    if f >= 1.0:
        return 1.0
    xs = [x for x, _ in points]
    k = bisect.bisect_left(xs, f)
    if k == 0:
        return points[0][1]
    (x0, y0), (x1, y1) = points[k - 1], points[k]
    return y0 + (y1 - y0) * (f - x0) / (x1 - x0)


def cdf_draw(points: list, rng: random.Random) -> float:
    """A draw (in [0, 1]) from a CDF given as (percent, F) points."""
    q = rng.random()
    for (x0, f0), (x1, f1) in zip(points, points[1:]):
        if q <= f1:
            return (x0 + (x1 - x0) * (0 if f1 == f0 else (q - f0) / (f1 - f0))) / 100
    return 1.0


def coordination() -> tuple[float, float]:
    """(kappa, tau) of §5.1."""
    c = data()["coordination"]
    return float(c["kappa"]), float(c["tolerance"])


# ------------------------------------------------------------------- speeds
@dataclass
class Share:
    """A job on one GPU for the speed model: utilisation, memory factor, the
    compute cap (1.0 = none) and whether it is the GPU's guaranteed job."""
    u: float
    h: float
    cap: float = 1.0
    guaranteed: bool = False


def packed_speeds(shares: list[Share], alpha: float = 1.0) -> list[float]:
    """Uncoordinated speeds (module notes), by fixed-point iteration."""
    sp = [s.h for s in shares]
    for _ in range(200):
        x = [s.u * v for s, v in zip(shares, sp)]
        tot = sum(x)
        new = [0.5 * (v + s.h / ((1 - s.u) + s.u * (1 + alpha * (tot - xi))))
               for s, xi, v in zip(shares, x, sp)]
        if max(abs(a - b) for a, b in zip(new, sp)) < 1e-9:
            return new
        sp = new
    return sp


def coordinated_speeds(shares: list[Share], kappa: float) -> list[float]:
    """AntMan's speeds (module notes); ``shares`` holds at most one guaranteed job."""
    g = next((k for k, s in enumerate(shares) if s.guaranteed), None)
    if g is None:
        return packed_speeds([replace(s, h=s.h * min(1.0, s.cap / s.u) if s.u else s.h)
                              for s in shares]) if len(shares) > 1 else \
            [s.h * (min(1.0, s.cap / s.u) if s.u else 1.0) for s in shares]
    G = shares[g]
    vg = G.h
    out = [0.0] * len(shares)
    for _ in range(50):
        left = max(0.0, 1 - G.u * vg)
        X = 0.0
        for k, s in enumerate(shares):
            if k != g:
                out[k] = s.h * (min(1.0, min(s.cap, left) / s.u) if s.u else 1.0)
                X += s.u * out[k]
        new = G.h / ((1 - G.u) + G.u * (1 + kappa * X))
        if abs(new - vg) < 1e-12:
            break
        vg = new
    out[g] = vg
    return out


# ------------------------------------------------------------------ Table 2
TABLE2_POLICIES = ("Preempt", "FIFO", "Pack", "UMem", "AntMan")


def table2(policy: str, *, window_s: float = WINDOW_S, trace: list | None = None
           ) -> tuple[float | None, float | None]:
    """JCT in minutes of jobs A and B under one policy (None: the job fails)."""
    d = data()
    a, b = d["table1"]["A"], d["table1"]["B"]
    cap = d["gpu"]["mem_mib"]
    ua = _median_util()
    ub = d["utilisation"]["ResNet-50"]["value"]
    ta, tb, arr = a["alone_min"], b["alone_min"], b["arrival_min"]
    if policy == "Preempt":
        return None, tb
    if policy == "FIFO":
        return ta, max(ta, arr) - arr + tb
    if policy == "Pack":
        return ta, None            # B is granted cap - 3.5 GB < 30 GB and fails at start
    ha = curve("median")
    hb = curve("ResNet")
    if policy == "UMem":
        fb = (cap - a["gpu_mem_mib"]) / b["gpu_mem_mib"]
        s = packed_speeds([Share(ua, 1.0), Share(ub, mem_factor(hb, fb))])
        return _two_phase(ta, tb, arr, s, (1.0, mem_factor(hb, fb)))
    if policy == "AntMan":
        return _antman_table2(a, b, cap, ua, ub, ha, window_s, trace)
    raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(TABLE2_POLICIES)}")


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


def _antman_table2(a, b, cap, ua, ub, ha, window_s, trace):
    """A and B under AntMan: the global scheduler places B through
    `alloc.allocate` (A capped at once), then the coordinator steps A's caps
    every window; speeds from the coordinated model."""
    from ..solve import allocate
    from ..solvers.antman.coordinator import Coordinator, Gpu, Rider
    kappa, tau = coordination()
    cluster = Cluster((Server("s0", 96000, 736000, 1, "V100", gpu_mem=cap),),
                      tenants={"tenant-a": Tenant("tenant-a", (Cell("gpu", 1),))})
    ja = Job("A", gpus=1, cpu=1000, mem=1000, gpu_mem=a["gpu_mem_mib"],
             gpu_compute=max(1, round(ua * 1000)), gpu_mem_min=0)
    jb = Job("B", gpus=1, cpu=1000, mem=1000, gpu_mem=b["gpu_mem_mib"],
             gpu_compute=round(ub * 1000), tenant="tenant-a", guaranteed=True)
    first = allocate(cluster, [ja], solver="antman")
    ja = replace(ja, current=first.placement("A"))
    second = allocate(cluster, [ja, jb], solver="antman")
    sa = second.placement("A").gpus[0]
    co = Coordinator(tau=tau)
    gpu = Gpu(cap, jb.gpu_mem, jb.gpu_compute,
              (Rider("A", ja.gpu_mem, 0, ja.gpu_compute, sa.mem, sa.compute),))
    gpu = co.admit(gpu, jb.gpu_mem, jb.gpu_compute)
    t = b["arrival_min"]
    left_a, left_b = a["alone_min"] - t, b["alone_min"]
    dt = window_s / 60.0
    slow = 0.0
    while left_a > 0:
        r = gpu.riders[0]
        sp = coordinated_speeds([Share(ub, 1.0, guaranteed=True),
                                 Share(ua, mem_factor(ha, r.mem / r.mem_demand),
                                       r.comp / 1000)], kappa)
        step = min(dt, left_a / sp[1]) if sp[1] > 0 else dt
        left_a -= sp[1] * step
        left_b -= sp[0] * step
        t += step
        new_slow = 1 / sp[0] - 1
        if trace is not None:
            trace.append((t, sp[0], sp[1], r.mem, r.comp))
        gpu = co.observe(gpu, slow, new_slow)
        slow = new_slow
        gpu = co.tick(gpu, slow)
    a_jct = t
    return a_jct, t - b["arrival_min"] + left_b


__all__ = ["Share", "TABLE2_POLICIES", "coordinated_speeds", "coordination", "curve", "data",
           "mem_factor", "packed_speeds", "table2"]


# ---------------------------------------------------------- trace experiment
CLUSTER_POLICIES = ("antman", "yarn-cs", "yarn-cs-preempt", "gandiva-packing")
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
[`simulate_cluster`][alloc.sim.antman.simulate_cluster])."""
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
class Run:
    """A job running: its GPUs, memory and compute caps per GPU, work done."""
    job: TraceJob
    gpus: list[int]
    caps: dict = field(default_factory=dict)     # g -> (mem MiB, compute milli)
    done: float = 0.0
    speed: float = 1.0
    held: bool = True                            # holds its GPUs (not a rider)


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


def simulate_cluster(jobs: list[TraceJob], policy: str, *, servers: int = 8,
                     gpus_per_server: int = 8, alpha: float | None = None) -> ClusterResult:
    r"""AntMan Fig. 13: a trace on ``servers x gpus_per_server`` V100 GPUs (32 GB).

    Tenant A's quota covers the cluster, so its jobs are guaranteed; tenant
    B has no quota, so its jobs are opportunistic.  Multi-GPU jobs run inside
    one server (NVLink).  Speeds follow the performance model of the module
    notes and change only at events (arrivals, completions), when the policy
    runs:

    * ``yarn-cs`` -- YARN's capacity scheduler: GPUs are exclusive; tenant A's
      queue first, then B's, each in arrival order; a gang that does not fit
      reserves the free GPUs of the server closest to fitting (no other job
      may use them) and later jobs fill the rest;
    * ``yarn-cs-preempt`` -- the same, and an A job that does not fit
      preempts B's jobs on the server needing the fewest victims (they lose
      their progress and queue again);
    * ``gandiva-packing`` -- Gandiva's packing as AntMan §5.2 describes it:
      every job, in arrival order, on the GPUs of lowest utilisation with
      enough free GPU memory for its whole demand, uncoordinated speeds (the
      full Gandiva scheduler -- time-slicing, migration -- can replace this
      baseline);
    * ``antman`` -- `alloc.allocate` with the ``antman`` solver at every event
      on the live state (running jobs with their caps, reservations handed
      back), then each GPU's local coordinator
      (`alloc.solvers.antman.coordinator`) run window by window until its
      caps settle (within 20 windows of 10 s, applied at once here);
      coordinated speeds.  Riders may shrink to 10 % of their memory demand
      (the lowest limit Fig. 10 measures).

    ``alpha``: the uncoordinated interference (default ``packing.alpha`` of
    the data file, 1.0).
    """
    if policy not in CLUSTER_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(CLUSTER_POLICIES)}")
    t0 = time.perf_counter()
    eng = _Engine(jobs, policy, servers, gpus_per_server,
                  data()["packing"]["alpha"] if alpha is None else alpha)
    eng.run()
    return ClusterResult(policy, {j: eng.finish[j] - eng.arrival[j] for j in eng.finish},
                         eng.arrival, eng.finish, eng.preemptions, len(eng.preempted_ids),
                         time.perf_counter() - t0, {j.id for j in jobs if j.tenant == "A"})


class _Engine:
    """The event loop of [`simulate_cluster`][alloc.sim.antman.simulate_cluster] (one policy, one
trace)."""

    def __init__(self, jobs, policy, servers, per_server, alpha):
        self.jobs = sorted(jobs, key=lambda j: (j.arrival_min, j.id))
        self.by_id = {j.id: j for j in self.jobs}
        self.policy, self.S, self.per = policy, servers, per_server
        self.G = servers * per_server
        self.cap = int(data()["gpu"]["mem_mib"])
        self.kappa, self.tau = coordination()
        self.alpha = alpha
        self.curves = {k: curve(k) for k in ("ResNet", "VGG", "SR", "median")}
        self.queue: list[str] = []
        self.running: dict[str, Run] = {}
        self.on_gpu: list[set] = [set() for _ in range(self.G)]
        self.reserved: dict = {}
        self.arrival = {j.id: j.arrival_min for j in self.jobs}
        self.finish: dict[str, float] = {}
        self.preemptions = 0
        self.preempted_ids: set[str] = set()
        self.t = 0.0
        self.placements: dict = {}
        if policy == "antman":
            self.cluster = Cluster(tuple(Server(f"s{s}", 96000, 736000, per_server, "V100",
                                                gpu_mem=self.cap) for s in range(servers)),
                                   tenants={"A": Tenant("A", (Cell("gpu", self.G),))})

    # ------------------------------------------------------------ the loop
    def run(self) -> None:
        i, n = 0, len(self.jobs)
        while len(self.finish) < n:
            t_arr = self.jobs[i].arrival_min if i < n else math.inf
            t_fin = min((self.t + (r.job.work_min - r.done) / r.speed
                         for r in self.running.values() if r.speed > 0), default=math.inf)
            t_next = min(t_arr, t_fin)
            if t_next == math.inf:
                raise RuntimeError(f"{self.policy}: jobs wait forever at t={self.t:.1f} min")
            dt = t_next - self.t
            for r in self.running.values():
                r.done += r.speed * dt
            self.t = t_next
            for jid, r in list(self.running.items()):
                if r.done >= r.job.work_min - 1e-9:
                    self.stop(jid)
                    self.finish[jid] = self.t
            while i < n and self.jobs[i].arrival_min <= self.t + 1e-12:
                self.queue.append(self.jobs[i].id)
                i += 1
            getattr(self, "schedule_" + self.policy.replace("-", "_"))()
            self.speeds()

    def start(self, job: TraceJob, gpus: list[int], held: bool = True, caps=None) -> Run:
        r = Run(job, list(gpus), dict(caps or {}), held=held)
        self.running[job.id] = r
        for g in gpus:
            self.on_gpu[g].add(job.id)
        if job.id in self.queue:
            self.queue.remove(job.id)
        return r

    def stop(self, jid: str) -> Run:
        r = self.running.pop(jid)
        for g in r.gpus:
            self.on_gpu[g].discard(jid)
        self.placements.pop(jid, None)
        return r

    def preempt(self, jid: str) -> None:
        """Stop a running job; it queues again and loses its progress."""
        self.stop(jid)
        self.preemptions += 1
        self.preempted_ids.add(jid)
        self.queue.append(jid)
        self.queue.sort(key=lambda x: (self.arrival[x], x))

    def server_gpus(self, s: int) -> range:
        return range(s * self.per, (s + 1) * self.per)

    def h(self, job: TraceJob, mem: float) -> float:
        return mem_factor(self.curves[job.curve], mem / job.mem)

    # -------------------------------------------------------------- speeds
    def speeds(self) -> None:
        per: dict[str, float] = {jid: math.inf for jid in self.running}
        for g in range(self.G):
            ids = sorted(self.on_gpu[g])
            if not ids:
                continue
            if len(ids) == 1 and self.policy.startswith("yarn"):
                per[ids[0]] = min(per[ids[0]], 1.0)
                continue
            shares = []
            for jid in ids:
                r = self.running[jid]
                mem, comp = r.caps.get(g, (r.job.mem, 1000))
                shares.append(Share(r.job.u, self.h(r.job, mem), comp / 1000,
                                    guaranteed=r.held and r.job.tenant == "A"))
            sp = coordinated_speeds(shares, self.kappa) if self.policy == "antman" \
                else packed_speeds(shares, self.alpha)
            for jid, v in zip(ids, sp):
                per[jid] = min(per[jid], v)
        for jid, r in self.running.items():
            r.speed = per[jid]

    def util(self, g: int) -> float:
        return sum(self.running[j].job.u * self.running[j].speed for j in self.on_gpu[g])

    # --------------------------------------------------------------- YARN
    def schedule_yarn_cs(self, preempt: bool = False) -> None:
        taken: set[int] = set()
        for tenant in ("A", "B"):
            for jid in [x for x in self.queue if self.by_id[x].tenant == tenant]:
                job = self.by_id[jid]
                free = {s: [g for g in self.server_gpus(s) if not self.on_gpu[g] and g not in taken]
                        for s in range(self.S)}
                fit = [s for s in range(self.S) if len(free[s]) >= job.gpus]
                if fit:
                    s = min(fit, key=lambda s: (len(free[s]), s))
                    self.start(job, free[s][:job.gpus])
                    continue
                if tenant == "B":
                    continue
                if preempt and self._preempt_for(job, taken):
                    continue
                s = max(range(self.S), key=lambda s: (len(free[s]), -s))
                taken.update(free[s][:job.gpus])

    def schedule_yarn_cs_preempt(self) -> None:
        self.schedule_yarn_cs(preempt=True)

    def _preempt_for(self, job: TraceJob, taken: set) -> bool:
        best = None
        for s in range(self.S):
            gs = [g for g in self.server_gpus(s) if g not in taken]
            victims = {j for g in gs for j in self.on_gpu[g] if self.by_id[j].tenant == "B"}
            usable = [g for g in gs if not self.on_gpu[g] or self.on_gpu[g] <= victims]
            if len(usable) >= job.gpus:
                # fewest victims: free GPUs first, then GPUs of the smallest B jobs
                order = sorted(usable, key=lambda g: (bool(self.on_gpu[g]), g))
                need = set()
                for g in order[:job.gpus]:
                    need |= self.on_gpu[g]
                if best is None or len(need) < len(best[1]):
                    best = (order[:job.gpus], need)
        if best is None:
            return False
        for v in sorted(best[1]):
            self.preempt(v)
        self.start(job, best[0])
        return True

    # ------------------------------------------------------------- Gandiva
    def schedule_gandiva_packing(self) -> None:
        for jid in list(self.queue):
            job = self.by_id[jid]
            best = None
            for s in range(self.S):
                gs = [g for g in self.server_gpus(s)
                      if self.cap - sum(self.running[j].job.mem for j in self.on_gpu[g]) >= job.mem]
                if len(gs) < job.gpus:
                    continue
                gs = sorted(gs, key=lambda g: (self.util(g), g))[:job.gpus]
                load = sum(self.util(g) for g in gs)
                if best is None or load < best[0]:
                    best = (load, gs)
            if best is not None:
                self.start(job, best[1])
                self.speeds()

    # -------------------------------------------------------------- AntMan
    def schedule_antman(self) -> None:
        from ..solve import allocate
        jobs = [self._job(self.by_id[j]) for j in self.running] + \
               [self._job(self.by_id[j]) for j in self.queue]
        util = {self.cluster.gpu_ids[g]: min(1.0, self.util(g)) for g in range(self.G)}
        res = allocate(self.cluster, jobs, solver="antman", order=list(self.queue),
                       reserved=self.reserved, gpu_util=util, time_limit=30)
        self.reserved = dict(cast(Mapping, res.stats.get("reserved", {})))
        for jid in res.preempted:
            self.preempt(jid)
        gidx = self.cluster.gpu_index
        fresh = set()
        for p in res.placements:
            job = self.by_id[p.job]
            gpus = [gidx[s.gpu] for s in p.gpus]
            held = p.gpus[0].milli > 0
            caps = {gidx[s.gpu]: (s.mem, s.compute) for s in p.gpus if not held}
            if p.job in self.running:
                self.running[p.job].caps.update(caps)
            else:
                self.start(job, gpus, held, caps)
                if held:
                    fresh.update(gpus)
            self.placements[p.job] = p
        self.coordinate(fresh)

    def _job(self, t: TraceJob) -> Job:
        cur = self.placements.get(t.id)
        r = self.running.get(t.id)
        if cur is not None and r is not None and not r.held:
            ids = self.cluster.gpu_ids
            cur = replace(cur, gpus=tuple(GpuShare(ids[g], 0, *r.caps[g]) for g in r.gpus),
                          throughput=0.0)
        return Job(t.id, gpus=t.gpus, cpu=1000 * t.gpus, mem=8192 * t.gpus, gpu_mem=t.mem,
                   gpu_compute=max(1, min(1000, round(t.u * 1000))),
                   gpu_mem_min=int(math.ceil(RIDER_FLOOR * t.mem)) if t.tenant == "B" else None,
                   tenant="A" if t.tenant == "A" else None, guaranteed=t.tenant == "A",
                   locality="server" if t.gpus > 1 else None,
                   current=cur if r is not None else None)

    def coordinate(self, fresh: set) -> None:
        """Each GPU's local coordinator, window by window until its caps settle."""
        from ..solvers.antman.coordinator import Coordinator, Gpu, Rider
        co = Coordinator(tau=self.tau)
        for g in range(self.G):
            ids = sorted(self.on_gpu[g])
            riders = [self.running[j] for j in ids if not self.running[j].held]
            if not riders:
                continue
            holder = next((self.running[j] for j in ids if self.running[j].held), None)
            gpu = Gpu(self.cap, holder.job.mem if holder else None,
                      round(holder.job.u * 1000) if holder else 0,
                      tuple(Rider(r.job.id, r.job.mem, int(math.ceil(RIDER_FLOOR * r.job.mem)),
                                  max(1, min(1000, round(r.job.u * 1000))), *r.caps[g])
                            for r in riders))
            if holder is None:
                gpu = co.share(gpu)
            else:
                if g in fresh:
                    gpu = co.admit(gpu, holder.job.mem, gpu.guaranteed_comp)
                gpu = self._settle(co, gpu, holder)
            for rd in gpu.riders:
                self.running[rd.id].caps[g] = (rd.mem, rd.comp)

    def _settle(self, co, gpu, holder):
        slow = None
        for _ in range(60):
            shares = [Share(holder.job.u, 1.0, guaranteed=True)] + [
                Share(self.running[r.id].job.u, self.h(self.running[r.id].job, r.mem), r.comp / 1000)
                for r in gpu.riders]
            new = 1 / coordinated_speeds(shares, self.kappa)[0] - 1
            if slow is not None:
                gpu = co.observe(gpu, slow, new)
            slow = new
            nxt = co.tick(gpu, slow)
            if nxt.riders == gpu.riders:
                return nxt
            gpu = nxt
        return gpu


__all__ += ["CLUSTER_POLICIES", "ClusterResult", "TraceJob", "simulate_cluster", "trace"]

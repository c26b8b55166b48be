"""HiveD's headline measure: per-tenant queueing delay on a shared cluster vs.
the tenant's private cluster, for ``hived`` and a topology-oblivious quota
scheduler (``best-fit`` with GPU-count quotas); plus the time ``hived`` takes to
place one job on a 1,000-server / 8,000-GPU hierarchy.

Trace.  32 servers x 8 V100 (racks of 4; 2 sockets x 2 switches), quotas that
add up to the cluster: vc-a 12 server cells, vc-b 8 server cells, vc-c 16
socket cells, vc-d 16 switch cells.  Jobs arrive by tenant (Poisson), sizes by
tenant (vc-a mostly 1-2 GPUs, vc-b 8-GPU server jobs, vc-c 4-GPU socket jobs,
vc-d 2-GPU switch jobs), lognormal durations; at t = 2 h vc-a submits a burst
of 120 one-/two-GPU jobs.  Every scheduler runs on the simulator
(`alloc.sim`), rounds every 5 minutes, jobs in submission order, each at its
duration alone wherever it is placed:

* ``private``: each tenant alone on a cluster made of its cells (a server per
  server cell, a 4-GPU server per socket cell, a 2-GPU server per switch cell),
  ``best-fit``, running jobs stay.
* ``best-fit``: the shared cluster, ``quota-best-fit`` (registered here: best
  fit in submission order, a tenant's job skipped while its GPUs in use plus
  its own would pass its quota), running jobs stay.
* ``hived``: the shared cluster, the ``hived`` solver each round; a mechanism
  (`Guarantees`) marks a tenant's waiting jobs guaranteed up to its quota
  (first come first served, counting its guaranteed running jobs) and
  opportunistic beyond (priority -1), ranked by priority; hived preempts by
  its tenancy rules; a preempted job waits again keeping its progress.

Queueing delay = time from submission to first start.  Output: per tenant the
mean delay under each scheduler and the ratio to private.

Usage: python bench/hived.py [--hours 10] [--seed 1] [--skip-trace] [--skip-timing]
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import allocate  # noqa: E402
from alloc.deadline import Deadline  # noqa: E402
from alloc.model import Cell, Cluster, Job, Server, Tenant, frozen_map  # noqa: E402
from alloc.options import Option  # noqa: E402
from alloc.problem import compile_problem  # noqa: E402
from alloc.registry import register, solver, solvers  # noqa: E402
from alloc.sched import BaseMechanism  # noqa: E402
from alloc.sim import WorkloadJob  # noqa: E402
from alloc.sim import simulate as run_simulation  # noqa: E402
from alloc.engines.cells.engine import Engine, restore_running  # noqa: E402
from alloc.engines.greedy.rules import best_fit, rank_order  # noqa: E402
from alloc.engines.greedy.state import State  # noqa: E402

LEVELS = ("rack", "server", "socket", "switch", "gpu")
QUOTAS = {"vc-a": ("server", 12), "vc-b": ("server", 8), "vc-c": ("socket", 16),
          "vc-d": ("switch", 16)}
CELL_GPUS = {"server": 8, "socket": 4, "switch": 2, "gpu": 1}
SIZES = {"vc-a": ((1, None), (1, None), (2, "switch"), (4, "socket")),
         "vc-b": ((8, "server"), (8, "server"), (4, "socket")),
         "vc-c": ((4, "socket"), (2, "switch")),
         "vc-d": ((2, "switch"), (1, None))}
RATE = {"vc-a": 16.0, "vc-b": 5.0, "vc-c": 10.0, "vc-d": 14.0}   # jobs per hour
ROUND = 300.0


def shared_cluster(n=32) -> Cluster:
    servers = tuple(Server(f"s{i:02d}", 64000, 1024000, 8, "V100", f"r{i // 4}", 2, 2)
                    for i in range(n))
    ten = {v: Tenant(v, (Cell(lv, k, "V100"),)) for v, (lv, k) in QUOTAS.items()}
    return Cluster(servers, LEVELS, frozen_map(ten))


def private_cluster(v: str) -> Cluster:
    lv, k = QUOTAS[v]
    g = CELL_GPUS[lv]
    sockets, sw = {8: (2, 2), 4: (1, 2), 2: (1, 1), 1: (1, 1)}[g]
    servers = tuple(Server(f"{v}-{i}", 8000 * g, 128000 * g, g, "V100", f"r{i // 4}",
                           sockets, sw) for i in range(k))
    return Cluster(servers, LEVELS)


def trace(seed: int, hours: float):
    rng = random.Random(seed)
    jobs = []
    for v in QUOTAS:
        t = 0.0
        while True:
            t += rng.expovariate(RATE[v] / 3600.0)
            if t > hours * 3600 * 0.6:
                break
            n, loc = rng.choice(SIZES[v])
            jobs.append((t, v, n, loc, rng.lognormvariate(math.log(5400), 0.8)))
    for i in range(120):   # vc-a burst
        n, loc = rng.choice(((1, None), (2, "switch")))
        jobs.append((7200.0 + i, "vc-a", n, loc, rng.lognormvariate(math.log(2400), 0.6)))
    jobs.sort()
    return [dict(id=f"j{i:04d}", submit=t, tenant=v, gpus=n, locality=loc, work=d)
            for i, (t, v, n, loc, d) in enumerate(jobs)]


def workload(recs, *, tenant: bool):
    """The trace as the simulator's jobs (CPU and memory as the jobs ask)."""
    out = []
    for r in recs:
        n = r["gpus"]
        fields = {"cpu": 1000 * n, "mem": 8000 * n, "locality": r["locality"]}
        if tenant:
            fields["tenant"] = r["tenant"]
        out.append(WorkloadJob(r["id"], r["submit"], n, duration_s=r["work"],
                               extra={"vc": r["tenant"]}, fields=fields))
    return out


class Guarantees(BaseMechanism):
    """Each round, a tenant's waiting jobs are guaranteed while its GPUs held
    by guaranteed jobs, plus theirs, stay within its quota (first come first
    served); the others are opportunistic (priority -1)."""

    def __init__(self, quota: dict[str, int]) -> None:
        self.quota = quota

    def before_round(self, ctl) -> None:
        use = {v: 0 for v in self.quota}
        for j in ctl.jobs.values():
            if j.running and j.fields.get("guaranteed"):
                use[j.fields["tenant"]] += j.gpus
        for j in sorted((j for j in ctl.jobs.values() if not j.running),
                        key=lambda j: (j.arrival_s, j.id)):
            v = j.fields["tenant"]
            g = use[v] + j.gpus <= self.quota[v]
            if g:
                use[v] += j.gpus
            ctl.set_fields(j.id, guaranteed=g, priority=0 if g else -1)


@solver(capabilities=("locality", "spread", "order-preemption"), objectives=(),
        options=(Option("quota", "mapping", {}, "GPUs each tenant (vc) may hold"),
                 Option("vc_of", "mapping", {}, "each job's tenant")),
        description="best fit in order, each tenant capped at its GPU quota")
def quota_best_fit(problem, *, deadline, seed=0, quota=None, vc_of=None):
    """The topology-oblivious baseline: best fit in rank order, a tenant's job
    skipped while its tenant's GPUs in use plus its own pass its quota."""
    st = State(problem)
    jobs = problem.jobs
    use = {v: 0 for v in quota}
    for j in problem.running:
        use[vc_of[jobs[j].id]] += jobs[j].gpus
    for j in rank_order(problem):
        v = vc_of[jobs[j].id]
        if use[v] + jobs[j].gpus > quota[v]:
            continue
        a = best_fit(st, j, 0)
        if a is not None:
            st.place(j, a)
            use[v] += jobs[j].gpus
    return st.solution()


def simulate(cluster: Cluster, recs, mode: str, hours: float):
    """Return {job id: queueing delay (s)} (jobs never started get the horizon)."""
    horizon = hours * 3600
    quota = {v: k * CELL_GPUS[lv] for v, (lv, k) in QUOTAS.items()}
    order = ("fifo", {"preemptive": False})
    kw: dict = {}
    if mode == "hived":
        kw = dict(placement="hived", mechanism=Guarantees(quota),
                  order=("priority", {"preemptive": False}))
    elif mode == "best-fit":
        if "quota-best-fit" not in solvers():
            register("quota-best-fit", quota_best_fit)
        kw = dict(placement=("quota-best-fit", {"quota": quota,
                                                "vc_of": {r["id"]: r["tenant"] for r in recs}}),
                  order=order)
        cluster = Cluster(cluster.servers, cluster.levels)   # quotas by count, no cells
    else:
        kw = dict(placement="best-fit", order=order)
    res = run_simulation(cluster, workload(recs, tenant=mode == "hived"), round_s=ROUND,
                         candidates="all", max_time_s=horizon, **kw)
    start = {row["id"]: row["start_s"] for row in res.timeline()}
    return {r["id"]: (start.get(r["id"]) if start.get(r["id"]) is not None else horizon)
            - r["submit"] for r in recs}


def run_trace(seed: int, hours: float) -> None:
    recs = trace(seed, hours)
    print(f"trace: {len(recs)} jobs over {hours:g} h (seed {seed}), rounds of {ROUND:g} s, "
          f"vc-a burst of 120 jobs at t=2h; 32 servers x 8 GPUs")
    delays = {}
    t0 = time.perf_counter()
    priv = {}
    for v in QUOTAS:
        mine = [r for r in recs if r["tenant"] == v]
        priv.update(simulate(private_cluster(v), mine, "private", hours))
    delays["private"] = priv
    for mode in ("best-fit", "hived"):
        delays[mode] = simulate(shared_cluster(), recs, mode, hours)
    print(f"(simulated in {time.perf_counter() - t0:.1f} s)")
    print(f"{'tenant':8} {'jobs':>5} {'private':>10} {'best-fit':>10} {'hived':>10} "
          f"{'bf/priv':>8} {'hived/priv':>10}   (mean queueing delay, minutes)")
    for v in QUOTAS:
        ids = [r["id"] for r in recs if r["tenant"] == v]
        m = {k: statistics.mean(d[i] for i in ids) / 60 for k, d in delays.items()}
        ratio = lambda a: f"{m[a] / m['private']:.2f}" if m["private"] > 0.05 else "-"  # noqa: E731
        print(f"{v:8} {len(ids):5d} {m['private']:10.1f} {m['best-fit']:10.1f} "
              f"{m['hived']:10.1f} {ratio('best-fit'):>8} {ratio('hived'):>10}")


def run_timing(seed: int) -> None:
    rng = random.Random(seed)
    n = 1000
    servers = tuple(Server(f"s{i:04d}", 64000, 1024000, 8, "V100", f"r{i // 40:02d}", 2, 2)
                    for i in range(n))
    ten = {"vc-a": Tenant("vc-a", (Cell("rack", 5, "V100"), Cell("server", 100, "V100"))),
           "vc-b": Tenant("vc-b", (Cell("server", 200, "V100"),)),
           "vc-c": Tenant("vc-c", (Cell("socket", 400, "V100"), Cell("switch", 400, "V100"))),
           "vc-d": Tenant("vc-d", (Cell("switch", 600, "V100"), Cell("gpu", 400, "V100")))}
    cluster = Cluster(servers, LEVELS, frozen_map(ten))
    # fill about half of each tenant's quota with running guaranteed jobs via hived
    jobs = []
    sizes = {"vc-a": (8, "server"), "vc-b": (8, "server"), "vc-c": (4, "socket"),
             "vc-d": (2, "switch")}
    counts = {"vc-a": 150, "vc-b": 100, "vc-c": 300, "vc-d": 600}
    for v, k in counts.items():
        g, loc = sizes[v]
        jobs += [Job(f"{v}-{i}", gpus=g, cpu=100 * g, mem=100 * g, locality=loc, tenant=v,
                     guaranteed=True) for i in range(k)]
    jobs += [Job(f"o-{i}", gpus=rng.choice((1, 2)), cpu=100, mem=100) for i in range(300)]
    t0 = time.perf_counter()
    a = allocate(cluster, jobs, solver="hived", check=False)
    t_fill = time.perf_counter() - t0
    placed = {p.job: p for p in a.placements}
    jobs = [replace(j, current=replace(placed[j.id], throughput=0.0)) for j in jobs
            if j.id in placed]
    probes = [Job(f"new-{i}", gpus=g, cpu=100 * g, mem=100 * g, locality=loc, tenant=v,
                  guaranteed=True) for i, (v, g, loc) in enumerate(
                  [("vc-a", 8, "server"), ("vc-b", 8, "server"), ("vc-c", 4, "socket"),
                   ("vc-d", 2, "switch"), ("vc-d", 1, None)] * 10)]
    probes += [Job(f"opp-{i}", gpus=g, cpu=100, mem=100) for i, g in enumerate([1, 2, 4] * 5)]
    prob = compile_problem(cluster, jobs + probes)
    t0 = time.perf_counter()
    eng = Engine(prob)
    restore_running(eng, [j for j in range(len(jobs))], Deadline.never())
    t_restore = time.perf_counter() - t0
    times = {"guaranteed": [], "opportunistic": []}
    for k in range(len(jobs), len(jobs) + len(probes)):
        job = prob.jobs[k]
        t0 = time.perf_counter()
        ok = eng.try_place(k, job.gpus, 0, set())
        dt = time.perf_counter() - t0
        times["guaranteed" if job.guaranteed else "opportunistic"].append(dt * 1000)
        if ok:
            eng.remove(k)
    print(f"hierarchy: {n} servers, {cluster.total_gpus} GPUs, 25 racks; "
          f"{len(jobs)} running jobs ({sum(j.gpus for j in jobs)} GPUs busy)")
    print(f"fill with allocate(): {t_fill:.2f} s; rebuild engine state from current "
          f"placements: {t_restore:.2f} s")
    times["either"] = times["guaranteed"] + times["opportunistic"]
    for k, ts in times.items():
        ts = sorted(ts)
        p95 = ts[min(len(ts) - 1, math.ceil(0.95 * len(ts)) - 1)]
        what = "job of either kind" if k == "either" else f"{k} job"
        print(f"place one {what}: median {statistics.median(ts):.2f} ms, p95 {p95:.2f} ms, "
              f"max {ts[-1]:.2f} ms over {len(ts)} jobs (target <= 5 ms)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-trace", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    a = ap.parse_args(argv)
    if not a.skip_timing:
        run_timing(a.seed)
    if not a.skip_trace:
        run_trace(a.seed, a.hours)
    return 0


if __name__ == "__main__":
    sys.exit(main())

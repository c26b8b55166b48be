"""HiveD's headline measure: per-tenant queueing delay on a shared cluster vs.
the tenant's private cluster, for ``hived`` and a topology-oblivious quota
scheduler (``best-fit`` with GPU-count quotas); plus the time ``hived`` takes to
place one job on a 1,000-server / 8,000-GPU hierarchy.

Trace.  32 servers x 8 V100 (racks of 4; 2 sockets x 2 switches), quotas that
add up to the cluster: vc-a 12 server cells, vc-b 8 server cells, vc-c 16
socket cells, vc-d 16 switch cells.  Jobs arrive by tenant (Poisson), sizes by
tenant (vc-a mostly 1-2 GPUs, vc-b 8-GPU server jobs, vc-c 4-GPU socket jobs,
vc-d 2-GPU switch jobs), lognormal durations; at t = 2 h vc-a submits a burst
of 120 one-/two-GPU jobs.  Rounds every 5 minutes:

* ``private``: each tenant alone on a cluster made of its cells (a server per
  server cell, a 4-GPU server per socket cell, a 2-GPU server per switch cell),
  best fit, running jobs stay.
* ``best-fit``: the shared cluster, a tenant's jobs admitted while its GPUs in
  use stay within its quota (GPU count), best fit, running jobs stay.
* ``hived``: the shared cluster, ``allocate(..., solver="hived")`` each round;
  a tenant's pending jobs are guaranteed up to its quota (first come first
  served) and opportunistic beyond; a preempted job goes back to the queue
  keeping its progress.

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
from alloc.model import Cell, Cluster, Job, Server, Tenant, frozen_map  # noqa: E402
from alloc.problem import Assign, compile_problem  # noqa: E402
from alloc.engines.greedy.rules import best_fit  # noqa: E402
from alloc.engines.greedy.state import State  # noqa: E402
from alloc.engines.cells.engine import Engine, restore_running  # noqa: E402
from alloc.deadline import Deadline  # noqa: E402

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


def to_job(rec, *, tenant=True, guaranteed=True, current=None):
    n = rec["gpus"]
    return Job(rec["id"], gpus=n, cpu=1000 * n, mem=8000 * n, locality=rec["locality"],
               tenant=rec["tenant"] if tenant else None, guaranteed=guaranteed and tenant,
               priority=0 if guaranteed else -1, current=current)


def simulate(cluster: Cluster, recs, mode: str, hours: float):
    """Return {job id: queueing delay (s)} (jobs never started get the horizon)."""
    pending = []
    running = {}       # id -> (rec, placement, guaranteed)
    left = {r["id"]: r["work"] for r in recs}
    start = {}
    queue = list(recs)
    t = 0.0
    horizon = hours * 3600
    quota = {v: k * CELL_GPUS[lv] for v, (lv, k) in QUOTAS.items()}
    while t < horizon and (queue or pending or running):
        while queue and queue[0]["submit"] <= t:
            pending.append(queue.pop(0))
        if mode == "hived":
            use = {v: 0 for v in QUOTAS}
            for rid, (r, p, g) in running.items():
                if g:
                    use[r["tenant"]] += r["gpus"]
            jobs = [to_job(r, guaranteed=g, current=p) for rid, (r, p, g) in running.items()]
            for r in pending:
                g = use[r["tenant"]] + r["gpus"] <= quota[r["tenant"]]
                if g:
                    use[r["tenant"]] += r["gpus"]
                jobs.append(to_job(r, guaranteed=g))
            a = allocate(cluster, jobs, solver="hived")
            gmap = {j.id: j.guaranteed for j in jobs}
            recs_by = {r["id"]: r for r in pending}
            recs_by.update({rid: r for rid, (r, _, _) in running.items()})
            new_running = {}
            for p in a.placements:
                new_running[p.job] = (recs_by[p.job], replace(p, throughput=0.0), gmap[p.job])
                start.setdefault(p.job, t)
            pending = [recs_by[j] for j in recs_by if j not in new_running]
            pending.sort(key=lambda r: r["submit"])
            running = new_running
        else:
            jobs = [to_job(r, tenant=False, current=p) for rid, (r, p, g) in running.items()]
            cand = []
            use = {v: 0 for v in QUOTAS}
            for rid, (r, p, g) in running.items():
                use[r["tenant"]] += r["gpus"]
            for r in pending:
                if mode == "private" or use[r["tenant"]] + r["gpus"] <= quota[r["tenant"]]:
                    cand.append(r)
            jobs += [to_job(r, tenant=False) for r in cand]
            prob = compile_problem(cluster, jobs)
            st = State(prob)
            nrun = len(running)
            for j in range(nrun):
                cur = jobs[j].current
                a = Assign(tuple((cluster.gpu_index[g.gpu], g.milli) for g in cur.gpus),
                           tuple((cluster.server_index[s], v) for s, v in cur.cpu.items()),
                           tuple((cluster.server_index[s], v) for s, v in cur.mem.items()))
                st.place(j, a)
            for j in range(nrun, len(jobs)):
                r = cand[j - nrun]
                if mode != "private" and use[r["tenant"]] + r["gpus"] > quota[r["tenant"]]:
                    continue
                a = best_fit(st, j, 0)
                if a is not None:
                    st.place(j, a)
                    use[r["tenant"]] += r["gpus"]
                    p = prob.placement(j, a)
                    running[r["id"]] = (r, replace(p, throughput=0.0), True)
                    start.setdefault(r["id"], t)
            pending = [r for r in pending if r["id"] not in running]
        # advance one round
        t += ROUND
        done = []
        for rid in running:
            left[rid] -= ROUND
            if left[rid] <= 0:
                done.append(rid)
        for rid in done:
            running.pop(rid)
    return {r["id"]: start.get(r["id"], horizon) - r["submit"] for r in recs}


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

"""Scheduler-loop benchmark: an `alloc.Session` carrying running jobs
through rounds of arrivals and finishes.

Workload (the Synergy job mix, Mohan et al., OSDI'22): each job picks one of
the 12 models of ``models/`` uniformly, 1/2/4/8 GPUs with probability
0.70/0.10/0.15/0.05, and asks 3 cores and 62.5 GiB (64,000 MiB) per GPU.
Servers: 8 GPUs, 24 cores, 500 GiB.  A job runs for a geometric number of
rounds (mean ``--mean-rounds``) once started; arrivals per round are
Poisson with mean ``load * G / E[gpus] / mean_rounds``, so that the GPU demand
of the jobs in the system is ``load`` of the ``G`` GPUs (``E[gpus]`` = 1.9).
The cluster starts with that many jobs, the ones best-fit places running
(the same start for every solver); ``--warmup`` rounds are run before the
``--rounds`` measured ones.  Every solver sees the same arrival
stream; finishes follow each solver's own start times.

Per solver the table gives the round latency (the whole ``Session.step``:
the core's compile, solver, finish and final check, and the session's
update) median / p95 / max, the process's CPU time per round (median), where
the time goes (medians of compile / solver / finish / check / commit, and
of the garbage collector's time inside the round), the mean CPU time of
the whole iteration (the driver's events and bookkeeping, ``apply`` and
``step``: the collections a round defers to its caller are here) and the
collector's mean time in it, the process's peak
memory (each size and solver runs in a fresh process; the peak includes the
workload, the starting allocation and the session), unexplained moves (a
running job whose placement changed without being listed in ``moved``, or
any move at all: the session allows none), preemptions, and the mean GPU
allocation.  For ``cpsat`` each round's input is also given to every
heuristic (``allocate()`` on the same jobs): cpsat's value against the best
of them (rounds below it must be 0) and its gap to its bound.

At production scale, ``--servers 16000`` is 128,000 GPUs with about 57,000
running jobs and 2,900 arrivals (and as many finishes) a round.

``--order las --preempt order`` runs the session as a LAS scheduler would:
every round the order is the jobs by GPU-rounds attained (least first, then
arrival; with ``--las-quantum Q`` attained service counts in steps of Q
GPU-rounds, Tiresias' discretised LAS) and the session preempts by it
(``Session(preempt="order")``); a preempted job keeps its progress (rounds
left) and waits.  With ``--load`` above 1 the queue never empties: plain LAS
then preempts hundreds of jobs a round (every arrival outranks every running
job), the discretised one far fewer.

``--first-call`` measures, in fresh processes, ``import alloc`` plus the first
``allocate()`` (best-fit, 32 x 8 GPUs, 100 jobs).

Examples
--------
```
python bench/loop.py --servers 32 --rounds 200
python bench/loop.py --servers 1000 --rounds 200 --solvers best-fit fgd
python bench/loop.py --servers 1000 --solvers best-fit --order las --preempt order --load 1.2
python bench/loop.py --servers 16000 --rounds 50 --solvers best-fit synergy-tune fgd hived
python bench/loop.py --first-call
python bench/loop.py --servers 1000 --solvers best-fit --tree ../main --tree .
```
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import json
import math
import os
import pstats
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import Cluster, Job, Server, Session, allocate  # noqa: E402
from alloc.profiles import available_models, load_profile  # noqa: E402

MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
MEAN_GPUS = sum(n * p for n, p in MIX)
SOLVERS = ("best-fit", "synergy-tune", "fgd", "hived", "cpsat")
HEURISTICS = ("best-fit", "synergy-tune", "fgd", "hived")


def mix_gpus(rng: random.Random) -> int:
    """A new job's GPUs drawn from `MIX` (one draw of ``rng``)."""
    u, acc = rng.random(), 0.0
    for g, p in MIX:
        acc += p
        if u < acc:
            return g
    return MIX[-1][0]


def cluster(servers: int) -> Cluster:
    """``servers`` x 8 V100 GPUs, 24 cores and 500 GiB each."""
    return Cluster(tuple(Server(f"s{i:04d}", 24000, 512000, 8, "V100") for i in range(servers)))


class Stream:
    """The seeded job stream: ``(job, rounds it runs)`` per arrival."""

    def __init__(self, seed: int, mean_rounds: float):
        self.rng = random.Random(seed)
        self.models = available_models()
        self.profiles = {m: load_profile(m) for m in self.models}
        self.q = 1.0 / mean_rounds
        self.k = 0

    def job(self) -> tuple[Job, int]:
        """The next job and the rounds it runs once started (geometric)."""
        n = mix_gpus(self.rng)
        m = self.rng.choice(self.models)
        life = 1 + int(math.log(1.0 - self.rng.random()) / math.log(1.0 - self.q))
        self.k += 1
        return Job(f"j{self.k}", n, cpu=3000 * n, mem=64000 * n, model=m,
                   profile=self.profiles[m]), life

    def poisson(self, lam: float) -> int:
        """A Poisson draw of mean ``lam`` (arrivals in one round)."""
        # Knuth for small means, normal approximation for large ones
        if lam > 50:
            return max(0, round(self.rng.gauss(lam, math.sqrt(lam))))
        k, p, t = 0, 1.0, math.exp(-lam)
        while True:
            p *= self.rng.random()
            if p <= t:
                return k
            k += 1


def unexplained(before: dict, alloc) -> int:
    """Running jobs placed differently (or stopped) without being listed."""
    placed = {p.job: p for p in alloc.placements}
    moved, pre = set(alloc.moved), set(alloc.preempted)
    bad = 0
    for jid, job in before.items():
        if job.current is None:
            continue
        p = placed.get(jid)
        if p is None:
            bad += jid not in pre
        elif not p.same_as(job.current):
            bad += 1  # the session allows no move at all
    return bad + len(moved)


def run(solver: str, servers: int, rounds: int, warmup: int, seed: int, load: float,
        mean_rounds: float, time_limit: float | None, compare_every: int = 1,
        profile: bool = False, order: str = "none", preempt: str = "none",
        quantum: float = 0.0) -> dict:
    """One solver through ``warmup + rounds`` rounds; the summary of the measured ones."""
    cl = cluster(servers)
    G = cl.total_gpus
    stream = Stream(seed, mean_rounds)
    lam = load * G / MEAN_GPUS / mean_rounds
    life: dict[str, int] = {}
    left: dict[str, int] = {}
    first = []
    for _ in range(round(load * G / MEAN_GPUS)):
        job, n = stream.job()
        first.append(job)
        life[job.id] = n
    # every solver starts from the same running set: the first jobs placed by best-fit
    a = allocate(cl, first, solver="best-fit")
    first = list(a.advance(first))
    for j in first:
        if j.current is not None:
            left[j.id] = life.pop(j.id)
    s = Session(cl, jobs=first, solver=solver, time_limit=time_limit,
                preempt="order" if preempt == "order" else None)
    attained: dict[str, int] = {}         # GPU-rounds run (LAS)
    arrival = {j.id: k for k, j in enumerate(first)}
    prof = cProfile.Profile() if profile else None
    rows = []
    collecting = [0.0, 0.0]                    # collector seconds, start of the current one

    def watch(phase, info):
        if phase == "start":
            collecting[1] = time.perf_counter()
        else:
            collecting[0] += time.perf_counter() - collecting[1]
    gc.callbacks.append(watch)
    loop0 = [time.process_time(), collecting[0]]     # the iteration's start: CPU, collector
    for r in range(warmup + rounds):
        events = []
        for jid in [j for j, n in left.items() if n <= 0]:
            events.append({"type": "finish", "job": jid})
            del left[jid]
        for _ in range(stream.poisson(lam)):
            job, n = stream.job()
            life[job.id] = n
            arrival[job.id] = len(arrival)
            events.append({"type": "submit", "job": job})
        if order == "las":
            live = [j for j in arrival if j in life or j in left]
            q = quantum or 1
            events.append({"type": "set_order", "order": sorted(
                live, key=lambda j: (attained.get(j, 0) // q, arrival[j]))})
        s.apply(events)
        before = dict(s.jobs) if r >= warmup else None
        ranked = [j for j in s.order if j in s.jobs] if s.order else None
        if prof is not None and before is not None:
            prof.enable()
        c0, g0 = time.process_time(), collecting[0]
        res = s.step()
        cpu = time.process_time() - c0
        collected = collecting[0] - g0
        if prof is not None:
            prof.disable()
        for jid in res.stop:                       # preempted: keeps its progress, waits
            life[jid] = left.pop(jid)
        for p in res.start:
            left[p.job] = life.pop(p.job)
        for jid in left:
            left[jid] -= 1
            attained[jid] = attained.get(jid, 0) + s.jobs[jid].gpus
        loop_cpu, loop_gc = time.process_time() - loop0[0], collecting[0] - loop0[1]
        if before is None:
            loop0[:] = [time.process_time(), collecting[0]]
            continue
        a = res.allocation
        t = res.timings
        row = {"latency": res.latency_s, "cpu": cpu, "compile": t["compile_s"],
               "solver": t["solver_s"], "finish": t["finish_s"], "check": t["check_s"],
               "commit": t["commit_s"], "gc": collected, "loop_cpu": loop_cpu,
               "loop_gc": loop_gc,
               "unexplained": unexplained(before, a), "preempted": len(a.preempted),
               "util": sum(g.milli for p in a.placements for g in p.gpus) / (1000 * G),
               "jobs": len(before), "waiting": len(a.unplaced), "value": a.value,
               "gap": a.gap}
        if solver == "cpsat" and (r - warmup) % compare_every == 0:
            row["best_heuristic"] = max(
                allocate(cl, list(before.values()), solver=h, time_limit=10, order=ranked,
                         preempt=s.preempt_rule).value
                for h in HEURISTICS)
        rows.append(row)
        loop0[:] = [time.process_time(), collecting[0]]
    gc.callbacks.remove(watch)
    out = summarise(solver, servers, rows)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if prof is not None:
        out["profile"] = breakdown(prof, solver, len(rows))
    return out


#: Functions whose cumulative time the profile reports: (label, file, function).
PROFILED = (
    ("Session.step (the whole round)", "alloc/session/core.py", "step"),
    ("  problem.compile_problem", "alloc/problem/core.py", "compile_problem"),
    ("    Problem._set_live_state", "alloc/problem/live.py", "_set_live_state"),
    ("      problem.placeable_reason (per pending job, O(servers))", "alloc/problem/placeable.py",
     "placeable_reason"),
    ("      Problem.current_assign (per running job)", "alloc/problem/live.py", "current_assign"),
    ("    problem.pareto_options", "alloc/problem/points.py", "pareto_options"),
    ("  solve.run_solver", "alloc/solve.py", "run_solver"),
    ("    the solver", None, None),
    ("    solve.finish", "alloc/solve.py", "finish"),
    ("      Problem.placement (every placed job, running ones too)", "alloc/problem/build.py",
     "placement"),
    ("    recheck.violations_since (final check: what changed)", "alloc/recheck.py",
     "violations_since"),
    ("    check.violations (final check: full)", "alloc/check.py", "violations"),
    ("      check.placement_problems (every placement)", "alloc/check.py",
     "placement_problems"),
    ("      check.live_state_problems", "alloc/check.py", "live_state_problems"),
    ("      check.capacity_problems", "alloc/check.py", "capacity_problems"),
    ("      tenancy.tenancy_violations", "alloc/tenancy.py", "tenancy_violations"),
    ("  objectives.throughput (finish + check, all calls)", "alloc/objectives.py", "throughput"),
    ("  model.Placement.same_as (all calls)", "alloc/model.py", "same_as"),
    ("  Session._commit", "alloc/session/core.py", "_commit"),
)


def breakdown(prof: cProfile.Profile, solver: str, rounds: int) -> list[tuple[str, float]]:
    """Cumulative milliseconds per round of `PROFILED` (under the profiler)."""
    from alloc.registry import get_solver
    fn = get_solver(solver).entry.partition(":")[2]
    st = pstats.Stats(prof).stats
    def cum(file, func):
        # a tree before `alloc/problem/` was a package holds it all in alloc/problem.py
        files = (file, "alloc/problem.py") if file.startswith("alloc/problem/") else (file,)
        return sum(v[3] for (f, _, name), v in st.items()
                   if name == func and f.replace("\\", "/").endswith(files))

    out = []
    for label, file, func in PROFILED:
        if file is None:  # the solver: what run_solver spends outside finish and the check
            label = f"    the solver ({fn}; run_solver - finish - final check)"
            ct = cum("alloc/solve.py", "run_solver") - cum("alloc/solve.py", "finish") \
                - cum("alloc/solve.py", "_violations")
        else:
            ct = cum(file, func)
        out.append((label, 1e3 * ct / max(1, rounds)))
    return out


def pct(xs, q):
    """The ``q`` quantile of ``xs`` (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)]


def summarise(solver: str, servers: int, rows: list[dict]) -> dict:
    """Latency quantiles, moves, preemptions, utilisation and cpsat's quality over rounds."""
    lat = [r["latency"] for r in rows]
    out = {"solver": solver, "servers": servers, "rounds": len(rows),
           "median_ms": 1e3 * statistics.median(lat), "p95_ms": 1e3 * pct(lat, 0.95),
           "max_ms": 1e3 * max(lat),
           "cpu_ms": 1e3 * statistics.median(r["cpu"] for r in rows),
           **{f"{k}_ms": 1e3 * statistics.median(r[k] for r in rows)
              for k in ("compile", "solver", "finish", "check", "commit", "gc")},
           # the whole iteration (the driver's events and bookkeeping, apply and step):
           # collections a round defers to its caller count here
           "loop_cpu_ms": 1e3 * statistics.mean(r["loop_cpu"] for r in rows),
           "loop_gc_ms": 1e3 * statistics.mean(r["loop_gc"] for r in rows),
           "unexplained": sum(r["unexplained"] for r in rows),
           "preempted": sum(r["preempted"] for r in rows),
           "util": statistics.mean(r["util"] for r in rows),
           "jobs": statistics.mean(r["jobs"] for r in rows),
           "waiting": statistics.mean(r["waiting"] for r in rows)}
    cmp = [r for r in rows if "best_heuristic" in r]
    if cmp:
        out["compared"] = len(cmp)
        out["below_heuristic"] = sum(r["value"] < r["best_heuristic"] - 1e-6 for r in cmp)
        out["vs_heuristic_mean"] = statistics.mean(
            r["value"] / r["best_heuristic"] - 1 for r in cmp if r["best_heuristic"] > 0)
        gaps = [r["gap"] for r in rows if r["gap"] is not None]
        out["gap_max"] = max(gaps) if gaps else None
        out["gap_median"] = statistics.median(gaps) if gaps else None
        out["gap_over_1pct"] = sum(g > 0.01 for g in gaps)
        out["gap_rounds"] = len(gaps)
    return out


def table(results: list[dict]) -> str:
    """The summaries as a markdown table."""
    head = ("| GPUs | solver | median ms | p95 ms | max ms | CPU ms (median) "
            "| compile / solver / finish / check / commit ms | GC ms "
            "| loop CPU ms (mean) | loop GC ms (mean) | peak MB "
            "| unexplained moves | preemptions | GPU util | jobs / waiting | cpsat vs best "
            "heuristic | cpsat gap |")
    lines = [head, "|" + "---|" * 17]
    for r in results:
        vs = gap = "-"
        if "below_heuristic" in r:
            vs = (f"{100 * r['vs_heuristic_mean']:+.2f} % mean, "
                  f"{r['below_heuristic']} of {r['compared']} rounds below")
            gap = "-" if r["gap_max"] is None else \
                (f"median {100 * r['gap_median']:.3f} %, max {100 * r['gap_max']:.3f} %, "
                 f"{r['gap_over_1pct']} of {r['gap_rounds']} rounds > 1 %")
        lines.append(
            f"| {8 * r['servers']} | {r['solver']} | {r['median_ms']:.1f} | {r['p95_ms']:.1f} "
            f"| {r['max_ms']:.1f} | {r['cpu_ms']:.1f} | "
            + " / ".join(f"{r[k + '_ms']:.1f}" for k in ("compile", "solver", "finish", "check",
                                                          "commit"))
            + f" | {r['gc_ms']:.1f} | {r['loop_cpu_ms']:.1f} | {r['loop_gc_ms']:.1f} "
            f"| {r.get('peak_mb', 0):.0f} "
            f"| {r['unexplained']} | {r['preempted']} "
            f"| {100 * r['util']:.1f} % | {r['jobs']:.0f} / {r['waiting']:.0f} | {vs} | {gap} |")
    return "\n".join(lines)


def worker(kwargs: dict, tree: Path | None = None) -> dict:
    """:func:`run` in a fresh process (the peak memory is the run's own);
    with ``tree``, that source tree's ``bench/loop.py`` and package."""
    script, cwd = (__file__, ROOT) if tree is None else (tree / "bench" / "loop.py", tree)
    cmd = [sys.executable, str(script), "--worker", json.dumps(kwargs)]
    out = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


FIRST_CALL = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import alloc
from alloc import Cluster, Job, Server
cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(32)))
jobs = [Job(f"j{i}", 1 + (i % 2), cpu=3000 * (1 + i % 2), mem=64000 * (1 + i % 2),
            model="res18") for i in range(100)]
t1, c1 = time.perf_counter(), time.process_time()
alloc.allocate(cl, jobs)
t2, c2 = time.perf_counter(), time.process_time()
print(t1 - t0, t2 - t1, t2 - t0, c2 - c0)
"""


def first_call(runs: int = 5) -> dict:
    """``import alloc`` + first ``allocate()`` in fresh processes (seconds):
    medians of wall times and of the process's CPU time."""
    out = []
    for _ in range(runs):
        txt = subprocess.run([sys.executable, "-c", FIRST_CALL], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        out.append(tuple(map(float, txt.split())))
    med = [statistics.median(x[k] for x in out) for k in range(4)]
    return {"import_s": med[0], "first_allocate_s": med[1], "total_s": med[2],
            "cpu_s": med[3], "max_total_s": max(x[2] for x in out), "runs": runs}


def main(argv=None) -> int:
    """Run the benchmark (see the module notes); prints the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, nargs="+", default=[32],
                    help="cluster sizes in 8-GPU servers (default: 32)")
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS),
                    help=f"solvers (default: {' '.join(SOLVERS)})")
    ap.add_argument("--rounds", type=int, default=200, help="measured rounds (default: 200)")
    ap.add_argument("--warmup", type=int, default=10, help="unmeasured rounds (default: 10)")
    ap.add_argument("--load", type=float, default=0.85, help="GPU demand / GPUs (default: 0.85)")
    ap.add_argument("--mean-rounds", type=float, default=20.0,
                    help="mean rounds a job runs (default: 20)")
    ap.add_argument("--time-limit", type=float, default=1.0,
                    help="seconds per round for exact solvers (default: 1)")
    ap.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    ap.add_argument("--compare-every", type=int, default=1, metavar="K",
                    help="run the heuristics on cpsat's input every K-th round (default: 1)")
    ap.add_argument("--profile", action="store_true",
                    help="profile the measured rounds (cProfile) and print where the time goes")
    ap.add_argument("--order", choices=("none", "las"), default="none",
                    help="hand the session a LAS order every round (default: none)")
    ap.add_argument("--preempt", choices=("none", "order"), default="none",
                    help="preempt by the order (default: none)")
    ap.add_argument("--las-quantum", type=float, default=0.0, metavar="Q",
                    help="LAS counts attained GPU-rounds in steps of Q (default: 0, plain LAS)")
    ap.add_argument("--first-call", action="store_true",
                    help="only measure import + first allocate() in fresh processes")
    ap.add_argument("--tree", action="append", type=Path, metavar="DIR",
                    help="source tree to measure (repeatable: each size and solver runs "
                         "once per tree, the trees taking turns, rows labelled with the "
                         "tree's name; default: this one)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:                      # one size and solver, in this process
        w = json.loads(args.worker)
        print(json.dumps(run(**w)))
        return 0
    if args.first_call:
        fc = first_call()
        print(f"import alloc {fc['import_s']:.3f} s + first allocate() "
              f"{fc['first_allocate_s']:.3f} s = {fc['total_s']:.3f} s wall, "
              f"{fc['cpu_s']:.3f} s CPU (medians of {fc['runs']}; max wall "
              f"{fc['max_total_s']:.3f} s)")
        return 0
    results = []
    trees = [t.resolve() for t in args.tree] if args.tree else [None]
    print(f"load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr, flush=True)
    for servers in args.servers:
        for solver, tree in ((s, t) for s in args.solvers for t in trees):
            t0 = time.perf_counter()
            tl = args.time_limit if solver == "cpsat" else None
            r = worker(dict(solver=solver, servers=servers, rounds=args.rounds,
                            warmup=args.warmup, seed=args.seed, load=args.load,
                            mean_rounds=args.mean_rounds, time_limit=tl,
                            compare_every=args.compare_every, profile=args.profile,
                            order=args.order, preempt=args.preempt,
                            quantum=args.las_quantum), tree)
            if tree is not None:
                r["solver"] = f"{solver} @{tree.name}"
                solver = r["solver"]
            results.append(r)
            if args.profile:
                total = r["profile"][0][1]
                print(f"\n{8 * servers} GPUs, {solver}: ms per round under cProfile")
                for label, ms in r["profile"]:
                    print(f"  {label:<66} {ms:9.1f} {100 * ms / total:5.1f} %")
            print(f"{8 * servers} GPUs {solver}: median {r['median_ms']:.1f} ms, "
                  f"p95 {r['p95_ms']:.1f} ms ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end", file=sys.stderr, flush=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

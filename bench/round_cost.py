"""A round's cost against what changed: two `alloc.Session` rounds side by
side in one process, their rounds interleaved, and the ratio of their costs.

(a) ``queue``: 1,000 servers x 8 GPUs (24 cores, 500 GiB) whose CPUs are the
bottleneck.  Every server runs one long job (1 GPU, 23.2 cores, never
finishing) and two short ones (1 GPU, 0.4 core each, no model), so at most 0.8 core
is ever free on a server while 5 of its 8 GPUs idle.  Each round
``--churn`` short jobs finish and as many new ones (the same shape) arrive.
Session A also holds ``--queue`` (16,000) waiting jobs of the Synergy mix
(1/2/4/8 GPUs with probability 0.70/0.10/0.15/0.05, 3 cores and 62.5 GiB
per GPU, one of the 12 models of ``models/``): the smallest CPU point of
their profiles is 1 core per GPU, so none can fit in any round.  Session B
is the same cluster and stream with an empty queue.  Target: A / B <= 1.5.

(b) ``scale``: 16,000 x 8 GPUs against 1,000 x 8, each 85 % full of running
jobs of the Synergy mix (3 cores and 62.5 GiB per GPU; packed server by
server), each round the same ``--churn`` jobs finishing (drawn at random
among the running ones) and as many arriving.  Target: 16,000 / 1,000 <= 8.

Both sessions of a pair see the same events each round (the same job ids,
shapes and finishes by position in a seeded stream).  Per pair the table
gives the median wall time of ``Session.step`` (the round), its median CPU
time (``time.process_time``) and the ratio of the medians, and the load
average at the start and end of the pair.  Jobs placed and jobs waiting per
round are printed to show the rounds did the same work.

Examples
--------
```
python bench/round_cost.py --solvers best-fit synergy-tune
python bench/round_cost.py --cases queue --solvers best-fit --rounds 20
python bench/round_cost.py --cases scale --solvers best-fit synergy-tune --rounds 10
```
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import Cluster, GpuShare, Job, Placement, Server, Session  # noqa: E402
from alloc.profiles import available_models, load_profile  # noqa: E402

from loop import mix_gpus  # noqa: E402  (the Synergy mix, bench/loop.py's)

#: Milli-cores of the long job on each server in case (a) and of a short one.
LONG_CPU, SHORT_CPU = 23200, 400
SOLVERS = ("best-fit", "synergy-tune", "fgd", "hived")


def cluster(servers: int) -> Cluster:
    """``servers`` x 8 V100 GPUs, 24 cores and 500 GiB each."""
    return Cluster(tuple(Server(f"s{i:05d}", 24000, 512000, 8, "V100")
                         for i in range(servers)))


class Mix:
    """The seeded Synergy job mix (GPUs, model) of every new job."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.models = available_models()
        self.profiles = {m: load_profile(m) for m in self.models}

    def job(self, jid: str) -> Job:
        """A waiting job of the mix: 3 cores and 62.5 GiB per GPU."""
        n = mix_gpus(self.rng)
        m = self.rng.choice(self.models)
        return Job(jid, n, cpu=3000 * n, mem=64000 * n, model=m, profile=self.profiles[m])


def running(job: Job, sid: str, first_gpu: int) -> Job:
    """``job`` running on ``sid``'s GPUs from ``first_gpu`` on."""
    gpus = tuple(GpuShare(f"{sid}/gpu{first_gpu + k}", 1000) for k in range(job.gpus))
    return Job(job.id, job.gpus, cpu=job.cpu, mem=job.mem, model=job.model,
               profile=job.profile,
               current=Placement(job.id, gpus, {sid: job.cpu}, {sid: job.mem}))


# ------------------------------------------------------------------ (a) queue
def short_job(jid: str) -> Job:
    """A short job of case (a): 1 GPU, 0.4 core, 32,000 MiB, no model (its
    request is below every profile's grid)."""
    return Job(jid, 1, cpu=SHORT_CPU, mem=32000)


def queue_state(servers: int, queue: int, seed: int) -> tuple[Cluster, list[Job], list[Job]]:
    """Case (a)'s cluster, its running jobs and the waiting queue."""
    cl = cluster(servers)
    mix = Mix(seed)
    jobs = []
    for s in cl.servers:
        m = mix.rng.choice(mix.models)
        jobs.append(running(Job(f"L{s.id}", 1, cpu=LONG_CPU, mem=64000, model=m,
                                profile=mix.profiles[m]), s.id, 0))
        for k in (1, 2):
            jobs.append(running(short_job(f"S{s.id}-{k}"), s.id, k))
    waiting = [mix.job(f"Q{i}") for i in range(queue)]
    return cl, jobs, waiting


# ------------------------------------------------------------------ (b) scale
def scale_state(servers: int, load: float, seed: int) -> tuple[Cluster, list[Job]]:
    """Case (b)'s cluster with ``load`` of its GPUs running jobs of the mix,
    packed server by server (a job on one server)."""
    cl = cluster(servers)
    mix = Mix(seed)
    target = int(load * cl.total_gpus)
    jobs: list[Job] = []
    used, si, free = 0, 0, 8
    k = 0
    while used < target and si < servers:
        j = mix.job(f"R{k}")
        k += 1
        if j.gpus > free:
            si, free = si + 1, 8
            if si >= servers:
                break
        jobs.append(running(j, cl.servers[si].id, 8 - free))
        free -= j.gpus
        used += j.gpus
    return cl, jobs


# ------------------------------------------------------------------- driver
class Pair:
    """Two sessions fed the same events, their rounds interleaved."""

    def __init__(self, a: Session, b: Session, seed: int, churn: int, maker: Any) -> None:
        self.s = (a, b)
        self.rng = random.Random(seed + 1)
        self.churn, self.maker = churn, maker
        self.k = 0
        self.rows: tuple[list[tuple[float, float, int, int]], ...] = ([], [])

    def round(self, measure: bool) -> None:
        """One round on each session: ``churn`` finishes and arrivals, then a
        step (A then B, alternating which goes first)."""
        new = [self.maker(f"N{self.k + i}") for i in range(self.churn)]
        self.k += self.churn
        seed = self.rng.random()
        order = (0, 1) if self.k // self.churn % 2 else (1, 0)
        for i in order:
            s = self.s[i]
            done = self.finishing(s, seed)
            s.apply([{"type": "finish", "job": j} for j in done]
                    + [{"type": "submit", "job": j} for j in new])
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            r = s.step()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if measure:
                self.rows[i].append((wall, cpu, len(r.start), len(r.unplaced)))

    def finishing(self, s: Session, seed: float) -> list[Any]:
        """``churn`` distinct running jobs to finish, drawn by position (the
        same draw for both sessions) among the session's finishable running
        jobs (the long jobs of case (a) never finish)."""
        live = [j for j in s.running if not str(j).startswith("L")]
        picks = random.Random(seed).sample(range(len(live)), min(self.churn, len(live)))
        return [live[k] for k in picks]


def summary(rows: list[tuple[float, float, int, int]]) -> dict[str, float]:
    """Medians of wall and CPU time (ms), placed and waiting jobs per round."""
    return {"wall": 1e3 * statistics.median(r[0] for r in rows),
            "cpu": 1e3 * statistics.median(r[1] for r in rows),
            "placed": statistics.mean(r[2] for r in rows),
            "waiting": statistics.mean(r[3] for r in rows)}


def run_pair(case: str, solver: str, args: argparse.Namespace) -> dict[str, Any]:
    """Build the two sessions of ``case``, run the rounds, summarise."""
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    mix = Mix(args.seed + 7)
    if case == "queue":
        cl, jobs, waiting = queue_state(args.servers, args.queue, args.seed)
        a = Session(cl, jobs=jobs + waiting, solver=solver)
        cl2, jobs2, _ = queue_state(args.servers, 0, args.seed)
        b = Session(cl2, jobs=jobs2, solver=solver)

        def maker(jid: str) -> Job:
            return short_job(jid)
        labels = (f"{args.queue} waiting", "empty queue")
    else:
        cl, jobs = scale_state(args.big, args.load, args.seed)
        a = Session(cl, jobs=jobs, solver=solver)
        cl2, jobs2 = scale_state(args.servers, args.load, args.seed)
        b = Session(cl2, jobs=jobs2, solver=solver)
        maker = mix.job
        labels = (f"{args.big} x 8", f"{args.servers} x 8")
    build = time.perf_counter() - t0
    pair = Pair(a, b, args.seed, args.churn, maker)
    for r in range(args.warmup + args.rounds):
        pair.round(r >= args.warmup)
    sa, sb = summary(pair.rows[0]), summary(pair.rows[1])
    return {"case": case, "solver": solver, "labels": labels, "a": sa, "b": sb,
            "ratio_wall": sa["wall"] / sb["wall"], "ratio_cpu": sa["cpu"] / sb["cpu"],
            "load": (load0, os.getloadavg()[0]), "build_s": build,
            "jobs": (len(a.jobs), len(b.jobs))}


TARGET = {"queue": 1.5, "scale": 8.0}


def line(r: dict[str, Any]) -> str:
    """One markdown table row."""
    a, b = r["a"], r["b"]
    ok = "met" if r["ratio_cpu"] <= TARGET[r["case"]] else "missed"
    return (f"| {r['case']} | {r['solver']} | {r['labels'][0]}: {a['wall']:.1f} / {a['cpu']:.1f}"
            f" | {r['labels'][1]}: {b['wall']:.1f} / {b['cpu']:.1f} | {r['ratio_wall']:.2f}x / "
            f"{r['ratio_cpu']:.2f}x (<= {TARGET[r['case']]}x: {ok}) | "
            f"{a['placed']:.0f} / {a['waiting']:.0f} vs {b['placed']:.0f} / {b['waiting']:.0f} "
            f"| {r['load'][0]:.2f}-{r['load'][1]:.2f} |")


def main(argv: list[str] | None = None) -> int:
    """Run the cases (see the module notes); prints a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", choices=("queue", "scale"), default=["queue", "scale"])
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS[:2]),
                    help="solvers (default: best-fit synergy-tune)")
    ap.add_argument("--servers", type=int, default=1000, help="servers of (a) and of (b)'s "
                    "small cluster (default: 1000)")
    ap.add_argument("--big", type=int, default=16000, help="servers of (b)'s large cluster "
                    "(default: 16000)")
    ap.add_argument("--queue", type=int, default=16000, help="waiting jobs of (a) "
                    "(default: 16000)")
    ap.add_argument("--churn", type=int, default=180,
                    help="jobs finishing and arriving per round (default: 180)")
    ap.add_argument("--load", type=float, default=0.85,
                    help="(b): running GPUs / GPUs (default: 0.85)")
    ap.add_argument("--rounds", type=int, default=20, help="measured rounds (default: 20)")
    ap.add_argument("--warmup", type=int, default=3, help="unmeasured rounds (default: 3)")
    ap.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    args = ap.parse_args(argv)
    from alloc import solvers
    unknown = [x for x in args.solvers if x not in solvers()]
    if unknown:
        ap.error(f"--solvers: unknown solver(s) {unknown}; valid: {', '.join(solvers())}")
    small = [f"--{k}" for k in ("servers", "big", "churn", "rounds") if getattr(args, k) < 1]
    small += [f"--{k}" for k in ("queue", "warmup") if getattr(args, k) < 0]
    if small or not 0 < args.load <= 1:
        ap.error(f"{', '.join(small) or '--load'}: expected counts >= 1 (queue and warmup >= 0) "
                 "and a load in (0, 1]")
    print("| case | solver | A: step median wall / CPU ms | B: step median wall / CPU ms "
          "| A / B wall / CPU | placed / waiting a round, A vs B | load |")
    print("|---|---|---|---|---|---|---|")
    for case in args.cases:
        for solver in args.solvers:
            r = run_pair(case, solver, args)
            print(line(r), flush=True)
            print(f"  ({case} {solver}: built in {r['build_s']:.1f} s, jobs {r['jobs'][0]} / "
                  f"{r['jobs'][1]})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

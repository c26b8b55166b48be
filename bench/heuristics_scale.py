"""The greedy heuristics at cluster scale: 8k, 32k and 100k GPUs.

Instances (one seed each): the Synergy mix of :func:`instance` -- 8-GPU V100
servers with 24 cores and 500 GB, eight jobs per server of demand, 1/2/4/8
GPUs with probability 0.70/0.10/0.15/0.05, 3 cores and 64,000 MiB per GPU,
models res18, bert, res50, alexnet, gnmt, transformer -- at 1,024, 4,096 and
12,500 servers, in three variants:

* ``synergy`` -- as above;
* ``hetero`` -- three GPU types (V100, P100, K80, a third of the servers
  each), 20 % of the jobs restricted to one of them;
* ``live`` -- half the GPUs already held by running jobs of the same mix,
  placed at random servers (they stay where they are).

For every heuristic and size the table gives the solver's own time on the
compiled problem (``solve``; best of ``--repeat`` runs), the whole
``allocate()`` call (validation, compile, solver, final check), the jobs it
placed (running jobs not counted), the allocation's value (throughput, running
jobs included) and the peak memory the solver allocated (tracemalloc, a
separate run).  ``local-search`` runs under ``--ls-limit`` seconds.

``--before REV`` also times the heuristics as they are at git revision REV
(the package extracted to a temporary folder, each run in its own process,
stopped after ``--timeout`` seconds) at ``--before-sizes``.

Examples::

    python bench/heuristics_scale.py                                  # every size and variant
    python bench/heuristics_scale.py --sizes 1024 --variants synergy --repeat 3
    python bench/heuristics_scale.py --before 76bae19 --before-sizes 256 1024 --timeout 600
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("res18", "bert", "res50", "alexnet", "gnmt", "transformer")
SOLVERS = ("proportional", "best-fit", "synergy-greedy", "synergy-tune", "greedy-upgrade",
           "local-search")
VARIANTS = ("synergy", "hetero", "live", "mixed")


def instance(servers: int, variant: str = "synergy", seed: int = 0):
    """(cluster, jobs) of the Synergy mix (see the module notes)."""
    from alloc import Cluster, Job, Server, load_profile

    rng = random.Random(seed)
    types = ("V100", "P100", "K80") if variant in ("hetero", "mixed") else ("V100",)
    if variant == "mixed":
        cluster = Cluster(tuple(Server(
            f"s{i:05d}", rng.choice((16, 24, 32, 48, 64, 96)) * 1000,
            rng.choice((128, 256, 512, 1024)) * 1000, rng.choice((2, 4, 8)), rng.choice(types))
            for i in range(servers)))
    else:
        cluster = Cluster(tuple(Server(f"s{i:05d}", 24000, 512000, 8, types[i % len(types)])
                                for i in range(servers)))
    profiles = {m: load_profile(m) for m in MODELS}

    def draw(name: str, gpu_types=()) -> Job:
        g = rng.choices((1, 2, 4, 8), (70, 10, 15, 5))[0]
        m = rng.choice(MODELS)
        c, mem = (rng.randint(2, 16) * 500, rng.randint(1, 12) * 8000) if variant == "mixed" \
            else (3000, 64000)
        return Job(name, gpus=g, cpu=c * g, mem=mem * g, model=m, profile=profiles[m],
                   gpu_types=gpu_types)

    running = running_jobs(cluster, rng, draw) if variant == "live" else []
    jobs = []
    for k in range((4 if variant == "mixed" else 8) * servers):
        restrict = variant in ("hetero", "mixed") and rng.random() < 0.2
        jobs.append(draw(f"j{k}", (rng.choice(types),) if restrict else ()))
    return cluster, running + jobs


def running_jobs(cluster, rng: random.Random, draw) -> list:
    """Jobs of the mix holding half the GPUs, each on a random server with
    room (its lowest free GPUs), as running jobs."""
    from dataclasses import replace

    from alloc.model import GpuShare, Placement

    servers = cluster.servers
    free = [list(range(s.gpus)) for s in servers]
    cpu = [s.cpu for s in servers]
    mem = [s.mem for s in servers]
    used, target, out = 0, cluster.total_gpus // 2, []
    while used < target:
        job = draw(f"r{len(out)}")
        for _ in range(20):
            i = rng.randrange(len(servers))
            if len(free[i]) >= job.gpus and cpu[i] >= job.cpu and mem[i] >= job.mem:
                break
        else:
            continue
        sid = servers[i].id
        gpus, free[i] = free[i][:job.gpus], free[i][job.gpus:]
        cpu[i] -= job.cpu
        mem[i] -= job.mem
        used += job.gpus
        out.append(replace(job, current=Placement(
            job.id, tuple(GpuShare(f"{sid}/gpu{k}", 1000) for k in gpus),
            {sid: job.cpu}, {sid: job.mem})))
    return out


def measure(servers: int, variant: str, solvers, *, repeat: int = 1, ls_limit: float = 5.0,
            limit: float = 600.0, memory: bool = True, allocate_too: bool = True) -> list[dict]:
    """One instance, every solver: the figures of the module notes."""
    import alloc
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem

    cluster, jobs = instance(servers, variant)
    problem = compile_problem(cluster, jobs)
    rows = []
    for name in solvers:
        info = alloc.get_solver(name)
        tl = ls_limit if name == "local-search" else limit
        best, cpu, sol = None, None, None
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            sol = info.solve(problem, deadline=Deadline.after(tl), seed=0)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            best = dt if best is None else min(best, dt)
            cpu = dc if cpu is None else min(cpu, dc)
        row = {"variant": variant, "servers": servers, "gpus": cluster.total_gpus,
               "jobs": len(problem.pending), "running": len(problem.running), "solver": name,
               "solve_s": round(best, 3), "solve_cpu_s": round(cpu, 3),
               "placed": len(sol.assign)}
        if allocate_too:
            t0 = time.perf_counter()
            a = alloc.allocate(cluster, jobs, solver=name, time_limit=tl)
            row["allocate_s"] = round(time.perf_counter() - t0, 3)
            row["value"] = round(a.value, 3)
        if memory:
            tracemalloc.start()
            info.solve(problem, deadline=Deadline.after(tl), seed=0)
            row["peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2 ** 20, 1)
            tracemalloc.stop()
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def before(rev: str, sizes, variants, solvers, timeout: float, ls_limit: float) -> list[dict]:
    """The solver times at git revision ``rev`` (see the module notes)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "alloc", "models"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        env = dict(os.environ, PYTHONPATH=tmp, ALLOC_BENCH_WORKER="1")
        for variant in variants:
            for n in sizes:
                for name in solvers:
                    cmd = [sys.executable, __file__, "--worker", "--sizes", str(n), "--variants",
                           variant, "--solvers", name, "--ls-limit", str(ls_limit)]
                    row = {"variant": variant, "servers": n, "solver": name, "rev": rev}
                    try:
                        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                             timeout=timeout, cwd=tmp)
                        got = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
                        row.update(got[-1] if got else {"error": out.stderr[-300:]})
                    except subprocess.TimeoutExpired:
                        row["solve_s"] = f"> {timeout:g}"
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def table(after: list[dict], old: list[dict]) -> str:
    """Markdown tables of the figures: after (this tree) and, when given,
    before (solver seconds at REV, wall and CPU)."""
    head = ("| variant | servers | GPUs | jobs | solver | solve s | solve CPU s | allocate() s "
            "| placed | value | peak MB |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in after:
        lines.append(f"| {r['variant']} | {r['servers']} | {r['gpus']} | {r['jobs']} | "
                     f"{r['solver']} | {r['solve_s']} | {r.get('solve_cpu_s', '')} | "
                     f"{r.get('allocate_s', '')} | {r['placed']} | {r.get('value', '')} | "
                     f"{r.get('peak_mb', '')} |")
    if old:
        now = {(r["variant"], r["servers"], r["solver"]): r for r in after}
        lines += ["", "| variant | servers | solver | before s | before CPU s | placed before "
                  "| after s | after CPU s | placed after |", "|" + "---|" * 9]
        for r in old:
            a = now.get((r["variant"], r["servers"], r["solver"]), {})
            lines.append(f"| {r['variant']} | {r['servers']} | {r['solver']} | "
                         f"{r.get('solve_s', r.get('error', ''))} | {r.get('solve_cpu_s', '')} | "
                         f"{r.get('placed', '')} | {a.get('solve_s', '')} | "
                         f"{a.get('solve_cpu_s', '')} | {a.get('placed', '')} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 12500],
                    help="servers (8 GPUs and 8 jobs each; default 1024 4096 12500)")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS,
                    help="instance variants (default: all)")
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS),
                    help="heuristics to run (default: all six)")
    ap.add_argument("--repeat", type=int, default=1, help="solver runs, best kept (default 1)")
    ap.add_argument("--ls-limit", type=float, default=5.0,
                    help="time limit of local-search in seconds (default 5)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory run")
    ap.add_argument("--no-allocate", action="store_true", help="skip the allocate() run")
    ap.add_argument("--before", metavar="REV", help="also time the heuristics at git revision REV")
    ap.add_argument("--before-sizes", type=int, nargs="+", default=[256, 1024],
                    help="sizes for --before (default 256 1024)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds before a --before run is stopped (default 600)")
    ap.add_argument("--out", help="write the Markdown table to this file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not os.environ.get("ALLOC_BENCH_WORKER"):
        sys.path.insert(0, str(ROOT))
    if args.worker:
        for v in args.variants:
            for n in args.sizes:
                measure(n, v, args.solvers, ls_limit=args.ls_limit, memory=False,
                        allocate_too=False)
        return
    after = []
    for v in args.variants:
        for n in args.sizes:
            after += measure(n, v, args.solvers, repeat=args.repeat, ls_limit=args.ls_limit,
                             memory=not args.no_memory, allocate_too=not args.no_allocate)
    old = before(args.before, args.before_sizes, args.variants, args.solvers, args.timeout,
                 args.ls_limit) if args.before else []
    text = table(after, old)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()

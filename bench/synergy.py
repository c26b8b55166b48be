"""Reproduce Synergy (Mohan et al., OSDI 2022): average JCT vs load.

Cluster: 16 servers x 8 GPUs, 24 cores, 500 GB each (128 GPUs); ``--servers
64`` for the 512-GPU configuration (loads are then scaled x4).  Workload:
Poisson arrivals, Gavel-like durations, split image/language/speech 20/70/10,
jobs 4000-4999 measured.  For each (mix, order, load) the allocators run on
the same job stream; the table gives mean / p99 JCT (hours) and the ratios
tune/proportional (inverse of the paper's speed-up, up to 3.4x) and opt/tune
(TUNE within 10 % of OPT).

Overloaded runs.  Past saturation the queue grows without bound and, with
SRTF or LAS, long measured jobs wait for the 1000 h starvation bump, which
lasts one round only, so the window may never drain.  Every run is therefore
capped at ``--horizon-h`` hours after the expected arrival of the window's last
job; a capped run reports how many measured jobs were unfinished and its mean
is shown as ``>=`` the censored mean (unfinished jobs counted until the cap).

Published reference (the artifact, Philly trace, FIFO + TUNE, 9 jobs/h,
single-GPU, 128 GPUs): mean 21.9 h, p99 156.9 h.  Our durations follow the
Gavel law instead of the Philly trace, so absolute values differ.

Examples::

    python bench/synergy.py --quick                 # one point, FIFO, single-GPU
    python bench/synergy.py --loads 2 4 6 8 9 --orders fifo srtf las --mix single --jobs 2
    python bench/synergy.py --opt-round             # synergy-opt on one 128-GPU round
    python bench/synergy.py --quick --tree ../main --tree .   # two source trees side by side

``--tree DIR`` (repeatable) runs every simulation once per source tree (that
tree's ``alloc`` package, in a fresh process each, the trees taking turns)
and prints one row per tree and allocator: mean and p99 JCT, rounds, steps,
moves, preemptions and the run's CPU seconds (`time.process_time`), so an
old and a new version are compared in one run on the same machine load.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:                    # a worker on another source tree
    sys.path.insert(0, sys.argv[sys.argv.index("--root") + 1])
else:
    sys.path.insert(0, str(ROOT))

from alloc.sim import SyntheticWorkload  # noqa: E402
from alloc.sim.synergy import cluster, legacy_summary, simulate_synergy  # noqa: E402

SHORT = {"proportional": "prop", "synergy-tune": "tune", "synergy-opt": "opt",
         "synergy-greedy": "greedy"}
KEYS = ("mean_jct_s", "p99_jct_s", "makespan_s", "jobs_measured", "wall_time_s", "mean_util",
        "unfinished", "censored_mean_jct_s", "rounds")


def one(task):
    servers, rate, mix, order, allocator, window, seed, opt_limit, horizon_h = task
    cl = cluster(servers, 8, 24000, 512000)
    w = SyntheticWorkload(rate, (20, 70, 10), mix, seed=seed)
    cap = (window[1] / rate + horizon_h) * 3600.0
    c0 = time.process_time()
    r = simulate_synergy(cl, w, order=order, allocator=allocator, window=window,
                         opt_time_limit=opt_limit, max_time_s=cap)
    s = legacy_summary(r)
    out = {k: s[k] for k in KEYS}
    out["cpu_s"] = time.process_time() - c0
    full = r.summary()
    out["steps"], out["time"] = full["steps"], full["time"]
    out["moves"], out["preemptions"] = full["moves"], full["preemptions"]
    out.update(mix=mix, order=order, jobs_per_hour=rate, allocator=allocator,
               gpus=cl.total_gpus, cap_h=cap / 3600)
    return out


def opt_round(servers: int, seed: int, mix: str, limit: float) -> dict:
    """synergy-opt vs tune vs proportional on one full round."""
    from alloc import Cluster, Job, Server, allocate
    from alloc.profiles import load_profile
    from alloc.sim.workload import ModelAssigner, gpu_demand
    rng = random.Random(seed)
    cl = Cluster(tuple(Server(f"s{i:03d}", 24000, 512000, 8, "V100") for i in range(servers)))
    assign = ModelAssigner((20, 70, 10))
    jobs, tot = [], 0
    while True:
        n = gpu_demand(rng, mix)
        if tot + n > 8 * servers:
            break
        tot += n
        m = assign()
        jobs.append(Job(f"j{len(jobs)}", n, cpu=3000 * n, mem=64000 * n, model=m,
                        profile=load_profile(m)))
    out = {"jobs": len(jobs), "gpus": tot}
    for s in ("proportional", "synergy-tune", "synergy-opt"):
        kw = {"place_all": True, "time_limit": limit} if s == "synergy-opt" else {}
        t0 = time.perf_counter()
        a = allocate(cl, jobs, solver=s, **kw)
        out[s] = {"value": round(a.value, 3), "status": str(a.status),
                  "wall_s": round(time.perf_counter() - t0, 2)}
        if s == "synergy-opt":
            out[s]["bound"] = a.bound
            out[s]["big_machine_lp_bound"] = a.stats.get("big_machine_lp_bound")
    return out


def on_trees(tasks: list[tuple], trees: list[Path]) -> list[str]:
    """Each task once per source tree (a fresh process each, the trees
    taking turns): one markdown row per tree and task."""
    out = ["| tree | allocator | mean h | p99 h | rounds | steps | moves | preemptions | "
           "CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(out), flush=True)
    for task in tasks:
        for tree in trees:
            cmd = [sys.executable, __file__, "--root", str(tree), "--worker", json.dumps(task)]
            line = subprocess.run(cmd, check=True, capture_output=True,
                                  text=True).stdout.strip().splitlines()[-1]
            r = json.loads(line)
            out.append(f"| {tree.name} | {r['allocator']} | {hours(r)} | "
                       f"{hours(r, 'p99_jct_s')} | {r['rounds']} | {r['steps']} | "
                       f"{r['moves']} | {r['preemptions']} | {r['cpu_s']:.2f} |")
            print(out[-1], flush=True)
    return out


def hours(r: dict, key: str = "mean_jct_s") -> str:
    if r["unfinished"] and key == "mean_jct_s":
        return f">={r['censored_mean_jct_s'] / 3600:.1f}"
    if r["unfinished"]:
        return "n/a"   # the p99 of a capped run is not known
    v = r[key] / 3600
    return f"{v:.2f}" if v < 100 else f"{v:.1f}"


def table(rows: list[dict], allocators: list[str]) -> list[str]:
    """Markdown table: one line per (mix, order, load)."""
    head = ["GPUs", "mix", "order", "jobs/h"]
    for a in allocators:
        head += [f"{SHORT.get(a, a)} mean h", f"{SHORT.get(a, a)} p99 h"]
    ratios = []
    if "proportional" in allocators and "synergy-tune" in allocators:
        ratios.append(("synergy-tune", "proportional"))
    if "synergy-opt" in allocators and "synergy-tune" in allocators:
        ratios.append(("synergy-opt", "synergy-tune"))
    head += [f"{SHORT[a]}/{SHORT[b]}" for a, b in ratios]
    head += ["unfinished", "cpu s"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault((r["gpus"], r["mix"], r["order"], r["jobs_per_hour"]), {})[
            r["allocator"]] = r
    for (g, mix, order, load), res in groups.items():
        line = [str(g), mix, order, f"{load:g}"]
        for a in allocators:
            r = res.get(a)
            line += [hours(r), hours(r, "p99_jct_s")] if r else ["-", "-"]
        for a, b in ratios:
            if a in res and b in res:
                x = res[a]["censored_mean_jct_s"] / res[b]["censored_mean_jct_s"]
                cens = res[a]["unfinished"] or res[b]["unfinished"]
                line.append(f"{x:.2f}" + ("*" if cens else ""))
            else:
                line.append("-")
        line.append("/".join(str(res[a]["unfinished"]) for a in allocators if a in res))
        line.append("/".join(f"{res[a]['cpu_s']:.0f}" for a in allocators if a in res))
        out.append("| " + " | ".join(line) + " |")
    return out


def plot(rows: list[dict], path: str, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return False
    orders = list(dict.fromkeys(r["order"] for r in rows))
    allocs = list(dict.fromkeys(r["allocator"] for r in rows))
    fig, axes = plt.subplots(1, len(orders), figsize=(3.2 * len(orders), 2.8), squeeze=False)
    for ax, order in zip(axes[0], orders):
        for a in allocs:
            pts = sorted((r["jobs_per_hour"], r["censored_mean_jct_s"] / 3600, r["unfinished"])
                         for r in rows if r["order"] == order and r["allocator"] == a)
            if not pts:
                continue
            xs, ys, un = zip(*pts)
            line, = ax.plot(xs, ys, marker="o", ms=3, label=SHORT.get(a, a))
            cx = [x for x, u in zip(xs, un) if u]
            cy = [y for y, u in zip(ys, un) if u]
            if cx:
                ax.plot(cx, cy, ls="", marker="^", ms=6, color=line.get_color())
        ax.set_yscale("log")
        ax.set_title(order, fontsize=9)
        ax.set_xlabel("jobs/hour", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("mean JCT (h)", fontsize=8)
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title + "  (triangle: capped, mean is a lower bound)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--servers", type=int, default=16)
    ap.add_argument("--loads", type=float, nargs="+", default=[2, 4, 6, 8, 9],
                    help="jobs/hour on 128 GPUs (scaled by servers/16)")
    ap.add_argument("--orders", nargs="+", default=["fifo", "srtf", "las"])
    ap.add_argument("--mix", nargs="+", default=["single"])
    ap.add_argument("--allocators", nargs="+", default=["proportional", "synergy-tune"])
    ap.add_argument("--window", type=int, nargs=2, default=[4000, 4999])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opt-limit", type=float, default=10.0)
    ap.add_argument("--horizon-h", type=float, default=1500.0,
                    help="stop this many hours after the window's expected last arrival")
    ap.add_argument("--jobs", type=int, default=1, help="simulations run in parallel")
    ap.add_argument("--quick", action="store_true", help="FIFO, single-GPU, 9 jobs/h only")
    ap.add_argument("--opt-round", action="store_true", help="only the one-round OPT check")
    ap.add_argument("--md", help="append the markdown table (with the command line) here")
    ap.add_argument("--plot", help="JCT vs load figure (PNG), one panel per order")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "synergy"))
    ap.add_argument("--from-json", help="only print the table (and --plot) of a results file")
    ap.add_argument("--tree", action="append", type=Path, metavar="DIR",
                    help="source tree to run (repeatable: each run once per tree, side by "
                         "side; default: this one)")
    ap.add_argument("--root", help=argparse.SUPPRESS)        # a worker's source tree
    ap.add_argument("--worker", help=argparse.SUPPRESS)      # one task, as JSON
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(one(tuple(json.loads(args.worker)))))
        return 0
    if args.from_json:
        rows = json.loads(Path(args.from_json).read_text())
        allocs = list(dict.fromkeys(r["allocator"] for r in rows))
        print("\n".join(table(rows, allocs)))
        if args.plot:
            g = rows[0]["gpus"]
            mixes = "/".join(dict.fromkeys(r["mix"] for r in rows))
            plot(rows, args.plot, f"{g} GPUs, {mixes}-GPU jobs")
        return 0
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    if args.opt_round:
        for mix in args.mix:
            r = opt_round(args.servers, args.seed, mix, args.opt_limit)
            print(mix, json.dumps(r))
        return 0
    if args.quick:
        args.loads, args.orders, args.mix = [9.0], ["fifo"], ["single"]
    scale = args.servers / 16
    t0, load0 = time.perf_counter(), os.getloadavg()
    tasks = [(args.servers, load * scale, mix, order, a, tuple(args.window), args.seed,
              args.opt_limit, args.horizon_h)
             for mix in args.mix for order in args.orders for load in args.loads
             for a in args.allocators]
    print(f"# {args.servers * 8} GPUs; window {args.window}; loads x{scale:g}; "
          f"{len(tasks)} runs, {args.jobs} in parallel", flush=True)
    if args.tree:
        on_trees(tasks, [t.resolve() for t in args.tree])
        print(f"{len(tasks) * len(args.tree)} runs in {time.perf_counter() - t0:.0f} s wall; "
              f"load average {load0[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end on "
              f"{os.cpu_count()} cores")
        return 0
    rows = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            for r in ex.map(one, tasks):
                rows.append(r)
                print(json.dumps({k: r[k] for k in ("mix", "order", "jobs_per_hour", "allocator",
                                                    "mean_jct_s", "unfinished", "cpu_s")}),
                      flush=True)
    else:
        for t in tasks:
            r = one(t)
            rows.append(r)
            print(json.dumps({k: r[k] for k in ("mix", "order", "jobs_per_hour", "allocator",
                                                "mean_jct_s", "unfinished", "cpu_s")}),
                  flush=True)
    wall = time.perf_counter() - t0
    lines = table(rows, args.allocators)
    print("\n".join(lines))
    note = (f"{len(rows)} runs in {wall:.0f} s wall, {sum(r['cpu_s'] for r in rows):.0f} s CPU "
            f"({args.jobs} processes); load average {load0[0]:.1f} at start, "
            f"{os.getloadavg()[0]:.1f} at end on {os.cpu_count()} cores")
    print(note)
    tag = f"{'_'.join(args.mix)}_{args.servers * 8}"
    (outdir / f"results_{tag}.json").write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot(rows, args.plot, f"{args.servers * 8} GPUs, {'/'.join(args.mix)}-GPU jobs")
    if args.md:
        cmd = "python bench/synergy.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(args.md, "a") as f:
            f.write(f"\n```\n{cmd}\n```\n\n" + "\n".join(lines) + f"\n\n{note}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

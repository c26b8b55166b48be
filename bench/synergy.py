"""Reproduce Synergy (Mohan et al., OSDI 2022): average JCT vs load.

Cluster: 16 servers x 8 GPUs, 24 cores, 500 GB each (128 GPUs); ``--servers
64`` for the 512-GPU configuration.  Workload: Poisson arrivals, Gavel-like
durations, split image/language/speech 20/70/10, jobs 4000-4999 measured.
For each (mix, order, load) the allocators run on the same job stream; the
table gives mean / p99 JCT (hours) and the ratios proportional/tune (the
paper's speed-up, up to 3.4x) and opt/tune (TUNE within 10 % of OPT).

Published reference (the artifact, Philly trace, FIFO + TUNE, 9 jobs/h,
single-GPU, 128 GPUs): mean 21.9 h, p99 156.9 h.  Our durations follow the
Gavel law instead of the Philly trace, so absolute values differ.

Examples::

    python bench/synergy.py --quick                 # one point, FIFO, single-GPU
    python bench/synergy.py --loads 2 4 6 8 9 10 --orders fifo srtf las --mix single multi
    python bench/synergy.py --opt-round             # synergy-opt on one 128-GPU round
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.sim import ClusterSpec, SyntheticWorkload, simulate  # noqa: E402
from alloc.sim.metrics import plot_jct_cdf, plot_lines, plot_utilisation  # noqa: E402


def one(spec, rate, mix, order, allocator, window, seed, opt_limit):
    w = SyntheticWorkload(rate, (20, 70, 10), mix, seed=seed)
    return simulate(spec, w, order=order, allocator=allocator, window=window,
                    opt_time_limit=opt_limit)


def opt_round(servers: int, seed: int, mix: str, limit: float) -> dict:
    """synergy-opt vs tune vs proportional on one full round."""
    from alloc import Cluster, Job, Server, allocate
    from alloc.profiles import load_model
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
                        profile=load_model(m)))
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--servers", type=int, default=16)
    ap.add_argument("--loads", type=float, nargs="+", default=[2, 4, 6, 8, 9, 10])
    ap.add_argument("--orders", nargs="+", default=["fifo", "srtf", "las"])
    ap.add_argument("--mix", nargs="+", default=["single", "multi"])
    ap.add_argument("--allocators", nargs="+", default=["proportional", "synergy-tune"])
    ap.add_argument("--window", type=int, nargs=2, default=[4000, 4999])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opt-limit", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="FIFO, single-GPU, 9 jobs/h only")
    ap.add_argument("--opt-round", action="store_true", help="only the one-round OPT check")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "synergy"))
    args = ap.parse_args(argv)
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
    spec = ClusterSpec(args.servers, 8, 24000, 512000)
    rows = []
    print(f"# {spec.total_gpus} GPUs; window {args.window}; loads scaled x{scale:g}")
    print(f"{'mix':6} {'order':6} {'jobs/h':>6} {'allocator':14} {'mean h':>8} {'p99 h':>8} "
          f"{'wall s':>7}  prop/tune  opt/tune")
    for mix in args.mix:
        for order in args.orders:
            series = {a: [] for a in args.allocators}
            for load in args.loads:
                rate = load * scale
                res = {}
                for a in args.allocators:
                    r = one(spec, rate, mix, order, a, tuple(args.window), args.seed,
                            args.opt_limit)
                    s = r.summary()
                    res[a] = (r, s)
                    series[a].append(s["mean_jct_s"] / 3600)
                    rows.append({"mix": mix, "order": order, "jobs_per_hour": rate,
                                 "allocator": a, **{k: s[k] for k in (
                                     "mean_jct_s", "p99_jct_s", "p999_jct_s", "makespan_s",
                                     "jobs_measured", "wall_time_s", "mean_util")}})
                tune = res.get("synergy-tune", (None, None))[1]
                for a in args.allocators:
                    s = res[a][1]
                    pt = ot = ""
                    if tune and a == "proportional":
                        pt = f"{s['mean_jct_s'] / tune['mean_jct_s']:.2f}x"
                    if tune and a == "synergy-opt":
                        ot = f"{s['mean_jct_s'] / tune['mean_jct_s']:.2f}"
                    print(f"{mix:6} {order:6} {rate:6.1f} {a:14} {s['mean_jct_s'] / 3600:8.2f} "
                          f"{s['p99_jct_s'] / 3600:8.2f} {s['wall_time_s']:7.1f}  {pt:9} {ot}",
                          flush=True)
                tag = f"{mix}_{order}_{rate:g}_{spec.total_gpus}"
                plot_jct_cdf({a: res[a][0] for a in args.allocators},
                             str(outdir / f"cdf_{tag}.png"))
                for a in args.allocators:
                    plot_utilisation(res[a][0], str(outdir / f"util_{tag}_{a}.png"),
                                     f"{a} {order} {mix} {rate:g} jobs/h")
            if len(args.loads) > 1:
                plot_lines([x * scale for x in args.loads], series,
                           str(outdir / f"jct_vs_load_{mix}_{order}_{spec.total_gpus}.png"),
                           "jobs/hour", "mean JCT (h)", f"{order} {mix} {spec.total_gpus} GPUs")
    (outdir / f"results_{spec.total_gpus}.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

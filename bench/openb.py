"""Reproduce the FGD experiment (Weng et al., ATC'23) on the openb traces.

Runs policies x workloads x seeds, writes the allocation curves (same columns
as the published CSV), prints mean +- std at x=100 and x=130 next to the
published reference (default workload), the seconds per run, and plots the
mean allocation vs arrived workload.

    python3 bench/openb.py --workloads default --policies all --seeds 42-51 \
        --out bench/results/openb_default.csv --plot bench/results/openb_default.png
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alloc.experiments import openb  # noqa: E402
from alloc.errors import InputError  # noqa: E402

SIX = ["random", "dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd"]
REF_NAMES = {"01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "gpu-clustering",
             "04-GpuPacking": "gpu-packing", "05-BestFit": "best-fit", "06-FGD": "fgd"}
def all_workloads() -> list[str]:
    """Every openb pod trace in the shared folder, default first."""
    names = sorted(p.stem[len("openb_pod_list_"):]
                   for p in openb.openb_dir().glob("openb_pod_list_*.csv"))
    return sorted(names, key=lambda n: n != "default")


parse_seeds = openb.parse_seeds


def _job(args):
    workload, policy, seed, tune, max_moves = args
    d = openb.openb_dir()
    nodes = openb.load_nodes(d / "openb_node_list_gpu_node.csv")
    pods = openb.load_pods(d / f"openb_pod_list_{workload}.csv")
    return openb.run(pods, nodes, policy, seed, tune=tune, workload=f"openb_pod_list_{workload}",
                     max_moves=max_moves)


def reference() -> dict:
    """policy -> (list at x=100, list at x=130) from the published CSV."""
    path = openb.shared_dir() / "data" / "reference" / "fgd_alloc_openb_default.csv"
    out: dict = {}
    if not path.exists():
        return out
    with open(path) as fh:
        for row in csv.DictReader(fh):
            pol = REF_NAMES.get(row["sc_policy"], row["sc_policy"])
            a, b = out.setdefault(pol, ([], []))
            a.append(float(row["100"]))
            b.append(float(row["130"]))
    return out


def _ms(a) -> tuple[float, float]:
    a = np.asarray(a, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="default",
                    help="comma-separated workload names (e.g. default,cpu050) or 'all'")
    ap.add_argument("--policies", default="all", help="comma-separated policies or 'all' (six)")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--tune", type=float, default=1.3)
    ap.add_argument("--moves", help="comma-separated move budgets (bounded-move variant); "
                    "each budget is a separate run of every policy")
    ap.add_argument("--jobs", type=int, default=2, help="parallel processes")
    ap.add_argument("--out", help="curves CSV")
    ap.add_argument("--frag-out", help="fragmentation curves CSV")
    ap.add_argument("--plot", help="plot PNG (first workload)")
    args = ap.parse_args(argv)
    if not openb.openb_dir().exists():
        print(f"shared data not found at {openb.openb_dir()}", file=sys.stderr)
        return 2
    workloads = (all_workloads() if args.workloads == "all" else
                 [w for w in all_workloads() if w != "default"] if args.workloads == "others"
                 else args.workloads.split(","))
    policies = SIX if args.policies == "all" else args.policies.split(",")
    for p in policies:
        try:
            openb.known_policy(p, "--policies")
        except InputError as exc:
            print(exc, file=sys.stderr)
            return 2
    seeds = parse_seeds(args.seeds)
    budgets = [None] if not args.moves else [int(k) for k in args.moves.split(",")]
    tasks = [(w, p, s, args.tune, k) for w in workloads for p in policies for k in budgets
             for s in seeds]
    t0 = time.time()
    results = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for r in ex.map(_job, tasks):
            results.append(r)
            mv = "" if r.max_moves is None else f" moves<={r.max_moves}: {r.moves100} by x=100"
            print(f"  {r.workload} {r.policy}{mv} seed={r.seed} x100={r.alloc[100]} "
                  f"x130={r.alloc[130]} first-fail={r.first_fail} {r.seconds:.2f}s wall {r.cpu_seconds:.2f}s cpu", file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        openb.write_curves(args.out, results)
    if args.frag_out:
        openb.write_frag(args.frag_out, results)
    ref = reference()
    print(f"\n{'workload':<12} {'policy':<15} {'x=100':>14} {'publ.':>7} {'diff':>6} "
          f"{'x=130':>14} {'publ.':>7} {'diff':>6} {'wall s':>7} {'cpu s':>6}")
    for w in workloads:
        for p, k in [(p, k) for p in policies for k in budgets]:
            rs = [r for r in results if r.workload.endswith("_" + w) and r.policy == p
                  and r.max_moves == k]
            if not rs:
                continue
            m1, s1 = _ms([r.alloc[100] for r in rs])
            m2, s2 = _ms([r.alloc[130] for r in rs])
            secs = np.mean([r.seconds for r in rs])
            cpu = np.mean([r.cpu_seconds for r in rs])
            label = p if k is None else f"{p}/mv{k}"
            line = f"{w:<12} {label:<15} {m1:6.2f} ± {s1:4.2f} "
            if w == "default" and p in ref and k is None:
                r1, r2 = np.mean(ref[p][0]), np.mean(ref[p][1])
                line += f"{r1:7.2f} {m1 - r1:+6.2f} {m2:6.2f} ± {s2:4.2f} {r2:7.2f} {m2 - r2:+6.2f}"
            else:
                line += f"{'':>7} {'':>6} {m2:6.2f} ± {s2:4.2f} {'':>7} {'':>6}"
            line += f" {secs:7.2f} {cpu:6.2f}"
            if k is not None:
                line += f"  moves by x=100: {np.mean([r.moves100 for r in rs]):.1f}"
            print(line)
    print(f"\n{len(results)} runs in {time.time() - t0:.0f} s wall", file=sys.stderr)
    if args.plot:
        first = [r for r in results if r.workload.endswith("_" + workloads[0])]
        openb.plot_curves(args.plot, first, title=f"openb {workloads[0]}, tune {args.tune}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Offline upper bound on the GPU allocation at x=100 for the openb traces,
next to the online policies' allocation at x=100 (from curve CSVs written by
``bench/openb.py``).

    python3 bench/openb_bound.py --workload default --seeds 42-51 \
        --curves bench/results/openb_default.csv

``full at`` is the arrived workload (% of GPU capacity) by which the arrivals
can no longer all be placed (:func:`alloc.experiments.openb_bound.saturation`, a GPU-count
test): every online policy under the protocol has its first failed pod by then.
``waste`` is the GPU capacity (%) that even an optimal packing of the shares
arrived by then leaves empty inside shared GPUs (the bin-packing LP bound), and
``late`` the share milli (% of capacity) arriving after that point up to bin x
that fits the hole left by the most common share size (1000 - that size).

The bound is the aggregated MILP of :mod:`alloc.experiments.openb_bound` over the pods
arrived by the end of bin x (its LP relaxation with ``--lp``); see that module
for the relaxations that make it a valid upper bound.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alloc.deadline import Deadline  # noqa: E402
from alloc.experiments import openb  # noqa: E402
from alloc.experiments.openb_bound import arrived_prefix, min_share_gpus, openb_bound, saturation  # noqa: E402


parse_seeds = openb.parse_seeds


def read_curves(paths, workload: str, x: int) -> dict:
    """(policy, seed) -> allocation at column x."""
    out = {}
    for p in paths:
        with open(p) as fh:
            for row in csv.DictReader(fh):
                if row["workload"] == f"openb_pod_list_{workload}" and row[str(x)] != "":
                    out[(row["sc_policy"], int(row["seed"]))] = float(row[str(x)])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="default")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--x", type=int, default=100)
    ap.add_argument("--tune", type=float, default=1.3)
    ap.add_argument("--lp", action="store_true", help="LP relaxation only (faster, looser)")
    ap.add_argument("--time-limit", type=float, default=10.0, help="MILP seconds per seed")
    ap.add_argument("--curves", nargs="*", default=[], help="curve CSVs from bench/openb.py")
    args = ap.parse_args(argv)
    d = openb.openb_dir()
    if not d.exists():
        print(f"shared data not found at {d}", file=sys.stderr)
        return 2
    nodes = openb.load_nodes(d / "openb_node_list_gpu_node.csv")
    pods = openb.load_pods(d / f"openb_pod_list_{args.workload}.csv")
    cap = int(nodes.gpus.sum()) * 1000
    unit = cap / 100.0
    seeds = parse_seeds(args.seeds)
    curves = read_curves(args.curves, args.workload, args.x)
    policies = list(dict.fromkeys(p for p, _ in curves))
    print(f"{'seed':>4} {'demand':>7} {'LP':>7} {'bound':>7} {'MIP sol':>7} {'s':>5} {'full at':>7} {'waste':>6} {'late':>6}  "
          + " ".join(f"{p:>14}" for p in policies))
    bounds, fulls, wastes, lates = [], [], [], []
    t0 = time.time()
    for s in seeds:
        seq = openb.build_workload(pods, nodes, s, args.tune).arrivals()
        r = openb_bound(pods, nodes, s, x=args.x, tune=args.tune, integer=not args.lp,
                        deadline=Deadline.after(args.time_limit), seq=seq)
        bounds.append(r.bound / unit)
        n = saturation(seq, int(nodes.gpus.sum()))
        fulls.append(sum(p.g for p in seq[:n + 1]) / unit)
        shares = [p.m for p in seq[:n + 1] if p.shared]
        wastes.append((min_share_gpus(shares) * 1000 - sum(shares)) / unit)
        hole = 1000 - max(set(shares), key=shares.count) if shares else 0
        end = arrived_prefix(seq, cap, args.x)
        lates.append(sum(p.m for p in seq[n + 1:end] if p.shared and p.m <= hole) / unit)
        cells = " ".join(f"{curves.get((p, s), float('nan')):14.2f}" for p in policies)
        print(f"{s:>4} {r.demand / unit:7.2f} {r.lp / unit:7.3f} {r.bound / unit:7.3f} "
              f"{r.value / unit:7.3f} {r.seconds:5.1f} {fulls[-1]:7.2f} {wastes[-1]:6.2f} {lates[-1]:6.3f}  {cells}", flush=True)
    line = f"{'mean':>4} {'':>7} {'':>7} {np.mean(bounds):7.3f} {'':>7} {'':>5} {np.mean(fulls):7.2f} {np.mean(wastes):6.2f} {np.mean(lates):6.3f}  "
    line += " ".join(f"{np.mean([curves[(p, s)] for s in seeds if (p, s) in curves]):14.2f}"
                     if any((p, s) in curves for s in seeds) else f"{'':>14}" for p in policies)
    print(line)
    print(f"{len(seeds)} bounds in {time.time() - t0:.0f} s wall", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

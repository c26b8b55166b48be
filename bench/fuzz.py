"""Fuzz alloc against its own promises and print the failures per check.

Every round draws a generated instance (every feature: tenants, running
jobs, GPU sharing, GPU memory and compute, elastic and CPU-only jobs, every
hierarchy level; calls with the caller's order and preemption by it) solved
by every applicable solver under the three objectives, a tiny instance
checked against exhaustive search, a mutated instance file, shares file and
openb CSV, and a shares problem through every policy
(`alloc.experiments.fuzz`, whose module notes define each check).  Time
limits are drawn from `--limits`; the deadline rule is the library's
(`time_limit * 1.1 + 0.5` s, wall clock).

Usage:

    python bench/fuzz.py --minutes 30                  # the long campaign
    python bench/fuzz.py --minutes 2 --seed 7 --save failures/

Exit code 1 when any check failed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.experiments.fuzz import CHECKS, campaign  # noqa: E402

INPUTS = ("rounds", "instances", "tiny instances", "solver runs", "instance files",
          "instance files refused", "shares files", "shares files refused", "openb files",
          "openb files refused", "shares problems", "shares problems refused", "shares runs")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="campaign length (default: 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws (default: 0)")
    ap.add_argument("--limits", default="0.5,1,2",
                    help="time limits drawn per call, seconds (default: 0.5,1,2)")
    ap.add_argument("--save", default=None, metavar="DIR",
                    help="write each failing input there (default: not written)")
    ap.add_argument("--log", default=None, metavar="FILE",
                    help="write every failure as one JSON line (default: not written)")
    args = ap.parse_args(argv)
    limits = tuple(float(x) for x in args.limits.split(","))
    t0 = time.time()

    def progress(rounds, tally):
        if rounds % 10 == 0:
            bad = sum(tally.counts[c] for c in CHECKS)
            print(f"  {time.time() - t0:7.0f} s  round {rounds}  runs "
                  f"{tally.counts['solver runs']}  failures {bad}", file=sys.stderr, flush=True)
    tally = campaign(60 * args.minutes, seed=args.seed, limits=limits,
                     save=Path(args.save) if args.save else None, progress=progress)
    print(f"fuzz: {args.minutes:g} min, seed {args.seed}, limits {args.limits} s, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end")
    for k in INPUTS:
        print(f"  {k:<26} {tally.counts[k]}")
    for c in CHECKS:
        print(f"  {c:<26} {tally.counts[c]}")
    for f in tally.failures[:20]:
        print("  " + json.dumps(f)[:400])
    if args.log:
        Path(args.log).write_text("".join(json.dumps(f) + "\n" for f in tally.failures))
    return 1 if any(tally.counts[c] for c in CHECKS) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Reproduce the Sia simulator's experiments (Jayaram Subramanya et al.,
SOSP'23, Table 3) on alloc's simulator.

    python bench/sia.py --artifact DIR --workload saturn/workload-N.csv
                        --policy {sia,gavel,pollux,exact} [--seed N] --out FILE

``DIR`` is a copy of the Sia artifact (siasosp23/artifacts, or its
``sia-simulator`` folder; also ``$SIA_ARTIFACT``): its traces and workloads
are read from there, never copied into alloc (the artifact carries no
licence).  Without it the script says what is missing in one line and exits
0 (a skip).  Runs one workload on Sia's cluster (6 x 4 T4, 2 x 8 A100,
3 x 8 RTX 2080 Ti) and writes JSON ``{"avg_jct_s", "p99_jct_s",
"makespan_s", "restarts_per_job", "policy_ms_median", "wall_s"}`` (JCTs in
seconds; and a few more keys) to ``--out``.  Policies: ``sia`` (its integer
program, through alloc's kernel), ``exact`` (Sia's objective over every
placement, exactly), ``gavel`` (Gavel+TunedJobs, 360 s rounds).
``pollux`` (the Sia artifact's type-unaware Pollux on 16 virtual 4-GPU
nodes, seeded by ``--seed``: `alloc.sched.pollux.unaware`).  Bad input is
one line on stderr and exit 2.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402
from alloc.goodput.runs import SIA_POLICIES, run_sia, sia_root  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", default=os.environ.get("SIA_ARTIFACT"),
                    help="copy of the Sia artifact (default: $SIA_ARTIFACT)")
    ap.add_argument("--workload", required=True, help="saturn/workload-N.csv (under the "
                    "artifact's workloads/), or a path")
    ap.add_argument("--policy", required=True, choices=SIA_POLICIES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="JSON file to write")
    args = ap.parse_args(argv)
    if not args.artifact:
        print("skipped: the Sia artifact is needed (--artifact DIR or $SIA_ARTIFACT: a copy of "
              "siasosp23/artifacts)")
        return 0
    try:
        sia_root(args.artifact)
    except InputError as exc:
        print(f"skipped: {exc}")
        return 0
    try:
        res = run_sia(args.artifact, args.workload, args.policy, seed=args.seed)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = dict(res.metrics, policy=args.policy, workload=str(args.workload), seed=args.seed)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

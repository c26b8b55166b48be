"""Reproduce the Pollux simulator's experiments (Qiao et al., OSDI'21, section 5.3)
on alloc's simulator.

    python bench/pollux.py --workload PATH --policy {pollux,tiresias,optimus,exact}
                           [--interval S] [--seed N] --out FILE

Runs one workload in the Pollux artifact's format (``name, time,
application, num_replicas, batch_size``) on 16 nodes x 4 T4 GPUs with the
artifact's traces (shipped with alloc; ``--traces DIR`` for others) and
writes JSON ``{"avg_jct_s", "p99_jct_s", "makespan_s", "restarts_per_job",
"policy_ms_median", "wall_s"}`` (and a few more keys) to ``--out``.
``PATH`` may name a shipped workload (``workload-6``,
``workloads-2.0/workload-3``).  Policies: ``pollux`` (its genetic search,
seeded), ``exact`` (its fitness maximised exactly each round),
``tiresias`` (Tiresias+TunedJobs), ``optimus`` (Optimus+Oracle+TunedJobs).
Bad input (a missing column, a cell that is not a number, an unknown model)
is one line on stderr and exit 2.
"""
from __future__ import annotations

import os

# the online throughput fits are tiny: threads only slow L-BFGS-B down
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402
from alloc.goodput.runs import POLLUX_POLICIES, run_pollux  # noqa: E402
from alloc.goodput.workload import shipped_workload  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", required=True,
                    help="workload CSV (the artifact's format), or a shipped one: workload-6")
    ap.add_argument("--policy", required=True, choices=POLLUX_POLICIES)
    ap.add_argument("--interval", type=float, default=60.0, help="round length, s (default 60)")
    ap.add_argument("--seed", type=int, default=0, help="seed of Pollux's search (default 0)")
    ap.add_argument("--traces", default=None, help="traces folder (default: the shipped ones)")
    ap.add_argument("--out", required=True, help="JSON file to write")
    args = ap.parse_args(argv)
    try:
        path = Path(args.workload)
        if not path.is_file():
            path = shipped_workload(args.workload)
        res = run_pollux(path, args.policy, interval=args.interval, seed=args.seed,
                         traces=args.traces)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = dict(res.metrics, policy=args.policy, workload=str(args.workload),
               interval_s=args.interval, seed=args.seed)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

r"""``alloc simulate pollux|sia``: the two artifacts' experiments from the
command line, with per-round plots.

    alloc simulate pollux --workload PATH --policy {pollux,tiresias,optimus,exact}
                          [--interval S] [--seed N] [--traces DIR] [--plots DIR] [--out FILE]
    alloc simulate sia --artifact DIR --workload saturn/workload-N.csv
                       --policy {sia,gavel,pollux,exact} [--seed N] [--plots DIR] [--out FILE]

``pollux`` runs a workload in the Pollux artifact's format on 16 x 4 T4
GPUs (`alloc.goodput.runs.run_pollux`; ``PATH`` may name a shipped
workload, ``workload-6``); ``sia`` runs one on the Sia simulator's
heterogeneous cluster from a copy of the Sia artifact
(`alloc.goodput.runs.run_sia`; also ``$SIA_ARTIFACT``).  The run's figures
(average and p99 JCT, makespan, restarts and GPU-hours per job, the
policy's median time per round) go to ``--out`` as JSON (default: stdout);
``--plots DIR`` writes the per-round plots of `alloc.goodput.plots` (GPUs
per job, goodput, queue) and the simulator's own (`alloc.sim.plots`).
Bad input (a missing column or a cell that is not a number in a trace or
workload CSV, an unknown model, a missing artifact) is one line on stderr
naming the file, the row and the field, and exit 2.

Examples
--------
>>> from alloc.goodput.cli import parser
>>> parser().parse_args(["pollux", "--workload", "workload-6", "--policy", "tiresias"]).policy
'tiresias'
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..errors import InputError
from ..io import plain_numbers, write_output

#: The experiments ``alloc simulate`` runs by name.
EXPERIMENTS = ("pollux", "sia")


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``alloc simulate pollux|sia`` (module notes)."""
    ap = argparse.ArgumentParser(prog="alloc simulate",
                                 description="the Pollux or Sia artifact's experiment on "
                                             "alloc's simulator")
    ap.add_argument("experiment", choices=EXPERIMENTS)
    ap.add_argument("--workload", required=True,
                    help="workload CSV (the artifact's format); pollux: or a shipped one "
                         "(workload-6); sia: relative to the artifact's workloads/")
    ap.add_argument("--policy", required=True,
                    help="pollux: pollux, tiresias, optimus, exact; sia: sia, gavel, pollux, exact")
    ap.add_argument("--interval", type=float, default=60.0, help="pollux: round length, s")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--traces", default=None, help="pollux: traces folder (default: shipped)")
    ap.add_argument("--artifact", default=os.environ.get("SIA_ARTIFACT"),
                    help="sia: a copy of the Sia artifact (default: $SIA_ARTIFACT)")
    ap.add_argument("--plots", default=None, help="write the per-round plots into this folder")
    ap.add_argument("--out", default=None, help="write the figures here (default: stdout)")
    return ap


def run(args: argparse.Namespace):
    """Run the experiment ``args`` names; returns `alloc.goodput.runs.RunResult`.

    Raises
    ------
    InputError
        Bad input (module notes).
    """
    from .runs import run_pollux, run_sia
    from .workload import shipped_workload
    if args.experiment == "pollux":
        path = Path(args.workload)
        if not path.is_file():
            path = shipped_workload(args.workload)
        return run_pollux(path, args.policy, interval=args.interval, seed=args.seed,
                          traces=args.traces)
    if not args.artifact:
        raise InputError("--artifact: the Sia experiment needs a copy of the Sia artifact "
                         "(siasosp23/artifacts; or $SIA_ARTIFACT)")
    return run_sia(args.artifact, args.workload, args.policy, seed=args.seed)


def main(argv: list[str]) -> int:
    """``alloc simulate pollux|sia ...``; returns the exit code (2: bad input)."""
    args = parser().parse_args(argv)
    try:
        res = run(args)
        out = dict(res.metrics, experiment=args.experiment, policy=args.policy,
                   workload=str(args.workload), seed=args.seed)
        if args.plots:
            from ..sim.plots import plot_all
            from .plots import plot_rounds
            folder = Path(args.plots)
            folder.mkdir(parents=True, exist_ok=True)
            out["plots"] = plot_rounds(res.progress, res.result, folder) + \
                plot_all(res.result, folder)
        text = json.dumps(plain_numbers(out), indent=1)
        write_output(args.out or None, text + "\n")
    except InputError as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return 2
    print(f"alloc: {args.experiment}/{args.policy}: {out['jobs']} jobs, avg JCT "
          f"{out['avg_jct_s'] or 0.0:.1f} s, p99 {out['p99_jct_s'] or 0.0:.0f} s, "
          f"wall {out['wall_s']:.1f} s", file=sys.stderr)
    return 0


__all__ = ["EXPERIMENTS", "main", "parser", "run"]

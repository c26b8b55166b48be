"""The exact goodput solver against Pollux's search and Sia's program, round
by round, and its time on one round of 160 jobs on 64 GPUs.

    python bench/goodput_rounds.py time [--repeat 11] [--rounds 10] [--out FILE]
    python bench/goodput_rounds.py pollux --workload workload-6 [--interval 60] [--every 5] --out FILE
    python bench/goodput_rounds.py sia --artifact DIR --workload saturn/workload-1.csv [--every 5] --out FILE

``time``: every job of the Pollux artifact's workload-6 arrives at once on
16 x 4 T4 GPUs and Pollux runs ``--rounds`` rounds of 60 s; each round's
input (160 jobs at first, fewer as short jobs finish; replica caps grow as
jobs are profiled) is solved exactly ``--repeat`` times. Each round's median
wall and CPU time is reported with the machine's load, beside Pollux's
genetic search on the same round; the headline is the worst round's median.
``pollux`` / ``sia``: a run of the artifact's policy in which, every
``--every`` rounds, the same round is also solved exactly; each such round's
two objective values (Pollux: the power mean of speed-ups, higher is better;
Sia: its program's objective, lower is better), the exact solver's proven
bound and both times are written to ``--out`` (JSON lines).
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from alloc.deadline import Deadline  # noqa: E402
from alloc.goodput.progress import GoodputProgress  # noqa: E402
from alloc.goodput.runs import _simulate, run_sia  # noqa: E402
from alloc.goodput.workload import pollux_cluster, read_workload, shipped_workload  # noqa: E402
from alloc.sched.pollux.policy import Pollux, exact_options, exact_rows  # noqa: E402
from alloc.goodput.ga import GaInput, evaluate, search  # noqa: E402
from alloc.goodput.patterns import solve_patterns  # noqa: E402


class _Capture(Pollux):
    """Pollux, keeping every round's input."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.captured: list = []

    def _inputs(self, jobs, ctx):
        inp = super()._inputs(jobs, ctx)
        self.captured.append(inp)
        return inp


def load() -> float:
    return os.getloadavg()[0]


def time_round(repeat: int, rounds: int) -> dict:
    """Every job of workload-6 arriving at 0; each of the first ``rounds`` rounds solved."""
    jobs = [replace(j, arrival_s=0.0) for j in read_workload(shipped_workload("workload-6"))]
    cap = _Capture()
    _simulate(pollux_cluster(), jobs, dict(round_s=60.0, seed=0, progress=GoodputProgress(60.0),
                                           placement="freest-first", sizing=cap, mechanism=cap,
                                           max_time_s=60.0 * (rounds - 1)))
    rows = []
    for r, inp in enumerate(cap.captured[:rounds]):
        walls, cpus, out = [], [], None
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            types, opts = exact_options(inp)
            out = solve_patterns(types, opts, Deadline.after(60.0))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        ga = GaInput(inp.table, inp.restart, inp.base, inp.caps, inp.capacity)
        t0 = time.perf_counter()
        g = search(ga, np.random.default_rng(0))
        ga_s = time.perf_counter() - t0
        fit = float(-evaluate(ga, exact_rows(inp, out)[None].astype(np.int16))[0, 0])
        rows.append({"round": r, "jobs": len(inp.order), "gpus": int(inp.capacity.sum()),
                     "max_cap": int(inp.caps.max()),
                     "exact_ms_median": round(1000 * statistics.median(walls), 1),
                     "exact_cpu_ms_median": round(1000 * statistics.median(cpus), 1),
                     "status": out.status.value, "exact_fitness": fit,
                     "ga_ms": round(1000 * ga_s, 1),
                     "ga_fitness": g.fitness, "load_1min": load()})
        print(json.dumps(rows[-1]), file=sys.stderr)
    worst = max(rows, key=lambda x: x["exact_ms_median"])
    return {"rounds": rows, "worst_round": worst["round"],
            "worst_exact_ms_median": worst["exact_ms_median"],
            "worst_exact_cpu_ms_median": worst["exact_cpu_ms_median"], "load_1min": load()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("time", "pollux", "sia"))
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workload", default="workload-6")
    ap.add_argument("--artifact", default=os.environ.get("SIA_ARTIFACT"))
    ap.add_argument("--interval", type=float, default=60.0)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.what == "time":
        res = time_round(args.repeat, args.rounds)
        text = json.dumps(res)
    elif args.what == "pollux":
        path = Path(args.workload)
        if not path.is_file():
            path = shipped_workload(args.workload)
        pol = Pollux(seed=0, compare_every=args.every)
        prog = GoodputProgress(args.interval)
        res, wall, _ = _simulate(pollux_cluster(), read_workload(path),
                                 dict(round_s=args.interval, seed=0, progress=prog,
                                      placement="freest-first", sizing=pol, mechanism=pol))
        rows = pol.comparisons
        text = "\n".join(json.dumps(r) for r in rows)
        worse = sum(1 for r in rows if r["exact_fitness"] < r["ga_fitness"] - 1e-9)
        print(f"{len(rows)} rounds compared; exact below the search in {worse}; "
              f"avg JCT of the run {res.summary()['avg_jct_s']:.1f} s", file=sys.stderr)
    else:
        if not args.artifact:
            print("skipped: the Sia artifact is needed (--artifact DIR or $SIA_ARTIFACT)")
            return 0
        from alloc.sched.sia import policy as sp
        orig = sp.Sia.__init__

        def init(self, *a, **k):
            orig(self, *a, **dict(k, compare_every=args.every))
        sp.Sia.__init__ = init
        r = run_sia(args.artifact, args.workload, "sia")
        rows = r.policy.comparisons
        text = "\n".join(json.dumps(x) for x in rows)
        worse = sum(1 for x in rows if x["exact_objective"] > x["sia_objective"] + 1e-6)
        print(f"{len(rows)} rounds compared; exact worse than Sia's program in {worse}",
              file=sys.stderr)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text if args.what == "time" else f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

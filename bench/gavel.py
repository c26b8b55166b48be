"""Reproduce Gavel's headline (Narayanan et al., OSDI'20, Fig. 9): average JCT of
the LAS policy, heterogeneity-agnostic vs heterogeneity-aware vs aware with
space sharing, on 36 V100 + 36 P100 + 36 K80 with continuous single-GPU
arrivals.

    python bench/gavel.py                                   # a short window (a few minutes, 2 cores)
    python bench/gavel.py --loads 2,3,4,4.5,5,5.5,6 --window 4000,5000   # steady state, as the paper

The paper reports, for LAS: 60.0 h agnostic -> 20.4 h aware (2.9x), 18.5 h
aware with space sharing.  Gavel's LAS is its max-min fairness policy with
priority weights 1 (the paper's section 4.1); the simulator is
:mod:`alloc.sim.gavel` (Gavel's measured throughputs from
``../shared/data/reference/``, or ``$ALLOC_SHARED``; the script says so and
stops when they are absent).  Mean JCT is over the jobs of ``--window``;
arrivals go on after it (twice as many jobs are generated), so the measured
jobs see a steady load rather than a draining cluster, and a run ends when
they have all finished (or after ``--max-hours``, counted as unfinished).
The header gives the arrival rates beyond which each policy's queue grows
without bound (:func:`alloc.sim.gavel.saturation_rates`); near and past
them the JCT of a fixed window depends on how far into the run it lies.
Runs go to ``--workers`` processes.  Writes ``bench/results/gavel.md`` and
the JCT-vs-load plot ``bench/results/gavel_jct.png`` (matplotlib, the
optional extra ``plot``; skipped with a note when missing).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402
from alloc.sim.gavel import (GAVEL_CLUSTER, ThroughputTable, gavel_workload,  # noqa: E402
                             saturation_rates, simulate_gavel, throughputs_path)
from alloc.sim.plots import plot_lines  # noqa: E402

PAPER = {"gavel-las-agnostic": 60.0, "gavel-las": 20.4, "gavel-las-ss": 18.5}
LABEL = {"gavel-las-agnostic": "LAS, heterogeneity-agnostic", "gavel-las": "LAS, heterogeneity-aware",
         "gavel-las-ss": "LAS, aware + space sharing"}


def run(args) -> dict:
    policy, load, seed, jobs, window, max_h = args
    table = ThroughputTable.load()
    work = gavel_workload(table, load, jobs, seed=seed)
    t0 = time.perf_counter()
    res = simulate_gavel(policy, work, table, window=window, max_time_s=max_h * 3600.0, seed=seed)
    return {"policy": policy, "load": load, "seed": seed, "jct_h": res.mean_jct_h,
            "unfinished": res.unfinished, "rounds": res.rounds, "wall_s": time.perf_counter() - t0,
            "solve_s": res.solve_s, "peak": res.peak_active}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loads", default="3,4.5,6", help="arrival rates, jobs/hour (default: 3,4.5,6)")
    ap.add_argument("--window", default="100,300",
                    help="measured job ids a,b; 2b jobs arrive (default: 100,300)")
    ap.add_argument("--seeds", default="0", help="workload seeds (default: 0)")
    ap.add_argument("--policies", default="gavel-las-agnostic,gavel-las,gavel-las-ss",
                    help="simulator policies (default: the three LAS variants)")
    ap.add_argument("--max-hours", type=float, default=5000.0,
                    help="simulated hours after which a run stops (default: 5000)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default: 2)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gavel.md"),
                    help="markdown file (default: bench/results/gavel.md)")
    ap.add_argument("--plot", default=str(ROOT / "bench" / "results" / "gavel_jct.png"),
                    help="JCT-vs-load plot (default: bench/results/gavel_jct.png)")
    args = ap.parse_args(argv)
    try:
        ThroughputTable.load()
    except InputError as exc:
        print(f"bench/gavel.py: needs Gavel's measured throughputs: {exc}", file=sys.stderr)
        return 0
    sat = saturation_rates(ThroughputTable.load())
    loads = [float(x) for x in args.loads.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    policies = args.policies.split(",")
    a, b = (int(x) for x in args.window.split(","))
    todo = [(p, load, s, 2 * b, (a, b), args.max_hours) for load in loads for s in seeds
            for p in policies]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers, mp_context=get_context("fork")) as ex:
        rows = list(ex.map(run, todo))
    wall = time.perf_counter() - t0
    table = {}
    for r in rows:
        table.setdefault((r["load"], r["policy"]), []).append(r)
    lines = [f"| load (jobs/h) | {' | '.join(LABEL.get(p, p) + ' (h)' for p in policies)} | "
             f"agnostic / aware | unfinished | most active jobs | rounds | sim wall (s) |",
             "|---|" + "---|" * (len(policies) + 5)]
    series = {LABEL.get(p, p): [] for p in policies}
    for load in loads:
        cells, unf, rnd, sw, peak = [], 0, 0, 0.0, 0
        means = {}
        for p in policies:
            rs = table[(load, p)]
            vals = [r["jct_h"] for r in rs]
            means[p] = statistics.mean(vals)
            series[LABEL.get(p, p)].append(means[p])
            cells.append(f"{means[p]:.2f}" + (f" ± {statistics.stdev(vals):.2f}" if len(vals) > 1 else ""))
            unf += sum(r["unfinished"] for r in rs)
            rnd += sum(r["rounds"] for r in rs)
            sw += sum(r["wall_s"] for r in rs)
            peak = max([peak] + [r["peak"] for r in rs])
        ratio = (means["gavel-las-agnostic"] / means["gavel-las"]
                 if "gavel-las-agnostic" in means and "gavel-las" in means else float("nan"))
        lines.append(f"| {load:g} | {' | '.join(cells)} | {ratio:.2f}x | {unf} | {peak} | {rnd} | {sw:.0f} |")
    paper = ("| paper (Fig. 9, LAS) | " + " | ".join(f"{PAPER[p]:.1f}" if p in PAPER else "-" for p in policies)
             + " | 2.94x | - | - | - | - |")
    lines.append(paper)
    marks = {f"saturation, {name}": rate for name, rate in
             (("agnostic", sat["agnostic"]), ("any policy", sat["any"])) if loads[0] <= rate <= loads[-1]}
    plotted = plot_lines(loads, series, args.plot, "input job rate (jobs/hour)", "average JCT (hours)",
                         "LAS on 36 V100 + 36 P100 + 36 K80, single-GPU jobs", marks=marks)
    cmd = "python bench/gavel.py" + ("" if not (argv if argv is not None else sys.argv[1:])
                                     else " " + " ".join(argv if argv is not None else sys.argv[1:]))
    text = ["# Gavel's heterogeneity-aware LAS: average JCT against load", "",
            f"Command: `{cmd}` ({len(todo)} simulations, {wall:.0f} s on {os.cpu_count()} cores, "
            f"{args.workers} workers). Cluster {dict(GAVEL_CLUSTER)}, rounds of 360 s, "
            f"{2 * b} jobs per workload (Poisson arrivals, Gavel's duration law, the 26 single-GPU "
            f"models of `{throughputs_path().name}` drawn uniformly), mean JCT of jobs {a}..{b - 1}, "
            f"seeds {args.seeds}; a run stops after {args.max_hours:g} simulated hours.", "",
            f"Saturation (jobs/h): heterogeneity-agnostic {sat['agnostic']:.2f}, any policy at most "
            f"{sat['any']:.2f} (`alloc.sim.gavel.saturation_rates`). LAS is Gavel's max-min fairness "
            "(priority weights 1); the round mechanism is work-conserving.", ""] + lines + [
            "", "Paper figures: Narayanan et al., Gavel, OSDI'20, Fig. 9 and section 7.2 "
            "(LAS: 60.0 h -> 20.4 h, 2.9x; 18.5 h with space sharing).",
            "", f"Plot: `{Path(args.plot).name}`" if plotted else
            "Plot skipped: matplotlib (the optional extra `plot`) is not installed."]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(text) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out}" + (f" and {args.plot}" if plotted else " (no plot: matplotlib missing)"),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

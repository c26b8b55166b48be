"""Reproduce Gandiva's cluster experiments (Xiao et al., OSDI'18): time-slicing
and packing (section 6.3, Fig. 15) and time-slicing and migration (section
6.4, Table 5), each against a scheduler that never over-subscribes.

    python bench/gandiva.py                          # section 6.3: 45 x 4 GPUs, 1,000 jobs
    python bench/gandiva.py --experiment migration   # section 6.4: 25 x 4 GPUs, the trace
    python bench/gandiva.py --servers 250 --jobs 5556 --until 3600 --md '' --plot ''
                                                     # decision latency at 1,000 GPUs

Section 6.3, as the paper sets it up: 45 servers of 4 GPUs (P100 and P40
alternating); 1,000 jobs arriving uniformly at random over 2 hours; the
eight models of Table 1 drawn with probability 0.3 (jobs 1-2), 0.25 (3-5),
0.45 (6-8); ResNet-50 and ResNeXt-50 on 2 or 4 GPUs, the others on 1; each
job's work 30-45 minutes alone.  Gandiva: reactive placement, time-slicing
(60 s slices) and introspective packing, no migration, no grow-shrink.
Baseline: the same placement rules with no over-subscription (a bin-packer;
jobs queue until GPUs are free).  Section 6.4: the ten models of Table 2 in
the trace's shares on 25 servers of 4 GPUs, Philly-derived GPU counts and
durations (the paper's trace is internal), time-slicing and migration.
Every parameter is fixed from the papers or public data before any run; the
per-model data and their sources are in alloc/sim/data/gandiva_models.json,
the other assumptions in bench/results/gandiva.md.

Both sides run on the one simulator (`alloc.sim.simulate`): FIFO (not
preemptive), the ``gandiva`` placement, Gandiva's mechanism
(`alloc.sched.gandiva.mechanism.GandivaMechanism`; over-subscription off for
the baseline) and Gandiva's data as the progress model
(`alloc.sim.gandiva.GandivaProgress`).  ``decision_ms_*`` is the mechanism's
time per event it handles (its rules and the checked placements it makes),
``solver_ms_*`` the ``gandiva`` solver's per round, ``rounds`` the session
rounds.

``--out FILE`` writes ``{"baseline": {...}, "gandiva": {...}}`` with
``gpu_util`` (0..1), ``time_to_100_minibatches_s``, ``mean_jct_s``,
``makespan_s``, ``migrations``, ``suspensions``, ``packings``,
``packings_undone``, ``wall_s`` and more.  The two runs go to ``--workers``
processes.  Writes bench/results/gandiva.md (gandiva_migration.md) and the
plot bench/results/gandiva_fig15.png (matplotlib, the optional extra
``plot``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402
from alloc.sched.gandiva.mechanism import GandivaMechanism  # noqa: E402
from alloc.sim import simulate  # noqa: E402
from alloc.sim.gandiva import (GandivaProgress, gandiva_cluster, gpu_memory,  # noqa: E402
                               load_models, mean_over, packing_workload, trace_jobs,
                               trace_workload, workload_jobs)

#: The papers' figures.
PAPER = {
    "packing": {"baseline": {"gpu_util": 0.501, "time_to_100_minibatches_s": 2203.0},
                "gandiva": {"gpu_util": 0.628, "time_to_100_minibatches_s": 498.0}},
    "migration": {"baseline": {"mean_jct_s": 832 * 60.0, "makespan_s": 13371 * 60.0},
                  "gandiva": {"mean_jct_s": 656 * 60.0, "makespan_s": 11349 * 60.0,
                              "migrations": 470}},
}
KEYS = ("gpu_util", "gpu_util_20_120", "time_to_100_minibatches_s", "mean_jct_s", "makespan_s",
        "migrations", "suspensions", "packings", "packings_undone", "unpacked",
        "oversubscribed", "queued", "unfinished", "events", "rounds", "decision_ms_median",
        "decision_ms_p95", "solver_ms_median", "solver_ms_p95", "wall_s", "cpu_s")
#: Seconds per utilisation bin.
BIN_S = 60.0


def _nonneg(name: str, text: str, positive: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{name}: expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise InputError(f"{name}: expected a number {'> 0' if positive else '>= 0'}, "
                         f"got {text!r}")
    return v


def setup(args) -> dict:
    """Everything a run needs, validated (InputError on bad input)."""
    table = "table1" if args.experiment == "packing" else "table2"
    models = load_models(args.models, table)
    if args.switch_cost is not None:
        cost = _nonneg("--switch-cost", args.switch_cost)
        models = replace(models, models={m: replace(s, suspend_resume_s=cost)
                                         for m, s in models.models.items()})
    slice_s = _nonneg("--slice", args.slice, positive=True)
    if args.experiment == "packing":
        jobs = packing_workload(models, args.jobs, args.hours, seed=args.seed)
        window = (1200.0, 12000.0)
    else:
        jobs = trace_workload(models, args.jobs, args.days, seed=args.seed)
        window = (0.0, max(j.arrival for j in jobs))
    cluster = gandiva_cluster(args.servers)
    until = None if args.until is None else _nonneg("--until", args.until, positive=True)
    common = dict(slice_s=slice_s, gpu_mem_capacity=gpu_memory(), window=window, until=until)
    sides = {"baseline": dict(mode="baseline"),
             "gandiva": dict(mode="gandiva", packing=args.experiment == "packing",
                             migration=args.experiment == "migration")}
    return {"jobs": jobs, "models": models, "cluster": cluster, "common": common,
            "sides": sides}


def run_side(payload) -> dict:
    """One side's simulation on the one simulator (a worker process): the
    ``gandiva`` placement under FIFO (not preemptive) with Gandiva's
    mechanism -- over-subscribed, time-sliced, packing or migrating for
    Gandiva; never over-subscribing for the baseline -- and Gandiva's data
    as the progress model."""
    name, jobs, models, cluster, kw = payload
    t0, c0 = time.perf_counter(), time.process_time()
    prog = GandivaProgress(models, bin_s=BIN_S)
    g = kw["mode"] == "gandiva"
    mech = GandivaMechanism(slice_s=kw["slice_s"], oversubscribe=g,
                            packing=g and kw.get("packing", False),
                            migration=g and kw.get("migration", False),
                            gpu_mem_capacity=kw["gpu_mem_capacity"])
    res = simulate(cluster, workload_jobs(jobs, models), order=("fifo", {"preemptive": False}),
                   placement="gandiva", mechanism=mech, progress=prog, max_time_s=kw["until"],
                   name=name)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"name": name, "summary": summary(res, prog, mech, cluster.total_gpus, kw["window"],
                                             wall, cpu),
            "util": prog.util(cluster.total_gpus), "packings": mech.kept, "bin_s": BIN_S}


def summary(res, prog: GandivaProgress, mech: GandivaMechanism, gpus: int, window, wall: float,
            cpu: float) -> dict:
    """The figures of one side (``KEYS``) from the run, its progress model
    and its mechanism."""
    rows = res.timeline()
    done = [r for r in rows if r.get("end_s") is not None]
    jct = [r["end_s"] - r["arrival_s"] for r in done]
    first = min((r["arrival_s"] for r in rows), default=0.0)
    util = prog.util(gpus)
    c = mech.counts
    s = res.summary()
    return {
        "gpu_util": mean_over(util, BIN_S, *window),
        "gpu_util_20_120": mean_over(util, BIN_S, 1200.0, 7200.0),
        "time_to_100_minibatches_s": statistics.fmean(prog.feedback.values())
        if prog.feedback else 0.0,
        "mean_jct_s": statistics.fmean(jct) if jct else 0.0,
        "makespan_s": max(r["end_s"] for r in done) - first if done else 0.0,
        "migrations": c["migrations"], "suspensions": c["suspensions"],
        "packings": c["packings"], "packings_undone": c["packings_undone"],
        "unpacked": c["unpacked"], "resizes": c["resizes"],
        "oversubscribed": c["oversubscribed"], "queued": c["queued"],
        "unfinished": s["unfinished"], "events": len(mech.latency), "rounds": s["rounds"],
        "steps": s["steps"],
        "decision_ms_median": 1e3 * _quantile(mech.latency, 0.5),
        "decision_ms_p95": 1e3 * _quantile(mech.latency, 0.95),
        "solver_ms_median": 1e3 * _quantile(mech.solver_s, 0.5),
        "solver_ms_p95": 1e3 * _quantile(mech.solver_s, 0.95),
        "wall_s": wall, "cpu_s": cpu,
    }


def _quantile(xs, q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _change(a, b) -> str:
    return f"{100.0 * (b - a) / a:+.1f} %" if a else "-"


def _fmt(k: str, v) -> str:
    if v is None:
        return "-"
    if k.startswith("gpu_util"):
        return f"{100 * v:.1f} %"
    if k in ("mean_jct_s", "makespan_s"):
        return f"{v:,.0f} s ({v / 60:,.0f} min)"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def table(exp: str, res: dict) -> list[str]:
    """The headline rows beside the paper's."""
    paper = PAPER[exp]
    rows = ["| figure | baseline | Gandiva | change | paper baseline | paper Gandiva | paper change |",
            "|---|---|---|---|---|---|---|"]
    for k in KEYS:
        a, b = res["baseline"][k], res["gandiva"][k]
        pa, pb = paper["baseline"].get(k), paper["gandiva"].get(k)
        pc = _change(pa, pb) if pa is not None and pb is not None else "-"
        rows.append(f"| {k} | {_fmt(k, a)} | {_fmt(k, b)} | "
                    f"{_change(a, b) if isinstance(a, (int, float)) and not isinstance(a, bool) else '-'} | "
                    f"{_fmt(k, pa)} | {_fmt(k, pb)} | {pc} |")
    return rows


def plot(res: dict, out: dict, path: str) -> bool:
    """Fig. 15: utilisation over time, both sides, and cumulative packings."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, style in (("gandiva", "-"), ("baseline", "--")):
        u = out[name]["util"]
        b = out[name]["bin_s"]
        ax.plot([k * b / 60 for k in range(len(u))], [100 * x for x in u], style, label=name)
    ax.set_xlabel("time (min)")
    ax.set_ylabel("GPU utilisation (%)")
    ax.set_ylim(0, 100)
    ax2 = ax.twinx()
    pk = out["gandiva"]["packings"]
    ax2.step([t / 60 for t, _ in pk], [n for _, n in pk], where="post", color="green",
             linewidth=0.8, label="packings kept (Gandiva)")
    ax2.set_ylabel("packings kept")
    lines = ax.get_legend_handles_labels()
    l2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + l2[0], lines[1] + l2[1], fontsize=7, loc="lower right")
    ax.set_title("Gandiva Fig. 15 (reproduction): cluster GPU utilisation", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    """Run both sides; exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", choices=("packing", "migration"), default="packing",
                    help="section 6.3 (packing) or 6.4 (migration) (default: packing)")
    ap.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    ap.add_argument("--servers", type=int, default=None,
                    help="servers of 4 GPUs (default: 45 for packing, 25 for migration)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="jobs (default: 1000 for packing; for migration as many as make "
                         "the offered load --load)")
    ap.add_argument("--load", type=float, default=1.0,
                    help="offered load of the migration experiment (default: 1)")
    ap.add_argument("--hours", type=float, default=2.0,
                    help="arrival window of the packing experiment, hours (default: 2)")
    ap.add_argument("--days", type=float, default=9.0,
                    help="arrival window of the migration experiment, days (default: 9)")
    ap.add_argument("--slice", default="60", help="time-slice length, seconds (default: 60)")
    ap.add_argument("--switch-cost", default=None,
                    help="suspend-resume cost for every model, seconds (default: per model)")
    ap.add_argument("--models", default=None,
                    help="a model data file (default: alloc/sim/data/gandiva_models.json)")
    ap.add_argument("--until", default=None, help="stop at this simulated time, s (default: end)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default: 2)")
    ap.add_argument("--out", default=None, help="write the JSON results here (default: none)")
    ap.add_argument("--md", default=None,
                    help="results markdown (default: bench/results/gandiva.md, or "
                         "gandiva_migration.md; '' for none)")
    ap.add_argument("--plot", default=None,
                    help="Fig. 15 plot (default: bench/results/gandiva_fig15.png; '' for none)")
    args = ap.parse_args(argv)
    mig = args.experiment == "migration"
    args.servers = args.servers if args.servers is not None else (25 if mig else 45)
    if args.jobs is None:
        args.jobs = trace_jobs(args.load, 4 * args.servers, args.days) if mig else 1000
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    try:
        s = setup(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    payloads = [(n, s["jobs"], s["models"], s["cluster"], {**s["common"], **kw})
                for n, kw in s["sides"].items()]
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=min(args.workers, 2)) as ex:
            outs = list(ex.map(run_side, payloads))
    else:
        outs = [run_side(p) for p in payloads]
    wall = time.perf_counter() - t0
    out = {o["name"]: o for o in outs}
    res = {n: {k: o["summary"].get(k) for k in KEYS} for n, o in out.items()}
    rows = table(args.experiment, res)
    print("\n".join(rows))
    load1 = os.getloadavg()
    perf = (f"run: {wall:.1f} s wall for both sides ({args.workers} processes); "
            f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end "
            f"({os.cpu_count()} cores)")
    print(perf, file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    md = args.md if args.md is not None else str(
        ROOT / "bench" / "results" / ("gandiva_migration.md" if mig else "gandiva.md"))
    if md:
        write_md(md, args, rows, perf, sys.argv[1:] if argv is None else argv)
    pl = args.plot if args.plot is not None else (
        "" if mig else str(ROOT / "bench" / "results" / "gandiva_fig15.png"))
    if pl and not plot(res, out, pl):
        print("note: matplotlib is not installed; no plot", file=sys.stderr)
    return 0


def write_md(path: str, args, rows, perf: str, argv) -> None:
    """The results page: command, figures beside the paper's, timing."""
    cmd = " ".join(["python bench/gandiva.py", *argv])
    head = [f"# Gandiva (Xiao et al., OSDI'18): {'time-slicing and packing (section 6.3, Fig. 15)' if args.experiment == 'packing' else 'time-slicing and migration (section 6.4, Table 5)'}",
            "", f"Command: `{cmd}` (seed {args.seed}, {args.servers} servers x 4 GPUs, "
            f"{args.jobs} jobs).", "", *rows, "", perf + ".", ""]
    keep = ""
    p = Path(path)
    if p.exists():
        text = p.read_text()
        mark = "## Reading"
        if mark in text:
            keep = text[text.index(mark):]
    p.write_text("\n".join(head) + ("\n" + keep if keep else ""))


if __name__ == "__main__":
    sys.exit(main())

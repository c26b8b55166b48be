"""Reproduce the AlloX simulator's committed experiment (Le et al., EuroSys'20)
on alloc's simulator: 20 GPUs and 640 cores (20 CPU nodes of 32), 10 users x
1,000 jobs of a Google-derived trace, each job able to run on a GPU or on a
CPU node; AlloX, AlloX+, SJF, SRPT, DRF, DRF-FIFO, DRFExt and equal shares.

    python bench/allox.py --artifact DIR [--policy allox-plus] [--out FILE]
    python bench/allox.py --artifact DIR --page     # every policy; the results page
    python bench/allox.py --artifact DIR --java     # also run the artifact itself, timed

The artifact (lenhattan86/allox_sim) has no licence: nothing of it is copied
or shipped.  This bench reads, at run time, a fetched copy's job file
(``DIR/input/jobs_input_10_Google_debug.txt``: the trace the committed
configuration generates, estimate errors included) and its committed outputs
(``DIR/output/<policy>-output_10_20_debug.csv``) for the figures to compare
with; without ``--artifact`` it says so and skips (exit 0).  ``--java``
compiles the copy with ``javac`` into a temporary directory and runs its
committed configuration (AlloX+) there, to time it side by side.

``--out FILE`` writes, per policy, ``avg_jct``, ``makespan``, ``wall_s``,
``cpu_s`` (this process's CPU seconds), ``decisions``, the committed
figure and the ratio; ``order_kept`` says whether the committed order of the
average JCTs (SRPT < SJF < AlloX+ < DRFExt < DRF < ES < DRF-FIFO) holds.
Policies run in ``--workers`` processes.  Times are in the trace's units.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402

JOB_FILE = "input/jobs_input_10_Google_debug.txt"
#: Our policy -> the artifact's name for it (its committed output file).
ARTIFACT_NAMES = {"allox-plus": "AlloXPlus", "allox-sjf": "SJF", "allox-srpt": "SRPT",
                  "allox-drf": "DRF", "allox-drf-fifo": "DRFFIFO", "allox-drf-ext": "DRFExt",
                  "allox-es": "ES", "allox": "AlloX"}
POLICIES = ("allox", "allox-plus", "allox-sjf", "allox-srpt", "allox-drf", "allox-drf-fifo",
            "allox-drf-ext", "allox-es")
#: Variants run besides (label -> policy, parameters): equal shares per kind
#: of slot, the rule as stated rather than as the simulator checks it.
VARIANTS = {"allox-es (per kind)": ("allox-es", {"vector": False})}
#: The committed order of average JCTs, best first.
ORDER = ("allox-srpt", "allox-sjf", "allox-plus", "allox-drf-ext", "allox-drf", "allox-es",
         "allox-drf-fifo")
GPUS, CPU_NODES = 20, 20


def committed(artifact: Path, policy: str) -> float | None:
    """The average JCT of a committed output (jobs with an id >= 0, i.e. not
    the profiling runs), read from the artifact copy; None when absent."""
    f = artifact / "output" / f"{ARTIFACT_NAMES[policy]}-output_10_20_debug.csv"
    if not f.is_file():
        return None
    vals = []
    with f.open() as fh:
        rows = csv.reader(fh)
        next(rows, None)
        for r in rows:
            if r and int(r[0]) >= 0:
                vals.append(float(r[3]))
    return sum(vals) / len(vals) if vals else None


def run_policy(args: tuple) -> dict:
    """One policy on the simulator (a worker's entry point)."""
    label, policy, job_file, params = args
    from alloc.sched import get_policy
    from alloc.sched.allox.jobs import read_trace
    from alloc.sched.allox.rules import exchange_rate
    from alloc.sched.allox.sim import FlexProgress, flex_cluster, mean_jct, workload
    from alloc.sim import simulate
    jobs = read_trace(job_file)
    info = get_policy("sizing", policy)
    kw = dict(params)
    if policy == "allox-drf-ext":
        kw.setdefault("beta", exchange_rate(jobs))
    sizing = info.build(**kw)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(flex_cluster(GPUS, CPU_NODES), workload(jobs, sizing.profiling),
                   order=("fifo", {"preemptive": False}), placement="best-fit", sizing=sizing,
                   progress=FlexProgress())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tl = [r for r in res.timeline() if "~" not in str(r["id"])]
    ends = [r["end_s"] for r in tl if r.get("end_s") is not None]
    return {"policy": label, "params": {k: v for k, v in kw.items()}, "jobs": len(jobs),
            "finished": len(ends), "avg_jct": mean_jct(tl), "makespan": max(ends, default=None),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "decisions": sizing.decisions,
            "load": round(os.getloadavg()[0], 2)}


def run_java(artifact: Path) -> dict:
    """Compile the artifact copy and run its committed configuration in a
    temporary directory (nothing of it is kept); wall and CPU seconds."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return {"skipped": "no javac/java on PATH"}
    with tempfile.TemporaryDirectory() as td:
        work = Path(td) / "allox_sim"
        shutil.copytree(artifact, work, ignore=shutil.ignore_patterns(".git", "figs", "log"))
        (work / "log").mkdir(exist_ok=True)
        classes = Path(td) / "classes"
        srcs = [str(p) for p in (work / "src").rglob("*.java")]
        cp = os.pathsep.join([str(classes), str(work / "lib" / "*")])
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", str(work / "lib" / "*"),
                        *srcs], check=True, capture_output=True)
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%U %S", "java", "-Xmx4g", "-cp", cp,
                            "cluster.simulator.Main"], cwd=work, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        user, sys_s = (float(x) for x in r.stderr.strip().splitlines()[-1].split()[:2])
        avg = None                    # from its output CSV: the jobs, not the profiling runs
        out = work / "output" / "AlloXPlus-output_10_20_debug.csv"
        if out.is_file():
            vals = [float(row[3]) for row in list(csv.reader(out.open()))[1:] if int(row[0]) >= 0]
            avg = sum(vals) / len(vals)
        return {"policy": "AlloXPlus (artifact)", "avg_jct": avg, "wall_s": round(wall, 2),
                "cpu_s": round(user + sys_s, 2), "load": round(os.getloadavg()[0], 2)}


def order_kept(rows: dict) -> bool:
    vals = [rows[p]["avg_jct"] for p in ORDER if p in rows]
    return len(vals) == len(ORDER) and all(a < b for a, b in zip(vals, vals[1:]))


def page(rows: dict, java: dict | None, cmd: str, plot: str | None,
         timing: dict | None = None) -> str:
    out = ["# AlloX (EuroSys'20): the simulator's committed experiment on alloc's simulator", "",
           f"Command: `{cmd}` (2 cores; load average "
           f"{min(r['load'] for r in rows.values()):.1f}-{max(r['load'] for r in rows.values()):.1f}"
           f" at the ends of the runs).", "",
           "Setup (the artifact's committed configuration, read from a fetched copy at run time; "
           "nothing of it is shipped): 20 GPUs and 20 CPU nodes of 32 cores; 10 users x 1,000 "
           "jobs of its Google-derived trace (`input/jobs_input_10_Google_debug.txt`: each job's "
           "time on a GPU and on a CPU node, and the estimates schedulers see, within +-10 % "
           "errors); each job profiled by four short runs before it is queued (none for "
           "DRF-FIFO); decisions at arrivals and completions.  Time in the trace's units.", "",
           "| policy | avg JCT | committed | ratio | makespan | decisions | wall (s) | CPU (s) |",
           "|---|---|---|---|---|---|---|---|"]
    for p in (*POLICIES, *VARIANTS):
        r = rows.get(p)
        if r is None:
            continue
        c = r.get("committed")
        out.append(f"| {p} | {r['avg_jct']:.1f} | {c:.1f} | {r['avg_jct'] / c:.3f} | "
                   if c else f"| {p} | {r['avg_jct']:.1f} | - | - | ")
        out[-1] += f"{r['makespan']:.0f} | {r['decisions']} | {r['wall_s']} | {r['cpu_s']} |"
    if java and "wall_s" in java:
        out.append(f"| the artifact (Java), AlloX+ | {java['avg_jct']:.1f} | - | - | - | - | "
                   f"{java['wall_s']} | {java['cpu_s']} |")
    kept = order_kept(rows)
    ap = rows.get("allox-plus", {})
    ok = ap.get("committed") and abs(ap["avg_jct"] / ap["committed"] - 1) <= 0.10
    if timing:
        tp, tj = timing["policies"]["allox-plus"], timing.get("artifact_run", {})
        out += ["", "## AlloX+ and the artifact, one after the other", "",
                f"Command: `{timing.get('command', '')}` (load average {tp['load']} after "
                f"alloc's run, {tj.get('load')} after the artifact's).", "",
                "| run | avg JCT | wall (s) | CPU (s) |", "|---|---|---|---|",
                f"| alloc, allox-plus | {tp['avg_jct']:.1f} | {tp['wall_s']} | {tp['cpu_s']} |",
                f"| the artifact (Java, its committed configuration) | {tj.get('avg_jct', 0):.1f} | "
                f"{tj.get('wall_s')} | {tj.get('cpu_s')} |"]
        ap = dict(ap, wall_s=tp["wall_s"], cpu_s=tp["cpu_s"])
    out += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|",
            f"| AlloX+ average JCT within +-10 % of the committed 158.8 | "
            f"{ap.get('avg_jct', float('nan')):.1f} | {'yes' if ok else 'no'} |",
            "| order SRPT < SJF < AlloX+ < DRFExt < DRF < ES < DRF-FIFO kept | "
            + " < ".join(f"{rows[p]['avg_jct']:.0f}" for p in ORDER if p in rows)
            + f" | {'yes' if kept else 'no'} |",
            f"| run <= 60 s (AlloX+) | {ap.get('wall_s')} s wall, {ap.get('cpu_s')} s CPU"
            + (" (the side-by-side run)" if timing else "") + " | "
            f"{'yes' if ap.get('wall_s', 1e9) <= 60 else 'no'} |", ""]
    out += ["## The rules, and where alloc departs from the artifact", "",
            "Each policy's rule is written out in `alloc.sched.allox.rules`; they were read from "
            "the artifact's Java (run, never copied) and fixed before any run:", "",
            "* **AlloX+** (its committed configuration) is SJF over (job, GPU or CPU) pairs with "
            "a starvation guard: jobs that waited 500 units go first.  The artifact builds it "
            "with every user considered (alpha = 1) and compares estimates truncated to "
            "integers; alloc compares them exactly.  The gap of AlloX+ (and of SJF) to the "
            "committed figure is not explained by a rule found; candidates are that truncation "
            "(differences below one unit are ties, kept in the artifact's list order) and "
            "the order of ties.",
            "* **SRPT** ranks by the *remaining* estimated time; the artifact ranks by the "
            "original estimate (its preempted jobs keep their full estimate): one difference "
            "that can account for its SRPT being lower.",
            "* **DRFExt**: when no GPU is free the user's shortest-on-CPU job runs on a CPU node "
            "for *its* CPU time; the artifact starts that job with the time of the queue's "
            "GPU-shortest one.  beta is the plain mean over the jobs (the artifact adds 32 to "
            "the sum before dividing: 0.003 on 10,000 jobs).",
            "* **ES**: `allox-es` checks a user's share as the artifact does, as a (cores, GPUs, "
            "memory) vector with no cores in the GPU pass, so a user running a CPU job starts no "
            "GPU job; `allox-es (per kind)` shares each kind's slots on their own, the rule "
            "as stated -- and falls between SJF and DRFExt, out of the committed order.",
            "* **Profiling** runs as the artifact's: four runs per job (1 % and 2 % of its time "
            "on each kind, at least one unit, whole units), round-robin over users before "
            "anything else; a job is queued when every job that arrived with it is profiled; "
            "users' usage counts their profiling runs.",
            "* **AlloX** (the paper's matching, alpha = 0.1, at most 50 jobs per matching) has "
            "no committed output to compare with.", ""]
    if plot:
        out.append(f"![average JCT per policy]({Path(plot).name})")
        out.append("")
    return "\n".join(out) + "\n"


def make_plot(rows: dict, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = [p for p in (*POLICIES, *VARIANTS) if p in rows]
    ours = [rows[p]["avg_jct"] for p in names]
    theirs = [rows[p].get("committed") or 0 for p in names]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], ours, 0.4, label="alloc")
    ax.bar([i + 0.2 for i in x], theirs, 0.4, label="committed (artifact)", alpha=0.7)
    ax.set_yscale("log")
    ax.set_xticks(list(x), [n.replace("allox-", "") for n in names], fontsize=7, rotation=20)
    ax.set_ylabel("average JCT (trace units)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", default=None, help="a fetched copy of lenhattan86/allox_sim "
                    "(default: none, the bench skips)")
    ap.add_argument("--policy", default="all", help="one policy or 'all' (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default: 2)")
    ap.add_argument("--java", action="store_true", help="also run the artifact's committed "
                    "configuration, timed (default: off)")
    ap.add_argument("--out", default=None, help="write the JSON figures here (default: stdout)")
    ap.add_argument("--page", action="store_true", help="write bench/results/allox.md and the plot")
    ap.add_argument("--from-json", default=None, metavar="FILE",
                    help="--page: render the page from the JSON an earlier run wrote (--out)")
    ap.add_argument("--timing-json", default=None, metavar="FILE",
                    help="--page --from-json: add the side-by-side timing of a --java run's JSON")
    ap.add_argument("--md", default=str(ROOT / "bench" / "results" / "allox.md"),
                    help="--page: the page (default: bench/results/allox.md)")
    ap.add_argument("--plot", default=str(ROOT / "bench" / "results" / "allox_jct.png"),
                    help="--page: the plot ('' for none; default: bench/results/allox_jct.png)")
    a = ap.parse_args(argv)
    if a.from_json:
        doc = json.loads(Path(a.from_json).read_text())
        rows, java = doc["policies"], doc.get("artifact_run")
        cmd = (doc.get("command", "python bench/allox.py --artifact DIR") + " --out FILE`, "
               "then `python bench/allox.py --page --from-json FILE"
               + (" --timing-json FILE2" if a.timing_json else ""))
        timing = json.loads(Path(a.timing_json).read_text()) if a.timing_json else None
        Path(a.md).write_text(page(rows, java, cmd, a.plot or None, timing))
        if a.plot:
            make_plot(rows, a.plot)
        return 0
    if not a.artifact:
        print("skipped: no artifact copy (--artifact DIR, a fetched lenhattan86/allox_sim)")
        return 0
    artifact = Path(a.artifact)
    job_file = artifact / JOB_FILE
    if not job_file.is_file():
        print(f"error: {job_file}: no such file (the AlloX simulator's committed job file)",
              file=sys.stderr)
        return 2
    pols = POLICIES if a.policy == "all" else (a.policy,)
    bad = [p for p in pols if p not in POLICIES]
    if bad:
        print(f"error: --policy: expected one of {', '.join(POLICIES)} or all, got {bad[0]!r}",
              file=sys.stderr)
        return 2
    tasks = [(p, p, str(job_file), {}) for p in pols]
    if a.policy == "all":
        tasks += [(label, pol, str(job_file), params) for label, (pol, params) in VARIANTS.items()]
    t0 = time.perf_counter()
    try:
        if a.workers > 1 and len(tasks) > 1:
            with ProcessPoolExecutor(max_workers=a.workers) as pool:
                results = list(pool.map(run_policy, tasks))
        else:
            results = [run_policy(t) for t in tasks]
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = {}
    for r in results:
        r["committed"] = committed(artifact, r["policy"]) if r["policy"] in ARTIFACT_NAMES else None
        r["ratio"] = r["avg_jct"] / r["committed"] if r["committed"] else None
        rows[r["policy"]] = r
    java = run_java(artifact) if a.java else None
    cmd = ("python bench/allox.py --artifact DIR" + (f" --policy {a.policy}" if a.policy != "all"
                                                      else "") + (" --java" if a.java else ""))
    doc = {"command": cmd, "policies": rows, "order_kept": order_kept(rows),
           "wall_s": round(time.perf_counter() - t0, 2)}
    if java is not None:
        doc["artifact_run"] = java
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    if a.page:
        Path(a.md).write_text(page(rows, java, cmd + " --page", a.plot or None))
        if a.plot:
            make_plot(rows, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

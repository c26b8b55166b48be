"""Salus (Yu & Chowdhury, MLSys'20) on alloc's simulator: one GPU shared at
iteration granularity, GPU memory in lanes, the policies FIFO, SRTF, PACK and
FAIR; beside the paper's abstract, as a comparison (no headline bar).

    python bench/salus.py --artifact DIR [--seeds 0,1,2,3,4] [--out FILE]
    python bench/salus.py --artifact DIR --page     # the results page and plot

The profiles are Salus's ``tests/workloads.csv`` (Apache-2.0), read at run
time from a fetched copy of SymbioticLab/Salus (``--artifact DIR``) or a file
(``--workloads FILE``); without either the bench says so and skips (exit 0).
Each profile's memory is split into persistent and ephemeral parts from the
profiles themselves (`alloc.sched.salus.profiles`).

The training workload (fixed before any run, since the paper's is not in the
public record): ``--jobs`` (100) jobs, each a profile drawn uniformly with the
seed; Poisson arrivals whose mean gap is the profiles' mean JCT alone (an
offered load of 1 on the GPU); a 16 GB GPU.  ``--out FILE`` writes, per seed
and policy, ``avg_jct_s``, ``makespan_s``, ``peak_resident``, ``peak_lanes``
and ``wall_s``, and the mean ratio of FIFO's average JCT to each policy's.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402

#: The abstract's claims (MLSys'20): what Salus improves over not sharing the GPU.
CLAIMS = [("average JCT of training jobs (SRTF vs no sharing)", "3.19x"),
          ("GPU utilisation, hyper-parameter tuning", "2.38x"),
          ("GPU utilisation, inference (vs no sharing / vs MPS)", "42x / 7x")]


def training(profiles, jobs: int, seed: int):
    """The training workload of one seed: profiles and arrival times (s)."""
    rng = random.Random(seed)
    chosen = [rng.choice(profiles) for _ in range(jobs)]
    gap = sum(p.jct_s for p in profiles) / len(profiles)
    t, arrivals = 0.0, []
    for _ in range(jobs):
        t += rng.expovariate(1.0 / gap)
        arrivals.append(t)
    return chosen, arrivals


def run(profiles, jobs: int, seed: int, policy: str, memory_mb: float,
        max_resident: int = 40) -> dict:
    """One policy on one seed's workload."""
    from alloc.sched import get_policy
    from alloc.sched.salus.sim import mean, salus_cluster, workload
    from alloc.sim import simulate
    chosen, arrivals = training(profiles, jobs, seed)
    mech = get_policy("mechanism", f"salus-{policy}").build(memory_mb=memory_mb,
                                                          max_resident=max_resident)
    t0 = time.perf_counter()
    res = simulate(salus_cluster(memory_mb), workload(chosen, arrivals),
                   order=("fifo", {"preemptive": False}), placement="best-fit", mechanism=mech,
                   progress=mech.progress)
    tl = list(res.timeline())
    bad = mech.lanes.check()
    if bad:
        raise InputError(f"salus-{policy}: lanes broken: {bad[0]}")
    return {"seed": seed, "policy": policy, "avg_jct_s": mean(r["end_s"] - r["arrival_s"] for r in tl),
            "makespan_s": max(r["end_s"] for r in tl), "peak_resident": mech.peak_resident,
            "peak_lanes": mech.peak_lanes, "wall_s": round(time.perf_counter() - t0, 3)}


def page(rows, seeds, jobs, memory_mb, ratios, cmd, plot, unbounded, free) -> str:
    from alloc.sched.salus.sim import POLICIES
    load = os.getloadavg()[0]
    out = ["# Salus (MLSys'20): one GPU shared at iteration granularity, memory in lanes", "",
           f"Command: `{cmd}` (seeds {', '.join(map(str, seeds))}; load average {load:.1f} at "
           f"the end).", "",
           f"Workload (fixed before any run): {jobs} training jobs per seed, each one of Salus's "
           "99 profiles (`tests/workloads.csv`: 11 CNNs x 3 batch sizes x 1, 5, 10 minutes) "
           "drawn uniformly; Poisson arrivals with a mean gap of the profiles' mean JCT alone "
           f"(offered load 1); a {memory_mb / 1024:.0f} GB GPU.  Memory: persistent = the "
           "intercept of each model's peak over its batch size, ephemeral = the rest; a lane "
           "holds its jobs' persistent memory plus the largest ephemeral one.  Switching costs "
           "nothing (iteration granularity); jobs side by side in lanes split the GPU's compute "
           "equally (the profiles carry no per-job utilisation).", "",
           "| policy | avg JCT (s), mean over seeds | range | FIFO / policy | peak resident | "
           "peak lanes |", "|---|---|---|---|---|---|"]
    for pol in POLICIES:
        sel = [r for r in rows if r["policy"] == pol]
        vals = [r["avg_jct_s"] for r in sel]
        out.append(f"| {pol} | {sum(vals) / len(vals):,.0f} | {min(vals):,.0f}-{max(vals):,.0f} | "
                   f"{ratios[pol]:.2f} | {max(r['peak_resident'] for r in sel)} | "
                   f"{max(r['peak_lanes'] for r in sel)} |")
    vals = [r["avg_jct_s"] for r in unbounded]
    out.append(f"| srtf, memory unlimited | {sum(vals) / len(vals):,.0f} | {min(vals):,.0f}-"
               f"{max(vals):,.0f} | {free:.2f} | {max(r['peak_resident'] for r in unbounded)} | "
               f"{max(r['peak_lanes'] for r in unbounded)} |")
    same = all(abs(a["avg_jct_s"] - b["avg_jct_s"]) < 1e-6 * a["avg_jct_s"]
               for a in rows if a["policy"] == "pack" for b in rows
               if b["policy"] == "fair" and b["seed"] == a["seed"])
    if same:
        out += ["", "PACK and FAIR coincide here: while memory lasts every job opens a lane of "
                "its own (peak lanes = peak residents), lanes run side by side with equal "
                "shares, and a job that finds no room waits rather than fitting a lane's "
                "ephemeral region; so no two jobs ever took turns within a lane."]
    out += ["", "## Beside the paper's abstract (a comparison, no bar)", "",
            "| claim (abstract) | paper | this simulation |", "|---|---|---|",
            f"| {CLAIMS[0][0]} | {CLAIMS[0][1]} | {ratios['srtf']:.2f}x (mean of the per-seed "
            "FIFO / SRTF ratios) |",
            f"| {CLAIMS[1][0]} | {CLAIMS[1][1]} | not modelled: the profiles give no GPU "
            "utilisation of a job alone, so packing cannot raise throughput here |",
            f"| {CLAIMS[2][0]} | {CLAIMS[2][1]} | not modelled: no inference profiles |", "",
            "Why the JCT gain differs: the paper's workload (arrivals, job mix) is not in the "
            "public record; the gain of SRTF over FIFO grows with the spread of job lengths "
            "queued behind a long job, and here memory caps how many jobs can be resident (and "
            "so preemptible) at once -- see the peak residents.", ""]
    if plot:
        out += [f"![average JCT per policy and seed]({Path(plot).name})", ""]
    return "\n".join(out) + "\n"


def make_plot(rows, seeds, path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    from alloc.sched.salus.sim import POLICIES
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    w = 0.8 / len(POLICIES)
    for i, pol in enumerate(POLICIES):
        vals = [next(r["avg_jct_s"] for r in rows if r["policy"] == pol and r["seed"] == s)
                for s in seeds]
        ax.bar([s + (i - 1.5) * w for s in range(len(seeds))], vals, w, label=pol)
    ax.set_xticks(range(len(seeds)), [f"seed {s}" for s in seeds])
    ax.set_ylabel("average JCT (s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", default=None, help="a fetched copy of SymbioticLab/Salus")
    ap.add_argument("--workloads", default=None, help="a workloads.csv (instead of --artifact)")
    ap.add_argument("--jobs", type=int, default=100, help="jobs per seed (default: 100)")
    ap.add_argument("--seeds", default="0,1,2,3,4", help="seeds (default: 0,1,2,3,4)")
    ap.add_argument("--memory-mb", type=float, default=16384.0, help="GPU memory (default: 16384)")
    ap.add_argument("--out", default=None, help="write the JSON figures here (default: stdout)")
    ap.add_argument("--page", action="store_true", help="write bench/results/salus.md and the plot")
    ap.add_argument("--md", default=str(ROOT / "bench" / "results" / "salus.md"),
                    help="--page: the page (default: bench/results/salus.md)")
    ap.add_argument("--plot", default=str(ROOT / "bench" / "results" / "salus_jct.png"),
                    help="--page: the plot ('' for none; default: bench/results/salus_jct.png)")
    a = ap.parse_args(argv)
    src = Path(a.workloads) if a.workloads else (Path(a.artifact) / "tests" / "workloads.csv"
                                                  if a.artifact else None)
    if src is None:
        print("skipped: no profiles (--artifact DIR, a fetched SymbioticLab/Salus, or "
              "--workloads FILE)")
        return 0
    from alloc.sched.salus.profiles import read_workloads
    from alloc.sched.salus.sim import POLICIES
    try:
        if not src.is_file():
            raise InputError(f"{src}: no such file (Salus's workloads.csv)")
        if a.jobs < 1:
            raise InputError(f"--jobs: expected an integer >= 1, got {a.jobs}")
        seeds = [int(s) for s in a.seeds.split(",")]
        profiles = read_workloads(src)
        rows = [run(profiles, a.jobs, s, pol, a.memory_mb) for s in seeds for pol in POLICIES]
        unbounded = [run(profiles, a.jobs, s, "srtf", 1e12, 1000) for s in seeds]
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fifo = {r["seed"]: r["avg_jct_s"] for r in rows if r["policy"] == "fifo"}
    ratios = {pol: sum(fifo[r["seed"]] / r["avg_jct_s"] for r in rows if r["policy"] == pol)
              / len(seeds) for pol in POLICIES}
    free = sum(fifo[r["seed"]] / r["avg_jct_s"] for r in unbounded) / len(seeds)
    doc = {"runs": rows, "fifo_over_policy": ratios, "srtf_memory_unlimited": unbounded,
           "fifo_over_srtf_memory_unlimited": free, "claims": dict(CLAIMS)}
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    if a.page:
        cmd = "python bench/salus.py --artifact DIR --page"
        Path(a.md).write_text(page(rows, seeds, a.jobs, a.memory_mb, ratios, cmd, a.plot or None,
                                   unbounded, free))
        if a.plot:
            make_plot(rows, seeds, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

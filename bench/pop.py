"""Reproduce POP's Fig. 2 (Narayanan et al., SOSP'21): Gavel's max-min fairness
with space sharing on one static set of jobs, exact and split into k parts,
against Gandiva's random pairing.

    python bench/pop.py --jobs 512 --seed 0 --k 4 --out pop.json
    python bench/pop.py --figure            # 256, 512, 2,048 jobs; k = 2, 4, 8; the page

The instance, as POP's artifact builds it: ``N`` single-GPU jobs whose model
configurations are drawn uniformly from Gavel's 26 (read from
``../shared/data/reference/gavel_throughputs.json``), weight 1, on ``N // 4``
GPUs of each of V100, P100 and K80; every two jobs may share GPUs at their
measured co-located rates (``N(N-1)/2`` pairs).  POP-k splits the jobs
round-robin (job i to part i mod k; ``--partition random`` draws each job's
part) with ``floor(n/k)`` GPUs of each type per part.  Quality is each job's
effective throughput over its throughput in the unpartitioned optimum, mean
and standard deviation over the jobs; Gandiva's pairing is the baseline.

Every part and the exact problem are solved the same way (``--inner``,
default ``water-filling``: the leximin optimum, a max-min optimum whose
values are unique, so that the per-job ratio is the algorithm's and not the
LP vertex's) and, by default, at the size of the job classes
(`alloc.sched.pop.classes`: the LP of every job pair reduced exactly by the
symmetry of jobs of one configuration, with a certificate for the full LP).
``--formulation jobs`` solves the job-level LP instead (every pair column,
priced in by column generation: `alloc.shares`), where POP's parts pay off.

``--out FILE`` writes ``{"exact_s", "pop_s", "mean_ratio", "std_ratio",
"gandiva_ratio", "zero_throughput_jobs"}`` and more (``pop_s`` is POP's
runtime: partitioning plus the slowest part, the parts side by side as in
the artifact's harness; ``pop_wall_s`` the call on this machine;
``zero_throughput_jobs`` counts Gandiva's jobs left with no throughput).
``--figure`` writes bench/results/pop.md and bench/results/pop_fig2.png.
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

import numpy as np  # noqa: E402

from alloc.errors import InputError  # noqa: E402
from alloc.sched.pop.classes import solve_classes  # noqa: E402
from alloc.sched.pop.gandiva import gandiva_pairing  # noqa: E402
from alloc.sched.pop.partition import pop_shares, pop_solve, ratio_stats  # noqa: E402
from alloc.sched.pop.problem import fig2_problem  # noqa: E402

#: The artifact's figures (index_systems.md): ECOS on this kind of machine
#: (256, 512 jobs) and the artifact's MOSEK log (2,048 jobs, m5.8xlarge).
#: (runtime s, mean ratio, std) per k; Gandiva's likewise.
ARTIFACT = {
    256: {"solver": "ECOS, 2 loaded cores", "exact_s": 23.1,
          2: (1.25, 0.9981, 0.013), 4: (0.44, 0.9947, 0.012), 8: (0.21, 0.9888, 0.014),
          "gandiva": (1.2, 0.54, 0.17)},
    512: {"solver": "ECOS, 2 loaded cores", "exact_s": 159.6,
          2: (24.4, 0.9979, 0.016), 4: (5.9, 0.9963, 0.017), 8: (2.2, 0.9918, 0.022),
          "gandiva": (5.9, 0.54, 0.17), "zero_throughput_jobs": 14},
    2048: {"solver": "MOSEK, m5.8xlarge (artifact log)", "exact_s": 285.6,
           2: (62.2, 0.9997, 0.005), 4: (17.5, 0.9993, 0.008), 8: (12.6, 0.9983, 0.013),
           "gandiva": (47.7, 0.529, 0.169)},
}
#: The targets of the reproduction.
TARGETS = {"mean_ratio_min": 0.99, "gandiva": (0.54, 0.08), "exact_speedup_512": 10.0,
           "seconds_2048": 60.0}


def load_table():
    """Gavel's measured throughputs, from ``$ALLOC_SHARED`` or ``../shared``."""
    from alloc.sim.gavel import ThroughputTable, throughputs_path
    path = throughputs_path()
    if not path.is_file():
        raise InputError(f"{path}: no such file (Gavel's throughputs; set ALLOC_SHARED to the "
                         f"shared folder)")
    return ThroughputTable.load(path)


def _load() -> float:
    return os.getloadavg()[0]


def run(table, jobs: int, seed: int, k: int, *, partition: str = "round-robin",
        inner: str = "water-filling", parallel: str = "process", formulation: str = "classes",
        gandiva: bool = True) -> dict:
    """One Fig. 2 point: exact, POP-k and Gandiva on one instance."""
    p = fig2_problem(table, jobs, seed)
    load0 = _load()
    if formulation == "classes":
        t0 = time.perf_counter()
        ex = solve_classes(p, inner)
        exact_s = time.perf_counter() - t0
        exact_eff, status, level, bound = ex.effective, ex.status.value, ex.objective, ex.bound
        pop = pop_solve(p, k, how=partition, inner=inner, seed=seed, parallel=parallel)
        pop_eff = pop.shares.effective
        pop_s, pop_wall, parts_s = pop.runtime_s, pop.wall_s, list(pop.part_s)
        extra = {"exact_classes": ex.stats["classes"], "exact_columns": ex.stats["columns"],
                 "exact_rounds": ex.stats["rounds"], "exact_pairs_used": int(len(ex.pa)),
                 "pop_part_levels": [round(float(x), 6) for x in pop.part_levels]}
    elif formulation == "jobs":
        from alloc.shares import check, solve_shares
        t0 = time.perf_counter()
        sp = p.to_shares()
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ex = solve_shares(sp, inner, time_limit=3600)
        exact_s = time.perf_counter() - t0
        exact_eff, status, level, bound = ex.effective, ex.status.value, ex.objective, ex.bound
        X, Y, info = pop_shares(sp, k, inner, how=partition, seed=seed, parallel=parallel,
                                time_limit=3600)
        pop_eff = check.effective(sp, X, Y)
        pop_s, pop_wall, parts_s = info["runtime_s"], info["wall_s"], info["part_s"]
        extra = {"pairs": len(sp.pairs), "build_s": round(build_s, 3)}
    else:
        raise InputError(f"--formulation: expected classes or jobs, got {formulation!r}")
    mean, std = ratio_stats(pop_eff, exact_eff)
    out = {"jobs": jobs, "seed": seed, "k": k, "partition": partition, "inner": inner,
           "formulation": formulation, "parallel": parallel,
           "exact_s": round(exact_s, 4), "pop_s": round(pop_s, 4), "mean_ratio": mean,
           "std_ratio": std, "exact_status": status, "exact_level": level, "exact_bound": bound,
           "pop_wall_s": round(pop_wall, 4), "pop_part_s": [round(x, 4) for x in parts_s],
           "pop_zero_throughput_jobs": int((pop_eff <= 0).sum()), **extra}
    if gandiva:
        t0 = time.perf_counter()
        g = gandiva_pairing(p, seed)
        gm, gs = ratio_stats(g.effective, exact_eff)
        out |= {"gandiva_s": round(time.perf_counter() - t0, 4), "gandiva_ratio": gm,
                "gandiva_std": gs, "zero_throughput_jobs": int((g.effective <= 0).sum())}
    out["load_start"], out["load_end"] = round(load0, 2), round(_load(), 2)
    return out


# ------------------------------------------------------------------ figure
def figure(table, jobs_list, seeds, ks, job_level_max: int, md: str, plot: str) -> None:
    rows = []
    t_all = time.perf_counter()
    for n in jobs_list:
        for seed in seeds:
            for k in ks:
                for how in ("round-robin", "random"):
                    r = run(table, n, seed, k, partition=how, gandiva=(how == "round-robin"))
                    rows.append(r)
                    print(json.dumps({x: r[x] for x in ("jobs", "seed", "k", "partition",
                                                         "exact_s", "pop_s", "mean_ratio")}),
                          flush=True)
            if n <= job_level_max:
                for k in ks:
                    r = run(table, n, seed, k, formulation="jobs", gandiva=False)
                    rows.append(r)
                    print(json.dumps({x: r[x] for x in ("jobs", "seed", "k", "formulation",
                                                         "exact_s", "pop_s", "mean_ratio")}),
                          flush=True)
    wall = time.perf_counter() - t_all
    Path(md).write_text(_page(rows, jobs_list, seeds, ks, job_level_max, wall))
    if plot:
        _plot(rows, jobs_list, plot)


def _agg(rows, **match):
    sel = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return sel


def _fmt_ratio(sel, key="mean_ratio", std="std_ratio"):
    if not sel:
        return "-"
    m = np.mean([r[key] for r in sel])
    s = np.mean([r[std] for r in sel])
    lo, hi = min(r[key] for r in sel), max(r[key] for r in sel)
    rng = f" ({lo:.4f}-{hi:.4f})" if len(sel) > 1 else ""
    return f"{m:.4f} ± {s:.3f}{rng}"


def _fmt_s(vals):
    if not vals:
        return "-"
    return f"{np.median(vals):.3f}" + (f" ({min(vals):.3f}-{max(vals):.3f})" if len(vals) > 1 else "")


def _page(rows, jobs_list, seeds, ks, job_level_max, wall) -> str:
    load = [r["load_start"] for r in rows] + [r["load_end"] for r in rows]
    cmd = ("python bench/pop.py --figure --jobs-list " + ",".join(map(str, jobs_list))
           + " --seeds " + ",".join(map(str, seeds)) + f" --job-level-max {job_level_max}")
    out = ["# POP (SOSP'21), Fig. 2: max-min fairness with space sharing, exact vs POP-k vs Gandiva",
           "",
           f"Command: `{cmd}` (seeds {', '.join(map(str, seeds))}; 2 cores; load average "
           f"{min(load):.1f}-{max(load):.1f} during the run; {wall:.0f} s in all).",
           "",
           "Instance (POP's artifact, `cluster_scheduling/figure2.py`): N single-GPU jobs, "
           "configurations uniform over Gavel's 26 "
           "(`../shared/data/reference/gavel_throughputs.json`, the artifact's "
           "`simulation_throughputs.json` value for value), weight 1; N/4 GPUs of each of "
           "V100, P100, K80; every two jobs may share GPUs (N(N-1)/2 pairs: 130,816 at 512 jobs, "
           "2,096,128 at 2,048).  POP-k: parts round-robin (job i to part i mod k, the "
           "artifact's harness) or random (each job's part drawn uniformly), floor(n/k) GPUs "
           "of each type per part.  Ratio: each job's effective throughput over its "
           "throughput in the unpartitioned optimum; mean ± standard deviation over the jobs "
           "(first figure: the mean of the per-seed figures; in brackets the range over "
           "seeds).  Runtime: POP's is the partitioning plus the slowest part (the parts side "
           "by side, as the artifact's harness measures it); `wall` is the call on this "
           "machine with one worker process per part (fork).",
           "",
           "Exact solve: the leximin (water-filling) optimum of Gavel's max-min LP at the size "
           "of the job classes (`alloc.sched.pop.classes`), certified for the LP with every "
           "pair column; the same solver for every part.  Chosen before any run because the "
           "max-min LP's optimum is not unique in the jobs above the minimum, and the per-job "
           "ratio must not depend on which optimal vertex (or interior point) a solver "
           "returns.  In every instance here the first LP already froze every class: the "
           "max-min optimum gives every job the same normalised share, so max-min and leximin "
           "coincide.",
           ""]
    for n in jobs_list:
        art = ARTIFACT.get(n, {})
        out += [f"## {n:,} jobs", "",
                "| method | runtime (s), median (range) | wall (s) | mean ratio ± std | "
                "artifact runtime (s) | artifact ratio ± std |",
                "|---|---|---|---|---|---|"]
        ex = _agg(rows, jobs=n, formulation="classes", partition="round-robin")
        out.append(f"| exact (classes) | {_fmt_s([r['exact_s'] for r in ex])} | - | 1 | "
                   f"{art.get('exact_s', '-')} | 1 |")
        for k in ks:
            for how in ("round-robin", "random"):
                sel = _agg(rows, jobs=n, formulation="classes", partition=how, k=k)
                a = art.get(k) if how == "round-robin" else None
                out.append(f"| POP-{k} {how} (classes) | {_fmt_s([r['pop_s'] for r in sel])} | "
                           f"{_fmt_s([r['pop_wall_s'] for r in sel])} | {_fmt_ratio(sel)} | "
                           + (f"{a[0]} | {a[1]:.4f} ± {a[2]:.3f} |" if a else "- | - |"))
        gsel = [r for r in ex if r["k"] == ks[0]]
        ga = art.get("gandiva")
        zero = ", ".join(str(r["zero_throughput_jobs"]) for r in gsel)
        out.append(f"| Gandiva | {_fmt_s([r['gandiva_s'] for r in gsel])} | - | "
                   f"{_fmt_ratio(gsel, 'gandiva_ratio', 'gandiva_std')} | "
                   + (f"{ga[0]} | {ga[1]:.3f} ± {ga[2]:.2f} |" if ga else "- | - |"))
        jl = _agg(rows, jobs=n, formulation="jobs")
        if jl:
            out.append(f"| exact (job-level LP, column generation) | "
                       f"{_fmt_s([r['exact_s'] for r in jl if r['k'] == ks[0]])} | - | 1 | - | - |")
            for k in ks:
                sel = [r for r in jl if r["k"] == k]
                out.append(f"| POP-{k} round-robin (job-level LP) | "
                           f"{_fmt_s([r['pop_s'] for r in sel])} | "
                           f"{_fmt_s([r['pop_wall_s'] for r in sel])} | {_fmt_ratio(sel)} | - | - |")
        out.append("")
        out.append(f"Gandiva's jobs with zero throughput per seed: {zero}"
                   + (f" (artifact: {art['zero_throughput_jobs']})" if "zero_throughput_jobs" in art
                      else "") + f".  Artifact solver: {art.get('solver', '-')}.")
        out.append("")
    out += _targets(rows)
    out += ["![Fig. 2: runtime and effective throughput over the exact optimum](pop_fig2.png)", ""]
    return "\n".join(out) + "\n"


def _targets(rows) -> list[str]:
    out = ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for k in (2, 4, 8):
        sel = _agg(rows, jobs=512, formulation="classes", partition="round-robin", k=k)
        if sel:
            lo = min(r["mean_ratio"] for r in sel)
            out.append(f"| POP-{k} at 512 jobs: mean ratio >= 0.99 | {lo:.4f} (worst seed) | "
                       f"{'yes' if lo >= 0.99 else 'no'} |")
    g = [r for r in _agg(rows, jobs=512, formulation="classes", partition="round-robin", k=2)]
    if g:
        vals = [r["gandiva_ratio"] for r in g]
        ok = all(abs(v - 0.54) <= 0.08 for v in vals)
        out.append(f"| Gandiva at 512 jobs: 0.54 ± 0.08 | {min(vals):.3f}-{max(vals):.3f} | "
                   f"{'yes' if ok else 'no'} |")
    ex = _agg(rows, jobs=512, formulation="classes", partition="round-robin")
    if ex:
        worst = max(r["exact_s"] for r in ex)
        out.append(f"| exact at 512 jobs >= 10x faster than 159.6 s | {worst:.3f} s (slowest), "
                   f"{159.6 / worst:,.0f}x | {'yes' if 159.6 / worst >= 10 else 'no'} |")
    big = _agg(rows, jobs=2048, formulation="classes", partition="round-robin")
    if big:
        worst_ex = max(r["exact_s"] for r in big)
        worst_pop = max(r["pop_s"] for r in big)
        worst_wall = max(r["pop_wall_s"] for r in big)
        ok = max(worst_ex, worst_pop, worst_wall) <= 60
        out.append(f"| 2,048 jobs: exact and k <= 8 within 60 s each | exact {worst_ex:.3f} s, "
                   f"POP {worst_pop:.3f} s (wall {worst_wall:.3f} s), slowest | "
                   f"{'yes' if ok else 'no'} |")
    return out + [""]


def _plot(rows, jobs_list, path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(2, len(jobs_list), figsize=(4.2 * len(jobs_list), 6.5), squeeze=False)
    for c, n in enumerate(jobs_list):
        labels, times, means, stds = [], [], [], []
        ex = _agg(rows, jobs=n, formulation="classes", partition="round-robin")
        labels.append("exact")
        times.append(np.median([r["exact_s"] for r in ex]))
        means.append(1.0)
        stds.append(0.0)
        for k in (2, 4, 8):
            sel = _agg(rows, jobs=n, formulation="classes", partition="round-robin", k=k)
            if sel:
                labels.append(f"POP-{k}")
                times.append(np.median([r["pop_s"] for r in sel]))
                means.append(np.mean([r["mean_ratio"] for r in sel]))
                stds.append(np.mean([r["std_ratio"] for r in sel]))
        g = [r for r in ex if "gandiva_ratio" in r]
        if g:
            labels.append("Gandiva")
            times.append(np.median([r["gandiva_s"] for r in g]))
            means.append(np.mean([r["gandiva_ratio"] for r in g]))
            stds.append(np.mean([r["gandiva_std"] for r in g]))
        art = ARTIFACT.get(n, {})
        art_t = [art.get("exact_s")] + [art.get(k, (None,))[0] for k in (2, 4, 8)] + \
            [art.get("gandiva", (None,))[0]]
        x = np.arange(len(labels))
        ax = axes[0][c]
        ax.bar(x - 0.2, times, 0.4, label="alloc (classes)")
        ax.bar(x + 0.2, [t if t is not None else 0 for t in art_t[:len(labels)]], 0.4,
               label="artifact", alpha=0.7)
        ax.set_yscale("log")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title(f"{n:,} jobs: runtime (s)")
        ax.legend(fontsize=7)
        ax = axes[1][c]
        ax.bar(x, means, 0.6, yerr=stds, capsize=3)
        ax.set_ylim(0, 1.2)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title("effective throughput / exact")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=512, help="jobs (default: 512)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the instance and of Gandiva's "
                    "pairing (default: 0)")
    ap.add_argument("--k", type=int, default=4, help="POP's parts (default: 4)")
    ap.add_argument("--partition", default="round-robin", choices=("round-robin", "random"),
                    help="how jobs are split (default: round-robin, as the artifact's Fig. 2)")
    ap.add_argument("--inner", default="water-filling", choices=("water-filling", "max-min"),
                    help="the policy every part and the exact problem solve (default: "
                    "water-filling)")
    ap.add_argument("--parallel", default="process", choices=("process", "ray", "serial"),
                    help="where the parts run (default: process)")
    ap.add_argument("--formulation", default="classes", choices=("classes", "jobs"),
                    help="class-size LP or the job-level LP (default: classes)")
    ap.add_argument("--out", default=None, help="write the JSON figures here (default: stdout)")
    ap.add_argument("--figure", action="store_true", help="run the Fig. 2 sweep and write the page")
    ap.add_argument("--jobs-list", default="256,512,2048", help="--figure: job counts "
                    "(default: 256,512,2048)")
    ap.add_argument("--seeds", default="0,1,2", help="--figure: seeds (default: 0,1,2)")
    ap.add_argument("--job-level-max", type=int, default=512,
                    help="--figure: job-level LP runs up to this many jobs (default: 512)")
    ap.add_argument("--md", default=str(ROOT / "bench" / "results" / "pop.md"),
                    help="--figure: the page (default: bench/results/pop.md)")
    ap.add_argument("--plot", default=str(ROOT / "bench" / "results" / "pop_fig2.png"),
                    help="--figure: the plot ('' for none; default: bench/results/pop_fig2.png)")
    a = ap.parse_args(argv)
    try:
        table = load_table()
        if a.figure:
            figure(table, [int(x) for x in a.jobs_list.split(",")],
                   [int(x) for x in a.seeds.split(",")], (2, 4, 8), a.job_level_max, a.md, a.plot)
            return 0
        if a.jobs < 1 or a.k < 1:
            raise InputError(f"--jobs and --k: expected integers >= 1, got {a.jobs} and {a.k}")
        out = run(table, a.jobs, a.seed, a.k, partition=a.partition, inner=a.inner,
                  parallel=a.parallel, formulation=a.formulation)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(out, indent=1) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

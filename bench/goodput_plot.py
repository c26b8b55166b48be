"""Collect the goodput benches' outputs into one JSON and two figures.

    python bench/goodput_plot.py --runs DIR --out-dir bench/results

``DIR`` holds the files the runs wrote (the names the commands in
``bench/results/goodput.md`` give them): ``pollux_<policy>_w6*.json``
(bench/pollux.py), ``sia_<policy>_<N>.json`` (bench/sia.py),
``rounds_sia_w1.jsonl`` and ``rounds_pollux240_w6.jsonl``
(bench/goodput_rounds.py) and ``exact_time.json``.  Writes
``goodput.json`` (every run's figures, Sia's pooled over its workloads),
``goodput_jct.png`` (average JCT beside the artifacts' figures) and
``goodput_rounds.png`` (by how much the exact solver's objective beats
Pollux's search and Sia's program on the same rounds, per round) into ``--out-dir``.  Published
figures are the protocol's (Pollux artifact's stored and measured runs, Sia
artifact's runs on this kind of machine).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

#: The artifacts' figures (s) the runs stand beside (the protocol, section 4).
PUBLISHED = {
    "pollux/tiresias": 3469.69, "pollux/optimus": 5301.88, "pollux/pollux60": 2446.13,
    "pollux/pollux240": 2693.24, "sia/sia": 0.677 * 3600, "sia/gavel": 2.037 * 3600,
}


def collect(runs: Path) -> dict:
    """Every run's figures, keyed ``pollux/<name>`` or ``sia/<policy>/<N>``,
    plus ``sia/<policy>`` pooled over the workloads found."""
    out: dict = {}
    for f in sorted(runs.glob("pollux_*.json")):
        name = f.stem[len("pollux_"):].replace("_w6", "").replace("_s0", "")
        out[f"pollux/{name}"] = json.loads(f.read_text())
    by: dict = {}
    for f in sorted(runs.glob("sia_*_*.json")):
        _, pol, n = f.stem.split("_")
        r = json.loads(f.read_text())
        out[f"sia/{pol}/{n}"] = r
        by.setdefault(pol, []).append(r)
    for pol, rs in by.items():
        # pooled: every job's JCT counts once (equal job counts: the mean of means)
        out[f"sia/{pol}"] = {
            "workloads": len(rs),
            "avg_jct_s": sum(r["avg_jct_s"] * r["jobs"] for r in rs) / sum(r["jobs"] for r in rs),
            "avg_jct_h": sum(r["avg_jct_s"] * r["jobs"] for r in rs) / sum(r["jobs"] for r in rs)
            / 3600,
            "restarts_per_job": statistics.mean(r["restarts_per_job"] for r in rs),
            "gpu_hours_per_job": statistics.mean(r["gpu_hours_per_job"] for r in rs),
            "policy_ms_median": statistics.median(r["policy_ms_median"] for r in rs),
            "wall_s_max": max(r["wall_s"] for r in rs)}
    for k, v in PUBLISHED.items():
        if k in out:
            out[k]["artifact_avg_jct_s"] = v
            out[k]["vs_artifact"] = out[k]["avg_jct_s"] / v - 1.0
    return out


def rounds(runs: Path) -> dict:
    """The per-round comparisons (lists of rows)."""
    res = {}
    for name in ("rounds_sia_w1.jsonl", "rounds_pollux240_w6.jsonl"):
        f = runs / name
        if f.is_file():
            res[name] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return res


def plot(figs: dict, rows: dict, out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = []
    keys = [k for k in ("pollux/tiresias", "pollux/optimus", "pollux/pollux60",
                        "pollux/pollux240", "pollux/exact60", "sia/sia", "sia/gavel", "sia/exact")
            if k in figs]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], [figs[k]["avg_jct_s"] / 3600 for k in keys], 0.4,
           label="alloc")
    ax.bar([x + 0.2 for x in xs], [PUBLISHED.get(k, float("nan")) / 3600 for k in keys], 0.4,
           label="artifact")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(keys, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("average JCT (h)")
    ax.set_title("Pollux workload-6 (16x4 T4) and Sia saturn 1-3 pooled")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "goodput_jct.png", dpi=110)
    plt.close(fig)
    names.append("goodput_jct.png")
    if rows:
        fig, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 3.5))
        axes = [axes] if len(rows) == 1 else list(axes)
        for ax, (name, rs) in zip(axes, rows.items()):
            t = [r["t"] / 3600 for r in rs]
            if name.startswith("rounds_sia"):
                gain = [100 * (r["sia_objective"] - r["exact_objective"])
                        / max(abs(r["sia_objective"]), 1e-12) for r in rs]
                ax.set_title("Sia's program vs exact, saturn workload-1", fontsize=9)
            else:
                gain = [100 * (r["exact_fitness"] - r["ga_fitness"])
                        / max(abs(r["ga_fitness"]), 1e-12) for r in rs]
                ax.set_title("Pollux's search vs exact, workload-6, 240 s", fontsize=9)
            ax.scatter(t, gain, s=6)
            ax.axhline(0.0, lw=0.6, color="grey")
            ax.set_xlabel("time (h)")
            ax.set_ylabel("exact's objective better by (%)")
        fig.tight_layout()
        fig.savefig(out / "goodput_rounds.png", dpi=110)
        plt.close(fig)
        names.append("goodput_rounds.png")
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", required=True, help="folder of the runs' output files")
    ap.add_argument("--out-dir", required=True, help="where goodput.json and the PNGs go")
    args = ap.parse_args(argv)
    runs, out = Path(args.runs), Path(args.out_dir)
    if not runs.is_dir():
        print(f"error: --runs {runs}: not a folder", file=sys.stderr)
        return 2
    figs = collect(runs)
    rows = rounds(runs)
    for name, rs in rows.items():
        if name.startswith("rounds_sia"):
            worse = sum(r["exact_objective"] > r["sia_objective"] + 1e-6 for r in rs)
            better = sum(r["exact_objective"] < r["sia_objective"] - 1e-6 for r in rs)
        else:
            worse = sum(r["exact_fitness"] < r["ga_fitness"] - 1e-9 for r in rs)
            better = sum(r["exact_fitness"] > r["ga_fitness"] + 1e-9 for r in rs)
        figs[name] = {"rounds": len(rs), "exact_worse": worse, "exact_better": better,
                      "exact_optimal": sum(r["status"] == "optimal" for r in rs),
                      "exact_s_median": statistics.median(r["exact_s"] for r in rs)}
    t = runs / "exact_time.json"
    if t.is_file():
        tt = json.loads(t.read_text())
        figs["exact_time_160"] = {k: tt[k] for k in tt if k != "rounds"}
    out.mkdir(parents=True, exist_ok=True)
    (out / "goodput.json").write_text(json.dumps(figs, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: v.get("avg_jct_s", v) for k, v in figs.items()}, indent=1))
    print(plot(figs, rows, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

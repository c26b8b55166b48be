"""Metrics of a simulation: JCT statistics, makespan, utilisation; plots.

``makespan_s`` is the time from the first arrival to the last completion among
the measured jobs.  A run stopped by ``max_time_s`` before every measured job
finished reports ``unfinished`` (measured jobs not done, arrived or not) and
``censored_mean_jct_s``: the mean over the finished jobs and the arrived
unfinished ones, counted with JCT = end time - arrival (a lower bound on the
true mean when ``unfinished`` counts only arrived jobs).  Utilisation is the allocated fraction of each resource,
time-weighted within each round (a job that finishes mid-round stops counting
at its finish time).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def percentile(values, q: float) -> float:
    """The q-th percentile of ``values`` (linear interpolation; 0 when empty)."""
    if len(values) == 0:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=float), q))


def summarize(res) -> dict:
    """Mean, median, p99 JCT, makespan, utilisation and counts of a result."""
    jcts = list(res.jct.values())
    util = np.asarray(res.util, dtype=float) if res.util else np.zeros((0, 4))
    out = {
        "jobs_measured": len(jcts),
        "mean_jct_s": float(np.mean(jcts)) if jcts else 0.0,
        "p50_jct_s": percentile(jcts, 50),
        "p99_jct_s": percentile(jcts, 99),
        "p999_jct_s": percentile(jcts, 99.9),
        "makespan_s": float(res.makespan_s),
        "rounds": int(res.rounds),
        "end_time_s": float(res.end_time_s),
        "wall_time_s": float(res.wall_time_s),
        "mean_util": {
            "gpu": float(util[:, 1].mean()) if len(util) else 0.0,
            "cpu": float(util[:, 2].mean()) if len(util) else 0.0,
            "mem": float(util[:, 3].mean()) if len(util) else 0.0,
        },
    }
    pend = getattr(res, "pending", {}) or {}
    cens = jcts + [res.end_time_s - a for a in pend.values()]
    out["unfinished"] = int(res.stats.get("unfinished", 0))
    out["censored_mean_jct_s"] = float(np.mean(cens)) if cens else 0.0
    out["stats"] = {k: v for k, v in res.stats.items()}
    return out


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:  # pragma: no cover - optional dependency
        return None


def _save(plt, fig, ax, path: str) -> bool:
    """Legend, layout, write the PNG and release the figure."""
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_jct_cdf(results: Mapping[str, Any], path: str) -> bool:
    """CDF of JCT (hours) of several runs, one line per label; False when
    matplotlib is missing."""
    plt = _plt()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, res in results.items():
        x = np.sort(np.asarray(list(res.jct.values()), dtype=float)) / 3600.0
        if len(x):
            ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("JCT (hours)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    return _save(plt, fig, ax, path)


def plot_utilisation(res, path: str, title: str = "") -> bool:
    """Allocated GPU / CPU / memory fraction over time."""
    plt = _plt()
    if plt is None or not res.util:
        return False
    u = np.asarray(res.util, dtype=float)
    fig, ax = plt.subplots(figsize=(6, 3))
    for k, name in ((1, "GPU"), (2, "CPU"), (3, "memory")):
        ax.plot(u[:, 0] / 3600.0, u[:, k], label=name, lw=0.8)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("allocated fraction")
    ax.set_ylim(0, 1.05)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(plt, fig, ax, path)


def plot_lines(xs, series: Mapping[str, list], path: str, xlabel: str, ylabel: str,
               title: str = "", marks: Mapping[str, float] | None = None) -> bool:
    """Plot one line per series against ``xs`` into a PNG (False without
    matplotlib); ``marks`` adds labelled dashed vertical lines at those x."""
    plt = _plt()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, ys in series.items():
        ax.plot(xs[:len(ys)], ys, marker="o", label=label)
    for (label, x), style in zip((marks or {}).items(), ("--", ":", "-.")):
        ax.axvline(x, color="grey", linestyle=style, linewidth=1, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    return _save(plt, fig, ax, path)

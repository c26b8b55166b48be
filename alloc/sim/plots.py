"""The plots of a run (the optional extra ``plot``: matplotlib): GPU
utilisation over time, queue length over time, the JCT CDF and a per-job
Gantt chart; plus the line and CDF helpers the reproductions use."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import InputError

#: The files `plot_all` writes.
PLOTS = ("utilisation.png", "queue.png", "jct_cdf.png", "gantt.png")
#: Most jobs a Gantt chart shows (the first ones by arrival).
GANTT_JOBS = 200


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:  # pragma: no cover - optional dependency
        return None


def _need():
    plt = _plt()
    if plt is None:
        raise InputError("plots need matplotlib (the extra 'plot': pip install 'alloc[plot]')")
    return plt


def _save(plt, fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def plot_all(res: Any, out: Path) -> list[str]:
    """Write the four plots of a `SimResult` into the directory ``out``.

    Raises
    ------
    InputError
        matplotlib is not installed.
    """
    plt = _need()
    out = Path(out)
    names = []
    t = np.array([s[0] for s in res.samples]) / 3600.0
    for col, name, label in ((1, "utilisation.png", "GPUs allocated (fraction)"),
                             (2, "queue.png", "jobs waiting")):
        fig, ax = plt.subplots(figsize=(6, 3))
        if len(t):
            ax.step(t, [s[col] for s in res.samples], where="post", lw=0.8)
        ax.set_xlabel("time (h)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        names.append(_save(plt, fig, out / name))
    fig, ax = plt.subplots(figsize=(5, 3.5))
    x = np.sort(np.array(list(res.jct().values()), dtype=float)) / 3600.0
    if len(x):
        ax.plot(x, np.arange(1, len(x) + 1) / len(x))
    ax.set_xlabel("JCT (h)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    names.append(_save(plt, fig, out / "jct_cdf.png"))
    rows = sorted(res.timeline(), key=lambda r: (r["arrival_s"], r["id"]))[:GANTT_JOBS]
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.06 * len(rows) + 1)))
    for k, row in enumerate(rows):
        end = row["end_s"] if row["end_s"] is not None else res.end_time_s
        ax.plot([row["arrival_s"] / 3600, end / 3600], [k, k], color="0.85", lw=1)
        for a, b, _ in row["runs"]:
            ax.plot([a / 3600, b / 3600], [k, k], color="tab:blue", lw=2)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("job (by arrival)")
    ax.invert_yaxis()
    names.append(_save(plt, fig, out / "gantt.png"))
    return names


def plot_lines(xs, series: Mapping[str, list], path: str, xlabel: str, ylabel: str,
               title: str = "", marks: Mapping[str, float] | None = None) -> bool:
    """One line per series against ``xs`` into a PNG (False without
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
    ax.legend(fontsize=7)
    _save(plt, fig, Path(path))
    return True


__all__ = ["GANTT_JOBS", "PLOTS", "plot_all", "plot_lines"]

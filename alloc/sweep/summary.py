"""Summary of a sweep: per group of runs that differ only by seed, the count,
the mean and 95 % confidence interval of the kind's main metric, and the
median timed seconds; a text table and an optional plot (matplotlib).

Main metrics: ``value`` (allocation: the objective value), ``mean_jct_h``
(simulation: mean job completion time, hours), ``alloc_100`` (openb: GPU
allocation % of capacity at arrived workload x = 100).  The interval is
Student's t: mean ± t(0.975, n-1) · s / sqrt(n) (none for n < 2).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

#: Per kind: the columns that define a group (besides ``vary``), the column
#: on the x axis of the plot, and the main metric with its label.
GROUPS = {
    "allocation": ("instance", "objective", "time_limit", "solver"),
    "simulation": ("config", "gpu_mix", "order", "jobs_per_hour", "allocator"),
    "openb": ("workload", "tune", "policy"),
}
X_AXIS = {"allocation": "instance", "simulation": "jobs_per_hour", "openb": "workload"}
METRIC = {"allocation": ("value", "objective value"),
          "simulation": ("mean_jct_h", "mean JCT (h)"),
          "openb": ("alloc_100", "GPU allocation % at x = 100")}


@dataclass(frozen=True)
class GroupStats:
    """Statistics of one group of runs (all seeds of one parameter set).

    Attributes
    ----------
    kind : str
        ``"allocation"``, ``"simulation"`` or ``"openb"``.
    fields : tuple of (str, object)
        The parameters defining the group: the kind's `GROUPS` columns,
        then the other ``vary`` fields, sorted.
    n : int
        Runs without error (and not refused).
    errors : int
        Failed runs.
    mean, ci95 : float or None
        Mean of the kind's main metric (`METRIC`) over the runs without
        error, and the half-width of its 95 % Student's t interval (None
        below two values).
    median_s : float or None
        Median of the runs' timed seconds (``wall_s``).
    seeds : tuple of int
        The seeds of every run of the group, sorted.
    refused : int
        Allocation runs whose solver could not take the instance.
    """
    kind: str
    fields: tuple[tuple[str, object], ...]
    n: int
    errors: int
    mean: float | None
    ci95: float | None
    median_s: float | None
    seeds: tuple[int, ...]
    refused: int = 0

    @property
    def label(self) -> str:
        """The group's parameter values joined by spaces (None values left out)."""
        return " ".join(f"{v}" for _, v in self.fields if v is not None)

    def get(self, name: str):
        """The value of parameter ``name`` in the group, or None."""
        return dict(self.fields).get(name)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (scipy)."""
    from scipy.stats import t
    return float(t.ppf(p, df))


def mean_ci(values: Sequence[float | None], level: float = 0.95) -> tuple[float | None, float | None]:
    """Mean and the half-width of its confidence interval (Student's t).

    Parameters
    ----------
    values : sequence of float
        Samples; None and NaN are left out.
    level : float
        Confidence level (default 0.95).

    Returns
    -------
    (float or None, float or None)
        The mean (None without samples) and the half-width (None below two).
    """
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return None, None
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return m, None
    s = statistics.stdev(vals)
    return m, t_quantile(0.5 + level / 2, len(vals) - 1) * s / math.sqrt(len(vals))


def group_key(row: dict) -> tuple:
    """``(kind, fields)``: what groups a row with the rows that differ from it
    only by seed -- the kind's `GROUPS` columns, then the ``vary`` fields
    not among them (by last dotted component), sorted by name."""
    kind = row["kind"]
    fields = [(c, row.get(c)) for c in GROUPS[kind]]
    extra = {k: v for k, v in (row.get("vary") or {}).items()
             if k.split(".")[-1] not in GROUPS[kind]}
    fields += sorted(extra.items())
    return kind, tuple(fields)


def summarize(rows: Iterable[dict]) -> list[GroupStats]:
    """Group rows that differ only by seed and compute their statistics.

    Parameters
    ----------
    rows : iterable of dict
        Result rows (any kinds).

    Returns
    -------
    list of GroupStats
        In order of first appearance; failed rows count in ``errors`` only.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    out = []
    for (kind, fields), rs in groups.items():
        refused = [r for r in rs if r.get("status") == "refused"]
        ok = [r for r in rs if not r.get("error") and r.get("status") != "refused"]
        metric = METRIC[kind][0]
        m, ci = mean_ci([r.get(metric) for r in ok])
        secs = [r["wall_s"] for r in ok if r.get("wall_s") is not None]
        out.append(GroupStats(kind, fields, len(ok), len(rs) - len(ok) - len(refused), m, ci,
                              statistics.median(secs) if secs else None,
                              tuple(sorted(r.get("seed") for r in rs)), len(refused)))
    return out


def _num(v, digits=4) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def table(stats: Sequence[GroupStats]) -> str:
    """The summary as text.

    Parameters
    ----------
    stats : sequence of GroupStats
        From `summarize`.

    Returns
    -------
    str
        Per kind a header and one line per group: runs, failed runs, refused
        runs, mean and 95 % CI half-width of the main metric, median timed
        seconds.
    """
    lines = []
    for kind in GROUPS:
        ss = [s for s in stats if s.kind == kind]
        if not ss:
            continue
        metric = METRIC[kind][1]
        width = max(len("group"), *(len(s.label) for s in ss))
        lines.append(f"{kind}: {metric}, mean ± 95 % CI over seeds")
        lines.append(f"  {'group':<{width}} {'n':>4} {'err':>4} {'ref':>4} {'mean':>10} "
                     f"{'± CI95':>9} {'median s':>9}")
        for s in ss:
            lines.append(f"  {s.label:<{width}} {s.n:>4} {s.errors:>4} {s.refused:>4} "
                         f"{_num(s.mean):>10} {_num(s.ci95, 3):>9} {_num(s.median_s, 3):>9}")
    return "\n".join(lines)


def plot(stats: Sequence[GroupStats], path) -> bool:
    """Plot the main metric, mean ± 95 % CI, one panel per kind.

    Parameters
    ----------
    stats : sequence of GroupStats
        From `summarize`.
    path : str or Path
        The PNG to write.

    Returns
    -------
    bool
        False when matplotlib is not installed (nothing written).

    Notes
    -----
    The x axis is the instance (allocation), ``jobs_per_hour`` (simulation)
    or the workload (openb); one series per combination of the other
    parameters that differ.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    kinds = [k for k in GROUPS if any(s.kind == k for s in stats)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        _panel(ax, [s for s in stats if s.kind == kind and s.mean is not None], kind)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _panel(ax, ss: Sequence[GroupStats], kind: str) -> None:
    xcol = X_AXIS[kind]
    xs = list(dict.fromkeys(s.get(xcol) for s in ss))
    numeric = all(isinstance(x, (int, float)) for x in xs)
    pos = {x: (x if numeric else i) for i, x in enumerate(xs)}
    names = [k for k, _ in ss[0].fields] if ss else []
    varying = [k for k in names if k != xcol and len({s.get(k) for s in ss}) > 1] \
        or names[-1:]
    series: dict[str, list[GroupStats]] = {}
    for s in ss:
        label = " ".join(str(s.get(k)) for k in varying)
        series.setdefault(label, []).append(s)
    for label, pts in series.items():
        pts = sorted(pts, key=lambda s: pos[s.get(xcol)])
        ax.errorbar([pos[s.get(xcol)] for s in pts], [s.mean for s in pts],
                    yerr=[s.ci95 or 0.0 for s in pts], marker="o", ms=3, capsize=3,
                    ls="-" if numeric else "none", label=label)
    if not numeric:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel(xcol)
    ax.set_ylabel(METRIC[kind][1])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _cell(s: GroupStats | None, digits: int) -> str:
    if s is not None and s.mean is None and s.refused:
        return "refused"
    if s is None or s.mean is None:
        return "-"
    ci = f" ± {s.ci95:.{digits}f}" if s.ci95 is not None else ""
    err = f" ({s.errors} failed)" if s.errors else ""
    ref = f" ({s.refused} refused)" if s.refused else ""
    return f"{s.mean:.{digits}f}{ci}{err}{ref}"


def markdown(stats: Sequence[GroupStats], digits: int = 2) -> str:
    """The summary as Markdown tables, one per kind.

    Parameters
    ----------
    stats : sequence of GroupStats
        From `summarize`.
    digits : int
        Decimals of the means and intervals.

    Returns
    -------
    str
        A row per combination of the other parameters, a column per solver,
        allocator or policy, cells ``mean ± CI95`` of the main metric (with
        failed runs noted), and the seeds counted (``n``).
    """
    out = []
    for kind, cols in GROUPS.items():
        ss = [s for s in stats if s.kind == kind]
        if not ss:
            continue
        series = cols[-1]
        names = list(dict.fromkeys(s.get(series) for s in ss))
        rows: dict[tuple, dict] = {}
        for s in ss:
            rest = tuple((k, v) for k, v in s.fields if k != series)
            rows.setdefault(rest, {})[s.get(series)] = s
        head = [k for k, _ in next(iter(rows))] + [str(n) for n in names] + ["n"]
        out.append(f"{kind}: {METRIC[kind][1]}, mean ± 95 % CI over seeds\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for rest, cells in rows.items():
            ns = sorted({c.n for c in cells.values()})
            line = [("-" if v is None else str(v)) for _, v in rest]
            line += [_cell(cells.get(n), digits) for n in names]
            line.append("/".join(str(n) for n in ns))
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    return "\n".join(out)

r"""Per-round plots of a goodput run (the optional extra ``plot``: matplotlib).

`plot_rounds` reads what `alloc.goodput.progress.GoodputProgress` kept of
every round (each running job's GPUs and its rate) and writes

* ``gpus_per_job.png`` -- one row per job (in arrival order), one column
  per round, coloured by the job's GPUs in that round (white: none);
* ``goodput.png`` -- the cluster's goodput per round: the sum over running
  jobs of their rate as a fraction of their whole work, per hour (``1`` =
  one whole job's worth of training per hour; jobs of different models
  are comparable this way, their samples are not), and the number of
  jobs holding GPUs.

The queue per round is the simulator's own plot (`alloc.sim.plots`).

Examples
--------
>>> from alloc.goodput.plots import PLOTS
>>> PLOTS
('gpus_per_job.png', 'goodput.png')
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: The files `plot_rounds` writes.
PLOTS = ("gpus_per_job.png", "goodput.png")


def round_matrix(progress: Any, result: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Rounds' start times (h), the (jobs x rounds) GPU matrix and the job ids
    in arrival order.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> prog = SimpleNamespace(rounds={0.0: {"a": (2, 0.1)}, 60.0: {"a": (4, 0.2)}})
    >>> res = SimpleNamespace(timeline=lambda: [{"id": "a", "arrival_s": 0.0}])
    >>> t, m, ids = round_matrix(prog, res)
    >>> m.tolist(), ids
    ([[2, 4]], ['a'])
    """
    starts = sorted(progress.rounds)
    tl = sorted(result.timeline(), key=lambda r: (r["arrival_s"], str(r["id"])))
    ids = [r["id"] for r in tl]
    row = {j: i for i, j in enumerate(ids)}
    m = np.zeros((len(ids), len(starts)), dtype=int)
    for c, t in enumerate(starts):
        for j, (g, _) in progress.rounds[t].items():
            if j in row:
                m[row[j], c] = g
    return np.array(starts, dtype=float) / 3600.0, m, ids


def plot_rounds(progress: Any, result: Any, out: str | Path) -> list[str]:
    """Write `PLOTS` into the folder ``out``; returns their names.

    Raises
    ------
    alloc.errors.InputError
        matplotlib is not installed.
    """
    from ..sim.plots import _need, _save
    plt = _need()
    out = Path(out)
    t, m, ids = round_matrix(progress, result)
    names = []
    fig, ax = plt.subplots(figsize=(7, 4))
    if m.size:
        shown = np.ma.masked_equal(m, 0)
        im = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap="viridis",
                       extent=(float(t[0]), float(t[-1]) if len(t) > 1 else float(t[0]) + 1,
                               len(ids), 0))
        fig.colorbar(im, ax=ax, label="GPUs")
    ax.set_xlabel("time (h)")
    ax.set_ylabel("job (arrival order)")
    ax.set_title("GPUs per job, per round")
    names.append(_save(plt, fig, out / PLOTS[0]))
    fig, ax = plt.subplots(figsize=(7, 3))
    starts = sorted(progress.rounds)
    good = [3600.0 * sum(r for _, r in progress.rounds[s].values()) for s in starts]
    running = [sum(1 for g, _ in progress.rounds[s].values() if g > 0) for s in starts]
    ax.step(t, good, where="post", lw=0.8, label="goodput (jobs' work per hour)")
    ax.set_xlabel("time (h)")
    ax.set_ylabel("jobs' work per hour")
    ax2 = ax.twinx()
    ax2.step(t, running, where="post", lw=0.6, color="tab:orange", label="jobs holding GPUs")
    ax2.set_ylabel("jobs holding GPUs")
    ax.set_title("cluster goodput per round")
    names.append(_save(plt, fig, out / PLOTS[1]))
    return names


__all__ = ["PLOTS", "plot_rounds", "round_matrix"]

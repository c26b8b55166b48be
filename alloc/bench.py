"""`alloc bench`: run solvers over instance files and compare them fairly.

How runs are made -- the same grid and worker as `alloc sweep`
(`alloc.sweep.grid`, `alloc.sweep.worker`), so that both write rows of one
schema (`alloc/schemas/row.schema.json`, explained field by field on the page
"Bench and sweep rows"):

* the grid is instance x solver x seed x repeat, run in this process one at a
  time, so that no run competes with another for the CPU;
* each solver first gets `warmup` untimed calls (default 1) on the first
  instance it can take: the first call of a solver pays for imports and engine
  start-up, which a scheduler calling it every round pays once;
* every call gets a fresh copy of the cluster, so that no run reuses what an
  earlier run derived from it;
* a solver that cannot take an instance (a capability the instance needs, a
  backend that is not installed) gives a `refused` row with the reason, and
  the bench goes on.

The table has one line per instance and solver: the status (or how many runs
had each), the median and the spread (max - min) of the value over seeds and
repeats, the tightest bound that bounds the instance as given (a solver's own
bound on a restricted problem is not one: its rows name the restriction),
the median gap and the median, min and max seconds; `resize` says whether the
solver may give jobs CPU and memory other than their request.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from .errors import InputError
from .io import load_instance, plain_numbers
from .registry import solvers, use
from .shipped import data_dir, resolve

#: What `alloc bench` runs when given no instance: the shipped instances
#: small enough for a quick look, with every available solver.
DEFAULT_INSTANCES = ("tiny-*.json", "synergy-16x8.json")


def shipped_instances_dir() -> Path:
    """The instances shipped inside the package (`alloc/data/instances/`)."""
    return data_dir("instances")


def default_instances() -> list[Path]:
    """The shipped instances alloc bench runs when given none."""
    d = shipped_instances_dir()
    out: list[Path] = []
    for pat in DEFAULT_INSTANCES:
        out.extend(sorted(d.glob(pat)))
    return out


def default_solvers() -> list[str]:
    """The available solvers alloc bench runs by default."""
    reg = solvers()
    return [n for n in ("proportional", "best-fit", "synergy-tune", "cpsat", "milp")
            if n in reg and reg[n].available]


def bench_runs(instances: Sequence[Path], solver_names: Sequence[str], *,
               objective: str | None = None, time_limit: float | None = 10.0,
               seeds: Sequence[int] = (0,), repeats: int = 1, warmup: int = 1) -> list:
    """The runs of a bench (`alloc.sweep.grid.Run`), in grid order.

    Raises
    ------
    InputError
        An instance file that does not load, an unknown solver or objective,
        a bad count.
    """
    from .objectives import DEFAULT_OBJECTIVE, OBJECTIVES
    from .sweep.config import AllocationSection, InstanceSpec, SweepConfig, file_digest
    from .sweep.grid import allocation_runs
    for name in solver_names:
        try:
            use(name)
        except ValueError as exc:
            raise InputError(f"--solvers: {exc}") from None
    chosen = objective is not None
    objective = DEFAULT_OBJECTIVE if objective is None else objective
    if objective not in OBJECTIVES:
        raise InputError(f"--objective: unknown objective {objective!r}; expected one of "
                         f"{', '.join(OBJECTIVES)}")
    if repeats < 1 or warmup < 0 or not seeds or any(s < 0 for s in seeds):
        raise InputError(f"bench: expected repeats >= 1, warmup >= 0 and seeds >= 0, got "
                         f"repeats {repeats}, warmup {warmup}, seeds {list(seeds)}")
    specs = []
    for p in instances:
        load_instance(p)  # bad input names the file and the field
        path = resolve(p, "instances")  # a shipped instance's name reads the shipped file
        specs.append(InstanceSpec(str(p), str(path.resolve()), file_digest(path)))
    sec = AllocationSection(tuple(specs), tuple(solver_names), (objective,), tuple(seeds),
                            (time_limit,), repeats, warmup, chosen)
    return allocation_runs(SweepConfig("bench", "alloc bench", allocation=sec))


def run(instances: Sequence[Path], solver_names: Sequence[str], *, objective: str | None = None,
        time_limit: float | None = 10.0, seeds: Sequence[int] = (0,), repeats: int = 1,
        warmup: int = 1, out=None, progress: bool = True) -> list[dict]:
    """Run every solver on every instance (see the module notes).

    Parameters
    ----------
    instances : sequence of Path
        Instance files.
    solver_names : sequence of str
        Solver names or `"module:function"` texts.
    objective : str, optional
        The objective of every run; None (the default) runs ``"throughput"``
        without asking for it, so that a solver placing by its own rule
        gives no warning (the table's notes say what it ignores).
    time_limit : float or None
        Seconds per call (None: the default of `allocate`).
    seeds : sequence of int
        Seeds; each (instance, solver) runs once per seed and repeat.
    repeats : int
        Timed runs per seed.
    warmup : int
        Untimed calls per solver before its first timed one.
    out : file, optional
        Where each row is written as one JSON line as soon as it is made.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    list of dict
        The rows, in grid order.
    """
    from .sweep.executors import SerialExecutor
    runs = bench_runs(instances, solver_names, objective=objective, time_limit=time_limit,
                      seeds=seeds, repeats=repeats, warmup=warmup)  # checks before any run
    bar = _progress(len(runs), progress)
    rows = []
    for row in SerialExecutor().map(runs):
        rows.append(row)
        if out is not None:
            out.write(json.dumps(plain_numbers(row)) + "\n")
            out.flush()
        if bar is not None:
            bar.set_description(f"{row['instance_name'] if 'instance_name' in row else ''}:"
                                f"{row['solver']}")
            bar.update(1)
    if bar is not None:
        bar.close()
    return rows


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, file=sys.stderr, leave=False, unit="run")


#: How solvers that ignore the objective choose (the others: "by its own rule").
OBJECTIVE_BLIND = {
    "proportional": "jobs in order, first fit, each job exactly its request (Synergy's baseline)",
    "best-fit": "largest jobs first, each on the server left fullest, exactly its request",
}


def objective_notes(rows: Iterable[dict]) -> list[str]:
    """Lines printed under the table: what the value of a solver that ignores
    the objective means (the solvers whose declaration does not name it,
    `SolverInfo.objectives`)."""
    from .registry import solvers
    rows = list(rows)
    if not rows:
        return []
    objective = rows[0].get("objective", "throughput")
    reg = solvers()
    names = dict.fromkeys(r["solver"] for r in rows)
    blind = [s for s in names if s in reg and not reg[s].honours(objective)]
    if not blind:
        return []
    out = [f"note: {', '.join(blind)} ignore the objective ({objective}):"]
    out += [f"  {s}: {OBJECTIVE_BLIND.get(s, 'places by its own rule')}" for s in blind]
    if objective == "throughput":
        out.append("  under throughput each placed job counts about its speed, so a placement "
                   "of a few large jobs scores low;")
        out.append("  the other solvers choose jobs (and CPU/memory) for the objective.")
    return out


def fmt(v, spec: str) -> str:
    """A number formatted by spec, or a right-aligned dash for None."""
    width = int(spec.split(".")[0]) if spec[0].isdigit() else 0
    return "-".rjust(width) if v is None else format(v, spec)


def has_result(row: dict) -> bool:
    """True for a row with an answer (not refused, not failed)."""
    return not row.get("error") and row.get("status") not in ("refused", "error", None)


def _median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _status(rs: Sequence[dict]) -> str:
    counts = Counter(r.get("status") for r in rs)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{s} {n}" for s, n in counts.most_common())


def summary(rows: Iterable[dict]) -> list[dict]:
    """One line per instance and solver (in order of first appearance): runs,
    status, median and spread of the value, tightest bound, median gap,
    median / min / max seconds, whether the solver re-sizes CPU and memory,
    and the reason of a refusal."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r.get("instance_name") or r["instance"], r["solver"]), []).append(r)
    out = []
    for (inst, solver), rs in groups.items():
        ok = [r for r in rs if has_result(r)]
        vals = [r["value"] for r in ok]
        secs = [r["wall_s"] for r in ok if r.get("wall_s") is not None]
        bounds = [r["bound"] for r in ok if r.get("bound") is not None]
        refused = [r for r in rs if r.get("status") == "refused"]
        failed = [r for r in rs if r.get("error")]
        out.append({
            "instance": inst, "solver": solver, "runs": len(rs), "status": _status(rs),
            "resizes": rs[0].get("resizes"), "value": _median(vals),
            "spread": (max(vals) - min(vals)) if vals else None,
            "bound": min(bounds) if bounds else None, "gap": _median(r.get("gap") for r in ok),
            "seconds": _median(secs), "min_s": min(secs) if secs else None,
            "max_s": max(secs) if secs else None,
            "reason": refused[0]["reason"] if refused else (failed[0]["error"] if failed
                                                             else None)})
    return out


def table(rows: Iterable[dict]) -> str:
    """The runs as a text table (see the module notes), then the reasons of
    refused and failed runs."""
    rows = list(rows)
    lines_ = summary(rows)
    head = (f"{'instance':<20} {'solver':<16} {'resize':<6} {'runs':>4} {'status':<11} "
            f"{'value':>11} {'spread':>8} {'bound':>11} {'gap%':>7} {'seconds':>8} "
            f"{'min-max s':>13}")
    lines = [head, "-" * len(head)]
    for g in lines_:
        gap = g["gap"]
        span = "-" if g["min_s"] is None else f"{g['min_s']:.2f}-{g['max_s']:.2f}"
        resize = {True: "yes", False: "no"}.get(g["resizes"], "-")
        lines.append(f"{g['instance'][:20]:<20} {g['solver'][:16]:<16} {resize:<6} "
                     f"{g['runs']:>4} {g['status']:<11} {fmt(g['value'], '11.3f')} "
                     f"{fmt(g['spread'], '8.3f')} {fmt(g['bound'], '11.3f')} "
                     f"{fmt(None if gap is None else 100 * gap, '7.2f')} "
                     f"{fmt(g['seconds'], '8.3f')} {span:>13}")
    notes = [f"{g['instance']} / {g['solver']}: {g['reason']}" for g in lines_ if g["reason"]]
    lines += ["", "value and seconds: median over seeds and repeats; spread: max - min of the "
              "value; bound: only where it bounds the instance; resize: the solver may give "
              "jobs CPU and memory other than their request (a point of the profile's grid)"]
    if notes:
        lines += ["refused or failed:"] + [f"  {n}" for n in notes]
    return "\n".join(lines + objective_notes(rows))


__all__ = ["DEFAULT_INSTANCES", "bench_runs", "default_instances", "default_solvers", "fmt",
           "has_result", "objective_notes", "run", "shipped_instances_dir", "summary", "table"]

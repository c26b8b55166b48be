"""Where a Synergy run's time goes, phase by phase, without a profiler.

Runs ``bench/synergy.py --quick``'s stream (128 GPUs, FIFO, single-GPU
jobs, 9 jobs/h, jobs 4000-4999 measured) for each allocator with a timer
wrapped around each phase of a round (one ``perf_counter`` pair per call, so
the figures carry none of cProfile's per-call inflation), and prints each
phase's calls, total seconds and milliseconds per call, then the run's floor:
the time spent outside the allocator's own placement (the simulator, the
session, the compile step, finish and the final check), which a faster
allocator cannot remove.

Phases (nested: a phase's time includes the ones listed under it):

* ``round``: `Simulator.round` (every round, with or without a step);
* ``sim step``: `Simulator._step` (the session's events, the step, the
  result applied); ``sim apply``: `Simulator._apply`;
* ``session step``: `Session.step`; ``commit``: `Session._commit`;
* ``compile``: the problem compiled (`Problem.__init__`; ``live state``:
  `LiveState._set_live_state`);
* ``run_solver``: the chain, the solver, finish and the check;
  ``finish``: `alloc.solve.finish` (``placements``: the placements built);
  ``check``: `alloc.solve._violations`;
* the allocator's own parts: ``from scratch``, ``state`` (the greedy state
  built), ``first fit`` (proportional, `first_fit_all`), ``tune``
  (synergy-tune, `_tune_core`), ``relabel`` (`back`, `_relabel`).

    python bench/synergy_phases.py
    python bench/synergy_phases.py --allocators proportional
    python bench/synergy_phases.py --tree ../main --tree .    # two source trees side by side

``--tree DIR`` (repeatable) runs each allocator once per source tree (that
tree's ``alloc`` package, a fresh process each) and prints the phases side by
side: milliseconds per call of each phase per tree, the run's CPU seconds
(`time.process_time`) and the allocator's own placement (from scratch, the
greedy state, first fit or tune, the relabelling) summed over the run.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:                    # a worker on another source tree
    sys.path.insert(0, sys.argv[sys.argv.index("--root") + 1])
else:
    sys.path.insert(0, str(ROOT))

import alloc  # noqa: E402,F401  (the registry first: the solver packages import it)

#: (label, module, attribute path) of each timed phase, in print order
PHASES = (
    ("round", "alloc.sim.core", "Simulator.round"),
    ("sim step", "alloc.sim.core", "Simulator._step"),
    ("sim apply", "alloc.sim.core", "Simulator._apply"),
    ("session step", "alloc.session.core", "Session.step"),
    ("commit", "alloc.session.core", "Session._commit"),
    ("compile", "alloc.problem.core", "Problem.__init__"),
    ("live state", "alloc.problem.live", "LiveState._set_live_state"),
    ("run_solver", "alloc.solve", "run_solver"),
    ("finish", "alloc.solve", "finish"),
    ("placements", "alloc.problem.build", "Building.placements"),
    ("check", "alloc.solve", "_violations"),
    ("from scratch", "alloc.solvers.heuristics.greedy", "from_scratch"),
    ("from scratch", "alloc.solvers.synergy.tune", "from_scratch"),
    ("state", "alloc.solvers.heuristics.greedy", "State"),
    ("first fit", "alloc.solvers.heuristics.greedy", "first_fit_all"),
    ("tune", "alloc.solvers.synergy.tune", "_tune"),
    ("relabel", "alloc.solvers.heuristics.greedy", "back"),
    ("relabel", "alloc.solvers.synergy.tune", "back"),
)
#: the allocator's own parts (what a faster allocator could remove)
OWN = ("from scratch", "state", "first fit", "tune", "relabel")


def timed(table: dict[str, list[float]], label: str, real: Callable[..., Any]
          ) -> Callable[..., Any]:
    """``real`` with its calls and seconds added to ``table[label]``."""
    clock = time.perf_counter

    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = clock()
        try:
            return real(*args, **kw)
        finally:
            row = table[label]
            row[0] += 1
            row[1] += clock() - t0
    return wrapper


def install(table: dict[str, list[float]]) -> None:
    """Wrap every phase of `PHASES` (module globals or class attributes; a
    phase the library does not have, in an older version, is left out)."""
    for label, module, path in PHASES:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        real = getattr(owner, name, None)
        if real is not None:
            table.setdefault(label, [0, 0.0])
            setattr(owner, name, timed(table, label, real))


def run(allocator: str) -> tuple[dict[str, list[float]], float, dict]:
    """One run of the quick stream; the phases' table, CPU seconds, summary."""
    from alloc.sim import SyntheticWorkload
    from alloc.sim.synergy import cluster, legacy_summary, simulate_synergy
    table: dict[str, list[float]] = {}
    install(table)
    cl = cluster(16, 8, 24000, 512000)
    w = SyntheticWorkload(9.0, (20, 70, 10), "single", seed=0)
    c0 = time.process_time()
    r = simulate_synergy(cl, w, order="fifo", allocator=allocator, window=(4000, 4999),
                         max_time_s=(4999 / 9.0 + 1500) * 3600.0)
    cpu = time.process_time() - c0
    return table, cpu, legacy_summary(r)


def report(allocator: str, table: dict[str, list[float]], cpu: float, s: dict) -> list[str]:
    steps = s["stats"]["steps"]
    out = [f"{allocator}: {cpu:.2f} s CPU, {s['rounds']} rounds, {steps} steps, mean JCT "
           f"{s['mean_jct_s'] / 3600:.2f} h (timers included)",
           "| phase | calls | s | ms per call |", "|---|---|---|---|"]
    for label, (n, t) in table.items():
        if n:
            out.append(f"| {label} | {n} | {t:.2f} | {1e3 * t / n:.3f} |")
    own = sum(table[k][1] for k in OWN if k in table)
    if "first fit" not in table and allocator == "proportional":
        own = float("nan")               # an older version: its placement is not timed
    total = table["round"][1]
    out.append(f"the allocator's own placement (from scratch, state, first fit or tune, "
               f"relabel): {own:.2f} s = {1e3 * own / max(steps, 1):.2f} ms per step x "
               f"{steps} steps")
    out.append(f"floor (all but the allocator's own parts): {total - own:.2f} s of "
               f"{total:.2f} s in rounds = {1e3 * (total - own) / max(steps, 1):.2f} ms per "
               f"step x {steps} steps")
    return out


def side_by_side(allocator: str, runs: list[tuple[str, dict]]) -> list[str]:
    """One allocator's phases on several trees: ms per call, then the run's
    CPU seconds and the allocator's own placement."""
    head = "| phase | calls | " + " | ".join(f"{name} ms per call" for name, _ in runs) + " |"
    out = [f"{allocator}:", head, "|---|---|" + "---|" * len(runs)]
    first = runs[0][1]["table"]
    for label, (n, _) in first.items():
        if not n:
            continue
        cells = []
        for _, r in runs:
            row = r["table"].get(label)
            cells.append(f"{1e3 * row[1] / row[0]:.3f}" if row and row[0] else "-")
        out.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    for key, what in (("cpu", "run CPU s"), ("own", "own placement s"),
                      ("floor", "all but the own placement s (in rounds)")):
        out.append(f"| {what} | | " + " | ".join(f"{r[key]:.2f}" for _, r in runs) + " |")
    out.append("| mean JCT h, steps | | " + " | ".join(
        f"{r['mean_h']:.2f}, {r['steps']}" for _, r in runs) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allocators", nargs="+", default=["proportional", "synergy-tune"])
    ap.add_argument("--tree", action="append", type=Path, metavar="DIR",
                    help="source tree to measure (repeatable: side by side)")
    ap.add_argument("--root", help=argparse.SUPPRESS)        # a worker's source tree
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    if args.json:                             # a worker: one allocator, the figures as JSON
        table, cpu, s = run(args.allocators[0])
        own = sum(table[k][1] for k in OWN if k in table)
        print(json.dumps({"table": table, "cpu": cpu, "own": own,
                          "floor": table["round"][1] - own, "steps": s["stats"]["steps"],
                          "mean_h": s["mean_jct_s"] / 3600}))
        return 0
    if args.tree:
        import subprocess
        for a in args.allocators:
            runs = []
            for tree in (t.resolve() for t in args.tree):
                cmd = [sys.executable, __file__, "--allocators", a, "--root", str(tree),
                       "--json"]
                line = subprocess.run(cmd, check=True, capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1]
                runs.append((tree.name, json.loads(line)))
            print("\n".join(side_by_side(a, runs)), flush=True)
        print(f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end "
              f"on {os.cpu_count()} cores")
        return 0
    for a in args.allocators:
        if len(args.allocators) > 1:       # a fresh interpreter: no wrapper twice
            import subprocess
            subprocess.run([sys.executable, __file__, "--allocators", a], check=True)
            continue
        table, cpu, s = run(a)
        print("\n".join(report(a, table, cpu, s)), flush=True)
    if len(args.allocators) > 1:
        print(f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end "
              f"on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write ``docs/solvers.md`` from the registry (``python docs/gen_solvers.py``);
the tests check the page is up to date."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEAD = """# Solvers

`alloc solvers` lists them with what each handles; `alloc solvers --json` adds
their options.  A solver that lacks a capability the input needs is refused
(bad input), naming the solvers that have it.  The exact family (`cpsat`,
`milp`, `milp-cbc`) solves tenancy, elastic and move-allowed inputs on the
tenancy model with its own engine, never below the applicable heuristics;
`cpsat-tenancy` is the tenancy model (CP-SAT) on every input that needs it
and the configuration model elsewhere.
A solver that restricts the problem says so (`restricts` below) and reports
`optimal` only when its proof covers the instance; where it restricts, the
tenancy path bounds the instance by the LP of a relaxed model (every job at
the smallest CPU and memory of its options and the best value of any) or says
in `stats["no_bound"]` why it has no bound.  The checked path drops any bound
below the answer's value (`stats["bound_dropped"]`).  Preemption by the
caller's order (`preempt="order"`) is decided by the core, the same for every
solver (`alloc.preempt`); a solver declares `order-preemption` when it keeps
the jobs the core pins where they are.


## CPU and memory: the request, or a point of the profile grid

A job's `cpu` and `mem` are its request.  When the job names a model whose
profile has a CPU x memory grid (the shipped models do), a solver with the
`grid` capability may give it another point of that grid instead: more CPU or
memory than it asked for where the throughput objective gains (the exact
family gave a 4-GPU `res18` job that asked 12,000 milli-CPU 24,000 on an idle
24-core server), or less.  It reports what it gave in the placement (`cpu`,
`mem` per server), and the value counts the speed at that point.  Solvers
without `grid` give exactly the request.

## Objectives: which solvers maximise what you ask

`allocate(objective=...)` (`--objective`) names what to maximise.  The
`objectives` column says which objectives a solver's answer maximises; a
solver marked "none" places by a rule of its own (size, fragmentation,
fairness, a paper's policy) and gives the same placement whatever the
objective (the value reported is still the asked objective, recomputed).
Asking such a solver for an objective warns (`alloc.InputWarning`, one line
naming the solvers that honour it); leaving the objective out (the default,
`throughput`) does not warn.

A plug-in or a solver registered at run time declares its objectives with
`objectives=` (`alloc.solver`, `alloc.register`); without it, it is taken to
honour every objective: a solve function receives `problem.objective` and the
contract ("Write a solver") is to maximise it, so an undeclared solver is not
second-guessed.  A solver that places by its own rule declares
`objectives=()`.

## Same input, same answer

Heuristics give the same answer for the same input and seed, whatever the
machine's load.  An exact solver works in phases (warm start, column
generation, the integer master, the proof), each stopped by its share of the
time limit, so under a tight limit the same call can end in a different place
on a busier machine or on a first call in a fresh process (imports count
against the limit): `optimal` once, `feasible` with a gap of 0.01 % the next
time.  Two ways to get the same answer every time:

* a limit long enough for the proof: every `optimal` answer has the same
  value (the proven optimum);
* `cpsat` with `deterministic=True` (`--option deterministic=true` on the
  command line): one CP-SAT worker on every model, the seed fixed, and each
  CP-SAT search stopped by its deterministic work count instead of the clock,
  so a search ends at the same point on an idle or a loaded machine.  The
  phases that are not CP-SAT searches (the warm-start heuristics' local
  search, the column generation's LP rounds) still stop on the clock when
  their share runs out; at limits that cut them short the answer can still
  differ, and the time limit stays the law.

A first exact call in a process also imports its engine -- OR-Tools takes
0.3 s on a quiet two-core machine, 1 to 1.5 s on a loaded one, and scipy's
sparse matrices, with which every model is built, 0.2 to 0.8 s -- and that
counts against its time limit, which is wall time from the call. The
configuration model imports them after its warm start, so that the
heuristics answer first and the phases after it share what is left (its
seconds are in `stats["import_s"]`); with less time left than
`alloc.kernel.import_seconds` gives for what is missing (0.75 s for
OR-Tools and scipy's sparse module together), that call solves with HiGHS
instead, or builds no model at all when even HiGHS's modules would not fit,
and OR-Tools is imported in the background for the next calls
(`stats["engine_fallback"]` says so). The tenancy model imports it in
its first search, whose limit counts it. Such a first call ends further from
the bound than the next one. A service or a scheduler loop pays the import
once at start:

```python
from alloc.kernel import preload

seconds = preload()          # HiGHS and OR-Tools imported now
assert preload() < 0.01      # the next calls find them imported
```
"""


def page() -> str:
    """The page's Markdown, one table per family."""
    from alloc.registry import FAMILIES, solvers
    reg = solvers()
    out = [HEAD]
    for fam in FAMILIES:
        rows = [s for s in reg.values() if s.family == fam]
        out.append(f"## {fam}\n\nSee [`alloc.solvers.{fam}`](api/families.md).\n")
        out.append("| solver | kind | capabilities | objectives | options | restricts |\n"
                   "|---|---|---|---|---|---|")
        for s in rows:
            opts = ", ".join(f"`{o.name}`" for o in s.options) or "-"
            objs = ", ".join(sorted(s.objectives)) or "none (own rule)"
            out.append(f"| `{s.name}` | {'exact' if s.exact else 'heuristic'} | "
                       f"{', '.join(sorted(s.capabilities))} | {objs} | {opts} | "
                       f"{s.restricts or '-'} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    (ROOT / "docs" / "solvers.md").write_text(page())

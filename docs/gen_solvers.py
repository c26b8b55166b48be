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
`cpsat-tenancy` is the tenancy model alone (CP-SAT).
A solver that restricts the problem says so (`restricts` below) and reports
`optimal` only when its proof covers the instance.  Preemption by the
caller's order (`preempt="order"`) is decided by the core, the same for every
solver (`alloc.preempt`); a solver declares `order-preemption` when it keeps
the jobs the core pins where they are.
"""


def page() -> str:
    """The page's Markdown, one table per family."""
    from alloc.registry import FAMILIES, solvers
    reg = solvers()
    out = [HEAD]
    for fam in FAMILIES:
        rows = [s for s in reg.values() if s.family == fam]
        out.append(f"## {fam}\n\nSee [`alloc.solvers.{fam}`](api/families.md).\n")
        out.append("| solver | kind | capabilities | options | restricts |\n|---|---|---|---|---|")
        for s in rows:
            opts = ", ".join(f"`{o.name}`" for o in s.options) or "-"
            out.append(f"| `{s.name}` | {'exact' if s.exact else 'heuristic'} | "
                       f"{', '.join(sorted(s.capabilities))} | {opts} | {s.restricts or '-'} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    (ROOT / "docs" / "solvers.md").write_text(page())

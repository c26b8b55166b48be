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
below the answer's value (`stats["bound_dropped"]`).
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

"""An installed distribution that declares a solver plug-in, for the tests.

`make_site(root)` writes into `root` what `pip install --target root` of a
wheel leaves: the package `first_fit_rank` (its `solver` module is the worked
example of docs/write-a-solver.md, taken from the page) and its
`first_fit_rank-0.1.0.dist-info` with the entry point
`first-fit-rank = first_fit_rank.solver:solve` in the group `alloc.solvers`.
Put `root` on `sys.path` (and `PYTHONPATH` for other processes) to install it.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "write-a-solver.md"
NAME = "first-fit-rank"
ENTRY = "first_fit_rank.solver:solve"


def guide_blocks() -> list[str]:
    """The Python blocks of the guide, in page order."""
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)


def worked_example() -> str:
    """The guide's worked example: the module defining the solver."""
    return next(b for b in guide_blocks() if "def first_fit(" in b)


def write_dist(root: Path, dist: str, entry_points: dict[str, str]) -> None:
    """A `*.dist-info` folder declaring `entry_points` (name -> value) in the
    group `alloc.solvers`."""
    info = root / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[alloc.solvers]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    (info / "top_level.txt").write_text(dist.replace("-", "_") + "\n")


def make_site(root: Path) -> Path:
    """The plug-in installed into `root` (see the module notes); returns `root`."""
    pkg = root / "first_fit_rank"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""First fit in the caller\'s order: an alloc plug-in."""\n')
    (pkg / "solver.py").write_text('"""The solver."""\n' + worked_example())
    write_dist(root, NAME, {NAME: ENTRY})
    return root

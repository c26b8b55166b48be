"""The layout rules of `docs/design.md` ("What may import what"), read from
the source with `ast`: every import counts, at module top or inside a
function.

* A solver family (a package under `alloc/solvers/` other than `common`)
  imports no other family; `alloc.solvers.common` imports no family.
* The simulator (`alloc/sim/`) imports a family's package, never a module
  inside it: a round goes through a session.  The event-driven
  reproductions of Gandiva and AntMan, which run the family's own scheduler
  objects over time, are the named exceptions (`SIM_DRIVES`).
* The scheduling layer (`alloc/sched/`) imports no solver family; the
  experiments and sweeps import a family's package, never a module inside it.
* The import graph of `alloc/` has no cycle.  The one edge allowed to close
  one is the registry's lazy import of the family packages it names in
  `FAMILIES` (inside a function, by name); the test removes exactly those.
"""
from __future__ import annotations

import ast
import warnings
from pathlib import Path

import networkx as nx
import pytest

import alloc
from alloc.registry import FAMILIES

ROOT = Path(alloc.__file__).parent
SOLVERS = ROOT / "solvers"
COMMON = "common"
REGISTRY = "alloc.registry"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(module, line, at_top)`` of every `alloc` module ``path`` imports
    (``from package import name`` counts the submodule when ``name`` is one)."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    with warnings.catch_warnings():  # the source's own escape warnings are not ours
        warnings.simplefilter("ignore")
        tree = ast.parse(path.read_text(), str(path))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t.startswith("alloc") and t != mod:
                out.append((t, node.lineno, id(node) in top))
    return out


def family_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "solvers" else None


def test_the_families_are_the_registered_packages():
    packages = {p.name for p in SOLVERS.iterdir() if (p / "__init__.py").is_file()}
    assert packages - {COMMON} == set(FAMILIES)


@pytest.mark.parametrize("path", sorted(p for p in SOLVERS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(SOLVERS)))
def test_no_family_imports_another(path):
    own = family_of(module_name(path))
    wrong = [(t, line) for t, line, _ in imports(path)
             if family_of(t) not in (None, COMMON, own)]
    assert not wrong, f"{module_name(path)} imports another family: {wrong}"
    if own == COMMON:
        assert not [t for t, _, _ in imports(path) if family_of(t) not in (None, COMMON)]


#: Simulator modules that drive a family's scheduler objects over time, and
#: the family modules they may import for it.
SIM_DRIVES = {
    "alloc.sim.gandiva.engine": {"alloc.solvers.gandiva.scheduler"},
    "alloc.sim.antman": {"alloc.solvers.antman.coordinator"},
}


@pytest.mark.parametrize("path", sorted((ROOT / "sim").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_simulators_import_only_the_families_packages(path):
    mod = module_name(path)
    inner = {t for t, _, _ in imports(path)
             if family_of(t) not in (None, COMMON) and len(t.split(".")) > 3}
    assert inner <= SIM_DRIVES.get(mod, set()), f"{mod} imports a family's internals: {inner}"


@pytest.mark.parametrize("path", sorted([*(ROOT / "experiments").rglob("*.py"),
                                          *(ROOT / "sweep").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_experiments_and_sweeps_import_only_the_families_packages(path):
    inner = {t for t, _, _ in imports(path)
             if family_of(t) not in (None, COMMON) and len(t.split(".")) > 3}
    assert not inner, f"{module_name(path)} imports a family's internals: {inner}"


@pytest.mark.parametrize("path", sorted((ROOT / "sched").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_scheduling_layer_imports_no_family(path):
    fams = {t for t, _, _ in imports(path) if family_of(t) is not None}
    assert not fams, f"{module_name(path)} imports a solver family: {fams}"


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for mod, path in MODULES.items():
        g.add_node(mod)
        for target, _, _ in imports(path):
            g.add_edge(mod, target)
    return g


def test_the_registry_imports_families_only_lazily():
    top = [t for t, _, at_top in imports(MODULES[REGISTRY]) if at_top and family_of(t)]
    assert not top
    assert "import_module" in MODULES[REGISTRY].read_text()


def test_the_import_graph_has_no_cycle():
    g = import_graph()
    # the one allowed closing edge: the registry's lazy import of the families
    g.remove_edges_from([(REGISTRY, t) for t in list(g.successors(REGISTRY)) if family_of(t)])
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import cycles: {sorted(cycles, key=len)[:5]}"


def test_the_graph_sees_function_imports():
    """The reader counts imports inside functions (a known one)."""
    found = {t for t, _, at_top in imports(MODULES["alloc.solvers.drf.progressive"])
             if not at_top}
    assert "alloc.solvers.common.cells" in found

"""The layout rules of `docs/design.md` ("What may import what"), read from
the source with `ast`: every import counts, at module top or inside a
function.

* `alloc/solvers/` holds the family packages `registry.FAMILIES` names and
  nothing else; `alloc/engines/` holds engine packages and nothing else.
* An engine imports no family, and none of the layers above the families
  (the simulators, sessions, the service, the adapters, sweeps, experiments,
  the scheduling layer, the testing kit, the command line).  The engine
  packages import one another without a cycle.
* A family imports no other family but those `alloc.solvers.USES` declares
  for it; the declared edges name families and form no cycle.
* A family's package notes name every engine it imports, so that a reader
  goes from the family to its algorithm in one step.
* Outside the families and the engines, only the modules of `ENGINE_USERS`
  import an engine (the simulators go through a family's package).
* The simulator (`alloc/sim/`) imports a family's package, never a module
  inside it: a round goes through a session (`SIM_DRIVES` names no
  exception: every reproduction is a stack of the layer's policies).
* The scheduling layer (`alloc/sched/`) imports no solver family; the
  experiments and sweeps import a family's package, never a module inside it.
* The import graph of `alloc/` has no cycle.  The one edge allowed to close
  one is the registry's lazy import of the family packages it names in
  `FAMILIES` (inside a function, by name); the test removes exactly those.
* `docs/design.md`'s picture names every module and package of `alloc/`,
  every family and every engine, and every file of every engine and of
  the core's packages (`alloc/problem/`, `alloc/reductions/`), and nothing
  else;
* the core's packages import no family, no engine and no layer above the
  families; its table of the engines names every engine module.
"""
from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import networkx as nx
import pytest

import alloc
from alloc.registry import FAMILIES
from alloc.solvers import USES

ROOT = Path(alloc.__file__).parent
SOLVERS = ROOT / "solvers"
ENGINES = ROOT / "engines"
REGISTRY = "alloc.registry"
DESIGN = ROOT.parent / "docs" / "design.md"
#: The layers above the families: no engine imports them.
ABOVE = ("alloc.sim", "alloc.session", "alloc.service", "alloc.adapters", "alloc.sweep",
         "alloc.experiments", "alloc.sched", "alloc.testing", "alloc.cli", "alloc.bench",
         "alloc.conformance", "alloc.shares")
#: Modules outside the families and the engines that import an engine, and
#: the engines they may import.
ENGINE_USERS = {
    # a tenant's guarantee is kept for every solver by HiveD's rules
    "alloc.guarantee": {"cells"},
}


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


def engine_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "engines" else None


def packages(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}


def loose_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()
            if p.name != "__init__.py" and p.name != "__pycache__" and not (p / "__init__.py").is_file()}


ENGINE_NAMES = sorted(packages(ENGINES))


def test_the_families_are_the_registered_packages():
    assert packages(SOLVERS) == set(FAMILIES)
    assert not loose_files(SOLVERS), "alloc/solvers/ holds the family packages only"


def test_the_engines_are_packages():
    assert ENGINE_NAMES, "no engine package"
    assert not loose_files(ENGINES), "alloc/engines/ holds the engine packages only"
    assert not set(ENGINE_NAMES) & set(FAMILIES)


@pytest.mark.parametrize("path", sorted(SOLVERS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(SOLVERS)))
def test_a_family_imports_only_the_families_it_declares(path):
    own = family_of(module_name(path))
    allowed = {None, own, *USES.get(own or "", ())}
    wrong = [(t, line) for t, line, _ in imports(path) if family_of(t) not in allowed]
    assert not wrong, f"{module_name(path)} imports another family: {wrong}"


def test_the_declared_family_edges_name_families_and_form_no_cycle():
    g = nx.DiGraph()
    for family, used in USES.items():
        assert family in FAMILIES, family
        for other in used:
            assert other in FAMILIES and other != family, (family, other)
            g.add_edge(family, other)
    assert nx.is_directed_acyclic_graph(g), list(nx.simple_cycles(g))


@pytest.mark.parametrize("path", sorted(ENGINES.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ENGINES)))
def test_an_engine_imports_no_family_and_nothing_above_them(path):
    found = imports(path)
    families = [(t, line) for t, line, _ in found if family_of(t)]
    assert not families, f"{module_name(path)} imports a family: {families}"
    above = [(t, line) for t, line, _ in found
             if any(t == a or t.startswith(a + ".") for a in ABOVE)]
    assert not above, f"{module_name(path)} imports a layer above the families: {above}"


def test_the_engines_import_one_another_without_a_cycle():
    g = nx.DiGraph()
    g.add_nodes_from(ENGINE_NAMES)
    for mod, path in MODULES.items():
        own = engine_of(mod)
        if own is None:
            continue
        for t, _, _ in imports(path):
            other = engine_of(t)
            if other is not None and other != own:
                g.add_edge(own, other)
    assert nx.is_directed_acyclic_graph(g), list(nx.simple_cycles(g))


def engines_used() -> dict[str, set[str]]:
    """``{family: engines any of its modules imports}``."""
    out: dict[str, set[str]] = {f: set() for f in FAMILIES}
    for mod, path in MODULES.items():
        own = family_of(mod)
        if own is None:
            continue
        out[own] |= {e for t, _, _ in imports(path) if (e := engine_of(t))}
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_names_the_engines_it_runs_on(family):
    """One step from a family's notes to its algorithm: the package
    docstring names every engine package the family imports."""
    doc = ast.get_docstring(ast.parse((SOLVERS / family / "__init__.py").read_text())) or ""
    missing = [e for e in sorted(engines_used()[family])
               if not re.search(rf"`alloc\.engines\.{e}(\.\w+)*`", doc)]
    assert not missing, f"alloc.solvers.{family}'s notes do not name its engines: {missing}"


def test_hived_finds_its_algorithm_in_one_step():
    """The known case: hived's notes name the cell engine, whose notes write
    out the rules (the guaranteed job's steps A0 ... A2)."""
    cells = importlib.import_module("alloc.engines.cells")
    hived = importlib.import_module("alloc.solvers.hived")  # `alloc.solvers` is also a function
    assert "`alloc.engines.cells`" in hived.__doc__
    assert "A0" in cells.__doc__ and "buddy" in cells.__doc__


def test_only_the_declared_modules_import_an_engine():
    users = {}
    for mod, path in MODULES.items():
        if family_of(mod) or engine_of(mod):
            continue
        used = {e for t, _, _ in imports(path) if (e := engine_of(t))}
        if used:
            users[mod] = used
    assert users == ENGINE_USERS


#: Simulator modules that drive a family's scheduler objects over time, and
#: the family modules they may import for it.
SIM_DRIVES: dict[str, set[str]] = {}


@pytest.mark.parametrize("path", sorted((ROOT / "sim").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_simulators_import_only_the_families_packages(path):
    mod = module_name(path)
    inner = {t for t, _, _ in imports(path) if family_of(t) and len(t.split(".")) > 3}
    assert inner <= SIM_DRIVES.get(mod, set()), f"{mod} imports a family's internals: {inner}"


@pytest.mark.parametrize("path", sorted([*(ROOT / "experiments").rglob("*.py"),
                                          *(ROOT / "sweep").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_experiments_and_sweeps_import_only_the_families_packages(path):
    inner = {t for t, _, _ in imports(path)
             if family_of(t) is not None and len(t.split(".")) > 3}
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


#: The core's packages (the compile step, the reductions): below the families
#: and the engines, they import neither, nor any layer above the families.
CORE_PACKAGES = ("problem", "reductions")


@pytest.mark.parametrize("pkg", CORE_PACKAGES)
def test_the_core_packages_import_nothing_above_the_core(pkg):
    for mod, path in MODULES.items():
        if mod != f"alloc.{pkg}" and not mod.startswith(f"alloc.{pkg}."):
            continue
        bad = [(t, line) for t, line, _ in imports(path)
               if family_of(t) or engine_of(t)
               or any(t == a or t.startswith(a + ".") for a in ABOVE)]
        assert not bad, f"{mod} imports above the core: {bad}"


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
    assert "alloc.engines.cells.engine" in found


# ------------------------------------------------------------ the design doc
def picture() -> dict[str, set[str]]:
    """The names in `docs/design.md`'s layout picture, by folder:
    ``{"": top-level entries, "solvers": ..., "engines": ..., "engines/cells": ...}``
    (an entry's column says its folder: two spaces a level)."""
    text = DESIGN.read_text().split("## Layout", 1)[1]
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    out: dict[str, set[str]] = {}
    path: list[str] = []
    for line in block.splitlines()[1:]:           # the first line is alloc/
        m = re.match(r"^( +)(\S+(?:, \S+)*)(?: {2,}|$)", line)
        if not m or len(m.group(1)) % 2 or not re.match(r"[\w.]+/?(, |$)", m.group(2)):
            continue
        depth = len(m.group(1)) // 2 - 1
        if depth > len(path):
            continue                                 # a description's continuation
        path = path[:depth]
        names = [n.strip() for n in m.group(2).split(",")]
        out.setdefault("/".join(path), set()).update(n.rstrip("/") for n in names)
        if len(names) == 1 and names[0].endswith("/"):
            path = path + [names[0].rstrip("/")]
    return out


def entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name not in ("__pycache__", "__init__.py")}


def test_the_design_picture_matches_the_tree():
    pic = picture()
    top = entries(ROOT) - {"py.typed"} | {"__init__.py"}
    assert pic[""] == top, ("docs/design.md's picture and alloc/ differ",
                            sorted(top - pic[""]), sorted(pic[""] - top))
    assert pic["solvers"] == set(FAMILIES)
    assert pic["engines"] == set(ENGINE_NAMES)
    for e in ENGINE_NAMES:
        assert pic[f"engines/{e}"] == entries(ENGINES / e), f"the picture's engines/{e}/"
    for pkg in CORE_PACKAGES:
        assert pic[pkg] == entries(ROOT / pkg), f"the picture's {pkg}/"


def test_the_design_table_names_every_engine_module():
    text = DESIGN.read_text()
    table = text.split("What lives in `engines/`", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"^\| `([\w/.]+)` \|", table, re.M))
    files = {str(p.relative_to(ENGINES)) for p in ENGINES.rglob("*.py")
             if p.name != "__init__.py"}
    assert named == files, (sorted(files - named), sorted(named - files))

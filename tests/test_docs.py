"""Every public function and class has a docstring; the long ones are split."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "alloc").rglob("*.py"))
#: Longest function body allowed, in lines.
MAX_LINES = 120


def public_defs(path: Path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and not node.name.startswith("_"):
            yield node, node.name
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                            and not sub.name.startswith("_"):
                        yield sub, f"{node.name}.{sub.name}"


def code_lines(f) -> int:
    """Lines of a function without its docstring."""
    n = f.end_lineno - f.lineno + 1
    doc = f.body[0] if f.body else None
    if isinstance(doc, ast.Expr) and isinstance(getattr(doc, "value", None), ast.Constant) \
            and isinstance(doc.value.value, str):
        n -= doc.end_lineno - doc.lineno + 1
    return n


def all_defs(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_public_definitions_have_docstrings(path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path.name}: no module docstring"
    missing = [name for node, name in public_defs(path) if not ast.get_docstring(node)
               and not (isinstance(node, ast.FunctionDef) and node.name in ("solve",))]
    assert not missing, f"{path.relative_to(ROOT)}: no docstring: {', '.join(missing)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_longer_than_a_screen_or_two(path):
    """Code lines from the signature to the end, the docstring left out (a
    full Parameters / Returns / Examples section is not length of code)."""
    long = [f"{f.name} ({code_lines(f)} lines)" for f in all_defs(path)
            if code_lines(f) > MAX_LINES]
    assert not long, f"{path.relative_to(ROOT)}: {', '.join(long)}"


def test_the_solvers_page_lists_the_registry():
    """docs/solvers.md is generated from the registry (docs/gen_solvers.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_solvers", ROOT / "docs" / "gen_solvers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "docs" / "solvers.md").read_text() == mod.page(), \
        "docs/solvers.md is out of date: run python docs/gen_solvers.py"

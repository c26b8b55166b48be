"""The solver guide, the instance-format page and the row page: generated
pages are current, every schema field is described, the examples are valid
and every Python block runs (the guide's worked example included)."""
import importlib.util
import json
import re
from pathlib import Path

import pytest

from alloc import registry
from alloc.io import instance_from_dict
from alloc.schema import schema_problems

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def gen():
    spec = importlib.util.spec_from_file_location("gen_formats", DOCS / "gen_formats.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def blocks(page: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (DOCS / page).read_text(), re.S)


@pytest.mark.parametrize("page", ["instance-format.md", "bench-rows.md"])
def test_generated_pages_are_current(page):
    assert (DOCS / page).read_text() == gen().PAGES[page](), \
        f"docs/{page} is out of date: run python docs/gen_formats.py"


@pytest.mark.parametrize("name", ["instance", "row"])
def test_every_schema_field_is_described(name):
    mod = gen()
    assert mod.undescribed(mod.schema(name)) == []


def test_instance_examples_are_valid_and_solve():
    from alloc import allocate
    docs = [json.loads(b) for b in blocks("instance-format.md", "json")]
    assert len(docs) == 2
    for i, doc in enumerate(docs):
        inst = instance_from_dict(doc, f"example {i}")
        a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=5)
        assert a.placements
    full = instance_from_dict(docs[1], "full")
    assert full.cluster.tenants and any(j.current for j in full.jobs)
    assert any(j.gpu_milli < 1000 for j in full.jobs) and any(j.gpus == 0 for j in full.jobs)


def test_row_examples_follow_the_schema():
    rows = [json.loads(x) for b in blocks("bench-rows.md", "jsonl") for x in b.splitlines()]
    assert len(rows) == 2 and not [p for r in rows for p in schema_problems(r, "row")]


@pytest.mark.parametrize("page", ["write-a-solver.md", "bench-rows.md"])
def test_python_blocks_run(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    ns = {"__name__": "docs_example"}
    for i, code in enumerate(blocks(page, "python")):
        exec(compile(code, f"{page} block {i}", "exec"), ns)
    if page == "write-a-solver.md":
        assert registry.get_solver("first-fit-rank").capabilities == {"sharing", "locality"}


def test_the_guide_covers_every_capability_and_the_kit():
    import alloc
    text = (DOCS / "write-a-solver.md").read_text()
    table = text.split("## Capabilities")[1].split("##")[0]
    for cap in registry.CAPABILITIES:
        assert f"| `{cap}` |" in table, cap
    for name in ("Problem", "Solution", "Assign", "job_order", "Deadline", "Option", "solver"):
        assert getattr(alloc, name).__doc__, name
        assert f"`{name}`" in text, name


def test_the_pages_are_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("write-a-solver.md", "instance-format.md", "bench-rows.md"):
        assert page in nav, page

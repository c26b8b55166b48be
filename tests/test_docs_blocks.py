"""Every code block of the README and docs/*.md runs exactly as written
(tests/docblocks.py), or says on the line above it why it does not."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docblocks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture
def env(tmp_path):
    """PATH whose `alloc` is this tree's (as an installed entry point would be)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "alloc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m alloc "$@"\n')
    shim.chmod(0o755)
    e = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
         "PYTHONPATH": str(ROOT)}
    e.pop("ALLOC_SERVICE_TOKEN", None)
    return e


@pytest.fixture
def registry_kept(monkeypatch):
    """Solvers a page registers in this process are gone after it."""
    from alloc import registry
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_blocks_run_as_written(page, env, tmp_path, registry_kept):
    work = tmp_path / "work"
    work.mkdir()
    report = docblocks.run_page(page, work, env)
    assert all(line.endswith(": ok") or "not run (" in line for line in report)


def test_every_block_runs_or_says_why():
    bad = [p for page in PAGES for p in docblocks.problems(page)]
    assert not bad, "\n".join(bad)


def test_readme_examples_check_what_they_show():
    code = [b for b in docblocks.blocks(ROOT / "README.md") if b.lang == "python"]
    assert code and all("assert " in b.code for b in code)

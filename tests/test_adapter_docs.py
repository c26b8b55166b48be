"""The Python examples of the adapters' pages run as written."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/blox.md", "docs/slurm.md")
BLOCKS = [(p, b) for p in PAGES
          for b in re.findall(r"```python\n(.*?)```", (ROOT / p).read_text(), re.S)]


@pytest.mark.parametrize("page,code", BLOCKS, ids=[f"{p}-{k}" for k, (p, _) in enumerate(BLOCKS)])
def test_adapter_page_example(page, code, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(code, page, "exec"), {})

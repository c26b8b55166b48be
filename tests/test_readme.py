"""The README's Python examples run as written."""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code, monkeypatch):
    assert "assert " in code, "each README example checks what it shows"
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})

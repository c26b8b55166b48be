"""Run the code blocks of Markdown pages exactly as written.

Used by `tests/test_docs_blocks.py` and by CI against the installed wheel
(`python tests/docblocks.py README.md docs/tutorial.md` from a fresh virtual
environment: only the standard library and the installed `alloc`).

A page's blocks run in order, in one folder:

* `python`: executed in one namespace per page (a later block uses what an
  earlier one defined, as a reader following the page does);
* `bash` / `sh`: run by `bash -e` (the `alloc` command is whatever `PATH`
  finds);
* `json`: parsed;
* `text`: not code (diagrams, outlines, usage synopses);
* any other block, or one that cannot run here (it installs packages, starts
  a server, is in another language), is marked on the line just above its
  fence with `<!-- not run: the reason -->`.
"""
from __future__ import annotations

import json
import tomllib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$")
RUNNABLE = {"python", "bash", "sh", "json", "jsonl", "toml"}


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, first line, language, code and, when marked
    not runnable, the reason."""
    page: str
    line: int
    lang: str
    code: str
    reason: str | None


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, in order."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        out.append(Block(path.name, line, m.group(1).lower(), m.group(2),
                         mark.group(1) if mark else None))
    return out


def problems(path: Path) -> list[str]:
    """Blocks that neither run nor say why not."""
    return [f"{b.page}:{b.line}: a {b.lang or 'plain'} block: mark it "
            f"<!-- not run: reason --> or make it runnable"
            for b in blocks(path) if b.reason is None and b.lang not in RUNNABLE | {"text"}]


def run_block(b: Block, ns: dict, cwd: Path, env: dict | None = None) -> None:
    """Run one block (the current folder is ``cwd`` for Python blocks)."""
    if b.lang == "python":
        exec(compile(b.code, f"{b.page}:{b.line}", "exec"), ns)
    elif b.lang in ("bash", "sh"):
        p = subprocess.run(["bash", "-e", "-c", b.code], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=600)
        if p.returncode:
            raise AssertionError(f"{b.page}:{b.line}: exit {p.returncode}\n{p.stdout[-2000:]}"
                                 f"\n{p.stderr[-2000:]}")
    elif b.lang == "json":
        json.loads(b.code)
    elif b.lang == "toml":
        tomllib.loads(b.code)
    elif b.lang == "jsonl":
        for line in b.code.splitlines():
            if line.strip():
                json.loads(line)


def run_page(path: Path, cwd: Path, env: dict | None = None) -> list[str]:
    """Run every runnable block of a page in ``cwd``; returns one line per block."""
    bad = problems(path)
    if bad:
        raise AssertionError("\n".join(bad))
    ns: dict = {"__name__": "__docs__"}
    report = []
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for b in blocks(path):
            if b.reason is not None or b.lang == "text":
                report.append(f"{b.page}:{b.line} {b.lang or 'plain'}: not run "
                              f"({b.reason or 'text'})")
                continue
            run_block(b, ns, cwd, env)
            report.append(f"{b.page}:{b.line} {b.lang}: ok")
    finally:
        os.chdir(old)
    return report


def main(argv: list[str]) -> int:
    """Run the pages named in ``argv`` in a fresh temporary folder each."""
    import tempfile
    for page in argv:
        with tempfile.TemporaryDirectory() as d:
            try:
                print("\n".join(run_page(Path(page).resolve(), Path(d))), flush=True)
            except Exception as exc:  # report and fail
                print(f"{page}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

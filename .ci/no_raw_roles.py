"""Fail when the built docs site shows raw Sphinx/reST markup: a role such as
``:func:`` or ``:class:`` before a name in code font, or a ``.. math::`` /
``.. code-block::`` directive rendered as prose.  Usage: ``python
.ci/no_raw_roles.py SITE_DIR``; prints each page with its count, exits 1 if any."""
import re
import sys
from pathlib import Path

RAW = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj|math|ref|doc):(?:<code>|`)"
                 r"|\.\. (?:math|code-block|note|warning)::")


def main(site: str) -> int:
    bad = {}
    for page in sorted(Path(site).rglob("*.html")):
        n = len(RAW.findall(page.read_text(errors="replace")))
        if n:
            bad[page.relative_to(site)] = n
    for page, n in bad.items():
        print(f"{page}: {n} raw role(s) or directive(s)")
    print(f"raw roles: {sum(bad.values())} in {len(bad)} page(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

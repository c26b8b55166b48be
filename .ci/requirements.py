"""Print pyproject.toml's requirements as written, one a line: the
dependencies without those named after ``--without``, then the extras given."""
import sys
import tomllib
from pathlib import Path

doc = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
args = sys.argv[1:]
skip = set(args[args.index("--without") + 1:]) if "--without" in args else set()
extras = args[:args.index("--without")] if "--without" in args else args
reqs = list(doc["project"]["dependencies"])
for extra in extras:
    reqs += doc["project"]["optional-dependencies"][extra]
for r in reqs:
    r = r.split(";")[0].split("#")[0].strip()
    name = r.split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0].strip()
    if name not in skip:
        print(r)

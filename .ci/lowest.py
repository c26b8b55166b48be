"""Print the lowest versions pyproject.toml allows, one requirement a line
(every ``name>=x`` becomes ``name==x.*``: the lowest release line allowed), for the extras given as arguments."""
import re
import sys
import tomllib
from pathlib import Path

doc = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
reqs = list(doc["project"]["dependencies"])
for extra in sys.argv[1:]:
    reqs += doc["project"]["optional-dependencies"][extra]
for r in reqs:
    r = r.split(";")[0].split("#")[0].strip()
    m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][^,\s]*)", r)
    print(f"{m.group(1)}=={m.group(2)}.*" if m else r)

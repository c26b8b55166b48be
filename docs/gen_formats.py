"""Write the file-format pages from the shipped JSON Schemas
(`python docs/gen_formats.py`): `docs/instance-format.md` from
`alloc/schemas/instance.schema.json` and `docs/bench-rows.md` from
`alloc/schemas/row.schema.json`.  The tests check that both pages are up to
date, that every field has a description, and that the examples are valid."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def schema(name: str) -> dict:
    """A shipped schema as a dict."""
    return json.loads((ROOT / "alloc" / "schemas" / f"{name}.schema.json").read_text())


# ------------------------------------------------------------------ rendering
def type_text(node: dict, refs: dict) -> str:
    """A property's type in words, with links to the sections of referenced objects."""
    if id(node) in refs:
        return f"[{refs[id(node)][0]}](#{refs[id(node)][1]})"
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{refs[name]})" if name in refs else name
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(type_text(n, refs) for n in node["oneOf"])
    t = node.get("type", "any")
    kinds = t if isinstance(t, list) else [t]
    words = []
    for k in kinds:
        if k == "array":
            words.append("list of " + type_text(node.get("items", {}), refs))
        elif k == "object" and isinstance(node.get("additionalProperties"), dict):
            words.append("map of name to " + type_text(node["additionalProperties"], refs))
        else:
            words.append(k)
    return " or ".join(words) + _limits(node)


def _limits(node: dict) -> str:
    out = []
    for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                    ("exclusiveMaximum", "<")):
        if key in node:
            out.append(f"{op} {node[key]}")
    if node.get("minItems"):
        out.append(f"at least {node['minItems']} item{'s' if node['minItems'] > 1 else ''}")
    if node.get("pattern"):
        out.append(f"matching `{node['pattern']}`")
    return f" ({', '.join(out)})" if out else ""


def text(s: str) -> str:
    """Schema prose as Markdown text (angle brackets escaped)."""
    return s.replace("<", "&lt;").replace(">", "&gt;")


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def fields_table(props: dict, required=(), refs=None, *, defaults: bool = True) -> str:
    """A Markdown table of an object's properties."""
    refs = refs or {}
    head = "| field | type | default | meaning |\n|---|---|---|---|" if defaults \
        else "| field | type | meaning |\n|---|---|---|"
    rows = [head]
    for name, node in props.items():
        field = f"`{name}`" + (" (required)" if name in required else "")
        cells = [field, _cell(type_text(node, refs))]
        if defaults:
            cells.append(f"`{json.dumps(node['default'])}`" if "default" in node else "-")
        cells.append(_cell(text(node.get("description", ""))))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def undescribed(node, path: str = "") -> list[str]:
    """Paths of the properties of a schema that have no description."""
    out = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict) and not sub.get("description"):
                out.append(f"{path}.{name}".lstrip("."))
        for key, sub in node.items():
            if key in ("properties", "patternProperties", "$defs"):
                for name, s in sub.items():
                    out += undescribed(s, f"{path}.{name}")
            elif isinstance(sub, (dict, list)) and key not in ("enum", "const", "default", "if"):
                out += undescribed(sub, path)
    elif isinstance(node, list):
        for sub in node:
            out += undescribed(sub, path)
    return out


# ------------------------------------------------------------------ instances
MINIMAL = {
    "format": "alloc.instance/1",
    "name": "minimal",
    "cluster": {"servers": [{"id": "s0", "cpu": 16000, "mem": 65536, "gpus": 4,
                             "gpu_type": "V100"}]},
    "jobs": [{"id": "train", "gpus": 2, "cpu": 8000, "mem": 32768}],
}

FULL = {
    "format": "alloc.instance/1",
    "name": "two-racks",
    "description": "two racks; sockets and switches; a tenant with cells; a running job; "
                   "a shared GPU; a CPU-only job",
    "cluster": {
        "levels": ["rack", "server", "socket", "switch", "gpu"],
        "servers": [
            {"id": f"r{r}s{k}", "rack": f"r{r}", "cpu": 32000, "mem": 262144, "gpus": 8,
             "gpu_type": "V100", "sockets": 2, "switches_per_socket": 2}
            for r in range(2) for k in range(2)] + [
            {"id": "cpu0", "rack": "r1", "cpu": 64000, "mem": 262144}],
    },
    "tenants": {"vision": {"cells": [{"level": "socket", "gpu_type": "V100", "count": 2}]}},
    "jobs": [
        {"id": "resnet", "gpus": 4, "cpu": 12000, "mem": 96000, "model": "res50",
         "locality": "socket", "tenant": "vision",
         "current": {"gpus": [{"gpu": f"r0s0/gpu{k}", "milli": 1000} for k in range(4)],
                     "cpu": {"r0s0": 12000}, "mem": {"r0s0": 96000}}},
        {"id": "bert", "gpus": 8, "cpu": 24000, "mem": 192000, "model": "bert",
         "locality": "server", "tenant": "vision", "guaranteed": False},
        {"id": "notebook", "gpus": 1, "gpu_milli": 250, "cpu": 2000, "mem": 8192},
        {"id": "etl", "gpus": 0, "cpu": 16000, "mem": 65536},
    ],
}

INSTANCE_HEAD = """# Instance format

An instance file holds a cluster and the jobs to place on it, as one JSON
object of format `alloc.instance/1`.  `alloc solve`, `alloc bench` and
`alloc sweep` read it; `alloc.load_instance` turns it into a `Cluster` and
its `Job`s.  This page is generated from the JSON Schema
(`alloc/schemas/instance.schema.json`, `python docs/gen_formats.py`).

Check a file with `alloc validate FILE`: it lists every problem (exit 2) or
says the file is valid, which capabilities it needs and which solvers take
it (exit 0), and prints the warnings below.

{description}

## Examples

The smallest useful file: one server with four V100 GPUs, one job that
wants two of them.

```json
{minimal}
```

Two racks of two servers, each server with two CPU sockets and two PCIe
switches per socket; a CPU-only server; a tenant `vision` guaranteed two
socket cells (four GPUs each); a guaranteed job running on `r0s0`, an
opportunistic one that wants a whole server, a notebook on a quarter of a
GPU and a CPU-only job.

```json
{full}
```
"""

INSTANCE_RULES = """## Rules beyond the schema

Loading checks what a schema cannot say, and lists every problem with its
field path: ids are unique; `levels` are in outermost-to-innermost order
(the operator's levels, then `server`, then some of `socket`, `switch`,
`gpu`; no level twice); every server has a domain at every level above the
servers (`domains`, or `rack`) and `rack` agrees with `domains.rack`; a
server's GPUs split evenly over its sockets and switches; a job's `locality`
and `preferred` and a cell's `level` are levels of the cluster (the page
"Topology" explains them); `gpu_milli` below 1000 needs
`gpus == 1`; a guaranteed job needs a tenant, and tenants must exist;
`min_gpus <= gpus <= max_gpus`; a model's grid has the shape its
`cpu_per_gpu` and `mem_per_gpu` say; a running job's `current` is valid on
its own (GPUs that exist, its gang, shares, type, locality), all running
jobs fit together, and they keep the tenancy rules.

Problems are found in stages: the file and its schema, then the cluster,
its tenants, the jobs.  Each stage lists every problem it finds; a later
stage runs once the earlier ones pass, because its checks need them.

A job that is well-formed but cannot be placed on this cluster now (its
GPU type is absent, it is wider than any server) is not a problem: it
waits, unplaced, with a reason.

## Warnings

Two things are valid but rarely meant, and get a warning
(`alloc.InputWarning` in Python, an `alloc: warning:` line on the command
line, the `warnings` field of bench and sweep rows):

* a job whose CPU or memory per GPU is below every point of its model's
  grid: at its request it runs at throughput 0, so a solver gains nothing
  by placing it and an exact solver may leave it out or stop it;
* a GPU type a job may use that its model gives no speed for: there it
  counts at speed 1.0, the reference type's.

## What an input needs from a solver

| the input has | capability needed |
|---|---|
| a job with `gpus: 1` and `gpu_milli` below 1000 | `sharing` |
| a job whose `locality` is any level but `server` (`socket`, `switch`, `rack`, an operator's level) | `locality` |
| a job of two or more GPUs with a `preferred` level | `preferred` |
| a tenant, or a job with a `tenant` or `guaranteed` | `tenancy` |
| a job with `min_gpus` or `max_gpus` | `elastic` |

A solver without a capability the input needs refuses it, naming the
solvers that have it (`alloc validate` lists them).
"""

#: (heading, path in the schema, where the object sits in a file)
INSTANCE_SECTIONS = (
    ("Top level", None, "The file itself."),
    ("cluster", ("properties", "cluster"), "`cluster`."),
    ("server", ("$defs", "server"), "Each item of `cluster.servers`."),
    ("tenant", ("$defs", "tenant"), "Each value of `tenants`."),
    ("cell", ("$defs", "tenant", "properties", "cells", "items"),
     "Each item of a tenant's `cells`."),
    ("job", ("$defs", "job"), "Each item of `jobs`."),
    ("placement", ("$defs", "placement"), "A job's `current`."),
    ("GPU share", ("$defs", "placement", "properties", "gpus", "items"),
     "Each item of a placement's `gpus`."),
)


def _at(doc: dict, path):
    for k in path or ():
        doc = doc[k]
    return doc


def instance_page() -> str:
    """The instance-format page's Markdown."""
    sch = schema("instance")
    refs = {"server": "server", "tenant": "tenant", "placement": "placement", "job": "job"}
    for title, path, _ in INSTANCE_SECTIONS[4:]:
        if "items" in path:
            refs[id(_at(sch, path))] = (title, title.lower().replace(" ", "-"))
    out = [INSTANCE_HEAD.format(description=text(sch["description"]),
                                minimal=json.dumps(MINIMAL, indent=2),
                                full=json.dumps(FULL, indent=2))]
    for title, path, where in INSTANCE_SECTIONS:
        node = _at(sch, path)
        out.append(f"## {title}\n")
        out.append(" ".join(x for x in (where, text(node.get("description", "")) if path
                                        else "") if x) + "\n")
        out.append(fields_table(node["properties"], node.get("required", ()), refs) + "\n")
    out.append(INSTANCE_RULES)
    return "\n".join(out)


# ------------------------------------------------------------------ rows
EXAMPLE_ROWS = [
    {"key": "25c4d41c11b2c78d", "kind": "allocation", "instance": "instances/tiny-grid.json",
     "solver": "cpsat", "objective": "throughput", "time_limit": 5.0, "seed": 0, "repeat": 0,
     "warmup": 1, "instance_name": "tiny-grid", "jobs": 6, "servers": 2, "exact": True,
     "resizes": True, "known_optimum": 8.39, "status": "optimal", "reason": None,
     "value": 8.39, "bound": 8.39, "gap": 0.0, "placed": 6, "restriction": None,
     "warm_start": 7.28, "wall_s": 0.066, "warnings": [], "error": None, "run_s": 0.07,
     "peak_rss_mib": 180.2},
    {"key": "75596dbc7e4f0187", "kind": "allocation", "instance": "instances/tenancy_small.json",
     "solver": "best-fit", "objective": "throughput", "time_limit": 5.0, "seed": 0,
     "repeat": 0, "warmup": 1, "instance_name": "tenancy_small", "jobs": 43, "servers": 8,
     "exact": False, "resizes": False, "known_optimum": None, "status": "refused",
     "reason": "solver 'best-fit' does not support tenancy which this input needs; solvers "
               "that do: cpsat, cpsat-tenancy, drf, hived, milp, milp-cbc",
     "value": None, "bound": None, "gap": None, "placed": None, "restriction": None,
     "warm_start": None, "wall_s": None, "warnings": [], "error": None, "run_s": 0.06,
     "peak_rss_mib": 125.9},
]

ROWS_HEAD = """# Bench and sweep rows

`alloc bench` and `alloc sweep` write rows of one schema,
`alloc/schemas/row.schema.json`; this page is generated from it
(`python docs/gen_formats.py`).  {description}

## How runs are made

Both commands build the same grid and run each point with the same worker
(`alloc.sweep.grid`, `alloc.sweep.worker`):

* an allocation grid point is instance x solver x objective x time limit x
  seed, run `repeats` times (`alloc bench --repeats`, the sweep's
  `allocation.repeats`; default 1);
* before its first timed call in a process, each solver gets `warmup`
  untimed calls (default 1) on the first instance it can take: a solver's
  first call pays for imports and engine start-up, which a scheduler that
  calls it every round pays once;
* every call gets a fresh copy of the cluster, so that no run reuses what
  an earlier run derived from it;
* `alloc bench` runs one point at a time in its own process, so that no run
  competes with another for the CPU; `alloc sweep` runs points in parallel
  on a process pool or a Ray cluster (each worker warms each solver up), and
  resumes from the rows already written;
* a solver that cannot take an instance gives a `refused` row with the
  reason, and the others go on.

`alloc bench` prints a table per instance and solver: the status (or how
many runs had each), the median and the spread (max - min) of the value over
seeds and repeats, the tightest bound (only bounds of the instance as
given), the median gap, the median, min and max seconds, and whether the
solver re-sizes CPU and memory.  `alloc sweep` prints the mean and 95 %
confidence interval over seeds per group, with failed and refused runs
counted apart.

## Example rows

An exact solver that proved its answer optimal, and a heuristic that cannot
take an instance with tenants (JSON lines, one row a line):

```jsonl
{rows}
```

Reading rows in Python (this runs a small bench):

```python
import statistics
from alloc.bench import run

rows = run(["tiny-grid"], ["best-fit", "cpsat"], time_limit=5,
           seeds=[0, 1], progress=False)
for solver in ("best-fit", "cpsat"):
    mine = [r for r in rows if r["solver"] == solver and r["status"] != "refused"]
    print(solver, mine[0]["status"], statistics.median(r["value"] for r in mine),
          statistics.median(r["wall_s"] for r in mine))
assert all(r["kind"] == "allocation" and r["error"] is None for r in rows)
```
"""

#: Per group of fields: its heading and what the rows are.
GROUP_TEXT = {
    "every row": ("Every row", "Fields of every row."),
    "allocation": ("Allocation rows", "Rows of `alloc bench`, and of a sweep's `allocation` "
                   "section: one `allocate()` call."),
    "simulation": ("Simulation rows", "Rows of a sweep's `simulation` section: one "
                   "`alloc simulate` run."),
    "openb": ("openb rows", "Rows of a sweep's `openb` section: one run of the FGD "
              "experiment (`placed` as in allocation rows, counting pods)."),
}


def rows_page() -> str:
    """The bench-rows page's Markdown."""
    sch = schema("row")
    rows = "\n".join(json.dumps(r) for r in EXAMPLE_ROWS)
    out = [ROWS_HEAD.format(description=text(sch["description"]), rows=rows)]
    props = dict(sch["properties"])
    for name, node in sch.get("patternProperties", {}).items():
        props[name.strip("^$").replace("[a-z]+", "RESOURCE")] = node
    required = {"every row": sch["required"]}
    for rule in sch.get("allOf", ()):
        required[rule["if"]["properties"]["kind"]["const"]] = rule["then"]["required"]
    for group in sch["x-groups"]:
        mine = {k: v for k, v in props.items() if v.get("x-group") == group}
        head, what = GROUP_TEXT[group]
        out.append(f"## {head}\n\n{what}\n")
        out.append(fields_table(mine, required.get(group, ()), defaults=False) + "\n")
    return "\n".join(out)


PAGES = {"instance-format.md": instance_page, "bench-rows.md": rows_page}


if __name__ == "__main__":
    for name, make in PAGES.items():
        (ROOT / "docs" / name).write_text(make())

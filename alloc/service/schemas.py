"""The file formats as OpenAPI components.

The service speaks the formats of the files (``alloc.instance/1`` in,
``alloc.allocation/1`` out); their JSON Schemas (``alloc/schemas``) become
components of the OpenAPI document -- ``Instance``, ``Cluster``, ``Server``,
``Tenant``, ``Job``, ``Placement``, ``Allocation`` -- with their internal
references rewritten, so that clients and schema-driven tests see exactly the
shapes the library reads and writes.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources

PREFIX = "#/components/schemas/"
_DEFS = {"server": "Server", "tenant": "Tenant", "placement": "Placement", "job": "Job"}


def _load(name: str) -> dict:
    return json.loads(resources.files("alloc").joinpath(f"schemas/{name}.schema.json").read_text())


def _rewrite(node):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = PREFIX + _DEFS[v[len("#/$defs/"):]]
            elif k in ("$schema", "$id", "$defs"):
                continue
            else:
                out[k] = _rewrite(v)
        return out
    if isinstance(node, list):
        return [_rewrite(x) for x in node]
    return node


@lru_cache(maxsize=None)
def components() -> dict:
    """Component schemas by name (a fresh copy is returned by `ref_components`)."""
    inst = _load("instance")
    out = {_DEFS[k]: _rewrite(v) for k, v in inst["$defs"].items() if k in _DEFS}
    out["Instance"] = _rewrite(inst)
    out["Cluster"] = _rewrite(inst["properties"]["cluster"])
    out["Allocation"] = _rewrite(_load("allocation"))
    return out


def ref(name: str) -> dict:
    """``{"$ref": ...}`` to a component."""
    return {"$ref": PREFIX + name}


def add_components(openapi: dict) -> dict:
    """``openapi`` with the file-format components added."""
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    for k, v in components().items():
        schemas.setdefault(k, copy.deepcopy(v))
    return openapi


__all__ = ["add_components", "components", "ref"]

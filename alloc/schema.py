"""JSON Schema validation of alloc's file formats (schemas shipped in
``alloc/schemas``).  Every problem is reported with its field path."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import jsonschema


@lru_cache(maxsize=None)
def validator(name: str):
    """The JSON Schema validator of a shipped schema (cached)."""
    text = resources.files("alloc").joinpath(f"schemas/{name}.schema.json").read_text()
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def path_str(path) -> str:
    """A field path as ``jobs[3].gpu_milli``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def describe(err) -> str:
    """One line: field path, what was expected, what was found.  An error
    of ``oneOf`` / ``anyOf`` is told by its most relevant sub-error (a
    running job's ``current`` that is neither null nor a valid placement
    names the placement's bad field)."""
    if err.validator in ("oneOf", "anyOf") and err.context:
        deep = max(err.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        if len(deep.absolute_path) > len(err.absolute_path) or deep.validator != "type":
            return describe(deep)
    where = path_str(err.absolute_path) or "(top level)"
    v = err.validator
    if v == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"{where}: unknown key {extra[0]!r}" + (
            f"; expected one of {sorted(err.schema.get('properties', {}))}" if err.schema.get("properties") else "")
    if v == "required":
        missing = [k for k in err.validator_value if k not in err.instance]
        return f"{where}: missing field {missing[0]!r}"
    if v == "type":
        want = err.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"{where}: expected {want}, got {json.dumps(err.instance)[:40]}"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return f"{where}: expected a value {op} {err.validator_value}, got {err.instance!r}"
    if v in ("enum", "const"):
        want = err.validator_value if v == "enum" else [err.validator_value]
        return f"{where}: expected one of {want}, got {err.instance!r}"
    return f"{where}: {err.message}"


def schema_problems(doc, name: str, prefix: str = "") -> list[str]:
    """One line per schema violation of ``doc`` (field path first), and one
    per number no float holds (`number_problems`)."""
    errs = sorted(validator(name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [prefix + describe(e) for e in errs] + [prefix + x for x in number_problems(doc)]


def number_problems(doc, path: tuple = ()) -> list[str]:
    """One line per integer of ``doc`` beyond what a float holds (JSON has
    no limit, Python reads such numbers as integers, and every number of
    alloc's formats is read as a float or compared with one), naming its
    field.

    Examples
    --------
    >>> from alloc.schema import number_problems
    >>> number_problems({"jobs": [{"current": {"throughput": 10 ** 400}}]})
    ['jobs[0].current.throughput: expected a number of at most 1.8e+308, got an integer of 401 digits']
    """
    if isinstance(doc, bool):
        return []
    if isinstance(doc, int):
        if abs(doc) > _FLOAT_MAX:
            where = path_str(path) or "(top level)"
            return [f"{where}: expected a number of at most {_FLOAT_MAX:.2g}, got an integer of "
                    f"{len(str(abs(doc)))} digits"]
        return []
    if isinstance(doc, dict):
        return [x for k, v in doc.items() for x in number_problems(v, path + (k,))]
    if isinstance(doc, list):
        return [x for k, v in enumerate(doc) for x in number_problems(v, path + (k,))]
    return []


#: the largest float
_FLOAT_MAX = 1.7976931348623157e308

"""Declared solver options and their validation (one error template).

Each solver declares its options as [`Option`][alloc.options.Option] values (name, type,
default, one-line help, an optional check).  [`validate_options`][alloc.options.validate_options]
fills in
the defaults and refuses what is not declared or not of the declared kind with
one line naming the solver, the option and what was expected:

```text
solver 'cpsat': unknown option 'time_limt'; valid options: engine, workers
solver 'hived': option 'max_moves': expected an integer >= 0, got -1
```

The command line passes options as ``--option KEY=VALUE``;
[`parse_value`][alloc.options.parse_value]
turns the text into the declared type.
"""
from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class Option:
    """One declared option of a solver.

    Parameters
    ----------
    name : str
    kind : {"int", "float", "bool", "str", "mapping", "any"}
        The value's type (an int is accepted where a float is expected).
    default : object
        Value when the caller gives none.
    help : str
        One line.
    choices : tuple, optional
        The allowed values.
    minimum, maximum : float, optional
        Bounds for numbers (inclusive).
    nullable : bool
        None is accepted.

    Examples
    --------
    >>> from alloc import Option
    >>> o = Option("passes", "int", 2, "improvement passes", minimum=0)
    >>> o.default, o.to_dict()["type"]
    (2, 'int')
    """
    name: str
    kind: str
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    nullable: bool = False

    def expected(self) -> str:
        """What a valid value looks like, in words."""
        word = {"int": "an integer", "float": "a number", "bool": "true or false",
                "str": "a string", "mapping": "a mapping", "any": "a value"}[self.kind]
        if self.choices is not None:
            word = "one of " + ", ".join(map(str, self.choices))
        rng = []
        if self.minimum is not None:
            rng.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            rng.append(f"<= {self.maximum:g}")
        if rng:
            word += " " + " and ".join(rng)
        if self.nullable:
            word += " (or null)"
        return word

    def check(self, value: Any) -> str | None:
        """None when ``value`` is valid, else what was expected."""
        if value is None:
            return None if self.nullable else self.expected()
        ok = _KIND_CHECKS[self.kind](value)
        if ok and self.choices is not None:
            ok = value in self.choices
        if ok and self.kind in ("int", "float"):
            if isinstance(value, float) and not math.isfinite(value):
                ok = False
            elif self.minimum is not None and value < self.minimum:
                ok = False
            elif self.maximum is not None and value > self.maximum:
                ok = False
        return None if ok else self.expected()

    def to_dict(self) -> dict[str, Any]:
        """The declaration as JSON-ready data (``alloc solvers --json``)."""
        d = {"name": self.name, "type": self.kind, "default": self.default, "help": self.help}
        for k in ("choices", "minimum", "maximum"):
            v = getattr(self, k)
            if v is not None:
                d[k] = list(v) if k == "choices" else v
        if self.nullable:
            d["nullable"] = True
        return d


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_KIND_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "float": lambda v: _is_int(v) or isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "mapping": lambda v: isinstance(v, Mapping),
    "any": lambda v: True,
}


def unknown_message(owner: str, name: str, valid: Sequence[str]) -> str:
    """The one-line message for an unknown option (with a close match)."""
    near = difflib.get_close_matches(name, list(valid), n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    listing = ", ".join(valid) if valid else "(none)"
    return f"{owner}: unknown option {name!r}{hint}; valid options: {listing}"


def validate_options(owner: str, declared: Sequence[Option],
                     given: Mapping[str, Any]) -> dict[str, Any]:
    """The options with defaults filled in; ``ValueError`` (one line) for an
    unknown option or a value that is not what the declaration expects.

    Parameters
    ----------
    owner : str
        Who the options are for, as it should appear in messages
        (``"solver 'cpsat'"``).
    declared : sequence of Option
    given : mapping
        The caller's options.
    """
    specs = {o.name: o for o in declared}
    out = {}
    for name, value in given.items():
        spec = specs.get(name)
        if spec is None:
            raise ValueError(unknown_message(owner, name, list(specs)))
        want = spec.check(value)
        if want is not None:
            raise ValueError(f"{owner}: option {name!r}: expected {want}, got {value!r}")
        out[name] = float(value) if spec.kind == "float" and value is not None else value
    for name, spec in specs.items():
        out.setdefault(name, spec.default)
    return out


def parse_value(spec: Option | None, text: str) -> Any:
    """The value of ``--option KEY=TEXT`` in the declared kind (JSON for
    mappings; ``true``/``false`` for booleans)."""
    kind = spec.kind if spec is not None else "any"
    t = text.strip()
    if kind == "str":
        return text
    if kind == "bool":
        low = t.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        return text
    if t.lower() in ("none", "null"):
        return None
    try:
        return json.loads(t)
    except ValueError:
        return text


__all__ = ["Option", "parse_value", "unknown_message", "validate_options"]

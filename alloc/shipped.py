"""The data files shipped inside the package, read through `importlib.resources`.

The package carries three folders under `alloc/data/`, so that an installed
wheel has everything a source checkout has:

| kind | folder | what |
|---|---|---|
| `models` | `alloc/data/models/` | one `alloc.model/1` file per DNN model (the profiles) |
| `instances` | `alloc/data/instances/` | `alloc.instance/1` files, small enough to ship |
| `examples` | `alloc/data/examples/` | ready-to-run inputs for `alloc simulate`, `alloc shares` and `alloc sweep` |

A source checkout also links `models/` and `instances/` at its top level to
these folders.  Wherever alloc reads an input file (`load_instance`,
`alloc solve`, `alloc simulate`, `alloc shares`, `alloc sweep`), a name that is
not an existing file but names a shipped file of the right kind reads the
shipped one: `load_instance("tiny-grid")`, `alloc simulate simulate-small`.
An existing file always wins.  The simulators' reference data
(`alloc/sim/data/*.json`, each with its `format`) is read by
`read_data_file`.

Examples
--------
>>> from alloc.shipped import names, resolve
>>> "tiny-grid" in names("instances")
True
>>> resolve("tiny-grid", "instances").name
'tiny-grid.json'
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Mapping

from .errors import InputError

#: The shipped kinds and the folder of each under `alloc/data/`.
KINDS = ("models", "instances", "examples")


def data_dir(kind: str) -> Path:
    """The folder of shipped files of ``kind`` (one of `KINDS`).

    The package is installed as plain files (a wheel or a source checkout), so
    the resource folder is a real directory.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    return Path(str(resources.files("alloc").joinpath("data", kind)))


def names(kind: str) -> list[str]:
    """The names (file stems) of the shipped files of ``kind``, sorted."""
    d = data_dir(kind)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def shipped(name: str, kind: str) -> Path | None:
    """The shipped file ``name`` (with or without ``.json``) of ``kind``, or None."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name:
        return None
    stem = name[:-5] if name.endswith(".json") else name
    p = data_dir(kind) / f"{stem}.json"
    return p if p.is_file() else None


def resolve(path, kind: str) -> Path:
    """``path`` as given when it exists, else the shipped file of that name,
    else ``path`` unchanged (the reader then reports it missing)."""
    p = Path(path)
    try:
        if p.exists():
            return p
    except (OSError, ValueError):
        return p
    found = shipped(str(path), kind)
    return found if found is not None else p


def read_data_file(path: str | Path | None, default: str, fmt: str) -> dict:
    """The JSON object of ``path``, or of the packaged file ``default``
    (relative to the ``alloc`` package) when ``path`` is None.

    Raises
    ------
    InputError
        The file cannot be read, is not JSON, or its ``format`` is not ``fmt``.
    """
    where = f"{path}: " if path is not None else ""
    try:
        text = (Path(path).read_text() if path is not None
                else resources.files("alloc").joinpath(default).read_text())
        doc = json.loads(text)
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}cannot read it ({exc})") from None
    if not isinstance(doc, Mapping) or doc.get("format") != fmt:
        raise InputError(f"{where}format: expected {fmt!r}")
    return dict(doc)

"""Data files shipped in the package (``alloc/sim/data/*.json``): one
reader, the format checked, one-line errors naming the file."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Mapping

from .errors import InputError


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
    return doc


__all__ = ["read_data_file"]

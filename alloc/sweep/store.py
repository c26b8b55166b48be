"""Result store: JSON lines (one row per finished run, flushed) and Parquet.

The JSON-lines file is the record a sweep resumes from: a run whose key has a
row there is not run again, unless that row is a ``crash`` (a worker that died
or an unexpected exception), which is retried.  A line cut short by an
interruption is ignored and the next row starts on a new line.

Parquet needs pyarrow (optional); nested values (dicts) are stored as JSON
text, lists (the openb allocation curve) as list columns.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ..errors import InputError


def read_rows(path) -> list[dict]:
    """The rows of a JSON-lines result file.

    Parameters
    ----------
    path : str or Path
        The file (absent = no rows).

    Returns
    -------
    list of dict
        One row per key (a later line with the same key wins); lines that do
        not parse (cut short by an interruption) are left out.
    """
    p = Path(path)
    if not p.exists():
        return []
    rows: dict[str, dict] = {}
    with open(p) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption
            if isinstance(row, dict) and "key" in row:
                rows[row["key"]] = row
    return list(rows.values())


def is_final(row: dict) -> bool:
    """True when the row records a run that need not run again."""
    return row.get("error_kind") != "crash"


class JsonlStore:
    """Appends rows to a JSON-lines file, one flushed line per row."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.rows = {r["key"]: r for r in read_rows(self.path)}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a+")
        except OSError as exc:
            raise InputError(f"--out {path}: cannot write ({exc.strerror or exc})") from None
        self._fh.seek(0, 2)
        if self._fh.tell():
            self._fh.seek(self._fh.tell() - 1)
            last = self._fh.read(1)
            self._fh.seek(0, 2)
            if last != "\n":
                self._fh.write("\n")

    def done(self) -> set[str]:
        """Keys of the runs already recorded for good."""
        return {k for k, r in self.rows.items() if is_final(r)}

    def append(self, row: dict) -> None:
        """Write ``row`` as one JSON line and flush it, so that an interrupted
        sweep keeps it; it also replaces any earlier row of the same key in
        `rows`."""
        self._fh.write(json.dumps(row, sort_keys=False, default=str) + "\n")
        self._fh.flush()
        self.rows[row["key"]] = row

    def close(self) -> None:
        """Close the file (also on leaving a ``with`` block)."""
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pyarrow_available() -> bool:
    """True when pyarrow and ``pyarrow.parquet`` import (needed by
    `write_parquet`)."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _cell(v):
    return json.dumps(v, sort_keys=True) if isinstance(v, dict) else v


def write_parquet(rows: Iterable[dict], path) -> int:
    """Write rows to a Parquet file (needs pyarrow).

    Parameters
    ----------
    rows : iterable of dict
        Result rows; columns are the union of their keys (missing = null).
    path : str or Path
        The Parquet file to write.

    Returns
    -------
    int
        The number of rows written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = list(rows)
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    data = {}
    for c in cols:
        vals = [_cell(r.get(c)) for r in rows]
        try:
            data[c] = pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types in one column
            data[c] = pa.array([None if v is None else json.dumps(v) for v in vals])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(data), path)
    return len(rows)

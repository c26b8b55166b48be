"""The Tiresias simulator's job trace (SymbioticLab/Tiresias, ``simulator/``):
a CSV with the columns ``job_id,num_gpu,submit_time,iterations,model_name,
duration,interval``.

* ``job_id`` -- the job's id (kept as text);
* ``num_gpu`` -- GPUs, an integer >= 1;
* ``submit_time`` -- arrival, seconds >= 0;
* ``iterations`` -- iterations to train (kept; no policy here reads it);
* ``model_name`` -- the DNN model (Table 6 of the paper names ten);
* ``duration`` -- seconds the job runs alone on its GPUs (> 0);
* ``interval`` -- the gap to the next arrival (kept, not checked against
  ``submit_time``).

Jobs are returned sorted by arrival (ties: file order), as the artifact
sorts them.  A bad row is one line naming the file, the row and the field.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError

COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration",
           "interval")


@dataclass(frozen=True)
class TraceJob:
    """One job of a Tiresias trace (seconds, GPUs)."""
    id: str
    arrival_s: float
    gpus: int
    duration_s: float
    model: str
    iterations: int | None = None
    interval_s: float | None = None


def _number(text: str | None, where: str, field: str, what: str, integer: bool = False,
            positive: bool = False):
    try:
        x = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    ok = math.isfinite(x) and (x > 0 if positive else x >= 0) and (not integer or x == int(x))
    if not ok:
        raise InputError(f"{where}: {field}: expected {what}, got {text!r}")
    return int(x) if integer else x


def read_trace(path: str | Path) -> list[TraceJob]:
    """The jobs of a trace file in the artifact's CSV format.

    Raises
    ------
    InputError
        One line: the file cannot be read, a column is missing, or a row's
        field is not what the format expects (named with its row number).

    Examples
    --------
    >>> import tempfile, os
    >>> from alloc.sched.tiresias.trace import read_trace
    >>> text = ("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\\n"
    ...         "0,1,0,500,vgg19,500,30\\n1,8,30,900,resnet50,900,0\\n")
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
    ...     _ = fh.write(text)
    >>> [(j.id, j.gpus, j.arrival_s, j.duration_s, j.model) for j in read_trace(fh.name)]
    [('0', 1, 0.0, 500.0, 'vgg19'), ('1', 8, 30.0, 900.0, 'resnet50')]
    >>> os.unlink(fh.name)
    """
    p = Path(path)
    try:
        with p.open(newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in ("job_id", "num_gpu", "submit_time", "duration")
                       if c not in header]
            if missing:
                raise InputError(f"{path}: missing column(s) {', '.join(missing)}; expected "
                                 f"{','.join(COLUMNS)}")
            rows = list(reader)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the trace ({exc.strerror})") from None
    jobs, seen = [], set()
    for i, r in enumerate(rows, start=2):
        where = f"{path}: row {i}"
        jid = (r.get("job_id") or "").strip()
        if not jid:
            raise InputError(f"{where}: job_id: expected a non-empty id")
        if jid in seen:
            raise InputError(f"{where}: job_id: {jid!r} repeats an earlier row")
        seen.add(jid)
        gpus = _number(r.get("num_gpu"), where, "num_gpu", "an integer >= 1", integer=True,
                       positive=True)
        arrival = _number(r.get("submit_time"), where, "submit_time", "seconds >= 0")
        duration = _number(r.get("duration"), where, "duration", "seconds > 0", positive=True)
        it = r.get("iterations")
        iters = None if it in (None, "") else _number(it, where, "iterations",
                                                       "an integer >= 0", integer=True)
        iv = r.get("interval")
        interval = None if iv in (None, "") else _number(iv, where, "interval", "seconds >= 0")
        jobs.append(TraceJob(jid, float(arrival), gpus, float(duration),
                             (r.get("model_name") or "").strip(), iters, interval))
    if not jobs:
        raise InputError(f"{path}: expected at least one job row")
    order = sorted(range(len(jobs)), key=lambda k: (jobs[k].arrival_s, k))
    return [jobs[k] for k in order]


__all__ = ["COLUMNS", "TraceJob", "read_trace"]

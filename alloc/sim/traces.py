"""Trace replay.

CSV (header required): ``job_id, model, arrival_s, gpus`` and either
``duration_s`` (seconds at the GPU-proportional share) or ``iterations``
(converted with the model's ``iter_time_s`` at the proportional share).

Philly (``cluster_job_log``, Microsoft's Philly trace, Jeon et al. ATC'19): a
JSON list of jobs with ``jobid``, ``submitted_time`` ("YYYY-MM-DD HH:MM:SS"),
``status`` and ``attempts``: each attempt has ``start_time``, ``end_time`` and
``detail``: a list of ``{"ip": ..., "gpus": ["gpu0", ...]}``.  A job's
duration is the sum of its attempts' run times, its GPU count the GPUs of its
last attempt; jobs without a complete attempt are dropped.  The trace has no
model names, so models come from the class split (as in Synergy).

Every problem is an [`InputError`][alloc.errors.InputError] naming the file, the
line (CSV) or job index (Philly) and the field.
"""
from __future__ import annotations

import csv
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InputError
from .workload import ModelAssigner, SimJob

CSV_FIELDS = ("job_id", "model", "arrival_s", "gpus")


#: a number as a CSV writes it: ASCII digits, an optional sign, decimals and
#: exponent (Python's int() and float() also read other scripts' digits,
#: underscores and "inf")
_NUMBER = {int: re.compile(r"\s*[+-]?[0-9]+\s*"),
           float: re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")}


def _num(v: str, kind, name: str, where: str, minimum=0):
    if not isinstance(v, str) or not _NUMBER[kind].fullmatch(v):
        raise InputError(f"{where}: {name}: expected a number, got {v!r}")
    x = kind(v)
    if x != x or x < minimum:
        raise InputError(f"{where}: {name}: expected a value >= {minimum}, got {v!r}")
    return x


def load_csv(path: str | Path, *, models: Sequence[str] | None = None,
             iter_time: Callable[[str], float] | None = None,
             max_gpus: int | None = None) -> list[SimJob]:
    """Jobs of a CSV trace (``id, arrival_s, gpus, duration_s[, model]``); bad rows are InputErrors naming the line and column."""
    p = Path(path)
    name = p.name
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"{name}: cannot read trace ({exc.strerror})") from None
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if not header:
        raise InputError(f"{name}: line 1: empty trace, expected a header {', '.join(CSV_FIELDS)}")
    header = [h.strip() for h in header]
    missing = [f for f in CSV_FIELDS if f not in header]
    if missing:
        raise InputError(f"{name}: line 1: missing column {missing[0]!r}")
    if "duration_s" not in header and "iterations" not in header:
        raise InputError(f"{name}: line 1: missing column 'duration_s' (or 'iterations')")
    unknown = [h for h in header if h not in CSV_FIELDS + ("duration_s", "iterations")]
    if unknown:
        raise InputError(f"{name}: line 1: unknown column {unknown[0]!r}")
    col = {h: i for i, h in enumerate(header)}
    out, seen = [], set()
    for ln, row in enumerate(rows, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        where = f"{name}: line {ln}"
        if len(row) != len(header):
            raise InputError(f"{where}: expected {len(header)} fields, got {len(row)}")
        get = lambda k: row[col[k]].strip()  # noqa: E731
        jid = _num(get("job_id"), int, "job_id", where)
        if jid in seen:
            raise InputError(f"{where}: job_id: duplicate id {jid}")
        seen.add(jid)
        model = get("model")
        if models is not None and model not in models:
            raise InputError(f"{where}: model: unknown model {model!r}; expected one of "
                             f"{', '.join(sorted(models))}")
        arrival = _num(get("arrival_s"), float, "arrival_s", where)
        gpus = _num(get("gpus"), int, "gpus", where, 1)
        if max_gpus is not None and gpus > max_gpus:
            raise InputError(f"{where}: gpus: job wants {gpus} GPUs, the cluster has {max_gpus}")
        dur = get("duration_s") if "duration_s" in col else ""
        if dur:
            work = _num(dur, float, "duration_s", where)
        else:
            it = get("iterations") if "iterations" in col else ""
            if not it:
                raise InputError(f"{where}: duration_s: expected duration_s or iterations")
            iters = _num(it, float, "iterations", where)
            work = iters * (iter_time(model) if iter_time else 1.0)
        if work <= 0:
            raise InputError(f"{where}: duration_s: expected a value > 0")
        out.append(SimJob(jid, model, arrival, work, gpus))
    out.sort(key=lambda j: (j.arrival_s, j.id))
    return out


def _ts(v, where: str, name: str) -> float:
    try:
        return datetime.strptime(str(v), "%Y-%m-%d %H:%M:%S").timestamp()
    except (TypeError, ValueError):
        raise InputError(f"{where}: {name}: expected 'YYYY-MM-DD HH:MM:SS', got {v!r}") from None


def load_philly(path: str | Path, *, split: Sequence[float] = (20, 70, 10), classes=None,
                max_gpus: int | None = None, first_id: int = 0) -> list[SimJob]:
    """Jobs of a Philly-style trace (submission times, GPU counts, durations), models assigned by class split."""
    p = Path(path)
    name = p.name
    try:
        doc = json.loads(p.read_text())
    except OSError as exc:
        raise InputError(f"{name}: cannot read trace ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: line {exc.lineno}: malformed JSON ({exc.msg})") from None
    if not isinstance(doc, list):
        raise InputError(f"{name}: expected a JSON list of jobs")
    raw = []
    for i, job in enumerate(doc):
        where = f"{name}: jobs[{i}]"
        if not isinstance(job, dict):
            raise InputError(f"{where}: expected an object")
        for k in ("jobid", "submitted_time", "attempts"):
            if k not in job:
                raise InputError(f"{where}: missing field {k!r}")
        sub = _ts(job["submitted_time"], where, "submitted_time")
        dur, gpus = 0.0, 0
        for a, att in enumerate(job["attempts"] or []):
            w2 = f"{where}.attempts[{a}]"
            if not att.get("start_time") or not att.get("end_time"):
                continue
            s = _ts(att["start_time"], w2, "start_time")
            e = _ts(att["end_time"], w2, "end_time")
            if e < s:
                raise InputError(f"{w2}: end_time: before start_time")
            dur += e - s
            gpus = sum(len(d.get("gpus", [])) for d in att.get("detail", []))
        if dur <= 0 or gpus <= 0:
            continue
        if max_gpus is not None and gpus > max_gpus:
            raise InputError(f"{where}: gpus: job used {gpus} GPUs, the cluster has {max_gpus}")
        raw.append((sub, str(job["jobid"]), dur, gpus))
    raw.sort()
    t0 = raw[0][0] if raw else 0.0
    assign = ModelAssigner(split, classes)
    return [SimJob(first_id + k, assign(), sub - t0, dur, g)
            for k, (sub, _, dur, g) in enumerate(raw)]

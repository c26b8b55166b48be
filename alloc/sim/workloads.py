r"""Workload files: each becomes a list of `WorkloadJob`, sorted by arrival.

Formats (``fmt``; ``auto`` tells them apart by the file's name and header):

``csv``
    The plain CSV: a header with ``id,arrival_s,gpus,duration_s`` and
    optionally ``model`` (a model of alloc's profiles), ``priority``,
    ``min_gpus``, ``max_gpus``, ``work``, ``gpu_milli`` (a job's share of
    its one GPU, 1..1000; empty: 1000); any other column is kept in the
    job's ``extra`` (numbers read as numbers).  ``duration_s`` is the job's
    run time alone on its GPUs.
``synergy``
    Synergy's trace CSV: ``job_id,model,arrival_s,gpus`` and ``duration_s``
    (seconds at the GPU-proportional share) or ``iterations`` (times the
    model's ``iter_time_s``).
``philly``
    Microsoft's Philly trace (``cluster_job_log``, Jeon et al. ATC'19): a
    JSON list of jobs with ``jobid``, ``submitted_time`` (``YYYY-MM-DD
    HH:MM:SS``) and ``attempts`` (``start_time``, ``end_time``, ``detail``:
    servers with their ``gpus``).  A job's duration is the sum of its
    attempts' run times, its GPUs those of its last attempt; jobs without a
    finished attempt are left out (counted in ``skipped``).  No model names.
``tiresias``
    The Philly-derived CSV of Tiresias' simulator (SymbioticLab/Tiresias):
    ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``
    (seconds); ``model_name`` is kept as the model (Tiresias' names, not
    alloc's profiles), ``iterations`` and ``interval`` in ``extra``.
``helios``
    SenseTime's Helios trace (Hu et al., SC'21), ``cluster_log.csv``:
    ``job_id,gpu_num,submit_time,state`` and ``duration`` (or
    ``start_time`` and ``end_time``); times as seconds or ``YYYY-MM-DD
    HH:MM:SS``.  Jobs that did not complete (``state`` other than
    ``COMPLETED``), CPU-only jobs and jobs without a run time are left out
    (counted in ``skipped``); ``user``, ``vc``, ``cpu_num``, ``node_num`` go
    to ``extra``.
``gavel``
    Gavel's trace files (stanford-futuredata/gavel): tab-separated lines
    ``job_type, command, working_directory, num_steps_arg, needs_data_dir,
    total_steps, scale_factor, priority_weight, SLO, arrival_time`` (or the
    older six fields ``job_type, command, num_steps_arg, total_steps,
    arrival_time, scale_factor``); the model is the throughput table's
    configuration ``"('<job_type>', <scale_factor>)"``, the work
    ``total_steps`` iterations.

Arrivals are shifted so that the first job arrives at 0 (except ``csv`` and
``synergy``, whose times are used as given).  Every problem is an
[`InputError`][alloc.errors.InputError] naming the file, the line (or the
job's index) and the field.
"""
from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import InputError
from .jobs import WorkloadJob

FORMATS = ("csv", "synergy", "philly", "tiresias", "helios", "gavel")
#: Columns of the plain CSV, required first.
PLAIN = ("id", "arrival_s", "gpus", "duration_s")
PLAIN_OPTIONAL = ("model", "priority", "min_gpus", "max_gpus", "work", "gpu_milli")

_NUMBER = {int: re.compile(r"\s*[+-]?[0-9]+\s*"),
           float: re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")}


@dataclass
class Workload:
    """What a workload file gave.

    Attributes
    ----------
    jobs : list of WorkloadJob
    fmt : str
        The format it was read as.
    skipped : dict of str to int
        Jobs left out on purpose, by reason (never a bad row: that is an error).
    """
    jobs: list
    fmt: str
    skipped: dict = field(default_factory=dict)


def _num(v: str, kind, name: str, where: str, minimum=None, strict: bool = False):
    if not isinstance(v, str) or not _NUMBER[kind].fullmatch(v):
        raise InputError(f"{where}: {name}: expected a number, got {v!r}")
    x = kind(v)
    if minimum is not None and (x < minimum or (strict and x == minimum)):
        op = ">" if strict else ">="
        raise InputError(f"{where}: {name}: expected a number {op} {minimum}, got {v.strip()}")
    return x


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise InputError(f"{path.name}: cannot read workload ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path.name}: cannot read workload (not UTF-8 text)") from None


def _rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    lines = _read(path).splitlines()
    reader = csv.reader(lines)
    header = next(reader, None)
    if not header:
        raise InputError(f"{path.name}: line 1: empty workload, expected a header")
    rows = [(ln, row) for ln, row in enumerate(reader, start=2)
            if row and any(c.strip() for c in row)]
    return [h.strip() for h in header], rows


def detect(path: str | Path) -> str:
    """The format of a workload file (see the module notes).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from alloc.sim.workloads import detect
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
    >>> _ = p.write_text("id,arrival_s,gpus,duration_s\\na,0,1,60\\n")
    >>> detect(p)
    'csv'
    """
    p = Path(path)
    if p.suffix == ".json":
        return "philly"
    if p.suffix == ".trace":
        return "gavel"
    text = _read(p)
    first = text.splitlines()[0] if text.strip() else ""
    if "\t" in first and "," not in first:
        return "gavel"
    cols = {c.strip() for c in first.split(",")}
    if set(PLAIN) <= cols:
        return "csv"
    if {"job_id", "model", "arrival_s", "gpus"} <= cols:
        return "synergy"
    if {"job_id", "num_gpu", "submit_time"} <= cols:
        return "tiresias"
    if {"gpu_num", "submit_time"} <= cols:
        return "helios"
    raise InputError(f"{p.name}: line 1: not a known workload format; expected the columns "
                     f"{','.join(PLAIN)}[,model] (or name the format with --format: "
                     f"{', '.join(FORMATS)})")


#: ``read_workload(..., models=ANY_MODEL)``: a row may name any model.
ANY_MODEL: Sequence[str] = ("*",)


def read_workload(path: str | Path, fmt: str = "auto", *, models: Sequence[str] | None = None,
                  max_gpus: int | None = None,
                  iter_time: Callable[[str], float] | None = None) -> Workload:
    """Read a workload file.

    Parameters
    ----------
    path : str or Path
    fmt : str
        One of `FORMATS`, or ``"auto"``.
    models : sequence of str, optional
        The model names a ``csv`` or ``synergy`` row may give (default:
        alloc's shipped profiles); ``ANY_MODEL``: any name (a progress model
        that checks its jobs' models itself).
    max_gpus : int, optional
        The cluster's GPUs: a wider job is an error naming its line.
    iter_time : callable, optional
        Seconds per iteration of a model (``synergy`` rows with ``iterations``).

    Returns
    -------
    Workload

    Raises
    ------
    InputError
        One line naming the file, the line and the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from alloc.sim.workloads import read_workload
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
    >>> _ = p.write_text("id,arrival_s,gpus,duration_s,model,team\\na,0,2,60,res18,vision\\n")
    >>> w = read_workload(p)
    >>> w.fmt, w.jobs[0].gpus, w.jobs[0].model, dict(w.jobs[0].extra)
    ('csv', 2, 'res18', {'team': 'vision'})
    >>> _ = p.write_text("id,arrival_s,gpus,duration_s\\na,0,2,-60\\n")
    >>> read_workload(p)
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: w.csv: line 2: duration_s: expected a number > 0, got -60
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: workload file not found")
    fmt = detect(p) if fmt == "auto" else fmt
    readers = {"csv": _plain, "synergy": _synergy, "philly": _philly, "tiresias": _tiresias,
               "helios": _helios, "gavel": _gavel}
    if fmt not in readers:
        raise InputError(f"--format: expected one of auto, {', '.join(FORMATS)}, got {fmt!r}")
    if models is ANY_MODEL:
        models = None
    elif models is None and fmt in ("csv", "synergy"):
        from ..profiles import available_models
        models = available_models()
    w = readers[fmt](p, models=models, iter_time=iter_time)
    if max_gpus is not None:
        for i, j in enumerate(w.jobs):
            if j.gpus > max_gpus:
                line = j.extra.get("_line", None)
                at = f"line {line}" if line else f"job {i}"
                raise InputError(f"{p.name}: {at}: gpus: job {j.id!r} wants {j.gpus} GPUs, the "
                                 f"cluster has {max_gpus}")
    w.jobs = [_strip(j) for j in w.jobs]
    return w


def _strip(j: WorkloadJob) -> WorkloadJob:
    if "_line" not in j.extra:
        return j
    from dataclasses import replace
    return replace(j, extra={k: v for k, v in j.extra.items() if k != "_line"})


def _value(v: str) -> Any:
    s = v.strip()
    if _NUMBER[int].fullmatch(s):
        return int(s)
    if _NUMBER[float].fullmatch(s):
        return float(s)
    return s


def _check_header(name: str, header: list[str], need: Sequence[str]) -> dict[str, int]:
    missing = [c for c in need if c not in header]
    if missing:
        raise InputError(f"{name}: line 1: missing column {missing[0]!r}")
    dup = [c for c in header if header.count(c) > 1]
    if dup:
        raise InputError(f"{name}: line 1: column {dup[0]!r} given twice")
    return {h: i for i, h in enumerate(header)}


def _lines(name: str, header: list[str], col: dict[str, int], rows):
    """Per data row: its line number, ``"NAME: line N"``, the row and a
    getter of a column's stripped cell (``""`` for a column the file lacks); a row of
    another width than the header is refused."""
    for ln, row in rows:
        where = f"{name}: line {ln}"
        if len(row) != len(header):
            raise InputError(f"{where}: expected {len(header)} fields, got {len(row)}")
        yield ln, where, row, (lambda k, row=row: row[col[k]].strip() if k in col else "")


def _check_model(where: str, model: str, known: set[str] | None) -> None:
    if known is not None and model not in known:
        raise InputError(f"{where}: model: unknown model {model!r}; expected one of "
                         f"{', '.join(sorted(known))}")


def _sorted(jobs: list[WorkloadJob]) -> list[WorkloadJob]:
    return sorted(jobs, key=lambda j: j.arrival_s)      # stable: file order at equal times


def _plain(p: Path, models=None, **_) -> Workload:
    header, rows = _rows(p)
    col = _check_header(p.name, header, PLAIN)
    known = set(models) if models is not None else None
    out, seen = [], set()
    for ln, where, row, get in _lines(p.name, header, col, rows):
        jid = get("id")
        if not jid:
            raise InputError(f"{where}: id: expected a non-empty id")
        if jid in seen:
            raise InputError(f"{where}: id: duplicate id {jid!r}")
        seen.add(jid)
        model = get("model") or None
        if model is not None:
            _check_model(where, model, known)
        opt = {k: _num(get(k), int, k, where, 1) for k in ("min_gpus", "max_gpus") if get(k)}
        if get("priority"):
            opt["priority"] = _num(get("priority"), int, "priority", where)
        if get("gpu_milli"):
            opt["gpu_milli"] = _num(get("gpu_milli"), int, "gpu_milli", where, 1)
        work = _num(get("work"), float, "work", where, 0, strict=True) if get("work") else None
        extra: dict[str, Any] = {h: _value(row[i]) for h, i in col.items()
                                 if h not in PLAIN and h not in PLAIN_OPTIONAL}
        extra["_line"] = ln
        out.append(_job(where, jid, _num(get("arrival_s"), float, "arrival_s", where, 0),
                        _num(get("gpus"), int, "gpus", where, 1),
                        _num(get("duration_s"), float, "duration_s", where, 0, strict=True),
                        model, work, extra, **opt))
    return Workload(_sorted(out), "csv")


def _job(where: str, jid: str, arrival: float, gpus: int, duration: float | None,
         model: str | None, work: float | None, extra: dict, **opt: Any) -> WorkloadJob:
    for name, v in (("arrival_s", arrival), ("duration_s", duration), ("work", work)):
        if v is not None and not math.isfinite(v):
            raise InputError(f"{where}: {name}: expected a finite number, got {v}")
    try:
        return WorkloadJob(jid, arrival, gpus, duration_s=duration, model=model, work=work,
                           extra=extra, **opt)
    except InputError as exc:
        raise InputError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None


def _synergy(p: Path, models=None, iter_time=None, **_) -> Workload:
    header, rows = _rows(p)
    col = _check_header(p.name, header, ("job_id", "model", "arrival_s", "gpus"))
    if "duration_s" not in col and "iterations" not in col:
        raise InputError(f"{p.name}: line 1: missing column 'duration_s' (or 'iterations')")
    unknown = [h for h in header if h not in ("job_id", "model", "arrival_s", "gpus",
                                              "duration_s", "iterations")]
    if unknown:
        raise InputError(f"{p.name}: line 1: unknown column {unknown[0]!r}")
    known = set(models) if models is not None else None
    out, seen = [], set()
    for ln, where, row, get in _lines(p.name, header, col, rows):
        jid = str(_num(get("job_id"), int, "job_id", where, 0))
        if jid in seen:
            raise InputError(f"{where}: job_id: duplicate id {jid}")
        seen.add(jid)
        model = get("model")
        _check_model(where, model, known)
        if get("duration_s"):
            work = _num(get("duration_s"), float, "duration_s", where, 0, strict=True)
        elif get("iterations"):
            iters = _num(get("iterations"), float, "iterations", where, 0, strict=True)
            work = iters * (iter_time(model) if iter_time else 1.0)
        else:
            raise InputError(f"{where}: duration_s: expected duration_s or iterations")
        out.append(_job(where, jid, _num(get("arrival_s"), float, "arrival_s", where, 0),
                        _num(get("gpus"), int, "gpus", where, 1), work, model, None,
                        {"_line": ln}))
    return Workload(_sorted(out), "synergy")


def _ts(v: Any, where: str, name: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    s = str(v).strip()
    if _NUMBER[float].fullmatch(s):
        return float(s)
    for f in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(s, f).timestamp()
        except ValueError:
            pass
    raise InputError(f"{where}: {name}: expected seconds or 'YYYY-MM-DD HH:MM:SS', got {v!r}")


def _philly(p: Path, **_) -> Workload:
    try:
        doc = json.loads(_read(p))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p.name}: line {exc.lineno}: malformed JSON ({exc.msg})") from None
    if not isinstance(doc, list):
        raise InputError(f"{p.name}: expected a JSON list of jobs")
    raw, skipped = [], 0
    for i, job in enumerate(doc):
        where = f"{p.name}: jobs[{i}]"
        if not isinstance(job, dict):
            raise InputError(f"{where}: expected an object")
        for k in ("jobid", "submitted_time", "attempts"):
            if k not in job:
                raise InputError(f"{where}: missing field {k!r}")
        sub = _ts(job["submitted_time"], where, "submitted_time")
        dur, gpus = 0.0, 0
        atts = job["attempts"] or []
        if not isinstance(atts, list):
            raise InputError(f"{where}: attempts: expected a list")
        for a, att in enumerate(atts):
            w2 = f"{where}.attempts[{a}]"
            if not isinstance(att, dict):
                raise InputError(f"{w2}: expected an object")
            if not att.get("start_time") or not att.get("end_time"):
                continue
            s = _ts(att["start_time"], w2, "start_time")
            e = _ts(att["end_time"], w2, "end_time")
            if e < s:
                raise InputError(f"{w2}: end_time: before start_time")
            dur += e - s
            gpus = sum(len(d.get("gpus", [])) for d in att.get("detail", []) or [])
        if dur <= 0 or gpus <= 0:
            skipped += 1
            continue
        raw.append((sub, str(job["jobid"]), dur, gpus, i))
    raw.sort()
    t0 = raw[0][0] if raw else 0.0
    jobs = [_job(f"{p.name}: jobs[{i}]", jid, sub - t0, g, dur, None, None, {})
            for sub, jid, dur, g, i in raw]
    return Workload(jobs, "philly", {"no finished attempt with GPUs": skipped} if skipped else {})


def _tiresias(p: Path, **_) -> Workload:
    """The Tiresias simulator's CSV, read by `alloc.sched.tiresias.trace`
    (the one reader of that format); arrivals shifted to start at 0."""
    from ..sched.tiresias.trace import read_trace
    out = []
    for t in read_trace(p):
        extra = {k: v for k, v in (("iterations", t.iterations), ("interval", t.interval_s))
                 if v is not None}
        out.append(_job(f"{p.name}: job {t.id!r}", t.id, t.arrival_s, t.gpus, t.duration_s,
                        t.model or None, None, extra))
    return Workload(_shift(out), "tiresias")


def _shift(jobs: list[WorkloadJob]) -> list[WorkloadJob]:
    from dataclasses import replace
    if not jobs or jobs[0].arrival_s == 0:
        return jobs
    t0 = jobs[0].arrival_s
    return [replace(j, arrival_s=j.arrival_s - t0) for j in jobs]


def _helios(p: Path, **_) -> Workload:
    header, rows = _rows(p)
    col = _check_header(p.name, header, ("gpu_num", "submit_time", "state"))
    if "duration" not in col and not {"start_time", "end_time"} <= set(col):
        raise InputError(f"{p.name}: line 1: missing column 'duration' (or 'start_time' and "
                         f"'end_time')")
    out: list[WorkloadJob] = []
    skipped: dict[str, int] = {}
    seen = set()
    for ln, where, row, get in _lines(p.name, header, col, rows):
        jid = get("job_id") or f"line{ln}"
        if jid in seen:
            raise InputError(f"{where}: job_id: duplicate id {jid!r}")
        seen.add(jid)
        gpus = _num(get("gpu_num"), int, "gpu_num", where, 0)
        state = get("state")
        if state != "COMPLETED":
            skipped[f"state {state or '(none)'}"] = skipped.get(f"state {state or '(none)'}",
                                                                0) + 1
            continue
        if gpus == 0:
            skipped["no GPUs"] = skipped.get("no GPUs", 0) + 1
            continue
        if get("duration"):
            dur = _num(get("duration"), float, "duration", where, 0)
        else:
            dur = _ts(get("end_time"), where, "end_time") - _ts(get("start_time"), where,
                                                                 "start_time")
            if dur < 0:
                raise InputError(f"{where}: end_time: before start_time")
        if dur <= 0:
            skipped["no run time"] = skipped.get("no run time", 0) + 1
            continue
        extra: dict[str, Any] = {h: _value(row[col[h]]) for h in ("user", "vc", "cpu_num",
                                                                   "node_num") if h in col}
        extra["_line"] = ln
        out.append(_job(where, jid, _ts(get("submit_time"), where, "submit_time"), gpus, dur,
                        None, None, extra))
    return Workload(_shift(_sorted(out)), "helios", skipped)


def _gavel(p: Path, **_) -> Workload:
    out: list[WorkloadJob] = []
    for ln, line in enumerate(_read(p).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{p.name}: line {ln}"
        f = line.split("\t")
        if len(f) == 10:
            job_type, total, sf, prio, arrival = f[0], f[5], f[6], f[7], f[9]
        elif len(f) == 6:
            job_type, total, arrival, sf, prio = f[0], f[3], f[4], f[5], "1"
        else:
            raise InputError(f"{where}: expected 10 (or 6) tab-separated fields, got {len(f)}")
        scale = _num(sf.strip(), int, "scale_factor", where, 1)
        model = str((job_type.strip(), scale))
        extra = {"priority_weight": _num(prio.strip(), float, "priority_weight", where, 0),
                 "_line": ln}
        out.append(_job(where, str(len(out)), _num(arrival.strip(), float, "arrival_time",
                                                   where, 0),
                        scale, None, model, _num(total.strip(), float, "total_steps", where, 0,
                                                 strict=True), extra))
    return Workload(_shift(_sorted(out)), "gavel")


__all__ = ["ANY_MODEL", "FORMATS", "PLAIN", "Workload", "detect", "read_workload"]

"""Throughput-sensitivity profiles: the ``models/`` data files.

A model file (``alloc.model/1``, schema in ``alloc/schemas/model.schema.json``)
gives a DNN's per-GPU speed over a CPU-per-GPU x memory-per-GPU grid (1.0 at
the GPU-proportional share on the reference GPU type), a relative speed per GPU
type, a factor by the hierarchy level a multi-GPU job spans, and optionally its
speed-up with n GPUs relative to one (``scaling``).

The models directory is ``$ALLOC_MODELS`` when set, else the package's own
`alloc/data/models/` (read through `importlib.resources`, so an installed
wheel has them; a source checkout links `models/` there).
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from dataclasses import replace
from typing import Any, Mapping

from .deprecation import renamed
from .errors import InputError
from .model import MAX_NAME, Goodput, GoodputType, Job, Profile, frozen_map
from .shipped import data_dir


def models_dir() -> Path:
    """The models folder: `$ALLOC_MODELS` or the package's `alloc/data/models/`."""
    env = os.environ.get("ALLOC_MODELS")
    if env:
        return Path(env)
    return data_dir("models")


def available_models() -> list[str]:
    """Names of the models in the models folder."""
    d = models_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def profile_problems(doc: Mapping, where: str = "", schema: bool = True) -> list[str]:
    """Problems of a model document (the schema, then the grid's shape and order;
    ``schema=False`` skips the schema, for the files shipped with the package,
    which the test suite validates)."""
    problems = []
    if schema:
        from .schema import schema_problems
        problems = schema_problems(doc, "model", where)
    if not problems:
        cpu, mem, tput = doc.get("cpu_per_gpu", []), doc.get("mem_per_gpu", []), doc.get("tput", [])
        if tput and (len(tput) != len(cpu) or any(len(r) != len(mem) for r in tput)):
            problems.append(f"{where}tput: expected a {len(cpu)} x {len(mem)} grid "
                            f"(cpu_per_gpu x mem_per_gpu)")
        if cpu != sorted(cpu) or mem != sorted(mem):
            problems.append(f"{where}cpu_per_gpu: expected increasing grid levels")
        problems += _finite_problems(doc, where)
        if not problems and doc.get("goodput") is not None:
            problems += goodput_problems(doc["goodput"], f"{where}goodput")
    return problems


def goodput_problems(g: Mapping, where: str) -> list[str]:
    """Problems of a model's ``goodput`` section beyond its schema: batch
    ranges in order, finite numbers, a type's ``params`` or ``points``
    (the points must allow a fit)."""
    import math
    out = []
    init, top = g["init_batch"], g["max_batch"]
    if init > top:
        out.append(f"{where}.init_batch: expected at most max_batch ({top}), got {init}")
    for name in ("sqr", "var"):
        v = (g.get("grad") or {}).get(name)
        if v is not None and not math.isfinite(v):
            out.append(f"{where}.grad.{name}: expected a finite number, got {v!r}")
    for t, spec in g["types"].items():
        w = f"{where}.types.{t}"
        lo, hi = spec["local_bsz"]
        if lo > hi:
            out.append(f"{w}.local_bsz: expected bLo <= bHi, got [{lo}, {hi}]")
        elif lo > top:
            out.append(f"{w}.local_bsz: bLo {lo} exceeds max_batch {top}: no batch is valid")
        if "params" in spec and "points" in spec:
            out.append(f"{w}: expected params or points, not both")
        for k, v in (spec.get("params") or {}).items():
            if not math.isfinite(v):
                out.append(f"{w}.params.{k}: expected a finite number, got {v!r}")
        if "points" in spec and not out:
            try:
                _fit(spec["points"], w)
            except InputError as exc:
                out.append(str(exc))
    return out[:1]


def _fit(points, where: str) -> tuple[float, ...]:
    from .goodput.fit import fit_points
    return tuple(fit_points(points, f"{where}.points").as_array().tolist())


def goodput_from_dict(g: Mapping, where: str = "goodput") -> "Goodput":
    """A [`Goodput`][alloc.model.Goodput] from a model's ``goodput`` section
    (fitting the ``points`` of a type that gives them)."""
    from .goodput.model import PARAM_NAMES
    types = {}
    for t, spec in g["types"].items():
        params = None
        if spec.get("params") is not None:
            params = tuple(float(spec["params"][k]) for k in PARAM_NAMES)
        elif spec.get("points") is not None:
            params = _fit(spec["points"], f"{where}.types.{t}")
        lo, hi = spec["local_bsz"]
        types[t] = GoodputType((int(lo), int(hi)), params,
                               float(spec["rate"]) if spec.get("rate") is not None else None)
    grad = g.get("grad")
    return Goodput(int(g["init_batch"]), int(g["max_batch"]), types,
                   (float(grad["sqr"]), float(grad["var"])) if grad else None,
                   float(g.get("restart_factor", 1.0)))


def goodput_to_dict(g: "Goodput") -> dict:
    """A [`Goodput`][alloc.model.Goodput] in a model file's form."""
    from .goodput.model import PARAM_NAMES
    d: dict[str, Any] = {"init_batch": g.init_batch, "max_batch": g.max_batch, "types": {}}
    for t, spec in g.types.items():
        e: dict[str, Any] = {"local_bsz": list(spec.local_bsz)}
        if spec.params is not None:
            e["params"] = dict(zip(PARAM_NAMES, map(float, spec.params)))
        if spec.rate is not None:
            e["rate"] = spec.rate
        d["types"][t] = e
    if g.grad is not None:
        d["grad"] = {"sqr": g.grad[0], "var": g.grad[1]}
    if g.restart_factor != 1.0:
        d["restart_factor"] = g.restart_factor
    return d


def _finite_problems(doc: Mapping, where: str) -> list[str]:
    """Numbers of a model document that are not finite (NaN, Infinity, 1e400)."""
    import math
    out = []
    for r, row in enumerate(doc.get("tput", [])):
        for k, v in enumerate(row):
            if v is not None and not math.isfinite(v):
                out.append(f"{where}tput[{r}][{k}]: expected a finite number, got {v!r}")
    for key in ("gpu_speed", "span", "scaling"):
        for name, v in (doc.get(key) or {}).items():
            if not math.isfinite(v):
                out.append(f"{where}{key}.{name}: expected a finite number, got {v!r}")
    return out[:1]


#: Profiles already validated (by id; the objects are kept alive by the caches).
_CHECKED: dict[int, Profile] = {}


def is_checked(profile: Profile) -> bool:
    """True when ``profile`` came from a validated model document."""
    return _CHECKED.get(id(profile)) is profile


def profile_from_dict(doc: Mapping, *, source: str, name: str | None = None,
                      where: str = "", schema: bool = True) -> Profile:
    """Build a [`Profile`][alloc.model.Profile] from a model document, validating it."""
    problems = profile_problems(doc, where, schema)
    if problems:
        raise InputError(problems, source)
    grid = tuple(tuple(None if v is None else float(v) for v in row) for row in doc.get("tput", []))
    meta = {k: doc[k] for k in ("class", "source", "ideal", "iter_time_s", "batch", "model_mb",
                                "comm_share") if k in doc}
    prof = Profile(
        name=name or doc.get("name") or "",
        cpu_per_gpu=tuple(doc.get("cpu_per_gpu", ())) if grid else (),
        mem_per_gpu=tuple(doc.get("mem_per_gpu", ())) if grid else (),
        tput=grid,
        gpu_speed=frozen_map(doc.get("gpu_speed")),
        span=frozen_map(doc.get("span")),
        scaling=frozen_map({int(k): float(v) for k, v in (doc.get("scaling") or {}).items()}),
        reference_gpu=doc.get("reference_gpu"),
        meta=frozen_map(meta),
        goodput=goodput_from_dict(doc["goodput"], f"{where}goodput")
        if doc.get("goodput") is not None else None,
    )
    if len(_CHECKED) > 4096:
        _CHECKED.clear()
    _CHECKED[id(prof)] = prof
    return prof


def _shipped(path: Path) -> bool:
    """True for a file of the package's own models folder."""
    return path.resolve().parent == data_dir("models").resolve()


@lru_cache(maxsize=None)
def _load(path: str) -> Profile:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p.name}: cannot read model file ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p.name}: line {exc.lineno} column {exc.colno}: malformed JSON "
                         f"({exc.msg})") from None
    return profile_from_dict(doc, source=p.name, name=p.stem, schema=not _shipped(p))


def load_profile(name: str) -> Profile:
    """The profile of model ``name`` from the models directory (formerly
    `load_model`).

    Examples
    --------
    >>> from alloc import load_profile
    >>> p = load_profile("res50")
    >>> p.name, len(p.cpu_per_gpu) > 1, round(p.speed("P100"), 3)
    ('res50', True, 0.596)
    """
    ok = isinstance(name, str) and 0 < len(name) <= 256 and "/" not in name and "\\" not in name
    path = models_dir() / f"{name}.json" if ok else None
    try:
        found = path is not None and path.is_file()
    except OSError:
        found = False
    if not found:
        raise InputError(f"model {name!r}: not found; expected one of "
                         f"{', '.join(available_models()) or '(no models directory)'}")
    return _load(str(path))


def profile_to_dict(p: Profile) -> dict:
    """A Profile in the model-file form (``alloc.model/1``)."""
    d: dict[str, Any] = {"format": "alloc.model/1", "name": p.name}
    if p.tput:
        d.update(cpu_per_gpu=list(p.cpu_per_gpu), mem_per_gpu=list(p.mem_per_gpu),
                 tput=[list(r) for r in p.tput])
    if p.gpu_speed:
        d["gpu_speed"] = dict(p.gpu_speed)
    if p.span:
        d["span"] = dict(p.span)
    if p.scaling:
        d["scaling"] = {str(k): v for k, v in p.scaling.items()}
    if p.reference_gpu:
        d["reference_gpu"] = p.reference_gpu
    for k, v in p.meta.items():
        d[k] = v
    if p.goodput is not None:
        d["goodput"] = goodput_to_dict(p.goodput)
    return d


def resolve_models(jobs: tuple) -> tuple[tuple, list[str]]:
    """Jobs that name a model and carry no profile get the profile of
    ``models/<name>.json``; returns ``(jobs, problems)``, one problem line per
    unknown model name."""
    out, problems = [], []
    for i, j in enumerate(jobs):
        if isinstance(j, Job) and j.profile is None and isinstance(j.model, str) and j.model \
                and len(j.model) <= MAX_NAME:
            try:
                j = replace(j, profile=load_profile(j.model))
            except InputError:
                problems.append(f"jobs[{i}].model: unknown model {j.model!r}; expected one of "
                                f"{', '.join(available_models())}")
        out.append(j)
    return tuple(out), problems


__getattr__ = renamed(__name__, {"load_model": "load_profile"}, globals())

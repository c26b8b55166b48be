"""Instance and allocation files (``alloc.instance/1``, ``alloc.allocation/1``).

Loading validates in one pass: the JSON Schema (shipped in ``alloc/schemas``)
first, then the semantic checks of [`alloc.validate`][alloc.validate]; every problem is
collected with its field path and the [`InputError`][alloc.errors.InputError] names the file.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError
from .model import (DEFAULT_GPU_TYPE, Allocation, Cell, Cluster, GpuShare, Instance, Job,
                    Placement, Profile, Server, Status, Tenant, frozen_map)
from .profiles import available_models, load_profile, profile_from_dict, profile_to_dict
from .shipped import names as shipped_names, resolve
from .schema import schema_problems
from .validate import model_problems

INSTANCE_FORMAT = "alloc.instance/1"
#: The instance format a file that uses ``gpus_per_server`` is written as.
INSTANCE_FORMAT_EVEN = "alloc.instance/1.1"
#: Instance formats read.
INSTANCE_FORMATS = (INSTANCE_FORMAT, INSTANCE_FORMAT_EVEN)
ALLOCATION_FORMAT = "alloc.allocation/1"


def write_output(path: str | None, text: str) -> None:
    """``text`` to ``path`` (stdout when None); an unwritable path is bad input.

    Examples
    --------
    >>> write_output(None, "ok\\n")
    ok
    """
    if path is None:
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or type(exc).__name__})") from None


def read_json(path, what: str = "file") -> Any:
    """Parse a JSON file; bad input (missing, unreadable, malformed, too deep) is an InputError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what} ({type(exc).__name__})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno} column {exc.colno}: malformed JSON "
                         f"({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except (OSError, ValueError):
        return True  # read_json names the problem


def check_format(doc: Any, expected: str | tuple, source: str) -> None:
    """Bad input unless ``doc`` declares ``format: expected`` (one of them,
    when a tuple: the first is named; a wrong file kind is named)."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if isinstance(expected, tuple):
        if fmt in expected:
            return
        expected = expected[0]
    if fmt != expected:
        got = f"format {fmt!r}" if fmt is not None else "no format field" if isinstance(doc, dict) \
            else f"a JSON {type(doc).__name__}"
        raise InputError(f"{source}: format: expected an {expected} file, got {got}")


# ------------------------------------------------------------------ instances
def placement_from_dict(d: Mapping, job_id: str | None = None) -> Placement:
    """A Placement from its file form."""
    return Placement(d.get("job", job_id) or "",
                     tuple(GpuShare(g["gpu"], int(g["milli"]), g.get("mem"), g.get("compute"))
                           for g in d.get("gpus", [])),
                     dict(d.get("cpu", {})), dict(d.get("mem", {})),
                     float(d.get("throughput", 0.0)), d.get("batch"), int(d.get("accum", 0)))


def server_from_doc(s: Mapping) -> Server:
    """A [`Server`][alloc.model.Server] from its ``alloc.instance/1`` form
    (schema-checked already): the one reading of a server, for instance
    files and session events alike.

    Examples
    --------
    >>> from alloc.io import server_from_doc
    >>> server_from_doc({"id": "s1", "cpu": 8000, "mem": 64000, "gpus": 1, "gpu_mem": 4000}).gpu_mem
    4000
    """
    gpus = s.get("gpus", 0)
    return Server(s["id"], s["cpu"], s["mem"], gpus,
                  s.get("gpu_type", DEFAULT_GPU_TYPE if gpus else None), s.get("rack"),
                  s.get("sockets", 1), s.get("switches_per_socket", 1), s.get("gpu_mem"),
                  frozen_map(s.get("domains")))


def job_from_doc(j: Mapping, profile: Profile | None = None) -> Job:
    """A [`Job`][alloc.model.Job] from its ``alloc.instance/1`` form
    (schema-checked already), with its model's ``profile`` when resolved:
    the one reading of a job, for instance files and session events alike
    (every field the format has, so an event's job reads exactly as the
    instance file reads it).

    Examples
    --------
    >>> from alloc.io import job_from_doc
    >>> j = job_from_doc({"id": "o1", "gpus": 1, "cpu": 1000, "mem": 1000, "gpu_mem": 3584,
    ...                   "gpu_compute": 40, "gpu_mem_min": 0})
    >>> j.gpu_mem, j.gpu_compute, j.gpu_mem_min
    (3584, 40, 0)
    """
    tenant = j.get("tenant")
    cur = j.get("current")
    return Job(
        id=j["id"], gpus=j.get("gpus", 0), gpu_milli=j.get("gpu_milli", 1000),
        cpu=j.get("cpu", 0), mem=j.get("mem", 0), gpu_types=tuple(j.get("gpu_types") or ()),
        locality=j.get("locality"), model=j.get("model"), profile=profile, tenant=tenant,
        guaranteed=j.get("guaranteed", tenant is not None), priority=j.get("priority", 0),
        weight=float(j.get("weight", 1.0)),
        current=placement_from_dict(cur, j["id"]) if cur else None,
        min_gpus=j.get("min_gpus"), max_gpus=j.get("max_gpus"), gpu_mem=j.get("gpu_mem"),
        gpu_compute=j.get("gpu_compute"), gpu_mem_min=j.get("gpu_mem_min"),
        gpus_per_server=j.get("gpus_per_server"),
        preferred=j.get("preferred"))


def instance_from_dict(doc: Any, source: str = "<instance>") -> Instance:
    """Build and validate an [`Instance`][alloc.model.Instance] from a parsed file."""
    check_format(doc, INSTANCE_FORMATS, source)
    problems = schema_problems(doc, "instance")
    if problems:
        raise InputError(problems, source)
    c = doc["cluster"]
    levels = tuple(c.get("levels", ("server", "gpu")))
    servers = tuple(server_from_doc(s) for s in c["servers"])
    tenants = {name: Tenant(name, tuple(Cell(x["level"], x["count"], x.get("gpu_type"))
                                        for x in t["cells"]))
               for name, t in doc.get("tenants", {}).items()}
    cluster = Cluster(servers, levels, frozen_map(tenants))
    models: dict[str, Profile] = {}
    for name, m in doc.get("models", {}).items():
        try:
            models[name] = profile_from_dict(m, source=source, name=name, where=f"models.{name}.")
        except InputError as exc:
            problems.extend(exc.problems)
    jobs = []
    for i, j in enumerate(doc["jobs"]):
        prof = None
        mname = j.get("model")
        if mname is not None:
            prof = models.get(mname)
            if prof is None:
                try:
                    prof = load_profile(mname)
                except InputError:
                    problems.append(f"jobs[{i}].model: unknown model {mname!r}; expected one of the "
                                    f"instance's models {sorted(models)} or "
                                    f"{', '.join(available_models())}")
        jobs.append(job_from_doc(j, prof))
    problems.extend(model_problems(cluster, jobs))
    if problems:
        raise InputError(problems, source)
    meta = {k: doc[k] for k in ("description", "generator", "known_optimum") if k in doc}
    return Instance(doc.get("name", Path(source).stem), cluster, tuple(jobs), frozen_map(models),
                    frozen_map(meta))


def load_instance(path) -> Instance:
    """Read and validate an instance file; raises [`InputError`][alloc.errors.InputError] naming
the
    file, the field and what was expected.

    A name that is not an existing file but names a shipped instance
    (`alloc.shipped.names("instances")`) reads the shipped one.

    Examples
    --------
    >>> from alloc import load_instance
    >>> inst = load_instance("tiny-grid")          # a shipped instance, by name
    >>> inst.name, inst.cluster.total_gpus
    ('tiny-grid', 8)
    >>> load_instance("no-such-file.json")
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: no-such-file.json: no such instance file (nor a shipped instance: ...)
    """
    p = resolve(path, "instances")
    if not _exists(p):
        raise InputError(f"{path}: no such instance file (nor a shipped instance: "
                         f"{', '.join(shipped_names('instances'))})")
    return instance_from_dict(read_json(p, "instance file"), str(path))


def share_to_dict(g: GpuShare) -> dict:
    """A GPU share in its file form (``mem`` and ``compute`` only when set)."""
    d: dict[str, Any] = {"gpu": g.gpu, "milli": g.milli}
    if g.mem is not None:
        d["mem"] = g.mem
    if g.compute is not None:
        d["compute"] = g.compute
    return d


def placement_to_dict(p: Placement, with_job: bool = True) -> dict:
    """A Placement in its file form."""
    d: dict[str, Any] = {"job": p.job} if with_job else {}
    d.update(gpus=[share_to_dict(g) for g in p.gpus],
             cpu=dict(p.cpu), mem=dict(p.mem), throughput=p.throughput)
    if p.batch is not None:
        d.update(batch=p.batch, accum=p.accum)
    return d


def job_to_dict(j: Job) -> dict:
    """A Job in its instance-file form (defaults left out)."""
    d: dict[str, Any] = {"id": j.id, "gpus": j.gpus}
    if j.gpu_milli != 1000:
        d["gpu_milli"] = j.gpu_milli
    d.update(cpu=j.cpu, mem=j.mem)
    if j.gpu_types:
        d["gpu_types"] = list(j.gpu_types)
    for k in ("locality", "preferred", "model", "tenant"):
        if getattr(j, k) is not None:
            d[k] = getattr(j, k)
    if j.tenant is not None or j.guaranteed:
        d["guaranteed"] = j.guaranteed
    if j.priority:
        d["priority"] = j.priority
    if j.weight != 1.0:
        d["weight"] = j.weight
    if j.current is not None:
        d["current"] = placement_to_dict(j.current, with_job=False)
    for k in ("min_gpus", "max_gpus", "gpu_mem", "gpu_compute", "gpu_mem_min", "gpus_per_server"):
        if getattr(j, k) is not None:
            d[k] = getattr(j, k)
    return d


def server_to_dict(s: Server) -> dict:
    """A Server in its instance-file form (defaults left out)."""
    d: dict[str, Any] = {"id": s.id}
    if s.rack is not None:
        d["rack"] = s.rack
    others = {k: v for k, v in s.domains.items() if k != "rack"}
    if others:
        d["domains"] = others
    d.update(cpu=s.cpu, mem=s.mem, gpus=s.gpus)
    if s.gpu_type is not None:
        d["gpu_type"] = s.gpu_type
    if s.sockets != 1:
        d["sockets"] = s.sockets
    if s.switches_per_socket != 1:
        d["switches_per_socket"] = s.switches_per_socket
    if s.gpu_mem is not None:
        d["gpu_mem"] = s.gpu_mem
    return d


def instance_to_dict(inst: Instance) -> dict:
    """An Instance as an ``alloc.instance/1`` document (``alloc.instance/1.1``
    when a job has ``gpus_per_server``).

    Examples
    --------
    >>> from alloc import instance_to_dict, load_instance
    >>> d = instance_to_dict(load_instance("tiny-grid"))
    >>> d["format"], [s["id"] for s in d["cluster"]["servers"]]
    ('alloc.instance/1', ['s00', 's01'])
    """
    c = inst.cluster
    even = any(j.gpus_per_server is not None for j in inst.jobs)
    d: dict[str, Any] = {"format": INSTANCE_FORMAT_EVEN if even else INSTANCE_FORMAT,
                         "name": inst.name}
    for k in ("description", "generator", "known_optimum"):
        if k in inst.meta:
            d[k] = inst.meta[k]
    d["cluster"] = {"levels": list(c.levels), "servers": [server_to_dict(s) for s in c.servers]}
    if inst.models:
        d["models"] = {k: profile_to_dict(p) for k, p in inst.models.items()}
    if c.tenants:
        d["tenants"] = {k: {"cells": [dict({"level": x.level, "count": x.count},
                                           **({"gpu_type": x.gpu_type} if x.gpu_type else {}))
                                      for x in t.cells]}
                        for k, t in c.tenants.items()}
    d["jobs"] = [job_to_dict(j) for j in inst.jobs]
    return d


#: Significant digits of a float written to JSON: enough for any figure alloc
#: computes, few enough to drop the last-bit noise of sums (76.39999999999999).
FLOAT_DIGITS = 12


def plain_numbers(v: Any) -> Any:
    """``v`` with every finite float rounded to `FLOAT_DIGITS` significant digits
    (dicts, lists and tuples walked; other values as they are).

    Examples
    --------
    >>> plain_numbers({"value": 76.39999999999999, "jobs": [0.1 + 0.2, 3]})
    {'value': 76.4, 'jobs': [0.3, 3]}
    """
    if isinstance(v, float):
        return float(f"{v:.{FLOAT_DIGITS}g}") if math.isfinite(v) else v
    if isinstance(v, dict):
        return {k: plain_numbers(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_numbers(x) for x in v]
    return v


def compact_json(doc: Mapping, rows: tuple[str, ...] = ("servers", "jobs", "placements")) -> str:
    """Indented JSON with one line per server, job and placement (floats
    through `plain_numbers`)."""
    doc = plain_numbers(dict(doc))

    def enc(v, key, depth):
        pad = " " * depth
        if isinstance(v, dict) and v and key not in rows:
            items = [f'{pad} {json.dumps(k)}: {enc(x, k, depth + 1)}' for k, x in v.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(v, list) and v and key in rows:
            items = [f"{pad} {json.dumps(x)}" for x in v]
            return "[\n" + ",\n".join(items) + f"\n{pad}]"
        return json.dumps(v, allow_nan=False)
    return enc(dict(doc), None, 0) + "\n"


def dump_instance(inst: Instance, path=None) -> str:
    """The instance as JSON text (written to ``path`` when given).

    Examples
    --------
    >>> import json
    >>> from alloc import dump_instance, load_instance
    >>> text = dump_instance(load_instance("tiny-grid"))
    >>> json.loads(text)["format"], text.splitlines()[1]
    ('alloc.instance/1', ' "format": "alloc.instance/1",')
    """
    text = compact_json(instance_to_dict(inst))
    if path is not None:
        Path(path).write_text(text)
    return text


# ---------------------------------------------------------------- allocations
def allocation_to_dict(a: Allocation) -> dict:
    """An Allocation as an ``alloc.allocation/1`` document.

    Examples
    --------
    >>> from alloc import allocate, allocation_to_dict, load_instance
    >>> inst = load_instance("tiny-grid")
    >>> d = allocation_to_dict(allocate(inst.cluster, inst.jobs, instance=inst.name))
    >>> d["format"], d["status"], d["instance"]
    ('alloc.allocation/1', 'feasible', 'tiny-grid')
    """
    return {
        "format": ALLOCATION_FORMAT, "instance": a.instance, "solver": a.solver,
        "objective": a.objective, "status": a.status.value, "value": a.value,
        "bound": a.bound, "gap": a.gap, "wall_time_s": round(a.wall_time_s, 6),
        "stats": {k: v for k, v in a.stats.items() if _jsonable(v)},
        "placements": [placement_to_dict(p) for p in a.placements],
        "unplaced": list(a.unplaced), "preempted": list(a.preempted),
        "moved": list(a.moved), "reasons": dict(a.reasons),
    }


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def allocation_from_dict(doc: Any, source: str = "<allocation>") -> Allocation:
    """Build an [`Allocation`][alloc.model.Allocation] from a parsed file (checked against the
schema)."""
    check_format(doc, ALLOCATION_FORMAT, source)
    problems = schema_problems(doc, "allocation")
    if problems:
        raise InputError(problems, source)
    return Allocation(
        tuple(placement_from_dict(p) for p in doc["placements"]), tuple(doc["unplaced"]),
        tuple(doc.get("preempted", ())), Status(doc.get("status", "unknown")),
        float(doc.get("value", 0.0)), doc.get("bound"), float(doc.get("wall_time_s", 0.0)),
        doc.get("solver", ""), doc.get("objective", ""), doc.get("instance", ""),
        frozen_map(doc.get("stats", {})), tuple(doc.get("moved", ())),
        frozen_map(doc.get("reasons", {})))


def load_allocation(path) -> Allocation:
    """Read and check an allocation file.

    Examples
    --------
    >>> from alloc import allocate, dump_allocation, load_allocation, load_instance, violations
    >>> inst = load_instance("tiny-grid")
    >>> _ = dump_allocation(allocate(inst.cluster, inst.jobs), "a.json")
    >>> violations(inst.cluster, inst.jobs, load_allocation("a.json"))
    []
    """
    return allocation_from_dict(read_json(path, "allocation file"), str(path))


def dump_allocation(a: Allocation, path=None) -> str:
    """The allocation as ``alloc.allocation/1`` JSON (written to ``path`` when given).

    Examples
    --------
    >>> from alloc import allocate, dump_allocation, load_allocation, load_instance
    >>> inst = load_instance("tiny-grid")
    >>> a = allocate(inst.cluster, inst.jobs)
    >>> text = dump_allocation(a, "a.json")          # also written to a.json
    >>> load_allocation("a.json").placements == a.placements
    True
    """
    text = compact_json(allocation_to_dict(a))
    if path is not None:
        Path(path).write_text(text)
    return text

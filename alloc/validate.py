"""Validation of a cluster and its jobs by meaning -- the same for files and
for objects built in Python.

What a JSON Schema cannot say, and what Python objects can get wrong that a
file cannot: the type of every field (``gpu_types="V100"`` is refused, not read
as the type ``'V'``), integers within 0..2**53, finite weights, unique ids,
level order, servers whose GPUs split evenly over sockets and switches, GPU
types and locality levels that exist, gang and sharing rules, profiles within
the model schema (the same checks as ``models/*.json``), tenants that exist,
cells of one size per GPU type and level, and running jobs' ``current``
placements: each valid on its own (GPUs, gang, shares, type, locality, CPU and
memory), together within capacity, and consistent with the tenancy rules.

A well-formed job that cannot be placed on this cluster now (GPU type absent,
wider than any server) is *not* an input problem: it stays unplaced with a
reason (`alloc.problem.placeable_reason`).

Every problem is reported with its field path (``jobs[3].gpu_milli``) and what
was expected; `validate_model` raises one `InputError` holding all.

Valid input that probably does not mean what it says gets an
`alloc.InputWarning` (`model_warnings`, issued by `prepare`): a job whose
CPU or memory per GPU is below every point of its profile's grid (it runs at
throughput 0 at its request, so a solver gains nothing by placing it and an
exact one may leave it out or stop it), and a GPU type a job may use that its
profile gives no speed for (it is counted at speed 1.0 there, the reference
type's).  The command line prints each as one `alloc: warning:` line.
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import Any, Mapping, Sequence

from .check import capacity_problems, placement_problems
from .errors import InputError, InputWarning
from .model import (DEFAULT_GPU_TYPE, MAX_NAME, MILLI, Allocation, Cluster, FrozenMap, Job,
                    Placement, Profile, Server)
from .profiles import is_checked, profile_problems, profile_to_dict, resolve_models

PRIORITY_RANGE = (-1000, 1000)
#: Largest integer quantity accepted (exact in a double).
MAX_INT = 2 ** 53 - 1
#: Largest job weight accepted.
MAX_WEIGHT = 1e9


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_problem(where: str, v: Any, lo: int = 0, hi: int = MAX_INT) -> str | None:
    if not _is_int(v) or not lo <= v <= hi:
        return f"{where}: expected an integer in {lo}..{hi}, got {v!r}"
    return None


def _name_problem(where: str, v: object, *, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v or len(v) > MAX_NAME:
        return (f"{where}: expected a non-empty string of at most {MAX_NAME} characters, "
                f"got {short_repr(v)}")
    return None


def short_repr(v: object) -> str:
    """`repr(v)` cut to 60 characters, for a value quoted in an error line.

    Examples
    --------
    >>> short_repr("x" * 100)[-5:], len(short_repr("x" * 100))
    ('xx...', 60)
    """
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def check_call_settings(seed: object, max_moves: object, move_cost: object) -> None:
    """The per-call settings of [`alloc.allocate`][alloc.solve.allocate] and of a
    [`Session`][alloc.session.Session]: ``seed`` an integer, ``max_moves`` an
    integer >= 0 or None, ``move_cost`` a finite number >= 0 or None.

    Raises
    ------
    InputError
        One line naming the setting and what was expected.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed: expected an integer, got {short_repr(seed)}")
    if max_moves is not None and (isinstance(max_moves, bool) or not isinstance(max_moves, int)
                                  or max_moves < 0):
        raise InputError(f"max_moves: expected an integer >= 0 or None, got {short_repr(max_moves)}")
    if move_cost is not None and (isinstance(move_cost, bool)
                                  or not isinstance(move_cost, (int, float))
                                  or not 0 <= move_cost < float("inf")):
        raise InputError(f"move_cost: expected a number >= 0, got {short_repr(move_cost)}")


# ------------------------------------------------------------------- cluster
def cluster_problems(cluster: Cluster) -> list[str]:
    """Problems of the cluster alone (levels, servers)."""
    from .topology import level_problems
    out = level_problems(cluster.levels)
    lv = list(cluster.levels) if not out else []
    if not isinstance(cluster.servers, tuple) or not cluster.servers:
        return out + ["cluster.servers: expected a non-empty tuple of servers"]
    dup = [k for k, n in Counter(s.id for s in cluster.servers if isinstance(s, Server)).items()
           if n > 1]
    if dup:
        out.append(f"cluster.servers: duplicate server id {dup[0]!r}")
    for i, s in enumerate(cluster.servers):
        out += server_problems(s, f"cluster.servers[{i}]", lv)
    return out


def server_problems(s: Any, where: str, levels: Sequence[str]) -> list[str]:
    """Problems of one server."""
    if not isinstance(s, Server):
        return [f"{where}: expected a Server, got {short_repr(s)}"]
    out = [p for p in (_name_problem(f"{where}.id", s.id),
                       _int_problem(f"{where}.cpu", s.cpu, 1), _int_problem(f"{where}.mem", s.mem, 1),
                       _int_problem(f"{where}.gpus", s.gpus, 0, 2 ** 20),
                       _int_problem(f"{where}.sockets", s.sockets, 1, 1024),
                       _int_problem(f"{where}.switches_per_socket", s.switches_per_socket, 1, 1024),
                       _name_problem(f"{where}.gpu_type", s.gpu_type, optional=True),
                       _name_problem(f"{where}.rack", s.rack, optional=True),
                       None if s.gpu_mem is None else _int_problem(f"{where}.gpu_mem", s.gpu_mem, 1))
           if p]
    if out:
        return out
    if "/" in s.id:
        out.append(f"{where}.id: expected a name without '/', got {s.id!r}")
    out += domain_problems(s, where, levels)
    if s.gpus and s.gpus % s.sockets:
        out.append(f"{where}.sockets: {s.gpus} GPUs do not split evenly over {s.sockets} sockets")
    elif s.gpus and (s.gpus // s.sockets) % s.switches_per_socket:
        out.append(f"{where}.switches_per_socket: {s.gpus // s.sockets} GPUs per socket do not "
                   f"split evenly over {s.switches_per_socket} switches")
    return out


def domain_problems(s: Server, where: str, levels: Sequence[str]) -> list[str]:
    """A server's domains: one (a non-empty name) at every level of the
    cluster above the server, none at a level the cluster lacks (``rack``
    excepted: the first files give a rack without the level), and
    ``rack`` the same as ``domains["rack"]``."""
    from .topology import is_outer
    d = s.domains
    if type(d) is FrozenMap:
        dd, want = d._d, _outer_keys(tuple(levels))
        keys = dd.keys()
        if (keys == want[0] or keys == want[1]) and (s.rack is None or dd.get("rack") == s.rack) \
                and all(type(v) is str and 0 < len(v) <= MAX_NAME for v in dd.values()):
            return []                     # the common case, tested without messages
    if not isinstance(d, Mapping):
        return [f"{where}.domains: expected an object of level name -> domain id, "
                f"got {short_repr(d)}"]
    out = []
    for k, v in d.items():
        if not isinstance(k, str) or (k not in levels and k != "rack"):
            known = [x for x in levels if is_outer(x)]
            out.append(f"{where}.domains: level {k!r} is not a level of the cluster above "
                       f"the servers; expected some of {known}")
        elif not isinstance(v, str) or not v or len(v) > MAX_NAME:
            out.append(f"{where}.domains.{k}: expected a non-empty domain id of at most "
                       f"{MAX_NAME} characters, got {short_repr(v)}")
    if out:
        return out[:1]
    if s.rack is not None and d.get("rack") not in (None, s.rack):
        return [f"{where}.rack: {s.rack!r} differs from domains.rack {d['rack']!r} (rack is the "
                f"short form of domains.rack)"]
    for lv in levels:
        if is_outer(lv) and not d.get(lv):
            what = "a rack name" if lv == "rack" else f"its domain at level {lv!r}"
            field = "rack" if lv == "rack" and not d else "domains"
            return [f"{where}.{field}: expected {what} (cluster.levels has {lv!r})"]
    return out


@lru_cache(maxsize=64)
def _outer_keys(levels: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """The domain keys a server of these levels gives: the levels above the
    servers, and the same with ``rack``."""
    from .topology import is_outer
    outer = frozenset(lv for lv in levels if is_outer(lv))
    return outer, outer | {"rack"}


# ---------------------------------------------------------------------- jobs
def job_field_problems(j: Any, where: str, cluster: Cluster) -> list[str]:
    """Problems of one job's fields (types, ranges, names that must exist)."""
    if not isinstance(j, Job):
        return [f"{where}: expected a Job, got {short_repr(j)}"]
    out = [p for p in (_name_problem(f"{where}.id", j.id),
                       _int_problem(f"{where}.gpus", j.gpus, 0, 2 ** 20),
                       _int_problem(f"{where}.cpu", j.cpu), _int_problem(f"{where}.mem", j.mem),
                       _int_problem(f"{where}.gpu_milli", j.gpu_milli, 1, MILLI),
                       _int_problem(f"{where}.priority", j.priority, *PRIORITY_RANGE),
                       _name_problem(f"{where}.model", j.model, optional=True),
                       _name_problem(f"{where}.tenant", j.tenant, optional=True)) if p]
    if not isinstance(j.gpu_types, tuple) or not all(isinstance(t, str) for t in j.gpu_types):
        out.append(f"{where}.gpu_types: expected a tuple of GPU type names, got {short_repr(j.gpu_types)}")
    if not isinstance(j.guaranteed, bool):
        out.append(f"{where}.guaranteed: expected true or false, got {short_repr(j.guaranteed)}")
    w = j.weight
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
            or not 0 <= w <= MAX_WEIGHT:
        out.append(f"{where}.weight: expected a number in 0..{MAX_WEIGHT:g}, got {short_repr(w)}")
    for name, lo, hi in (("min_gpus", 1, 2 ** 20), ("max_gpus", 1, 2 ** 20), ("gpu_mem", 0, MAX_INT),
                         ("gpu_mem_min", 0, MAX_INT), ("gpu_compute", 1, MILLI)):
        v = getattr(j, name)
        if v is not None:
            p = _int_problem(f"{where}.{name}", v, lo, hi)
            if p:
                out.append(p)
    for name in ("locality", "preferred"):
        v = getattr(j, name)
        if v is not None and not isinstance(v, str):
            out.append(f"{where}.{name}: expected a level name, got {short_repr(v)}")
    if j.current is not None and not isinstance(j.current, Placement):
        out.append(f"{where}.current: expected a Placement, got {short_repr(j.current)}")
    if j.profile is not None and not isinstance(j.profile, Profile):
        out.append(f"{where}.profile: expected a Profile, got {short_repr(j.profile)}")
    return out


def job_rule_problems(j: Job, where: str, cluster: Cluster) -> list[str]:
    """Problems of one well-typed job against the rules and the cluster."""
    out = []
    if j.gpu_milli < MILLI and j.gpus != 1:
        out.append(f"{where}.gpu_milli: a share below 1000 needs gpus == 1, job has {j.gpus}")
    # a GPU type no server has now is not bad input: the job waits with a
    # reason (Problem.reasons), the others are solved
    for name in ("locality", "preferred"):
        v = getattr(j, name)
        if v is not None and v not in cluster.levels:
            out.append(f"{where}.{name}: level {v!r} is not in cluster.levels "
                       f"{list(cluster.levels)} (the cluster lacks it)")
    if j.guaranteed and j.tenant is None:
        out.append(f"{where}.guaranteed: a guaranteed job needs a tenant")
    if j.tenant is not None and j.tenant not in cluster.tenants:
        known = sorted(cluster.tenants)
        out.append(f"{where}.tenant: unknown tenant {j.tenant!r}; "
                   + (f"expected one of {known}" if known else "the cluster declares no tenants"))
    if j.min_gpus is not None and not 1 <= j.min_gpus <= j.gpus:
        out.append(f"{where}.min_gpus: expected 1 <= min_gpus <= gpus ({j.gpus}), got {j.min_gpus}")
    if j.max_gpus is not None and j.max_gpus < j.gpus:
        out.append(f"{where}.max_gpus: expected max_gpus >= gpus ({j.gpus}), got {j.max_gpus}")
    return out + gpu_memory_problems(j, where, cluster)


def gpu_memory_problems(j: Job, where: str, cluster: Cluster) -> list[str]:
    """A job's GPU memory against its own fields and the cluster's GPUs: a
    ``gpu_mem_min`` needs ``gpu_mem`` and is at most it; the least memory the
    job runs with must fit some GPU of a type it allows (when the cluster has
    one: else it waits with a reason)."""
    from .resources import server_gpu_mem
    if j.gpu_mem_min is not None:
        if j.gpu_mem is None:
            return [f"{where}.gpu_mem_min: needs gpu_mem (the memory it wants)"]
        if j.gpu_mem_min > j.gpu_mem:
            return [f"{where}.gpu_mem_min: expected at most gpu_mem ({j.gpu_mem}), "
                    f"got {j.gpu_mem_min}"]
    if j.gpu_mem is None or not j.gpus:
        return []
    need = j.gpu_mem if j.guaranteed or j.gpu_mem_min is None else j.gpu_mem_min
    caps = [server_gpu_mem(s) for s in cluster.servers if s.gpus and j.allows(s.gpu_type)]
    if caps and need > max(caps):
        field = "gpu_mem" if need == j.gpu_mem else "gpu_mem_min"
        return [f"{where}.{field}: {need} MiB exceeds the memory of every GPU it may use "
                f"(largest {max(caps)} MiB)"]
    return []


def _plain(j: Job, levels: frozenset[str]) -> bool:
    """A job of the common kind, well formed: every field of its type and in
    range, no tenant, no elastic sizes, no GPU memory or compute, a known
    locality level.  Tested without building a message; when it holds,
    `job_field_problems` and `job_rule_problems` find nothing."""
    if type(j) is not Job:
        return False
    i, g, m, w, loc, types = j.id, j.gpus, j.gpu_milli, j.weight, j.locality, j.gpu_types
    return (type(i) is str and 0 < len(i) <= MAX_NAME
            and type(g) is int and 0 <= g <= 2 ** 20
            and type(j.cpu) is int and 0 <= j.cpu <= MAX_INT
            and type(j.mem) is int and 0 <= j.mem <= MAX_INT
            and type(m) is int and 1 <= m <= MILLI and (m == MILLI or g == 1)
            and type(j.priority) is int and PRIORITY_RANGE[0] <= j.priority <= PRIORITY_RANGE[1]
            and (j.model is None or (type(j.model) is str and 0 < len(j.model) <= MAX_NAME))
            and j.tenant is None and j.guaranteed is False
            and type(w) in (int, float) and 0 <= w <= MAX_WEIGHT
            and type(types) is tuple and all(type(t) is str for t in types)
            and j.min_gpus is None and j.max_gpus is None and j.gpu_mem is None
            and j.gpu_mem_min is None and j.gpu_compute is None
            and (loc is None or (type(loc) is str and loc in levels))
            and (j.preferred is None or (type(j.preferred) is str and j.preferred in levels))
            and (j.current is None or type(j.current) is Placement)
            and (j.profile is None or type(j.profile) is Profile))


def job_problems(cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    """Problems of the jobs (fields, rules, running jobs' placements)."""
    from .profiles import is_checked
    out = []
    ok = []
    levels = frozenset(cluster.levels)
    for i, j in enumerate(jobs):
        if _plain(j, levels):
            bad = [] if j.profile is None or is_checked(j.profile) else \
                profile_object_problems(j.profile, f"jobs[{i}].profile")
        else:
            where = f"jobs[{i}]"
            bad = job_field_problems(j, where, cluster)
            if not bad:
                bad = job_rule_problems(j, where, cluster)
            if not bad and j.profile is not None:
                bad = profile_object_problems(j.profile, f"{where}.profile")
        out += bad
        if not bad:
            ok.append((i, j))
    dup = [k for k, n in Counter(j.id for j in jobs if isinstance(j, Job)
                                 and isinstance(j.id, str)).items() if n > 1]
    if dup:
        out.append(f"jobs: duplicate job id {dup[0]!r}")
    if not out:
        out += current_problems(cluster, ok)
    return out


def current_problems(cluster: Cluster, jobs: Sequence[tuple[int, Job]]) -> list[str]:
    """Running jobs' ``current`` placements: each valid, together within
    capacity and consistent with tenancy."""
    out: list[str] = []
    running = [(i, j, j.current) for i, j in jobs if j.current is not None]
    for i, j, c in running:
        if c.job not in ("", j.id):
            out.append(f"jobs[{i}].current.job: expected {j.id!r} or nothing, got {c.job!r}")
        out += placement_problems(cluster, j, c, f"jobs[{i}].current")
    if out or not running:
        return out
    cur = [c if c.job == j.id else replace(c, job=j.id) for _, j, c in running]
    out += [f"jobs: running jobs' current placements overlap: {p}"
            for p in capacity_problems(cluster, cur)]
    from .resources import capacity_problems as gpu_problems
    out += [f"jobs: running jobs' current placements overlap: {p}"
            for p in gpu_problems(cluster, [j for _, j, _ in running], cur)]
    if out:
        return out
    if cluster.tenants and any(j.guaranteed for _, j, _ in running):
        from .tenancy import tenancy_violations
        alloc = Allocation(tuple(cur), tuple(j.id for _, j in jobs if j.current is None))
        out += [f"jobs: running jobs' current placements break tenancy: {p}"
                for p in tenancy_violations(cluster, [j for _, j in jobs], alloc)]
    return out


# ------------------------------------------------------------------ profiles
_PROFILE_OK: dict[int, tuple[Any, ...]] = {}


def profile_object_problems(prof: Profile, where: str) -> list[str]:
    """A [`Profile`][alloc.model.Profile] built in Python, checked like a ``models/`` file."""
    if is_checked(prof):
        return []
    hit = _PROFILE_OK.get(id(prof))
    if hit is not None and hit[0] is prof:
        return list(hit[1])
    try:
        doc = profile_to_dict(prof)
        out = profile_problems(doc, f"{where}.")
    except (TypeError, ValueError, AttributeError) as exc:
        out = [f"{where}: not a valid profile ({type(exc).__name__}: {exc})"]
    if len(_PROFILE_OK) > 1024:
        _PROFILE_OK.clear()
    _PROFILE_OK[id(prof)] = (prof, tuple(out))
    return out


# ------------------------------------------------------------------ entries
def model_problems(cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    """Every problem of the cluster, its tenants and the jobs."""
    out = cluster_problems(cluster)
    if out:
        return out
    from .tenancy import tenant_problems
    out.extend(tenant_problems(cluster))
    if out:
        return out
    if not isinstance(jobs, (tuple, list)):
        return [f"jobs: expected a sequence of jobs, got {short_repr(jobs)}"]
    return out + job_problems(cluster, jobs)


def validate_model(cluster: Cluster, jobs: Sequence[Job], source: str | None = None) -> None:
    """Raise one [`InputError`][alloc.errors.InputError] holding every problem (see the module
notes)."""
    problems = model_problems(cluster, jobs)
    if problems:
        raise InputError(problems, source)


def prepare(cluster: Cluster, jobs: Sequence[Job], source: str | None = None
            ) -> tuple[Cluster, tuple[Job, ...]]:
    """Validated input with model names resolved to profiles (from ``models/``),
    GPU servers without a type given `DEFAULT_GPU_TYPE`, and
    jobs that declare GPU memory limited to the GPU types that can hold it
    (`alloc.resources.restrict_types`).

    Raises
    ------
    InputError
        Every problem found, the first one in the message.
    """
    if not isinstance(cluster, Cluster):
        raise InputError(f"cluster: expected a Cluster, got {short_repr(cluster)}", source)
    if any(isinstance(s, Server) and s.gpus and s.gpu_type is None for s in cluster.servers):
        cluster = replace(cluster, servers=tuple(
            replace(s, gpu_type=DEFAULT_GPU_TYPE) if isinstance(s, Server) and s.gpus
            and s.gpu_type is None else s for s in cluster.servers))
    given: Any = tuple(jobs) if isinstance(jobs, (list, tuple)) else jobs
    problems: list[str] = []
    if isinstance(given, tuple):
        given, problems = resolve_models(given)
    problems += model_problems(cluster, given)
    if problems:
        raise InputError(problems, source)
    from .resources import restrict_types
    out = restrict_types(cluster, given)
    warn_model(cluster, out, source)
    return cluster, out


# ------------------------------------------------------------------ warnings
def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(x) for x in ids[:3])
    more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
    return f"job{'s' if len(ids) > 1 else ''} {shown}{more}"


def _grid_start(prof: Profile) -> str:
    """Where the grid's feasible points start, in words."""
    cells = [(c, m) for i, c in enumerate(prof.cpu_per_gpu) for k, m in enumerate(prof.mem_per_gpu)
             if (prof.tput[i][k] or 0) > 0]
    if not cells:
        return "it has no point of positive speed"
    return (f"it starts at {min(c for c, _ in cells)} milli-CPU and "
            f"{min(m for _, m in cells)} MiB per GPU")


def model_warnings(cluster: Cluster, jobs: Sequence[Job]) -> list[str]:
    """What valid input probably does not mean (see the module notes), one
    line per model and request or per model and GPU type, naming the jobs.

    Parameters
    ----------
    cluster : Cluster
    jobs : sequence of Job
        Validated jobs with their profiles resolved.

    Returns
    -------
    list of str
        Empty when nothing is suspicious.
    """
    groups: dict[tuple[Any, ...], list[Any]] = {}
    seen: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    types = cluster.gpu_types
    for j in jobs:
        prof = j.profile
        if prof is None or not j.gpus:
            continue
        key = (id(prof), j.gpus, j.cpu, j.mem, j.gpu_types)
        found = seen.get(key)
        if found is None:
            found = seen[key] = _suspicious(j, types)
        for k in found:
            groups.setdefault(k, [prof]).append(j.id)
    out = []
    for (kind, _, a, b), (prof, *ids) in groups.items():
        if kind == "grid":
            out.append(f"{_named(ids)}: {a:g} milli-CPU and {b:g} MiB per GPU is below every "
                       f"point of model {prof.name!r}'s grid ({_grid_start(prof)}): at its "
                       f"request such a job runs at throughput 0, so a solver gains nothing by "
                       f"placing it and may leave it out or stop it")
        else:
            out.append(f"{_named(ids)}: model {prof.name!r} gives no speed for GPU type {a!r} "
                       f"(it gives {', '.join(sorted(prof.gpu_speed))}), so there the job "
                       f"counts at speed 1.0")
    return out


def _suspicious(j: Job, types: Sequence[str]) -> tuple[Any, ...]:
    """The warning groups one job belongs to (`model_warnings`)."""
    prof, out = j.profile, []
    if prof is None:
        return ()
    per_cpu, per_mem = j.cpu / j.gpus, j.mem / j.gpus
    if prof.has_grid and prof.grid_value(per_cpu, per_mem) <= 0:
        out.append(("grid", id(prof), per_cpu, per_mem))
    types_out: list[tuple[Any, ...]] = []
    if prof.gpu_speed:
        types_out = [("type", id(prof), t, None) for t in types
                     if t not in prof.gpu_speed and t != prof.reference_gpu and j.allows(t)]
    return tuple(out) + tuple(types_out)


def warn_model(cluster: Cluster, jobs: Sequence[Job], source: str | None = None) -> None:
    """Issue each of `model_warnings` as an `alloc.InputWarning`, shown at
    the caller's line outside alloc."""
    msgs = model_warnings(cluster, jobs)
    if msgs:
        level = _outside_stacklevel()
        for msg in msgs:
            warnings.warn(f"{source}: {msg}" if source else msg, InputWarning, stacklevel=level)


def _outside_stacklevel() -> int:
    """The `stacklevel` of the first caller outside this package."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: Any = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


__all__ = ["MAX_INT", "MAX_NAME", "MAX_WEIGHT", "PRIORITY_RANGE", "cluster_problems",
           "current_problems", "job_problems", "model_problems",
           "model_warnings", "prepare",
           "resolve_models", "validate_model", "warn_model"]

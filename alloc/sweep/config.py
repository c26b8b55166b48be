"""Sweep configuration (``alloc.sweep/1``): loading and validation.

A sweep config is a JSON object (schema ``alloc/schemas/sweep.schema.json``)
with up to three sections, each a grid:

```json
{"format": "alloc.sweep/1", "name": "demo", "seeds": [0, 1],
 "allocation": {"instances": ["../instances/tiny-grid.json",
                              {"generator": "synergy", "params": {"servers": 4}}],
                "solvers": ["proportional", "best-fit"],
                "objectives": ["throughput"], "time_limits": [10],
                "repeats": 1, "warmup": 1},
 "simulation": {"configs": ["synergy-main.json"],
                "vary": {"allocator": ["proportional", "synergy-tune"],
                         "workload.jobs_per_hour": [8, 9]},
                "seeds": "0-19", "horizon_h": 1500},
 "openb": {"workloads": ["default", "cpu050"], "policies": ["fgd", "best-fit"],
           "seeds": "42-51", "tune": 1.3}}
```

* Paths are relative to the config file.
* ``seeds``: a list of integers or a string of integers and ranges
  (``"42-51"``, ``"0,3,7-9"``); a section without seeds uses the top-level
  ones (default ``[0]``).
* ``allocation.instances``: instance files, or generator specs
  (`alloc.experiments.generators`) whose ``seed`` is fixed or, when
  absent, the run's seed.
* ``allocation.solvers``: solver names (built-in, plug-ins, registered) or
  ``"module:function"`` texts; ``repeats`` (default 1) runs each grid point
  that many times; ``warmup`` (default 1) is the number of untimed calls each
  solver gets in each worker process before its first timed one (the page
  "Bench and sweep rows" says how runs are timed).
* ``simulation.configs``: ``alloc simulate`` configs (files or inline objects);
  ``vary`` maps a dotted field (``workload.jobs_per_hour``) to the values to
  sweep; each seed replaces ``workload.seed``; ``horizon_h`` caps a synthetic
  run at the expected arrival of the window's last job plus that many hours
  (``max_time_s``, as ``bench/synergy.py`` does), unless the config sets
  ``max_time_s`` itself.
* ``openb``: workload names (``openb_pod_list_<name>.csv`` in ``data_dir``,
  default the shared openb folder) or pod CSV paths, FGD policies, ``tune``
  (default 1.3).

Every problem raises `InputError` with one line naming the
file, the field and what was expected, before any run starts.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from ..io import read_json
from ..model import frozen_map

FORMAT = "alloc.sweep/1"
DEFAULT_SEEDS = (0,)
DEFAULT_TUNE = 1.3


@dataclass(frozen=True)
class InstanceSpec:
    """One instance of the allocation grid: a file or a generator call.

    ``label`` is the path as written in the config or ``generator(k=v, ...)``;
    ``path`` the resolved file; ``digest`` the first 16 hex digits of the
    file's SHA-256 (a changed file gives new run keys).
    """
    label: str
    path: str | None = None
    digest: str | None = None
    generator: str | None = None
    params: Mapping[str, Any] = field(default_factory=frozen_map)
    seed: int | None = None


@dataclass(frozen=True)
class SimSpec:
    """One simulation config after ``vary`` was applied (``doc`` is JSON)."""
    label: str
    doc: Mapping[str, Any]
    base: str
    vary: Mapping[str, Any] = field(default_factory=frozen_map)


@dataclass(frozen=True)
class AllocationSection:
    """The allocation grid: instances x solvers x objectives x time limits x
    seeds.

    Attributes
    ----------
    instances : tuple of InstanceSpec
        Instance files and generator calls.
    solvers : tuple of str
        Registered solver names.
    objectives : tuple of str
        Objective names (default ``("throughput",)``).
    objective_chosen : bool
        The config names its objectives.  When it does not, the runs record
        ``"throughput"`` but call `allocate()` without an objective, so a
        solver that places by its own rule adds no warning to the rows.
    seeds : tuple of int
        The section's seeds, else the top-level ones.
    time_limits : tuple of float or None
        Per-run time limits in seconds (default ``(None,)``: the solver's
        default).
    repeats : int
        Timed runs per grid point (default 1).
    warmup : int
        Untimed calls per solver and worker process before its first timed
        one (default 1).
    """
    instances: tuple[InstanceSpec, ...]
    solvers: tuple[str, ...]
    objectives: tuple[str, ...]
    seeds: tuple[int, ...]
    time_limits: tuple[float | None, ...]
    repeats: int = 1
    warmup: int = 1
    objective_chosen: bool = True


@dataclass(frozen=True)
class SimulationSection:
    """The simulation grid: configs (one per ``vary`` combination of each
    listed config) x seeds.

    Attributes
    ----------
    configs : tuple of SimSpec
        Validated simulate configs, without ``workload.seed``.
    seeds : tuple of int
        The section's seeds, else the top-level ones; each becomes a run's
        ``workload.seed``.
    """
    configs: tuple[SimSpec, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class OpenbSection:
    """The openb grid (the FGD experiment): workloads x policies x seeds.

    Attributes
    ----------
    workloads : tuple of (str, str, str)
        ``(name, resolved pod CSV path, digest)`` per workload.
    policies : tuple of str
        The FGD experiment's policy names (`alloc.experiments.openb.POLICY_NAMES`).
    seeds : tuple of int
        The section's seeds, else the top-level ones.
    tune : float
        Arrived GPU demand as a multiple of the cluster's GPU capacity
        (default 1.3).
    nodes : str
        Resolved path of the node CSV.
    nodes_digest : str
        `file_digest` of the node CSV.
    """
    workloads: tuple[tuple[str, str, str], ...]   # (name, resolved pod CSV, digest)
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    tune: float
    nodes: str
    nodes_digest: str


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep: its name, source file and sections (None = absent)."""
    name: str
    source: str
    allocation: AllocationSection | None = None
    simulation: SimulationSection | None = None
    openb: OpenbSection | None = None
    description: str = ""


# ------------------------------------------------------------------ helpers
def read_config(path) -> Any:
    """The JSON document of a config file (InputError naming the file)."""
    return read_json(path, "sweep config")


def parse_seeds(value, where: str) -> tuple[int, ...]:
    """Seeds from a list of integers or a string like ``"0-19"`` / ``"1,4,7-9"``."""
    if isinstance(value, list):
        return tuple(value)
    out: list[int] = []
    for part in str(value).split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            a, b = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise InputError(f"{where}: expected integers or ranges like '0-19', got "
                             f"{part.strip()!r}") from None
        if a < 0 or b < a:
            raise InputError(f"{where}: expected a range lo-hi with 0 <= lo <= hi, got "
                             f"{part.strip()!r}")
        out.extend(range(a, b + 1))
    return tuple(out)


def file_digest(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of the file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _resolve(base: Path, name: str) -> Path:
    p = Path(name)
    return p if p.is_absolute() else base / p


def _section_seeds(sec: Mapping, top: tuple[int, ...], where: str) -> tuple[int, ...]:
    return parse_seeds(sec["seeds"], f"{where}.seeds") if "seeds" in sec else top


# ------------------------------------------------------------------ sections
def _instance_spec(item, i: int, base: Path) -> InstanceSpec:
    where = f"allocation.instances[{i}]"
    if isinstance(item, str):
        from ..io import load_instance
        path = _resolve(base, item)
        if not path.is_file():
            raise InputError(f"{where}: instance file not found: {item}")
        load_instance(path)  # raises InputError naming the instance file and field
        return InstanceSpec(item, str(path.resolve()), file_digest(path))
    from ..experiments.generators import check_params
    params = dict(item.get("params", {}))
    try:
        check_params(item["generator"], params)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None
    args = [f"{k}={params[k]}" for k in sorted(params)]
    if "seed" in item:
        args.append(f"seed={item['seed']}")
    label = f"{item['generator']}({', '.join(args)})"
    return InstanceSpec(label, generator=item["generator"], params=frozen_map(params),
                        seed=item.get("seed"))


def _allocation(sec: Mapping, top, base: Path) -> AllocationSection:
    from ..objectives import OBJECTIVES
    from ..registry import use
    for i, s in enumerate(sec["solvers"]):
        try:
            use(s)
        except ValueError as exc:
            raise InputError(f"allocation.solvers[{i}]: {exc}") from None
    objectives = tuple(sec.get("objectives", ["throughput"]))
    for i, o in enumerate(objectives):
        if o not in OBJECTIVES:
            raise InputError(f"allocation.objectives[{i}]: unknown objective {o!r}; expected "
                             f"one of {', '.join(OBJECTIVES)}")
    instances = tuple(_instance_spec(x, i, base) for i, x in enumerate(sec["instances"]))
    return AllocationSection(instances, tuple(sec["solvers"]), objectives,
                             _section_seeds(sec, top, "allocation"),
                             tuple(sec.get("time_limits", [None])), sec.get("repeats", 1),
                             sec.get("warmup", 1), "objectives" in sec)


def set_dotted(doc: dict, dotted: str, value) -> None:
    """``doc["a"]["b"] = value`` for ``dotted == "a.b"`` (creating objects)."""
    keys = dotted.split(".")
    cur = doc
    for k in keys[:-1]:
        nxt = cur.get(k)
        if nxt is None:
            nxt = cur[k] = {}
        if not isinstance(nxt, dict):
            raise InputError(f"simulation.vary.{dotted}: {k!r} is not an object in the config")
        cur = nxt
    cur[keys[-1]] = value


def with_seed_and_cap(doc: Mapping, seed: int, horizon_h: float | None) -> dict:
    """A simulate config with ``workload.seed = seed`` and, for a synthetic
    workload without ``max_time_s``, the cap of ``horizon_h`` hours after the
    window's last expected arrival."""
    out = copy.deepcopy(dict(doc))
    w = out.setdefault("workload", {})
    w["seed"] = seed
    if horizon_h and "max_time_s" not in out and "trace" not in w and "jobs_per_hour" in w:
        from ..sim.cli import DEFAULT_WINDOW
        last = (w.get("window") or DEFAULT_WINDOW)[1]
        out["max_time_s"] = (last / float(w["jobs_per_hour"]) + horizon_h) * 3600.0
    return out


def _simulation(sec: Mapping, top, base: Path, source: str) -> SimulationSection:
    from ..sim.cli import build
    seeds = _section_seeds(sec, top, "simulation")
    vary = sec.get("vary", {})
    combos = [dict(zip(vary, vals)) for vals in itertools.product(*vary.values())]
    specs = []
    for i, item in enumerate(sec["configs"]):
        where = f"simulation.configs[{i}]"
        if isinstance(item, str):
            path = _resolve(base, item)
            if not path.is_file():
                raise InputError(f"{where}: simulation config not found: {item}")
            doc, label, cbase = read_config(path), item, path.resolve().parent
            if not isinstance(doc, dict):
                raise InputError(f"{item}: expected a JSON object (an alloc simulate config)")
        else:
            doc, label, cbase = item, f"configs[{i}]", base
        for combo in combos:
            d = copy.deepcopy(doc)
            for k, v in combo.items():
                set_dotted(d, k, v)
            d = with_seed_and_cap(d, seeds[0], sec.get("horizon_h"))
            tag = " with " + ", ".join(f"{k}={v}" for k, v in combo.items()) if combo else ""
            named = f"{where} ({item})" if isinstance(item, str) else where
            build(d, cbase, f"{named}{tag}")
            d["workload"].pop("seed")
            specs.append(SimSpec(label, d, str(cbase), frozen_map(combo)))
    return SimulationSection(tuple(specs), seeds)


def _openb(sec: Mapping, top, base: Path) -> OpenbSection:
    from ..experiments.openb import POLICY_NAMES, openb_dir
    for i, p in enumerate(sec["policies"]):
        if p not in POLICY_NAMES:
            raise InputError(f"openb.policies[{i}]: unknown policy {p!r}; expected one of "
                             f"{', '.join(POLICY_NAMES)} (the FGD experiment's online policies; "
                             f"any solver runs on openb-shaped instances in an allocation "
                             f"section)")
    data = _resolve(base, sec["data_dir"]) if "data_dir" in sec else openb_dir()
    nodes = _resolve(base, sec["nodes"]) if "nodes" in sec else \
        data / "openb_node_list_gpu_node.csv"
    if not nodes.is_file():
        raise InputError(f"openb.nodes: node CSV not found: {nodes}")
    workloads = []
    for i, w in enumerate(sec["workloads"]):
        path = _resolve(base, w) if w.endswith(".csv") else data / f"openb_pod_list_{w}.csv"
        if not path.is_file():
            raise InputError(f"openb.workloads[{i}]: pod CSV not found: {path}")
        name = path.stem[len("openb_pod_list_"):] if path.stem.startswith("openb_pod_list_") \
            else path.stem
        workloads.append((name, str(path.resolve()), file_digest(path)))
    return OpenbSection(tuple(workloads), tuple(sec["policies"]),
                        _section_seeds(sec, top, "openb"),
                        float(sec.get("tune", DEFAULT_TUNE)), str(nodes.resolve()),
                        file_digest(nodes))


# ------------------------------------------------------------------ entry points
def config_from_dict(doc: Any, source: str = "<sweep>", base: Path | None = None) -> SweepConfig:
    """Validate a sweep document.

    Parameters
    ----------
    doc : object
        The parsed JSON (``alloc.sweep/1``).
    source : str
        The file name used in error messages.
    base : Path, optional
        The folder that relative paths start from (default: the current one).

    Returns
    -------
    SweepConfig

    Raises
    ------
    InputError
        One line naming ``source``, the field and what was expected.
    """
    from ..schema import schema_problems
    problems = schema_problems(doc, "sweep")
    if problems:
        raise InputError(problems, source)
    if not any(k in doc for k in ("allocation", "simulation", "openb")):
        raise InputError(f"{source}: (top level): expected at least one section of "
                         f"'allocation', 'simulation', 'openb'")
    base = Path(base) if base is not None else Path.cwd()
    try:
        top = parse_seeds(doc["seeds"], "seeds") if "seeds" in doc else DEFAULT_SEEDS
        alloc = _allocation(doc["allocation"], top, base) if "allocation" in doc else None
        sim = _simulation(doc["simulation"], top, base, source) if "simulation" in doc else None
        ob = _openb(doc["openb"], top, base) if "openb" in doc else None
    except InputError as exc:
        msg = str(exc)
        raise InputError(msg if msg.startswith(source) else f"{source}: {msg}") from None
    name = doc.get("name") or Path(source).stem
    return SweepConfig(name, source, alloc, sim, ob, doc.get("description", ""))


def load_config(path) -> SweepConfig:
    """Read and validate a sweep config file.

    Parameters
    ----------
    path : str or Path
        The config; relative paths inside it start from its folder.

    Returns
    -------
    SweepConfig

    Raises
    ------
    InputError
        One line naming the file, the field and what was expected.
    """
    from ..shipped import resolve
    p = resolve(path, "examples")
    return config_from_dict(read_config(p), str(path), p.resolve().parent)

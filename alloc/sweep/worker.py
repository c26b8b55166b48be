"""The worker side of a sweep and of `alloc bench`: `execute` turns one
`Run` into one result row (a flat dict of JSON values; every field is
explained on the page "Bench and sweep rows", schema
`alloc/schemas/row.schema.json`).

It runs in a pool process, a Ray worker or (`alloc bench`) the calling
process, so it only takes and returns plain values and caches what several
runs share (instances, openb tables) per process.

An allocation run whose solver cannot take the instance (a capability it
lacks, a backend that is not installed) is a `refused` row with the reason:
final, resume skips it.  A run that raises another `alloc.AllocError` (bad
instance data, a solver that fails) gives an error row with `error_kind`
`"input"` or `"solver"`: final too.  Any other exception (a bug, memory
exhaustion) gives `error_kind` `"crash"`; resume runs it again.

Allocation runs are timed fairly: each solver gets `warmup` untimed calls in
each process before its first timed one (imports, engine start-up), and every
call gets a fresh copy of the cluster, so that no run reuses what an earlier
run derived from it.

Times are in seconds: `wall_s` is the timed part (`allocate()`, the
simulation, the openb placement loop) and `run_s` the whole run including
loading or generating its input.  `peak_rss_mib` is the worker process's peak
resident memory so far (`getrusage` high-water mark, MiB), so it also covers
earlier runs in the same process.
"""
from __future__ import annotations

import resource
import time
import warnings
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from ..errors import AllocError, InputError, InputWarning, SolverUnavailable, UnsupportedInput
from .grid import Run, canonical

SIM_KEYS = ("jobs_measured", "mean_jct_s", "p50_jct_s", "p99_jct_s", "p999_jct_s",
            "makespan_s", "rounds", "end_time_s", "unfinished", "censored_mean_jct_s")


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB (Linux: ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


# ------------------------------------------------------------------ inputs
@lru_cache(maxsize=4)
def _file_instance(path: str):
    from ..io import load_instance
    return load_instance(path)


@lru_cache(maxsize=2)
def _generated_instance(spec_json: str):
    import json
    from ..experiments.generators import generate
    spec = json.loads(spec_json)
    return generate(spec["generator"], spec["seed"], **spec["params"])


def instance_of(run: Run):
    """The run's instance: loaded from its file or generated (cached per process)."""
    if "spec" in run.inputs:
        return _generated_instance(canonical(run.inputs["spec"]))
    return _file_instance(run.inputs["path"])


@lru_cache(maxsize=1)
def _nodes(path: str):
    from ..experiments.openb import load_nodes
    return load_nodes(path)


@lru_cache(maxsize=2)
def _pods(path: str):
    from ..experiments.openb import load_pods, sort_by_name, typical_pods
    pods = load_pods(path)
    if not len(pods):
        raise InputError(f"{path}: no pods")
    return pods, typical_pods(sort_by_name(pods))


#: The answer fields of an allocation row without an answer.
NO_ANSWER = dict.fromkeys(("reason", "value", "bound", "gap", "placed", "restriction",
                           "warm_start", "wall_s"))


def error_row(run: Run, exc: BaseException, kind: str) -> dict:
    """The fields of a run that failed: `error` (`"Type: message"`),
    `error_kind`, and for an allocation run `status` `"error"` and the
    answer fields null."""
    out: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}", "error_kind": kind}
    if run.kind == "allocation":
        out.update(NO_ANSWER, status="error")
    return out


# ------------------------------------------------------------------ kinds
#: Untimed calls made so far in this process, per solver (the warm-up).
_WARM: dict[str, int] = {}


def _call(inst, p: dict):
    """`allocate()` on a fresh copy of the instance's cluster (without an
    objective when the config chose none: ``p["asked"]`` None)."""
    from ..solve import allocate
    return allocate(replace(inst.cluster), inst.jobs, solver=p["solver"],
                    objective=p.get("asked", p["objective"]), time_limit=p["time_limit"],
                    seed=p["seed"], instance=inst.name)


def warm_up(inst, p: dict, times: int) -> None:
    """Untimed calls of the run's solver on the run's instance until this
    process has made `times` of them for that solver.  A refusal does not
    count (the first instance the solver can take warms it up); another
    failure does (the timed call reports it)."""
    while _WARM.get(p["solver"], 0) < times:
        try:
            _call(inst, p)
        except (UnsupportedInput, SolverUnavailable):
            return
        except AllocError:
            pass
        _WARM[p["solver"]] = _WARM.get(p["solver"], 0) + 1


def allocation_fields(inst, info, objective: str) -> dict:
    """The fields of an allocation row that do not depend on the answer."""
    return {"instance_name": inst.name, "jobs": len(inst.jobs),
            "servers": len(inst.cluster.servers), "exact": info.exact, "resizes": info.resizes,
            "known_optimum": inst.meta.get("known_optimum", {}).get(objective)}


def answer_fields(a) -> dict:
    """The fields of an allocation row taken from the answer; the bound only
    where it bounds the instance as given (the honest path drops a restricted
    model's bound and names the restriction)."""
    return {"status": a.status.value, "reason": None, "value": a.value, "bound": a.bound,
            "gap": a.gap, "placed": len(a.placements),
            "restriction": a.stats.get("restriction"),
            "warm_start": a.stats.get("warm_start")}


def run_allocation(run: Run) -> dict:
    """`allocate()` on the run's instance (after the warm-up); the row's
    allocation fields, or a `refused` row with the reason."""
    from ..registry import use
    p = dict(run.params)
    if not run.inputs.get("objective_chosen", True):
        p["asked"] = None
    try:
        info = use(p["solver"])
    except ValueError as exc:
        raise InputError(str(exc)) from None
    inst = instance_of(run)
    out = {"repeat": run.inputs.get("repeat", 0), "warmup": run.inputs.get("warmup", 0),
           **allocation_fields(inst, info, p["objective"])}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        warm_up(inst, p, out["warmup"])
        t0 = time.perf_counter()
        try:
            a = _call(inst, p)
        except (UnsupportedInput, SolverUnavailable) as exc:
            out.update(NO_ANSWER, status="refused", reason=str(exc))
        else:
            out.update(answer_fields(a), wall_s=round(time.perf_counter() - t0, 4))
    out["warnings"] = sorted({str(w.message) for w in caught
                              if issubclass(w.category, InputWarning)})
    return out


def run_simulation(run: Run) -> dict:
    """One ``alloc simulate`` run; the simulator summary (JCT in seconds)."""
    from ..sim.cli import build
    sim, _ = build(dict(run.inputs["doc"]), Path(run.inputs["base"]), run.params["config"])
    sim.progress = False
    s = sim.run().summary()
    out = {k: s[k] for k in SIM_KEYS}
    out["mean_jct_h"] = s["mean_jct_s"] / 3600.0
    out.update({f"util_{k}": v for k, v in s["mean_util"].items()})
    out["wall_s"] = round(float(s["wall_time_s"]), 4)
    return out


def run_openb(run: Run) -> dict:
    """One FGD-experiment run: allocation % at x = 100 and 130, the curve."""
    from ..experiments.openb import run as openb_run
    p = run.params
    pods, fm = _pods(run.inputs["pods"])
    r = openb_run(pods, _nodes(run.inputs["nodes"]), p["policy"], p["seed"], tune=p["tune"],
                  workload=p["workload"], fm=fm)
    return {"alloc_100": r.alloc[100], "alloc_130": r.alloc[130], "frag_100": r.frag[100],
            "first_fail": r.first_fail, "placed": r.placed, "attempted": r.attempted,
            "total_gpus": r.total_gpus, "wall_s": round(r.seconds, 4),
            "cpu_s": round(r.cpu_seconds, 4), "alloc_curve": list(r.alloc)}


RUNNERS = {"allocation": run_allocation, "simulation": run_simulation, "openb": run_openb}


def execute_with(registered: Sequence, run: Run) -> dict:
    """`execute` in a process that first takes the solvers registered in the
    parent process (`alloc.registry.registrations`); Ray tasks call it."""
    from ..registry import restore
    restore(registered)
    return execute(run)


def execute(run: Run) -> dict:
    """Run one grid point.

    Parameters
    ----------
    run : Run
        The run (its kind selects `run_allocation`,
        `run_simulation` or `run_openb`).

    Returns
    -------
    dict
        ``key``, ``kind``, the run's parameters, its results, ``error`` (None
        or ``"Type: message"``) with ``error_kind``, ``run_s`` (seconds) and
        ``peak_rss_mib`` (MiB).  A failed run never raises (module doc).
    """
    t0 = time.perf_counter()
    row = {"key": run.key, "kind": run.kind, **run.params}
    try:
        row.update(RUNNERS[run.kind](run))
        row["error"] = None
    except AllocError as exc:
        row.update(error_row(run, exc, "input" if isinstance(exc, InputError) else "solver"))
    except Exception as exc:  # noqa: BLE001 - recorded; resume retries it
        row.update(error_row(run, exc, "crash"))
    row["run_s"] = round(time.perf_counter() - t0, 4)
    row["peak_rss_mib"] = peak_rss_mib()
    return row

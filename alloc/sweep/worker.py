"""The worker side of a sweep: :func:`execute` turns one :class:`~.grid.Run`
into one result row (a flat dict of JSON values).

It runs in a pool process or a Ray worker, so it only takes and returns plain
values and caches what several runs share (instances, openb tables) per
process.  A run that raises an :class:`~alloc.errors.AllocError` (bad instance
data, a solver that cannot handle the input or fails) gives an error row with
``error_kind`` ``"input"`` or ``"solver"``: final, resume skips it.  Any other
exception (a bug, memory exhaustion) gives ``error_kind`` ``"crash"``; resume
runs it again.

Times are in seconds: ``wall_s`` is the timed part (``allocate()``, the
simulation, the openb placement loop) and ``run_s`` the whole run including
loading or generating its input.  ``peak_rss_mib`` is the worker process's peak
resident memory so far (``getrusage`` high-water mark, MiB), so it also covers
earlier runs in the same process.
"""
from __future__ import annotations

import resource
import time
from functools import lru_cache
from pathlib import Path

from ..errors import AllocError, InputError
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


# ------------------------------------------------------------------ kinds
def run_allocation(run: Run) -> dict:
    """``allocate()`` on the run's instance; status, value, bound, gap, placed."""
    from ..solve import allocate
    p = run.params
    inst = instance_of(run)
    t0 = time.perf_counter()
    a = allocate(inst.cluster, inst.jobs, solver=p["solver"], objective=p["objective"],
                 time_limit=p["time_limit"], seed=p["seed"], instance=inst.name)
    wall = time.perf_counter() - t0
    return {"instance_name": inst.name, "status": a.status.value, "value": a.value,
            "bound": a.bound, "gap": a.gap, "placed": len(a.placements),
            "jobs": len(inst.jobs), "servers": len(inst.cluster.servers),
            "wall_s": round(wall, 4)}


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


def execute(run: Run) -> dict:
    """Run one grid point.

    Parameters
    ----------
    run : Run
        The run (its kind selects :func:`run_allocation`,
        :func:`run_simulation` or :func:`run_openb`).

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
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["error_kind"] = "input" if isinstance(exc, InputError) else "solver"
    except Exception as exc:  # noqa: BLE001 - recorded; resume retries it
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["error_kind"] = "crash"
    row["run_s"] = round(time.perf_counter() - t0, 4)
    row["peak_rss_mib"] = peak_rss_mib()
    return row

r"""A job's options: its request and the Pareto-optimal CPU/memory points of
its profile's grid ([`pareto_options`][alloc.problem.pareto_options]).

A grid cell ``(c, m)`` (per GPU) with speed ``v > 0`` is an option of an
``n``-GPU job at totals ``(c n, m n)`` unless another cell or the request
``p`` dominates it: ``p.cpu <= c n``, ``p.mem <= m n`` and ``p.base >= v``
(and ``p`` differs from it).  Option 0 is always the request, at the speed
the grid gives it (1 without a grid).
"""
from __future__ import annotations

from ..model import Job, Profile
from .assign import GridPoint


_OPTIONS_CACHE: dict[tuple[int, int, int, int], tuple[Profile | None, tuple[GridPoint, ...]]] = {}


def pareto_options(job: Job) -> tuple[GridPoint, ...]:
    """The job's request plus every grid cell not dominated by another (less or
    equal CPU and memory with at least the same speed)."""
    prof = job.profile
    key = (id(prof), job.gpus, job.cpu, job.mem)
    hit = _OPTIONS_CACHE.get(key)
    if hit is not None and hit[0] is prof:
        return hit[1]
    out = _pareto(job)
    if len(_OPTIONS_CACHE) > 4096:
        _OPTIONS_CACHE.clear()
    _OPTIONS_CACHE[key] = (prof, out)
    return out


def _pareto(job: Job) -> tuple[GridPoint, ...]:
    prof = job.profile
    n = job.gpus
    req_base = (prof.grid_value(job.cpu / n, job.mem / n)
                if prof is not None and prof.has_grid and n else 1.0)
    opts = [GridPoint(job.cpu, job.mem, req_base, True)]
    if prof is not None and prof.has_grid and n:
        cells = []
        for i, c in enumerate(prof.cpu_per_gpu):
            for k, m in enumerate(prof.mem_per_gpu):
                v = prof.tput[i][k]
                if v is not None and v > 0:
                    cells.append(GridPoint(c * n, m * n, float(v)))
        for o in cells:
            dominated = any(
                (p.cpu <= o.cpu and p.mem <= o.mem and p.base >= o.base)
                and (p.cpu, p.mem, -p.base) != (o.cpu, o.mem, -o.base)
                for p in cells + opts[:1])
            if not dominated:
                opts.append(o)
    seen, out = set(), []
    for o in opts:
        key = (o.cpu, o.mem)
        if key not in seen:
            seen.add(key)
            out.append(o)
    return tuple(out)

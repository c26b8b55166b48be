r"""Summation servers decided together with the GPU placement.

A job ``i`` wants ``g_i`` GPUs; GPU machine ``s`` has ``f_s`` free GPUs.  The
machines the job spans, ``n_i``, decide whether it communicates at all: on
one machine it runs at its consolidated speed ``v_i``; spread over ``n >= 2``
machines it spends a share ``c_i`` of an all-reduce iteration communicating,
so with ``k`` summation servers (`alloc.byteps.model`) its speed is

    v_i (1 - c_i) r(n, k)     (1 - c_i at k = 0: the profile's spread factor).

Jointly ([`compose`][alloc.byteps.compose.compose], one `alloc.kernel.LinearModel`, HiGHS):

    x_is in Z, 0..min(g_i, f_s)   GPUs of job i on machine s,  u_is in {0,1},
    u_is <= x_is <= min(g_i, f_s) u_is,     sum_i x_is <= f_s,
    z_ink in {0,1}  (job i on n machines with k summation servers),
    sum_nk z_ink <= 1,  sum_s x_is = g_i sum_nk z_ink,  sum_s u_is = sum_nk n z_ink,
    and the summation-server rows of `alloc.byteps.assign` with
    sum_c x^ss_ic = sum_nk k z_ink,
    max sum_i w_i v_i sum_nk value(n, k) z_ink.

[`sequential`][alloc.byteps.compose.sequential] is the post-processing it replaces: the GPU
placement is
chosen first for the speeds without summation servers (the same model with
``k = 0``), then the spare CPU machines are given to the placed jobs
(`alloc.byteps.assign.exact`).
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..model import Status
from .assign import (SS_CPU, CommJob, CpuMachine, classes, decode, exact, server_cols, slot_rows,
                     tier_vars, validate)
from .model import speedup


@dataclass(frozen=True)
class GpuJob:
    """A data-parallel job to place: GPUs, link rate (Gbit/s), communication
    share, weight and consolidated speed."""
    id: str
    gpus: int
    gbps: float
    comm_share: float
    weight: float = 1.0
    base: float = 1.0


@dataclass(frozen=True)
class Plan:
    """GPUs per machine index and summation-server machines per job, the
    total throughput, a bound (the joint model's), status and statistics."""
    gpus: Mapping[str, Mapping[int, int]]
    servers: Mapping[str, tuple[str, ...]]
    value: float
    bound: float | None = None
    status: Status = Status.FEASIBLE
    wall_s: float = 0.0
    stats: Mapping = field(default_factory=dict)


def job_value(job: GpuJob, n: int, k: int) -> float:
    """``w v`` at ``n`` machines and ``k`` summation servers (module notes)."""
    w = job.weight * job.base
    if n <= 1:
        return w
    return w * (1 - job.comm_share) * speedup(n, k, job.comm_share)


def plan_value(jobs: Sequence[GpuJob], gpus: Mapping, servers: Mapping) -> float:
    """Total throughput of a plan, recomputed."""
    return sum(job_value(j, len(gpus[j.id]), len(servers.get(j.id, ())))
               for j in jobs if j.id in gpus)


def _check(jobs: Sequence[GpuJob], free: Sequence[int]) -> None:
    for i, j in enumerate(jobs):
        if j.gpus < 1:
            raise InputError(f"jobs[{i}].gpus: expected at least 1, got {j.gpus!r}")
    validate([CommJob(j.id, 1, j.gbps, j.comm_share, j.weight, j.base) for j in jobs], ())
    for s, f in enumerate(free):
        if f < 0:
            raise InputError(f"free[{s}]: expected free GPUs >= 0, got {f}")


def compose(jobs: Sequence[GpuJob], free: Sequence[int], machines: Sequence[CpuMachine], *,
            ss_cpu: int = SS_CPU, time_limit: float = 10.0, with_servers: bool = True) -> Plan:
    """The joint model of the module notes (``with_servers=False``: ``k = 0``);
    never below [`sequential`][alloc.byteps.compose.sequential], which it runs first with a third
    of the
    time (its answer is returned when the joint model finds nothing better)."""
    t0 = time.perf_counter()
    _check(jobs, free)
    if not with_servers:
        return _joint(jobs, free, machines, ss_cpu, time_limit, False)
    first = sequential(jobs, free, machines, ss_cpu=ss_cpu, time_limit=time_limit / 3)
    plan = _joint(jobs, free, machines, ss_cpu, time_limit - (time.perf_counter() - t0), True)
    if plan.value < first.value - 1e-9:
        st = Status.OPTIMAL if plan.bound is not None and first.value >= plan.bound - 1e-6 * max(
            1, plan.bound) else Status.FEASIBLE
        plan = Plan(first.gpus, first.servers, first.value, plan.bound, st, 0.0,
                    {**plan.stats, "source": "placement first"})
    return Plan(plan.gpus, plan.servers, plan.value, plan.bound, plan.status,
                time.perf_counter() - t0, plan.stats)


def _joint(jobs, free, machines, ss_cpu, time_limit, with_servers) -> Plan:
    """Build and solve the joint model."""
    from ..kernel import LinearModel, solve
    t0 = time.perf_counter()
    m = LinearModel("byteps-compose")
    S = len(free)
    x: dict[tuple[str, int], int] = {}
    u: dict[tuple[str, int], int] = {}
    z: dict[str, dict[tuple[int, int], int]] = {}
    xs: dict[Any, int] = {}
    per_srv: dict[int, dict] = defaultdict(dict)
    cls = classes(machines) if with_servers else []
    y = tier_vars(m, cls, sorted({j.gbps for j in jobs}), ss_cpu)
    load: dict = defaultdict(dict)
    for j in jobs:
        srv = [s for s in range(S) if free[s] > 0]
        for s in srv:
            hi = min(j.gpus, free[s])
            x[(j.id, s)] = m.add_var(0, hi, integer=True)
            u[(j.id, s)] = m.add_var(0, 1, integer=True)
            m.add_row({x[(j.id, s)]: 1, u[(j.id, s)]: -1}, lo=0)
            m.add_row({x[(j.id, s)]: 1, u[(j.id, s)]: -hi}, hi=0)
            per_srv[s][x[(j.id, s)]] = 1
        zs = {}
        for n in range(1, min(j.gpus, len(srv)) + 1):
            for k in range(0, (n if with_servers and n > 2 else 0) + 1):
                zs[(n, k)] = m.add_var(0, 1, integer=True, obj=job_value(j, n, k))
        z[j.id] = zs
        if not zs:
            continue
        m.add_row(dict.fromkeys(zs.values(), 1), hi=1)
        m.add_row({**{x[(j.id, s)]: 1 for s in srv}, **{v: -j.gpus for v in zs.values()}}, 0, 0)
        m.add_row({**{u[(j.id, s)]: 1 for s in srv}, **{v: -n for (n, _), v in zs.items()}}, 0, 0)
        ks = {v: -k for (_, k), v in zs.items() if k}
        if ks:
            cols = server_cols(m, cls, y, j, j.gpus, xs, load)
            m.add_row({**cols, **ks}, 0, 0)
    for s, row in per_srv.items():
        m.add_row(row, hi=free[s])
    slot_rows(m, y, load)
    res = solve(m, "highs", time_limit=max(0.1, time_limit - (time.perf_counter() - t0)),
                mip_rel_gap=1e-4)
    if not res.has_solution:
        return Plan({}, {}, 0.0, res.bound, Status.UNKNOWN, time.perf_counter() - t0)
    assert res.x is not None
    gpus, ks = {}, {}
    for j in jobs:
        chosen = [(n, k) for (n, k), v in z[j.id].items() if res.x[v] > 0.5]
        if not chosen:
            continue
        gpus[j.id] = {s: int(round(res.x[x[(j.id, s)]])) for s in range(S)
                      if (j.id, s) in x and res.x[x[(j.id, s)]] > 0.5}
        ks[j.id] = chosen[0][1]
    servers = decode(jobs, cls, y, xs, res.x) if with_servers else {}
    value = plan_value(jobs, gpus, servers)
    st = Status.OPTIMAL if res.bound is not None and value >= res.bound - 1e-6 * max(1, res.bound) \
        else Status.FEASIBLE
    return Plan(gpus, servers, value, res.bound, st, time.perf_counter() - t0,
                {"columns": m.n, "rows": m.m})


def sequential(jobs: Sequence[GpuJob], free: Sequence[int], machines: Sequence[CpuMachine], *,
               ss_cpu: int = SS_CPU, time_limit: float = 10.0) -> Plan:
    """GPU placement first (no summation servers), then the spare CPU
    machines to the placed jobs: the post-processing [`compose`][alloc.byteps.compose.compose]
    replaces."""
    t0 = time.perf_counter()
    _check(jobs, free)
    first = _joint(jobs, free, machines, ss_cpu, time_limit / 2, False)
    cj = [CommJob(j.id, len(first.gpus[j.id]), j.gbps, j.comm_share,
                  j.weight * (1 - j.comm_share), j.base) for j in jobs if j.id in first.gpus]
    a = exact(cj, machines, ss_cpu=ss_cpu, time_limit=time_limit / 2)
    servers = dict(a.servers)
    return Plan(first.gpus, servers, plan_value(jobs, first.gpus, servers), None,
                Status.FEASIBLE, time.perf_counter() - t0)


__all__ = ["GpuJob", "Plan", "compose", "job_value", "plan_value", "sequential"]

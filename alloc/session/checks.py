"""Incremental validation: one submitted job, one added server, one running
job's placement -- the checks [`alloc.validate.prepare`][alloc.validate.prepare] runs over the
whole input, applied only to what an event changes.

A job is checked once, when it is submitted (its fields, the rules against
the cluster, its profile, the solver's capabilities); a server when it is
added; a running job's ``current`` placement against the capacity its servers
have left.  Jobs already in the session are not checked again: every round's
answer is still checked in full by [`alloc.check.violations`][alloc.check.violations] inside
[`alloc.solve.run_solver`][alloc.solve.run_solver].
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Iterable, Mapping

from ..gpukey import GpuKey, gpu_key
from ..check import placement_servers
from ..errors import InputError
from ..model import DEFAULT_GPU_TYPE, MILLI, Cluster, Job, Profile, Server
from ..validate import (job_field_problems, job_rule_problems, profile_object_problems,
                        server_problems)

if TYPE_CHECKING:
    from ..registry import SolverInfo

#: Job ids starting with this are reserved (the session's own).
RESERVED_PREFIX = "~blocked:"


def resolve_profile(job: Job, models: Mapping[str, Profile], where: str) -> Job:
    """``job`` with its model name resolved: the session's inline models
    first, then the ``models/`` directory."""
    if job.profile is not None or not isinstance(job.model, str) or not job.model:
        return job
    prof = models.get(job.model)
    if prof is None:
        from ..profiles import available_models, load_profile
        try:
            prof = load_profile(job.model)
        except InputError:
            known = sorted(set(models) | set(available_models()))
            raise InputError(f"{where}.model: unknown model {job.model!r}; expected one of "
                             f"{', '.join(known)}") from None
    return replace(job, profile=prof)


def check_job(job, cluster: Cluster, info: "SolverInfo", where: str) -> None:
    """Raise [`InputError`][alloc.errors.InputError] (one line) unless ``job`` is a valid job for
    ``cluster`` that the solver ``info`` can handle (`UnsupportedInput`, the
    line of [`alloc.call.check_capabilities`][alloc.call.check_capabilities]).

    The same checks as [`alloc.validate.prepare`][alloc.validate.prepare] applies to one job
    (its ``current`` placement aside: see `check_current`)."""
    bad = job_field_problems(job, where, cluster)
    if not bad:
        bad = job_rule_problems(job, where, cluster)
    if not bad and job.profile is not None:
        bad = profile_object_problems(job.profile, f"{where}.profile")
    if bad:
        raise InputError(bad)
    if job.id.startswith(RESERVED_PREFIX):
        raise InputError(f"{where}.id: ids starting with {RESERVED_PREFIX!r} are reserved")
    from ..call import check_capabilities
    from ..needs import needed_capabilities
    check_capabilities(info, needed_capabilities(cluster, [job]), where)
    from ..validate import warn_model
    warn_model(cluster, [job], where)


def server_usage(cluster: Cluster, sid: str, running: Iterable[Job]
                 ) -> tuple[list[int], int, int]:
    """Milli-GPU used on each of server ``sid``'s GPUs, CPU (milli-cores) and
    memory (MiB) used there by the ``running`` jobs."""
    srv = cluster.server(sid)
    gpu = [0] * srv.gpus
    cpu = mem = 0
    for j in running:
        cur = j.current
        assert cur is not None, "a running job"
        for g in cur.gpus:
            key = GpuKey.parse(g.gpu)
            if key.server == sid:
                gpu[key.gpu] += g.milli
        cpu += cur.cpu.get(sid, 0)
        mem += cur.mem.get(sid, 0)
    return gpu, cpu, mem


def check_current(job: Job, cluster: Cluster, on_server: Mapping[str, set],
                  jobs: Mapping[str, Job], where: str) -> Job:
    """``job`` (running: ``current`` set) with ``current.job`` filled in;
    [`InputError`][alloc.errors.InputError] unless the placement is valid on its own and fits what
    the other running jobs leave on its servers."""
    from ..check import placement_problems
    cur = job.current
    assert cur is not None, "a running job"
    if cur.job not in ("", job.id):
        raise InputError(f"{where}.current.job: expected {job.id!r} or nothing, got {cur.job!r}")
    bad = placement_problems(cluster, job, cur, f"{where}.current")
    if bad:
        raise InputError(bad)
    need_gpu: dict[str, int] = defaultdict(int)
    for g in cur.gpus:
        need_gpu[g.gpu] += g.milli
    for sid in sorted(placement_servers(cur)):
        gpu, cpu, mem = server_usage(cluster, sid, (jobs[x] for x in on_server.get(sid, ())))
        srv = cluster.server(sid)
        for k, used in enumerate(gpu):
            name = gpu_key(sid, k)
            if used + need_gpu.get(name, 0) > MILLI:
                raise InputError(f"{where}.current: GPU {name} has {MILLI - used} milli "
                                 f"free, the placement needs {need_gpu[name]}")
        if cpu + cur.cpu.get(sid, 0) > srv.cpu or mem + cur.mem.get(sid, 0) > srv.mem:
            raise InputError(f"{where}.current: server {sid} has {srv.cpu - cpu} milli-CPU and "
                             f"{srv.mem - mem} MiB free, the placement needs "
                             f"{cur.cpu.get(sid, 0)} and {cur.mem.get(sid, 0)}")
    return replace(job, current=replace(cur, job=job.id))


def check_server(server, cluster: Cluster, where: str) -> Server:
    """``server`` (a GPU server without a type gets
    `DEFAULT_GPU_TYPE`); [`InputError`][alloc.errors.InputError] unless it is
    valid for the cluster's levels and its id is new."""
    if isinstance(server, Server) and server.gpus and server.gpu_type is None:
        server = replace(server, gpu_type=DEFAULT_GPU_TYPE)
    bad = server_problems(server, where, cluster.levels)
    if bad:
        raise InputError(bad)
    if server.id in cluster.server_index:
        raise InputError(f"{where}.id: server {server.id!r} already exists")
    return server


__all__ = ["RESERVED_PREFIX", "check_current", "check_job", "check_server",
           "placement_servers", "resolve_profile", "server_usage"]

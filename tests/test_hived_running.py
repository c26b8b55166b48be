"""Running state and the tenancy solvers: an inconsistent running state is
bad input (found by validation), and input that passed validation never ends
in a solver error -- the binding validation found is the one the solvers
restore, even when only the exact search finds it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from alloc import (Cell, Cluster, GpuShare, InputError, Job, Placement, Server, Tenant,
                   allocate, violations)
from alloc.model import frozen_map
from alloc.tenancy import with_current

LEVELS = ("rack", "server", "socket", "switch", "gpu")
SOLVERS = ("hived", "cpsat-tenancy")


def cluster(n=2, tenants=None):
    servers = tuple(Server(f"s{i}", 64000, 512000, 8, "V100", f"r{i // 2}", 2, 2)
                    for i in range(n))
    ten = {k: Tenant(k, tuple(Cell(*c) for c in cells)) for k, cells in (tenants or {}).items()}
    return Cluster(servers, LEVELS, frozen_map(ten))


def running(job, gpus):
    srv = gpus[0].split("/")[0]
    return replace(job, current=Placement(job.id, tuple(GpuShare(g, 1000) for g in gpus),
                                          {srv: job.cpu}, {srv: job.mem}))


def gj(jid, n, tenant, prio=0):
    return Job(jid, gpus=n, cpu=500 * n, mem=500 * n, tenant=tenant, guaranteed=True,
               priority=prio)


@pytest.mark.parametrize("solver", SOLVERS)
def test_running_outside_cells_is_bad_input(solver):
    c = cluster(2, {"a": [("switch", 1, "V100")]})
    jobs = [running(gj("x", 2, "a"), ["s0/gpu0", "s0/gpu2"])]     # two switches, one cell
    with pytest.raises(InputError, match="tenancy"):
        allocate(c, jobs, solver=solver, time_limit=5)


@pytest.mark.parametrize("solver", SOLVERS)
def test_overlapping_running_jobs_are_bad_input(solver):
    c = cluster(1)
    jobs = [running(Job("x", gpus=1, cpu=10, mem=10), ["s0/gpu0"]),
            running(Job("y", gpus=1, cpu=10, mem=10), ["s0/gpu0"])]
    with pytest.raises(InputError, match="overlap"):
        allocate(c, jobs, solver=solver, time_limit=5)


@pytest.mark.parametrize("solver", SOLVERS)
def test_validation_binding_is_restored(monkeypatch, solver):
    """When only the exact search explains the running state, validation
    finds the binding once and the solver restores that same binding (the
    exact family's check of a heuristic's answer searches that answer's)."""
    import alloc.tenancy as T
    calls = []
    exact = T.exact_binding

    def counted(c, used, *a, **k):
        calls.append(used)
        return exact(c, used, *a, **k)
    monkeypatch.setattr(T, "greedy_binding", lambda c, used, tree=None: None)
    monkeypatch.setattr(T, "exact_binding", counted)
    c = cluster(2, {"a": [("switch", 1, "V100"), ("gpu", 2, "V100")],
                    "b": [("server", 1, "V100")]})
    jobs = [running(gj("x", 2, "a"), ["s0/gpu0", "s0/gpu1"]),
            running(gj("y", 1, "a"), ["s0/gpu4"]), running(gj("z", 1, "b"), ["s1/gpu3"]),
            gj("new", 1, "a", prio=1), Job("o", gpus=4, cpu=10, mem=10)]
    r = allocate(c, jobs, solver=solver, time_limit=10)
    assert not r.preempted and r.placement("x") is not None
    assert calls and calls.count(calls[0]) == 1


def test_restore_running_keeps_validated_jobs_out_of_time():
    """Out of time, restore_running still puts every validated running job
    back (the binding comes from validation's cache)."""
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem
    from alloc.engines.cells.engine import Engine, restore_running
    from alloc.validate import prepare
    c = cluster(2, {"a": [("switch", 1, "V100"), ("gpu", 2, "V100")]})
    jobs = [running(gj("x", 2, "a"), ["s0/gpu0", "s0/gpu1"]),
            running(gj("y", 1, "a"), ["s1/gpu4"])]
    c, jobs = prepare(c, jobs)
    p = compile_problem(c, jobs)
    eng = Engine(p)
    assert restore_running(eng, [0, 1], Deadline.after(1e-9)) == []
    assert set(eng.assign) == {0, 1} and sum(len(b) for b in eng.bound.values()) == 2


@pytest.mark.parametrize("solver", SOLVERS)
def test_rounds_never_fail(solver):
    """Several rounds of a busy tenancy cluster (arrivals, finishes,
    priorities, preemption): validated input, valid answers, no errors."""
    import random
    rng = random.Random(3)
    c = cluster(4, {"a": [("server", 1, "V100"), ("gpu", 4, "V100")],
                    "b": [("socket", 2, "V100"), ("switch", 2, "V100")]})
    jobs, n = [], 0
    for _ in range(4):
        for _ in range(6):
            n += 1
            size = rng.choice((1, 2, 4, 8, 12))
            ten = rng.choice(("a", "b", None))
            jobs.append(Job(f"j{n}", gpus=size, cpu=500 * size, mem=500 * size, tenant=ten,
                            guaranteed=ten is not None, priority=rng.randint(0, 2)))
        r = allocate(c, jobs, solver=solver, time_limit=5)
        assert not violations(c, jobs, r)
        assert r.placements and len(r.placements) + len(r.unplaced) == len(jobs)
        jobs = [j for j in with_current(jobs, r) if rng.random() > 0.2]

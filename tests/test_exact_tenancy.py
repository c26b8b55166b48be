"""The exact family on inputs the configuration model does not express:
tenants, elastic jobs and running jobs the call lets move go to the tenancy
model with the solver's own engine."""
from dataclasses import replace
from pathlib import Path

import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, allocate, load_instance, violations
from alloc.solvers.exact.solvers import needs_tenancy_model
from alloc.problem import Problem
from alloc.validate import prepare


def two_servers():
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(2)))


def running(jid, server, first, n):
    cur = Placement(jid, tuple(GpuShare(f"{server}/gpu{k}", 1000) for k in range(first, first + n)),
                    {server: 1000 * n}, {server: 1000 * n})
    return Job(jid, n, cpu=1000 * n, mem=1000 * n, current=cur)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_tenancy_instance_matches_the_tenancy_solver(instances_dir, solver):
    inst = load_instance(instances_dir / "tenancy_small.json")
    h = allocate(inst.cluster, inst.jobs, solver="hived")
    r = allocate(inst.cluster, inst.jobs, solver=solver, time_limit=10)
    assert not violations(inst.cluster, inst.jobs, r)
    assert r.value >= h.value - 1e-6
    assert r.stats["engine"] == {"cpsat": "cpsat", "milp": "highs"}[solver]
    if solver == "cpsat":
        t = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10)
        assert r.value == pytest.approx(t.value)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_moves_when_allowed_make_room_for_a_wide_job(solver):
    """Two 4-GPU jobs on different servers block an 8-GPU job; one move frees a
    server.  Without moves the wide job waits; with one move it runs."""
    cl = two_servers()
    jobs = [running("a", "s0", 0, 4), running("b", "s1", 4, 4), Job("w", 8, cpu=8000, mem=8000, locality="server")]
    kept = allocate(cl, jobs, solver=solver, objective="gpus", time_limit=10)
    assert "w" in kept.unplaced and not kept.moved
    assert kept.status.value in ("optimal", "feasible")
    moved = allocate(cl, jobs, solver=solver, objective="gpus", time_limit=10, max_moves=1)
    assert not violations(cl, jobs, moved, max_moves=1)
    assert "w" not in moved.unplaced and len(moved.moved) == 1 and not moved.preempted
    assert moved.value == 16000 and moved.status.value == "optimal"


def test_the_configuration_model_keeps_running_jobs_in_its_answer():
    """cpsat declares preemption (tenancy inputs); without tenancy it never
    drops a running job."""
    cl = two_servers()
    jobs = [running("a", "s0", 0, 4), Job("p", 8, cpu=8000, mem=8000)]
    r = allocate(cl, jobs, solver="cpsat", time_limit=5)
    assert not r.preempted and not r.moved and "a" not in r.unplaced


def test_elastic_job_gets_its_largest_size_through_milp():
    cl = two_servers()
    jobs = [Job("e", 2, cpu=2000, mem=2000, min_gpus=2, max_gpus=8)]
    r = allocate(cl, jobs, solver="milp", objective="gpus", time_limit=10)
    assert not violations(cl, jobs, r)
    assert sum(len(p.gpus) for p in r.placements) == 8


def test_dispatch_rule():
    cl = two_servers()
    assert not needs_tenancy_model(problem(cl, [Job("j", 1, cpu=1000, mem=1000)]))
    live = [running("a", "s0", 0, 4)]
    assert not needs_tenancy_model(problem(cl, live))
    assert needs_tenancy_model(problem(cl, live, max_moves=1))
    assert needs_tenancy_model(problem(cl, live, move_cost=0.5))
    assert needs_tenancy_model(problem(cl, [Job("e", 1, min_gpus=1, max_gpus=2)]))


def problem(cluster, jobs, **kw):
    return Problem(*prepare(cluster, jobs), "throughput", **kw)


def test_an_exact_solver_that_cannot_move_is_not_optimal_when_moves_are_allowed():
    """synergy-opt keeps running jobs in place: with moves allowed its proof
    does not cover the instance (the wide job could run after one move)."""
    cl = two_servers()
    jobs = [running("a", "s0", 0, 4), running("b", "s1", 4, 4),
            Job("w", 8, cpu=8000, mem=8000, locality="server")]
    r = allocate(cl, jobs, solver="synergy-opt", objective="gpus", time_limit=10, max_moves=1)
    assert r.status.value == "feasible" and r.bound is None
    assert "kept where they run" in r.stats["restriction"]


def test_a_higher_priority_job_may_preempt_so_the_exact_family_prices_it():
    """No tenants: a pending priority-1 job outranks a running priority-0 one
    (alloc.tenancy.outranks), so the problem as given allows stopping it.  The
    exact family solves that problem; a solver that pins running jobs names
    the restriction instead of claiming optimal."""
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100"),))
    cur = Placement("r", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
                    {"s0": 2000}, {"s0": 32768})
    jobs = [Job("a", 1, gpu_milli=100, cpu=1000, mem=16384),
            Job("b", 1, cpu=1000, mem=16384),
            Job("r", 2, cpu=2000, mem=32768, current=cur),
            Job("c", 0, cpu=1000, mem=16384, priority=1)]
    assert needs_tenancy_model(problem(cl, jobs))
    t = allocate(cl, jobs, solver="cpsat-tenancy", objective="jobs", time_limit=5)
    c = allocate(cl, jobs, solver="cpsat", objective="jobs", time_limit=5)
    assert c.value == pytest.approx(t.value) == 3.0 and c.preempted == ("r",)
    assert not violations(cl, jobs, c)
    s = allocate(cl, jobs, solver="synergy-opt", objective="jobs", time_limit=5)
    assert s.status.value == "feasible" and s.bound is None and s.value == 2.0
    assert "kept where they run" in s.stats["restriction"]
    quiet = [replace(j, priority=0) for j in jobs]
    assert not needs_tenancy_model(problem(cl, quiet))


def test_the_tenancy_path_is_never_below_a_heuristic():
    """A pending priority-1 job sends the input to the tenancy model, whose
    CPU/memory stay at the request; local-search gives the profiled job a
    better grid point (it swaps out p, of the same rank: never a job ranked
    above).  The exact family returns the heuristic's answer."""
    cl = Cluster((Server("s0", 8000, 262144, 2, "V100"),))
    cur = Placement("r", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 16384})
    jobs = [Job("r", 1, cpu=1000, mem=16384, current=cur),
            Job("p", 1, cpu=1000, mem=16384, priority=1),
            Job("m", 1, cpu=1000, mem=16384, model="res18", priority=1)]
    ls = allocate(cl, jobs, solver="local-search", time_limit=5)
    for solver in ("cpsat", "milp"):
        a = allocate(cl, jobs, solver=solver, time_limit=5)
        assert not violations(cl, jobs, a)
        assert a.value >= ls.value - 1e-9 and a.value > 2.0


@pytest.mark.parametrize("solver", ["cpsat", "cpsat-tenancy", "milp"])
def test_a_decoded_answer_that_breaks_the_cells_is_not_returned(solver):
    """A generated instance (one V100 cell, a guaranteed job running on a
    V100): the tenancy path's decoded answer put a second guaranteed job on a
    V100.  It is dropped; the answer is the best one that passes the check,
    never below hived's, under the model's bound."""
    from pathlib import Path
    i = load_instance(Path(__file__).parent / "data" / "cells_quota_decoded.json")
    h = allocate(i.cluster, i.jobs, solver="hived", time_limit=5)
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=2)      # checked: no violation
    assert a.value >= h.value - 1e-9 and (a.bound is None or a.value <= a.bound + 1e-6)


@pytest.mark.parametrize("solver", ["cpsat", "cpsat-tenancy", "milp"])
def test_moving_a_cpu_only_running_job_is_charged_as_a_move(solver):
    """A generated instance under ``preempt="order"`` with a move cost: the
    tenancy model's answer moved a running CPU-only job to another server
    (same, empty, GPU set), which its own score did not count as a move, and
    so tied with hived's answer that keeps it.  The call charges the move:
    the answer is never below hived's."""
    from pathlib import Path
    i = load_instance(Path(__file__).parent / "data" / "cpu_job_move_charged.json")
    call = dict(objective="gpus", order=["j2", "j1", "j0"], preempt="order", move_cost=0.1)
    h = allocate(i.cluster, i.jobs, solver="hived", time_limit=5, **call)
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=5, **call)
    assert h.value == pytest.approx(4000.0) and not h.moved
    assert a.value >= h.value - 1e-9


@pytest.mark.parametrize("solver", ["cpsat-tenancy", "milp"])
def test_a_job_the_guarantee_pinned_is_never_stopped_when_moves_are_allowed(solver):
    """A multi-round session's input (tenant a's server cell and two GPU
    cells, its guaranteed gang ``j14`` running): the core pins ``j3`` for
    the guarantee.  With moves allowed the model let a moved job of higher
    priority make ``j3`` a legal victim and stopped it -- a job that was
    not running."""
    from pathlib import Path
    i = load_instance(Path(__file__).parent / "data" / "pinned_guarantee_moves.json")
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=2, seed=10, max_moves=2)
    assert "j3" not in a.preempted and a.placement("j3") is not None
    assert a.stats.get("guarantee_pinned") and "j3" in a.stats["guarantee_pinned"]


def test_assign_same_as_is_the_placement_rule():
    from alloc import Assign
    a = Assign(gpus=((1, 1000), (0, 500)), cpu=((0, 500), (1, 0)), mem=((0, 800),))
    assert a.same_as(Assign(gpus=((0, 500), (1, 1000)), cpu=((0, 500),), mem=((0, 800),)))
    assert not a.same_as(Assign(gpus=((0, 500), (1, 1000)), cpu=((1, 500),), mem=((0, 800),)))
    assert not a.same_as(Assign(gpus=((0, 1000), (1, 1000)), cpu=((0, 500),), mem=((0, 800),)))
    assert not a.same_as(None)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_an_exact_solver_is_not_below_hived_when_the_core_pins_the_guarantee(solver):
    """A waiting guaranteed elastic job (2 to 4 GPUs): the core's guarantee
    walk pins it at 2 GPUs for the exact solver, which may not grow it;
    hived serves the guarantee itself and grows it to 4.  The exact
    solver's answer is hived's then (feasible, worth as much), not less."""
    inst = load_instance(Path(__file__).parent / "data" / "elastic_guarantee_grown.json")
    hv = allocate(inst.cluster, inst.jobs, solver="hived", objective="gpus", time_limit=1)
    a = allocate(inst.cluster, inst.jobs, solver=solver, objective="gpus", time_limit=1)
    assert hv.value == 15100.0
    assert a.value >= hv.value and a.status.value == "feasible"
    assert a.bound is None or a.bound >= a.value


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_an_exact_solver_is_not_below_antman_when_the_core_pins_the_guarantee(solver):
    """The core's guarantee walk pins the guaranteed job ``j2`` on the
    4-GPU server, which then cannot hold the opportunistic 4-GPU gang ``j0``;
    AntMan serves the guarantee on the other server and places both.  The
    exact solver's answer is AntMan's then: ``j2`` placed, worth 4,700."""
    inst = load_instance(Path(__file__).parent / "data" / "guarantee_served_elsewhere.json")
    am = allocate(inst.cluster, inst.jobs, solver="antman", objective="gpus", time_limit=1)
    a = allocate(inst.cluster, inst.jobs, solver=solver, objective="gpus", time_limit=1)
    assert am.value == 4700.0 and a.value >= am.value and a.placement("j2") is not None
    assert a.status.value == "feasible" and (a.bound is None or a.bound >= a.value)
    assert a.stats["guarantee_pinned"] == ["j2"]


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_an_exact_solver_is_not_below_a_heuristic_that_moves_running_jobs(solver):
    """Moves charged (``move_cost``), the caller's order with preemption by
    it: synergy-greedy moves the running ``mobilenet`` job onto a point of
    its profile's grid (its request runs at throughput 0).  The exact
    family's warm start keeps running jobs in place and its model places
    jobs at their request; the moving heuristic's answer is its rival."""
    inst = load_instance(Path(__file__).parent / "data" / "moved_onto_a_grid_point.json")
    kw = dict(objective="throughput", time_limit=1, order=["j1", "j2", "j0"], preempt="order",
              move_cost=0.1)
    g = allocate(inst.cluster, inst.jobs, solver="synergy-greedy", **kw)
    a = allocate(inst.cluster, inst.jobs, solver=solver, **kw)
    assert g.value == pytest.approx(3.25) and a.value >= g.value - 1e-9
    assert a.status.value == "feasible" and (a.bound is None or a.bound >= a.value)

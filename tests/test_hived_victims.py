"""Preemption victims of the buddy-cell engine: no more than the job needs.
A victim holding several GPUs may free all a guaranteed job needs alone;
the GPUs are then chosen among what it frees instead of GPU by GPU, which
stopped it and another job besides."""
from __future__ import annotations

from dataclasses import replace

import pytest

from alloc import (Cell, Cluster, GpuShare, Job, Placement, Server, Tenant, allocate,
                   violations)
from alloc.testing.placements import guarantee_problems


def cluster(servers=1, gpus=8):
    return Cluster(tuple(Server(f"s{i}", 64000, 512000, gpus, "V100") for i in range(servers)),
                   tenants={"a": Tenant("a", (Cell("server", servers),))})


def running(jid, gpus, prio, server="s0"):
    job = Job(jid, len(gpus), cpu=1000 * len(gpus), mem=1000 * len(gpus), tenant="a",
              guaranteed=True, priority=prio)
    shares = tuple(GpuShare(f"{server}/gpu{g}", 1000) for g in gpus)
    return replace(job, current=Placement(jid, shares, {server: job.cpu}, {server: job.mem}))


def new(prio, n=2):
    return Job("new", n, cpu=1000 * n, mem=1000 * n, tenant="a", guaranteed=True, priority=prio)


@pytest.mark.parametrize("solver", ["hived", "drf"])
def test_one_victim_on_two_gpus_is_stopped_alone(solver):
    """``mid`` (priority 1) on gpu6-7 frees the two GPUs ``new`` needs; the
    first two GPUs with victims, gpu5-6, stopped ``lo`` (priority 0) too."""
    c = cluster()
    jobs = [running("top", [0, 1, 2, 3], 3), running("top1", [4], 3), running("lo", [5], 0),
            running("mid", [6, 7], 1), new(2)]
    r = allocate(c, jobs, solver=solver)
    assert sorted(g.gpu for g in r.placement("new").gpus) == ["s0/gpu6", "s0/gpu7"]
    assert r.preempted == ("mid",)
    assert violations(c, jobs, r) == [] and guarantee_problems(c, jobs, r) == []


@pytest.mark.parametrize("solver", ["hived", "drf"])
def test_of_equal_victims_the_one_that_suffices(solver):
    """``wide`` (4 GPUs) alone frees room for ``new``; ``one`` (1 GPU, same
    priority) on a lower GPU is spared."""
    c = cluster()
    jobs = [running("top", [0, 1], 3), running("one", [2], 0), running("top1", [3], 3),
            running("wide", [4, 5, 6, 7], 0), new(1)]
    r = allocate(c, jobs, solver=solver)
    assert sorted(g.gpu for g in r.placement("new").gpus) == ["s0/gpu4", "s0/gpu5"]
    assert r.preempted == ("wide",) and r.placement("one") is not None
    assert violations(c, jobs, r) == [] and guarantee_problems(c, jobs, r) == []


@pytest.mark.parametrize("solver", ["hived", "drf"])
def test_a_spread_job_stops_no_more_than_it_needs(solver):
    """``new`` (3 GPUs) spreads over servers of 2: ``x`` frees s1 and s0/gpu0
    is free; taking s0 first (its most usable GPUs) stopped ``lo`` too."""
    c = cluster(3, 2)
    jobs = [running("lo", [1], 0), running("x", [0, 1], 1, "s1"),
            running("z", [0, 1], 3, "s2"), new(2, 3)]
    r = allocate(c, jobs, solver=solver)
    assert sorted(g.gpu for g in r.placement("new").gpus) == ["s0/gpu0", "s1/gpu0", "s1/gpu1"]
    assert r.preempted == ("x",) and r.placement("lo") is not None
    assert violations(c, jobs, r) == [] and guarantee_problems(c, jobs, r) == []


def _two_for_one():
    """Tenant a's one server of 3 GPUs holds its guaranteed a (1 GPU) and b
    (2 GPUs); x and y (1 GPU each, higher priority) arrive.  Stopping b
    alone serves both; x alone would stop a (the smallest victim), and y
    then b, leaving a GPU idle while a waits."""
    x, y = (replace(new(1, 1), id=i) for i in ("x", "y"))
    return cluster(1, 3), [running("a", [0], 0), running("b", [1, 2], 0), x, y,
                           Job("o", 1, cpu=1000, mem=1000)]


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy", "milp", "drf"])
def test_the_jobs_of_a_round_stop_no_more_than_they_need_together(solver):
    c, jobs = _two_for_one()
    a = allocate(c, jobs, solver=solver, time_limit=5)
    assert a.preempted == ("b",)
    assert {p.job for p in a.placements} == {"a", "x", "y"}
    assert not guarantee_problems(c, jobs, a)


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy", "drf"])
def test_a_gang_stops_opportunistic_work_before_a_second_guaranteed_job(solver):
    """A two-GPU guaranteed job in a full cell: one GPU of an opportunistic
    job and one of a lower-priority guaranteed job, not two guaranteed
    jobs' GPUs because they come first by index."""
    opportunistic = replace(running("o", [3], 0), tenant=None, guaranteed=False)
    jobs = [running("hi", [0], 3), running("g1", [1], 1), running("g2", [2], 1), opportunistic,
            new(2)]
    c = cluster(1, 4)
    a = allocate(c, jobs, solver=solver, time_limit=5)
    assert sorted(a.preempted) == ["g1", "o"]
    assert {g.gpu for g in a.placement("new").gpus} == {"s0/gpu1", "s0/gpu3"}


def test_a_stopped_guaranteed_job_is_placed_again_when_a_later_stop_frees_room():
    """A multi-round session's input with moves allowed: x (j17) stops a
    (j5), then y (j19) stops the two-GPU b (j14) and leaves one of its GPUs
    free.  The first victim is tried again after the second stop and moves
    there, instead of waiting beside an idle GPU of its tenant's cell."""
    from pathlib import Path
    from alloc import load_instance
    i = load_instance(Path(__file__).parent / "data" / "rehome_guaranteed.json")
    a = allocate(i.cluster, i.jobs, solver="hived", time_limit=2, max_moves=2)
    assert a.preempted == ("j14",) and a.moved == ("j5",)
    assert guarantee_problems(i.cluster, i.jobs, a, max_moves=2) == []

"""``hived`` decides at once the jobs that cannot fit the room a round
starts with (`alloc.engines.cells.round`), with the answer its full search
gives."""
from __future__ import annotations

import random

import pytest

from alloc import Cell, Cluster, GpuShare, Job, Placement, Server, Tenant, allocate
from alloc.engines.cells import round as cells_round
from alloc.model import frozen_map

LEVELS = ("rack", "server", "socket", "switch", "gpu")


def instance(seed: int, tenants: bool) -> tuple[Cluster, list[Job]]:
    """Servers whose CPUs are mostly taken, a long queue of mixed jobs."""
    rng = random.Random(seed)
    servers = tuple(Server(f"s{i}", 24000, 256000, 8, "V100", f"r{i // 2}", 2, 2)
                    for i in range(6))
    ten = {"a": Tenant("a", (Cell("server", 1, "V100"),)),
           "b": Tenant("b", (Cell("switch", 2, "V100"),))} if tenants else {}
    cl = Cluster(servers, LEVELS, frozen_map(ten))
    jobs = []
    for k, s in enumerate(servers):
        cpu = rng.choice((23000, 21000, 16000))
        p = Placement(f"L{k}", (GpuShare(f"{s.id}/gpu0", 1000),), {s.id: cpu}, {s.id: 8000})
        jobs.append(Job(f"L{k}", 1, cpu=cpu, mem=8000, current=p, priority=rng.choice((0, 1))))
    for i in range(60):
        r = rng.random()
        prio = rng.choice((0, 0, 2))
        if r < 0.15:
            job = Job(f"c{i}", 0, cpu=rng.choice((1000, 9000)), mem=1000, priority=prio)
        elif r < 0.3:
            job = Job(f"h{i}", 1, gpu_milli=500, cpu=rng.choice((500, 4000)), mem=1000,
                      priority=prio)
        elif r < 0.4:
            job = Job(f"e{i}", 4, cpu=4000, mem=4000, min_gpus=1, max_gpus=4, priority=prio)
        else:
            n = rng.choice((1, 2, 4, 8))
            job = Job(f"j{i}", n, cpu=n * rng.choice((500, 3000)), mem=n * 4000,
                      priority=prio)
        if tenants and rng.random() < 0.3 and job.gpus and not job.min_gpus:
            job = Job(job.id, job.gpus, gpu_milli=1000, cpu=job.cpu, mem=job.mem,
                      tenant=rng.choice(("a", "b")), guaranteed=True, priority=prio)
        jobs.append(job)
    return cl, jobs


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["plain", "tenants", "tenants, no preemption"])
def test_unfit_jobs_decided_as_the_search_decides(seed, mode, monkeypatch):
    """The same answer with and without the test; it rules jobs out unless
    a guaranteed job stopped an opportunistic one first."""
    tenants = mode != "plain"
    opts = {"tenancy_preempt": False} if "no preemption" in mode else {}
    cl, jobs = instance(seed, tenants)
    ruled: list[bool] = []
    call = cells_round._Unfit.__call__

    def spy(self, j, level):
        ruled.append(call(self, j, level))
        return ruled[-1]
    monkeypatch.setattr(cells_round._Unfit, "__call__", spy)
    fast = allocate(cl, jobs, solver="hived", **opts)
    monkeypatch.setattr(cells_round._Unfit, "__call__", lambda self, j, level: False)
    slow = allocate(cl, jobs, solver="hived", **opts)
    assert fast.placements == slow.placements and fast.unplaced == slow.unplaced
    assert fast.preempted == slow.preempted and fast.reasons == slow.reasons
    assert fast.unplaced and (any(ruled) or mode == "tenants")
    if fast.preempted:
        assert not ruled[-1]


def test_a_guaranteed_job_that_needs_victims_is_still_tried():
    """A guaranteed job that fits only over victims is not ruled out; once it
    has stopped a job, the room may grow and no job is ruled out."""
    servers = tuple(Server(f"s{i}", 24000, 256000, 8, "V100", f"r{i // 2}", 2, 2)
                    for i in range(2))
    cl = Cluster(servers, LEVELS, frozen_map({"a": Tenant("a", (Cell("socket", 1, "V100"),))}))
    run = [Job(f"L{k}", 1, cpu=20000, mem=8000, current=Placement(
        f"L{k}", (GpuShare(f"s{k}/gpu0", 1000),), {f"s{k}": 20000}, {f"s{k}": 8000}))
        for k in range(2)]
    queue = [Job(f"q{i}", 2, cpu=6000, mem=1000) for i in range(3)]
    g = Job("g", 4, cpu=12000, mem=8000, tenant="a", guaranteed=True)
    a = allocate(cl, run + queue + [g], solver="hived")
    assert a.placement("g") is not None and len(a.preempted) == 1
    assert a.placement("q0") is not None           # on the room the victim left

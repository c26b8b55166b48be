"""Jobs wider than one server under tenancy: ``hived`` spreads them in each of
its steps (bound cells, new cells, preemption, opportunistic), the tenancy
model places them through unit pools, on clusters with and without tenants."""
from __future__ import annotations

import pytest

from alloc import Cell, Cluster, Job, Server, Tenant, allocate, violations
from alloc.model import frozen_map
from alloc.tenancy import with_current

LEVELS = ("rack", "server", "socket", "switch", "gpu")


def cluster(n, gpus=8, tenants=None, rack=2, levels=LEVELS):
    servers = tuple(Server(f"s{i}", 64000, 512000, gpus, "V100", f"r{i // rack}", 2, 2)
                    for i in range(n))
    ten = {k: Tenant(k, tuple(Cell(*c) for c in cells)) for k, cells in (tenants or {}).items()}
    return Cluster(servers, levels, frozen_map(ten))


def job(jid, n, tenant=None, prio=0, **kw):
    return Job(jid, gpus=n, cpu=1000 * n, mem=1000 * n, tenant=tenant,
               guaranteed=tenant is not None, priority=prio, **kw)


def servers_of(r, jid):
    return sorted({g.gpu.split("/")[0] for g in r.placement(jid).gpus})


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy", "best-fit", "cpsat"])
def test_sixteen_gpus_on_two_free_servers(solver):
    c = cluster(2, levels=("server", "gpu"))
    jobs = [Job("big", gpus=16, cpu=1600, mem=1600)]
    r = allocate(c, jobs, solver=solver, objective="gpus", time_limit=10)
    assert r.value == 16000 and servers_of(r, "big") == ["s0", "s1"]
    if solver == "cpsat-tenancy":
        # nothing restricts this instance: the proof is the instance's
        assert r.status.value == "optimal" and r.bound == pytest.approx(16000)
        assert r.stats["covers_instance"] and not r.stats.get("restrictions")


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy"])
def test_eight_gpus_on_four_gpu_nodes(solver):
    c = cluster(3, gpus=4, levels=("server", "gpu"))
    r = allocate(c, [Job("big", gpus=8, cpu=800, mem=800)], solver=solver, objective="gpus",
                 time_limit=10)
    assert r.value == 8000 and len(servers_of(r, "big")) == 2


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy"])
def test_guaranteed_job_over_several_server_cells(solver):
    c = cluster(4, tenants={"a": [("server", 2, "V100")]})
    jobs = [job("g", 16, "a"), job("o", 8)]
    r = allocate(c, jobs, solver=solver, time_limit=10)
    assert not r.unplaced
    assert len(servers_of(r, "g")) == 2
    bound = {k.split(":")[1] for k in r.stats["binding"]["a"]}
    assert set(servers_of(r, "g")) <= bound


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy"])
def test_guaranteed_spread_preempts_opportunistic_work(solver):
    """The guaranteed job (worth three, the exact solver preempts only for a
    gain) stops the two opportunistic ones it needs the room of."""
    c = cluster(2, tenants={"a": [("server", 2, "V100")]})
    first = [job("o1", 8), job("o2", 8)]
    r0 = allocate(c, first, solver="hived")
    jobs = list(with_current(first, r0)) + [job("g", 16, "a", weight=3.0)]
    r = allocate(c, jobs, solver=solver, time_limit=10)
    assert r.placement("g") is not None and set(r.preempted) == {"o1", "o2"}


def test_spread_job_stays_in_one_rack_when_one_holds_it():
    """Spreading prefers one rack (the smallest that holds the job), which
    the profile's span factor rewards over a cross-rack placement."""
    c = cluster(6, rack=3)
    first = [job("x0", 6), job("x1", 6), job("x2", 6)]      # rack r0 nearly full
    r0 = allocate(c, first, solver="hived")
    jobs = list(with_current(first, r0)) + [job("big", 12)]
    r = allocate(c, jobs, solver="hived")
    racks = {c.servers[c.server_index[s]].rack for s in servers_of(r, "big")}
    assert len(racks) == 1


def test_rack_locality_spread():
    c = cluster(4, tenants={"a": [("rack", 1, "V100")]})
    jobs = [job("g", 16, "a", locality="rack"), job("o", 16, locality="rack")]
    for solver in ("hived", "cpsat-tenancy"):
        r = allocate(c, jobs, solver=solver, time_limit=10)
        assert not violations(c, jobs, r) and not r.unplaced
        for jid in ("g", "o"):
            assert len({c.servers[c.server_index[s]].rack for s in servers_of(r, jid)}) == 1


def test_greedy_warm_start_spreads_only_jobs_wider_than_servers():
    from alloc.problem import compile_problem
    from alloc.solvers.exact.tenancy.warm import LossAwareEngine
    c = cluster(2, levels=("server", "gpu"))
    p = compile_problem(c, [job("x", 4), job("y", 4), job("z", 6), job("w", 12)])

    def engine(spread):
        eng = LossAwareEngine(p)
        eng.spread = spread
        for j, s in ((0, 0), (1, 1)):
            eng.place(j, p.make_assign(j, list(eng.gpus_of(s))[:4], 0))
        return eng
    assert not engine(False).try_place(2, 6, 0, set())    # one server could hold it
    spread = engine(True)
    assert spread.try_place(2, 6, 0, set())
    assert len(spread.assign[2].cpu) == 2
    wide = LossAwareEngine(p)
    wide.spread = False
    assert wide.try_place(3, 12, 0, set())                 # wider than every server
    assert len(wide.assign[3].cpu) == 2

"""The checks of HiveD's own scheduler tests (Zhao et al., OSDI'20; the
scheduler's algorithm tests on its design cluster) that alloc's format can
express, played on ``instances/tenancy_hived.json`` (its cluster in alloc's
terms, see ``bench/tenancy_gen.py``): buddy placement, avoiding preemption,
opportunistic jobs away from bound cells, two-server jobs, waiting for cells,
priority preemption inside a tenant, stateful preemption rounds, and bad
tenancy input.  Affinity groups of several pods are single jobs here (a group
of two 16-GPU pods is one 32-GPU job); lazy preemption and pinned cells have
no counterpart."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from alloc import Cell, InputError, Job, Tenant, allocate, load_instance, violations
from alloc.model import frozen_map
from alloc.tenancy import with_current

SOLVERS = ("hived", "cpsat-tenancy")


INSTANCE = Path(__file__).resolve().parents[1] / "instances" / "tenancy_hived.json"


@pytest.fixture(scope="module")
def design():
    return load_instance(INSTANCE)


def job(jid, n, tenant=None, prio=0, gpu_type="V100", **kw):
    return Job(jid, gpus=n, cpu=2000 * n, mem=16384 * n, gpu_types=(gpu_type,),
               tenant=tenant, guaranteed=tenant is not None, priority=prio, **kw)


def with_tenants(cluster, tenants):
    """The design cluster with other tenants: ``{name: ((level, count), ...)}``
    of V100 cells."""
    return replace(cluster, tenants=frozen_map({
        v: Tenant(v, tuple(Cell(lv, k, "V100") for lv, k in cells))
        for v, cells in tenants.items()}))


def servers_of(r, jid):
    return sorted({g.gpu.split("/")[0] for g in r.placement(jid).gpus})


def gpu_numbers(r, jid):
    return sorted(int(g.gpu.split("gpu")[1]) for g in r.placement(jid).gpus)


def solve(cluster, jobs, solver="hived", **kw):
    kw.setdefault("time_limit", 5)
    r = allocate(cluster, jobs, solver=solver, **kw)
    assert not violations(cluster, jobs, r)
    return r


def rounds(cluster, batches, solver="hived"):
    """Place each batch with the jobs of the rounds before running; returns
    the allocation of every round."""
    jobs, out = [], []
    for batch in batches:
        jobs = jobs + list(batch)
        r = solve(cluster, jobs, solver)
        out.append(r)
        jobs = list(with_current(jobs, r))
    return out


def test_design_batch_is_placed(design):
    """Every job of the batch that should succeed is placed, by both solvers."""
    for solver in SOLVERS:
        r = solve(design.cluster, design.jobs, solver, time_limit=10)
        assert not r.unplaced, (solver, r.unplaced)
        assert len(servers_of(r, "rack-group")) == 2        # one two-server group
        assert len({s[:2] for s in servers_of(r, "rack-group")}) == 1   # in one rack
        assert len(servers_of(r, "opp-pair")) == 2


@pytest.mark.parametrize("solver", SOLVERS)
def test_buddies_and_preemption_avoidance(design, solver):
    """Two one-GPU jobs of a tenant land next to each other; a higher-priority
    eight-GPU job of the same tenant takes the other half of their server
    rather than preempting them; an opportunistic job stays off the bound
    cells."""
    c = design.cluster
    r1, r2, r3, r4 = rounds(c, [[job("p1", 1, "vc1", 0)], [job("p2", 1, "vc1", 1)],
                                [job("p3", 8, "vc1", 2, locality="socket")],
                                [job("p4", 1)]], solver)
    assert servers_of(r2, "p1") == servers_of(r2, "p2")
    assert gpu_numbers(r2, "p1")[0] // 4 == gpu_numbers(r2, "p2")[0] // 4   # one switch
    assert servers_of(r3, "p3") == servers_of(r3, "p1") and not r3.preempted
    assert {g // 8 for g in gpu_numbers(r3, "p3")} != {gpu_numbers(r3, "p1")[0] // 8}
    bound = {k.split(":")[1] for k in r4.stats["binding"]["vc1"]}
    assert servers_of(r4, "p4")[0] not in bound and not r4.preempted


@pytest.mark.parametrize("solver", SOLVERS)
def test_two_server_groups(design, solver):
    """32-GPU jobs (two 16-GPU servers): guaranteed ones inside the tenant's
    cells, with or without rack locality, and an opportunistic one on free
    servers; none preempts anything."""
    c = design.cluster
    jobs = [job("rack", 32, "vc1", 1, locality="rack"), job("g1", 32, "vc1", 1),
            job("g2", 32, "vc1", 1), job("opp", 32)]
    r = solve(c, jobs, solver, time_limit=10)
    assert not r.unplaced and not r.preempted
    for jid in ("rack", "g1", "g2", "opp"):
        assert len(servers_of(r, jid)) == 2
    assert len({c.servers[c.server_index[s]].rack for s in servers_of(r, "rack")}) == 1
    if solver == "hived":     # the model binds every cell; opportunistic work may use idle ones
        inside = {k.split(":")[1] for k in r.stats["binding"]["vc1"]}
        assert not set(servers_of(r, "opp")) & inside


def test_waiting_for_cells(design):
    """A guaranteed job larger than its tenant's cells of the type waits
    (HiveD: insufficient virtual cells); so does one whose type the tenant
    has no cells of; neither preempts or borrows another tenant's cells."""
    c = design.cluster
    jobs = [job("big", 32, "vc2", 1, gpu_type="P100"), job("wrong-type", 1, "vc2", 1),
            job("fits", 8, "vc2", 1, gpu_type="P100", locality="server")]
    for solver in SOLVERS:
        r = solve(c, jobs, solver)
        assert r.placement("big") is None and r.placement("wrong-type") is None
        assert r.placement("fits") is not None


def test_unknown_tenant_is_bad_input(design):
    with pytest.raises(InputError, match="unknown tenant"):
        allocate(design.cluster, [job("x", 1, "surprise")], solver="hived")


# Priorities decide who may preempt whom; ``hived`` serves them in priority
# order (HiveD), the model maximises the objective among legal choices (it
# preempts only for value), so the next three checks are hived's.
def test_higher_priority_group_preempts_lower_of_its_tenant(design, solver="hived"):
    """A 32-GPU priority-2 job preempts the priority-1 32-GPU job holding its
    tenant's only cells, and nothing of another tenant or elsewhere."""
    c = with_tenants(design.cluster, {"vc1": (("rack", 1),), "vc3": (("server", 2),)})
    first = [job("low", 32, "vc1", 1, locality="rack"), job("other", 16, "vc3", 0),
             job("opp", 16)]
    r0 = solve(c, first, solver)
    assert not r0.unplaced
    jobs = list(with_current(first, r0)) + [job("high", 32, "vc1", 2)]
    r = solve(c, jobs, solver)
    assert r.placement("high") is not None and r.preempted == ("low",)
    assert servers_of(r, "high") == servers_of(r0, "low")


def test_priority_preemption_on_two_gpu_nodes(design, solver="hived"):
    """A tenant's one 2-GPU cell: each higher-priority job preempts the one
    below it (HiveD defers this with lazy preemption; alloc stops the job)."""
    c = design.cluster
    rs = rounds(c, [[job("ct0", 2, "vc2", 0, gpu_type="CT1")],
                    [job("ct1", 2, "vc2", 1, gpu_type="CT1")],
                    [job("ct2", 2, "vc2", 2, gpu_type="CT1")]], solver)
    assert rs[1].preempted == ("ct0",) and rs[1].placement("ct1") is not None
    assert rs[2].preempted == ("ct1",) and rs[2].placement("ct2") is not None


def test_stateful_preemption_rounds(design, solver="hived"):
    """A tenant with one two-server rack cell: two priority-2 jobs preempt the
    priority-1 jobs holding it; a third priority-2 job waits (no preemption
    at equal priority); a priority-3 job of both servers preempts both."""
    c = with_tenants(design.cluster, {"vc1": (("rack", 1),)})
    rs = rounds(c, [[job("r28", 16, "vc1", 1)],
                    [job("r29", 16, "vc1", 2), job("r30", 16, "vc1", 2)],
                    [job("r31", 16, "vc1", 2)],
                    [job("r32", 32, "vc1", 3)]], solver)
    assert rs[1].preempted == ("r28",)
    assert rs[1].placement("r29") and rs[1].placement("r30")
    assert servers_of(rs[1], "r29") != servers_of(rs[1], "r30")
    assert rs[2].placement("r31") is None and not rs[2].preempted
    assert set(rs[3].preempted) == {"r29", "r30"} and rs[3].placement("r32") is not None


def test_model_never_below_hived_in_preemption_rounds(design):
    """On the preemption rounds' inputs the model's answer is valid (legal
    victims only, checked by allocate) and worth at least hived's."""
    c = with_tenants(design.cluster, {"vc1": (("rack", 1),), "vc3": (("server", 2),)})
    first = [job("low", 32, "vc1", 1, locality="rack"), job("other", 16, "vc3", 0),
             job("opp", 16)]
    jobs = list(with_current(first, solve(c, first))) + [job("high", 32, "vc1", 2),
                                                         job("more", 8, "vc3", 1)]
    h = solve(c, jobs, "hived")
    m = solve(c, jobs, "cpsat-tenancy")
    assert m.value >= h.value - 1e-9


@pytest.mark.parametrize("solver", SOLVERS)
def test_running_state_outside_new_cells_is_bad_input(design, solver):
    """Cells reconfigured under running guaranteed jobs (HiveD: the jobs can
    no longer be bound): bad input, never a solver failure."""
    c = design.cluster
    jobs = [job("a", 16, "vc1", 1), job("b", 16, "vc1", 1)]
    r = solve(c, jobs)
    running = list(with_current(jobs, r))
    smaller = replace(c, tenants=frozen_map({
        "vc1": Tenant("vc1", (Cell("gpu", 4, "V100"),)), "vc2": c.tenants["vc2"]}))
    with pytest.raises(InputError, match="tenancy"):
        allocate(smaller, running, solver=solver, time_limit=5)


def test_cells_beyond_the_cluster_are_bad_input(design):
    c = design.cluster
    huge = replace(c, tenants=frozen_map({"vc1": Tenant("vc1", (Cell("rack", 7, "V100"),))}))
    with pytest.raises(InputError, match="exceed"):
        allocate(huge, [job("a", 1, "vc1")], solver="hived")

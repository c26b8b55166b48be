"""Tenancy: cells, sharing safety, bad tenant input, tenancy_violations."""
from __future__ import annotations

from dataclasses import replace

import pytest

from alloc import Allocation, Cell, Cluster, GpuShare, InputError, Job, Placement, Server, Tenant
from alloc import allocate, violations
from alloc.deadline import Deadline
from alloc.model import frozen_map
from alloc.objectives import throughput
from alloc.tenancy import (cell_tree, check_binding, exact_binding, fail_server, greedy_binding,
                           infer_binding, quotas, safety, tenant_problems, tenancy_violations)

LEVELS = ("rack", "server", "socket", "switch", "gpu")


def cluster(n=4, tenants=None, gpus=8, levels=LEVELS, gtype="V100"):
    servers = tuple(Server(f"s{i}", 64000, 512000, gpus, gtype, f"r{i // 2}", 2, 2)
                    for i in range(n))
    ten = {k: Tenant(k, tuple(Cell(*c) for c in cells)) for k, cells in (tenants or {}).items()}
    return Cluster(servers, levels, frozen_map(ten))


def place(c, job, gpus, milli=None):
    m = milli or job.gpu_milli
    srv = sorted({g.split("/")[0] for g in gpus})
    cpu = {s: job.cpu // len(srv) for s in srv}
    mem = {s: job.mem // len(srv) for s in srv}
    cpu[srv[0]] += job.cpu - sum(cpu.values())
    mem[srv[0]] += job.mem - sum(mem.values())
    tp = throughput(c, job, gpus, job.cpu, job.mem)
    return Placement(job.id, tuple(GpuShare(g, m) for g in gpus), cpu, mem, tp)


def gj(jid, n, tenant, prio=0, **kw):
    return Job(jid, gpus=n, cpu=1000 * n, mem=1000 * n, tenant=tenant, guaranteed=True,
               priority=prio, **kw)


def oj(jid, n, prio=0, **kw):
    return Job(jid, gpus=n, cpu=1000 * max(n, 1), mem=1000 * max(n, 1), priority=prio, **kw)


# ------------------------------------------------------------------ cells
def test_cell_tree_shape():
    c = cluster(4)
    t = cell_tree(c)
    lv = {x: i for i, x in enumerate(LEVELS)}
    assert len(t.by_type_level[("V100", lv["rack"])]) == 2
    assert len(t.by_type_level[("V100", lv["server"])]) == 4
    assert len(t.by_type_level[("V100", lv["switch"])]) == 16
    assert len(t.by_type_level[("V100", lv["gpu"])]) == 32
    assert t.fanout("V100", lv["server"]) == 2 and t.fanout("V100", lv["rack"]) == 2


def test_mixed_rack_is_not_a_cell():
    servers = (Server("a", 1000, 1000, 8, "V100", "r0"), Server("b", 1000, 1000, 8, "K80", "r0"))
    c = Cluster(servers, ("rack", "server", "gpu"),
                frozen_map({"t": Tenant("t", (Cell("rack", 1, "V100"),))}))
    probs = tenant_problems(c)
    assert probs and probs[0].startswith("tenants.t.cells[0].level:") and "mix" in probs[0]


def test_safety_matches_hived_formula():
    """ns[top] = free - unused; ns[l] = ns[l+1]*fanout + free[l] - unused[l]."""
    c = cluster(4)
    t = cell_tree(c)
    lv = {x: i for i, x in enumerate(LEVELS)}
    # bind one server: free racks 1, free servers 1 (in rack r0)
    bound = set(t.gpus[t.index["server:s0"]])
    unused = {("V100", lv["server"]): 2, ("V100", lv["gpu"]): 9}
    r = safety(t, bound, unused)
    # ns[rack] = 1; ns[server] = 1*2 + 1 - 2 = 1; ns[socket] = 2; ns[switch] = 4; ns[gpu] = 8 - 9
    assert not r.ok and r.failure == ("V100", "gpu", 1)
    assert r.splittable[("V100", "server")] == 1 and r.splittable[("V100", "switch")] == 4
    r = safety(t, bound, {("V100", lv["server"]): 2, ("V100", lv["gpu"]): 8})
    assert r.ok and r.splittable[("V100", "gpu")] == 0


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("cells, field", [
    ([("server", 5, "V100")], "tenants.a.cells[0].count"),
    ([("switch", 1, "V100")], "tenants.a.cells[0].level"),
    ([("server", 1, "H100")], "tenants.a.cells[0].gpu_type"),
    ([("server", -1, "V100")], "tenants.a.cells[0].count"),
])
def test_tenant_problems_name_the_field(cells, field):
    c = cluster(4, {"a": cells}, levels=("server", "gpu"))
    probs = tenant_problems(c)
    assert probs and probs[0].startswith(field + ":"), probs
    assert "\n" not in probs[0]
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        allocate(c, [], solver="hived")


def test_quota_exceeding_cluster_in_aggregate():
    # 3 servers + 8 GPUs on a 4-server cluster, each alone fits
    c = cluster(4, {"a": [("server", 3, "V100")], "b": [("gpu", 9, "V100")]})
    probs = tenant_problems(c)
    assert len(probs) == 1 and probs[0].startswith("tenants.b.cells[0].count:")
    assert "exceed the physical cluster" in probs[0]
    assert not tenant_problems(cluster(4, {"a": [("server", 3, "V100")],
                                           "b": [("gpu", 8, "V100")]}))


def test_guaranteed_job_without_tenant_and_priority_range():
    c = cluster(2, {"a": [("server", 1, "V100")]})
    with pytest.raises(InputError, match=r"jobs\[0\]\.guaranteed"):
        allocate(c, [Job("x", gpus=1, guaranteed=True)], solver="hived")
    with pytest.raises(InputError, match=r"jobs\[0\]\.priority"):
        allocate(c, [gj("x", 1, "a", prio=5000)], solver="hived")
    with pytest.raises(InputError, match=r"jobs\[0\]\.tenant"):
        allocate(c, [gj("x", 1, "zz")], solver="hived")


# ---------------------------------------------------------------- binding
def test_greedy_and_exact_binding_agree_on_feasibility():
    c = cluster(2, {"a": [("switch", 1, "V100"), ("gpu", 2, "V100")],
                    "b": [("server", 1, "V100")]})
    gi = c.gpu_index
    used = {"a": {gi["s0/gpu0"], gi["s0/gpu1"], gi["s0/gpu4"]}, "b": {gi["s1/gpu3"]}}
    for b in (greedy_binding(c, used), exact_binding(c, used, deadline=Deadline.after(30))):
        assert b is not None and not check_binding(c, b, used)
    # a's GPUs on three switches: one switch cell + two GPU cells cannot cover 4 GPUs on 4 switches
    used = {"a": {gi["s0/gpu0"], gi["s0/gpu2"], gi["s0/gpu4"], gi["s0/gpu6"]}}
    assert infer_binding(c, used) is None


def test_binding_blocked_by_other_tenant():
    c = cluster(2, {"a": [("server", 1, "V100")], "b": [("server", 1, "V100")]})
    gi = c.gpu_index
    used = {"a": {gi["s0/gpu0"]}, "b": {gi["s0/gpu7"]}}   # both on s0: no disjoint server cells
    assert infer_binding(c, used) is None


# ------------------------------------------------------------- violations
def alloc_of(c, jobs, places, preempted=(), stats=None):
    placed = {p.job for p in places}
    return Allocation(tuple(places), tuple(j.id for j in jobs if j.id not in placed),
                      tuple(preempted), stats=frozen_map(stats or {}))


def test_violation_guaranteed_outside_cells_and_quota():
    c = cluster(2, {"a": [("switch", 1, "V100")]})
    j = gj("x", 4, "a")
    a = alloc_of(c, [j], [place(c, j, [f"s0/gpu{k}" for k in range(4)])])
    v = violations(c, [j], a)
    assert any("guarantee 2" in x for x in v), v
    j2 = gj("y", 2, "a")
    a = alloc_of(c, [j2], [place(c, j2, ["s0/gpu0", "s0/gpu2"])])
    v = tenancy_violations(c, [j2], a)
    assert v and ("outside" in v[0] or "binding" in v[0] or "safety" in v[0]), v


def test_violation_safety():
    # a: 1 server cell, b: 1 server cell; a guaranteed 1-GPU job of a on each server
    c = cluster(2, {"a": [("gpu", 2, "V100")], "b": [("server", 1, "V100")]})
    j1, j2 = gj("x", 1, "a"), gj("y", 1, "a")
    a = alloc_of(c, [j1, j2], [place(c, j1, ["s0/gpu0"]), place(c, j2, ["s1/gpu0"])])
    v = tenancy_violations(c, [j1, j2], a)
    assert v and "safety" in v[0] or "binding" in v[0], v
    a = alloc_of(c, [j1, j2], [place(c, j1, ["s0/gpu0"]), place(c, j2, ["s0/gpu1"])])
    assert tenancy_violations(c, [j1, j2], a) == []


def test_violation_preemption_victims():
    c = cluster(2, {"a": [("server", 1, "V100")], "b": [("server", 1, "V100")]})
    run_b = gj("b0", 1, "b")
    run_b = replace(run_b, current=place(c, run_b, ["s1/gpu0"]))
    new_a = gj("a0", 8, "a", prio=10)
    # a's job may not preempt b's guaranteed job
    a = alloc_of(c, [run_b, new_a], [place(c, new_a, [f"s1/gpu{k}" for k in range(8)])],
                 preempted=["b0"])
    v = violations(c, [run_b, new_a], a)
    assert any("preempted job 'b0'" in x for x in v), v
    # an opportunistic victim is fine
    run_o = oj("o0", 1)
    run_o = replace(run_o, current=place(c, run_o, ["s0/gpu0"]))
    a = alloc_of(c, [run_o, new_a], [place(c, new_a, [f"s0/gpu{k}" for k in range(8)])],
                 preempted=["o0"])
    assert violations(c, [run_o, new_a], a) == []
    # a lower-priority same-tenant victim is fine, an equal-priority one is not
    for prio, ok in ((0, True), (10, False)):
        low = replace(gj("a1", 1, "a", prio=prio), current=None)
        low = replace(low, current=place(c, low, ["s0/gpu0"]))
        a = alloc_of(c, [low, new_a], [place(c, new_a, [f"s0/gpu{k}" for k in range(8)])],
                     preempted=["a1"])
        assert (violations(c, [low, new_a], a) == []) is ok


def test_running_guaranteed_job_must_be_placed_or_preempted():
    c = cluster(1, {"a": [("server", 1, "V100")]})
    j = gj("a0", 1, "a")
    j = replace(j, current=place(c, j, ["s0/gpu0"]))
    v = violations(c, [j], alloc_of(c, [j], []))
    assert any("dropped but not listed in preempted" in x for x in v)


def test_colocation_memory_limit():
    c = cluster(1, {"a": [("gpu", 1, "V100")]})
    g = Job("g", gpus=1, gpu_milli=600, cpu=1000, mem=1000, tenant="a", guaranteed=True,
            gpu_mem=20000)
    o = Job("o", gpus=1, gpu_milli=400, cpu=1000, mem=1000, gpu_mem=10000)
    big = replace(o, gpu_mem=16000)
    ok = alloc_of(c, [g, o], [place(c, g, ["s0/gpu0"]), place(c, o, ["s0/gpu0"])])
    assert violations(c, [g, o], ok) == []
    bad = alloc_of(c, [g, big], [place(c, g, ["s0/gpu0"]), place(c, big, ["s0/gpu0"])])
    v = violations(c, [g, big], bad)
    assert any("GPU memory" in x for x in v), v


def test_fail_server():
    c = cluster(3, {"a": [("server", 1, "V100")]})
    j = oj("o", 1)
    j = replace(j, current=place(c, j, ["s1/gpu0"]))
    c2, jobs = fail_server(c, [j], "s1")
    assert [s.id for s in c2.servers] == ["s0", "s2"] and jobs[0].current is None
    c3 = cluster(2, {"a": [("server", 2, "V100")]})
    with pytest.raises(InputError, match=r"tenants\.a\.cells\[0\]\.count"):
        fail_server(c3, [], "s0")


def test_single_type_cells_default_type():
    c = cluster(2, {"a": [("server", 1, None)]})
    assert quotas(c)["a"] == {("V100", 1): 1}
    servers = c.servers + (Server("k", 1000, 1000, 4, "K80", "r9"),)
    c2 = Cluster(servers, LEVELS, c.tenants)
    assert tenant_problems(c2)[0].startswith("tenants.a.cells[0].gpu_type:")


@pytest.mark.parametrize("solver", ["hived", "drf", "antman", "cpsat-tenancy"])
def test_cpu_victims_go_lowest_weight_first(solver):
    # the GPU is free; the CPU is held by two opportunistic CPU-only jobs of
    # one priority: the one of lower weight stops, whatever its index
    c = Cluster((Server("s0", 8000, 512000, 2, "V100"),), ("server", "gpu"),
                frozen_map({"vc": Tenant("vc", (Cell("server", 1, "V100"),))}))
    x = Job("x", cpu=3000, mem=1000, weight=2.0,
            current=Placement("x", (), {"s0": 3000}, {"s0": 1000}))
    y = Job("y", cpu=3000, mem=1000, weight=1.0,
            current=Placement("y", (), {"s0": 3000}, {"s0": 1000}))
    new = Job("n", gpus=1, cpu=4000, mem=1000, tenant="vc", guaranteed=True)
    a = allocate(c, [x, y, new], solver=solver, time_limit=5)
    assert a.preempted == ("y",) and {p.job for p in a.placements} == {"x", "n"}

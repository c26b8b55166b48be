"""Unit tests of the tenancy model's steps: grouping, the build steps, the
one cell-placing model, restricting a model, hints, phase 1, the LP bound,
the neighbourhood search, decoding, restrictions, the engine's journal, and
the engine parameter of ``solve_tenancy``."""
from __future__ import annotations

from pathlib import Path

import pytest

from alloc import Cell, Cluster, Job, Server, Tenant, allocate, load_instance
from alloc.deadline import Deadline
from alloc.kernel import solve
from alloc.model import Status, frozen_map
from alloc.problem import compile_problem
from alloc.solvers.exact.tenancy import solve as X
from alloc.solvers.exact.tenancy.decode import Plan, binding_ok, carve_spread, decode_exact, victims_ok
from alloc.engines.cells.engine import Engine, restore_running
from alloc.solvers.exact.tenancy.model import (SCALE, build_model, group_jobs, restrictions)
from alloc.solvers.exact.tenancy.search import complete, neighbourhood_search, restrict
from alloc.solvers.exact.tenancy.warm import LossAwareEngine, hint_values, warm_starts
from alloc.tenancy import (CellRequest, cell_placement_model, cell_tree, check_binding,
                           exact_binding, with_current)

LEVELS = ("rack", "server", "socket", "switch", "gpu")
SMALL = Path(__file__).resolve().parents[1] / "instances" / "tenancy_small.json"


def cluster(n=2, tenants=None, gpus=8):
    servers = tuple(Server(f"s{i}", 64000, 512000, gpus, "V100", f"r{i // 2}", 2, 2)
                    for i in range(n))
    ten = {k: Tenant(k, tuple(Cell(*c) for c in cells)) for k, cells in (tenants or {}).items()}
    return Cluster(servers, LEVELS, frozen_map(ten))


def job(jid, n, tenant=None, prio=0, **kw):
    return Job(jid, gpus=n, cpu=1000 * max(n, 1), mem=1000 * max(n, 1), tenant=tenant,
               guaranteed=tenant is not None, priority=prio, **kw)


@pytest.fixture(scope="module")
def small():
    inst = load_instance(SMALL)
    return compile_problem(inst.cluster, inst.jobs)


def test_group_jobs_and_elastic_entries():
    jobs = [job("a", 2), job("b", 2), job("c", 4), Job("e", gpus=2, min_gpus=1, max_gpus=4)]
    G = group_jobs(jobs, [0, 1, 2, 3])
    assert G.K == 2 + 4                                     # a+b, c, and e at 1..4 GPUs
    k_ab = next(k for k in range(G.K) if G.members[k] == (0, 1))
    assert G.size[k_ab] == 2
    assert sorted(G.size[k] for k in range(G.K) if G.members[k] == (3,)) == [1, 2, 3, 4]
    assert len({G.group[k] for k in range(G.K) if G.members[k] == (3,)}) == 1


def test_build_steps_columns():
    c = cluster(2, {"a": [("server", 1, "V100")]})
    p = compile_problem(c, [job("g", 4, "a"), job("o", 12), job("cpu", 0)])
    tm = build_model(p, 0.0, Deadline.never())
    assert {s for (k, s) in tm.x if tm.groups.members[k] == (0,)} == {0, 1}
    assert not any(tm.groups.members[k] == (1,) for (k, s) in tm.x)   # 12 GPUs: no one server
    assert [k for (k, d) in tm.y if tm.groups.members[k] == (1,)]      # but spread
    assert len(tm.units) == 4 and tm.units_exact    # (tenant a, opportunistic) x 2 servers
    assert sum(1 for key in tm.cells if key[0] == "a") == 2            # one count per server
    assert tm.m.n == len(tm.m.lb) and all(tm.m.integer)


def test_model_optimum_and_legal_victims():
    """A running opportunistic job no pending job outranks is never stopped;
    one a guaranteed job outranks may be."""
    c = cluster(1, {"a": [("server", 1, "V100")]})
    first = [job("o", 8)]
    r0 = allocate(c, first, solver="hived")
    run = list(with_current(first, r0))
    p = compile_problem(c, run + [job("o2", 8, prio=0)])
    tm = build_model(p, 0.0, Deadline.never())
    res = solve(tm.m, "cpsat", time_limit=10)
    assert res.status is Status.OPTIMAL and res.x[tm.pre[0]] == 0
    p = compile_problem(c, run + [job("g", 8, "a")])
    tm = build_model(p, 0.0, Deadline.never())
    res = solve(tm.m, "cpsat", time_limit=10)
    # same value either way; the stop is allowed (the guaranteed job outranks it)
    assert res.objective == pytest.approx(1 * SCALE, abs=1)


def test_cell_placement_model_is_shared_by_binding():
    c = cluster(2, {"a": [("switch", 1, "V100"), ("gpu", 2, "V100")],
                    "b": [("server", 1, "V100")]})
    tree = cell_tree(c)
    gi = c.gpu_index
    lv = {x: i for i, x in enumerate(LEVELS)}
    sw = tuple(tree.by_type_level[("V100", lv["switch"])])
    cover = {gi["s0/gpu0"]: "a", gi["s0/gpu1"]: "a"}
    cm = cell_placement_model(tree, [CellRequest("a", sw, 1)], cover)
    res = solve(cm.model, "cpsat", time_limit=5)
    chosen = [n for (v, n), col in cm.y.items() if res.x[col] > 0.5]
    assert [tree.key[n] for n in chosen] == ["switch:s0/socket0/switch0"]
    # a GPU of another tenant's job inside every candidate: infeasible without solving
    assert cell_placement_model(tree, [CellRequest("a", sw[:1], 1)],
                                {gi["s0/gpu0"]: "b"}) is None
    used = {"a": {gi["s0/gpu0"], gi["s0/gpu1"], gi["s0/gpu4"]}, "b": {gi["s1/gpu3"]}}
    b = exact_binding(c, used, deadline=Deadline.after(10))
    assert b is not None and not check_binding(c, b, used)


def test_restrict_fixes_and_expands(small):
    tm = build_model(small, 0.0, Deadline.never())
    res = solve(tm.m, "cpsat", time_limit=10)
    x = res.x
    fixed = {c: float(x[c]) for c in list(tm.x.values())[: len(tm.x) // 2]}
    r = restrict(tm.m, fixed)
    assert r.model.n == tm.m.n - len(fixed)
    sub = solve(r.model, "cpsat", time_limit=10)
    full = r.expand(sub.x)
    assert tm.m.feasible(full) and all(full[c] == v for c, v in fixed.items())
    assert tm.m.value(full) == pytest.approx(sub.objective)
    bad = dict(fixed)
    c0 = next(iter(tm.x.values()))
    bad[c0] = tm.m.ub[c0] + 1
    assert restrict(tm.m, bad) is None


def test_warm_hint_completes_to_a_feasible_point(small):
    tm = build_model(small, 0.0, Deadline.never())
    warm, late = warm_starts(small, list(small.running), small.pending, 0.0, Deadline.after(30))
    assert not late and [w[0] for w in warm][:1] == ["hived"]
    for name, eng, pre in warm:
        hint = hint_values(tm, eng)
        full = complete(tm.m, hint, "cpsat", Deadline.after(10))
        assert full is not None and tm.m.feasible(full), name
        # the hint's value is the warm start's value up to the span factors
        value = sum(small.value_of(j, a) for j, a in eng.assign.items())
        assert tm.m.value(full) / SCALE >= value - 1e-6


def test_engine_journal_rolls_back_exactly(small):
    eng = Engine(small)
    restore_running(eng, list(small.running), Deadline.never())
    before = (eng.gfree.copy(), eng.owner.copy(), dict(eng.assign), dict(eng.unused),
              {k: set(v) for k, v in eng.free_max.items()}, list(eng.nbound),
              dict(eng.bound_use), eng.cpu.copy())
    mark = eng.checkpoint()
    for j in small.pending[:10]:
        eng.try_place(j, small.jobs[j].gpus, 2, set())
    some = sorted(eng.assign)[:3]
    for j in some:
        eng.remove(j)
    assert dict(eng.assign) != before[2]
    eng.rollback(mark)
    after = (eng.gfree, eng.owner, dict(eng.assign), dict(eng.unused),
             {k: set(v) for k, v in eng.free_max.items() if v}, list(eng.nbound),
             dict(eng.bound_use), eng.cpu)
    assert (before[0] == after[0]).all() and (before[1] == after[1]).all()
    assert before[2] == after[2] and before[3] == after[3]
    assert {k: v for k, v in before[4].items() if v} == after[4]
    assert before[5:7] == after[5:7] and (before[7] == after[7]).all()
    assert eng._log is None


def test_phases_bound_and_search(small):
    call = X.Call(small, "cpsat", 0, None, 0.0, True)
    tm = build_model(small, 0.0, Deadline.never())
    warm, _ = warm_starts(small, list(small.running), small.pending, 0.0, Deadline.after(30))
    score = X.scorer(small, list(small.running), 0.0)
    full = X.hint(call, tm, warm, score, Deadline.after(10))
    floor, proven, full = X.phase1(call, tm, full, Deadline.after(10))
    assert proven and 0 < floor <= X.trivial_work_bound(tm)
    X.phase2_model(tm, floor, full)
    lp = X.lp_bound(tm, relax_floor=False, deadline=Deadline.after(10))
    res = solve(tm.m, "cpsat", time_limit=10)
    assert res.status is Status.OPTIMAL and res.objective / SCALE <= lp + 1e-6
    found = neighbourhood_search(tm, full, lambda m, dl, sd: call.solve(m, dl, seed=sd),
                                 Deadline.after(1.0), seed=1)
    objs = [o for _, o in found]
    assert objs == sorted(objs) and all(tm.m.feasible(x) for x, _ in found)


def test_decode_realises_the_model(small):
    tm = build_model(small, 0.0, Deadline.never())
    res = solve(tm.m, "cpsat", time_limit=10)
    eng, misses = decode_exact(tm, res.x, Deadline.after(10))
    assert binding_ok(small, eng) and victims_ok(small, eng, tm.running)
    plan = Plan(tm, res.x)
    assert set(plan.kept) <= set(eng.assign)
    assert misses == 0 or misses <= len(plan.size)


def test_carve_spread_uses_the_units():
    c = cluster(2, gpus=8)
    p = compile_problem(c, [job("w", 12), job("x", 2, locality="server")])
    tm = build_model(p, 0.0, Deadline.never())
    res = solve(tm.m, "cpsat", time_limit=10)
    plan = Plan(tm, res.x)
    assert [j for j, _ in plan.spread] == [0]
    eng = LossAwareEngine(p)
    assert carve_spread(eng, plan) == []
    per = {}
    for g, _ in eng.assign[0].gpus:
        s = int(p.gpu_server[g])
        per[s] = per.get(s, 0) + 1
    assert per == plan.units[plan.pool[0]]


def test_restrictions_name_what_cuts_the_instance():
    c = cluster(2, {"a": [("server", 1, "V100")]})
    p = compile_problem(c, [job("g", 2, "a")])
    tm = build_model(p, 0.0, Deadline.never())
    assert restrictions(tm, floor=True)[0].startswith("guaranteed work first")
    assert restrictions(tm, floor=False) == []
    odd = Job("odd", gpus=3, cpu=1000, mem=1000)            # 1000 / 3 per GPU
    tm = build_model(compile_problem(cluster(2, gpus=2), [odd]), 0.0, Deadline.never())
    assert any("rounded up" in x for x in restrictions(tm, floor=False))


@pytest.mark.parametrize("engine", ["cpsat", "highs"])
def test_solve_tenancy_engines_agree(small, engine):
    sol = X.solve_tenancy(small, deadline=Deadline.after(20), engine=engine,
                          guaranteed_first=False)
    value = sum(small.value_of(j, a) for j, a in sol.assign.items())
    ref = X.solve_tenancy(small, deadline=Deadline.after(20), engine="cpsat",
                          guaranteed_first=False)
    assert sol.stats["engine"] == engine
    assert value == pytest.approx(sum(small.value_of(j, a) for j, a in ref.assign.items()),
                                  abs=0.06)
    with pytest.raises(ValueError, match="valid engines"):
        X.solve_tenancy(small, deadline=Deadline.after(1), engine="glpk")

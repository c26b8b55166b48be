"""The exact driver in a scheduler loop: the item estimate, the big-machine
bound built as one block, the running jobs' value kept across rounds, the
final check's reserve, and the engine imported before the phases."""
from __future__ import annotations

import random

import pytest

from alloc import Cluster, Job, Server, Session
from alloc.deadline import Deadline
from alloc.experiments.generators import generate
from alloc.problem import compile_problem

pytest.importorskip("ortools")


def live_problem(servers: int = 16, seed: int = 0):
    inst = generate("live", seed, servers=servers)
    return compile_problem(inst.cluster, inst.jobs, "throughput")


@pytest.mark.parametrize("variant,seed", [("live", 0), ("hetero", 1), ("synergy", 2)])
def test_item_estimate_counts_the_items_the_build_makes(variant, seed):
    """The estimate (no items built) equals the number of items built."""
    from alloc.engines.configuration.aggregate import Aggregate
    inst = generate(variant, seed, servers=12)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never(), items=False)
    est = agg.item_estimate
    agg.build_items(Deadline.never())
    assert est == sum(len(x) for x in agg.items) > 0


def test_big_machine_bound_bounds_the_optimum_and_pools_by_class():
    """The block-built LP: above cpsat's proven optimum on a small live
    instance, and the per-class pooling no weaker than one pooled machine."""
    from alloc import allocate
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.bounds import big_machine_bound
    p = live_problem(6)
    agg = Aggregate(p, Deadline.never())
    by_class = big_machine_bound(agg, deadline=Deadline.after(5))
    pooled = big_machine_bound(agg, pool="all", deadline=Deadline.after(5))
    fixed = sum(p.value_of(j, a) for j, a in p.fixed.items())
    inst = generate("live", 0, servers=6)
    a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=20)
    assert a.value - fixed <= by_class + 1e-6 <= pooled + 2e-6


def loop_session(solver: str = "cpsat", servers: int = 6, seed: int = 3):
    """A short loop: jobs arrive and finish, the session keeps the rest."""
    rng = random.Random(seed)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(servers)))
    s = Session(cl, solver=solver, time_limit=2)
    k, running = 0, []
    for _ in range(4):
        events = [{"type": "finish", "job": j} for j in running if rng.random() < 0.3]
        for _ in range(6):
            k += 1
            n = rng.choice((1, 1, 2, 4))
            events.append({"type": "submit", "job": Job(f"j{k}", n, cpu=3000 * n,
                                                        mem=64000 * n, model="res18")})
        s.apply(events)
        yield s, s.step()
        done = {e["job"] for e in events if e["type"] == "finish"}
        running = [j for j, job in s.jobs.items() if job.current is not None and j not in done]


def test_running_jobs_value_kept_across_rounds_equals_the_sum():
    """`fixed_value` with the loop's carry equals the plain sum every round,
    and the bound (running jobs' value added) stays at or above the value."""
    from alloc.engines.configuration.driver import fixed_value
    for s, res in loop_session():
        a = res.allocation
        assert a.bound is None or a.value <= a.bound + 1e-6 * max(1.0, a.bound)
        jobs = list(s.jobs.values())
        p = compile_problem(s.cluster, jobs, "throughput", carry=s._carry)
        plain = sum(p.value_of(j, x) for j, x in p.fixed.items())
        assert fixed_value(p) == pytest.approx(plain, rel=1e-12, abs=1e-12)
        assert fixed_value(p) == pytest.approx(plain, rel=1e-12, abs=1e-12)  # from the carry


def test_check_reserve_in_a_loop_follows_what_changed():
    """A loop round whose last answer passed the check keeps back less than a
    fresh call on the same jobs, and more than nothing."""
    from alloc.solve import check_reserve
    for s, _ in loop_session("best-fit", servers=40):
        jobs = list(s.jobs.values())
        looped = compile_problem(s.cluster, jobs, "throughput", carry=s._carry)
        fresh = compile_problem(s.cluster, jobs, "throughput")
        assert 0.02 < check_reserve(looped) < check_reserve(fresh)


def test_preload_imports_the_engines_once():
    """After `preload` the engines' modules are imported and a second call
    costs nothing; cpsat reports an import it paid in ``import_s`` only."""
    import sys
    from alloc import allocate
    from alloc.kernel import MODULES, preload
    preload()
    assert all(m in sys.modules for e in ("highs", "cpsat") for m in MODULES[e])
    assert preload() < 0.05
    cl = Cluster((Server("s0", 24000, 512000, 8, "V100"),))
    a = allocate(cl, [Job("a", 1, cpu=3000, mem=64000, model="res18")], solver="cpsat",
                 time_limit=5)
    assert "import_s" not in a.stats


def test_engine_not_imported_with_too_little_time_left_falls_back_to_highs(monkeypatch):
    """A call with less time left than OR-Tools' import takes solves with
    HiGHS and leaves the import to the background; with time enough it
    keeps its engine."""
    from alloc.engines.configuration import backend as eng
    started = []
    monkeypatch.setattr(eng, "import_seconds",
                        lambda *names: 0.75 if "cpsat" in names else 0.0)
    monkeypatch.setattr(eng, "preload_in_background", lambda name, delay=0.0: started.append(name))
    stats: dict = {}
    b = eng.Backend("cpsat").ready(Deadline.after(0.2), stats)
    assert b is not None and b.name == "highs" and started == ["cpsat"]
    assert "HiGHS this call" in stats["engine_fallback"] and stats["engine"] == "highs"
    monkeypatch.setattr(eng, "preload", lambda engines: 0.0)
    b = eng.Backend("cpsat").ready(Deadline.after(5), {})
    assert b is not None and b.name == "cpsat"


def test_no_engine_imported_in_time_leaves_the_model_out(monkeypatch):
    """With less time left than even HiGHS's modules take to import (scipy's
    sparse matrices included: every model is built with them), the call
    builds no model: the heuristics answer, the bound is still reported and
    the imports start in the background."""
    from alloc import allocate
    from alloc.engines.configuration import backend as eng
    started = []
    monkeypatch.setattr(eng, "import_seconds", lambda *names: 100.0)
    monkeypatch.setattr(eng, "preload_in_background", lambda name, delay=0.0: started.append(name))
    stats: dict = {}
    assert eng.Backend("cpsat").ready(Deadline.after(0.2), stats) is None
    assert started == ["cpsat", "highs"] and "no model this call" in stats["engine_fallback"]
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(2)))
    jobs = [Job(f"j{i}", 2, cpu=6000, mem=128000, model="res18") for i in range(10)]
    a = allocate(cl, jobs, solver="cpsat", time_limit=2, objective="jobs")
    assert a.stats["model"] == "left out: no engine imported in time"
    assert a.value == 8 and a.bound is not None and a.bound >= a.value
    assert "lp_bound" not in a.stats


def test_an_engine_being_imported_in_the_background_counts_in_full(monkeypatch):
    """Its modules may sit half-imported in ``sys.modules``: a call budgets
    the whole import for it (an import of them waits for that one), the
    others only for what is missing."""
    from alloc import kernel
    from alloc.kernel import IMPORT_SECONDS, import_seconds, preload
    preload(("highs", "cpsat"))
    assert import_seconds("highs", "cpsat") == 0.0
    monkeypatch.setattr(kernel, "importing", lambda name: name == "cpsat")
    assert import_seconds("highs", "cpsat") == IMPORT_SECONDS["cpsat"]
    assert import_seconds("highs", "highs") == 0.0


def test_an_unknown_engine_is_named():
    from alloc.kernel import import_seconds, preload
    for call in (lambda: import_seconds("highs", "gurobi"), lambda: preload(["gurobi"])):
        with pytest.raises(ValueError, match="unknown engine 'gurobi'; valid engines: highs"):
            call()

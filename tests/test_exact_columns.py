"""Columns and bounds beside the exact pricing and the LP: greedy patterns
(each fits one server of its class, with a positive reduced cost under the
duals it was built from; column generation with them keeps its Lagrangian
bound above the optimum), patterns carried across loop rounds (each fits
its new class) and the LP-free bound (above the big-machine LP and a proven
optimum)."""
from __future__ import annotations

import dataclasses

import pytest

from alloc.deadline import Deadline
from alloc.experiments.generators import generate
from alloc.problem import compile_problem

pytest.importorskip("ortools")


@pytest.mark.parametrize("variant,seed", [("hetero", 0), ("live", 1), ("synergy", 2)])
def test_greedy_patterns_fit_and_price_out(variant, seed):
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.master import EPS, Master, greedy_patterns, lp_duals
    inst = generate(variant, seed, servers=10)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    master = Master(agg)
    _, _, duals, _, _ = lp_duals(master, Deadline.after(10))     # the empty pool's duals
    found = 0
    for c in range(agg.K):
        for pat in greedy_patterns(master, c, duals, Deadline.never(), limit=6):
            assert_fits(agg, pat)
            rc = sum(master.item_coef(c, duals, i) * n for i, n in pat.counts) \
                - duals.get(("class", c), 0.0)
            assert rc > EPS
            found += 1
    assert found > 0


def assert_fits(agg, pat):
    """``pat`` fits one server of its class, laid out, at its items' value."""
    from alloc.engines.configuration.patterns import layout_ffd
    c, counts, items = pat.cls, dict(pat.counts), agg.items[pat.cls]
    for k in range(3):
        need = sum((items[i].cpu, items[i].mem, items[i].gpus)[k] * n for i, n in counts.items())
        assert need <= agg.cap[c][k]
    assert all(n <= agg.item_ub(c, i) for i, n in counts.items())
    assert layout_ffd(agg, c, counts) is not None
    assert sorted(i for i, _ in pat.layout) == sorted(i for i, n in counts.items()
                                                     for _ in range(n))
    whole = [g for i, gs in pat.layout if items[i].gpus for g in gs]
    assert len(whole) == len(set(whole)) and set(whole) <= set(agg.full[c])
    assert pat.value == pytest.approx(sum(items[i].value * n for i, n in counts.items()))


def test_carried_patterns_map_onto_the_next_round():
    """In a loop, the patterns a round keeps come back in the next round on
    its own classes and items, each fitting its server; a round on another
    cluster gets none."""
    from alloc import Cluster, Server
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.carried import POOL, carried_patterns
    from test_exact_loop import loop_session
    n = rounds = 0
    for s, res in loop_session("cpsat", servers=8, seed=11):
        rounds += res.allocation.stats.get("carried_columns", 0) > 0
        kept = s._carry.take(POOL)
        if kept is None:
            continue
        s._carry.keep(POOL, kept)
        # every job pending again: the idle servers' class and the job types recur
        jobs = [dataclasses.replace(j, current=None) for j in s.jobs.values()]
        p = compile_problem(s.cluster, jobs, "throughput", carry=s._carry)
        agg = Aggregate(p, Deadline.never())
        pats = carried_patterns(agg, Deadline.never())
        for pat in pats:
            assert_fits(agg, pat)
        n += len(pats)
        assert s._carry.take(POOL) is None          # taken: kept again only by a solve
        s._carry.keep(POOL, (Cluster((Server("x", 1000, 1000, 1),)),) + kept[1:])
        assert carried_patterns(Aggregate(p, Deadline.never()), Deadline.never()) == []
        s._carry.keep(POOL, kept)                   # for the next round's solve
    assert n > 0 and rounds > 0


def test_column_generation_bound_stays_above_the_optimum():
    """On a small heterogeneous instance the Lagrangian bound of column
    generation (greedy columns included) is at or above cpsat's proven optimum."""
    from alloc import allocate
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.backend import Backend
    from alloc.engines.configuration.master import Master, column_generation
    inst = generate("hetero", 3, servers=4)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    cg = column_generation(Master(agg), Backend("cpsat"), Deadline.after(20))
    a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=20)
    assert cg.converged and agg.exact_units
    assert a.status == "optimal"
    assert cg.bound >= a.value - 1e-6 * max(1.0, a.value)


@pytest.mark.parametrize("variant,seed", [("hetero", 0), ("live", 1), ("synergy", 2), ("openb", 0)])
def test_item_bound_is_above_the_big_machine_bound(variant, seed):
    """The LP-free bound relaxes the big-machine LP (so bounds every
    placement) and is positive when a job can be placed."""
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.bounds import big_machine_bound, item_bound
    kw = {"gpus": 64} if variant == "openb" else {"servers": 6}
    inst = generate(variant, seed, **kw)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    bm = big_machine_bound(agg, deadline=Deadline.after(10))
    assert bm is not None and item_bound(agg) >= bm - 1e-6 * max(1.0, bm)
    assert item_bound(agg) > 0


@pytest.mark.parametrize("variant,seed", [("live", 0), ("live", 4), ("hetero", 5)])
def test_item_bound_bounds_a_proven_optimum(variant, seed):
    """On small instances (running jobs fixed in ``live``) the LP-free bound
    on the pending jobs plus the running jobs' value is at or above cpsat's
    proven optimum."""
    from alloc import allocate
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.bounds import item_bound
    inst = generate(variant, seed, servers=3)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    fixed = sum(p.value_of(j, x) for j, x in p.fixed.items())
    a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=20)
    assert a.status == "optimal"
    assert item_bound(Aggregate(p, Deadline.never())) + fixed >= a.value - 1e-6 * max(1.0, a.value)

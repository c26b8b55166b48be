"""The exact driver's state across loop rounds and its garbage: the servers'
canonical shapes kept in the carry equal fresh ones every round, the
aggregate's items equal a build without the per-GPU-type values, CP-SAT
models hold no reference cycles, and the collector pause restores the
collector's state."""
from __future__ import annotations

import gc

import pytest

from alloc.deadline import Deadline
from alloc.problem import compile_problem

from test_exact_loop import loop_session

pytest.importorskip("ortools")


def _classes(agg):
    """What the classes are: members, capacities, free milli and GPU orders."""
    return ([list(m) for m in agg.classes], list(agg.cap), list(agg.free),
            [agg.perm[s] for s in range(agg.p.S)])


def test_shapes_kept_across_rounds_equal_fresh_ones():
    """Every round of a loop (jobs arrive and finish), the aggregate built
    from the carry's kept shapes has the classes and GPU orders of one built
    afresh."""
    from alloc.engines.configuration.aggregate import SHAPES, Aggregate
    rounds = 0
    for s, _ in loop_session("best-fit", servers=12, seed=5):
        jobs = list(s.jobs.values())
        looped = compile_problem(s.cluster, jobs, "throughput", carry=s._carry)
        kept = Aggregate(looped, Deadline.never(), items=False)
        assert s._carry.take(SHAPES) is not None      # kept for the next round
        again = Aggregate(looped, Deadline.never(), items=False)   # nothing kept: afresh
        fresh = Aggregate(compile_problem(s.cluster, jobs, "throughput"), Deadline.never(),
                          items=False)
        assert _classes(kept) == _classes(fresh) == _classes(again)
        rounds += 1
    assert rounds == 4


@pytest.mark.parametrize("variant,seed", [("hetero", 0), ("live", 1)])
def test_item_values_equal_the_problems_coefficients(variant, seed):
    """Each item's value (computed once per type, option, GPU type and span)
    is the problem's coefficient of the type's jobs on every server of the
    class, and each spread variable's the best over its group's classes."""
    from alloc.experiments.generators import generate
    from alloc.engines.configuration.aggregate import Aggregate
    inst = generate(variant, seed, servers=12)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    n = 0
    for c, items in enumerate(agg.items):
        for it in items:
            if it.kind != "whole":
                continue
            t = agg.types[it.t]
            for s in agg.classes[c]:
                assert it.value == pytest.approx(p.coef(t.rep, it.o, s, span=agg.span_in(t)))
                n += 1
    for ti, o, gid, val in agg.spread_vars:
        t = agg.types[ti]
        cls = agg.groups[gid][1]
        best = max(p.coef(t.rep, o, agg.rep_server[c]) for c in cls)
        assert val == pytest.approx(best * agg.span_out(t))
    assert n > 0


def test_cpsat_models_hold_no_reference_cycles():
    """A CP-SAT model built and solved leaves nothing for the cyclic collector."""
    from alloc.kernel import LinearModel
    from alloc.kernel.cpsat import solve_cpsat
    m = LinearModel("knapsack")
    xs = [m.add_var(0, 3, True, obj=1.0 + k) for k in range(5)]
    m.add_row({x: 2 + k for k, x in enumerate(xs)}, hi=9)
    solve_cpsat(m, 5.0)            # the first call's imports are not counted
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        res = solve_cpsat(m, 5.0)
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
    assert res.objective == pytest.approx(res.bound, rel=1e-6) and res.objective > 0


def test_collector_pause_restores_its_state():
    """The driver's pause (`alloc.collector.paused`) stops the collector and
    leaves it as it found it (running or not), also when the block raises."""
    from alloc.collector import paused
    was = gc.isenabled()
    try:
        gc.enable()
        with pytest.raises(RuntimeError):
            with paused():
                assert not gc.isenabled()
                raise RuntimeError("in the block")
        assert gc.isenabled()
        gc.disable()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()

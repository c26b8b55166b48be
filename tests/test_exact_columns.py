"""Greedy patterns beside the exact pricing: each fits one server of its
class and has a positive reduced cost under the duals it was built from;
column generation with them keeps its Lagrangian bound above the optimum."""
from __future__ import annotations

import pytest

from alloc.deadline import Deadline
from alloc.experiments.generators import generate
from alloc.problem import compile_problem

pytest.importorskip("ortools")


@pytest.mark.parametrize("variant,seed", [("hetero", 0), ("live", 1), ("synergy", 2)])
def test_greedy_patterns_fit_and_price_out(variant, seed):
    from alloc.solvers.common.configuration.aggregate import Aggregate
    from alloc.solvers.common.configuration.master import EPS, Master, greedy_patterns, lp_duals
    from alloc.solvers.common.configuration.patterns import layout_ffd
    inst = generate(variant, seed, servers=10)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    master = Master(agg)
    _, _, duals, _, _ = lp_duals(master, Deadline.after(10))     # the empty pool's duals
    found = 0
    for c in range(agg.K):
        for pat in greedy_patterns(master, c, duals, Deadline.never(), limit=6):
            counts = dict(pat.counts)
            items = agg.items[c]
            for k in range(3):
                need = sum((items[i].cpu, items[i].mem, items[i].gpus)[k] * n
                           for i, n in counts.items())
                assert need <= agg.cap[c][k]
            assert all(n <= agg.item_ub(c, i) for i, n in counts.items())
            assert layout_ffd(agg, c, counts) is not None
            rc = sum(master.item_coef(c, duals, i) * n for i, n in counts.items()) \
                - duals.get(("class", c), 0.0)
            assert rc > EPS
            assert pat.value == pytest.approx(sum(items[i].value * n for i, n in counts.items()))
            found += 1
    assert found > 0


def test_column_generation_bound_stays_above_the_optimum():
    """On a small heterogeneous instance the Lagrangian bound of column
    generation (greedy columns included) is at or above cpsat's proven optimum."""
    from alloc import allocate
    from alloc.solvers.common.configuration.aggregate import Aggregate
    from alloc.solvers.common.configuration.engine import Backend
    from alloc.solvers.common.configuration.master import Master, column_generation
    inst = generate("hetero", 3, servers=4)
    p = compile_problem(inst.cluster, inst.jobs, "throughput")
    agg = Aggregate(p, Deadline.never())
    cg = column_generation(Master(agg), Backend("cpsat"), Deadline.after(20))
    a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=20)
    assert cg.converged and agg.exact_units
    assert a.status == "optimal"
    assert cg.bound >= a.value - 1e-6 * max(1.0, a.value)

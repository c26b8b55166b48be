"""The exact driver at scale: the restricted LP rounded down, column generation
that still runs after a slow warm start, and the pool's seeds."""
from __future__ import annotations

import pytest

from alloc import allocate
from alloc.deadline import Deadline
from alloc.experiments.generators import generate
from alloc.problem import compile_problem

pytest.importorskip("ortools")


def hetero_problem(servers: int = 24):
    inst = generate("hetero", 0, servers=servers)
    return inst, compile_problem(inst.cluster, inst.jobs, "throughput")


def seeded_master(p):
    """A master seeded with greedy-upgrade's patterns, its aggregate, and that value."""
    from alloc.registry import get_solver
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.columns import solution_to_columns, true_value
    from alloc.engines.configuration.master import Master
    agg = Aggregate(p, Deadline.never())
    start = get_solver("greedy-upgrade").solve(p, deadline=Deadline.after(5)).assign
    master = Master(agg)
    for pat in solution_to_columns(agg, start)[0].values():
        master.add(pat)
    return agg, master, true_value(p, start)


def test_round_down_is_valid_and_restores_the_residual():
    """Rounding a restricted LP cut short after two rounds: the residual
    capacities are restored, the decoded answer fits the cluster, is worth
    the master value, stays under the LP bound and above the floors alone."""
    from alloc.engines.configuration.bounds import big_machine_bound
    from alloc.engines.configuration.columns import check_assign, decode, true_value
    from alloc.engines.configuration.dive import round_down
    from alloc.engines.configuration.backend import Backend
    from alloc.engines.configuration.master import column_generation
    _, p = hetero_problem()
    agg, master, _ = seeded_master(p)
    engine = Backend("cpsat")
    cg = column_generation(master, engine, Deadline.after(10), max_rounds=2)
    assert cg.lp is not None and cg.primal
    caps = (list(master.n_cap), list(master.t_cap), dict(master.link_cap))
    stats: dict = {}
    rd = round_down(master, engine, cg, Deadline.after(5), stats=stats)
    assert (list(master.n_cap), list(master.t_cap), dict(master.link_cap)) == caps
    assert rd is not None
    floors = sum(master.pool[c][pi].value * int(cg.primal[v] + 1e-6)
                 for (c, pi), v in cg.zv.items())
    assert rd.value >= floors - 1e-6
    assert sum(n for (c, _), n in rd.z.items() if c == 0) <= agg.n_c[0]
    assign = decode(agg, rd.z, master.pool, rd.x)
    assert check_assign(p, assign)
    assert true_value(p, assign) == pytest.approx(rd.value, rel=1e-9)
    assert true_value(p, assign) <= big_machine_bound(agg, deadline=Deadline.after(5)) + 1e-6
    assert stats["round_residual_servers"] >= 0


def test_column_generation_runs_after_a_late_warm_start():
    """With no share of the time left for column generation when it starts,
    the driver still generates columns (to `MORE_COLUMNS_UNTIL`), rounds the
    LP, and the answer is valid, under its bound and above every heuristic."""
    inst, _ = hetero_problem(32)
    a = allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=3, warm_share=0.0,
                 cg_share=0.0)
    assert a.stats["cg_rounds"] > 0
    assert "round_value" in a.stats
    assert a.value <= a.bound + 1e-6
    assert a.value >= max(a.stats["heuristics"].values()) - 1e-6


def test_warm_start_seeds_only_the_strong_solutions():
    """The pool is seeded with the heuristic solutions worth at least
    `SEED_SHARE` of the best, the best among them."""
    from alloc.engines.configuration.columns import true_value
    from alloc.engines.configuration.driver import SEED_SHARE, ExactRun
    from alloc.engines.configuration.backend import Backend
    _, p = hetero_problem()
    run = ExactRun(p, Backend("cpsat"), Deadline.after(5), 0, 0.15, 0.45)
    assert run.plan()
    seeds = run.warm()
    values = run.stats["heuristics"]
    assert 1 <= len(seeds) <= len(values)
    assert all(true_value(p, s) >= SEED_SHARE * run.best_v - 1e-9 for s in seeds)
    assert any(true_value(p, s) == pytest.approx(run.best_v) for s in seeds)
    assert len(seeds) == sum(v >= SEED_SHARE * run.best_v for v in values.values())

"""Themis: the partial-allocation auction's properties, finish-time
fairness, leases and the order."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc import Cluster, Server
from alloc.errors import InputError
from alloc.sched import Context, get_policy
from alloc.sched.themis.auction import (envy, pareto_gain, partial_allocation,
                                        proportionally_fair)
from alloc.sched.themis.fairness import Contention, ideal_s, rho
from alloc.sched.themis.policy import Themis


@st.composite
def markets(draw):
    n = draw(st.integers(1, 7))
    m = draw(st.integers(1, 4))
    grid = st.sampled_from([0.0, 0.25, 0.5, 0.6, 1.0, 1 / 3, 2 / 3])   # ties on purpose
    w = np.array([[draw(grid) for _ in range(m)] for _ in range(n)])
    g = np.array([float(draw(st.integers(0, 12))) for _ in range(m)])
    return w, g


@settings(max_examples=120, deadline=None)
@given(markets())
def test_each_auction_is_pareto_efficient_and_envy_free(market):
    w, g = market
    a = partial_allocation(w, g)
    total = float((w * a.pf).sum())
    assert pareto_gain(w, a.pf, g) <= 1e-7 * max(total, 1.0)      # Pareto-efficient
    if (w * a.pf).sum() > 0:
        assert envy(w, a.pf) <= 1e-7                               # envy-free
    assert (a.pf.sum(axis=0) <= g + 1e-9).all() and (a.pf >= -1e-12).all()
    assert ((a.fraction >= 0) & (a.fraction <= 1 + 1e-12)).all()   # hidden payments
    assert (a.kept <= a.pf + 1e-12).all()
    assert np.allclose(a.kept.sum(axis=0) + a.leftover, np.maximum(g, a.kept.sum(axis=0)))


def test_pf_is_the_market_equilibrium():
    w = np.array([[2.0, 1.0], [1.0, 1.0]])
    x, p = proportionally_fair(w, np.array([1.0, 1.0]))
    # bidder 0 spends its budget on class 0 (bang per buck 2/p0 >= 1/p1), bidder 1 on class 1
    assert np.allclose(x, [[1.0, 0.0], [0.0, 1.0]]) and np.allclose(p, [1.0, 1.0])
    assert envy(w, x) <= 0 and pareto_gain(w, x, [1.0, 1.0]) <= 1e-9


def test_hidden_payment_is_what_a_bidder_costs_the_others():
    # two equal bidders on one good: each costs the other half its utility
    a = partial_allocation(np.array([[1.0], [1.0]]), np.array([4.0]))
    assert np.allclose(a.fraction, 0.5) and np.isclose(a.leftover.sum(), 2.0)
    # a bidder nobody competes with pays nothing
    a = partial_allocation(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([3.0, 5.0]))
    assert np.allclose(a.fraction, 1.0) and np.allclose(a.kept, [[3, 0], [0, 5]])


def test_auction_refuses_bad_input():
    with pytest.raises(ValueError, match="valuations"):
        partial_allocation(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=">= 0"):
        partial_allocation(-np.ones((1, 1)), np.ones(1))


# ---------------------------------------------------------------- fairness
def test_contention_is_a_time_average():
    c = Contention()
    c.observe(0.0, ["a"])
    c.observe(100.0, ["a", "b", "c"])
    assert c.average("a", 200.0) == pytest.approx((100 * 1 + 100 * 3) / 200)
    assert c.average("b", 200.0) == pytest.approx(3.0)


def test_rho_is_one_on_the_fair_share():
    # 8 of 16 GPUs with 2 jobs sharing: its fair share holds its gang
    assert rho(100.0, 0.0, 0.0, 100.0, 8, 16, 2.0, True) == pytest.approx(1.0)
    # 4 jobs: a share of 4 GPUs for an 8-GPU job: twice as long is fair
    assert ideal_s(100.0, 8, 16, 4.0) == 200.0
    assert rho(150.0, 0.0, 50.0, 100.0, 8, 16, 4.0, True) == pytest.approx(1.0)
    assert math.isinf(rho(0.0, 0.0, None, None, 1, 4, 1.0, False))


# ------------------------------------------------------------------- order
def view(id, arr, gpus, d, left=None, running=False):
    return SimpleNamespace(id=id, arrival_s=arr, gpus=gpus, duration_s=d,
                           remaining_s=d if left is None else left, running=running,
                           model=None, attained_s=0.0)


CLUSTER = Cluster(tuple(Server(f"s{i}", 8000, 8000, 4) for i in range(2)))


def test_lease_holders_rank_first_until_their_lease_ends():
    t = Themis(f=0.0, lease_s=100.0)
    t.rank([view("long", 0, 4, 1000.0), view("w", 0, 4, 50.0)], Context(0.0, 1, CLUSTER))
    jobs = [view("long", 0, 4, 1000.0, 990.0, running=True), view("new", 5, 4, 10.0)]
    assert t.rank(jobs, Context(10.0, 2, CLUSTER))[0] == "long"        # within its lease
    jobs = [view("long", 0, 4, 1000.0, 880.0, running=True), view("new", 5, 4, 10.0, 10.0)]
    assert t.rank(jobs, Context(120.0, 3, CLUSTER))[0] == "new"        # lease over: worse rho


def test_the_worst_off_bid():
    t = Themis(f=0.5)
    jobs = [view(f"j{i}", float(i), 1, 100.0 * (i + 1)) for i in range(6)]
    t.rank(jobs, Context(500.0, 1, CLUSTER))
    h = t.history[-1]
    assert len(h["bidders"]) == 3 and t.auctions == 1
    assert h["rho_max"] >= h["rho_mean"] >= 1.0


def test_themis_is_registered_with_its_knobs():
    o = get_policy("order", "themis").build(f=0.9, lease_s=60)
    assert o.f == 0.9 and o.lease_s == 60.0 and o.preemptive
    with pytest.raises(InputError, match="'f'"):
        get_policy("order", "themis").build(f=1.5)

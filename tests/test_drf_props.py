"""Dominant Resource Fairness: the fairness properties of the continuous form
(`alloc.shares.drf_shares`) as hypothesis properties -- sharing incentive,
envy-freeness, Pareto efficiency, strategy-proofness, weight monotonicity,
feasibility, with the public checkers of alloc.testing shown to catch wrong
allocations -- and examples of the placement solver ``drf``."""
import pytest
from hypothesis import assume, given, settings, strategies as st

from alloc import Cluster, Job, Placement, Server, allocate
from alloc.model import Cell, GpuShare, Tenant
from alloc.shares import drf_shares
from alloc.testing import (envy_problems, feasibility_problems, manipulation_gain,
                           pareto_problems, sharing_incentive_problems, solver_problems,
                           tasks_with)
from alloc.testing.strategies import markets

PROPS = settings(max_examples=80, deadline=None)
REL = 1e-9


# --------------------------------------------------------------- properties
@PROPS
@given(markets())
def test_feasible(m):
    assert not feasibility_problems(*m, drf_shares(*m))


@PROPS
@given(markets())
def test_sharing_incentive(m):
    assert not sharing_incentive_problems(*m, drf_shares(*m))


@PROPS
@given(markets())
def test_envy_free(m):
    assert not envy_problems(*m, drf_shares(*m))


@PROPS
@given(markets())
def test_pareto_efficient(m):
    assert not pareto_problems(*m, drf_shares(*m))


@PROPS
@given(markets(), st.data())
def test_strategy_proof(m, data):
    """A user that reports another demand vector runs no more of its true
    tasks with what it gets: min_r x' d'_r / d_r <= x (truthful)."""
    cap, demands, weights, kk = m
    i = data.draw(st.integers(0, len(demands) - 1))
    kk = list(kk)
    kk[i] = None                       # the liar wants as many tasks as it can get
    lie = {r: float(data.draw(st.integers(0, 8))) for r in cap}
    assume(any(v > 0 and cap[r] > 0 for r, v in lie.items()))
    mech = lambda dem: drf_shares(cap, dem, weights, kk)     # noqa: E731
    assert manipulation_gain(mech, demands, i, lie) <= REL


@PROPS
@given(markets(), st.data())
def test_weight_monotone(m, data):
    cap, demands, weights, kk = m
    i = data.draw(st.integers(0, len(demands) - 1))
    more = list(weights)
    more[i] *= data.draw(st.sampled_from([1.5, 2.0, 4.0]))
    assert drf_shares(cap, demands, more, kk)[i] >= \
        drf_shares(cap, demands, weights, kk)[i] * (1 - REL) - REL


@PROPS
@given(markets(caps=False, resources=1))
def test_uncapped_weighted_shares_equal_on_a_common_bottleneck(m):
    """With one resource every user saturates together: their weighted
    dominant shares are equal (DRF's defining equalisation)."""
    cap, demands, weights, _ = m
    pos = {r: c for r, c in cap.items() if c > 0}
    x = drf_shares(cap, demands, weights)
    level = [x[i] * max(d.get(r, 0.0) / c for r, c in pos.items()) / weights[i]
             for i, d in enumerate(demands)]
    assert max(level) == pytest.approx(min(level), rel=1e-9)


def test_paper_example():
    """Ghodsi et al. §4: <9 CPU, 18 GB>, A <1, 4>, B <3, 1> -> A 3 tasks, B 2;
    both dominant shares 2/3."""
    x = drf_shares({"cpu": 9, "mem": 18}, [{"cpu": 1, "mem": 4}, {"cpu": 3, "mem": 1}])
    assert x == pytest.approx([3.0, 2.0])
    w = drf_shares({"cpu": 9, "mem": 18}, [{"cpu": 1, "mem": 4}, {"cpu": 3, "mem": 1}],
                   weights=[2, 1])
    assert (w[0] * 4 / 18) / (w[1] * 3 / 9) == pytest.approx(2.0)


def test_caps_and_zero_capacity():
    x = drf_shares({"cpu": 9, "mem": 18, "gpu": 0},
                   [{"cpu": 1, "mem": 4}, {"cpu": 3, "mem": 1}, {"cpu": 1, "gpu": 1}],
                   caps=[1, None, None])
    assert x == pytest.approx([1.0, 8 / 3, 0.0])


@pytest.mark.parametrize("kw,msg", [
    (dict(capacities={"cpu": -1}, demands=[{"cpu": 1}]), "capacities"),
    (dict(capacities={"cpu": 1}, demands=[{"gpu": 1}]), "unknown resource"),
    (dict(capacities={"cpu": 1}, demands=[{"cpu": 1}], weights=[0]), "weights"),
    (dict(capacities={"cpu": 1}, demands=[{"cpu": 0}]), "demand some resource"),
    (dict(capacities={"cpu": 1}, demands=[{"cpu": 1}], caps=[1, 2]), "caps"),
])
def test_bad_input(kw, msg):
    with pytest.raises(ValueError, match=msg):
        drf_shares(**kw)


def test_checkers_catch_wrong_allocations():
    """Each property check fails on an allocation that breaks it."""
    cap = {"cpu": 9.0, "mem": 18.0}
    dem = [{"cpu": 1.0, "mem": 4.0}, {"cpu": 3.0, "mem": 1.0}]
    w, kk = [1.0, 1.0], [None, None]
    static = [2.25, 1.5]                       # half of every resource each: not efficient
    assert pareto_problems(cap, dem, w, kk, static)
    skewed = [4.0, 1.0]                        # A takes 16 GB, B gets less than half
    assert sharing_incentive_problems(cap, dem, w, kk, skewed)
    assert envy_problems(cap, dem, w, kk, skewed)
    assert feasibility_problems(cap, dem, w, kk, [5.0, 1.0])

    def by_demand(dems):          # every resource split by reported demand: manipulable
        tot = {r: sum(d.get(r, 0.0) for d in dems) for r in cap}
        return [tasks_with({r: cap[r] * d.get(r, 0.0) / tot[r] for r in cap}, d) for d in dems]
    assert manipulation_gain(by_demand, dem, 0, {"cpu": 5.0, "mem": 20.0}) > 0.1
    assert manipulation_gain(lambda dems: drf_shares(cap, dems), dem, 0,
                             {"cpu": 5.0, "mem": 20.0}) <= REL
    assert not any(f(cap, dem, w, kk, drf_shares(cap, dem))
                   for f in (pareto_problems, sharing_incentive_problems, envy_problems,
                             feasibility_problems))


# ------------------------------------------------------------ the solver
def servers(n, gpus=4, cpu=24000, mem=256000):
    return tuple(Server(f"s{i}", cpu, mem, gpus, "V100") for i in range(n))


def conform(cluster, jobs, **opts):
    bad, a = solver_problems("drf", cluster, jobs, time_limit=5.0)
    assert not bad, bad
    return allocate(cluster, jobs, solver="drf", **opts) if opts else a


def test_two_tenants_share_the_cluster_by_weight():
    cl = Cluster(servers(3), tenants={"a": Tenant("a"), "b": Tenant("b")})
    jobs = [Job(f"{t}{k}", gpus=1, cpu=1000, mem=1000, tenant=t) for k in range(12)
            for t in "ab"]
    even = conform(cl, jobs)
    assert sorted(p.job[0] for p in even.placements) == ["a"] * 6 + ["b"] * 6
    a = allocate(cl, jobs, solver="drf", weights={"a": 2.0})
    assert sorted(p.job[0] for p in a.placements) == ["a"] * 8 + ["b"] * 4
    assert a.stats["dominant_shares"] == {"a": pytest.approx(8 / 12), "b": pytest.approx(4 / 12)}


def test_guaranteed_jobs_stay_in_their_cells():
    cl = Cluster(servers(4), tenants={"a": Tenant("a", (Cell("server", 1),)),
                                      "b": Tenant("b", (Cell("server", 1),))})
    jobs = [Job(f"a{k}", gpus=2, cpu=1000, mem=1000, tenant="a", guaranteed=True)
            for k in range(4)] + [Job(f"b{k}", gpus=1, cpu=1000, mem=1000, tenant="b")
                                  for k in range(16)]
    a = conform(cl, jobs)
    placed = {p.job for p in a.placements}
    assert {"a0", "a1"} <= placed and "a2" not in placed     # one server of cells
    assert a.stats["binding"]["a"]


def test_running_job_kept_and_counted_first():
    """User a already runs a 4-GPU job: b gets the other 4 GPUs before a gets
    more, and a's job stays where it runs."""
    cl = Cluster(servers(2), tenants={"a": Tenant("a"), "b": Tenant("b")})
    cur = Placement.make("a-run", tuple(GpuShare(f"s0/gpu{k}", 1000) for k in range(4)),
                         {"s0": 4000}, {"s0": 4000}, 0.0)
    jobs = [Job("a-run", gpus=4, cpu=4000, mem=4000, tenant="a", current=cur)] + \
        [Job(f"{t}{k}", gpus=1, cpu=1000, mem=1000, tenant=t) for k in range(6) for t in "ab"]
    a = conform(cl, jobs)
    assert a.placement("a-run").same_as(cur)
    new = sorted(p.job for p in a.placements if p.job != "a-run")
    assert new == ["b0", "b1", "b2", "b3"]


def test_dominant_share_order_paper_example():
    """The DRF paper's example as CPU-only jobs on one server of 9 cores and
    18 GiB: A's tasks <1 core, 4 GiB> (memory-dominant), B's <3 cores, 1 GiB>
    (CPU-dominant) -> A runs 3, B runs 2."""
    cl = Cluster((Server("s0", 9000, 18432, 0, None),), tenants={"A": Tenant("A"),
                                                                 "B": Tenant("B")})
    jobs = [Job(f"A{k}", cpu=1000, mem=4096, tenant="A") for k in range(6)] + \
        [Job(f"B{k}", cpu=3000, mem=1024, tenant="B") for k in range(6)]
    a = conform(cl, jobs)
    got = sorted(p.job[0] for p in a.placements)
    assert got == ["A"] * 3 + ["B"] * 2
    assert a.stats["dominant_shares"]["A"] == pytest.approx(12288 / 18432)
    assert a.stats["dominant_shares"]["B"] == pytest.approx(6000 / 9000)


def test_jobs_as_users_in_order():
    """Without tenants every job is a user: the smallest dominant share goes
    first, so 1-GPU jobs fill the cluster before a second 4-GPU job."""
    cl = Cluster(servers(2))
    jobs = [Job("big0", gpus=4, cpu=1000, mem=1000), Job("big1", gpus=4, cpu=1000, mem=1000)] + \
        [Job(f"s{k}", gpus=1, cpu=1000, mem=1000) for k in range(4)]
    a = conform(cl, jobs)
    assert sorted(p.job for p in a.placements) == ["big0", "s0", "s1", "s2", "s3"]
    assert "big1" in a.unplaced


def test_weights_option_checked():
    cl = Cluster(servers(1))
    with pytest.raises(ValueError, match="weights"):
        allocate(cl, [Job("j", gpus=1, cpu=1, mem=1)], solver="drf", weights={"j": -1})

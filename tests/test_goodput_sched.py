"""Pollux, its baselines and Sia on alloc's simulator (the shipped Pollux
traces; Sia's tests need a copy of its artifact: ``$SIA_ARTIFACT``)."""
import os
from dataclasses import replace

import numpy as np
import pytest

from alloc.goodput.progress import GoodputProgress
from alloc.goodput.runs import _simulate, run_pollux, run_sia, sia_root
from alloc.goodput.workload import pollux_cluster, read_workload, shipped_workload
from alloc.sched.pollux.policy import Pollux, restart_factor
from alloc.sched.sia.policy import configurations, place_type
from alloc.goodput.ga import GaInput, repair, search

W6 = shipped_workload("workload-6")


def test_tiresias_tj_matches_the_artifact_exactly():
    # the Pollux artifact prints "Average JCT: 3469.69375" for this run
    assert run_pollux(W6, "tiresias").metrics["avg_jct_s"] == pytest.approx(3469.69375, abs=1e-6)


def test_optimus_oracle_tj_matches_the_artifact_exactly():
    assert run_pollux(W6, "optimus").metrics["avg_jct_s"] == pytest.approx(5301.875, abs=1e-6)


def small_workload(n=6):
    jobs = read_workload(W6)[:n]
    return [replace(j, arrival_s=j.arrival_s / 10, gpus=min(j.gpus, 8)) for j in jobs]


def test_pollux_runs_and_is_seeded():
    def run(seed):
        pol = Pollux(seed=seed, pop_size=20, generations=10)
        res, _, _ = _simulate(pollux_cluster(2), small_workload(), dict(
            round_s=60.0, seed=seed, progress=GoodputProgress(60.0), placement="freest-first",
            sizing=pol, mechanism=pol))
        return res.jct()
    a = run(3)
    assert len(a) == 6 and all(v > 0 for v in a.values())
    assert run(3) == a


def test_the_exact_round_is_never_below_the_search():
    pol = Pollux(seed=0, pop_size=30, generations=20, compare_every=1)
    _simulate(pollux_cluster(2), small_workload(8), dict(
        round_s=60.0, seed=0, progress=GoodputProgress(60.0), placement="freest-first",
        sizing=pol, mechanism=pol, max_time_s=1200.0))
    assert pol.comparisons
    for r in pol.comparisons:
        assert r["exact_fitness"] >= r["ga_fitness"] - 1e-9
        assert r["exact_bound"] >= r["exact_fitness"] - 1e-6


def test_a_lone_job_finishes_at_its_truths_instant():
    prog = GoodputProgress(60.0, batch="tuned")
    job = read_workload(W6)[0]
    from alloc.sched.pollux.orders import TiresiasTJ
    tj = TiresiasTJ(preemptive=False)
    res, _, recs = _simulate(pollux_cluster(), [job], dict(
        round_s=60.0, progress=prog, order=tj, mechanism=tj, candidates="all",
        placement="freest-first"))
    sj = prog.state(recs[0], recs[0].finish_s)
    assert res.jct()[job.id] == pytest.approx(sj.completion_time - job.arrival_s)
    assert sj.completion_time == int(sj.completion_time)    # epoch ends on whole seconds


def test_repair_rules():
    rng = np.random.default_rng(0)
    J, S = 6, 4
    sp = np.ones((J, S + 1, 17))
    inp = GaInput(sp, np.ones(J), np.zeros((J, S), int), np.array([3, 8, 2, 16, 4, 1]),
                  np.array([4, 4, 4, 4]))
    st = rng.integers(0, 5, (50, J, S)).astype(np.int8)
    out = repair(inp, st, rng)
    assert (out.sum(axis=1) <= 4).all()                                 # capacity
    assert (out.sum(axis=2) <= inp.max_replicas[None]).all()            # caps
    multi = (out > 0).sum(axis=2) > 1
    assert (((out > 0) & multi[:, :, None]).sum(axis=1) <= 1).all()     # one multi-node job


def test_search_is_seeded_and_keeps_a_front():
    sp = np.zeros((3, 3, 9))
    for n in (1, 2):
        sp[:, n, n:] = np.arange(n, 9) ** 0.7 * (0.9 ** (n - 1))
    inp = GaInput(sp, np.ones(3), np.zeros((3, 2), int), np.array([8, 8, 8]), np.array([4, 4]))
    a = search(inp, np.random.default_rng(1), pop_size=20, generations=15)
    b = search(inp, np.random.default_rng(1), pop_size=20, generations=15)
    assert np.array_equal(a.best, b.best) and a.best.sum() <= 8 and len(a.front) >= 1


def test_restart_factors():
    assert restart_factor(30.0, 0) == pytest.approx(0.5)
    assert restart_factor(100.0, 4) == 0.0
    from alloc.sched.sia.policy import restart_factor as sia_rf
    assert sia_rf(10.0, 3, 30.0) == 1.0                   # younger than the penalty


def test_sia_configurations_and_placement():
    cfg = configurations({"T4": (6, 4), "A100": (2, 8), "RTX2080Ti": (3, 8)})
    assert len(cfg) == 19
    # largest first, whole nodes from a rotating pointer, the rest first fit
    out = place_type([("a", 1, 2), ("b", 2, 8), ("c", 1, 4)], [10, 11, 12, 13], 4)
    assert out == {"b": [10] * 4 + [11] * 4, "c": [12] * 4, "a": [13, 13]}
    # the pointer moves past the node a job ended on: c starts after a's node
    out = place_type([("a", 1, 3), ("b", 1, 4), ("c", 1, 2)], [0, 1, 2], 4)
    assert out == {"b": [0] * 4, "a": [1] * 3, "c": [2, 2]}
    with pytest.raises(ValueError):
        place_type([("a", 1, 8), ("b", 1, 8)], [0, 1, 2], 4)


SIA = os.environ.get("SIA_ARTIFACT")


def _sia_or_skip():
    if not SIA:
        pytest.skip("the Sia artifact is not given ($SIA_ARTIFACT: a copy of siasosp23/artifacts)")
    try:
        sia_root(SIA)
    except Exception as exc:
        pytest.skip(str(exc))


def test_sia_and_gavel_run_on_the_artifacts_inputs():
    _sia_or_skip()
    r = run_sia(SIA, "saturn/workload-1.csv", "sia", max_time_s=3600)
    assert r.metrics["jobs"] > 0
    g = run_sia(SIA, "saturn/workload-1.csv", "gavel", max_time_s=3600)
    assert g.metrics["jobs"] > 0


def test_sia_pollux_runs_on_the_artifacts_inputs():
    _sia_or_skip()
    r = run_sia(SIA, "saturn/workload-1.csv", "pollux", max_time_s=1800)
    assert r.metrics["jobs"] > 0 and r.policy.times


def test_type_blind_pollux_is_pollux_on_a_homogeneous_cluster():
    from alloc.sched.pollux.unaware import PolluxUnaware

    def run(cls):
        pol = cls(seed=5, pop_size=20, generations=8)
        res, _, _ = _simulate(pollux_cluster(2), small_workload(), dict(
            round_s=60.0, seed=5, progress=GoodputProgress(60.0), placement="freest-first",
            sizing=pol, mechanism=pol))
        return res.jct()
    a = run(Pollux)
    assert len(a) == 6 and run(PolluxUnaware) == a


def test_virtual_nodes_and_the_majority_type():
    from alloc.goodput.workload import sia_cluster
    from alloc.sched.pollux.unaware import keep_majority, virtual_nodes
    v = virtual_nodes(sia_cluster().servers)
    assert [x.gpu_type for x in v] == ["T4"] * 6 + ["A100"] * 4 + ["RTX2080Ti"] * 6
    assert all(len(x.gpus) == 4 for x in v) and v[-1].gpus == (4, 5, 6, 7)
    types = [x.gpu_type for x in v]
    row = np.zeros(16, int)
    row[[0, 10]] = 2                       # 2 T4 and 2 RTX: the tie goes to the RTX
    assert keep_majority(row, types).tolist() == [0] * 10 + [2] + [0] * 5
    row[1] = 1                             # 3 T4 against 2 RTX
    assert keep_majority(row, types).tolist() == [2, 1] + [0] * 14


def test_a_merged_profile_keeps_the_first_point_for_every_type():
    from alloc.goodput.job import SimJob
    from alloc.goodput.truth import truth_of
    t = truth_of("cifar10")
    j = SimJob("c", "cifar10", 0.0, truths={"T4": t, "A100": t}, merged=True)
    j.reallocate((1,), "T4")
    j.advance(120)
    assert j.profiles["A100"] is j.profiles["T4"] and j.perf_params("A100") == j.perf_params("T4")
    k = j.clone()
    assert k.profiles["A100"] is k.profiles["T4"] and k.profiles["T4"] is not j.profiles["T4"]


def test_jobs_that_ran_the_same_points_share_one_fit():
    from alloc.goodput.job import SimJob
    a, b = SimJob("a", "cifar10", 0.0), SimJob("b", "cifar10", 0.0)
    for j in (a, b):
        j.reallocate((2,))
        j.advance(300)
    assert a.profiles["T4"].points == b.profiles["T4"].points
    assert a.perf_params() is b.perf_params()

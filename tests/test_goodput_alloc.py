"""Goodput jobs in `allocate()`: the profile kind, the capability, the
elastic decisions (GPUs, servers, batch), restarts, and the exact model
against brute force."""
import itertools
from dataclasses import replace

import numpy as np
import pytest

from alloc import (Cluster, Goodput, GoodputType, Job, Profile, Server, allocate, violations)
from alloc.deadline import Deadline
from alloc.errors import InputError, UnsupportedInput
from alloc.profiles import profile_from_dict
from alloc.goodput.patterns import JobOptions, TypeNodes, prune, solve_patterns

THETA = (0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)


def gjob(i, lo=1, hi=8, grad=(1.0, 4.0), rf=1.0, **kw):
    g = Goodput(128, 4096, {"T4": GoodputType((32, 1024), THETA)}, grad=grad, restart_factor=rf)
    return Job(f"j{i}", 1, min_gpus=lo, max_gpus=hi, profile=Profile(f"m{i}", goodput=g), **kw)


def cluster(n=2, g=4):
    return Cluster(tuple(Server(f"s{i}", 8000, 64000, g, "T4") for i in range(n)))


def test_only_solvers_with_the_capability_take_goodput_jobs():
    with pytest.raises(UnsupportedInput, match="goodput"):
        allocate(cluster(), [gjob(0)], solver="best-fit")


def test_allocate_decides_gpus_servers_and_batch():
    jobs = [gjob(i) for i in range(3)]
    a = allocate(cluster(), jobs, solver="goodput", time_limit=20)
    assert not violations(cluster(), jobs, a)
    assert sum(len(p.gpus) for p in a.placements) == 8
    for p in a.placements:
        assert p.batch is not None and 32 <= p.batch <= 1024
        assert len(p.gpus) * p.batch * (p.accum + 1) <= 4096
    assert a.stats["fairness"]["status"] == "optimal"


def test_p_one_is_the_throughput_objective_and_proven():
    jobs = [gjob(i) for i in range(3)]
    a = allocate(cluster(), jobs, solver="goodput", time_limit=20, p=1.0)
    assert a.status.value == "optimal" and a.value <= a.bound + 1e-9
    assert a.value == pytest.approx(sum(p.throughput for p in a.placements))


def test_the_check_catches_a_wrong_batch():
    jobs = [gjob(0)]
    a = allocate(cluster(), jobs, solver="goodput", time_limit=20)
    bad = replace(a, placements=(replace(a.placements[0], batch=a.placements[0].batch + 1),))
    assert any("batch" in v for v in violations(cluster(), jobs, bad))


def test_running_jobs_stay_unless_moving_pays():
    c = cluster()
    jobs = [gjob(0), gjob(1)]
    first = allocate(c, jobs, solver="goodput", time_limit=20)
    running = first.advance(jobs)
    # a third job arrives: under the sum of speed-ups (p = 1) a harsh restart
    # factor keeps both running jobs where they are; under Pollux's fairness
    # (p = -1) an idle job weighs so much that one of them makes room
    harsh = [replace(j, profile=replace(j.profile, goodput=replace(j.profile.goodput,
                                                                  restart_factor=0.01)))
             for j in running] + [gjob(2)]
    a = allocate(c, harsh, solver="goodput", time_limit=20, move_cost=0.0, p=1.0)
    assert a.moved == () and not violations(c, harsh, a, max_moves=None)
    f = allocate(c, harsh, solver="goodput", time_limit=20, move_cost=0.0)
    assert f.moved and "j2" not in f.unplaced and not violations(c, harsh, f, max_moves=None)
    # without a call that allows moves, they never move either
    b = allocate(c, list(running) + [gjob(2)], solver="goodput", time_limit=20)
    assert b.moved == ()


def test_a_job_no_configuration_satisfies_waits_with_a_reason():
    g = Goodput(128, 4096, {"T4": GoodputType((1024, 2048), THETA)}, grad=(1.0, 4.0))
    j = Job("big", 8, min_gpus=8, profile=Profile("m", goodput=g))   # 8 x 1024 > 4096
    a = allocate(cluster(), [j, gjob(1)], solver="goodput", time_limit=20)
    assert "big" in a.unplaced and "no configuration is valid" in a.reasons["big"]
    other = replace(j, id="t", profile=Profile("n", goodput=Goodput(
        128, 4096, {"A100": GoodputType((32, 1024), THETA)}, grad=(1.0, 4.0))))
    b = allocate(cluster(), [other], solver="goodput", time_limit=20)
    assert "none of which the cluster has" in b.reasons["t"]


def test_inputs_without_goodput_jobs_are_cpsats():
    c = cluster()
    jobs = [Job("a", 2, cpu=100, mem=100), Job("b", 4, cpu=100, mem=100)]
    a = allocate(c, jobs, solver="goodput", time_limit=20, objective="gpus")
    assert a.status.value == "optimal" and a.value == 6000


def test_model_files_fit_points_and_refuse_bad_ranges():
    doc = {"format": "alloc.model/1", "name": "x",
           "goodput": {"init_batch": 128, "max_batch": 4096,
                       "types": {"T4": {"local_bsz": [32, 1024],
                                        "points": [[1, 1, 64, 0.05, 0.001], [1, 4, 64, 0.07, 0.02]]}}}}
    p = profile_from_dict(doc, source="x.json")
    assert p.goodput.types["T4"].params is not None
    bad = {**doc, "goodput": {**doc["goodput"], "types": {"T4": {"local_bsz": [64, 32]}}}}
    with pytest.raises(InputError, match=r"x.json: goodput.types.T4.local_bsz: expected bLo <= bHi"):
        profile_from_dict(bad, source="x.json")
    none = {**doc, "goodput": {**doc["goodput"], "types": {"T4": {"local_bsz": [32, 64],
                                                                 "points": []}}}}
    with pytest.raises(InputError, match="needs at least one measured point"):
        profile_from_dict(none, source="x.json")


# --------------------------------------------------------- the exact model
def brute(types, jobs):
    """Best objective over every allocation with at most one multi-server job
    per server (tiny inputs)."""
    nodes = [n for t in types for n in t.nodes]
    cap = {n: t.capacity for t in types for n in t.nodes}
    best = -np.inf
    choices = []
    for o in jobs:
        opts = [("none", None, o.none)]
        if o.keep is not None:
            opts.append(("keep", dict(o.keep), o.keep_value))
        for c, (t, n, k) in enumerate(o.configs):
            tn = types[t].nodes
            for sub in itertools.combinations(tn, n):
                for split in itertools.product(range(1, types[t].capacity + 1), repeat=n):
                    if sum(split) == k:
                        opts.append(("cfg", dict(zip(sub, split)), o.values[c]))
        choices.append(opts)
    for combo in itertools.product(*choices):
        use = {n: 0 for n in nodes}
        multi = {n: 0 for n in nodes}
        ok = True
        for kind, where, _ in combo:
            if where is None:
                continue
            for n, k in where.items():
                use[n] += k
                multi[n] += len(where) > 1
        if any(use[n] > cap[n] or multi[n] > 1 for n in nodes):
            ok = False
        if ok:
            best = max(best, sum(v for _, _, v in combo))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_model_meets_brute_force(seed):
    rng = np.random.default_rng(seed)
    types = [TypeNodes("a", 2, (0, 1)), TypeNodes("b", 3, (2,))]
    jobs = []
    for j in range(3):
        cfg = [(t, n, k) for t, tn in enumerate(types) for k in range(1, 4)
               for n in range(1, min(k, len(tn.nodes)) + 1) if k <= n * tn.capacity]
        vals = rng.uniform(0, 3, len(cfg))
        keep, kv = None, 0.0
        if j == 0:
            keep, kv = ((0, 1), (1, 1)), float(rng.uniform(0, 3))
        jobs.append(JobOptions(np.array(cfg), vals, 0.0, keep, kv))
    out = solve_patterns(types, jobs, Deadline.after(20))
    assert out.status.value == "optimal"
    assert out.value == pytest.approx(brute(types, jobs), abs=1e-6)


def test_pruning_keeps_the_optimum():
    rng = np.random.default_rng(3)
    cfg = np.array([(0, n, k) for k in range(1, 9) for n in range(1, 3) if k <= 4 * n and n <= k])
    vals = rng.uniform(0, 2, len(cfg))
    kept = prune(cfg, vals)
    types = [TypeNodes("a", 4, (0, 1))]
    a = solve_patterns(types, [JobOptions(cfg, vals), JobOptions(cfg, vals[::-1].copy())],
                       Deadline.after(20))
    b = solve_patterns(types, [JobOptions(cfg[kept], vals[kept]),
                               JobOptions(cfg, vals[::-1].copy())], Deadline.after(20))
    assert a.value == pytest.approx(b.value)

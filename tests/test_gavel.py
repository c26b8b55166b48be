"""Gavel's round mechanism and the heterogeneous simulator."""
import numpy as np
import pytest

from alloc import Cluster, Server, violations
from alloc.errors import InputError
from alloc.model import Job
from alloc.shares import problem_from_dict, solve_shares
from alloc.shares.rounds import place_round, plan_round
from alloc.sched import policies
from alloc.sim.gavel import GavelJob, ThroughputTable, gavel_workload, simulate_gavel

#: Gavel's simulator policies: registered shares policies (alloc.sched.gavel)
GAVEL_POLICIES = sorted(p.name for p in policies("shares") if p.name.startswith("gavel-"))


def doc(m=12, nper=3, sfs=(1,), pairs=False, seed=0):
    rng = np.random.default_rng(seed)
    jobs = [{"id": f"j{i}", "scale_factor": int(rng.choice(sfs)),
             "throughput": {"v100": float(rng.uniform(2, 4)), "k80": float(rng.uniform(0.5, 2))}}
            for i in range(m)]
    d = {"format": "alloc.shares/1", "gpu_types": {"v100": nper, "k80": nper}, "jobs": jobs}
    if pairs:
        d["pairs"] = [{"jobs": [f"j{i}", f"j{i + 1}"], "throughput": {"v100": [1.5, 1.5], "k80": [0.6, 0.6]}}
                      for i in range(0, m - 1, 2) if jobs[i]["scale_factor"] == jobs[i + 1]["scale_factor"]]
    return d


def run_rounds(p, r, rounds):
    R = np.zeros((p.m, p.k))
    RP = np.zeros((len(p.pairs), p.k))
    keys = [f"{p.job_ids[q.a]}+{p.job_ids[q.b]}" for q in p.pairs]
    for t in range(1, rounds + 1):
        plan = plan_round(p, r, R / t, RP / t)
        used = {g: 0.0 for g in p.gpu_types}
        seen = []
        for jid, g in plan.jobs.items():
            R[p.job_ids.index(jid), p.gpu_types.index(g)] += 1
            used[g] += p.scale_factor[p.job_ids.index(jid)]
            seen.append(jid)
        for key, g in plan.pairs.items():
            RP[keys.index(key), p.gpu_types.index(g)] += 1
            used[g] += p.scale_factor[p.job_ids.index(key.split("+")[0])]
            seen += key.split("+")
        assert len(seen) == len(set(seen))                         # one run per job per round
        assert all(used[g] <= p.capacity[c] for c, g in enumerate(p.gpu_types))
    return R / rounds, RP / rounds


def test_rounds_deliver_the_shares():
    p = problem_from_dict(doc())
    r = solve_shares(p, "max-min")
    R, _ = run_rounds(p, r, 400)
    assert np.abs(R - r.X).max() < 0.03


def test_rounds_with_pairs_and_gangs_stay_within_capacity():
    p = problem_from_dict(doc(m=14, nper=4, sfs=(1, 2), pairs=True, seed=3))
    r = solve_shares(p, "max-min")
    R, RP = run_rounds(p, r, 200)
    got = R.sum(axis=1)
    for q, row in zip(p.pairs, RP):
        got[q.a] += row.sum()
        got[q.b] += row.sum()
    assert (got <= 1 + 1e-9).all()


def test_place_round_puts_gangs_on_one_server():
    p = problem_from_dict(doc(m=10, nper=4, sfs=(1, 2, 4), seed=1))
    r = solve_shares(p, "max-min")
    plan = plan_round(p, r)
    cluster = Cluster(tuple(Server(f"{t}{s}", cpu=32000, mem=256000, gpus=4, gpu_type=t)
                            for t in ("v100", "k80") for s in range(1)))
    a = place_round(cluster, p, plan)
    jobs = [Job(j, gpus=int(p.scale_factor[p.job_ids.index(j)]), gpu_types=(t,),
                locality="server" if p.scale_factor[p.job_ids.index(j)] > 1 else None)
            for j, t in plan.jobs.items()]
    assert not violations(cluster, jobs, a)
    assert {pl.job for pl in a.placements} == set(plan.jobs)
    for pl in a.placements:
        assert len({g.gpu.split("/")[0] for g in pl.gpus}) == 1


def small_table():
    """Two types; model 0 is 10x faster on V100, model 1 indifferent."""
    alone = np.array([[10.0, 1.0], [2.0, 2.0]])
    pair = np.zeros((2, 2, 2, 2))
    pair[0, 1] = [[6.0, 1.2], [0.6, 1.2]]
    pair[1, 0] = pair[0, 1][:, ::-1]
    return ThroughputTable(("v100", "k80"), ("fast-on-v100", "flat"), alone, pair)


def test_heterogeneity_aware_beats_agnostic_on_a_clear_case():
    table = small_table()
    jobs = [GavelJob(0, 0, 0.0, 3600.0 * 10), GavelJob(1, 1, 0.0, 3600.0 * 2)]
    res = {pol: simulate_gavel(pol, jobs, table, cluster={"v100": 1, "k80": 1})
           for pol in ("gavel-max-min", "gavel-max-min-agnostic")}
    aware, agn = res["gavel-max-min"], res["gavel-max-min-agnostic"]
    assert aware.unfinished == 0 and agn.unfinished == 0
    assert aware.mean_jct_h < agn.mean_jct_h
    # aware: the fast-on-V100 job holds the V100 and finishes in an hour
    assert aware.jct[0] == pytest.approx(3600.0, rel=1e-6)


@pytest.mark.parametrize("policy", GAVEL_POLICIES)
def test_every_simulator_policy_runs(policy):
    table = small_table()
    jobs = [GavelJob(i, i % 2, 1800.0 * i, 3600.0 * (1 + i % 3) * table.alone[i % 2, 0])
            for i in range(8)]                     # short jobs: a few dozen rounds
    res = simulate_gavel(policy, jobs, table, cluster={"v100": 2, "k80": 2}, max_time_s=3600 * 200)
    assert res.unfinished == 0 and res.rounds > 0
    assert all(res.jct[j.id] >= 0 for j in jobs)


def test_unknown_simulator_policy_is_refused():
    with pytest.raises(InputError, match="unknown shares policy 'gavel-nope'.*gavel-las"):
        simulate_gavel("gavel-nope", [], small_table())
    assert len(GAVEL_POLICIES) == 14


def test_workload_follows_gavel_law():
    table = small_table()
    jobs = gavel_workload(table, jobs_per_hour=4.0, count=2000, seed=0)
    gaps = np.diff([0.0] + [j.arrival_s for j in jobs])
    assert 3600 / 4.0 * 0.9 < gaps.mean() < 3600 / 4.0 * 1.1
    minutes = np.array([j.steps / table.alone[j.model, 0] for j in jobs]) / 60
    assert minutes.min() >= 10 ** 1.5 - 1e-6 and minutes.max() <= 10 ** 4 + 1e-6
    assert 0.75 < np.mean(minutes < 1000) < 0.85


def test_gavel_table_loads(shared_dir):
    table = ThroughputTable.load(shared_dir / "data" / "reference" / "gavel_throughputs.json")
    assert len(table.models) == 26 and table.alone.shape == (26, 3) and (table.alone > 0).all()
    assert table.pair.shape == (26, 26, 3, 2) and (table.pair > 0).mean() > 0.9


def test_free_gpus_go_to_idle_jobs_on_their_fastest_type_with_room():
    d = {"format": "alloc.shares/1", "gpu_types": {"v100": 1, "k80": 2},
         "jobs": [{"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}},
                  {"id": "b", "throughput": {"v100": 3.0, "k80": 2.0}},
                  {"id": "c", "throughput": {"v100": 0.0, "k80": 1.0}},
                  {"id": "d", "throughput": {"v100": 5.0, "k80": 0.5}}]}
    p = problem_from_dict(d)
    X = np.zeros((4, 2))
    X[0, 0] = 0.5                                   # only a has a share
    strict = plan_round(p, X, work_conserving=False)
    assert strict.jobs == {"a": "v100"} and strict.free == {"v100": 0.0, "k80": 2.0}
    R = np.array([[0.5, 0], [0.3, 0], [0.1, 0], [0.2, 0]])
    plan = plan_round(p, X, R)
    # the least-served idle jobs first (c, then d), each on its fastest type with room:
    # v100 is taken by a, so both go to k80 and b, served most, waits
    assert plan.jobs == {"a": "v100", "c": "k80", "d": "k80"}
    assert plan.free == {"v100": 0.0, "k80": 0.0}
    # agnostic fill rates: every runnable type is as good, the emptier one wins
    X[0] = 0
    plan = plan_round(p, X, R, fill_rates=(p.throughput > 0).astype(float))
    assert plan.jobs == {"c": "k80", "d": "v100", "b": "k80"}    # d: a tie of 1 free GPU each
    with pytest.raises(ValueError, match=r"fill_rates: expected shape \(4, 2\)"):
        plan_round(p, X, R, fill_rates=np.ones((3, 2)))


def test_saturation_rates_by_hand():
    from alloc.sim.gavel import saturation_rates
    from alloc.sim.workload import gavel_mean_work_s
    # model A runs at 1/4 speed on k80, model B as fast on both; one GPU of each type
    table = ThroughputTable(("v100", "k80"), ("A", "B"), np.array([[2.0, 0.5], [3.0, 3.0]]),
                            np.zeros((2, 2, 2, 2)))
    got = saturation_rates(table, {"v100": 1, "k80": 1})
    per_hour = 3600.0 / gavel_mean_work_s()
    # agnostic: half the time on each type, mean rates 0.625 and 1 -> 2 / mean(1.6, 1)
    assert got["agnostic"] == pytest.approx(2 / 1.3 * per_hour)
    # any policy: A alone on the v100, B alone on the k80 -> each model 1 GPU-rate
    assert got["any"] == pytest.approx(2 * per_hour)
    assert gavel_mean_work_s() / 3600 == pytest.approx(16.77, abs=0.01)
    with pytest.raises(InputError, match="cluster: no GPU count for type 'k80'"):
        saturation_rates(table, {"v100": 1})


def test_las_is_max_min_with_unit_weights_and_the_attained_variant_differs():
    table = small_table()
    jobs = [GavelJob(i, i % 2, 900.0 * i, 3600.0 * (1 + 3 * (i % 3)) * table.alone[i % 2, 0])
            for i in range(10)]                    # more jobs than GPUs: the weights matter
    run = {pol: simulate_gavel(pol, jobs, table, cluster={"v100": 2, "k80": 2}, max_time_s=3600 * 500)
           for pol in ("gavel-las", "gavel-max-min", "gavel-las-attained")}
    assert run["gavel-las"].jct == run["gavel-max-min"].jct
    assert run["gavel-las-attained"].jct != run["gavel-las"].jct


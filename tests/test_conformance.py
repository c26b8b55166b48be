"""Every registered solver passes the conformance suite on random small
instances (profiles across what the API accepts, running jobs, elastic jobs)
and on the shipped tiny instances with known optima; every solver keeps its
deadline on a 256-server instance."""
import random
import time

import pytest
from hypothesis import given, settings

from alloc import Cluster, Job, Server, allocate, load_instance, load_model, solvers
from alloc.conformance import applicable_solvers, check_across, check_solver, instances
from alloc.model import Status

TIME = 5.0


def conform(cluster, jobs, **kw):
    results, problems = {}, []
    for name in applicable_solvers(cluster, jobs):
        bad, a = check_solver(name, cluster, jobs, time_limit=TIME, **kw)
        problems += bad
        if a is not None:
            results[name] = a
    problems += check_across(results)
    assert not problems, problems
    return results


@given(instances())
def test_every_solver_conforms(inst):
    conform(*inst)


@settings(max_examples=15)
@given(instances(random_profiles=True, running=True))
def test_conforms_with_random_profiles_and_running_jobs(inst):
    cluster, jobs = inst
    results = conform(cluster, jobs)
    running = {j.id: j.current for j in jobs if j.current is not None}
    for name, a in results.items():      # no moves allowed: every running job stays
        assert not a.moved
        for jid, cur in running.items():
            p = a.placement(jid)
            assert (p is not None and p.same_as(cur)) or jid in a.preempted, (name, jid)


@settings(max_examples=8)
@given(instances(max_servers=2, max_jobs=4, elastic=True))
def test_conforms_with_elastic_jobs(inst):
    conform(*inst)


@settings(max_examples=10)
@given(instances(max_servers=3, max_jobs=5, tenancy=True, running=True))
def test_conforms_with_tenants(inst):
    """Tenancy inputs (cells, guaranteed and opportunistic jobs, running ones):
    every bound at least every value, no false optimum, the exact family
    never below hived or drf."""
    conform(*inst)


@settings(max_examples=40)
@given(instances(random_profiles=True, running=True))
def test_drf_conforms_alone(inst):
    """``drf`` on its own (it also runs in every cross-solver check above)."""
    cluster, jobs = inst
    if "drf" not in applicable_solvers(cluster, jobs):
        return
    bad, a = check_solver("drf", cluster, jobs, time_limit=TIME)
    assert not bad, bad
    for j in jobs:                       # running jobs stay exactly where they run
        if j.current is not None:
            assert a.placement(j.id).same_as(j.current)


@given(instances(max_servers=2, max_jobs=5))
def test_exact_solvers_order_independent(inst):
    cluster, jobs = inst
    for name in applicable_solvers(cluster, jobs, exact=True):
        a = allocate(cluster, jobs, solver=name, time_limit=TIME)
        shuffled = list(jobs)
        random.Random(1).shuffle(shuffled)
        b = allocate(cluster, shuffled, solver=name, time_limit=TIME)
        if a.status is Status.OPTIMAL and b.status is Status.OPTIMAL:
            assert abs(a.value - b.value) < 1e-6


@pytest.mark.parametrize("name", ["tiny-grid", "tiny-share", "tiny-types"])
@pytest.mark.parametrize("objective", ["throughput", "gpus", "jobs"])
def test_known_optimum(instances_dir, name, objective):
    inst = load_instance(instances_dir / f"{name}.json")
    opt = inst.meta["known_optimum"][objective]
    for solver in applicable_solvers(inst.cluster, inst.jobs):
        bad, a = check_solver(solver, inst.cluster, inst.jobs, objective=objective,
                              time_limit=TIME)
        assert not bad, bad
        assert a.value <= opt + 1e-6, (solver, a.value, opt)
        if solvers()[solver].solves_problem_as_given:
            assert a.status is Status.OPTIMAL, (solver, a.status)
            assert a.value == pytest.approx(opt, abs=1e-6), solver


def big_instance(servers: int = 256, seed: int = 0):
    """Synergy-like: 8-GPU servers, 8 jobs a server of demand, 1/2/4/8 GPUs."""
    rng = random.Random(seed)
    cl = Cluster(tuple(Server(f"s{i:04d}", 24000, 512000, 8, "V100") for i in range(servers)))
    names = ("res18", "bert", "res50", "alexnet", "gnmt", "transformer")
    jobs = []
    for k in range(8 * servers):
        g = rng.choices((1, 2, 4, 8), (70, 10, 15, 5))[0]
        m = rng.choice(names)
        jobs.append(Job(f"j{k}", gpus=g, cpu=3000 * g, mem=64000 * g, model=m,
                        profile=load_model(m)))
    return cl, jobs


@pytest.mark.parametrize("limit", [0.5])
def test_every_solver_keeps_its_deadline_at_256_servers(limit):
    cl, jobs = big_instance()
    late = []
    for name in applicable_solvers(cl, jobs):
        t0 = time.perf_counter()
        a = allocate(cl, jobs, solver=name, time_limit=limit)
        wall = time.perf_counter() - t0
        if wall > limit * 1.1 + 0.5:
            late.append((name, round(wall, 2)))
        assert a.status in (Status.FEASIBLE, Status.OPTIMAL, Status.UNKNOWN)
    assert not late, late

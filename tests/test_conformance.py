"""Every registered solver passes the conformance suite on random small
instances and on the shipped tiny instances with known optima."""
import random

import pytest
from hypothesis import given

from alloc import load_instance, solvers
from alloc.conformance import (applicable_solvers, check_against_optimum, check_solver,
                               instances)
from alloc.model import Status

TIME = 5.0


@given(instances())
def test_every_solver_conforms(inst):
    cluster, jobs = inst
    results, problems = {}, []
    for name in applicable_solvers(cluster, jobs):
        bad, a = check_solver(name, cluster, jobs, time_limit=TIME)
        problems += bad
        if a is not None:
            results[name] = a
    exact = [n for n in results if solvers()[n].solves_problem_as_given]
    problems += check_against_optimum(results, exact)
    assert not problems, problems


@given(instances(max_servers=2, max_jobs=5))
def test_exact_solvers_order_independent(inst):
    cluster, jobs = inst
    for name in applicable_solvers(cluster, jobs, exact=True):
        from alloc import allocate
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
    results = {}
    for solver in applicable_solvers(inst.cluster, inst.jobs):
        bad, a = check_solver(solver, inst.cluster, inst.jobs, objective=objective,
                              time_limit=TIME)
        assert not bad, bad
        results[solver] = a
        assert a.value <= opt + 1e-6, (solver, a.value, opt)
        if solvers()[solver].solves_problem_as_given:
            assert a.status is Status.OPTIMAL, (solver, a.status)
            assert a.value == pytest.approx(opt, abs=1e-6), solver

"""Mutation test: the conformance suite catches a solver that ignores
locality, capacity, running jobs or the caller's order.

Each mutant is best fit with one rule broken, registered with best fit's own
capabilities (it claims what it does not keep), and `check_solver` on it
must fail naming the property; best fit itself passes the same calls."""
from dataclasses import replace

import pytest
from hypothesis import Phase, settings

from alloc import Solution, get_solver, register, unregister
from alloc.problem import compile_problem
from alloc.testing import check_solver

CAPS = ("sharing", "locality", "spread")
#: The calls are fixed (derandomised) and not shrunk: the test is about
#: finding a failure, quickly and every time (the default size of the calls,
#: 3 servers and 8 jobs, leaves jobs competing for room).
FIXED = settings(derandomize=True, database=None,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _order(problem):
    """The caller's order of a compiled problem, or None."""
    if not problem.explicit_order:
        return None
    return [problem.jobs[j].id for j in sorted(range(problem.J), key=lambda j: problem.rank[j])]


def _best_fit(problem, jobs, order, deadline, seed):
    """best-fit on ``problem``'s cluster with other jobs (same indices)."""
    inner = compile_problem(problem.cluster, jobs, problem.objective, order=order,
                            max_moves=problem.max_moves, move_cost=problem.move_cost)
    return get_solver("best-fit").solve(inner, deadline=deadline, seed=seed)


def ignores_locality(problem, *, deadline, seed, **options):
    """best fit as if no job asked for locality."""
    jobs = [replace(j, locality=None) for j in problem.jobs]
    return _best_fit(problem, jobs, _order(problem), deadline, seed)


def ignores_running_jobs(problem, *, deadline, seed, **options):
    """best fit as if the running jobs held nothing."""
    jobs = [replace(j, current=None) for j in problem.jobs]
    sol = _best_fit(problem, jobs, _order(problem), deadline, seed)
    return Solution({j: a for j, a in sol.assign.items() if j in set(problem.pending)})


def ignores_order(problem, *, deadline, seed, **options):
    """best fit in the reverse of the caller's order."""
    order = _order(problem)
    return _best_fit(problem, problem.jobs, order[::-1] if order else None, deadline, seed)


def ignores_capacity(problem, *, deadline, seed, **options):
    """First fit that never subtracts what it places (running jobs kept)."""
    assign = {}
    for j in problem.pending:
        job = problem.jobs[j]
        for s in problem.allowed_servers(j):
            if job.gpus == 0:
                assign[j] = problem.make_cpu_assign(j, s)
                break
            first = problem.gpu_first[s]
            level = job.locality or "server"
            nodes: dict = {}
            for g in range(first, first + problem.srv_gpus[s]):
                if problem.gpu_free[g] >= job.gpu_milli:
                    nodes.setdefault(problem.domain[level][g], []).append(g)
            fit = [gs for gs in nodes.values() if len(gs) >= job.gpus]
            if fit:
                assign[j] = problem.make_assign(j, fit[0][:job.gpus], 0)
                break
    return Solution(assign)


@pytest.fixture
def mutant():
    names = []

    def add(fn):
        name = fn.__name__.replace("_", "-")
        register(name, fn, capabilities=CAPS, replace=True)
        names.append(name)
        return name
    yield add
    for n in names:
        unregister(n)


@pytest.mark.parametrize("fn,check", [(ignores_locality, "violations"),
                                      (ignores_capacity, "violations"),
                                      (ignores_running_jobs, "violations"),
                                      (ignores_order, "order")])
def test_the_suite_catches_a_mutant(mutant, fn, check):
    name = mutant(fn)
    # 100 calls: the lowest hypothesis the floors allow (6.80) draws the
    # first call that tells locality apart later than today's releases
    with pytest.raises(AssertionError, match=rf"\[{check}\] {name}: "):
        check_solver(name, max_examples=100, promises={"order", "maximal"},
                     hypothesis_settings=FIXED)


def test_best_fit_passes_the_same_calls():
    check_solver("best-fit", max_examples=60, hypothesis_settings=FIXED)

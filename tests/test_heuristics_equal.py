"""The indexed heuristics place every job exactly where the scan-every-server
reference (``reference_heuristics``, the code before the server index) does,
on random small and medium inputs: GPU types, sharing, CPU-only jobs,
locality levels, racks, running jobs, explicit orders and every objective."""
from dataclasses import replace

import pytest
from hypothesis import given, settings

import reference_heuristics as ref
from alloc.deadline import Deadline
from alloc.registry import get_solver
from heuristic_instances import problems

REFERENCE = {
    "proportional": ref.solve_proportional,
    "best-fit": ref.solve_best_fit,
    "synergy-greedy": ref.solve_greedy,
    "synergy-tune": ref.solve_tune,
    "greedy-upgrade": ref.solve_greedy_upgrade,
}


def _run(name, problem):
    new = get_solver(name).solve(problem, deadline=Deadline.after(60), seed=0)
    old = REFERENCE[name](problem, deadline=Deadline.after(60), seed=0)
    return _placed(problem, new), _placed(problem, old)


def _placed(problem, sol):
    """The answer without the running jobs it keeps where they run (the
    solvers that declare ``migration`` answer for them; the reference does
    not)."""
    fixed = problem.fixed
    assign = {j: a for j, a in sol.assign.items() if fixed.get(j) is not a}
    return replace(sol, assign=assign)


@settings(max_examples=120)
@given(problems())
def test_same_placements_as_the_reference(problem):
    for name in REFERENCE:
        new, old = _run(name, problem)
        assert new.assign == old.assign, name
        assert new.stats == old.stats, name


@settings(max_examples=12)
@given(problems(max_servers=60, max_jobs=300, min_servers=20, min_jobs=100))
def test_same_placements_on_medium_inputs(problem):
    for name in REFERENCE:
        new, old = _run(name, problem)
        assert new.assign == old.assign, name
        assert new.stats == old.stats, name


@settings(max_examples=25)
@given(problems(max_servers=6, max_jobs=14))
def test_local_search_same_as_the_reference(problem):
    new = get_solver("local-search").solve(problem, deadline=Deadline.after(60), seed=0)
    old = ref.solve_local_search(problem, deadline=Deadline.after(60), seed=0)
    assert new.assign == old.assign


@settings(max_examples=40)
@given(problems())
def test_canonical_knapsack_keeps_the_value(problem):
    """greedy-upgrade with the knapsack's jobs in index order (before) and in
    canonical order (now): same servers and GPUs for every job, same value."""
    ref.CANONICAL = False
    try:
        old = ref.solve_greedy_upgrade(problem, deadline=Deadline.after(60), seed=0)
    finally:
        ref.CANONICAL = True
    new = get_solver("greedy-upgrade").solve(problem, deadline=Deadline.after(60), seed=0)
    assert {j: a.gpus for j, a in new.assign.items()} == {j: a.gpus for j, a in old.assign.items()}
    assert {j: [s for s, _ in a.cpu] for j, a in new.assign.items()} == \
        {j: [s for s, _ in a.cpu] for j, a in old.assign.items()}
    v_new = sum(problem.value_of(j, a) for j, a in new.assign.items())
    v_old = sum(problem.value_of(j, a) for j, a in old.assign.items())
    assert v_new == pytest.approx(v_old, rel=1e-9, abs=1e-9)

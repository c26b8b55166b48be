"""The checked path holds every solver to its claims (a lying solver
registered for the test): a bound below the value is dropped with the
reason in stats and the status downgraded; ``optimal`` needs a bound the
value meets; an exact solver below a heuristic it ran is named."""
import pytest

from alloc import Cluster, Job, Server, allocate, register
from alloc.model import Status
from alloc.problem import Solution
from alloc.registry import _EXTRA

C = Cluster((Server("s0", 8000, 64000, 2, "V100"),))
JOBS = [Job("a", gpus=1, cpu=1000, mem=1000), Job("b", gpus=1, cpu=1000, mem=1000)]


@pytest.fixture
def liar():
    """An exact solver placing every job and claiming what it is told."""
    claims = {}

    @register("test-liar", exact=True)
    def solve(problem, *, deadline, seed=0):
        assign = {j: problem.make_assign(j, [j], 0) for j in range(problem.J)}
        return Solution(assign, claims["status"], claims["bound"], (), dict(claims["stats"]))
    yield claims
    _EXTRA.pop("test-liar", None)


def test_bound_below_value_is_dropped(liar):
    liar.update(status=Status.OPTIMAL, bound=1.0, stats={})
    a = allocate(C, JOBS, solver="test-liar", objective="jobs")
    assert a.value == 2.0 and a.bound is None and a.status is Status.FEASIBLE
    assert a.stats["bound_dropped"] == 1.0 and "below the value" in a.stats["bound_dropped_reason"]


def test_optimal_needs_a_bound_the_value_meets(liar):
    liar.update(status=Status.OPTIMAL, bound=3.0, stats={})
    a = allocate(C, JOBS, solver="test-liar", objective="jobs")
    assert a.status is Status.FEASIBLE and a.bound == 3.0
    liar.update(status=Status.OPTIMAL, bound=2.0, stats={})
    assert allocate(C, JOBS, solver="test-liar", objective="jobs").status is Status.OPTIMAL


def test_exact_below_its_heuristics_is_named(liar):
    liar.update(status=Status.OPTIMAL, bound=2.0, stats={"heuristics": {"h": 3.0}})
    a = allocate(C, JOBS, solver="test-liar", objective="jobs")
    assert a.stats["below_heuristic"] == {"h": 3.0} and a.status is Status.FEASIBLE
    assert a.bound is None and "heuristic 'h'" in a.stats["bound_dropped_reason"]

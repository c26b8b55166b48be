"""Preemption by order (``allocate(..., order=..., preempt="order")``): the
order's repair gives the jobs the walk set room aside for that room, so a
job the order ranks above a running job, which fits once that job is
stopped, does not wait."""
import warnings

import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, violations
from alloc.testing.conformance import solver_problems


def server(i, gpus):
    return Server(f"s{i}", 32000, 256000, gpus, "V100")


def running(jid, srv, gpus):
    """A job running on GPUs ``gpus`` (local indices) of server ``srv``."""
    p = Placement(jid, tuple(GpuShare(f"{srv}/gpu{g}", 1000) for g in gpus), {srv: 1000},
                  {srv: 1000})
    return Job(jid, len(gpus), cpu=1000, mem=1000, current=p)


SOLVERS = ["freest-first", "gpu-packing", "proportional", "random", "yarn"]


def conforms(c, jobs, order, solver):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad, a = solver_problems(solver, c, jobs, order=order, preempt="order", time_limit=5,
                                 skip=("determinism", "options"))
    assert not bad, bad
    return a


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_job_below_a_pinned_one_gets_the_room_set_aside_for_it(solver):
    """The walk sets ``s1/gpu0`` aside for ``a``, stops ``r`` to pin ``p``
    on ``s0`` and sets the rest of ``s0`` aside for ``b``.  These solvers
    put ``a`` on ``s0``: ``b`` waited while ``r2``, ranked below it, kept
    the other half of ``s1``."""
    c = Cluster((server(0, 4), server(1, 2)))
    jobs = [running("r", "s0", [0, 1, 2, 3]), running("r2", "s1", [1]),
            Job("a", 1, cpu=1000, mem=1000),
            Job("p", 2, cpu=1000, mem=1000, locality="server"),
            Job("b", 2, cpu=1000, mem=1000, locality="server")]
    order = ["a", "p", "b", "r", "r2"]
    a = conforms(c, jobs, order, solver)
    assert a.stats["preempted_for"] == {"r": "p"}
    assert [g.gpu for g in a.placement("a").gpus] == ["s1/gpu0"]
    assert {g.gpu for g in a.placement("b").gpus} == {"s0/gpu2", "s0/gpu3"}
    assert not violations(c, jobs, a, order=order, preempt="order")


@pytest.mark.parametrize("solver", ["freest-first", "proportional", "random", "yarn"])
def test_the_room_set_aside_is_kept_when_the_walk_stops_no_one(solver):
    """The walk sets ``s1/gpu0`` aside for ``a`` and ``s0`` for ``b``,
    stopping no one.  These solvers put ``a`` on ``s0`` and left ``b`` out
    (an answer in order on its face): ``b`` waited while ``r``, which the
    order does not list, kept the other half of ``s1``."""
    c = Cluster((server(0, 2), server(1, 2)))
    jobs = [running("r", "s1", [1]), Job("a", 1, cpu=1000, mem=1000),
            Job("b", 2, cpu=1000, mem=1000, locality="server")]
    a = conforms(c, jobs, ["a", "b"], solver)
    assert not a.preempted
    assert [g.gpu for g in a.placement("a").gpus] == ["s1/gpu0"]
    assert {g.gpu for g in a.placement("b").gpus} == {"s0/gpu0", "s0/gpu1"}



def test_the_room_set_aside_holds_when_a_job_ranked_above_a_running_one_waits():
    """The walk sets ``c`` aside on ``s0`` (the fuller server); then ``x``
    fits nowhere, ``r`` stopped or not, and waits.  ``random`` put ``c`` on
    ``s1``: ``x`` waited though it fitted ``s0`` once ``r``, ranked below
    it, was stopped.  The answer keeps to the room set aside."""
    c = Cluster((Server("s0", 4000, 64000, 2, "V100"), Server("s1", 8000, 64000, 1, "V100")))
    jobs = [running("r", "s0", [0, 1]), Job("c", 0, cpu=3000, mem=1000),
            Job("x", 2, cpu=2000, mem=1000, locality="server")]
    a = conforms(c, jobs, ["c", "x", "r"], "random")
    assert set(a.placement("c").cpu) == {"s0"} and a.placement("r") is not None

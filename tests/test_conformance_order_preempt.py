"""The conformance suite's order check under preemption by order
(``allocate(..., order=..., preempt="order")``): a job the order ranks above
a running job, which fits once that job is stopped, does not wait -- the
check counts such running jobs as stopped (`order_preemption_rule`), and the
order's repair gives the jobs the walk set room aside for that room."""
import warnings

import pytest

from alloc import Allocation, Cluster, GpuShare, Job, Placement, Server, violations
from alloc.testing import by_tenant, order_problems
from alloc.testing.conformance import add_promises, solver_problems
from alloc.testing.placements import order_preemption_rule


def server(i, gpus):
    return Server(f"s{i}", 32000, 256000, gpus, "V100")


def running(jid, srv, gpus):
    """A job running on GPUs ``gpus`` (local indices) of server ``srv``."""
    p = Placement(jid, tuple(GpuShare(f"{srv}/gpu{g}", 1000) for g in gpus), {srv: 1000},
                  {srv: 1000})
    return Job(jid, len(gpus), cpu=1000, mem=1000, current=p)


def kept_running():
    """``r`` runs on both GPUs of ``s0``; ``x``, which needs both, waits."""
    c = Cluster((server(0, 2),))
    r = running("r", "s0", [0, 1])
    x = Job("x", 2, cpu=1000, mem=1000)
    return c, [r, x], Allocation((r.current,), unplaced=("x",))


def test_the_rule_is_the_orders():
    may = order_preemption_rule(["x", "r"])
    x, r, u = Job("x"), Job("r"), Job("u")
    assert may(x, r) and may(x, u) and may(r, u)
    assert not may(r, x) and not may(u, r) and not may(x, x)
    assert not order_preemption_rule(None)(x, r)


def test_a_job_waiting_behind_a_lower_ranked_running_job_is_reported():
    """Without the rule a running job holds its room whatever its rank; with
    it, ``x`` ranked above ``r`` waits though it fits once ``r`` is stopped."""
    c, jobs, a = kept_running()
    may = order_preemption_rule(["x", "r"])
    assert not order_problems(c, jobs, a, ["x", "r"])
    bad = order_problems(c, jobs, a, ["x", "r"], may_preempt=may)
    assert len(bad) == 1 and "'x'" in bad[0] and "'r'" in bad[0] and "may not stop" in bad[0]
    # ranked below r, or not listed, x may stop no one: nothing to report
    assert not order_problems(c, jobs, a, ["r", "x"], may_preempt=order_preemption_rule(["r", "x"]))
    assert not order_problems(c, jobs, a, ["r"], may_preempt=order_preemption_rule(["r"]))


def test_a_running_job_of_another_user_that_may_be_stopped_holds_no_room():
    """Order within each user: another user's job counts whatever its rank,
    but not a running one the waiting job may stop."""
    c, jobs, a = kept_running()
    may = order_preemption_rule(["x", "r"])
    assert by_tenant(jobs[0]) != by_tenant(jobs[1])
    assert order_problems(c, jobs, a, ["x", "r"], owner=by_tenant, may_preempt=may)


@pytest.mark.parametrize("preempt, found", [(None, 0), ("order", 1)])
def test_the_suite_checks_the_order_with_the_rule_under_preempt_order(preempt, found):
    c, jobs, a = kept_running()
    out = []
    add_promises(lambda check, lines: out.extend((check, x) for x in lines), "best-fit", c, jobs,
                 a, ["x", "r"], {"order", "order-per-user"}, preempt=preempt)
    assert [k for k, _ in out] == ["order", "order-per-user"][:found * 2]


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



def test_the_room_set_aside_moves_for_a_job_ranked_above_a_running_one():
    """The walk sets ``c`` aside on ``s0`` (the fuller server); then ``x``
    fits nowhere beside it, ``r`` stopped or not.  ``random`` put ``c`` on
    ``s1``: ``x`` waited though it fitted ``s0`` once ``r``, ranked below
    it, was stopped.  The walk now moves the room set aside for ``c`` to
    ``s1`` and stops ``r`` for ``x``, and the answer keeps to both."""
    c = Cluster((Server("s0", 4000, 64000, 2, "V100"), Server("s1", 8000, 64000, 1, "V100")))
    jobs = [running("r", "s0", [0, 1]), Job("c", 0, cpu=3000, mem=1000),
            Job("x", 2, cpu=2000, mem=1000, locality="server")]
    a = conforms(c, jobs, ["c", "x", "r"], "random")
    assert set(a.placement("c").cpu) == {"s1"} and set(a.placement("x").cpu) == {"s0"}
    assert a.stats["preempted_for"] == {"r": "x"}

"""An answer says when the clock, not the input alone, shaped it."""
import warnings

from alloc import Cluster, Job, Server, allocate
from alloc.deadline import Deadline, watched


def test_watched_records_a_spent_deadline_only():
    with watched() as cut:
        assert Deadline.after(60).left() > 0 and not Deadline.after(60).expired()
    assert cut == [False]
    with watched() as cut:
        spent = Deadline.after(60).share(0.0)
        assert spent.left() == 0.0
    assert cut == [True]
    assert Deadline.after(60).share(0.0).expired()       # outside a block: nothing kept


def _call():
    cluster = Cluster(tuple(Server(f"s{i}", 16000, 131072, 4, "V100") for i in range(6)))
    jobs = [Job(f"j{i}", 1 + i % 4, cpu=1000 * (1 + i % 3), mem=8192) for i in range(40)]
    return cluster, jobs


def test_exact_call_with_time_reports_no_cut():
    c, jobs = _call()
    a = allocate(c, jobs, solver="milp", objective="jobs", time_limit=20)
    assert a.status.value == "optimal" and "clock_cut" not in a.stats


def test_exact_call_out_of_time_says_so():
    c, jobs = _call()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = allocate(c, jobs, solver="milp", objective="jobs", time_limit=0.01)
    assert a.stats.get("clock_cut") is True

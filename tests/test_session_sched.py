"""What a scheduler's loop needs from a Session: ids of any hashable type with
GPU keys mapped, stop / preempt events distinct from failures, reconcile,
orders naming jobs not submitted yet, preemption by order in rounds."""
from pathlib import Path

import pytest

from alloc import Cluster, InputError, Job, Server, Session, load_instance, violations


def cluster(n=2, gpus=4):
    return Cluster(tuple(Server(f"s{i}", 32000, 256000, gpus, "V100") for i in range(n)))


def keys(cl):
    """Blox-style global GPU indices."""
    return {g: k for k, g in enumerate(cl.gpu_ids)}


def checked(s):
    before = list(s.jobs.values())
    r = s.step()
    assert not violations(s.cluster, before, r.allocation, order=_core_order(s, before),
                          preempt=s.preempt_rule)
    return r


def _core_order(s, jobs):
    if s.order is None:
        return None
    ids = {j.id for j in jobs}
    core = {s._ids.caller(j.id): j.id for j in jobs}
    return [core[x] for x in s.order if x in core and core[x] in ids]


def test_integer_ids_and_gpu_keys():
    cl = cluster()
    s = Session(cl, gpu_keys=keys(cl))
    s.submit(Job(7, 2, cpu=1000, mem=1000))
    s.submit(Job((1, "a"), 1))
    r = checked(s)
    assert {p.job for p in r.start} == {7, (1, "a")}
    assert all(isinstance(k, int) for k in r.gpus[7]) and len(r.gpus[7]) == 2
    assert set(s.running) == {7, (1, "a")} and 7 in s.jobs
    with pytest.raises(InputError, match="already exists"):
        s.submit(Job(7, 1))
    with pytest.raises(InputError, match="expected a string or another hashable"):
        s.submit(Job([1], 1))
    with pytest.raises(InputError, match="reserved"):
        s.submit(Job("~id:99", 1))
    s.finish(7)
    assert 7 not in s.jobs and s._consistent()
    s.submit(Job(7, 1))                       # the id may come back once it has left
    p = s.placement(7, [5])
    assert [g.gpu for g in p.gpus] == ["s1/gpu1"]


def test_stop_and_preempt_are_not_failures():
    s = Session(cluster(1))
    for j in ("a", "b", "c"):
        s.submit(Job(j, 2, cpu=1000, mem=1000))
    checked(s)
    s.preempt("a")
    r = checked(s)                           # a is not placed again in this round
    assert "a" in r.unplaced and "c" in {p.job for p in r.start}
    assert "preempted by the scheduler" in r.reasons["a"]
    s.stop("b", requeue=True)
    assert "b" in s.pending
    s.stop("c")
    assert "c" not in s.jobs
    assert s.counts["preempted"] == 1 and s.counts["stopped"] == 1 and s.counts["failed"] == 0
    with pytest.raises(InputError, match="is not running"):
        s.preempt("b")
    s.stop("b")                               # cancelling a waiting job
    assert dict(s.counts)["stopped"] == 2
    s.apply([{"type": "submit", "job": {"id": "d", "gpus": 1}},
             {"type": "stop", "job": "d"}])
    assert "d" not in s.jobs


def test_reconcile_reports_and_fixes_the_difference():
    cl = cluster()
    s = Session(cl, gpu_keys=keys(cl))
    for j in (1, 2, 3):
        s.submit(Job(j, 1, cpu=1000, mem=1000))
    r = checked(s)
    where = {j: list(r.gpus[j]) for j in (1, 2, 3)}
    # the scheduler says: 1 runs where the session has it, 2 moved to GPU 7, 3 is not running
    out = s.reconcile({1: None, 2: [7]})
    assert out.moved == (2,) and out.stopped == (3,) and not out.started
    assert [g.gpu for g in s.jobs[2].current.gpus] == ["s1/gpu3"]
    assert s.jobs[3].current is None
    out = s.reconcile({1: where[1], 2: [7], 3: [6]})
    assert out.started == (3,) and not out.moved and not out.stopped
    s.submit(Job(4, 1))
    before = s.to_dict()
    with pytest.raises(InputError, match="unknown job 9"):
        s.reconcile({9: [0]})
    with pytest.raises(InputError, match="has 0 milli free"):
        s.reconcile({1: where[1], 2: [7], 3: [7]})
    with pytest.raises(InputError, match="give where it runs"):
        s.reconcile([1, 2, 4])
    assert s.to_dict() == before and s._consistent()


def test_reconcile_event_in_json_form():
    s = Session(cluster(1))
    s.submit(Job("a", 1))
    s.submit(Job("b", 1))
    checked(s)
    out = s.apply([{"type": "reconcile", "running": ["a"]}])
    assert out == [{"started": [], "moved": [], "stopped": ["b"]}]


def test_preemption_by_order_in_rounds_and_closed_servers_are_left_alone():
    s = Session(cluster(2, gpus=2), preempt="order")
    for j in range(4):
        s.submit(Job(j, 1, cpu=1000, mem=1000))
    checked(s)
    s.submit(Job("hot", 1, cpu=1000, mem=1000))
    s.set_order(["hot", 0, 1, 2, 3])
    r = checked(s)
    assert r.stop == (3,) and r.preempted_for == {3: "hot"}
    assert {p.job for p in r.start} == {"hot"}
    assert s.counts["preempted"] == 1
    # jobs on a drained server are never stopped to start something there
    on = {s.jobs[j].current.gpus[0].gpu.split("/")[0] for j in (0, 1, 2, "hot")}
    drained = "s1" if "s1" in on else "s0"
    s.drain_server(drained)
    s.submit(Job("hotter", 1, cpu=1000, mem=1000))
    s.set_order(["hotter", "hot", 0, 1, 2, 3])
    running_there = {j for j in s.running if s.jobs[j].current.gpus[0].gpu.startswith(drained)}
    r = checked(s)
    assert all(not p.gpus[0].gpu.startswith(drained) for p in r.start)
    assert not set(r.stop) & running_there
    inst = load_instance(Path(__file__).resolve().parents[1] / "instances" / "tenancy_small.json")
    with pytest.raises(InputError, match="tenancy rules"):
        Session(inst.cluster, jobs=inst.jobs, solver="hived", preempt="order")


def test_an_order_of_any_length():
    cl = Cluster(tuple(Server(f"s{i}", 32000, 256000, 8, "V100") for i in range(400)))
    s = Session(cl, preempt="order")
    for j in range(3200):
        s.submit(Job(j, 1, cpu=1000, mem=1000))
    checked(s)
    s.submit(Job("new", 1, cpu=1000, mem=1000))
    s.set_order(list(range(2500)) + ["new"] + list(range(2500, 3200)))
    r = checked(s)
    assert r.stop == (3199,)

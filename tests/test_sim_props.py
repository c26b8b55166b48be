"""The simulator's safety properties (`alloc.testing.run_problems`) on drawn
workloads under drawn stacks of policies: orders, placements, mechanisms,
rounds, repacking, restarts, failures and drains."""
from __future__ import annotations

import copy

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from alloc import Cluster, Server
from alloc.errors import InputError
from alloc.sim import Alone, ServerEvent, WorkloadJob, simulate
from alloc.testing import run_problems

ORDERS = ["fifo", "srtf", "las", "ftf", "srsf", "themis", "tiresias", "tiresias-g", "tiresias-l",
          "tiresias-tj", "yarn-cs", "best-effort", "fewest-gpus", "priority",
          ("srtf", {"preemptive": False})]
PLACEMENTS = ["best-fit", "greedy-upgrade", "fgd", "proportional", "gpu-packing", "freest-first",
              "dotprod", "gpu-clustering", "yarn", "tiresias", "synergy-greedy", "synergy-tune",
              "local-search", "slurm-topology", "gandiva", "random", "openb-best-fit", "hived",
              "drf", "antman"]
#: mechanisms a plain workload can run (AntMan's and Salus's need their own jobs)
MECHANISMS = [None, "gandiva", "gandiva-migration", "gandiva-packing", "gandiva-slicing",
              "drop-unplaced"]


@st.composite
def runs(draw):
    """(cluster, workload, keywords of `simulate`): 1-3 servers alike, 1-10
    jobs that each fit one server, a stack, and fail/restore or
    drain/undrain pairs on distinct servers."""
    n, g = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 4, 8]))
    cl = Cluster(tuple(Server(f"s{i}", cpu=8000 * g, mem=64000 * g, gpus=g, gpu_type="V100")
                       for i in range(n)))
    t, work = 0.0, []
    for i in range(draw(st.integers(1, 10))):
        t += draw(st.sampled_from([0.0, 1.0, 7.5, 60.0, 300.0]))
        work.append(WorkloadJob(f"j{i}", t, draw(st.sampled_from([x for x in (1, 2, 4, 8)
                                                                   if x <= g])),
                                duration_s=draw(st.sampled_from([1.0, 30.0, 100.0, 250.5, 1000.0])),
                                priority=draw(st.integers(0, 3))))
    events = []
    for i in range(draw(st.integers(0, n))):
        a = draw(st.sampled_from([0.0, 3.0, 50.0, 200.0, 900.0]))
        down, up = draw(st.sampled_from([("fail", "restore"), ("drain", "undrain")]))
        events += [ServerEvent(a, down, f"s{i}"),
                   ServerEvent(a + draw(st.sampled_from([1.0, 100.0, 2000.0])), up, f"s{i}")]
    kw = dict(order=draw(st.sampled_from(ORDERS)), placement=draw(st.sampled_from(PLACEMENTS)),
              mechanism=draw(st.sampled_from(MECHANISMS)),
              round_s=draw(st.sampled_from([None, None, 60.0, 360.0])), repack=draw(st.booleans()),
              candidates=draw(st.sampled_from(["fit", "fit", "all"])), events=events,
              progress=Alone(restart_s=draw(st.sampled_from([0.0, 0.0, 5.0]))))
    return cl, work, kw


@settings(max_examples=60, deadline=None)
@given(runs())
def test_every_drawn_run_keeps_the_safety_properties(case):
    cl, work, kw = case
    try:
        res = simulate(cl, work, **kw)
    except InputError as exc:         # a stack the placement cannot serve: said up front
        assume("does not support" not in str(exc))
        raise
    exclusive = kw["mechanism"] in (None, "drop-unplaced")
    assert run_problems(cl, work, res, exclusive=exclusive, events=kw["events"]) == [], kw
    again = simulate(cl, work, **{**kw, "progress": copy.deepcopy(kw["progress"])})
    assert again.timeline() == res.timeline(), "the same run twice differs"


class _Run:
    def __init__(self, rows, summary):
        self.rows, self.s = rows, summary

    def timeline(self):
        return self.rows

    def summary(self):
        return self.s


def _good():
    cl = Cluster((Server("s0", cpu=32000, mem=256000, gpus=4),))
    w = [WorkloadJob("a", 0.0, 4, duration_s=100.0), WorkloadJob("b", 5.0, 2, duration_s=10.0)]
    res = simulate(cl, w, order="srtf")
    return cl, w, copy.deepcopy(res.timeline()), res.summary()


def _row(rows, jid):
    return next(x for x in rows if x["id"] == jid)


@pytest.mark.parametrize("breach, expect", [
    (lambda rows, s: rows.remove(_row(rows, "b")), "no timeline row"),
    (lambda rows, s: _row(rows, "a").update(start_s=-1.0), "out of order"),
    (lambda rows, s: _row(rows, "a")["runs"].__setitem__(0, [1.0, 5.0, 4]), "do not span"),
    (lambda rows, s: _row(rows, "b").update(end_s=10.0, runs=[[5.0, 10.0, 2]]),
     "below its time alone"),
    (lambda rows, s: _row(rows, "a")["runs"].insert(0, [0.0, 0.0, 3]), "asked for 4"),
    (lambda rows, s: _row(rows, "b").update(runs=[[0.0, 20.0, 2]], start_s=0.0, end_s=20.0),
     "GPUs held"),
    (lambda rows, s: s.update(preemptions=7), "preemptions"),
    (lambda rows, s: s.update(avg_jct_s=1.0), "average JCT"),
    (lambda rows, s: s.update(makespan_s=1.0), "makespan"),
    (lambda rows, s: s.update(utilisation=1.5), "utilisation"),
])
def test_each_property_catches_its_breach(breach, expect):
    cl, w, rows, s = _good()
    assert run_problems(cl, w, _Run(rows, s)) == []
    breach(rows, s)
    problems = run_problems(cl, w, _Run(rows, s))
    assert any(expect in p for p in problems), problems


def test_the_closed_server_property_catches_a_start_on_a_drained_server():
    """On s0, ``a`` runs from 0 s, ``b`` (shorter, SRTF) from 5 s to 15 s,
    then ``a`` again: a drain at 3 s makes both later starts breaches; one
    at 200 s, after both, none; ``a`` running through a drain is none."""
    from alloc.sim import ServerEvent
    cl, w, rows, s = _good()
    assert _row(rows, "b")["servers"] and _row(rows, "b")["servers"][0][1] == ["s0"]
    late = [ServerEvent(200.0, "drain", "s0")]
    assert run_problems(cl, w, _Run(rows, s), events=late) == []
    early = [ServerEvent(3.0, "drain", "s0"), ServerEvent(4.0, "undrain", "s1")]
    problems = run_problems(cl, w, _Run(rows, s), events=early)
    assert problems == ["job 'b': onto server 's0' at 5.0 s while it was drained",
                        "job 'a': onto server 's0' at 15.0 s while it was drained"], problems
    assert run_problems(cl, w, _Run(rows, s), events=[ServerEvent(1.0, "drain", "s0")]) \
        == problems                                      # a ran on from 0 s: no breach
    failed = [ServerEvent(0.0, "fail", "s0"), ServerEvent(5.0, "restore", "s0")]
    assert [p.split(":")[0] for p in run_problems(cl, w, _Run(rows, s), events=failed)] == \
        ["job 'a'"]


def test_events_that_are_not_server_events_are_refused_in_one_line():
    cl, w, rows, s = _good()
    with pytest.raises(InputError, match=r"^events: expected ServerEvent items \(at_s, kind, "
                                         r"server\), got \('drain', 's0'\)$"):
        run_problems(cl, w, _Run(rows, s), events=[("drain", "s0")])

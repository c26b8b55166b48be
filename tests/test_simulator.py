"""The one simulator (`alloc.sim`): a stack of policies over time on a Session."""
from __future__ import annotations

import math

import numpy as np
import pytest

from alloc import Cluster, Server
from alloc.errors import InputError
from alloc.sched import BaseMechanism, KeyOrder, PolicyError, Size, policy
from alloc.sim import (Alone, GavelTable, ProgressModel, ServerEvent, WorkloadJob, simulate)


def cluster(servers=2, gpus=4, gpu_type="V100"):
    return Cluster(tuple(Server(f"s{i}", cpu=8000 * gpus, mem=64000 * gpus, gpus=gpus,
                                gpu_type=gpu_type) for i in range(servers)))


def jobs(n=12):
    return [WorkloadJob(f"j{i}", i * 10.0, [1, 2, 4, 8][i % 4], duration_s=100.0 * (1 + i % 3))
            for i in range(n)]


def test_one_job_finishes_at_the_exact_instant():
    r = simulate(cluster(1), [WorkloadJob("a", 5.0, 2, duration_s=123.25)])
    (row,) = r.timeline()
    assert (row["start_s"], row["end_s"]) == (5.0, 128.25)
    s = r.summary()
    assert s["avg_jct_s"] == 123.25 and s["makespan_s"] == 123.25 and s["jobs"] == 1
    assert s["preemptions"] == 0 and s["restarts"] == 0


def test_fifo_waits_srtf_preempts_and_resumes_where_it_stopped():
    cl = cluster(1)
    w = [WorkloadJob("long", 0.0, 4, duration_s=1000.0), WorkloadJob("short", 10.0, 4,
                                                                      duration_s=10.0)]
    assert simulate(cl, w, order="fifo").jct() == {"long": 1000.0, "short": 1000.0}
    r = simulate(cl, w, order="srtf")
    assert r.jct() == {"short": 10.0, "long": 1010.0}      # 10 s done, 990 s after the stop
    s = r.summary()
    assert s["preemptions"] == 1 and s["restarts"] == 1
    long = [x for x in r.timeline() if x["id"] == "long"][0]
    assert long["runs"] == [[0.0, 10.0, 4], [20.0, 1010.0, 4]]
    # non-preemptive: never stops a running job
    r = simulate(cl, w, order=("srtf", {"preemptive": False}))
    assert r.summary()["preemptions"] == 0


def test_restart_delay_and_checkpoints_cost_what_they_say():
    cl = cluster(1)
    w = [WorkloadJob("long", 0.0, 4, duration_s=1000.0), WorkloadJob("short", 15.0, 4,
                                                                      duration_s=10.0)]
    r = simulate(cl, w, order="srtf", progress=Alone(restart_s=7.0))
    assert r.jct()["long"] == pytest.approx(1000.0 + 10.0 + 7.0)
    r = simulate(cl, w, order="srtf", progress=Alone(checkpoint=10.0))
    assert r.jct()["long"] == pytest.approx(1000.0 + 10.0 + 5.0)   # 15 s done, 10 kept


def test_every_round_goes_through_the_session_and_is_checked(monkeypatch):
    from alloc.session import Session
    seen = []
    step = Session.step

    def spy(self, **kw):
        res = step(self, **kw)
        seen.append(res.allocation)
        return res
    monkeypatch.setattr(Session, "step", spy)
    cl = cluster()
    r = simulate(cl, jobs(), order="las", round_s=60.0)
    assert seen and len(seen) == r.summary()["steps"]
    assert all(a.status.value != "infeasible" for a in seen)
    assert r.summary()["jobs"] == 12


@pytest.mark.parametrize("order", ["fifo", "srtf", "las"])
@pytest.mark.parametrize("round_s", [None, 60.0])
def test_invariants(order, round_s):
    cl = cluster()
    r = simulate(cl, jobs(), order=order, round_s=round_s)
    s = r.summary()
    assert s["jobs"] == 12 and s["unfinished"] == 0
    gpus = 8
    for row in r.timeline():
        held = sum((b - a) * g for a, b, g in row["runs"])
        want = next(j for j in jobs() if j.id == row["id"])
        assert held == pytest.approx(want.duration_s * want.gpus)   # no restart cost
        assert row["start_s"] >= row["arrival_s"]
        if round_s:
            assert row["start_s"] % round_s == 0
    # never more GPUs held than the cluster has
    edges = sorted({t for row in r.timeline() for a, b, _ in row["runs"] for t in (a, b)})
    for a, b in zip(edges, edges[1:]):
        mid = (a + b) / 2
        used = sum(g for row in r.timeline() for x, y, g in row["runs"] if x <= mid < y)
        assert used <= gpus
    assert 0 < s["utilisation"] <= 1


def test_deterministic():
    a = simulate(cluster(), jobs(), order="las", round_s=30.0, seed=3).timeline()
    b = simulate(cluster(), jobs(), order="las", round_s=30.0, seed=3).timeline()
    assert a == b


def test_failure_requeues_and_drain_blocks_new_placements():
    cl = cluster()
    w = [WorkloadJob("a", 0.0, 4, duration_s=100.0), WorkloadJob("b", 0.0, 4, duration_s=100.0)]
    r = simulate(cl, w, events=[ServerEvent(50.0, "fail", "s1")])
    s = r.summary()
    assert s["failures"] == 1 and s["restarts"] == 1
    assert max(r.jct().values()) == pytest.approx(150.0)    # waits for s0, resumes at 50
    r = simulate(cl, w, events=[ServerEvent(0.0, "drain", "s1")])
    assert sorted(r.jct().values()) == [100.0, 200.0]
    r = simulate(cl, w, events=[ServerEvent(0.0, "drain", "s1"), ServerEvent(30.0, "undrain",
                                                                              "s1")])
    assert sorted(r.jct().values()) == [100.0, 130.0]
    r = simulate(cl, w, events=[ServerEvent(10.0, "fail", "s1"), ServerEvent(20.0, "restore",
                                                                              "s1")])
    assert sorted(r.jct().values()) == [100.0, 110.0]


def test_mechanism_timers_suspend_and_resume():
    class Slices(BaseMechanism):
        """Round-robin: every 50 s the running job is suspended for the other."""

        def start(self, ctl):
            ctl.timer(50.0, "slice")

        def on_event(self, event, ctl):
            if event.kind != "timer":
                return
            for j in list(ctl.jobs.values()):
                if j.running:
                    ctl.suspend(j.id, hold=True)
                else:
                    ctl.resume(j.id)
            ctl.decide()
            if ctl.jobs:
                ctl.timer(event.at_s + 50.0, "slice")

    w = [WorkloadJob("a", 0.0, 4, duration_s=100.0), WorkloadJob("b", 0.0, 4, duration_s=100.0)]
    r = simulate(cluster(1), w, order=("fifo", {"preemptive": False}), mechanism=Slices())
    assert r.jct() == {"a": 150.0, "b": 200.0}
    s = r.summary()
    assert s["suspensions"] == 2 and s["preemptions"] == 2


def test_mechanism_places_packs_and_migrates_through_the_session():
    class Pack(BaseMechanism):
        def on_event(self, event, ctl):
            if event.kind == "arrival" and event.job == "b":
                ctl.place("a", ["s0/gpu0"], milli=500)      # pack a and b on one GPU
                ctl.place("b", ["s0/gpu0"], milli=500)
            if event.kind == "timer" and "b" in ctl.jobs:   # undo: b alone elsewhere
                ctl.place("b", ["s0/gpu1"], milli=1000)
                ctl.place("a", ["s0/gpu0"], milli=1000)
            if event.kind == "finish" and event.job == "b" and "a" in ctl.jobs:
                ctl.place("a", ["s0/gpu0"], milli=1000)

        def start(self, ctl):
            ctl.timer(40.0)

    w = [WorkloadJob("a", 0.0, 1, duration_s=100.0), WorkloadJob("b", 20.0, 1, duration_s=10.0)]
    r = simulate(cluster(1), w, mechanism=Pack())
    b = [x for x in r.timeline() if x["id"] == "b"][0]
    assert b["end_s"] == pytest.approx(40.0) and b["moves"] == 0   # 20 s at half speed
    # a: 20 s alone, 20 s at half speed (10 s of work), then alone: ends at 100 + 10
    assert r.jct()["a"] == pytest.approx(110.0)
    w = [WorkloadJob("a", 0.0, 1, duration_s=100.0), WorkloadJob("b", 20.0, 1, duration_s=30.0)]
    r = simulate(cluster(1), w, mechanism=Pack())
    b = [x for x in r.timeline() if x["id"] == "b"][0]
    # 10 s of work by 40 s, then alone on gpu1: 20 s more
    assert b["moves"] == 1 and b["end_s"] == pytest.approx(40.0 + 20.0)
    assert r.jct()["a"] == pytest.approx(110.0)


def test_sizing_resizes_through_the_session():
    @policy("sizing", "halve-late")
    class Halve:
        def size(self, jobs, ctx):
            return {j.id: Size(2) for j in jobs if ctx.now_s >= 50.0 and j.gpus == 4}
    r = simulate(cluster(1), [WorkloadJob("a", 0.0, 4, duration_s=100.0)], sizing=Halve(),
                 round_s=50.0)
    # 50 s at 4 GPUs (half the work), then 2 GPUs at half speed: 100 s more
    assert r.jct() == {"a": pytest.approx(150.0)}
    assert r.summary()["resizes"] == 1 and r.summary()["restarts"] == 1


class _Table:
    types = ("fast", "slow")
    models = ("m0", "m1")
    alone = np.array([[2.0, 1.0], [4.0, 1.0]])
    pair = np.zeros((2, 2, 2, 2))


def test_shares_become_placements_by_gavel_rounds():
    cl = Cluster((Server("f0", cpu=8000, mem=64000, gpus=1, gpu_type="fast"),
                  Server("s0", cpu=8000, mem=64000, gpus=1, gpu_type="slow")))
    w = [WorkloadJob("a", 0.0, 1, model="m0", work=720.0),
         WorkloadJob("b", 0.0, 1, model="m1", work=1440.0)]
    r = simulate(cl, w, shares=("max-min", {"space_sharing": False}), round_s=360.0,
                 progress=GavelTable(_Table()))
    s = r.summary()
    assert s["jobs"] == 2 and s["unfinished"] == 0
    # heterogeneity-aware: b gains most on the fast type, both run every round
    assert max(r.jct().values()) < 1440.0 / 1.0


def test_needs_are_refused_in_one_line():
    with pytest.raises(InputError, match="order policy 'srtf' needs duration"):
        simulate(cluster(), [WorkloadJob("x", 0.0, 1, work=5.0)], order="srtf")
    with pytest.raises(InputError, match="shares policy 'max-min' needs throughput"):
        simulate(cluster(), jobs(), shares="max-min", round_s=60.0)


@pytest.mark.parametrize("kw, text", [
    ({"order": "nope"}, "order: unknown order policy 'nope'"),
    ({"order": "best-fit"}, "order: 'best-fit' is a placement policy, not an order policy"),
    ({"placement": "las"}, "placement: 'las' is an order policy, not a placement policy"),
    ({"order": ("las", {"bogus": 1})}, "unknown option 'bogus'"),
    ({"round_s": -1}, "round_s: expected a number > 0"),
])
def test_bad_stack_is_one_line(kw, text):
    with pytest.raises(InputError, match=text) as e:
        simulate(cluster(), jobs(), **kw)
    assert "\n" not in str(e.value)


def test_a_policy_that_raises_ends_the_run_with_its_name_and_round():
    class Boom(KeyOrder):
        def key(self, job, ctx):
            if ctx.round == 3:
                raise ZeroDivisionError("boom")
            return job.arrival_s
    with pytest.raises(PolicyError, match=r"order policy 'Boom' raised at round 3 \(t=20 s\): "
                                          r"ZeroDivisionError: boom"):
        simulate(cluster(), jobs(), order=Boom())


def test_bad_rows_are_named():
    with pytest.raises(InputError, match="job 'x': duration_s: expected a number > 0"):
        WorkloadJob("x", 0.0, 1, duration_s=-1.0)
    with pytest.raises(InputError, match="workload row 2: job 'b': gpus: wants 64 GPUs"):
        simulate(cluster(), [WorkloadJob("a", 0.0, 1, duration_s=1.0),
                             WorkloadJob("b", 1.0, 64, duration_s=1.0)])
    with pytest.raises(InputError, match="workload row 2: .*duplicate id"):
        simulate(cluster(), [WorkloadJob("a", 0.0, 1, duration_s=1.0),
                             WorkloadJob("a", 1.0, 1, duration_s=1.0)])


def test_window_and_max_time():
    w = jobs(12)
    r = simulate(cluster(), w, window=(2, 5))
    assert sorted(r.jct()) == ["j2", "j3", "j4", "j5"]
    r = simulate(cluster(), w, max_time_s=100.0, round_s=60.0)
    s = r.summary()
    assert s["unfinished"] > 0 and r.end_time_s == 120.0
    rows = r.timeline()
    want = [x["jct_s"] if x["end_s"] is not None else 120.0 - x["arrival_s"] for x in rows]
    assert s["censored_avg_jct_s"] == pytest.approx(sum(want) / len(want))
    assert s["unfinished"] == sum(x["end_s"] is None for x in rows)


def test_progress_model_state_and_dynamic_rates():
    class Warmup(ProgressModel):
        """Half speed during a job's first 100 s of progress, full speed after."""
        dynamic = True

        def rate(self, job, run):
            return 0.5 if job.state.get("done", 0.0) < 50.0 else 1.0

        def advanced(self, job, run, seconds, done):
            job.state["done"] = done
    r = simulate(cluster(1), [WorkloadJob("a", 0.0, 1, duration_s=150.0)], progress=Warmup(),
                 round_s=100.0)
    assert r.jct()["a"] == pytest.approx(100.0 + 100.0)


def test_result_files(tmp_path):
    import json
    r = simulate(cluster(), jobs())
    names = r.write(tmp_path / "out")
    assert names == ["summary.json", "timeline.jsonl"]
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    for k in ("avg_jct_s", "p99_jct_s", "makespan_s", "utilisation", "preemptions", "jobs"):
        assert k in s
    rows = [json.loads(x) for x in (tmp_path / "out" / "timeline.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {"id", "arrival_s", "start_s", "end_s"} <= set(rows[0])
    assert all(math.isfinite(x["end_s"]) for x in rows)


def test_a_gpu_type_the_throughput_table_lacks_is_one_line_not_a_run_that_never_ends():
    # the table knows "fast" and "slow"; a "V100" server would hold jobs that never progress
    cl = Cluster((Server("v0", cpu=8000, mem=64000, gpus=1, gpu_type="V100"),))
    w = [WorkloadJob("a", 0.0, 1, model="m0", work=720.0)]
    with pytest.raises(InputError, match=r"gavel progress: server 'v0': gpu_type: expected a "
                                         r"type of the throughput table \(fast, slow\), got 'V100'"):
        simulate(cl, w, shares="max-min", round_s=360.0, progress=GavelTable(_Table()))
    with pytest.raises(InputError, match=r"reference: expected a GPU type of the table"):
        GavelTable(_Table(), reference="v100")
    assert GavelTable(_Table()).ref == 0 and GavelTable(_Table(), reference="slow").ref == 1

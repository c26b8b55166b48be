"""Tiresias' orders, Gittins index, placements and trace reader."""
from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc import Cluster, Job, Server, allocate, violations
from alloc.errors import InputError
from alloc.sched import Context, get_policy
from alloc.sched.tiresias.gittins import Distribution
from alloc.sched.tiresias.models import PACKLIMIT, TABLE6, consolidate
from alloc.sched.tiresias.orders import TiresiasG, TiresiasL, queue_of, thresholds_of
from alloc.sched.tiresias.trace import read_trace

CTX = Cluster(())


def view(id, arrival=0.0, gpus=1, gpu_s=0.0, running=False, duration=None, remaining=None):
    return SimpleNamespace(id=id, arrival_s=arrival, gpus=gpus, attained_gpu_s=gpu_s,
                           attained_s=gpu_s / gpus, running=running, duration_s=duration,
                           remaining_s=remaining, model=None)


def ctx(now, rnd=1):
    return Context(float(now), rnd, CTX)


# ------------------------------------------------------------------ Gittins
def brute_index(samples, a, delta):
    alive = [s for s in samples if s > a]
    if not alive:
        return 0.0
    p = sum(1 for s in alive if s - a <= delta) / len(alive)
    e = sum(min(s - a, delta) for s in alive) / len(alive)
    return p / e


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=40), st.integers(0, 6000),
       st.integers(1, 4000))
def test_gittins_index_is_the_definition(samples, a, delta):
    assert Distribution(samples).index(a, delta) == pytest.approx(brute_index(samples, a, delta))


def test_gittins_infinite_quantum_is_one_over_expected_remaining():
    d = Distribution([10, 20, 60])
    assert d.index(15, math.inf) == pytest.approx(1 / ((5 + 45) / 2))
    with pytest.raises(ValueError, match="GPU-seconds"):
        Distribution([0])


# ------------------------------------------------------------------- queues
def test_thresholds_and_queues():
    assert thresholds_of(2, 3200) == (3200.0,)
    assert thresholds_of(3, 100, [10, 50]) == (10.0, 50.0)
    with pytest.raises(ValueError, match="ascending"):
        thresholds_of(3, 100, [50, 10])
    with pytest.raises(ValueError, match="expected 1 numbers"):
        thresholds_of(2, 100, [1, 2])
    assert [queue_of(a, (10.0, 50.0)) for a in (0, 9.9, 10, 49, 50, 1e9)] == [0, 0, 1, 1, 2, 2]


def test_2d_las_demotes_on_gpu_seconds_not_seconds():
    o = TiresiasL(threshold=3200)
    wide = view("wide", 0, gpus=8, gpu_s=8 * 401, running=True)     # 401 s on 8 GPUs
    narrow = view("narrow", 5, gpus=1, gpu_s=3000, running=True)    # 3000 s on 1 GPU
    assert o.queue(wide) == 1 and o.queue(narrow) == 0
    assert o.rank([wide, narrow], ctx(3000)) == ["narrow", "wide"]


def test_2d_las_queue_fifo_keeps_running_jobs_ahead():
    o = TiresiasL()
    o.rank([view("a", 0, gpus=4), view("b", 1)], ctx(1))
    # b started (a was skipped): b now ranks ahead of a
    r = o.rank([view("a", 0, gpus=4), view("b", 1, gpu_s=5, running=True)], ctx(6))
    assert r == ["b", "a"]
    # a starts, b is preempted by a higher queue's job... b waits behind a
    r = o.rank([view("a", 0, gpus=4, gpu_s=4, running=True), view("b", 1, gpu_s=9),
                view("c", 2)], ctx(10))
    assert r == ["a", "b", "c"]
    # a demoted job goes to the end of the next queue
    r = o.rank([view("a", 0, gpus=4, gpu_s=3300, running=True), view("b", 1, gpu_s=9),
                view("c", 2)], ctx(900))
    assert r == ["b", "c", "a"]


def test_2d_las_is_fifo_on_start_time_within_a_queue():
    o = TiresiasL(fifo="start")
    # b arrived after a but started first: it stays ahead of a in the queue
    o.rank([view("a", 0, gpus=4), view("b", 1)], ctx(1))
    r = o.rank([view("a", 0, gpus=4), view("b", 1, gpu_s=5, running=True)], ctx(6))
    assert r == ["b", "a"]
    # a job that never ran follows the started ones even when it arrived first
    r = o.rank([view("a", 0, gpus=4), view("b", 1, gpu_s=9, running=False),
                view("c", 2, gpu_s=0)], ctx(10))
    assert r == ["b", "a", "c"]


def test_2d_las_next_change_is_the_threshold_crossing():
    o = TiresiasL(threshold=3200)
    jobs = [view("a", 0, gpus=4, gpu_s=3000, running=True), view("b", 0, gpus=1, gpu_s=0)]
    assert o.next_change_s(jobs, ctx(100)) == pytest.approx(100 + 200 / 4)


def test_promotion_resets_service_and_waiting():
    o = TiresiasL(threshold=100, promote_knob=2)
    low = view("low", 0, gpus=1, gpu_s=150)                 # ran 150 s, now waits
    new = view("new", 200, gpus=1, gpu_s=10, running=True)
    assert o.rank([low, new], ctx(250))[0] == "new"          # waited 100 < 2 x 150
    assert o.next_change_s([low, new], ctx(250)) == pytest.approx(340)   # new is demoted
    assert o.next_change_s([low], ctx(250)) == pytest.approx(450)        # low is promoted
    assert o.rank([low, new], ctx(450)) == ["new", "low"]    # promoted to Q1's end
    assert o.promotions == 1 and o.queue(low) == 0
    by_start = TiresiasL(threshold=100, promote_knob=2, fifo="start")
    by_start.rank([view("low", 0, gpus=1, gpu_s=0)], ctx(0))
    by_start.rank([view("low", 0, gpus=1, gpu_s=1, running=True)], ctx(1))
    assert by_start.rank([low, new], ctx(450)) == ["low", "new"]   # it started first
    never = TiresiasL(threshold=100)
    assert never.rank([low, new], ctx(10**6))[0] == "new"


def test_2d_gittins_prefers_jobs_likely_to_finish_in_the_quantum():
    o = TiresiasG(threshold=1000)
    jobs = [view("a", 0, duration=100), view("b", 1, duration=100),
            view("c", 2, duration=900), view("d", 3, duration=5000)]
    o.rank(jobs, ctx(3))
    assert len(o.dist) == 4
    jobs = [view("a", 0, gpu_s=10, duration=100), view("c", 2, gpu_s=150, duration=900),
            view("d", 3, gpu_s=95, duration=5000)]
    # at 95 GPU-s both 100-GPU-s samples are still ahead: d looks about to finish
    assert o.rank(jobs, ctx(4)) == ["d", "a", "c"]


def test_2d_gittins_last_queue_is_fifo_on_start_time():
    o = TiresiasG(threshold=10)
    first = [view("x", 0, duration=50), view("y", 1, duration=5000)]
    o.rank(first, ctx(1))
    r = o.rank([view("x", 0, gpu_s=20, running=True, duration=50),
                view("y", 1, gpu_s=30, running=True, duration=5000)], ctx(40))
    assert r == ["x", "y"]


def test_registered_orders_build_with_their_parameters():
    las = get_policy("order", "tiresias-l").build(queues=3, threshold=100)
    assert las.thresholds == (100.0, 200.0) and las.preemptive
    assert not get_policy("order", "yarn-cs").build().preemptive
    assert not get_policy("order", "best-effort").build().preemptive
    srsf = get_policy("order", "srsf").build()
    jobs = [view("wide", 0, gpus=8, remaining=100.0), view("long", 1, remaining=500.0),
            view("unknown", 2)]
    assert srsf.rank(jobs, ctx(0)) == ["long", "wide", "unknown"]
    with pytest.raises(InputError, match="promote_knob"):
        get_policy("order", "tiresias-l").build(promote_knob=-1)


def test_gittins_samples_file(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("gpu_s\n100\n200\n")
    assert len(get_policy("order", "tiresias-g").build(samples=str(f)).dist) == 2
    f.write_text("gpu_s\n100\nx\n")
    with pytest.raises(InputError, match="row 3: gpu_s"):
        get_policy("order", "tiresias-g").build(samples=str(f))


# ---------------------------------------------------------------- placement
def cluster(n=4, g=4):
    return Cluster(tuple(Server(f"s{i}", 64000, 64000, g) for i in range(n)))


def servers(res):
    return {p.job: sorted({x.gpu.split("/")[0] for x in p.gpus}) for p in res.placements}


def running(c, job, where):
    res = allocate(c, [job], solver="yarn")
    assert servers(res)[job.id] == where
    return replace(job, current=res.placements[0])


def test_yarn_takes_whole_idle_servers_and_blocks_the_queue():
    c = cluster(3)
    r = running(c, Job("r", 1), ["s0"])
    res = allocate(c, [r, Job("w", 8), Job("x", 3)], solver="yarn")
    assert servers(res)["w"] == ["s1", "s2"] and servers(res)["x"] == ["s0"]
    res = allocate(c, [r, Job("w", 12), Job("x", 1)], solver="yarn")   # 11 free, not 3 idle
    assert res.unplaced == ("w", "x") and res.stats.get("blocked_by") == "w"
    res = allocate(c, [r, Job("w", 12), Job("x", 1)], solver="yarn", skip=True)
    assert res.unplaced == ("w",) and not violations(c, [r, Job("w", 12), Job("x", 1)], res)


def test_yarn_remainder_goes_to_the_first_server_with_room():
    c = cluster(4)
    r = running(c, Job("r", 2), ["s0"])
    res = allocate(c, [r, Job("w", 6)], solver="yarn")
    assert servers(res)["w"] == ["s0", "s1"]


def test_tiresias_placement_consolidates_skewed_jobs_only():
    c = cluster(2)
    jobs = [Job("a", 3), Job("b", 3), Job("vgg", 2), Job("res", 2)]
    res = allocate(c, jobs, solver="tiresias", skewed=["vgg"])
    assert res.unplaced == ("vgg",) and servers(res)["res"] == ["s0", "s1"]
    res = allocate(c, jobs, solver="tiresias")      # not skewed: vgg spreads, res waits
    assert servers(res)["vgg"] == ["s0", "s1"] and res.unplaced == ("res",)


def test_least_fragmenting_fills_the_fullest_server():
    c = cluster(3)
    r = running(c, Job("r", 3), ["s0"])
    res = allocate(c, [r, Job("one", 1), Job("two", 2)], solver="tiresias")
    assert servers(res)["one"] == ["s0"] and servers(res)["two"] == ["s1"]


def test_model_skew_rule_follows_table6():
    assert {m for m in TABLE6 if consolidate(m)} == {"vgg19", "vgg16", "vgg11", "alexnet"}
    assert 0.146 < PACKLIMIT < 0.61


# -------------------------------------------------------------------- trace
HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"


@pytest.mark.parametrize("row, msg", [
    ("0,0,0,1,vgg19,10,1", "row 2: num_gpu: expected an integer >= 1"),
    ("0,1,-5,1,vgg19,10,1", "row 2: submit_time: expected seconds >= 0"),
    ("0,1,0,1,vgg19,-3,1", "row 2: duration: expected seconds > 0"),
    ("0,1,0,1,vgg19,x,1", "row 2: duration"),
])
def test_trace_bad_rows(tmp_path, row, msg):
    f = tmp_path / "t.csv"
    f.write_text(HEADER + row + "\n")
    with pytest.raises(InputError, match=msg):
        read_trace(f)


def test_trace_missing_column_and_repeated_id(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpu\n0,1\n")
    with pytest.raises(InputError, match="missing column"):
        read_trace(f)
    f.write_text(HEADER + "0,1,0,1,a,10,1\n0,1,0,1,a,10,1\n")
    with pytest.raises(InputError, match="row 3: job_id"):
        read_trace(f)

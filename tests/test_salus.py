"""Salus (MLSys'20): the memory split, the lanes, the policies' time shares,
and small runs on the simulator with JCTs worked out by hand."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alloc.errors import InputError
from alloc.sched import get_policy
from alloc.sched.salus.lanes import LaneManager
from alloc.sched.salus.profiles import Profile, memory_split, read_workloads


# --------------------------------------------------------------- profiles
def test_memory_split_is_the_intercept_over_batch_size():
    ps = [Profile(f"vgg_{b}_1min", "vgg", b, 60.0, 1000.0 + 20.0 * b, 100) for b in (25, 50, 100)]
    out = memory_split(ps)
    assert all(p.persistent_mb == pytest.approx(1000.0) for p in out)
    assert [round(p.ephemeral_mb) for p in out] == [500, 1000, 2000]
    # a negative intercept is clipped to 0, a huge one to the smallest peak
    neg = memory_split([Profile(f"m_{b}_1min", "m", b, 1.0, 10.0 * b - 100, 1) for b in (20, 40)])
    assert all(p.persistent_mb == 0.0 for p in neg)


def test_read_workloads_names_the_row(tmp_path):
    f = tmp_path / "w.csv"
    f.write_text("vgg11_25_1min,67.059,3709.6,565,cmd\nvgg11_50_1min,67.780,5087.5,321,cmd\n")
    ps = read_workloads(f)
    assert [p.batch for p in ps] == [25, 50] and ps[0].iterations == 565
    f.write_text("vgg11_25_1min,abc,3709.6,565\n")
    with pytest.raises(InputError, match="w.csv: row 1"):
        read_workloads(f)


# ------------------------------------------------------------------ lanes
def test_a_job_gets_a_lane_of_its_own_while_memory_lasts():
    lm = LaneManager(16.0)
    assert lm.admit("a", 2.0, 6.0) == 0 and lm.admit("b", 1.0, 6.0) == 1
    assert lm.free == pytest.approx(1.0)
    # no room for a new lane: c shares lane 0 (2 + 1 + max(6, 4) = 9 > 8: no), lane 1 no either
    assert lm.admit("c", 1.0, 4.0) is None
    lm.release("b")
    assert lm.admit("c", 1.0, 4.0) == 2


def test_jobs_share_a_lane_with_one_ephemeral_region():
    lm = LaneManager(10.0)
    lm.admit("a", 1.0, 8.0)                       # lane 0: size 9, 1 MB free
    assert lm.admit("b", 0.5, 7.0) is None        # 1 + 0.5 + max(8, 7) = 9.5 > 9
    assert lm.admit("b", 0.0, 7.5) == 0           # 1 + 0 + max(8, 7.5) = 9: it fits
    assert len(lm.lanes) == 1 and lm.check() == []


@given(st.lists(st.tuples(st.floats(0.0, 4.0), st.floats(0.1, 6.0)), min_size=1, max_size=12),
       st.lists(st.integers(0, 11), max_size=6))
def test_lanes_never_hold_more_than_the_gpu(jobs, leave):
    lm = LaneManager(12.0)
    for i, (p, e) in enumerate(jobs):
        if p + e <= 12.0:
            lm.admit(f"j{i}", p, e)
    for i in leave:
        lm.release(f"j{i}")
    assert lm.check() == []
    with pytest.raises(InputError, match="needs"):
        lm.admit("huge", 10.0, 5.0)


# --------------------------------------------------------------- registry
def test_the_four_policies_are_registered_mechanisms():
    for pol in ("fifo", "srtf", "pack", "fair"):
        m = get_policy("mechanism", f"salus-{pol}").build()
        assert m.policy == pol and m.progress.policy == pol
    with pytest.raises(InputError, match="max_resident"):
        get_policy("mechanism", "salus-srtf").build(max_resident=0)


# ---------------------------------------------------------- on the simulator
def _run(policy, memory_mb=1000.0, a=(30.0, 50.0), b=(10.0, 40.0)):
    from alloc.sched.salus.sim import salus_cluster, workload
    from alloc.sim import simulate
    ps = [Profile("A_1_x", "A", 1, 100.0, sum(a), 100, *a),
          Profile("B_1_x", "B", 1, 20.0, sum(b), 20, *b)]
    mech = get_policy("mechanism", f"salus-{policy}").build(memory_mb=memory_mb)
    res = simulate(salus_cluster(memory_mb), workload(ps, [0.0, 10.0], ["A", "B"]),
                   order=("fifo", {"preemptive": False}), placement="best-fit", mechanism=mech,
                   progress=mech.progress)
    assert mech.lanes.check() == []
    return {r["id"]: r["end_s"] - r["arrival_s"] for r in res.timeline()}


@pytest.mark.parametrize("policy, jct", [
    ("fifo", {"A": 100.0, "B": 110.0}),      # B waits for A
    ("srtf", {"A": 120.0, "B": 20.0}),       # B preempts A at 10 s, runs 20 s
    ("fair", {"A": 120.0, "B": 40.0}),       # halves from 10 s: B done at 50 s
    ("pack", {"A": 120.0, "B": 40.0}),       # two lanes side by side: the same halves
])
def test_two_jobs_by_hand(policy, jct):
    assert _run(policy) == pytest.approx(jct)


def test_memory_keeps_a_job_out_until_a_lane_fits():
    # 100 MB: A's lane takes 80, B needs 50 alone or 90 in A's lane (> 80): B waits
    for policy in ("srtf", "fair", "pack"):
        assert _run(policy, memory_mb=100.0) == pytest.approx({"A": 100.0, "B": 110.0})


def test_the_run_needs_the_policys_progress_model():
    from alloc.sched.salus.sim import SalusProgress, salus_cluster, workload
    from alloc.sim import simulate
    ps = [Profile("A_1_x", "A", 1, 100.0, 80.0, 100, 30.0, 50.0)]
    with pytest.raises(InputError, match="gpu-memory"):
        simulate(salus_cluster(), workload(ps, [0.0]), mechanism="salus-pack")
    with pytest.raises(InputError, match="SalusProgress"):
        simulate(salus_cluster(), workload(ps, [0.0]), mechanism="salus-pack",
                 progress=SalusProgress("fair"))
    res = simulate(salus_cluster(), workload(ps, [0.0]), mechanism="salus-pack",
                   progress=SalusProgress("pack"))
    assert [r["end_s"] for r in res.timeline()] == [100.0]

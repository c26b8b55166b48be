"""Shortcuts of the whole call against the full computations they skip.

* A running job kept where it runs gets its ``current`` placement back when
  the placement rebuilt from its assignment would equal it (same job id,
  same throughput), else the rebuilt one (`Problem._rebuilt`).
* The common placement passes [`placement_problems`][alloc.check.placement_problems]
  without its messages being built (`alloc.check._fine`); on generated
  placements, valid and broken in every way the full test knows, the answer
  is the full test's.
* The collector is off during a heuristic's call and back as it was after it,
  exceptions and nested calls included (`alloc.collector.paused`).
"""
from __future__ import annotations

import gc
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from alloc import Cluster, GpuShare, Job, Placement, Server, allocate
import alloc.check as check
from alloc.collector import paused
from alloc.facts import facts
from alloc.errors import InputError
from alloc.problem import compile_problem

CLUSTER = Cluster((Server("s0", 24000, 512000, 8, "V100", rack="r0"),
                   Server("s1", 24000, 512000, 8, "K80", rack="r0"),
                   Server("s2", 24000, 512000, 4, "V100", rack="r1")),
                  levels=("rack", "server", "gpu"))


def _running(model, tp_shift: float, job_name: str):
    gpus = (GpuShare("s0/gpu1", 1000), GpuShare("s0/gpu0", 1000))
    cur = Placement(job_name, gpus, {"s0": 6000}, {"s0": 128000})
    job = Job("a", 2, cpu=6000, mem=128000, model=model, locality="server", current=cur)
    p = compile_problem(CLUSTER, [job])
    built = p._build_placement(p.jobs[0], p.fixed[0])
    cur = replace(cur, throughput=built.throughput + tp_shift)
    job = replace(job, current=cur)
    return compile_problem(CLUSTER, [job]), cur, built


@pytest.mark.parametrize("model", [None, "res18", "bert"])
@pytest.mark.parametrize("tp_shift,name", [(0.0, "a"), (0.0, ""), (0.25, "a"), (1e-12, "a")])
def test_kept_placement_is_current_exactly_when_the_rebuilt_one_equals_it(model, tp_shift,
                                                                           name):
    problem, cur, _ = _running(model, tp_shift, name)
    job, a = problem.jobs[0], problem.fixed[0]
    got = problem._rebuilt(job, cur, a)
    want = problem._build_placement(job, a)
    assert got == want
    assert (got is cur) == (want == cur)
    if tp_shift == 0.0 and name == "a":
        assert got is cur


# ---------------------------------------------------------------- the check
_GPU = st.sampled_from(["s0/gpu0", "s0/gpu1", "s0/gpu7", "s1/gpu0", "s1/gpu3", "s2/gpu0",
                        "s2/gpu3", "s9/gpu0"])
_SHARE = st.builds(GpuShare, _GPU, st.sampled_from([1000, 1000, 500, 0]),
                   st.sampled_from([None, None, None, 8000]),
                   st.sampled_from([None, None, None, 300]))
_SERVER = st.sampled_from(["s0", "s1", "s2", "s9"])
_AMOUNT = st.sampled_from([0, 3000, 6000, -1, 12000])


@st.composite
def _case(draw):
    gpus = tuple(draw(st.lists(_SHARE, max_size=4)))
    cpu = draw(st.dictionaries(_SERVER, _AMOUNT, max_size=2))
    mem = draw(st.dictionaries(_SERVER, st.sampled_from([0, 64000, 128000, -5]), max_size=2))
    common = draw(st.booleans())
    if common:                      # the consistent common case, at times a GPU over
        first = draw(_SERVER)
        gpus = tuple(GpuShare(f"{first}/gpu{k}", 1000) for k in range(len(gpus)))
        if gpus and draw(st.booleans()):
            gpus = gpus[:-1] + (GpuShare(draw(_GPU), 1000),)
        cpu, mem = {first: 3000 * len(gpus)}, {first: 64000 * len(gpus)}
    n = len(gpus) if common else draw(st.sampled_from([len(gpus), 0, 1, 2, 4]))
    job = Job("a", n, cpu=3000 * n if common else draw(st.sampled_from([3000 * n, 6000])),
              mem=64000 * n if common else draw(st.sampled_from([64000 * n, 128000])),
              gpu_milli=draw(st.sampled_from([1000, 1000, 500])) if n == 1 else 1000,
              gpu_types=draw(st.sampled_from([(), (), ("V100",), ("K80", "V100")])),
              locality=draw(st.sampled_from([None, None, "server", "rack", "gpu"])),
              min_gpus=draw(st.sampled_from([None, None, 1])) if n else None,
              model=draw(st.sampled_from([None, "res18"])))
    return job, Placement("a", gpus, cpu, mem)


@settings(max_examples=300, deadline=None)
@given(_case())
def test_common_case_shortcut_gives_the_full_answer(case):
    job, p = case
    try:
        (job,), _ = check.resolve_models((job,))
    except InputError:
        return
    got = check.placement_problems(CLUSTER, job, p, "x")
    real = check._fine
    try:
        check._fine = lambda *a: False
        want = check.placement_problems(CLUSTER, job, p, "x")
    finally:
        check._fine = real
    assert got == want


def test_shortcut_taken_for_a_common_placement():
    job = Job("a", 2, cpu=6000, mem=128000, locality="server")
    p = Placement("a", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu3", 1000)),
                  {"s0": 6000}, {"s0": 128000})
    assert check._fine(facts(CLUSTER), job, p)
    assert check.placement_problems(CLUSTER, job, p, "x") == []


# ---------------------------------------------------------------- the collector
def test_collector_off_in_a_call_and_restored(monkeypatch):
    seen = []
    real = check.violations

    def spy(*a, **k):                  # the final check runs inside the call
        seen.append(gc.isenabled())
        return real(*a, **k)
    monkeypatch.setattr(check, "violations", spy)
    was = gc.isenabled()
    try:
        gc.enable()
        allocate(CLUSTER, [Job("a", 1, cpu=1000, mem=1000)], solver="best-fit")
        assert seen == [False] and gc.isenabled()
        with pytest.raises(InputError):
            allocate(CLUSTER, [Job("a", 99, cpu=1000, mem=1000)], strict=True)
        assert gc.isenabled()
        gc.disable()                            # a caller's choice is kept
        allocate(CLUSTER, [Job("a", 1, cpu=1000, mem=1000)], solver="best-fit")
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_nested_pauses_share_one_count():
    was = gc.isenabled()
    gc.enable()
    try:
        with paused():
            with paused():
                assert not gc.isenabled()
            assert not gc.isenabled()
            with paused(False):
                assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(RuntimeError):
            with paused():
                raise RuntimeError("x")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()

"""BytePS: the §4.1 formulas, the summation-server assignment (exact >= greedy,
<= bound, within CPU and bandwidth), its composition with the GPU placement,
and bad input."""
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc.byteps import (CommJob, CpuMachine, comm_time, exact, goodput_gbps, greedy, problems,
                          speedup, vs_allreduce, vs_ps)
from alloc.byteps.compose import GpuJob, compose, plan_value, sequential
from alloc.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def test_worked_example_and_limits():
    assert vs_allreduce(32, 16) == pytest.approx(1.46875)          # paper: 1.46
    assert vs_ps(32, 16) == pytest.approx(1504 / 992)               # paper: 1.52
    assert comm_time(8, 0, 1e9, 1e9) == pytest.approx(2 * 7 / 8)    # all-reduce 2(n-1)M/(nB)
    assert comm_time(8, 8, 1e9, 1e9) == pytest.approx(1.0)          # non-colocated PS: M/B
    assert comm_time(8, 20, 1e9, 1e9) == comm_time(8, 8, 1e9, 1e9)  # k > n does not help
    assert goodput_gbps(8, 8, 90) == pytest.approx(90)
    assert goodput_gbps(8, 0, 90) == pytest.approx(90 * 64 / 112)
    assert speedup(2, 2, 0.5) == 1.0 and speedup(1, 0, 0.5) == 1.0


@given(st.integers(3, 64), st.floats(0.01, 0.95))
def test_speedup_increasing_and_concave(n, c):
    r = [speedup(n, k, c) for k in range(n + 1)]
    d = [b - a for a, b in zip(r, r[1:])]
    assert all(x > 0 for x in d) and all(b <= a + 1e-12 for a, b in zip(d, d[1:]))
    assert r[0] == pytest.approx(1.0) and r[-1] <= 1 / (1 - c) + 1e-12


@pytest.mark.parametrize("job,field", [
    (CommJob("a", 0, 100.0, 0.5), "jobs[0].n"),
    (CommJob("a", 4, 0.0, 0.5), "jobs[0].gbps"),
    (CommJob("a", 4, -5.0, 0.5), "jobs[0].gbps"),
    (CommJob("a", 4, 100.0, 1.5), "jobs[0].comm_share"),
])
def test_bad_summation_input(job, field):
    with pytest.raises(InputError) as e:
        exact([job], [CpuMachine("c", 8000, 100.0)])
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_bench_bad_input_exit_2():
    for arg in (["--n", "0"], ["--gbps", "0"]):
        r = subprocess.run([sys.executable, str(ROOT / "bench" / "byteps.py"), *arg],
                           capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_hand_worked_assignment():
    jobs = [CommJob("big", 8, 100.0, 0.6), CommJob("small", 4, 100.0, 0.6),
            CommJob("two", 2, 100.0, 0.9)]
    ms = [CpuMachine(f"c{i}", 16000, 100.0) for i in range(3)]
    g = greedy(jobs, ms)
    e = exact(jobs, ms)
    assert g.k("two") == 0 and e.k("two") == 0                # n = 2 gains nothing
    assert e.value >= g.value - 1e-9 and e.status.value == "optimal"
    assert sum(len(v) for v in e.servers.values()) == 3       # one server per 100 G NIC
    assert problems(jobs, ms, e.servers) == []
    bad = {"big": ("c0", "c0")}
    assert any("two summation servers" in p for p in problems(jobs, ms, bad))


@st.composite
def mixes(draw):
    jobs = [CommJob(f"j{i}", draw(st.integers(1, 8)), draw(st.sampled_from([25.0, 50.0, 100.0])),
                    draw(st.floats(0.0, 0.9)), draw(st.sampled_from([1.0, 2.0])))
            for i in range(draw(st.integers(1, 8)))]
    ms = [CpuMachine(f"c{s}", draw(st.sampled_from([0, 4000, 8000, 16000])),
                     draw(st.sampled_from([25.0, 50.0, 100.0])))
          for s in range(draw(st.integers(0, 6)))]
    return jobs, ms


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixes())
def test_exact_between_greedy_and_bound_within_capacity(inst):
    jobs, ms = inst
    g = greedy(jobs, ms)
    e = exact(jobs, ms, time_limit=5)
    assert problems(jobs, ms, g.servers) == [] and problems(jobs, ms, e.servers) == []
    assert e.value >= g.value - 1e-9
    assert e.bound is None or e.value <= e.bound + 1e-6
    for j in jobs:
        assert e.k(j.id) <= j.n


def test_composed_never_below_placement_first():
    free = [8, 6, 4, 4, 2, 2]
    jobs = [GpuJob("a", 8, 100.0, 0.56), GpuJob("b", 8, 100.0, 0.64), GpuJob("c", 4, 100.0, 0.78)]
    ms = [CpuMachine(f"c{i}", 16000, 100.0) for i in range(4)]
    joint = compose(jobs, free, ms, time_limit=10)
    first = sequential(jobs, free, ms, time_limit=10)
    assert joint.value >= first.value - 1e-9
    assert joint.value == pytest.approx(plan_value(jobs, joint.gpus, joint.servers))
    for j in jobs:
        if j.id in joint.gpus:
            assert sum(joint.gpus[j.id].values()) == j.gpus
    used = {}
    for gs in joint.gpus.values():
        for s, n in gs.items():
            used[s] = used.get(s, 0) + n
    assert all(used[s] <= free[s] for s in used)


@pytest.mark.parametrize("page", ["antman.md", "byteps.md"])
def test_docs_examples_run(page):
    """The page's Python blocks run, and they check what they show."""
    import re
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), re.S)
    assert blocks and any("assert " in code for code in blocks)
    for code in blocks:
        exec(compile(code, page, "exec"), {})


def test_profile_fields_are_optional_and_checked():
    from alloc.byteps.assign import comm_share_of, from_job
    from alloc import Job
    from alloc.profiles import load_profile, profile_from_dict
    assert comm_share_of(load_profile("bert")) == pytest.approx(1 - 0.44)
    p = profile_from_dict({"format": "alloc.model/1", "name": "x", "model_mb": 97.5,
                           "comm_share": 0.3}, source="x")
    assert comm_share_of(p) == 0.3 and p.meta["model_mb"] == 97.5
    assert from_job(Job("j", gpus=16, profile=p), 2, 100.0).comm_share == 0.3
    with pytest.raises(InputError, match="comm_share"):
        profile_from_dict({"format": "alloc.model/1", "comm_share": 1.5}, source="x")

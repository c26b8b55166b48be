"""AlloX (EuroSys'20): the trace reader, the matching, each decision rule,
and the experiment on the simulator (a small synthetic trace)."""
from __future__ import annotations

import itertools
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alloc.errors import InputError
from alloc.sched.allox.jobs import FlexJob, read_trace
from alloc.sched.allox.matching import cost_matrix, match
from alloc.sched.allox.rules import (Allox, Drf, DrfExt, EqualShare, Running, Sjf, Srpt, View,
                                     exchange_rate, fair_value)

CAP = (640.0, 20.0, 2560.0)


def J(i, user="u0", arrival=0.0, cpu=100.0, gpu=50.0, **kw):
    return FlexJob(str(i), user, arrival, cpu_s=cpu, gpu_s=gpu, **kw)


def view(queued, free=(1, 1), running=(), now=0.0, users=None, score=None, slots=None, held=None):
    users = users or sorted(queued)
    slots = slots or {"gpu": free[0] + sum(r.kind == "gpu" for r in running),
                      "cpu": free[1] + sum(r.kind == "cpu" for r in running)}
    return View(now, slots, {"gpu": free[0], "cpu": free[1]}, queued, list(running), users, CAP,
                score or {}, {}, held or {})


# --------------------------------------------------------------- reader
def test_trace_reader(tmp_path):
    f = tmp_path / "jobs.txt"
    f.write_text("# 0\n1 0 1 5 queue1\nstage -1.0 32.0 14.0 97.0 1.0 2.0 49.0 1 0.1 -0.5\n0\n"
                 "# 1\n1 1 1 0 queue0\nstage -1.0 32.0 1.0 90.0 1.0 2.0 26.0 1\n0\n")
    a, b = read_trace(f)
    assert (a.id, a.user, a.arrival, a.cpu_s, a.gpu_s) == ("1", "queue0", 0.0, 90.0, 26.0)
    assert b.cpu_est == pytest.approx(97.0 * 1.1) and b.gpu_est == pytest.approx(24.5)
    assert b.mem == 14.0 and b.gpu_mem == 2.0


def test_trace_reader_names_the_line(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("# 0\n1 0 1 5 queue1\nstage -1.0 32.0 x 97.0\n0\n")
    with pytest.raises(InputError, match="bad.txt: line 2"):
        read_trace(f)
    with pytest.raises(InputError, match="no such|cannot read"):
        read_trace(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="cpu_s"):
        FlexJob("a", "u", 0.0, cpu_s=0.0, gpu_s=1.0)


# ------------------------------------------------------------- matching
@given(n=st.integers(1, 4), m=st.integers(1, 2), seed=st.integers(0, 10_000))
def test_matching_is_the_min_total_completion_schedule(n, m, seed):
    """The matching's cost is the minimum over every assignment of jobs to
    (machine, position) slots, found by brute force."""
    rng = np.random.default_rng(seed)
    jobs = [J(i, arrival=float(rng.integers(0, 5)), cpu=float(rng.integers(1, 20)),
              gpu=float(rng.integers(1, 20))) for i in range(n)]
    machines = [("gpu" if k % 2 == 0 else "cpu", float(rng.integers(0, 5))) for k in range(m)]
    C = cost_matrix(jobs, machines)
    from scipy.optimize import linear_sum_assignment
    r, c = linear_sum_assignment(C)
    best = min(sum(C[row, j] for j, row in enumerate(perm))
               for perm in itertools.permutations(range(n * m), n))
    assert C[r, c].sum() == pytest.approx(best)


def test_first_job_is_the_one_at_the_highest_position():
    # one machine, two jobs: the shorter runs first (it sits at position 2)
    first = match([J("long", gpu=10.0), J("short", gpu=1.0)], [("gpu", 0.0)], 0.0)
    assert [j.id for _, j in first] == ["short"]


# ---------------------------------------------------------------- rules
def test_fair_value_counts_the_faster_kind():
    j = J("a", cpu=100.0, gpu=25.0, gpu_mem=2.0)
    assert fair_value(j, "gpu", CAP) == pytest.approx(1 / 20)
    assert fair_value(j, "cpu", CAP) == pytest.approx(25 / 100 / 20)
    k = J("b", cpu=10.0, gpu=40.0, mem=14.0)
    assert fair_value(k, "cpu", CAP) == pytest.approx(32 / 640)


def test_sjf_takes_the_shortest_pairs_first():
    a, b, c = J("a", cpu=90.0, gpu=30.0), J("b", cpu=20.0, gpu=10.0), J("c", cpu=5.0, gpu=60.0)
    d = Sjf().decide(view({"u0": [a, b, c]}, free=(1, 1)))
    assert d.starts == (("c", "cpu"), ("b", "gpu"))


def test_allox_plus_puts_jobs_that_waited_long_first():
    old, new = J("old", arrival=0.0, gpu=40.0), J("new", arrival=900.0, gpu=10.0)
    v = view({"u0": [old, new]}, free=(1, 0), now=1000.0)
    assert Sjf().decide(v).starts == (("new", "gpu"),)
    assert Sjf(timeout=500.0).decide(v).starts == (("old", "gpu"),)


def test_srpt_preempts_for_a_shorter_job_and_keeps_a_runner_in_place():
    long = J("long", cpu=1000.0, gpu=500.0)
    short = J("short", cpu=100.0, gpu=5.0)
    run = Running(long, "gpu", 0.0)
    d = Srpt().decide(view({"u0": [short]}, free=(0, 0), running=[run], now=10.0))
    assert d.stops == ("long",) and ("short", "gpu") in d.starts
    d = Srpt().decide(view({"u0": []}, free=(0, 1), running=[run], now=10.0))
    assert d.stops == () and d.starts == ()           # it keeps its GPU


def test_srpt_ranks_by_remaining_time():
    half = Running(J("half", cpu=1000.0, gpu=100.0), "gpu", 0.0, done=0.0)
    fresh = J("fresh", cpu=1000.0, gpu=60.0)
    d = Srpt().decide(view({"u0": [fresh]}, free=(0, 0), running=[half], now=50.0))
    assert d.stops == ()                               # 50 left beats 60


def test_drf_serves_the_smallest_dominant_share_and_blocks_at_the_head():
    runs = [Running(J("r", user="u0", gpu=10.0, cpu=100.0), "gpu", 0.0)]
    a, b = J("a", user="u0", gpu=5.0), J("b", user="u1", gpu=5.0)
    assert Drf().decide(view({"u0": [a], "u1": [b]}, free=(1, 0), running=runs)).starts == \
        (("b", "gpu"),)
    # u1's head prefers a GPU, none is free: nothing starts, even on the free CPU node
    assert Drf().decide(view({"u1": [b]}, free=(0, 1), users=["u1"])).starts == ()


def test_drf_fifo_puts_everything_on_gpus_in_arrival_order():
    a, b = J("a", arrival=0.0, cpu=1.0, gpu=99.0), J("b", arrival=1.0, cpu=1.0, gpu=1.0)
    d = Drf(fifo=True, gpu_only=True).decide(view({"u0": [a, b]}, free=(1, 5)))
    assert d.starts == (("a", "gpu"),)


def test_drf_ext_falls_back_to_cpus():
    a, b = J("a", cpu=50.0, gpu=10.0), J("b", cpu=20.0, gpu=30.0)
    d = DrfExt(beta=10.0).decide(view({"u0": [a, b]}, free=(1, 1)))
    assert d.starts == (("a", "gpu"), ("b", "cpu"))
    assert exchange_rate([a, b]) == pytest.approx((32 * 50 / 10 + 32 * 20 / 30) / 2)
    with pytest.raises(InputError, match="beta"):
        DrfExt(0.0)


def test_equal_share_keeps_each_user_to_its_share():
    jobs = {"u0": [J(i, user="u0") for i in range(5)], "u1": []}
    d = EqualShare().decide(view(jobs, free=(4, 4), users=["u0", "u1"]))
    kinds = [k for _, k in d.starts]
    assert kinds.count("gpu") == 2 and kinds.count("cpu") == 2     # half of each kind


def test_equal_share_vector_blocks_gpus_while_a_cpu_job_runs():
    run = Running(J("r", user="u0"), "cpu", 0.0)
    jobs = {"u0": [J("a", user="u0")], "u1": []}
    d = EqualShare(vector=True).decide(view(jobs, free=(4, 3), running=[run], users=["u0", "u1"]))
    # the GPU pass starts nothing (cores left < 0); the CPU pass offers a GPU first
    assert d.starts == (("a", "gpu"),)
    held = {"u0": (32.0, 0.0, 16.0)}
    d = EqualShare(vector=True).decide(view({"u0": [J("b", user="u0")], "u1": []}, free=(4, 4),
                                            users=["u0", "u1"], held=held))
    assert d.starts == (("b", "gpu"),)


def test_allox_considers_the_least_served_users_first():
    a, b = J("a", user="u0", gpu=5.0), J("b", user="u1", gpu=5.0)
    d = Allox(alpha=0.5, grow=False).decide(view({"u0": [a], "u1": [b]}, free=(1, 0),
                                                 score={"u0": 0.3, "u1": 0.1}))
    assert d.starts == (("b", "gpu"),)


def test_allox_grows_alpha_when_the_chosen_users_cannot_start():
    a, b = J("a", user="u0", gpu=5.0), J("b", user="u1", gpu=5.0)
    d = Allox(alpha=0.5).decide(view({"u0": [a], "u1": [b]}, free=(2, 0),
                                     score={"u0": 0.3, "u1": 0.1}))
    assert sorted(d.starts) == [("a", "gpu"), ("b", "gpu")]
    with pytest.raises(InputError, match="alpha"):
        Allox(alpha=0.0)


def test_allox_matches_jobs_to_the_kind_that_suits_them():
    cpu_job, gpu_job = J("c", cpu=10.0, gpu=80.0), J("g", cpu=300.0, gpu=20.0)
    d = Allox(alpha=1.0).decide(view({"u0": [cpu_job, gpu_job]}, free=(1, 1)))
    assert sorted(d.starts) == [("c", "cpu"), ("g", "gpu")]


# ---------------------------------------------------------- on the simulator
def _simulate(policy, jobs, gpus=1, cpu_nodes=1, **params):
    from alloc.sched import get_policy
    from alloc.sched.allox.sim import FlexProgress, flex_cluster, workload
    from alloc.sim import simulate
    sizing = get_policy("sizing", policy).build(**params)
    res = simulate(flex_cluster(gpus, cpu_nodes), workload(jobs, sizing.profiling),
                   order=("fifo", {"preemptive": False}), placement="best-fit", sizing=sizing,
                   progress=FlexProgress())
    return {r["id"]: r for r in res.timeline()}, res


def test_sjf_on_the_simulator_by_hand():
    a = J("a", user="u0", cpu=10.0, gpu=4.0)
    b = J("b", user="u1", cpu=6.0, gpu=5.0)
    tl, _ = _simulate("allox-sjf", [a, b], profiling=False)
    # a takes the GPU (4 < 5), b the CPU node (6): both from 0
    assert (tl["a"]["start_s"], tl["a"]["end_s"]) == (0.0, 4.0)
    assert (tl["b"]["start_s"], tl["b"]["end_s"]) == (0.0, 6.0)


def test_drf_fifo_queues_each_user_in_arrival_order_on_gpus():
    jobs = [J(i, user="u0", arrival=float(i), cpu=1.0, gpu=10.0) for i in range(3)]
    tl, _ = _simulate("allox-drf-fifo", jobs, gpus=1, cpu_nodes=2)
    assert [tl[str(i)]["end_s"] for i in range(3)] == [10.0, 20.0, 30.0]
    # between users, DRF: at 10 s both hold nothing, the first user (u0) goes first
    jobs = [J(i, user=f"u{i % 2}", arrival=float(i), cpu=1.0, gpu=10.0) for i in range(3)]
    tl, _ = _simulate("allox-drf-fifo", jobs, gpus=1, cpu_nodes=2)
    assert [tl[str(i)]["end_s"] for i in range(3)] == [10.0, 30.0, 20.0]


def test_jobs_start_after_their_arrival_group_is_profiled():
    jobs = [J(i, user=f"u{i % 3}", arrival=float(i // 2) * 3, cpu=150.0, gpu=60.0)
            for i in range(6)]
    tl, _ = _simulate("allox-plus", jobs, gpus=2, cpu_nodes=2)
    for j in jobs:
        group = [k.id for k in jobs if k.arrival == j.arrival]
        ends = [tl[f"{g}~{kind}{n}"]["end_s"] for g in group for kind in ("cpu", "gpu")
                for n in (1, 2)]
        assert tl[j.id]["start_s"] >= max(ends)
    # probes run 1 % and 2 % of the time on each kind, whole units: 2, 3 and 1, 2
    assert tl["0~cpu2"]["end_s"] - tl["0~cpu2"]["start_s"] == 3.0


def test_srpt_on_the_simulator_preempts():
    long = J("long", user="u0", arrival=0.0, cpu=1000.0, gpu=100.0)
    short = J("short", user="u1", arrival=10.0, cpu=1000.0, gpu=5.0)
    tl, res = _simulate("allox-srpt", [long, short], gpus=1, cpu_nodes=0, profiling=False)
    assert tl["short"]["end_s"] == 15.0 and tl["long"]["end_s"] == 105.0


@pytest.mark.parametrize("policy", ["allox", "allox-plus", "allox-sjf", "allox-srpt", "allox-drf",
                                    "allox-drf-fifo", "allox-drf-ext", "allox-es"])
def test_every_policy_finishes_a_small_trace(policy):
    rng = np.random.default_rng(1)
    jobs = [J(i, user=f"u{i % 3}", arrival=float(rng.integers(0, 200)),
              cpu=float(rng.integers(20, 300)), gpu=float(rng.integers(5, 80)),
              cpu_est=None, gpu_est=None) for i in range(60)]
    jobs.sort(key=lambda j: j.arrival)
    tl, res = _simulate(policy, jobs, gpus=3, cpu_nodes=3)   # one slot of each kind per user
    ends = [tl[j.id]["end_s"] for j in jobs]
    assert all(e is not None for e in ends)
    assert all(tl[j.id]["end_s"] - tl[j.id]["start_s"] >= min(j.cpu_s, j.gpu_s) - 1e-9
               for j in jobs if policy != "allox-srpt")


def test_a_job_without_its_allox_fields_is_one_line():
    from alloc.sched.allox.sim import FlexProgress, flex_cluster
    from alloc.sim import WorkloadJob, simulate
    jobs = [WorkloadJob("x", 0.0, 1, work=1.0, extra={"user": "u0", "cpu_s": 5.0})]
    with pytest.raises(InputError, match="job .x.: gpu_s: expected a value > 0"):
        simulate(flex_cluster(1, 1), jobs, sizing="allox-sjf", progress=FlexProgress(),
                 order=("fifo", {"preemptive": False}))


def test_a_plain_workload_under_allox_sizing_is_one_line_naming_the_field():
    from alloc import Cluster, Server
    from alloc.sim import WorkloadJob, simulate
    cl = Cluster((Server("s0", cpu=32000, mem=256000, gpus=4),))
    with pytest.raises(InputError, match=r"sizing policy 'allox' at round 1 .*job 'a': user: "
                                         r"expected a value"):
        simulate(cl, [WorkloadJob("a", 0.0, 1, duration_s=10.0)], sizing="allox", round_s=60.0)

"""Tiresias' stacks and Themis on the one simulator: small runs whose
outcome is worked out by hand, and the artifact's figures on the first 120
jobs of the shared trace."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from alloc import Cluster, Server
from alloc.sched import get_policy
from alloc.sched.tiresias.progress import TiresiasProgress
from alloc.sim import WorkloadJob, simulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import tiresias as bench  # noqa: E402

COUNT = ("tiresias", {"packlimit": 1.0})


def two_servers():
    return Cluster(tuple(Server(f"n{i}", 64000, 64000, 4) for i in range(2)))


def jct(res):
    return {k: round(v, 6) for k, v in res.jct().items()}


def test_yarn_cs_blocks_the_queue_and_best_effort_lets_small_jobs_jump():
    jobs = [WorkloadJob("r", 0.0, 2, duration_s=100.0),       # holds 2 GPUs of n0
            WorkloadJob("wide", 1.0, 8, duration_s=50.0),      # needs both servers idle
            WorkloadJob("small", 2.0, 1, duration_s=10.0)]
    yarn = simulate(two_servers(), jobs, order="yarn-cs", placement=("yarn", {"skip": False}),
                    candidates="all")
    assert jct(yarn) == {"r": 100.0, "wide": 149.0, "small": 158.0}
    best = simulate(two_servers(), jobs, order="best-effort", placement=("yarn", {"skip": True}),
                    candidates="all")
    assert jct(best) == {"r": 100.0, "wide": 149.0, "small": 10.0}


def test_tiresias_l_demotes_by_gpu_seconds_and_preempts_the_demoted_job():
    # a 4-GPU job crosses 400 GPU-s after 100 s; at t=150 a 4-GPU newcomer in
    # Q1 preempts it; it resumes when the newcomer is done (no restart cost)
    jobs = [WorkloadJob("big", 0.0, 4, duration_s=1000.0),
            WorkloadJob("other", 0.0, 4, duration_s=2000.0),
            WorkloadJob("new", 150.0, 4, duration_s=60.0)]
    res = simulate(two_servers(), jobs, order=("tiresias-l", {"threshold": 400.0}),
                   placement=COUNT, progress=TiresiasProgress())
    assert jct(res)["new"] == 60.0
    assert res.summary()["preemptions"] == 1
    # with a 30 s restart the preempted job finishes 60 + 30 s late
    slow = simulate(two_servers(), jobs, order=("tiresias-l", {"threshold": 400.0}),
                    placement=COUNT, progress=TiresiasProgress(restart_s=30.0))
    late = {k: slow.jct()[k] - res.jct()[k] for k in res.jct()}
    assert sorted(round(v, 6) for v in late.values()) == [0.0, 0.0, 30.0]


def test_profile_placement_keeps_a_skewed_model_on_one_server():
    jobs = [WorkloadJob("a", 0.0, 3, duration_s=100.0, model="resnet50"),
            WorkloadJob("b", 0.0, 3, duration_s=100.0, model="resnet50"),
            WorkloadJob("vgg", 1.0, 2, duration_s=10.0, model="vgg16")]
    spread = simulate(two_servers(), jobs, order="tiresias-l", placement=COUNT,
                      progress=TiresiasProgress())
    assert jct(spread)["vgg"] == 10.0                       # 1 + 1 GPUs on two servers
    cons = simulate(two_servers(), jobs, order="tiresias-l",
                    placement=("tiresias", {"packlimit": 0.5}),
                    progress=TiresiasProgress(packlimit=0.5, server_gpus=4))
    assert jct(cons)["vgg"] == 109.0                         # waits for a server


def test_themis_runs_leases_and_auctions():
    jobs = [WorkloadJob(f"j{i}", 20.0 * i, 1 + (i % 4), duration_s=300.0 + 100 * i)
            for i in range(12)]
    themis = get_policy("order", "themis").build(lease_s=120.0)
    res = simulate(two_servers(), jobs, order=themis, placement=COUNT,
                   progress=TiresiasProgress())
    s = res.summary()
    assert s["jobs"] == 12 and themis.auctions > 0
    assert all(h["rho_max"] >= h["rho_mean"] > 0 for h in themis.history if h["rho_max"])
    # a job within its lease is never preempted
    for r in res.timeline():
        for a, b, _ in r["runs"][:-1]:
            assert b - a >= 120.0 - 1e-6


# -------------------------------------------- the artifact's figures on 120 jobs
#: The Tiresias artifact's simulator (python2.7, K = 2, 3,200 GPU-s) on the
#: first 120 jobs of t480_yarn_s0.csv, 8 servers x 4 GPUs: average JCT (s).
ARTIFACT_120 = {"yarn-cs": 5471.017, "best-effort": 2183.333, "srtf": 1637.883,
                "srsf": 1509.767, "tiresias-l": 2009.592, "tiresias-g": 2314.492}


@pytest.fixture
def t120(shared_dir, tmp_path):
    src = shared_dir / "data" / "tiresias" / "t480_yarn_s0.csv"
    if not src.is_file():
        pytest.skip("the shared Tiresias trace is absent")
    lines = src.read_text().splitlines()[:121]
    out = tmp_path / "t120.csv"
    out.write_text("\n".join(lines) + "\n")
    return str(out)


@pytest.mark.parametrize("policy, rel", [("yarn-cs", 1e-6), ("srsf", 1e-6),
                                         ("tiresias-l", 0.02), ("tiresias-g", 0.10)])
def test_the_artifacts_figures_on_120_jobs(t120, policy, rel):
    got = bench.run(policy, t120, servers=8, gpus_per_server=4)["avg_jct_s"]
    assert got == pytest.approx(ARTIFACT_120[policy], rel=rel)


def test_bench_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                 "0,1,0,10,vgg19,-5,0\n")
    assert bench.main(["--trace", str(f), "--policy", "srtf"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "row 2: duration" in err
    assert bench.main(["--trace", str(tmp_path / "none.csv")]) == 2


def test_bench_writes_the_fixed_figures(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                 "0,2,0,100,vgg19,100,10\n1,4,10,50,resnet50,50,0\n")
    out = tmp_path / "o.json"
    assert bench.main(["--trace", str(f), "--servers", "1", "--policy", "tiresias-l",
                       "--out", str(out)]) == 0
    import json
    got = json.loads(out.read_text())
    assert {"avg_jct_s", "median_jct_s", "p95_jct_s", "makespan_s", "preemptions",
            "wall_s"} <= set(got)
    assert got["avg_jct_s"] == pytest.approx((100 + 140) / 2)

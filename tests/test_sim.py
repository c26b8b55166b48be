"""Synergy's rounds on the simulator, the synthetic workload, the trace
readers and the configuration form of ``alloc simulate``."""
import json
from pathlib import Path

import pytest

from alloc.errors import InputError
from alloc.sim import SyntheticWorkload
from alloc.sim.cli import build, simulate_main
from alloc.sim.synergy import cluster, legacy_summary, simulate_synergy
from alloc.sim.workload import MODEL_CLASSES, ModelAssigner
from alloc.sim.workloads import read_workload

DATA = Path(__file__).parent / "data"
SMALL = cluster(2)


def jobs_(n=60, rate=12.0, mix="multi", seed=1, cap=6 * 3600.0):
    from dataclasses import replace
    return [replace(j, duration_s=min(j.duration_s, cap))       # keep the test short
            for j in SyntheticWorkload(rate, (40, 40, 20), mix, seed=seed).take(n)]


@pytest.mark.parametrize("allocator", ["proportional", "synergy-greedy", "synergy-tune"])
@pytest.mark.parametrize("order", ["fifo", "las", "srtf", "ftf", "drf", "tetris", "tiresias"])
def test_invariants(allocator, order, monkeypatch):
    """Every round goes through Session.step (checked); jobs start after they
    arrive, finish after they start and never faster than the best speed-up."""
    from alloc.session import Session
    steps = []
    step = Session.step

    def spy(self, **kw):
        r = step(self, **kw)
        steps.append(r)
        return r
    monkeypatch.setattr(Session, "step", spy)
    jobs = jobs_()
    res = simulate_synergy(SMALL, jobs, order=order, allocator=allocator)
    assert len(res.jct()) == len(jobs) and len(steps) == res.summary()["steps"]
    by_id = {j.id: j for j in jobs}
    for row in res.timeline():
        j = by_id[row["id"]]
        assert row["start_s"] >= j.arrival_s and row["end_s"] >= row["start_s"]
        assert row["start_s"] % 300 == 0               # rounds of 300 s
        assert row["jct_s"] >= j.duration_s / 2.94 - 1e-6


def test_deterministic():
    a = simulate_synergy(SMALL, jobs_(seed=7), order="las").timeline()
    b = simulate_synergy(SMALL, jobs_(seed=7), order="las").timeline()
    assert a == b


def test_exact_completion_single_job():
    from alloc.sim import WorkloadJob
    res = simulate_synergy(SMALL, [WorkloadJob("0", 10.0, 1, duration_s=1000.0, model="bert")],
                           allocator="proportional")
    (row,) = res.timeline()
    assert row["start_s"] == 300.0 and row["end_s"] == pytest.approx(1300.0)
    assert row["jct_s"] == pytest.approx(1290.0)


def test_tune_not_slower_than_proportional():
    jobs = jobs_(80, 30, "single")
    mean = lambda r: sum(r.jct().values()) / len(r.jct())  # noqa: E731
    p = simulate_synergy(SMALL, jobs, allocator="proportional")
    t = simulate_synergy(SMALL, jobs, allocator="synergy-tune")
    assert mean(t) <= mean(p)


def test_rounds_re_place_from_scratch_through_the_solver():
    """TUNE re-places every job each round (the session allows moves); the
    relabelling keeps running jobs where they run when nothing changes."""
    res = simulate_synergy(SMALL, jobs_(40, 30, "single"), allocator="synergy-tune")
    s = res.summary()
    assert s["steps"] < s["rounds"] and s["preemptions"] >= 0


def test_opt_in_simulation():
    jobs = jobs_(12, 20, "single", seed=3, cap=3600.0)
    res = simulate_synergy(cluster(1), jobs, allocator="synergy-opt")
    assert len(res.jct()) == 12


def test_workload_law():
    jobs = SyntheticWorkload(10, (20, 70, 10), "multi", seed=0).take(4000)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(jobs, jobs[1:])]
    assert abs(sum(gaps) / len(gaps) - 360) < 30
    frac = lambda n: sum(j.gpus == n for j in jobs) / len(jobs)  # noqa: E731
    assert abs(frac(1) - 0.70) < 0.03 and abs(frac(8) - 0.05) < 0.02
    long = sum(j.duration_s > 60 * 1000 for j in jobs) / len(jobs)
    assert abs(long - 0.2) < 0.03
    image = sum(j.model in MODEL_CLASSES["image"] for j in jobs) / len(jobs)
    assert abs(image - 0.2) < 0.01
    a = ModelAssigner((20, 70, 10))
    first = [a() for _ in range(10)]
    assert sum(m in MODEL_CLASSES["language"] for m in first) == 7


def test_synergy_trace_and_errors(tmp_path):
    w = read_workload(DATA / "sim_trace.csv", "synergy",
                      models=["res18", "bert", "alexnet", "m5", "gnmt"])
    assert [j.id for j in w.jobs] == ["0", "1", "2", "3", "4"] and w.jobs[4].gpus == 8
    res = simulate_synergy(SMALL, w.jobs, allocator="synergy-tune")
    assert len(res.jct()) == 5
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,model,arrival_s,duration_s,gpus\n0,res18,0,10,1\n1,res18,abc,10,1\n")
    with pytest.raises(InputError, match=r"bad.csv: line 3: arrival_s"):
        read_workload(bad, "synergy")
    bad.write_text("job_id,model,arrival_s,duration_s,gpus\n0,nosuch,0,10,1\n")
    with pytest.raises(InputError, match=r"line 2: model"):
        read_workload(bad, "synergy", models=["res18"])


def test_philly_reader():
    jobs = read_workload(DATA / "philly_small.json").jobs
    assert len(jobs) == 3                      # the job without attempts is left out
    assert [j.gpus for j in jobs] == [1, 2, 4]  # sorted by submission; last attempt's GPUs
    assert jobs[0].arrival_s == 0 and jobs[1].arrival_s == 300
    assert jobs[2].duration_s == 3600.0        # two attempts of 30 minutes


BASE = {"cluster": {"servers": 2, "gpus_per_server": 8, "cpu_per_server": 24000,
                    "mem_per_server": 512000},
        "workload": {"jobs_per_hour": 9, "window": [0, 9], "seed": 0},
        "order": "fifo", "allocator": "synergy-tune"}


def with_(path, value):
    doc = json.loads(json.dumps(BASE))
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return doc


@pytest.mark.parametrize("doc,field", [
    (with_(["cluster", "bogus"], 1), "bogus"),
    (with_(["workload", "jobs_per_hour"], -1), "workload.jobs_per_hour"),
    (with_(["workload", "classes"], {"image": ["nosuch"]}), "workload.classes"),
    (with_(["workload", "window"], [5, 1]), "workload.window"),
    (with_(["allocator"], "nosuch"), "allocator"),
    (with_(["order"], "random"), "order"),
    (with_(["order"], "best-fit"), "order"),
    (with_(["cluster", "servers"], 0), "cluster.servers"),
])
def test_bad_config(doc, field):
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        build(doc)


def test_bad_trace_and_wide_job(tmp_path, capsys):
    tr = tmp_path / "t.csv"
    tr.write_text("job_id,model,arrival_s,duration_s,gpus\n0,res18,0,10,64\n")
    doc = with_(["workload", "trace"], "t.csv")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(doc))
    assert simulate_main([str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "line 2: gpus" in err and len(err.strip().splitlines()) == 1
    tr.write_text("job_id,model,arrival_s,duration_s,gpus\n0,res18,0,-5,1\n")
    assert simulate_main([str(cfg)]) == 2
    assert "line 2: duration_s" in capsys.readouterr().err


def test_simulate_main_result(tmp_path):
    cfg = tmp_path / "c.json"
    doc = with_(["workload", "trace"], str(DATA / "sim_trace.csv"))
    cfg.write_text(json.dumps(doc))
    out = tmp_path / "r.json"
    assert simulate_main([str(cfg), "--out", str(out), "--no-progress"]) == 0
    r = json.loads(out.read_text())
    for k in ("jobs_measured", "mean_jct_s", "p50_jct_s", "p99_jct_s", "p999_jct_s",
              "makespan_s", "rounds", "end_time_s", "wall_time_s", "mean_util", "unfinished",
              "censored_mean_jct_s", "stats", "config"):
        assert k in r
    assert r["jobs_measured"] == 5 and 0 < r["mean_util"]["gpu"] <= 1


def test_simulate_messages_name_the_whole_path(tmp_path, capsys):
    cfg = tmp_path / "sub" / "bad.json"
    cfg.parent.mkdir()
    cfg.write_text('{"cluster": {"servers": 0}}')
    assert simulate_main([str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"alloc: {cfg}")
    assert simulate_main([str(tmp_path / "absent.json")]) == 2
    assert "absent.json: no such simulation config" in capsys.readouterr().err


def test_legacy_summary_utilisation_is_time_weighted():
    res = simulate_synergy(SMALL, jobs_(20, 12, "single"), allocator="proportional")
    s = legacy_summary(res)
    util = res.stats["round_util"]
    assert len(util) == res.summary()["rounds"]
    assert all(0 <= u[1] <= 1 + 1e-9 for u in util) and 0 < s["mean_util"]["gpu"] <= 1


def test_a_plain_first_fit_registered_without_migration_keeps_running_jobs():
    """The function behind ``proportional`` re-places from scratch only as
    the registered (migration-declaring) solver; registered again without
    ``migration`` it keeps running jobs where they run (no over-commit when
    the core puts them back)."""
    from alloc import Cluster, Job, Placement, Server, allocate
    from alloc.registry import register, unregister
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100"), Server("s1", 8000, 65536, 0)))
    cur = Placement("j0", (), {"s1": 1000}, {"s1": 16384}, 0.0)
    jobs = [Job("j0", 0, cpu=1000, mem=16384, current=cur), Job("j1", 0, cpu=1000, mem=16384),
            Job("j2", 0, cpu=1000, mem=64000)]
    register("plain-ff", "alloc.solvers.heuristics.greedy:solve_proportional",
             capabilities=["sharing", "locality", "spread"])
    try:
        a = allocate(cl, jobs, solver="plain-ff", max_moves=None, move_cost=0.0)
    finally:
        unregister("plain-ff")
    where = {p.job: set(p.cpu) for p in a.placements}
    assert where["j0"] == {"s1"} and not a.moved
    b = allocate(cl, jobs, solver="proportional", max_moves=None, move_cost=0.0)
    assert {p.job for p in b.placements} == {"j0", "j1", "j2"}


@pytest.mark.parametrize("solver", ["proportional", "synergy-greedy", "synergy-tune"])
def test_repacking_solvers_answer_for_their_running_jobs(solver):
    """They declare ``migration``: under preemption by order with a move
    budget, a running job they keep is in their answer (the core reads one
    left out as stopped and would fill its capacity)."""
    from alloc import Cluster, Job, Placement, Server, allocate
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100"),))
    cur = Placement("j0", (), {"s0": 1000}, {"s0": 16384}, 0.0)
    jobs = [Job("j0", 0, cpu=1000, mem=16384, current=cur)] + [
        Job(f"j{i}", 0, cpu=1000, mem=16384) for i in range(1, 7)]
    a = allocate(cl, jobs, solver=solver, max_moves=1, order=["j0"], preempt="order")
    assert sorted(p.job for p in a.placements) == ["j0", "j1", "j2", "j3"]
    assert not a.moved and not a.preempted

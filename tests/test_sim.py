"""Simulator invariants, trace loaders and the simulate command's input checks."""
import json

import pytest

from alloc.errors import InputError
from alloc.sim import ClusterSpec, SimJob, SyntheticWorkload
from alloc.sim.engine import simulate
from alloc.sim.cli import build, simulate_main
from alloc.sim.traces import load_csv, load_philly
from alloc.sim.workload import ModelAssigner, MODEL_CLASSES
from pathlib import Path

DATA = Path(__file__).parent / "data"
SMALL = ClusterSpec(servers=2, gpus_per_server=8, cpu_per_server=24000, mem_per_server=512000)


def run(allocator="synergy-tune", order="fifo", n=60, rate=12.0, mix="multi", seed=1,
        trace=None, check=True, **kw):
    jobs = SyntheticWorkload(rate, (40, 40, 20), mix, seed=seed).take(n)
    for j in jobs:
        j.work_s = min(j.work_s, 6 * 3600.0)   # keep the test short
    return jobs, simulate(SMALL, jobs, order=order, allocator=allocator, check=check,
                          trace=trace, **kw)


@pytest.mark.parametrize("allocator", ["proportional", "synergy-greedy", "synergy-tune"])
@pytest.mark.parametrize("order", ["fifo", "las", "srtf", "ftf", "drf", "tetris", "tiresias"])
def test_invariants(allocator, order):
    seen = {}

    def trace(t, plan):
        for st, rate, parts, c, m in plan:
            assert st.arrival <= t, "job started before it arrived"
            assert st.finish is None, "finished job still holds resources"
            assert rate > 0
            prev = seen.get(st.id, -1.0)
            assert st.done >= prev
            seen[st.id] = st.done
    jobs, res = run(allocator, order, trace=trace)   # check=True verifies every round
    assert len(res.jct) == len(jobs)
    for j in jobs:
        assert res.start[j.id] >= j.arrival_s
        assert res.finish[j.id] >= res.start[j.id]
        assert res.jct[j.id] >= j.work_s / 2.94 - 1e-6   # never faster than the best speed-up


@pytest.mark.parametrize("order", ["fifo", "srtf", "las", "drf", "tetris"])
def test_incremental_order_is_exact(order, monkeypatch):
    """The incremental order + plan reuse gives the rounds of a full sort,
    also overloaded and with starvation bumps (threshold cut to 1 h)."""
    from alloc.sim import policies
    monkeypatch.setattr(policies, "STARVATION_S", 3600.0)
    jobs = SyntheticWorkload(40, (20, 70, 10), "multi", seed=5).take(50)
    for allocator in ("proportional", "synergy-tune"):
        res = [simulate(SMALL, jobs, order=order, allocator=allocator, incremental=inc)
               for inc in (True, False)]
        assert res[0].jct == res[1].jct and res[0].util == res[1].util
        assert res[0].stats == res[1].stats


def test_deterministic():
    _, a = run(seed=7, check=False)   # rounds are verified in test_invariants
    _, b = run(seed=7, check=False)
    assert a.jct == b.jct and a.util == b.util


def test_exact_completion_single_job():
    res = simulate(SMALL, [SimJob(0, "bert", 10.0, 1000.0, 1)], allocator="proportional",
                   round_s=300)
    assert res.start[0] == 300.0 and res.finish[0] == pytest.approx(1300.0)
    assert res.jct[0] == pytest.approx(1290.0)


def test_tune_not_slower_than_proportional():
    _, p = run("proportional", n=80, rate=30, mix="single", check=False)
    _, t = run("synergy-tune", n=80, rate=30, mix="single", check=False)
    mean = lambda r: sum(r.jct.values()) / len(r.jct)  # noqa: E731
    assert mean(t) <= mean(p)


def test_opt_in_simulation():
    jobs = SyntheticWorkload(20, (50, 30, 20), "single", seed=3).take(12)
    for j in jobs:
        j.work_s = min(j.work_s, 3600.0)
    res = simulate(ClusterSpec(1, 8, 24000, 512000), jobs, allocator="synergy-opt", check=True)
    assert len(res.jct) == 12 and res.stats["opt_rounds"] >= 1


def test_workload_law():
    jobs = SyntheticWorkload(10, (20, 70, 10), "multi", seed=0).take(4000)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(jobs, jobs[1:])]
    assert abs(sum(gaps) / len(gaps) - 360) < 30
    frac = lambda n: sum(j.gpus == n for j in jobs) / len(jobs)  # noqa: E731
    assert abs(frac(1) - 0.70) < 0.03 and abs(frac(8) - 0.05) < 0.02
    long = sum(j.work_s > 60 * 1000 for j in jobs) / len(jobs)
    assert abs(long - 0.2) < 0.03
    image = sum(j.model in MODEL_CLASSES["image"] for j in jobs) / len(jobs)
    assert abs(image - 0.2) < 0.01
    a = ModelAssigner((20, 70, 10))
    first = [a() for _ in range(10)]
    assert sum(m in MODEL_CLASSES["language"] for m in first) == 7


def test_csv_trace_and_errors(tmp_path):
    jobs = load_csv(DATA / "sim_trace.csv", models=["res18", "bert", "alexnet", "m5", "gnmt"])
    assert [j.id for j in jobs] == [0, 1, 2, 3, 4] and jobs[4].gpus == 8
    res = simulate(SMALL, jobs, allocator="synergy-tune", check=True)
    assert len(res.jct) == 5
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,model,arrival_s,duration_s,gpus\n0,res18,0,10,1\n1,res18,abc,10,1\n")
    with pytest.raises(InputError, match=r"bad.csv: line 3: arrival_s"):
        load_csv(bad)
    bad.write_text("job_id,model,arrival_s,duration_s,gpus\n0,nosuch,0,10,1\n")
    with pytest.raises(InputError, match=r"line 2: model"):
        load_csv(bad, models=["res18"])


def test_philly_loader():
    jobs = load_philly(DATA / "philly_small.json")
    assert len(jobs) == 3                      # the job without attempts is dropped
    assert [j.gpus for j in jobs] == [1, 2, 4]  # sorted by submission; last attempt's GPUs
    assert jobs[0].arrival_s == 0 and jobs[1].arrival_s == 300
    assert jobs[2].work_s == 3600.0            # two attempts of 30 minutes


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
    for k in ("mean_jct_s", "p99_jct_s", "makespan_s", "jobs_measured", "wall_time_s"):
        assert k in r
    assert r["jobs_measured"] == 5


def test_simulate_messages_name_the_whole_path(tmp_path, capsys):
    cfg = tmp_path / "sub" / "bad.json"
    cfg.parent.mkdir()
    cfg.write_text('{"cluster": {"servers": 0}}')
    assert simulate_main([str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"alloc: {cfg}")
    assert simulate_main([str(tmp_path / "absent.json")]) == 2
    assert "absent.json: no such simulation config" in capsys.readouterr().err

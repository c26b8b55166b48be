"""``alloc simulate WORKLOAD --servers N --gpus-per-server G --order NAME
--placement NAME ... --out DIR``: the fixed interface, the workload formats
and the bad-input lines (exit 2)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from alloc.cli import main
from alloc.sim.workloads import read_workload

PLAIN = "id,arrival_s,gpus,duration_s,model\na,0,4,3600,res18\nb,60,2,600,\nc,120,8,1200,bert\n"
BASE = ["--servers", "2", "--gpus-per-server", "8", "--order", "las", "--placement", "best-fit"]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def run(capsys, *argv):
    code = main(["simulate", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_fixed_interface_writes_summary_and_timeline(tmp_path, capsys):
    w = write(tmp_path, "w.csv", PLAIN)
    code, out, err = run(capsys, w, *BASE, "--round", "60", "--seed", "3", "--gpu-type", "V100",
                         "--out", tmp_path / "out")
    assert code == 0, err
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    for k in ("avg_jct_s", "p99_jct_s", "makespan_s", "utilisation", "preemptions", "jobs"):
        assert k in s
    assert s["jobs"] == 3 and s["stack"]["order"] == ["las"]
    rows = [json.loads(x) for x in (tmp_path / "out" / "timeline.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["a", "b", "c"]
    assert all({"id", "arrival_s", "start_s", "end_s"} <= set(r) for r in rows)
    assert "avg JCT" in out and "utilisation" in out


def test_plots_with_the_extra(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    w = write(tmp_path, "w.csv", PLAIN)
    code, _, err = run(capsys, w, *BASE, "--plots", "--out", tmp_path / "out")
    assert code == 0, err
    for name in ("utilisation.png", "queue.png", "jct_cdf.png", "gantt.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_parquet_with_pyarrow(tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    w = write(tmp_path, "w.csv", PLAIN)
    code, _, err = run(capsys, w, *BASE, "--parquet", "--out", tmp_path / "out")
    assert code == 0, err
    assert pq.read_table(tmp_path / "out" / "timeline.parquet").num_rows == 3


@pytest.mark.parametrize("argv, text", [
    (["--order", "nope"], "order: unknown order policy 'nope'"),
    (["--order", "best-fit"], "order: 'best-fit' is a placement policy, not an order policy"),
    (["--placement", "las"], "placement: 'las' is an order policy, not a placement policy"),
    (["--mechanism", "fifo"], "mechanism: 'fifo' is an order and shares policy, not a "
                              "mechanism policy"),
    (["--order", "las:bogus=1"], "unknown option 'bogus'"),
])
def test_bad_policies_are_one_line_and_exit_2(tmp_path, capsys, argv, text):
    w = write(tmp_path, "w.csv", PLAIN)
    args = BASE + argv
    code, _, err = run(capsys, w, *args, "--out", tmp_path / "out")
    assert code == 2 and text in err and err.count("\n") == 1


@pytest.mark.parametrize("row, text", [
    ("a,0,4,-5,res18", "w.csv: line 2: duration_s: expected a number > 0, got -5"),
    ("a,0,4,5,resnet9000", "w.csv: line 2: model: unknown model 'resnet9000'"),
    ("a,0,64,5,", "w.csv: line 2: gpus: job 'a' wants 64 GPUs, the cluster has 16"),
    ("a,x,4,5,", "w.csv: line 2: arrival_s: expected a number, got 'x'"),
])
def test_bad_rows_are_one_line_and_exit_2(tmp_path, capsys, row, text):
    w = write(tmp_path, "w.csv", "id,arrival_s,gpus,duration_s,model\n" + row + "\n")
    code, _, err = run(capsys, w, *BASE, "--out", tmp_path / "out")
    assert code == 2 and text in err and err.count("\n") == 1


def test_a_plugin_that_raises_ends_the_run_with_its_name_and_round(tmp_path, capsys):
    from alloc.sched import KeyOrder, policy, register_policy, unregister_policy

    @policy("order", "raises-at-2")
    class Raises(KeyOrder):
        """raises in the second round"""

        def key(self, job, ctx):
            if ctx.round == 2:
                raise RuntimeError("no key today")
            return job.arrival_s
    register_policy(Raises)
    try:
        w = write(tmp_path, "w.csv", PLAIN)
        code, _, err = run(capsys, w, "--servers", "2", "--gpus-per-server", "8", "--order",
                           "raises-at-2", "--placement", "best-fit", "--out", tmp_path / "out")
    finally:
        unregister_policy("order", "raises-at-2")
    assert code == 2 and err.count("\n") == 1
    assert "order policy 'raises-at-2' raised at round 2 (t=60 s): RuntimeError: no key today" \
        in err


def test_an_entry_point_policy_is_usable_with_no_change(tmp_path, capsys, monkeypatch):
    site = tmp_path / "site"
    pkg = site / "widest_first"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A plug-in order."""\n')
    (pkg / "order.py").write_text(
        '"""Widest job first."""\n'
        "from alloc.sched import KeyOrder, policy\n\n\n"
        '@policy("order", "widest-first", summary="most GPUs first")\n'
        "class WidestFirst(KeyOrder):\n"
        "    def __init__(self, preemptive: bool = False):\n"
        "        self.preemptive = preemptive\n\n"
        "    def key(self, job, ctx):\n"
        "        return -job.gpus\n")
    info = site / "widest_first-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: widest-first\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[alloc.policies]\nwidest-first = widest_first.order:WidestFirst\n")
    monkeypatch.syspath_prepend(str(site))
    w = write(tmp_path, "w.csv", "id,arrival_s,gpus,duration_s\nsmall,0,1,100\nbig,0,16,100\n")
    code, _, err = run(capsys, w, "--servers", "2", "--gpus-per-server", "8", "--order",
                       "widest-first", "--placement", "best-fit", "--out", tmp_path / "out")
    assert code == 0, err
    rows = {json.loads(x)["id"]: json.loads(x)
            for x in (tmp_path / "out" / "timeline.jsonl").read_text().splitlines()}
    assert rows["big"]["start_s"] == 0.0 and rows["small"]["start_s"] == 100.0
    code, out, _ = run_policies(capsys)
    assert "order widest-first" in out
    sys.modules.pop("widest_first", None)
    sys.modules.pop("widest_first.order", None)


def run_policies(capsys):
    code = main(["policies"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_configuration_form_still_works(tmp_path, capsys):
    code, _, err = run(capsys, "simulate-small", "--out", tmp_path / "r.json")
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["jobs_measured"] == 100


@pytest.mark.parametrize("name, text, fmt, n", [
    ("t.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
              "0,1,100,50,alexnet,50,10\n1,2,110,80,vgg16,80,5\n", "tiresias", 2),
    ("h.csv", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
              "duration\nj1,u,v,2,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:01:00,"
              "2020-04-01 01:01:00,3600\nj2,u,v,0,8,1,COMPLETED,2020-04-01 00:00:10,,,60\n"
              "j3,u,v,1,8,1,FAILED,2020-04-01 00:00:20,,,60\n", "helios", 1),
    ("s.csv", "job_id,model,arrival_s,gpus,duration_s\n0,res18,0,1,600\n1,bert,5,2,60\n",
     "synergy", 2),
    ("g.trace", "ResNet-18 (batch size 16)\tcmd\tdir\t--num_steps\tFalse\t1000\t1\t1\t-1\t0\n"
                "LM (batch size 20)\tcmd\tdir\t--num_steps\tFalse\t500\t1\t1\t-1\t30\n",
     "gavel", 2),
])
def test_trace_formats(tmp_path, name, text, fmt, n):
    w = read_workload(write(tmp_path, name, text))
    assert w.fmt == fmt and len(w.jobs) == n
    assert w.jobs[0].arrival_s == 0.0
    if fmt == "helios":
        assert w.skipped == {"no GPUs": 1, "state FAILED": 1}
        assert w.jobs[0].duration_s == 3600.0 and w.jobs[0].extra["user"] == "u"
    if fmt == "gavel":
        assert w.jobs[0].model == "('ResNet-18 (batch size 16)', 1)" and w.jobs[0].work == 1000


def test_philly_trace(tmp_path):
    data = Path(__file__).parent / "data" / "philly_small.json"
    w = read_workload(data)
    assert w.fmt == "philly" and w.jobs and w.jobs[0].arrival_s == 0.0
    assert all(j.duration_s > 0 and j.gpus > 0 for j in w.jobs)


# ------------------------------------------------- --cluster and --progress
def _instance(tmp_path, name, cluster):
    from alloc.io import dump_instance
    from alloc.model import Instance
    p = tmp_path / f"{name}.json"
    dump_instance(Instance(name, cluster, ()), p)
    return p


SALUS = ("id,arrival_s,gpus,duration_s,model,persistent_mb,ephemeral_mb\n"
         "long,0,1,600,m1,1000,3000\nshort,30,1,60,m2,500,2000\nmid,40,1,200,m3,800,4000\n")


def test_salus_runs_with_a_cluster_file_and_a_progress_factory(tmp_path, capsys):
    from alloc.sched.salus.sim import salus_cluster
    w = write(tmp_path, "salus.csv", SALUS)
    c = _instance(tmp_path, "salus", salus_cluster())
    code, _, err = run(capsys, w, "--cluster", c, "--order", "fifo:preemptive=false",
                       "--placement", "best-fit", "--mechanism", "salus-srtf",
                       "--progress", "alloc.sched.salus.sim:SalusProgress:policy=srtf",
                       "--out", tmp_path / "out")
    assert code == 0, err
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "out" / "timeline.jsonl")
                                    .read_text().splitlines())}
    # SRTF among the residents: short (60 s) runs at once, then mid, then long
    assert rows["short"]["end_s"] == pytest.approx(90.0)
    assert rows["mid"]["end_s"] == pytest.approx(290.0)
    assert rows["long"]["end_s"] == pytest.approx(860.0)


def test_allox_runs_with_a_cluster_file_and_a_progress_factory(tmp_path, capsys):
    from alloc.sched.allox.jobs import FlexJob
    from alloc.sched.allox.sim import flex_cluster, write_workload_csv
    jobs = [FlexJob("a", "u0", 0.0, cpu_s=10.0, gpu_s=4.0),
            FlexJob("b", "u1", 0.0, cpu_s=6.0, gpu_s=5.0)]
    w = tmp_path / "allox.csv"
    write_workload_csv(jobs, w, profiling=False)
    c = _instance(tmp_path, "flex", flex_cluster(1, 1))
    code, _, err = run(capsys, w, "--cluster", c, "--order", "fifo:preemptive=false",
                       "--placement", "best-fit", "--sizing", "allox-sjf:profiling=false",
                       "--progress", "alloc.sched.allox.sim:FlexProgress",
                       "--out", tmp_path / "out")
    assert code == 0, err
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "out" / "timeline.jsonl")
                                    .read_text().splitlines())}
    # the same run in Python, through the same policy and progress model
    from alloc.sched import get_policy
    from alloc.sched.allox.sim import FlexProgress, workload
    from alloc.sim import simulate
    res = simulate(flex_cluster(1, 1), workload(jobs, False), order=("fifo", {"preemptive": False}),
                   placement="best-fit", sizing=get_policy("sizing", "allox-sjf").build(
                       profiling=False), progress=FlexProgress())
    want = {r["id"]: r["end_s"] for r in res.timeline()}
    assert {k: r["end_s"] for k, r in rows.items()} == want


def test_pop_runs_with_gavel_progress_and_repacking(tmp_path, capsys):
    from alloc.sim.gavel import ThroughputTable
    try:
        table = ThroughputTable.load(types=("v100",))
    except Exception:
        pytest.skip("Gavel's throughputs (the shared data) are absent")
    lines = [f"{table.models[i % 5]}\t\t\t\t\t{4000 + 500 * i}\t1\t1\t\t{300.0 * i}"
             .replace("('", "").replace("', 1)", "") for i in range(8)]
    w = write(tmp_path, "g.trace", "\n".join(lines) + "\n")
    code, out, err = run(capsys, w, "--servers", "2", "--gpus-per-server", "2", "--gpu-type",
                         "v100", "--order", "fifo", "--placement", "best-fit", "--shares",
                         "pop:k=4", "--progress", "gavel", "--round", "360", "--repack",
                         "--out", tmp_path / "out")
    assert code == 0, err
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["jobs"] == 8 and s["unfinished"] == 0 and s["stack"]["shares"] == ["pop"]


@pytest.mark.parametrize("argv, text", [
    (["--progress", "nope"], "--progress: expected one of alone, synergy, gavel, hold or "
                             "module:factory[:KEY=VALUE,...], got 'nope'"),
    (["--progress", "alloc.sim.progress:Nothing"], "--progress alloc.sim.progress:Nothing "
                                                   "cannot be loaded"),
    (["--progress", "alloc.sim.progress:Alone:bogus=1"], "--progress "
     "alloc.sim.progress:Alone raised TypeError"),
    (["--progress", "alloc.sim.progress:Alone:restart_s"], "--progress "
     "alloc.sim.progress:Alone: parameter 'restart_s': expected KEY=VALUE"),
    (["--progress", "alloc.sim.workloads:detect"], "--progress alloc.sim.workloads:detect "
                                                   "raised TypeError"),
    (["--progress", "alloc.sched.salus.sim:salus_cluster"], "--progress "
     "alloc.sched.salus.sim:salus_cluster: expected a progress model"),
    (["--progress", "alone:bogus=1"], "--progress alone:bogus=1: ProgressModel.__init__() got "
                                      "an unexpected keyword argument 'bogus'"),
])
def test_bad_progress_is_one_line_and_exit_2(tmp_path, capsys, argv, text):
    w = write(tmp_path, "w.csv", PLAIN)
    code, _, err = run(capsys, w, *BASE, *argv, "--out", tmp_path / "out")
    assert code == 2 and text in err and err.count("\n") == 1, err


def test_bad_clusters_are_one_line_and_exit_2(tmp_path, capsys):
    w = write(tmp_path, "w.csv", PLAIN)
    pol = ["--order", "las", "--placement", "best-fit", "--out", tmp_path / "out"]
    code, _, err = run(capsys, w, "--cluster", tmp_path / "none.json", *pol)
    assert code == 2 and "none.json: no such instance file" in err and err.count("\n") == 1
    bad = write(tmp_path, "bad.json", '{"format": "alloc.instance/1", "cluster": {}}')
    code, _, err = run(capsys, w, "--cluster", bad, *pol)
    assert code == 2 and "bad.json" in err and err.count("\n") == 1
    code, _, err = run(capsys, w, "--cluster", "tiny-grid", *BASE, "--out", tmp_path / "o")
    assert code == 2 and "give either --cluster or --servers" in err
    code, _, err = run(capsys, w, *pol)
    assert code == 2 and "--servers and --gpus-per-server: expected both (or --cluster" in err


def test_a_mechanism_refusing_the_progress_model_is_one_line(tmp_path, capsys):
    from alloc.sched.salus.sim import salus_cluster
    w = write(tmp_path, "salus.csv", SALUS)
    c = _instance(tmp_path, "salus", salus_cluster())
    code, _, err = run(capsys, w, "--cluster", c, "--order", "fifo", "--placement", "best-fit",
                       "--mechanism", "salus-srtf", "--progress",
                       "alloc.sched.salus.sim:SalusProgress:policy=fair",
                       "--out", tmp_path / "out")
    assert code == 2 and "salus-srtf: the run's progress model must be SalusProgress" in err
    assert err.count("\n") == 1

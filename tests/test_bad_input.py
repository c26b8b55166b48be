"""Bad input never gives a traceback: one line naming the file, the field and
what was expected, exit 2 on the command line; the Python API validates
exactly like the files and raises InputError."""
import json

import pytest

from alloc import Cluster, GpuShare, InputError, Job, Placement, Profile, Server, allocate
from alloc.cli import main

BASE = {
    "format": "alloc.instance/1", "name": "t",
    "cluster": {"servers": [{"id": "s0", "cpu": 24000, "mem": 512000, "gpus": 8,
                             "gpu_type": "V100"}]},
    "jobs": [{"id": "j0", "gpus": 2, "cpu": 6000, "mem": 128000, "model": "res18"}],
}


def run_cli(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def write(tmp_path, doc, name="inst.json"):
    p = tmp_path / name
    if isinstance(doc, bytes):
        p.write_bytes(doc)
    else:
        p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def changed(fn):
    doc = json.loads(json.dumps(BASE))
    fn(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("text, expect", [
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    (changed(lambda d: d["jobs"][0].update(cpu=2 ** 63)), "jobs[0].cpu: expected an integer in 0.."),
    (BASE_TEXT := json.dumps(BASE).replace('"cpu": 6000', '"cpu": 1e400'), "jobs[0].cpu: expected integer"),
    (json.dumps(BASE).replace('"model": "res18"', '"model": "res18", "weight": Infinity'),
     "jobs[0].weight: expected a number in 0..1e+09"),
    (json.dumps(BASE).replace('"model": "res18"', '"model": "res18", "weight": NaN'),
     "jobs[0].weight"),
    (changed(lambda d: d["jobs"][0].update(weight=1e20)), "jobs[0].weight: expected a number in 0..1e+09"),
    (changed(lambda d: d["jobs"][0].update(model="m" * 10000)), "jobs[0].model"),
    (changed(lambda d: d["jobs"][0].update(tenant="ghost")),
     "jobs[0].tenant: unknown tenant 'ghost'; the cluster declares no tenants"),
    (changed(lambda d: d["cluster"]["servers"][0].update(gpus=7, sockets=2)),
     "cluster.servers[0].sockets: 7 GPUs do not split evenly over 2 sockets"),
    (changed(lambda d: d["cluster"]["servers"][0].update(gpus=8, sockets=2, switches_per_socket=3)),
     "cluster.servers[0].switches_per_socket"),
    (changed(lambda d: d.update(format="alloc.allocation/1")),
     "format: expected an alloc.instance/1 file, got format 'alloc.allocation/1'"),
])
def test_bad_instance_file_one_line_exit_2(tmp_path, capsys, text, expect):
    p = write(tmp_path, text)
    code, err = run_cli(["solve", str(p)], capsys)
    assert code == 2 and len(err) == 1, err
    assert str(p) in err[0] and expect in err[0], err


def test_non_utf8_and_bom(tmp_path, capsys):
    p = write(tmp_path, b"\xff\xfe{}")
    code, err = run_cli(["solve", str(p)], capsys)
    assert code == 2 and len(err) == 1 and "cannot read" in err[0]
    p2 = write(tmp_path, b"\xef\xbb\xbf" + json.dumps(BASE).encode(), "bom.json")
    code, _ = run_cli(["solve", str(p2), "--out", str(tmp_path / "a.json")], capsys)
    assert code == 0


@pytest.mark.parametrize("argv, expect", [
    (["--time-limit", "-1"], "time_limit: expected a positive number of seconds, got -1.0"),
    (["--time-limit", "0"], "time_limit: expected a positive number of seconds"),
    (["--solver", "cpsat", "--option", "time_limt=1"],
     "solver 'cpsat': unknown option 'time_limt'; valid options:"),
    (["--solver", "best-fit", "--option", "x=1"], "solver 'best-fit': unknown option 'x'; valid options: (none)"),
    (["--solver", "hived", "--option", "preempt=maybe"], "option 'preempt': expected true or false"),
    (["--solver", "nope"], "unknown solver 'nope'; valid solvers:"),
    (["--objective", "speed"], "unknown objective 'speed'; valid objectives: throughput, gpus, jobs"),
    (["--out", "/nonexistent-dir/x/a.json"], "cannot write"),
    (["--max-moves", "-2"], "max_moves: expected an integer >= 0"),
])
def test_bad_call_one_line_exit_2(tmp_path, capsys, argv, expect):
    p = write(tmp_path, BASE)
    code, err = run_cli(["solve", str(p)] + argv, capsys)
    assert code == 2 and len(err) == 1, err
    assert expect in err[0], err


def test_check_names_the_expected_file_kind(tmp_path, capsys):
    p = write(tmp_path, BASE)
    code, err = run_cli(["check", str(p), str(p)], capsys)
    assert code == 2 and "expected an alloc.allocation/1 file, got format 'alloc.instance/1'" in err[0]


@pytest.mark.parametrize("solver", ["cpsat", "milp", "best-fit", "synergy-opt", "fgd", "hived"])
def test_unknown_option_is_refused_by_every_solver(solver):
    cl = Cluster((Server("s0", 24000, 512000, 8, "V100"),))
    with pytest.raises(ValueError, match="unknown option 'time_limt'"):
        allocate(cl, [Job("a", gpus=1, cpu=1000, mem=1000)], solver=solver, time_limt=1)


CL = Cluster((Server("s0", 24000, 512000, 8, "V100"), Server("s1", 24000, 512000, 8, "V100")))


@pytest.mark.parametrize("jobs, expect", [
    ([Job("a", gpus=1, gpu_types="V100")], "jobs[0].gpu_types: expected a tuple of GPU type names"),
    ([Job("a", gpus=1, model="res18x")], "jobs[0].model: unknown model 'res18x'"),
    ([Job("a", gpus="1")], "jobs[0].gpus: expected an integer"),
    ([Job("a", gpus=1, weight=float("inf"))], "jobs[0].weight"),
    ([Job("a", gpus=1, tenant="t")], "jobs[0].tenant: unknown tenant 't'"),
    ([Job("a", gpus=1, profile=Profile("p", span={"server": 1.5}))],
     "jobs[0].profile.span.server: expected a value <= 1"),
    ([Job("a", gpus=1, current=Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 0}, {"s0": 0})),
      Job("b", gpus=1, current=Placement("b", (GpuShare("s0/gpu0", 1000),), {"s0": 0}, {"s0": 0}))],
     "running jobs' current placements overlap: GPU s0/gpu0: 2000 milli"),
    ([Job("a", gpus=2, current=Placement("a", (GpuShare("s0/gpu0", 1000),), {"s0": 0}, {"s0": 0}))],
     "jobs[0].current: got 1 GPUs, needs 2"),
    ([Job("a", gpus=1, current=Placement("a", (GpuShare("s9/gpu0", 1000),)))],
     "jobs[0].current: unknown GPU 's9/gpu0'"),
])
@pytest.mark.parametrize("solver", ["best-fit", "hived"])
def test_api_validates_like_files(jobs, expect, solver):
    with pytest.raises(InputError) as ei:
        allocate(CL, jobs, solver=solver)
    assert expect in str(ei.value) and "\n" not in str(ei.value)


def test_api_resolves_model_names_like_files():
    """``Job(model="res18")`` without a profile is valued with the res18 profile,
    not a flat 1.0 (the file loader resolves the name the same way)."""
    lean = Job("a", gpus=1, cpu=1000, mem=16384, model="res18")
    a = allocate(CL, [lean], solver="best-fit")
    flat = allocate(CL, [Job("a", gpus=1, cpu=1000, mem=16384)], solver="best-fit")
    assert flat.value == 1.0 and a.value != 1.0

"""No silent traps: `alloc validate` lists every problem (exit 2) or says
what a valid file needs (exit 0); requests below a profile's grid and GPU
types a profile does not know are warned about in Python (InputWarning) and
on the command line (one stderr line each)."""
import json
import warnings
from pathlib import Path

import pytest

import alloc
from alloc import Cluster, InputWarning, Job, Server, allocate
from alloc.cli import main
from alloc.validate import model_warnings, resolve_models

V100 = Cluster((Server("s0", cpu=32000, mem=512000, gpus=8, gpu_type="V100"),))
MIXED = Cluster((Server("s0", cpu=32000, mem=512000, gpus=8, gpu_type="V100"),
                 Server("s1", cpu=32000, mem=512000, gpus=4, gpu_type="T4")))
#: res18's grid starts at 1000 milli-CPU and 64000 MiB per GPU
LEAN = Job("lean", gpus=2, cpu=4000, mem=32000, model="res18")
FINE = Job("fine", gpus=2, cpu=6000, mem=200000, model="res18")


def write(tmp_path, doc, name="i.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_below_the_grid_warns_and_says_why():
    with pytest.warns(InputWarning, match=r"job 'lean': 2000 milli-CPU and 16000 MiB per GPU is "
                                          r"below every point of model 'res18''s grid"):
        a = allocate(V100, [LEAN, FINE], solver="best-fit")
    assert next(p for p in a.placements if p.job == "lean").throughput == 0


def test_unknown_gpu_type_warns_once_per_model_and_type():
    jobs, _ = resolve_models(tuple(Job(f"j{i}", gpus=1, cpu=4000, mem=100000, model="res18")
                                   for i in range(5)))
    msgs = model_warnings(MIXED, jobs)
    assert msgs == ["jobs 'j0', 'j1', 'j2' and 2 more: model 'res18' gives no speed for GPU "
                    "type 'T4' (it gives K80, P100, V100), so there the job counts at speed 1.0"]
    pinned, _ = resolve_models((Job("v", gpus=1, cpu=4000, mem=100000, model="res18",
                                    gpu_types=("V100",)),))
    assert model_warnings(MIXED, pinned) == []        # it may not use the T4s


def test_valid_input_is_silent():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = allocate(V100, [FINE, Job("plain", gpus=1, cpu=1, mem=1)], solver="best-fit")
        alloc.Session(V100, jobs=[FINE], solver="best-fit").step()
    assert len(a.placements) == 2
    assert not [w for w in caught if issubclass(w.category, InputWarning)]


def test_session_warns_for_a_submitted_job():
    s = alloc.Session(V100, solver="best-fit")
    with pytest.warns(InputWarning, match="below every point"):
        s.submit(LEAN)


def test_cli_prints_one_warning_line_each(tmp_path, capsys):
    doc = {"format": "alloc.instance/1",
           "cluster": {"servers": [{"id": "s0", "cpu": 32000, "mem": 512000, "gpus": 8,
                                    "gpu_type": "V100"},
                                   {"id": "s1", "cpu": 32000, "mem": 512000, "gpus": 4,
                                    "gpu_type": "T4"}]},
           "jobs": [{"id": "lean", "gpus": 2, "cpu": 4000, "mem": 32000, "model": "res18"},
                    {"id": "ok", "gpus": 1, "cpu": 4000, "mem": 100000, "model": "res18"}]}
    path = write(tmp_path, doc)
    assert main(["solve", str(path), "--out", str(tmp_path / "a.json")]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "warning" in x]
    assert len(lines) == 2                            # below the grid; T4 unknown to res18
    assert all(x.startswith(f"alloc: warning: {path}: ") for x in lines)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.count("alloc: warning:") == 2 and "0 problems; 2 jobs (0 running)" in err


def test_validate_lists_every_problem(tmp_path, capsys):
    schema_bad = {"format": "alloc.instance/1",
                  "cluster": {"servers": [{"id": "s0", "cpu": 0, "mem": 1, "gpu": 4}]},
                  "jobs": [{"id": "a", "gpus": -1}, {"id": "b", "gpu_milli": 2000},
                           {"name": "c"}]}
    p = write(tmp_path, schema_bad, "schema.json")
    assert main(["validate", str(p)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and all(x.startswith(f"{p}: ") for x in out)
    for what in ("servers[0].cpu", "unknown key 'gpu'", "jobs[0].gpus", "jobs[1].gpu_milli",
                 "jobs[2]: unknown key 'name'", "jobs[2]: missing field 'id'"):
        assert any(what in x for x in out), what
    rules_bad = {"format": "alloc.instance/1",
                 "cluster": {"servers": [{"id": "s0", "cpu": 8, "mem": 8, "gpus": 4}]},
                 "jobs": [{"id": "a", "gpus": 2, "gpu_milli": 500}, {"id": "a"},
                          {"id": "b", "gpus": 1, "locality": "socket"},
                          {"id": "c", "tenant": "nobody"}]}
    q = write(tmp_path, rules_bad, "rules.json")
    good = tmp_path.parent / "good.json"
    good.write_text((Path(alloc.__file__).parents[1] / "instances" / "tiny-share.json").read_text())
    assert main(["validate", str(q), str(good)]) == 2
    cap = capsys.readouterr()
    out = cap.out.splitlines()
    for what in ("jobs[0].gpu_milli", "duplicate job id 'a'", "jobs[2].locality",
                 "jobs[3].tenant: unknown tenant 'nobody'"):
        assert any(what in x for x in out), what
    assert f"{q}: 4 problems" in cap.err and f"{good}: 0 problems; " in cap.err
    assert "needs sharing" in cap.err and "solvers that take it: " in cap.err


def test_validate_a_missing_or_foreign_file(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "none.json")]) == 2
    assert "no such instance file" in capsys.readouterr().out
    p = write(tmp_path, {"format": "alloc.allocation/1"})
    assert main(["validate", str(p)]) == 2
    assert "format: expected an alloc.instance/1 file" in capsys.readouterr().out


def test_a_grid_without_a_feasible_point():
    prof = alloc.Profile("empty", cpu_per_gpu=(500,), mem_per_gpu=(8192,), tput=((None,),))
    job = Job("j", gpus=1, cpu=4000, mem=100000, profile=prof)
    (msg,) = model_warnings(V100, [job])
    assert "model 'empty''s grid (it has no point of positive speed)" in msg

"""The command line: outputs, exit codes, one-line errors."""
import json
import subprocess
import sys

import pytest

from alloc.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "alloc.cli", *args], capture_output=True, text=True)


def test_solve_then_check(tmp_path, instances_dir, capsys):
    out = tmp_path / "a.json"
    assert main(["solve", str(instances_dir / "tiny-grid.json"), "--solver", "proportional",
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["format"] == "alloc.allocation/1" and doc["status"] == "feasible"
    assert main(["check", str(instances_dir / "tiny-grid.json"), str(out)]) == 0


def test_check_reports_violations(tmp_path, instances_dir, capsys):
    inst = instances_dir / "tiny-share.json"
    out = tmp_path / "a.json"
    assert main(["solve", str(inst), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    # put every placed job on the same GPU: over-commits it
    for p in doc["placements"]:
        for g in p["gpus"]:
            g["gpu"] = "s00/gpu0"
    out.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["check", str(inst), str(out)]) == 1
    assert "GPU s00/gpu0" in capsys.readouterr().out


def test_bad_input_exit_2_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "alloc.instance/1", "cluster": {"servers": []}, "jobs": [], "x": 1}')
    r = run("solve", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.json" in lines[0] and "Traceback" not in r.stderr


def test_unknown_solver_exit_2(instances_dir):
    r = run("solve", str(instances_dir / "tiny-grid.json"), "--solver", "nope")
    assert r.returncode == 2 and "valid solvers:" in r.stderr


def test_unknown_option_exit_2():
    r = run("solve")
    assert r.returncode == 2


def test_solvers_lists_registry(capsys):
    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "proportional" in out and "best-fit" in out


def test_bench_writes_json_lines(tmp_path, instances_dir, capsys):
    out = tmp_path / "runs.jsonl"
    assert main(["bench", str(instances_dir / "tiny-grid.json"), "--solvers",
                 "proportional,best-fit", "--out", str(out), "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["solver"] for r in rows] == ["proportional", "best-fit"]
    assert "gap%" in capsys.readouterr().err


def test_version_and_solvers_json(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["--version"])
    assert ei.value.code == 0 and capsys.readouterr().out.startswith("alloc ")
    assert main(["solvers", "--json"]) == 0
    listing = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert {"cpsat", "best-fit", "hived", "fgd"} <= set(listing)
    opts = {o["name"]: o for o in listing["hived"]["options"]}
    assert opts["tenancy_preempt"]["type"] == "bool" and opts["tenancy_preempt"]["default"] is True
    assert opts["preempt"]["default"] is None and "deprecated" in opts["preempt"]["help"]
    assert all(o["help"] for d in listing.values() for o in d["options"])


def test_option_flag_passes_declared_types(tmp_path, instances_dir, capsys):
    out = tmp_path / "a.json"
    assert main(["solve", str(instances_dir / "tiny-grid.json"), "--solver", "synergy-tune",
                 "--option", "sort_by_gpus=false", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["solver"] == "synergy-tune"


def test_every_flag_has_a_help_line_with_its_default():
    for cmd in ("solve", "bench", "check", "solvers"):
        r = run(cmd, "--help")
        assert r.returncode == 0
        for line in r.stdout.split("options:")[1].split("\n  -")[1:]:
            flag = line.split()[0]
            if flag.startswith("h,") or flag in ("-help",):
                continue
            assert len(" ".join(line.split()[1:])) > 3, (cmd, line)


def test_unplaceable_job_warns_one_line(tmp_path, capsys):
    doc = {"format": "alloc.instance/1", "cluster": {"servers": [
        {"id": "s0", "cpu": 8000, "mem": 64000, "gpus": 4, "gpu_type": "V100"}]},
        "jobs": [{"id": "wide", "gpus": 8, "cpu": 1, "mem": 1, "locality": "server"},
                 {"id": "h100", "gpus": 1, "cpu": 1, "mem": 1, "gpu_types": ["H100"]},
                 {"id": "ok", "gpus": 1, "cpu": 1, "mem": 1}]}
    p = tmp_path / "i.json"
    p.write_text(json.dumps(doc))
    assert main(["solve", str(p), "--out", str(tmp_path / "a.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    warn = [x for x in err if "warning" in x]
    assert len(warn) == 2 and "'wide'" in warn[0] and "'h100'" in warn[1]
    a = json.loads((tmp_path / "a.json").read_text())
    assert a["unplaced"] == ["wide", "h100"] and set(a["reasons"]) == {"wide", "h100"}
    assert main(["solve", str(p), "--strict"]) == 2

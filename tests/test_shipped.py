"""The data a wheel carries, shipped names, and the command line a newcomer meets
first: `--help`, `check`'s summary, the sweep's default output, plain numbers."""
import fnmatch
import json
import re
import tomllib
from pathlib import Path

import pytest

import alloc
from alloc.cli import main

ROOT = Path(__file__).resolve().parents[1]
PKG = Path(alloc.__file__).resolve().parent
KINDS = ("models", "instances", "examples")


def data_dir(kind):
    from alloc.shipped import data_dir
    return data_dir(kind)


def names(kind):
    from alloc.shipped import names
    return names(kind)


def test_shipped_data_lives_inside_the_package():
    from alloc.profiles import models_dir
    from alloc.bench import shipped_instances_dir
    for d in (models_dir(), shipped_instances_dir(), *(data_dir(k) for k in KINDS)):
        assert d.resolve().is_relative_to(PKG), d
    assert len(names("models")) == 12 and "tiny-grid" in names("instances")
    assert {"simulate-small", "shares-small", "sweep-small"} <= set(names("examples"))


def test_the_wheel_declares_every_shipped_file():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["alloc"]
    files = [p.relative_to(PKG).as_posix() for k in KINDS for p in data_dir(k).iterdir()]
    missing = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert files and not missing, missing


def test_the_checkout_links_its_top_level_folders_to_the_package():
    assert (ROOT / "models").resolve() == data_dir("models").resolve()
    assert (ROOT / "instances").resolve() == data_dir("instances").resolve()


def test_models_env_still_wins(tmp_path, monkeypatch):
    from alloc.profiles import available_models, models_dir
    (tmp_path / "mine.json").write_text((data_dir("models") / "res18.json").read_text())
    monkeypatch.setenv("ALLOC_MODELS", str(tmp_path))
    assert models_dir() == tmp_path and available_models() == ["mine"]


def test_shipped_instances_by_name_and_files_first(tmp_path, monkeypatch):
    from alloc import load_instance
    assert load_instance("tiny-grid").name == "tiny-grid"
    assert load_instance("tiny-grid.json").name == "tiny-grid"
    monkeypatch.chdir(tmp_path)                 # an existing file wins over the shipped name
    doc = json.loads((data_dir("instances") / "tiny-types.json").read_text())
    Path("tiny-grid.json").write_text(json.dumps(doc))
    assert load_instance("tiny-grid.json").name == "tiny-types"
    from alloc.shipped import resolve
    assert resolve("nope", "instances") == Path("nope")
    with pytest.raises(alloc.InputError, match="no such instance file .*tiny-grid"):
        load_instance("nope.json")


@pytest.mark.parametrize("argv", [["simulate", "simulate-small"],
                                  ["shares", "shares-small", "--policy", "max-min"],
                                  ["solve", "tiny-share"]])
def test_shipped_examples_run_by_name(argv, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main([*argv, "--out", str(out)]) == 0
    assert json.loads(out.read_text())


def test_help_gives_every_command_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for cmd in ("solve", "check", "solvers", "bench", "simulate", "shares", "sweep", "serve"):
        line = next(l for l in text.splitlines() if l.strip().startswith(cmd + " "))
        assert "--help" not in line and len(line.split(None, 1)[1]) > 20, line


def test_check_against_the_wrong_instance_summarises(tmp_path, capsys):
    out = tmp_path / "a.json"
    inst = str(ROOT / "instances" / "tiny-grid.json")
    assert main(["solve", str(ROOT / "instances" / "synergy-16x8.json"), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["check", inst, str(out)]) == 1
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert len(lines) <= 6 and "more (--all" in lines[-1]
    assert cap.err.count("\n") == 1 and "made for instance 'synergy-16x8'" in cap.err
    assert main(["check", inst, str(out), "--all"]) == 1
    assert len(capsys.readouterr().out.splitlines()) > 100


def test_sweep_default_output_name_is_not_doubled():
    from alloc.sweep.cli import default_out
    assert default_out("sweep-small.json") == "sweep-small.jsonl"
    assert default_out("x/openb.json") == "sweep-openb.jsonl"


def _floats(v):
    if isinstance(v, float):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _floats(x)
    elif isinstance(v, list):
        for x in v:
            yield from _floats(x)


def test_json_outputs_carry_no_float_noise(tmp_path):
    out = tmp_path / "a.json"
    # cpsat proves these optimal; their sums show last-bit noise unless cleaned
    for name in ("tiny-types", "synergy-16x8"):
        assert main(["solve", str(ROOT / "instances" / f"{name}.json"), "--solver", "cpsat",
                     "--time-limit", "20",
                     "--out", str(out)]) == 0
        doc = json.loads(out.read_text())
        assert doc["gap"] == 0.0 or doc["gap"] > 1e-12
        noisy = [x for x in _floats(doc) if re.search(r"9{6,}|0{6,}[1-9]", repr(x))]
        assert not noisy, noisy[:5]


def test_gap_of_rounding_only_is_zero():
    from alloc.model import Allocation, Status
    a = Allocation(status=Status.OPTIMAL, value=141.20999999999998, bound=141.21)
    assert a.gap == 0.0


def test_alloc_solvers_stays_the_registry_function():
    import alloc.solvers.heuristics  # noqa: F401  (binds the subpackage's name)
    from alloc import solvers
    assert callable(solvers) and "best-fit" in solvers()


def test_bench_table_says_why_best_fit_scores_low():
    from alloc.bench import table
    rows = [{"instance": "synergy-16x8", "solver": s, "status": "feasible", "value": v,
             "objective": "throughput"} for s, v in (("best-fit", 30.0), ("cpsat", 141.21))]
    text = table(rows)
    assert "best-fit" in text.split("note:")[1] and "ignore the objective" in text
    assert "note:" not in table(rows[1:])

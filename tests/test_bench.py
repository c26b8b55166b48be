"""alloc bench compares fairly: refused rows with the reason (the bench goes
on), seeds, repeats and a warm-up, median and spread, one row schema shared
with alloc sweep, a bound only where it bounds the instance, the resize
column, and `bench --help` pointing to `alloc sweep`."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import alloc
from alloc import bench, registry
from alloc.cli import main
from alloc.schema import schema_problems
from alloc.sweep import build_runs, config_from_dict, run_sweep
from alloc.sweep import worker
from alloc.sweep.executors import SerialExecutor

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "instances" / "tiny-grid.json"
TENANCY = ROOT / "instances" / "tenancy_small.json"


@pytest.fixture
def counting(monkeypatch):
    """A registered solver that records each call (best fit inside)."""
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    monkeypatch.setattr(worker, "_WARM", {})
    calls = []
    best_fit = alloc.get_solver("best-fit")

    def solve(problem, *, deadline, seed, **options):
        calls.append(problem.name)
        return best_fit.solve(problem, deadline=deadline, seed=seed)
    alloc.register("counting", solve, capabilities=sorted(best_fit.capabilities))
    return calls


def test_refused_rows_and_the_bench_goes_on(capsys):
    rows = bench.run([TENANCY, TINY], ["best-fit", "drf"], time_limit=5, progress=False)
    by = {(r["instance_name"], r["solver"]): r for r in rows}
    refused = by[("tenancy_small", "best-fit")]
    assert refused["status"] == "refused" and refused["error"] is None
    assert "does not support tenancy" in refused["reason"] and "drf" in refused["reason"]
    assert refused["value"] is None and refused["wall_s"] is None
    assert by[("tiny-grid", "best-fit")]["status"] == "feasible"
    assert by[("tenancy_small", "drf")]["value"] > 0
    text = bench.table(rows)
    assert "refused" in text and "tenancy_small / best-fit: solver 'best-fit' does not" in text
    # the command line exits 0 and prints the reason
    assert main(["bench", str(TENANCY), "--solvers", "best-fit,drf", "--no-progress",
                 "--time-limit", "5"]) == 0
    err = capsys.readouterr().err
    assert "refused" in err and "does not support tenancy" in err
    # nothing ran at all: exit 3
    assert main(["bench", str(TENANCY), "--solvers", "best-fit", "--no-progress"]) == 3


def test_seeds_repeats_and_warmup(counting):
    rows = bench.run([TINY], ["counting"], seeds=[3, 5], repeats=2, warmup=2, progress=False)
    assert [(r["seed"], r["repeat"]) for r in rows] == [(3, 0), (3, 1), (5, 0), (5, 1)]
    assert len({r["key"] for r in rows}) == 4 and all(r["warmup"] == 2 for r in rows)
    assert len(counting) == 2 + 4                      # two untimed calls, then four timed
    bench.run([TINY], ["counting"], progress=False)
    assert len(counting) == 2 + 4 + 1                  # warm already in this process


def test_a_refusal_does_not_use_up_the_warmup(counting):
    rows = bench.run([TENANCY, TINY], ["counting"], warmup=1, progress=False)
    assert [r["status"] for r in rows] == ["refused", "feasible"]
    assert counting == ["tiny-grid", "tiny-grid"]      # warmed up on the instance it takes


def test_every_call_gets_a_fresh_cluster(counting, monkeypatch):
    seen = []
    real = worker._call
    monkeypatch.setattr(worker, "_call", lambda inst, p: seen.append(
        id(inst.cluster)) or real(inst, p))
    clusters = []
    orig = alloc.get_solver("counting").function

    def spy(problem, **kw):
        clusters.append(problem.cluster)
        return orig(problem, **kw)
    alloc.register("counting", spy, replace=True)
    bench.run([TINY], ["counting"], repeats=3, warmup=1, progress=False)
    assert len(clusters) == 4 and len({id(c) for c in clusters}) == 4
    assert len(set(seen)) == 1                         # one loaded instance, copied per call


def test_summary_median_and_spread():
    rows = [{"instance_name": "i", "instance": "i.json", "solver": "s", "status": "feasible",
             "value": v, "bound": b, "gap": None, "wall_s": t, "resizes": True, "error": None}
            for v, b, t in ((3.0, 9.0, 0.5), (1.0, 8.0, 0.1), (2.0, None, 0.3))]
    rows.append({**rows[0], "status": "error", "error": "SolverError: boom", "value": None})
    (g,) = bench.summary(rows)
    assert (g["value"], g["spread"], g["bound"]) == (2.0, 2.0, 8.0)
    assert (g["seconds"], g["min_s"], g["max_s"]) == (0.3, 0.1, 0.5)
    assert g["runs"] == 4 and g["status"] == "feasible 3, error 1" and "boom" in g["reason"]
    assert "yes" in bench.table(rows).splitlines()[2]


def test_rows_are_the_sweeps_rows():
    """The same grid point gives the same key and the same fields in both."""
    rows = bench.run([TINY], ["best-fit", "synergy-opt", "cpsat"], time_limit=5,
                     progress=False)
    cfg = config_from_dict({"format": "alloc.sweep/1", "allocation": {
        "instances": [str(TINY)], "solvers": ["best-fit", "synergy-opt", "cpsat"],
        "time_limits": [5]}})
    swept = list(SerialExecutor().map(build_runs(cfg)))
    assert [r["key"] for r in rows] == [r["key"] for r in swept]
    assert [sorted(r) for r in rows] == [sorted(r) for r in swept]
    assert not [p for r in rows + swept for p in schema_problems(r, "row")]
    assert all("lp_bound" not in r for r in rows)
    for r in rows:
        assert r["bound"] is None or r["bound"] >= r["value"] - 1e-6
    opt = next(r for r in rows if r["solver"] == "synergy-opt")
    # a bound proved only for a restricted problem is not a bound of the instance
    assert opt["bound"] is None and opt["restriction"]
    cp = next(r for r in rows if r["solver"] == "cpsat")
    assert cp["status"] == "optimal" and cp["bound"] == pytest.approx(cp["value"])
    assert cp["resizes"] and not next(r for r in rows if r["solver"] == "best-fit")["resizes"]


def test_errors_are_rows_of_the_schema(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))

    def broken(problem, *, deadline, seed, **options):
        raise alloc.SolverError("boom")
    alloc.register("broken", broken)
    cfg = config_from_dict({"format": "alloc.sweep/1", "allocation": {
        "instances": [str(TINY)], "solvers": ["broken"]}})
    (row,) = run_sweep(cfg, tmp_path / "r.jsonl", executor=SerialExecutor()).rows
    assert row["status"] == "error" and row["error_kind"] == "solver" and "boom" in row["error"]
    assert not schema_problems(row, "row")


def test_bench_help_mentions_sweep_and_the_row_page():
    r = subprocess.run([sys.executable, "-m", "alloc", "bench", "--help"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "alloc sweep CONFIG" in text and "bench-rows.md" in text
    for flag in ("--seeds", "--repeats", "--warmup"):
        assert flag in text


def test_bad_bench_input_is_one_line(tmp_path, capsys):
    assert main(["bench", str(TINY), "--solvers", "nope", "--no-progress"]) == 2
    assert "--solvers: unknown solver 'nope'" in capsys.readouterr().err
    assert main(["bench", str(TINY), "--seeds", "3-1", "--no-progress"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert main(["bench", str(TINY), "--repeats", "0", "--no-progress"]) == 2
    assert "repeats >= 1" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "alloc.instance/1", "cluster": {"servers": []},
                               "jobs": []}))
    assert main(["bench", str(bad), "--no-progress"]) == 2
    assert "bad.json: cluster.servers" in capsys.readouterr().err

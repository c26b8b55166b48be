"""alloc sweep: config validation, the run grid, pool and Ray executors giving
the same rows, resume, JSON lines and Parquet, summary, exit codes."""
import json
import os
import sys
from pathlib import Path

import pytest

from alloc.cli import main
from alloc.sweep import build_runs, load_config, run_sweep
from alloc.sweep.executors import PoolExecutor, RayExecutor
from alloc.sweep.store import pyarrow_available, read_rows
from alloc.sweep.summary import mean_ci, summarize, table

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
#: Columns that differ between two executions of the same run.
VOLATILE = {"wall_s", "run_s", "peak_rss_mib", "cpu_s"}

NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n{i:02d},64000,262144,{g},{t}\n" for i, (g, t) in enumerate([(4, "T4"), (8, "G2")] * 8))
PODS_CSV = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
    f"p{i:02d},{2000 + 500 * (i % 3)},4096,{(i % 4 != 0) * (1 + (i % 7 == 1))},"
    f"{1000 if i % 7 == 1 else 250 + 100 * (i % 5)}\n" for i in range(24))


def write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def small(tmp_path):
    """A sweep with every kind: 2 tiny instances + a generated one x 2 cheap
    solvers x 2 seeds, 2 small simulations x 2 seeds, tiny openb x 2 x 2."""
    (tmp_path / "nodes.csv").write_text(NODES_CSV)
    (tmp_path / "openb_pod_list_toy.csv").write_text(PODS_CSV)
    sim = {"cluster": {"servers": 1, "gpus_per_server": 8, "cpu_per_server": 24000,
                       "mem_per_server": 512000},
           "workload": {"jobs_per_hour": 4, "window": [0, 19]}, "allocator": "proportional"}
    doc = {"format": "alloc.sweep/1", "name": "small", "seeds": [0, 1],
           "allocation": {"instances": [str(INSTANCES / "tiny-grid.json"),
                                        str(INSTANCES / "tiny-share.json"),
                                        {"generator": "synergy",
                                         "params": {"servers": 2, "jobs": 12}}],
                          "solvers": ["proportional", "best-fit"], "time_limits": [5]},
           "simulation": {"configs": [sim], "vary": {"allocator": ["proportional",
                                                                    "synergy-tune"]}},
           "openb": {"workloads": ["toy"], "policies": ["best-fit", "fgd"],
                     "data_dir": ".", "nodes": "nodes.csv", "seeds": "42-43"}}
    return write(tmp_path / "small.json", doc)


def stable(rows):
    return {r["key"]: {k: v for k, v in r.items() if k not in VOLATILE} for r in rows}


def test_grid_and_keys(small):
    cfg = load_config(small)
    runs = build_runs(cfg)
    kinds = [r.kind for r in runs]
    assert kinds.count("allocation") == 3 * 2 * 2
    assert kinds.count("simulation") == 2 * 2 and kinds.count("openb") == 2 * 2
    assert len({r.key for r in runs}) == len(runs)
    assert [r.key for r in build_runs(load_config(small))] == [r.key for r in runs]


def test_pool_run_jsonl_and_resume(small, tmp_path):
    cfg = load_config(small)
    out = tmp_path / "runs.jsonl"
    res = run_sweep(cfg, out, executor=PoolExecutor(2))
    assert res.ran == len(res.rows) == 20 and res.skipped == 0 and not res.failed
    lines = out.read_text().splitlines()
    assert len(lines) == 20
    rows = [json.loads(x) for x in lines]
    alloc = [r for r in rows if r["kind"] == "allocation"]
    for r in alloc:
        assert r["error"] is None and r["status"] == "feasible" and r["placed"] <= r["jobs"]
        assert r["time_limit"] == 5 and r["seed"] in (0, 1) and r["peak_rss_mib"] > 0
        assert r["wall_s"] >= 0 and r["value"] > 0
    gen = [r for r in alloc if r["instance"].startswith("synergy(")]
    assert {r["generator_seed"] for r in gen} == {0, 1} and gen[0]["jobs"] == 12
    sims = [r for r in rows if r["kind"] == "simulation"]
    assert all(r["jobs_measured"] == 20 and r["mean_jct_h"] > 0 for r in sims)
    ob = [r for r in rows if r["kind"] == "openb"]
    assert all(len(r["alloc_curve"]) == 131 and 0 < r["alloc_100"] <= 100 for r in ob)
    # every row of every kind follows the documented schema (docs/bench-rows.md)
    from alloc.schema import schema_problems
    assert not [p for r in rows for p in schema_problems(r, "row")]
    # resume: nothing left to do, nothing appended
    again = run_sweep(cfg, out, executor=PoolExecutor(2))
    assert again.ran == 0 and again.skipped == 20
    assert out.read_text().splitlines() == lines
    # an interrupted sweep: two rows lost, the last line cut short
    out.write_text("\n".join(lines[:18]) + "\n" + lines[18][:25])
    third = run_sweep(cfg, out, executor=PoolExecutor(1))
    assert third.ran == 2
    assert stable(read_rows(out)) == stable(rows)


def test_ray_gives_the_pool_results(small, tmp_path, monkeypatch):
    """The pool and Ray give the same rows; an installed plug-in solver and a
    solver registered here as module:function run in Ray tasks too."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'alloc[ray]')")
    from plugin_dist import ENTRY, NAME, make_site
    from alloc import registry
    site = make_site(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{ROOT}")
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))  # undone after the test
    registry.register("ffr-spec", ENTRY)
    doc = json.loads(small.read_text())
    doc["allocation"]["solvers"] += [NAME, "ffr-spec"]
    cfg = load_config(write(small, doc))
    pool = run_sweep(cfg, tmp_path / "pool.jsonl", executor=PoolExecutor(2))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(cfg, tmp_path / "ray.jsonl", executor=RayExecutor("auto"))
    finally:
        ray.shutdown()
    assert on_ray.ran == len(pool.rows)
    assert stable(on_ray.rows) == stable(pool.rows)
    mine = [r for r in on_ray.rows if r.get("solver") in (NAME, "ffr-spec")]
    assert mine and all(r["error"] is None and r["status"] == "feasible" for r in mine)


def test_cli_summary_parquet_plot_and_no_progress(small, tmp_path, capsys):
    out, pq = tmp_path / "r.jsonl", tmp_path / "r.parquet"
    argv = ["sweep", str(small), "--out", str(out), "--jobs", "2", "--plot",
            str(tmp_path / "p.png")]
    if pyarrow_available():
        argv += ["--parquet", str(pq)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "openb: GPU allocation % at x = 100" in err and "toy 1.3 fgd" in err
    assert "20 runs, 20 run now, 0 already recorded" in err
    assert "%|" not in err  # stderr is not a terminal: no progress bar
    if pyarrow_available():
        import pyarrow.parquet as pqm
        assert pqm.read_table(pq).num_rows == 20
    try:
        import matplotlib  # noqa: F401
    except ImportError:       # the plot extra is not installed: said, nothing written
        assert "matplotlib is not installed: plot skipped" in err
        assert not (tmp_path / "p.png").exists()
    else:
        assert (tmp_path / "p.png").stat().st_size > 0


def test_all_runs_failed_exits_3(tmp_path, capsys):
    doc = {"format": "alloc.sweep/1",
           "allocation": {"instances": [str(INSTANCES / "tenancy_small.json")],
                          "solvers": ["proportional"]}}
    cfg = write(tmp_path / "fail.json", doc)
    out = tmp_path / "f.jsonl"
    assert main(["sweep", str(cfg), "--out", str(out), "--jobs", "1"]) == 3
    row = read_rows(out)[0]
    # a solver that lacks a capability the instance needs: a refused row with the reason
    assert row["status"] == "refused" and "tenancy" in row["reason"] and row["error"] is None
    assert "1 run(s) refused" in capsys.readouterr().err


BAD = [
    ({"format": "alloc.sweep/2"}, "format: expected one of ['alloc.sweep/1']"),
    ({"format": "alloc.sweep/1"}, "expected at least one section"),
    ({"format": "alloc.sweep/1", "openb": {"workloads": ["x"], "policies": ["fgd"],
                                           "seedz": [1]}}, "openb: unknown key 'seedz'"),
    ({"format": "alloc.sweep/1", "allocation": {"instances": ["nope.json"],
                                                "solvers": ["best-fit"]}},
     "allocation.instances[0]: instance file not found: nope.json"),
    ({"format": "alloc.sweep/1", "allocation": {"instances": [str(INSTANCES / "tiny-grid.json")],
                                                "solvers": ["best-fits"]}},
     "allocation.solvers[0]: unknown solver 'best-fits'"),
    ({"format": "alloc.sweep/1", "allocation": {
        "instances": [{"generator": "synergy", "params": {"srvers": 2}}],
        "solvers": ["best-fit"]}}, "unknown parameter 'srvers'"),
    ({"format": "alloc.sweep/1", "allocation": {
        "instances": [{"generator": "synergi"}], "solvers": ["best-fit"]}},
     "valid generators: synergy, hetero, live, openb"),
    ({"format": "alloc.sweep/1", "seeds": "5-2", "allocation": {
        "instances": [str(INSTANCES / "tiny-grid.json")], "solvers": ["best-fit"]}},
     "seeds: expected a range"),
    ({"format": "alloc.sweep/1", "allocation": {
        "instances": [str(INSTANCES / "tiny-grid.json")], "solvers": ["best-fit"],
        "time_limits": [0]}}, "allocation.time_limits[0]: expected a value > 0"),
    ({"format": "alloc.sweep/1", "simulation": {
        "configs": [str(ROOT / "bench" / "configs" / "synergy-main.json")],
        "vary": {"workload.jobs_per_houre": [1]}}}, "unknown key 'jobs_per_houre'"),
    ({"format": "alloc.sweep/1", "openb": {"workloads": ["x"], "policies": ["fdg"]}},
     "openb.policies[0]: unknown policy 'fdg'"),
]


@pytest.mark.parametrize("doc, expect", BAD, ids=[e for _, e in BAD])
def test_bad_config_one_line_exit_2(tmp_path, capsys, doc, expect):
    cfg = write(tmp_path / "bad.json", doc)
    out = tmp_path / "never.jsonl"
    assert main(["sweep", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(cfg) in err and expect in err
    assert not out.exists()


def test_bad_json_and_flags(tmp_path, capsys):
    cfg = tmp_path / "broken.json"
    cfg.write_text('{"format": ')
    assert main(["sweep", str(cfg)]) == 2
    assert "broken.json: line 1" in capsys.readouterr().err
    assert main(["sweep", str(cfg), "--jobs", "0"]) == 2
    assert "--jobs: expected an integer >= 1" in capsys.readouterr().err


def test_ray_missing_says_how_to_install(small, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    assert main(["sweep", str(small), "--ray", "auto"]) == 2
    err = capsys.readouterr().err
    assert "Ray is not installed" in err and "pip install ray" in err and "'.[ray]'" in err
    assert len(err.splitlines()) == 1


def test_ray_unreachable_address_is_one_line(small, tmp_path, capsys):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'alloc[ray]')")
    out = tmp_path / "never.jsonl"
    assert main(["sweep", str(small), "--ray", "127.0.0.1:1", "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("--ray 127.0.0.1:1: no Ray cluster answers there "
                            "(ConnectionRefusedError)")


def test_mean_ci_and_table():
    m, ci = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and abs(ci - 4.302653 * 1.0 / 3 ** 0.5) < 1e-5
    assert mean_ci([5.0]) == (5.0, None) and mean_ci([]) == (None, None)
    rows = [{"kind": "openb", "workload": "w", "tune": 1.3, "policy": "fgd", "seed": s,
             "alloc_100": v, "wall_s": 1.0, "error": None} for s, v in ((1, 90.0), (2, 92.0))]
    rows.append({"kind": "openb", "workload": "w", "tune": 1.3, "policy": "fgd", "seed": 3,
                 "error": "InputError: x"})
    (g,) = summarize(rows)
    assert (g.n, g.errors, g.mean) == (2, 1, 91.0)
    assert "w 1.3 fgd" in table([g])

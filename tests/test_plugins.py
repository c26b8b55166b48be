"""Solvers as plug-ins: a separately installed package (entry point group
`alloc.solvers`) and `module:function` texts run through every entry point:
`allocate()`, `Session`, `alloc solve`, `alloc bench`, `alloc sweep` (its
worker processes; Ray in test_sweep.py), `alloc serve`, the simulators.
Registration rules: a name is taken once; broken or clashing plug-ins are
reported, never break the listing."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import alloc
from alloc import registry
from alloc.errors import InputError
from plugin_dist import ENTRY, NAME, make_site, write_dist

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("site"))


@pytest.fixture
def installed(site, monkeypatch):
    """The plug-in on sys.path and PYTHONPATH; registrations undone after."""
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT)]))
    return site


def cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "alloc", *args], capture_output=True,
                          text=True, env=env or os.environ, cwd=cwd, timeout=300)


# ------------------------------------------------------------------ in process
def test_plugin_is_listed_with_its_declaration(installed):
    info = alloc.get_solver(NAME)
    assert info.capabilities == {"sharing", "locality"} and not info.exact
    assert info.entry == ENTRY and "first-fit-rank" in info.origin and info.available
    assert NAME in registry.solvers() and not alloc.registry.solvers()[NAME].broken


def test_plugin_through_allocate_and_session(installed):
    inst = alloc.load_instance(INSTANCES / "tiny-share.json")
    a = alloc.allocate(inst.cluster, inst.jobs, solver=NAME, time_limit=5)
    assert a.solver == NAME and a.placements and not alloc.violations(inst.cluster, inst.jobs, a)
    s = alloc.Session(inst.cluster, jobs=inst.jobs, solver=NAME)
    r = s.step()
    assert r.allocation.solver == NAME and r.start
    # the capabilities it declares are the ones checked
    tenancy = alloc.load_instance(INSTANCES / "tenancy_small.json")
    with pytest.raises(alloc.UnsupportedInput, match="does not support tenancy"):
        alloc.allocate(tenancy.cluster, tenancy.jobs, solver=NAME)


def test_plugin_in_the_simulator(installed):
    from alloc.sim import ClusterSpec, SyntheticWorkload
    from alloc.sim.engine import simulate
    from alloc.sim.cli import build
    jobs = SyntheticWorkload(12.0, (40, 40, 20), "multi", seed=1).take(12)
    for j in jobs:
        j.work_s = min(j.work_s, 3600.0)
    res = simulate(ClusterSpec(1, 8, 24000, 512000), jobs, allocator=NAME, check=True)
    assert len(res.jct) == 12
    doc = {"cluster": {"servers": 1, "gpus_per_server": 8, "cpu_per_server": 24000,
                       "mem_per_server": 512000},
           "workload": {"jobs_per_hour": 4, "window": [0, 3]}, "allocator": ENTRY}
    sim, _ = build(doc)
    assert sim.allocator == ENTRY


def test_plugin_through_the_service(installed):
    pytest.importorskip("fastapi", reason="the service extra is not installed")
    from fastapi.testclient import TestClient
    from alloc.service import create_app
    client = TestClient(create_app())
    inst = json.loads((INSTANCES / "tiny-grid.json").read_text())
    r = client.post("/v1/solve", json={"instance": inst, "solver": NAME, "time_limit": 5})
    assert r.status_code == 200 and r.json()["solver"] == NAME
    assert NAME in {s["name"] for s in client.get("/v1/solvers").json()}
    # a request can name registered solvers only: never a module to import
    r = client.post("/v1/solve", json={"instance": inst, "solver": "os:getcwd"})
    assert r.status_code == 400 and "unknown solver 'os:getcwd'" in r.json()["error"]
    assert "os:getcwd" not in registry.solvers()


# ------------------------------------------------------------------ other processes
def test_cli_solve_by_name_and_by_module_function(installed, tmp_path):
    for solver in (NAME, ENTRY):
        out = tmp_path / "a.json"
        p = cli("solve", str(INSTANCES / "tiny-grid.json"), "--solver", solver, "--out", str(out))
        assert p.returncode == 0, p.stderr
        assert json.loads(out.read_text())["solver"] == solver
    p = cli("solvers", "--json")
    mine = next(s for s in json.loads(p.stdout) if s["name"] == NAME)
    assert mine["family"] == "third-party" and mine["capabilities"] == ["locality", "sharing"]


def test_cli_bench_refuses_and_goes_on(installed, tmp_path):
    out = tmp_path / "rows.jsonl"
    p = cli("bench", str(INSTANCES / "tenancy_small.json"), str(INSTANCES / "tiny-grid.json"),
            "--solvers", f"{NAME},drf", "--seeds", "0,1", "--time-limit", "5",
            "--out", str(out))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    mine = {r["instance_name"]: r["status"] for r in rows if r["solver"] == NAME}
    assert mine == {"tenancy_small": "refused", "tiny-grid": "feasible"}
    assert "does not support tenancy" in p.stderr and NAME in p.stderr


def test_cli_sweep_worker_processes(installed, tmp_path):
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps({
        "format": "alloc.sweep/1", "seeds": [0, 1],
        "allocation": {"instances": [str(INSTANCES / "tiny-grid.json")],
                       "solvers": [NAME, ENTRY], "time_limits": [5]}}))
    out = tmp_path / "rows.jsonl"
    p = cli("sweep", str(cfg), "--out", str(out), "--jobs", "2", "--no-progress")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 4 and all(r["error"] is None and r["status"] == "feasible" for r in rows)
    assert "Traceback" not in p.stderr and "BrokenProcessPool" not in p.stderr


def test_registered_solvers_reach_pool_workers(installed, tmp_path):
    from alloc.sweep import config_from_dict, run_sweep
    from alloc.sweep.executors import PoolExecutor
    alloc.register("ffr-spec", ENTRY)

    def local(problem, *, deadline, seed, **options):
        return alloc.Solution()
    alloc.register("ffr-local", local)
    cfg = config_from_dict({"format": "alloc.sweep/1", "allocation": {
        "instances": [str(INSTANCES / "tiny-grid.json")], "solvers": ["ffr-spec", "ffr-local"],
        "time_limits": [5]}})
    rows = {r["solver"]: r for r in run_sweep(cfg, tmp_path / "r.jsonl",
                                              executor=PoolExecutor(1)).rows}
    assert rows["ffr-spec"]["status"] == "feasible" and rows["ffr-spec"]["error"] is None
    # a function other processes cannot import: refused with what to do
    assert rows["ffr-local"]["status"] == "refused"
    assert "register it as 'module:function'" in rows["ffr-local"]["reason"]


# ------------------------------------------------------------------ the rules
def test_a_name_is_taken_once(installed):
    with pytest.raises(ValueError, match="'best-fit' already exists; pass replace=True"):
        alloc.register("best-fit", ENTRY)
    with pytest.raises(ValueError, match="already exists"):
        alloc.register(NAME, ENTRY)               # the plug-in's name
    info = alloc.register("best-fit", ENTRY, replace=True)
    assert alloc.get_solver("best-fit") is info
    alloc.unregister("best-fit")
    assert alloc.get_solver("best-fit").family == "heuristics"
    with pytest.raises(ValueError, match="not registered in this process"):
        alloc.unregister("best-fit")
    with pytest.raises(ValueError, match="without ':'"):
        alloc.register("a:b", ENTRY)


def test_register_forms(installed):
    @alloc.register("ffr-deco", capabilities=["sharing"])
    def mine(problem, *, deadline, seed, **options):
        """Places nothing."""
        return alloc.Solution()
    info = alloc.get_solver("ffr-deco")
    assert info.capabilities == {"sharing"} and info.description == "Places nothing."
    from first_fit_rank.solver import solve
    with pytest.raises(ValueError, match="already declared with alloc.solver"):
        alloc.register("ffr-twice", solve, exact=True)
    assert alloc.register("ffr-fn", solve).entry == ENTRY
    with pytest.raises(ValueError, match="cannot import no_such_module"):
        alloc.register("ffr-bad", "no_such_module:solve")
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        alloc.register("ffr-bad", "first_fit_rank.solver:nope")
    with pytest.raises(ValueError, match="unknown capabilities"):
        alloc.solver(capabilities=["sharnig"])


def test_unknown_name_says_how_to_add_one():
    with pytest.raises(ValueError, match="unknown solver 'mine'.*alloc.solvers.*module:function"):
        alloc.get_solver("mine")
    p = cli("solve", str(INSTANCES / "tiny-grid.json"), "--solver", "no_such_mod:solve")
    assert p.returncode == 2 and "cannot import no_such_mod" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_broken_and_clashing_plugins_are_reported(installed, tmp_path, monkeypatch):
    other = tmp_path / "other"
    write_dist(other, "clash-pkg", {NAME: "first_fit_rank.solver:solve",
                                    "best-fit": "first_fit_rank.solver:solve",
                                    "broken-one": "no_such_module:solve"})
    monkeypatch.syspath_prepend(str(other))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = registry.solvers()
    assert any("plug-in solver 'best-fit' of package clash-pkg ignored" in str(w.message)
               for w in caught)
    assert reg["best-fit"].family == "heuristics"
    assert "several installed packages declare solver 'first-fit-rank'" in \
        reg[NAME].unavailable_reason()
    assert "cannot import no_such_module" in reg["broken-one"].unavailable_reason()
    with pytest.raises(alloc.SolverUnavailable, match="plug-in does not load"):
        inst = alloc.load_instance(INSTANCES / "tiny-grid.json")
        alloc.allocate(inst.cluster, inst.jobs, solver="broken-one")
    p = cli("solvers", env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(other), str(installed), str(ROOT)])})
    assert p.returncode == 0 and "broken-one" in p.stdout and "unavailable" in p.stdout


def test_sweep_config_names_unknown_solver_with_its_index(tmp_path):
    from alloc.sweep import config_from_dict
    with pytest.raises(InputError, match=r"allocation.solvers\[1\]: solver 'x.y:z': cannot"):
        config_from_dict({"format": "alloc.sweep/1", "allocation": {
            "instances": [str(INSTANCES / "tiny-grid.json")], "solvers": ["best-fit", "x.y:z"]}})


def test_registry_examples_run(monkeypatch):
    import doctest
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    assert doctest.testmod(registry).failed == 0

"""Solvers declare the objectives they honour; asking one for an objective it
ignores warns once, naming the solvers that honour it; the default does not."""
import json
import subprocess
import sys
import warnings

import pytest

import alloc
from alloc import Cluster, InputWarning, Job, Server, Solution
from alloc.registry import ALL_OBJECTIVES, declare

#: The solvers that place by a rule of their own (size, fragmentation,
#: fairness, a paper's policy), whatever the objective.
OWN_RULE = {"proportional", "best-fit", "random", "dotprod", "gpu-clustering", "gpu-packing",
            "openb-best-fit", "fgd", "fgd-lookahead", "drf", "synergy-greedy", "synergy-tune",
            "antman", "gandiva", "yarn", "tiresias", "kueue-tas", "slurm-topology",
            "freest-first"}


def _small():
    cluster = Cluster([Server("s0", cpu=8000, mem=32000, gpus=2)])
    return cluster, [Job("a", gpus=1, cpu=2000, mem=4000), Job("b", gpus=1, cpu=2000, mem=4000)]


def _objective_warnings(caught):
    return [w for w in caught if issubclass(w.category, InputWarning)
            and "objective" in str(w.message)]


def test_built_in_declarations():
    reg = alloc.solvers()
    for name, info in reg.items():
        if info.family == "third-party":
            continue
        expected = frozenset() if name in OWN_RULE else ALL_OBJECTIVES
        assert info.objectives == expected, name
    assert {"cpsat", "milp", "greedy-upgrade", "synergy-opt"} <= \
        {n for n, s in reg.items() if s.honours("gpus")}


def test_asking_an_ignoring_solver_warns_once_naming_the_honouring():
    cluster, jobs = _small()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = alloc.allocate(cluster, jobs, solver="best-fit", objective="gpus")
    msgs = _objective_warnings(caught)
    assert len(msgs) == 1 and "\n" not in str(msgs[0].message)
    text = str(msgs[0].message)
    assert "'best-fit'" in text and "cpsat" in text and "best-fit," not in text
    assert msgs[0].filename == __file__          # points at the caller's line
    assert a.objective == "gpus" and a.value == 2000


@pytest.mark.parametrize("kw", [{}, {"objective": "gpus"}])
def test_no_warning_for_the_default_or_an_honouring_solver(kw):
    cluster, jobs = _small()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solver = "greedy-upgrade" if kw else "best-fit"
        a = alloc.allocate(cluster, jobs, solver=solver, **kw)
    assert not _objective_warnings(caught)
    assert a.objective == kw.get("objective", "throughput")


def test_plug_ins_declare_objectives():
    @alloc.solver(objectives=())
    def own_rule(problem, *, deadline, seed, **options):
        return Solution()

    def undeclared(problem, *, deadline, seed, **options):
        return Solution()

    try:
        assert alloc.register("test-own-rule", own_rule).objectives == frozenset()
        assert alloc.register("test-undeclared", undeclared).objectives == ALL_OBJECTIVES
        info = alloc.register("test-jobs-only", undeclared, objectives=["jobs"])
        assert info.honours("jobs") and not info.honours("throughput")
        cluster, jobs = _small()
        with pytest.warns(InputWarning, match="test-jobs-only"):
            alloc.allocate(cluster, jobs, solver="test-own-rule", objective="jobs")
    finally:
        for n in ("test-own-rule", "test-undeclared", "test-jobs-only"):
            alloc.unregister(n)
    with pytest.raises(ValueError, match="unknown objectives"):
        declare("x", "m:f", objectives=["speed"])
    with pytest.raises(ValueError, match="list of names"):
        declare("x", "m:f", objectives="jobs")


def test_cli_lists_objectives():
    out = subprocess.run([sys.executable, "-m", "alloc", "solvers", "--json"],
                         capture_output=True, text=True, check=True).stdout
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["best-fit"]["objectives"] == []
    assert rows["cpsat"]["objectives"] == ["gpus", "jobs", "throughput"]
    text = subprocess.run([sys.executable, "-m", "alloc", "solvers"],
                          capture_output=True, text=True, check=True).stdout
    line = next(t for t in text.splitlines() if t.startswith("best-fit "))
    assert "objectives: none" in line


def test_a_session_warns_once_when_its_solver_ignores_the_objective():
    cluster, jobs = _small()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = alloc.Session(cluster, jobs=jobs, solver="best-fit", objective="gpus")
        s.step()
        s.submit(Job("c", gpus=1, cpu=1000, mem=1000))
        s.step()
    msgs = _objective_warnings(caught)
    assert len(msgs) == 1 and "'best-fit'" in str(msgs[0].message)
    assert msgs[0].filename == __file__          # points at the caller's line
    assert s.objective == "gpus"


@pytest.mark.parametrize("kw", [{}, {"objective": "throughput", "solver": "greedy-upgrade"}])
def test_a_session_with_the_default_or_an_honouring_solver_is_silent(kw):
    cluster, jobs = _small()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = alloc.Session(cluster, jobs=jobs, **kw)
        s.step()
    assert not _objective_warnings(caught)
    assert s.objective == "throughput"


@pytest.mark.parametrize("objective,warned", [(None, False), ("gpus", True)])
def test_bench_rows_warn_only_for_an_objective_asked_for(objective, warned):
    from alloc import bench
    tiny = bench.shipped_instances_dir() / "tiny-grid.json"
    rows = bench.run([tiny], ["best-fit"], objective=objective, warmup=0, progress=False)
    (row,) = rows
    assert row["objective"] == (objective or "throughput")
    assert any("ignores the objective" in w for w in row["warnings"]) is warned

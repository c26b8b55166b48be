"""Regression tests of the defects fuzzing found later (H1-H8), each on its
reproducer (``tests/data/repro``, copies of the shared ones): each test
fails on the defect and passes on the right answer."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from alloc import Session, allocate, load_instance, violations
from alloc.errors import InputError

REPRO = Path(__file__).parent / "data" / "repro"
ROOT = Path(__file__).resolve().parents[1]


def inst(name):
    return load_instance(REPRO / name)


def run_cli(argv, capsys):
    from alloc.cli import main
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out + out.err


# ------------------------------------------------------------------ H1
@pytest.mark.parametrize("name", ["gpuclust_63_gpus.json", "gpuclust_62_gpus.json"])
def test_gpu_clustering_takes_a_job_of_63_gpus_or_more(name):
    i = inst(name)
    a = allocate(i.cluster, i.jobs, solver="gpu-clustering", time_limit=5)
    assert not violations(i.cluster, i.jobs, a)
    assert a.unplaced == ("wide",) and "does not spread" in a.reasons["wide"]


def test_gpu_clustering_tags_of_wide_pods_stay_in_an_int64():
    from alloc.solvers.fgd.engine import TAG_TOP, Pod, tag_bit
    assert tag_bit(Pod(1, 1, 63, 1000)) == tag_bit(Pod(1, 1, 500, 1000)) == 1 << TAG_TOP
    assert tag_bit(Pod(1, 1, 1, 500)) == 1 and tag_bit(Pod(1, 1, 8, 1000)) == 1 << 8


# ------------------------------------------------------------------ H2
@pytest.mark.parametrize("solver", ["milp", "cpsat", "milp-cbc", "cpsat-tenancy"])
def test_no_false_optimum_with_an_elastic_job(solver):
    i = inst("milp_false_optimal.json")
    a = allocate(i.cluster, i.jobs, solver=solver, objective="gpus", time_limit=10)
    assert a.value == pytest.approx(26000.0)
    assert a.status.value != "optimal" or a.bound == pytest.approx(26000.0)


def test_no_false_optimum_with_an_elastic_job_under_an_order():
    doc = json.loads((REPRO / "milp_false_optimal_order.json").read_text())
    i = inst("milp_false_optimal_order.json")
    g = doc["generator"]
    kw = dict(order=g["order"], preempt=g.get("preempt", "order"),
              max_moves=g.get("max_moves", 0) or None)
    vals = {}
    for solver in ("milp", "cpsat"):
        a = allocate(i.cluster, i.jobs, solver=solver, objective="gpus", time_limit=10, **kw)
        vals[solver] = (a.value, a.status.value, a.bound)
    (mv, ms, _), (cv, cs, _) = vals["milp"], vals["cpsat"]
    assert not (ms == "optimal" and cv > mv + 1e-6), vals
    assert not (cs == "optimal" and mv > cv + 1e-6), vals


def test_highs_objective_scale_keeps_the_model():
    from alloc.kernel import LinearModel, solve
    from alloc.kernel.highs import cost_scale
    from alloc.deadline import Deadline
    m = LinearModel("big")
    x = [m.add_var(0, 3, integer=True) for _ in range(3)]
    m.add_row({x[0]: 2, x[1]: 3, x[2]: 4}, hi=10)
    m.set_objective({x[0]: 3e10, x[1]: 4e10, x[2]: 5.5e10})
    assert cost_scale(m) > 1
    r = solve(m, "highs", deadline=Deadline.after(5))
    best = max(3e10 * a + 4e10 * b + 5.5e10 * c for a in range(4) for b in range(4)
               for c in range(4) if 2 * a + 3 * b + 4 * c <= 10)
    assert r.objective == pytest.approx(best) and r.bound >= best - 1


# ------------------------------------------------------------------ H3
def test_huge_throughput_in_current_is_bad_input(capsys):
    for argv in (["solve", str(REPRO / "current_throughput_huge.json")],
                 ["validate", str(REPRO / "current_throughput_huge.json")]):
        rc, err = run_cli(argv, capsys)
        assert rc == 2 and "jobs[0].current.throughput" in err, (argv, err)


def test_huge_throughput_in_an_allocation_is_bad_input(capsys):
    rc, err = run_cli(["check", str(REPRO / "one_job.json"),
                       str(REPRO / "one_job_alloc_throughput_huge.json")], capsys)
    assert rc == 2 and "placements[0].throughput" in err, err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ H4
def test_session_events_read_jobs_and_servers_as_instance_files_do():
    from alloc.io import instance_from_dict
    from alloc.session import job_from_dict, server_from_dict
    d = json.loads((REPRO / "session_event_fields_dropped.json").read_text())
    job_doc, srv_doc = d["events"][0]["job"], d["events"][1]["server"]
    from_file = instance_from_dict({"format": "alloc.instance/1",
                                    "cluster": {"servers": [srv_doc]}, "jobs": [job_doc]})
    assert job_from_dict(job_doc) == from_file.jobs[0]
    assert server_from_dict(srv_doc) == from_file.cluster.servers[0]
    c = instance_from_dict({"format": "alloc.instance/1", "cluster": d["cluster"],
                            "jobs": []}).cluster
    s = Session(c, solver="best-fit")
    with pytest.raises(InputError) as direct:
        s.submit(job_from_dict(job_doc))
    with pytest.raises(InputError) as events:
        s.apply([d["events"][0]])
    assert "gpu-compute" in str(direct.value) and "gpu-compute" in str(events.value)


# ------------------------------------------------------------------ H5
def test_reconcile_of_a_cpu_only_job_given_gpus_is_bad_input():
    from alloc.io import instance_from_dict
    d = json.loads((REPRO / "session_reconcile_cpu_job_list.json").read_text())
    c = instance_from_dict({"format": "alloc.instance/1", "cluster": d["cluster"],
                            "jobs": []}).cluster
    s = Session(c, solver="best-fit")
    s.apply([d["events"][0]])
    before = s.to_dict()
    with pytest.raises(InputError) as exc:
        s.apply([d["events"][1]])
    assert "'c1'" in str(exc.value) and "server id" in str(exc.value)
    assert s.to_dict() == before
    assert s.apply([d["events"][2]]) == [{"started": ["c1"], "moved": [], "stopped": []}]


# ------------------------------------------------------------------ H6
def test_fgd_lookahead_first_call_places_the_jobs_in_time():
    code = ("import time, warnings; warnings.simplefilter('ignore')\n"
            "from alloc import load_instance, allocate\n"
            f"i = load_instance({str(REPRO / 'two_jobs.json')!r})\n"
            "t = time.perf_counter()\n"
            "a = allocate(i.cluster, i.jobs, solver='fgd-lookahead', time_limit=0.5)\n"
            "print(len(a.placements), time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60)
    placed, wall = out.stdout.split()
    assert int(placed) == 2 and float(wall) <= 0.5 * 1.1 + 0.5, out.stdout + out.stderr


# ------------------------------------------------------------------ H7
@pytest.mark.parametrize("solver", ["cpsat-tenancy", "cpsat", "milp", "milp-cbc"])
def test_exact_solvers_answer_at_least_a_heuristic_at_a_tenth_of_a_second(solver):
    i = inst("two_jobs.json")
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=0.1)
    assert len(a.placements) == 2


def test_the_first_warm_heuristic_runs_even_with_no_time_left():
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem
    from alloc.engines.configuration.driver import warm_start
    i = inst("two_jobs.json")
    p = compile_problem(i.cluster, i.jobs)
    best, value, _, _ = warm_start(p, Deadline.after(1e-9), floor=Deadline.after(1e-9))
    assert len(best) == 2 and value > 0


# ------------------------------------------------------------------ H8
def test_bad_value_inside_current_names_its_field(capsys):
    rc, err = run_cli(["solve", str(REPRO / "current_compute_1001.json")], capsys)
    assert rc == 2
    assert "jobs[0].current.gpus[0].compute" in err and "1000" in err, err

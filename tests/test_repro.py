"""Regression tests: each defect the fuzzing of the project found, on its
reproducer (``tests/data/repro``, copies of the shared reproducers; the
256-server one is read from the shared folder).  Each test fails on the
defect and passes on the right answer."""
import json
from pathlib import Path

import pytest

from alloc import allocate, load_instance, violations
from alloc.errors import InputError
from timed_calls import timed

REPRO = Path(__file__).parent / "data" / "repro"


def inst(name):
    return load_instance(REPRO / name)


def run_cli(argv, capsys):
    from alloc.cli import main
    rc = main(argv)
    return rc, capsys.readouterr().err


# ------------------------------------------------------------------ G1
@pytest.mark.parametrize("solver", ["best-fit", "drf", "greedy-upgrade", "local-search",
                                    "proportional", "cpsat", "milp", "milp-cbc", "cpsat-tenancy",
                                    "hived"])
def test_running_cpu_only_job_with_nothing_keeps_its_place(solver):
    i = inst("zero_cpu_only_running.json")
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=5)
    p = a.placement("j0")
    assert p is not None and p.same_as(i.jobs[0].current) and not a.preempted
    assert dict(p.cpu) == {"s00": 0}            # the server it runs on, kept


@pytest.mark.parametrize("solver", ["best-fit", "hived", "cpsat"])
def test_waiting_cpu_only_job_with_nothing_is_placed_on_one_server(solver, tmp_path):
    """The same job, not running yet: placed on exactly one server, and the
    allocation written and read back means the same."""
    from alloc.io import dump_allocation, load_allocation
    i = inst("zero_cpu_only.json")
    a = allocate(i.cluster, i.jobs, solver=solver, time_limit=5)
    p = a.placement("j0")
    assert p is not None and set(p.cpu) == {"s00"} and not p.gpus
    assert not violations(i.cluster, i.jobs, a)
    dump_allocation(a, tmp_path / "a.json")
    assert load_allocation(tmp_path / "a.json").placement("j0").same_as(p)


# ------------------------------------------------------------------ G2, G3
@pytest.mark.parametrize("objective,optimum", [("gpus", 5000.0), ("jobs", 4.0)])
def test_cpsat_tenancy_bound_never_below_its_value(objective, optimum):
    i = inst("cpsat_tenancy_bound_below_value.json")
    for solver in ("cpsat-tenancy", "cpsat"):
        a = allocate(i.cluster, i.jobs, solver=solver, objective=objective, time_limit=10)
        assert a.value == pytest.approx(optimum)
        assert a.bound is not None and a.value <= a.bound + 1e-6
        assert a.status.value == "optimal" and a.bound == pytest.approx(optimum)


def test_cpsat_tenancy_claims_no_false_optimum():
    i = inst("exact_overrun_and_tenancy_false_optimal.json")
    a = allocate(i.cluster, i.jobs, solver="cpsat-tenancy", objective="jobs", time_limit=10)
    assert a.value == pytest.approx(11.0) and a.status.value == "optimal"
    g = allocate(i.cluster, i.jobs, solver="cpsat-tenancy", objective="gpus", time_limit=2)
    ls = allocate(i.cluster, i.jobs, solver="local-search", objective="gpus", time_limit=2)
    assert g.value >= ls.value - 1e-6
    assert g.bound is None or g.value <= g.bound + 1e-6


def test_tenancy_model_names_the_request_restriction_when_another_point_is_smaller():
    """On a tenancy input the model places jobs at their request: a job with
    a smaller grid point restricts it, whatever the objective; the bound then
    comes from the relaxed model and holds."""
    from alloc import Cluster, Job, Server, Tenant, Cell, load_profile
    from alloc.model import frozen_map
    c = Cluster((Server("s0", 8000, 512000, 2, "V100"),), ("server", "gpu"),
                frozen_map({"vc": Tenant("vc", (Cell("server", 1, "V100"),))}))
    prof = load_profile("res18")
    big = Job("a", gpus=1, cpu=8000, mem=64000, model="res18", profile=prof, tenant="vc",
              guaranteed=True)
    jobs = [big, Job("b", gpus=1, cpu=4000, mem=1000, tenant="vc", guaranteed=True)]
    for objective in ("jobs", "gpus", "throughput"):
        a = allocate(c, jobs, solver="cpsat-tenancy", objective=objective, time_limit=10)
        assert not violations(c, jobs, a)
        assert a.bound is None or a.value <= a.bound + 1e-6
        assert a.bound is not None or a.stats["no_bound"]


# ------------------------------------------------------------------ G4
@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_exact_family_keeps_its_deadline(solver):
    i = inst("exact_overrun_and_tenancy_false_optimal.json")
    a, late = timed(lambda: allocate(i.cluster, i.jobs, solver=solver, objective="gpus",
                                     time_limit=2), 2)
    assert not late, late
    assert a.bound is None or a.value <= a.bound + 1e-6


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_aggregate_build_keeps_the_deadline_at_256_servers(shared_dir, solver):
    i = load_instance(shared_dir / "repro" / "deadline_256x2000.json")
    a, late = timed(lambda: allocate(i.cluster, i.jobs, solver=solver, time_limit=1), 1)
    assert not late, late
    assert a.placements and (a.bound is None or a.value <= a.bound + 1e-6)


# ------------------------------------------------------------------ G5
@pytest.mark.parametrize("solver", ["milp", "cpsat", "cpsat-tenancy"])
def test_exact_never_below_a_heuristic_that_preempts_nothing(solver):
    i = inst("exact_preempts_below_drf.json")
    d = allocate(i.cluster, i.jobs, solver="drf", objective="jobs", time_limit=5)
    a = allocate(i.cluster, i.jobs, solver=solver, objective="jobs", time_limit=5)
    assert not d.preempted and a.value >= d.value
    if a.value == d.value:
        assert not a.preempted                   # no preemption without a gain


# ------------------------------------------------------------------ G6
@pytest.mark.parametrize("name,n", [("wide_no_locality_no_reason.json", 24),
                                    ("wide_elastic_no_reason.json", 20)])
def test_job_wider_than_the_cluster_gets_a_reason(name, n):
    from alloc.conformance import applicable_solvers
    i = inst(name)
    for solver in applicable_solvers(i.cluster, i.jobs):
        a = allocate(i.cluster, i.jobs, solver=solver, time_limit=2)
        assert "wide" in a.unplaced
        assert f"needs {n} GPUs" in a.reasons["wide"] and "hold 16 GPUs" in a.reasons["wide"]


def test_spread_job_over_two_gpu_types_is_placeable():
    """The reach of a spread job sums the GPU types it allows (no reason
    when two types together hold it)."""
    from alloc import Cluster, Job, Server
    c = Cluster((Server("a", 32000, 128000, 8, "V100"), Server("b", 32000, 128000, 8, "P100")))
    a = allocate(c, [Job("w", gpus=12, cpu=1000, mem=1000)], solver="cpsat", time_limit=5)
    assert not a.reasons and a.placement("w") is not None


# ------------------------------------------------------------------ G7
SHARES = [("shares_no_steps.json", "makespan", "jobs[0].steps_remaining"),
          ("shares_no_steps.json", "finish-time-fairness", "jobs[0].steps_remaining"),
          ("shares_no_steps.json", "allox", "jobs[0].steps_remaining"),
          ("shares_no_steps_one.json", "makespan", "jobs[1].steps_remaining"),
          ("shares_tput_tiny.json", "makespan", "jobs[0].throughput.v100"),
          ("shares_zero_gpus.json", "max-sum", "gpu_types"),
          ("shares_zero_gpus.json", "makespan", "gpu_types"),
          ("shares_w_tiny.json", "max-min", "jobs[0].weight"),
          ("shares_w_subnormal.json", "isolated", "jobs[0].weight")]


@pytest.mark.parametrize("name,policy,field", SHARES)
def test_shares_refuses_what_it_cannot_answer(name, policy, field, capsys):
    path = str(REPRO / name)
    rc, err = run_cli(["shares", path, "--policy", policy], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and path in lines[0] and field in lines[0], err


def test_shares_job_wider_than_every_type_is_reported(capsys):
    path = str(REPRO / "shares_sf_gt_cluster.json")
    rc, err = run_cli(["shares", path, "--policy", "max-min"], capsys)
    assert rc == 0 and "warning" in err and "'j2'" in err and "needs 4 GPUs" in err
    from alloc.shares import load_shares, solve_shares
    r = solve_shares(load_shares(path), "max-min")
    assert "j2" in r.unserved and r.X[2].sum() == 0


def test_makespan_of_a_slow_job_is_solved_not_zeroed():
    """A throughput a billion times below the others (inside the range the
    LPs resolve) still gets its share: the makespan LP is scaled."""
    from alloc.shares import solve_shares
    doc = json.loads((REPRO / "shares_tput_tiny.json").read_text())
    doc["jobs"][0]["throughput"] = {"v100": 1e-8, "k80": 1e-8}
    r = solve_shares(doc, "makespan")
    assert r.status.value == "optimal" and r.X[0].sum() > 0.99
    assert r.objective == pytest.approx(1000 / 1e-8, rel=1e-6)


# ------------------------------------------------------------------ G8
def test_openb_loader_reads_ascii_integers_only(capsys, tmp_path):
    rc, err = run_cli(["bench", "openb", "--pods", str(REPRO / "openb_pods_unicode_digits.csv"),
                       "--nodes", str(REPRO / "openb_nodes_small.csv"), "--policy", "best-fit",
                       "--seeds", "42"], capsys)
    assert rc == 2 and "expected an integer" in err and "1_000" in err
    from alloc.experiments.openb import load_pods
    rows = (REPRO / "openb_pods_unicode_digits.csv").read_text().splitlines()
    for bad in ("٥٠٠", "1_000"):
        text = "\n".join([rows[0], rows[2].replace(",460,", f",{bad},", 1)]) + "\n"
        path = tmp_path / "pods.csv"
        path.write_text(text)
        with pytest.raises(InputError, match="expected an integer"):
            load_pods(path)


# ------------------------------------------------------------------ found by bench/fuzz.py
def test_cpu_only_job_upper_value_ignores_gpu_speeds():
    """A CPU-only job with a profile slower than 1 on every GPU type is worth
    its weight: the sum of upper values bounded it by the GPU speed, and the
    exact solvers proved a false optimum (4.0243 where 4.58208 is reachable)."""
    from alloc import Cluster, Job, Server, load_profile
    c = Cluster((Server("s00", 8000, 1024000, 2, "K80"), Server("s01", 8000, 8000, 1, "K80"),
                 Server("s02", 2000, 64000, 8, "P100")))
    jobs = [Job("j1", gpus=0, cpu=500, mem=64000, model="transformer",
                profile=load_profile("transformer"), weight=3.7),
            Job("j3", gpus=1, gpu_milli=900, cpu=0, mem=64000, model="res50",
                profile=load_profile("res50"), weight=2.0)]
    for solver in ("cpsat", "milp", "synergy-opt"):
        a = allocate(c, jobs, solver=solver, time_limit=5)
        assert a.value == pytest.approx(4.58208) and a.status.value == "optimal", solver


def test_highs_sub_mip_heuristics_keep_the_deadline():
    """HiGHS's RINS/RENS ran 22-24 s of a 0.9 s limit in the proof's master
    on this instance (half the runs); they are off in the kernel."""
    i = inst("highs_submip_overrun.json")
    for _ in range(2):
        _, late = timed(lambda: allocate(i.cluster, i.jobs, solver="milp",
                                         objective="throughput", time_limit=2), 2)
        assert not late, late


def test_exact_family_runs_local_search_only_where_it_applies():
    """Local search lacks the elastic capability: on this elastic input it
    grew a job to 4 GPUs at a 2-GPU point's CPU and memory, and milp-cbc at
    0.5 s returned that answer (refused by the final check)."""
    from alloc.objectives import get_objective
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem
    from alloc.engines.configuration.driver import warm_start
    i = inst("elastic_local_search.json")
    p = compile_problem(i.cluster, i.jobs, get_objective("gpus"))
    _, _, _, values = warm_start(p, Deadline.after(2.0), floor=Deadline.after(2.0))
    assert values and not any(k.startswith("local-search") for k in values)
    for limit in (0.5, 1.0):
        a = allocate(i.cluster, i.jobs, solver="milp-cbc", objective="gpus", time_limit=limit)
        assert not violations(i.cluster, i.jobs, a)

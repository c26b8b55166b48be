"""The fuzz harness: its exhaustive search agrees with the shipped known
optima, its mutations reach the loaders, and a short campaign finds no
failure of any check (the long one is ``python bench/fuzz.py``)."""
import json
import random

import pytest

from alloc import Cluster, Job, Server, allocate, load_instance
from alloc.experiments.fuzz import CHECKS, campaign
from alloc.experiments.fuzz.brute import brute_force
from alloc.experiments.fuzz.campaign import Tally, applicable, check_cli, cross_check, draw_call
from alloc.experiments.fuzz.generate import dumps, mutate, valid_instance


@pytest.mark.parametrize("name", ["tiny-grid", "tiny-share", "tiny-types"])
@pytest.mark.parametrize("objective", ["throughput", "gpus", "jobs"])
def test_brute_force_finds_the_known_optimum(instances_dir, name, objective):
    inst = load_instance(instances_dir / f"{name}.json")
    assert brute_force(inst.cluster, inst.jobs, objective) == \
        pytest.approx(inst.meta["known_optimum"][objective], abs=1e-6)


def test_generated_instances_are_valid_and_varied():
    """Every feature is drawn, every available solver is reached (antman and
    gandiva included), and the calls include preemption by the order."""
    from alloc.registry import solvers
    rng = random.Random(3)
    seen, names = set(), set()
    for _ in range(40):
        doc, inst = valid_instance(rng)
        call = draw_call(rng, inst)
        names |= set(applicable(inst.cluster, inst.jobs, call.get("preempt")))
        seen |= {"preempt-order"} if call.get("preempt") == "order" else set()
        seen |= {"gpu-memory"} if any(j.gpu_mem is not None for j in inst.jobs) else set()
        seen |= {"gpu-compute"} if any(j.gpu_compute is not None for j in inst.jobs) else set()
        seen |= {"server-gpu-memory"} if any(s.gpu_mem for s in inst.cluster.servers) else set()
        seen |= {"rider"} if any(j.current and any(g.milli == 0 for g in j.current.gpus)
                                 for j in inst.jobs) else set()
        seen |= {"tenants"} if inst.cluster.tenants else set()
        seen |= {"running"} if any(j.current for j in inst.jobs) else set()
        seen |= {"elastic"} if any(j.elastic for j in inst.jobs) else set()
        seen |= {"shared"} if any(j.gpu_milli < 1000 for j in inst.jobs) else set()
        seen |= {"cpu-only"} if any(j.gpus == 0 for j in inst.jobs) else set()
        seen |= set(inst.cluster.levels)
    assert {"tenants", "running", "elastic", "shared", "cpu-only", "rack", "socket",
            "switch", "preempt-order", "gpu-memory", "gpu-compute", "server-gpu-memory",
            "rider"} <= seen
    assert names == {n for n, s in solvers().items() if s.available}


def test_cross_check_counts_a_bound_below_a_value():
    """The checks fail when they should: a bound under another solver's value."""
    from alloc import Cluster, Job, Server, allocate
    c = Cluster((Server("s0", 8000, 64000, 2, "V100"),))
    jobs = [Job("a", gpus=1, cpu=1000, mem=1000), Job("b", gpus=1, cpu=1000, mem=1000)]
    good = allocate(c, jobs, solver="cpsat")
    bad = allocate(c, jobs[:1], solver="best-fit")
    from dataclasses import replace
    tally = Tally()
    cross_check(tally, None, {"cpsat": good, "best-fit": replace(bad, bound=1.0)}, "jobs")
    assert tally.counts["bound-below-value"] == 1


def test_malformed_files_are_refused_in_one_line():
    rng = random.Random(5)
    tally = Tally()
    for _ in range(15):
        doc, _ = valid_instance(rng, running=False)
        check_cli(tally, "instance", dumps(mutate(rng, doc)),
                  lambda p: ["solve", p, "--solver", "best-fit", "--time-limit", "1"])
    assert tally.counts["instance files"] == 15 and tally.counts["instance files refused"]
    assert not tally.failures, tally.failures


def test_short_campaign_finds_nothing():
    tally = campaign(20, seed=11, limits=(0.5, 1.0))
    assert tally.counts["solver runs"] and tally.counts["shares runs"]
    assert tally.counts["tiny instances"] and tally.counts["openb files"]
    assert not any(tally.counts[c] for c in CHECKS), tally.failures[:5]


def test_the_makespan_reference_holds_on_jobs_of_a_million_steps():
    """Two P100s, three jobs of a million steps and three small ones: the
    makespan is the capacity bound, (2e6 + 1e6 + 1e6 + 1,110) / 2 = 2,000,555
    s, which the policy finds.  The unscaled reference LP said 2,000,000 (a
    rate of 5e-7 steps/s per step is within its tolerances of zero) and so
    called the policy's optimum false."""
    from alloc.experiments.fuzz.campaign import _ref_makespan
    from alloc.shares import problem_from_dict, solve_shares

    def job(i, t, steps, elapsed=0.0, weight=1.0):
        return {"id": f"j{i}", "scale_factor": 1, "throughput": {"p100": t},
                "steps_remaining": steps, "elapsed_s": elapsed, "isolated_time_s": 20.0,
                "weight": weight}
    doc = {"format": "alloc.shares/1", "gpu_types": {"p100": 2},
           "jobs": [job(0, 1.0, 100.0, weight=2.0), job(1, 0.5, 1e6, 50.0, 0.001),
                    job(2, 10.0, 1e4, weight=0.001), job(3, 1.0, 1e6),
                    job(4, 10.0, 100.0, 50.0), job(5, 1.0, 1e6, 50.0, 2.0)]}
    p = problem_from_dict(doc)
    r = solve_shares(p, "makespan", time_limit=5)
    assert _ref_makespan(p) == pytest.approx(2_000_555.0, rel=1e-6)
    assert r.objective == pytest.approx(2_000_555.0, rel=1e-6)


def test_brute_force_takes_an_elastic_job_at_any_of_its_sizes():
    """The milp false optimum's shape (H2): an elastic job of 6 GPUs (5 to 12)
    with server locality next to fixed gangs; the brute force and the exact
    solvers agree on the optimum, which gives the elastic job 8 GPUs."""
    c = Cluster((Server("s0", 64000, 64000, 8, "K80"), Server("s1", 64000, 64000, 4, "K80")))
    jobs = [Job("e", 6, cpu=12000, mem=6000, locality="server", min_gpus=5, max_gpus=12),
            Job("a", 2, cpu=8000, mem=8000, locality="server"),
            Job("b", 2, cpu=8000, mem=8000, locality="server")]
    best = brute_force(c, jobs, "gpus")
    assert best == 12000.0
    for solver in ("cpsat", "milp"):
        a = allocate(c, jobs, solver=solver, objective="gpus", time_limit=10)
        assert a.value <= best + 1e-6 and (a.bound is None or a.bound >= best - 1e-6), solver
        if a.status.value == "optimal":
            assert a.value == pytest.approx(best) and len(a.placement("e").gpus) == 8


def test_tiny_instances_draw_elastic_jobs():
    import random
    from alloc.experiments.fuzz.generate import instance_doc
    rng = random.Random(0)
    docs = [instance_doc(rng, tiny=True) for _ in range(200)]
    elastic = [j for d in docs for j in d["jobs"] if "min_gpus" in j]
    assert elastic and all(j.get("locality") == "server" for j in elastic)


@pytest.mark.parametrize("objective", ["gpus", "jobs"])
def test_an_elastic_job_fits_at_a_smaller_size_on_a_grid_point(objective, tmp_path):
    """An elastic job (4 GPUs, 1 to 4) whose request fits no server
    (256,000 MiB on one server) fits at one GPU on a grid point of its
    profile (per GPU: 64,000 MiB on one GPU).  The exact solvers' models
    place an elastic job at its request only: they may not call their
    answer optimal, and their bound is at least the exhaustive optimum."""
    doc = {"format": "alloc.instance/1", "cluster": {"levels": ["server", "gpu"], "servers": [
        {"id": "s0", "cpu": 4000, "mem": 16000, "gpus": 2, "gpu_type": "K80"},
        {"id": "s1", "cpu": 4000, "mem": 64000, "gpus": 8, "gpu_type": "V100"},
        {"id": "s2", "cpu": 24000, "mem": 16000, "gpus": 2, "gpu_type": "V100"}]},
        "jobs": [{"id": "e", "gpus": 4, "min_gpus": 1, "max_gpus": 4, "cpu": 4000, "mem": 256000,
                  "locality": "server", "model": "res50", "weight": 2.0},
                 {"id": "b", "gpus": 2, "cpu": 1000, "mem": 2000, "locality": "server",
                  "weight": 0.5, "priority": 1}]}
    path = tmp_path / "elastic.json"
    path.write_text(json.dumps(doc))
    inst = load_instance(path)
    best = brute_force(inst.cluster, inst.jobs, objective)
    assert best == {"gpus": 3000.0, "jobs": 2.0}[objective]
    for solver in ("cpsat", "cpsat-tenancy", "milp", "goodput"):
        a = allocate(inst.cluster, inst.jobs, solver=solver, objective=objective, time_limit=5)
        assert a.value <= best + 1e-6 and a.bound is not None and a.bound >= best - 1e-6, solver
        assert a.status.value != "optimal" or a.value == pytest.approx(best), solver

"""The online policies as batch solvers: running jobs stay where they run,
the deadline holds at scale, and a seed gives the same placements (also the
same as the O(N) scan of every pod)."""
import time

import numpy as np
import pytest

from alloc import allocate
from alloc.model import Cluster, GpuShare, Job, Placement, Server
from alloc.solvers.fgd import solvers as fgd_solvers
from alloc.solvers.fgd.engine import place_scan

SOLVERS = ["random", "dotprod", "gpu-clustering", "gpu-packing", "openb-best-fit", "fgd",
           "fgd-lookahead"]
SHAPES = [(96000, 393216, 8, "G2"), (104000, 524288, 2, "T4"), (16000, 122880, 2, "P100"),
          (128000, 786432, 8, "G3")]


def instance(servers: int, jobs: int, seed: int):
    """A seeded openb-like cluster and job list (shares, whole GPUs, CPU-only)."""
    rng = np.random.default_rng(seed)
    srv = []
    for i in range(servers):
        c, m, g, t = SHAPES[int(rng.integers(len(SHAPES)))]
        srv.append(Server(f"s{i:05d}", c, m, g, t))
    out = []
    for j in range(jobs):
        r = rng.random()
        cpu, mem = int(rng.choice([3152, 8000, 11908, 12000])), int(rng.choice([5600, 30517]))
        if r < 0.1:
            out.append(Job(f"j{j}", 0, 1000, cpu, mem))
        elif r < 0.5:
            out.append(Job(f"j{j}", 1, int(rng.choice([230, 320, 470, 650, 810])), cpu, mem))
        else:
            k = int(rng.choice([1, 1, 1, 2, 4]))
            types = ("G2",) if rng.random() < 0.1 else ()
            out.append(Job(f"j{j}", k, 1000, cpu * k, mem, gpu_types=types))
    return Cluster(tuple(srv)), out


def placements(a):
    return {p.job: (tuple((g.gpu, g.milli) for g in p.gpus), tuple(sorted(p.cpu.items())))
            for p in a.placements}


@pytest.mark.parametrize("solver", SOLVERS)
def test_running_jobs_kept(solver):
    cluster, jobs = instance(12, 120, 1)
    s0, s1 = cluster.servers[0], cluster.servers[1]
    running = [
        Job("run-share", 1, 500, 2000, 1000, current=Placement(
            "run-share", (GpuShare(f"{s0.id}/gpu1", 500),), {s0.id: 2000}, {s0.id: 1000})),
        Job("run-whole", 2, 1000, 4000, 1000, current=Placement(
            "run-whole", (GpuShare(f"{s1.id}/gpu0", 1000), GpuShare(f"{s1.id}/gpu1", 1000)),
            {s1.id: 4000}, {s1.id: 1000})),
        Job("run-cpu", 0, 1000, 5000, 2000, current=Placement(
            "run-cpu", (), {s0.id: 5000}, {s0.id: 2000})),
    ]
    a = allocate(cluster, running + jobs, solver=solver, objective="gpus", seed=3)
    got = {p.job: p for p in a.placements}
    for j in running:
        assert got[j.id].gpus == j.current.gpus
        assert dict(got[j.id].cpu) == dict(j.current.cpu)
        assert dict(got[j.id].mem) == dict(j.current.mem)
    assert not a.moved and not a.preempted
    # no pending job was given a GPU share that, with the running ones, overflows
    used: dict = {}
    for p in a.placements:
        for g in p.gpus:
            used[g.gpu] = used.get(g.gpu, 0) + g.milli
    assert max(used.values()) <= 1000


@pytest.mark.parametrize("solver", ["fgd", "fgd-lookahead", "openb-best-fit", "random"])
def test_same_placements_for_a_seed_and_as_the_scan(solver, monkeypatch):
    cluster, jobs = instance(40, 400, 2)
    a = allocate(cluster, jobs, solver=solver, objective="gpus", seed=5)
    b = allocate(cluster, jobs, solver=solver, objective="gpus", seed=5)
    assert placements(a) == placements(b) and a.unplaced == b.unplaced
    monkeypatch.setattr(fgd_solvers, "place", place_scan)
    c = allocate(cluster, jobs, solver=solver, objective="gpus", seed=5)
    assert placements(a) == placements(c)
    assert 100 < len(a.placements) < len(jobs)      # a full cluster: choices matter


@pytest.mark.parametrize("solver", ["fgd-lookahead", "openb-best-fit"])
def test_deadline_through_allocate(solver):
    cluster, jobs = instance(100, 3000, 4)
    t = time.perf_counter()
    a = allocate(cluster, jobs, solver=solver, objective="gpus", time_limit=1)
    assert time.perf_counter() - t < 1.6
    assert str(a.status) == "feasible" and a.placements


@pytest.mark.parametrize("policy", ["fgd-lookahead", "fgd", "openb-best-fit", "random"])
def test_deadline_inside_the_placement_loop(policy):
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem
    from alloc.validate import prepare
    cluster, jobs = instance(300, 6000, 6)
    problem = compile_problem(*prepare(cluster, jobs), objective="gpus")
    t = time.perf_counter()
    sol = fgd_solvers.run_online(problem, policy, deadline=Deadline.after(0.05))
    assert time.perf_counter() - t < 0.05 * 1.1 + 0.5
    assert sol.stats.get("stopped") == "time limit" and len(sol.assign) < len(jobs)


def test_options_declared():
    from alloc.registry import get_solver
    info = get_solver("fgd-lookahead")
    assert {o.name for o in info.options} >= {"lam", "reserve", "mu", "share_res", "cpu_pods"}
    with pytest.raises(Exception, match="mu"):
        allocate(*instance(2, 4, 0), solver="fgd-lookahead", objective="gpus", mu=-1)

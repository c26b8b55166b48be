"""The caller's deadline is law for the tenancy solvers: on a generated
256-server instance with tenants and running jobs, ``allocate(...,
time_limit=T)`` returns within ``T * 1.1 + 0.5`` s for ``hived`` and
``cpsat-tenancy`` at T = 1 and 5, with a valid answer (checked by allocate);
and the inner searches (binding inference) stop at their deadline."""
from __future__ import annotations

import random
import time

import pytest

from alloc import Cell, Cluster, Job, Server, Tenant, allocate
from alloc.deadline import Deadline
from alloc.model import frozen_map
from alloc.tenancy import with_current
from timed_calls import timed

LEVELS = ("rack", "server", "socket", "switch", "gpu")
LOC = {1: None, 2: "switch", 4: "socket", 8: "server"}


def generated(n_servers=256, n_first=400, n_rest=1200, seed=5):
    """Racks of four 8-GPU servers, four tenants with cells at every level, a
    first batch placed by hived (running) and a pending batch."""
    rng = random.Random(seed)
    servers = tuple(Server(f"s{i:03d}", 32000, 512000, 8, "V100", f"r{i // 4:02d}", 2, 2)
                    for i in range(n_servers))
    k = n_servers // 64
    cells = {"vc-a": [("rack", k), ("server", 6 * k)], "vc-b": [("server", 10 * k)],
             "vc-c": [("socket", 12 * k), ("switch", 8 * k)],
             "vc-d": [("switch", 16 * k), ("gpu", 16 * k)]}
    c = Cluster(servers, LEVELS, frozen_map(
        {v: Tenant(v, tuple(Cell(lv, n, "V100") for lv, n in cs)) for v, cs in cells.items()}))

    def batch(prefix, n, frac):
        out = []
        for i in range(n):
            g = rng.choice((1, 1, 1, 2, 2, 4, 8))
            loc = LOC[g] if rng.random() < 0.6 else None
            ten = rng.choice(sorted(cells)) if rng.random() < frac else None
            out.append(Job(f"{prefix}{i:04d}", gpus=g, cpu=3000 * g, mem=32000 * g,
                           locality=loc, tenant=ten, guaranteed=ten is not None,
                           priority=rng.choice((0, 0, 1, 2)), weight=rng.choice((1.0, 2.0))))
        return out
    first = batch("run", n_first, 0.4)
    r = allocate(c, first, solver="hived")
    running = [j for j in with_current(first, r) if j.current is not None]
    return c, running + batch("new", n_rest, 0.6)


@pytest.fixture(scope="module")
def big():
    return generated()


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy"])
@pytest.mark.parametrize("limit", [1.0, 5.0])
def test_time_limit_on_256_servers(big, solver, limit):
    c, jobs = big
    r, late = timed(lambda: allocate(c, jobs, solver=solver, time_limit=limit), limit)
    assert not late, (solver, late)
    assert r.placements and r.status.value in ("feasible", "optimal")


def test_exact_binding_stops_at_its_deadline(big):
    """An expired deadline: the exact binding search does not start."""
    from alloc.tenancy import exact_binding
    c, jobs = big
    used = {"vc-a": {0, 1}}
    t0 = time.perf_counter()
    assert exact_binding(c, used, deadline=Deadline.after(1e-9)) is None
    assert time.perf_counter() - t0 < 0.5
    assert exact_binding(c, used, deadline=Deadline.after(30)) is not None


def test_hived_out_of_time_returns_what_it_has(big):
    """hived with no time left places nothing new but keeps the running jobs."""
    from alloc.problem import compile_problem
    from alloc.solvers.hived.solvers import solve_hived
    c, jobs = big
    p = compile_problem(c, jobs)
    sol = solve_hived(p, deadline=Deadline.after(1e-6))
    running = {j for j in range(p.J) if p.jobs[j].current is not None}
    assert set(sol.assign) == running and not sol.preempted
    assert sol.stats.get("timed_out")

"""Cell sizes, one rule: a tenant's cells at a (GPU type, level) have that
level's one physical size.  On clusters mixing 16- and 8-GPU P100 servers,
cells at the server level are refused (bad input, exit 2), cells at the GPU
level (and at a switch level whose switches agree) are fine, and ``hived``,
the tenancy model and ``violations()`` agree on them round after round."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from alloc import Cell, Cluster, InputError, Job, Server, Tenant, allocate, load_instance
from alloc.model import frozen_map
from alloc.tenancy import (cell_size, cell_tree, guaranteed_usage, quota_gpus, tenant_problems,
                           with_current)

LEVELS = ("rack", "server", "socket", "switch", "gpu")
INSTANCE = Path(__file__).resolve().parents[1] / "instances" / "tenancy_mixed.json"


def mixed(tenants, switches_8=1):
    """16-GPU P100 servers (2 sockets x 2 switches: 4-GPU switches) next to
    8-GPU ones (2 sockets x ``switches_8`` switches)."""
    servers = tuple(Server(f"b{i}", 64000, 1024000, 16, "P100", f"r{i}", 2, 2) for i in range(2))
    servers += tuple(Server(f"s{i}", 64000, 512000, 8, "P100", f"q{i}", 2, switches_8)
                     for i in range(4))
    ten = {v: Tenant(v, tuple(Cell(lv, n, "P100") for lv, n in cells))
           for v, cells in tenants.items()}
    return Cluster(servers, LEVELS, frozen_map(ten))


def job(jid, n, tenant=None, prio=0, **kw):
    return Job(jid, gpus=n, cpu=1000 * n, mem=1000 * n, tenant=tenant,
               guaranteed=tenant is not None, priority=prio, **kw)


@pytest.mark.parametrize("level", ["server", "socket", "rack"])
def test_cells_where_sizes_differ_are_bad_input(level):
    c = mixed({"a": [(level, 1)]})
    probs = tenant_problems(c)
    assert probs and ("differ in size" in probs[0] or "no rack cell" in probs[0]), probs
    with pytest.raises(InputError):
        allocate(c, [job("x", 1, "a")], solver="hived")


def test_one_size_per_level():
    c = mixed({"a": [("gpu", 6)], "b": [("switch", 3)]})
    assert not tenant_problems(c)
    tree = cell_tree(c)
    lv = {x: i for i, x in enumerate(LEVELS)}
    assert cell_size(tree, "P100", lv["gpu"]) == 1 and cell_size(tree, "P100", lv["switch"]) == 4
    assert quota_gpus(c, "a", "P100") == 6 and quota_gpus(c, "b", "P100") == 12
    # 8-GPU servers with one switch per socket: switches of 4 on both shapes
    assert not tenant_problems(mixed({"b": [("switch", 2)]}, switches_8=1))
    assert tenant_problems(mixed({"b": [("switch", 2)]}, switches_8=2))   # 2 vs 4 GPUs


@pytest.mark.parametrize("solver", ["hived", "cpsat-tenancy"])
def test_rounds_on_mixed_servers(solver):
    """Rounds of arrivals, finishes and preemption: every answer valid (the
    check inside allocate), guaranteed GPUs within the quota, never an
    error."""
    rng = random.Random(7)
    c = mixed({"a": [("gpu", 10)], "b": [("switch", 3)], "c": [("gpu", 4)]})
    jobs, n = [], 0
    for step in range(5 if solver == "hived" else 3):
        for _ in range(rng.randint(3, 8)):
            n += 1
            size = rng.choice((1, 1, 2, 4, 8, 16, 20))
            ten = rng.choice(("a", "b", "c", None))
            jobs.append(job(f"j{n}", size, ten, rng.randint(0, 2),
                            locality=rng.choice((None, None, "server", "switch"))))
        r = allocate(c, jobs, solver=solver, time_limit=5)
        for v, gs in guaranteed_usage(c, jobs, r.placements).items():
            assert len(gs) <= quota_gpus(c, v, "P100")
        jobs = [j for j in with_current(jobs, r) if rng.random() > 0.25]


def test_generated_mixed_instance():
    inst = load_instance(INSTANCE)
    h = allocate(inst.cluster, inst.jobs, solver="hived")
    m = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10)
    assert m.value >= h.value - 1e-9
    wide = [p for p in h.placements if len({g.gpu.split("/")[0] for g in p.gpus}) > 1]
    assert wide                  # jobs of 16 and 24 GPUs span servers

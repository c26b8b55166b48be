"""hived counts a running job as moved by the rule `finish()` uses.

`stats["moves"]` counts the running jobs whose new assignment is not
`Assign.same_as` their current one: other GPUs or shares, or other non-zero
CPU or memory on a server (not only other servers).
"""
from __future__ import annotations

from dataclasses import replace

from alloc import Cluster, GpuShare, Job, Placement, Server
from alloc.problem import Assign, compile_problem
from alloc.engines.cells.round import _same


def test_a_running_job_with_other_cpu_on_the_same_gpus_has_moved():
    c = Cluster((Server("s0", 24000, 512000, 8, "V100"), Server("s1", 24000, 512000, 8, "V100")))
    job = Job("a", 2, cpu=6000, mem=128000, model="res18")
    run = replace(job, current=Placement("a", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
                                         {"s0": 6000}, {"s0": 128000}))
    p = compile_problem(c, [run])
    cur = p.current_assign(0)
    assert _same(p, 0, cur)
    # a zero entry on another server is no move; other amounts are
    assert _same(p, 0, Assign(cur.gpus, cur.cpu + ((1, 0),), cur.mem))
    assert not _same(p, 0, Assign(cur.gpus, ((0, 4000),), cur.mem))
    assert not _same(p, 0, Assign(cur.gpus, cur.cpu, ((0, 64000),)))
    assert not _same(p, 0, Assign(((0, 1000), (2, 1000)), cur.cpu, cur.mem))
    assert not _same(p, 0, Assign(((0, 1000), (1, 500)), cur.cpu, cur.mem))


def test_a_job_fits_the_room_a_defragmenting_move_freed():
    """Moving ``j2`` off ``s1`` makes room for ``j1``; ``j4`` (the same shape,
    later in the order) then fits beside it and is placed, not left waiting
    in room the moves freed."""
    from alloc import Cell, Cluster, GpuShare, Job, Placement, Server, Tenant, allocate
    from alloc.testing import idle_room_problems
    cl = Cluster((Server("s0", 8000, 65536, 2, "P100"), Server("s1", 8000, 65536, 4, "V100"),
                  Server("s2", 8000, 65536, 2, "P100")), ("server", "socket", "gpu"),
                 tenants={"vc0": Tenant("vc0", (Cell("server", 1, "P100"),))})
    run = Placement("j2", tuple(GpuShare(f"s1/gpu{g}", 1000) for g in range(3)), {"s1": 3000},
                    {"s1": 49152})
    share = dict(gpu_milli=100, cpu=1000, mem=16384, gpu_types=("V100",))
    jobs = [Job("j0", 0, cpu=1000, mem=16384), Job("j1", 1, **share),
            Job("j2", 3, cpu=3000, mem=49152, current=run), Job("j3", 0, cpu=1000, mem=16384),
            Job("j4", 1, **share)]
    a = allocate(cl, jobs, solver="hived", objective="gpus", max_moves=None, move_cost=0.0)
    assert "j4" in {p.job for p in a.placements}
    assert not idle_room_problems(cl, jobs, a)


def test_room_a_move_frees_goes_to_the_higher_ranked_job_first():
    """Moving ``j0`` off ``s1`` to place ``j3`` also lets ``j2`` (ranked above
    ``j3``) spread over ``s1`` and ``s0``: ``j2`` gets the room, ``j3`` waits
    (it took it, and ``j2`` waited behind lower-ranked work)."""
    from alloc import allocate
    from alloc.testing import order_problems
    cl = Cluster((Server("s0", 8000, 65536, 2, "P100"), Server("s1", 8000, 524288, 4, "P100"),
                  Server("s2", 8000, 65536, 4, "P100")), ("server", "socket", "switch", "gpu"))
    run = Placement("j0", tuple(GpuShare(f"s1/gpu{g}", 1000) for g in range(3)), {"s1": 3000},
                    {"s1": 49152})
    jobs = [Job("j0", 3, cpu=3000, mem=49152, current=run), Job("j1", 0, cpu=1000, mem=16384),
            Job("j2", 5, cpu=5000, mem=320000),
            Job("j3", 2, cpu=2000, mem=128000, locality="server")]
    a = allocate(cl, jobs, solver="hived", objective="gpus", order=["j0"], max_moves=None,
                 move_cost=0.0)
    assert "j2" in {p.job for p in a.placements}
    assert not order_problems(cl, jobs, a, ["j0"])

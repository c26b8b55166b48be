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

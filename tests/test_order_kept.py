"""Heuristics keep the caller's order: a job is never left out while jobs
ranked below it hold the room it needs (regressions found by the
order-keeping property of the testing kit)."""
from alloc import Cluster, Job, Server, allocate


def test_hived_places_in_the_callers_order():
    """hived sorted pending jobs by priority alone: with an explicit order
    of equal-priority jobs it placed them in input order."""
    cl = Cluster((Server("s0", cpu=8000, mem=65536, gpus=2, gpu_type="V100"),))
    jobs = [Job(f"j{k}", gpus=1, cpu=1000, mem=16384) for k in range(3)]
    order = ["j0", "j2", "j1"]
    a = allocate(cl, jobs, solver="hived", order=order)
    assert sorted(p.job for p in a.placements) == ["j0", "j2"]


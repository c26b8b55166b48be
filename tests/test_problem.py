"""The compile step: values on indices equal the placements' recomputed values;
running jobs are fixed and their capacity is taken; ranks follow the order."""
from hypothesis import given, settings

from alloc import Cluster, GpuShare, Job, Placement, Server
from alloc.deadline import Deadline
from alloc.problem import compile_problem, job_order
from alloc.registry import get_solver
from alloc.testing.strategies import instances
from alloc.validate import prepare


@settings(max_examples=40)
@given(instances())
def test_value_on_indices_equals_the_placements_value(inst):
    cl, jobs = prepare(*inst)
    for obj in ("throughput", "gpus", "jobs"):
        p = compile_problem(cl, jobs, obj)
        sol = get_solver("best-fit").solve(p, deadline=Deadline.after(5))
        for j, a in list(sol.assign.items()) + list(p.fixed.items()):
            assert abs(p.objective.value(p.jobs[j], p.placement(j, a)) - p.value_of(j, a)) < 1e-9


def test_running_jobs_fixed_and_ranks_from_order():
    cl = Cluster((Server("s0", 8000, 64000, 4, "V100"),))
    run = Job("r", gpus=2, cpu=2000, mem=1000,
              current=Placement("r", (GpuShare("s0/gpu1", 1000), GpuShare("s0/gpu3", 1000)),
                                {"s0": 2000}, {"s0": 1000}))
    jobs = [Job("a", gpus=1, cpu=1000, mem=1000, priority=5), run,
            Job("b", gpus=1, cpu=1000, mem=1000)]
    p = compile_problem(cl, jobs)
    assert p.running == (1,) and p.pending == (0, 2)
    assert list(p.gpu_free) == [1000, 0, 1000, 0] and p.free_cpu[0] == 6000
    assert job_order(p) == [0, 2]                         # priority first
    q = compile_problem(cl, jobs, order=["b", "a"])
    assert job_order(q) == [2, 0]                          # the explicit order wins

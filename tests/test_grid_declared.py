"""A solver that gives a job other CPU or memory than it asked declares the
`grid` capability (docs/solvers.md: the request, or a point of the grid)."""
import pytest

from alloc import Cluster, Job, Server, allocate, solvers
from alloc.needs import needed_capabilities

CLUSTER = Cluster(tuple(Server(f"s{i}", cpu=24000, mem=512000, gpus=8, gpu_type="V100")
                        for i in range(2)))
JOBS = [Job("train", gpus=4, cpu=12000, mem=256000, model="res18", locality="server"),
        Job("notebook", gpus=1, gpu_milli=250, cpu=2000, mem=16384)]


@pytest.mark.parametrize("name", [n for n, s in solvers().items() if s.available
                                  and needed_capabilities(CLUSTER, JOBS) <= s.capabilities])
def test_other_than_the_request_only_with_grid(name):
    a = allocate(CLUSTER, JOBS, solver=name, time_limit=5)
    asked = {j.id: (j.cpu, j.mem) for j in JOBS}
    changed = [p.job for p in a.placements
               if (sum(p.cpu.values()), sum(p.mem.values())) != asked[p.job]]
    assert not changed or "grid" in solvers()[name].capabilities, f"{name} changed {changed}"


def test_some_grid_solver_does_resize():
    """The property above is not vacuous: on this input a grid solver gives
    the job a point of its grid other than its request."""
    a = allocate(CLUSTER, JOBS, solver="greedy-upgrade", time_limit=5)
    assert sum(a.placement("train").cpu.values()) != 12000 or \
        sum(a.placement("train").mem.values()) != 256000

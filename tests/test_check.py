"""violations() catches every kind of broken allocation."""
from dataclasses import replace

import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, allocate, violations
from alloc.model import Allocation
from alloc.profiles import load_profile

CL = Cluster((Server("a", 8000, 65536, 4, "V100", sockets=2),
              Server("b", 8000, 65536, 4, "P100", sockets=2)),
             levels=("server", "socket", "gpu"))


def alloc_of(*placements, unplaced=()):
    return Allocation(tuple(placements), tuple(unplaced))


def P(job, gpus, cpu, mem, tp=1.0, milli=1000):
    return Placement(job, tuple(GpuShare(g, milli) for g in gpus), cpu, mem, tp)


def test_valid_allocation_passes():
    jobs = [Job("x", gpus=2, cpu=2000, mem=1000, locality="socket")]
    a = alloc_of(P("x", ["a/gpu0", "a/gpu1"], {"a": 2000}, {"a": 1000}))
    assert violations(CL, jobs, a) == []


@pytest.mark.parametrize("jobs, a, expect", [
    ([Job("x", gpus=1, cpu=9000, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 9000}, {"a": 1})),
     "server a: CPU 9000"),
    ([Job("x", gpus=1, cpu=1, mem=70000)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 70000})),
     "server a: memory"),
    ([Job("x", gpus=1, gpu_milli=600, cpu=1, mem=1), Job("y", gpus=1, gpu_milli=600, cpu=1, mem=1)],
     alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1}, milli=600),
              P("y", ["a/gpu0"], {"a": 1}, {"a": 1}, milli=600)), "GPU a/gpu0: 1200 milli"),
    ([Job("x", gpus=2, cpu=1, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1})), "gang"),
    ([Job("x", gpus=1, cpu=1, mem=1, gpu_types=("P100",))],
     alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1})), "is V100"),
    ([Job("x", gpus=2, cpu=2, mem=2, locality="socket")],
     alloc_of(P("x", ["a/gpu1", "a/gpu2"], {"a": 2}, {"a": 2})), "locality needs one"),
    ([Job("x", gpus=1, cpu=1, mem=1)], alloc_of(P("x", ["a/gpu0"], {"b": 1}, {"b": 1})),
     "holds none of its GPUs"),
    ([Job("x", gpus=1, cpu=5, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1})),
     "requested 5"),
    ([Job("x", gpus=1, cpu=1, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1}, tp=3.0)),
     "reported throughput"),
    ([Job("x", gpus=1, cpu=1, mem=1)], alloc_of(), "missing from both"),
    ([Job("x", gpus=1, cpu=1, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1}), unplaced=["x"]),
     "appears 2 times"),
    ([Job("x", gpus=1, cpu=1, mem=1)], alloc_of(P("x", ["z/gpu0"], {"a": 1}, {"a": 1})), "unknown GPU"),
    ([Job("x", gpus=0, cpu=1, mem=1)], alloc_of(P("x", [], {"a": 1, "b": 0}, {"a": 1})),
     "exactly one server"),
    ([Job("x", gpus=1, gpu_milli=500, cpu=1, mem=1)], alloc_of(P("x", ["a/gpu0"], {"a": 1}, {"a": 1})),
     "share 1000 milli, job asks 500"),
])
def test_violation_detected(jobs, a, expect):
    out = violations(CL, jobs, a)
    assert any(expect in v for v in out), out


def test_grid_point_must_be_feasible():
    prof = load_profile("res18")
    j = Job("x", gpus=1, cpu=3000, mem=64000, model="res18", profile=prof)
    ok = P("x", ["a/gpu0"], {"a": 6000}, {"a": 64000}, tp=prof.grid_value(6000, 64000))
    assert violations(CL, [j], alloc_of(ok)) == []
    bad = P("x", ["a/gpu0"], {"a": 6000}, {"a": 1000}, tp=0.0)  # below every feasible memory cell
    assert any("no feasible point" in v for v in violations(CL, [j], alloc_of(bad)))


def test_preempted_must_have_been_running():
    j = Job("x", gpus=1, cpu=1, mem=1)
    a = Allocation((), ("x",), ("x",))
    assert any("was not running" in v for v in violations(CL, [j], a))


def test_allocate_never_returns_violations():
    jobs = [Job(f"j{i}", gpus=g, cpu=1000 * g, mem=4096 * g) for i, g in enumerate([4, 2, 2, 1, 1, 3])]
    for solver in ("proportional", "best-fit"):
        a = allocate(CL, jobs, solver=solver)
        assert violations(CL, jobs, a) == []
        assert a.status.value == "feasible" and a.bound is None


def test_honest_status():
    from alloc.solve import honest_status
    from alloc.model import Status
    a = Allocation(status=Status.OPTIMAL, value=1.0, bound=2.0)
    assert honest_status(a, exact=True).status is Status.FEASIBLE
    assert honest_status(replace(a, bound=1.0), exact=True).status is Status.OPTIMAL
    assert honest_status(replace(a, bound=1.0), exact=False).status is Status.FEASIBLE
    assert honest_status(replace(a, status=Status.INFEASIBLE), exact=False).status is Status.FEASIBLE


def test_unknown_solver_lists_valid_ones():
    with pytest.raises(ValueError, match="valid solvers: .*best-fit"):
        allocate(CL, [], solver="nope")

"""The greedy engine: consolidation, sharing, spreading, CPU-only jobs."""
from alloc import Cluster, Job, Server, allocate, violations
from alloc.problem import Assign, compile_problem
from alloc.engines.greedy.state import State

CL = Cluster(tuple(Server(f"s{i}", 32000, 262144, 8, "V100", sockets=2, switches_per_socket=2)
                   for i in range(2)), levels=("server", "socket", "switch", "gpu"))


def test_consolidates_into_the_innermost_level():
    jobs = [Job("a", gpus=1, cpu=1000, mem=1), Job("b", gpus=2, cpu=1000, mem=1),
            Job("c", gpus=4, cpu=1000, mem=1)]
    a = allocate(CL, jobs, solver="proportional")
    got = {p.job: [g.gpu for g in p.gpus] for p in a.placements}
    assert got["b"] == ["s0/gpu2", "s0/gpu3"]           # a whole free switch
    assert got["c"] == [f"s0/gpu{k}" for k in range(4, 8)]  # a whole free socket


def test_socket_locality_refuses_a_split_socket():
    p = compile_problem(CL, [Job("x", gpus=4, cpu=1, mem=1, locality="socket")])
    st = State(p)
    st.place(-1, Assign(((0, 1000), (4, 1000)), ((0, 0),), ((0, 0),)))  # one GPU busy in each socket of s0
    assert st.gpus_on_server(0, 0) is None
    assert st.gpus_on_server(0, 1) == [8, 9, 10, 11]


def test_shared_jobs_fill_the_fullest_gpu():
    jobs = [Job(f"m{i}", gpus=1, gpu_milli=m, cpu=100, mem=1) for i, m in enumerate([600, 300, 400, 100])]
    a = allocate(CL, jobs, solver="best-fit")
    got = {p.job: p.gpus[0].gpu for p in a.placements}
    assert got["m0"] == got["m2"]  # 600 + 400 fill one GPU
    assert got["m1"] == got["m3"]
    assert not violations(CL, jobs, a)


def test_spreads_when_no_server_fits():
    jobs = [Job("big", gpus=12, cpu=12000, mem=12)]
    a = allocate(CL, jobs, solver="proportional")
    p = a.placements[0]
    assert len(p.gpus) == 12 and set(p.cpu) == {"s0", "s1"}
    assert p.cpu["s0"] + p.cpu["s1"] == 12000
    assert p.cpu["s0"] == 1000 * sum(g.gpu.startswith("s0/") for g in p.gpus)
    import pytest
    from alloc import InputError
    wide = [Job("big", gpus=12, cpu=1, mem=1, locality="server"), Job("ok", gpus=1, cpu=1, mem=1)]
    a = allocate(CL, wide, solver="proportional")       # unplaceable now: a reason, not an error
    assert a.unplaced == ("big",) and "on one server" in a.reasons["big"]
    assert [p.job for p in a.placements] == ["ok"]
    with pytest.raises(InputError, match="cannot be placed on this cluster now"):
        allocate(CL, wide, solver="proportional", strict=True)


def test_cpu_only_jobs_use_one_server():
    jobs = [Job("c", gpus=0, cpu=30000, mem=10), Job("d", gpus=0, cpu=30000, mem=10)]
    a = allocate(CL, jobs, solver="best-fit")
    assert sorted(next(iter(p.cpu)) for p in a.placements) == ["s0", "s1"]


def test_priority_goes_first():
    jobs = [Job("low", gpus=16, cpu=1, mem=1), Job("high", gpus=8, cpu=1, mem=1, priority=5)]
    a = allocate(CL, jobs, solver="proportional")
    assert a.unplaced == ("low",)

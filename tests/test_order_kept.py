"""Heuristics keep the caller's order: a job is never left out while jobs
ranked below it hold the room it needs (regressions found by the
order-keeping property of the testing kit)."""
import pytest

from alloc import Cluster, Job, Server, allocate
from alloc.model import Profile


def test_hived_places_in_the_callers_order():
    """hived sorted pending jobs by priority alone: with an explicit order
    of equal-priority jobs it placed them in input order."""
    cl = Cluster((Server("s0", cpu=8000, mem=65536, gpus=2, gpu_type="V100"),))
    jobs = [Job(f"j{k}", gpus=1, cpu=1000, mem=16384) for k in range(3)]
    order = ["j0", "j2", "j1"]
    a = allocate(cl, jobs, solver="hived", order=order)
    assert sorted(p.job for p in a.placements) == ["j0", "j2"]


def test_local_search_never_swaps_out_a_higher_ranked_job():
    """local-search swapped an unplaced job in for a placed one of lower
    value whatever their ranks: the CPU-only job ranked first went out for
    the GPU job ranked second."""
    cl = Cluster((Server("s0", cpu=8000, mem=65536, gpus=2, gpu_type="V100"),))
    prof = Profile("p0", (1000, 2000), (16384,), ((1.01,), (1.01,)))
    jobs = [Job("j0", gpus=2, cpu=2000, mem=32768, model="p0", profile=prof),
            Job("j1", gpus=0, cpu=1000, mem=64000)]
    order = ["j1", "j0"]
    a = allocate(cl, jobs, solver="local-search", order=order, time_limit=5)
    assert [p.job for p in a.placements] == ["j1"]
    # without an order both have the same rank: the swap may raise the value
    b = allocate(cl, jobs, solver="local-search", time_limit=5)
    assert b.value >= a.value


def test_local_search_never_shrinks_a_higher_ranked_job_for_a_lower_one():
    """local-search inserted an unlisted GPU job by re-choosing a smaller
    CPU point for a job ranked above it (the server was full), which left
    room that the listed CPU-only job ``j4`` fits in held by the unlisted one.
    A move for a job re-chooses only jobs ranked no higher than it."""
    from alloc.testing import order_problems
    cl = Cluster((Server("s0", cpu=8000, mem=262144, gpus=2, gpu_type="V100"),),
                 levels=("server", "gpu"))
    jobs = [Job("j0", 1, gpu_milli=100, cpu=1000, mem=16384, gpu_types=("T4",)),
            Job("j1", 1, gpu_milli=100, cpu=1000, mem=16384),
            Job("j2", 0, cpu=1000, mem=16384), Job("j3", 0, cpu=3000, mem=16384),
            Job("j4", 0, cpu=1000, mem=16384), Job("j5", 0, cpu=3000, mem=16384),
            Job("j6", 1, gpu_milli=100, cpu=2000, mem=16384, model="res18"),
            Job("j7", 0, cpu=1000, mem=16384)]
    order = ["j0", "j5", "j6", "j3", "j4"]
    a = allocate(cl, jobs, solver="local-search", objective="gpus", order=order,
                 max_moves=None, time_limit=5)
    assert not order_problems(cl, jobs, a, order)


def test_a_running_job_that_moves_is_counted_where_it_ran():
    """A lower-ranked running job that moves holds, for the order, the room it
    held before (the answer could have left it there): a move within a full
    server displaces nobody; a move into a waiting job's room does."""
    from alloc import Allocation, Cluster, GpuShare, Job, Placement, Server
    from alloc.testing import order_problems

    def at(jid, srv, gpu):
        return Placement(jid, (GpuShare(f"{srv}/gpu{gpu}", 1000),), {srv: 1000}, {srv: 1000})

    one = Cluster((Server("s0", 8000, 2000, 2, "V100"),))
    jobs = [Job("x", 0, cpu=1000, mem=1000), Job("r", 1, cpu=1000, mem=1000,
                                                 current=at("r", "s0", 0)),
            Job("w", 0, cpu=1000, mem=1000)]
    a = Allocation((Placement("w", (), {"s0": 1000}, {"s0": 1000}), at("r", "s0", 1)),
                   unplaced=("x",))
    assert not order_problems(one, jobs, a, order=["w", "x", "r"])
    two = Cluster((Server("s0", 8000, 8000, 1, "V100"), Server("s1", 8000, 8000, 1, "V100")))
    jobs = [Job("x", 1, cpu=1000, mem=1000), Job("r", 1, cpu=1000, mem=1000,
                                                 current=at("r", "s1", 0)),
            Job("w", 1, cpu=1000, mem=1000)]
    a = Allocation((at("r", "s0", 0), at("w", "s1", 0)), unplaced=("x",))
    assert order_problems(two, jobs, a, order=["x", "r", "w"]) == [
        "job 'x' (rank 0) is unplaced but fits in the room that running jobs and jobs ranked "
        "at or above it leave (on s0/gpu0), held by 'r', 'w' ranked below it"]


def test_a_running_job_moved_out_of_the_way_of_higher_work_holds_its_new_place():
    """``r`` (running, ranked last) swaps GPUs with ``a``, which took ``r``'s
    old one: ``r`` holds the GPU it went to, and ``x`` (which stops no one)
    displaced by nobody."""
    from alloc import Allocation, Cluster, GpuShare, Job, Placement, Server
    from alloc.testing import order_problems

    def at(jid, gpu):
        return Placement(jid, (GpuShare(f"s0/gpu{gpu}", 1000),), {"s0": 1000}, {"s0": 1000})

    cl = Cluster((Server("s0", 8000, 8000, 2, "V100"),))
    jobs = [Job("a", 1, cpu=1000, mem=1000), Job("x", 1, cpu=1000, mem=1000),
            Job("r", 1, cpu=1000, mem=1000, current=at("r", 0))]
    a = Allocation((at("a", 0), at("r", 1)), unplaced=("x",))
    assert not order_problems(cl, jobs, a, order=["a", "x", "r"])


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_a_job_at_throughput_zero_has_no_claim_on_the_order(solver):
    """``j3`` (7 GPUs, a profile with no positive point) fits spread over
    ``s1`` and ``s2`` but would run at throughput 0: the order's repair does
    not place it over ``j4`` (ranked below it), so the exact solvers keep
    the answer that places every job of positive value, as the heuristics do."""
    from alloc import violations
    from alloc.testing import order_problems
    cl = Cluster(tuple(Server(f"s{i}", 8000, 65536, g, "P100") for i, g in enumerate((2, 4, 4))),
                 ("server", "socket", "switch", "gpu"))
    zero = Profile("p3", (500,), (8192,), ((None,),))
    jobs = [*(Job(f"j{k}", 0, cpu=1000, mem=16384) for k in range(3)),
            Job("j3", 7, cpu=7000, mem=114688, model="p3", profile=zero),
            Job("j4", 0, cpu=2000, mem=64000)]
    kw = dict(objective="throughput", order=["j0"], preempt="order", max_moves=None)
    a = allocate(cl, jobs, solver=solver, time_limit=5, **kw)
    heur = allocate(cl, jobs, solver="fgd", **kw)
    assert a.value >= heur.value == 4.0
    assert not order_problems(cl, jobs, a, ["j0"])
    assert not violations(cl, jobs, a, order=["j0"], preempt="order", max_moves=None)


def test_local_search_places_a_job_of_no_value_in_the_room_left():
    """Under the objective ``gpus`` a CPU-only job is worth nothing, so no
    move of local search gains by it: it was left out beside a server with
    room for it (the answer not maximal)."""
    from alloc import load_profile
    from alloc.testing import idle_room_problems
    cl = Cluster((Server("s0", 16000, 524288, 8, "P100"), Server("s1", 8000, 65536, 0),
                  Server("s2", 8000, 65536, 2, "P100")), ("server", "socket", "switch", "gpu"))
    p3 = Profile("p3", (2000, 3000, 4000), (32768,), ((None,), (2.07,), (0.52,)),
                 scaling={1: 1.0, 2: 1.04})
    jobs = [Job("j0", 1, gpu_milli=100, cpu=2000, mem=16384, gpu_types=("P100",)),
            Job("j1", 7, cpu=21000, mem=917504, model="res18", profile=load_profile("res18")),
            Job("j2", 0, cpu=1000, mem=64000),
            Job("j3", 1, gpu_milli=500, cpu=1000, mem=64000, gpu_types=("P100",), model="p3",
                profile=p3),
            Job("j4", 5, cpu=15000, mem=320000, gpu_types=("P100",), weight=2.0)]
    a = allocate(cl, jobs, solver="local-search", objective="gpus", seed=2082,
                 order=["j1", "j3", "j4", "j0"])
    assert "j2" in {p.job for p in a.placements}
    assert not idle_room_problems(cl, jobs, a)


@pytest.mark.parametrize("solver", ["greedy-upgrade", "local-search"])
def test_a_job_whose_cheap_point_fits_nowhere_goes_at_its_request(solver):
    """``j4``'s cheapest good point (2,000 milli-CPU per GPU) fits nowhere
    beside ``j1``; at its request (1,000 per GPU, 128 GiB) it spreads over
    both servers.  It was left out, and the CPU-only jobs ranked below it took
    the room."""
    p4 = Profile("p4", (500, 1000, 2000), (8192, 131072),
                 ((None, None), (None, 0.01), (0.01, None)))
    zero = Profile("p1", (500,), (8192,), ((None,),))
    cl = Cluster((Server("s0", 8000, 524288, 4, "P100"), Server("s1", 8000, 262144, 2, "V100")))
    jobs = [Job("j0", 0, cpu=1000, mem=16384),
            Job("j1", 2, cpu=6000, mem=32768, gpu_types=("P100",), model="p1", profile=zero),
            Job("j2", 0, cpu=1000, mem=16384), Job("j3", 0, cpu=1000, mem=16384),
            Job("j4", 4, cpu=4000, mem=524288, model="p4", profile=p4)]
    from alloc.testing import order_problems
    a = allocate(cl, jobs, solver=solver, objective="gpus", order=["j1", "j4"])
    assert {"j1", "j4"} <= {p.job for p in a.placements}
    assert not order_problems(cl, jobs, a, ["j1", "j4"])

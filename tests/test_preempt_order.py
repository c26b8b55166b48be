"""Preemption by the caller's order (``allocate(..., order=..., preempt="order")``):
the one victim rule, the lowest-ranked first, as few as possible, never placed
again in the call, the same decision for every solver; refused where it does
not apply; nothing changes without it."""
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc import (Cluster, InputError, Job, Server, allocate, load_instance, register,
                   violations)
from alloc.registry import solvers
from alloc.conformance import applicable_solvers, check_across, check_solver, instances
from alloc.model import Allocation, GpuShare, Placement

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


def server(i, gpus=4, cpu=32000, mem=256000, **kw):
    return Server(f"s{i}", cpu, mem, gpus, "V100", **kw)


def running(jid, srv, gpus, n=1, cpu=1000, mem=1000):
    """A job running on GPUs ``gpus`` (local indices) of server ``srv``."""
    k = len(gpus)
    return Job(jid, k, cpu=cpu, mem=mem,
               current=Placement(jid, tuple(GpuShare(f"{srv}/gpu{g}", 1000) for g in gpus),
                                 {srv: cpu}, {srv: mem}))


def test_lowest_ranked_one_gpu_jobs_stop_first():
    cl = Cluster((server(0), server(1)))
    run = [running(f"r{k}", f"s{k // 4}", [k % 4]) for k in range(8)]
    pend = [Job("p0", 1, cpu=1000, mem=1000), Job("p1", 1, cpu=1000, mem=1000)]
    order = ["r0", "r1", "p0", "r2", "r3", "p1", "r4", "r5", "r6", "r7"]
    a = allocate(cl, run + pend, order=order, preempt="order")
    assert set(a.preempted) == {"r6", "r7"}
    assert a.stats["preempted_for"] == {"r7": "p0", "r6": "p1"}
    assert {"p0", "p1"} <= {p.job for p in a.placements}
    assert not violations(cl, run + pend, a, order=order, preempt="order")


def test_the_highest_victim_ranks_lowest_then_as_few_as_possible():
    # p needs a whole 4-GPU server.  s0: jobs ranked 3 and 9; s1: jobs ranked 5,
    # 6 (two 1-GPU jobs) and 7, 8; stopping s1's four jobs keeps every job
    # ranked above 5 running, s0 would stop the job ranked 3.
    cl = Cluster((server(0), server(1)))
    run = [running("a3", "s0", [0, 1]), running("a9", "s0", [2, 3]),
           running("b5", "s1", [0]), running("b6", "s1", [1]), running("b7", "s1", [2]),
           running("b8", "s1", [3])]
    p = Job("p", 4, cpu=1000, mem=1000, locality="server")
    order = ["p", "x1", "x2", "a3", "x4", "b5", "b6", "b7", "b8", "a9"]
    order = [j for j in order if not j.startswith("x")]
    a = allocate(cl, run + [p], order=order, preempt="order")
    assert set(a.preempted) == {"b5", "b6", "b7", "b8"}
    # prune: 2 GPUs free, a 1-GPU job ranked last and a 3-GPU job above it;
    # stopping the 3-GPU job alone is enough, so the 1-GPU job keeps running
    run = [running("big", "s0", [0, 1, 2]), running("small", "s1", [0]),
           running("other", "s1", [1])]
    cl = Cluster((server(0, gpus=8), server(1, gpus=2)))
    run = [running("big", "s0", [0, 1, 2]), running("small", "s0", [3]),
           running("fill", "s0", [4, 5]), running("s1a", "s1", [0, 1])]
    p = Job("p", 4, cpu=1000, mem=1000, locality="server")
    a = allocate(cl, run + [p], order=["fill", "s1a", "p", "big", "small"], preempt="order")
    assert a.preempted == ("big",)
    assert a.placement("small").same_as(run[1].current)


def test_a_stopped_job_is_not_placed_again_and_unlisted_jobs_stop_no_one():
    cl = Cluster((server(0, gpus=2),))
    run = [running("low", "s0", [0, 1])]
    pend = [Job("p", 1, cpu=1000, mem=1000), Job("q", 1, cpu=1000, mem=1000)]
    a = allocate(cl, run + pend, order=["p", "low"], preempt="order")
    assert a.preempted == ("low",)                 # room for "low" is left, unused
    assert "low" in a.unplaced and a.placement("p") is not None
    # q is not listed: it ranks below every listed job and stops no one
    a = allocate(cl, run + pend[1:], order=["low"], preempt="order")
    assert not a.preempted
    # unlisted running jobs rank below every listed one: stopped first
    run2 = [running("u", "s0", [0]), running("l", "s0", [1])]
    a = allocate(cl, run2 + pend[:1], order=["p", "l"], preempt="order")
    assert a.preempted == ("u",)


def test_gangs_spread_over_servers_shared_gpus_and_cpu_only_jobs():
    cl = Cluster((server(0), server(1), server(2)))
    run = [running("h0", "s0", [0, 1, 2, 3]), running("l1", "s1", [0, 1]),
           running("h1", "s1", [2, 3]), running("l2", "s2", [0, 1, 2, 3])]
    gang = Job("gang", 6, cpu=6000, mem=6000)          # no locality: may spread
    order = ["h0", "h1", "gang", "l1", "l2"]
    a = allocate(cl, run + [gang], order=order, preempt="order")
    assert set(a.preempted) == {"l1", "l2"}
    assert {g.gpu.split("/")[0] for g in a.placement("gang").gpus} == {"s1", "s2"}
    share = Job("share", 1, gpu_milli=600, cpu=1000, mem=1000)
    half = Job("half", 1, gpu_milli=500, cpu=1000, mem=1000,
               current=Placement("half", (GpuShare("s0/gpu0", 500),), {"s0": 1000},
                                 {"s0": 1000}))
    full = [running(f"f{k}", "s0", [k]) for k in (1, 2, 3)]
    cl1 = Cluster((server(0),))
    a = allocate(cl1, [half, share] + full, order=["f1", "f2", "f3", "share", "half"],
                 preempt="order")
    assert a.preempted == ("half",)
    cpu_only = Job("cpu", 0, cpu=30000, mem=1000)
    big_cpu = Job("bigcpu", 0, cpu=31000, mem=1000,
                  current=Placement("bigcpu", (), {"s0": 31000}, {"s0": 1000}))
    a = allocate(cl1, [big_cpu, cpu_only], order=["cpu", "bigcpu"], preempt="order")
    assert a.preempted == ("bigcpu",)


def test_socket_locality_frees_one_socket():
    cl = Cluster((Server("s0", 32000, 256000, 8, "V100", sockets=2),),
                 ("server", "socket", "gpu"))
    run = [running("a", "s0", [0, 1]), running("b", "s0", [2, 3]),
           running("c", "s0", [4, 5]), running("d", "s0", [6, 7])]
    p = Job("p", 4, cpu=1000, mem=1000, locality="socket")
    a = allocate(cl, run + [p], order=["a", "p", "c", "b", "d"], preempt="order")
    # socket 0 would stop a (ranked above p); socket 1 stops c and d
    assert set(a.preempted) == {"c", "d"}


def test_without_preempt_nothing_changes():
    cl = Cluster((server(0, gpus=2),))
    run = [running("low", "s0", [0, 1])]
    pend = [Job("p", 1, cpu=1000, mem=1000)]
    for solver in [x for x in ("best-fit", "hived", "cpsat") if solvers()[x].available]:
        a = allocate(cl, run + pend, solver=solver, order=["p", "low"])
        assert not a.preempted and a.placement("low").same_as(run[0].current)


def test_refused_where_it_does_not_apply():
    cl = Cluster((server(0, gpus=2),))
    run = [running("low", "s0", [0, 1])]
    with pytest.raises(InputError, match="preempt: expected one of"):
        allocate(cl, run, preempt="rank")
    inst = load_instance(INSTANCES / "tenancy_small.json")
    with pytest.raises(InputError, match="tenancy rules"):
        allocate(inst.cluster, inst.jobs, preempt="order")

    from alloc import registry

    @register("keeps-nothing-pinned")
    def solve(problem, *, deadline, seed=0):
        """A solver that does not declare order-preemption."""
        from alloc.problem import Solution
        return Solution({})
    try:
        with pytest.raises(InputError, match="order-preemption"):
            allocate(cl, run, solver="keeps-nothing-pinned", order=["low"], preempt="order")
    finally:
        registry._EXTRA.pop("keeps-nothing-pinned")


def test_violations_name_a_victim_not_stopped_for_a_higher_ranked_job_on_its_server():
    cl = Cluster((server(0, gpus=1), server(1, gpus=1)))
    jobs = [running("v", "s0", [0]), Job("p", 1, cpu=1000, mem=1000)]
    elsewhere = Placement("p", (GpuShare("s1/gpu0", 1000),), {"s1": 1000}, {"s1": 1000}, 1.0)
    bad = Allocation((elsewhere,), ("v",), ("v",))
    out = violations(cl, jobs, bad, order=["p", "v"], preempt="order")
    assert any("placed now on a server it held" in x for x in out)
    there = Placement("p", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 1000}, 1.0)
    ok = Allocation((there,), ("v",), ("v",))
    assert not violations(cl, jobs, ok, order=["p", "v"], preempt="order")
    assert violations(cl, jobs, ok, order=["v", "p"], preempt="order")
    assert violations(cl, jobs, ok)          # equal priorities: no one outranks v


@pytest.mark.skipif(not solvers()["cpsat"].available, reason="cpsat needs ortools (absent)")
def test_cpsat_with_an_order_stays_on_the_configuration_model():
    cl = Cluster(tuple(server(i) for i in range(4)))
    run = [running(f"r{k}", f"s{k // 4}", [k % 4]) for k in range(16)]
    pend = [Job(f"p{k}", 1, cpu=1000, mem=1000) for k in range(4)]
    order = [j.id for j in pend] + [j.id for j in run]
    a = allocate(cl, run + pend, solver="cpsat", order=order, preempt="order", time_limit=10)
    assert len(a.preempted) == 4 and a.status.value == "optimal"
    assert "restrictions" not in a.stats and "binding" not in a.stats


@st.composite
def ordered(draw):
    cluster, jobs = draw(instances(max_servers=3, max_jobs=7, running=True))
    ids = [j.id for j in jobs]
    listed = draw(st.permutations(ids))
    cut = draw(st.integers(len(ids) // 2, len(ids)))
    return cluster, jobs, list(listed[:cut])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ordered())
def test_every_solver_conforms_under_preemption_by_order(inst):
    cluster, jobs, order = inst
    results, problems = {}, []
    for name in applicable_solvers(cluster, jobs, preempt="order"):
        bad, a = check_solver(name, cluster, jobs, time_limit=5.0, order=order,
                              preempt="order")
        problems += bad
        if a is not None:
            results[name] = a
    problems += check_across(results)
    assert not problems, problems
    decided = {tuple(sorted(a.preempted)) for a in results.values()}
    assert len(decided) <= 1, decided        # the core decides, the same for every solver
    for a in results.values():
        assert not set(a.preempted) & {p.job for p in a.placements}


def test_a_rank_is_not_capped():
    cl = Cluster(tuple(server(i, gpus=8) for i in range(300)))
    run = [running(f"r{k}", f"s{k // 8}", [k % 8]) for k in range(2400)]
    pend = [Job(f"p{k}", 1, cpu=1000, mem=1000) for k in range(3)]
    order = [j.id for j in run[:2000]] + [j.id for j in pend] + [j.id for j in run[2000:]]
    a = allocate(cl, run + pend, order=order, preempt="order")
    assert set(a.preempted) == {"r2399", "r2398", "r2397"}


@pytest.mark.skipif(not solvers()["cpsat"].available, reason="cpsat needs ortools (absent)")
def test_a_pinned_elastic_job_keeps_the_size_it_was_placed_at():
    """The job a stop was made for is pinned at its smallest size: hived does
    not grow it (with moves allowed it grew it past the exact solvers, which
    keep the pin)."""
    cl = Cluster((server(0, gpus=8),))
    r = running("r", "s0", range(6))
    p = Job("p", 4, cpu=1000, mem=1000, min_gpus=4, max_gpus=8)
    values = {}
    for name in ("hived", "cpsat"):
        a = allocate(cl, [r, p], solver=name, order=["p", "r"], preempt="order", move_cost=0.1,
                     time_limit=5)
        assert a.preempted == ("r",) and len(a.placement("p").gpus) == 4, name
        values[name] = a.value
    assert values["hived"] == pytest.approx(values["cpsat"])


# ------------------------------------------------------------------ packed
def packed_case():
    """Two 4-GPU servers: s0 runs r2 (ranked above r3) and r1 (the lowest);
    s1 runs r4 (ranked high) and r3.  A waiting 4-GPU gang without locality
    ranks first."""
    cl = Cluster((server(0), server(1)))
    run = [running("r1", "s0", [0, 1]), running("r2", "s0", [2, 3]),
           running("r3", "s1", [0, 1]), running("r4", "s1", [2, 3])]
    p = Job("p", 4, cpu=1000, mem=1000)
    return cl, run + [p], ["p", "r4", "r2", "r3", "r1"]


def test_by_default_a_gang_spreads_over_the_lowest_ranked_victims_servers():
    cl, jobs, order = packed_case()
    a = allocate(cl, jobs, order=order, preempt="order")
    assert set(a.preempted) == {"r1", "r3"}
    assert {g.gpu.split("/")[0] for g in a.placement("p").gpus} == {"s0", "s1"}


@pytest.mark.parametrize("solver", ["best-fit", "cpsat", "hived", "fgd"])
def test_preempt_packed_puts_the_gang_on_one_server(solver):
    cl, jobs, order = packed_case()
    a = allocate(cl, jobs, solver=solver, order=order, preempt="order", preempt_packed=True,
                 time_limit=5)
    assert set(a.preempted) == {"r1", "r2"}
    assert {g.gpu.split("/")[0] for g in a.placement("p").gpus} == {"s0"}
    assert a.stats["preempted_for"] == {"r1": "p", "r2": "p"}
    assert not violations(cl, jobs, a, order=order, preempt="order")


def test_preempt_packed_spreads_when_no_server_can_hold_the_gang():
    cl = Cluster((server(0), server(1)))
    run = [running("r1", "s0", [0, 1]), running("h0", "s0", [2, 3]),
           running("r3", "s1", [0, 1]), running("h1", "s1", [2, 3])]
    p = Job("p", 4, cpu=1000, mem=1000)
    order = ["h0", "h1", "p", "r3", "r1"]           # h0 and h1 rank above p
    a = allocate(cl, run + [p], order=order, preempt="order", preempt_packed=True)
    assert set(a.preempted) == {"r1", "r3"}
    assert {g.gpu.split("/")[0] for g in a.placement("p").gpus} == {"s0", "s1"}


def test_preempt_packed_is_checked_and_passes_through_a_session():
    from alloc import Session
    cl, jobs, order = packed_case()
    with pytest.raises(InputError, match="preempt_packed"):
        allocate(cl, jobs, order=order, preempt="order", preempt_packed="yes")
    s = Session(cl, jobs=jobs, order=order, preempt="order", preempt_packed=True)
    r = s.step()
    assert {p.job for p in r.preempt} == {"r1", "r2"}


@pytest.mark.parametrize("solver", ["best-fit", "slurm-topology"])
def test_a_job_set_aside_at_a_grid_point_is_placed_there(solver):
    """The walk sets ``j3`` aside at its profile's other point (its request's
    memory fits nowhere), so ``j4`` stops the running job and takes the
    server ``j3``'s request would need; the solver, placing at requests,
    leaves ``j3`` out.  The answer must not make ``j3`` wait behind ``j4``:
    the order's repair places it at the point the walk counted on."""
    from alloc.model import Profile
    cl = Cluster((Server("s0", 8000, 65536, 2, "P100"), Server("s1", 8000, 262144, 4, "P100")))
    p3 = Profile("p3", (500,), (8192,), ((0.01,),))
    r = Placement("j5", tuple(GpuShare(f"s1/gpu{g}", 1000) for g in range(4)), {"s1": 4000},
                  {"s1": 256000})
    jobs = [*(Job(f"j{k}", 0, cpu=1000, mem=16384) for k in range(3)),
            Job("j3", 1, gpu_milli=100, cpu=1000, mem=64000, model="p3", profile=p3),
            Job("j4", 2, cpu=6000, mem=32768), Job("j5", 4, cpu=4000, mem=256000, current=r)]
    order = ["j0", "j1", "j2", "j3", "j4"]
    a = allocate(cl, jobs, solver=solver, order=order, preempt="order", max_moves=None)
    assert {"j3", "j4"} <= {p.job for p in a.placements}
    assert not violations(cl, jobs, a, order=order, preempt="order", max_moves=None)


def test_the_walk_counts_gpu_memory_where_it_binds():
    """Stopping ``j2`` (CPU-only) frees ``s1``'s memory for ``j4``, but the
    tightest GPU holds ``j5``, whose GPU memory with ``j4``'s exceeds the
    P100's 16 GiB: the walk pins ``j4`` on the other GPU, not there (the
    answer was refused by the final check)."""
    def job(jid, gpus, mem, srv=None, **kw):
        cur = None
        if srv is not None:
            g = (GpuShare(f"{srv}/gpu0", kw.get("gpu_milli", 1000)),) if gpus else ()
            cur = Placement(jid, g, {srv: 1000}, {srv: mem})
        return Job(jid, gpus, cpu=1000, mem=mem, current=cur, **kw)
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100"), Server("s1", 8000, 262144, 2, "P100")))
    jobs = [job("j0", 0, 16384), job("j1", 0, 16384), job("j2", 0, 131072, "s1"),
            job("j3", 0, 16384), job("j4", 1, 131072, gpu_milli=100, gpu_mem=12000),
            job("j5", 1, 16384, "s1", gpu_milli=100, gpu_mem=6000), job("j6", 0, 16384)]
    order = ["j0", "j1", "j3", "j4"]
    a = allocate(cl, jobs, solver="hived", order=order, preempt="order", max_moves=None)
    assert not violations(cl, jobs, a, order=order, preempt="order", max_moves=None)
    assert a.stats["preempted_for"] == {"j2": "j4"}         # on the GPU with the memory
    assert [g.gpu for g in a.placement("j4").gpus] == ["s1/gpu1"]


def _small_and_large_gpus():
    """s0's GPUs have 16000 MiB, s1's and s2's 40000: a job of 30000 MiB per
    GPU fits only the latter."""
    return Cluster((Server("s0", 8000, 64000, 2, "V100", gpu_mem=16000),
                    Server("s1", 8000, 64000, 2, "V100", gpu_mem=40000),
                    Server("s2", 8000, 64000, 2, "V100", gpu_mem=40000)))


def _holding(jid, *gpus):
    srv = {g.split("/")[0]: 1000 for g in gpus}
    return Job(jid, len(gpus), cpu=1000 * len(gpus), mem=1000 * len(gpus), gpu_mem=8000,
               current=Placement(jid, tuple(GpuShare(g, 1000) for g in gpus), srv, dict(srv)))


def test_a_spread_gang_counts_gpu_memory_on_its_victims_servers():
    """Stopping ``r0`` frees s0's GPUs, too small for ``p``: the gang of 3 is
    counted only on the GPUs with its memory, so ``r1`` stops for it (it
    waited, the victims chosen by whole GPUs alone)."""
    cl = _small_and_large_gpus()
    jobs = [_holding("r0", "s0/gpu0"), _holding("r1", "s1/gpu0"), _holding("r2", "s2/gpu0"),
            Job("p", 3, cpu=3000, mem=3000, gpu_mem=30000)]
    order = ["r2", "p", "r1", "r0"]
    a = allocate(cl, jobs, solver="hived", order=order, preempt="order")
    assert a.stats["preempted_for"] == {"r1": "p"}
    assert sorted(g.gpu for g in a.placement("p").gpus) == ["s1/gpu0", "s1/gpu1", "s2/gpu1"]
    assert not violations(cl, jobs, a, order=order, preempt="order")


def test_a_spread_gang_takes_its_victims_gpus_that_have_its_memory():
    """Stopping ``r0`` (on s0 and s1) is enough for ``p``; its GPU on s0 is
    too small, and the gang goes on the GPUs with its memory (it waited, the
    victim's GPUs taken first whatever their memory)."""
    cl = _small_and_large_gpus()
    jobs = [_holding("r0", "s0/gpu0", "s1/gpu0"), _holding("r1", "s2/gpu0"),
            Job("p", 3, cpu=3000, mem=3000, gpu_mem=30000)]
    order = ["p", "r1", "r0"]
    a = allocate(cl, jobs, solver="hived", order=order, preempt="order")
    assert a.stats["preempted_for"] == {"r0": "p"}
    assert sorted(g.gpu for g in a.placement("p").gpus) == ["s1/gpu0", "s1/gpu1", "s2/gpu1"]
    assert not violations(cl, jobs, a, order=order, preempt="order")


@pytest.mark.parametrize("solver", ["best-fit", "fgd", "hived", "slurm-topology"])
def test_a_job_set_aside_at_a_grid_point_runs_there_for_a_solver_without_grid(solver):
    """``p``'s request needs all of s0's memory, which ``r`` (ranked below
    it) holds some of; its profile's point fits beside ``r``, so the order's
    walk stops no one and sets ``p`` aside there: it runs there (it waited
    behind ``r``, the solver placing jobs at their request only)."""
    from alloc.model import Profile
    cl = Cluster((Server("s0", 8000, 524288, 8, "V100"),))
    prof = Profile("small", (500,), (8192,), ((0.01,),))
    r = Job("r", 1, cpu=1000, mem=16384,
            current=Placement("r", (GpuShare("s0/gpu0", 1000),), {"s0": 1000}, {"s0": 16384}))
    jobs = [r, Job("p", 4, cpu=4000, mem=524288, model="small", profile=prof)]
    a = allocate(cl, jobs, solver=solver, order=["p", "r"], preempt="order")
    assert {p.job for p in a.placements} == {"r", "p"} and not a.preempted
    assert a.placement("p").mem == {"s0": 4 * 8192}
    assert not violations(cl, jobs, a, order=["p", "r"], preempt="order")


def test_a_gang_set_aside_spread_runs_spread_for_a_solver_that_does_not_spread():
    """``p`` fits only spread over s0 and s1 beside ``r`` (ranked below it):
    the order's walk stops no one and sets it aside so; ``gpu-clustering``
    places a gang on one server only, and the order's repair spreads it (it
    waited behind ``r``)."""
    cl = Cluster((Server("s0", 8000, 65536, 2, "P100"), Server("s1", 8000, 65536, 4, "P100")))
    r = Job("r", 3, cpu=3000, mem=3000,
            current=Placement("r", tuple(GpuShare(f"s1/gpu{g}", 1000) for g in range(3)),
                              {"s1": 3000}, {"s1": 3000}))
    jobs = [r, Job("p", 3, cpu=3000, mem=3000)]
    a = allocate(cl, jobs, solver="gpu-clustering", order=["p", "r"], preempt="order")
    assert not a.preempted
    assert sorted(g.gpu for g in a.placement("p").gpus) == ["s0/gpu0", "s0/gpu1", "s1/gpu3"]
    assert not violations(cl, jobs, a, order=["p", "r"], preempt="order")


@pytest.mark.parametrize("solver", ["tiresias", "yarn", "proportional", "random"])
def test_a_job_ranked_above_a_pinned_one_gets_the_room_set_aside_for_it(solver):
    """The walk sets ``s0`` aside for ``j1`` (4 GPUs on one server), ``s1`` for ``j0``
    and ``j2`` (ranked above it), and stops ``r`` to pin ``j4`` on what
    ``s1`` has left.  These solvers put ``j2`` on ``s0``: ``j1`` then fitted
    nowhere and waited behind the pinned ``j4`` ranked below it."""
    from alloc.testing import order_problems
    cl = Cluster((server(0, cpu=8000), server(1, cpu=8000)))
    r = Placement("r", (GpuShare("s1/gpu0", 100),), {"s1": 6000}, {"s1": 1000})
    jobs = [Job("j0", 0, cpu=1000, mem=1000), Job("j1", 4, cpu=4000, mem=1000, locality="server"),
            Job("j2", 1, gpu_milli=100, cpu=1000, mem=1000),
            Job("r", 1, gpu_milli=100, cpu=6000, mem=1000, current=r),
            Job("j4", 1, gpu_milli=100, cpu=1000, mem=1000)]
    order = ["j0", "j2", "j1", "j4"]
    a = allocate(cl, jobs, solver=solver, order=order, preempt="order")
    assert a.stats["preempted_for"] == {"r": "j4"}
    assert {"j0", "j1", "j2", "j4"} <= {p.job for p in a.placements}
    assert not order_problems(cl, jobs, a, order)
    assert not violations(cl, jobs, a, order=order, preempt="order")


@pytest.mark.parametrize("solver, per_server", [("hived", None), ("cpsat-tenancy", None),
                                                 ("cpsat-tenancy", 1)])
def test_a_spread_gangs_victims_hold_its_gpu_memory(solver, per_server):
    """``j`` needs two whole GPUs of 32 GiB each (as a gang, or an even spread
    of one GPU a server): stopping ``r1`` and ``r2`` gives it ``s1`` and
    ``s2``.  ``s0``'s GPU, of the same type, has 16 GiB: the walk that
    counted whole GPUs alone kept ``r0`` (the lowest-ranked) as a victim,
    found the gang's memory missing there and left it waiting."""
    cl = Cluster((server(0, 1, gpu_mem=16384), server(1, 1, gpu_mem=32768),
                  server(2, 1, gpu_mem=32768)))
    jobs = [Job("j", 2, cpu=2000, mem=16384, gpu_mem=32768, gpus_per_server=per_server),
            *(running(f"r{k}", f"s{k}", [0]) for k in range(3))]
    order = ["j", "r1", "r2", "r0"]
    a = allocate(cl, jobs, solver=solver, order=order, preempt="order", time_limit=5)
    assert a.stats.get("preempted_for") == {"r1": "j", "r2": "j"}
    assert sorted(g.gpu for g in a.placement("j").gpus) == ["s1/gpu0", "s2/gpu0"]
    assert not violations(cl, jobs, a, order=order, preempt="order")


def test_a_job_stops_a_lower_ranked_one_where_room_set_aside_above_it_can_move():
    # j24 fits only spread at first (its room set aside on s0 and s1); once j33 has
    # stopped j29, s1 holds it whole.  j31 needs j7 stopped and the room j24 was given
    # on s0: the walk moves j24's room rather than let j14, ranked below j31, stop j7.
    from alloc.testing import order_problems

    def run(jid, gpus, cpu, mem, server, milli=1000):
        return Placement(jid, tuple(GpuShare(g, milli) for g in gpus), {server: cpu},
                         {server: mem})
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100", gpu_mem=32000)
                       for i in range(2)))
    spec = [("j13", 1, 6000, 64000, run("j13", ["s0/gpu5"], 6000, 64000, "s0")),
            ("j4", 4, 4000, 512000, None),
            ("j18", 2, 6000, 128000, run("j18", ["s1/gpu0", "s1/gpu1"], 6000, 128000, "s1")),
            ("j28", 1, 6000, 128000, None), ("j24", 3, 9000, 48000, None),
            ("j33", 1, 1000, 64000, None),
            ("j29", 1, 6000, 64000, run("j29", ["s1/gpu2"], 6000, 64000, "s1", 500)),
            ("j31", 1, 3000, 64000, None), ("j23", 1, 6000, 16000, None),
            ("j14", 2, 6000, 32000, None),
            ("j7", 2, 6000, 32000, run("j7", ["s0/gpu3", "s0/gpu4"], 6000, 32000, "s0"))]
    jobs = [Job(i, n, gpu_milli=500 if i == "j29" else 1000, cpu=c, mem=m, current=cur)
            for i, n, c, m, cur in spec]
    order = [s[0] for s in spec]
    for solver in ("best-fit", "proportional", "random"):
        a = allocate(cl, jobs, solver=solver, order=order, preempt="order")
        assert order_problems(cl, jobs, a, order) == [], solver
        assert a.stats["preempted_for"]["j7"] == "j31", solver


def test_a_moving_solver_keeps_the_job_the_walk_pinned_in_the_order_repair():
    """``proportional`` (migration, no preemption) re-places every job from
    scratch and lists neither the job the order's walk pinned (``j1``, for
    which ``big`` stops) nor any running job it keeps; the order's repair
    took such a job as stopped and gave its CPU to ``late``."""
    from alloc import Cluster, GpuShare, Job, Placement, Server, allocate, violations
    c = Cluster((Server("s0", 8000, 262144, 8, "V100"),))
    cpu_only = Placement("j0", (), {"s0": 1000}, {"s0": 16384})
    big = Placement("big", tuple(GpuShare(f"s0/gpu{g}", 1000) for g in range(7)),
                    {"s0": 7000}, {"s0": 114688})
    jobs = [Job("j0", 0, cpu=1000, mem=16384, current=cpu_only),
            Job("j1", 0, cpu=1000, mem=16384), Job("j2", 0, cpu=1000, mem=16384),
            Job("j3", 0, cpu=1000, mem=16384), Job("j4", 0, cpu=3000, mem=16384),
            Job("late", 1, gpu_milli=100, cpu=2000, mem=16384),
            Job("big", 7, cpu=7000, mem=114688, current=big)]
    kw = dict(objective="gpus", max_moves=None, move_cost=0.0, order=["j1"], preempt="order")
    a = allocate(c, jobs, solver="proportional", **kw)
    assert a.preempted == ("big",) and a.placement("j1") is not None
    assert a.placement("late") is None
    assert violations(c, jobs, a, max_moves=None, order=["j1"], preempt="order") == []


def test_a_move_never_takes_the_room_of_a_job_ranked_above_one_placed():
    """A multi-round session's input under ``preempt="order"`` with moves
    allowed: cpsat moved the running ``j14`` (rank 4) into the room ``j3``
    (rank 3) needed, and ``j3`` waited while ``j13`` (rank 6) ran.  The
    order's repair undoes the solver's moves when they cost a job ranked
    above a placed one its room."""
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule
    i = load_instance(Path(__file__).parent / "data" / "order_move_took_room.json")
    order = ["j20", "j21", "j15", "j3", "j14", "j12", "j13"]
    a = allocate(i.cluster, i.jobs, solver="cpsat", time_limit=2, seed=8, max_moves=2,
                 order=order, preempt="order")
    assert a.placement("j3") is not None
    assert order_problems(i.cluster, i.jobs, a, order,
                          may_preempt=order_preemption_rule(order)) == []


def test_a_move_that_opens_room_for_a_stop_is_undone():
    """The order's walk picks victims on the layout as given.  A solver that
    then moves ``b`` (ranked above ``p``) off s1 leaves s1 with one free GPU
    beside ``l1``, ranked below ``p``: ``p`` would fit there with ``l1``
    stopped, which the walk never saw.  The repair walks the ranks again with
    the move undone (on the layout as given ``p`` fits nowhere, victims
    included), so no job ranked above running work waits where stopping that
    work would place it."""
    from alloc import registry
    from alloc.problem import Solution
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule
    cl = Cluster((server(0, gpus=2), server(1, gpus=2), server(2, gpus=1)))
    jobs = [running("a", "s0", [0]), running("l0", "s0", [1]), running("b", "s1", [0]),
            running("l1", "s1", [1]), Job("p", 2, cpu=1000, mem=1000, locality="server")]
    order = ["a", "b", "p", "l0", "l1"]

    @register("moves-b", capabilities=["migration", "order-preemption"])
    def solve(problem, *, deadline, seed=0):
        """Every running job where it runs but ``b``, moved to s2."""
        b = problem.job_index["b"]
        assign = dict(problem.fixed)
        assign[b] = problem.make_assign(b, [int(problem.gpu_first[2])], 0)
        return Solution(assign)
    try:
        a = allocate(cl, jobs, solver="moves-b", max_moves=1, order=order, preempt="order")
    finally:
        registry._EXTRA.pop("moves-b")
    assert a.moved == () and a.preempted == () and a.placement("p") is None
    assert order_problems(cl, jobs, a, order, may_preempt=order_preemption_rule(order)) == []
    assert not violations(cl, jobs, a, order=order, preempt="order", max_moves=1)


def test_a_gang_moves_room_set_aside_on_a_free_server_to_stop_lower_ranked_work():
    """``k`` (rank 1) fits s0 and s2; the walk sets its room aside on s0,
    the tighter, where it takes all the CPU, so the gang ``p`` (rank 2, 6
    GPUs, 10 GB a GPU) finds 4 GPUs even with ``low`` (rank 9) stopped.  No
    running job ranked below ``p`` holds s0, yet ``k``'s room there is the
    solver's to move: on s2 (GPUs and CPU, too little memory for ``p``) it
    leaves ``p`` s0's GPUs beside ``low``'s."""
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule
    cl = Cluster((Server("s0", 8000, 64000, 3, "V100"), Server("s1", 8000, 64000, 4, "V100"),
                  Server("s2", 16000, 4000, 4, "V100")))
    jobs = [running("low", "s1", [0, 1, 2, 3]), Job("k", 1, cpu=8000, mem=1000),
            Job("p", 6, cpu=6000, mem=60000)]
    order = ["k", "p", "low"]
    for solver in ("best-fit", "proportional"):
        a = allocate(cl, jobs, solver=solver, order=order, preempt="order")
        assert a.preempted == ("low",) and a.stats["preempted_for"] == {"low": "p"}
        assert a.placement("p") is not None and a.placement("k") is not None
        assert order_problems(cl, jobs, a, order, spread=True,
                              may_preempt=order_preemption_rule(order)) == []
        assert not violations(cl, jobs, a, order=order, preempt="order")


def test_a_job_pinned_below_a_waiting_one_keeps_the_room_the_walk_saw():
    """The walk sets ``k``'s room aside on s0 and ``y``'s on s2; ``p``
    (rank 3) finds no room, victims included, beside ``k``; ``q`` (rank 4)
    stops ``v`` and is pinned on s0.  A solver that moves ``h`` to s2, ``k``
    to s1 and ``y`` to s0 leaves s0 the CPU for ``p`` but for ``q``: the
    rooms were arranged so that a job pinned below ``p`` holds what ``p``
    could take.  The repair puts the walk's own layout back (the move
    undone, each room set aside preferred), where ``p`` has no claim."""
    from alloc import registry
    from alloc.problem import Solution
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule
    cl = Cluster((Server("s0", 8000, 64000, 2, "V100"), Server("s1", 8000, 64000, 1, "V100"),
                  Server("s2", 1000, 64000, 1, "V100")))
    jobs = [running("v", "s0", [0], cpu=2000), running("h", "s1", [0]),
            Job("k", 1, cpu=6000, mem=1000), Job("y", 1, cpu=1000, mem=1000),
            Job("p", 1, cpu=6000, mem=1000), Job("q", 1, cpu=2000, mem=1000)]
    order = ["h", "k", "y", "p", "q", "v"]

    @register("rearranges", capabilities=["migration", "order-preemption"])
    def solve(problem, *, deadline, seed=0):
        """``h`` to s2, ``k`` to s1, ``y`` to s0's free GPU."""
        i, first = problem.job_index, problem.gpu_first
        assign = dict(problem.fixed)
        assign[i["h"]] = problem.make_assign(i["h"], [int(first[2])], 0)
        assign[i["k"]] = problem.make_assign(i["k"], [int(first[1])], 0)
        assign[i["y"]] = problem.make_assign(i["y"], [int(first[0]) + 1], 0)
        return Solution(assign)
    try:
        a = allocate(cl, jobs, solver="rearranges", max_moves=1, order=order, preempt="order")
    finally:
        registry._EXTRA.pop("rearranges")
    assert a.stats["preempted_for"] == {"v": "q"} and a.moved == ()
    assert a.placement("p") is None
    assert order_problems(cl, jobs, a, order, may_preempt=order_preemption_rule(order)) == []
    assert not violations(cl, jobs, a, order=order, preempt="order", max_moves=1)


def test_room_set_aside_above_a_gang_moves_into_its_victims_room():
    """``j21`` (rank 2) is set aside on s1, the freest server, so the gang
    ``j3`` (rank 4: 8 GPUs, all of a server's CPU and memory) finds 6 GPUs
    even with ``j14`` (rank 7) stopped: s1 beside ``j21`` has the CPU for 2
    and s2 has 4.  Moved onto the room ``j14`` leaves on s2, ``j21`` lets
    ``j3`` take 6 GPUs of s1 and 2 of s2; without that, ``j3`` waits and
    ``j11`` (rank 6) stops ``j14`` instead, and a solver that then puts
    ``j21`` on s2 leaves ``j3`` displaced by ``j17`` and ``j11``."""
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(3)))
    jobs = [running("j5", "s2", [2, 3, 4, 5], cpu=4000, mem=256000),
            running("j14", "s2", [0, 1, 6], cpu=18000, mem=192000),
            Job("j20", 8, cpu=8000, mem=128000), Job("j21", 2, cpu=12000, mem=32000),
            Job("j15", 1, cpu=6000, mem=128000), Job("j3", 8, cpu=24000, mem=512000),
            Job("j17", 4, cpu=4000, mem=64000), Job("j11", 1, cpu=6000, mem=64000)]
    order = ["j5", "j20", "j21", "j15", "j3", "j17", "j11", "j14"]
    for solver in ("best-fit", "greedy-upgrade", "cpsat"):
        a = allocate(cl, jobs, solver=solver, order=order, preempt="order", time_limit=5)
        assert a.stats["preempted_for"] == {"j14": "j3"}, solver
        assert {"j20", "j21", "j15", "j3"} <= {p.job for p in a.placements}, solver
        assert order_problems(cl, jobs, a, order, spread=True,
                              may_preempt=order_preemption_rule(order)) == [], solver
        assert not violations(cl, jobs, a, order=order, preempt="order")


def test_room_set_aside_above_a_gang_moves_and_the_gang_stops_more():
    """``j7`` (rank 2, half a GPU and 128 GB) is set aside on s0, so the
    gang ``j19`` (rank 4: 8 GPUs, 64 GB a GPU) finds memory for 7 GPUs even
    with ``j16`` (rank 6) stopped.  With ``j7`` set aside first, on
    ``j16``'s GPU of s1, ``j19`` fits 6 GPUs of s0 and 2 of s1 once ``j1``
    (rank 7) stops too; without that, ``j6`` (rank 5) stops both and
    ``j19`` waits, displaced."""
    from alloc.testing import order_problems
    from alloc.testing.placements import order_preemption_rule

    def spread(jid, gpus, cpu, mem):
        held = tuple(GpuShare(g, 1000) for g in gpus)
        return Job(jid, len(gpus), cpu=sum(cpu.values()), mem=sum(mem.values()),
                   current=Placement(jid, held, cpu, mem))
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(2)))
    jobs = [running("j1", "s0", [1], cpu=1000, mem=64000),
            running("j14", "s1", [0], cpu=1000, mem=128000),
            spread("j16", ["s0/gpu0", "s0/gpu3", "s0/gpu4", "s1/gpu3"],
                   {"s0": 18000, "s1": 6000}, {"s0": 48000, "s1": 16000}),
            spread("j17", [f"s0/gpu{g}" for g in (2, 5, 6, 7)] + [f"s1/gpu{g}" for g in (4, 5, 6, 7)],
                   {"s0": 4000, "s1": 4000}, {"s0": 64000, "s1": 64000}),
            Job("j20", 2, cpu=12000, mem=128000), Job("j11", 1, cpu=3000, mem=128000),
            Job("j7", 1, gpu_milli=500, cpu=1000, mem=128000),
            Job("j19", 8, cpu=24000, mem=512000), Job("j6", 3, cpu=18000, mem=384000)]
    order = ["j20", "j11", "j7", "j14", "j19", "j6", "j16", "j1", "j17"]
    for solver in ("best-fit", "greedy-upgrade", "cpsat"):
        a = allocate(cl, jobs, solver=solver, order=order, preempt="order", time_limit=5)
        why = a.stats["preempted_for"]
        assert why["j16"] == why["j1"] == "j19" and a.placement("j19") is not None, solver
        assert order_problems(cl, jobs, a, order, spread=True,
                              may_preempt=order_preemption_rule(order)) == [], solver
        assert not violations(cl, jobs, a, order=order, preempt="order")

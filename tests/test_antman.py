"""AntMan: the global scheduler (hand-worked cases and properties), the local
coordinator, job upgrades, the mechanisms on the simulator, Table 2 and a
short trace run."""
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc import Cluster, GpuShare, Job, Placement, Server, allocate, violations
from alloc.model import Cell, Tenant

# the family's modules are imported inside the tests: importing a subpackage of
# alloc.solvers at collection time would shadow alloc.solvers (the registry
# function) for the test modules collected after this one


def family():
    from alloc.sched.antman import classes, coordinator
    return classes, coordinator


def sim():
    from alloc.sim import antman
    return antman


def cluster(servers=1, gpus=8, quota=None):
    quota = servers * gpus if quota is None else quota
    return Cluster(tuple(Server(f"s{i}", 96000, 736000, gpus, "V100") for i in range(servers)),
                   tenants={"a": Tenant("a", (Cell("gpu", quota),))})


def opp(jid, mem=4096, comp=300, gpus=1, **kw):
    return Job(jid, gpus=gpus, cpu=1000 * gpus, mem=1000 * gpus, gpu_mem=mem, gpu_compute=comp,
               gpu_mem_min=kw.pop("floor", 512), locality="server" if gpus > 1 else None, **kw)


def guar(jid, gpus=1, mem=30720, comp=900, **kw):
    return Job(jid, gpus=gpus, cpu=1000 * gpus, mem=1000 * gpus, gpu_mem=mem, gpu_compute=comp,
               tenant="a", guaranteed=True, locality="server" if gpus > 1 else None, **kw)


def running(c, jobs, solver="antman", **kw):
    r = allocate(c, jobs, solver=solver, **kw)
    return [replace(j, current=r.placement(j.id)) if r.placement(j.id) else j for j in jobs], r


# ------------------------------------------------------------ hand-worked
def test_table2_case_through_allocate():
    c = Cluster((Server("s0", 8000, 64000, 1, "V100"),), tenants={"a": Tenant("a", (Cell("gpu", 1),))})
    (a,), _ = running(c, [opp("A", 3584, 40, floor=0)])
    r = allocate(c, [a, guar("B", mem=30720, comp=940)], solver="antman")
    share = r.placement("A").gpus[0]
    assert (share.milli, share.mem, share.compute) == (0, 2048, 40)   # 2 GB left (Table 2)
    assert r.placement("B").gpus[0].milli == 1000 and r.stats["resized"] == ["A"]
    assert not r.preempted and not r.moved


def test_opportunistic_jobs_go_to_least_loaded_gpus_below_threshold():
    c = cluster(gpus=2)
    busy = {"s0/gpu0": 0.85, "s0/gpu1": 0.3}
    r = allocate(c, [opp("o")], solver="antman", gpu_util=busy)
    assert r.placement("o").gpus[0].gpu == "s0/gpu1"
    r = allocate(c, [opp("o")], solver="antman", gpu_util={"s0/gpu0": 0.9, "s0/gpu1": 0.8})
    assert r.unplaced == ("o",)
    r = allocate(c, [opp("o")], solver="antman", gpu_util={"s0/gpu0": 0.9, "s0/gpu1": 0.8},
                 util_threshold=0.95)
    assert r.placement("o").gpus[0].gpu == "s0/gpu1"


def test_partial_gang_reserves_its_gpus_for_opportunistic_use_only():
    c = cluster(gpus=8)
    jobs, _ = running(c, [guar(f"g{i}", mem=1000, comp=500) for i in range(3)])
    big = guar("big", gpus=8, mem=1000, comp=500)
    r = allocate(c, jobs + [big], solver="antman")
    assert "big" in r.unplaced and len(r.stats["reserved"]["big"]) == 5
    small = guar("small", mem=1000, comp=500)
    r2 = allocate(c, jobs + [big, small], solver="antman", reserved=r.stats["reserved"])
    assert "small" in r2.unplaced                       # the reserved GPUs stay the gang's
    r3 = allocate(c, jobs + [big, opp("o")], solver="antman", reserved=r.stats["reserved"])
    assert r3.placement("o").gpus[0].gpu in r.stats["reserved"]["big"]


def test_no_gpus_are_reserved_for_a_gang_the_servers_never_hold():
    """``big`` asks for more memory than its tenant's server has (a point of
    its model's grid fits, but AntMan places a job at its request): rule 4
    reserved both GPUs for it all the same, and the guaranteed ``small``
    waited beside the free GPUs of its tenant's cell."""
    from alloc.model import Profile
    from alloc.testing import guarantee_problems
    c = Cluster((Server("s0", 8000, 65536, 2, "V100"),),
                tenants={"a": Tenant("a", (Cell("server", 1),))})
    grid = Profile("p1", (500,), (8192,), ((0.01,),))
    jobs = [Job("small", 1, gpu_milli=100, cpu=1000, mem=16384, tenant="a", guaranteed=True),
            Job("big", 2, cpu=2000, mem=128000, model="p1", profile=grid, tenant="a",
                guaranteed=True, priority=1)]
    r = allocate(c, jobs, solver="antman")
    assert r.placement("small") and "reserved" not in r.stats
    assert not guarantee_problems(c, jobs, r)


def test_guaranteed_job_preempts_riders_only_past_their_least_memory():
    c = Cluster((Server("s0", 8000, 64000, 1, "V100"),), tenants={"a": Tenant("a", (Cell("gpu", 1),))})
    (o,), _ = running(c, [opp("o", 8192, 300, floor=6000)])
    r = allocate(c, [o, guar("g", mem=30000)], solver="antman")
    assert r.preempted == ("o",) and r.placement("g")
    assert not violations(c, [o, guar("g", mem=30000)], r)


def test_quota_bounds_guaranteed_jobs():
    c = cluster(gpus=8, quota=2)
    r = allocate(c, [guar("g1", mem=1000), guar("g2", mem=1000), guar("g3", mem=1000)],
                 solver="antman")
    assert r.unplaced == ("g3",)


def test_job_class_and_upgrade():
    classes, _ = family()
    job_class, upgrade = classes.job_class, classes.upgrade
    c = cluster(gpus=2, quota=1)
    jobs, _ = running(c, [opp("o", tenant="a"), opp("p", mem=2048, comp=200)])
    assert job_class(c, jobs, guar("x")) is True
    up = upgrade(c, jobs, "o")
    assert up is not None
    o = next(j for j in up if j.id == "o")
    assert o.guaranteed and o.current.gpus[0].milli == 1000
    assert not violations(c, up, allocate(c, up, solver="antman"))
    held, _ = running(c, [guar("g", mem=1000)])
    assert upgrade(c, held + [next(j for j in up if j.id == "p")], "p") is None   # no tenant


# ------------------------------------------------------------- coordinator
def test_coordinator_caps_at_once_then_grows_within_tolerance():
    _, co_mod = family()
    Gpu, Rider = co_mod.Gpu, co_mod.Rider
    co = co_mod.Coordinator(tau=0.035, step=50)
    gpu = Gpu(32768, riders=(Rider("r", 8192, 1024, 500, 8192, 500),))
    gpu = co.admit(gpu, 30000, 600)
    assert gpu.riders[0].comp == 0 and gpu.riders[0].mem == 32768 - 30000
    up = co.tick(gpu, 0.0)
    assert up.riders[0].comp == 10                      # a probe first
    up = co.observe(up, 0.0, 0.001)                     # 0.0001 per milli
    up2 = co.tick(up, 0.001)
    assert up2.riders[0].comp == 60                     # a full step fits the tolerance
    back = co.tick(up2, 0.05)
    assert back.riders[0].comp == 10
    grown = co.surge(gpu, 31744)
    assert grown.riders[0].mem == 1024


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 1.0), st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.1, 1.0)),
                                      min_size=1, max_size=3))
def test_guaranteed_speed_never_below_tolerance(ug, riders):
    """Window by window, the coordinator never lets a rider push the
    guaranteed job's slowdown past the tolerance."""
    _, co_mod = family()
    Gpu, Rider = co_mod.Gpu, co_mod.Rider
    m = sim()
    Share, coordinated_speeds = m.Share, m.coordinated_speeds
    kappa, tau = m.coordination()
    co = co_mod.Coordinator(tau=tau)
    gpu = Gpu(32768, riders=tuple(Rider(f"r{k}", 1000, 100, int(u * 1000) or 1, 1000,
                                        int(u * 1000) or 1) for k, (u, _) in enumerate(riders)))
    gpu = co.admit(gpu, 20000, int(ug * 1000))
    slow = None
    for _ in range(60):
        shares = [Share(ug, 1.0, guaranteed=True)] + [
            Share(u, h, r.comp / 1000) for (u, h), r in zip(riders, gpu.riders)]
        speed = coordinated_speeds(shares, kappa)[0]
        assert speed >= 1 / (1 + tau) - 1e-9
        new = 1 / speed - 1
        if slow is not None:
            gpu = co.observe(gpu, slow, new)
        slow = new
        gpu = co.tick(gpu, slow)


# --------------------------------------------------------------- properties
@st.composite
def live(draw):
    n = draw(st.integers(1, 4))
    c = cluster(servers=1, gpus=n, quota=n)
    riders = [opp(f"o{k}", draw(st.sampled_from([2048, 8192, 16384])),
                  draw(st.sampled_from([100, 300, 600])), floor=1024) for k in range(draw(st.integers(0, 5)))]
    g = guar("g", gpus=draw(st.integers(1, n)), mem=draw(st.sampled_from([8192, 20000, 30000])),
             comp=draw(st.sampled_from([300, 700])))
    return c, riders, g


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(live())
def test_opportunistic_jobs_never_block_a_guaranteed_job_that_fits(inst):
    c, riders, g = inst
    jobs, _ = running(c, riders)
    r = allocate(c, jobs + [g], solver="antman")       # checked by allocate()
    assert r.placement("g") is not None


# -------------------------------------------------------------- experiments
def test_table2_policies():
    m = sim()
    table2, coordination = m.table2, m.coordination
    assert table2("Preempt") == (None, 91.1)
    a, b = table2("FIFO")
    assert a == 43.0 and b == pytest.approx(108.1)
    assert table2("Pack")[1] is None
    a, b = table2("AntMan")
    kappa, tau = coordination()
    assert 43.0 < a < 50 and 91.1 <= b <= 91.1 * (1 + tau)
    with pytest.raises(ValueError, match="unknown policy"):
        table2("nope")


def test_short_trace_runs_every_policy():
    m = sim()
    simulate_cluster, coordination = m.simulate_cluster, m.coordination
    tr = m.trace(25, 1.5, seed=3)
    out = {p: simulate_cluster(tr, p) for p in m.MECHANISMS}
    for r in out.values():
        assert len(r.jct) == 25 and all(v > 0 for v in r.jct.values())
    assert out["antman"].preemptions == 0
    _, tau = coordination()                            # guaranteed jobs: at most tau slower
    assert out["antman"].guaranteed_mean_jct_min <= \
        out["antman-yarn-cs"].guaranteed_mean_jct_min * (1 + tau) + 1e-6
    with pytest.raises(ValueError, match="unknown policy"):
        simulate_cluster(tr, "yarn-cs")


def test_the_coordinator_moves_caps_through_the_session():
    """On the simulator, every cap the coordinator sets is the session's:
    the riders' shares in the session equal the run's, and every GPU's memory
    and compute hold (the session checks each reshare)."""
    m = sim()
    from alloc.sched.antman.coordinate import AntMan
    from alloc.sched.antman.model import AntManProgress
    from alloc.sim import simulate
    seen = []

    class Watch(AntMan):
        def after_step(self, result, ctl):
            super().after_step(result, ctl)
            for jid, r in ctl.jobs.items():
                if r.running:
                    assert ctl.session.jobs[jid].current.gpus == r.run.placement.gpus
                    seen.extend(g for g in r.run.placement.gpus if g.milli == 0)

    mech = Watch()
    tr = m.trace(30, 2.0, seed=1, gpus=8)
    c = Cluster((Server("s0", 96000, 736000, 8, "V100", gpu_mem=32768),),
                tenants={"A": Tenant("A", (Cell("gpu", 8),))})
    res = simulate(c, m.workload(tr, "antman"), order=("fifo", {"preemptive": False}),
                   placement="antman", mechanism=mech, progress=AntManProgress())
    assert len(res.jct()) == 30 and seen                  # riders rode, and all finished
    assert not violations(c, [j for j in res_session_jobs(mech)], res_alloc(mech))


def res_session_jobs(mech):
    return list(mech.gpu_util._ctl.session.jobs.values())


def res_alloc(mech):
    from alloc.model import Allocation
    return Allocation(tuple(j.current for j in res_session_jobs(mech) if j.current is not None))


def test_a_mechanism_needs_its_progress_model():
    m = sim()
    from alloc.errors import InputError
    from alloc.sim import simulate
    from alloc.sched.antman.model import AntManProgress
    c = Cluster((Server("s0", 96000, 736000, 8, "V100", gpu_mem=32768),))
    work = m.workload(m.trace(3, 1.0), "antman-yarn-cs")
    with pytest.raises(InputError, match="gpu-memory"):            # a run without the model
        simulate(c, work, mechanism="antman-yarn-cs")
    with pytest.raises(InputError, match=r"AntManProgress\('exclusive'\)"):
        simulate(c, work, mechanism="antman-yarn-cs", progress=AntManProgress("packed"))


def test_a_gang_goes_to_the_server_that_has_its_memory():
    """The scheduler took the first server with enough GPUs and gave up when
    its memory was short, though another server held the whole job."""
    c = Cluster((Server("s0", cpu=8000, mem=65536, gpus=2, gpu_type="V100"),
                 Server("s1", cpu=8000, mem=262144, gpus=2, gpu_type="V100")))
    j = Job("j0", gpus=2, cpu=2000, mem=128000)
    a = allocate(c, [j], solver="antman")
    assert [g.gpu for g in a.placement("j0").gpus] == ["s1/gpu0", "s1/gpu1"]


def test_a_guaranteed_job_runs_only_on_its_tenants_gpu_types():
    """The scheduler counted the tenant's quota over every type and placed a
    guaranteed job on a type the tenant has no cells of."""
    c = Cluster((Server("s0", cpu=8000, mem=65536, gpus=2, gpu_type="V100"),
                 Server("s1", cpu=8000, mem=65536, gpus=2, gpu_type="P100")),
                tenants={"vc0": Tenant("vc0", (Cell("gpu", 1, "P100"),))})
    jobs = [Job("g", gpus=1, cpu=1000, mem=1000, tenant="vc0", guaranteed=True),
            Job("h", gpus=1, cpu=1000, mem=1000, tenant="vc0", guaranteed=True)]
    a = allocate(c, jobs, solver="antman")
    assert [g.gpu for g in a.placement("g").gpus] == ["s1/gpu0"]
    assert a.unplaced == ("h",)                   # its one P100 cell is taken


def test_a_gang_spreads_when_no_server_holds_its_memory():
    """The scheduler tried only the one server with enough GPUs, whose
    memory is short, and never spread the gang (it has no locality)."""
    c = Cluster((Server("s0", cpu=8000, mem=65536, gpus=8, gpu_type="V100"),
                 Server("s2", cpu=8000, mem=65536, gpus=2, gpu_type="V100")))
    j = Job("j0", gpus=5, cpu=5000, mem=81920)
    a = allocate(c, [j], solver="antman")
    assert {g.gpu.split("/")[0] for g in a.placement("j0").gpus} == {"s0", "s2"}


def test_a_guaranteed_cpu_only_job_takes_a_server_without_quota():
    """A guaranteed job of no GPUs holds no quota: it goes where its CPU and
    memory fit, beside a job that uses the whole quota."""
    c = Cluster((Server("s0", 2000, 64000, 8, "V100"), Server("s1", 96000, 64000, 4, "V100")),
                tenants={"a": Tenant("a", (Cell("gpu", 2),))})
    jobs = [Job("cpu", gpus=0, cpu=6000, mem=8000, tenant="a", guaranteed=True),
            guar("g", gpus=2, mem=1024, comp=100)]
    for objective in ("throughput", "gpus", "jobs"):
        a = allocate(c, jobs, solver="antman", objective=objective, time_limit=2)
        assert not violations(c, jobs, a)
        assert set(a.placement("cpu").servers) == {"s1"}
        assert {p.job for p in a.placements} == {"cpu", "g"}


def test_a_rack_local_gang_spreads_inside_its_rack_when_no_server_holds_its_memory():
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100", rack="r0"),
                  Server("s1", 8000, 65536, 0, rack="r1"),
                  Server("s2", 8000, 65536, 2, "V100", rack="r0")),
                 levels=("rack", "server", "gpu"))
    jobs = [Job("j0", 2, cpu=2000, mem=128000, locality="rack")]
    a = allocate(cl, jobs, solver="antman")
    assert sorted(g.gpu for g in a.placement("j0").gpus) == ["s0/gpu0", "s2/gpu0"]


def test_a_session_keeps_the_caps_a_round_or_a_reconcile_gives():
    """Table 2's cap at B's arrival stays in the session (no restart), and a
    reconcile that states other caps changes them, checked."""
    from alloc import Session
    from alloc.errors import InputError
    c = Cluster((Server("s0", 96000, 736000, 1, "V100", gpu_mem=32768),),
                tenants={"a": Tenant("a", (Cell("gpu", 1),))})
    s = Session(c, solver="antman")
    s.submit(opp("A", mem=3584, comp=38, floor=400))
    s.step()
    s.submit(guar("B", mem=30720, comp=940))
    r = s.step()
    assert [p.job for p in r.start] == ["B"] and not r.move and not r.preempt
    assert s.jobs["A"].current.gpus[0].mem == 2048          # the round's cap, kept
    cur = s.jobs["A"].current
    s.reconcile({"A": replace(cur, gpus=(replace(cur.gpus[0], mem=1024, compute=20),))},
                stopped=[])
    assert (s.jobs["A"].current.gpus[0].mem, s.jobs["A"].current.gpus[0].compute) == (1024, 20)
    with pytest.raises(InputError, match="compute"):
        s.reconcile({"A": replace(cur, gpus=(replace(cur.gpus[0], compute=500),))}, stopped=[])


def test_a_session_keeps_a_gangs_reservation_between_rounds():
    """A guaranteed gang that only partly fits reserves its GPUs; the next
    round of the same session keeps them off another guaranteed job."""
    from alloc import Session
    c = cluster(servers=1, gpus=4)
    s = Session(c, solver="antman")
    s.submit(guar("g1", gpus=2, mem=1000))
    s.step()
    s.submit(guar("big", gpus=4, mem=1000))
    r = s.step()
    assert set(r.allocation.stats["reserved"]["big"]) == {"s0/gpu2", "s0/gpu3"}
    s.submit(guar("small", gpus=1, mem=1000))                 # ranked below big
    assert s.step().allocation.placement("small") is None     # the reserved GPUs stay free


def test_a_gangs_reservation_does_not_keep_out_a_guaranteed_job_ranked_above_it():
    """The reservation an earlier round made for ``big`` binds the jobs
    ranked below it: ``first``, ranked above, takes one of its GPUs (its
    tenant's guarantee serves it first)."""
    from alloc import Session
    from alloc.testing import guarantee_problems
    c = cluster(servers=1, gpus=4)
    s = Session(c, solver="antman")
    s.submit(guar("g1", gpus=2, mem=1000))
    s.step()
    s.submit(guar("big", gpus=4, mem=1000))
    assert s.step().allocation.stats["reserved"]["big"] == ["s0/gpu2", "s0/gpu3"]
    s.submit(guar("first", gpus=1, mem=1000, priority=10))
    jobs = list(s.jobs.values())
    a = s.step().allocation
    assert a.placement("first") and not guarantee_problems(c, jobs, a)


def test_a_reservation_taken_by_opportunistic_work_stays_and_is_reported():
    """An opportunistic job takes the GPUs reserved for ``big`` (it may);
    the next round ``big`` still keeps them from ``small``, ranked below it
    -- and the answer says so (``stats["reserved"]``, the reason), so that
    the guarantee check counts that room as the gang's."""
    from alloc import Session
    from alloc.testing import guarantee_problems
    c = Cluster((Server("s0", 8000, 65536, 4, "V100"),),
                tenants={"a": Tenant("a", (Cell("server", 1),))})
    s = Session(c, solver="antman")
    s.submit(guar("g1", gpus=2, mem=1000))
    s.step()
    s.submit(guar("big", gpus=4, mem=1000, priority=2))
    s.submit(Job("o", 2, cpu=2000, mem=2000))
    a = s.step().allocation
    assert a.stats["reserved"]["big"] == [g.gpu for g in a.placement("o").gpus]
    s.submit(guar("small", gpus=1, mem=1000))
    jobs = list(s.jobs.values())
    a = s.step().allocation
    assert a.placement("small") is None and a.stats["reserved"]["big"] == ["s0/gpu2", "s0/gpu3"]
    assert "reserved for 'big', a gang of its tenant ranked above it" in a.reasons["small"]
    assert not guarantee_problems(c, jobs, a)


def test_a_guaranteed_job_waits_behind_its_tenants_gang_and_says_so():
    """``big`` exceeds the quota ``g1`` leaves: it reserves the rest of its
    tenant's cell; ``small``, ranked below it, stays off it while the
    opportunistic ``o`` rides it."""
    from alloc.testing import guarantee_problems
    c = Cluster((Server("s0", 8000, 65536, 4, "V100"),),
                tenants={"a": Tenant("a", (Cell("server", 1),))})
    run = Placement("g1", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
                    {"s0": 2000}, {"s0": 2000})
    mine = dict(tenant="a", guaranteed=True)
    jobs = [Job("g1", 2, cpu=2000, mem=2000, current=run, **mine),
            Job("big", 4, cpu=4000, mem=4000, priority=2, **mine),
            Job("small", 1, cpu=1000, mem=1000, **mine), Job("o", 2, cpu=2000, mem=2000)]
    a = allocate(c, jobs, solver="antman")
    assert a.stats["reserved"] == {"big": ["s0/gpu2", "s0/gpu3"]} and a.placement("o")
    assert a.reasons["small"] == (
        "tenant 'a''s cells have 2 of 4 V100 GPUs not held by its guaranteed jobs, all "
        "reserved for 'big', a gang of its tenant ranked above it (s0/gpu2, s0/gpu3)")
    assert not guarantee_problems(c, jobs, a) and not violations(c, jobs, a)


def test_a_job_reserves_no_more_than_it_asks_and_only_where_its_cells_bind():
    """``big`` reserves the rest of tenant a's server ``s0``; ``small``
    then finds no room in its tenant's cell, and the free GPUs of ``s1`` are
    tenant b's cell: it reserves none of them (nor more than the one GPU it
    asks) -- they would keep b's guaranteed jobs off b's own cell."""
    c = Cluster((Server("s0", 8000, 65536, 4, "V100"), Server("s1", 8000, 65536, 4, "V100")),
                tenants={"a": Tenant("a", (Cell("server", 1),)),
                         "b": Tenant("b", (Cell("server", 1),))})
    on = lambda jid, srv, *ks: Placement(jid, tuple(GpuShare(f"{srv}/gpu{k}", 1000)  # noqa: E731
                                                    for k in ks), {srv: 1000}, {srv: 1000})
    a, b = dict(tenant="a", guaranteed=True), dict(tenant="b", guaranteed=True)
    jobs = [Job("ga", 2, cpu=1000, mem=1000, current=on("ga", "s0", 0, 1), **a),
            Job("gb", 1, cpu=1000, mem=1000, current=on("gb", "s1", 0), **b),
            Job("big", 4, cpu=1000, mem=1000, priority=2, **a),
            Job("small", 1, cpu=1000, mem=1000, **a)]
    r = allocate(c, jobs, solver="antman")
    assert r.placement("small") is None and r.stats["reserved"] == {"big": ["s0/gpu2", "s0/gpu3"]}


def test_a_gang_local_to_any_domain_above_the_server_spreads_inside_it():
    """Locality at a level above the server that is not called ``rack`` (a
    zone) lets a gang no server holds spread over the zone's servers."""
    zone = {"zone": "a"}
    cl = Cluster((Server("s0", 8000, 65536, 8, "V100", domains=zone),
                  Server("s1", 8000, 65536, 2, "V100", domains=zone),
                  Server("s2", 8000, 65536, 0, domains=zone)), ("zone", "server"))
    jobs = [Job("j0", 5, cpu=5000, mem=81920, locality="zone")]
    a = allocate(cl, jobs, solver="antman", objective="gpus")
    assert not violations(cl, jobs, a)
    assert {g.gpu.split("/")[0] for g in a.placement("j0").gpus} == {"s0", "s1"}


def test_a_guaranteed_job_stops_an_opportunistic_cpu_only_job_holding_its_memory():
    """An opportunistic job never blocks a guaranteed one, also when it holds
    no GPU but the server memory the guaranteed job needs."""
    c = Cluster((Server("s0", 8000, 65536, 1, "V100"),),
                tenants={"a": Tenant("a", (Cell("gpu", 1),))})
    jobs = [Job("c0", 0, cpu=1000, mem=32000,
                current=Placement("c0", (), {"s0": 1000}, {"s0": 32000}, 0.0)),
            Job("j1", 1, cpu=1000, mem=64000, tenant="a", guaranteed=True)]
    a = allocate(c, jobs, solver="antman")
    assert not violations(c, jobs, a)
    assert a.preempted == ("c0",) and [p.job for p in a.placements] == ["j1"]


def test_a_guaranteed_job_goes_where_its_tenants_cells_can_bind():
    """vc0 has a P100 rack cell and a P100 server cell: on ``s1`` (rack
    ``r1``'s only server) no greedy binding holds the job (the server cell
    there leaves the rack cell no rack), so AntMan tries the next server,
    ``s2``, instead of leaving the job waiting."""
    from alloc.testing.placements import guarantee_problems
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100", rack="r0"),
                  Server("s1", 8000, 65536, 2, "P100", rack="r1"),
                  Server("s2", 8000, 65536, 2, "P100", rack="r0")),
                 ("rack", "server", "socket", "gpu"),
                 tenants={"vc0": Tenant("vc0", (Cell("rack", 1, "P100"),
                                                Cell("server", 1, "P100")))})
    jobs = [Job("j0", 1, gpu_milli=100, cpu=1000, mem=16384, tenant="vc0", guaranteed=True)]
    a = allocate(cl, jobs, solver="antman", objective="gpus")
    assert [p.job for p in a.placements] == ["j0"] and not guarantee_problems(cl, jobs, a)


def test_a_guaranteed_job_stops_a_holder_where_its_tenants_cells_can_bind():
    """vc0's cell is an NVLink domain of P100s: only ``b`` (``s1``) is one,
    ``a`` mixes in V100s.  ``s2`` has the job's memory but no binding holds
    it there, and on ``s1`` an opportunistic job holds the memory: it stops,
    for the job goes where the cells bind -- the search for holders to stop
    skips ``s2`` as the search over free room does."""
    from alloc.testing.placements import guarantee_problems
    cl = Cluster((Server("s0", 8000, 65536, 2, "V100", domains={"nvl72": "a"}),
                  Server("s1", 8000, 65536, 2, "P100", domains={"nvl72": "b"}),
                  Server("s2", 8000, 65536, 2, "P100", domains={"nvl72": "a"})),
                 ("nvl72", "server", "gpu"),
                 tenants={"vc0": Tenant("vc0", (Cell("nvl72", 1, "P100"),))})
    jobs = [Job("o", 0, cpu=1000, mem=64000,
                current=Placement("o", (), {"s1": 1000}, {"s1": 64000}, 0.0)),
            Job("g", 1, cpu=1000, mem=16384, tenant="vc0", guaranteed=True)]
    a = allocate(cl, jobs, solver="antman")
    assert not violations(cl, jobs, a) and not guarantee_problems(cl, jobs, a)
    assert a.preempted == ("o",) and [p.gpus[0].gpu for p in a.placements] == ["s1/gpu0"]


def test_a_deadline_cut_keeps_the_earlier_reservations_it_did_not_decide():
    """Out of time before the gang ``big`` is examined, the round still
    reports its earlier reservation (``stats["reserved"]``, and so the
    session's carry): the deadline ends the search, not the gang's claim."""
    from alloc.deadline import Deadline
    from alloc.problem import compile_problem
    from alloc.solvers.antman.scheduler import solve_antman
    c = cluster(gpus=8)
    jobs, _ = running(c, [guar(f"g{i}", mem=1000, comp=500) for i in range(3)])
    big = guar("big", gpus=8, mem=1000, comp=500)
    r = allocate(c, jobs + [big], solver="antman")
    held = r.stats["reserved"]["big"]
    p = compile_problem(c, jobs + [big])
    sol = solve_antman(p, deadline=Deadline.after(1e-9), reserved=r.stats["reserved"])
    assert sol.stats["timed_out"] and sol.stats["reserved"] == {"big": held}
    sol = solve_antman(p, deadline=Deadline.after(10.0), reserved=r.stats["reserved"])
    assert "timed_out" not in sol.stats and sol.stats["reserved"] == {"big": held}

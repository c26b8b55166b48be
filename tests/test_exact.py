"""Exact backends (cpsat, milp, milp-cbc) and the value-aware heuristics."""
from __future__ import annotations

import itertools

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from alloc import allocate, violations
from alloc.model import Cluster, Job, Placement, Profile, Server, Status
from alloc.problem import compile_problem

pytest.importorskip("ortools")
pytest.importorskip("pulp")

EXACT = ("cpsat", "milp", "milp-cbc")
TL = 10.0

# a Synergy-like profile: speed grows with CPU per GPU, flat in memory above 64000
GRID = Profile("sens", (1000, 3000, 6000, 12000), (21330, 64000),
               ((None, 0.4), (None, 1.0), (None, 1.6), (None, 2.0)),
               span={"server": 1.0, "cluster": 0.5})
FLAT = Profile("flat", (1000, 3000), (21330, 64000), ((1.0, 1.0), (1.0, 1.0)),
               span={"cluster": 0.5})


def server(i, gpus=4, cpu=12000, mem=256000, gtype="V100", **kw):
    return Server(f"s{i}", cpu, mem, gpus, gtype, **kw)


def job(i, gpus=1, prof=None, cpu=None, mem=None, **kw):
    return Job(f"j{i}", gpus=gpus, cpu=3000 * gpus if cpu is None else cpu,
               mem=64000 * gpus if mem is None else mem, profile=prof, **kw)


def brute_force(cluster, jobs, objective="throughput"):
    """Optimum over single-server placements, whole GPUs, no inner locality."""
    p = compile_problem(cluster, jobs, objective)
    choices = []
    for j in range(p.J):
        c = [None]
        for s in range(p.S):
            if p.allowed[j, s] and p.jobs[j].gpus <= p.srv_gpus[s]:
                c += [(s, o) for o in range(len(p.options[j]))]
        choices.append(c)
    best = 0.0
    for combo in itertools.product(*choices):
        use = {}
        val = 0.0
        for j, ch in enumerate(combo):
            if ch is None:
                continue
            s, o = ch
            g, c, m = use.get(s, (0, 0, 0))
            opt = p.options[j][o]
            use[s] = (g + p.jobs[j].gpus, c + opt.cpu, m + opt.mem)
            val += p.coef(j, o, s)
        if all(g <= p.srv_gpus[s] and c <= p.srv_cpu[s] and m <= p.srv_mem[s]
               for s, (g, c, m) in use.items()):
            best = max(best, val)
    return best


def run(cluster, jobs, solver, objective="throughput", tl=TL, **kw):
    a = allocate(cluster, jobs, solver=solver, objective=objective, time_limit=tl, **kw)
    assert not violations(cluster, jobs, a)
    assert a.bound is not None and a.bound >= a.value - 1e-6
    if a.status is Status.OPTIMAL:
        assert a.value >= a.bound - 1e-6 * max(1.0, a.bound)
    return a


# ------------------------------------------------------------------ by hand
def test_grid_upgrade_hand():
    # one server, 4 GPUs, 12 cores: two sensitive 1-GPU jobs and two flat ones.
    # Flat jobs drop to 1 core each (10 cores left); the sensitive jobs share
    # them: 6 + 3 cores -> 1.6 + 1.0 = 2.6 (12 + ... does not fit), so the
    # optimum is 1 + 1 + 1.6 + 1.0 = 4.6.
    cl = Cluster((server(0),))
    jobs = (job(0, prof=GRID), job(1, prof=GRID), job(2, prof=FLAT), job(3, prof=FLAT))
    assert brute_force(cl, jobs) == pytest.approx(4.6)
    for sv in EXACT:
        a = run(cl, jobs, sv)
        assert a.status is Status.OPTIMAL, sv
        assert a.value == pytest.approx(4.6)


def test_brute_force_two_servers():
    cl = Cluster((server(0), server(1, gpus=2, cpu=8000)))
    jobs = (job(0, 2, GRID, locality="server"), job(1, 1, GRID), job(2, 1, FLAT),
            job(3, 2, FLAT, locality="server"), job(4, 1, GRID))
    opt = brute_force(cl, jobs)
    for sv in EXACT:
        a = run(cl, jobs, sv)
        assert a.value == pytest.approx(opt), sv
        assert a.status is Status.OPTIMAL


@st.composite
def small_instance(draw):
    n_srv = draw(st.integers(1, 3))
    servers = tuple(server(i, gpus=draw(st.sampled_from([2, 4])),
                           cpu=draw(st.sampled_from([6000, 12000, 16000])))
                    for i in range(n_srv))
    n_jobs = draw(st.integers(1, 6))
    jobs = []
    for i in range(n_jobs):
        g = draw(st.sampled_from([1, 1, 2]))
        jobs.append(job(i, g, draw(st.sampled_from([GRID, FLAT, None])), locality="server",
                        weight=draw(st.sampled_from([1.0, 2.0]))))
    return Cluster(servers), tuple(jobs)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_instance(), st.sampled_from(["throughput", "gpus", "jobs"]))
def test_backends_agree(inst, objective):
    cl, jobs = inst
    vals = []
    for sv in ("cpsat", "milp"):
        a = run(cl, jobs, sv, objective)
        assert a.status is Status.OPTIMAL, (sv, a.stats)
        vals.append(a.value)
    assert vals[0] == pytest.approx(vals[1])
    assert vals[0] == pytest.approx(brute_force(cl, jobs, objective))


# --------------------------------------------------------------- honesty
def medium():
    cl = Cluster(tuple(server(i, gpus=8, cpu=24000, mem=512000) for i in range(6)))
    profs = [GRID, FLAT, None]
    jobs = tuple(job(i, [1, 1, 1, 2, 4, 8][i % 6], profs[i % 3],
                     locality="server" if i % 2 else None) for i in range(40))
    return cl, jobs


@pytest.mark.parametrize("sv", EXACT)
def test_status_honest_with_tiny_limit(sv):
    cl, jobs = medium()
    a = run(cl, jobs, sv, tl=0.01)
    if a.status is Status.OPTIMAL:
        assert a.value >= a.bound - 1e-6 * max(1.0, a.bound)


@pytest.mark.parametrize("sv", EXACT)
def test_never_below_warm_start(sv):
    cl, jobs = medium()
    a = run(cl, jobs, sv, tl=5)
    for h in ("proportional", "best-fit", "greedy-upgrade"):
        assert a.value >= allocate(cl, jobs, solver=h).value - 1e-9
    assert a.value >= a.stats["warm_start"] - 1e-9
    assert "lp_bound" in a.stats


def test_deterministic():
    """Same input and seed: each call's value is within the other's bound,
    and the values agree whenever both calls prove optimality (a call
    stopped by the clock may stop elsewhere)."""
    cl, jobs = medium()
    a = allocate(cl, jobs, solver="cpsat", time_limit=5, seed=3)
    b = allocate(cl, jobs, solver="cpsat", time_limit=5, seed=3)
    assert a.bound is not None and b.bound is not None
    assert a.value <= b.bound + 1e-6 and b.value <= a.bound + 1e-6
    assert a.status is not Status.OPTIMAL or b.status is not Status.OPTIMAL or a.value == b.value


# -------------------------------------------------------------- features
@pytest.mark.parametrize("objective,expect", [("gpus", 8000.0), ("jobs", 5.0)])
def test_objectives_gpus_jobs(objective, expect):
    cl = Cluster((server(0, gpus=8, cpu=24000, mem=512000),))
    jobs = (job(0, 4), job(1, 4), job(2, 2), job(3, 1), job(4, 1), job(5, 1), job(6, 1))
    # gpus: 8 GPUs fill exactly; jobs: 1+1+1+1+2 = 6 GPUs... 5 jobs fit in 8
    # GPUs (4 ones + the 2-GPU job), a sixth would need 4 more.
    for sv in EXACT:
        a = run(cl, jobs, sv, objective)
        assert a.status is Status.OPTIMAL
        assert a.value == pytest.approx(expect)


@pytest.mark.parametrize("level,size,count", [("switch", 2, 4), ("socket", 3, 2),
                                              ("server", 5, 1)])
def test_locality_levels(level, size, count):
    cl = Cluster((Server("s0", 64000, 1024000, 8, "V100", sockets=2, switches_per_socket=2),),
                 levels=("server", "socket", "switch", "gpu"))
    jobs = tuple(job(i, size, locality=level, cpu=1000 * size, mem=1000 * size)
                 for i in range(6))
    for sv in EXACT:
        a = run(cl, jobs, sv, "jobs")
        assert a.status is Status.OPTIMAL
        assert a.value == count


def test_switch_locality_fragmentation():
    # 2-GPU switch jobs need a whole switch: three 1-GPU jobs spoil two switches
    cl = Cluster((Server("s0", 64000, 1024000, 8, "V100", sockets=2, switches_per_socket=2),),
                 levels=("server", "socket", "switch", "gpu"))
    jobs = tuple(job(i, 2, locality="switch", cpu=100, mem=100) for i in range(4)) + \
        tuple(job(10 + i, 1, cpu=100, mem=100) for i in range(3))
    for sv in ("cpsat", "milp"):
        a = run(cl, jobs, sv, "gpus")
        assert a.value == 8000 and a.status is Status.OPTIMAL


def test_rack_locality_and_types():
    cl = Cluster((server(0, gtype="V100", rack="r0"), server(1, gtype="V100", rack="r0"),
                  server(2, gtype="K80", rack="r1"), server(3, gtype="K80", rack="r1")),
                 levels=("rack", "server", "gpu"))
    jobs = (job(0, 8, locality="rack", cpu=8000, mem=8000),      # spans a rack
            job(1, 4, gpu_types=("K80",), cpu=1000, mem=1000, locality="server"),
            job(2, 4, gpu_types=("K80",), cpu=1000, mem=1000, locality="server"))
    for sv in EXACT:
        a = run(cl, jobs, sv, "jobs")
        assert a.value == 3 and a.status is Status.OPTIMAL
        racks = {cl.server(s).rack for s in a.placement("j0").cpu}
        assert len(racks) == 1
        for j in ("j1", "j2"):
            assert all(g.gpu.startswith(("s2", "s3")) for g in a.placement(j).gpus)


def test_sharing_milli_jobs():
    cl = Cluster((server(0, gpus=2, cpu=64000, mem=1024000),))
    jobs = tuple(Job(f"m{i}", gpus=1, gpu_milli=m, cpu=100, mem=100)
                 for i, m in enumerate([600, 600, 600, 400, 400, 300]))
    # best packing of milli: 600+400, 600+400 (2000) ; gpus objective
    for sv in EXACT:
        a = run(cl, jobs, sv, "gpus")
        assert a.value == 2000 and a.status is Status.OPTIMAL
        a = run(cl, jobs, sv, "jobs")
        assert a.value == 4 and a.status is Status.OPTIMAL   # 300+400 | 600+400? -> 4 jobs


def test_cpu_only_jobs():
    cl = Cluster((Server("c0", 8000, 64000), server(1, gpus=1, cpu=4000, mem=64000)))
    jobs = tuple(Job(f"c{i}", gpus=0, cpu=3000, mem=1000) for i in range(5)) + (job(9, 1),)
    for sv in EXACT:
        a = run(cl, jobs, sv, "jobs")
        # c0 takes 2, s1 takes the GPU job (3000 cpu) -> 1000 left: 3 jobs
        assert a.value == 3 and a.status is Status.OPTIMAL


def test_spread_job():
    cl = Cluster((server(0), server(1)))
    big = job(0, 8, FLAT, cpu=8000, mem=8000)           # needs both servers
    for sv in EXACT:
        a = run(cl, (big,), sv)
        assert len({s for s in a.placement("j0").cpu}) == 2
        assert a.value == pytest.approx(0.5)             # cluster span factor
        assert a.status is Status.OPTIMAL


def test_heuristics_registered():
    cl, jobs = medium()
    g = allocate(cl, jobs, solver="greedy-upgrade")
    ls = allocate(cl, jobs, solver="local-search", time_limit=2)
    assert g.status is Status.FEASIBLE and ls.value >= g.value - 1e-9
    assert not violations(cl, jobs, ls)


# ------------------------------------------------- objective step, dive
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instance(), st.sampled_from(["throughput", "gpus", "jobs"]),
       st.floats(0.0, 0.999))
def test_objective_step_bound_valid(inst, objective, frac):
    """Every solution value is a multiple of the step, so rounding any bound
    >= the optimum down to a multiple never cuts the (brute-forced) optimum."""
    from alloc.objectives import get_objective, tighten
    cl, jobs = inst
    delta = get_objective(objective).step(cl, jobs)
    assume(delta is not None)
    opt = brute_force(cl, jobs, objective)
    assert delta > 0
    q = opt / delta
    assert abs(q - round(q)) < 1e-6, (opt, delta)
    for bound in (opt, opt + frac * delta, opt + 1e-12, opt - 1e-9 * max(1.0, opt)):
        assert tighten(bound, delta) >= opt - 1e-9
    assert tighten(opt + delta, delta) >= opt + delta - 1e-9


def objective_granularity(p):
    return p.objective.step(p.cluster, p.jobs)


def test_objective_step_values():
    cl = Cluster((server(0),))
    jobs = (job(0, 1, GRID, weight=2.0), job(1, 2, FLAT, locality="server"))
    # GRID values 0.4/1.0/1.6/2.0 (x2), FLAT 1.0 with server span 1.0: step 0.2
    assert objective_granularity(compile_problem(cl, jobs, "throughput")) == pytest.approx(0.2)
    assert objective_granularity(compile_problem(cl, jobs, "jobs")) == 1.0
    # a spreadable job can run at the 0.5 cluster span factor: 0.2 * 0.5
    jobs2 = jobs + (job(2, 2, FLAT),)
    assert objective_granularity(compile_problem(cl, jobs2, "throughput")) == pytest.approx(0.1)
    odd = Profile("odd", (1000, 3000), (21330, 64000), ((None, 1 / 3), (None, 1.0)))
    assert objective_granularity(compile_problem(cl, (job(0, 1, odd),), "throughput")) is None


def test_dive_feasible_and_bounded():
    """Price-and-dive: integral, decodes to a valid placement, never above
    the column-generation bound."""
    from alloc.deadline import Deadline
    from alloc.problem import Solution
    from alloc.solve import finish, get_solver
    from alloc.engines.configuration.aggregate import Aggregate
    from alloc.engines.configuration.columns import check_assign, decode, solution_to_columns, true_value
    from alloc.engines.configuration.dive import dive
    from alloc.engines.configuration.driver import warm_start
    from alloc.engines.configuration.backend import Backend
    from alloc.engines.configuration.master import Master, column_generation
    cl, jobs = medium()
    p = compile_problem(cl, jobs, "throughput")
    backend = Backend("cpsat")
    _, best_v, sols, _ = warm_start(p, Deadline.after(1.0))
    agg = Aggregate(p, Deadline.never())
    master = Master(agg)
    for s in sols:
        cols = solution_to_columns(agg, s)
        for pat in (cols[0].values() if cols else ()):
            master.add(pat)
    cg = column_generation(master, backend, Deadline.after(5))
    assert cg.converged
    caps = (list(master.n_cap), list(master.t_cap))
    dv = dive(master, backend, Deadline.after(5), None, objective_granularity(p), width=1)
    assert (list(master.n_cap), list(master.t_cap)) == caps     # residual restored
    assert dv is not None and dv.complete
    assert dv.value <= cg.bound + 1e-6
    assign = decode(agg, dv.z, master.pool, dv.x)
    assert check_assign(p, assign)
    assert true_value(p, assign) <= cg.bound + 1e-6
    a = finish(p, Solution(assign), get_solver("cpsat"), 0.0)
    assert not violations(cl, jobs, a)


def test_synergy_size_proven():
    """A small Synergy-like instance (4 servers x 8 GPUs, 32 jobs): both
    backends prove optimality (objective step + enumeration) and agree."""
    import random
    rng = random.Random(5)
    profs = [GRID, FLAT, None]
    cl = Cluster(tuple(server(i, gpus=8, cpu=24000, mem=512000) for i in range(4)))
    jobs = tuple(job(i, g, profs[rng.randrange(3)], locality="server" if g > 1 else None)
                 for i, g in enumerate(rng.choices([1, 2, 4, 8], [70, 10, 15, 5], k=32)))
    vals = []
    for sv in ("cpsat", "milp"):
        a = run(cl, jobs, sv, tl=20)
        assert a.status is Status.OPTIMAL, (sv, a.stats)
        vals.append(a.value)
    assert vals[0] == pytest.approx(vals[1])


@pytest.mark.parametrize("executor", ["serial", "process"])
def test_partitioned_solve_is_valid_and_its_bound_covers_the_whole_problem(executor):
    """Parts solved apart, joined and repaired: a valid placement, running jobs
    kept, and a bound of the whole problem (never below the proven optimum)."""
    cl, jobs = medium()
    whole = run(cl, jobs, "cpsat", tl=20)
    a = allocate(cl, jobs, solver="cpsat", time_limit=6, parts=2, executor=executor)
    assert not violations(cl, jobs, a)
    assert a.stats["parts"] == 2 and a.value <= a.bound + 1e-6
    if whole.status is Status.OPTIMAL:
        assert a.bound >= whole.value - 1e-6 and a.value <= whole.value + 1e-6
    running = [replace(j, current=p) for j in jobs[:4] if (p := whole.placement(j.id))]
    live = running + list(jobs[4:])
    b = allocate(cl, live, solver="milp", time_limit=6, parts=2, executor=executor)
    assert not violations(cl, live, b) and not b.moved and not b.preempted


def test_warm_start_counts_pending_jobs_only():
    """A heuristic that returns the running jobs with its answer (hived) must
    not look better than one that places the pending jobs better."""
    cl = Cluster((Server("s0", 8000, 65536, 2, "P100"), Server("s1", 8000, 65536, 2, "V100")))
    tiny = Profile("p", (500, 4000), (8192, 16384, 32768),
                   ((None, None, None), (None, None, 0.01)))
    jobs = [Job("j0", gpus=0, cpu=1000, mem=16384,
                current=Placement("j0", (), {"s0": 1000}, {"s0": 16384})),
            Job("j1", gpus=1, gpu_milli=100, cpu=1000, mem=16384),
            Job("j2", gpus=1, cpu=1000, mem=16384, model="p", profile=tiny),
            Job("j3", gpus=1, cpu=1000, mem=16384), Job("j4", gpus=1, cpu=1000, mem=16384)]
    g = allocate(cl, jobs, solver="greedy-upgrade")
    for name in ("cpsat", "milp"):
        assert allocate(cl, jobs, solver=name, time_limit=5).value >= g.value - 1e-9

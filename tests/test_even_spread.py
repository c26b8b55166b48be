"""Even spreads (``Job.gpus_per_server``): exactly k GPUs on each of gpus / k
servers, for any caller.  Validated with one-line errors, read and written in
the instance format (1.1), checked by ``violations``, placed by every solver
that declares ``even-spread`` (the greedy heuristics, the exact family, the
preemption walk) and refused by the others; the exact solvers' optimum is
compared with an exhaustive search written here."""
import itertools
import json
import random

import pytest

from alloc import (Allocation, Cluster, GpuShare, InputError, Job, Placement, Server, Session,
                   UnsupportedInput, allocate, load_instance, violations)
from alloc.io import instance_from_dict, instance_to_dict
from alloc.objectives import get_objective
from alloc.problem import split
from alloc.registry import solvers

V100, A100 = "V100", "A100"


def mixed() -> Cluster:
    """Three 8-GPU V100 servers and one 4-GPU A100 server."""
    return Cluster(tuple(Server(f"v{i}", 32000, 64000, 8, V100) for i in range(3))
                   + (Server("a0", 32000, 64000, 4, A100),))


def per_server(p: Placement) -> dict:
    out: dict = {}
    for g in p.gpus:
        s = g.gpu.rsplit("/", 1)[0]
        out[s] = out.get(s, 0) + 1
    return out


# ------------------------------------------------------------------ the input
@pytest.mark.parametrize("job,msg", [
    (Job("j", 8, gpus_per_server=3), "jobs[0].gpus_per_server: expected a divisor of gpus (8), got 3"),
    (Job("j", 0, gpus_per_server=1), "jobs[0].gpus_per_server: expected a divisor of gpus (0)"),
    (Job("j", 8, gpus_per_server=0), "jobs[0].gpus_per_server: expected an integer in 1..1048576"),
    (Job("j", 8, gpus_per_server="4"), "jobs[0].gpus_per_server: expected an integer"),
    (Job("j", 8, gpus_per_server=4, min_gpus=4), "not with an elastic job"),
    (Job("j", 8, gpus_per_server=4, locality="server"), "locality 'server' confines it"),
])
def test_bad_even_spreads_are_one_line(job, msg):
    with pytest.raises(InputError) as exc:
        allocate(mixed(), [job])
    assert msg in str(exc.value) and "\n" not in str(exc.value)


def test_not_with_tenants():
    from alloc import Cell, Tenant
    c = Cluster(mixed().servers, tenants={"t": Tenant("t", (Cell("server", 1, V100),))})
    with pytest.raises(InputError, match="gpus_per_server: not with tenants"):
        allocate(c, [Job("j", 8, gpus_per_server=4)], solver="hived")


def test_one_server_is_locality_server_and_needs_no_capability():
    # fgd places no spread at all; k == gpus is one server, which it can do
    a = allocate(mixed(), [Job("j", 4, cpu=10, mem=10, gpus_per_server=4)], solver="fgd")
    (p,) = a.placements
    assert len(per_server(p)) == 1
    s = Session(mixed(), solver="fgd")
    s.submit(Job("k", 8, gpus_per_server=8))
    assert s.jobs["k"].locality == "server" and s.jobs["k"].gpus_per_server is None


def test_the_file_format_reads_and_writes_it():
    inst = load_instance("tiny-grid")
    d = instance_to_dict(inst)
    assert d["format"] == "alloc.instance/1"
    d["jobs"][0].update(gpus=4, gpus_per_server=2)
    d["jobs"][0].pop("model", None)
    for fmt in ("alloc.instance/1", "alloc.instance/1.1"):
        back = instance_from_dict(dict(d, format=fmt), "t.json")
        assert back.jobs[0].gpus_per_server == 2
    out = instance_to_dict(back)
    assert out["format"] == "alloc.instance/1.1" and out["jobs"][0]["gpus_per_server"] == 2
    assert json.loads(json.dumps(out)) == out
    with pytest.raises(InputError, match="format: expected an alloc.instance/1 file"):
        instance_from_dict(dict(d, format="alloc.instance/2"), "t.json")


def test_a_session_event_carries_it():
    s = Session(mixed(), solver="best-fit")
    s.apply([{"type": "submit", "job": {"id": "g", "gpus": 8, "cpu": 100, "mem": 100,
                                        "gpus_per_server": 4}}])
    assert s.jobs["g"].gpus_per_server == 4
    r = s.step()
    assert sorted(per_server(r.start[0]).values()) == [4, 4]


def test_violations_name_an_uneven_spread():
    c = mixed()
    job = Job("g", 8, cpu=100, mem=100, gpus_per_server=4)
    gpus = tuple(GpuShare(f"v0/gpu{k}", 1000) for k in range(6)) + \
        tuple(GpuShare(f"v1/gpu{k}", 1000) for k in range(2))
    bad = Allocation((Placement("g", gpus, {"v0": 75, "v1": 25}, {"v0": 75, "v1": 25}),))
    (msg, *rest) = [v for v in violations(c, [job], bad) if "gpus_per_server" in v]
    assert "4 GPUs on each server expected" in msg and "6 on v0" in msg
    gpus = tuple(GpuShare(f"v{i}/gpu{k}", 1000) for i in (0, 1) for k in range(4))
    skew = Allocation((Placement("g", gpus, {"v0": 90, "v1": 10}, {"v0": 50, "v1": 50}),))
    assert any("CPU split [10, 90]" in v for v in violations(c, [job], skew))
    even = Allocation((Placement("g", gpus, {"v0": 50, "v1": 50}, {"v0": 50, "v1": 50}),))
    assert not [v for v in violations(c, [job], even) if "throughput" not in v]


def test_a_job_too_wide_waits_with_a_reason():
    a = allocate(mixed(), [Job("g", 32, gpus_per_server=8, gpu_types=(V100,))], solver="best-fit")
    assert a.unplaced == ("g",)
    assert "needs 4 servers with 8 GPUs" in a.reasons["g"] and "3 of the servers" in a.reasons["g"]


# ------------------------------------------------------------ every solver
def jobs_for_all():
    return [Job("g", 8, cpu=800, mem=800, gpus_per_server=4),
            Job("h", 16, cpu=1600, mem=1600, gpus_per_server=8, gpu_types=(V100,)),
            Job("x", 2, cpu=10, mem=10, locality="server"),
            Job("y", 4, cpu=40, mem=40, gpus_per_server=2)]


@pytest.mark.parametrize("name", sorted(solvers()))
def test_every_solver_places_it_evenly_or_refuses_it(name):
    info = solvers()[name]
    if not info.available:
        pytest.skip(info.unavailable_reason())
    jobs = jobs_for_all()
    if "even-spread" not in info.capabilities:
        with pytest.raises(UnsupportedInput, match="even-spread"):
            allocate(mixed(), jobs, solver=name, time_limit=5)
        return
    kw = {"objective": "gpus"} if "gpus" in info.objectives else {}
    a = allocate(mixed(), jobs, solver=name, time_limit=5, **kw)
    assert not violations(mixed(), jobs, a)
    for p in a.placements:
        k = next(j for j in jobs if j.id == p.job).gpus_per_server
        if k:
            assert set(per_server(p).values()) == {k}, (p.job, per_server(p))
    assert {p.job for p in a.placements} & {"g", "h", "y"}


# ------------------------------------------------- exact, against brute force
def brute(cluster: Cluster, jobs, objective: str) -> float:
    """The optimum by exhaustive search: each job unplaced, or (locality
    server) on one server, or (even) on a set of gpus/k servers with k GPUs
    each; CPU and memory split in proportion to GPUs, as the core does.
    Scope: no profiles, no running jobs, no levels inside servers."""
    obj = get_objective(objective)
    servers = cluster.servers
    choices = []
    for j in jobs:
        opts = [None]
        k = j.gpus_per_server or j.gpus
        n = j.gpus // k
        for combo in itertools.combinations(range(len(servers)), n):
            if all(servers[s].gpus >= k and j.allows(servers[s].gpu_type) for s in combo):
                opts.append(combo)
        choices.append(opts)
    best = 0.0
    for pick in itertools.product(*choices):
        gpu = [s.gpus for s in servers]
        cpu = [s.cpu for s in servers]
        mem = [s.mem for s in servers]
        value, ok = 0.0, True
        for j, combo in zip(jobs, pick):
            if combo is None:
                continue
            k = j.gpus // len(combo)
            cs, ms = split(j.cpu, [k] * len(combo)), split(j.mem, [k] * len(combo))
            names = []
            for s, c, m in zip(combo, cs, ms):
                gpu[s] -= k
                cpu[s] -= c
                mem[s] -= m
                names += [f"{servers[s].id}/gpu{x}" for x in range(k)]
            if min(gpu) < 0 or min(cpu) < 0 or min(mem) < 0:
                ok = False
                break
            value += obj.value(j, Placement(j.id, tuple(GpuShare(g, 1000) for g in names)))
        if ok:
            best = max(best, value)
    return best


def tiny(seed: int):
    rng = random.Random(seed)
    servers = tuple(Server(f"s{i}", rng.choice([4000, 8000]), rng.choice([4000, 8000]),
                           rng.choice([2, 4]), rng.choice([V100, A100])) for i in range(3))
    jobs = []
    for k in range(rng.randint(2, 4)):
        per = rng.choice([1, 2])
        n = rng.choice([2, 3]) if rng.random() < 0.7 else 1
        cpu = rng.choice([0, 1000, 3000]) * n
        jobs.append(Job(f"j{k}", per * n, cpu=cpu, mem=rng.choice([0, 2000]) * n,
                        gpus_per_server=per if n > 1 else None,
                        locality="server" if n == 1 else None,
                        gpu_types=(rng.choice([V100, A100]),) if rng.random() < 0.3 else ()))
    return Cluster(servers), jobs


def traps():
    """Identical gangs that share servers: the parts on one server belong to
    different jobs (two parts of one job on a server is no even spread)."""
    big = Cluster((Server("a", 8000, 8000, 8, V100), Server("b", 8000, 8000, 2, V100)))
    three = Cluster(tuple(Server(f"s{i}", 8000, 8000, 4, V100) for i in range(3)))
    return [(big, [Job(f"g{k}", 4, cpu=200, mem=200, gpus_per_server=2) for k in range(2)]),
            (three, [Job(f"g{k}", 4, cpu=200, mem=200, gpus_per_server=2) for k in range(3)]),
            (three, [Job(f"g{k}", 6, cpu=300, mem=300, gpus_per_server=2) for k in range(3)])]


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_exact_solvers_model_it_exactly(solver):
    if not solvers()[solver].available:
        pytest.skip(solvers()[solver].unavailable_reason())
    proven = 0
    cases = [tiny(seed) for seed in range(14)] + traps()
    assert brute(*traps()[0], "gpus") == 4000     # one gang: b holds one part only
    for cluster, jobs in cases:
        seed = jobs
        for objective in ("gpus", "jobs"):
            opt = brute(cluster, jobs, objective)
            a = allocate(cluster, jobs, solver=solver, objective=objective, time_limit=10)
            assert not violations(cluster, jobs, a)
            assert a.value <= opt + 1e-6, (seed, objective, a.value, opt)
            if a.bound is not None:
                assert a.bound >= opt - 1e-6, (seed, objective, a.bound, opt)
            if a.status.value == "optimal":
                proven += 1
                assert abs(a.value - opt) <= 1e-6, (seed, objective, a.value, opt)
    assert proven >= 26, proven


# ------------------------------------------------------ preemption by order
def test_preemption_by_order_stops_the_lowest_ranked_for_a_gang():
    c = mixed()

    def on(s, jid, n):
        return Placement(jid, tuple(GpuShare(f"{s}/gpu{k}", 1000) for k in range(n)),
                         {s: 100}, {s: 100})
    jobs = [Job("r0", 4, cpu=100, mem=100, current=on("v0", "r0", 4)),
            Job("r1", 4, cpu=100, mem=100, current=on("v1", "r1", 4)),
            Job("r2", 8, cpu=100, mem=100, current=on("v2", "r2", 8)),
            Job("g", 16, cpu=2000, mem=2000, gpus_per_server=8, gpu_types=(V100,))]
    for solver in ("best-fit", "cpsat" if solvers()["cpsat"].available else "milp"):
        a = allocate(c, jobs, solver=solver, order=["g", "r0", "r1", "r2"], preempt="order",
                     time_limit=5)
        assert not violations(c, jobs, a, order=["g", "r0", "r1", "r2"], preempt="order")
        assert sorted(a.preempted) == ["r1", "r2"]          # the two lowest-ranked
        assert per_server(a.placement("g")) == {"v1": 8, "v2": 8}


# ------------------------------------------------------------------- moves
def running_mix(seed: int):
    """Running jobs (some even spreads) placed by best-fit, then new gangs."""
    rng = random.Random(seed)
    servers = tuple(Server(f"s{i}", rng.choice([8000, 16000]), rng.choice([8000, 16000]),
                           rng.choice([2, 4, 8]), rng.choice([V100, A100]))
                    for i in range(rng.randint(2, 5)))
    c, jobs = Cluster(servers), []
    for k in range(rng.randint(2, 7)):
        per, n = rng.choice([1, 2, 4]), rng.choice([1, 2, 2, 3])
        even = n > 1 and rng.random() < 0.6
        g = per * n if even else rng.choice([1, 2, 4])
        jobs.append(Job(f"j{k}", g, cpu=rng.choice([0, 500, 1000]) * g,
                        mem=rng.choice([0, 500]) * g, gpus_per_server=per if even else None,
                        locality=None if even or g == 1 else rng.choice([None, "server"]),
                        gpu_types=(rng.choice([V100, A100]),) if rng.random() < 0.3 else ()))
    jobs = list(allocate(c, jobs, solver="best-fit").advance(jobs))
    for k in range(rng.randint(1, 5)):
        per, n = rng.choice([1, 2, 4]), rng.choice([2, 3])
        jobs.append(Job(f"n{k}", per * n, cpu=500 * per * n, gpus_per_server=per))
    return c, jobs


@pytest.mark.parametrize("seed", [5, 15, 21])
def test_moves_keep_running_gangs_even(seed):
    """With moves allowed the exact family's warm starts (the buddy-cell
    engine's defragmentation) and its model keep every running gang even; the
    model names its restriction (a running gang stays or stops)."""
    solver = "cpsat" if solvers()["cpsat"].available else "milp"
    c, jobs = running_mix(seed)
    a = allocate(c, jobs, solver=solver, max_moves=2, time_limit=5)
    assert not violations(c, jobs, a, max_moves=2)
    for p in a.placements:
        k = next(j for j in jobs if j.id == p.job).gpus_per_server
        if k:
            assert set(per_server(p).values()) == {k}


def test_the_exact_model_moves_a_running_gang_evenly():
    c = Cluster(tuple(Server(f"s{i}", 16000, 16000, 4, V100) for i in range(3)))
    gs = tuple(GpuShare(f"{s}/gpu{k}", 1000) for s in ("s0", "s1") for k in (0, 1))
    jobs = [Job("r", 4, cpu=2000, gpus_per_server=2,
                current=Placement("r", gs, {"s0": 1000, "s1": 1000}, {"s0": 0, "s1": 0})),
            Job("w1", 4, cpu=1000, locality="server"), Job("w2", 4, cpu=1000, locality="server")]
    solver = "cpsat" if solvers()["cpsat"].available else "milp"
    a = allocate(c, jobs, solver=solver, max_moves=2, time_limit=5, objective="gpus")
    assert not violations(c, jobs, a, max_moves=2) and a.value == 8000
    assert a.status.value == "optimal" and not a.stats["restrictions"]
    # a V100 gang of two whole servers fits only where r runs: r moves to the A100s
    c = Cluster(tuple(Server(f"v{i}", 16000, 16000, 4, V100) for i in range(2))
                + tuple(Server(f"a{i}", 16000, 16000, 4, A100) for i in range(2)))
    gs = tuple(GpuShare(f"{s}/gpu{k}", 1000) for s in ("v0", "v1") for k in (0, 1))
    jobs = [Job("r", 4, cpu=2000, gpus_per_server=2,
                current=Placement("r", gs, {"v0": 1000, "v1": 1000}, {"v0": 0, "v1": 0})),
            Job("w", 8, cpu=1000, gpus_per_server=4, gpu_types=(V100,))]
    a = allocate(c, jobs, solver=solver, max_moves=1, time_limit=5, objective="gpus")
    assert not violations(c, jobs, a, max_moves=1)
    assert a.moved == ("r",) and a.value == 12000 and a.status.value == "optimal"
    assert per_server(a.placement("r")) == {"a0": 2, "a1": 2}


def test_the_checkers_witness_of_a_gang_is_even():
    from alloc.testing import order_problems, place_one, room_left
    c = mixed()
    job = Job("g", 8, cpu=800, mem=800, gpus_per_server=4)
    w = place_one(c, job, room_left(c, [], []))
    assert set(per_server(w).values()) == {4} and len(per_server(w)) == 2
    # a gang left out while a job ranked below holds the room it needed
    small = Job("s", 8, cpu=10, mem=10, locality="server")
    full = [Placement(f"f{i}", tuple(GpuShare(f"v{i}/gpu{k}", 1000) for k in range(8)),
                      {f"v{i}": 10}, {f"v{i}": 10}) for i in (1, 2)]
    jobs = [job, small] + [Job(f"f{i}", 8, cpu=10, mem=10, locality="server",
                               current=full[i - 1]) for i in (1, 2)]
    s_on_v0 = Placement("s", tuple(GpuShare(f"v0/gpu{k}", 1000) for k in range(8)),
                        {"v0": 10}, {"v0": 10})
    bad = Allocation(tuple(full) + (s_on_v0,), unplaced=("g",))
    assert order_problems(c, jobs, bad, order=["g", "s", "f1", "f2"])
    good = Allocation(tuple(full) + (s_on_v0,), unplaced=("g",))
    assert not order_problems(c, jobs, good, order=["s", "g", "f1", "f2"])


# ------------------------------------------- the conformance checks, drawn
EVEN_SOLVERS = sorted(n for n, s in solvers().items() if "even-spread" in s.capabilities)


@pytest.mark.parametrize("name", EVEN_SOLVERS)
def test_conformance_checks_hold_on_drawn_even_spreads(name):
    """Every check of the conformance suite (placements, values, bounds,
    reasons, the order under preemption by it, moves) on calls whose jobs
    may be even spreads, for every solver that declares ``even-spread``
    (tenancy left out: an even spread is refused beside tenants)."""
    from hypothesis import find, given, settings

    from alloc.testing.conformance import solver_problems
    from alloc.testing.strategies import calls
    info = solvers()[name]
    if not info.available:
        pytest.skip(info.unavailable_reason())
    seen = []

    drawn = calls(capabilities=info.capabilities - {"tenancy"}, max_jobs=6, even_spreads=True)

    def check(call):
        seen.append("even-spread" in call.features)
        problems, _ = solver_problems(name, call.cluster, call.jobs, time_limit=5.0,
                                      **call.kwargs())
        assert not problems, (problems, call)

    settings(max_examples=12 if info.exact else 25, deadline=None)(given(drawn)(check))()
    if not any(seen):       # a few random draws may hold none: check one that does
        check(find(drawn, lambda call: "even-spread" in call.features,
                   settings=settings(database=None)))
    assert any(seen), "no even spread drawn"

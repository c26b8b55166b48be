"""Sessions: rounds through the core, stable placements, events that fail
without changing anything, atomic batches, closed servers, explicit order."""
import copy
import json
from dataclasses import replace

import pytest

from alloc import (Cell, Cluster, GpuShare, InputError, Job, Placement, Server, Session, Tenant,
                   violations)
from alloc.session import RoundResult


def cluster(n=4, gpus=8, tenants=None, gpu_type="V100"):
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, gpus, gpu_type) for i in range(n)),
                   tenants=tenants or {})


def job(jid, n=1, **kw):
    return Job(jid, n, **{"cpu": 3000 * n, "mem": 64000 * n, **kw})


def on_s0(jid, n):
    """A job running on the first n GPUs of s0."""
    return job(jid, n, current=Placement(jid, tuple(GpuShare(f"s0/gpu{k}", 1000)
                                                    for k in range(n)),
                                         {"s0": 3000 * n}, {"s0": 64000 * n}))


def checked_step(s: Session, **kw) -> RoundResult:
    """A round, re-checked against the jobs as they were before it."""
    before = list(s.jobs.values())
    mm = s.max_moves
    r = s.step(**kw)
    assert violations(s.cluster if not s.failed else s.cluster, before, r.allocation,
                      max_moves=mm) == []
    assert s._consistent()
    return r


def test_round_starts_jobs_and_keeps_them_in_place():
    s = Session(cluster(2))
    for i in range(6):
        s.submit(job(f"j{i}", [1, 2, 4][i % 3], model="res18"))
    r = checked_step(s)
    assert r.round == 1 and {p.job for p in r.start} == {f"j{i}" for i in range(6)}
    assert not r.move and not r.preempt and r.unplaced == ()
    assert set(s.running) == {f"j{i}" for i in range(6)}
    for p in r.start:
        assert s.jobs[p.job].current.same_as(p)
    r2 = checked_step(s)
    assert not r2 and r2.round == 2 and len(r2.allocation.placements) == 6
    s.finish("j0")
    s.submit(job("late", 1))
    r3 = checked_step(s)
    assert [p.job for p in r3.start] == ["late"] and not r3.move
    json.dumps(r3.to_dict(allocation=True))


def test_unplaceable_job_waits_with_reason_and_gpu_type_defaults():
    c = Cluster((Server("a", 24000, 512000, 8), Server("b", 24000, 512000, 8)))
    s = Session(c)
    assert s.cluster.servers[0].gpu_type == "gpu"
    s.submit(job("wide", 16, locality="server"))
    s.submit(job("ok", 8))
    r = checked_step(s)
    assert r.unplaced == ("wide",) and "16 GPUs" in r.reasons["wide"]


BAD_EVENTS = [
    ("finish", ("nope",), "unknown job 'nope'"),
    ("fail_job", ("nope",), "unknown job"),
    ("set_priority", ("j0", 5000), "expected an integer in -1000..1000"),
    ("set_priority", ("nope", 1), "unknown job"),
    ("fail_server", ("nope",), "unknown server 'nope'"),
    ("drain_server", ("nope",), "unknown server"),
    ("undrain_server", ("s0",), "is not drained"),
    ("set_order", (["j0", "j0"],), "listed twice"),
    ("set_order", (["j0", ["zz"]],), "expected a job id"),
    ("set_order", ("j0",), "expected a list"),
    ("submit", (job("j0"),), "already exists"),
    ("submit", (Job("x", 2, gpu_milli=500),), "gpu_milli"),
    ("submit", (Job("x", 1, model="nosuchmodel"),), "unknown model"),
    ("submit", (Job("x", 1, tenant="t"),), "tenant"),
    ("submit", (Job("~blocked:x", 1),), "reserved"),
    ("submit", ("not a job",), "expected a Job"),
    ("submit", (Job("x", 1, current=Placement("x", (GpuShare("s0/gpu0", 1000),), {"s0": 0},
                                                {"s0": 0})),), "GPU s0/gpu0 has 0 milli free"),
    ("add_server", (Server("s1", 24000, 512000, 8, "V100"),), "already exists"),
    ("add_server", (Server("bad/id", 24000, 512000, 8, "V100"),), "without '/'"),
    ("add_server", (Server("x", 0, 512000, 8, "V100"),), "cpu"),
]


@pytest.mark.parametrize("name,args,msg", BAD_EVENTS, ids=[f"{b[0]}-{k}" for k, b in
                                                           enumerate(BAD_EVENTS)])
def test_bad_event_is_one_line_and_changes_nothing(name, args, msg):
    s = Session(cluster(2), jobs=[on_s0("j0", 8)])
    for i in range(1, 3):
        s.submit(job(f"j{i}", 1))
    checked_step(s)
    s.finish("j2")
    before = s.to_dict()
    with pytest.raises(InputError) as ei:
        getattr(s, name)(*args)
    text = str(ei.value)
    assert msg in text and "\n" not in text and "Traceback" not in text
    assert s.to_dict() == before and s._consistent()


def test_finish_twice_and_duplicate_submit():
    s = Session(cluster(1))
    s.submit(job("a"))
    checked_step(s)
    s.finish("a")
    state = s.to_dict()
    with pytest.raises(InputError, match="already finished"):
        s.finish("a")
    assert s.to_dict() == state
    s.submit(job("a"))  # the id is free again
    with pytest.raises(InputError, match="already exists"):
        s.submit(job("a", 2))
    assert s.jobs["a"].gpus == 1


def test_batch_is_atomic_and_keeps_submission_order():
    s = Session(cluster(2), order=None)
    for i in range(5):
        s.submit(job(f"j{i}"))
    checked_step(s)
    s.set_order(["j3", "j1"])
    before, keys, order = s.to_dict(), list(s.jobs), s.order
    events = [{"type": "finish", "job": "j1"}, {"type": "finish", "job": "j3"},
              {"type": "submit", "job": {"id": "n", "gpus": 1, "cpu": 3000, "mem": 64000}},
              {"type": "fail_server", "server": "s0"}, {"type": "drain_server", "server": "s1"},
              {"type": "add_server", "server": {"id": "s9", "cpu": 1, "mem": 1}},
              {"type": "set_priority", "job": "j0", "priority": 3},
              {"type": "finish", "job": "nope"}]
    with pytest.raises(InputError, match=r"^events\[7\]: unknown job 'nope'"):
        s.apply(events)
    assert s.to_dict() == before and list(s.jobs) == keys and s.order == order
    assert s._consistent() and len(s.cluster.servers) == 2
    out = s.apply(events[:-1])
    assert out[3] == sorted(out[3], key=keys.index) and s.events == before["events"] + 7
    assert "j1" not in s.order and s.drained == ("s1",)


@pytest.mark.parametrize("ev,msg", [
    ({"type": "launch", "job": "a"}, "events[0].type: expected one of submit"),
    ({"type": "finish", "job": "a", "extra": 1}, "unknown key 'extra'"),
    ({"type": "finish"}, "missing field 'job'"),
    ({"type": "submit", "job": {"id": "x", "gpus": -1}}, "events[0].job.gpus: expected a value >= 0"),
    ({"type": "submit", "job": {"id": "x", "gpu": 1}}, "events[0].job: unknown key 'gpu'"),
    ({"type": "submit", "job": [1]}, "events[0].job: expected object"),
    ({"type": "add_server", "server": {"id": "x"}}, "missing field 'cpu'"),
    ("finish", "expected an object"),
])
def test_bad_json_events(ev, msg):
    s = Session(cluster(1))
    s.submit(job("a"))
    state = s.to_dict()
    with pytest.raises(InputError) as ei:
        s.apply([ev])
    assert msg in str(ei.value), str(ei.value)
    assert s.to_dict() == state


def test_fail_server_requeues_its_jobs_and_removes_it():
    s = Session(cluster(2))
    s.submit(job("big", 8))
    s.submit(job("spread", 4))
    s.submit(job("small", 4))
    r = checked_step(s)
    host = next(iter(r.allocation.placement("big").servers))
    lost = s.fail_server(host)
    assert "big" in lost and all(s.jobs[j].current is None for j in lost)
    assert host not in s.cluster.server_index and len(s.cluster.servers) == 1
    r = checked_step(s)
    assert set(p.job for p in r.start) | set(r.unplaced) == set(lost)
    with pytest.raises(InputError, match="unknown server"):
        s.fail_server(host)
    s.add_server(Server(host, 24000, 512000, 8, "V100"))
    r = checked_step(s)
    assert not r.unplaced


def test_fail_server_that_tenants_need_stays_closed():
    ten = {"vc": Tenant("vc", (Cell("server", 2),))}
    s = Session(cluster(2, tenants=ten), solver="hived")
    s.submit(job("g", 8, tenant="vc", guaranteed=True))
    r = checked_step(s)
    host = next(iter(r.allocation.placement("g").servers))
    assert s.fail_server(host) == ("g",)
    assert s.failed == (host,) and len(s.cluster.servers) == 2
    r = checked_step(s)
    assert r.allocation.placement("g").servers.isdisjoint({host})
    s.submit(job("g2", 8, tenant="vc", guaranteed=True))
    r = checked_step(s)
    assert r.unplaced == ("g2",)
    with pytest.raises(InputError, match="has failed"):
        s.drain_server(host)
    s.add_server(Server(host, 24000, 512000, 8, "V100"))
    assert s.failed == ()
    r = checked_step(s)
    assert [p.job for p in r.start] == ["g2"]


@pytest.mark.parametrize("solver", ["best-fit", "synergy-tune", "fgd", "cpsat"])
def test_drained_server_takes_no_new_work(solver):
    s = Session(cluster(3), solver=solver, time_limit=5)
    s.submit(job("a", 2, model="res18"))
    r = checked_step(s)
    host = next(iter(r.allocation.placement("a").servers))
    s.drain_server(host)
    for i in range(12):
        s.submit(job(f"b{i}", [1, 2, 4][i % 3], model="res50"))
    r = checked_step(s)
    assert all(host not in p.servers for p in r.start)
    assert s.jobs["a"].current is not None
    s.finish("a")
    r = checked_step(s)
    assert all(host not in p.servers for p in r.start)
    s.undrain_server(host)
    r = checked_step(s)
    assert any(host in p.servers for p in r.start) or not r.unplaced


def test_drain_with_preemption_never_starts_work_there():
    ten = {"vc": Tenant("vc", (Cell("server", 1),))}
    for drained in ("s0", "s1"):
        s = Session(cluster(2, tenants=ten), solver="hived")
        for i in range(16):
            s.submit(job(f"o{i}"))
        checked_step(s)
        s.drain_server(drained)
        s.submit(job("g", 8, tenant="vc", guaranteed=True))
        r = checked_step(s)
        assert all(drained not in p.servers for p in r.start + r.move)
        if "g" in r.unplaced:
            assert "drained" in r.reasons["g"] and not r.preempt
        else:
            assert len(r.preempt) == 8 and all(s.jobs[p.job].current is None for p in r.preempt)


def test_preemption_by_guaranteed_job():
    ten = {"vc": Tenant("vc", (Cell("server", 1),))}
    s = Session(cluster(1, tenants=ten), solver="hived")
    for i in range(8):
        s.submit(job(f"o{i}"))
    checked_step(s)
    s.submit(job("g", 4, tenant="vc", guaranteed=True, priority=5))
    r = checked_step(s)
    assert [p.job for p in r.start] == ["g"] and len(r.preempt) == 4
    assert set(r.stop) <= set(r.unplaced)
    assert all(s.jobs[j].current is None for j in r.stop)
    assert r.preempt[0].gpus  # the binding the job releases


def test_explicit_order_past_priority_range():
    s = Session(Cluster((Server("s", 24000, 512000, 2, "V100"),)))
    n = 3000
    for i in range(n):
        s.submit(Job(f"j{i}", 1, cpu=10, mem=10))
    ranked = [f"j{i}" for i in reversed(range(n))]
    s.set_order(ranked)
    r = checked_step(s)
    assert {p.job for p in r.start} == {f"j{n - 1}", f"j{n - 2}"}
    s.set_order(None)
    s.finish(f"j{n - 1}")
    r = checked_step(s)
    assert [p.job for p in r.start] == ["j0"]


def test_order_given_at_construction_with_initial_jobs():
    jobs = [job(f"j{i}", 8) for i in range(3)]
    s = Session(cluster(1), jobs=jobs, order=["j2", "j0"])
    r = checked_step(s)
    assert [p.job for p in r.start] == ["j2"]
    with pytest.raises(InputError, match=r"order\[1\]: job 'zz' listed twice"):
        Session(cluster(1), order=["zz", "zz"])
    # ids not submitted yet take their place when they are
    s = Session(cluster(1), order=["later", "j0"], jobs=[job("j0", 8)])
    s.submit(job("later", 8))
    assert [p.job for p in checked_step(s).start] == ["later"]


def test_priority_changes_the_order():
    s = Session(cluster(1))
    s.submit(job("a", 8))
    s.submit(job("b", 8))
    s.set_priority("b", 10)
    r = checked_step(s)
    assert [p.job for p in r.start] == ["b"]


def test_fail_job_requeue_and_running_submit():
    s = Session(cluster(1))
    s.submit(job("a", 4))
    checked_step(s)
    s.fail_job("a", requeue=True)
    assert s.jobs["a"].current is None
    r = checked_step(s)
    assert [p.job for p in r.start] == ["a"]
    cur = Placement("", (GpuShare("s0/gpu7", 1000),), {"s0": 3000}, {"s0": 64000})
    if any(g.gpu == "s0/gpu7" for g in s.jobs["a"].current.gpus):
        cur = replace(cur, gpus=(GpuShare("s0/gpu0", 1000),))
    s.submit(job("r", 1, current=cur))
    assert s.jobs["r"].current.job == "r" and "r" in s.running
    r = checked_step(s)
    assert not r
    s.fail_job("r")
    assert "r" not in s.jobs and s.to_dict()["counts"]["failed"] == 1


def test_capability_refused_at_submit():
    c = Cluster((Server("s0", 24000, 512000, 8, "V100", sockets=2),),
                levels=("server", "socket", "gpu"))
    s = Session(c, solver="synergy-tune")
    state = s.to_dict()
    with pytest.raises(InputError, match="does not support locality"):
        s.submit(Job("x", 2, locality="socket"))
    assert s.to_dict() == state
    with pytest.raises(InputError, match="does not support tenancy"):
        Session(cluster(1, tenants={"vc": Tenant("vc", (Cell("server", 1),))}))


def test_settings_are_checked():
    with pytest.raises(ValueError, match="unknown solver"):
        Session(cluster(1), solver="nope")
    with pytest.raises(InputError, match="unknown option"):
        Session(cluster(1), solver="cpsat", options={"wrkers": 2})
    with pytest.raises(InputError, match="max_moves"):
        Session(cluster(1), max_moves=-1)
    with pytest.raises(InputError, match="time_limit"):
        Session(cluster(1), time_limit=0)


def test_moves_only_when_allowed():
    def on(sid, jid):
        return job(jid, 4, current=Placement(jid, tuple(GpuShare(f"{sid}/gpu{k}", 1000)
                                                        for k in range(4)),
                                             {sid: 12000}, {sid: 256000}))
    for mm in (0, 2):
        s = Session(cluster(2), solver="hived", max_moves=mm, jobs=[on("s0", "a"), on("s1", "b")])
        s.submit(job("c", 8, cpu=12000, mem=256000, locality="server"))
        r = checked_step(s)
        if mm == 0:
            assert r.unplaced == ("c",) and not r.move
            continue
        assert [p.job for p in r.start] == ["c"] and len(r.move) == 1
        p = r.move[0]
        assert not r.moved_from[p.job].same_as(p) and s.jobs[p.job].current.same_as(p)
        assert r.to_dict()["move"][0]["from"]["gpus"]


def test_rounds_do_not_revalidate_jobs_or_recompile_the_cluster(monkeypatch):
    import alloc.session.checks as checks
    s = Session(cluster(4))
    for i in range(20):
        s.submit(job(f"j{i}", 1 + i % 2, model="res18"))
    checked_step(s)
    c0 = s.cluster
    arrays = c0.__dict__.get("_arrays")
    calls = []
    real = checks.job_field_problems
    monkeypatch.setattr(checks, "job_field_problems", lambda *a: calls.append(1) or real(*a))
    import alloc.validate as validate
    monkeypatch.setattr(validate, "prepare", lambda *a, **k: pytest.fail("prepare in a round"))
    s.finish("j0")
    s.submit(job("new", 1))
    assert len(calls) == 1
    checked_step(s)
    checked_step(s)
    assert len(calls) == 1 and s.cluster is c0 and c0.__dict__.get("_arrays") is arrays


@pytest.mark.parametrize("solver", ["best-fit", "synergy-tune", "fgd", "hived"])
def test_a_round_is_the_checked_allocate_call(solver):
    """Skipping the whole-input validation changes nothing: each round gives
    what allocate() gives on the same jobs, order and settings."""
    import random
    from alloc import allocate
    rng = random.Random(7)
    s = Session(cluster(3), solver=solver)
    for rnd in range(6):
        for k in range(rng.randint(1, 4)):
            n = rng.choice([1, 2, 4])
            s.submit(job(f"j{rnd}-{k}", n, model=rng.choice(["res18", "gnmt", None])))
        running = [j for j in s.running if rng.random() < 0.3]
        for jid in running:
            s.finish(jid)
        if rnd == 3:
            s.set_order(list(reversed(s.jobs)))
        before = list(s.jobs.values())
        order = s.order
        r = checked_step(s)
        # fresh copies: nothing the core kept on the session's objects (alloc.memo)
        fresh_cluster, fresh = copy.deepcopy(s.cluster), copy.deepcopy(before)
        assert not any("_memo" in j.current.__dict__ for j in fresh if j.current)
        ref = allocate(fresh_cluster, fresh, solver=solver, order=order)
        assert r.allocation.placements == ref.placements
        assert violations(fresh_cluster, fresh, r.allocation) == []
        assert set(r.unplaced) == set(ref.unplaced) and r.allocation.value == ref.value


def test_a_job_for_a_gpu_type_no_server_has_waits_until_one_joins():
    s = Session(cluster(2))
    s.submit(Job("t4", 1, cpu=1000, mem=1000, gpu_types=("T4",)))
    r = s.step()
    assert "t4" in r.unplaced and "GPU type" in r.reasons["t4"]
    s.add_server(Server("s9", 24000, 512000, 4, "T4"))
    r = s.step()
    assert [p.job for p in r.start] == ["t4"] and r.start[0].gpus[0].gpu.startswith("s9/")


def test_the_commits_copy_of_a_job_is_replace():
    """The commit copies a job with its new ``current`` by its instance
    dictionary (`_placed_at`): equal to `dataclasses.replace`, field by field,
    for jobs with every kind of field set -- which holds while `Job` keeps no
    ``__post_init__`` and no attribute outside its fields."""
    from dataclasses import fields
    from alloc.session.core import _placed_at
    assert not hasattr(Job, "__post_init__")
    p = Placement("a", (GpuShare("s0/gpu0", 500),), {"s0": 1000}, {"s0": 2000}, 0.5)
    jobs = [Job("a", 1, cpu=1000, mem=2000),
            Job("a", 1, gpu_milli=500, cpu=1000, mem=2000, model="res18", priority=3,
                gpu_types=("V100",), current=p),
            Job("a", 2, cpu=1000, mem=2000, min_gpus=1, max_gpus=4, locality="server",
                tenant="t", guaranteed=True)]
    names = [f.name for f in fields(Job)]
    for job in jobs:
        for cur in (p, None):
            got, want = _placed_at(job, cur), replace(job, current=cur)
            assert got == want and type(got) is Job and got.current is cur
            assert vars(got) == vars(want) and list(vars(want)) == names
            assert job.current is jobs[jobs.index(job)].current       # the original unchanged

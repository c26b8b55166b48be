"""One call path: `allocate()` and `Session` validate through the same code
(`alloc.call`), so the same bad input raises the same error class with the
same message from both; a job a session's solver cannot handle, submitted
later, is refused with the same line (prefixed by where it came from).
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from alloc import Cell, Cluster, Job, Server, Session, Tenant, allocate
from alloc.call import make_call
from alloc.errors import AllocError, InputError, UnsupportedInput


def cluster(n=2, **kw):
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100", sockets=2)
                         for i in range(n)), levels=("server", "socket", "gpu"), **kw)


def job(jid="a", gpus=1, **kw):
    kw.setdefault("cpu", 1000)
    kw.setdefault("mem", 1000)
    return Job(jid, gpus, **kw)


TENANTS = {"vc": Tenant("vc", (Cell("server", 1),))}

#: (cluster, jobs, settings): each bad in one way (or in two: the first found is told)
BAD = [
    # settings
    (cluster(), [job()], {"solver": "nope"}),
    (cluster(), [job()], {"solver": 3}),
    (cluster(), [job()], {"solver": "best-fit", "options": {"nope": 1}}),
    (cluster(), [job()], {"solver": "hived", "options": {"preempt": "maybe"}}),
    (cluster(), [job()], {"objective": "speed"}),
    (cluster(), [job()], {"objective": 3}),
    (cluster(), [job()], {"time_limit": 0}),
    (cluster(), [job()], {"time_limit": -1.0}),
    (cluster(), [job()], {"time_limit": "10"}),
    (cluster(), [job()], {"time_limit": float("inf")}),
    (cluster(), [job()], {"time_limit": True}),
    (cluster(), [job()], {"seed": "x"}),
    (cluster(), [job()], {"seed": 1.5}),
    (cluster(), [job()], {"seed": True}),
    (cluster(), [job()], {"max_moves": -1}),
    (cluster(), [job()], {"max_moves": 1.5}),
    (cluster(), [job()], {"move_cost": -1.0}),
    (cluster(), [job()], {"move_cost": float("nan")}),
    (cluster(), [job()], {"move_cost": "1"}),
    (cluster(), [job()], {"preempt": "always"}),
    (cluster(), [job()], {"preempt": True}),
    (cluster(), [job()], {"preempt_packed": "yes"}),
    (cluster(), [job()], {"preempt": "order", "preempt_packed": 1}),
    (cluster(), [job()], {"solver": "nope", "seed": "x"}),
    (cluster(), [job()], {"objective": "speed", "time_limit": 0}),
    # the cluster
    (Cluster((Server("s0", 24000, 512000, 8, "V100"), Server("s0", 24000, 512000, 8, "V100"))),
     [job()], {}),
    (Cluster((Server("s0", -1, 512000, 8, "V100"),)), [job()], {}),
    (Cluster((Server("s/0", 24000, 512000, 8, "V100"),)), [job()], {}),
    (Cluster((Server("s0", 24000, 512000, 8, "V100"),), levels=("server", "rack", "gpu")),
     [job()], {}),
    ("not a cluster", [job()], {}),
    # the jobs
    (cluster(), [job(), job()], {}),
    (cluster(), [job(gpus=-1)], {}),
    (cluster(), [job(cpu=-5)], {}),
    (cluster(), [job(mem="lots")], {}),
    (cluster(), [job(gpu_types=(3,))], {}),
    (cluster(), [job(locality="rack")], {}),
    (cluster(), [job(model="no-such-model")], {}),
    (cluster(), [job(gpu_milli=1500)], {}),
    (cluster(), [job(gpus=2, gpu_milli=500)], {}),
    (cluster(), [job(priority="high")], {}),
    (cluster(), [job(min_gpus=4, max_gpus=2, gpus=2)], {}),
    (cluster(), [job(tenant="nobody", guaranteed=True)], {"solver": "hived"}),
    (cluster(), [job(gpus=2, preferred="rack")], {}),
    # what the solver cannot do with this input
    (cluster(), [job(gpus=2, locality="socket")], {"solver": "synergy-tune"}),
    (cluster(tenants=TENANTS), [job()], {"solver": "best-fit"}),
    (cluster(tenants=TENANTS), [job()], {"solver": "fgd"}),
    (cluster(), [job(tenant="vc", guaranteed=True)], {"solver": "drf"}),
    (cluster(tenants=TENANTS), [job()], {"solver": "hived", "preempt": "order"}),
    (cluster(), [job(guaranteed=True, tenant="vc")], {"preempt": "order"}),
    (cluster(), [job(gpus=2, locality="socket")], {"solver": "synergy-tune", "preempt": "order"}),
]


def raised(f):
    try:
        f()
    except AllocError as exc:
        return type(exc), str(exc)
    except ValueError as exc:           # neither path may let a bare one through
        return type(exc), str(exc)
    return None


def both(c, jobs, kw):
    """What allocate() and Session() raise for the same input and settings."""
    kw = {"max_moves": 0, **kw}
    opts = kw.pop("options", {})
    a = raised(lambda: allocate(c, jobs, **kw, **opts))
    s = raised(lambda: Session(c, jobs=jobs, options=opts, **kw))
    return a, s


@pytest.mark.parametrize("k", range(len(BAD)))
def test_the_same_bad_input_gives_the_same_error(k):
    c, jobs, kw = BAD[k]
    a, s = both(c, jobs, kw)
    assert a is not None, (k, "allocate() took it")
    assert a == s
    assert issubclass(a[0], InputError), a
    assert "\n" not in a[1]


def test_a_job_refused_later_is_told_the_same_way():
    c = cluster()
    s = Session(c, solver="synergy-tune")
    bad = job("x", 2, locality="socket")
    with pytest.raises(UnsupportedInput) as late:
        s.submit(bad)
    with pytest.raises(UnsupportedInput) as now:
        allocate(c, [bad], solver="synergy-tune")
    assert str(late.value) == "submit.job: " + str(now.value)


FIELDS = {
    "gpus": st.sampled_from([-1, 1.5, "2", 99, None]),
    "cpu": st.sampled_from([-1, 2.5, "x", None, 10 ** 9]),
    "mem": st.sampled_from([-1, "x", None, 10 ** 9]),
    "gpu_milli": st.sampled_from([0, -5, 1001, 2.5, "half"]),
    "locality": st.sampled_from(["rack", 3, "", "cluster-wide"]),
    "gpu_types": st.sampled_from([("X100",), "V100", (3,), ()]),
    "priority": st.sampled_from(["high", 1.5, None, 10 ** 12]),
    "model": st.sampled_from(["nope", 3, ""]),
    "tenant": st.sampled_from(["nobody", 3]),
    "min_gpus": st.sampled_from([-1, 9, "1"]),
}


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(sorted(FIELDS)), data=st.data(),
       solver=st.sampled_from(["best-fit", "synergy-tune", "fgd", "hived", "cpsat"]))
def test_many_bad_jobs_give_the_same_error(field, data, solver):
    value = data.draw(FIELDS[field])
    bad = replace(job("b", 2), **{field: value})
    a, s = both(cluster(), [job("a"), bad], {"solver": solver, "time_limit": 5})
    assert a == s


def test_a_good_call_carries_what_it_needs():
    c = make_call(cluster(), [job(gpu_milli=500), job("b", 2, locality="socket")],
                  solver="cpsat")
    assert c.needs == {"sharing", "locality"}
    assert c.info.name == "cpsat" and c.objective.name == "throughput"

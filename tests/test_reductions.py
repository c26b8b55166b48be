"""The reductions (alloc.reductions): closed servers out of a session's call,
the core's pins, the chain; every answer is checked on the call as posed."""
import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, Session, violations
from alloc.objectives import get_objective
from alloc.reductions import Chain, ClosedServers, KeptRunning


def cluster(n=3, gpus=4):
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, gpus, "V100") for i in range(n)))


def spread(jid="g"):
    """A 4-GPU job running on two GPUs of s0 and two of s1."""
    gpus = tuple(GpuShare(f"s{s}/gpu{k}", 1000) for s in (0, 1) for k in (0, 1))
    cur = Placement(jid, gpus, {"s0": 6000, "s1": 6000}, {"s0": 128000, "s1": 128000})
    return Job(jid, 4, cpu=12000, mem=256000, current=cur)


@pytest.mark.parametrize("solver", ["best-fit", "hived", "cpsat", "synergy-tune"])
@pytest.mark.parametrize("moves", [0, None])
def test_a_job_with_a_part_on_a_drained_server_stays_and_nothing_starts_there(solver, moves):
    kw = {"max_moves": moves, "move_cost": 0.0} if moves is None else {}
    s = Session(cluster(), jobs=[spread()], solver=solver, time_limit=5, **kw)
    s.drain_server("s1")
    for i in range(8):
        s.submit(Job(f"n{i}", 1, cpu=3000, mem=64000))
    before = list(s.jobs.values())
    r = s.step()
    a = r.allocation
    assert violations(s.cluster, before, a, max_moves=moves) == []
    assert a.placement("g").same_as(before[0].current) and "g" not in a.moved
    assert all("s1" not in p.servers for p in r.start + r.move)
    obj = get_objective(a.objective)
    jobs = {j.id: j for j in before}
    assert a.value == pytest.approx(sum(obj.value(jobs[p.job], p) for p in a.placements))
    assert a.stats["closed_servers"] == ["s1"] and r.timings["attempts"] == 1


def test_every_server_closed_starts_nothing_and_says_why():
    s = Session(cluster(2), jobs=[spread()], solver="best-fit")
    s.drain_server("s0")
    s.drain_server("s1")
    s.submit(Job("w", 1, cpu=1000, mem=1000))
    r = s.step()
    assert [p.job for p in r.allocation.placements] == ["g"] and r.unplaced == ("w",)
    assert "closed server" in r.reasons["w"] and "drained" in r.reasons["w"]


def test_a_job_only_a_closed_server_can_hold_says_so():
    c = Cluster((Server("big", 24000, 512000, 8, "V100"), Server("small", 24000, 512000, 2,
                                                                    "V100")))
    s = Session(c, solver="best-fit")
    s.drain_server("big")
    s.submit(Job("wide", 8, cpu=8000, mem=8000))
    r = s.step()
    assert r.unplaced == ("wide",) and "only a closed server" in r.reasons["wide"]
    s.undrain_server("big")
    assert [p.job for p in s.step().start] == ["wide"]


def test_apply_then_invert_gives_back_the_jobs_the_reduction_took_out():
    jobs = [spread(), Job("w", 1, cpu=1000, mem=1000)]
    red = ClosedServers()
    (c, kept, order), inv = red.apply((cluster(), jobs, ["w", "g"]), frozenset({"s1", "s2"}))
    assert [s.id for s in c.servers] == ["s0"] and order == ["w", "g"]
    g = next(j for j in kept if j.id == "g")
    assert g.gpus == 2 and set(g.current.cpu) == {"s0"}
    (c2, _, _), _ = red.apply((cluster(), jobs, None), frozenset({"s1", "s2"}))
    assert c2 is not c            # another cluster object: kept per (cluster, closed set)


def test_kept_running_puts_back_what_a_solver_may_not_touch():
    from alloc.problem import Solution, compile_problem
    p = compile_problem(cluster(), [spread()])
    for caps, back in ((frozenset(), True), (frozenset({"preemption"}), False),
                       (frozenset({"migration"}), True)):
        red = KeptRunning(caps)
        _, data = red.apply(p)
        got = Chain((red,)).invert(Solution(), [data]).assign
        assert (got == p.fixed) is back

"""A scheduler loop's rounds equal fresh calls.

A session keeps what each round derived (`alloc.carry`): the compiled
problem, the last checked allocation, fgd's cluster state, hived's engine.
On generated event sequences -- arrivals, finishes, failed jobs, failed,
drained and added servers, priorities, guaranteed jobs preempting
opportunistic ones -- every round's allocation must equal the one a fresh
``allocate()`` gives on deep copies of the session's cluster and jobs (a
fresh session on those copies when servers are drained or failed, since the
session shows them to the core as placeholder jobs).
"""
from __future__ import annotations

import copy
import random

import pytest

from alloc import Cell, Cluster, Job, Server, Session, Tenant, allocate
from alloc.model import frozen_map
from alloc.problem import compile_problem
from alloc.carry import Carry

LEVELS = ("rack", "server", "socket", "switch", "gpu")
MODELS = ("res18", "bert", "gnmt")


def cluster(n: int = 10, tenants: bool = False, types=("V100", "K80")) -> Cluster:
    servers = tuple(Server(f"s{i:02d}", 24000, 512000, 8, types[i % len(types)], f"r{i // 4}",
                           2, 2) for i in range(n))
    ten = {}
    if tenants:
        ten = {"a": Tenant("a", (Cell("server", 2, "V100"),)),
               "b": Tenant("b", (Cell("socket", 2, "K80"),))}
    return Cluster(servers, LEVELS, frozen_map(ten))


class Workload:
    """Seeded jobs: 1/2/4/8 GPUs, some restricted to a type, some with a
    locality level, some sharing a GPU, some guaranteed to a tenant."""

    def __init__(self, seed: int, sharing: bool, tenants: bool, locality: bool = True):
        self.rng = random.Random(seed)
        self.sharing, self.tenants, self.locality = sharing, tenants, locality
        self.k = 0

    def job(self) -> Job:
        r = self.rng
        self.k += 1
        n = r.choices((1, 2, 4, 8), (60, 20, 15, 5))[0]
        kw = {"model": r.choice(MODELS)}
        if r.random() < 0.2:
            kw["gpu_types"] = (r.choice(("V100", "K80")),)
        if self.locality and n > 1 and r.random() < 0.2:
            kw["locality"] = r.choice(("socket", "server"))
        if self.sharing and n == 1 and r.random() < 0.3:
            kw["gpu_milli"] = r.choice((250, 500))
        if self.tenants and r.random() < 0.3:
            t = r.choice(("a", "b"))
            kw.update(tenant=t, guaranteed=True, gpu_types=("V100" if t == "a" else "K80",))
            kw.pop("locality", None)
            kw.pop("gpu_milli", None)
        kw["priority"] = r.choice((0, 0, 0, 5))
        return Job(f"j{self.k}", n, cpu=3000 * n, mem=64000 * n, **kw)


def events(s: Session, w: Workload, spare: list) -> list:
    """One round's events: finishes, arrivals and, now and then, a failure,
    a drain, an undrain, a new server, a priority change."""
    r = w.rng
    done = [j for j in s.running if r.random() < 0.25]
    evs = [{"type": "finish", "job": j} for j in done]
    evs += [{"type": "submit", "job": w.job()} for _ in range(r.randint(0, 12))]
    roll = r.random()
    live = [x.id for x in s.cluster.servers if x.id not in s.failed]
    running = [j for j in s.running if j not in done]
    if roll < 0.08 and running:
        evs.append({"type": "fail_job", "job": r.choice(running), "requeue": r.random() < 0.5})
    elif roll < 0.14 and len(live) > 6:
        evs.append({"type": "fail_server", "server": r.choice(live)})
    elif roll < 0.22:
        open_ = [x for x in live if x not in s.drained]
        if open_:
            evs.append({"type": "drain_server", "server": r.choice(open_)})
    elif roll < 0.28 and s.drained:
        evs.append({"type": "undrain_server", "server": r.choice(s.drained)})
    elif roll < 0.35 and spare:
        evs.append({"type": "add_server", "server": spare.pop()})
    elif roll < 0.41 and s.pending:
        evs.append({"type": "set_priority", "job": r.choice(s.pending),
                    "priority": r.choice((1, 7))})
    return evs


def fresh(s: Session):
    """The allocation a fresh call on deep copies of the session's state gives."""
    cl = copy.deepcopy(s.cluster)
    jobs = copy.deepcopy(list(s.jobs.values()))
    if not s.drained and not s.failed:
        return allocate(cl, jobs, solver=s.solver, order=s.order, max_moves=s.max_moves,
                        **s.options)
    t = Session(cl, jobs=jobs, solver=s.solver, options=dict(s.options), order=s.order)
    for sid in s.failed:
        t.fail_server(sid)
    for sid in s.drained:
        t.drain_server(sid)
    return t.step().allocation


def same(a, b) -> bool:
    return (a.placements == b.placements and a.unplaced == b.unplaced
            and a.preempted == b.preempted and a.moved == b.moved and a.value == b.value
            and a.status == b.status and a.reasons == b.reasons)


CASES = [("best-fit", True, True, False), ("synergy-tune", True, False, False),
         ("fgd", True, False, False), ("gpu-clustering", True, False, False),
         ("hived", False, True, False), ("hived", False, True, True),
         ("drf", False, True, True)]          # drf: the core serves the guarantee


@pytest.mark.parametrize("solver,sharing,locality,tenants", CASES)
def test_rounds_equal_fresh_calls(solver, sharing, locality, tenants, monkeypatch):
    import alloc.recheck
    from alloc.solvers.fgd import solvers as fgd
    from alloc.engines.cells import kept
    used = {"partial": 0, "state": 0}

    def spy(module, name, key, hit=lambda r: bool(r)):
        real = getattr(module, name)

        def wrapped(*a, **k):
            r = real(*a, **k)
            used[key] += hit(r)
            return r
        monkeypatch.setattr(module, name, wrapped)
    spy(alloc.recheck, "_partial", "partial")
    spy(kept, "_advance", "state")
    spy(fgd, "_apply_running", "state", lambda r: 0)    # counted below instead
    real_state = fgd._state

    def state(problem):
        st = real_state(problem)
        used["state"] += st.nlog == 0 and problem.changes is not None
        return st
    monkeypatch.setattr(fgd, "_state", state)
    seen = set()
    for seed in (1, 2):
        w = Workload(seed, sharing, tenants, locality)
        s = Session(cluster(tenants=tenants), solver=solver)
        spare = [Server(f"x{seed}{i}", 24000, 512000, 8, "V100", "r9", 2, 2) for i in range(2)]
        for r in range(25):
            evs = events(s, w, spare)
            seen.update(e["type"] for e in evs)
            s.apply(evs)
            want = fresh(s)
            got = s.step().allocation
            assert same(got, want), (solver, seed, r)
            seen.update(["preempted"] if got.preempted else [])
    if tenants:
        assert "preempted" in seen              # guaranteed jobs did preempt
    assert {"fail_server", "drain_server", "fail_job", "add_server"} <= seen, seen
    # many rounds followed the last one: the partial check (not with tenants:
    # their binding is checked in full), the kept state
    assert used["partial"] >= (0 if tenants else 10), used
    if solver in ("fgd", "gpu-clustering", "hived"):
        assert used["state"] >= 10, used


def fresh_by_order(s: Session):
    """`fresh` for a session that preempts by its order."""
    cl = copy.deepcopy(s.cluster)
    jobs = copy.deepcopy(list(s.jobs.values()))
    order = [j for j in s.order if j in s.jobs]
    opts = {k: v for k, v in s.options.items() if k != "preempt"}     # hived's own: default
    if not s.drained and not s.failed:
        return allocate(cl, jobs, solver=s.solver, order=order, preempt="order", **opts)
    t = Session(cl, jobs=jobs, solver=s.solver, options=opts, order=order, preempt="order")
    for sid in s.failed:
        t.fail_server(sid)
    for sid in s.drained:
        t.drain_server(sid)
    return t.step().allocation


@pytest.mark.parametrize("solver,sharing,locality", [
    ("best-fit", True, True), ("synergy-tune", True, False), ("fgd", True, False),
    ("hived", False, True)])
def test_rounds_preempting_by_order_equal_fresh_calls(solver, sharing, locality, monkeypatch):
    """Under ``preempt="order"`` the solver gets the reduced problem (victims
    gone, pinned jobs running); its kept state must follow it into the next
    round.  A LAS-like order (the newest first, then by rounds run) makes
    arrivals preempt running jobs most rounds."""
    from alloc.solvers.fgd import solvers as fgd
    from alloc.engines.cells import kept
    used = {"state": 0, "preempted": 0, "after": 0}
    real_advance, real_state = kept._advance, fgd._state
    last = {"preempted": False}

    def advance(eng, p, deadline):
        ok = real_advance(eng, p, deadline)
        used["state"] += ok
        used["after"] += ok and last["preempted"]
        return ok

    def state(problem):
        st = real_state(problem)
        ok = st.nlog == 0 and problem.changes is not None
        used["state"] += ok
        used["after"] += ok and last["preempted"]
        return st
    monkeypatch.setattr(kept, "_advance", advance)
    monkeypatch.setattr(fgd, "_state", state)
    for seed in (3, 4):
        w = Workload(seed, sharing, False, locality)
        s = Session(cluster(8), solver=solver, preempt="order")
        ran: dict[str, int] = {}
        spare = [Server(f"y{seed}{i}", 24000, 512000, 8, "V100", "r9", 2, 2) for i in range(2)]
        for r in range(20):
            evs = events(s, w, spare)
            s.apply(evs)
            ids = list(s.jobs)
            s.set_order(sorted(ids, key=lambda j: (ran.get(j, -1) if w.rng.random() < 0.8
                                                   else w.rng.randint(0, 5), j)))
            want = fresh_by_order(s)
            got = s.step().allocation
            assert same(got, want), (solver, seed, r)
            last["preempted"] = bool(got.preempted)
            used["preempted"] += len(got.preempted)
            for j in s.running:
                ran[j] = ran.get(j, 0) + 1
    assert used["preempted"] >= 5, used
    if solver in ("fgd", "hived"):
        assert used["state"] >= 10 and used["after"] >= 2, used


def test_compile_with_a_carry_equals_a_fresh_compile():
    """Free capacities, running and pending jobs, reasons, options and ranks
    of the incremental compile equal a fresh compile's, round after round."""
    w = Workload(5, True, False)
    cl = cluster(8)
    s = Session(cl, solver="best-fit")
    carry = Carry()
    for _ in range(15):
        s.apply(events(s, w, []))
        jobs = list(s.jobs.values())
        if s.cluster is not cl:
            cl = s.cluster
        a = compile_problem(s.cluster, jobs, carry=carry)
        b = compile_problem(copy.deepcopy(s.cluster), copy.deepcopy(jobs))
        for name in ("free_cpu", "free_mem", "gpu_free", "rank"):
            assert (getattr(a, name) == getattr(b, name)).all(), name
        assert a.fixed == b.fixed and a.running == b.running and a.pending == b.pending
        assert a.reasons == b.reasons and a.options == b.options and a.prio_key == b.prio_key
        s.step()


def test_changes_name_what_moved_between_problems():
    cl = cluster(2)
    a1 = Job("a", 1, cpu=1000, mem=1000)
    b1 = Job("b", 1, cpu=1000, mem=1000)
    carry = Carry()
    p1 = compile_problem(cl, [a1, b1], carry=carry)
    assert p1.changes is None
    s = Session(cl, jobs=[a1, b1])
    r = s.step()
    running = list(s.jobs.values())
    p2 = compile_problem(cl, running, carry=carry)
    assert p2.changes.since == p1.stamp and p2.changes.added == (0, 1)
    s.finish("a")
    p3 = compile_problem(cl, list(s.jobs.values()), carry=carry)
    assert [k for k, _, _ in p3.changes.removed] == [0] and p3.changes.kept == {0: 1}
    assert p3.gpu_free.sum() == 16 * 1000 - 1000 and len(r.start) == 2
    # another cluster object: nothing carried
    p4 = compile_problem(copy.deepcopy(cl), list(s.jobs.values()), carry=carry)
    assert p4.changes is None

"""A round's work follows what changed: waiting jobs that cannot fit are held
out of the round (`alloc.session.room`), and the round is still the one a
fresh call gives."""
from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, Session, allocate
from alloc.errors import InputError
from alloc.profiles import load_profile
from alloc.session.room import Room

MODELS = ("res18", "bert", "gnmt")


def cluster(n: int = 8) -> Cluster:
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(n)))


def long_job(sid: str, cpu: int) -> Job:
    p = Placement(f"L{sid}", (GpuShare(f"{sid}/gpu0", 1000),), {sid: cpu}, {sid: 64000})
    return Job(f"L{sid}", 1, cpu=cpu, mem=64000, current=p)


class Stream:
    """Short jobs that fit and jobs of the Synergy mix (3 cores per GPU)
    that mostly do not."""

    def __init__(self, seed: int, prio: tuple[int, ...] = (0, 0, 3)) -> None:
        self.rng = random.Random(seed)
        self.k = 0
        self.prio = prio

    def job(self) -> Job:
        r = self.rng
        self.k += 1
        if r.random() < 0.5:
            return Job(f"j{self.k}", 1, cpu=r.choice((400, 800, 1500)), mem=16000,
                       gpu_milli=r.choice((1000, 1000, 500)), priority=r.choice(self.prio))
        n = r.choice((1, 2, 4, 8))
        m = r.choice(MODELS)
        return Job(f"j{self.k}", n, cpu=3000 * n, mem=64000 * n, model=m,
                   profile=load_profile(m), priority=r.choice(self.prio))


def fresh(s: Session):
    return allocate(copy.deepcopy(s.cluster), copy.deepcopy(list(s.jobs.values())),
                    solver=s.solver, order=s.order)


def same(a, b) -> bool:
    return (a.placements == b.placements and a.unplaced == b.unplaced
            and a.preempted == b.preempted and a.moved == b.moved and a.value == b.value
            and a.status == b.status and a.reasons == b.reasons)


@pytest.mark.parametrize("solver", ["best-fit", "proportional", "synergy-tune", "hived", "fgd"])
@pytest.mark.parametrize("seed", [0, 1])
def test_held_out_rounds_equal_fresh_calls(solver, seed):
    cl = cluster()
    # six servers keep 2.4 cores free, two 6 cores: few of the mix's jobs ever fit
    jobs = [long_job(s.id, 21600 if k < 6 else 18000) for k, s in enumerate(cl.servers)]
    s = Session(cl, jobs=jobs, solver=solver)
    # a solver that may stop running jobs for a higher priority (hived) gets
    # jobs held out only while no waiting job outranks a running one
    w = Stream(seed, (0,) if solver == "hived" else (0, 0, 3))
    held = 0
    for r in range(25):
        evs = [{"type": "finish", "job": j} for j in s.running
               if not str(j).startswith("L") and w.rng.random() < 0.3]
        evs += [{"type": "submit", "job": w.job()} for _ in range(w.rng.randint(0, 6))]
        if r == 12:
            evs.append({"type": "set_order", "order": list(reversed(s.pending))})
        s.apply(evs)
        want = fresh(s)
        res = s.step()
        held += res.timings.get("held_out", 0)
        assert same(res.allocation, want), f"round {r}"
        assert set(res.unplaced) == set(res.reasons)
    assert held > 0                          # the rounds did hold jobs out


def test_held_out_job_starts_once_room_frees():
    cl = cluster(2)
    s = Session(cl, jobs=[long_job("s0", 22000), long_job("s1", 22000)], solver="best-fit")
    s.submit(Job("big", 2, cpu=6000, mem=1000))
    r = s.step()
    assert r.unplaced == ("big",) and r.timings["held_out"] == 1
    assert r.reasons["big"].startswith("waits for room: needs 2 GPUs, 6000 milli-CPU")
    s.finish("Ls1")
    r = s.step()
    assert [p.job for p in r.start] == ["big"] and r.timings["held_out"] == 0


def test_room_follows_events_and_rollbacks():
    cl = cluster(4)
    s = Session(cl, solver="best-fit")
    w = Stream(3)
    for _ in range(12):
        s.apply([{"type": "submit", "job": w.job()} for _ in range(4)])
        s.step()
        done = [j for j in s.running if w.rng.random() < 0.4]
        s.apply([{"type": "finish", "job": j} for j in done])
        with pytest.raises(InputError):         # a bad batch changes nothing
            s.apply([{"type": "finish", "job": j} for j in s.running[:1]]
                    + [{"type": "finish", "job": "nope"}])
        groups = {j for ids in s._waiting.values() for j in ids}
        assert groups == set(s.pending)             # every job of the stream has a shape
        room = s._room
        if room is None:
            continue
        want = Room(cl, (j.current for j in s.jobs.values() if j.current is not None))
        assert np.array_equal(room.cpu, want.cpu) and np.array_equal(room.mem, want.mem)
        assert np.array_equal(room.gpu, want.gpu)


@pytest.mark.parametrize("seed", range(6))
def test_cannot_fit_is_never_placed(seed):
    """A job the room test rules out is left unplaced by every solver that
    declares ``ignores_unfit`` (and by the ones that split CPU by GPUs)."""
    rng = random.Random(seed)
    cl = cluster(6)
    w = Stream(seed)
    first = [w.job() for _ in range(40)]
    run = [j for j in allocate(cl, first, solver="best-fit").advance(first) if j.current]
    tried = 0
    for _ in range(40):
        job = w.job()
        if rng.random() < 0.3:
            job = Job(job.id, 0, cpu=rng.choice((2000, 9000)), mem=1000)
        grid = rng.random() < 0.5
        if not Room(cl, (j.current for j in run)).cannot_fit(job, resizes=grid):
            continue
        tried += 1
        for solver in ("best-fit", "proportional", "synergy-tune", "fgd"):
            if solver == "synergy-tune" and not grid:
                continue
            a = allocate(cl, run + [job], solver=solver)
            assert job.id in a.unplaced, (solver, job)
    assert tried


@pytest.mark.parametrize("seed", range(3))
def test_tune_skips_what_cannot_fit(seed, monkeypatch):
    """Synergy-TUNE skipping the jobs that cannot fit the room it starts with
    gives the answer it gives without the test."""
    from alloc.solvers.synergy import tune
    cl = cluster()
    run = [long_job(s.id, 23200) for s in cl.servers]
    w = Stream(seed)
    jobs = run + [w.job() for _ in range(60)]
    skipped: list[bool] = []

    class Spy(tune._Unfit):
        def known(self, j):
            skipped.append(super().known(j))
            return skipped[-1]

        def __call__(self, j):
            skipped.append(super().__call__(j))
            return skipped[-1]
    monkeypatch.setattr(tune, "_unfit", Spy)
    fast = allocate(cl, jobs, solver="synergy-tune")
    monkeypatch.setattr(tune, "_unfit", lambda P: None)
    slow = allocate(cl, jobs, solver="synergy-tune")
    assert fast.placements == slow.placements and fast.reasons == slow.reasons
    assert any(skipped) and fast.unplaced


@pytest.mark.parametrize("seed", range(3))
def test_admission_rounds_equal_fresh_calls(seed):
    """Synergy-TUNE admits by GPUs: a session holds out every waiting job but
    the admitted ones that may fit, and each round is still a fresh call's
    (the queue asks for more GPUs than are free, so the admission stops)."""
    cl = cluster(4)
    jobs = [long_job(s.id, 21000 if k % 2 else 14000) for k, s in enumerate(cl.servers)]
    s = Session(cl, jobs=jobs, solver="synergy-tune")
    w = Stream(seed)
    held = stopped = 0
    for r in range(20):
        evs = [{"type": "finish", "job": j} for j in s.running
               if not str(j).startswith("L") and w.rng.random() < 0.3]
        evs += [{"type": "submit", "job": w.job()} for _ in range(w.rng.randint(1, 8))]
        if r in (7, 14):
            ids = list(s.pending)
            w.rng.shuffle(ids)
            evs.append({"type": "set_order", "order": ids[: len(ids) // 2]})
        s.apply(evs)
        want = fresh(s)
        free = 1000 * cl.total_gpus - sum(1000 * j.gpus for j in s.jobs.values() if j.current)
        stopped += sum(1000 * s.jobs[j].gpus for j in s.pending) > free
        res = s.step()
        held += res.timings.get("held_out", 0)
        assert same(res.allocation, want), f"round {r}"
    assert held > 0 and stopped > 5


def test_no_hold_out_while_a_waiting_job_outranks_a_running_one():
    """``hived`` may stop running jobs by the tenancy rules: its rounds hold
    jobs out only while no waiting job has a higher priority than a running one."""
    cl = cluster(2)
    s = Session(cl, jobs=[long_job("s0", 22000), long_job("s1", 22000)], solver="hived")
    s.submit(Job("big", 2, cpu=6000, mem=1000))
    r = s.step()
    assert r.unplaced == ("big",) and r.timings["held_out"] == 1
    s.submit(Job("high", 2, cpu=6000, mem=1000, priority=3))
    want = fresh(s)
    r = s.step()
    assert set(r.unplaced) == {"big", "high"} and r.timings["held_out"] == 0
    assert same(r.allocation, want)

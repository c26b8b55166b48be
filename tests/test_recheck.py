"""The final check of what changed (`alloc.recheck`) equals the full one.

On a session's generated rounds, every allocation -- as the solver gave it,
and corrupted in every way the full check catches (a job missing or listed
twice, an over-committed GPU, server CPU or memory, a running job moved or
dropped unlisted, a wrong throughput, an unknown GPU or job, a false move
or preemption) -- gets the same answer from `violations_since` as from
`violations`, and the partial check never passes a corrupted one.
"""
from __future__ import annotations

import random
from dataclasses import replace

from alloc import Cluster, GpuShare, Job, Server, Session, violations
from alloc.recheck import Checked, _partial, violations_since

MODELS = ("res18", "bert", "gnmt")


def clone(rec: Checked) -> Checked:
    return Checked(rec.cluster, dict(rec.by_id), dict(rec.placed), dict(rec.gpu), dict(rec.cpu),
                   dict(rec.mem), rec.simple, rec.seen)


def corruptions(rng: random.Random, cluster: Cluster, jobs: list, a) -> list:
    """Allocations the full check must refuse, built from ``a``."""
    ps = list(a.placements)
    by_id = {j.id: j for j in jobs}
    running = [p for p in ps if by_id[p.job].current is not None]
    new = [p for p in ps if by_id[p.job].current is None]
    out = []

    def put(i, p):
        q = list(ps)
        q[i] = p
        return replace(a, placements=tuple(q))
    if ps:
        i = rng.randrange(len(ps))
        out.append(replace(a, placements=tuple(ps[:i] + ps[i + 1:])))          # missing
        out.append(replace(a, unplaced=a.unplaced + (ps[i].job,)))             # twice
    if new and running:
        k = ps.index(new[0])
        held = running[0].gpus
        gpus = tuple(GpuShare(held[m % len(held)].gpu, 1000) for m in range(len(new[0].gpus)))
        out.append(put(k, replace(new[0], gpus=gpus)))                         # over-committed
    if new:
        p = new[-1]
        k = ps.index(p)
        sid = next(iter(p.cpu))
        cap = cluster.server(sid)
        out.append(put(k, replace(p, cpu={**p.cpu, sid: cap.cpu + 1})))      # CPU over
        out.append(put(k, replace(p, mem={**p.mem, sid: cap.mem + 1})))      # memory over
        out.append(put(k, replace(p, throughput=p.throughput + 1.0)))         # throughput
        out.append(put(k, replace(p, gpus=(GpuShare("nowhere/gpu0", 1000),) + p.gpus[1:])))
        out.append(replace(a, placements=a.placements + (replace(p, job="ghost"),)))
        out.append(replace(a, moved=(p.job,)))                                # false move
    if running:
        p = running[-1]
        k = ps.index(p)
        free = [g for g in cluster.gpu_ids if g not in {x.gpu for q in ps for x in q.gpus}
                and g.split("/")[0] in p.cpu]
        if free and len(p.gpus) == 1:
            out.append(put(k, replace(p, gpus=(GpuShare(free[0], p.gpus[0].milli),))))  # moved
        out.append(replace(a, placements=tuple(q for q in ps if q is not p),
                           unplaced=a.unplaced + (p.job,)))                   # dropped
        out.append(replace(a, placements=tuple(q for q in ps if q is not p),
                           unplaced=a.unplaced + (p.job,), preempted=(p.job,)))  # not outranked
    return out


def scratch_rounds(rng: random.Random, least: int, rounds: int = 25):
    """Rounds of a session that re-places every job from scratch (moves
    allowed, 4 servers): some running jobs finish, ``least``-6 arrive; each
    round's cluster, input jobs and allocation."""
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(4)))
    s = Session(cl, solver="proportional", max_moves=None, move_cost=0.0)
    k = 0
    for _ in range(rounds):
        for j in [j for j in s.running if rng.random() < 0.3]:
            s.finish(j)
        for _ in range(rng.randint(least, 6)):
            k += 1
            n = rng.choice((1, 1, 2))
            s.submit(Job(f"j{k}", n, cpu=3000 * n, mem=64000 * n, model=rng.choice(MODELS)))
        jobs = list(s.jobs.values())
        yield cl, jobs, s.step().allocation


def test_partial_check_equals_the_full_one():
    rng = random.Random(11)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(6)))
    s = Session(cl, solver="best-fit")
    rec, k, passed, refused = None, 0, 0, 0
    for _ in range(30):
        done = [j for j in s.running if rng.random() < 0.3]
        for j in done:
            s.finish(j)
        for _ in range(rng.randint(0, 8)):
            k += 1
            n = rng.choice((1, 1, 2, 4))
            milli = rng.choice((1000, 1000, 500)) if n == 1 else 1000
            s.submit(Job(f"j{k}", n, gpu_milli=milli, cpu=3000 * n, mem=64000 * n,
                         model=rng.choice(MODELS)))
        jobs = list(s.jobs.values())
        a = s.step().allocation
        for bad in corruptions(rng, cl, jobs, a):
            full = violations(cl, jobs, bad)
            assert full, "not a corruption"
            if rec is not None:
                assert not _partial(clone(rec), cl, tuple(jobs), bad)
                assert violations_since(clone(rec), cl, jobs, bad)[0] == full
                refused += 1
        assert violations(cl, jobs, a) == []
        if rec is not None:
            passed += _partial(clone(rec), cl, tuple(jobs), a)
        bad, rec = violations_since(rec, cl, jobs, a)
        assert bad == [] and rec is not None
    assert passed >= 25 and refused >= 200


def test_a_record_is_not_used_on_another_cluster():
    cl = Cluster((Server("s0", 8000, 64000, 2),))
    jobs = [Job("a", 1, cpu=1000, mem=1000)]
    s = Session(cl, jobs=jobs)
    a = s.step().allocation
    _, rec = violations_since(None, cl, jobs, a)
    other = Cluster((Server("s0", 8000, 64000, 1),))
    over = replace(a, placements=tuple(replace(p, gpus=(GpuShare("s0/gpu1", 1000),))
                                       for p in a.placements))
    assert violations_since(rec, other, jobs, over)[0] == violations(other, jobs, over) != []


def test_rounds_re_placed_from_scratch_are_checked_in_what_changed():
    """A solver that re-places every job from scratch (moves allowed) hands
    the check new placement objects each round: the ones equal by value to
    the record's are known again, moves are checked by the full check's
    rule, and every corruption is still refused as the full check refuses it."""
    rng = random.Random(5)
    rec, passed, moved, refused = None, 0, 0, 0
    for cl, jobs, a in scratch_rounds(rng, 0):
        moved += bool(a.moved)
        for bad in corruptions(rng, cl, jobs, a):
            full = violations(cl, jobs, bad, max_moves=None)
            if not full:
                continue        # a change the call allows (a move, with moves unlimited)
            if rec is not None:
                assert not _partial(clone(rec), cl, tuple(jobs), bad, None)
                assert violations_since(clone(rec), cl, jobs, bad, max_moves=None)[0] == full
                refused += 1
        if rec is not None:
            # the same allocation rebuilt: equal placements, new objects
            copy = replace(a, placements=tuple(replace(p) for p in a.placements))
            assert _partial(clone(rec), cl, tuple(jobs), copy, None)
            if a.moved:         # the moves, refused where the call allows none
                assert violations_since(clone(rec), cl, jobs, a, max_moves=0)[0] == \
                    violations(cl, jobs, a, max_moves=0) != []
            passed += _partial(clone(rec), cl, tuple(jobs), a, None)
        bad, rec = violations_since(rec, cl, jobs, a, max_moves=None)
        assert bad == [] and rec is not None
    assert passed >= 20 and moved >= 3 and refused >= 100, (passed, moved, refused)


def test_the_identity_difference_still_finds_every_fault():
    """The partial check takes the objects new or gone by identity first and
    carries the verdict of every other one: a fault brought in by a new job
    object beside an untouched placement, or a move carried by untouched
    objects, is found as the full check finds it; a record without its
    identity part (`Seen`) answers the same."""
    rng = random.Random(3)
    rec, tried, carried = None, 0, 0
    for cl, jobs, a in scratch_rounds(rng, 1):
        if rec is not None:
            bare = replace(clone(rec), seen=None)
            assert _partial(clone(rec), cl, tuple(jobs), a, None) == \
                _partial(bare, cl, tuple(jobs), a, None)
            placed = {p.job: p for p in a.placements}
            for i, job in enumerate(jobs):
                p = placed.get(job.id)
                if p is None or job.current is None:
                    continue
                bigger = replace(job, gpus=job.gpus + 1)           # its placement untouched
                elsewhere = replace(job, current=replace(p, gpus=p.gpus[::-1] if len(p.gpus) > 1
                                                         else (GpuShare("s9/gpu0", 1000),)))
                for changed in (bigger, elsewhere):
                    js = jobs[:i] + [changed] + jobs[i + 1:]
                    full = violations(cl, js, a, max_moves=None)
                    if full:
                        assert not _partial(clone(rec), cl, tuple(js), a, None)
                        assert violations_since(clone(rec), cl, js, a, max_moves=None)[0] == full
                        tried += 1
        bad, rec = violations_since(rec, cl, jobs, a, max_moves=None)
        assert bad == [] and rec is not None
        if a.moved:             # the same objects again: the moves are carried, and needed
            assert _partial(clone(rec), cl, tuple(jobs), a, None)
            quiet = replace(a, moved=())
            assert not _partial(clone(rec), cl, tuple(jobs), quiet, None)
            assert violations_since(clone(rec), cl, jobs, quiet, max_moves=None)[0] == \
                violations(cl, jobs, quiet, max_moves=None) != []
            carried += 1
    assert tried >= 20 and carried >= 3, (tried, carried)


def test_two_objects_of_one_job_are_refused():
    """A job placed twice, or given twice, as two equal objects (new by
    identity, one id) is left to the full check."""
    cl = Cluster((Server("s0", 8000, 64000, 2),))
    s = Session(cl)
    s.submit(Job("a", 1, cpu=1000, mem=1000))
    jobs = list(s.jobs.values())
    a = s.step().allocation
    _, rec = violations_since(None, cl, jobs, a)
    twice = replace(a, placements=a.placements + (replace(a.placements[0]),))
    assert not _partial(clone(rec), cl, tuple(jobs), twice)
    assert violations_since(clone(rec), cl, jobs, twice)[0] == violations(cl, jobs, twice) != []
    both = jobs + [replace(jobs[0])]                       # the input's, as the full check says
    assert not _partial(clone(rec), cl, tuple(both), a)
    assert violations_since(clone(rec), cl, both, a)[0] == violations(cl, both, a)


def test_a_record_a_one_job_round_extended_is_read_again():
    """A one-job round (`alloc.session.fast`) adds its job to the record
    without the identity part: the next check reads that part again from the
    record, and finds every fault the full check finds."""
    rng = random.Random(7)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(3)))
    s = Session(cl, solver="fgd")
    for i in range(4):
        s.submit(Job(f"a{i}", 1, cpu=3000, mem=64000))
    s.step()
    fast, refused = 0, 0
    for r in range(12):
        s.submit(Job(f"b{r}", rng.choice((1, 2)), cpu=3000, mem=64000))
        fast += bool(s.step().timings.get("one_job"))
        rec = s._carry.checked
        assert rec is not None
        s.finish(f"b{r}" if r % 2 else s.running[0])
        s.submit(Job(f"c{r}", 1, cpu=3000, mem=64000))
        s.submit(Job(f"d{r}", 1, cpu=3000, mem=64000))
        jobs = list(s.jobs.values())
        a = s.step().allocation
        assert violations_since(clone(rec), cl, jobs, a)[0] == []
        for bad in corruptions(rng, cl, jobs, a):
            full = violations(cl, jobs, bad)
            assert not _partial(clone(rec), cl, tuple(jobs), bad)
            assert violations_since(clone(rec), cl, jobs, bad)[0] == full
            refused += 1
    assert fast >= 10 and refused >= 50, (fast, refused)

"""What the core keeps for a placement (alloc.memo) is given back only for the
very objects it was derived from, is never written on the placement, and
goes when the placement goes."""
import copy
import pickle
from dataclasses import replace

import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, allocate, violations
from alloc.memo import entries
from alloc.problem import compile_problem


def cluster():
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, 4, "V100") for i in range(2)))


def running(jid="r", n=2, throughput=0.0):
    cur = Placement(jid, tuple(GpuShare(f"s0/gpu{k}", 1000) for k in range(n)),
                    {"s0": 3000 * n}, {"s0": 64000 * n}, throughput)
    return Job(jid, n, cpu=3000 * n, mem=64000 * n, model="res18", current=cur)


def test_a_kept_running_job_is_rebuilt_until_its_current_is_the_recomputed_placement():
    c = cluster()
    first = allocate(c, [running(throughput=0.0)])            # a wrong reported throughput
    p1 = first.placement("r")
    assert p1.throughput > 0 and violations(c, [running(throughput=0.0)], first) == []
    job = replace(running(), current=p1)
    again = allocate(c, [job])
    assert again.placement("r") is p1                          # the object itself, kept
    assert entries(p1) is not None                             # kept by the core, beside it


def test_the_check_is_redone_for_another_job_object():
    c = cluster()
    job = running()
    a = allocate(c, [job])
    assert violations(c, [job], a) == []                       # kept on the placement
    wider = replace(job, gpus=3, cpu=9000, mem=192000)         # same id, other demand
    bad = violations(c, [wider], a)
    assert any("got 2 GPUs, needs 3" in b for b in bad)
    plain = replace(job, model=None, profile=None, cpu=1000)   # no profile: CPU as asked
    assert any("requested 1000" in b for b in violations(c, [plain], a))


def test_the_index_form_follows_the_cluster_object():
    job = running()
    c1 = cluster()
    p1 = compile_problem(c1, [job], "throughput")
    a1 = p1.current_assign(0)
    # the same servers in another order: other indices for the same GPUs
    c2 = Cluster(tuple(reversed(c1.servers)))
    p2 = compile_problem(c2, [job], "throughput")
    a2 = p2.current_assign(0)
    assert a1 is not a2 and p2.placement(0, a2).same_as(job.current)
    assert {c2.gpu_ids[g] for g, _ in a2.gpus} == {g.gpu for g in job.current.gpus}


def test_the_memo_is_not_on_the_placement_and_goes_with_it():
    c = cluster()
    job = running()
    allocate(c, [job])
    p = job.current                      # the core keeps its index form and placement for it
    assert entries(p) and p.__dict__ == Placement(p.job, p.gpus, p.cpu, p.mem, p.throughput,
                                                  p.batch, p.accum).__dict__
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), copy.copy(p)):
        assert q == p and entries(q) is None
    assert hash(q) == hash(p)
    import alloc.memo as memo
    n = len(memo._TABLE)
    del job, p, q
    assert len(memo._TABLE) < n          # freed with its placement: nothing kept alive


@pytest.mark.parametrize("solver", ["best-fit", "synergy-tune", "fgd", "hived"])
def test_a_finished_job_is_freed_without_the_collector(solver):
    """What the core keeps on a running job's placement names the job (a
    cycle); the session drops it when the job leaves, so that the job and its
    placement go as soon as the rounds that held them are gone."""
    import gc
    import weakref
    from alloc import Session
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(4)))
    gc.collect()
    gc.disable()
    try:
        s = Session(cl, solver=solver)
        for i in range(6):
            s.submit(Job(f"j{i}", 2, cpu=6000, mem=128000, model="res18"))
        s.step()
        s.step()
        job = weakref.ref(s.jobs["j0"])
        placement = weakref.ref(s.jobs["j0"].current)
        assert entries(placement())                   # the memo was kept for it
        s.finish("j0")
        for _ in range(3):
            s.step()
        assert job() is None and placement() is None
    finally:
        gc.enable()

"""The simulator's pods: jobs that ask for no GPU or a share of one, jobs
that never finish (``hold``), the ``drop-unplaced`` mechanism, and the
keep-fit rounds (running jobs keep their GPUs), whose bookkeeping follows
what changed and must decide exactly as the rounds over the whole pool."""
import random

import pytest

from alloc import Cluster, Server
from alloc.errors import InputError
from alloc.sched import BaseMechanism, PolicyError
from alloc.sim import Simulator, WorkloadJob, simulate
from alloc.sim.ranking import Queue

KEEP = ("fifo", {"preemptive": False})


def one_gpu(cpu=8000, mem=8192, gpus=1):
    return Cluster((Server("s0", cpu=cpu, mem=mem, gpus=gpus),))


def by_id(res):
    return {r["id"]: r for r in res.timeline()}


def test_cpu_only_job_runs_beside_the_gpu_jobs():
    jobs = [WorkloadJob("g", 0.0, 1, duration_s=100.0, fields={"cpu": 1000, "mem": 1024}),
            WorkloadJob("c", 0.0, 0, duration_s=10.0, fields={"cpu": 2000, "mem": 1024})]
    res = simulate(one_gpu(), jobs, order=KEEP)
    t = by_id(res)
    assert (t["c"]["start_s"], t["c"]["end_s"], t["c"]["gpus"]) == (0.0, 10.0, 0)
    assert (t["g"]["start_s"], t["g"]["end_s"]) == (0.0, 100.0)
    assert res.summary()["utilisation"] == pytest.approx(1.0)   # the CPU job holds no GPU


def test_cpu_only_job_is_offered_when_every_gpu_is_held():
    jobs = [WorkloadJob("g", 0.0, 1, duration_s=100.0, fields={"cpu": 1000, "mem": 1024}),
            WorkloadJob("c", 5.0, 0, duration_s=10.0, fields={"cpu": 1000, "mem": 1024})]
    t = by_id(simulate(one_gpu(), jobs, order=KEEP))
    assert (t["c"]["start_s"], t["c"]["end_s"]) == (5.0, 15.0)


def test_shared_jobs_run_together_at_their_share():
    jobs = [WorkloadJob(j, 0.0, 1, gpu_milli=m, duration_s=50.0, fields={"cpu": 100, "mem": 10})
            for j, m in (("a", 500), ("b", 500), ("c", 600))]
    res = simulate(one_gpu(), jobs, order=KEEP)
    t = by_id(res)
    assert [t[j]["start_s"] for j in "abc"] == [0.0, 0.0, 50.0]   # c waits for a share
    assert [t[j]["end_s"] for j in "abc"] == [50.0, 50.0, 100.0]  # alone on its share: rate 1
    assert [t[j]["gpu_milli"] for j in "abc"] == [500, 500, 600]
    assert res.summary()["utilisation"] == pytest.approx((50 * 1.0 + 50 * 0.6) / 100)


@pytest.mark.parametrize("kw,line", [
    ({"gpus": -1}, "job 'x': gpus: expected an integer >= 0, got -1"),
    ({"gpus": 1, "gpu_milli": 0}, "job 'x': gpu_milli: expected an integer in 1..1000, got 0"),
    ({"gpus": 1, "gpu_milli": 1001},
     "job 'x': gpu_milli: expected an integer in 1..1000, got 1001"),
    ({"gpus": 1, "gpu_milli": 500.0},
     "job 'x': gpu_milli: expected an integer in 1..1000, got 500.0"),
    ({"gpus": 2, "gpu_milli": 500},
     "job 'x': gpu_milli: expected 1000 unless gpus is 1 (a share of one GPU), got 500 with "
     "gpus=2"),
    ({"gpus": 0, "gpu_milli": 500},
     "job 'x': gpu_milli: expected 1000 unless gpus is 1 (a share of one GPU), got 500 with "
     "gpus=0"),
])
def test_bad_gpus_and_share_are_one_line(kw, line):
    with pytest.raises(InputError) as e:
        WorkloadJob("x", 0.0, **kw)
    assert str(e.value) == line


def test_hold_jobs_never_finish_and_the_run_ends_after_the_last_arrival():
    jobs = [WorkloadJob(f"p{i}", float(i), 1, gpu_milli=400) for i in range(3)]
    res = simulate(one_gpu(), jobs, order=KEEP, progress="hold")
    s = res.summary()
    assert (s["jobs"], s["unfinished"], s["end_time_s"]) == (0, 3, 2.0)
    assert [r["start_s"] for r in res.timeline()] == [0.0, 1.0, None]


def test_drop_unplaced_drops_a_pod_that_fits_nowhere_and_runs_the_others():
    jobs = [WorkloadJob("a", 0.0, 1, gpu_milli=700, fields={"cpu": 1000, "mem": 1024}),
            WorkloadJob("b", 1.0, 1, gpu_milli=700, fields={"cpu": 1000, "mem": 1024}),
            WorkloadJob("c", 2.0, 1, gpu_milli=300, fields={"cpu": 1000, "mem": 1024}),
            WorkloadJob("d", 3.0, 0, fields={"cpu": 9000, "mem": 1024}),
            WorkloadJob("e", 4.0, 0, fields={"cpu": 1000, "mem": 1024})]
    res = simulate(one_gpu(), jobs, order=KEEP, progress="hold", mechanism="drop-unplaced")
    t = by_id(res)
    assert [j for j in "abcde" if t[j]["dropped"]] == ["b", "d"]
    assert [j for j in "abcde" if t[j]["start_s"] is not None] == ["a", "c", "e"]
    assert t["b"]["dropped"] == "fits nowhere: it asks for more GPU than the cluster has free"
    assert t["d"]["dropped"].startswith("fits nowhere: ")            # offered: the round's line
    s = res.summary()
    assert (s["dropped"], s["unfinished"], s["jobs"]) == (2, 3, 0)


def test_drop_unplaced_keeps_a_job_that_waits_after_it_ran():
    class Pause(BaseMechanism):
        def start(self, ctl):
            ctl.timer(5.0, "stop")
            ctl.timer(8.0, "go")

        def on_event(self, event, ctl):
            if event.kind == "timer" and event.tag == "stop":
                ctl.suspend("a")
            elif event.kind == "timer":
                ctl.resume("a")
                ctl.decide()
    res = simulate(one_gpu(), [WorkloadJob("a", 0.0, 1, duration_s=10.0)], order=KEEP,
                   mechanism=["drop-unplaced", Pause()])
    t = by_id(res)
    assert t["a"]["dropped"] is None and t["a"]["runs"] == [[0.0, 5.0, 1], [8.0, 13.0, 1]]
    assert res.summary()["dropped"] == 0


def test_drop_needs_a_reason():
    class Bad(BaseMechanism):
        def on_event(self, event, ctl):
            if event.kind == "arrival":
                ctl.drop(event.job, " ")
    with pytest.raises(PolicyError, match="drop 'a': reason: expected a non-empty string"):
        simulate(one_gpu(), [WorkloadJob("a", 0.0, 1, duration_s=1.0)], mechanism=Bad())


def test_a_dropped_running_job_frees_its_gpus():
    class DropAt(BaseMechanism):
        def start(self, ctl):
            ctl.timer(5.0, "drop")

        def on_event(self, event, ctl):
            if event.kind == "timer":
                ctl.drop("a", "cancelled")
    jobs = [WorkloadJob("a", 0.0, 1, duration_s=100.0), WorkloadJob("b", 1.0, 1, duration_s=10.0)]
    res = simulate(one_gpu(), jobs, order=KEEP, mechanism=DropAt())
    t = by_id(res)
    assert t["a"]["dropped"] == "cancelled" and t["a"]["runs"] == [[0.0, 5.0, 1]]
    assert (t["b"]["start_s"], t["b"]["end_s"]) == (5.0, 15.0)


# ---------------------------------------------------------------- keep-fit rounds
class Poke(BaseMechanism):
    """Stops a running job now and then before a step, holds some, lets them go."""

    def __init__(self):
        self.n = 0

    def before_step(self, ctl):
        self.n += 1
        running = sorted(j.id for j in ctl.jobs.values() if j.running)
        if self.n % 5 == 0 and running:
            ctl.suspend(running[self.n % len(running)], hold=self.n % 10 == 0)
        if self.n % 7 == 0:
            for jid in sorted(ctl.jobs):
                ctl.resume(jid)


def workload(seed, n=60):
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        t += rng.choice([0.0, 0.0, 5.0, 17.0, 60.0])
        kind = rng.random()
        if kind < 0.15:
            out.append(WorkloadJob(f"j{i}", t, 0, duration_s=rng.uniform(5, 200),
                                   fields={"cpu": 2000, "mem": 2048}))
        elif kind < 0.45:
            out.append(WorkloadJob(f"j{i}", t, 1, gpu_milli=rng.choice([250, 400, 600]),
                                   duration_s=rng.uniform(5, 200)))
        else:
            out.append(WorkloadJob(f"j{i}", t, rng.choice([1, 2, 4, 8]),
                                   duration_s=rng.uniform(5, 300)))
    return out


CLUSTER = Cluster(tuple(Server(f"s{k}", cpu=32000, mem=65536, gpus=4) for k in range(3)))


def outcome(res):
    rows = [(r["id"], r["start_s"], r["end_s"], r["preemptions"], r["restarts"], r["dropped"])
            for r in res.timeline()]
    s = res.summary()
    return rows, [s[k] for k in ("rounds", "steps", "skipped", "dropped", "preemptions")]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("round_s", [None, 30.0])
@pytest.mark.parametrize("mech", [None, "poke", "drop"])
def test_keep_fit_rounds_decide_as_the_whole_pool(seed, round_s, mech):
    """The keep-fit round against the round over every job (the running
    ones, then the ranked queue of every pooled job), on the same run."""
    def run(whole):
        m = {"poke": Poke(), "drop": "drop-unplaced", None: None}[mech]
        sim = Simulator(CLUSTER, workload(seed), order=KEEP, mechanism=m, round_s=round_s,
                        seed=seed)
        assert sim._keep_fit
        if whole:
            sim._keep_fit = False
            sim._queue = Queue(sim.order.obj, sim._waits, sim._pooled)
        return sim.run()
    a, b = run(False), run(True)
    assert outcome(a) == outcome(b)
    assert a.summary()["skipped"] > 0 or round_s is None


def test_plain_csv_reads_an_optional_share(tmp_path):
    from alloc.sim.workloads import read_workload
    p = tmp_path / "w.csv"
    p.write_text("id,arrival_s,gpus,duration_s,gpu_milli\na,0,1,60,250\nb,0,2,60,\n")
    w = read_workload(p)
    assert [(j.id, j.gpu_milli) for j in w.jobs] == [("a", 250), ("b", 1000)]
    assert "gpu_milli" not in w.jobs[0].extra
    p.write_text("id,arrival_s,gpus,duration_s,gpu_milli\na,0,2,60,250\n")
    with pytest.raises(InputError) as e:
        read_workload(p)
    assert str(e.value) == ("w.csv: line 2: gpu_milli: expected 1000 unless gpus is 1 (a share "
                            "of one GPU), got 250 with gpus=2")

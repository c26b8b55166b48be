"""A drained server takes no new placements under every mechanism that
places jobs itself (through the simulator's control): what runs there runs
on, nothing starts or moves there until it is undrained.  A probe watches
where jobs run after every event and every step, independently of the
control's own check."""
from __future__ import annotations

from dataclasses import replace

import pytest

from alloc import Cluster, Server
from alloc.errors import InputError
from alloc.sched.kinds import BaseMechanism
from alloc.sim import ServerEvent, WorkloadJob, simulate


class Watch(BaseMechanism):
    """Snapshots ``(time, {job: servers})`` of the running jobs after each
    event and each step."""

    def __init__(self):
        self.seen = []

    def _look(self, ctl):
        self.seen.append((ctl.now_s, {r.id: {g.split("/")[0] for g in r.run.gpu_names}
                                      for r in ctl.jobs.values()
                                      if r.running and r.run is not None}))

    def on_event(self, event, ctl):
        self._look(ctl)

    def after_step(self, result, ctl):
        self._look(ctl)


def newcomers(watch, server, start, end):
    """Jobs that came onto ``server`` while it was drained (a snapshot in
    ``(start, end)`` shows one there that the snapshot before did not)."""
    out = set()
    for (_, before), (t, now) in zip(watch.seen, watch.seen[1:]):
        if start < t < end:
            out |= {j for j, s in now.items() if server in s and server not in before.get(j, ())}
    return out


def two(gpus=1, **kw):
    return Cluster(tuple(Server(f"s{i}", cpu=8000 * gpus, mem=64000 * gpus, gpus=gpus, **kw)
                         for i in range(2)))


# ------------------------------------------------------------ the control
class Greedy(BaseMechanism):
    """Holds every job at arrival and places it on the first free GPU, drained
    or not (a careless mechanism)."""

    def on_event(self, event, ctl):
        if event.kind == "arrival":
            ctl.suspend(event.job, hold=True)

    def before_step(self, ctl):
        used = {g for r in ctl.jobs.values() if r.running for g in r.run.gpu_names}
        for r in ctl.jobs.values():
            if not r.running:
                free = [f"s{i}/gpu0" for i in range(2) if f"s{i}/gpu0" not in used]
                if free:
                    ctl.place(r.id, free[-1:])
                    used.add(free[-1])


def test_the_control_refuses_a_new_placement_on_a_drained_server():
    jobs = [WorkloadJob("a", 0.0, 1, duration_s=2.0), WorkloadJob("b", 10.0, 1,
                                                                  duration_s=100.0)]
    with pytest.raises(InputError, match=r"place 'b': server 's1' is drained: it takes no "
                                         r"new placements"):
        simulate(two(), jobs, mechanism=Greedy(), events=[ServerEvent(5.0, "drain", "s1")])


def test_a_job_running_on_a_drained_server_may_take_another_share_there():
    """Packing's undo on a drained server: the same GPUs, another share."""
    class Reshare(BaseMechanism):
        def on_event(self, event, ctl):
            if event.kind == "timer":
                ctl.place("a", ["s0/gpu0"], milli=500)

        def start(self, ctl):
            ctl.timer(20.0)

    res = simulate(two(), [WorkloadJob("a", 0.0, 1, duration_s=100.0)], mechanism=Reshare(),
                   events=[ServerEvent(10.0, "drain", "s0")])
    assert res.summary()["unfinished"] == 0


# --------------------------------------------------------------- Pollux
def test_pollux_starts_nothing_on_a_drained_server(at=600.0):
    from alloc.goodput.progress import GoodputProgress
    from alloc.goodput.workload import pollux_cluster, read_workload, shipped_workload
    from alloc.sched.pollux.policy import Pollux
    jobs = [replace(j, arrival_s=j.arrival_s / 10, gpus=min(j.gpus, 8))
            for j in read_workload(shipped_workload("workload-6"))[:6]]
    pol, watch = Pollux(seed=0, pop_size=10, generations=5), Watch()
    res = simulate(pollux_cluster(2), jobs, round_s=60.0, seed=0,
                   progress=GoodputProgress(60.0), placement="freest-first", sizing=pol,
                   mechanism=[pol, watch], events=[ServerEvent(at, "drain", "n00"),
                                                    ServerEvent(at + 3000.0, "undrain", "n00")])
    assert res.summary()["unfinished"] == 0
    assert newcomers(watch, "n00", at, at + 3000.0) == set()


# --------------------------------------------------------------- AntMan
@pytest.mark.parametrize("mech", ["antman-yarn-cs", "antman-yarn-cs-preempt", "antman-packing"])
def test_antmans_baselines_start_nothing_on_a_drained_server(mech):
    from alloc.sched import get_policy
    from alloc.sched.antman.model import AntManProgress
    from alloc.sim import antman
    mode = "packed" if mech == "antman-packing" else "exclusive"
    cl = two(4, gpu_type="V100", gpu_mem=32768)
    work = antman.workload(antman.trace(16, 2.0, seed=2, gpus=8), mech)
    work = [replace(w, gpus=min(w.gpus, 4)) for w in work]
    watch = Watch()
    res = simulate(cl, work, order=("fifo", {"preemptive": False}),
                   placement="antman" if mech == "antman-packing" else "best-fit",
                   mechanism=[get_policy("mechanism", mech).build(), watch],
                   progress=AntManProgress(mode),
                   events=[ServerEvent(60.0, "drain", "s1"), ServerEvent(4000.0, "undrain", "s1")])
    assert res.summary()["unfinished"] == 0
    assert any(t > 60.0 and "s0" in s for t, now in watch.seen for s in now.values())
    assert newcomers(watch, "s1", 60.0, 4000.0) == set()


# ---------------------------------------------------------------- Salus
def test_salus_admits_nothing_while_its_gpu_is_drained():
    from alloc.sched import get_policy
    from alloc.sched.salus.profiles import Profile
    from alloc.sched.salus.sim import salus_cluster, workload
    ps = [Profile("A_1_x", "A", 1, 100.0, 80.0, 100, 30.0, 50.0),
          Profile("B_1_x", "B", 1, 20.0, 50.0, 20, 10.0, 40.0)]
    mech = get_policy("mechanism", "salus-pack").build(memory_mb=1000.0)
    sid = salus_cluster(1000.0).servers[0].id
    res = simulate(salus_cluster(1000.0), workload(ps, [0.0, 10.0], ["A", "B"]),
                   mechanism=mech, progress=mech.progress,
                   events=[ServerEvent(5.0, "drain", sid), ServerEvent(300.0, "undrain", sid)])
    rows = {r["id"]: r for r in res.timeline()}
    assert rows["A"]["end_s"] == pytest.approx(100.0)           # it ran on, alone
    assert rows["B"]["start_s"] == pytest.approx(300.0)         # admitted at the undrain
    assert rows["B"]["end_s"] == pytest.approx(320.0)


# ----------------------------------------------------------- PipeSwitch
def test_a_drained_gpu_serves_no_request_and_its_training_runs_on():
    from alloc.model import Cluster as C, Server as S
    from alloc.pipeswitch import Service, Training, share_gpus
    from alloc.sched.pipeswitch.switching import Switching
    cl = C((S("p0", 8000, 62464, 1, "V100"),))
    d = share_gpus(cl, [Training("t0", "ResNet152")], [Service("a", "ResNet152", 2.0, 800.0)],
                   cycle_s=0.5)
    mech, watch = Switching(d, horizon_s=20.0), Watch()
    jobs = [WorkloadJob("t0", 0.0, 1, duration_s=1e6),
            WorkloadJob("a#0", 0.2, 1, duration_s=0.032, extra={"service": "a"}),
            WorkloadJob("a#1", 3.2, 1, duration_s=0.032, extra={"service": "a"})]
    res = simulate(cl, jobs, mechanism=[mech, watch], progress=mech.progress, round_s=100.0,
                   max_time_s=30.0, events=[ServerEvent(2.0, "drain", "p0"),
                                            ServerEvent(10.0, "undrain", "p0")])
    rows = {r["id"]: r for r in res.timeline()}
    s = d.services["a"].switch_s
    assert rows["a#0"]["end_s"] == pytest.approx(0.5 + s + 0.032)    # before the drain
    assert rows["a#1"]["start_s"] >= 10.0                             # waited for the undrain
    assert rows["t0"]["preemptions"] == 2                             # switched out twice
    assert newcomers(watch, "p0", 2.0, 10.0) == set()

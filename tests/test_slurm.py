"""alloc slurm: the placement controller against a real Slurm (one slurmctld and
four slurmd on loopback, started here); Slurm's text parsed; the command line.

The workload: 50 jobs (1, 2 and 4 GPUs on one node, gangs of 2 whole nodes)
arriving in three waves, LAS order with preemption by order, node gpu004
drained for a while; and, on a Slurm of mixed node shapes (three 8-GPU V100
nodes, one 4-GPU A100 node), gangs of two nodes taking whole nodes, part of
each node, or GPUs of any type.  Every job must run on exactly the nodes
alloc chose with the GPU counts alloc chose, no node may be over-committed,
and every job must end."""
import io
import json
import time

import pytest

from alloc import InputError
from alloc.adapters.loopback import Loopback, missing
from alloc.adapters.scontrol import (Scontrol, SlurmError, hostnames, parse_jobs, parse_nodes,
                                     parse_topology)
from alloc.adapters.slurm import Controller

NODE = ("NodeName=gpu001 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=96 Gres=gpu:v100:8 "
        "NodeAddr=127.0.0.1 RealMemory=500000 State=IDLE+DRAIN ThreadsPerCore=1")
JOB = ("JobId=7 JobName=wrap JobState=RUNNING Reason=None NumNodes=2-2 NumCPUs=4 "
       "TRES=cpu=4,mem=2G,node=2 SubmitTime=2026-01-01T00:00:00 NodeList=gpu[003-004] "
       "ReqNodeList=gpu[003-004]   Nodes=gpu003 CPU_IDs=0-1 Mem=1024 GRES=gpu:v100:4(IDX:0-3) "
       "Nodes=gpu004 CPU_IDs=0-1 Mem=1024 GRES=gpu:v100:4(IDX:2-5) TresPerNode=gres:gpu:v100:4")


def test_slurm_text_is_read():
    (n,) = parse_nodes(NODE)
    assert (n.name, n.cpus, n.memory, n.gpus, n.gpu_type, n.closed) == \
        ("gpu001", 96, 500000, 8, "v100", True)
    (j,) = parse_jobs(JOB)
    assert (j.id, j.nodes, j.cpus, j.memory, j.gpus_per_node, j.gpu_type) == \
        (7, 2, 4, 2048, 4, "v100")
    assert j.bound == {"gpu003": [0, 1, 2, 3], "gpu004": [2, 3, 4, 5]} and j.active
    assert hostnames("a[01-02,5],b") == ["a01", "a02", "a5", "b"]
    assert parse_topology("SwitchName=s0 Nodes=gpu[001-002]\nSwitchName=root Switches=s0\n") \
        == {"gpu001": "s0", "gpu002": "s0"}


def observe(lb) -> dict:
    """{job: (state, {node: [GPU indices]})} as Slurm has it now."""
    out = lb.scontrol("show", "job", "-d", "--oneliner").stdout
    return {j.id: (j.state, j.bound, j.reason) for j in parse_jobs(out)}


def run_to_completion(lb, ctl, jobs, decisions, limit=120.0):
    """Cycle until every job completed; every cycle, each running job runs on
    exactly the nodes and GPU counts of alloc's last start, no GPU twice.
    Returns {job: (nodes, {node: GPUs})} of the starts."""
    last_start: dict = {}
    t0 = time.monotonic()
    while True:
        c = ctl.cycle()
        if decisions.exists():
            for line in decisions.read_text().splitlines():
                d = json.loads(line)
                if d["action"] in ("start", "move"):
                    last_start[d["job"]] = (d["nodes"], d["gpus"])
        seen = observe(lb)
        per_gpu: dict = {}
        for jid, (state, bound, _) in seen.items():
            if state != "RUNNING":
                continue
            nodes, counts = last_start[jid]
            assert sorted(bound) == nodes, (jid, bound, nodes)
            assert {n: len(g) for n, g in bound.items()} == counts, (jid, bound, counts)
            for n, gs in bound.items():
                for g in gs:
                    assert (n, g) not in per_gpu, f"GPU {n}/{g} bound twice"
                    per_gpu[(n, g)] = jid
        if all(seen.get(j, ("",))[0] == "COMPLETED" for j in jobs):
            return last_start
        assert time.monotonic() - t0 < limit, (
            f"jobs still not done after {ctl.number} cycles: "
            f"{[(j, seen.get(j)) for j in jobs if seen.get(j, ('',))[0] != 'COMPLETED']}")
        time.sleep(max(0.0, 1.0 - c.wall_s))


def test_two_node_gangs_on_mixed_node_shapes(tmp_path):
    """Three 8-GPU V100 nodes and one 4-GPU A100 node: gangs of two whole V100
    nodes, of 4 GPUs on each of two V100 nodes (part of a node), of 2 GPUs of
    any type on each of two nodes, beside one-node jobs -- all run, each on
    exactly the nodes and GPU counts alloc chose, and all end."""
    why = missing()
    if why:
        pytest.skip(f"no Slurm on this machine: {why}")
    lb = Loopback(shapes=[(8, "v100")] * 3 + [(4, "a100")], cpus=96, memory=500000,
                  switches=2, directory=tmp_path / "slurm")
    try:
        lb.start()
    except RuntimeError as exc:
        pytest.skip(f"Slurm could not start here: {exc}")
    ctl = None
    try:
        decisions = tmp_path / "decisions.jsonl"
        log = io.StringIO()
        ctl = Controller(Scontrol(lb.conf), solver="best-fit", order="fifo", preempt="order",
                         decisions=decisions, start_timeout=30, log=log)
        shapes = [("-N2", "gpu:v100:8", 3), ("-N2", "gpu:v100:8", 3), ("-N2", "gpu:v100:4", 3),
                  ("-N2", "gpu:v100:4", 3), ("-N2", "gpu:2", 3), ("-N1", "gpu:a100:4", 2),
                  ("-N1", "gpu:v100:2", 2), ("-N1", "gpu:v100:2", 2), ("-N1", "gpu:v100:6", 2)]
        jobs = {lb.sbatch("--hold", n, f"--gres={g}", "--ntasks-per-node=1", "-c2",
                          "--mem=1000", "--wrap", f"sleep {s}"): (n, g) for n, g, s in shapes}
        starts = run_to_completion(lb, ctl, list(jobs), decisions)
        assert set(starts) == set(jobs)
        types = {n: t for n, (_, t) in lb.shapes.items()}
        for jid, (n, gres) in jobs.items():
            nodes, counts = starts[jid]
            k = int(gres.rsplit(":", 1)[1])
            assert len(nodes) == int(n[2:]) and set(counts.values()) == {k}, (gres, counts)
            if ":v100:" in gres or ":a100:" in gres:
                assert {types[x] for x in nodes} == {gres.split(":")[1]}, (gres, nodes)
        assert "left held" not in log.getvalue(), log.getvalue()
    finally:
        if ctl is not None:
            ctl.close()
        lb.stop()


def test_a_solver_that_cannot_run_fails_when_the_controller_is_made(monkeypatch):
    from alloc import SolverUnavailable
    from alloc.registry import solvers
    info = solvers()["cpsat"]
    monkeypatch.setattr(type(info), "unavailable_reason", lambda self: "needs ortools (test)")
    with pytest.raises(SolverUnavailable, match="needs ortools"):
        Controller(Scontrol(), solver="cpsat")
    with pytest.raises(InputError, match="unknown objective"):
        Controller(Scontrol(), solver="best-fit", objective="nope")


def test_gangs_with_a_solver_without_even_spreads_take_whole_nodes_of_their_type():
    """The refusal looks only at the nodes of the job's GPU type."""
    ctl = Controller(Scontrol(), solver="fgd")          # no spread, no even-spread
    ctl._nodes = {n.name: n for n in parse_nodes(
        "\n".join(NODE.replace("gpu001", f"gpu00{k}").replace("+DRAIN", "") for k in (1, 2, 3))
        + "\n" + NODE.replace("gpu001", "gpu004").replace("v100:8", "a100:4"))}
    whole = parse_jobs(JOB.replace("JobState=RUNNING", "JobState=PENDING")
                       .replace("Reason=None", "Reason=JobHeldUser")
                       .replace("gpu:v100:4", "gpu:v100:8"))[0]
    assert ctl._unplaceable(whole) is None
    part = parse_jobs(JOB.replace("JobState=RUNNING", "JobState=PENDING")
                      .replace("Reason=None", "Reason=JobHeldUser"))[0]
    assert "whole nodes' GPUs (--gres=gpu:8 per node)" in ctl._unplaceable(part)
    assert Controller(Scontrol(), solver="best-fit")._unplaceable(part) is None


@pytest.fixture(scope="module")
def slurm():
    why = missing()
    if why:
        pytest.skip(f"no Slurm on this machine: {why}")
    lb = Loopback(nodes=4, gpus=8, cpus=96, memory=500000, switches=2)
    try:
        lb.start()
    except RuntimeError as exc:
        pytest.skip(f"Slurm could not start here: {exc}")
    yield lb
    lb.stop()


class FlakyOnce(Scontrol):
    """Fails the first release it is asked for."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.failed = None

    def start(self, job, nodes):
        if self.failed is None:
            self.failed = job
            raise SlurmError(f"scontrol release {job}: Unexpected error (injected)")
        super().start(job, nodes)


def test_controller_on_a_real_slurm(slurm, tmp_path):
    lb = slurm
    decisions = tmp_path / "decisions.jsonl"
    log = io.StringIO()
    ctl = Controller(FlakyOnce(lb.conf), solver="best-fit", order="las", preempt="order",
                     las_quantum=80,
                     decisions=decisions, start_timeout=30, log=log)
    # two 8-GPU jobs of 12 s climb to LAS level 1 (80 GPU-s) and are stopped for
    # the last wave; the others (gangs of 2 whole nodes: 16 GPUs for 4 s) never
    # reach it in one run
    hog = ("-N1", "gpu:v100:8", 4, 12)
    shapes = [("-N1", "gpu:v100:1", 1, 3), ("-N1", "gpu:v100:2", 2, 4), ("-N1", "gpu:v100:4", 2, 5),
              ("-N2", "gpu:v100:8", 2, 4), ("-N1", "gpu:v100:1", 1, 6), ("-N1", "gpu:v100:2", 1, 3),
              ("-N1", "gpu:v100:1", 1, 2), ("-N1", "gpu:v100:4", 1, 4), ("-N1", "gpu:v100:2", 1, 5)]
    waves = {0: 22, 6: 18, 14: 10}
    jobs, t0 = [], time.monotonic()
    drained = resumed = None
    seen_run: dict = {}
    last_start: dict = {}
    cycles = 0
    while True:
        t = time.monotonic() - t0
        for at in [w for w in waves if w <= t]:
            for k in range(waves.pop(at)):
                i = len(jobs) + k
                nodes, gres, cpus, secs = hog if i < 2 else shapes[i % len(shapes)]
                jobs.append(lb.sbatch("--hold", nodes, f"--gres={gres}", "--ntasks-per-node=1", f"-c{cpus}",
                                      "--mem=2000", "--wrap", f"sleep {secs}"))
        if drained is None and t > 5:
            lb.scontrol("update", "NodeName=gpu004", "State=DRAIN", "Reason=maintenance")
            drained = ctl.number + 1
        if resumed is None and t > 20:
            lb.scontrol("update", "NodeName=gpu004", "State=RESUME")
            resumed = ctl.number + 1
        c = ctl.cycle()
        cycles += 1
        if decisions.exists():
            for line in decisions.read_text().splitlines():
                d = json.loads(line)
                if d["action"] in ("start", "move"):
                    last_start[d["job"]] = (d["cycle"], d["nodes"], d["gpus"])
        seen = observe(lb)
        per_gpu: dict = {}
        for jid, (state, bound, _) in seen.items():
            if state != "RUNNING":
                continue
            cyc, nodes, counts = last_start[jid]            # started by alloc
            assert sorted(bound) == nodes, (jid, bound, nodes)
            assert {n: len(g) for n, g in bound.items()} == counts, (jid, bound, counts)
            seen_run[jid] = True
            for n, gs in bound.items():
                for g in gs:
                    assert (n, g) not in per_gpu, f"GPU {n}/{g} bound twice"
                    per_gpu[(n, g)] = jid
        if drained is not None and resumed is None and c.number > drained:
            assert "gpu004" not in {n for j in c.started for n in last_start[j][1]}
        done = all(seen.get(j, ("",))[0] == "COMPLETED" for j in jobs)
        if not waves and done:
            break
        assert time.monotonic() - t0 < 120, (
            f"jobs still not done after {cycles} cycles: "
            f"{[(j, seen.get(j)) for j in jobs if seen.get(j, ('',))[0] != 'COMPLETED']}")
        time.sleep(max(0.0, 1.0 - c.wall_s))
    actions = [json.loads(x) for x in decisions.read_text().splitlines()]
    assert len(jobs) == 50 and set(seen_run) == set(jobs)
    assert any(a["action"] == "preempt" for a in actions), "no preemption by order"
    assert any(len(a["nodes"]) == 2 for a in actions if a["action"] == "start")
    assert "injected" in log.getvalue() and ctl.slurm.failed in seen_run   # retried, not lost
    assert all(len(line.splitlines()) == 1 for line in log.getvalue().splitlines())
    ctl.close()


def test_command_line_once(slurm, tmp_path, monkeypatch, capsys):
    from alloc.cli import main
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    jid = slurm.sbatch("--hold", "-N1", "--gres=gpu:v100:2", "-n1", "-c1", "--mem=100",
                       "--wrap", "sleep 1")
    out = tmp_path / "d.jsonl"
    assert main(["slurm", "run", "--once", "--decisions", str(out), "--solver", "best-fit"]) == 0
    (d,) = [json.loads(x) for x in out.read_text().splitlines() if json.loads(x)["job"] == jid]
    assert d["action"] == "start" and d["cycle"] == 1 and sum(d["gpus"].values()) == 2
    assert "cycle 1:" in capsys.readouterr().err
    assert main(["slurm", "run", "--order", "nope"]) == 2          # orders: the registry's
    assert "unknown order policy 'nope'" in capsys.readouterr().err
    assert main(["slurm", "run", "--order", "srtf"]) == 2          # needs run times
    assert "order policy 'srtf' needs duration" in capsys.readouterr().err

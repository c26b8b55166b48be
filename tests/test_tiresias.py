"""Tiresias' discretised 2D-LAS order: queues on attained GPU-seconds, FIFO
within a queue, starvation promotion; the order in the simulator and in
``alloc simulate`` configurations."""
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from alloc.sim import ClusterSpec, SyntheticWorkload
from alloc.sim.engine import simulate
from alloc.sim.cli import build, simulate_main
from alloc.sim.policies import (ORDERS, STATIC, TIRESIAS_PROMOTE_KNOB, TIRESIAS_THRESHOLDS,
                                order_jobs, tiresias_key, tiresias_queue)

DATA = Path(__file__).parent / "data"
TOT = (16, 48000, 1024000)
T1 = TIRESIAS_THRESHOLDS[0]


def job(jid, arrival, gpus=1, attained=0.0, last_run=None):
    return SimpleNamespace(id=jid, arrival=float(arrival), gpus=gpus, attained=float(attained),
                           last_run=float(arrival if last_run is None else last_run))


def ids(jobs, now, order="tiresias"):
    return [j.id for j in order_jobs(jobs, order, now, TOT)]


def test_queue_index():
    assert tiresias_queue(0.0) == 0
    assert tiresias_queue(T1 - 1) == 0
    assert tiresias_queue(T1) == 1
    assert [tiresias_queue(a, (10, 20)) for a in (0, 10, 15, 20, 99)] == [0, 1, 1, 2, 2]


def test_lower_queue_first_regardless_of_arrival():
    """A job past the threshold waits behind a later one still below it
    (attained service is GPUs x seconds: 4 GPUs for 1000 s is past 3,250)."""
    now = 2000.0
    old = job("old", 0, gpus=4, attained=4 * 1000.0, last_run=now)
    new = job("new", 1500, gpus=1, attained=300.0, last_run=now)
    assert ids([old, new], now) == ["new", "old"]
    assert ids([old, new], now, "fifo") == ["old", "new"]


def test_fifo_within_a_queue():
    """Inside a queue the earlier arrival goes first, not the smaller
    attained service (that would be continuous LAS)."""
    now = 5000.0
    a = job("a", 0, attained=3000.0, last_run=now)
    b = job("b", 100, attained=10.0, last_run=now)
    c = job("c", 200, attained=0.0)
    assert ids([c, b, a], now) == ["a", "b", "c"]
    assert ids([c, b, a], now, "las") == ["c", "b", "a"]
    hi = [job("x", 300, gpus=8, attained=8 * 500.0, last_run=now),
          job("y", 50, gpus=2, attained=2 * 9000.0, last_run=now)]
    assert ids(hi, now) == ["y", "x"]            # both in queue 1: arrival order


def test_starvation_promotion():
    """A queue-1 job that waited longer than PROMOTEKNOB x its executed time
    goes back to queue 0 (then FIFO by arrival), and not before."""
    executed = 1000.0                            # 4 GPUs x 1000 s = 4000 GPU-s: queue 1
    last = 10_000.0
    starving = job("s", 0, gpus=4, attained=4 * executed, last_run=last)
    fresh = job("f", 9000, gpus=1, attained=0.0)
    limit = TIRESIAS_PROMOTE_KNOB * executed
    assert ids([fresh, starving], last + limit - 1) == ["f", "s"]     # not yet
    assert ids([fresh, starving], last + limit + 1) == ["s", "f"]     # promoted, earlier arrival
    late = job("s2", 9500, gpus=4, attained=4 * executed, last_run=last)
    assert ids([fresh, late], last + limit + 1) == ["f", "s2"]        # promoted, FIFO in queue 0


def test_promotion_knob():
    key = tiresias_key(thresholds=(100.0,), promote_knob=math.inf)
    j = job("j", 0, gpus=1, attained=200.0, last_run=0.0)
    assert key(j, 1e12, TOT)[0] == 1                                  # never promoted
    key2 = tiresias_key(thresholds=(100.0,), promote_knob=2.0)
    assert key2(j, 399.0, TOT)[0] == 1 and key2(j, 401.0, TOT)[0] == 0
    with pytest.raises(ValueError, match="thresholds"):
        tiresias_key(thresholds=(10.0, 5.0))
    with pytest.raises(ValueError, match="promote_knob"):
        tiresias_key(promote_knob=0)


def test_registered_and_not_static():
    assert "tiresias" in ORDERS and "tiresias" not in STATIC


def test_simulation_runs_with_tiresias():
    cl = ClusterSpec(servers=2, gpus_per_server=8, cpu_per_server=24000, mem_per_server=512000)
    jobs = SyntheticWorkload(12.0, (40, 40, 20), "multi", seed=3).take(40)
    for j in jobs:
        j.work_s = min(j.work_s, 4 * 3600.0)
    res = simulate(cl, jobs, order="tiresias", allocator="synergy-tune", check=True)
    assert len(res.jct) == len(jobs)
    fifo = simulate(cl, jobs, order="fifo", allocator="synergy-tune")
    assert res.jct != fifo.jct                  # the order changes who waits


def test_simulate_config_accepts_tiresias(tmp_path):
    doc = {"cluster": {"servers": 2, "gpus_per_server": 8, "cpu_per_server": 24000,
                       "mem_per_server": 512000},
           "workload": {"trace": str(DATA / "sim_trace.csv")},
           "order": "tiresias", "allocator": "synergy-tune"}
    build(doc)
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(doc))
    out = tmp_path / "r.json"
    assert simulate_main([str(cfg), "--out", str(out), "--no-progress"]) == 0
    assert json.loads(out.read_text())["jobs_measured"] == 5

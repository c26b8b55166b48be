"""Tiresias' discretised 2D-LAS order (``tiresias`` in the registry): queues on
attained GPU-seconds, FIFO within a queue, starvation promotion; the order in
the simulator and in ``alloc simulate`` configurations."""
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from alloc import Cluster
from alloc.errors import InputError
from alloc.sched import Context, get_policy
from alloc.sched.orders.queues import PROMOTE_KNOB, THRESHOLDS, DiscretisedLas, queue
from alloc.sim.cli import build, simulate_main

DATA = Path(__file__).parent / "data"
T1 = THRESHOLDS[0]


def job(jid, arrival, gpus=1, attained=0.0, last_run=None, running=False):
    return SimpleNamespace(id=jid, arrival_s=float(arrival), gpus=gpus,
                           attained_gpu_s=float(attained), running=running,
                           last_run_s=float(arrival if last_run is None else last_run))


def ids(jobs, now, order="tiresias", **params):
    pol = get_policy("order", order).build(**params)
    return pol.rank(jobs, Context(now, 1, Cluster(())))


def test_queue_index():
    assert queue(0.0) == 0
    assert queue(T1 - 1) == 0
    assert queue(T1) == 1
    assert [queue(a, (10, 20)) for a in (0, 10, 15, 20, 99)] == [0, 1, 1, 2, 2]


def test_lower_queue_first_regardless_of_arrival():
    """A job past the threshold waits behind a later one still below it
    (attained service is GPUs x seconds: 4 GPUs for 1000 s is past 3,250)."""
    now = 2000.0
    old = job("old", 0, gpus=4, attained=4 * 1000.0, last_run=now)
    new = job("new", 1500, gpus=1, attained=300.0, last_run=now)
    assert ids([old, new], now) == ["new", "old"]
    assert ids([old, new], now, "fifo") == ["old", "new"]


def test_fifo_within_a_queue():
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
    executed = 1000.0                            # 4 GPUs x 1000 s = 4000 GPU-s: queue 1
    last = 10_000.0
    starving = job("s", 0, gpus=4, attained=4 * executed, last_run=last)
    fresh = job("f", 9000, gpus=1, attained=0.0)
    limit = PROMOTE_KNOB * executed
    assert ids([fresh, starving], last + limit - 1) == ["f", "s"]     # not yet
    assert ids([fresh, starving], last + limit + 1) == ["s", "f"]     # promoted, earlier arrival
    late = job("s2", 9500, gpus=4, attained=4 * executed, last_run=last)
    assert ids([fresh, late], last + limit + 1) == ["f", "s2"]        # promoted, FIFO in queue 0


def test_promotion_knob_and_bad_parameters():
    j = job("j", 0, gpus=1, attained=200.0, last_run=0.0)
    ctx = lambda t: Context(t, 1, Cluster(()))  # noqa: E731
    assert DiscretisedLas(thresholds=(100.0,), promote_knob=math.inf).key(j, ctx(1e12)) == 1
    k2 = DiscretisedLas(thresholds=(100.0,), promote_knob=2.0)
    assert k2.key(j, ctx(399.0)) == 1 and k2.key(j, ctx(401.0)) == 0
    with pytest.raises(InputError, match="thresholds"):
        get_policy("order", "tiresias").build(thresholds=[10.0, 5.0])
    with pytest.raises(InputError, match="promote_knob"):
        get_policy("order", "tiresias").build(promote_knob=0)


def test_registered_and_not_static():
    info = get_policy("order", "tiresias")
    assert info.needs == {"attained"} and not info.build().static


def test_simulation_runs_with_tiresias():
    from dataclasses import replace
    from alloc.sim import SyntheticWorkload
    from alloc.sim.synergy import cluster, simulate_synergy
    jobs = [replace(j, duration_s=min(j.duration_s, 4 * 3600.0))
            for j in SyntheticWorkload(12.0, (40, 40, 20), "multi", seed=3).take(40)]
    res = simulate_synergy(cluster(2), jobs, order="tiresias", allocator="synergy-tune")
    assert len(res.jct()) == len(jobs)
    fifo = simulate_synergy(cluster(2), jobs, order="fifo", allocator="synergy-tune")
    assert res.jct() != fifo.jct()                  # the order changes who waits


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

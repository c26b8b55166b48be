"""The caller's order under preemption by order, in Blox's loop: order
inversions of `alloc.adapters.blox.AllocPlacement` with LAS on Blox's
multi-GPU workload, solver by solver.

Blox (Agarwal et al., EuroSys'24; msr-fiddle/blox, MIT) is not on a package
index and is not copied here: ``--blox DIR`` names a checkout, from which
this script imports Blox's own workload generator (``workload.Workload``,
synthetic mode: 1/2/4/8 GPUs with probability 0.70/0.10/0.15/0.05 and
Gavel-like durations, Poisson arrivals of ``--load`` jobs an hour, seeded
with 1 as Blox's simulator seeds it) and its LAS scheduling policy
(``schedulers.Las``: jobs by ``(job_priority, attained_service)``).  Without
``--blox`` the script says so and exits 0.

The loop restates Blox's simulator round (``simulator_simple.py`` with
``las_scheduler.py``, simulation mode; the gRPC between them left out): the
running jobs progress one round (300 s: attained service +300 s, iterations
+300 / iteration time; a job whose iterations reach its total exits and
frees its GPUs), the jobs that arrived are added (priority 999), LAS ranks
every active job, the placement policy answers ``(to_suspend, to_launch)``
and Blox suspends, then launches.  The cluster is Blox's simulator default:
32 nodes of 4 GPUs.  Jobs ask no CPU or memory and have no placement
preference (they may spread over nodes).

After each round's placement:

* an **inversion** is a waiting job ranked above some running job;
* it is **backfill** (the rule of `alloc.preempt`) when the job does not fit
  in the GPUs that the jobs ranked above it leave -- the free GPUs plus
  every GPU held by a job ranked below it are fewer than it needs -- so the
  order cannot place it whatever runs below it, and lower-ranked work may
  use the room;
* it is **stopped now** when the job was suspended in this very round (for
  a job ranked above it): a stopped job is not placed again in the same
  round (`alloc.preempt`), so it waits one round whatever room is left;
* any **other** inversion leaves the job for lower-ranked work: the order
  is not kept.

Per solver it prints rounds, launches, suspensions (preemptions), jobs
finished and their mean JCT (hours), inversions by kind, spread launches of jobs of at most 4 GPUs, and the median and p95 round time
of ``place``.  ``--packed`` also runs each solver with the preemption step
preferring a packed placement (``preempt_packed``, set on the adapter's
session).

Examples
--------
```
python bench/blox_order.py --blox /path/to/blox --load 3 --jobs 300 --solvers best-fit cpsat
```
"""
from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROUND = 300                  # Blox's round duration (s)
NODES, GPUS = 32, 4          # Blox's simulator default cluster


def blox_modules(blox: Path):
    """Blox's Workload class and LAS policy, imported from a checkout."""
    for p in (str(blox / "workload"), str(blox)):
        if p not in sys.path:
            sys.path.insert(0, p)
    import io
    import contextlib
    with contextlib.redirect_stdout(io.StringIO()):        # Blox prints its sys.path
        workload = importlib.import_module("workload")
        schedulers = importlib.import_module("schedulers")
    return workload.Workload, schedulers.Las


def arrivals(Workload, load: float, n: int) -> list[dict]:
    """``n`` jobs of Blox's synthetic multi-GPU workload (its simulator's
    seed and settings), as the job dicts its simulator sends."""
    random.seed(1)
    w = Workload(None, jobs_per_hour=load, exponential=True, multigpu=True,
                 series_id_filter=(0, n), model_class_split=(34, 33, 33),
                 per_server_size=[GPUS, 16, 16, 500, 40], num_jobs_default=0)
    out, last = [], 0
    for _ in range(n):
        j = w.generate_next_job(last)
        last = j.job_arrival_time
        out.append({"job_id": j.job_id, "job_arrival_time": j.job_arrival_time,
                    "submit_time": j.job_arrival_time, "num_GPUs": j.job_gpu_demand,
                    "job_iteration_time": j.job_iteration_time,
                    "job_total_iteration": j.job_total_iteration,
                    "job_executed_iteration": 0, "simulation": True})
    return out


def rows() -> list[dict]:
    return [{"GPU_ID": n * GPUS + k, "GPU_UUID": str(k), "Local_GPU_ID": k, "Node_ID": n,
             "IP_addr": "", "IN_USE": False, "JOB_IDS": None}
            for n in range(NODES) for k in range(GPUS)]


def inversions(active: dict, order: list, gpu_rows: list, stopped=()) -> tuple[int, int, int]:
    """(inversions, backfill ones, ones stopped this round) after a round
    (module notes); ``stopped``: the jobs suspended this round."""
    ids = [j for j, _ in order]
    free = sum(1 for r in gpu_rows if r["JOB_IDS"] is None)
    held: dict = {}
    for r in gpu_rows:
        if r["JOB_IDS"] is not None:
            held[r["JOB_IDS"]] = held.get(r["JOB_IDS"], 0) + 1
    total = back = now = 0
    below_running = 0           # GPUs of running jobs ranked below the position
    any_below = False
    for jid in reversed(ids):
        job = active[jid]
        if job["is_running"]:
            below_running += held.get(jid, 0)
            any_below = True
            continue
        if any_below:
            total += 1
            if free + below_running < job["num_GPUs"]:
                back += 1
            elif jid in stopped:
                now += 1
    return total, back, now


def run(solver: str, jobs: list, Las, time_limit: float, packed: bool,
        max_rounds: int, preempt: str | None = "order") -> dict:
    from alloc.adapters.blox import AllocPlacement
    policy = AllocPlacement(None, solver=solver, time_limit=time_limit, preempt=preempt)
    las = Las(None)
    gpu_rows = rows()
    cluster = SimpleNamespace(server_map={n: {"numGPUs": GPUS, "numCPUcores": 16}
                                          for n in range(NODES)}, gpu_df=gpu_rows)
    active: dict = {}
    state = SimpleNamespace(active_jobs=active)
    pending = list(jobs)
    t = 0
    stats = dict(rounds=0, launches=0, suspensions=0, finished=0, inversions=0, backfill=0,
                 stopped_now=0, other=0, spread_small=0, small_launches=0)
    jct, walls = [], []
    while (pending or active) and stats["rounds"] < max_rounds:
        # the round that just passed: running jobs progress, finished ones leave
        for jid in [j for j, d in active.items() if d["is_running"]]:
            d = active[jid]
            d["tracked_metrics"]["attained_service"] += ROUND
            d["job_executed_iteration"] += ROUND / d["job_iteration_time"]
            if d["job_executed_iteration"] >= d["job_total_iteration"]:
                jct.append((t - d["submit_time"]) / 3600)
                for r in gpu_rows:
                    if r["JOB_IDS"] == jid:
                        r["JOB_IDS"], r["IN_USE"] = None, False
                del active[jid]
                stats["finished"] += 1
        while pending and pending[0]["job_arrival_time"] <= t:
            d = dict(pending.pop(0))
            d.update(tracked_metrics={"per_iter_time": 0, "attained_service": 0},
                     time_since_scheduled=0, job_priority=999, is_running=False)
            active[d["job_id"]] = d
        schedule = las.schedule(state, cluster)
        t0 = time.perf_counter()
        suspend, launch = policy.place(state, cluster, schedule)
        if packed and policy.session is not None:
            policy.session.preempt_packed = True
        walls.append(time.perf_counter() - t0)
        for jid in suspend:
            active[jid]["is_running"] = False
            for r in gpu_rows:
                if r["JOB_IDS"] == jid:
                    r["JOB_IDS"], r["IN_USE"] = None, False
        for jid, gs in launch.items():
            active[jid]["is_running"] = True
            for r in gpu_rows:
                if r["GPU_ID"] in gs:
                    assert r["JOB_IDS"] is None, (jid, r)
                    r["JOB_IDS"], r["IN_USE"] = jid, True
            if len(gs) <= 4:
                stats["small_launches"] += 1
                if len({g // GPUS for g in gs}) > 1:
                    stats["spread_small"] += 1
        stats["launches"] += len(launch)
        stats["suspensions"] += len(suspend)
        inv, back, now = inversions(active, schedule["job_order"], gpu_rows, set(suspend))
        stats["inversions"] += inv
        stats["backfill"] += back
        stats["stopped_now"] += now
        stats["other"] += inv - back - now
        stats["rounds"] += 1
        t += ROUND
    walls.sort()
    stats.update(solver=solver + (" (packed)" if packed else "")
                 + ("" if preempt == "order" else " (no preemption)"),
                 mean_jct_h=round(statistics.mean(jct), 2) if jct else None,
                 median_ms=round(1000 * statistics.median(walls), 1) if walls else None,
                 p95_ms=round(1000 * walls[int(0.95 * (len(walls) - 1))], 1) if walls else None)
    return stats


COLUMNS = ("solver", "rounds", "launches", "suspensions", "finished", "mean_jct_h",
           "inversions", "backfill", "stopped_now", "other", "small_launches", "spread_small",
           "median_ms", "p95_ms")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blox", type=Path, help="a checkout of msr-fiddle/blox (skipped without)")
    ap.add_argument("--load", type=float, nargs="+", default=[3.0],
                    help="jobs per hour (default 3)")
    ap.add_argument("--jobs", type=int, default=300, help="jobs that arrive (default 300)")
    ap.add_argument("--solvers", nargs="+", default=["best-fit", "cpsat"])
    ap.add_argument("--time-limit", type=float, default=1.0, help="seconds a round (default 1)")
    ap.add_argument("--packed", action="store_true", help="also with preempt_packed")
    ap.add_argument("--max-rounds", type=int, default=100000)
    ap.add_argument("--preempt", choices=("order", "none"), default="order",
                    help="preemption by the LAS order (default) or none (the order only ranks)")
    ap.add_argument("--out", type=Path, help="write the rows as JSON lines here")
    args = ap.parse_args(argv)
    if args.blox is None or not (args.blox / "schedulers" / "las.py").is_file():
        print("blox_order: no Blox checkout given (--blox DIR); nothing to run")
        return 0
    Workload, Las = blox_modules(args.blox)
    out = []
    print(" | ".join(("load",) + COLUMNS))
    for load in args.load:
        jobs = arrivals(Workload, load, args.jobs)
        for solver in args.solvers:
            for packed in ((False, True) if args.packed else (False,)):
                row = {"load": load, **run(solver, jobs, Las, args.time_limit, packed,
                                           args.max_rounds,
                                           None if args.preempt == "none" else "order")}
                out.append(row)
                print(" | ".join(str(row.get(c)) for c in ("load",) + COLUMNS), flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

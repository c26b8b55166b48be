"""The simulator's own overhead, measured with a profiler (cProfile) on
Synergy's stream and Gavel's continuous experiment.

A run's time is split into:

* ``step``: the session's rounds (``Session.step``: the core's compile, the
  solver, finish and the final check, the session's commit);
* ``policies``: the policies' calls (order, shares, sizing, admission,
  mechanisms: `alloc.sim.core.Simulator._call`) and Gavel's round
  mechanism (`alloc.shares.rounds.plan_round`);
* ``progress``: the progress model's calls (rates, delays, job fields);
* ``session events``: the simulator's events to the session (submit, stop,
  set_order, reconcile) -- the simulator's bookkeeping of the session;
* ``workload``: drawing the synthetic stream's jobs (Synergy's);
* ``collector``: the cyclic garbage collector's passes outside the session's
  rounds (timed with `gc.callbacks`).  The run holds the collector off
  (`alloc.collector`), so its one pass comes as the run ends and walks every
  object the run keeps: the session's, the solver's and the policies' as
  much as the simulator's;
* ``simulator``: the rest (events, candidates, progress bookkeeping, metrics).

The target: the simulator's own share at most 10 % of a run.  It is given
three ways: ``simulator`` plus ``session events`` (everything but the
session's rounds, the policies, the progress model and the workload),
``simulator`` alone, and the time in the simulator's own functions with the
built-ins they call directly (`direct`; what the subtraction also counts is
the library's work the simulator asks for outside a round, such as building
the session's jobs).  Cumulative times of functions called inside
one another are not added twice: ``session events`` excludes what runs inside
a policy call, and a policy call's time excludes nothing (policies run no
session round).

    python bench/sim_overhead.py                 # both experiments
    python bench/sim_overhead.py --synergy-window 1000 1299 --gavel-window 20 120
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (module file suffix, function name) -> part of the run
PARTS = {
    ("alloc/session/core.py", "step"): "step",
    ("alloc/sim/core.py", "_call"): "policies",
    ("alloc/shares/rounds.py", "plan_round"): "policies",     # Gavel's round mechanism
    ("alloc/session/core.py", "submit"): "session events",
    ("alloc/session/core.py", "stop"): "session events",
    ("alloc/session/core.py", "set_order"): "session events",
    ("alloc/session/core.py", "reconcile"): "session events",
    ("alloc/session/core.py", "finish"): "session events",
    ("alloc/sim/workload.py", "__iter__"): "workload",      # the stream's jobs, drawn
}
#: the progress model's methods the simulator calls (its oracles, such as
#: ``throughputs``, are read by policies and counted in their time)
PROGRESS = ("rate", "delay_s", "resume", "advanced", "job_fields", "work", "alone_s")


def breakdown(stats: pstats.Stats, total: float, collector: float) -> dict[str, float]:
    """Seconds per part (cumulative times of the parts' entry functions;
    ``collector``: the collector's seconds outside the session's rounds)."""
    out = {"step": 0.0, "policies": 0.0, "session events": 0.0, "progress": 0.0,
           "workload": 0.0, "collector": collector}
    for (path, _, name), (_, _, _, cum, _) in stats.stats.items():   # type: ignore[attr-defined]
        for (suffix, fn), part in PARTS.items():
            if path.endswith(suffix) and name == fn:
                out[part] += cum
        if path.endswith("alloc/sim/progress.py") and name in PROGRESS:
            out["progress"] += cum
    out["simulator"] = max(0.0, total - sum(out.values()))
    return out


def direct(stats: pstats.Stats) -> float:
    """Seconds in the simulator's own functions (``alloc/sim`` but its progress
    models and workload) and in the built-ins and standard library they call
    directly (each such function's time shared among its callers by calls)."""
    def mine(path: str) -> bool:
        return "/alloc/sim/" in path and not path.endswith(("progress.py", "workload.py"))
    own = 0.0
    for (path, _, _), (_, _, tt, _, callers) in stats.stats.items():   # type: ignore[attr-defined]
        if mine(path):
            own += tt
        elif path == "~" or "/lib/python3" in path:
            calls = sum(v[1] for v in callers.values()) or 1
            own += sum(tt * v[1] / calls for ck, v in callers.items() if mine(ck[0]))
    return own


class Collector:
    """Seconds the cyclic collector ran outside the session's rounds (a pass
    inside a round is already the round's: exact solvers run with it on)."""

    def __init__(self) -> None:
        self.seconds, self._t0, self._depth = 0.0, None, 0

    def __enter__(self) -> "Collector":
        from alloc.session import Session
        self._step = Session.step
        outer = self

        def step(session, *args, **kwargs):
            outer._depth += 1
            try:
                return outer._step(session, *args, **kwargs)
            finally:
                outer._depth -= 1
        Session.step = step
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *exc) -> None:
        from alloc.session import Session
        gc.callbacks.remove(self._seen)
        Session.step = self._step

    def _seen(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self._t0 is not None:
            if not self._depth:
                self.seconds += time.perf_counter() - self._t0
            self._t0 = None


def profile(label: str, fn) -> dict:
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    with Collector() as gcs:
        prof.enable()
        res = fn()
        prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof)
    parts = breakdown(stats, total, gcs.seconds)
    own = parts["simulator"] + parts["session events"]
    code = direct(stats)
    print(f"{label}: {total:.1f} s under the profiler (load {os.getloadavg()[0]:.1f}); "
          + ", ".join(f"{k} {v:.1f} s ({100 * v / total:.1f} %)" for k, v in parts.items())
          + f"; the simulator's own: {100 * own / total:.1f} % with its session events, "
          f"{100 * parts['simulator'] / total:.1f} % without (what is left once the parts are "
          f"taken out), {100 * code / total:.1f} % in its own code and the built-ins it calls "
          f"(target <= 10 %)", flush=True)
    return {"label": label, "total": total, **parts, "own_pct": 100 * own / total,
            "result": res}


def synergy(window) -> dict:
    from alloc.sim import SyntheticWorkload
    from alloc.sim.synergy import cluster, simulate_synergy
    w = SyntheticWorkload(9.0, (20, 70, 10), "single", seed=0)
    return profile(f"Synergy stream (128 GPUs, FIFO, synergy-tune, 9 jobs/h, jobs {window[0]}-"
                   f"{window[1]})",
                   lambda: simulate_synergy(cluster(16), w, order="fifo",
                                            allocator="synergy-tune", window=tuple(window)))


def gavel(window, load) -> dict:
    from alloc.sim.gavel import ThroughputTable, gavel_workload, simulate_gavel
    table = ThroughputTable.load()
    work = gavel_workload(table, load, 2 * window[1], seed=0)
    return profile(f"Gavel continuous (LAS aware, {load:g} jobs/h, jobs {window[0]}-"
                   f"{window[1] - 1})",
                   lambda: simulate_gavel("gavel-las", work, table, window=tuple(window)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--synergy-window", type=int, nargs=2, default=[4000, 4999])
    ap.add_argument("--gavel-window", type=int, nargs=2, default=[100, 300])
    ap.add_argument("--gavel-load", type=float, default=4.5)
    ap.add_argument("--only", choices=("synergy", "gavel"), default=None)
    args = ap.parse_args(argv)
    if args.only in (None, "synergy"):
        synergy(args.synergy_window)
    if args.only in (None, "gavel"):
        try:
            gavel(args.gavel_window, args.gavel_load)
        except Exception as exc:          # the shared data may be absent
            print(f"Gavel skipped: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Blox adapter's round at 128 GPUs: what telling the session what runs
costs beside the solve, with a full reconcile every round and with one that
follows what changed.

Blox-shaped inputs are built here (Blox is not on a package registry): 32
nodes of 4 GPUs (``gpu_df`` rows: ``GPU_ID``, ``Node_ID``, ``Local_GPU_ID``,
``JOB_IDS``), LAS order (attained GPU-seconds, then id) with preemption by
order.  The workload is fixed before any measurement: every round ``k``
arrivals (Poisson, mean ``--arrivals``, default 4) of 1, 2, 4 or 8 GPUs with
probabilities 0.6, 0.15, 0.15, 0.1 (the 8-GPU jobs spread over two nodes);
every running job ends with probability ``--end`` (default 0.1) a round; with
probability ``--drift`` (default 0.1) a round, Blox itself suspends one running
job before the round (what the adapter did not decide, so that the partial
reconcile has something to tell).  The cluster stays full after a few rounds.

Two policies run the same rounds side by side on copies of one state, so
the load of the machine weighs on both alike: ``reconcile="full"`` (every
running job stated every round: what the adapter did before) and
``reconcile="changes"`` (only the jobs whose GPUs differ from what the last
round left).  Their decisions must be identical (checked every round).  Per
round it times `Session.reconcile` (zero when nothing changed) and
`Session.step` (the solve), and the whole ``place`` call.

    python bench/blox_round.py --rounds 300 --solver best-fit
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.adapters.blox import AllocPlacement  # noqa: E402
from alloc.session import Session  # noqa: E402

SIZES = ((1, 0.6), (2, 0.15), (4, 0.15), (8, 0.1))
ROUND_S = 300


class Timed:
    """Wraps `Session.reconcile` and `Session.step`, summing seconds per call kind."""

    def __init__(self):
        self.spent = {"reconcile": 0.0, "step": 0.0}
        self.saved = {k: getattr(Session, k) for k in self.spent}
        for k, fn in self.saved.items():
            setattr(Session, k, self._wrap(k, fn))

    def _wrap(self, kind, fn):
        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.spent[kind] += time.perf_counter() - t0
        return timed

    def take(self) -> dict:
        out, self.spent = self.spent, {k: 0.0 for k in self.spent}
        return out

    def close(self):
        for k, fn in self.saved.items():
            setattr(Session, k, fn)


def blox_state(nodes: int, per: int) -> SimpleNamespace:
    rows = [{"GPU_ID": n * per + k, "Local_GPU_ID": k, "Node_ID": n, "IN_USE": False,
             "JOB_IDS": None} for n in range(nodes) for k in range(per)]
    return SimpleNamespace(server_map={n: {"numGPUs": per} for n in range(nodes)}, gpu_df=rows,
                           active={})


def apply(st, stop, launch):
    for j in stop:
        st.active[j]["is_running"] = False
    for r in st.gpu_df:
        if r["JOB_IDS"] in stop:
            r["JOB_IDS"], r["IN_USE"] = None, False
    for j, gs in launch.items():
        st.active[j]["is_running"] = True
    where = {g: j for j, gs in launch.items() for g in gs}
    for r in st.gpu_df:
        j = where.get(r["GPU_ID"])
        if j is not None:
            assert r["JOB_IDS"] is None, "a GPU given twice"
            r["JOB_IDS"], r["IN_USE"] = j, True


def end_job(st, j):
    del st.active[j]
    for r in st.gpu_df:
        if r["JOB_IDS"] == j:
            r["JOB_IDS"], r["IN_USE"] = None, False


def las(active) -> list:
    return sorted(active, key=lambda j: (active[j]["attained"], j))


def draw_size(rng) -> int:
    x, acc = rng.random(), 0.0
    for n, p in SIZES:
        acc += p
        if x < acc:
            return n
    return SIZES[-1][0]


def policy(solver: str, mode: str) -> AllocPlacement:
    """The adapter in a reconcile mode (an adapter without modes: "full" only)."""
    try:
        return AllocPlacement(solver=solver, reconcile=mode)
    except TypeError:
        if mode != "full":
            raise
        return AllocPlacement(solver=solver)


def ms(xs) -> str:
    return (f"mean {1e3 * statistics.fmean(xs):.2f}, median {1e3 * statistics.median(xs):.2f}, "
            f"max {1e3 * max(xs):.2f}")


def main(argv=None) -> int:
    """Run the benchmark (module notes); prints per-mode figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=300, help="rounds (default: 300)")
    ap.add_argument("--warmup", type=int, default=20, help="rounds not counted (default: 20)")
    ap.add_argument("--nodes", type=int, default=32, help="nodes of 4 GPUs (default: 32)")
    ap.add_argument("--solver", default="best-fit", help="solver (default: best-fit)")
    ap.add_argument("--arrivals", type=float, default=4.0, help="mean arrivals a round")
    ap.add_argument("--end", type=float, default=0.1, help="chance a running job ends a round")
    ap.add_argument("--drift", type=float, default=0.1,
                    help="chance a round that Blox suspends a running job itself")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default="full,changes",
                    help="reconcile modes side by side (default: full,changes)")
    args = ap.parse_args(argv)
    modes = args.modes.split(",")
    rng = random.Random(args.seed)
    states = {m: blox_state(args.nodes, 4) for m in modes}
    policies = {m: policy(args.solver, m) for m in modes}
    timer = Timed()
    figures = {m: {"reconcile": [], "step": [], "place": []} for m in modes}
    running_counts = []
    next_id = 0
    try:
        for rnd in range(args.rounds + args.warmup):
            arrivals = []
            k = 0
            lam, x = 2.718281828459045 ** -args.arrivals, rng.random()
            while x > lam:
                k += 1
                x *= rng.random()
            for _ in range(k):
                arrivals.append((next_id, draw_size(rng)))
                next_id += 1
            first = states[modes[0]]
            ended = [j for j in sorted(first.active) if first.active[j]["is_running"]
                     and rng.random() < args.end]
            rest = [j for j in sorted(first.active) if first.active[j]["is_running"]
                    and j not in ended]
            drift = [rng.choice(rest)] if rest and rng.random() < args.drift else []
            decisions = []
            for m in modes:
                st = states[m]
                for j in ended:
                    end_job(st, j)
                apply(st, drift, {})
                for j, n in arrivals:
                    st.active[j] = {"num_GPUs": n, "is_running": False, "attained": 0}
                timer.take()
                t0 = time.perf_counter()
                stop, launch = policies[m].place(SimpleNamespace(active_jobs=st.active), st,
                                                 {"job_order": las(st.active)})
                wall = time.perf_counter() - t0
                spent = timer.take()
                apply(st, stop, launch)
                for job in st.active.values():
                    if job["is_running"]:
                        job["attained"] += job["num_GPUs"] * ROUND_S
                decisions.append((sorted(stop), sorted(launch.items())))
                if rnd >= args.warmup:
                    figures[m]["reconcile"].append(spent["reconcile"])
                    figures[m]["step"].append(spent["step"])
                    figures[m]["place"].append(wall)
            assert all(d == decisions[0] for d in decisions), f"round {rnd}: decisions differ"
            if rnd >= args.warmup:
                running_counts.append(sum(1 for j in first.active.values() if j["is_running"]))
    finally:
        timer.close()
    gpus = 4 * args.nodes
    print(f"{gpus} GPUs, solver {args.solver}, {args.rounds} rounds after {args.warmup}; "
          f"running jobs a round: mean {statistics.fmean(running_counts):.1f}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for m in modes:
        f = figures[m]
        calls = sum(1 for x in f["reconcile"] if x > 0)
        print(f"reconcile={m}: reconcile ms {ms(f['reconcile'])} (called in {calls} rounds); "
              f"step ms {ms(f['step'])}; place ms {ms(f['place'])}; reconcile / step "
              f"{sum(f['reconcile']) / sum(f['step']):.3f}")
    if "full" in modes and "changes" in modes:
        a, b = figures["full"], figures["changes"]
        print(f"changes / full: reconcile {sum(b['reconcile']) / sum(a['reconcile']):.3f}, "
              f"place {sum(b['place']) / sum(a['place']):.3f} (same decisions every round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

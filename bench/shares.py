"""Benchmark the share policies: wall time, objective and peak memory against
job count, scale-factor mix and space sharing, with the plain HiGHS LP of the
same policy as a check of exactness and Gavel's own figures as the peer.

    python bench/shares.py                       # the full table (about 10 min on 2 cores)
    python bench/shares.py --sizes 8,512 --runs 1 --no-plain

Cases: ``m`` jobs on three GPU types (V100, P100, K80) with ``ceil(m/4)``
GPUs each; every job a model configuration drawn from Gavel's measured
throughputs (``../shared/data/reference/gavel_throughputs.json``, or
``$ALLOC_SHARED``): single-GPU, or scale factors 1/2/4/8 with probabilities
0.70/0.10/0.15/0.05 (Gavel's mix), each with the throughputs measured for
that many GPUs.  Space sharing: every pair of jobs with equal scale factors
whose co-located throughputs were measured.  Without the file the
throughputs are synthetic (log-normal around V100 > P100 > K80) and the
table says so.

Each case runs in a fresh process (its peak RSS is the memory column);
times are min and median over ``--runs``.  The table goes to stdout and to
``bench/results/shares.md`` (``--out``) with the command that made it.
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.deadline import Deadline  # noqa: E402
from alloc.errors import InputError  # noqa: E402
from alloc.shares import solve_shares  # noqa: E402
from alloc.shares import check  # noqa: E402
from alloc.shares.io import Pair, SharesProblem  # noqa: E402
from alloc.shares.lp import FullLP, solve_full  # noqa: E402
from alloc.sim.gavel import ThroughputTable  # noqa: E402

TYPES = ("v100", "p100", "k80")
MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
#: Gavel's own code (cvxpy/ECOS) measured on this machine (issue figures).
PEER = {("max-min", 10000): "0.57 s", ("max-sum", 10000): "0.28 s",
        ("makespan", 10000): "2.2 s, 0.2-2.4 % above optimum",
        ("finish-time-fairness", 10000): "137 s, 4 GB", ("water-filling", 2048): "482 s"}
TARGET = {("max-min", 10000): 0.1, ("max-sum", 10000): 0.1, ("makespan", 10000): 0.5,
          ("finish-time-fairness", 10000): 2.0, ("water-filling", 2048): 5.0,
          ("water-filling-priorities", 2048): 5.0, ("water-filling-priorities-large", 2048): 5.0,
          ("max-min+pairs", 512): 5.0,
          ("max-sum+pairs", 512): 5.0}


def gavel_table():
    """Gavel's measured throughputs, every scale factor, or None when absent."""
    try:
        return ThroughputTable.load(scale_factors=(1, 2, 4, 8))
    except InputError:
        return None


def make_problem(m: int, mix: bool, seed: int, pairs: bool, table, priorities: bool = False,
                 per_type: int | None = None):
    """A benchmark case as a :class:`SharesProblem` (built from arrays: the
    benchmark times the policies, not the JSON validation)."""
    rng = np.random.default_rng(seed)
    sfs = [s for s, _ in MIX] if mix else [1]
    probs = [p for _, p in MIX] if mix else [1.0]
    sf = rng.choice(sfs, size=m, p=probs)
    if table is not None:
        by_sf = {s: np.flatnonzero(table.scale == s) for s in sfs}
        keys = np.array([by_sf[s][rng.integers(len(by_sf[s]))] for s in sf])
        T = table.alone[keys]
    else:
        keys = None
        base = rng.lognormal(0, 0.6, size=(26, 1)) * np.array([3.0, 1.9, 0.8])
        T = base[rng.integers(26, size=m)] * sf[:, None] ** 0.85
    qs = []
    if pairs:
        for a in range(m):
            for b in range(a + 1, m):
                if sf[a] != sf[b]:
                    continue
                if keys is not None:
                    P = table.pair[keys[a], keys[b]]
                else:
                    P = np.stack([T[a], T[b]], axis=1) * rng.uniform(0.3, 0.8, size=(3, 2))
                if P.any():
                    qs.append(Pair(a, b, P))
    n = float(per_type or max(1, math.ceil(m / 4)))
    steps = rng.uniform(1e4, 1e6, m)
    elapsed = rng.uniform(0, 3600 * 24, m)
    # Gavel's multi-priority jobs: one in five weighs 5
    weight = np.where(rng.random(m) < 0.2, 5.0, 1.0) if priorities else np.ones(m)
    return SharesProblem(TYPES, np.full(3, n), tuple(f"j{i}" for i in range(m)), sf.astype(float),
                         weight, T, steps, elapsed, elapsed * rng.uniform(0.7, 1.0, m),
                         tuple([None] * m), tuple(qs), {}, f"bench-{m}")


def plain(problem, policy: str):
    """The same policy as one plain HiGHS LP (interior point, every column):
    ``(objective, seconds)``, for the policies that are one LP."""
    t0 = time.perf_counter()
    agn = policy.startswith("max-min-agnostic")
    T, PT = check.agnostic_throughputs(problem) if agn else (problem.runnable_throughput,
                                                             check.pair_arrays(problem)[2])
    a, b, _ = check.pair_arrays(problem)
    served, zeros = problem.served.astype(float), np.zeros(problem.m)
    if policy.startswith("max-sum"):
        lp = FullLP(T, problem.scale_factor, problem.capacity, pa=a, pb=b, PA=PT)
    else:
        with np.errstate(divide="ignore"):
            if policy.startswith("makespan"):
                kappa = 1.0 / problem.steps_remaining
            else:
                kappa = problem.scale_factor / (problem.weight * check.proportional_throughput(problem, T))
        kappa = np.where(np.isfinite(kappa), kappa, 1.0)
        PA = PT * np.stack([kappa[a], kappa[b]], axis=1)[:, None, :]
        lp = FullLP(kappa[:, None] * T, problem.scale_factor, problem.capacity, served, zeros, a, b, PA)
    sol = solve_full(lp, Deadline.never(), column_generation=False, params={"solver": "ipm"})
    obj = sol.objective
    if policy.startswith("makespan") and obj:
        obj = 1.0 / obj
    return obj, time.perf_counter() - t0


def run_case(case: dict) -> dict:
    """One case in its own process: solve ``runs`` times, then the plain LP."""
    table = gavel_table()
    problem = make_problem(case["m"], case["mix"], case["seed"], case["pairs"], table,
                           case.get("priorities", False), case.get("per_type"))
    policy = case["policy"]
    times, res = [], None
    for _ in range(case["runs"]):
        t0 = time.perf_counter()
        res = solve_shares(problem, policy, time_limit=case["time_limit"])
        times.append(time.perf_counter() - t0)
    out = {"min": min(times), "median": statistics.median(times), "status": res.status.value,
           "objective": res.objective, "bound": res.bound,
           "rounds": res.stats.get("rounds", res.stats.get("iterations", "")),
           "pairs": len(problem.pairs), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if case["plain"]:
        out["plain_obj"], out["plain_s"] = plain(problem, policy)
    return out


def cases(sizes, runs, with_plain, policies):
    single = ["max-min", "max-min-agnostic", "max-sum", "makespan", "finish-time-fairness"]
    out = []
    for m in sizes:
        for mix in (False, True):
            for pol in single + ["water-filling", "isolated", "fifo", "gandiva"] + (
                    ["allox"] if m <= 512 else []):
                if m > 2048 and pol == "water-filling":
                    continue
                out.append(dict(policy=pol, m=m, mix=mix, pairs=False))
            if m <= 2048:
                out.append(dict(policy="water-filling", m=m, mix=mix, pairs=False, priorities=True,
                                label="water-filling-priorities"))
                out.append(dict(policy="water-filling", m=m, mix=mix, pairs=False, priorities=True,
                                per_type=max(1, int(0.415 * m)), label="water-filling-priorities-large"))
        if m <= 512:
            for pol in ("max-min", "max-sum", "water-filling"):
                out.append(dict(policy=pol, m=m, mix=False, pairs=True, label=pol + "+pairs"))
    plainable = {"max-min", "max-min-agnostic", "max-sum", "makespan"}
    for c in out:
        c.update(runs=runs, seed=c["m"], time_limit=600.0,
                 plain=with_plain and c["policy"] in plainable and (c["m"] <= 2048 or not c["pairs"]))
    if policies:
        out = [c for c in out if c.get("label", c["policy"]) in policies]
    return out


def fmt(x, nd=6):
    return "-" if x is None else (f"{x:.{nd}g}" if isinstance(x, float) else str(x))


def table_rows(results):
    head = ("| policy | jobs | mix | pairs | status | time min (s) | time median (s) | objective | "
            "plain HiGHS LP (s) | rel. diff | peak RSS (MB) | target | Gavel (peer) |")
    rows = [head, "|" + "---|" * 13]
    for c, r in results:
        label = c.get("label", c["policy"])
        key = (label, c["m"])
        diff = "-"
        if r.get("plain_obj") and r["objective"] is not None:
            diff = f"{abs(r['objective'] - r['plain_obj']) / max(1e-12, abs(r['plain_obj'])):.1e}"
        tgt = TARGET.get(key)
        tgt = "-" if tgt is None else (f"<= {tgt} s " + ("met" if r["min"] <= tgt else "MISSED"))
        rows.append(f"| {label} | {c['m']} | {'1/2/4/8' if c['mix'] else '1'} | {r['pairs'] or '-'} | "
                    f"{r['status']} | {r['min']:.4f} | {r['median']:.4f} | {fmt(r['objective'])} | "
                    f"{fmt(r.get('plain_s'), 3)} | {diff} | {r['peak_mb']:.0f} | {tgt} | "
                    f"{PEER.get((c['policy'], c['m']), '-') if not c['pairs'] else '-'} |")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8,64,512,2048,10000", help="job counts (default: 8,64,512,2048,10000)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case, min and median reported (default: 3)")
    ap.add_argument("--policies", default="", help="comma-separated policy labels (default: all)")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain HiGHS LP check (default: run it)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "shares.md"),
                    help="markdown file to write (default: bench/results/shares.md)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    todo = cases(sizes, args.runs, not args.no_plain, {p for p in args.policies.split(",") if p})
    data = "Gavel's measured throughputs" if gavel_table() is not None else \
        "synthetic throughputs (gavel_throughputs.json not found)"
    print(f"{len(todo)} cases, {data}", file=sys.stderr)
    results = []
    for c in todo:
        with ProcessPoolExecutor(1, mp_context=get_context("fork")) as ex:
            r = ex.submit(run_case, c).result()
        results.append((c, r))
        print(table_rows([(c, r)])[-1], flush=True)
    cmd = "python bench/shares.py" + ("" if argv is None and len(sys.argv) == 1 else
                                      " " + " ".join(sys.argv[1:] if argv is None else argv))
    text = ["# Share policies: time, objective, memory", "",
            f"Command: `{cmd}` ({data}; {os.cpu_count()} cores; times in seconds, min and median "
            f"of {args.runs} runs in one process; peak RSS of that process, interpreter included).", "",
            "Cases: `m` jobs, `ceil(m/4)` GPUs of each of V100/P100/K80; scale factors 1, or "
            "1/2/4/8 with probabilities 0.70/0.10/0.15/0.05; `+pairs`: every equal-scale-factor pair "
            "with measured co-located throughputs; `-priorities`: one job in five weighs 5 (Gavel's "
            "multi-priority jobs); `-large`: `0.415 m` GPUs per type (850 per type at 2,048 jobs, as in "
            "Gavel's policy-runtime sweep). "
            "`plain HiGHS LP`: the same policy as one LP with every column, HiGHS interior point; "
            "`rel. diff`: relative difference of the objectives. Gavel (peer): Gavel's own code "
            "(cvxpy/ECOS) on this machine, from the issue.", ""] + table_rows(results)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(text) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

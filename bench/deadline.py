"""Every solver against its deadline: requested vs actual wall time.

For each size (8-GPU V100 servers, Synergy job mix at 8 jobs per server of
demand: 1/2/4/8 GPUs at 0.70/0.10/0.15/0.05, 3 cores and 62.5 GB per GPU,
the 12 models of ``models/``) and each time limit, every registered solver is
called once through ``alloc.allocate``; the table gives the wall time, whether
it kept ``limit * 1.1 + 0.5`` s, its status and value, and for the exact
solvers their value against the best heuristic of the same call (``/heur``)
and their gap to their bound.

With ``--repro`` it runs the two deadline reproducers of the shared folder
(``../shared/repro``, or ``$ALLOC_SHARED/repro``) instead: the 256-server,
2,000-job instance (``deadline_256x2000.json``, throughput, 1 and 5 s: the
exact family's aggregate build made 768,647 items without looking at the
clock) and the 17-server instance whose proof overran (``exact_overrun_and_
tenancy_false_optimal.json``, GPUs, 5 s: CP-SAT's presolve and HiGHS's MIP
presolve did not stop at their limits on a 26,000-column master).

Usage::

    python bench/deadline.py                               # 64, 256, 1024 servers x 1, 5, 20 s
    python bench/deadline.py --sizes 64 --limits 1 --solvers cpsat,best-fit
    python bench/deadline.py --repro --solvers cpsat,milp,milp-cbc,cpsat-tenancy
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import Cluster, Job, Server, allocate, load_profile, solvers  # noqa: E402
from alloc.solve import needed_capabilities  # noqa: E402
from alloc.deadline import allowance  # noqa: E402
from alloc.errors import AllocError  # noqa: E402

SHARED = Path(os.environ.get("ALLOC_SHARED", ROOT.parent / "shared"))
#: the reproducers: (file, objective, time limits)
REPRO = (("deadline_256x2000.json", "throughput", (1.0, 5.0)),
         ("exact_overrun_and_tenancy_false_optimal.json", "gpus", (5.0,)))

MODELS = ("alexnet", "bert", "deepspeech", "gnmt", "lstm", "m5", "mobilenet", "res18",
          "res50", "shufflenet", "transformer", "vae")


def synergy_instance(servers: int, seed: int = 0):
    """Synergy-mix jobs (8 per server) on ``servers`` 8-GPU servers."""
    rng = random.Random(seed)
    cl = Cluster(tuple(Server(f"s{i:05d}", 24000, 512000, 8, "V100") for i in range(servers)))
    jobs = []
    for k in range(8 * servers):
        g = rng.choices((1, 2, 4, 8), (70, 10, 15, 5))[0]
        m = rng.choice(MODELS)
        jobs.append(Job(f"j{k}", gpus=g, cpu=3000 * g, mem=64000 * g, model=m,
                        profile=load_profile(m), locality="server" if g > 1 and rng.random() < 0.5
                        else None))
    return cl, jobs


def call(cl, jobs, name: str, limit: float, objective: str = "throughput") -> dict:
    """One timed ``allocate`` call: status, value, gap, wall and whether the
    deadline held."""
    reg = solvers()
    if not set(needed_capabilities(cl, jobs)) <= set(reg[name].capabilities):
        return {}
    t0 = time.perf_counter()
    try:
        a = allocate(cl, jobs, solver=name, time_limit=limit, objective=objective)
        row = {"status": a.status.value, "value": a.value, "gap": a.gap}
    except AllocError as exc:
        row = {"status": "error", "error": str(exc)[:60]}
    wall = time.perf_counter() - t0
    row.update(limit=limit, solver=name, wall=wall, exact=reg[name].exact,
               kept=wall <= allowance(limit))
    return row


def versus_heuristics(rows: list[dict]) -> None:
    """``vs_heur``: each exact solver's value over the best heuristic's of the same call."""
    best = max((r["value"] for r in rows if r.get("value") is not None and not r["exact"]),
               default=None)
    for row in rows:
        if row["exact"] and best and row.get("value") is not None:
            row["vs_heur"] = row["value"] / best


def run(sizes, limits, names) -> list[dict]:
    rows = []
    for n in sizes:
        cl, jobs = synergy_instance(n)
        for limit in limits:
            batch = []
            for name in names:
                row = call(cl, jobs, name, limit)
                if row:
                    row["servers"] = n
                    batch.append(row)
                    print(fmt(row), flush=True)
            versus_heuristics(batch)
            rows += batch
    return rows


def run_repro(names) -> list[dict]:
    """The reproducers (module notes), each at its limits."""
    from alloc import load_instance
    rows = []
    for fname, objective, limits in REPRO:
        path = SHARED / "repro" / fname
        if not path.is_file():
            print(f"{path}: absent, skipped", file=sys.stderr)
            continue
        inst = load_instance(path)
        for limit in limits:
            batch = []
            for name in names:
                row = call(inst.cluster, inst.jobs, name, limit, objective)
                if row:
                    row["servers"] = len(inst.cluster.servers)
                    batch.append(row)
                    print(fmt(row), flush=True)
            versus_heuristics(batch)
            rows += batch
    return rows


def fmt(r: dict) -> str:
    gap = "" if r.get("gap") is None else f"{100 * r['gap']:.2f}"
    rel = "" if r.get("vs_heur") is None else f"{r['vs_heur']:.3f}"
    val = "" if r.get("value") is None else f"{r['value']:.2f}"
    return (f"{r['servers']:>6} {r['limit']:>5g} {r['solver']:<15} {r['wall']:>8.2f} "
            f"{'yes' if r['kept'] else 'NO':>4} {r['status']:<10} {val:>10} {gap:>7} {rel:>6}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,256,1024", help="servers (default: 64,256,1024)")
    ap.add_argument("--limits", default="1,5,20", help="time limits in s (default: 1,5,20)")
    ap.add_argument("--solvers", default=None, help="comma-separated (default: all available)")
    ap.add_argument("--repro", action="store_true",
                    help="run the shared deadline reproducers instead (default: off)")
    args = ap.parse_args(argv)
    names = args.solvers.split(",") if args.solvers else \
        [n for n, s in solvers().items() if s.available]
    head = (f"{'servers':>6} {'limit':>5} {'solver':<15} {'wall s':>8} {'kept':>4} "
            f"{'status':<10} {'value':>10} {'gap%':>7} {'/heur':>6}")
    print(head)
    rows = run_repro(names) if args.repro else \
        run([int(x) for x in args.sizes.split(",")], [float(x) for x in args.limits.split(",")],
            names)
    print("\n" + head)
    for r in rows:
        print(fmt(r))
    late = [r for r in rows if not r["kept"]]
    print(f"\n{len(rows) - len(late)}/{len(rows)} calls kept their deadline"
          + ("; late: " + ", ".join(f"{r['solver']}@{r['servers']}/{r['limit']:g}s {r['wall']:.2f}s"
                                    for r in late) if late else ""))
    below = [r for r in rows if r.get("vs_heur") is not None and r["vs_heur"] < 1 - 1e-9]
    print(f"exact solvers below the best heuristic of the same call: {len(below)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

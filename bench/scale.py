"""Scale: size x variant x solver -> wall seconds, value, bound, gap, peak memory.

Instances come from :mod:`alloc.experiments.generators` (seeded, generated
here, never shipped): the Synergy mix on 1,024, 4,096 and 12,500 eight-GPU
servers (8k, 32k, 100k GPUs, 8 jobs per server of demand), its
heterogeneous variant (``hetero``: V100/P100/K80 thirds, 20 % of the jobs
restricted to one type) and its live variant (``live``: running jobs hold
half the GPUs and stay where they run), and the openb-shaped instances
(``openb``: GPU sharing, CPU-heavy pods) at 6k and 60k GPUs.

Every run is one ``alloc.allocate()`` call (validation, compile, solver,
final check) in its own process, so ``peak MB`` is that process's maximum
resident set (the instance included; for ``pop-k`` plus ``k`` times its
largest part process).  Before it the process makes one call on a
two-server instance with the same solver, so that the modules are imported
(as in a running service); the cluster of the measured call is new to it.
``wall s`` is the whole call, ``CPU s`` the process's CPU time during it,
``value`` the recomputed objective, ``bound`` / ``gap`` the solver's
certified bound on the *whole* instance and the gap to it (exact solvers),
``/best heur`` the value against the best heuristic of the same instance.

``pop-k`` is the POP baseline (Narayanan et al., SOSP'21): servers and jobs
dealt at random to ``k`` parts, each part solved by ``cpsat`` in parallel
processes with the whole time limit, the parts' answers joined as they are;
POP reports no bound, so its row has none.  ``cpsat/parts=k`` is ``cpsat``
with its partitioned driver forced to ``k`` parts (the bound still on the
whole instance); plain ``cpsat`` chooses (``parts=0``).

Usage::

    python bench/scale.py                                  # the full table
    python bench/scale.py --sizes 1024 --variants synergy --solvers best-fit cpsat
    python bench/scale.py --out bench/results/scale.md
    python bench/scale.py --sizes 4096 --variants hetero --solvers --exact cpsat cpsat/parts=2
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Heuristics timed at every size (the FGD policies on the openb instances).
HEURISTICS = ("proportional", "best-fit", "synergy-tune", "greedy-upgrade")
#: Exact time limits (seconds) by servers: the targets' budgets.
LIMITS = {1024: 10.0, 4096: 30.0, 12500: 60.0}
#: openb sizes in GPUs, the limit of their exact runs.
OPENB = {6000: 10.0, 60000: 60.0}
VARIANTS = ("synergy", "hetero", "live", "openb")


def instance(variant: str, size: int, seed: int = 0):
    """The generated instance: ``size`` servers, or GPUs for ``openb``."""
    from alloc.experiments.generators import generate
    if variant == "openb":
        return generate("openb", seed, gpus=size)
    return generate(variant, seed, servers=size)


def pop(cluster, jobs, k: int, limit: float, seed: int = 0) -> dict:
    """POP: random split into ``k`` parts, ``cpsat`` on each in parallel, join."""
    from alloc.model import Cluster
    rng = random.Random(seed)
    servers = list(cluster.servers)
    rng.shuffle(servers)
    parts = [servers[i::k] for i in range(k)]
    owner = {s.id: i for i, grp in enumerate(parts) for s in grp}
    pending = [j for j in jobs if j.current is None]
    rng.shuffle(pending)
    dealt = [[] for _ in range(k)]
    for n, j in enumerate(pending):
        dealt[n % k].append(j)
    for j in jobs:
        if j.current is not None:
            dealt[owner[next(iter(j.current.cpu))]].append(j)
    tasks = [(Cluster(tuple(grp), cluster.levels, cluster.tenants), dealt[i], limit)
             for i, grp in enumerate(parts)]
    with ProcessPoolExecutor(max_workers=min(k, os.cpu_count() or 1)) as ex:
        vals = list(ex.map(_pop_part, tasks))
    return {"value": sum(vals), "status": "feasible", "bound": None, "gap": None}


def _pop_part(task) -> float:
    from alloc import allocate
    cluster, jobs, limit = task
    return allocate(cluster, jobs, solver="cpsat", time_limit=limit, parts=1).value


def worker(variant: str, size: int, solver: str, limit: float | None) -> dict:
    """One run (in this process): the row's figures."""
    from alloc import allocate
    inst = instance(variant, size)
    _warm(solver.partition("/parts=")[0] if not solver.startswith("pop-") else "cpsat")
    t0, c0 = time.perf_counter(), time.process_time()
    if solver.startswith("pop-"):
        row = pop(inst.cluster, inst.jobs, int(solver[4:]), limit or 60.0)
    else:
        name, _, parts = solver.partition("/parts=")
        opts = {"parts": int(parts)} if parts else {}
        a = allocate(inst.cluster, inst.jobs, solver=name, time_limit=limit, **opts)
        row = {"value": a.value, "status": a.status.value, "bound": a.bound, "gap": a.gap,
               "parts": a.stats.get("parts")}
    row["wall_s"] = time.perf_counter() - t0
    row["cpu_s"] = time.process_time() - c0
    # this process and, for pop-K, its largest part process times K (they run together)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    k = int(solver[4:]) if solver.startswith("pop-") else 0
    row["peak_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + k * kids) / 1024
    row["gpus"] = inst.cluster.total_gpus
    row["jobs"] = len(inst.jobs)
    return row


def _warm(solver: str) -> None:
    """One call on a tiny instance: the solver's modules imported."""
    from alloc import Cluster, Job, Server, allocate
    small = Cluster(tuple(Server(f"w{i}", 24000, 512000, 8, "V100") for i in range(2)))
    allocate(small, [Job("w", 1, cpu=3000, mem=64000, model="res18")], solver=solver,
             time_limit=5)


def measure(variant: str, size: int, solver: str, limit: float | None,
            timeout: float) -> dict:
    """:func:`worker` in a fresh process (peak memory is the run's own)."""
    cmd = [sys.executable, __file__, "--worker", variant, str(size), solver, str(limit)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"killed after {timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def plan(sizes, variants, solvers, exact) -> list[tuple[str, int, str, float | None]]:
    """The runs: (variant, size, solver, time limit)."""
    runs = []
    for variant in variants:
        if variant == "openb":       # 6k GPUs with the smallest size, 60k with 100k GPUs
            grid = {g: t for g, t in OPENB.items()
                    if (g == 6000 and min(sizes) <= 1024) or (g == 60000 and max(sizes) >= 12500)}
        else:
            grid = {s: LIMITS.get(s, 10.0) for s in sizes}
        for size, limit in grid.items():
            heur = ("fgd", "best-fit") if variant == "openb" else solvers
            runs += [(variant, size, s, limit) for s in heur]
            runs += [(variant, size, s, limit) for s in exact]
    return runs


def table(rows: list[dict]) -> str:
    """The Markdown table (one line per run)."""
    best: dict[tuple, float] = {}
    for r in rows:
        if r.get("kind") == "heuristic" and "value" in r:
            key = (r["variant"], r["size"])
            best[key] = max(best.get(key, float("-inf")), r["value"])
    out = ["| variant | GPUs | jobs | solver | limit s | wall s | CPU s | value | bound | gap % | "
           "/best heur | peak MB | status |", "|" + "---|" * 13]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['variant']} | | | {r['solver']} | {r['limit']} | | | | | | | | "
                       f"{r['error']} |")
            continue
        b = best.get((r["variant"], r["size"]))
        rel = f"{r['value'] / b:.4f}" if b else ""
        gap = "" if r.get("gap") is None else f"{100 * r['gap']:.2f}"
        bound = "" if r.get("bound") is None else f"{r['bound']:.1f}"
        out.append(f"| {r['variant']} | {r['gpus']:,} | {r['jobs']:,} | {r['solver']} | "
                   f"{r['limit'] if r['kind'] != 'heuristic' else ''} | {r['wall_s']:.2f} | "
                   f"{'' if r.get('cpu_s') is None else format(r['cpu_s'], '.2f')} | "
                   f"{r['value']:.1f} | {bound} | {gap} | {rel} | {r['peak_mb']:.0f} | "
                   f"{r['status']} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(LIMITS),
                    help="servers (default: 1024 4096 12500); openb runs at 6k GPUs "
                         "from 1024 servers up and at 60k from 12500")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--solvers", nargs="*", default=list(HEURISTICS), help="heuristics")
    ap.add_argument("--exact", nargs="*", default=["cpsat", "pop-4"],
                    help="exact solvers, NAME/parts=K, and pop-K baselines (default: cpsat pop-4)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run before kill")
    ap.add_argument("--out", help="also write the Markdown table here")
    ap.add_argument("--rows", nargs="+", metavar="JSONL",
                    help="build the table from the rows these runs printed to stderr (a later "
                         "row replaces an earlier one of the same variant, size and solver)")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        v, size, solver, limit = args.worker
        print(json.dumps(worker(v, int(size), solver, None if limit == "None" else float(limit))))
        return 0
    if args.rows:
        keyed: dict[tuple, dict] = {}
        for path in args.rows:
            try:
                for n, line in enumerate(Path(path).read_text().splitlines(), 1):
                    r = json.loads(line)
                    keyed[(r["variant"], r["size"], r["solver"])] = r
            except (OSError, UnicodeDecodeError) as exc:
                return _bad(f"scale.py: {path}: cannot read ({exc.strerror or exc})")
            except (ValueError, KeyError, TypeError) as exc:
                return _bad(f"scale.py: {path}, line {n}: expected a row this script printed "
                            f"({type(exc).__name__}: {exc})")
        rows = sorted(keyed.values(), key=lambda r: (VARIANTS.index(r["variant"]), r["size"],
                                                     r["kind"] != "heuristic", r["solver"]))
        return emit(rows, args.out)
    for name in args.exact:
        base, sep, parts = name.partition("/parts=")
        if sep and not (parts.isdigit() and int(parts) >= 1):
            return _bad(f"scale.py: --exact {name}: expected NAME/parts=K with K an integer >= 1")
    rows = []
    for variant, size, solver, limit in plan(args.sizes, args.variants, args.solvers, args.exact):
        exact = solver in args.exact
        r = measure(variant, size, solver, limit if exact else None, args.timeout)
        r.update(variant=variant, size=size, solver=solver, limit=limit,
                 kind="exact" if exact else "heuristic")
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
    return emit(rows, args.out)


def _bad(message: str) -> int:
    """One line on stderr; exit status 2 (bad input)."""
    print(message, file=sys.stderr)
    return 2


def emit(rows: list[dict], out: str | None) -> int:
    """Print the table (and write it to ``out``)."""
    text = table(rows)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

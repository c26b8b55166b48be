"""The first exact call of a process: what the engine's import costs it.

Each run is a fresh process: 32 x 8 GPUs, 100 jobs (the instance of
``bench/loop.py --first-call``), two ``cpsat`` calls with a 1 s limit one
after the other.  Without ``--preload`` the first call imports OR-Tools
inside its limit (the limit is wall time from the call; the configuration
model imports it after its warm start, ``stats["import_s"]``); with it the
process calls `alloc.kernel.preload` first, as a service or a scheduler loop
does at start.  Printed: medians (and max) over the runs of each call's wall
seconds and gap, the import's seconds.

Examples
--------
```
python bench/first_exact_call.py --runs 5
python bench/first_exact_call.py --runs 5 --preload
```
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import json, sys, time
sys.path.insert(0, {root!r})
from alloc import Cluster, Job, Server, allocate
cl = Cluster(tuple(Server(f"s{{i}}", 24000, 512000, 8, "V100") for i in range(32)))
jobs = [Job(f"j{{i}}", 1 + (i % 2), cpu=3000 * (1 + i % 2), mem=64000 * (1 + i % 2),
            model="res18") for i in range(100)]
pre = 0.0
if {preload}:
    from alloc.kernel import preload
    pre = preload()
out = {{"preload_s": pre}}
for k in ("first", "second"):
    t = time.perf_counter()
    a = allocate(cl, jobs, solver="cpsat", time_limit=1)
    out[k] = {{"wall_s": time.perf_counter() - t, "gap": a.gap,
              "import_s": a.stats.get("import_s", 0.0)}}
print(json.dumps(out))
"""


def main(argv=None) -> int:
    """Run the fresh processes and print the medians."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes (default: 5)")
    ap.add_argument("--preload", action="store_true",
                    help="call alloc.kernel.preload() before the first call")
    args = ap.parse_args(argv)
    code = RUN.format(root=str(ROOT), preload=bool(args.preload))
    rows = []
    for _ in range(args.runs):
        txt = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        rows.append(json.loads(txt.strip().splitlines()[-1]))

    def med(f):
        xs = [f(r) for r in rows]
        return statistics.median(xs), max(xs)

    for k in ("first", "second"):
        w, wmax = med(lambda r: r[k]["wall_s"])
        g, gmax = med(lambda r: r[k]["gap"] or 0.0)
        i, _ = med(lambda r: r[k]["import_s"])
        print(f"{k} call: {w:.3f} s wall (max {wmax:.3f}), gap {100 * g:.2f} % "
              f"(max {100 * gmax:.2f} %), import {i:.3f} s")
    if args.preload:
        p, pmax = med(lambda r: r["preload_s"])
        print(f"preload before the first call: {p:.3f} s (max {pmax:.3f})")
    print(f"(medians of {args.runs} fresh processes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

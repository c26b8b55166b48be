"""The cost of the final check, `alloc.violations`, on a large allocation.

The cluster and the jobs are `bench/loop.py`'s: ``--servers`` x 8 V100 GPUs,
the Synergy job mix at ``--load`` of the GPUs, placed by best-fit
(``allocate()``).  Timed (wall seconds, median of ``--repeat``):

* ``allocate`` -- the whole call, its own final check included;
* ``check_fresh`` -- `violations()` on an equal cluster object it has not
  seen (nothing derived from the cluster is at hand: the check reads the
  cluster afresh);
* ``check_again`` -- `violations()` again on the same objects.

``--tree DIR`` (repeatable) runs the same measurement with the package of
each source tree, in fresh processes taking turns, so that two versions are
compared in one run on the same machine load (the figure to quote is the
ratio between them).

Examples
--------
```
python bench/check_cost.py --servers 1000
python bench/check_cost.py --servers 1000 --tree ../other-checkout --tree .
```
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

WORKER = """
import json, statistics, sys, time
sys.path.insert(0, {bench!r})
from loop import MEAN_GPUS, Stream, cluster
from alloc import Cluster, allocate, violations
servers, load, repeat = {servers}, {load}, {repeat}
cl = cluster(servers)
stream = Stream(0, 20.0)
jobs = [stream.job()[0] for _ in range(round(load * cl.total_gpus / MEAN_GPUS))]
out = {{"allocate": [], "check_fresh": [], "check_again": []}}
for _ in range(repeat):
    c = Cluster(cl.servers)
    t0 = time.perf_counter()
    a = allocate(c, jobs, solver="best-fit")
    t1 = time.perf_counter()
    fresh = Cluster(cl.servers)
    assert violations(fresh, jobs, a) == []
    t2 = time.perf_counter()
    violations(fresh, jobs, a)
    t3 = time.perf_counter()
    out["allocate"].append(t1 - t0)
    out["check_fresh"].append(t2 - t1)
    out["check_again"].append(t3 - t2)
print(json.dumps({{k: statistics.median(v) for k, v in out.items()}} | {{"placed": len(a.placements)}}))
"""


def measure(tree: Path, servers: int, load: float, repeat: int) -> dict:
    """One measurement with the package of ``tree``, in a fresh process."""
    code = WORKER.format(bench=str(tree / "bench"), servers=servers, load=load, repeat=repeat)
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Print one row per tree and turn (seconds), then the medians."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--repeat", type=int, default=3, help="calls per process (median)")
    ap.add_argument("--turns", type=int, default=3, help="processes per tree, taking turns")
    ap.add_argument("--tree", action="append", type=Path,
                    help="source tree to measure (default: this one)")
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [HERE.parent])]
    rows: dict[Path, list[dict]] = {t: [] for t in trees}
    print(f"{args.servers} x 8 GPUs, load {args.load}; load average {os.getloadavg()[0]:.2f}")
    for turn in range(args.turns):
        for t in trees:
            r = measure(t, args.servers, args.load, args.repeat)
            rows[t].append(r)
            print(f"turn {turn} {t.name}: " + ", ".join(
                f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    print(f"load average {os.getloadavg()[0]:.2f}")
    for t in trees:
        med = {k: statistics.median(r[k] for r in rows[t]) for k in rows[t][0] if k != "placed"}
        print(f"median {t.name}: " + ", ".join(f"{k} {v:.4f} s" for k, v in med.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

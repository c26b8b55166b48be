"""The Slurm controller's cycle: alloc's time apart from Slurm's own commands.

A loopback Slurm (`alloc.adapters.loopback`: one slurmctld, 4 slurmd of 8
GPUs, 96 CPUs, 500,000 MiB) gets ``--jobs`` held jobs (1, 2, 4 and 8 GPUs on
one node, in turn; 1 to 4 CPUs, 1,000 to 4,000 MiB; ``sleep 600``).  The
controller (best-fit, FIFO, preemption by order) then runs ``--cycles``
cycles, one a second.  Per cycle it reports its wall time and the part spent
in Slurm's commands (``scontrol show nodes``, ``scontrol show job -d``, and
every ``update`` / ``release`` / ``requeuehold`` it issued); alloc's part is
the rest: parsing, the session's bookkeeping and reconcile, the round, the
decisions.  The first cycle starts what fits (about 32 GPUs' worth); later
cycles place nothing new (the jobs run 600 s) but read, reconcile and solve
the same 200 jobs.

Needs Debian's slurmctld, slurmd and slurm-client, and root.

    python bench/slurm_cycle.py --jobs 200 --cycles 10
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.adapters.loopback import Loopback, missing  # noqa: E402
from alloc.adapters.scontrol import Scontrol  # noqa: E402
from alloc.adapters.slurm import Controller  # noqa: E402


def stats(xs) -> str:
    """min / median / max in milliseconds."""
    return f"{1e3 * min(xs):.0f} / {1e3 * statistics.median(xs):.0f} / {1e3 * max(xs):.0f}"


def main(argv=None) -> int:
    """Run the benchmark (module notes); prints one line per cycle and a summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=200, help="held jobs (default: 200)")
    ap.add_argument("--cycles", type=int, default=10, help="cycles (default: 10)")
    ap.add_argument("--solver", default="best-fit", help="solver (default: best-fit)")
    args = ap.parse_args(argv)
    why = missing()
    if why:
        print(f"no Slurm here: {why}", file=sys.stderr)
        return 2
    shapes = [(1, 1, 1000), (2, 2, 2000), (4, 2, 4000), (8, 4, 4000)]
    with Loopback(nodes=4, gpus=8) as slurm:
        t0 = time.perf_counter()
        for k in range(args.jobs):
            g, c, m = shapes[k % len(shapes)]
            slurm.sbatch("--hold", "-N1", f"--gres=gpu:v100:{g}", "-n1", f"-c{c}",
                         f"--mem={m}", "--wrap", "sleep 600")
        print(f"submitted {args.jobs} held jobs in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        ctl = Controller(Scontrol(slurm.conf), solver=args.solver, order="fifo",
                         preempt="order")
        rows = []
        for _ in range(args.cycles):
            c = ctl.cycle()
            rows.append(c)
            print(f"cycle {c.number}: wall {1e3 * c.wall_s:.0f} ms = alloc "
                  f"{1e3 * c.alloc_s:.0f} ms (round {1e3 * c.round_s:.0f} ms) + Slurm "
                  f"{1e3 * c.slurm_s:.0f} ms in {c.slurm_calls} commands; "
                  f"{len(c.started)} started, {len(c.waiting)} waiting")
            time.sleep(max(0.0, 1.0 - c.wall_s))
        print(f"alloc per cycle (min / median / max ms): {stats([c.alloc_s for c in rows])}; "
              f"Slurm's commands: {stats([c.slurm_s for c in rows])}; "
              f"per Slurm command: {stats([c.slurm_s / max(1, c.slurm_calls) for c in rows])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

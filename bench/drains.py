"""A session round with drained servers: the median CPU time of
``Session.step`` and the solves per round, with and without drains.

Workload: ``--servers`` servers of 8 V100 GPUs (24 cores, 500 GiB); jobs of
1/2/4/8 GPUs with probability 0.70/0.10/0.15/0.05 asking 3 cores and
62.5 GiB per GPU, enough for 85 % of the GPUs; two rounds place them, then
``--drained`` servers that hold running jobs are drained and each of the
``--rounds`` measured rounds finishes 50 random running jobs and submits 50
new ones.  Every round is checked to start nothing on a drained server.

To compare two trees, run the script with ``PYTHONPATH`` set to each.

Examples
--------
```
python bench/drains.py --solvers best-fit hived --drained 0 50
```
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import time


def run(solver: str, drained: int, rounds: int, servers: int) -> tuple[float, int, float]:
    """(median step CPU ms, most solves in a round, mean solves per round)."""
    from alloc import Cluster, Job, Server, Session
    rng = random.Random(0)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(servers)))
    s = Session(cl, solver=solver, time_limit=5)
    n = 0

    def job() -> Job:
        nonlocal n
        n += 1
        g = rng.choices([1, 2, 4, 8], [0.7, 0.1, 0.15, 0.05])[0]
        return Job(f"j{n}", g, cpu=3000 * g, mem=64000 * g)

    for _ in range(int(servers * 8 * 0.85 / 1.9)):
        s.submit(job())
    s.step()
    s.step()
    hosts = sorted({next(iter(s.jobs[j].current.cpu)) for j in s.running})[:drained]
    for h in hosts:
        s.drain_server(h)
    cpu, solves = [], []
    for _ in range(rounds):
        for j in rng.sample(list(s.running), min(50, len(s.running))):
            s.finish(j)
        for _ in range(50):
            s.submit(job())
        t = time.process_time()
        r = s.step()
        cpu.append(1e3 * (time.process_time() - t))
        solves.append(int(r.timings.get("attempts", 1)))
        assert not [p for p in r.start if set(p.cpu) & set(hosts)], "started on a drained server"
    return statistics.median(cpu), max(solves), statistics.mean(solves)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--drained", type=int, nargs="+", default=[0, 50])
    ap.add_argument("--solvers", nargs="+", default=["best-fit", "hived"])
    a = ap.parse_args()
    if a.servers < 1 or a.rounds < 1:
        ap.error("--servers and --rounds: expected integers >= 1")
    if any(not 0 <= d <= a.servers for d in a.drained):
        ap.error(f"--drained: expected integers from 0 to --servers ({a.servers}), got {a.drained}")
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    for solver in a.solvers:
        for d in a.drained:
            m, most, mean = run(solver, d, a.rounds, a.servers)
            print(f"{solver:12s} drained={d:4d}: median step CPU {m:6.1f} ms, "
                  f"solves per round max {most} mean {mean:.2f}")


if __name__ == "__main__":
    main()

"""A scheduler loop on an alloc Session: arrivals, finishes, a server
failure and a preemption, with what each round asks the scheduler to do.

The cluster has 4 servers of 8 GPUs; tenant "research" is guaranteed one
whole server (a HiveD cell).  Jobs of other teams run opportunistically on
whatever is free, so a guaranteed job arriving on a full cluster preempts
some of them.  The ``hived`` solver places the jobs; moves are allowed (at
most 2 a round) so that it can defragment.

Run: ``python examples/scheduler_loop.py``
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alloc import Cell, Cluster, Job, Server, Session, Tenant  # noqa: E402


def job(jid: str, gpus: int, model: str, **kw) -> Job:
    """A job asking 3 cores and 62.5 GiB of memory per GPU."""
    return Job(jid, gpus, cpu=3000 * gpus, mem=64000 * gpus, model=model, **kw)


def binding(p) -> str:
    """``job@server:gpu,gpu`` for one placement."""
    by_server: dict[str, list[str]] = {}
    for g in p.gpus:
        sid, gpu = g.gpu.split("/")
        by_server.setdefault(sid, []).append(gpu[3:])
    return p.job + "@" + "+".join(f"{s}:{','.join(k)}" for s, k in by_server.items())


def report(r) -> None:
    """Print what the round asks: start, stop (preempt), move, and who waits."""
    print(f"round {r.round} ({1000 * r.latency_s:.1f} ms)")
    print("  start:", ", ".join(binding(p) for p in r.start) or "-")
    print("  stop: ", ", ".join(r.stop) or "-")
    print("  move: ", ", ".join(f"{binding(r.moved_from[p.job])} -> {binding(p)}"
                                for p in r.move) or "-")
    waiting = [f"{j} ({r.reasons[j]})" if j in r.reasons else j for j in r.unplaced]
    print("  wait: ", ", ".join(waiting) or "-")


def main() -> int:
    servers = tuple(Server(f"s{i}", cpu=24000, mem=512000, gpus=8, gpu_type="V100")
                    for i in range(4))
    tenants = {"research": Tenant("research", (Cell("server", 1, "V100"),))}
    s = Session(Cluster(servers, tenants=tenants), solver="hived", max_moves=2)

    # round 1: a first wave of opportunistic jobs
    for k, (n, m) in enumerate([(4, "res50"), (2, "gnmt"), (1, "lstm"), (8, "transformer"),
                                (4, "res18"), (2, "m5"), (1, "lstm")]):
        s.submit(job(f"a{k}", n, m))
    report(s.step())

    # round 2: more arrivals fill the cluster; one job finishes
    s.finish("a2")
    for k, (n, m) in enumerate([(4, "bert"), (2, "vae"), (1, "m5"), (1, "alexnet")]):
        s.submit(job(f"b{k}", n, m))
    report(s.step())

    # round 3: research's guaranteed job arrives on a full cluster: preemption
    s.submit(job("r0", 8, "res50", tenant="research", guaranteed=True, priority=10))
    report(s.step())

    # round 4: a server fails; its jobs wait again and restart where there is room
    lost = s.fail_server("s3")
    print(f"-- server s3 failed; jobs to restart: {', '.join(lost) or '-'}")
    s.finish("a0")
    report(s.step())

    # round 5: finishes and a replacement server: waiting jobs start
    s.apply([{"type": "finish", "job": "b0"}, {"type": "finish", "job": "a4"},
              {"type": "add_server", "server": Server("s4", 24000, 512000, 8, "V100")}])
    report(s.step())

    # a bad event changes nothing: the message names what is wrong
    try:
        s.finish("a0")
    except ValueError as exc:
        print(f"-- refused: {exc}")
    report(s.step())
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``alloc k8s run [--once | --interval S]``: the scheduler's command line."""
from __future__ import annotations

import argparse
import sys
import time

from ...errors import InputError, SolverUnavailable

#: Seconds a cycle waits, after the first change, for more changes to batch.
BATCH_S = 0.05


def _parser() -> argparse.ArgumentParser:
    from ...cli import _Parser
    p = _Parser(prog="alloc k8s", description="A Kubernetes scheduler: alloc places the pods "
                "whose schedulerName is alloc's.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run the scheduler")
    how = r.add_mutually_exclusive_group()
    how.add_argument("--once", action="store_true", help="list everything, one cycle, exit "
                     "(default)")
    how.add_argument("--interval", type=float, default=None, metavar="S",
                     help="watch, and run a cycle on each change, at least every S seconds")
    r.add_argument("--cycles", type=int, default=None, metavar="N",
                   help="with --interval: stop after N cycles (default: run until interrupted)")
    r.add_argument("--kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
    r.add_argument("--scheduler-name", default="alloc", metavar="NAME",
                   help="schedule the pods whose spec.schedulerName is NAME (default: alloc)")
    r.add_argument("--solver", default="best-fit", help="solver (default: best-fit)")
    r.add_argument("--order", default="priority", metavar="NAME",
                   help="job order: a registered order policy, NAME[:KEY=VALUE,...] (see "
                        "`alloc policies --kind order`), that needs no more than each pod's "
                        "priority: priority (highest first, then creation time) or fifo "
                        "(creation time; nothing is preempted) (default: priority)")
    r.add_argument("--preempt", default="order", choices=("order", "never"),
                   help="delete lower-ranked pods for higher-ranked waiting ones "
                        "(default: order)")
    r.add_argument("--decisions", default=None, metavar="FILE",
                   help="append one JSON line per action here (default: none)")
    r.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds per round (default: 60)")
    r.add_argument("--level", action="append", default=None, metavar="NAME=LABEL",
                   help="a topology level above server and its node label, outermost first, "
                        "repeatable (default: zone=topology.kubernetes.io/zone "
                        "block=cloud.provider.com/topology-block "
                        "rack=cloud.provider.com/topology-rack)")
    r.add_argument("--grace-period", type=int, default=None, metavar="S",
                   help="seconds a preempted pod gets to stop (default: the pod's own)")
    r.add_argument("--no-scheduled-events", action="store_true",
                   help="no Normal Event on each bound pod (Warnings are always recorded)")
    return p


def k8s_main(argv: list[str] | None = None) -> int:
    """``alloc k8s run``: the scheduler's command line; returns the exit code."""
    from ...cli import EXIT_INPUT, EXIT_OK, EXIT_SOLVER
    from .client import Api, ApiError, Watcher
    from .scheduler import Scheduler
    from .translate import Levels, parse_levels
    args = _parser().parse_args(argv)
    try:
        levels = parse_levels(args.level) if args.level is not None else Levels()
    except ValueError as exc:
        print(f"alloc k8s: --{exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.cycles is not None and args.cycles < 1:
        print("alloc k8s: --cycles: expected a positive integer", file=sys.stderr)
        return EXIT_INPUT
    try:
        api = Api(args.kubeconfig)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"alloc k8s: --kubeconfig {args.kubeconfig or '(default)'}: {first}",
              file=sys.stderr)
        return EXIT_INPUT
    try:
        sched = Scheduler(api, scheduler_name=args.scheduler_name, solver=args.solver,
                          preempt=args.preempt, order=args.order, time_limit=args.time_limit, levels=levels,
                          decisions=args.decisions, grace_period=args.grace_period,
                          events=not args.no_scheduled_events,
                          pipeline=args.interval is not None)
    except InputError as exc:
        print(f"alloc k8s: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except SolverUnavailable as exc:
        print(f"alloc k8s: {exc}", file=sys.stderr)
        return EXIT_SOLVER

    import signal

    def _term(signum, frame):          # a Deployment's stop: end like an interrupt (close())
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _term)

    def report(c) -> None:
        print(f"alloc k8s: cycle {c.number}: {len(c.bound)} pods bound ({len(c.started)} jobs), "
              f"{len(c.preempted)} preempted, {len(c.waiting)} waiting "
              f"({1e3 * c.alloc_s:.0f} ms alloc, {1e3 * c.api_s:.0f} ms API, "
              f"{c.api_calls} calls)", file=sys.stderr, flush=True)

    try:
        if args.interval is None:
            try:
                sched.relist()
            except ApiError as exc:
                print(f"alloc k8s: {exc}", file=sys.stderr)
                return EXIT_INPUT
            try:
                report(sched.cycle())
            except Exception as exc:      # a solver failure: one line, exit 3
                print(f"alloc k8s: cycle failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                return EXIT_SOLVER
            return EXIT_OK
        return _loop(sched, Watcher(Api(args.kubeconfig), log=lambda line: print(
            f"alloc k8s: {line}", file=sys.stderr, flush=True)), args.interval, args.cycles,
            report)
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        sched.close()


def _loop(sched, watcher, interval: float, cycles: int | None, report, stop=None) -> int:
    """Cycles on changes (batched for `BATCH_S`), at least every ``interval`` s,
    until ``cycles`` cycles ran or ``stop()`` is true."""
    import queue
    watcher.start()
    watcher.wait_synced(60)
    seen = ", ".join(f"{k} at resourceVersion {v or '-'}" for k, v in sorted(watcher.rv.items()))
    print(f"alloc k8s: watching ({seen})", file=sys.stderr, flush=True)
    n = 0
    backoff = 0.1
    try:
        while (cycles is None or n < cycles) and not (stop is not None and stop()):
            items = []
            try:
                items.append(watcher.queue.get(timeout=max(interval, 0.01)))
                time.sleep(BATCH_S)
            except queue.Empty:
                pass
            while True:
                try:
                    items.append(watcher.queue.get_nowait())
                except queue.Empty:
                    break
            sched.feed(items)
            try:
                c = sched.cycle()
                backoff = 0.1
            except Exception as exc:      # a cycle that broke is retried, with backoff
                print(f"alloc k8s: cycle {sched.number}: {type(exc).__name__}: {exc}; "
                      f"retried in {backoff:.1f} s", file=sys.stderr, flush=True)
                time.sleep(backoff)
                backoff = min(10.0, backoff * 2)
                continue
            n += 1
            if c.started or c.preempted or c.errors or c.problems or c.evicted:
                report(c)
    finally:
        watcher.stop()
    return 0


__all__ = ["BATCH_S", "k8s_main"]

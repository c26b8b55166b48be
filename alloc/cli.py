"""Command line: ``alloc solve | check | solvers | bench | simulate``.

Exit codes: 0 done (any status), 1 ``check`` found violations, 2 bad input
(the message names the file, the field and what was expected), 3 solver
failure.  A human summary goes to stderr; machine output to stdout or --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import InputError, SolverError, SolverUnavailable

EXIT_OK, EXIT_VIOLATIONS, EXIT_INPUT, EXIT_SOLVER = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, one line
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="alloc", description="Decide which deep-learning jobs run where on a GPU cluster.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    s = sub.add_parser("solve", help="place an instance's jobs; prints an allocation")
    s.add_argument("instance")
    s.add_argument("--solver", default="best-fit")
    s.add_argument("--objective", default="throughput")
    s.add_argument("--time-limit", type=float, default=None, metavar="S")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default=None, metavar="FILE")

    c = sub.add_parser("check", help="list the violations of an allocation; exit 1 if any")
    c.add_argument("instance")
    c.add_argument("allocation")

    sub.add_parser("solvers", help="registered solvers, available or why not")

    b = sub.add_parser("bench", help="benchmark solvers over instances (or: bench openb ...)")
    b.add_argument("instances", nargs="*", help="instance files (default: the shipped ones)")
    b.add_argument("--solvers", default=None, help="comma-separated solver names")
    b.add_argument("--objective", default="throughput")
    b.add_argument("--time-limit", type=float, default=10.0, metavar="S")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default=None, metavar="FILE", help="JSON lines (default: stdout)")
    b.add_argument("--no-progress", action="store_true")

    sub.add_parser("simulate", help="round-based cluster simulation: simulate CONFIG.json [--out R]",
                   add_help=False)
    sub.add_parser("shares", help="time shares of GPU types per job: shares FILE --policy NAME",
                   add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # sub-programs with their own parsers
    if argv[:2] == ["bench", "openb"]:
        from .experiments.openb import bench_main
        return bench_main(argv[2:])
    if argv[:1] == ["simulate"]:
        from .sim.cli import simulate_main
        return simulate_main(argv[1:])
    if argv[:1] == ["shares"]:
        from .shares.cli import shares_main
        return shares_main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.cmd](args)
    except InputError as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ValueError as exc:  # unknown solver / objective names
        print(f"alloc: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except (SolverError, SolverUnavailable) as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return EXIT_SOLVER


def cmd_solve(args) -> int:
    from .io import dump_allocation, load_instance
    from .solve import allocate
    inst = load_instance(args.instance)
    a = allocate(inst.cluster, inst.jobs, solver=args.solver, objective=args.objective,
                 time_limit=args.time_limit, seed=args.seed, instance=inst.name)
    text = dump_allocation(a)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    gap = "" if a.gap is None else f" gap {100 * a.gap:.2f}%"
    print(f"{inst.name}: {a.solver} {a.status.value}, {args.objective} {a.value:.4g}"
          f" (bound {a.bound if a.bound is None else format(a.bound, '.4g')}{gap}), "
          f"{len(a.placements)}/{len(inst.jobs)} jobs placed in {a.wall_time_s:.2f}s",
          file=sys.stderr)
    return EXIT_OK


def cmd_check(args) -> int:
    from .check import violations
    from .io import load_allocation, load_instance
    inst = load_instance(args.instance)
    a = load_allocation(args.allocation)
    bad = violations(inst.cluster, inst.jobs, a)
    for v in bad:
        print(v)
    print(f"{args.allocation}: {len(bad)} violation(s)", file=sys.stderr)
    return EXIT_VIOLATIONS if bad else EXIT_OK


def cmd_solvers(args) -> int:
    from .solve import solvers
    for name, info in solvers().items():
        why = info.unavailable_reason()
        kind = "exact" if info.exact else "heuristic"
        caps = ",".join(sorted(info.capabilities)) or "-"
        state = "available" if why is None else f"unavailable: {why}"
        print(f"{name:<18} {kind:<9} {state:<10}  [{caps}]  {info.description}")
    return EXIT_OK


def cmd_bench(args) -> int:
    from . import bench
    paths = [Path(p) for p in args.instances] or bench.default_instances()
    if not paths:
        raise InputError("bench: no instance files given and none shipped in instances/")
    names = args.solvers.split(",") if args.solvers else bench.default_solvers()
    out = open(args.out, "w") if args.out else sys.stdout
    try:
        rows = bench.run(paths, names, objective=args.objective, time_limit=args.time_limit,
                         seed=args.seed, out=out, progress=not args.no_progress)
    finally:
        if args.out:
            out.close()
    print(bench.table(rows), file=sys.stderr)
    return EXIT_OK


_COMMANDS = {"solve": cmd_solve, "check": cmd_check, "solvers": cmd_solvers, "bench": cmd_bench}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Command line: `alloc solve | check | validate | solvers | bench | simulate | ...`.

Exit codes: 0 done (any status), 1 `check` found violations, 2 bad input
(one line naming the file, the field and what was expected; an unsupported
capability and an unknown option are bad input too; `validate` lists every
problem), 3 solver failure.  A human summary goes to stderr; machine output
to stdout or `--out`; each `alloc.InputWarning` is one `alloc: warning:` line
on stderr.  `--solver` takes a solver's name or `module:function`.
Sub-programs with their own parsers (`bench openb`, `simulate`, `shares`,
`sweep`, `serve`, `slurm`, `k8s`) are dispatched by name and imported only when used.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from pathlib import Path
from typing import TextIO

from .errors import InputError, InputWarning, SolverError, SolverUnavailable

EXIT_OK, EXIT_VIOLATIONS, EXIT_INPUT, EXIT_SOLVER = 0, 1, 2, 3
#: Violations ``alloc check`` prints before a count of the rest (``--all``: every one).
CHECK_SHOWN = 5

#: Sub-programs with their own argument parsers: name -> "module:function".
SUBPROGRAMS = {
    "simulate": "alloc.sim.cli:simulate_main",
    "shares": "alloc.shares.cli:shares_main",
    "sweep": "alloc.sweep.cli:sweep_main",
    "serve": "alloc.service.cli:serve_main",
    "slurm": "alloc.adapters.slurm:slurm_main",
    "k8s": "alloc.adapters.kubernetes:k8s_main",
}

#: One line of ``alloc --help`` for each sub-program.
SUBPROGRAM_HELP = {
    "simulate": "simulate a workload under a stack of scheduling policies; summary, timeline",
    "shares": "Gavel's time-share policies over GPU types",
    "sweep": "grids of runs over seeds, resumable, on a pool or Ray",
    "serve": "HTTP/JSON service for scheduler loops (extra: service)",
    "k8s": "a scheduler for a Kubernetes API server's pods (extra: k8s)",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, one line
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _solve_args(s) -> None:
    s.add_argument("instance", help="instance file (alloc.instance/1 JSON) or a shipped "
                   "instance's name (tiny-grid, ...)")
    s.add_argument("--solver", default="best-fit", help="solver name or module:function "
                   "(default: best-fit; see `alloc solvers`)")
    s.add_argument("--objective", default=None,
                   help="throughput, gpus or jobs (default: throughput; naming one a solver "
                   "ignores warns)")
    s.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds for the whole call (default: 60)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    s.add_argument("--out", default=None, metavar="FILE",
                   help="write the allocation here (default: stdout)")
    s.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a solver option (repeatable; `alloc solvers --json` lists them)")
    s.add_argument("--max-moves", type=int, default=None, metavar="K",
                   help="running jobs that may move (default: none, or any number with "
                        "--move-cost)")
    s.add_argument("--move-cost", type=float, default=None, metavar="C",
                   help="objective units per move (default: none)")
    s.add_argument("--strict", action="store_true",
                   help="refuse jobs that cannot be placed on this cluster now (default: leave "
                        "them unplaced with a reason)")


def _bench_args(b) -> None:
    b.add_argument("instances", nargs="*", help="instance files (default: the shipped ones)")
    b.add_argument("--solvers", default=None, help="comma-separated solver names or "
                   "module:function (default: proportional, best-fit, synergy-tune, cpsat, milp)")
    b.add_argument("--objective", default=None,
                   help="objective (default: throughput, not asked of the solvers that ignore it)")
    b.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                   help="seconds per run (default: 10)")
    b.add_argument("--seeds", default="0", metavar="LIST",
                   help="seeds: integers and ranges, e.g. 0-4 or 1,3,7 (default: 0)")
    b.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="timed runs per seed (default: 1)")
    b.add_argument("--warmup", type=int, default=1, metavar="N",
                   help="untimed calls per solver before its first timed one (default: 1)")
    b.add_argument("--out", default=None, metavar="FILE", help="JSON lines (default: stdout)")
    b.add_argument("--no-progress", action="store_true",
                   help="no progress bar (default: shown when stderr is a terminal)")


def _parser() -> argparse.ArgumentParser:
    from . import __version__
    p = _Parser(prog="alloc", description="Decide which deep-learning jobs run where on a GPU cluster.",
                epilog="`alloc COMMAND --help` gives a command's options.  Input files may "
                       "also be named by a shipped name: `alloc solve tiny-grid`, "
                       "`alloc simulate simulate-small`, `alloc shares shares-small "
                       "--policy max-min`, `alloc sweep sweep-small`.")
    p.add_argument("--version", action="version", version=f"alloc {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _solve_args(sub.add_parser("solve", help="place an instance's jobs; prints an allocation"))
    c = sub.add_parser("check", help="list the violations of an allocation; exit 1 if any")
    c.add_argument("instance", help="instance file")
    c.add_argument("allocation", help="allocation file (alloc.allocation/1 JSON)")
    c.add_argument("--max-moves", type=int, default=0, metavar="K",
                   help="running jobs the call allowed to move (default: 0; -1: any)")
    c.add_argument("--all", action="store_true",
                   help=f"list every violation (default: the first {CHECK_SHOWN} and a count)")
    sv = sub.add_parser("solvers", help="registered solvers, available or why not")
    sv.add_argument("--json", action="store_true", help="machine-readable listing with options")
    po = sub.add_parser("policies", help="registered scheduling policies, one per line: KIND NAME")
    po.add_argument("--json", action="store_true",
                    help="machine-readable listing: kind, name, summary, needs, parameters")
    po.add_argument("--kind", default=None, help="one kind only (default: every kind)")
    v = sub.add_parser("validate", help="list every problem of instance files; exit 2 if any")
    v.add_argument("files", nargs="+", metavar="FILE", help="instance files (alloc.instance/1)")
    _bench_args(sub.add_parser(
        "bench", help="benchmark solvers over instances (or: bench openb ...)",
        description="Run solvers over instance files in this process, one run at a time, "
                    "with seeds, repeats and a warm-up; JSON lines (one row per run, the "
                    "schema `alloc sweep` writes too) and a table of medians and spreads. "
                    "For grids over many seeds on a process pool or a Ray cluster, resumable "
                    "and with 95 %% confidence intervals, use `alloc sweep CONFIG`.",
        epilog="Rows are explained field by field in docs/bench-rows.md. "
               "`alloc bench openb --help`: the FGD experiment on the openb traces."))
    for name in SUBPROGRAMS:
        sub.add_parser(name, help=SUBPROGRAM_HELP.get(name, f"`alloc {name} --help` for its options"),
                       add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["bench", "openb"]:
        from .experiments.openb import bench_main
        return bench_main(argv[2:])
    if argv[:1] and argv[0] in SUBPROGRAMS:
        return _subprogram(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.cmd](args)
    except (InputError, ValueError) as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except (SolverError, SolverUnavailable) as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return EXIT_SOLVER


def _subprogram(name: str, argv: list[str]) -> int:
    import importlib
    mod, _, fn = SUBPROGRAMS[name].partition(":")
    try:
        entry = getattr(importlib.import_module(mod), fn)
    except ModuleNotFoundError as exc:
        print(f"alloc {name}: unavailable ({exc.name} is not installed)", file=sys.stderr)
        return EXIT_INPUT
    return entry(argv)


def parse_options(solver: str, items: list[str]) -> dict:
    """``KEY=VALUE`` texts as the solver's declared option types."""
    from .options import parse_value
    from .registry import get_solver
    specs = {o.name: o for o in get_solver(solver).options}
    out = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key:
            raise InputError(f"--option: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(specs.get(key.strip()), text)
    return out


@contextlib.contextmanager
def warnings_to_stderr(source: str):
    """Print each `alloc.InputWarning` raised inside as one line on stderr,
    `alloc: warning: SOURCE: ...` (other warnings as Python shows them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        try:
            yield
        finally:
            seen = set()
            for w in caught:
                msg = str(w.message)
                if not issubclass(w.category, InputWarning):
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
                elif msg not in seen:
                    seen.add(msg)
                    print(f"alloc: warning: {source}: {msg}", file=sys.stderr)


def cmd_solve(args) -> int:
    """`alloc solve`: place an instance's jobs; print or write the allocation."""
    from .io import dump_allocation, load_instance, write_output
    from .registry import use
    from .solve import allocate
    inst = load_instance(args.instance)
    use(args.solver)
    opts = parse_options(args.solver, args.option)
    try:
        with warnings_to_stderr(args.instance):
            a = allocate(inst.cluster, inst.jobs, solver=args.solver, objective=args.objective,
                         time_limit=args.time_limit, seed=args.seed, instance=inst.name,
                         max_moves=args.max_moves, move_cost=args.move_cost,
                         strict=args.strict, **opts)
    except InputError as exc:      # what the instance asks of the solver: name the file
        raise InputError(exc.problems, args.instance) from None
    for jid, why in a.reasons.items():
        print(f"alloc: warning: {args.instance}: job {jid!r} cannot be placed now: {why}",
              file=sys.stderr)
    write_output(args.out, dump_allocation(a))
    gap = "" if a.gap is None else f" gap {100 * a.gap:.2f}%"
    live = f", {len(a.moved)} moved, {len(a.preempted)} preempted" if (a.moved or a.preempted) else ""
    print(f"{inst.name}: {a.solver} {a.status.value}, {a.objective} {a.value:.4g}"
          f" (bound {a.bound if a.bound is None else format(a.bound, '.4g')}{gap}), "
          f"{len(a.placements)}/{len(inst.jobs)} jobs placed{live} in {a.wall_time_s:.2f}s",
          file=sys.stderr)
    return EXIT_OK


def cmd_check(args) -> int:
    """``alloc check``: list an allocation's violations; exit 1 if any."""
    from .check import violations
    from .io import load_allocation, load_instance
    inst = load_instance(args.instance)
    a = load_allocation(args.allocation)
    bad = violations(inst.cluster, inst.jobs, a,
                     max_moves=None if args.max_moves < 0 else args.max_moves)
    shown = bad if args.all else bad[:CHECK_SHOWN]
    for v in shown:
        print(v)
    if len(shown) < len(bad):
        print(f"... and {len(bad) - len(shown)} more (--all lists every one)")
    made_for = f"; it was made for instance {a.instance!r}, not {inst.name!r}" \
        if bad and a.instance and a.instance != inst.name else ""
    print(f"{args.allocation}: {len(bad)} violation(s){made_for}", file=sys.stderr)
    return EXIT_VIOLATIONS if bad else EXIT_OK


def cmd_solvers(args) -> int:
    """``alloc solvers``: the registered solvers (``--json`` with their options)."""
    from .registry import solvers
    if args.json:
        print(json.dumps([info.to_dict() for info in solvers().values()], indent=1))
        return EXIT_OK
    for name, info in solvers().items():
        why = info.unavailable_reason()
        kind = "exact" if info.exact else "heuristic"
        caps = ",".join(sorted(info.capabilities)) or "-"
        state = "available" if why is None else f"unavailable: {why}"
        opts = ",".join(o.name for o in info.options)
        objs = ",".join(sorted(info.objectives)) or "none"
        print(f"{name:<16} {kind:<9} {state:<10} [{caps}] objectives: {objs}"
              + (f" options: {opts}" if opts else "") + f"  {info.description}"
              + (f" ({info.origin})" if info.origin else ""))
    return EXIT_OK


def cmd_policies(args) -> int:
    """``alloc policies``: every registered policy, ``KIND NAME`` a line
    (``--json``: a list of objects with ``kind``, ``name``, ``summary``)."""
    from .sched import policies
    infos = policies(args.kind)
    if args.json:
        print(json.dumps([p.to_dict() for p in infos], indent=1))
        return EXIT_OK
    for p in infos:
        print(f"{p.kind} {p.name}")
    return EXIT_OK


def cmd_bench(args) -> int:
    """`alloc bench`: solvers over instances, JSON lines and a table."""
    from . import bench
    from .sweep.config import parse_seeds
    paths = [Path(p) for p in args.instances] or bench.default_instances()
    if not paths:
        raise InputError("bench: no instance files given and none shipped in the package")
    names = [n.strip() for n in args.solvers.split(",")] if args.solvers \
        else bench.default_solvers()
    seeds = parse_seeds(args.seeds, "--seeds")
    progress = not args.no_progress and sys.stderr.isatty()
    out: TextIO
    if args.out:
        try:
            out = open(args.out, "w")
        except OSError as exc:
            raise InputError(f"{args.out}: cannot write ({exc.strerror})") from None
    else:
        out = sys.stdout
    try:
        rows = bench.run(paths, names, objective=args.objective, time_limit=args.time_limit,
                         seeds=seeds, repeats=args.repeats, warmup=args.warmup, out=out,
                         progress=progress)
    finally:
        if args.out:
            out.close()
    print(bench.table(rows), file=sys.stderr)
    for msg in dict.fromkeys(f"{r['instance']}: {w}" for r in rows for w in r.get("warnings", ())):
        print(f"alloc: warning: {msg}", file=sys.stderr)
    return EXIT_OK if any(bench.has_result(r) for r in rows) or not rows else EXIT_SOLVER


def cmd_validate(args) -> int:
    """`alloc validate`: every problem of each file (stdout), a summary line
    per file and each warning (stderr); exit 2 if any file has a problem."""
    from .report import instance_report
    bad = 0
    for path in args.files:
        problems, notes = instance_report(path)
        for p in problems:
            print(f"{path}: {p}")
        for w in notes["warnings"]:
            print(f"alloc: warning: {path}: {w}", file=sys.stderr)
        bad += bool(problems)
        print(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}"
              + (f"; {notes['summary']}" if not problems else ""), file=sys.stderr)
    return EXIT_INPUT if bad else EXIT_OK


_COMMANDS = {"solve": cmd_solve, "check": cmd_check, "solvers": cmd_solvers, "bench": cmd_bench,
             "validate": cmd_validate, "policies": cmd_policies}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

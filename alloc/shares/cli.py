"""``alloc shares FILE --policy NAME [--time-limit S] [--seed N] [--option K=V] [--out FILE]``.

Exit codes: 0 done (any status), 2 bad input (one line naming the file, the
field and what was expected), 3 solver failure.  The result
(``alloc.shares-result/1``) goes to stdout or ``--out``; a one-line summary
to stderr, after one warning line per job that cannot run on the cluster
(it stays in the result with no share and its reason under ``unserved``).
"""
from __future__ import annotations

import argparse
import sys

from ..errors import InputError, SolverError, SolverUnavailable

EXIT_OK, EXIT_INPUT, EXIT_SOLVER = 0, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, one line
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from .policies import POLICIES
    p = _Parser(prog="alloc shares",
                description="Time shares of GPU types for each job (Gavel-style policies).")
    p.add_argument("file", help="an alloc.shares/1 JSON file")
    p.add_argument("--policy", required=True, metavar="NAME",
                   help=f"one of: {', '.join(POLICIES)} (required)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds for the whole solve, every LP and round included (default: 60)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of randomised policies such as gandiva (default: 0)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="policy option, repeatable, e.g. space_sharing=false or within=fifo "
                        "(default: none)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the result here (default: stdout)")
    return p


def _parse_options(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--option: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def shares_main(argv: list[str] | None = None) -> int:
    """Entry point of ``alloc shares`` (see the module notes); returns the exit code."""
    from .io import dump_shares_result, load_shares
    from .policies import solve_shares
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        problem = load_shares(args.file)
        result = solve_shares(problem, args.policy, time_limit=args.time_limit, seed=args.seed,
                              **_parse_options(args.option))
    except InputError as exc:
        msg = str(exc)
        print(f"alloc shares: {msg if msg.startswith(args.file) else f'{args.file}: {msg}'}",
              file=sys.stderr)
        return EXIT_INPUT
    except (SolverError, SolverUnavailable) as exc:
        print(f"alloc shares: {args.file}: {exc}", file=sys.stderr)
        return EXIT_SOLVER
    text = dump_shares_result(result)
    try:
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    except OSError as exc:
        print(f"alloc shares: --out {args.out}: cannot write ({type(exc).__name__})", file=sys.stderr)
        return EXIT_INPUT
    for jid, why in result.unserved.items():
        print(f"alloc shares: warning: {args.file}: job {jid!r} gets no share, it cannot run on "
              f"this cluster: {why}", file=sys.stderr)
    obj = "-" if result.objective is None else f"{result.objective:.6g}"
    bound = "-" if result.bound is None else f"{result.bound:.6g}"
    print(f"{args.file}: {args.policy} {result.status.value}, objective {obj} (bound {bound}), "
          f"{len(result.job_ids)} jobs in {result.wall_time_s:.3f}s", file=sys.stderr)
    return EXIT_OK


__all__ = ["shares_main"]

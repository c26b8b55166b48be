"""``alloc sweep CONFIG``: run a sweep config's grid, stream the rows, resume,
summarise.

Exit codes: 0 done, 2 bad input (config, flags; one line naming the file, the
field and what was expected), 3 every run of the sweep failed, 130
interrupted (the rows already written stay; run the same command to resume).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import InputError
from .config import SweepConfig, load_config
from .executors import make_executor
from .grid import Run, build_runs
from .store import JsonlStore, pyarrow_available, write_parquet
from .summary import markdown, plot, summarize, table

EXIT_OK, EXIT_INPUT, EXIT_ALL_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 130


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did.

    Attributes
    ----------
    rows : tuple of dict
        Every recorded row of the grid, in grid order (recorded earlier or by
        this call).
    ran : int
        Runs this call ran.
    skipped : int
        Runs skipped because the output file already recorded them.
    wall_s : float
        Wall time of this call, in seconds.
    failed : int
        Rows whose run raised an error (a non-empty ``error`` field).
    refused : int
        Allocation rows whose solver could not take the instance.
    """
    rows: tuple[dict, ...]
    ran: int
    skipped: int
    wall_s: float
    failed: int = field(default=0)
    refused: int = field(default=0)

    @property
    def all_failed(self) -> bool:
        """True when the grid has rows and none of them has a result: each
        failed or was refused (exit code 3)."""
        return bool(self.rows) and self.failed + self.refused == len(self.rows)


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc="runs", unit="run", file=sys.stderr, dynamic_ncols=True)


def run_sweep(cfg: SweepConfig, out, *, executor=None, jobs: int | None = None,
              progress: bool = False, runs: Sequence[Run] | None = None) -> SweepResult:
    """Run every run of ``cfg`` not yet recorded in the JSON-lines file ``out``.

    Parameters
    ----------
    cfg : SweepConfig
        A validated config ([`load_config`][alloc.sweep.config.load_config]).
    out : str or Path
        JSON-lines file; rows are appended (one flushed line each) as runs
        finish, and runs already recorded there are skipped (resume).
    executor : object, optional
        Anything with ``map(runs) -> iterator of rows``
        (`PoolExecutor`, `RayExecutor`);
        default a local pool of ``jobs`` processes.
    jobs : int, optional
        Pool size when no executor is given (default: the CPU count).
    progress : bool
        Show a tqdm progress bar on stderr.
    runs : sequence of Run, optional
        The grid, when already built (default ``build_runs(cfg)``).

    Returns
    -------
    SweepResult
        The rows of the whole grid in grid order (recorded earlier or now),
        the counts run and skipped, and this call's wall seconds.
    """
    runs = list(build_runs(cfg) if runs is None else runs)
    executor = executor or make_executor(None, jobs)
    t0 = time.perf_counter()
    with JsonlStore(out) as store:
        done = store.done()
        todo = [r for r in runs if r.key not in done]
        bar = _progress(len(todo), progress)
        try:
            for row in executor.map(todo):
                store.append(row)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        rows = tuple(store.rows[r.key] for r in runs if r.key in store.rows)
    failed = sum(1 for r in rows if r.get("error"))
    refused = sum(1 for r in rows if r.get("status") == "refused")
    return SweepResult(rows, len(todo), len(runs) - len(todo), time.perf_counter() - t0, failed,
                       refused)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, one line
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    ncpu = os.cpu_count() or 1
    ap = _Parser(
        prog="alloc sweep",
        description="Run a sweep config (alloc.sweep/1): allocation, simulation and openb "
                    "runs over seeds, on a local process pool or a Ray cluster; resumable.")
    ap.add_argument("config", help="sweep config (JSON, format alloc.sweep/1)")
    ap.add_argument("--out", metavar="FILE",
                    help="JSON-lines results, one row per finished run; an existing file is "
                         "resumed (default: sweep-<config file stem>.jsonl in the current folder; "
                         "sweep-small.json gives sweep-small.jsonl)")
    ap.add_argument("--parquet", metavar="FILE",
                    help="also write every row of the sweep to this Parquet file at the end "
                         "(needs pyarrow; default: none)")
    ap.add_argument("--jobs", type=int, metavar="N",
                    help=f"parallel runs (default: the CPU count, {ncpu}; with --ray: "
                         f"no limit, Ray queues the tasks)")
    ap.add_argument("--ray", metavar="auto|ADDRESS",
                    help="run on Ray: 'auto' (an existing local cluster or RAY_ADDRESS, else a "
                         "new local one) or a cluster address (default: local process pool)")
    ap.add_argument("--plot", metavar="FILE",
                    help="PNG of the main metric, mean ± 95 %% CI (needs matplotlib; "
                         "default: none)")
    ap.add_argument("--md", metavar="FILE",
                    help="write the summary as Markdown tables (a row per parameter set, a "
                         "column per solver/allocator/policy), with the command and the wall "
                         "time (default: none)")
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bar (default: a bar when stderr is a terminal)")
    return ap


def _check_flags(args) -> None:
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs: expected an integer >= 1, got {args.jobs}")
    if args.parquet and not pyarrow_available():
        raise InputError("--parquet: pyarrow is not installed; install it with "
                         "pip install pyarrow")


def _report(cfg: SweepConfig, res: SweepResult, args, argv: list[str]) -> None:
    print(table(summarize(res.rows)), file=sys.stderr)
    errs = [r for r in res.rows if r.get("error")]
    if errs:
        print(f"{len(errs)} run(s) failed; first: {errs[0]['error']}", file=sys.stderr)
    refused = [r for r in res.rows if r.get("status") == "refused"]
    if refused:
        print(f"{len(refused)} run(s) refused; first: {refused[0]['reason']}", file=sys.stderr)
    print(f"sweep {cfg.name}: {len(res.rows)} runs, {res.ran} run now, {res.skipped} already "
          f"recorded, {res.wall_s:.1f} s wall", file=sys.stderr)
    if args.parquet:
        n = write_parquet(res.rows, args.parquet)
        print(f"{args.parquet}: {n} rows", file=sys.stderr)
    if args.md:
        write_markdown(cfg, res, args.md, ["alloc", "sweep", *argv])
    if args.plot:
        if not plot(summarize(res.rows), args.plot):
            print("matplotlib is not installed: plot skipped", file=sys.stderr)


def write_markdown(cfg: SweepConfig, res: SweepResult, path, command=None) -> None:
    """The summary as Markdown: title, description, command, what ran and how
    long it took, then `markdown` tables."""
    import platform
    head = [f"# Sweep `{cfg.name}`", ""]
    if cfg.description:
        head += [cfg.description, ""]
    if command:
        head += ["```", " ".join(command), "```", ""]
    run_s = sum(r.get("run_s") or 0.0 for r in res.rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    head += [f"{len(res.rows)} runs ({res.failed} failed); this call ran {res.ran} and skipped "
             f"{res.skipped} already recorded, in {res.wall_s:.0f} s wall; the runs' own "
             f"times add up to {run_s:.0f} s; {os.cpu_count()} CPUs, load average "
             f"{load:.1f} at the end; Python {platform.python_version()}.", ""]
    capped = [r for r in res.rows if r.get("unfinished")]
    if capped:
        head += [f"{len(capped)} simulation run(s) stopped at their time cap with measured jobs "
                 f"unfinished; their mean JCT is over the finished jobs only (a lower bound).",
                 ""]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(head) + "\n" + markdown(summarize(res.rows)))


def default_out(config) -> str:
    """The default results file: ``sweep-<config stem>.jsonl`` in the current
    folder, without doubling a stem that already starts with ``sweep``.

    Examples
    --------
    >>> default_out("grids/openb.json"), default_out("sweep-small.json")
    ('sweep-openb.jsonl', 'sweep-small.jsonl')
    """
    stem = Path(config).stem
    return f"{stem if stem.lower().startswith('sweep') else f'sweep-{stem}'}.jsonl"


def sweep_main(argv: list[str]) -> int:
    """Entry point of ``alloc sweep``.

    Parameters
    ----------
    argv : list of str
        The arguments after ``sweep`` (``CONFIG [--out F] ...``).

    Returns
    -------
    int
        0 done, 2 bad input (one line on stderr naming the file, the field and
        what was expected), 3 every run failed, 130 interrupted.
    """
    args = _parser().parse_args(argv)
    try:
        _check_flags(args)
        cfg = load_config(args.config)
        out = args.out or default_out(args.config)
        executor = make_executor(args.ray, args.jobs)
        runs = build_runs(cfg)
        print(f"sweep {cfg.name}: {len(runs)} runs on {executor.describe()}, results in {out}",
              file=sys.stderr)
        show = not args.no_progress and sys.stderr.isatty()
        res = run_sweep(cfg, out, executor=executor, progress=show, runs=runs)
    except InputError as exc:
        print(f"alloc sweep: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("alloc sweep: interrupted; finished runs are recorded, run the same command "
              "to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    _report(cfg, res, args, argv)
    return EXIT_ALL_FAILED if res.all_failed else EXIT_OK

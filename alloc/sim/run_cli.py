"""``alloc simulate WORKLOAD --servers N --gpus-per-server G --order NAME
--placement NAME [...] --out DIR``: one run of the simulator from the
command line.

The cluster is ``N`` identical servers of ``G`` GPUs of type ``T`` (CPU and
memory per server default to Synergy's GPU-proportional share: 3000
milli-cores and 64000 MiB per GPU), or with ``--cluster FILE`` the cluster
of an instance file (``alloc.instance/1``, or a shipped instance's name; its
jobs are not simulated).  The workload is any format of
`alloc.sim.workloads`.  Each slot takes a policy's name from the one
registry (``alloc policies``), with parameters as ``NAME:KEY=VALUE,...``
(``--order las:preemptive=false``); a policy a plug-in registers under the
entry-point group ``alloc.policies`` is usable here with no change to alloc.
The progress model is a built-in (``alone``, ``synergy``, ``gavel``,
``hold``, with parameters as ``gavel:reference=k80``) or any factory as
``module:factory[:KEY=VALUE,...]`` (``alloc.sched.salus.sim:SalusProgress:
policy=srtf``), called with the parameters (and ``restart_s`` and
``checkpoint`` when they are given).

Writes ``DIR/summary.json``, ``DIR/timeline.jsonl`` (``--parquet``:
``DIR/timeline.parquet`` too) and, with ``--plots``, the plots of
`alloc.sim.plots`; prints a summary table.  Bad input (an unknown policy, a
policy of another kind, a bad workload row, a plug-in that raises) is one
line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from .workloads import FORMATS

#: Default CPU (milli-cores) and memory (MiB) per GPU of a server.
CPU_PER_GPU, MEM_PER_GPU = 3000, 64000
PROGRESS = ("alone", "synergy", "gavel", "hold")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input: exit 2, one line
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    ap = _Parser(prog="alloc simulate",
                 description="simulate a workload under a stack of scheduling policies")
    ap.add_argument("workload", help="workload file (plain CSV id,arrival_s,gpus,duration_s"
                    "[,model]; Synergy, Philly, Tiresias, Helios or Gavel traces)")
    ap.add_argument("--format", default="auto", choices=("auto",) + FORMATS,
                    help="workload format (default: auto, from the name and header)")
    ap.add_argument("--servers", type=int, default=None, metavar="N",
                    help="servers (or --cluster)")
    ap.add_argument("--gpus-per-server", type=int, default=None, metavar="G",
                    help="GPUs per server (or --cluster)")
    ap.add_argument("--cluster", default=None, metavar="FILE",
                    help="the cluster of an instance file (or a shipped instance's name) in "
                    "place of --servers and --gpus-per-server")
    ap.add_argument("--gpu-type", default="V100", metavar="T", help="GPU type (default: V100)")
    ap.add_argument("--cpu-per-server", type=int, default=None, metavar="MILLI",
                    help=f"milli-cores per server (default: {CPU_PER_GPU} per GPU)")
    ap.add_argument("--mem-per-server", type=int, default=None, metavar="MIB",
                    help=f"MiB per server (default: {MEM_PER_GPU} per GPU)")
    ap.add_argument("--order", required=True, metavar="NAME",
                    help="order policy, NAME[:KEY=VALUE,...] (see `alloc policies`)")
    ap.add_argument("--placement", required=True, metavar="NAME",
                    help="placement policy: a solver, NAME[:OPTION=VALUE,...]")
    for slot in ("admission", "sizing", "shares"):
        ap.add_argument(f"--{slot}", default=None, metavar="NAME",
                        help=f"{slot} policy (default: none)")
    ap.add_argument("--mechanism", action="append", default=[], metavar="NAME",
                    help="mechanism policy (repeatable; default: none)")
    ap.add_argument("--progress", default="alone", metavar="SPEC",
                    help="progress model: alone, synergy, gavel or hold "
                    "(NAME[:KEY=VALUE,...]), or a factory module:factory[:KEY=VALUE,...] "
                    "(default: alone: each job at its duration_s)")
    ap.add_argument("--throughputs", default=None, metavar="FILE",
                    help="Gavel's throughputs for --progress gavel (default: the shared data)")
    ap.add_argument("--restart-s", type=float, default=0.0, metavar="S",
                    help="seconds without progress after a restart (default: 0)")
    ap.add_argument("--checkpoint", type=float, default=None, metavar="UNITS",
                    help="progress saved every UNITS (default: all of it is kept)")
    ap.add_argument("--round", type=float, default=None, dest="round_s", metavar="S",
                    help="seconds between rounds (default: event-driven)")
    ap.add_argument("--seed", type=int, default=0, metavar="K", help="seed (default: 0)")
    ap.add_argument("--window", type=int, nargs=2, default=None, metavar=("FIRST", "LAST"),
                    help="measure only these jobs (positions by arrival, both included)")
    ap.add_argument("--max-time", type=float, default=None, metavar="S",
                    help="stop at this simulated time (default: when every job is done)")
    ap.add_argument("--repack", action="store_true",
                    help="re-place every job from scratch each round (Synergy, Gavel)")
    ap.add_argument("--candidates", default="fit", choices=("fit", "all"),
                    help="jobs a round offers the solver (default: fit: the ranked jobs "
                    "whose GPUs fit the cluster's)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="seconds per round's solve (default: 60)")
    ap.add_argument("--parquet", action="store_true",
                    help="also write timeline.parquet (needs pyarrow)")
    ap.add_argument("--plots", action="store_true",
                    help="write the plots (the extra 'plot': matplotlib)")
    ap.add_argument("--out", required=True, metavar="DIR", help="output directory")
    return ap


def cluster(args: Any):
    """The cluster of the arguments: ``--cluster FILE``, or ``--servers`` and
    ``--gpus-per-server``."""
    from ..model import Cluster, Server
    if args.cluster is not None:
        if args.servers is not None or args.gpus_per_server is not None:
            raise InputError("--cluster: give either --cluster or --servers and "
                             "--gpus-per-server, not both")
        from ..io import load_instance
        return load_instance(args.cluster).cluster
    if args.servers is None or args.gpus_per_server is None:
        raise InputError("--servers and --gpus-per-server: expected both (or --cluster FILE)")
    if args.servers < 1 or args.gpus_per_server < 1:
        raise InputError("--servers and --gpus-per-server: expected integers >= 1")
    g = args.gpus_per_server
    cpu = args.cpu_per_server if args.cpu_per_server is not None else CPU_PER_GPU * g
    mem = args.mem_per_server if args.mem_per_server is not None else MEM_PER_GPU * g
    if cpu < 1 or mem < 1:
        raise InputError("--cpu-per-server and --mem-per-server: expected integers >= 1")
    return Cluster(tuple(Server(f"s{i:03d}", cpu=cpu, mem=mem, gpus=g, gpu_type=args.gpu_type)
                         for i in range(args.servers)))


def progress_model(args: Any, cl: Any):
    """The progress model of the arguments (see the module notes).

    Raises
    ------
    InputError
        One line naming ``--progress``: an unknown name, a factory that
        cannot be loaded, bad parameters, a factory that raises or builds
        something that is not a progress model.
    """
    from .progress import GavelTable, SynergyProfiles, builtin
    spec = args.progress
    name, _, rest = spec.partition(":")
    kw: dict[str, Any] = {}
    if args.restart_s:
        kw["restart_s"] = args.restart_s
    if args.checkpoint is not None:
        kw["checkpoint"] = args.checkpoint
    if name in PROGRESS:
        kw.update(_params(f"--progress {name}", rest))
        try:
            if name == "synergy":
                gs = next((s for s in cl.servers if s.gpus), cl.servers[0])
                return SynergyProfiles(gs.cpu // max(gs.gpus, 1), gs.mem // max(gs.gpus, 1),
                                       **kw)
            if name == "gavel":
                from .gavel import ThroughputTable
                types = tuple(dict.fromkeys(s.gpu_type for s in cl.servers if s.gpus))
                return GavelTable(ThroughputTable.load(args.throughputs, types=types), **kw)
            return builtin(name, **kw)          # alone, hold
        except TypeError as exc:
            raise InputError(f"--progress {spec}: {exc}") from None
    factory, _, params_text = rest.partition(":")
    if not name or not factory:
        raise InputError(f"--progress: expected one of {', '.join(PROGRESS)} or "
                         f"module:factory[:KEY=VALUE,...], got {spec!r}")
    from ..sched.registry import _load
    fn = _load(f"{name}:{factory}", f"--progress {name}:{factory}")
    params = _params(f"--progress {name}:{factory}", params_text)
    try:
        model = fn(**{**kw, **params})
    except InputError as exc:
        raise InputError(f"--progress {name}:{factory}: {exc}") from None
    except Exception as exc:  # a plug-in that raises: its name, never a traceback
        raise InputError(f"--progress {name}:{factory} raised {type(exc).__name__}: "
                         f"{exc}") from None
    if not callable(getattr(model, "rate", None)):
        raise InputError(f"--progress {name}:{factory}: expected a progress model (with "
                         f"rate(job, run)), got {type(model).__name__}")
    return model


def _models(prog: Any, spec: str) -> Any:
    """The model names a workload row may give: Gavel's table's, the
    progress model's own ``models`` where it declares them, alloc's profiles
    for the other built-ins, any name for a factory's model that declares
    none (it checks its jobs itself)."""
    from .progress import GavelTable
    from .workloads import ANY_MODEL
    if isinstance(prog, GavelTable):
        return list(prog.table.models)
    declared = getattr(prog, "models", None)
    if declared is not None:
        return list(declared)
    return None if spec.partition(":")[0] in PROGRESS else ANY_MODEL


def _params(label: str, text: str) -> dict[str, Any]:
    """``KEY=VALUE,...`` read as `alloc.sched.views.parse_spec` reads them;
    an error names ``label``."""
    from ..sched.views import parse_spec
    try:
        return parse_spec("_:" + text)[1]
    except InputError as exc:
        raise InputError(f"{label}{str(exc)[1:]}") from None


def run_main(argv: list[str]) -> int:
    """Run the command; returns the exit code."""
    args = parser().parse_args(argv)
    try:
        res = _run(args)
    except InputError as exc:
        print(f"alloc simulate: {exc}", file=sys.stderr)
        return 2
    print(table(res.summary()))
    return 0


def _run(args: Any):
    from .core import simulate
    from .workloads import read_workload
    cl = cluster(args)
    prog = progress_model(args, cl)
    models = _models(prog, args.progress)
    w = read_workload(args.workload, args.format, models=models, max_gpus=cl.total_gpus)
    if not w.jobs:
        raise InputError(f"{args.workload}: no jobs to simulate")
    if w.skipped:
        print("alloc simulate: left out " + ", ".join(f"{n} ({why})" for why, n in
                                                       w.skipped.items()), file=sys.stderr)
    res = simulate(cl, w.jobs, order=args.order, placement=args.placement,
                   admission=args.admission, sizing=args.sizing, shares=args.shares,
                   mechanism=args.mechanism or None, progress=prog, round_s=args.round_s,
                   seed=args.seed, window=tuple(args.window) if args.window else None,
                   max_time_s=args.max_time, repack=args.repack, candidates=args.candidates,
                   time_limit=args.time_limit, name=Path(args.workload).stem)
    res.write(args.out, parquet=args.parquet, plots=args.plots)
    return res


def table(s: dict) -> str:
    """A run's summary as a two-column table."""
    rows = [("jobs", f"{s['jobs']}" + (f" ({s['unfinished']} unfinished)"
                                        if s["unfinished"] else "")
                      + (f" ({s['dropped']} dropped)" if s.get("dropped") else "")),
            ("avg JCT", _dur(s["avg_jct_s"])), ("p99 JCT", _dur(s["p99_jct_s"])),
            ("makespan", _dur(s["makespan_s"])), ("queueing delay", _dur(s["queue_s"])),
            ("utilisation", f"{100 * s['utilisation']:.1f} %"),
            ("preemptions", str(s["preemptions"])), ("restarts", str(s["restarts"])),
            ("rho avg / max", "-" if s["rho_avg"] is None else
             f"{s['rho_avg']:.2f} / {s['rho_max']:.2f}"),
            ("unfairness (rho > 1)", "-" if s["unfairness"] is None else
             f"{100 * s['unfairness']:.1f} %"),
            ("rounds / steps", f"{s['rounds']} / {s['steps']}"),
            ("wall", f"{s['wall_time_s']:.2f} s")]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


def _dur(x: float) -> str:
    if x >= 3600:
        return f"{x / 3600:.2f} h"
    if x >= 60:
        return f"{x / 60:.2f} min"
    return f"{x:.1f} s"


__all__ = ["parser", "run_main", "table"]

"""Benchmark harness: run solvers over instance files, one JSON line per run,
and a table (solver, status, value, bound, gap, seconds)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterable, Sequence

from .errors import AllocError, InputError, SolverUnavailable
from .io import load_instance, plain_numbers
from .shipped import data_dir
from .solve import allocate, get_solver, solvers

#: What ``alloc bench`` runs when given no instance: the shipped instances
#: small enough for a quick look, with every available solver.
DEFAULT_INSTANCES = ("tiny-*.json", "synergy-16x8.json")


def shipped_instances_dir() -> Path:
    """The instances shipped inside the package (`alloc/data/instances/`)."""
    return data_dir("instances")


def default_instances() -> list[Path]:
    """The shipped instances alloc bench runs when given none."""
    d = shipped_instances_dir()
    out: list[Path] = []
    for pat in DEFAULT_INSTANCES:
        out.extend(sorted(d.glob(pat)))
    return out


def default_solvers() -> list[str]:
    """The available solvers alloc bench runs by default."""
    reg = solvers()
    return [n for n in ("proportional", "best-fit", "synergy-tune", "cpsat", "milp")
            if n in reg and reg[n].available]


def run(instances: Sequence[Path], solver_names: Sequence[str], *, objective: str = "throughput",
        time_limit: float | None = 10.0, seed: int = 0, out=None, progress: bool = True,
        ) -> list[dict]:
    """Run every solver on every instance; returns the rows (also written as
    JSON lines to ``out`` when given)."""
    for name in solver_names:
        get_solver(name)  # unknown names fail before any work
    loaded = [(p, load_instance(p)) for p in instances]
    pairs = [(p, inst, s) for p, inst in loaded for s in solver_names]
    bar = _progress(len(pairs), progress)
    rows = []
    for path, inst, name in pairs:
        if bar is not None:
            bar.set_description(f"{inst.name}:{name}")
        row = {"instance": inst.name, "file": str(path), "solver": name, "objective": objective,
               "servers": len(inst.cluster.servers), "jobs": len(inst.jobs),
               "time_limit": time_limit}
        try:
            a = allocate(inst.cluster, inst.jobs, solver=name, objective=objective,
                         time_limit=time_limit, seed=seed, instance=inst.name)
        except SolverUnavailable as exc:
            row.update(status="unavailable", error=str(exc))
        except InputError:
            raise
        except AllocError as exc:
            row.update(status="error", error=str(exc))
        else:
            row.update(status=a.status.value, value=a.value, bound=a.bound, gap=a.gap,
                       seconds=round(a.wall_time_s, 3), placed=len(a.placements),
                       known_optimum=inst.meta.get("known_optimum", {}).get(objective))
            for k in ("warm_start", "lp_bound"):
                if k in a.stats:
                    row[k] = a.stats[k]
        rows.append(row)
        if out is not None:
            out.write(json.dumps(plain_numbers(row)) + "\n")
            out.flush()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return rows


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, file=sys.stderr, leave=False, unit="run")


#: Solvers that place by size and never look at the objective: how they choose.
OBJECTIVE_BLIND = {
    "proportional": "jobs in order, first fit, each job exactly its request (Synergy's baseline)",
    "best-fit": "largest jobs first, each on the server left fullest, exactly its request",
}


def notes(rows: Iterable[dict]) -> list[str]:
    """Lines printed under the table: what an objective-blind solver's value means."""
    rows = list(rows)
    blind = [s for s in OBJECTIVE_BLIND if any(r["solver"] == s for r in rows)]
    if not blind:
        return []
    objective = rows[0].get("objective", "throughput")
    out = [f"note: {' and '.join(blind)} ignore the objective ({objective}):"]
    out += [f"  {s}: {OBJECTIVE_BLIND[s]}" for s in blind]
    if objective == "throughput":
        out.append("  under throughput each placed job counts about its speed, so a placement "
                   "of a few large jobs scores low;")
        out.append("  the other solvers choose jobs (and CPU/memory) for the objective.")
    return out


def fmt(v, spec: str) -> str:
    """A number formatted by spec, or a right-aligned dash for None."""
    width = int(spec.split(".")[0]) if spec[0].isdigit() else 0
    return "-".rjust(width) if v is None else format(v, spec)


def table(rows: Iterable[dict]) -> str:
    """The runs as a text table (solver, status, value, bound, gap, seconds)."""
    rows = list(rows)
    head = f"{'instance':<22} {'solver':<16} {'status':<11} {'value':>11} {'bound':>11} {'gap%':>7} {'seconds':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        gap = r.get("gap")
        lines.append(f"{r['instance'][:22]:<22} {r['solver'][:16]:<16} {r['status']:<11} "
                     f"{fmt(r.get('value'), '11.3f')} {fmt(r.get('bound'), '11.3f')} "
                     f"{fmt(None if gap is None else 100 * gap, '7.2f')} "
                     f"{fmt(r.get('seconds'), '8.2f')}")
    return "\n".join(lines + notes(rows))

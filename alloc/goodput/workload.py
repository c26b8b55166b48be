r"""The two artifacts' workloads and clusters.

A workload CSV (the Pollux and Sia simulators' format) has one row per job:
``name, time, application, num_replicas, batch_size`` -- its id, arrival
(s), model, and the *TunedJobs* GPU count and total batch the baselines use
(columns in any order; others ignored).  Every cell is checked: a missing
column, a cell that is not a number, a model without traces is an
`InputError` naming the file, the row and the column.

Examples
--------
>>> from alloc.goodput.workload import pollux_cluster, read_workload, shipped_workload
>>> jobs = read_workload(shipped_workload("workload-6"))
>>> len(jobs), jobs[0].id, jobs[0].model, dict(jobs[0].extra)
(160, 'cifar10-0', 'cifar10', {'num_replicas': 6, 'batch_size': 2048})
>>> pollux_cluster().total_gpus
64
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import InputError
from ..model import Cluster, Server
from .traces import SPECS, read_columns

#: The columns of a workload file.
COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


def read_workload(path: str | Path, models: Iterable[str] | None = None) -> list:
    """The jobs of a workload CSV as `alloc.sim.WorkloadJob`\\ s, by arrival.

    Parameters
    ----------
    path : path
    models : iterable of str, optional
        The models the run has traces for (default: the six of both artifacts).

    Raises
    ------
    InputError
        One line naming the file, the row and the column.
    """
    from ..sim.jobs import WorkloadJob
    p = Path(path)
    cols = read_columns(p, COLUMNS, text=("name", "application"))
    known = set(models) if models is not None else set(SPECS)
    out = []
    for r in range(len(cols["name"])):
        row = r + 1
        name, app = str(cols["name"][r]), str(cols["application"][r])
        if app not in known:
            raise InputError(f"{p.name}: row {row}: column 'application': unknown model "
                             f"{app!r}; expected one of {', '.join(sorted(known))}")
        t = float(cols["time"][r])
        k, b = cols["num_replicas"][r], cols["batch_size"][r]
        for col, v, lo in (("time", t, 0), ("num_replicas", k, 1), ("batch_size", b, 1)):
            if v < lo or (col != "time" and v != int(v)):
                raise InputError(f"{p.name}: row {row}: column {col!r}: expected "
                                 f"{'a number' if col == 'time' else 'an integer'} >= {lo}, "
                                 f"got {v:g}")
        out.append((t, r, WorkloadJob(name, t, int(k), model=app,
                                      extra={"num_replicas": int(k), "batch_size": int(b)})))
    seen = set()
    for _, r, j in out:
        if j.id in seen:
            raise InputError(f"{p.name}: row {r + 1}: column 'name': duplicate job {j.id!r}")
        seen.add(j.id)
    return [j for _, _, j in sorted(out, key=lambda x: (x[0], x[1]))]


def shipped_workload(name: str) -> Path:
    """A workload shipped with alloc (the Pollux artifact's): ``workload-6``,
    ``workloads-2.0/workload-3`` ..."""
    from .traces import shipped_root
    base = shipped_root().parent
    rel = name if "/" in name else f"workloads/{name}"
    p = base / (rel if rel.endswith(".csv") else rel + ".csv")
    if not p.is_file():
        raise InputError(f"workload {name!r}: not shipped; expected e.g. workload-6 or "
                         f"workloads-2.0/workload-3")
    return p


def pollux_cluster(nodes: int = 16, gpus: int = 4) -> Cluster:
    """The Pollux simulator's cluster: ``nodes`` x ``gpus`` T4 GPUs."""
    return Cluster(tuple(Server(f"n{i:02d}", cpu=48000, mem=192000, gpus=gpus, gpu_type="T4")
                         for i in range(nodes)))


#: The Sia simulator's cluster: (GPU type, nodes, GPUs per node).
SIA_CLUSTER = (("T4", 6, 4), ("A100", 2, 8), ("RTX2080Ti", 3, 8))


def sia_cluster() -> Cluster:
    """The Sia simulator's heterogeneous cluster (64 GPUs)."""
    servers = []
    for t, n, g in SIA_CLUSTER:
        servers += [Server(f"{t.lower()}-{i}", cpu=12000 * g, mem=48000 * g, gpus=g, gpu_type=t)
                    for i in range(n)]
    return Cluster(tuple(servers))


__all__ = ["COLUMNS", "SIA_CLUSTER", "pollux_cluster", "read_workload", "shipped_workload",
           "sia_cluster"]

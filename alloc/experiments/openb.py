"""The Alibaba openb traces and the FGD experiment (Weng et al., ATC'23).

* Loaders: node CSV (``sn, cpu_milli, memory_mib, gpu, model``) and pod CSV
  (``name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec]``) into numpy
  tables, and from those into alloc [`Cluster`][alloc.model.Cluster] /
  [`Job`][alloc.model.Job] objects.  Bad rows raise
  [`InputError`][alloc.errors.InputError] naming the file, line and column.
* Workload construction: pods sorted by name, Fisher-Yates shuffled with a
  seeded numpy Generator, tuned to ``tune`` x GPU capacity (appending pods
  drawn with replacement when short, deleting random pods when over), and a
  random tie-break rank per node.
* The online protocol on alloc's one simulator (`pod_simulator`): pod ``i``
  arrives at ``i`` s as a job of the workload (CPU-only pods ask for no GPU,
  shared pods for a share of one), each arrival is one round of the
  registered solver through the session (no moves, FIFO that never
  preempts), the mechanism ``drop-unplaced`` drops a pod its round does not
  place, and pods never finish (the progress model ``hold``).  The run's
  placements are then applied to the experiment's `ClusterState` in arrival
  order (`session_placements`).  The bounded-move variant (``max_moves``)
  runs on the same simulator with the mechanism `PodMoves` before
  ``drop-unplaced``: a pod its round leaves out may have placed pods moved
  for it, by the engine's rule (`alloc.solvers.fgd.engine.MoveSimulator`),
  each move and the pod's placement made through the session.
* Metrics: allocation and fragmentation after every attempt, binned by the
  arrived GPU demand in integer % of capacity (columns 0..130).
* `run` (one policy, one seed) and `bench_main` (``alloc bench
  openb``).

Units: CPU milli-cores, memory MiB, GPU milli (1000 = one GPU).
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..sched.kinds import BaseMechanism
from ..solvers.fgd import MILLI, ClusterState, FragModel, Pod

NCOLS = 131  # x = 0..130


def shared_dir() -> Path:
    """The shared data folder: ``$ALLOC_SHARED`` or the repo root's sibling ``shared``."""
    env = os.environ.get("ALLOC_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared"


def openb_dir() -> Path:
    """The folder of the openb trace CSVs: ``data/openb`` in `shared_dir`."""
    return shared_dir() / "data" / "openb"


# ------------------------------------------------------------------ loaders
@dataclass
class NodeTable:
    """The nodes of a node CSV, one entry per row, in file order.

    Attributes
    ----------
    names : list of str
        Node ids (column ``sn``).
    cpu : numpy.ndarray of int64
        CPU capacity, milli-cores.
    mem : numpy.ndarray of int64
        Memory capacity, MiB.
    gpus : numpy.ndarray of int64
        GPUs per node.
    model : list of str
        GPU model per node (empty when not given).
    source : str
        The file read.
    """
    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    model: list[str]
    source: str = ""

    def __len__(self):
        return len(self.names)


@dataclass
class PodTable:
    """The pods of a pod CSV, one entry per row.

    Attributes
    ----------
    names : list of str
        Pod names.
    cpu : numpy.ndarray of int64
        CPU request, milli-cores.
    mem : numpy.ndarray of int64
        Memory request, MiB.
    k : numpy.ndarray of int64
        GPUs asked (0: CPU-only pod).
    m : numpy.ndarray of int64
        Milli-GPU asked on each of the ``k`` GPUs (1000 when ``k > 1``).
    types : list of tuple of str
        Allowed GPU models per pod (empty: any; always empty for CPU-only pods).
    source : str
        The file read.
    """
    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    k: np.ndarray
    m: np.ndarray
    types: list[tuple[str, ...]]
    source: str = ""

    def __len__(self):
        return len(self.names)

    def pod(self, i: int) -> Pod:
        """Row ``i`` as an engine `Pod`."""
        return Pod(int(self.cpu[i]), int(self.mem[i]), int(self.k[i]), int(self.m[i]),
                   self.types[i] if self.k[i] else ())


MAX_INT = (1 << 53) - 1   # largest count read from a CSV (sums stay exact in int64)
MAX_NODE_GPUS = 1024      # GPUs per node (the engine keeps a node x GPU table)


def _read_text(path: Path) -> str:
    """The file's text (UTF-8, a leading byte-order mark dropped)."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a CSV file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}), expected a CSV file") \
            from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8, "
                         "expected a UTF-8 CSV file") from None


def _read_rows(path, required: Sequence[str]):
    path = Path(path)
    text = _read_text(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            raise InputError(f"{path}:1: empty file, expected a header with columns "
                             + ", ".join(required))
        header = [h.strip() for h in header]
        for col in required:
            if col not in header:
                raise InputError(f"{path}:1: column '{col}' missing from the header "
                                 f"(expected columns {', '.join(required)})")
        pos = {h: i for i, h in enumerate(header)}
        rows = []
        for row in reader:
            if not row or all(not x.strip() for x in row):
                continue
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from None
    return path, pos, rows


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _field(path, line, row, pos, col, *, integer=True, required=True, maximum=MAX_INT):
    i = pos[col]
    if i >= len(row) or (required and row[i].strip() == ""):
        if not required:
            return ""
        raise InputError(f"{path}:{line}: column '{col}' is missing a value")
    v = row[i].strip()
    if not integer:
        return v
    # ASCII digits with an optional sign only: Python's int() also reads other
    # scripts' digits ("٥٠٠") and underscores ("1_000"), which no CSV means
    if not _INTEGER.fullmatch(v):
        shown = v if len(v) <= 40 else v[:37] + "..."
        raise InputError(f"{path}:{line}: column '{col}' expected an integer, got {shown!r}") \
            from None
    x = int(v)
    if x < 0 or x > maximum:
        shown = str(x) if len(v) <= 40 else v[:37] + "..."
        raise InputError(f"{path}:{line}: column '{col}' expected an integer 0..{maximum}, "
                         f"got {shown}")
    return x


def load_nodes(path) -> NodeTable:
    """Read a node CSV (``sn, cpu_milli, memory_mib, gpu, model``); at least one row."""
    path, pos, rows = _read_rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model"))
    if not rows:
        raise InputError(f"{path}:2: no nodes, expected at least one data row")
    names, cpu, mem, gpus, model = [], [], [], [], []
    for line, row in rows:
        names.append(_field(path, line, row, pos, "sn", integer=False))
        cpu.append(_field(path, line, row, pos, "cpu_milli"))
        mem.append(_field(path, line, row, pos, "memory_mib"))
        gpus.append(_field(path, line, row, pos, "gpu", maximum=MAX_NODE_GPUS))
        model.append(_field(path, line, row, pos, "model", integer=False, required=False))
    return NodeTable(names, np.array(cpu, dtype=np.int64), np.array(mem, dtype=np.int64),
                     np.array(gpus, dtype=np.int64), model, str(path))


def load_pods(path) -> PodTable:
    """Read a pod CSV (``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` and an
    optional ``gpu_spec``, split on ``|``).  Other columns are ignored."""
    path, pos, rows = _read_rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu",
                                        "gpu_milli"))
    has_spec = "gpu_spec" in pos
    names, cpu, mem, ks, ms, types = [], [], [], [], [], []
    for line, row in rows:
        names.append(_field(path, line, row, pos, "name", integer=False))
        cpu.append(_field(path, line, row, pos, "cpu_milli"))
        mem.append(_field(path, line, row, pos, "memory_mib"))
        k = _field(path, line, row, pos, "num_gpu", maximum=1 << 20)
        m = _field(path, line, row, pos, "gpu_milli", maximum=MILLI)
        if k > 1 and m < MILLI:
            raise InputError(f"{path}:{line}: column 'gpu_milli' must be 1000 when num_gpu > 1 "
                             f"(num_gpu={k}, gpu_milli={m})")
        spec = _field(path, line, row, pos, "gpu_spec", integer=False, required=False) \
            if has_spec else ""
        ks.append(k)
        ms.append(m)
        types.append(tuple(t for t in spec.split("|") if t) if k else ())
    return PodTable(names, np.array(cpu, dtype=np.int64), np.array(mem, dtype=np.int64),
                    np.array(ks, dtype=np.int64), np.array(ms, dtype=np.int64), types, str(path))


def unplaceable(pods: PodTable, nodes: NodeTable) -> list[int]:
    """Pods that fit on no node even when the cluster is empty (CPU, memory,
    GPU count and share, GPU models): well-formed, but never placed."""
    out = []
    has_gpu = nodes.gpus > 0
    for i in range(len(pods)):
        ok = (nodes.cpu >= pods.cpu[i]) & (nodes.mem >= pods.mem[i])
        if pods.k[i]:
            ok &= has_gpu & (nodes.gpus >= pods.k[i])
            if pods.types[i]:
                ok &= np.isin(np.asarray(nodes.model, dtype=object), list(pods.types[i]))
        if not ok.any():
            out.append(i)
    return out


def to_cluster(nodes: NodeTable):
    """alloc Cluster: server ids from ``sn``, GPU type from ``model``."""
    from ..model import Cluster, Server
    return Cluster(tuple(Server(n, int(c), int(m), int(g), (t or None) if g else None)
                         for n, c, m, g, t in zip(nodes.names, nodes.cpu, nodes.mem,
                                                  nodes.gpus, nodes.model)))


def to_jobs(pods: PodTable, order: Sequence[int] | None = None):
    """alloc Jobs (ids from ``name``; copies made by tuning get ``name#n``)."""
    from ..model import Job
    order = range(len(pods)) if order is None else order
    seen: dict[str, int] = {}
    out = []
    for i in order:
        name = pods.names[i]
        n = seen.get(name, 0)
        seen[name] = n + 1
        jid = name if n == 0 else f"{name}#{n}"
        k, m = int(pods.k[i]), int(pods.m[i])
        if k and m == 0:
            raise InputError(f"{pods.source}: pod {name}: gpu_milli 0 with num_gpu {k} "
                             "cannot be expressed as a job (expected 1..1000)")
        out.append(Job(jid, gpus=k, gpu_milli=m if k else MILLI, cpu=int(pods.cpu[i]),
                       mem=int(pods.mem[i]), gpu_types=pods.types[i] if k else ()))
    return out


# ------------------------------------------------------------------ workload
@dataclass
class Workload:
    """One seed's workload (`build_workload`).

    Attributes
    ----------
    order : numpy.ndarray of int64
        Arrival order: indices into ``pods`` (an index may repeat when the
        workload was tuned up).
    rank : numpy.ndarray of int64
        Tie-break rank per node, in input node order (smaller wins a tie).
    pods : PodTable
        The trace sorted by pod name.
    """
    order: np.ndarray      # indices into the name-sorted pod table (arrival order)
    rank: np.ndarray       # tie-break rank per node (input node order)
    pods: PodTable         # name-sorted trace W

    def arrivals(self) -> list[Pod]:
        """The pods in arrival order."""
        return [self.pods.pod(int(i)) for i in self.order]


def sort_by_name(pods: PodTable) -> PodTable:
    """A copy of the table with its rows sorted by pod name (stable)."""
    idx = sorted(range(len(pods)), key=lambda i: pods.names[i])
    return PodTable([pods.names[i] for i in idx], pods.cpu[idx], pods.mem[idx], pods.k[idx],
                    pods.m[idx], [pods.types[i] for i in idx], pods.source)


def fisher_yates(n: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform permutation of 0..n-1 by Fisher-Yates (swap i with j <= i, i from n-1 down)."""
    a = list(range(n))
    if n > 1:
        u = rng.random(n - 1)
        for step, i in enumerate(range(n - 1, 0, -1)):
            j = int(u[step] * (i + 1))
            a[i], a[j] = a[j], a[i]
    return np.array(a, dtype=np.int64)


def build_workload(pods: PodTable, nodes: NodeTable, seed: int, tune: float = 1.3) -> Workload:
    """Arrival order and node ranks for one seed (protocol section 1)."""
    W = sort_by_name(pods)
    rng = np.random.default_rng(seed)
    rng.random()  # one discarded draw
    A = list(fisher_yates(len(W), rng))
    g = (W.k * W.m).astype(np.int64)
    S = int(g[A].sum()) if A else 0
    T = int(round(tune * int(nodes.gpus.sum()) * MILLI))
    if S < T and len(W):
        while True:
            i = int(rng.integers(len(W)))
            if S + int(W.m[i]) > T:   # per-GPU milli, as in the original
                break
            A.append(i)
            S += int(g[i])
    elif S > T:
        while S > T and A:
            j = int(rng.integers(len(A)))
            S -= int(g[A[j]])
            del A[j]
    node_order = sorted(range(len(nodes)), key=lambda i: nodes.names[i])
    perm = rng.permutation(len(nodes))
    rank = np.empty(len(nodes), dtype=np.int64)
    rank[np.array(node_order, dtype=np.int64)] = perm
    return Workload(np.array(A, dtype=np.int64), rank, W)


def typical_pods(pods: PodTable, threshold: float = 0.95) -> FragModel:
    """FGD target workload from the original trace (see FragModel.from_pods)."""
    return FragModel.from_pods([pods.pod(i) for i in range(len(pods))], threshold)


# ------------------------------------------------------------------ metrics
def bin_curve(arrived: np.ndarray, values: np.ndarray, capacity: int, *,
              digits: int | None = 2) -> list:
    """Mean of ``values`` per arrived-ratio bin x = 0..130 (round-half-even of
    arrived / (capacity/100)); an empty bin falls back to |ratio - x| <= 1,
    else None.  Means are rounded to ``digits`` (None: unrounded)."""
    unit = capacity / 100.0
    ratio = np.array([round(a / unit) for a in arrived.tolist()], dtype=np.int64)
    out: list[float | None] = []
    for x in range(NCOLS):
        sel = ratio == x
        if not sel.any():
            sel = np.abs(ratio - x) <= 1
        if not sel.any():
            out.append(None)
            continue
        v = float(np.mean(values[sel]))
        out.append(round(v, digits) if digits is not None else v)
    return out


@dataclass
class RunResult:
    """Outcome of one openb run (`run`).

    Curves have one value per column x = 0..130, the arrived GPU demand in
    integer % of the cluster's GPU capacity (`bin_curve`; None where
    the arrivals never come near x).

    Attributes
    ----------
    workload, policy : str
        Workload name and placement policy.
    seed : int
    tune : float
        Arrived GPU demand as a multiple of the GPU capacity.
    total_gpus : int
        GPUs of the cluster.
    alloc : list of float or None
        Allocated GPU milli in % of capacity, per column (2 decimals).
    frag : list of float or None
        Cluster fragmentation (sum of the nodes' F) in % of capacity, per
        column (2 decimals).
    frag_ratio : list of float or None
        Fragmentation in % of the idle GPU milli, per column (unrounded).
    seconds, cpu_seconds : float
        Wall and process CPU seconds of the placements.
    placed, attempted : int
        Pods placed and pods that arrived.
    max_moves : int or None
        Move budget (None: placed pods never move).
    moves100, moves : int
        Moves made by the end of column 100, and in the whole run.
    first_fail : float or None
        Arrived demand (% of capacity, 2 decimals) at the first pod that fit
        nowhere; None when every pod was placed.
    """
    workload: str
    policy: str
    seed: int
    tune: float
    total_gpus: int
    alloc: list
    frag: list
    frag_ratio: list
    seconds: float
    placed: int
    attempted: int
    cpu_seconds: float = 0.0
    max_moves: int | None = None   # move budget (None: pods never move)
    moves100: int = 0              # moves made by the end of bin x=100
    moves: int = 0                 # moves made in the whole run
    first_fail: float | None = None  # arrived % of capacity at the first pod that fit nowhere


def run(pods: PodTable, nodes: NodeTable, policy: str, seed: int, *, tune: float = 1.3,
        workload: str = "", fm: FragModel | None = None, progress=None,
        max_moves: int | None = None, **policy_options) -> RunResult:
    """One run: build the seed's workload, place every pod online with
    ``policy``, and bin allocation and fragmentation (protocol sections 1-5).

    ``policy`` is one of `POLICY_NAMES` or any solver the registry
    resolves: its registered solver (`solver_of`) places the pods, one
    round of alloc's simulator per pod (`session_placements`;
    ``policy_options`` are the solver's options and ``time_limit``).  With
    ``max_moves`` the run may move up to that many placed pods
    (`PodMoves`, the FGD family's policies only)."""
    wl = build_workload(pods, nodes, seed, tune)
    W = wl.pods
    fm = fm or typical_pods(W)
    state = ClusterState(nodes.cpu, nodes.mem, nodes.gpus, nodes.model, rank=wl.rank,
                         frag_model=fm)
    seq = wl.arrivals()
    if max_moves is None:
        return _session_run(state, seq, nodes, wl.rank, fm, policy, seed, tune, workload,
                            progress, policy_options)
    from ..solvers.fgd import ALGORITHM, new_policy
    if solver_of(policy) not in ALGORITHM:
        raise InputError(f"--policy {policy}: moves are simulated for the FGD family's "
                         f"policies only ({', '.join(POLICY_NAMES)})")
    pol = new_policy(solver_of(policy), seed, **policy_options)
    mover = PodMoves(seq, nodes.names, state, pol, max_moves)
    t0, c0 = time.perf_counter(), time.process_time()
    from ..collector import paused
    with paused():
        res = pod_simulator(seq, nodes, wl.rank, fm, policy, seed, moves=mover,
                            **policy_options).run()
    placements = pod_placements(res, len(seq), nodes.names, policy)
    used, frag, moves = mover.used, mover.frag, mover.moves
    secs, cpu_secs = time.perf_counter() - t0, time.process_time() - c0
    return _result(state, seq, placements, used, frag, moves, nodes, workload, policy, seed,
                   tune, secs, cpu_secs, max_moves)


#: The experiment's policies, by the names of the FGD paper's figures; each
#: runs as the registered solver `solver_of` names.
POLICY_NAMES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd",
                "fgd-lookahead")
#: The experiment's policy names that differ from their solver's name.
SOLVER_OF = {"best-fit": "openb-best-fit"}


def solver_of(policy: str) -> str:
    """The registered solver that runs the experiment's ``policy``
    (``best-fit`` is ``openb-best-fit``; the other names are the solvers')."""
    return SOLVER_OF.get(policy, policy)


def ranked_cluster(nodes: NodeTable, rank: np.ndarray):
    """The nodes as a cluster in tie-break rank order (smallest first), so
    that a solver's tie to the lowest server index is the protocol's tie to
    the smallest rank."""
    from ..model import Cluster
    servers = to_cluster(nodes).servers
    return Cluster(tuple(servers[int(i)] for i in np.argsort(rank, kind="stable")))


def _session_run(state, seq, nodes, rank, fm, policy, seed, tune, workload, progress,
                 options):
    """`run` through the registered solver of ``policy`` (`session_placements`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    placements, used, frag = session_placements(state, seq, nodes, rank, fm, policy, seed,
                                                progress=progress, **options)
    secs, cpu_secs = time.perf_counter() - t0, time.process_time() - c0
    moves = np.zeros(len(seq), dtype=np.int64)
    return _result(state, seq, placements, used, frag, moves, nodes, workload, policy, seed,
                   tune, secs, cpu_secs, None)


def session_placements(state: ClusterState, seq: Sequence[Pod], nodes: NodeTable,
                       rank: np.ndarray, fm: FragModel, policy: str, seed: int, *,
                       progress=None, **options):
    """Place ``seq`` online with the registered solver of ``policy``
    (`solver_of`) on alloc's simulator (`pod_simulator`): one pod per round
    in arrival order, ties by ``rank`` (`ranked_cluster`), FGD's target
    workload ``fm`` (the solver's ``target`` option, when it declares one).
    The run's placements are then applied to ``state`` in arrival order,
    which measures it.

    Returns
    -------
    placements : list of (int, list of int) or None
        Per pod, its node (index into ``nodes``) and GPU slots, or None
        (dropped).
    used, frag : numpy.ndarray
        Allocated milli-GPU and the cluster's fragmentation after each pod.

    Raises
    ------
    InputError
        An unknown solver, options it refuses, or a run that moved or
        stopped a placed pod or spread one over two nodes (the protocol
        forbids them).

    Examples
    --------
    >>> import numpy as np
    >>> nodes = NodeTable(["a", "b"], np.array([8000, 8000]), np.array([8192, 8192]),
    ...                   np.array([2, 2]), ["V100", "V100"])
    >>> pods = [Pod(1000, 1024, 1, 500), Pod(1000, 1024, 2, 1000)]
    >>> fm = FragModel.from_pods(pods)
    >>> st = ClusterState(nodes.cpu, nodes.mem, nodes.gpus, nodes.model, rank=[1, 0],
    ...                   frag_model=fm)
    >>> out, used, _ = session_placements(st, pods, nodes, np.array([1, 0]), fm, "fgd", 0)
    >>> out, used.tolist()
    ([(1, [0]), (0, [0, 1])], [500, 2500])
    """
    from ..collector import paused
    with paused():      # the run's jobs and placements are no garbage (`alloc.collector`)
        res = pod_simulator(seq, nodes, rank, fm, policy, seed, **options).run()
        if res.stats["moves"] or res.stats["preemptions"]:
            raise InputError(f"--policy {policy}: moved or stopped placed pods, which the "
                             "FGD protocol forbids")
        out = pod_placements(res, len(seq), nodes.names, policy)
        used = np.zeros(len(seq), dtype=np.int64)
        frag = np.zeros(len(seq))
        for i, pod in enumerate(seq):
            r = out[i]
            if r is not None:
                state.apply(r[0], r[1], pod)
            used[i] = state.used
            frag[i] = state.frag.sum()
            if progress is not None:
                progress(1)
    return out, used, frag


def pod_simulator(seq: Sequence[Pod], nodes: NodeTable, rank: np.ndarray, fm: FragModel,
                  policy: str, seed: int, *, time_limit: float = 10.0, moves: Any = None,
                  **options):
    """The FGD protocol as a run of alloc's simulator (`alloc.sim.Simulator`).

    Pod ``i`` is the job ``p<i>`` arriving at ``i`` seconds (its CPU,
    memory, GPUs, share of one GPU and GPU models as the trace gives them);
    each arrival is one event-driven round of the session (FIFO that never
    preempts, so placed pods stay: the session allows no moves); the
    mechanism ``drop-unplaced`` drops a pod its round does not place; pods
    never finish (the progress model ``hold``).  The cluster is the nodes in
    ``rank`` order (`ranked_cluster`: a solver's tie to the lowest server
    index is the protocol's); the session asks for the objective ``"gpus"``
    (allocated GPU, what the experiment measures) from a solver that honours
    it, and none from one placing by its own rule.

    Parameters
    ----------
    seq : sequence of Pod
        The pods in arrival order.
    nodes : NodeTable
    rank : numpy.ndarray
        Tie-break rank per node (smaller wins).
    fm : FragModel
        FGD's target workload.
    policy : str
        One of `POLICY_NAMES` or a solver the registry resolves.
    seed : int
        The run's seed (the session's, the ``random`` solver's draws).
    time_limit : float
        Seconds per round.
    moves : PodMoves, optional
        The bounded-move variant's mechanism, run before ``drop-unplaced``.
    **options
        The solver's options.

    Returns
    -------
    alloc.sim.Simulator
        Not yet run (`pod_placements` reads its result).

    Examples
    --------
    >>> import numpy as np
    >>> nodes = NodeTable(["a", "b"], np.array([8000, 8000]), np.array([8192, 8192]),
    ...                   np.array([2, 2]), ["V100", "V100"])
    >>> pods = [Pod(1000, 1024, 1, 500), Pod(1000, 1024, 4, 1000), Pod(500, 512, 0, 0)]
    >>> sim = pod_simulator(pods, nodes, np.array([1, 0]), FragModel.from_pods(pods),
    ...                     "best-fit", 42)
    >>> res = sim.run()
    >>> res.summary()["dropped"], pod_placements(res, 3, nodes.names, "best-fit")
    (1, [(1, [0]), None, (1, [])])
    """
    from ..registry import get_solver, use
    from ..sim import Simulator, WorkloadJob
    from ..solvers.fgd import target_option
    solver = solver_of(policy)
    try:
        use(solver)
        info = get_solver(solver)
    except ValueError as exc:
        raise InputError(f"--policy: {exc}") from None
    if "target" in {o.name for o in info.options} and "target" not in options:
        options["target"] = target_option(fm)
    jobs = [WorkloadJob(f"p{i}", float(i), p.k, gpu_milli=p.m if p.k else MILLI,
                        fields={"cpu": p.c, "mem": p.mem, "gpu_types": p.types if p.k else ()})
            for i, p in enumerate(seq)]
    return Simulator(ranked_cluster(nodes, rank), jobs, order=("fifo", {"preemptive": False}),
                     placement=(solver, options),
                     mechanism=("drop-unplaced",) if moves is None else (moves, "drop-unplaced"),
                     progress="hold",
                     seed=seed, time_limit=time_limit, name=policy,
                     objective="gpus" if info.honours("gpus") else None)


class PodMoves(BaseMechanism):
    """The FGD protocol with bounded moves on the simulator: a mechanism
    that keeps the engine's move rule (`alloc.solvers.fgd.engine.MoveSimulator`)
    on a `ClusterState` holding what the run holds.

    After each pod's round (``after_round``, before ``drop-unplaced``): a pod
    the round placed is recorded where it went; a pod it left out is offered
    to the rule, which may move up to ``max_moves`` placed pods in the whole
    run (a GPU's few shared pods to other nodes, or a CPU-only pod, by the
    solver's own policy) -- each move is a ``Control.migrate`` and the pod's
    placement a ``Control.place``, both checked by the session -- else it is
    dropped as usual.  ``used``, ``frag`` and ``moves`` are the allocated
    milli-GPU, FGD's fragmentation and the moves made after each pod.

    Parameters
    ----------
    seq : sequence of Pod
        The pods in arrival order (pod ``i`` is the job ``p<i>``).
    names : sequence of str
        The node ids in the state's order.
    state : ClusterState
        Empty; the mechanism keeps it in step with the run.
    policy : Policy
        The solver's policy class (`alloc.solvers.fgd.new_policy`): where
        moved pods go.
    max_moves : int
        Moves allowed in the whole run.
    """

    def __init__(self, seq: Sequence[Pod], names: Sequence[str], state: ClusterState, policy,
                 max_moves: int) -> None:
        from ..solvers.fgd import MoveSimulator
        self.seq, self.names = list(seq), list(names)
        self.node = {sid: k for k, sid in enumerate(names)}
        self.rule = MoveSimulator(state, policy, max_moves)
        n = len(self.seq)
        self.used = np.zeros(n, dtype=np.int64)
        self.frag = np.zeros(n)
        self.moves = np.zeros(n, dtype=np.int64)
        self._new: list[int] = []

    def on_event(self, event: Any, ctl: Any) -> None:
        """Note each arriving pod: its round decides it."""
        if event.kind == "arrival" and event.job is not None:
            self._new.append(int(event.job[1:]))

    def after_round(self, result: Any, ctl: Any) -> None:
        """Record, or make room for, each pod that arrived for this round."""
        new, self._new = self._new, []
        rule, st = self.rule, self.rule.state
        for i in new:
            pod, jid = self.seq[i], f"p{i}"
            rec = ctl.jobs.get(jid)
            p = rec.run.placement if rec is not None and rec.run is not None else None
            if p is not None:
                rule.placed(pod, *_node_slots(p, self.node, f"pod {jid!r}"))
            else:
                r, moved = rule.make_room(pod)
                if r is not None:
                    for q, n, g in moved:
                        ctl.migrate(f"p{q}", self._where(q, n, g))
                    ctl.place(jid, self._where(i, r[0], r[1]))
            self.used[i], self.frag[i], self.moves[i] = st.used, st.frag.sum(), rule.moves

    def _where(self, i: int, n: int, slots: Sequence[int]):
        """Pod i on node n's GPU slots: the GPUs' names, or (a CPU-only pod)
        its placement on the node."""
        sid = self.names[n]
        if slots:
            return [f"{sid}/gpu{k}" for k in slots]
        from ..model import Placement
        pod = self.seq[i]
        return Placement(f"p{i}", (), {sid: pod.c}, {sid: pod.mem})


def _node_slots(p, node: Mapping[str, int], who: str) -> tuple[int, list[int]]:
    """A pod's node index and sorted GPU slots from its placement; a pod
    spread over two nodes is an `InputError` naming ``who`` (the protocol
    forbids it)."""
    from ..gpukey import GpuKey, server_of
    servers = {server_of(g.gpu) for g in p.gpus} or set(p.cpu)
    if len(servers) != 1:
        raise InputError(f"{who}: spread a pod over {len(servers)} nodes, which the FGD "
                         "protocol forbids")
    return node[servers.pop()], sorted(GpuKey.parse(g.gpu).gpu for g in p.gpus)


def pod_placements(res, n: int, names: Sequence[str], policy: str) -> list:
    """Each pod's node (index into ``names``) and sorted GPU slots from a
    finished `pod_simulator` run (``n`` pods), None for a dropped pod; a pod
    spread over two nodes is an `InputError` naming ``policy`` (the protocol
    forbids it).  Example: `pod_simulator`."""
    node = {sid: k for k, sid in enumerate(names)}
    out: list = [None] * n
    for r in res.records:
        p = r.run.placement if r.run is not None else None
        if p is not None:
            out[r.index] = _node_slots(p, node, f"--policy {policy}")
    return out


def _result(state, seq, placements, used, frag, moves, nodes, workload, policy, seed, tune,
            secs, cpu_secs, max_moves) -> RunResult:
    """The binned curves and counts of one run."""
    cap = state.capacity
    g = np.array([p.g for p in seq], dtype=np.int64)
    arrived = np.cumsum(g)
    unit = cap / 100.0
    alloc_vals = np.array([round(u / unit, 2) for u in used.tolist()])
    idle = cap - used
    ratio_vals = np.where(idle > 0, 100.0 * frag / np.maximum(idle, 1), 0.0)
    frag_pct = bin_curve(arrived, frag, cap, digits=None)
    frag_pct = [None if v is None else round(100.0 * v / cap, 2) for v in frag_pct]
    fail = next((i for i, pl in enumerate(placements) if pl is None), None)
    return RunResult(workload, policy, seed, tune, int(nodes.gpus.sum()),
                     bin_curve(arrived, alloc_vals, cap),
                     frag_pct, bin_curve(arrived, ratio_vals, cap, digits=None), secs,
                     sum(p is not None for p in placements), len(seq), cpu_secs, max_moves,
                     _moves_by(arrived, moves, cap, 100), int(moves[-1]) if len(seq) else 0,
                     None if fail is None else round(float(arrived[fail]) / unit, 2))


def _moves_by(arrived: np.ndarray, moves: np.ndarray, capacity: int, x: int) -> int:
    """Moves made by the last attempt whose arrived-ratio bin is <= x."""
    unit = capacity / 100.0
    sel = [i for i, a in enumerate(arrived.tolist()) if round(a / unit) <= x]
    return int(moves[sel[-1]]) if sel else 0


# ------------------------------------------------------------------ output
HEADER = ["workload", "sc_policy", "tune", "seed", "total_gpus"] + [str(x) for x in range(NCOLS)]
FRAG_HEADER = ["workload", "sc_policy", "tune", "seed"] + [str(x) for x in range(NCOLS)]


def _cells(vals):
    return ["" if v is None else v for v in vals]


def write_curves(path, results: Sequence[RunResult]) -> None:
    """Write the allocation curves as CSV: a header (``workload, sc_policy,
    tune, seed, total_gpus, 0..130``) and one line per result (an empty cell
    where a column has no value)."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for r in results:
            w.writerow([r.workload, r.policy, r.tune, r.seed, r.total_gpus] + _cells(r.alloc))


def write_frag(path, results: Sequence[RunResult]) -> None:
    """Fragmentation (% of capacity) to ``path`` and the fragmentation ratio
    (% of idle GPU) to ``<stem>_ratio.csv`` next to it."""
    path = Path(path)
    ratio = path.with_name(path.stem + "_ratio" + (path.suffix or ".csv"))
    for p, attr in ((path, "frag"), (ratio, "frag_ratio")):
        with open(p, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(FRAG_HEADER)
            for r in results:
                w.writerow([r.workload, r.policy, r.tune, r.seed] + _cells(getattr(r, attr)))


def parse_seeds(text: str, what: str = "seeds") -> list[int]:
    """Seeds from ``"42,43"`` or ranges ``"42-51"`` (both may be mixed)."""
    out: list[int] = []
    for part in _parse_list(text, what):
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(part)])
        except ValueError:
            raise InputError(f"--{what}: expected integers or ranges like 42-51, got {part!r}") from None
    return out


def _parse_list(text: str, what: str, conv=str) -> list:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(conv(part))
        except ValueError:
            raise InputError(f"--{what}: expected a comma-separated list, got {part!r}") from None
    if not out:
        raise InputError(f"--{what}: empty list")
    return out


def bench_main(argv: list[str]) -> int:
    """``alloc bench openb``: run policies x seeds on one pod trace and write
    the allocation curves (and optionally fragmentation curves and a plot)."""
    ap = argparse.ArgumentParser(prog="alloc bench openb",
                                 description="FGD experiment on the Alibaba openb traces")
    ap.add_argument("--pods", required=True, help="pod CSV (openb_pod_list_*.csv)")
    ap.add_argument("--nodes", required=True, help="node CSV (openb_node_list_gpu_node.csv)")
    ap.add_argument("--policy", default="fgd", help="comma-separated policies")
    ap.add_argument("--seeds", default="42", help="comma-separated seeds or ranges (42-51)")
    ap.add_argument("--tune", type=float, default=1.3)
    ap.add_argument("--out", help="allocation curves CSV (stdout if absent)")
    ap.add_argument("--frag-out", help="fragmentation curves CSV")
    ap.add_argument("--plot", help="PNG of allocation vs arrived workload")
    args = ap.parse_args(argv)
    try:
        policies = _parse_list(args.policy, "policy")
        for p in policies:
            _known_policy(p)
        seeds = parse_seeds(args.seeds)
        nodes = load_nodes(args.nodes)
        pods = load_pods(args.pods)
        if not len(pods):
            raise InputError(f"{args.pods}:2: no pods, expected at least one data row")
        if not int(nodes.gpus.sum()):
            raise InputError(f"{args.nodes}: no node has a GPU (column 'gpu'), expected GPU "
                             "capacity to measure allocation against")
        if not (math.isfinite(args.tune) and args.tune > 0):
            raise InputError(f"--tune: expected a positive number, got {args.tune}")
    except InputError as exc:
        print(f"alloc bench openb: {exc}", file=sys.stderr)
        return 2
    try:
        return _bench_runs(args, policies, seeds, nodes, pods)
    except InputError as exc:          # a solver refused the trace (a capability it lacks)
        print(f"alloc bench openb: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"alloc bench openb: {exc.filename or ''}: cannot write ({exc.strerror or exc})",
              file=sys.stderr)
        return 2


def _known_policy(name: str) -> None:
    """One of the experiment's policies (`POLICY_NAMES`) or a solver the
    registry resolves, else a one-line `InputError` naming both."""
    known_policy(name, "--policy")


def known_policy(name: str, where: str) -> None:
    """Check that ``name`` runs in the experiment: one of `POLICY_NAMES` or
    a solver the registry resolves; else a one-line `InputError` at
    ``where`` naming both.

    Examples
    --------
    >>> known_policy("best-fit", "--policy")
    >>> known_policy("nope", "--policy")
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: --policy: unknown policy 'nope'; valid: random, dotprod, ...
    """
    if name in POLICY_NAMES:
        return
    from ..registry import use
    try:
        use(name)
    except ValueError:
        from ..registry import solvers
        raise InputError(f"{where}: unknown policy {name!r}; valid: {', '.join(POLICY_NAMES)}, "
                         f"or a solver ({', '.join(solvers())}, 'module:function')") from None


def _mean_text(vals) -> str:
    """``mean ± std`` of the runs' values at one column, or why there is none."""
    a = np.array([v for v in vals if v is not None], dtype=float)
    if not len(a):
        return "n/a (the arrivals never reach it)"
    return f"{a.mean():.2f} ± {float(a.std(ddof=1)) if len(a) > 1 else 0.0:.2f}"


def _bench_runs(args, policies, seeds, nodes, pods) -> int:
    name = Path(args.pods).stem
    wide = unplaceable(pods, nodes)
    if wide:
        i = wide[0]
        print(f"alloc bench openb: note: {len(wide)} of {len(pods)} pods fit on no node "
              f"(e.g. {pods.names[i]}: {int(pods.k[i])} GPUs, {int(pods.cpu[i])} milli-cores, "
              f"{int(pods.mem[i])} MiB); they arrive and are never placed", file=sys.stderr)
    fm = typical_pods(sort_by_name(pods))
    results = []
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    bar = tqdm(total=len(policies) * len(seeds), desc="runs", file=sys.stderr) if tqdm else None
    for pol in policies:
        for seed in seeds:
            r = run(pods, nodes, pol, seed, tune=args.tune, workload=name, fm=fm)
            results.append(r)
            msg = (f"{name} {pol} seed={seed}: alloc@100={r.alloc[100]} "
                   f"alloc@130={r.alloc[130]} placed={r.placed}/{r.attempted} "
                   f"{r.seconds:.2f}s wall, {r.cpu_seconds:.2f}s cpu")
            if bar:
                bar.update(1)
                bar.write(msg)
            else:
                print(msg, file=sys.stderr)
    if bar:
        bar.close()
    if args.out:
        write_curves(args.out, results)
    else:
        w = csv.writer(sys.stdout)
        w.writerow(HEADER)
        for r in results:
            w.writerow([r.workload, r.policy, r.tune, r.seed, r.total_gpus] + _cells(r.alloc))
    if args.frag_out:
        write_frag(args.frag_out, results)
    for pol in policies:
        rs = [r for r in results if r.policy == pol]
        print(f"{pol}: x=100 {_mean_text([r.alloc[100] for r in rs])}  "
              f"x=130 {_mean_text([r.alloc[130] for r in rs])}  "
              f"{np.mean([r.seconds for r in rs]):.2f} s/run wall "
              f"{np.mean([r.cpu_seconds for r in rs]):.2f} s/run cpu", file=sys.stderr)
    if args.plot:
        plot_curves(args.plot, results, title=name)
    return 0


def plot_curves(path, results: Sequence[RunResult], title: str = "") -> bool:
    """Mean allocation vs arrived workload per policy (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plot skipped", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for pol in dict.fromkeys(r.policy for r in results):
        rs = [r for r in results if r.policy == pol]
        ys = np.array([[np.nan if v is None else v for v in r.alloc] for r in rs], dtype=float)
        ax.plot(range(NCOLS), np.nanmean(ys, axis=0), label=pol)
    ax.plot([0, 100], [0, 100], color="grey", lw=0.5, ls="--")
    ax.set_xlabel("arrived GPU workload (% of capacity)")
    ax.set_ylabel("GPU allocation ratio (%)")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


__all__ = ["NodeTable", "PodTable", "load_nodes", "load_pods", "to_cluster", "to_jobs",
           "Workload", "build_workload", "fisher_yates", "sort_by_name", "typical_pods", "bin_curve",
           "RunResult", "run", "bench_main", "unplaceable", "write_curves", "write_frag", "plot_curves",
           "shared_dir", "openb_dir", "POLICY_NAMES", "SOLVER_OF", "solver_of", "known_policy",
           "ranked_cluster", "session_placements", "pod_simulator", "pod_placements"]

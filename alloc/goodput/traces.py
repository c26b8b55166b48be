r"""The measured traces of the goodput experiments, read by header.

One model on one GPU type lives in ``traces/<model>/``:

* ``placements[-<suffix>].csv``: ``placement, local_bsz, step_time,
  sync_time`` (columns in any order); ``placement`` has one digit per node
  (``1244``: four nodes holding 1, 2, 4 and 4 replicas); times in seconds
  per update without accumulation, ``sync_time`` the part spent in the
  all-reduce;
* ``scalability[-<suffix>].csv``: ``num_nodes, num_replicas, local_bsz,
  step_time, sync_time`` (spread placements measured at scale);
* ``validation-<M>.csv`` (one per total batch ``M``): ``progress,
  iteration, metric, grad_sqr, grad_var``; row ``e`` is statistical epoch
  ``e``: ``progress`` (in ``M0``-iterations, about equal across ``M``) and
  ``iteration`` (real iterations at ``M``) at its end, the gradient's squared
  norm and variance measured at ``M`` during it.

The suffix names the GPU type: none or ``aws`` is the T4 (4 per node), ``rtx``
the RTX 2080 Ti (8 per node), ``dgx-ext`` the A100 (8 per node).

Every number is checked: a missing column or a cell that is not a number is
an `InputError` naming the file, the row and the column.

Examples
--------
>>> from alloc.goodput.traces import load_traces
>>> t = load_traces("cifar10")
>>> t.limits, t.max_epochs, t.gpus_per_node
(Limits(init=128, max=4096, local_lo=32, local_hi=1024), 100, 4)
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import InputError
from .model import Limits

#: The trace suffix of each GPU type, and GPUs per node of each.
SUFFIX = {"T4": "aws", "RTX2080Ti": "rtx", "A100": "dgx-ext"}
GPUS_PER_NODE = {"T4": 4, "RTX2080Ti": 8, "A100": 8}
#: The GPU type of the files without a suffix (the Pollux artifact's).
DEFAULT_TYPE = "T4"


@dataclass(frozen=True)
class ModelSpec:
    """What the traces do not say about a model, fixed by the two artifacts.

    Attributes
    ----------
    max_epochs : int
        Statistical epochs to completion (the jobs have no target metric).
    restart_s : float
        The Pollux simulator's restart delay (checkpoint and restore), s.
    sia_restart_s : float
        The Sia simulator's restart delay, s.
    sia_penalty_s : float
        The restart penalty in Sia's objective, s (differs from the delay
        for yolov3: 45 against 80).
    sia_slowdown : float
        Sia's calibration: progress is divided by it.
    pollux_local_hi : int or None
        The Pollux artifact's per-GPU batch cap, below the traces' largest.
    sia_local_hi : mapping of str to int
        The Sia artifact's per-GPU batch caps by GPU type.
    """
    max_epochs: int
    restart_s: float = 30.0
    sia_restart_s: float = 30.0
    sia_penalty_s: float = 30.0
    sia_slowdown: float = 1.0
    pollux_local_hi: int | None = None
    sia_local_hi: Mapping[str, int] = field(default_factory=dict)


#: The six models of both artifacts (Pollux ``applications.py``; Sia
#: ``applications.py``, ``sia.py`` and ``simulator_config.py``).
SPECS: Mapping[str, ModelSpec] = {
    "cifar10": ModelSpec(100, 30, 50, 30, 1.8),
    "ncf": ModelSpec(10, 30, 15, 30, 1.5),
    "deepspeech2": ModelSpec(80, 30, 25, 25, 1.2, sia_local_hi={"RTX2080Ti": 57}),
    "bert": ModelSpec(2, 30, 120, 120, 1.2),
    "yolov3": ModelSpec(50, 30, 80, 45, 1.2, pollux_local_hi=8),
    "imagenet": ModelSpec(90, 30, 250, 250, 1.2),
}


@dataclass(frozen=True)
class Validation:
    """One ``validation-<M>.csv``: per statistical epoch, arrays of equal length."""
    batch: int
    progress: np.ndarray
    iteration: np.ndarray
    metric: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray


@dataclass(frozen=True, eq=False)
class Traces:
    """One model's traces on one GPU type.

    Attributes
    ----------
    model, gpu_type : str
    placements : dict of str to ndarray
        Column arrays: ``placement`` (digit strings), ``local_bsz``,
        ``step_time``, ``sync_time``, ``num_nodes``, ``num_replicas``.
    scalability : dict of str to ndarray
        Column arrays ``num_nodes, num_replicas, local_bsz, step_time,
        sync_time``.
    validation : tuple of Validation
        By increasing batch.
    limits : Limits
        ``M0`` = smallest validated batch, ``Mmax`` the largest, the per-GPU
        range of the placement traces (capped by the model's spec).
    max_epochs : int
    gpus_per_node : int
    source : str
        Where the files were read from.
    """
    model: str
    gpu_type: str
    placements: Mapping[str, np.ndarray]
    scalability: Mapping[str, np.ndarray]
    validation: tuple[Validation, ...]
    limits: Limits
    max_epochs: int
    gpus_per_node: int
    source: str = ""

    @property
    def spec(self) -> ModelSpec:
        """The model's `ModelSpec`."""
        return SPECS[self.model]

    def one_gpu_rate(self) -> float:
        """Sia's projection constant x1: the largest per-GPU batch over the
        largest step time among the 1-GPU rows (samples/s)."""
        one = self.placements["num_replicas"] == 1
        return float(self.placements["local_bsz"][one].max()
                     / self.placements["step_time"][one].max())


def _number(text: str, path: str, row: int, col: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{path}: row {row}: column {col!r}: expected a number, "
                         f"got {text!r:.40}") from None
    if not math.isfinite(v):
        raise InputError(f"{path}: row {row}: column {col!r}: expected a finite number, "
                         f"got {text!r:.40}")
    return v


def read_columns(path: Path | str, columns: tuple[str, ...], *, text: tuple[str, ...] = ()
                 ) -> dict[str, np.ndarray]:
    """The named columns of a CSV file, by header (other columns ignored).

    Columns in ``text`` stay strings; the others must be numbers.  Rows are
    numbered from 1 after the header.

    Raises
    ------
    InputError
        The file cannot be read, a column is missing, a cell is not a number.

    Examples
    --------
    >>> import tempfile, os
    >>> from alloc.goodput.traces import read_columns
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "t.csv")
    >>> _ = open(p, "w").write("a,b\\n1,x\\n")
    >>> read_columns(p, ("a", "b"))
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: t.csv: row 1: column 'b': expected a number, got 'x'
    """
    p = Path(path)
    name = p.name
    try:
        with open(p, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = list(reader)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: cannot read ({type(exc).__name__}: {exc})") from None
    if header is None:
        raise InputError(f"{name}: empty file; expected a header with {', '.join(columns)}")
    header = [h.strip() for h in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"{name}: missing column {missing[0]!r}; expected columns "
                         f"{', '.join(columns)}")
    idx = {c: header.index(c) for c in columns}
    out: dict[str, list] = {c: [] for c in columns}
    for r, row in enumerate(rows, 1):
        if not row or all(not x.strip() for x in row):
            continue
        for c in columns:
            i = idx[c]
            cell = row[i].strip() if i < len(row) else ""
            if c in text:
                if not cell:
                    raise InputError(f"{name}: row {r}: column {c!r}: expected a value, got "
                                     f"an empty cell")
                out[c].append(cell)
            else:
                out[c].append(_number(cell, name, r, c))
    return {c: np.array(v, dtype=object if c in text else float) for c, v in out.items()}


def _placements(path: Path) -> dict[str, np.ndarray]:
    cols = read_columns(path, ("placement", "local_bsz", "step_time", "sync_time"),
                        text=("placement",))
    ids = []
    for r, p in enumerate(cols["placement"], 1):
        s = str(p).strip()
        if s.endswith(".0"):
            s = s[:-2]
        if not s.isdigit() or "0" in s:
            raise InputError(f"{path.name}: row {r}: column 'placement': expected one digit "
                             f"1-9 per node, got {p!r:.40}")
        ids.append(s)
    cols["placement"] = np.array(ids, dtype=object)
    cols["num_nodes"] = np.array([len(s) for s in ids], dtype=float)
    cols["num_replicas"] = np.array([sum(map(int, s)) for s in ids], dtype=float)
    _check_times(cols, path.name)
    return cols


def _check_times(cols: Mapping[str, np.ndarray], name: str) -> None:
    bad = np.flatnonzero(~((cols["step_time"] > 0) & (cols["sync_time"] >= 0)
                           & (cols["step_time"] > cols["sync_time"]) & (cols["local_bsz"] >= 1)))
    if bad.size:
        r = int(bad[0]) + 1
        raise InputError(f"{name}: row {r}: expected local_bsz >= 1 and step_time > sync_time "
                         f">= 0")


def _validation(path: Path) -> Validation:
    stem = path.stem.rpartition("-")[2]
    if not stem.isdigit() or int(stem) < 1:
        raise InputError(f"{path.name}: expected a name validation-<batch>.csv with a batch >= 1")
    c = read_columns(path, ("progress", "iteration", "metric", "grad_sqr", "grad_var"))
    if len(c["progress"]) == 0:
        raise InputError(f"{path.name}: no rows; expected one row per epoch")
    return Validation(int(stem), c["progress"], c["iteration"], c["metric"], c["grad_sqr"],
                      c["grad_var"])


def model_dir(root: Path | str, model: str) -> Path:
    """``root/<model>`` (an `InputError` naming the known models when absent)."""
    d = Path(root) / model
    if not d.is_dir():
        known = sorted(p.name for p in Path(root).iterdir() if p.is_dir()) \
            if Path(root).is_dir() else []
        raise InputError(f"model {model!r}: no traces in {Path(root).name}/; expected one of "
                         f"{', '.join(known) or '(none)'}")
    return d


def read_traces(root: Path | str, model: str, gpu_type: str = DEFAULT_TYPE, *,
                flavour: str = "pollux") -> Traces:
    """Read one model's traces on one GPU type from ``root/<model>/``.

    Parameters
    ----------
    root : path
        The ``traces`` folder.
    model : str
        One of `SPECS`.
    gpu_type : str
        One of `SUFFIX`; ``T4`` reads the unsuffixed files when there are no
        ``-aws`` ones.
    flavour : {"pollux", "sia"}
        Whose per-GPU batch caps apply (the Pollux artifact caps yolov3 at 8
        per GPU, the Sia artifact does not).

    Raises
    ------
    InputError
        An unknown model or GPU type, a missing file, a bad cell.
    """
    if model not in SPECS:
        raise InputError(f"model {model!r}: unknown; expected one of {', '.join(SPECS)}")
    if gpu_type not in SUFFIX:
        raise InputError(f"gpu type {gpu_type!r}: unknown; expected one of {', '.join(SUFFIX)}")
    d = model_dir(root, model)
    suffix = SUFFIX[gpu_type]
    names = [f"placements-{suffix}.csv", f"scalability-{suffix}.csv"]
    if gpu_type == DEFAULT_TYPE and not (d / names[0]).is_file():
        names = ["placements.csv", "scalability.csv"]
    for n in names:
        if not (d / n).is_file():
            raise InputError(f"model {model!r}: missing {model}/{n} for GPU type {gpu_type}")
    pl = _placements(d / names[0])
    sc = read_columns(d / names[1], ("num_nodes", "num_replicas", "local_bsz", "step_time",
                                     "sync_time"))
    _check_times(sc, names[1])
    vals = sorted((_validation(p) for p in d.glob("validation-*.csv")), key=lambda v: v.batch)
    if not vals:
        raise InputError(f"model {model!r}: no validation-<batch>.csv files in {model}/")
    spec = SPECS[model]
    lo = int(pl["local_bsz"].min())
    hi = int(pl["local_bsz"].max())
    cap = spec.sia_local_hi.get(gpu_type) if flavour == "sia" else spec.pollux_local_hi
    if cap is not None:
        hi = int(cap)
    limits = Limits(vals[0].batch, vals[-1].batch, lo, hi)
    if limits.max < limits.local_lo:
        raise InputError(f"model {model!r}: the largest batch {limits.max} is below the "
                         f"smallest per-GPU batch {limits.local_lo}")
    epochs = min(spec.max_epochs, min(len(v.progress) for v in vals))
    return Traces(model, gpu_type, pl, sc, tuple(vals), limits, epochs,
                  GPUS_PER_NODE[gpu_type], str(d))


def shipped_root() -> Path:
    """The Pollux artifact's traces shipped with alloc (`alloc/goodput/data/pollux/traces`)."""
    return Path(__file__).parent / "data" / "pollux" / "traces"


@lru_cache(maxsize=64)
def load_traces(model: str, gpu_type: str = DEFAULT_TYPE, root: str | None = None,
                flavour: str = "pollux") -> Traces:
    """`read_traces` from ``root`` (default the shipped Pollux traces), cached."""
    return read_traces(Path(root) if root else shipped_root(), model, gpu_type, flavour=flavour)


__all__ = ["DEFAULT_TYPE", "GPUS_PER_NODE", "ModelSpec", "SPECS", "SUFFIX", "Traces",
           "Validation", "load_traces", "model_dir", "read_columns", "read_traces",
           "shipped_root"]

r"""The share problem and its result: ``alloc.shares/1`` in, ``alloc.shares-result/1`` out.

Loading validates in one pass, like [`alloc.io`][alloc.io] does for instances: the
JSON Schema (``alloc/schemas/shares.schema.json``) first, then the checks by
meaning (unique ids, known GPU types, a job that can run somewhere, pairs of
known jobs with equal scale factors, known tenants, finite numbers, a cluster
on which some job can run, numbers within the range the LPs resolve:
`RATE_RANGE`, `WEIGHT_RANGE`).  Every
problem names the field; [`InputError`][alloc.errors.InputError] names the file.

Notation used across [`alloc.shares`][alloc.shares]: jobs ``i``, GPU types ``j``,
``n_j`` GPUs of type ``j``, ``sf_i`` the job's scale factor,
``T_ij`` its steps/s on ``sf_i`` GPUs of type ``j`` running alone, ``w_i``
its weight, ``s_i`` its steps remaining, ``t_i`` its elapsed seconds and
``C_i`` its isolated seconds so far.

Two optional extensions of the format (readers that do not know them may
ignore them): a job's ``"tenant"`` and a top-level ``"tenants"`` map
``{"name": {"weight": w, "policy": "fairness" | "fifo"}}`` for the
hierarchical policy; tenants named by jobs but absent from the map (or all,
when there is no map) weigh 1.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import InputError
from ..io import plain_numbers
from ..model import Status
from ..schema import schema_problems

SHARES_FORMAT = "alloc.shares/1"
RESULT_FORMAT = "alloc.shares-result/1"


# ------------------------------------------------------------------ problem
@dataclass(frozen=True, eq=False)
class Pair:
    """Two jobs that may share the same GPUs (space sharing).

    Attributes
    ----------
    a, b : int
        Indices of the two jobs (equal scale factors).
    throughput : ndarray, shape (k, 2)
        Steps/s of ``a`` and ``b`` while sharing ``sf`` GPUs of each type
        (0: cannot share there).
    """
    a: int
    b: int
    throughput: np.ndarray


@dataclass(frozen=True)
class TenantSpec:
    """A tenant of the hierarchical policy: its weight and the policy that
    splits its share among its own jobs (``"fairness"`` or ``"fifo"``)."""
    weight: float = 1.0
    policy: str | None = None


@dataclass(frozen=True, eq=False)
class SharesProblem:
    """A validated ``alloc.shares/1`` input, as arrays.

    Attributes
    ----------
    gpu_types : tuple of str
        Type names, in file order.
    capacity : ndarray (k,)
        GPUs of each type ``n_j``.
    job_ids : tuple of str
    scale_factor, weight : ndarray (m,)
        ``sf_i`` (GPUs per run) and ``w_i``.
    throughput : ndarray (m, k)
        ``T_ij`` steps/s on ``sf_i`` GPUs of type ``j`` alone.
    steps_remaining, elapsed_s, isolated_time_s : ndarray (m,)
        ``s_i``, ``t_i`` (seconds since arrival), ``C_i`` (seconds the job
        would have had on its isolated share so far).
    tenant : tuple of (str or None)
    pairs : tuple of Pair
    tenants : dict of str to TenantSpec
    name : str
    steps_given : ndarray of bool (m,), optional
        Jobs whose file gave ``steps_remaining`` (None: every job's is
        known, as for a problem built in code).
    """
    gpu_types: tuple
    capacity: np.ndarray
    job_ids: tuple
    scale_factor: np.ndarray
    weight: np.ndarray
    throughput: np.ndarray
    steps_remaining: np.ndarray
    elapsed_s: np.ndarray
    isolated_time_s: np.ndarray
    tenant: tuple = ()
    pairs: tuple = ()
    tenants: Mapping[str, TenantSpec] = field(default_factory=dict)
    name: str = ""
    steps_given: np.ndarray | None = None

    @property
    def m(self) -> int:
        """Number of jobs."""
        return len(self.job_ids)

    @property
    def k(self) -> int:
        """Number of GPU types."""
        return len(self.gpu_types)

    @cached_property
    def runnable_throughput(self) -> np.ndarray:
        """``T_ij`` where the type has at least ``sf_i`` GPUs, else 0: a job
        needs all its GPUs at once."""
        return np.where(self.capacity[None, :] >= self.scale_factor[:, None], self.throughput, 0.0)

    @cached_property
    def served(self) -> np.ndarray:
        """Jobs that can run somewhere on this cluster (mask)."""
        return np.asarray((self.runnable_throughput > 0).any(axis=1))

    @cached_property
    def profiles(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, index)``: the distinct rows of
[`runnable_throughput`][alloc.shares.SharesProblem.runnable_throughput]
        and each job's row (jobs of one model share a profile)."""
        rows, index = np.unique(self.runnable_throughput, axis=0, return_inverse=True)
        return rows, index.reshape(-1)

    def unserved_reasons(self) -> dict[str, str]:
        """Why each job that cannot run gets nothing."""
        out = {}
        for i in np.flatnonzero(~self.served):
            sf = int(self.scale_factor[i])
            types = [t for j, t in enumerate(self.gpu_types) if self.throughput[i, j] > 0]
            out[self.job_ids[i]] = (f"needs {sf} GPUs of one of {types}; the cluster has "
                                    f"{[int(self.capacity[self.gpu_types.index(t)]) for t in types]}")
        return out


# --------------------------------------------------------------- reading
def _reject_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def read_json_strict(path, what: str = "shares file") -> Any:
    """Parse a JSON file, refusing ``NaN`` and ``Infinity``; one-line
    [`InputError`][alloc.errors.InputError] naming the file otherwise.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is, for the message.

    Returns
    -------
    object
        The parsed document.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what} ({type(exc).__name__})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno} column {exc.colno}: malformed JSON "
                         f"({exc.msg})") from None
    except ValueError as exc:
        raise InputError(f"{path}: malformed JSON ({exc})") from None


def _nonfinite(doc, where: str = "") -> list[str]:
    """Paths of numbers that are NaN or infinite (a dict given in Python may
    hold them; a JSON Schema ``minimum`` lets NaN through)."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return [f"{where or '(top level)'}: expected a finite number, got {doc!r}"]
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _nonfinite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _nonfinite(v, f"{where}[{i}]")]
    return []


#: the positive throughputs (and steps remaining) of one file span at most
#: this ratio, the weights at most `WEIGHT_RANGE`: beyond it the LPs'
#: rows differ by more than their tolerances resolve (a throughput of 1e-300
#: next to one of 3 is read as 0 and its job silently gets nothing)
RATE_RANGE = 1e9
WEIGHT_RANGE = 1e6


def _range_problems(values, what: str, span: float, zero_ok: bool) -> list[str]:
    """``values``: (field path, number); each positive one must lie within
    ``span`` of the largest (0 allowed when ``zero_ok``)."""
    top = max((v for _, v in values), default=0.0)
    out = []
    for where, v in values:
        if v > 0 and v * span < top:
            out.append(f"{where}: {v:.3g} is more than {span:.0e} times below the largest "
                       f"{what} ({top:.3g}); expected " + ("0 or " if zero_ok else "")
                       + f"a value >= {top / span:.3g}")
    return out


def _scale_problems(doc, types: list[str]) -> list[str]:
    """Numbers the LPs cannot resolve against each other (see `RATE_RANGE`)."""
    jobs = doc["jobs"]
    rates = [(f"jobs[{i}].throughput.{t}", float(v)) for i, j in enumerate(jobs)
             for t, v in j["throughput"].items()]
    rates += [(f"pairs[{q}].throughput.{t}[{s}]", float(x))
              for q, pr in enumerate(doc.get("pairs", [])) for t, xy in pr["throughput"].items()
              for s, x in enumerate(xy)]
    steps = [(f"jobs[{i}].steps_remaining", float(j["steps_remaining"]))
             for i, j in enumerate(jobs) if "steps_remaining" in j]
    weights = [(f"jobs[{i}].weight", float(j.get("weight", 1.0))) for i, j in enumerate(jobs)]
    tenants = [(f"tenants.{t}.weight", float(v.get("weight", 1.0)))
               for t, v in doc.get("tenants", {}).items()]
    return (_range_problems(rates, "throughput", RATE_RANGE, True)
            + _range_problems(steps, "steps_remaining", RATE_RANGE, True)
            + _range_problems(weights, "job weight", WEIGHT_RANGE, False)
            + _range_problems(tenants, "tenant weight", WEIGHT_RANGE, False))


def _cluster_problems(doc, types: list[str]) -> list[str]:
    """At least one job can run on the cluster (enough GPUs of a type it runs on)."""
    cap = doc["gpu_types"]
    for j in doc["jobs"]:
        sf = j.get("scale_factor", 1)
        if any(v > 0 and cap.get(t, 0) >= sf for t, v in j["throughput"].items()):
            return []
    if not any(cap.values()):
        return ["gpu_types: expected at least one GPU, every count is 0"]
    return [f"gpu_types: no job can run on this cluster (each needs more GPUs of the types it "
            f"runs on than there are: {json.dumps(cap)[:60]})"]


def _job_problems(doc, types: list[str]) -> list[str]:
    out = []
    jobs = doc["jobs"]
    dup = [k for k, c in Counter(j["id"] for j in jobs).items() if c > 1]
    if dup:
        out.append(f"jobs: duplicate job id {dup[0]!r}")
    tmap = doc.get("tenants")
    for i, j in enumerate(jobs):
        for t in j["throughput"]:
            if t not in types:
                out.append(f"jobs[{i}].throughput.{t}: unknown GPU type {t!r}; expected one of {types}")
        if not any(v > 0 for t, v in j["throughput"].items() if t in types):
            out.append(f"jobs[{i}].throughput: expected a throughput > 0 on at least one GPU type, "
                       f"got {json.dumps(j['throughput'])[:60]}")
        if tmap is not None and "tenant" in j and j["tenant"] not in tmap:
            out.append(f"jobs[{i}].tenant: unknown tenant {j['tenant']!r}; expected one of {sorted(tmap)}")
    return out


def _pair_problems(doc, types: list[str]) -> list[str]:
    out = []
    index = {j["id"]: i for i, j in enumerate(doc["jobs"])}
    seen = set()
    for q, pr in enumerate(doc.get("pairs", [])):
        a, b = pr["jobs"]
        bad = False
        for s, name in enumerate((a, b)):
            if name not in index:
                out.append(f"pairs[{q}].jobs[{s}]: unknown job {name!r}")
                bad = True
        if bad:
            continue
        if a == b:
            out.append(f"pairs[{q}].jobs: expected two different jobs, got {a!r} twice")
            continue
        sa = doc["jobs"][index[a]].get("scale_factor", 1)
        sb = doc["jobs"][index[b]].get("scale_factor", 1)
        if sa != sb:
            out.append(f"pairs[{q}].jobs: {a!r} has scale_factor {sa} and {b!r} has {sb}; "
                       f"expected equal scale factors")
        key = frozenset((a, b))
        if key in seen:
            out.append(f"pairs[{q}].jobs: duplicate pair {sorted(key)}")
        seen.add(key)
        for t in pr["throughput"]:
            if t not in types:
                out.append(f"pairs[{q}].throughput.{t}: unknown GPU type {t!r}; expected one of {types}")
    return out


def problem_from_dict(doc: Any, source: str = "<shares>") -> SharesProblem:
    """Validate an ``alloc.shares/1`` document and build the problem.

    Raises
    ------
    InputError
        One line naming ``source``, the field path and what was expected
        (every problem found is kept in ``.problems``).

    Parameters
    ----------
    doc : object
        The parsed document.
    source : str
        The file name the messages start with.

    Returns
    -------
    SharesProblem
    """
    problems = _nonfinite(doc) if isinstance(doc, (dict, list)) else []
    if not problems:
        problems = schema_problems(doc, "shares")
    if problems:
        raise InputError(problems, source)
    types = list(doc["gpu_types"])
    problems = _job_problems(doc, types) + _pair_problems(doc, types)
    if not problems:
        problems = _scale_problems(doc, types) + _cluster_problems(doc, types)
    if problems:
        raise InputError(problems, source)
    jobs = doc["jobs"]
    m, k = len(jobs), len(types)
    T = np.zeros((m, k))
    col = {t: c for c, t in enumerate(types)}
    for i, j in enumerate(jobs):
        for t, v in j["throughput"].items():
            T[i, col[t]] = float(v)

    def arr(key, default):
        return np.array([float(j.get(key, default)) for j in jobs])

    index = {j["id"]: i for i, j in enumerate(jobs)}
    pairs = []
    for pr in doc.get("pairs", []):
        P = np.zeros((k, 2))
        for t, (x, y) in pr["throughput"].items():
            P[col[t]] = (float(x), float(y))
        pairs.append(Pair(index[pr["jobs"][0]], index[pr["jobs"][1]], P))
    named = {j["tenant"] for j in jobs if "tenant" in j}
    tmap = doc.get("tenants", {})
    tenants = {t: TenantSpec(float(tmap.get(t, {}).get("weight", 1.0)), tmap.get(t, {}).get("policy"))
               for t in sorted(named | set(tmap))}
    return SharesProblem(
        gpu_types=tuple(types), capacity=np.array([float(doc["gpu_types"][t]) for t in types]),
        job_ids=tuple(j["id"] for j in jobs), scale_factor=arr("scale_factor", 1),
        weight=arr("weight", 1.0), throughput=T, steps_remaining=arr("steps_remaining", 0.0),
        elapsed_s=arr("elapsed_s", 0.0), isolated_time_s=arr("isolated_time_s", 0.0),
        tenant=tuple(j.get("tenant") for j in jobs), pairs=tuple(pairs), tenants=tenants,
        steps_given=np.array(["steps_remaining" in j for j in jobs]),
        name=str(doc.get("name", Path(source).stem if source != "<shares>" else "")))


def load_shares(path) -> SharesProblem:
    """Read and validate an ``alloc.shares/1`` file.

    Raises
    ------
    InputError
        Malformed JSON, NaN/Infinity, a schema or meaning problem: one line
        naming the file, the field and what was expected.
    """
    from ..shipped import resolve
    return problem_from_dict(read_json_strict(resolve(path, "examples")), str(path))


def problem_to_dict(p: SharesProblem) -> dict:
    """The ``alloc.shares/1`` document of a problem (round-trips through
    [`problem_from_dict`][alloc.shares.problem_from_dict])."""
    jobs = []
    for i, jid in enumerate(p.job_ids):
        d: dict[str, Any] = {"id": jid, "scale_factor": int(p.scale_factor[i]),
                             "weight": float(p.weight[i]),
                             "throughput": {t: float(p.throughput[i, j]) for j, t in enumerate(p.gpu_types)},
                             "steps_remaining": float(p.steps_remaining[i]),
                             "elapsed_s": float(p.elapsed_s[i]),
                             "isolated_time_s": float(p.isolated_time_s[i])}
        if p.tenant and p.tenant[i] is not None:
            d["tenant"] = p.tenant[i]
        jobs.append(d)
    doc: dict[str, Any] = {"format": SHARES_FORMAT}
    if p.name:
        doc["name"] = p.name
    doc["gpu_types"] = {t: int(p.capacity[j]) for j, t in enumerate(p.gpu_types)}
    doc["jobs"] = jobs
    if p.pairs:
        doc["pairs"] = [{"jobs": [p.job_ids[q.a], p.job_ids[q.b]],
                         "throughput": {t: [float(q.throughput[j, 0]), float(q.throughput[j, 1])]
                                        for j, t in enumerate(p.gpu_types) if q.throughput[j].any()}}
                        for q in p.pairs]
    if p.tenants:
        doc["tenants"] = {t: ({"weight": s.weight} | ({"policy": s.policy} if s.policy else {}))
                          for t, s in p.tenants.items()}
    return doc


# ------------------------------------------------------------------- result
def pair_key(p: SharesProblem, q: Pair) -> str:
    """The result key of a pair's shares: ``"a+b"``."""
    return f"{p.job_ids[q.a]}+{p.job_ids[q.b]}"


@dataclass(frozen=True, eq=False)
class SharesResult:
    """What a share policy returns (checked before it is returned).

    Attributes
    ----------
    policy : str
    status : Status
        ``optimal`` only when an LP was solved to optimality (with a
        certificate); ``feasible`` for heuristics and stopped searches;
        ``unknown`` when no shares could be found in time.
    objective : float or None
        The policy's objective, recomputed from the shares (see
        `alloc.shares.check`).
    bound : float or None
        A proven bound on the objective (the LP optimum's dual bound), or
        None.
    wall_time_s : float
    job_ids, gpu_types : tuple of str
    X : ndarray (m, k)
        Fraction of wall-clock time each job runs alone on ``sf_i`` GPUs of
        each type.
    pair_keys : tuple of str
    Y : ndarray (P, k)
        Fraction of time each pair runs together.
    effective : ndarray (m,)
        Effective throughput (steps/s), recomputed from the shares.
    unserved : dict
        Jobs that cannot run on this cluster, with the reason.
    stats : dict
        Solver statistics (iterations, rounds, sizes, seconds).
    """
    policy: str
    status: Status
    objective: float | None
    bound: float | None
    wall_time_s: float
    job_ids: tuple
    gpu_types: tuple
    X: np.ndarray
    pair_keys: tuple = ()
    Y: np.ndarray | None = None
    effective: np.ndarray | None = None
    unserved: Mapping[str, str] = field(default_factory=dict)
    stats: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shares(self) -> dict[str, dict[str, float]]:
        """``shares[job][type]``, pairs under ``"a+b"``."""
        out = {jid: dict(zip(self.gpu_types, map(float, row))) for jid, row in zip(self.job_ids, self.X)}
        if self.Y is not None:
            for key, row in zip(self.pair_keys, self.Y):
                out[key] = dict(zip(self.gpu_types, map(float, row)))
        return out

    @property
    def effective_throughput(self) -> dict[str, float]:
        """Steps/s of each job under the shares."""
        if self.effective is None:
            return {}
        return dict(zip(self.job_ids, map(float, self.effective)))


def _num(x):
    return None if x is None or not math.isfinite(x) else float(x)


def result_to_dict(r: SharesResult) -> dict:
    """The ``alloc.shares-result/1`` document of a result."""
    doc = {"format": RESULT_FORMAT, "policy": r.policy, "status": r.status.value,
           "objective": _num(r.objective), "bound": _num(r.bound),
           "wall_time_s": round(float(r.wall_time_s), 6), "shares": r.shares,
           "effective_throughput": r.effective_throughput}
    if r.unserved:
        doc["unserved"] = dict(r.unserved)
    if r.stats:
        doc["stats"] = {k: v for k, v in r.stats.items() if isinstance(v, (int, float, str, bool))}
    return doc


def dump_shares_result(r: SharesResult, path=None) -> str:
    """The result as JSON text (written to ``path`` when given).

    Parameters
    ----------
    r : SharesResult
    path : str or Path, optional

    Returns
    -------
    str
    """
    text = json.dumps(plain_numbers(result_to_dict(r)), indent=1) + "\n"
    if path is not None:
        Path(path).write_text(text)
    return text


__all__ = ["Pair", "RESULT_FORMAT", "SHARES_FORMAT", "SharesProblem", "SharesResult", "TenantSpec",
           "dump_shares_result", "load_shares", "pair_key", "problem_from_dict", "problem_to_dict",
           "read_json_strict", "result_to_dict"]

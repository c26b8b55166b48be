r"""Max-min fairness with space sharing in *typed* form: jobs of a few model
configurations, any two of equal scale factor allowed to share GPUs.

Gavel's (OSDI'20) max-min fairness with space sharing has a time share for
every job alone on every GPU type and for every *pair* of jobs together on
every type: with ``m`` jobs, ``m(m-1)/2`` pairs -- 2.1 million at 2,048
jobs, 6.3 million pair columns on three types.  Its rates, though, depend
only on the two jobs' model configurations (Gavel's measured table), so a
problem is given here by

* ``alone[c, j]``: steps/s of configuration ``c`` alone on ``scale[c]`` GPUs
  of type ``j``;
* ``pair[c, d, j] = (r, s)``: steps/s of a ``c`` job and a ``d`` job while
  they share the same ``scale`` GPUs of type ``j`` (0: not measured or not
  possible; only configurations of equal scale factor pair);
* each job's configuration and weight, and the GPUs of each type.

Jobs of one configuration and one weight form a *class*; `alloc.sched.pop.classes`
solves the whole problem at the size of its classes, exactly.  For checks
and small inputs the same problem is also an ``alloc.shares/1`` problem with
every pair written out (`PairedProblem.to_shares`).

Units: steps/s, GPUs, fractions of wall-clock time.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from ...errors import InputError
from ...shares.io import Pair, SharesProblem


@dataclass(frozen=True, eq=False)
class PairedProblem:
    """Jobs of typed model configurations that may share GPUs in pairs.

    Attributes
    ----------
    gpu_types : tuple of str
    capacity : ndarray (k,)
        GPUs of each type.
    models : tuple of str
        Names of the ``M`` configurations.
    scale : ndarray of int (M,)
        GPUs one run of each configuration takes (its scale factor).
    alone : ndarray (M, k)
        Steps/s alone on ``scale`` GPUs of each type (0: cannot run there).
    pair : ndarray (M, M, k, 2)
        Steps/s of a (row, column) configuration pair sharing GPUs; symmetric
        (``pair[c, d, j] == pair[d, c, j][::-1]``).
    job_model : ndarray of int (m,)
        Each job's configuration.
    weight : ndarray (m,)
        Each job's weight (> 0).
    job_ids : tuple of str

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> p = PairedProblem.build(("v100",), [2], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 0, 1])
    >>> p.m, p.k, p.class_count.tolist()
    (3, 1, [2, 1])
    """
    gpu_types: tuple
    capacity: np.ndarray
    models: tuple
    scale: np.ndarray
    alone: np.ndarray
    pair: np.ndarray
    job_model: np.ndarray
    weight: np.ndarray
    job_ids: tuple

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise InputError(problems, "paired problem")

    # ------------------------------------------------------------ building
    @classmethod
    def build(cls, gpu_types: Sequence[str], capacity: Sequence[float], models: Sequence[str],
              scale: Sequence[int], alone, pairs: dict, job_model: Sequence[int],
              weight: Sequence[float] | None = None,
              job_ids: Sequence[str] | None = None) -> "PairedProblem":
        """A problem from plain values; ``pairs`` maps ``(model, model)`` to
        ``{gpu type: (rate of the first, rate of the second)}`` (the reverse
        pair is filled in).

        Raises
        ------
        InputError
            One line naming the field and what was expected.
        """
        k, M = len(gpu_types), len(models)
        P = np.zeros((M, M, k, 2))
        index = {name: c for c, name in enumerate(models)}
        col = {t: j for j, t in enumerate(gpu_types)}
        for (ma, mb), rates in pairs.items():
            if ma not in index or mb not in index:
                raise InputError(f"pairs: unknown model {ma if ma not in index else mb!r}; "
                                 f"expected one of {list(models)}")
            for t, (r, s) in rates.items():
                if t not in col:
                    raise InputError(f"pairs[{ma!r}, {mb!r}]: unknown GPU type {t!r}; "
                                     f"expected one of {list(gpu_types)}")
                P[index[ma], index[mb], col[t]] = (r, s)
                P[index[mb], index[ma], col[t]] = (s, r)
        m = len(job_model)
        return cls(tuple(gpu_types), np.asarray(capacity, dtype=float), tuple(models),
                   np.asarray(scale, dtype=int), np.asarray(alone, dtype=float), P,
                   np.asarray(job_model, dtype=int),
                   np.ones(m) if weight is None else np.asarray(weight, dtype=float),
                   tuple(job_ids) if job_ids is not None else tuple(f"j{i}" for i in range(m)))

    @classmethod
    def from_table(cls, table, job_model: Sequence[int], capacity: Sequence[float],
                   weight: Sequence[float] | None = None,
                   job_ids: Sequence[str] | None = None) -> "PairedProblem":
        """A problem over Gavel's measured throughputs
        ([`ThroughputTable`][alloc.sim.gavel.ThroughputTable]): its configurations,
        rates alone and co-located rates."""
        m = len(job_model)
        scale = table.scale if table.scale is not None else np.ones(len(table.models), dtype=int)
        return cls(tuple(table.types), np.asarray(capacity, dtype=float),
                   tuple(str(x) for x in table.models), np.asarray(scale, dtype=int),
                   np.asarray(table.alone, dtype=float), np.asarray(table.pair, dtype=float),
                   np.asarray(job_model, dtype=int),
                   np.ones(m) if weight is None else np.asarray(weight, dtype=float),
                   tuple(job_ids) if job_ids is not None else tuple(f"j{i}" for i in range(m)))

    # ------------------------------------------------------------- sizes
    @property
    def m(self) -> int:
        """Number of jobs."""
        return len(self.job_model)

    @property
    def k(self) -> int:
        """Number of GPU types."""
        return len(self.gpu_types)

    # ----------------------------------------------------------- classes
    @cached_property
    def _classes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        key = np.stack([self.job_model.astype(float), self.weight], axis=1)
        uniq, first, inv, count = np.unique(key, axis=0, return_index=True, return_inverse=True,
                                            return_counts=True)
        return first, inv.reshape(-1), count, self.job_model[first]

    @property
    def job_class(self) -> np.ndarray:
        """Each job's class (jobs of one configuration and one weight)."""
        return self._classes[1]

    @property
    def class_count(self) -> np.ndarray:
        """Members of each class."""
        return self._classes[2]

    @property
    def class_model(self) -> np.ndarray:
        """Each class's configuration."""
        return self._classes[3]

    @property
    def class_weight(self) -> np.ndarray:
        """Each class's weight."""
        return self.weight[self._classes[0]]

    # ------------------------------------------------------------- rates
    @cached_property
    def runnable_alone(self) -> np.ndarray:
        """``alone`` where the type has at least ``scale`` GPUs, else 0 (M, k)."""
        return np.where(self.capacity[None, :] >= self.scale[:, None], self.alone, 0.0)

    @cached_property
    def runnable_pair(self) -> np.ndarray:
        """``pair`` where the type has at least ``scale`` GPUs, else 0 (M, M, k, 2)."""
        ok = self.capacity[None, None, :] >= self.scale[:, None, None]
        return np.where(ok[..., None], self.pair, 0.0)

    @cached_property
    def proportional(self) -> np.ndarray:
        r"""Each job's proportional throughput $P_i = \sum_j T_{ij} n_j / N$
        (steps/s), the normaliser of Gavel's max-min fairness."""
        T = self.runnable_alone[self.job_model]
        return T @ self.capacity / max(float(self.capacity.sum()), 1e-300)

    @cached_property
    def served(self) -> np.ndarray:
        """Jobs that can run alone somewhere on this cluster (mask)."""
        return np.asarray((self.runnable_alone[self.job_model] > 0).any(axis=1))

    # ---------------------------------------------------------- subsets
    def subset(self, jobs: Sequence[int] | np.ndarray, capacity=None) -> "PairedProblem":
        """The problem of the jobs ``jobs`` (indices, in that order) on
        ``capacity`` GPUs per type (default: unchanged)."""
        idx = np.asarray(jobs, dtype=int)
        cap = self.capacity if capacity is None else np.asarray(capacity, dtype=float)
        return PairedProblem(self.gpu_types, cap, self.models, self.scale, self.alone, self.pair,
                             self.job_model[idx], self.weight[idx],
                             tuple(self.job_ids[i] for i in idx))

    # -------------------------------------------------- as alloc.shares/1
    def pair_rates(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Rates (P, k, 2) of the job pairs ``(a[q], b[q])`` sharing each type."""
        return self.pair[self.job_model[a], self.job_model[b]]

    def to_shares(self, a: np.ndarray | None = None, b: np.ndarray | None = None) -> SharesProblem:
        """The ``alloc.shares/1`` problem with the job pairs ``(a[q], b[q])``
        written out; every pair of jobs with a co-located rate when ``a`` and
        ``b`` are None (``m(m-1)/2`` of them: for checks and small inputs).

        Examples
        --------
        >>> from alloc.sched.pop.problem import PairedProblem
        >>> p = PairedProblem.build(("v100",), [2], ("a", "b"), [1, 1], [[4.0], [2.0]],
        ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 0, 1])
        >>> len(p.to_shares().pairs)
        2
        """
        if a is None or b is None:
            a, b = np.triu_indices(self.m, 1)
            keep = self.pair_rates(a, b).any(axis=(1, 2))
            a, b = a[keep], b[keep]
        a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
        rates = self.pair_rates(a, b)
        pairs = tuple(Pair(int(x), int(y), rates[q]) for q, (x, y) in enumerate(zip(a, b)))
        m = self.m
        return SharesProblem(self.gpu_types, self.capacity, self.job_ids,
                             self.scale[self.job_model].astype(float), self.weight,
                             self.alone[self.job_model], np.zeros(m), np.zeros(m), np.zeros(m),
                             pairs=pairs)


def _problems(p: PairedProblem) -> list[str]:
    """Every problem of a `PairedProblem`'s fields, one line each."""
    out = []
    k, M = len(p.gpu_types), len(p.models)
    cap = np.asarray(p.capacity)
    if cap.shape != (k,) or not np.isfinite(cap).all() or (cap < 0).any():
        return [f"capacity: expected {k} GPU counts >= 0, got {np.asarray(cap).tolist()!r}"]
    if np.asarray(p.scale).shape != (M,) or (np.asarray(p.scale) < 1).any():
        return [f"scale: expected {M} scale factors >= 1"]
    if np.asarray(p.alone).shape != (M, k):
        return [f"alone: expected {M} x {k} rates, got shape {np.asarray(p.alone).shape}"]
    if np.asarray(p.pair).shape != (M, M, k, 2):
        return [f"pair: expected {M} x {M} x {k} x 2 rates, got shape {np.asarray(p.pair).shape}"]
    for name in ("alone", "pair"):
        arr = getattr(p, name)
        if not np.isfinite(arr).all() or (arr < 0).any():
            out.append(f"{name}: expected finite rates >= 0")
    if out:
        return out
    if not np.array_equal(p.pair, p.pair.transpose(1, 0, 2, 3)[..., ::-1]):
        c, d = np.argwhere((p.pair != p.pair.transpose(1, 0, 2, 3)[..., ::-1]).any(axis=(2, 3)))[0]
        out.append(f"pair[{p.models[c]!r}, {p.models[d]!r}]: expected the reverse pair's rates "
                   f"swapped (a pair's rates do not depend on the order it is named in)")
    unequal = (p.scale[:, None] != p.scale[None, :]) & p.pair.any(axis=(2, 3))
    if unequal.any():
        c, d = np.argwhere(unequal)[0]
        out.append(f"pair[{p.models[c]!r}, {p.models[d]!r}]: scale factors {p.scale[c]} and "
                   f"{p.scale[d]} differ; expected no co-located rate")
    jm = np.asarray(p.job_model)
    if jm.ndim != 1 or ((jm < 0) | (jm >= M)).any():
        bad = int(np.flatnonzero((jm < 0) | (jm >= M))[0]) if jm.ndim == 1 else 0
        return out + [f"job_model[{bad}]: expected a configuration index in 0..{M - 1}"]
    w = np.asarray(p.weight)
    if w.shape != jm.shape or not np.isfinite(w).all() or (w <= 0).any():
        return out + [f"weight: expected {len(jm)} finite weights > 0"]
    if len(p.job_ids) != len(jm) or len(set(p.job_ids)) != len(jm):
        out.append(f"job_ids: expected {len(jm)} distinct ids")
    return out


def fig2_problem(table, jobs: int, seed: int = 0) -> PairedProblem:
    """POP's Fig. 2 instance (Narayanan et al., SOSP'21): ``jobs`` single-GPU
    jobs whose configurations are drawn uniformly (seeded) from Gavel's
    table, weight 1, on ``max(jobs // 4, 1)`` GPUs of each type; every two
    jobs may share GPUs at their measured co-located rates.

    Parameters
    ----------
    table : ThroughputTable
        Gavel's measured throughputs (single-GPU configurations).
    jobs : int
        Number of jobs (>= 1).
    seed : int

    Returns
    -------
    PairedProblem

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from alloc.sched.pop.problem import fig2_problem
    >>> t = SimpleNamespace(types=("v100",), models=("a", "b"), scale=np.ones(2, dtype=int),
    ...                     alone=np.ones((2, 1)), pair=np.zeros((2, 2, 1, 2)))
    >>> p = fig2_problem(t, 8, seed=1)
    >>> p.m, p.capacity.tolist()
    (8, [2.0])
    """
    if not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs: expected an integer >= 1, got {jobs!r}")
    rng = random.Random(seed)
    models = [rng.randrange(len(table.models)) for _ in range(jobs)]
    cap = [max(jobs // 4, 1)] * len(table.types)
    return PairedProblem.from_table(table, models, cap)


__all__ = ["PairedProblem", "fig2_problem"]

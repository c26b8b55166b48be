r"""Speedup tables: every job's best goodput over (nodes, GPUs), at once.

For job ``j`` with a fitted model, $G^*_j(n, k)$ is its goodput at the best
batch with ``k`` GPUs on ``n`` nodes (`alloc.goodput.model.best_batch`);
its **speedup** over a base allocation $(n_0, k_0)$ is

$$ \mathrm{SP}_j(n, k) = G^*_j(n, k) / G^*_j(n_0, k_0) $$

(Pollux's base is the fair share: one node, $k_0 = \lceil G / J\rceil$ GPUs).
A job without a model yet gets $k / k_0$.  Entries with ``k = 0`` are 0;
entries with ``n > k`` or ``k`` above the job's cap are 0 too (never
feasible).  All queries of all jobs are evaluated in one vectorised pass.

Examples
--------
>>> from alloc.goodput.speedup import JobModel, speedup_tables
>>> from alloc.goodput.model import PerfParams, GradStats, Limits
>>> th = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
>>> m = JobModel(th, GradStats(1.0, 4.0), Limits(128, 4096, 32, 1024), 8)
>>> t = speedup_tables([m, JobModel(None, None, Limits(128, 4096, 32, 1024), 4)], 2, 8, base=(1, 2))
>>> t.shape, round(float(t[0, 1, 2]), 6), float(t[1, 1, 4])
((2, 3, 9), 1.0, 2.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import GradStats, Limits, PerfParams, best_batch_many


@dataclass(frozen=True)
class JobModel:
    """What the table needs of one job: its fitted parameters and gradient
    statistics (None before it has run), batch limits and GPU cap."""
    params: PerfParams | None
    grad: GradStats | None
    limits: Limits
    max_replicas: int

    @property
    def fitted(self) -> bool:
        """It has a model (parameters and gradient statistics)."""
        return self.params is not None and self.grad is not None


def goodput_table(models: list[JobModel], nodes: int, kmax: int) -> np.ndarray:
    """``G*_j(n, k)`` for ``n <= nodes``, ``k <= kmax`` (0 where infeasible
    or the job has no model): shape (J, nodes+1, kmax+1)."""
    J = len(models)
    out = np.zeros((J, nodes + 1, kmax + 1))
    qj, qn, qk = [], [], []
    for j, m in enumerate(models):
        if not m.fitted:
            continue
        kc = min(kmax, m.max_replicas)
        n_idx, k_idx = np.meshgrid(np.arange(1, nodes + 1), np.arange(1, kc + 1), indexing="ij")
        ok = n_idx <= k_idx
        qj.append(np.full(int(ok.sum()), j))
        qn.append(n_idx[ok])
        qk.append(k_idx[ok])
    if not qj:
        return out
    jj, nn, kk = np.concatenate(qj), np.concatenate(qn), np.concatenate(qk)
    g = _evaluate(models, jj, nn, kk)
    out[jj, nn, kk] = g
    return out


def _evaluate(models: list[JobModel], jj: np.ndarray, nn: np.ndarray, kk: np.ndarray
              ) -> np.ndarray:
    theta = np.array([m.params.as_array() for m in models if m.params is not None]
                     or [np.zeros(7)])
    pos = np.cumsum([m.params is not None for m in models]) - 1
    th = theta[pos[jj]]
    sq = np.array([m.grad.sqr if m.grad else 1.0 for m in models])[jj]
    vr = np.array([m.grad.var if m.grad else 0.0 for m in models])[jj]
    lim = np.array([(m.limits.init, m.limits.max, m.limits.local_lo, m.limits.local_hi)
                    for m in models], dtype=float)[jj]
    g, _, _ = best_batch_many(th, sq, vr, lim[:, 0], lim[:, 1], lim[:, 2], lim[:, 3], nn, kk)
    return g


def base_goodput(models: list[JobModel], base: tuple[int, int]) -> np.ndarray:
    """``G*_j(n0, k0)`` of each job (0 without a model)."""
    J = len(models)
    fitted = np.array([m.fitted for m in models], dtype=bool)
    out = np.zeros(J)
    if fitted.any():
        jj = np.flatnonzero(fitted)
        out[jj] = _evaluate(models, jj, np.full(len(jj), base[0]), np.full(len(jj), base[1]))
    return out


def speedup_tables(models: list[JobModel], nodes: int, kmax: int,
                   base: tuple[int, int] = (1, 1)) -> np.ndarray:
    """``SP_j(n, k)`` (module notes): shape (J, nodes+1, kmax+1)."""
    table = goodput_table(models, nodes, kmax)
    b = base_goodput(models, base)
    J = len(models)
    k = np.arange(kmax + 1, dtype=float)
    n = np.arange(nodes + 1)
    for j, m in enumerate(models):
        if m.fitted and b[j] > 0:
            table[j] /= b[j]
        else:
            kc = min(kmax, m.max_replicas)
            row = np.where(k <= kc, k / base[1], 0.0)
            table[j] = np.where(n[:, None] <= k[None], row[None], 0.0)
            table[j, 0] = 0.0
    if J:
        table[:, :, 0] = 0.0
    return table


__all__ = ["JobModel", "base_goodput", "goodput_table", "speedup_tables"]

r"""Share policies that are not optimisations: ``isolated``, ``proportional``,
``fifo``, ``gandiva`` and ``allox``.

Each returns shares that `alloc.shares.check` then verifies; none
claims optimality.

* ``isolated`` -- every served job gets ``n_j/m`` of every type it can run
  on, divided by ``sf_i``, its time capped to 1 (Gavel's isolated baseline).
* ``proportional`` -- every job splits its time over the types it can run
  on in proportion to their sizes, $X_{ij} = n_j / \max(N, \sum_i sf_i)$.
* ``fifo`` -- in arrival order (longest ``elapsed_s`` first), each job gets
  all of its time on the fastest type that still has ``sf_i`` free GPUs
  (whole GPUs, ``X_ij`` in {0, 1}); the rest wait.
* ``gandiva`` -- Gandiva's time slicing with random packing (Xiao et al.,
  OSDI'18): with ``pairs`` given, jobs are paired at random (seeded) with a
  partner whose pair rate beats time slicing on some type
  ($T^q_a/T_a + T^q_b/T_b > 1$); then every unit (a pair or a single
  job) gets an equal slice of every type it can use, like ``isolated``.
* ``allox`` -- AlloX (Le et al., EuroSys'20): jobs are matched to slots
  ``(type j, position k)`` at minimum total completion time, the cost of job
  ``i`` in the ``k``-th slot from the end being $k \cdot sf_i \cdot
  s_i / T_{ij}$ (each position holds ``n_j`` jobs, one per GPU; a gang of
  ``sf_i`` GPUs is charged its GPU-seconds, which keeps the matching exact
  for single-GPU jobs and lets multi-GPU jobs in).  The matching is a
  transportation LP (totally unimodular, so its vertex optimum is integral).
  Each type then runs its queue from the front while GPUs are free.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from ..deadline import Deadline
from ..kernel import INF, LinearModel, solve
from ..model import Status
from .check import isolated_shares, pair_arrays
from .io import SharesProblem


def isolated(p: SharesProblem) -> np.ndarray:
    """Shares of the ``isolated`` policy (see the module notes)."""
    return isolated_shares(p)


def proportional(p: SharesProblem) -> np.ndarray:
    """Shares of the ``proportional`` policy (see the module notes)."""
    served = p.served
    demand = max(float(p.capacity.sum()), float(p.scale_factor[served].sum()))
    X = np.where(p.runnable_throughput > 0, p.capacity[None, :] / demand, 0.0)
    return X * served[:, None]


def arrival_order(p: SharesProblem) -> np.ndarray:
    """Jobs by arrival: longest ``elapsed_s`` first, then input order."""
    return np.lexsort((np.arange(p.m), -p.elapsed_s))


def fifo(p: SharesProblem) -> np.ndarray:
    """Shares of the ``fifo`` policy (see the module notes)."""
    T = p.runnable_throughput
    free = p.capacity.copy()
    X = np.zeros((p.m, p.k))
    for i in arrival_order(p):
        ok = (T[i] > 0) & (free >= p.scale_factor[i])
        if ok.any():
            j = int(np.argmax(np.where(ok, T[i], -1.0)))
            X[i, j] = 1.0
            free[j] -= p.scale_factor[i]
    return X


def _packing_partners(p: SharesProblem) -> dict[int, list[int]]:
    """Pairs worth packing: on some type both run and together beat time
    slicing (``T^q_a/T_a + T^q_b/T_b > 1``).  Maps job -> pair indices."""
    a, b, PT = pair_arrays(p)
    T = p.runnable_throughput
    out: dict[int, list[int]] = {}
    for q in range(len(a)):
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = PT[q, :, 0] / T[a[q]] + PT[q, :, 1] / T[b[q]]
        both = (PT[q, :, 0] > 0) & (PT[q, :, 1] > 0)
        if (both & (gain > 1)).any():
            out.setdefault(int(a[q]), []).append(q)
            out.setdefault(int(b[q]), []).append(q)
    return out


def gandiva(p: SharesProblem, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Shares of the ``gandiva`` policy (see the module notes): ``(X, Y)``.

    Parameters
    ----------
    p : SharesProblem
    seed : int
        Seed of the random pairing.

    Returns
    -------
    X : ndarray (m, k)
    Y : ndarray (P, k)
    """
    rng = np.random.default_rng(seed)
    a, b, PT = pair_arrays(p)
    partners = _packing_partners(p)
    paired = np.zeros(p.m, dtype=bool)
    chosen = []
    for i in rng.permutation(p.m):
        if paired[i] or not p.served[i]:
            continue
        free = [q for q in partners.get(int(i), []) if not paired[a[q]] and not paired[b[q]]]
        if free:
            q = free[int(rng.integers(len(free)))]
            paired[a[q]] = paired[b[q]] = True
            chosen.append(q)
    singles = np.flatnonzero(p.served & ~paired)
    units = len(singles) + len(chosen)
    X = np.zeros((p.m, p.k))
    Y = np.zeros((len(a), p.k))
    if units == 0:
        return X, Y
    T = p.runnable_throughput
    X[singles] = np.where(T[singles] > 0, p.capacity / units, 0.0) / p.scale_factor[singles, None]
    for q in chosen:
        Y[q] = np.where((PT[q, :, 0] > 0) & (PT[q, :, 1] > 0), p.capacity / units, 0.0) / p.scale_factor[a[q]]
    X /= np.maximum(X.sum(axis=1), 1.0)[:, None]
    Y /= np.maximum(Y.sum(axis=1), 1.0)[:, None]
    return X, Y


def allox(p: SharesProblem, deadline: Deadline) -> tuple[np.ndarray, Status, dict]:
    """Shares of the ``allox`` policy (see the module notes):
    ``(X, status of the matching, stats)``.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        The matching LP gets the time left on it.

    Returns
    -------
    X : ndarray (m, k)
        Whole-GPU shares (0 or 1).
    status : Status
        ``FEASIBLE``, or ``UNKNOWN`` without a matching in time.
    stats : dict
        ``allox_total_completion_s``: the matching's total completion time.
    """
    T = p.runnable_throughput
    live = np.flatnonzero(p.served & (p.steps_remaining > 0))
    X = np.zeros((p.m, p.k))
    if len(live) == 0:
        return X, Status.FEASIBLE, {}
    m = len(live)
    K = [int(math.ceil(m / n)) if n > 0 else 0 for n in p.capacity]
    slot0 = np.concatenate([[0], np.cumsum(K)])
    iis: list[np.ndarray] = []
    jjs: list[np.ndarray] = []
    kks: list[np.ndarray] = []
    for j in range(p.k):
        rows = np.flatnonzero(T[live, j] > 0)
        if K[j] == 0 or len(rows) == 0:
            continue
        iis.append(np.repeat(rows, K[j]))
        jjs.append(np.full(len(rows) * K[j], j))
        kks.append(np.tile(np.arange(1, K[j] + 1), len(rows)))
    ii, jj, kk = np.concatenate(iis), np.concatenate(jjs), np.concatenate(kks)
    gi = live[ii]
    cost = kk * p.scale_factor[gi] * p.steps_remaining[gi] / T[gi, jj]
    model = LinearModel("allox-matching", maximize=False)
    cols = model.add_vars(len(ii), 0.0, 1.0, obj=cost)
    slot = slot0[jj] + kk - 1
    M = sparse.coo_matrix((np.ones(2 * len(ii)), (np.concatenate([ii, m + slot]),
                                                 np.concatenate([cols, cols]))),
                          shape=(m + int(slot0[-1]), model.n))
    cap = np.concatenate([np.full(K[j], p.capacity[j]) for j in range(p.k)])
    model.add_rows(M, np.concatenate([np.ones(m), np.full(len(cap), -INF)]),
                   np.concatenate([np.ones(m), cap]))
    sol = solve(model, "highs", deadline=deadline, relax=True)
    if sol.x is None or sol.objective is None:
        return X, Status.UNKNOWN, {"matching": sol.status.value}
    pick = sol.x > 0.5
    free = p.capacity.copy()
    order = np.lexsort((ii[pick], -kk[pick]))         # earliest position first
    for r in order:
        i, j = gi[pick][r], jj[pick][r]
        if free[j] >= p.scale_factor[i]:
            X[i, j] = 1.0
            free[j] -= p.scale_factor[i]
    return X, Status.FEASIBLE, {"allox_total_completion_s": float(sol.objective)}


__all__ = ["allox", "arrival_order", "fifo", "gandiva", "isolated", "proportional"]

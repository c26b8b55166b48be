r"""Check shares and recompute what they are worth.

Every result of [`alloc.shares.solve_shares`][alloc.shares.policies.solve_shares] passes through
here before
it is returned: shares that break a rule raise
[`SolverError`][alloc.errors.SolverError] (a policy bug never becomes an answer),
and the objective and effective throughputs are recomputed from the shares,
never copied from a solver.

Feasible (within `TOL`): every share ``>= 0``; each job's time alone
and in pairs sums to ``<= 1``; per type $\sum_i sf_i X_{ij} +
\sum_q sf_q Y_{qj} \le n_j$ (a pair counts its GPUs once); no share on a
type with fewer GPUs than the job's scale factor.

Measures (``T`` the throughputs, ``N = sum_j n_j``):

* effective throughput $eff_i = \sum_j T_{ij}X_{ij} + \sum_{q\ni i}\sum_j T^q_{ij}Y_{qj}$;
* proportional throughput $P_i = \sum_j T_{ij} n_j / N$;
* normalised share $sf_i\, eff_i / (w_i P_i)$;
* isolated share: ``1/m`` of every type, divided by ``sf_i``, each job's
  time capped to 1; ``iso_i`` its throughput;
* heterogeneity-agnostic versions replace ``T_ij`` by ``1`` where the job
  can run (and a pair's rate by its fraction of the job's rate alone).
"""
from __future__ import annotations

import numpy as np

from .io import SharesProblem

#: Feasibility tolerance of a returned result.
TOL = 1e-6


def pair_arrays(p: SharesProblem, runnable: bool = True):
    """The pairs as arrays (computed once per problem object, read-only).

    Parameters
    ----------
    p : SharesProblem
    runnable : bool
        Zero the rates on types with fewer GPUs than the pair's scale factor.

    Returns
    -------
    a, b : ndarray of int (P,)
        The two jobs of each pair.
    PT : ndarray (P, k, 2)
        Steps/s of ``a`` and ``b`` while sharing each type.
    """
    kept = p.__dict__.setdefault("_pair_arrays", {})
    if runnable not in kept:
        kept[runnable] = _pair_arrays(p, runnable)
    return kept[runnable]


def _pair_arrays(p: SharesProblem, runnable: bool):
    if not p.pairs:
        out = np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros((0, p.k, 2))
    elif runnable:
        a, b, PT = pair_arrays(p, runnable=False)
        out = a, b, np.where((p.capacity[None, :] >= p.scale_factor[a][:, None])[:, :, None], PT, 0.0)
    else:
        a = np.fromiter((q.a for q in p.pairs), dtype=int, count=len(p.pairs))
        b = np.fromiter((q.b for q in p.pairs), dtype=int, count=len(p.pairs))
        out = a, b, np.stack([q.throughput for q in p.pairs]).astype(float)
    for arr in out:
        arr.setflags(write=False)
    return out


def agnostic_throughputs(p: SharesProblem):
    """Heterogeneity-agnostic rates.

    Returns
    -------
    T : ndarray (m, k)
        ``1`` where job ``i`` can run on type ``j`` alone, else 0.
    PT : ndarray (P, k, 2)
        A pair member's rate as a fraction of its rate alone on that type.
    """
    T = p.runnable_throughput
    Ta = (T > 0).astype(float)
    a, b, PT = pair_arrays(p)
    if len(a):
        ref = np.stack([T[a], T[b]], axis=2)
        PT = np.divide(PT, ref, out=np.zeros_like(PT), where=ref > 0)
    return Ta, PT


def effective(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None, T=None, PT=None):
    r"""Effective throughput $eff_i = \sum_j T_{ij}X_{ij} + \sum_{q\ni i}\sum_j T^q_{ij}Y_{qj}$.

    Parameters
    ----------
    p : SharesProblem
    X : ndarray (m, k)
        Shares alone.
    Y : ndarray (P, k), optional
        Pair shares.
    T, PT : ndarray, optional
        Rates to use instead of the measured ones (e.g. agnostic).

    Returns
    -------
    ndarray (m,)
        Steps/s (or the units of ``T``).
    """
    T = p.throughput if T is None else T
    eff = (T * X).sum(axis=1)
    if Y is not None and len(Y):
        a, b, PTr = pair_arrays(p, runnable=False)
        PT = PTr if PT is None else PT
        np.add.at(eff, a, (PT[:, :, 0] * Y).sum(axis=1))
        np.add.at(eff, b, (PT[:, :, 1] * Y).sum(axis=1))
    return eff


def proportional_throughput(p: SharesProblem, T=None) -> np.ndarray:
    r"""Proportional throughput $P_i = \sum_j T_{ij} n_j / N$ (steps/s): the
    rate of a job splitting its time over the types in proportion to their
    sizes.

    Parameters
    ----------
    p : SharesProblem
    T : ndarray (m, k), optional
        Rates (default: the runnable measured throughputs).

    Returns
    -------
    ndarray (m,)
    """
    T = p.runnable_throughput if T is None else T
    return T @ p.capacity / max(float(p.capacity.sum()), 1e-300)


def isolated_shares(p: SharesProblem, served: np.ndarray | None = None) -> np.ndarray:
    r"""The isolated share $X_{ij} = (n_j/m)/sf_i$ on every type job ``i``
    can run on, each job's time scaled down to at most 1 (``m`` served jobs).

    Parameters
    ----------
    p : SharesProblem
    served : ndarray of bool (m,), optional
        The jobs that count (default: those that can run).

    Returns
    -------
    ndarray (m, k)
        Fractions of wall-clock time.
    """
    served = p.served if served is None else served
    m = max(int(served.sum()), 1)
    X = (p.capacity[None, :] / m) / p.scale_factor[:, None]
    X = np.where(p.runnable_throughput > 0, X, 0.0) * served[:, None]
    tot = X.sum(axis=1)
    return X / np.maximum(tot, 1.0)[:, None]


def normalized_shares(p: SharesProblem, eff: np.ndarray, agnostic: bool = False) -> np.ndarray:
    r"""Normalised shares $sf_i\,eff_i/(w_i P_i)$ (dimensionless; 1 is a
    job's weighted proportional share).

    Parameters
    ----------
    p : SharesProblem
    eff : ndarray (m,)
        Effective throughputs (in the units of the rates used).
    agnostic : bool
        Normalise by the agnostic proportional throughput.

    Returns
    -------
    ndarray (m,)
        NaN for jobs that cannot run.
    """
    T = agnostic_throughputs(p)[0] if agnostic else None
    P = proportional_throughput(p, T)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(p.served, p.scale_factor * eff / (p.weight * P), np.nan)


def ftf_rho(p: SharesProblem, eff: np.ndarray) -> np.ndarray:
    r"""Finish-time fairness $\rho_i = (t_i + s_i/eff_i)/(C_i + s_i/iso_i)$
    (Themis): finish time under the shares over finish time on the isolated
    share.

    Parameters
    ----------
    p : SharesProblem
    eff : ndarray (m,)
        Effective throughputs (steps/s).

    Returns
    -------
    ndarray (m,)
        NaN for jobs that cannot run or have no steps left; ``inf`` for a
        job without throughput.
    """
    iso = (p.throughput * isolated_shares(p)).sum(axis=1)
    s, t, C = p.steps_remaining, p.elapsed_s, p.isolated_time_s
    live = p.served & (s > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (t + np.where(eff > 0, s / eff, np.inf)) / (C + s / iso)
    return np.where(live, rho, np.nan)


def objective(p: SharesProblem, kind: str, X: np.ndarray, Y: np.ndarray | None,
              eff: np.ndarray) -> float | None:
    """The objective of ``kind`` recomputed from the shares.

    Parameters
    ----------
    p : SharesProblem
    kind : str
        ``min-share`` / ``min-share-agnostic``: the smallest normalised share;
        ``sum``: total effective throughput (steps/s); ``makespan``: the
        largest ``s_i / eff_i`` (seconds); ``ftf``: the largest ``rho_i``;
        ``tenant-share``: the smallest tenant aggregate normalised share per
        unit of tenant weight.
    X, Y : ndarray
        Shares alone and in pairs.
    eff : ndarray (m,)
        Effective throughputs of ``X, Y``.

    Returns
    -------
    float or None
        None when no job counts (or a time is infinite).
    """
    served = p.served
    if kind in ("min-share", "min-share-agnostic"):
        agn = kind.endswith("agnostic")
        effk = effective(p, X, Y, *agnostic_throughputs(p)) if agn else eff
        vals = normalized_shares(p, effk, agn)[served]
        return float(vals.min()) if len(vals) else None
    if kind == "sum":
        return float(eff.sum())
    if kind == "makespan":
        live = served & (p.steps_remaining > 0)
        if not live.any() or (eff[live] <= 0).any():
            return None
        return float((p.steps_remaining[live] / eff[live]).max())
    if kind == "ftf":
        rho = ftf_rho(p, eff)
        rho = rho[~np.isnan(rho)]
        return float(rho.max()) if len(rho) and np.isfinite(rho).all() else None
    if kind == "tenant-share":
        share = normalized_shares(p, eff) * p.weight
        names, weights = tenant_table(p)
        tot = np.zeros(len(weights))
        np.add.at(tot, names, np.where(served, share, 0.0))
        has = np.bincount(names[served], minlength=len(weights)) > 0
        return float((tot[has] / weights[has]).min()) if has.any() else None
    raise ValueError(f"unknown objective kind {kind!r}")


def tenant_table(p: SharesProblem) -> tuple[np.ndarray, np.ndarray]:
    """Tenants as arrays; a job without a tenant is a tenant of its own with
    its job weight.

    Returns
    -------
    index : ndarray of int (m,)
        Each job's tenant.
    weight : ndarray (tenants,)
    """
    names = list(p.tenants)
    idx = np.zeros(p.m, dtype=int)
    weights = [p.tenants[t].weight for t in names]
    for i in range(p.m):
        t = p.tenant[i] if p.tenant else None
        if t is None:
            idx[i] = len(weights)
            weights.append(float(p.weight[i]))
        else:
            idx[i] = names.index(t)
    return idx, np.array(weights, dtype=float)


def violations(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None,
               tol: float = TOL) -> list[str]:
    """Every rule the shares break, one line each (see the module notes).

    Parameters
    ----------
    p : SharesProblem
    X : ndarray (m, k)
    Y : ndarray (P, k), optional
    tol : float
        Tolerance on every rule (default `TOL`).

    Returns
    -------
    list of str
        Empty when the shares are feasible.
    """
    out = []
    if X.shape != (p.m, p.k) or not np.isfinite(X).all():
        return [f"shares: expected {p.m} x {p.k} finite values"]
    Y = np.zeros((len(p.pairs), p.k)) if Y is None else Y
    if Y.shape != (len(p.pairs), p.k) or not np.isfinite(Y).all():
        return [f"pair shares: expected {len(p.pairs)} x {p.k} finite values"]
    for i, j in zip(*np.nonzero(X < -tol)):
        out.append(f"{p.job_ids[i]}: share {X[i, j]:.3g} on {p.gpu_types[j]} is negative")
    for q, j in zip(*np.nonzero(Y < -tol)):
        out.append(f"pair {q}: share {Y[q, j]:.3g} on {p.gpu_types[j]} is negative")
    a, b, _ = pair_arrays(p)
    time = X.sum(axis=1)
    if len(a):
        np.add.at(time, a, Y.sum(axis=1))
        np.add.at(time, b, Y.sum(axis=1))
    for i in np.flatnonzero(time > 1 + tol):
        out.append(f"{p.job_ids[i]}: time shares sum to {time[i]:.9g} > 1")
    use = p.scale_factor @ X
    if len(a):
        use = use + p.scale_factor[a] @ Y
    for j in np.flatnonzero(use > p.capacity + tol):
        out.append(f"{p.gpu_types[j]}: {use[j]:.9g} GPUs used > {p.capacity[j]:.0f}")
    wide = (p.scale_factor[:, None] > p.capacity[None, :]) & (X > tol)
    for i, j in zip(*np.nonzero(wide)):
        out.append(f"{p.job_ids[i]}: runs on {p.gpu_types[j]} with {p.capacity[j]:.0f} GPUs "
                   f"but needs {p.scale_factor[i]:.0f}")
    return out


__all__ = ["TOL", "agnostic_throughputs", "effective", "ftf_rho", "isolated_shares",
           "normalized_shares", "objective", "pair_arrays", "proportional_throughput",
           "tenant_table", "violations"]

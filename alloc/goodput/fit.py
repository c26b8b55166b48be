r"""Fitting the throughput model online from the points a job has run on.

Each distinct ``(N, K, b)`` a job has run gives a measured step time
``step`` (seconds per update without accumulation) and the part ``sync``
spent synchronising.  The fit minimises, over $\theta$ (L-BFGS-B,
$\alpha, \beta \ge 10^{-8}$, $\gamma \in [1, 10]$):

$$
\mathcal{L}(\theta) = \mathrm{RMSE}(\log \hat T_c, \log(\mathrm{step} - \mathrm{sync}))
 + \mathrm{RMSE}(\log \hat T_o, \log \mathrm{step})
 + 10^{-3}(\gamma - 1)^2
 + 10^{-2}\Big(\big(\tfrac{\beta_n}{\alpha_n}\big)^2 + \big(\tfrac{\beta_r}{\alpha_r}\big)^2\Big)
$$

from $\theta_0 = (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001)$, with the exact
gradient.  **Priors** for what the points cannot tell:

* one distinct ``b``: $\alpha_c$ pinned at mean$(T_c)/2$;
* no point with ``N >= 2``: $\alpha_n, \beta_n$ pinned at $10^{-8}$ during the
  fit, then $\alpha_n \leftarrow \max(\alpha_n, 1.1\alpha_r)$,
  $\beta_n \leftarrow \max(\beta_n, 1.1\beta_r)$;
* no point with ``N = 1, K >= 2``: $\alpha_r, \beta_r$ pinned at $10^{-8}$;
* no point with ``K >= 3``: $\beta_n, \beta_r$ pinned at $10^{-8}$.

So scales a job has not tried look near-linear (optimistic), and it tries
them.

Examples
--------
>>> from alloc.goodput.fit import fit_perf_params
>>> p = fit_perf_params([1, 1, 2], [1, 4, 8], [64, 64, 64], [0.05, 0.06, 0.09],
...                     [0.0001, 0.01, 0.04])
>>> round(p.alpha_c, 4), p.gamma >= 1.0
(0.025, True)
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import scipy.optimize

from ..errors import InputError
from .model import PerfParams

#: The starting point of the fit.
START = (1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.0 + 1e-3)
#: Lower bound of every alpha and beta (s).
FLOOR = 1e-8
#: Upper bound of gamma.
GAMMA_MAX = 10.0


def _loss(x: np.ndarray, nodes: np.ndarray, k: np.ndarray, b: np.ndarray, y1: np.ndarray,
          y2: np.ndarray, inter: np.ndarray, intra: np.ndarray, m: np.ndarray
          ) -> tuple[float, np.ndarray]:
    """The loss and its gradient (the module's formula)."""
    ac, bc, an, bn, ar, br, g = x
    n_pts = len(b)
    grad = np.zeros(7)
    accum = ac + bc * b
    la = np.log(accum)
    d1 = la - y1
    e1 = float(np.sqrt(np.dot(d1, d1) / n_pts))
    alpha = np.where(inter, an, np.where(intra, ar, 1e-8))
    beta = np.where(inter, bn, np.where(intra, br, 1e-8))
    net = alpha + beta * m
    ag, ng = accum ** g, net ** g
    s = ag + ng
    lo = np.log(s) / g
    d2 = lo - y2
    e2 = float(np.sqrt(np.dot(d2, d2) / n_pts))
    loss = e1 + e2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    # gradient of the first RMSE through accum
    c1 = d1 / (accum * n_pts * e1) if e1 > 0 else np.zeros(n_pts)
    # gradient of the second through accum, net and gamma
    c2 = d2 / (n_pts * e2) if e2 > 0 else np.zeros(n_pts)
    dlo_da = ag / (accum * s)
    dlo_dn = ng / (net * s)
    dlo_dg = (ag * np.log(accum) + ng * np.log(net)) / (s * g) - np.log(s) / (g * g)
    da = c1 + c2 * dlo_da
    grad[0] = da.sum()
    grad[1] = (da * b).sum()
    dn = c2 * dlo_dn
    grad[2] = dn[inter].sum()
    grad[3] = (dn * m)[inter].sum()
    ir = intra & ~inter
    grad[4] = dn[ir].sum()
    grad[5] = (dn * m)[ir].sum()
    grad[6] = (c2 * dlo_dg).sum() + 2e-3 * (g - 1)
    grad[2] -= 2e-2 * bn * bn / an ** 3
    grad[3] += 2e-2 * bn / an ** 2
    grad[4] -= 2e-2 * br * br / ar ** 3
    grad[5] += 2e-2 * br / ar ** 2
    return loss, grad


def _loss_small(x: np.ndarray, pts: list) -> tuple[float, np.ndarray]:
    """`_loss` for a few points, in plain floats (faster than numpy there)."""
    ac, bc, an, bn, ar, br, g = (float(v) for v in x)
    n = len(pts)
    s1 = s2 = 0.0
    terms = []
    for b, y1, y2, inter, intra, m in pts:
        a = ac + bc * b
        la = math.log(a)
        d1 = la - y1
        if inter:
            net = an + bn * m
        elif intra:
            net = ar + br * m
        else:
            net = 1e-8 + 1e-8 * m
        ag, ng = a ** g, net ** g
        sm = ag + ng
        d2 = math.log(sm) / g - y2
        s1 += d1 * d1
        s2 += d2 * d2
        terms.append((b, a, la, d1, net, ag, ng, sm, d2, inter, intra, m))
    e1, e2 = math.sqrt(s1 / n), math.sqrt(s2 / n)
    loss = e1 + e2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    gr = [0.0] * 7
    for b, a, la, d1, net, ag, ng, sm, d2, inter, intra, m in terms:
        c1 = d1 / (a * n * e1) if e1 > 0 else 0.0
        c2 = d2 / (n * e2) if e2 > 0 else 0.0
        da = c1 + c2 * ag / (a * sm)
        gr[0] += da
        gr[1] += da * b
        dn = c2 * ng / (net * sm)
        if inter:
            gr[2] += dn
            gr[3] += dn * m
        elif intra:
            gr[4] += dn
            gr[5] += dn * m
        gr[6] += c2 * ((ag * la + ng * math.log(net)) / (sm * g) - math.log(sm) / (g * g))
    gr[6] += 2e-3 * (g - 1)
    gr[2] -= 2e-2 * bn * bn / an ** 3
    gr[3] += 2e-2 * bn / an ** 2
    gr[4] -= 2e-2 * br * br / ar ** 3
    gr[5] += 2e-2 * br / ar ** 2
    return loss, np.array(gr)


#: Up to this many points the loss is evaluated in plain floats.
SMALL = 40


def fit_perf_params(nodes: Sequence[float], replicas: Sequence[float],
                    local_bsz: Sequence[float], step_time: Sequence[float],
                    sync_time: Sequence[float], *, where: str = "profile",
                    tol: float | None = None) -> PerfParams:
    """Fit the seven throughput parameters to measured points (see the module notes).

    Parameters
    ----------
    nodes, replicas, local_bsz : sequence
        ``N``, ``K`` and ``b`` of each distinct point.
    step_time, sync_time : sequence
        Its measured seconds per update (no accumulation) and the part
        spent synchronising (``step > sync``).
    where : str
        Named in the error of a fit given no points.
    tol : float, optional
        L-BFGS-B's tolerance (None: scipy's default, as the Pollux artifact;
        the Sia artifact uses 1e-5).

    Raises
    ------
    InputError
        No points, or a point whose times are not positive with
        ``step > sync`` (one line naming ``where``).
    """
    n = np.asarray(nodes, dtype=float)
    k = np.asarray(replicas, dtype=float)
    b = np.asarray(local_bsz, dtype=float)
    step = np.asarray(step_time, dtype=float)
    accum = step - np.asarray(sync_time, dtype=float)
    if n.size == 0:
        raise InputError(f"{where}: a throughput fit needs at least one measured point; "
                         f"got none")
    if not (n.shape == k.shape == b.shape == step.shape == accum.shape):
        raise InputError(f"{where}: expected the same number of nodes, replicas, batches and "
                         f"times")
    bad = ~(np.isfinite(step) & np.isfinite(accum) & (accum > 0) & (step > 0) & (b > 0)
            & (k >= n) & (n >= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where}: point {i}: expected 1 <= nodes <= replicas, batch > 0 and "
                         f"step_time > sync_time >= 0, got nodes={n[i]:g} replicas={k[i]:g} "
                         f"batch={b[i]:g} step={step[i]:g} sync={step[i] - accum[i]:g}")
    x0 = list(START)
    lower = [FLOOR] * 6 + [1.0]
    upper = [np.inf] * 6 + [GAMMA_MAX]
    if len(np.unique(b)) == 1:
        x0[0] = lower[0] = upper[0] = float(np.mean(accum) / 2)
    multi_node = bool(np.any(n > 1))
    if not multi_node:
        for i in (2, 3):
            x0[i] = upper[i] = lower[i]
    if not np.any((n == 1) & (k > 1)):
        for i in (4, 5):
            x0[i] = upper[i] = lower[i]
    if not np.any(k > 2):
        for i in (3, 5):
            x0[i] = upper[i] = lower[i]
    inter, intra = n > 1, k > 1
    m = np.maximum(k - 2, 1e-8)
    bounds = scipy.optimize.Bounds(lower, upper, keep_feasible=True)
    if len(n) <= SMALL:
        pts = list(zip(b.tolist(), np.log(accum).tolist(), np.log(step).tolist(),
                       inter.tolist(), (intra & ~inter).tolist(), m.tolist()))
        res = scipy.optimize.minimize(_loss_small, np.array(x0), args=(pts,), jac=True,
                                      bounds=bounds, method="L-BFGS-B", tol=tol)
    else:
        args = (n, k, b, np.log(accum), np.log(step), inter, intra, m)
        res = scipy.optimize.minimize(_loss, np.array(x0), args=args, jac=True, bounds=bounds,
                                      method="L-BFGS-B", tol=tol)
    x = res.x.copy()
    if not multi_node:
        x[2] = max(x[2], x[4] * 1.1)
        x[3] = max(x[3], x[5] * 1.1)
    return PerfParams(*map(float, x))


def fit_points(points: Any, where: str = "profile") -> PerfParams:
    """`fit_perf_params` of rows ``(N, K, b, step, sync)``."""
    arr = np.asarray(points, dtype=float).reshape(-1, 5) if len(points) else np.zeros((0, 5))
    cols = [arr[:, i].tolist() for i in range(5)]
    return fit_perf_params(*cols, where=where)


__all__ = ["FLOOR", "GAMMA_MAX", "START", "fit_perf_params", "fit_points"]

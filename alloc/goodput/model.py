r"""The goodput model: throughput x statistical efficiency (Pollux, OSDI'21).

A data-parallel job runs ``K`` replicas (one per GPU) on ``N`` nodes, each
replica with a per-GPU batch ``b`` and ``s`` gradient-accumulation steps, so
that one update uses the total batch $M = K\,b\,(s+1)$ samples.  ``M0`` is
the smallest (start) batch the job was validated at, ``Mmax`` the largest;
$[b_{lo}, b_{hi}]$ bounds the per-GPU batch.

**Throughput** ($\theta = (\alpha_c, \beta_c, \alpha_n, \beta_n, \alpha_r,
\beta_r, \gamma)$, seconds):

$$
T_c(b) = \alpha_c + \beta_c b, \qquad
T_x(N, K) = \begin{cases}
  \alpha_n + \beta_n \max(K-2, 0) & N \ge 2\\
  \alpha_r + \beta_r \max(K-2, 0) & N = 1,\ K \ge 2\\
  10^{-8} & K = 1
\end{cases}
$$

$$
T_o = (T_c^\gamma + T_x^\gamma)^{1/\gamma}, \qquad
T_{iter} = s\,T_c + T_o, \qquad X = M / T_{iter}\ \text{(samples/s)}.
$$

``alpha`` is the cost of the bottleneck link (``n`` between nodes, ``r``
inside one), ``beta`` the retrogression per replica beyond two, ``gamma`` in
[1, 10] how far communication overlaps computation (1: none, large: full).
(The ``max(K-2, 0)`` is evaluated as ``max(K-2, 1e-8)`` with a retrogression
of ``1e-8`` for ``K = 1``, as the reference implementation does.)

**Statistical efficiency.**  With the gradient's squared norm ``q`` and
variance ``v`` (measured at the current progress), the gradient noise scale
is $\varphi = M_0 v / q$ and

$$
\mathrm{gain}(M) = \frac{v + q}{v\,M_0/M + q}, \qquad
E(M) = \mathrm{gain}(M)\,\frac{M_0}{M} = \frac{\varphi + M_0}{\varphi + M}
$$

(``gain``: progress per iteration in iterations at ``M0``; ``E = 1`` at
``M0``).  **Goodput** $G = X \cdot E$: progress in ``M0``-samples per second.

**Batch choice** for a fixed ``(N, K)``: 50 total batches geometrically from
$\max(M_0, b_{lo} K)$ to $M_{max}$; for each $s = \lceil M/K/b_{hi}\rceil - 1$
(at least 1 when ``K = 1`` and $M/K > M_0$), $b = \lceil M/K/(s+1) \rceil$;
candidates with ``b`` outside $[b_{lo}, b_{hi}]$ are dropped; the one of
largest ``G`` is kept (the first on ties), and finally
$b \le \lfloor M_{max} / (K(s+1)) \rfloor$.  Without a fitted model the
batch is $M = \max(M_0, b_{lo} K)$ split the same way.

Everything here is vectorised over numpy arrays of ``N`` and ``K``.

Examples
--------
>>> from alloc.goodput.model import PerfParams, GradStats, Limits, best_batch
>>> theta = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
>>> lim = Limits(init=128, max=4096, local_lo=32, local_hi=1024)
>>> g, b, s = best_batch(theta, GradStats(1.0, 4.0), lim, 1, 4)
>>> int(b), int(s), round(float(g), 1)
(87, 0, 1973.2)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The tolerance of the floor/ceil operations of the batch choice.
EPS = 1e-8
#: Total batch sizes tried per (N, K) by the batch choice.
BATCH_POINTS = 50
#: The parameter names, in order.
PARAM_NAMES = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")


@dataclass(frozen=True)
class PerfParams:
    """The seven throughput parameters (seconds, except ``gamma``).

    Examples
    --------
    >>> from alloc.goodput.model import PerfParams
    >>> PerfParams(0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001).gamma
    1.001
    """
    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def as_array(self) -> np.ndarray:
        """The parameters as a float array in `PARAM_NAMES` order."""
        return np.array([self.alpha_c, self.beta_c, self.alpha_n, self.beta_n,
                         self.alpha_r, self.beta_r, self.gamma], dtype=float)

    def to_dict(self) -> dict[str, float]:
        """JSON-ready form."""
        return {k: float(getattr(self, k)) for k in PARAM_NAMES}


@dataclass(frozen=True)
class GradStats:
    """Gradient statistics: squared norm ``sqr`` (q) and variance ``var`` (v).

    Only their ratio matters; ``noise_scale(M0) = M0 * var / sqr``.

    Examples
    --------
    >>> from alloc.goodput.model import GradStats
    >>> GradStats(2.0, 6.0).noise_scale(128)
    384.0
    """
    sqr: float
    var: float

    def noise_scale(self, init_batch: float) -> float:
        """The gradient noise scale phi = M0 v / q (samples)."""
        return init_batch * self.var / self.sqr if self.sqr > 0 else math.inf


@dataclass(frozen=True)
class Limits:
    """A job's batch limits: start batch ``init`` (M0), largest total batch
    ``max`` (Mmax), per-GPU range [``local_lo``, ``local_hi``].

    Examples
    --------
    >>> from alloc.goodput.model import Limits
    >>> Limits(128, 4096, 32, 1024).max_replicas
    128
    """
    init: int
    max: int
    local_lo: int
    local_hi: int

    @property
    def max_replicas(self) -> int:
        """The most replicas the total batch allows: floor(Mmax / bLo)."""
        return self.max // self.local_lo


def compute_time(theta: Any, local_bsz: Any) -> np.ndarray:
    """T_c(b) = alpha_c + beta_c b: one forward/backward pass (s)."""
    t = np.asarray(theta, dtype=float) if not isinstance(theta, PerfParams) else theta.as_array()
    return t[0] + t[1] * np.asarray(local_bsz, dtype=float)


def network_time(theta: Any, nodes: Any, replicas: Any) -> np.ndarray:
    """T_x(N, K): the all-reduce time of the bottleneck link (s)."""
    t = np.asarray(theta, dtype=float) if not isinstance(theta, PerfParams) else theta.as_array()
    n = np.asarray(nodes)
    k = np.asarray(replicas)
    inter, intra = n > 1, k > 1
    alpha = np.where(inter, t[2], np.where(intra, t[4], 1e-8))
    beta = np.where(inter, t[3], np.where(intra, t[5], 1e-8))
    return alpha + beta * np.maximum(k - 2, 1e-8)


def log_optim_time(gamma: float, accum: np.ndarray, net: np.ndarray) -> np.ndarray:
    """log T_o = log(T_c^gamma + T_x^gamma) / gamma."""
    return np.log(accum ** gamma + net ** gamma) / gamma


def iteration_time(theta: Any, nodes: Any, replicas: Any, local_bsz: Any,
                   accum_steps: Any) -> np.ndarray:
    """T_iter = s T_c + T_o: seconds per update.

    Examples
    --------
    >>> from alloc.goodput.model import PerfParams, iteration_time
    >>> theta = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.0)
    >>> round(float(iteration_time(theta, 1, 1, 100, 1)), 4)
    0.24
    """
    t = np.asarray(theta, dtype=float) if not isinstance(theta, PerfParams) else theta.as_array()
    accum = compute_time(t, local_bsz)
    net = network_time(t, nodes, replicas)
    optim = np.exp(log_optim_time(t[6], accum, net))
    return np.asarray(accum_steps) * accum + optim


def throughput(theta: Any, nodes: Any, replicas: Any, local_bsz: Any,
               accum_steps: Any) -> np.ndarray:
    """X = M / T_iter (samples per second), M = K b (s+1)."""
    k, b, s = np.asarray(replicas), np.asarray(local_bsz), np.asarray(accum_steps)
    return k * b * (s + 1) / iteration_time(theta, nodes, replicas, local_bsz, accum_steps)


def efficiency(grad: GradStats, init_batch: float, batch: Any) -> np.ndarray:
    """E(M) = gain(M) M0 / M = (phi + M0) / (phi + M) (1 at M0).

    Examples
    --------
    >>> from alloc.goodput.model import GradStats, efficiency
    >>> round(float(efficiency(GradStats(1.0, 3.0), 100, 400)), 4)
    0.5714
    """
    scale = np.asarray(batch, dtype=float) / init_batch
    denom = grad.var / scale + grad.sqr
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(denom > 0, (grad.var + grad.sqr) / denom, 1.0)
    return gain / scale


def gain(grad: GradStats, init_batch: float, batch: Any) -> np.ndarray:
    """gain(M) = (v + q) / (v M0 / M + q): progress per update in
    iterations at ``M0``."""
    scale = np.asarray(batch, dtype=float) / init_batch
    denom = grad.var / scale + grad.sqr
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (grad.var + grad.sqr) / denom, 1.0)


def goodput(theta: Any, grad: GradStats, init_batch: float, nodes: Any, replicas: Any,
            local_bsz: Any, accum_steps: Any) -> np.ndarray:
    """G = X E: progress in M0-samples per second.

    Examples
    --------
    >>> from alloc.goodput.model import PerfParams, GradStats, goodput
    >>> theta = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.0)
    >>> round(float(goodput(theta, GradStats(1.0, 3.0), 100, 1, 1, 100, 0)), 2)
    833.33
    """
    k, b, s = np.asarray(replicas), np.asarray(local_bsz), np.asarray(accum_steps)
    batch = k * b * (s + 1)
    return (throughput(theta, nodes, replicas, local_bsz, accum_steps)
            * efficiency(grad, init_batch, batch))


def split_batch(batch: Any, replicas: Any, local_hi: float, init_batch: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per-GPU batch ``b`` and accumulation steps ``s`` that carry a total
    batch ``M`` on ``K`` replicas: $s = \\lceil M/K/b_{hi}\\rceil - 1$ (at
    least 1 when ``K = 1`` and $M > M_0$), $b = \\lceil M/K/(s+1)\\rceil$.

    Examples
    --------
    >>> from alloc.goodput.model import split_batch
    >>> b, s = split_batch(4096, 2, 1024, 128)
    >>> int(b), int(s)
    (1024, 1)
    """
    k = np.asarray(replicas)
    local = np.asarray(batch, dtype=float) / k
    s = np.ceil(local / local_hi - EPS) - 1
    s = np.where((k == 1) & (local > init_batch + EPS), np.maximum(s, 1), s).astype(int)
    b = np.ceil(local / (s + 1) - EPS).astype(int)
    return b, s


_STEPS = np.linspace(0.0, 1.0, BATCH_POINTS)[:, None]


def geometric(lo: np.ndarray, hi: float | np.ndarray) -> np.ndarray:
    """`BATCH_POINTS` values from ``lo`` to ``hi`` in geometric progression
    (columns), as ``numpy.geomspace`` gives them, ends exact."""
    lo = np.asarray(lo, dtype=float)
    hi = np.broadcast_to(np.asarray(hi, dtype=float), lo.shape)
    out = lo * np.exp(_STEPS * np.log(hi / lo))
    out[0], out[-1] = lo, hi
    return out


def best_batch(theta: PerfParams | np.ndarray | None, grad: GradStats | None, limits: Limits,
               nodes: Any, replicas: Any) -> tuple[Any, Any, Any]:
    """The best (goodput, b, s) for each ``(N, K)`` (see the module notes).

    ``theta`` or ``grad`` None (no model yet): goodput 0 and the start batch
    ``max(M0, bLo K)`` split over the replicas.  Scalars in, scalars out.

    Returns
    -------
    goodput : ndarray or float
        G at the chosen batch (0 where no batch is valid).
    local_bsz, accum_steps : ndarray or int
        The chosen ``b`` (capped so that ``K b (s+1) <= Mmax``) and ``s``.
    """
    scalar = np.isscalar(nodes) and np.isscalar(replicas)
    n = np.atleast_1d(np.asarray(nodes)).ravel()
    k = np.atleast_1d(np.asarray(replicas)).ravel()
    n, k = np.broadcast_arrays(n, k)
    if theta is None or grad is None:
        batch = np.maximum(limits.init, limits.local_lo * k)
        b, s = split_batch(batch, k, limits.local_hi, limits.init)
        g = np.zeros(len(k))
    else:
        lo = np.maximum(limits.init, limits.local_lo * k).astype(float)
        batch = geometric(lo, float(limits.max))                          # (50, P)
        bb, ss = split_batch(batch, k, limits.local_hi, limits.init)
        gp = goodput(theta, grad, limits.init, n, k, bb, ss)
        gp = np.where((limits.local_lo <= bb) & (bb <= limits.local_hi), gp, 0.0)
        idx = np.argmax(gp, axis=0)
        cols = np.arange(len(k))
        g, b, s = gp[idx, cols], bb[idx, cols], ss[idx, cols]
    b = np.minimum(b, (limits.max / (k * (s + 1))).astype(int))
    if scalar:
        return float(g[0]), int(b[0]), int(s[0])
    return g, b, s


__all__ = ["BATCH_POINTS", "EPS", "GradStats", "Limits", "PARAM_NAMES", "PerfParams",
           "best_batch", "compute_time", "efficiency", "gain", "goodput", "iteration_time",
           "log_optim_time", "network_time", "split_batch", "throughput"]


def best_batch_many(theta: np.ndarray, sqr: np.ndarray, var: np.ndarray, init: np.ndarray,
                    max_batch: np.ndarray, local_lo: np.ndarray, local_hi: np.ndarray,
                    nodes: np.ndarray, replicas: np.ndarray) -> tuple[np.ndarray, ...]:
    """`best_batch` for ``P`` queries with their own parameters at once.

    ``theta`` is ``(P, 7)``; every other argument has length ``P``.  Returns
    ``(goodput, b, s)`` arrays of length ``P`` (the same choice as
    `best_batch` query by query).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.goodput.model import best_batch_many, best_batch, PerfParams, GradStats, Limits
    >>> th = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
    >>> g, b, s = best_batch_many(np.array([th.as_array()] * 2), np.array([1.0, 1.0]),
    ...     np.array([4.0, 4.0]), np.array([128, 128]), np.array([4096, 4096]),
    ...     np.array([32, 32]), np.array([1024, 1024]), np.array([1, 2]), np.array([4, 8]))
    >>> one = best_batch(th, GradStats(1.0, 4.0), Limits(128, 4096, 32, 1024), 2, 8)
    >>> import math; math.isclose(float(g[1]), one[0], rel_tol=1e-12)
    True
    """
    t = np.asarray(theta, dtype=float).reshape(-1, 7).T                       # (7, P)
    k = np.asarray(replicas)
    n = np.asarray(nodes)
    init = np.asarray(init, dtype=float)
    lo = np.maximum(init, np.asarray(local_lo) * k).astype(float)
    batch = geometric(lo, np.asarray(max_batch, dtype=float))                      # (50, P)
    local = batch / k
    hi = np.asarray(local_hi, dtype=float)
    s = np.ceil(local / hi - EPS) - 1
    s = np.where((k == 1) & (local > init + EPS), np.maximum(s, 1), s).astype(int)
    b = np.ceil(local / (s + 1) - EPS).astype(int)
    accum = t[0] + t[1] * b
    inter, intra = n > 1, k > 1
    alpha = np.where(inter, t[2], np.where(intra, t[4], 1e-8))
    beta = np.where(inter, t[3], np.where(intra, t[5], 1e-8))
    net = alpha + beta * np.maximum(k - 2, 1e-8)
    g = t[6]
    optim = np.exp(np.log(accum ** g + net ** g) / g)
    m = k * b * (s + 1)
    x = m / (s * accum + optim)
    scale = m / init
    sq, vr = np.asarray(sqr, dtype=float), np.asarray(var, dtype=float)
    denom = vr / scale + sq
    with np.errstate(divide="ignore", invalid="ignore"):
        gn = np.where(denom > 0, (vr + sq) / denom, 1.0)
    gp = x * gn / scale
    gp = np.where((np.asarray(local_lo) <= b) & (b <= hi), gp, 0.0)
    idx = np.argmax(gp, axis=0)
    cols = np.arange(gp.shape[1])
    gb, bb, sb = gp[idx, cols], b[idx, cols], s[idx, cols]
    bb = np.minimum(bb, (np.asarray(max_batch) / (k * (sb + 1))).astype(int))
    return gb, bb, sb


__all__ += ["best_batch_many"]

r"""The Gittins index of a job's attained service, from a distribution of
job service (Tiresias, Gu et al., NSDI'19, §3.2.2, Pseudocode 1).

For a job with two-dimensional attained service $a_J = W_J t_J$ (GPUs times
seconds run, GPU-seconds) and a service quantum $\Delta$:

$$G_J(\Delta) = \frac{P(S - a_J \le \Delta \mid S > a_J)}
                     {E[\min\{S - a_J, \Delta\} \mid S > a_J]}$$

where $S$ is the total service of a job drawn from the distribution $D$
the operator provides ("from previous experience").  The numerator is the
chance that the job completes within the next quantum, the denominator the
service it is expected to use in that quantum; a higher index is a higher
priority.  Tiresias discretises $\Delta$: a job in queue $Q_i$ uses
$\Delta_i = Q_i^{hi}$, the queue's upper threshold (§3.2.3).

On an empirical distribution of samples $s_1 \le \dots \le s_N$, with
$A = \{k : s_k > a\}$ and $B = \{k : a < s_k \le a + \Delta\}$:

$$P = |B| / |A|, \qquad
  E = \Big(\sum_{k \in B} (s_k - a) + \Delta\,|A \setminus B|\Big) / |A|,$$

so $G = |B| / (\sum_{k \in B} (s_k - a) + \Delta |A \setminus B|)$, in
1 / GPU-second.  A job whose service already exceeds every sample
($A = \emptyset$) has index 0, the lowest.  Each evaluation is two binary
searches and a prefix sum.
"""
from __future__ import annotations

import math
from bisect import bisect_right, insort
from itertools import accumulate
from typing import Iterable


class Distribution:
    """An empirical distribution of job service, in GPU-seconds.

    Parameters
    ----------
    samples : iterable of float
        Observed total services (GPU-seconds, each > 0).

    Examples
    --------
    >>> from alloc.sched.tiresias.gittins import Distribution
    >>> d = Distribution([100, 100, 1000])
    >>> round(d.index(0, 200), 6)   # 2 of 3 finish within 200: 2 / (100 + 100 + 200)
    0.005
    >>> d.index(0, 200) > d.index(150, 200)   # past 100 only the long job is left
    True
    >>> d.index(5000, 200)
    0.0
    """

    def __init__(self, samples: Iterable[float] = ()):
        self._s: list[float] = []
        for x in samples:
            self._check(x)
            self._s.append(float(x))
        self._s.sort()
        self._prefix: list[float] | None = None

    @staticmethod
    def _check(x: float) -> None:
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
            raise ValueError(f"service sample: expected a number > 0 (GPU-seconds), got {x!r}")

    def __len__(self) -> int:
        return len(self._s)

    def add(self, x: float) -> None:
        """Add one observed service (GPU-seconds)."""
        self._check(x)
        insort(self._s, float(x))
        self._prefix = None

    def index(self, attained: float, delta: float) -> float:
        r"""$G(a, \Delta)$ for attained service ``attained`` and quantum ``delta``
        (GPU-seconds; ``delta`` may be ``math.inf``: then $G = 1 / E[S - a | S > a]$)."""
        s = self._s
        n = len(s)
        lo = bisect_right(s, attained)
        if lo == n:
            return 0.0
        if self._prefix is None:
            self._prefix = [0.0, *accumulate(s)]
        pre = self._prefix
        hi = n if math.isinf(delta) else bisect_right(s, attained + delta)
        done = hi - lo
        used = (pre[hi] - pre[lo]) - attained * done
        if hi < n:
            used += delta * (n - hi)
        if done == 0 or used <= 0:
            return 0.0 if done == 0 else math.inf
        return done / used


__all__ = ["Distribution"]

r"""BytePS's communication model (Jiang et al., OSDI'20, §4.1) and the
throughput it gives a data-parallel job.

A job on ``n`` GPU machines with ``k`` CPU machines running summation servers,
a model of ``M`` bytes and links of ``B`` bytes/s communicates, per iteration,

    t(n, k) = 2 n (n - 1) M / ((n^2 + k n - 2 k) B),      0 <= k <= n

(Eq. 6; ``k = 0`` is all-reduce, ``2(n-1)M/(nB)``; a ``k`` above ``n`` does not
help, so ``k`` is capped at ``n``; ``n = 1`` does not communicate).  Hence

* speed-up of communication over all-reduce ``g_a = (n^2 + kn - 2k) / n^2``;
* over non-colocated PS, which takes ``max(M/B, nM/(kB))``:
  ``g_p = (n^2 + kn - 2k) / (2k(n-1))`` for ``k <= n``;
* goodput ``M / t`` (what Fig. 12 plots): ``B (n^2 + kn - 2k) / (2n(n-1))``.

**Throughput.**  A job spends a share ``c`` of an all-reduce iteration in
(non-overlapped) communication; the rest does not change with ``k``.  Its
speed with ``k`` summation servers, relative to all-reduce, is

    r(n, k) = 1 / ((1 - c) + c n^2 / (n^2 + k n - 2 k))
            = (n^2 + k (n - 2)) / (n^2 + (1 - c) k (n - 2)),

increasing and concave in ``k`` (``r' = c n^2 (n-2) / (n^2 + (1-c)k(n-2))^2``,
decreasing), 1 at ``k = 0`` and for ``n <= 2`` (two machines gain nothing:
``n^2 + kn - 2k = 4``).
"""
from __future__ import annotations

GBPS = 1e9 / 8       # bytes per second in one Gbit/s


def _check(n: int, k: int) -> int:
    if n < 1:
        raise ValueError(f"n: expected at least 1 GPU machine, got {n}")
    if k < 0:
        raise ValueError(f"k: expected at least 0 CPU machines, got {k}")
    return min(k, n)


def denominator(n: int, k: int) -> int:
    """``n^2 + kn - 2k`` with ``k`` capped at ``n``."""
    k = _check(n, k)
    return n * n + k * n - 2 * k


def comm_time(n: int, k: int, model_bytes: float, bytes_per_s: float) -> float:
    """Per-iteration communication time ``t(n, k)`` in seconds (Eq. 6)."""
    if bytes_per_s <= 0:
        raise ValueError(f"B: expected a bandwidth > 0, got {bytes_per_s}")
    if n == 1:
        return 0.0
    return 2 * n * (n - 1) * model_bytes / (denominator(n, k) * bytes_per_s)


def vs_allreduce(n: int, k: int) -> float:
    """Communication speed-up over all-reduce, ``(n^2 + kn - 2k) / n^2``."""
    return denominator(n, k) / (n * n)


def vs_ps(n: int, k: int) -> float:
    """Communication speed-up over non-colocated PS, ``(n^2 + kn - 2k) / (2k(n-1))``."""
    if k < 1 or n < 2:
        raise ValueError("vs_ps: needs k >= 1 and n >= 2")
    k = _check(n, k)
    return denominator(n, k) / (2 * k * (n - 1))


def goodput_gbps(n: int, k: int, gbps: float) -> float:
    """Goodput ``M / t(n, k)`` in Gbit/s for links of ``gbps``."""
    if n < 2:
        raise ValueError("goodput: needs n >= 2 (one machine does not communicate)")
    return gbps * denominator(n, k) / (2 * n * (n - 1))


def speedup(n: int, k: int, comm_share: float) -> float:
    """``r(n, k)``: the job's speed with ``k`` summation servers relative to
    all-reduce, for a communication share ``c`` of its all-reduce iteration."""
    if not 0 <= comm_share < 1:
        raise ValueError(f"comm_share: expected a share in [0, 1), got {comm_share}")
    if n <= 2:
        _check(n, k)
        return 1.0
    return 1.0 / ((1 - comm_share) + comm_share * n * n / denominator(n, k))


__all__ = ["GBPS", "comm_time", "denominator", "goodput_gbps", "speedup", "vs_allreduce",
           "vs_ps"]

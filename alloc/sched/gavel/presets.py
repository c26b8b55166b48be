r"""The factories of Gavel's simulator policies (`alloc.sched.gavel`): a
time-share policy of `alloc.shares` (`alloc.sched.timeshare.GavelShares`)
with Gavel's settings fixed -- which policy, whether pairs of jobs may share
GPUs (space sharing) and the per-job weights (``equal``, or ``attained``:
the inverse of each job's attained service).
"""
from __future__ import annotations

from typing import Any

from ..timeshare import GavelShares


def _preset(share: str, *, pairs: bool = False, attained: bool = False,
            time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """``share`` with Gavel's settings (module notes)."""
    from ..registry import get_policy
    info = get_policy("shares", share)
    params: dict[str, Any] = {"time_limit": time_limit, "seed": seed, "pairs": pairs,
                              "weights": "attained" if attained else "equal"}
    if any(o.name == "space_sharing" for o in info.params):
        params["space_sharing"] = pairs
    return info.build(**params)


def las(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's LAS: max-min fairness, weights 1.

    Examples
    --------
    >>> from alloc.sched.gavel.presets import las
    >>> las().policy
    'max-min'
    """
    return _preset("max-min", time_limit=time_limit, seed=seed)


def las_agnostic(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's LAS over the heterogeneity-agnostic throughputs."""
    return _preset("max-min-agnostic", time_limit=time_limit, seed=seed)


def las_ss(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's LAS with space sharing."""
    return _preset("max-min", pairs=True, time_limit=time_limit, seed=seed)


def las_attained(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's LAS, each job weighed by the inverse of its attained service."""
    return _preset("max-min", attained=True, time_limit=time_limit, seed=seed)


def ftf(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's finish-time fairness."""
    return _preset("finish-time-fairness", time_limit=time_limit, seed=seed)


def max_sum(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's total throughput."""
    return _preset("max-sum", time_limit=time_limit, seed=seed)


def makespan(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's minimum makespan."""
    return _preset("makespan", time_limit=time_limit, seed=seed)


def water_filling(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's water filling (leximin)."""
    return _preset("water-filling", time_limit=time_limit, seed=seed)


def fifo(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's FIFO."""
    return _preset("fifo", time_limit=time_limit, seed=seed)


def isolated(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's isolated shares."""
    return _preset("isolated", time_limit=time_limit, seed=seed)


def gandiva(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's Gandiva: random packing of pairs (space sharing)."""
    return _preset("gandiva", pairs=True, time_limit=time_limit, seed=seed)


def allox(time_limit: float = 30.0, seed: int = 0) -> GavelShares:
    """Gavel's AlloX."""
    return _preset("allox", time_limit=time_limit, seed=seed)


__all__ = ["allox", "fifo", "ftf", "gandiva", "isolated", "las", "las_agnostic", "las_attained",
           "las_ss", "makespan", "max_sum", "water_filling"]

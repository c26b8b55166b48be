r"""The simulated truth of a goodput job: what the traces say it does.

For a job placed as ``placement`` (GPUs per node, e.g. ``(4, 2)``) with
per-GPU batch ``b``:

* **step and sync time.**  The placement is normalised to its smallest
  rotation without empty nodes (``(2, 4)`` for ``(4, 2)``).  If the traces
  measured it, ``(step, sync)`` is linear in ``b`` between its rows;
  otherwise it is the linear interpolation over ``(N, K, b)`` (``N`` capped
  at 16) of the per-``(N, K, b)`` means of the placement rows together with
  the scalability rows (a Delaunay triangulation, scipy's
  ``LinearNDInterpolator``).
* **gradient statistics** ``(q, v)`` at total batch ``M`` and epoch ``e``:
  linear in ``M`` between the two validation files whose batches bracket it,
  at row ``e``.
* **progress** is counted in ``M0``-iterations; epoch ``e`` ends when the
  progress reaches the smallest ``progress[e-1]`` over the validation files.

An update of ``M`` samples, with ``s`` accumulation steps, takes
``step + s (step - sync)`` seconds and advances the progress by
``gain(M) = (v + q) / (v M0 / M + q)``.

Examples
--------
>>> from alloc.goodput.truth import truth_of
>>> t = truth_of("cifar10")
>>> step, sync = t.step_sync((4,), 128)
>>> round(step, 4), round(sync, 4)
(0.1098, 0.0044)
>>> round(t.progress_at(1), 1)
390.7
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .traces import DEFAULT_TYPE, Traces, load_traces

#: Nodes beyond which the scalability interpolation is flat.
MAX_INTERP_NODES = 16


def canonical(placement: Any) -> tuple[int, ...]:
    """Replicas per node without empty nodes, rotated to the smallest rotation.

    Examples
    --------
    >>> from alloc.goodput.truth import canonical
    >>> canonical((4, 0, 1, 2))
    (1, 2, 4)
    """
    p = tuple(int(x) for x in placement if x)
    if not p:
        return p
    return min(p[i:] + p[:i] for i in range(len(p)))


class Truth:
    """One model's simulated truth on one GPU type (memoised lookups).

    Parameters
    ----------
    traces : Traces
    out_of_range : {"raise", "negative"}
        What a batch outside a measured placement's rows gives: an error
        (the Pollux artifact) or ``(-1, -1)`` (the Sia artifact).
    """

    def __init__(self, traces: Traces, out_of_range: str = "raise") -> None:
        self.traces = traces
        self.limits = traces.limits
        self.out_of_range = out_of_range
        pl = traces.placements
        self._rows: dict[str, np.ndarray] = {}
        for pid in dict.fromkeys(pl["placement"]):
            self._rows[pid] = np.flatnonzero(pl["placement"] == pid)
        self._step_memo: dict[tuple, tuple[float, float]] = {}
        self._cap_memo: dict[tuple, int] = {}
        self._k_memo: dict[int, int | None] = {}
        self._grad_memo: dict[tuple, tuple[float, float]] = {}
        self._nd: Any = None
        vals = traces.validation
        self._batches = np.array([v.batch for v in vals], dtype=float)
        n = traces.max_epochs
        prog = np.min(np.stack([v.progress[:n] for v in vals]), axis=0)
        self._progress = np.concatenate([[0.0], prog])

    # ------------------------------------------------------------ throughput
    def step_sync(self, placement: Any, local_bsz: float) -> tuple[float, float]:
        """``(step_time, sync_time)`` in seconds of ``placement`` at per-GPU batch ``b``."""
        p = canonical(placement)
        key = (p, local_bsz)
        hit = self._step_memo.get(key)
        if hit is not None:
            return hit
        out = self._lookup(p, local_bsz)
        self._step_memo[key] = out
        return out

    def _lookup(self, p: tuple[int, ...], local_bsz: float) -> tuple[float, float]:
        from scipy.interpolate import interp1d
        pl = self.traces.placements
        rows = self._rows.get("".join(map(str, p)))
        if rows is not None:
            f = interp1d(pl["local_bsz"][rows],
                         np.stack([pl["step_time"][rows], pl["sync_time"][rows]], axis=1), axis=0)
            try:
                ret = f(local_bsz)
            except ValueError:
                if self.out_of_range == "negative":
                    return -1.0, -1.0
                raise
            return float(ret[0]), float(ret[1])
        nd = self._interpolator()
        ret = nd([min(len(p), MAX_INTERP_NODES), sum(p), local_bsz])[0]
        if not np.all(np.isfinite(ret)):
            raise ValueError(f"{self.traces.model}: no trace covers placement {p} at batch "
                             f"{local_bsz}")
        return float(ret[0]), float(ret[1])

    def _interpolator(self) -> Any:
        if self._nd is None:
            from scipy.interpolate import LinearNDInterpolator
            pl, sc = self.traces.placements, self.traces.scalability
            keys = np.stack([pl["num_nodes"], pl["num_replicas"], pl["local_bsz"]], axis=1)
            ys = np.stack([pl["step_time"], pl["sync_time"]], axis=1)
            uniq, inv = np.unique(keys, axis=0, return_inverse=True)
            inv = inv.ravel()
            means = np.zeros((len(uniq), 2))
            np.add.at(means, inv, ys)
            means /= np.bincount(inv, minlength=len(uniq))[:, None]
            xs = np.concatenate([uniq, np.stack([sc["num_nodes"], sc["num_replicas"],
                                                 sc["local_bsz"]], axis=1)])
            vs = np.concatenate([means, np.stack([sc["step_time"], sc["sync_time"]], axis=1)])
            self._nd = LinearNDInterpolator(xs, vs)
        return self._nd

    def max_local_bsz(self, placement: Any) -> int:
        """The Sia artifact's per-GPU batch cap of a placement: the largest
        measured ``b`` of the placement, else of the scalability rows with at
        least its nodes and replicas."""
        p = canonical(placement)
        hit = self._cap_memo.get(p)
        if hit is None:
            hit = self._cap_memo[p] = self._max_local_bsz(p)
        return hit

    def _max_local_bsz(self, p: tuple[int, ...]) -> int:
        rows = self._rows.get("".join(map(str, p)))
        if rows is not None:
            return int(self.traces.placements["local_bsz"][rows].max())
        sc = self.traces.scalability
        ok = (sc["num_nodes"] >= len(p)) & (sc["num_replicas"] >= sum(p))
        return int(sc["local_bsz"][ok].max()) if ok.any() else self.limits.local_hi

    def replicas_cap(self, replicas: int) -> int | None:
        """The largest ``b`` measured with ``K`` replicas on any placement (None if none)."""
        if replicas not in self._k_memo:
            pl = self.traces.placements
            ok = pl["num_replicas"] == replicas
            self._k_memo[replicas] = int(pl["local_bsz"][ok].max()) if ok.any() else None
        return self._k_memo[replicas]

    # -------------------------------------------------------- efficiency
    def _bracket(self, batch: float) -> tuple[int, int]:
        b = self._batches
        lo = int(np.searchsorted(b, batch, side="right")) - 1
        hi = int(np.searchsorted(b, batch, side="left"))
        if lo < 0 or hi >= len(b):
            raise ValueError(f"{self.traces.model}: batch {batch} outside the validated "
                             f"{int(b[0])}..{int(b[-1])}")
        return lo, hi

    def grad_stats(self, batch: float, epoch: int) -> tuple[float, float]:
        """``(grad_sqr, grad_var)`` at total batch ``M`` during epoch ``e``."""
        key = (batch, epoch)
        hit = self._grad_memo.get(key)
        if hit is not None:
            return hit
        lo, hi = self._bracket(batch)
        vl, vh = self.traces.validation[lo], self.traces.validation[hi]
        if lo == hi:
            out = (float(vl.grad_sqr[epoch]), float(vl.grad_var[epoch]))
        else:
            bl, bh = vl.batch, vh.batch
            w = bh - bl
            out = (((batch - bl) * vh.grad_sqr[epoch] + (bh - batch) * vl.grad_sqr[epoch]) / w,
                   ((batch - bl) * vh.grad_var[epoch] + (bh - batch) * vl.grad_var[epoch]) / w)
            out = (float(out[0]), float(out[1]))
        self._grad_memo[key] = out
        return out

    def progress_at(self, epoch: int) -> float:
        """Progress (M0-iterations) at the end of epoch ``epoch - 1`` (0 for 0)."""
        return float(self._progress[epoch])

    def iteration(self, batch: float, epoch: int) -> float:
        """Real iterations at total batch ``M`` when epoch ``epoch`` is done."""
        lo, hi = self._bracket(batch)
        vl, vh = self.traces.validation[lo], self.traces.validation[hi]
        if lo == hi:
            return float(vl.iteration[epoch])
        bl, bh = vl.batch, vh.batch
        return float(((batch - bl) * vh.iteration[epoch] + (bh - batch) * vl.iteration[epoch])
                     / (bh - bl))

    @property
    def completion_epoch(self) -> int:
        """The last epoch (0-based): the job is done once it has passed it."""
        return self.traces.max_epochs - 1


@lru_cache(maxsize=64)
def truth_of(model: str, gpu_type: str = DEFAULT_TYPE, root: str | None = None,
             flavour: str = "pollux") -> Truth:
    """The (cached) `Truth` of a model's traces (default: the shipped Pollux traces)."""
    return Truth(load_traces(model, gpu_type, root, flavour),
                 "negative" if flavour == "sia" else "raise")


__all__ = ["MAX_INTERP_NODES", "Truth", "canonical", "truth_of"]

r"""A goodput job over time: its true progress and what it has learnt.

`SimJob` is the state the progress model keeps per job, in the two
artifacts' semantics (``flavour``): the Pollux simulator's (``"pollux"``)
and the Sia simulator's (``"sia"``).  Advancing a job by ``t`` seconds:

1. a job holding no GPUs only ages;
2. a job holding GPUs first waits out what is left of its restart delay
   (holding them: attained service counts);
3. then, repeatedly until the time is used up or the job is done: with its
   placement, per-GPU batch ``b`` and accumulation ``s`` (total batch
   $M = K b (s+1)$), the true step and sync times and gradient statistics
   (`alloc.goodput.truth`) give the progress rate

   $$ r = \frac{\mathrm{gain}(M)}{\mathrm{step} + s\,(\mathrm{step} - \mathrm{sync})}
          \cdot (1 - x) \;/\; \sigma \quad \text{(M0-iterations per second)} $$

   (``x`` the interference slowdown, ``sigma`` Sia's calibration slowdown, 1
   for Pollux); the point ``(N, K, b) -> (step, sync)`` joins the job's
   profile of that GPU type and ``(q, v)`` become the true ones; if the
   epoch's end is reached the epoch advances at
   ``round((progress_e - progress) / r)`` seconds (whole seconds) and the job
   is done after its last epoch; the batch ``(b, s)`` is chosen again.

A (re)allocation restarts the job (``restart_s`` of delay, counted in
``restarts`` except the first start) when its placement changes: any change
for Pollux; for Sia a new GPU type or a new shape (replicas per node).
A job whose batch is tuned (Pollux, Sia) chooses ``(b, s)`` by goodput
(`alloc.goodput.model.best_batch`) from its fitted model, else starts at
``max(M0, bLo K)``; a job with a fixed total batch (TunedJobs baselines)
splits it over its replicas.

Examples
--------
>>> from alloc.goodput.job import SimJob
>>> j = SimJob("c0", "cifar10", 0.0, target_batch=2048)
>>> j.reallocate((4,))
True
>>> j.advance(60)
>>> j.restarts, j.epoch, round(j.progress, 1), (j.local_bsz, j.accum_steps)
(0, 0, 111.4, (512, 0))
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import InputError
from .fit import fit_perf_params
from .model import EPS, GradStats, Limits, PerfParams, best_batch
from .traces import DEFAULT_TYPE
from .truth import Truth, canonical, truth_of


#: Fits by their exact inputs (points in order, their times, tolerance),
#: shared by every job of the process: jobs of one model that ran the same
#: points in the same order (most of a workload's early fits) are fitted
#: once.  The fit is deterministic, so a hit is the fit itself.
_FITS: dict = {}
#: Fits kept before the shared cache is emptied.
FIT_CACHE_SIZE = 20000


@dataclass
class Profile:
    """The points a job has run on one GPU type and the model fitted to them.

    Fits are kept in ``cache`` by the points they were fitted to (a clone of
    the job shares it, so that a look-ahead's fits are not done twice), and
    in a cache of every job's fits by their exact inputs (`_FITS`)."""
    points: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    params: PerfParams | None = None
    fitted_with: int = -1
    cache: dict = field(default_factory=dict)

    @property
    def max_replicas(self) -> int:
        """The largest ``K`` it has run."""
        return max((k[1] for k in self.points), default=0)

    def model(self, where: str, tol: float | None = None) -> PerfParams | None:
        """The fitted parameters (refitted when a point was added since)."""
        if not self.points:
            return None
        if self.fitted_with != len(self.points):
            keys = list(self.points)
            key = tuple(keys)
            hit = self.cache.get(key)
            if hit is None:
                vals = [self.points[k] for k in keys]
                full = (key, tuple(vals), tol)
                hit = _FITS.get(full)
                if hit is None:
                    hit = fit_perf_params([k[0] for k in keys], [k[1] for k in keys],
                                          [k[2] for k in keys], [v[0] for v in vals],
                                          [v[1] for v in vals], where=where, tol=tol)
                    if len(_FITS) > FIT_CACHE_SIZE:
                        _FITS.clear()
                    _FITS[full] = hit
                if len(self.cache) > 64:
                    self.cache.clear()
                self.cache[key] = hit
            self.params = hit
            self.fitted_with = len(self.points)
        return self.params

    def clone(self) -> "Profile":
        """A copy whose points can grow apart (the fit cache is shared)."""
        return Profile(dict(self.points), self.params, self.fitted_with, self.cache)


class SimJob:
    """One simulated goodput job (mutable state; see the module notes).

    Parameters
    ----------
    name : str
    model : str
        A model of `alloc.goodput.traces.SPECS`.
    arrival : float
        Submission time (s).
    target_batch : int, optional
        A fixed total batch (TunedJobs); None: tuned by goodput.
    target_replicas : int, optional
        The TunedJobs GPU count (baselines that keep it).
    tune_batch : bool
        Choose ``(b, s)`` by goodput (default: when ``target_batch`` is None).
    flavour : {"pollux", "sia"}
    truths : mapping of str to Truth, optional
        The truth per GPU type (default: the shipped traces on T4).
    restart_s : float, optional
        The restart delay (default: the model's, per flavour).
    merged : bool
        One profile for every GPU type (the Sia artifact's type-unaware
        jobs): a point ``(N, K, b)`` is kept as first measured, on whatever
        type, and one model is fitted to them all.
    """

    def __init__(self, name: str, model: str, arrival: float, *,
                 target_batch: int | None = None, target_replicas: int | None = None,
                 tune_batch: bool | None = None, flavour: str = "pollux",
                 truths: Mapping[str, Truth] | None = None, restart_s: float | None = None,
                 merged: bool = False) -> None:
        self.name, self.model, self.arrival = name, model, float(arrival)
        self.flavour = flavour
        self.truths = dict(truths) if truths else {DEFAULT_TYPE: truth_of(model)}
        first = next(iter(self.truths.values()))
        spec = first.traces.spec
        self.target_batch = target_batch
        self.target_replicas = target_replicas
        self.tune_batch = (target_batch is None) if tune_batch is None else tune_batch
        self.restart_s = float(restart_s if restart_s is not None else
                               (spec.sia_restart_s if flavour == "sia" else spec.restart_s))
        self.slowdown = spec.sia_slowdown if flavour == "sia" else 1.0
        #: L-BFGS-B's tolerance of the fits (the Sia artifact: 1e-5)
        self.fit_tol = 1e-5 if flavour == "sia" else None
        self.gpu_type: str | None = None
        self.placement: tuple[int, ...] = ()
        self.local_bsz = 0
        self.accum_steps = 0
        self.rescale_left = 0.0
        self.restarts: int | None = None
        self.epoch = 0
        self.progress = 0.0
        self.completion_time: float | None = None
        self.current_time = 0.0
        self.attained_service = 0.0
        self.used_gpu_s = 0.0
        self.wasted_gpu_s = 0.0
        self.grad: GradStats | None = None
        self.merged = bool(merged)
        one = Profile()
        self.profiles: dict[str, Profile] = {t: one if merged else Profile() for t in self.truths}
        #: batch choices by (model, gradient, N, K, cap, limits), shared with clones
        self._batches: dict = {}
        self.completion_epoch = first.completion_epoch

    # ------------------------------------------------------------- views
    @property
    def done(self) -> bool:
        """The job has finished."""
        return self.completion_time is not None

    @property
    def gpus(self) -> int:
        """GPUs held now."""
        return sum(self.placement)

    @property
    def truth(self) -> Truth:
        """The truth of the GPU type it runs on (its first type when idle)."""
        return self.truths[self.gpu_type or next(iter(self.truths))]

    def limits(self, gpu_type: str | None = None) -> Limits:
        """The batch limits on ``gpu_type`` (default: its current or first type)."""
        return self.truths[gpu_type or self.gpu_type or next(iter(self.truths))].limits

    def perf_params(self, gpu_type: str | None = None) -> PerfParams | None:
        """The throughput model fitted to its points on ``gpu_type`` (None before any)."""
        t = gpu_type or self.gpu_type or next(iter(self.truths))
        return self.profiles[t].model(f"job {self.name!r} ({t})", self.fit_tol)

    def max_profiled_replicas(self, gpu_type: str | None = None) -> int:
        """The largest ``K`` it has run on ``gpu_type`` (every type: None)."""
        if gpu_type is None:
            return max((p.max_replicas for p in self.profiles.values()), default=0)
        return self.profiles[gpu_type].max_replicas

    # ------------------------------------------------------- decisions
    def reallocate(self, placement: Any, gpu_type: str | None = None) -> bool:
        """Give the job GPUs: ``placement`` = replicas per node (empty: none).

        Returns True when this (re)starts the job (a restart delay begins).
        """
        new = tuple(int(x) for x in placement)
        gpu_type = gpu_type or self.gpu_type or next(iter(self.truths))
        if gpu_type not in self.truths:
            raise InputError(f"job {self.name!r}: no traces for GPU type {gpu_type!r}")
        if not any(new):
            if self.placement:
                self._released = (self.current_time, self.gpu_type, self.placement,
                                  self.local_bsz, self.accum_steps)
            self.placement = ()
            self.local_bsz = 0
            return False
        if self.flavour == "sia":
            if gpu_type == self.gpu_type and new == self.placement:
                return False
            rel = getattr(self, "_released", None)
            if not self.placement and rel is not None and rel[0] == self.current_time \
                    and rel[1] == gpu_type and rel[2] == new:
                # given back and taken again at the same instant, same shape: no restart
                self.placement, self.local_bsz, self.accum_steps = new, rel[3], rel[4]
                return False
        self.gpu_type = gpu_type
        self.placement = new
        self.choose_batch()
        self.rescale_left = self.restart_s
        self.restarts = 0 if self.restarts is None else self.restarts + 1
        return True

    def choose_batch(self) -> None:
        """Re-choose ``(b, s)`` for the current placement (see the module notes)."""
        truth = self.truth
        lim = truth.limits
        pl = tuple(x for x in self.placement if x)
        n, k = len(pl), sum(pl)
        hi = truth.max_local_bsz(pl) if self.flavour == "sia" else lim.local_hi
        batch = self.target_batch
        if self.tune_batch:
            batch = None
        params = self.perf_params() if batch is None and self.grad is not None else None
        if batch is None and params is None:
            batch = max(lim.init, lim.local_lo * k)
        if batch is None:
            key = (params, self.grad, n, k, hi, lim)
            hit = self._batches.get(key)
            if hit is None:
                if len(self._batches) > 4096:
                    self._batches.clear()
                hit = self._batches[key] = best_batch(
                    params, self.grad, Limits(lim.init, lim.max, lim.local_lo, hi), n, k)
            _, b, s = hit
        else:
            local = math.ceil(batch / k - EPS)
            s = math.ceil(local / hi - EPS) - 1
            if k == 1 and batch > lim.init:
                s = max(1, s)
            b = math.ceil(local / (s + 1) - EPS)
        if self.flavour == "sia":
            cap = truth.replicas_cap(k)
            if cap is not None:
                b = min(b, cap)
        b = min(int(b), int(lim.max / (k * (s + 1))))
        self.local_bsz, self.accum_steps = int(b), int(s)

    # ---------------------------------------------------------- progress
    def rate(self, interference: float = 0.0) -> float:
        """The true progress rate now (M0-iterations per second; 0 when idle)."""
        if not self.placement or self.done:
            return 0.0
        return self._rate(interference)[0]

    def _rate(self, interference: float) -> tuple[float, tuple[int, int, int], tuple[float, float],
                                                   tuple[float, float], int]:
        truth = self.truth
        pl = tuple(x for x in self.placement if x)
        n, k = len(pl), sum(pl)
        b, s = self.local_bsz, self.accum_steps
        batch = k * b * (s + 1)
        step, sync = truth.step_sync(pl, b)
        q, v = truth.grad_stats(batch, self.epoch)
        scale = batch / truth.limits.init
        gain = (v + q) / (v / scale + q)
        total = step + (step - sync) * s
        r = gain / total * (1.0 - interference) / self.slowdown
        return r, (n, k, b), (step, sync), (q, v), batch

    def advance(self, seconds: float, interference: float = 0.0) -> None:
        """Advance the job by ``seconds`` (see the module notes)."""
        if self.flavour == "sia" and self.done:
            return
        if not self.placement:
            self.current_time += seconds
            return
        gpus = sum(self.placement)
        delay = min(self.rescale_left, seconds)
        self.current_time += delay
        self.attained_service += delay * gpus
        self.wasted_gpu_s += delay * gpus
        self.rescale_left -= delay
        seconds -= delay
        if seconds > 0:
            self.used_gpu_s += seconds * gpus
        truth = self.truth
        while seconds > 0 and self.completion_time is None:
            r, key, (step, sync), (q, v), _ = self._rate(interference)
            self.grad = GradStats(q, v)
            prof = self.profiles[self.gpu_type or DEFAULT_TYPE]
            if key not in prof.points:
                prof.points[key] = (step, sync)
            nxt = truth.progress_at(self.epoch + 1)
            if self.progress + r * seconds < nxt:
                self.progress += r * seconds
                self.current_time += seconds
                self.attained_service += seconds * gpus
                seconds = 0
            else:
                self.epoch += 1
                delta = round(float((nxt - self.progress) / r))
                if self.epoch > self.completion_epoch:
                    self.completion_time = self.current_time + delta
                self.progress = nxt
                self.current_time += delta
                self.attained_service += delta * gpus
                seconds -= delta
            self.choose_batch()
        self.current_time += seconds

    def clone(self) -> "SimJob":
        """A copy that can be advanced apart from this job (a look-ahead)."""
        out = SimJob.__new__(SimJob)
        out.__dict__.update(self.__dict__)
        out.placement = tuple(self.placement)
        copies: dict[int, Profile] = {}
        for p in self.profiles.values():
            if id(p) not in copies:
                copies[id(p)] = p.clone()
        out.profiles = {t: copies[id(p)] for t, p in self.profiles.items()}
        return out

    def snapshot(self) -> dict:
        """What a log line records about the job now."""
        return {"name": self.name, "epoch": self.epoch, "progress": self.progress,
                "restarts": self.restarts, "gpu_type": self.gpu_type,
                "placement": list(self.placement), "local_bsz": self.local_bsz,
                "accum_steps": self.accum_steps,
                "batch": self.local_bsz * (self.accum_steps + 1) * sum(self.placement),
                "arrival": self.arrival, "completion": self.completion_time}


def placement_of(nodes: Any) -> tuple[int, ...]:
    """Replicas per node from a list of node ids (one per GPU), in the
    artifacts' way: consecutive equal ids form one node.

    Examples
    --------
    >>> from alloc.goodput.job import placement_of
    >>> placement_of([3, 3, 5, 5, 5, 3])
    (2, 3, 1)
    """
    out: list[int] = []
    prev = object()
    for x in nodes:
        if out and x == prev:
            out[-1] += 1
        else:
            out.append(1)
        prev = x
    return tuple(out)


__all__ = ["Profile", "SimJob", "canonical", "placement_of"]

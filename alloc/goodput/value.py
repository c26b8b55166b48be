r"""What a goodput job is worth on a placement: the core's view of the model.

A job whose profile carries a [`Goodput`][alloc.model.Goodput] runs, with
``K`` GPUs of type ``t`` on ``N`` servers, at its best goodput
$G^*_t(N, K)$ (`alloc.goodput.model.best_batch`: the per-GPU batch ``b`` and
accumulation ``s`` that maximise throughput x efficiency); its
*throughput* in alloc's units is the speedup over its requested size on one
server of its reference type,

$$ \mathrm{tput} = G^*_t(N, K) \,/\, G^*_{\mathrm{ref}}(1, \mathrm{gpus}), $$

(``ref``: the profile's ``reference_gpu`` when it has a model there, else its
first type with a model).  A type without a model of its own borrows the
reference's, scaled by the two types' one-GPU rates when both are known
(Sia's projection: $G^*_t \approx G^*_u \cdot x_1(t) / x_1(u)$); without them,
and for a job with no model yet, the speedup is linear, ``K / gpus``, at the
start batch $\max(M_0, b_{lo} K)$.  GPUs of several types run at the slowest.

A running job whose placement changes keeps ``restart_factor`` of its value
(the objective applies it, `alloc.objectives.Objective.value`).

Examples
--------
>>> from alloc import Goodput, GoodputType
>>> from alloc.goodput.value import speed
>>> g = Goodput(128, 4096, {"T4": GoodputType((32, 1024),
...             (0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5))}, grad=(1.0, 4.0))
>>> tput, b, s = speed(g, None, 1, "T4", 1, 4)
>>> round(tput, 3), b, s
(2.281, 87, 0)
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..model import Goodput

from .model import GradStats, Limits, best_batch, split_batch


def _limits(g: Goodput, gpu_type: str | None) -> Limits:
    spec = g.types.get(gpu_type) if gpu_type is not None else None
    if spec is None:
        spec = next(iter(g.types.values()))
    lo, hi = spec.local_bsz
    return Limits(g.init_batch, g.max_batch, lo, hi)


def reference_type(g: Goodput, reference_gpu: str | None = None) -> str | None:
    """The type whose one-server goodput normalises the job's speed."""
    if reference_gpu is not None and reference_gpu in g.types \
            and g.types[reference_gpu].params is not None:
        return reference_gpu
    return next((t for t, s in g.types.items() if s.params is not None), None)


@lru_cache(maxsize=65536)
def best(g: Goodput, gpu_type: str | None, nodes: int, gpus: int,
         reference_gpu: str | None = None) -> tuple[float, int, int]:
    """``(G*, b, s)`` on ``gpu_type`` (a projection or 0 when the job has no
    model to give; see the module notes)."""
    lim = _limits(g, gpu_type)
    spec = g.types.get(gpu_type) if gpu_type is not None else None
    if g.grad is None:
        return 0.0, *_start(lim, gpus)
    grad = GradStats(*g.grad)
    if spec is not None and spec.params is not None:
        v, b, s = best_batch(np.asarray(spec.params), grad, lim, nodes, gpus)
        return float(v), int(b), int(s)
    ref = reference_type(g, reference_gpu)
    ref_spec = g.types[ref] if ref is not None else None
    if ref_spec is None or ref_spec.params is None or spec is None or spec.rate is None \
            or ref_spec.rate is None:
        return 0.0, *_start(lim, gpus)
    theta = np.asarray(ref_spec.params)
    v, _, _ = best_batch(theta, grad, _limits(g, ref), nodes, gpus)
    _, b, s = best_batch(theta, grad, lim, nodes, gpus)
    return float(v) * spec.rate / ref_spec.rate, int(b), int(s)


def _start(lim: Limits, gpus: int) -> tuple[int, int]:
    bb, ss = split_batch(max(lim.init, lim.local_lo * gpus), gpus, lim.local_hi, lim.init)
    b, s = int(bb), int(ss)
    return min(b, int(lim.max / (gpus * (s + 1)))), s


def modelled(g: Goodput, gpu_type: str | None, reference_gpu: str | None = None) -> bool:
    """True when the job's speed on ``gpu_type`` comes from a model (its
    own or projected), False when it is the linear rule."""
    if g.grad is None:
        return False
    spec = g.types.get(gpu_type) if gpu_type is not None else None
    if spec is not None and spec.params is not None:
        return True
    ref = reference_type(g, reference_gpu)
    return (ref is not None and spec is not None and spec.rate is not None
            and g.types[ref].rate is not None)


def speed(g: Goodput, reference_gpu: str | None, request: int, gpu_type: str | None,
          nodes: int, gpus: int) -> tuple[float, int, int]:
    """``(tput, b, s)`` of a job asking for ``request`` GPUs, run with
    ``gpus`` GPUs of ``gpu_type`` on ``nodes`` servers (module notes)."""
    if gpus <= 0:
        return 0.0, 0, 0
    request = max(1, request)
    ref = reference_type(g, reference_gpu)
    if ref is None or not modelled(g, gpu_type, reference_gpu):
        b, s = _start(_limits(g, gpu_type), gpus)
        return gpus / request, b, s
    base = best(g, ref, 1, request, reference_gpu)[0]
    v, b, s = best(g, gpu_type, nodes, gpus, reference_gpu)
    if base <= 0 or not math.isfinite(base):
        return 0.0, b, s
    return v / base, b, s


def placement_speed(g: Goodput, reference_gpu: str | None, request: int,
                    types: set, nodes: int, gpus: int) -> tuple[float, int, int]:
    """`speed` over a set of GPU types: the slowest one's."""
    out = None
    for t in sorted(types, key=str):
        v = speed(g, reference_gpu, request, t, nodes, gpus)
        if out is None or v[0] < out[0]:
            out = v
    return out if out is not None else (0.0, 0, 0)


def upper(g: Goodput, reference_gpu: str | None, request: int, sizes, types, max_nodes: int
          ) -> float:
    """An upper bound of the job's speed over its sizes, the types it may
    use and up to ``max_nodes`` servers."""
    best_v = 0.0
    for k in sizes:
        for t in types:
            for n in range(1, max(1, min(k, max_nodes)) + 1):
                best_v = max(best_v, speed(g, reference_gpu, request, t, n, k)[0])
    return best_v


__all__ = ["best", "modelled", "placement_speed", "reference_type", "speed", "upper"]

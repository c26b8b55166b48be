r"""AntMan's performance model (Xiao et al., OSDI'20, §5) and its progress
model on the simulator.

A job ``i`` alone has GPU utilisation ``u_i`` (the share of time its kernels
occupy the SMs) and needs ``D_i`` MiB of GPU memory.  With a memory cap
``M_i`` its speed is multiplied by ``h_i(M_i / D_i)``, the memory-sensitivity
curve of AntMan Fig. 10 (piecewise linear; its models without a published
curve use the pointwise median of the three).  On a shared GPU the SM time of
the others stretches a job's GPU phase:

* **uncoordinated** (packing as in Gandiva, and UMem): every job is equal,

  $$\mathrm{speed}_i = \frac{h_i}{(1 - u_i) + u_i\,(1 + \alpha \sum_{k \ne i} x_k)},
  \qquad x_k = u_k\,\mathrm{speed}_k$$

  (a fixed point, iterated; ``alpha = 1`` by default: no free parameter);
* **coordinated** (AntMan): the guaranteed job ``G`` keeps priority (the
  GpuOpManager delays the riders' kernels), slowed only by the residual
  $\kappa X$ of the riders' SM use $X$; a rider ``r`` gets at most its
  compute cap $c_r$ of the SM time the guaranteed job leaves:

  $$\mathrm{speed}_G = \frac{h_G}{(1 - u_G) + u_G\,(1 + \kappa X)},\qquad
  \mathrm{speed}_r = h_r \min\!\Big(1, \frac{\min(c_r,\ 1 - u_G\,\mathrm{speed}_G)}{u_r}\Big),
  \qquad X = \sum_r u_r\,\mathrm{speed}_r;$$

* **exclusive** (YARN's capacity scheduler): a job alone on its GPUs runs at
  speed 1.

``kappa = 0.425`` and the coordinator's tolerance ``tau = 0.035`` come from
§5.1 and Fig. 12 (``alloc/sim/data/antman.json``, which also gives the
``alpha`` that §5.1's uncoordinated 5.23x slowdown would need: 42.7).  A gang
runs at the speed of its slowest GPU.

`AntManProgress` is that model as the simulator's progress model: a job's
work is its run time alone (``duration_s``, seconds), its rate the speed
above over the GPUs it holds (its memory and compute caps are its
placement's shares), and a job that stops loses its progress (the trace's
jobs keep no checkpoint).  A workload job gives ``extra["u"]`` (its
utilisation), ``extra["mem_mib"]`` (its GPU memory demand) and
``extra["curve"]`` (its memory-sensitivity curve: ``ResNet``, ``VGG``,
``SR`` or ``median``).
"""
from __future__ import annotations

import bisect
import json
import math
import random
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources as ir
from typing import Any

from ...errors import InputError
from ...sim.progress import ProgressModel, Run

#: How jobs sharing a GPU slow each other (module notes).
MODES = ("coordinated", "packed", "exclusive")


@lru_cache(maxsize=None)
def data() -> dict:
    """The published figures the model uses (``alloc/sim/data/antman.json``).

    Examples
    --------
    >>> from alloc.sched.antman.model import data
    >>> data()["gpu"]["mem_mib"]
    32768
    """
    return json.loads(ir.files("alloc").joinpath("sim/data/antman.json").read_text())


def curve(name: str) -> list[tuple[float, float]]:
    """A memory-sensitivity curve of Fig. 10 as (fraction, speed) points;
    ``"median"``: the pointwise median of the three.

    Examples
    --------
    >>> from alloc.sched.antman.model import curve
    >>> curve("ResNet")[-1]
    (1.0, 1.0)
    """
    ms = data()["memory_sensitivity"]
    if name != "median":
        if name not in ms or name == "source":
            raise InputError(f"antman: curve: expected one of ResNet, VGG, SR, median, "
                             f"got {name!r}")
        return [(x / 100, y) for x, y in ms[name]]
    cs = [ms[k] for k in ("ResNet", "VGG", "SR")]
    return [(cs[0][k][0] / 100, sorted(c[k][1] for c in cs)[1]) for k in range(len(cs[0]))]


def mem_factor(points: list[tuple[float, float]], f: float) -> float:
    """``h(f)``: speed with a fraction ``f`` of the job's memory on the GPU.

    Examples
    --------
    >>> from alloc.sched.antman.model import mem_factor
    >>> round(mem_factor([(0.5, 0.2), (1.0, 1.0)], 0.75), 3)
    0.6
    """
    if f >= 1.0:
        return 1.0
    xs = [x for x, _ in points]
    k = bisect.bisect_left(xs, f)
    if k == 0:
        return points[0][1]
    (x0, y0), (x1, y1) = points[k - 1], points[k]
    return y0 + (y1 - y0) * (f - x0) / (x1 - x0)


def cdf_draw(points: list, rng: random.Random) -> float:
    """A draw (in [0, 1]) from a CDF given as (percent, F) points.

    Examples
    --------
    >>> import random
    >>> from alloc.sched.antman.model import cdf_draw
    >>> 0.0 <= cdf_draw([(0, 0.0), (100, 1.0)], random.Random(0)) <= 1.0
    True
    """
    q = rng.random()
    for (x0, f0), (x1, f1) in zip(points, points[1:]):
        if q <= f1:
            return (x0 + (x1 - x0) * (0 if f1 == f0 else (q - f0) / (f1 - f0))) / 100
    return 1.0


def coordination() -> tuple[float, float]:
    """(kappa, tau) of §5.1.

    Examples
    --------
    >>> from alloc.sched.antman.model import coordination
    >>> coordination()
    (0.425, 0.035)
    """
    c = data()["coordination"]
    return float(c["kappa"]), float(c["tolerance"])


@dataclass(frozen=True)
class Share:
    """A job on one GPU for the speed model: utilisation, memory factor, the
    compute cap (1.0 = none) and whether it is the GPU's guaranteed job.

    Examples
    --------
    >>> from alloc.sched.antman.model import Share
    >>> Share(0.5, 1.0).cap
    1.0
    """
    u: float
    h: float
    cap: float = 1.0
    guaranteed: bool = False


def packed_speeds(shares: list[Share], alpha: float = 1.0) -> list[float]:
    """Uncoordinated speeds (module notes), by fixed-point iteration.

    Examples
    --------
    >>> from alloc.sched.antman.model import Share, packed_speeds
    >>> [round(v, 3) for v in packed_speeds([Share(0.5, 1.0), Share(0.5, 1.0)])]
    [0.828, 0.828]
    """
    sp = [s.h for s in shares]
    for _ in range(200):
        x = [s.u * v for s, v in zip(shares, sp)]
        tot = sum(x)
        new = [0.5 * (v + s.h / ((1 - s.u) + s.u * (1 + alpha * (tot - xi))))
               for s, xi, v in zip(shares, x, sp)]
        if max(abs(a - b) for a, b in zip(new, sp)) < 1e-9:
            return new
        sp = new
    return sp


def coordinated_speeds(shares: list[Share], kappa: float) -> list[float]:
    """AntMan's speeds (module notes); ``shares`` holds at most one guaranteed job.

    Examples
    --------
    >>> from alloc.sched.antman.model import Share, coordinated_speeds
    >>> g, r = coordinated_speeds([Share(0.9, 1.0, guaranteed=True), Share(0.2, 1.0, 0.05)], 0.425)
    >>> round(g, 3), round(r, 3)
    (0.981, 0.25)
    """
    g = next((k for k, s in enumerate(shares) if s.guaranteed), None)
    if g is None:
        return packed_speeds([replace(s, h=s.h * min(1.0, s.cap / s.u) if s.u else s.h)
                              for s in shares]) if len(shares) > 1 else \
            [s.h * (min(1.0, s.cap / s.u) if s.u else 1.0) for s in shares]
    G = shares[g]
    vg = G.h
    out = [0.0] * len(shares)
    for _ in range(50):
        left = max(0.0, 1 - G.u * vg)
        X = 0.0
        for k, s in enumerate(shares):
            if k != g:
                out[k] = s.h * (min(1.0, min(s.cap, left) / s.u) if s.u else 1.0)
                X += s.u * out[k]
        new = G.h / ((1 - G.u) + G.u * (1 + kappa * X))
        if abs(new - vg) < 1e-12:
            break
        vg = new
    out[g] = vg
    return out


def gpu_speeds(jobs: list[Any], gpu: str, mode: str, kappa: float, alpha: float
               ) -> dict[str, float]:
    """The speed of each job of ``jobs`` (records running on ``gpu``) on that
    GPU under ``mode`` (module notes): a job's memory and compute caps are
    its share of the GPU; a held share (milli > 0) of a guaranteed job is
    the GPU's guaranteed job."""
    jobs = sorted(jobs, key=lambda r: r.id)
    if mode == "exclusive" and len(jobs) == 1:
        return {jobs[0].id: 1.0}
    shares = []
    for r in jobs:
        sh = next(g for g in r.run.placement.gpus if g.gpu == gpu)
        capped = sh.milli == 0 and mode == "coordinated"    # caps bind AntMan's riders only
        mem = sh.mem if capped and sh.mem is not None else r.extra["mem_mib"]
        comp = sh.compute if capped and sh.compute is not None else 1000
        shares.append(Share(float(r.extra["u"]), mem_factor(curve(r.extra["curve"]),
                                                            mem / r.extra["mem_mib"]),
                            comp / 1000, guaranteed=sh.milli > 0 and guaranteed(r)))
    sp = coordinated_speeds(shares, kappa) if mode == "coordinated" else \
        packed_speeds(shares, alpha)
    return {r.id: v for r, v in zip(jobs, sp)}


def guaranteed(rec: Any) -> bool:
    """Whether a record's job is resource-guaranteed (its ``guaranteed`` field)."""
    return bool(rec.spec.fields.get("guaranteed", False))


def on_gpu(rec: Any, gpu: str) -> list[Any]:
    """``rec`` and the running jobs sharing ``gpu`` with it."""
    out = [rec]
    for jid in rec.run.colocated:
        o = rec.peer(jid)
        if o is not None and o.run is not None and o.run.placement is not None \
                and any(g.gpu == gpu for g in o.run.placement.gpus):
            out.append(o)
    return out


class AntManProgress(ProgressModel):
    """AntMan's performance model as a progress model (module notes).

    Parameters
    ----------
    mode : {"coordinated", "packed", "exclusive"}
        How jobs sharing a GPU slow each other.
    alpha : float, optional
        The uncoordinated interference (default: the data file's, 1.0).

    Examples
    --------
    >>> from alloc.sched.antman.model import AntManProgress
    >>> AntManProgress("packed").alpha
    1.0
    """
    name = "antman"
    gives = frozenset({"duration", "gpu-memory"})

    def __init__(self, mode: str = "coordinated", alpha: float | None = None) -> None:
        super().__init__()
        if mode not in MODES:
            raise InputError(f"antman progress: mode: expected one of {', '.join(MODES)}, "
                             f"got {mode!r}")
        self.mode = mode
        self.alpha = float(data()["packing"]["alpha"] if alpha is None else alpha)
        if not (self.alpha >= 0 and math.isfinite(self.alpha)):
            raise InputError(f"antman progress: alpha: expected a number >= 0, got {alpha!r}")
        self.kappa, self.tau = coordination()

    def rate(self, job: Any, run: Run) -> float:
        """The job's speed: the slowest of its GPUs' (module notes)."""
        p = run.placement
        if p is None or not p.gpus:
            return 0.0
        for key in ("u", "mem_mib", "curve"):
            if key not in job.extra:
                raise InputError(f"antman progress: job {job.id!r}: extra: expected u, "
                                 f"mem_mib and curve (an AntMan workload)")
        return min(gpu_speeds(on_gpu(job, g.gpu), g.gpu, self.mode, self.kappa,
                              self.alpha)[job.id] for g in p.gpus)

    def delay_s(self, job: Any, run: Run, cause: str) -> float:
        """None: starts and cap changes cost no time in the model."""
        return 0.0

    def resume(self, job: Any, done: float) -> float:
        """0: a stopped job starts again from the beginning."""
        return 0.0


__all__ = ["AntManProgress", "MODES", "Share", "cdf_draw", "coordinated_speeds", "coordination",
           "curve", "data", "gpu_speeds", "guaranteed", "mem_factor", "on_gpu", "packed_speeds"]

r"""The goodput model (Pollux, OSDI'21; Sia, SOSP'23): throughput fitted
online times statistical efficiency, the batch that maximises their product,
the artifacts' traces and the simulated truth they give.

Modules:

* `alloc.goodput.model`: the formulas (throughput, efficiency, goodput,
  batch choice), vectorised over ``(N, K)``;
* `alloc.goodput.fit`: the online fit of the seven throughput parameters;
* `alloc.goodput.traces`: the trace files, read by header, checked cell by cell;
* `alloc.goodput.truth`: what a job really does on a placement (the
  simulators' ground truth);
* `alloc.goodput.job`: a simulated job over time (restart delays, epochs,
  the profile it learns).

Examples
--------
>>> from alloc.goodput import GradStats, Limits, PerfParams, best_batch
>>> theta = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
>>> g, b, s = best_batch(theta, GradStats(1.0, 4.0), Limits(128, 4096, 32, 1024), 2, 8)
>>> b * 8 * (s + 1) >= 128
True
"""
from .fit import fit_perf_params
from .model import (GradStats, Limits, PerfParams, best_batch, efficiency, goodput,
                    iteration_time, throughput)

__all__ = ["GradStats", "Limits", "PerfParams", "best_batch", "efficiency", "fit_perf_params",
           "goodput", "iteration_time", "throughput"]

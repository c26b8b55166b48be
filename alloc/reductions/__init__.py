r"""Reductions with inverses, in the manner of a modelling layer's chain:
each turns the problem a caller poses into a simpler one a solver answers,
and turns the answer back ([`Chain`][alloc.reductions.Chain]: ``apply`` in
order, ``invert`` in the reverse order).

* `closed` -- drained and failed servers removed from the call, the jobs
  running there kept by the inverse, a job with a part there pinned on its
  open part ([`ClosedServers`][alloc.reductions.ClosedServers]);
* `pins` -- the core's own decisions before the solver runs: preemption by
  the caller's order ([`OrderPreemption`][alloc.reductions.OrderPreemption])
  and a tenant's guarantee ([`GuaranteePins`][alloc.reductions.GuaranteePins]):
  victims out of the problem, the jobs placed for them pinned; and the
  running jobs a solver may not touch, put back by the inverse
  ([`KeptRunning`][alloc.reductions.KeptRunning]);
* `chain` -- the composition.

A session applies ``ClosedServers`` to its call before compiling; the core
(`alloc.solve.run_solver`) applies ``OrderPreemption`` then
``GuaranteePins`` to the compiled problem.  No placeholder job and no
second solve: what a reduction removes, no solver sees.
"""
from __future__ import annotations

from .chain import Chain, Reduction
from .closed import ClosedInverse, ClosedServers, trim
from .pins import GuaranteePins, KeptRunning, OrderPreemption

__all__ = ["Chain", "ClosedInverse", "ClosedServers", "GuaranteePins", "KeptRunning",
           "OrderPreemption", "Reduction", "trim"]

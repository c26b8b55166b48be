"""Experiment inputs and protocols.

* [`generators`][alloc.experiments.generators] -- seeded instance generators at cluster scale
  (``synergy``, ``hetero``, ``live``, ``openb``).
* [`openb`][alloc.experiments.generators.openb] -- the Alibaba openb traces and the FGD experiment:
  trace
  loaders, seeded workload construction, online placement runs and their
  allocation and fragmentation curves (``alloc bench openb``).
* `openb_bound` -- offline upper bounds on the GPU milli any placement
  of an openb pod set can allocate.
"""

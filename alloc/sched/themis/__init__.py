"""Themis (Mahajan et al., NSDI'20): finish-time fairness, leases and the
partial-allocation auction among the worst-off jobs
(`alloc.sched.themis.policy`, `alloc.sched.themis.auction`,
`alloc.sched.themis.fairness`).

* ``themis`` -- an order: jobs within their lease first, then the auction's
  bidders (the 1 - f fraction with the worst finish-time fairness) by the
  share of their gang the auction lets them keep, then the rest by
  decreasing finish-time fairness.
"""
from ...options import Option
from ..registry import declare

POLICIES = (
    declare("order", "themis", "alloc.sched.themis.policy:Themis",
            needs=("duration",),
            params=(
                Option("f", "float", 0.8, "the fairness knob: the fraction of jobs left out of "
                       "each auction (the 1 - f worst off bid)", minimum=0.0, maximum=0.999999),
                Option("lease_s", "float", 600.0, "seconds a started job keeps its GPUs",
                       minimum=1e-9),
                Option("spread", "float", 0.6, "throughput of a placement-sensitive job on "
                       "GPUs it cannot gang on one server, relative to consolidated",
                       minimum=1e-9, maximum=1.0),
                Option("packlimit", "float", 0.5, "the tensor-size skew above which a model is "
                       "placement-sensitive (Tiresias' Table 6)", minimum=0.0, maximum=1.0),
                Option("preemptive", "bool", True, "jobs past their lease may be preempted"),
            ),
            summary="Themis: leases, finish-time fairness, a partial-allocation auction among "
                    "the worst-off jobs"),
)

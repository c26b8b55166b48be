"""Dominant Resource Fairness as a placement solver (Ghodsi et al., NSDI'11).

* ``drf`` -- discrete progressive filling: the user (a tenant, else a job)
  with the smallest weighted dominant share places its next job, best fit;
  running jobs stay where they run and count first
  (`alloc.solvers.drf.progressive`).  Each job is placed by the greedy
  engine's best fit (`alloc.engines.greedy.rules`); with tenants' cells, by
  HiveD's buddy-cell engine without preemption (`alloc.engines.cells`).

The continuous form (fractional tasks over explicit resources) is
[`alloc.shares.drf_shares`][alloc.shares.drf_shares].
"""
from ...options import Option
from ...registry import declare

SOLVERS = (
    declare("drf", "alloc.solvers.drf.progressive:solve_drf", objectives=(),
            capabilities=("sharing", "locality", "spread", "tenancy", "order-preemption"),
            options=(
                Option("weights", "mapping", None,
                       "user -> weight > 0: tenants by name, jobs without a tenant by id "
                       "(default: 1 per tenant, the job's weight per job)", nullable=True),
            ),
            description="Dominant resource fairness: the user of least weighted dominant "
                        "share places its next job (best fit), running jobs counted first"),
)

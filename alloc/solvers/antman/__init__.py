"""AntMan (Xiao et al., OSDI'20): opportunistic jobs co-located under
resource-guaranteed ones with GPU memory and compute caps.

* ``antman`` -- the global scheduler (the paper's Algorithm 1, §3.3) on the
  library's live-state path: guaranteed jobs first, on topology-constrained
  GPUs inside their tenant's quota, shrinking and capping the opportunistic
  jobs already there (or preempting them when even their least memory does
  not fit); a gang that only partly fits reserves its GPUs; opportunistic
  jobs then ride (milli 0 shares) the least-loaded GPUs whose utilisation is
  below a threshold (`alloc.solvers.antman.scheduler`).
  In a session the reservations of a gang that only partly fits are kept
  from one round to the next (the session's carry).

What AntMan does over time -- the local coordinator that moves the caps per
GPU, the job classes and upgrades -- is the scheduling layer's
(`alloc.sched.antman`: the mechanism ``antman``).
"""
from ...options import Option
from ...registry import declare

SOLVERS = (
    declare("antman", "alloc.solvers.antman.scheduler:solve_antman", objectives=(),
            capabilities=("sharing", "locality", "spread", "tenancy", "preemption", "guarantee",
                          "colocation", "gpu-memory", "gpu-compute"),
            options=(
                Option("util_threshold", "float", 0.8,
                       "opportunistic jobs go only to GPUs whose utilisation is below this "
                       "(AntMan §3.3: 80 %)", minimum=0.0, maximum=1.0),
                Option("gpu_util", "mapping", None,
                       "GPU id -> utilisation in [0, 1] measured over the last window "
                       "(default: the compute its shares hold)", nullable=True),
                Option("reserved", "mapping", None,
                       "guaranteed job id -> GPU ids reserved for its gang by an earlier "
                       "round (its tenant's guaranteed jobs ranked below it stay off them)",
                       nullable=True),
            ),
            description="AntMan global scheduler: guaranteed gangs in quota on one server, "
                        "opportunistic jobs capped on the least-loaded GPUs below 80 %"),
)

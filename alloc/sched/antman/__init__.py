"""AntMan (Xiao et al., OSDI'20) over time: opportunistic jobs co-located
under resource-guaranteed ones, their GPU memory and compute caps moved by a
local coordinator per GPU; and the baselines of its trace experiment.

* `alloc.sched.antman.coordinator`: the local coordinator's rules (admit,
  grow window by window within the tolerance, back off, surge, share).
* `alloc.sched.antman.classes`: the job classes (guaranteed inside the
  tenant's quota, else opportunistic) and the in-place upgrade.
* `alloc.sched.antman.model`: the performance model (memory sensitivity,
  coordinated and uncoordinated interference) and `AntManProgress`, the
  simulator's progress model on it.
* `alloc.sched.antman.coordinate`: the mechanism ``antman`` (the
  coordinators after each round of the placement solver ``antman``, the
  global scheduler).
* `alloc.sched.antman.baselines`: the mechanisms ``antman-yarn-cs``,
  ``antman-yarn-cs-preempt`` and ``antman-packing`` (Gandiva's packing as
  AntMan §5.2 describes it).

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("mechanism", "antman").kind
'mechanism'
"""
from ...options import Option
from ..registry import declare

_C = "alloc.sched.antman.coordinate"
_B = "alloc.sched.antman.baselines"

POLICIES = (
    declare("mechanism", "antman", f"{_C}:antman", needs=("duration", "gpu-memory"),
            params=(Option("tau", "float", None, "the coordinator's tolerance (default 0.035, "
                           "AntMan §5.1)", minimum=0.0, nullable=True),
                    Option("step", "int", 50, "the largest compute raise per window (milli)",
                           minimum=1, maximum=1000),
                    Option("window_s", "float", None, "seconds per window (default: caps "
                           "settled at once after each round)", minimum=0.0, nullable=True)),
            summary="AntMan's local coordinators: riders' memory and compute caps moved "
                    "within the guaranteed job's tolerance"),
    declare("mechanism", "antman-yarn-cs", f"{_B}:yarn_cs", needs=("duration", "gpu-memory"),
            summary="YARN's capacity scheduler (AntMan's baseline): exclusive GPUs, tenant A "
                    "first, gangs reserve"),
    declare("mechanism", "antman-yarn-cs-preempt", f"{_B}:yarn_cs_preempt",
            needs=("duration", "gpu-memory"),
            summary="YARN's capacity scheduler with preemption of tenant B's jobs"),
    declare("mechanism", "antman-packing", f"{_B}:gandiva_packing",
            needs=("duration", "gpu-memory"),
            summary="Gandiva's packing as AntMan describes it: lowest utilisation with room "
                    "for the job's memory"),
)

r"""Salus (Yu & Chowdhury, MLSys'20): fine-grained sharing of one GPU --
iteration-granular switching between jobs and GPU memory shared in lanes
(persistent memory resident, ephemeral memory switched) -- and its policies
FIFO, SRTF, PACK and FAIR.

* `alloc.sched.salus.profiles`: Salus's job profiles (read from a copy of
  its ``tests/workloads.csv``) and the persistent / ephemeral split.
* `alloc.sched.salus.lanes`: the lanes and Salus's lane assignment.
* `alloc.sched.salus.sim`: the mechanisms ``salus-fifo``, ``salus-srtf``,
  ``salus-pack`` and ``salus-fair`` on the simulator, and the progress model
  each comes with (``mechanism.progress``).

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("mechanism", "salus-srtf").build().policy
'srtf'
"""
from ...options import Option
from ..registry import declare

_P = (Option("memory_mb", "float", 16384.0, "GPU memory (MB)", minimum=1.0),
      Option("max_resident", "int", 40, "jobs resident on the GPU at once, at most", minimum=1,
             maximum=1000))
_M = "alloc.sched.salus.sim"

POLICIES = (
    declare("mechanism", "salus-fifo", f"{_M}:fifo", needs=("duration", "gpu-memory"), params=_P,
            summary="Salus FIFO: one job on the GPU at a time"),
    declare("mechanism", "salus-srtf", f"{_M}:srtf", needs=("duration", "gpu-memory"), params=_P,
            summary="Salus SRTF: resident jobs in lanes, the shortest remaining runs"),
    declare("mechanism", "salus-pack", f"{_M}:pack", needs=("duration", "gpu-memory"), params=_P,
            summary="Salus PACK: lanes run side by side, a lane's jobs in turn"),
    declare("mechanism", "salus-fair", f"{_M}:fair", needs=("duration", "gpu-memory"), params=_P,
            summary="Salus FAIR: resident jobs share GPU time equally"),
)

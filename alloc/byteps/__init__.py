"""BytePS (Jiang et al., OSDI'20): spare CPU machines as summation servers.

* `alloc.byteps.model` -- the communication model of §4.1 (Eq. 6), the
  speed-ups over all-reduce and non-colocated PS, goodput, and the throughput
  a job gains with ``k`` summation servers;
* `alloc.byteps.assign` -- who gets the spare CPU machines: exact (a kernel
  model, HiGHS) and greedy, with the rules a summation server must keep;
* `alloc.byteps.compose` -- the same decision made jointly with the GPU
  placement (how many GPU machines a job spans).
"""
from .assign import Assignment, CommJob, CpuMachine, exact, greedy, problems
from .model import comm_time, goodput_gbps, speedup, vs_allreduce, vs_ps

__all__ = ["Assignment", "CommJob", "CpuMachine", "comm_time", "exact", "goodput_gbps", "greedy",
           "problems", "speedup", "vs_allreduce", "vs_ps"]
